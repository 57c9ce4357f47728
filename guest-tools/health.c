/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * GPU health around the run: the counters DCGM's diagnostics read, each
 * with what a rise between the reading before the data checks and the
 * one after the last check means. One table; nvml.c reads the counters,
 * coverage.c judges them, report.c prints them (docs/guest-tool.md,
 * "Health").
 */
#include <string.h>

#include "verify.h"

/* Errors the hardware corrected warn; errors it could not correct, a
 * row it could not remap and an Xid fail. */
const VerifyHealthCounterInfo verify_health_gpu_counters[] = {
    [HEALTH_ECC_UNCORRECTED] = { "ecc_uncorrected_volatile", HEALTH_FAILED,
        "nvmlDeviceGetTotalEccErrors, uncorrected, volatile" },
    [HEALTH_ECC_CORRECTED] = { "ecc_corrected_volatile", HEALTH_WARNING,
        "nvmlDeviceGetTotalEccErrors, corrected, volatile" },
    [HEALTH_RETIRED_DOUBLE_BIT] = { "retired_pages_double_bit_ecc",
        HEALTH_FAILED, "nvmlDeviceGetRetiredPages, double bit ECC error" },
    [HEALTH_RETIRED_SINGLE_BIT] = { "retired_pages_multiple_single_bit_ecc",
        HEALTH_WARNING,
        "nvmlDeviceGetRetiredPages, multiple single bit ECC errors" },
    [HEALTH_REMAPPED_UNCORRECTABLE] = { "remapped_rows_uncorrectable",
        HEALTH_FAILED, "nvmlDeviceGetRemappedRows, uncRows" },
    [HEALTH_REMAPPED_CORRECTABLE] = { "remapped_rows_correctable",
        HEALTH_WARNING, "nvmlDeviceGetRemappedRows, corrRows" },
    [HEALTH_REMAP_PENDING] = { "row_remap_pending", HEALTH_FAILED,
        "nvmlDeviceGetRemappedRows, isPending" },
    [HEALTH_REMAP_FAILURE] = { "row_remap_failure", HEALTH_FAILED,
        "nvmlDeviceGetRemappedRows, failureOccurred" },
    [HEALTH_XID_EVENTS] = { "xid_events", HEALTH_FAILED,
        "nvmlEventSetWait_v2, nvmlEventTypeXidCriticalError events" },
};

/*
 * NVLink: any replay or recovery fails the link, as in DCGM's health
 * watch. CRC errors fail a link at 100 or more per second and warn below:
 * DCGM's limit (DCGM_LIMIT_MAX_NVLINK_CRC_ERROR; the driver's team told
 * DCGM that CRC errors matter only at such rates), applied per link.
 * DCGM applies it to the GPU's total over all links
 * (DCGM_FI_DEV_NVLINK_CRC_*_ERROR_COUNT_TOTAL) over its watch's window;
 * this tool's window is a burst at full bandwidth on every link, in which
 * healthy H100s count 75 to 138 CRC data errors a second in total, 1.5 to
 * 16 per link (docs/gpu-results/h100x2-health): DCGM's total rule would
 * fail healthy GPUs in a good part of the runs. The totals are reported
 * (below), as a warning.
 */
#define NVLINK_CRC_FAIL_PER_SECOND 100.0

const VerifyHealthCounterInfo verify_health_link_counters[] = {
    [HEALTH_NVLINK_REPLAY] = { "nvlink_replay", HEALTH_FAILED,
        "nvmlDeviceGetNvLinkErrorCounter, NVML_NVLINK_ERROR_DL_REPLAY" },
    [HEALTH_NVLINK_RECOVERY] = { "nvlink_recovery", HEALTH_FAILED,
        "nvmlDeviceGetNvLinkErrorCounter, NVML_NVLINK_ERROR_DL_RECOVERY" },
    [HEALTH_NVLINK_CRC_FLIT] = { "nvlink_crc_flit", HEALTH_FAILED,
        "nvmlDeviceGetNvLinkErrorCounter, NVML_NVLINK_ERROR_DL_CRC_FLIT",
        NVLINK_CRC_FAIL_PER_SECOND },
    [HEALTH_NVLINK_CRC_DATA] = { "nvlink_crc_data", HEALTH_FAILED,
        "nvmlDeviceGetNvLinkErrorCounter, NVML_NVLINK_ERROR_DL_CRC_DATA",
        NVLINK_CRC_FAIL_PER_SECOND },
};

