/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The figure registry: what is measured, how, in which mode, and how it
 * is shown. Names are nvbandwidth's test case names where the method is
 * nvbandwidth's (testcases_ce.cpp, testcases_sm.cpp); a figure that
 * nvbandwidth does not have, or measures otherwise, has a name of its own.
 * Every bandwidth figure is 16 copies of --size-mib after 4 warm-up ones
 * (2 after 1 with --quick), the median of --samples kept.
 */
#include <string.h>

#include "verify.h"

const VerifyFigureInfo verify_figures[VERIFY_FIGURE_COUNT] = {
    [FIG_UNI_CE] = {
        "device_to_device_memcpy_write_ce",
        "device_to_device_memcpy_write_ce",
        "copy engine a -> b (cuMemcpyPeerAsync) on a's context and stream",
        "unidirectional_ce_gbps",
        "Unidirectional bandwidth, copy engine, writing: issued by the "
        "source (GB/s)", XFER_CE, true, false, false, false },
    [FIG_UNI_CE_READ] = {
        "device_to_device_memcpy_read_ce",
        "device_to_device_memcpy_read_ce",
        "copy engine a -> b (cuMemcpyPeerAsync) on b's context and stream",
        "unidirectional_ce_read_gbps",
        "Unidirectional bandwidth, copy engine, reading: issued by the "
        "destination (GB/s)", XFER_CE_READ, true, false, false, false },
    [FIG_UNI_SM] = {
        "device_to_device_memcpy_write_sm",
        "device_to_device_memcpy_write_sm",
        "a's SMs store into b (copy kernel on a)",
        "unidirectional_sm_gbps",
        "Unidirectional bandwidth, SM copy kernel writing to the peer "
        "(GB/s)", XFER_SM_WRITE, false, true, false, false },
    [FIG_UNI_SM_READ] = {
        "device_to_device_memcpy_read_sm",
        "device_to_device_memcpy_read_sm",
        "b's SMs load from a (copy kernel on b)",
        "unidirectional_sm_read_gbps",
        "Unidirectional bandwidth, SM copy kernel reading from the peer "
        "(GB/s)", XFER_SM_READ, false, true, false, false },
    [FIG_BI_CE] = {
        "device_to_device_bidirectional_memcpy_write_ce",
        "device_to_device_bidirectional_memcpy_write_ce",
        "copy engine a -> b on a's stream and b -> a on b's at once; the "
        "sum of both directions' bandwidths, each over its own time "
        "(nvbandwidth's _total matrix)",
        "bidirectional_ce_gbps",
        "Bidirectional bandwidth, copy engine, each GPU's own stream "
        "(GB/s, both ways summed)", XFER_CE_BIDIR, false, false, false,
        false },
    [FIG_STAGED] = {
        "host_staged_memcpy_ce", NULL,
        "a -> pinned host -> b in 32 MiB chunks (P2P off), one copy a "
        "sample, one pair at a time",
        "host_staged_gbps", "Host-staged, P2P off (GB/s)", XFER_STAGED,
        false, false, false, false },
    [FIG_LAT_CE] = {
        "device_to_device_latency_ce", NULL,
        "100 16-byte copy-engine copies a -> b queued behind a spin kernel",
        "latency_ce_us",
        "Latency, 16-byte copy-engine copy behind a spin kernel (us)",
        XFER_CE_LATENCY, false, false, true, false },
    [FIG_LAT_SM] = {
        "device_to_device_latency_sm",
        "device_to_device_latency_sm",
        "a's pointer chase through b's memory: a random cycle over up to "
        "64 MiB, uncached loads, 5000 hops; --benchmark: nvbandwidth's "
        "2 MiB walked a 128-byte line at a time, plain loads, 20000 hops",
        "latency_sm_us", "Latency, SM pointer chase (us)",
        XFER_SM_LATENCY, false, true, true, false },
    [FIG_PAIR_COUNT + AGG_ALL_TO_ONE] = {
        "all_to_one_write_ce", "all_to_one_write_ce",
        "every other GPU writes its share of the size into this one at "
        "once, on its own stream; all bytes over the span",
        "all_to_one_ce_gbps",
        "All other GPUs write into this one, copy engine (GB/s)", XFER_CE,
        false, false, false, true },
    [FIG_PAIR_COUNT + AGG_ONE_TO_ALL] = {
        "one_to_all_write_ce", "one_to_all_write_ce",
        "this GPU writes into every other at once, one stream per peer; "
        "all bytes over the span",
        "one_to_all_ce_gbps",
        "This GPU writes into all others, copy engine (GB/s)", XFER_CE,
        false, false, false, true },
    [FIG_PAIR_COUNT + AGG_H2D] = {
        "host_to_device_memcpy_ce", "host_to_device_memcpy_ce",
        "copy engine, pinned host memory (cuMemHostAlloc) -> the GPU, on "
        "the GPU's context and stream; one GPU at a time",
        "host_to_device_ce_gbps",
        "Host to device, copy engine, pinned memory (GB/s)", XFER_H2D,
        false, false, false, true },
    [FIG_PAIR_COUNT + AGG_D2H] = {
        "device_to_host_memcpy_ce", "device_to_host_memcpy_ce",
        "copy engine, the GPU -> pinned host memory (cuMemHostAlloc), on "
        "the GPU's context and stream; one GPU at a time",
        "device_to_host_ce_gbps",
        "Device to host, copy engine, pinned memory (GB/s)", XFER_D2H,
        false, false, false, true },
};

const VerifyFigureInfo *const verify_pair_figures = verify_figures;
const VerifyFigureInfo *const verify_gpu_figures =
    verify_figures + FIG_PAIR_COUNT;

G_STATIC_ASSERT(VERIFY_FIGURE_COUNT <= 32);

int verify_figure_find(const char *name)
{
    for (int i = 0; i < VERIFY_FIGURE_COUNT; i++) {
        if (!strcmp(verify_figures[i].name, name)) {
            return i;
        }
    }
    return -1;
}

guint32 verify_figures_default(bool quick)
{
    guint32 mask = 0;

    for (int i = 0; i < VERIFY_FIGURE_COUNT; i++) {
        if (!quick || verify_figures[i].quick) {
            mask |= 1u << i;
        }
    }
    return mask;
}

bool verify_figures_parse(const char *list, guint32 *mask, char **bad)
{
    g_auto(GStrv) names = g_strsplit(list, ",", -1);

    *mask = 0;
    for (guint i = 0; names[i]; i++) {
        int at = verify_figure_find(g_strstrip(names[i]));

        if (at < 0) {
            *bad = g_strdup(names[i]);
            return false;
        }
        *mask |= 1u << at;
    }
    if (!*mask) {
        *bad = g_strdup(list);
        return false;
    }
    return true;
}

char *verify_figures_list_text(void)
{
    GString *s = g_string_new("# name\tnvbandwidth\tunit\tper\tquick\t"
                              "method\n");

    for (int i = 0; i < VERIFY_FIGURE_COUNT; i++) {
        const VerifyFigureInfo *f = &verify_figures[i];

        g_string_append_printf(s, "%s\t%s\t%s\t%s\t%s\t%s\n", f->name,
                               f->nvbandwidth ? f->nvbandwidth : "none",
                               f->latency ? "us" : "GB/s",
                               f->per_gpu ? "gpu" : "pair",
                               f->quick ? "yes" : "no", f->method);
    }
    return g_string_free(s, FALSE);
}
