/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The GPUs as CUDA sees them: discovery, contexts, modules and buffers,
 * peer access for every ordered pair, GPUs lost on the way, teardown.
 */
#include <string.h>

#include "gpup2p/topo.h"
#include "cuda-run.h"

/* ---- discover ---------------------------------------------------------- */

static int find_gpu_by_bdf(VerifyReport *r, const char *bdf)
{
    guint i;

    for (i = 0; i < r->gpus->len; i++) {
        if (!g_ascii_strcasecmp(g_array_index(r->gpus, VerifyGpu, i).bdf,
                                bdf)) {
            return (int)i;
        }
    }
    return -1;
}

/* The report's GPU at @bdf; one that the PCI scan did not see is added,
 * and is a failure of the PCI check. */
static int report_gpu(VerifyReport *r, const char *bdf)
{
    int at = find_gpu_by_bdf(r, bdf);
    VerifyGpu add = { .clique = -1, .numa_node = -1 };

    if (at >= 0) {
        return at;
    }
    g_strlcpy(add.bdf, bdf, sizeof(add.bdf));
    g_array_append_val(r->gpus, add);
    at = r->gpus->len - 1;
    /* A failure of the PCI check: its capability is unknown. */
    r->p2p_broken = true;
    verify_note(r, "GPU %d (%s): seen by CUDA but not on PCI: the PCI check "
                "failed for it", at, bdf);
    return at;
}

static bool discover_gpu(Run *run, int i, GError **errp)
{
    VerifyReport *r = run->r;
    Gpu *g = &run->gpus[i];
    char bus[32], norm[GP_BDF_LEN];
    VerifyGpu *vg;

    g->ordinal = i;
    CU_TRY(p_cuDeviceGet(&g->dev, i), "cuDeviceGet %d", i);
    CU_TRY(p_cuDeviceGetPCIBusId(bus, sizeof(bus), g->dev),
           "cuDeviceGetPCIBusId %d", i);
    if (!gp_bdf_normalize(bus, norm)) {
        g_strlcpy(norm, bus, sizeof(norm));
    }
    run->report_of[i] = report_gpu(r, norm);
    vg = &g_array_index(r->gpus, VerifyGpu, run->report_of[i]);
    vg->cuda_index = i;
    CU_TRY(p_cuDeviceGetName(vg->name, sizeof(vg->name), g->dev),
           "cuDeviceGetName %d", i);
    CU_TRY(p_cuDeviceGetAttribute(&vg->sm_major,
               CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g->dev),
           "compute capability");
    CU_TRY(p_cuDeviceGetAttribute(&vg->sm_minor,
               CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g->dev),
           "compute capability");
    CU_TRY(p_cuDeviceGetAttribute(&g->sms,
               CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, g->dev),
           "multiprocessor count");
    return true;
}

bool cuda_discover(Run *run, GError **errp)
{
    VerifyReport *r = run->r;

    if (!cuda_load(errp)) {
        return false;
    }
    CU_TRY(p_cuInit(0), "cuInit");
    CU_TRY(p_cuDriverGetVersion(&r->cuda_driver_version),
           "cuDriverGetVersion");
    CU_TRY(p_cuDeviceGetCount(&run->n), "cuDeviceGetCount");
    r->phase_s[0] = (g_get_monotonic_time() - run->t0) / 1e6;
    run->gpus = g_new0(Gpu, run->n);
    run->report_of = g_new(int, run->n);
    run->gone = g_new0(bool, run->n);
    for (int i = 0; i < run->n; i++) {
        if (!discover_gpu(run, i, errp)) {
            return false;
        }
    }
    return true;
}

/*
 * GPUs on PCI that CUDA does not use, once NVML has looked: "hidden" only
 * where NVML (which ignores CUDA_VISIBLE_DEVICES) sees the GPU and
 * CUDA_VISIBLE_DEVICES is set; a GPU neither sees is untested, whatever
 * the variable says (the driver may never have bound it).
 */