/* The GPU's totals, as DCGM's watch counts them: a rise warns with its
 * rate, whatever the rate (the links decide). */
const VerifyHealthTotalInfo verify_health_link_totals[] = {
    [HEALTH_NVLINK_CRC_FLIT_TOTAL] = { { "nvlink_crc_flit_total",
        HEALTH_WARNING, "nvlink_crc_flit summed over the active links "
        "(DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL)",
        NVLINK_CRC_FAIL_PER_SECOND }, HEALTH_NVLINK_CRC_FLIT },
    [HEALTH_NVLINK_CRC_DATA_TOTAL] = { { "nvlink_crc_data_total",
        HEALTH_WARNING, "nvlink_crc_data summed over the active links "
        "(DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL)",
        NVLINK_CRC_FAIL_PER_SECOND }, HEALTH_NVLINK_CRC_DATA },
};

G_STATIC_ASSERT(G_N_ELEMENTS(verify_health_gpu_counters) ==
                HEALTH_GPU_COUNTERS);
G_STATIC_ASSERT(G_N_ELEMENTS(verify_health_link_counters) ==
                HEALTH_LINK_COUNTERS);
G_STATIC_ASSERT(G_N_ELEMENTS(verify_health_link_totals) ==
                HEALTH_LINK_TOTALS);

HealthVerdict verify_health_verdict(const VerifyHealthValue *v,
                                    const VerifyHealthCounterInfo *info)
{
    if (!verify_health_read_twice(v)) {
        return HEALTH_NOT_READ;
    }
    if (v->after == v->before) {
        return HEALTH_OK;
    }
    if (info->fail_per_second > 0 &&
        verify_health_rise_per_second(v) < info->fail_per_second) {
        return HEALTH_WARNING;
    }
    return info->on_rise;
}

bool verify_health_read_twice(const VerifyHealthValue *v)
{
    /* A counter that went down was reset (volatile ECC counts reset with
     * the GPU): what the run added is unknown, neither a pass nor a fail. */
    return v->state == HEALTH_READ_BOTH && v->after >= v->before;
}

double verify_health_rise_per_second(const VerifyHealthValue *v)
{
    double seconds = (v->after_us - v->before_us) / 1e6;

    /* Two readings in the same microsecond: as fast as it gets. */
    return seconds > 0 ? (v->after - v->before) / seconds : G_MAXDOUBLE;
}

bool verify_health_link_summed(int counter)
{
    for (int t = 0; t < HEALTH_LINK_TOTALS; t++) {
        if (verify_health_link_totals[t].link_counter == counter) {
            return true;
        }
    }
    return false;
}

void verify_health_total(const VerifyGpu *g, int total, VerifyHealthTotal *out)
{
    int c = verify_health_link_totals[total].link_counter;

    memset(out, 0, sizeof(*out));
    out->sum.state = HEALTH_UNREAD;
    for (int l = 0; l < VERIFY_MAX_NVLINKS; l++) {
        const VerifyHealthValue *v = &g->link_health[l][c];

        /* A link read once, or reset, adds nothing known to the sum. */
        if (!(g->nvlinks_active & (1u << l)) || !verify_health_read_twice(v)) {
            continue;
        }
        if (out->sum.state != HEALTH_READ_BOTH) {
            out->sum.state = HEALTH_READ_BOTH;
            out->sum.before_us = v->before_us;
            out->sum.after_us = v->after_us;
        }
        /* The rises happened between the first reading before and the
         * last after. */
        out->sum.before_us = MIN(out->sum.before_us, v->before_us);
        out->sum.after_us = MAX(out->sum.after_us, v->after_us);
        out->sum.before += v->before;
        out->sum.after += v->after;
        out->links_summed |= 1u << l;
        if (v->after > v->before) {
            out->links_rose |= 1u << l;
        }
    }
}

