/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The transfer methods: how each XferKind moves its bytes (copy engines,
 * the tool's kernels, pinned host memory), where they land, and what one
 * finished transfer is worth as a figure. The table at the end is the
 * only place that tells the kinds apart.
 */
#include <string.h>

#include "cuda-run.h"

/* The pattern seed of GPU @ordinal's source buffer, fixed for the run:
 * the fill and check kernels and the host all use it. */
uint32_t pattern_seed(int ordinal)
{
    return 0x5eed0000u | (uint32_t)ordinal;
}

/* Word @i of the pattern for @seed: the kernels' pattern() (kernels.cu),
 * so that the host can fill a buffer and name an exact bad byte. */
uint32_t host_pattern(uint64_t i, uint32_t seed)
{
    uint64_t v = i * 0x9E3779B97F4A7C15ull + seed;

    v ^= v >> 31;
    v *= 0xBF58476D1CE4E5B9ull;
    return (uint32_t)(v ^ (v >> 29));
}

/* Where @x lands. */
CUdeviceptr xfer_slot(const Run *run, const Xfer *x)
{
    return run->gpus[x->dst].inbox + x->off;
}

/* How many bytes @x moves. */
gsize xfer_len(const Run *run, const Xfer *x)
{
    const XferMethod *m = xfer_method(x->kind);

    if (m->fixed_len) {
        return m->fixed_len;
    }
    return x->len ? x->len : run->bytes;
}

/* The GPU whose stream carries @x: reads are issued by the destination,
 * as nvbandwidth's read tests. */
int exec_gpu(const Xfer *x)
{
    return xfer_method(x->kind)->issued_by_dst ? x->dst : x->src;
}

int exec_peer(const Xfer *x)
{
    return xfer_method(x->kind)->issued_by_dst ? x->src : x->dst;
}

/* "copy engine 0->1", or "host to device copy, GPU 0", into @buf. */
const char *xfer_label(const Run *run, const Xfer *x, char *buf, gsize n)
{
    const XferMethod *m = xfer_method(x->kind);
    unsigned a = run->report_of[x->src], b = run->report_of[x->dst];

    if (m->one_gpu) {
        g_snprintf(buf, n, "%s, GPU %u", m->name, a);
    } else {
        g_snprintf(buf, n, "%s %u->%u", m->name, a, b);
    }
    return buf;
}

/* ---- queueing ---------------------------------------------------------- */

static bool enqueue_peer_copy(Run *run, Xfer *x, CUstream s, unsigned loops,
                              GError **errp)
{
    Gpu *gs = &run->gpus[x->src], *gd = &run->gpus[x->dst];
    CUdeviceptr dst = xfer_slot(run, x);
    gsize bytes = xfer_len(run, x);

    for (unsigned i = 0; i < loops; i++) {
        CU_TRY(p_cuMemcpyPeerAsync(dst, gd->ctx, gs->src, gs->ctx, bytes, s),
               "copy engine %d->%d", x->src, x->dst);
    }
    return true;
}

/* The copy kernel on the executing GPU, storing into or loading from the
 * peer. */
static bool enqueue_sm_copy(Run *run, Xfer *x, CUstream s, unsigned loops,
                            GError **errp)
{
    Gpu *gs = &run->gpus[x->src], *ge = &run->gpus[exec_gpu(x)];
    CUdeviceptr dst = xfer_slot(run, x);
    uint64_t n = xfer_len(run, x) / 16;

    for (unsigned i = 0; i < loops; i++) {
        void *args[] = { &gs->src, &dst, &n };

        CU_TRY(launch(ge->copy, ge->sms * 4, 1024, s, args),
               "SM copy %d->%d", x->src, x->dst);
    }
    return true;
}

/* Each 16-byte copy to a place of its own, so every one is checked. */
static bool enqueue_ce_latency(Run *run, Xfer *x, CUstream s, unsigned loops,
                               GError **errp)
{
    Gpu *gs = &run->gpus[x->src], *gd = &run->gpus[x->dst];
    CUdeviceptr dst = xfer_slot(run, x);

    (void)loops;
    for (unsigned i = 0; i < CE_LATENCY_REPS; i++) {
        CU_TRY(p_cuMemcpyPeerAsync(dst + 16 * i, gd->ctx, gs->src + 16 * i,
                                   gs->ctx, 16, s),
               "copy engine %d->%d", x->src, x->dst);
    }
    return true;
}

/* Where the pointer chase of @src through @dst leaves its sink word and,
 * 8 bytes on, its time in ns. */
static CUdeviceptr chase_sink(const Run *run, int src, int dst)
{
    return run->gpus[src].scratch + 2048 + 16 * dst;
}

static bool enqueue_chase(Run *run, Xfer *x, CUstream s, unsigned loops,
                          GError **errp)
{
    Gpu *gs = &run->gpus[x->src], *gd = &run->gpus[x->dst];
    uint32_t hops = CHASE_HOPS;
    CUdeviceptr sink = chase_sink(run, x->src, x->dst);
    CUdeviceptr ns = sink + 8;
    void *args[] = { &gd->chain, &hops, &sink, &ns };

    (void)loops;
    CU_TRY(launch(gs->chase, 1, 1, s, args), "pointer chase %d->%d",
           x->src, x->dst);
    return true;
}

/* The chase's own clock, read back after it ran. */
static bool read_chase_time(Run *run, Xfer *x, GError **errp)
{
    Gpu *gs = &run->gpus[x->src];
    uint64_t *ns = &run->results[x->src * (run->n + 2) + run->n];

    USE_GPU(gs);
    CU_TRY(p_cuMemcpyDtoHAsync(ns, chase_sink(run, x->src, x->dst) + 8, 8,
                               gs->gate), "chase time");
    WAIT(run, NULL, gs->gate, "GPU %d: chase time", x->src);
    x->ms = *ns / 1e6;
    return true;
}

/*
 * Host-staged a -> b: the source stream moves a chunk to pinned memory,
 * the destination stream moves it on; two chunks in flight. The last
 * chunk takes what is left, so any size moves whole.
 */
static bool enqueue_staged(Run *run, Xfer *x, CUstream s, unsigned loops,
                           GError **errp)
{
    Gpu *gs = &run->gpus[x->src], *gd = &run->gpus[x->dst];
    CUstream ds = gd->to[x->src];
    CUdeviceptr dst = xfer_slot(run, x);
    gsize bytes = xfer_len(run, x);
    gsize chunk = MIN(bytes, STAGING_CHUNK);
    gsize nchunks = (bytes + chunk - 1) / chunk, c;

    (void)loops;
    for (c = 0; c < nchunks; c++) {
        int k = c % 2;
        char *host = (char *)gs->staging + k * chunk;
        gsize len = MIN(chunk, bytes - c * chunk);

        if (c >= 2) {
            CU_TRY(p_cuStreamWaitEvent(s, x->up[k], 0), "wait");
        }
        CU_TRY(p_cuMemcpyDtoHAsync(host, gs->src + c * chunk, len, s),
               "staged copy %d->host", x->src);
        CU_TRY(p_cuEventRecord(x->down[k], s), "cuEventRecord");
        CU_TRY(p_cuStreamWaitEvent(ds, x->down[k], 0), "wait");
        CU_TRY(p_cuMemcpyHtoDAsync(dst + c * chunk, host, len, ds),
               "staged copy host->%d", x->dst);
        CU_TRY(p_cuEventRecord(x->up[k], ds), "cuEventRecord");
    }
    CU_TRY(p_cuStreamWaitEvent(s, x->up[(nchunks - 1) % 2], 0), "wait");
    return true;
}

static bool enqueue_h2d(Run *run, Xfer *x, CUstream s, unsigned loops,
                        GError **errp)
{
    CUdeviceptr dst = xfer_slot(run, x);

    for (unsigned i = 0; i < loops; i++) {
        CU_TRY(p_cuMemcpyHtoDAsync(dst, run->host, xfer_len(run, x), s),
               "host to device copy into %d", x->dst);
    }
    return true;
}

static bool enqueue_d2h(Run *run, Xfer *x, CUstream s, unsigned loops,
                        GError **errp)
{
    Gpu *gs = &run->gpus[x->src];

    for (unsigned i = 0; i < loops; i++) {
        CU_TRY(p_cuMemcpyDtoHAsync(run->host, gs->src, xfer_len(run, x), s),
               "device to host copy out of %d", x->src);
    }
    return true;
}

/* ---- host memory before a host <-> device copy ------------------------ */

/* Filled by the CPU with the GPU's own pattern, so that host -> device
 * does not rest on device -> host; host -> device copies leave it as it
 * is, so it is filled once per GPU in a row. */
static bool fill_host(Run *run, const Xfer *x, GError **errp)
{
    uint32_t *w = run->host, seed = pattern_seed(x->src);

    (void)errp;
    if (run->host_pattern == x->src) {
        return true;
    }
    for (gsize i = 0; i < xfer_len(run, x) / 4; i++) {
        w[i] = host_pattern(i, seed);
    }
    run->host_pattern = x->src;
    return true;
}

/* Poisoned by the GPU, faster than the CPU: with unified addressing,
 * pinned memory has one address for host and GPU; where the driver
 * refuses, by the CPU. */
static bool poison_host(Run *run, const Xfer *x, GError **errp)
{
    Gpu *g = &run->gpus[x->src];

    USE_GPU(g);
    if (p_cuMemsetD32Async((CUdeviceptr)(uintptr_t)run->host, 0xdeadbeefu,
                           xfer_len(run, x) / 4, g->gate) != CUDA_SUCCESS) {
        memset(run->host, 0xa5, xfer_len(run, x));
    }
    WAIT(run, NULL, g->gate, "GPU %d: poisoning host memory", x->src);
    run->host_pattern = -1;
    return true;
}

/* ---- values ------------------------------------------------------------ */

static double gbps_of_loops(const Run *run, const Xfer *x, unsigned loops)
{
    return (double)xfer_len(run, x) * loops / (x->ms / 1e3) / 1e9;
}

/* One pass through host memory, whatever the loop count. */
static double gbps_of_one(const Run *run, const Xfer *x, unsigned loops)
{
    (void)loops;
    return (double)xfer_len(run, x) / (x->ms / 1e3) / 1e9;
}

static double us_per_ce_copy(const Run *run, const Xfer *x, unsigned loops)
{
    (void)run; (void)loops;
    return x->ms * 1e3 / CE_LATENCY_REPS;
}

static double us_per_hop(const Run *run, const Xfer *x, unsigned loops)
{
    (void)run; (void)loops;
    return x->ms * 1e3 / CHASE_HOPS;
}

/* ---- the table --------------------------------------------------------- */

static const XferMethod xfer_methods[XFER_KIND_COUNT] = {
    [XFER_CE] = {
        .name = "copy engine", .checked_at_dst = true, .copy_by_copy = true,
        .warms_up = true, .data_check = true, .nvlink_fails_path = true,
        .path = PATH_CE, .enqueue = enqueue_peer_copy,
        .value = gbps_of_loops,
    },
    [XFER_CE_READ] = {
        .name = "copy engine read", .issued_by_dst = true,
        .checked_at_dst = true, .copy_by_copy = true, .warms_up = true,
        .nvlink_fails_path = true, .path = PATH_CE,
        .enqueue = enqueue_peer_copy, .value = gbps_of_loops,
    },
    [XFER_CE_BIDIR] = {
        .name = "bidirectional copy engine", .checked_at_dst = true,
        .copy_by_copy = true, .both_ways = true, .warms_up = true,
        .nvlink_fails_path = true, .path = PATH_CE,
        .enqueue = enqueue_peer_copy, .value = gbps_of_loops,
    },
    [XFER_SM_WRITE] = {
        .name = "SM write", .checked_at_dst = true, .copy_by_copy = true,
        .warms_up = true, .data_check = true, .nvlink_fails_path = true,
        .path = PATH_SM_WRITE, .enqueue = enqueue_sm_copy,
        .value = gbps_of_loops,
    },
    [XFER_SM_READ] = {
        .name = "SM read", .issued_by_dst = true, .checked_at_dst = true,
        .copy_by_copy = true, .warms_up = true, .data_check = true,
        .nvlink_fails_path = true, .path = PATH_SM_READ,
        .enqueue = enqueue_sm_copy, .value = gbps_of_loops,
    },
    [XFER_STAGED] = {
        .name = "host-staged copy", .checked_at_dst = true,
        .host_path = true, .serial = true, .two_streams = true,
        .path = PATH_CE, .enqueue = enqueue_staged, .value = gbps_of_one,
    },
    [XFER_CE_LATENCY] = {
        .name = "copy-engine latency", .checked_at_dst = true,
        .path = PATH_CE, .enqueue = enqueue_ce_latency,
        /* each copy 16 bytes of its own */
        .fixed_len = CE_LATENCY_REPS * 16,
        .value = us_per_ce_copy,
    },
    [XFER_SM_LATENCY] = {
        .name = "SM latency", .path = PATH_CE, .enqueue = enqueue_chase,
        .read_own_time = read_chase_time, .value = us_per_hop,
    },
    [XFER_H2D] = {
        .name = "host to device copy", .checked_at_dst = true,
        .copy_by_copy = true, .host_path = true, .one_gpu = true,
        .path = PATH_CE, .enqueue = enqueue_h2d, .prepare_host = fill_host,
        .value = gbps_of_loops,
    },
    [XFER_D2H] = {
        .name = "device to host copy", .checked_at_dst = true,
        .copy_by_copy = true, .host_path = true, .one_gpu = true,
        .check_reads_host = true, .path = PATH_CE, .enqueue = enqueue_d2h,
        .prepare_host = poison_host, .value = gbps_of_loops,
    },
};

const XferMethod *xfer_method(XferKind k)
{
    g_assert((guint)k < XFER_KIND_COUNT && xfer_methods[k].enqueue);
    return &xfer_methods[k];
}