void judge_unseen_gpus(VerifyReport *r)
{
    bool cvd = g_getenv("CUDA_VISIBLE_DEVICES") != NULL;

    for (guint gi = 0; gi < r->gpus->len; gi++) {
        VerifyGpu *vg = &g_array_index(r->gpus, VerifyGpu, gi);

        if (vg->cuda_index >= 0) {
            continue;
        }
        if (cvd && vg->nvml_seen) {
            /* The operator chose the subset: left out, not failed. */
            vg->hidden = true;
            verify_note(r, "GPU %u (%s): not tested, left out by "
                        "CUDA_VISIBLE_DEVICES", gi, vg->bdf);
        } else if (vg->nvml_seen) {
            verify_record_untested(r, "GPU %u (%s): on PCI and seen by NVML "
                                   "but not by CUDA", gi, vg->bdf);
        } else {
            verify_record_untested(r, "GPU %u (%s): on PCI but seen by "
                                   "neither CUDA nor NVML (no driver bound, "
                                   "or the driver failed on it%s)", gi,
                                   vg->bdf, r->nvml_status ?
                                   "; NVML not available" : "");
        }
    }
}

/* ---- allocate ---------------------------------------------------------- */

static bool gpu_load_kernels(Gpu *g, GError **errp)
{
#ifdef VERIFY_HAVE_KERNELS
    CU_TRY(p_cuModuleLoadData(&g->mod, verify_kernels_fatbin),
           "GPU %d: loading the tool's kernels", g->ordinal);
    CU_TRY(p_cuModuleGetFunction(&g->fill, g->mod, "fill_pattern"), "fill");
    CU_TRY(p_cuModuleGetFunction(&g->check, g->mod, "check_pattern"),
           "check");
    CU_TRY(p_cuModuleGetFunction(&g->copy, g->mod, "copy_int4"), "copy");
    CU_TRY(p_cuModuleGetFunction(&g->spin, g->mod, "spin"), "spin");
    CU_TRY(p_cuModuleGetFunction(&g->chase, g->mod, "pointer_chase"),
           "chase");
#else
    (void)g; (void)errp;
#endif
    return true;
}

/* The source buffer filled with the GPU's own pattern. */
static bool gpu_fill_source(Run *run, Gpu *g, GError **errp)
{
#ifdef VERIFY_HAVE_KERNELS
    uint64_t words = run->bytes / 4;

    /* The alternate pattern (validation only) differs in every byte, so
     * a copy that leaves the other one in place is seen. */
    for (int alt = 0; alt < (run->validate ? 2 : 1); alt++) {
        Xfer x = { .src = g->ordinal, .alt = alt };
        CUdeviceptr buf = xfer_source(run, &x);
        uint32_t seed = xfer_seed(&x);
        void *args[] = { &buf, &words, &seed };

        CU_TRY(launch(g->fill, g->sms * 4, 512, g->gate, args),
               "GPU %d: fill_pattern", g->ordinal);
    }
    WAIT(run, NULL, g->gate, "GPU %d: fill_pattern", g->ordinal);
#else
    (void)run; (void)g; (void)errp;
#endif
    return true;
}

static bool gpu_open(Run *run, Gpu *g, GError **errp)
{
    /* One inbox slot: a GPU receives one transfer at a time, except in
     * all-to-one, where each peer's share of the slot is its own. */
    gsize inbox = run->bytes;

    CU_TRY(p_cuDevicePrimaryCtxRetain(&g->ctx, g->dev),
           "GPU %d: cuDevicePrimaryCtxRetain", g->ordinal);
    USE_GPU(g);
    if (!gpu_load_kernels(g, errp)) {
        return false;
    }
    CU_TRY(p_cuStreamCreate(&g->gate, CU_STREAM_NON_BLOCKING),
           "cuStreamCreate");
    CU_TRY(p_cuStreamCreate(&g->checks, CU_STREAM_NON_BLOCKING),
           "cuStreamCreate");
    CU_TRY(p_cuEventCreate(&g->gate_open, CU_EVENT_DISABLE_TIMING),
           "cuEventCreate");
    g->to = g_new0(CUstream, run->n);
    for (int i = 0; i < run->n; i++) {
        CU_TRY(p_cuStreamCreate(&g->to[i], CU_STREAM_NON_BLOCKING),
               "cuStreamCreate");
    }
    CU_TRY(p_cuMemAlloc(&g->src, run->bytes), "GPU %d: allocating %"
           G_GSIZE_FORMAT " bytes", g->ordinal, run->bytes);
    CU_TRY(p_cuMemAlloc(&g->inbox, inbox), "GPU %d: allocating %"
           G_GSIZE_FORMAT " bytes", g->ordinal, inbox);
    if (run->validate) {
        CU_TRY(p_cuMemAlloc(&g->src_alt, run->bytes), "GPU %d: allocating %"
               G_GSIZE_FORMAT " bytes", g->ordinal, run->bytes);
    }
    CU_TRY(p_cuMemAlloc(&g->scratch, SCRATCH_COPY_WORDS +
                        8 * (gsize)run->n * MAX_COPIES),
           "GPU %d: scratch", g->ordinal);
    if (verify_figure_wanted(run->o, FIG_STAGED)) {
        /* Pinning takes time: only for the host-staged figure. */
        CU_TRY(p_cuMemHostAlloc(&g->staging, 2 * STAGING_CHUNK,
                                CU_MEMHOSTALLOC_PORTABLE),
               "GPU %d: pinned staging memory", g->ordinal);
    }
    return gpu_fill_source(run, g, errp);
}