char *verify_health_rate_text(const VerifyHealthValue *v)
{
    /* G_MAXDOUBLE printed would be 309 digits. */
    if (v->after_us <= v->before_us) {
        return g_strdup("both readings in one microsecond");
    }
    return g_strdup_printf("%.1f per second",
                           verify_health_rise_per_second(v));
}

char *verify_health_link_list(guint32 links)
{
    GString *s = g_string_new(NULL);

    for (int l = 0; l < VERIFY_MAX_NVLINKS; l++) {
        if (links & (1u << l)) {
            g_string_append_printf(s, "%s%d", s->len ? ", " : "", l);
        }
    }
    return g_string_free(s, FALSE);
}

HealthVerdict verify_health_total_verdict(const VerifyGpu *g, int total,
                                          VerifyHealthTotal *out)
{
    verify_health_total(g, total, out);
    return verify_health_verdict(&out->sum,
                                 &verify_health_link_totals[total].info);
}

const char *verify_health_verdict_name(HealthVerdict v)
{
    switch (v) {
    case HEALTH_OK:
        return "ok";
    case HEALTH_WARNING:
        return "warning";
    case HEALTH_FAILED:
        return "failed";
    case HEALTH_NOT_READ:
        break;
    }
    return "not read";
}

char *verify_health_unread_reason(const VerifyHealthValue *v)
{
    switch (v->state) {
    case HEALTH_UNSUPPORTED:
        return g_strdup("not supported");
    case HEALTH_READ_ERROR:
        return g_strdup_printf("NVML error %d", v->nvml_error);
    case HEALTH_READ_BEFORE:
        return g_strdup("not read after the run");
    case HEALTH_LOST_AFTER:
        return g_strdup_printf("NVML could not find the GPU after the run "
                               "(nvmlDeviceGetHandleByPciBusId_v2: NVML "
                               "error %d)", v->nvml_error);
    case HEALTH_UNATTRIBUTED:
        return g_strdup("an Xid event came for a device that is none of "
                        "the GPUs NVML named after the run");
    case HEALTH_READ_BOTH:
        if (v->after < v->before) {
            return g_strdup("the counter went down: reset during the run?");
        }
        break;
    case HEALTH_UNREAD:
        break;
    }
    return g_strdup("not read");
}

const char *verify_health_not_read(const VerifyReport *r)
{
    if (r->health_read) {
        return NULL;
    }
    if (r->nvml_status) {
        return r->nvml_status;
    }
    return r->cuda_status ? "NVML not used (CUDA unavailable)" :
           "NVML not used";
}

HealthVerdict verify_health_gpu_verdict(const VerifyGpu *g)
{
    HealthVerdict worst = HEALTH_NOT_READ;

    for (int c = 0; c < HEALTH_GPU_COUNTERS; c++) {
        worst = MAX(worst, verify_health_verdict(
                               &g->health[c], &verify_health_gpu_counters[c]));
    }
    for (int l = 0; l < VERIFY_MAX_NVLINKS; l++) {
        for (int c = 0; c < HEALTH_LINK_COUNTERS; c++) {
            worst = MAX(worst, verify_health_verdict(
                                   &g->link_health[l][c],
                                   &verify_health_link_counters[c]));
        }
    }
    for (int t = 0; t < HEALTH_LINK_TOTALS; t++) {
        VerifyHealthTotal sum;

        worst = MAX(worst, verify_health_total_verdict(g, t, &sum));
    }
    return worst;
}
