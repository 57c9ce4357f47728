/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The transfer methods: how each XferKind moves its bytes (copy engines,
 * the tool's kernels, pinned host memory), where they land, and what one
 * finished transfer is worth as a figure. The table at the end is the
 * only place that tells the kinds apart.
 */
#include <string.h>

#include "cuda-run.h"

/* A seed's alternate: the inverse of its pattern (kernels.cu's pattern()),
 * so a copy of one over the other changes every byte. */
#define ALT_SEED_BIT 0x80000000u

/* The pattern seed of GPU @ordinal's source buffer, fixed for the run:
 * the fill and check kernels and the host all use it. */
uint32_t pattern_seed(int ordinal)
{
    return 0x5eed0000u | (uint32_t)ordinal;
}

/* The host's patterns, for host -> device: no GPU's. */
#define HOST_SEED 0x40570000u

uint32_t xfer_seed(const Xfer *x)
{
    uint32_t seed = x->kind == XFER_H2D ? HOST_SEED : pattern_seed(x->src);

    return x->alt ? seed | ALT_SEED_BIT : seed;
}

CUdeviceptr xfer_source(const Run *run, const Xfer *x)
{
    const Gpu *g = &run->gpus[x->src];

    return x->alt ? g->src_alt : g->src;
}

/* Where a host -> device copy reads. */
static void *host_source(const Run *run, const Xfer *x)
{
    return x->alt ? run->host_alt : run->host;
}

/* Word @i of the pattern for @seed: the kernels' pattern() (kernels.cu),
 * so that the host can fill a buffer and name an exact bad byte. */
uint32_t host_pattern(uint64_t i, uint32_t seed)
{
    uint64_t v = i * 0x9E3779B97F4A7C15ull + (seed & 0x7fffffffu);

    v ^= v >> 31;
    v *= 0xBF58476D1CE4E5B9ull;
    return (uint32_t)(v ^ (v >> 29)) ^ (seed & ALT_SEED_BIT ? ~0u : 0u);
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
    CUdeviceptr dst = xfer_slot(run, x), src = xfer_source(run, x);
    gsize bytes = xfer_len(run, x);

    for (unsigned i = 0; i < loops; i++) {
        CU_TRY(p_cuMemcpyPeerAsync(dst, gd->ctx, src, gs->ctx, bytes, s),
               "copy engine %d->%d", x->src, x->dst);
    }
    return true;
}

/* The copy kernel on the executing GPU, storing into or loading from the
 * peer. */
static bool enqueue_sm_copy(Run *run, Xfer *x, CUstream s, unsigned loops,
                            GError **errp)
{
    Gpu *ge = &run->gpus[exec_gpu(x)];
    CUdeviceptr dst = xfer_slot(run, x), src = xfer_source(run, x);
    uint64_t n = xfer_len(run, x) / 16;

    for (unsigned i = 0; i < loops; i++) {
        void *args[] = { &src, &dst, &n };

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

/*
 * How a chase of @x runs: validation, one chase of chase_hops from the
 * start of a random cycle; --benchmark, as nvbandwidth's, one launch per
 * SM of the source, each on a block of its own, together at most once
 * round the chain (line after line), each from where the last stopped.
 */
static void chase_plan(const Run *run, const Xfer *x, uint32_t *launches,
                       uint32_t *hops)
{
    const Gpu *gs = &run->gpus[x->src];
    uint32_t lines = run->gpus[x->dst].chain_bytes / 128;

    *launches = run->validate ? 1 : (uint32_t)gs->sms;
    *hops = run->validate ? run->chase_hops :
            MAX(MIN(run->chase_hops, lines) / *launches, 1u);
}

static bool enqueue_chase(Run *run, Xfer *x, CUstream s, unsigned loops,
                          GError **errp)
{
    Gpu *gs = &run->gpus[x->src], *gd = &run->gpus[x->dst];
    uint32_t hops, launches, cached = !run->validate;
    CUdeviceptr sink = chase_sink(run, x->src, x->dst);
    CUdeviceptr ns = sink + 8;

    (void)loops;
    chase_plan(run, x, &launches, &hops);
    CU_TRY(p_cuMemsetD32Async(ns, 0, 2, s), "chase time");
    for (uint32_t t = 0; t < launches; t++) {
        /* Line t x hops of a line-after-line chain (32 words a line). */
        uint32_t start = run->validate ? 0 : t * hops * 32;
        void *args[] = { &gd->chain, &hops, &sink, &ns, &cached, &start,
                         &t };

        CU_TRY(launch(gs->chase, launches, 1, s, args),
               "pointer chase %d->%d", x->src, x->dst);
    }
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
        CU_TRY(p_cuMemcpyHtoDAsync(dst, host_source(run, x),
                                   xfer_len(run, x), s),
               "host to device copy into %d", x->dst);
    }
    return true;
}

static bool enqueue_d2h(Run *run, Xfer *x, CUstream s, unsigned loops,
                        GError **errp)
{
    CUdeviceptr src = xfer_source(run, x);

    for (unsigned i = 0; i < loops; i++) {
        CU_TRY(p_cuMemcpyDtoHAsync(run->host_in, src, xfer_len(run, x), s),
               "device to host copy out of %d", x->src);
    }
    return true;
}

/* ---- host memory before a host <-> device copy ------------------------ */

typedef struct {
    uint32_t *words;
    gsize n;
    uint64_t first;
    uint32_t seed;
} FillJob;

static gpointer fill_range(gpointer data)
{
    FillJob *job = data;

    for (gsize i = 0; i < job->n; i++) {
        job->words[i] = host_pattern(job->first + i, job->seed);
    }
    return NULL;
}

/* @buf filled with the pattern of @seed by the CPU, so that host ->
 * device does not rest on device -> host; in parallel, as it is the
 * largest piece of CPU work in a run. */
static void fill_host_buffer(void *buf, gsize bytes, uint32_t seed)
{
    guint nt = CLAMP(g_get_num_processors(), 1, 16);
    gsize words = bytes / 4, per = (words + nt - 1) / nt;
    GThread *t[16];
    FillJob jobs[16];

    for (guint i = 0; i < nt; i++) {
        gsize first = MIN(words, i * per);

        jobs[i] = (FillJob){ (uint32_t *)buf + first,
                             MIN(per, words - first), first, seed };
        t[i] = g_thread_new("host-fill", fill_range, &jobs[i]);
    }
    for (guint i = 0; i < nt; i++) {
        g_thread_join(t[i]);
    }
}

/* Once a run: host -> device copies only read these buffers. */
void fill_host_patterns(Run *run)
{
    for (int alt = 0; alt < 2; alt++) {
        Xfer x = { .kind = XFER_H2D, .alt = alt };
        void *buf = host_source(run, &x);

        if (buf) {
            fill_host_buffer(buf, run->bytes, xfer_seed(&x));
        }
    }
}

/* Device -> host lands where a GPU poisoned it (faster than the CPU:
 * with unified addressing, pinned memory has one address for host and
 * GPU; where the driver refuses, the CPU does). The benchmark waits for
 * it; a validated sample has it in stream order before its copies. */
static bool poison_host(Run *run, const Xfer *x, GError **errp)
{
    Gpu *g = &run->gpus[x->src];

    USE_GPU(g);
    if (p_cuMemsetD32Async((CUdeviceptr)(uintptr_t)run->host_in, 0xdeadbeefu,
                           xfer_len(run, x) / 4, g->gate) != CUDA_SUCCESS) {
        memset(run->host_in, 0xa5, xfer_len(run, x));
    }
    if (!run->validate) {
        WAIT(run, NULL, g->gate, "GPU %d: poisoning host memory", x->src);
    }
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
    uint32_t launches, hops;

    (void)loops;
    chase_plan(run, x, &launches, &hops);
    return x->ms * 1e3 / ((double)launches * hops);
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
        .path = PATH_CE, .enqueue = enqueue_h2d,
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