typedef struct {
    Run *run;
    Gpu *gpu;
} GpuOpenJob;

static gpointer gpu_open_thread(gpointer data)
{
    GpuOpenJob *job = data;

    gpu_open(job->run, job->gpu, &job->gpu->open_error);
    return NULL;
}

/* Contexts, modules and buffers, for all GPUs at once (each takes time). */
static bool open_all_gpus(Run *run, GError **errp)
{
    g_autofree GThread **threads = g_new0(GThread *, run->n);
    g_autofree GpuOpenJob *jobs = g_new0(GpuOpenJob, run->n);
    bool ok = true;

    for (int i = 0; i < run->n; i++) {
        jobs[i] = (GpuOpenJob){ run, &run->gpus[i] };
        threads[i] = g_thread_new("gpu-open", gpu_open_thread, &jobs[i]);
    }
    for (int i = 0; i < run->n; i++) {
        g_thread_join(threads[i]);
        if (run->gpus[i].open_error && ok) {
            g_propagate_error(errp, g_steal_pointer(&run->gpus[i].open_error));
            ok = false;
        }
        g_clear_error(&run->gpus[i].open_error);
    }
    return ok;
}

/*
 * Pinned, portable, the full size. Without it only the @what figure is
 * missing, and the run says why.
 */
static void pin_host(Run *run, void **buf, const char *what)
{
    CUresult res = p_cuMemHostAlloc(buf, run->bytes,
                                    CU_MEMHOSTALLOC_PORTABLE);

    if (res) {
        *buf = NULL;
        verify_record_untested(run->r, "%s figures not measured: pinning %"
                               G_GSIZE_FORMAT " bytes of host memory "
                               "failed: %s", what, run->bytes, cu_err(res));
    }
}

void host_buffers_pin(Run *run)
{
    if (verify_figure_wanted(run->o, FIG_PAIR_COUNT + AGG_H2D)) {
        pin_host(run, &run->host, "host to device");
        if (run->validate) {
            pin_host(run, &run->host_alt, "host to device");
        }
        if (run->host && (run->host_alt || !run->validate)) {
            fill_host_patterns(run);
        }
    }
    if (verify_figure_wanted(run->o, FIG_PAIR_COUNT + AGG_D2H)) {
        pin_host(run, &run->host_in, "device to host");
    }
}

void host_buffers_free(Run *run, bool copying)
{
    void **bufs[] = { &run->host, &run->host_alt, &run->host_in };

    for (guint i = 0; i < G_N_ELEMENTS(bufs); i++) {
        if (*bufs[i] && !copying) {
            p_cuMemFreeHost(*bufs[i]);
        }
        *bufs[i] = NULL;
    }
}

bool cuda_allocate(Run *run, GError **errp)
{
    if (!open_all_gpus(run, errp)) {
        return false;
    }
    USE_GPU(&run->gpus[0]);
    CU_TRY(p_cuMemHostAlloc((void **)&run->flag, 4096,
                            CU_MEMHOSTALLOC_PORTABLE |
                            CU_MEMHOSTALLOC_DEVICEMAP), "pinned flag");
    CU_TRY(p_cuMemHostGetDevicePointer(&run->flag_dev, (void *)run->flag, 0),
           "mapped flag");
    CU_TRY(p_cuMemHostAlloc((void **)&run->results,
                            sizeof(uint64_t) * run->n * (run->n + 2),
                            CU_MEMHOSTALLOC_PORTABLE), "pinned results");
    CU_TRY(p_cuMemHostAlloc((void **)&run->copy_results,
                            sizeof(uint64_t) * run->n * run->n * MAX_COPIES,
                            CU_MEMHOSTALLOC_PORTABLE), "pinned results");
    if (run->validate) {
        /* One set for all GPUs, in GPU 0's context, not placed;
         * --benchmark pins a set per GPU near it (measure_host). */
        host_buffers_pin(run);
    }
    return true;
}

/* A cycle over whole 128-byte lines of @bytes, in pinned memory: in a
 * random order, or (@random false) line after line, as nvbandwidth's. */
static bool make_chain(gsize bytes, bool random, uint32_t **chain,
                       GError **errp)
{
    gsize entries = bytes / 4, lines = entries / 32, i;
    g_autofree uint32_t *order = g_new(uint32_t, lines);
    GRand *rnd = g_rand_new_with_seed(42);

    for (i = 0; i < lines; i++) {
        order[i] = (uint32_t)(i * 32);
    }
    for (i = lines - 1; random && i > 0; i--) {
        gsize j = g_rand_int_range(rnd, 0, (gint32)i + 1);
        uint32_t t = order[i];

        order[i] = order[j];
        order[j] = t;
    }
    g_rand_free(rnd);
    CU_TRY(p_cuMemHostAlloc((void **)chain, bytes, CU_MEMHOSTALLOC_PORTABLE),
           "pinned chain");
    memset(*chain, 0, bytes);
    for (i = 0; i < lines; i++) {
        (*chain)[order[i]] = order[(i + 1) % lines];
    }
    return true;
}

/* @chain copied into GPU @g's memory, stream-ordered from pinned memory:
 * no race with later work. */
static bool upload_chain(Run *run, Gpu *g, const uint32_t *chain, gsize bytes,
                         GError **errp)
{
    CUresult res;

    USE_GPU(g);
    if ((res = p_cuMemAlloc(&g->chain, bytes)) ||
        (res = p_cuMemcpyHtoDAsync(g->chain, chain, bytes, g->gate))) {
        g_set_error(errp, VERIFY_CUDA_ERROR, res, "GPU %d: latency chain: "
                    "%s", g->ordinal, cu_err(res));
        return false;
    }
    if (!wait_done(run, NULL, g->gate, "latency chain", errp)) {
        return false;
    }
    g->chain_bytes = bytes;
    return true;
}

/*
 * The pointer-chase chain in every GPU's memory, built once. Validation:
 * a random cycle over up to 64 MiB (uncached loads: on four H200s, 256
 * MiB gave the same latency to 0.1%); --benchmark: nvbandwidth's
 * footprint and walk, 2 MiB a line at a time.
 */
bool build_chains(Run *run, GError **errp)
{
    gsize bytes = run->validate ? MIN(run->bytes, (gsize)64 << 20) :
                  MIN(run->bytes, (gsize)2 << 20);
    uint32_t *chain = NULL;

    if (!make_chain(bytes, run->validate, &chain, errp)) {
        return false;
    }
    for (int g = 0; g < run->n; g++) {
        g_autoptr(GError) err = NULL;
        CUresult code;

        if (run->gone[g]) {
            continue;   /* lost in the data checks: nothing more on it */
        }
        if (upload_chain(run, &run->gpus[g], chain, bytes, &err)) {
            continue;
        }
        code = cuda_error_code(err);
        if (gpu_probe_lost(run, g) || code == CUDA_ERROR_NOT_READY) {
            /* Lost or hung: that GPU is out, the others go on. */
            mark_gone(run, g, "%s", err->message);
            continue;
        }
        p_cuMemFreeHost(chain);
        g_propagate_error(errp, g_steal_pointer(&err));
        return false;
    }
    p_cuMemFreeHost(chain);
    return true;
}

/* ---- lost GPUs --------------------------------------------------------- */

void mark_gone(Run *run, int g, const char *fmt, ...)
{
    VerifyGpu *vg = &g_array_index(run->r->gpus, VerifyGpu,
                                   run->report_of[g]);
    va_list ap;

    if (run->gone[g]) {
        return;
    }
    run->gone[g] = true;
    run->r->gpu_lost = true;
    vg->lost = true;
    va_start(ap, fmt);
    g_vsnprintf(vg->lost_why, sizeof(vg->lost_why), fmt, ap);
    va_end(ap);
    verify_note(run->r, "GPU %d (%s) lost: %s; its remaining pairs are not "
                "tested", run->report_of[g], vg->bdf, vg->lost_why);
}

/* Where a context cannot be made current, the GPU is of no further use. */
bool gpu_current_or_gone(Run *run, int g)
{
    g_autoptr(GError) err = NULL;

    if (gpu_make_current(&run->gpus[g], &err)) {
        return true;
    }
    mark_gone(run, g, "%s", err->message);
    return false;
}

void drain_gpu(Run *run, int g)
{
    Gpu *gp = &run->gpus[g];
    g_autoptr(GError) err = NULL;
    bool ok = true;
    CUresult code;

    if (run->gone[g] || !gp->ctx || !gpu_current_or_gone(run, g)) {
        return;
    }
    ok = !gp->gate || wait_done(run, NULL, gp->gate, "gate stream", &err);
    for (int k = 0; ok && gp->to && k < run->n; k++) {
        ok = !gp->to[k] || wait_done(run, NULL, gp->to[k], "stream", &err);
    }
    ok = ok && (!gp->checks ||
                wait_done(run, NULL, gp->checks, "checks stream", &err));
    code = cuda_error_code(err);
    if (!ok && code == CUDA_ERROR_NOT_READY) {
        mark_gone(run, g, "hung: %s", err->message);
    } else if (!ok && cu_sticky(code)) {
        mark_gone(run, g, "sticky CUDA error: %s", err->message);
    }
}

/* @s anew where it still has work: that work waits on a GPU retired
 * since, and would never end. */
static bool renew_if_busy(CUstream *s)
{
    if (!*s || p_cuStreamQuery(*s) != CUDA_ERROR_NOT_READY) {
        return true;
    }
    /* Destroying a busy stream returns at once; the driver frees it
     * when (if ever) its work is done. */
    p_cuStreamDestroy(*s);
    *s = NULL;
    return p_cuStreamCreate(s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS;
}

void renew_streams_waiting_on_gone(Run *run, int g)
{
    Gpu *gp = &run->gpus[g];
    bool ok;

    if (run->gone[g] || !gp->ctx || !gpu_current_or_gone(run, g)) {
        return;
    }
    ok = renew_if_busy(&gp->checks);
    for (int k = 0; ok && gp->to && k < run->n; k++) {
        ok = renew_if_busy(&gp->to[k]);
    }
    if (!ok) {
        mark_gone(run, g, "cannot make a new stream after GPU work hung");
        return;
    }
    drain_gpu(run, g);      /* its own work: the gate, what is left */
}

bool gpu_probe_lost(Run *run, int g)
{
    CUresult res;

    if (run->gone[g] || !gpu_current_or_gone(run, g)) {
        return true;
    }
    res = p_cuStreamQuery(run->gpus[g].gate);
    /* A stream query fails only for its context's own trouble: any error
     * (220 after the driver took the context down included) is lost. */
    return res != CUDA_SUCCESS && res != CUDA_ERROR_NOT_READY;
}

/* ---- pairs ------------------------------------------------------------- */

VerifyPair *pair_of(const Run *run, int a, int b)
{
    return verify_pair_find(run->r, run->report_of[a], run->report_of[b]);
}

void pair_problem(VerifyPair *p, const char *fmt, ...)
{
    g_autofree char *msg = NULL;
    va_list ap;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (!p->verify_problem[0]) {
        g_strlcpy(p->verify_problem, msg, sizeof(p->verify_problem));
    }
}

CheckState *pair_path_state(VerifyPair *p, PairPath path)
{
    switch (path) {
    case PATH_SM_WRITE:
        return &p->verified_sm;
    case PATH_SM_READ:
        return &p->verified_sm_read;
    case PATH_CE:
        break;
    }
    return &p->verified_ce;
}

/* CUDA's answers about a -> b, before any context is used. */
static void pair_query(Run *run, VerifyPair *p, Gpu *ga, Gpu *gb)
{
    int can = 0;
    CUresult res = p_cuDeviceCanAccessPeer(&can, ga->dev, gb->dev);

    if (res == CUDA_SUCCESS) {
        p->peer_access = can;
    } else {
        /* Not "no peer access": unknown, so untested, named. */
        pair_problem(p, "cuDeviceCanAccessPeer %u->%u: %s (%d)", p->a, p->b,
                     cu_err(res), (int)res);
        verify_record_untested(run->r, "GPUs %u -> %u: cuDeviceCanAccessPeer "
                               "failed: %s (%d)", p->a, p->b, cu_err(res),
                               (int)res);
    }
    if (p_cuDeviceGetP2PAttribute(&p->perf_rank,
            CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, ga->dev,
            gb->dev) != CUDA_SUCCESS) {
        p->perf_rank = -1;
    }
    if (p_cuDeviceGetP2PAttribute(&p->native_atomics,
            CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, ga->dev,
            gb->dev) != CUDA_SUCCESS) {
        p->native_atomics = -1;
    }
}

/* Peer access a -> b enabled where offered; false where a's context could
 * not be made current (a is then gone, the pair not testable). */
static bool pair_enable(Run *run, VerifyPair *p, int a, Gpu *gb)
{
    CUresult res;

    if (p->peer_access != 1) {
        return true;
    }
    if (!gpu_current_or_gone(run, a)) {
        return false;
    }
    /* Offered peer access that cannot be enabled is broken. */
    res = p_cuCtxEnablePeerAccess(gb->ctx, 0);
    if (res != CUDA_SUCCESS && res != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
        /* Its paths are failed below: verify_judge() reads them. */
        pair_problem(p, "cuCtxEnablePeerAccess %u->%u: %s", p->a, p->b,
                     cu_err(res));
    } else {
        p->peer_enabled = true;
    }
    return true;
}

/* Peer access for every ordered pair: enabled where CUDA offers it. */
void pair_access(Run *run)
{
    for (int a = 0; a < run->n; a++) {
        for (int b = 0; b < run->n; b++) {
            VerifyPair p = { .peer_access = -1, .perf_rank = -1,
                             .native_atomics = -1 };
            CheckState st;

            if (a == b) {
                continue;
            }
            p.a = run->report_of[a];
            p.b = run->report_of[b];
            g_strlcpy(p.link, "unknown", sizeof(p.link));
            pair_query(run, &p, &run->gpus[a], &run->gpus[b]);
            if (run->gone[a] || !pair_enable(run, &p, a, &run->gpus[b])) {
                st = CHECK_UNTESTABLE;
                pair_problem(&p, "not tested: GPU %u lost: %s", p.a,
                             g_array_index(run->r->gpus, VerifyGpu,
                                           p.a).lost_why);
            } else if (!p.peer_enabled) {
                st = p.peer_access == 1 ? CHECK_FAILED : CHECK_UNTESTABLE;
                pair_problem(&p, "no peer access");
            } else if (!run->r->kernels) {
                st = CHECK_UNTESTABLE;
                pair_problem(&p, "not testable: built without CUDA kernels");
            } else {
                st = CHECK_OK;
            }
            p.verified_ce = p.verified_sm = p.verified_sm_read = st;
            g_array_append_val(run->r->pairs, p);
        }
    }
}

/* ---- teardown ---------------------------------------------------------- */

/* Streams and the gate event: destroyed without waiting for their work. */
static void teardown_streams(Run *run, Gpu *g)
{
    for (int k = 0; g->to && k < run->n; k++) {
        if (g->to[k]) {
            p_cuStreamDestroy(g->to[k]);
        }
    }
    g_clear_pointer(&g->to, g_free);
    if (g->gate) {
        p_cuStreamDestroy(g->gate);
    }
    if (g->checks) {
        p_cuStreamDestroy(g->checks);
    }
    if (g->gate_open) {
        p_cuEventDestroy(g->gate_open);
    }
}

static void gpu_free_memory(Gpu *g)
{
    CUdeviceptr *bufs[] = { &g->src, &g->src_alt, &g->inbox, &g->chain,
                            &g->scratch };

    for (guint i = 0; i < G_N_ELEMENTS(bufs); i++) {
        if (*bufs[i]) {
            p_cuMemFree(*bufs[i]);
        }
    }
    if (g->staging) {
        p_cuMemFreeHost(g->staging);
    }
}

void cuda_teardown(Run *run)
{
    for (int i = 0; i < run->n; i++) {
        Gpu *g = &run->gpus[i];

        if (!g->ctx) {
            continue;
        }
        if (gpu_current_or_gone(run, i)) {
            drain_gpu(run, i);
        }
        if (run->gone[i]) {
            /* Lost or hung: what could block (frees, the context) is left
             * to the driver at exit; streams go without waiting. */
            teardown_streams(run, g);
            continue;
        }
        gpu_free_memory(g);
        teardown_streams(run, g);
        if (g->mod) {
            p_cuModuleUnload(g->mod);
        }
        p_cuDevicePrimaryCtxRelease(g->dev);
    }
    if (run->flag) {
        p_cuMemFreeHost((void *)run->flag);
    }
    if (run->results) {
        p_cuMemFreeHost(run->results);
    }
    if (run->copy_results) {
        p_cuMemFreeHost(run->copy_results);
    }
    /* A hung GPU may still be copying: left to exit. */
    host_buffers_free(run, run->r->gpu_lost);
    g_free(run->gpus);
    g_free(run->report_of);
    g_free(run->gone);
}
