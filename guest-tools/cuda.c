/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The driver view, the data checks and the figures, through the CUDA
 * driver API loaded at run time (libcuda.so.1), so the tool runs, and
 * says so, without it.
 *
 * Phases: discover (devices, contexts), allocate (a source buffer and an
 * inbox with one slot per peer on every GPU), pair checks (peer access,
 * one verified copy per path), figures (the table in figures.c), teardown.
 *
 * Every transfer, timed or not, goes through run_batch(): the destination
 * slot is poisoned, a spin kernel holds each GPU's gate stream until all
 * work is queued, events bracket the loops on the executing GPU's own
 * stream, and a kernel at the destination checks every byte afterwards.
 * Transfers of one batch run at the same time; the schedule only puts
 * pairs on independent links into one batch.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "gpup2p/topo.h"
#include "cuda-abi.h"
#include "verify.h"

#ifdef VERIFY_HAVE_KERNELS
extern const unsigned char verify_kernels_fatbin[];
#endif

#define CU_DECLARE(name, params) static CUresult (*p_##name) params;
CU_APIS(CU_DECLARE)

#define CHASE_HOPS 20000u
#define CE_LATENCY_REPS 100u
#define STAGING_CHUNK ((gsize)32 << 20)

typedef struct {
    int ordinal;
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fill, check, copy, spin, chase;
    CUstream gate;              /* spin kernel, checks */
    CUstream *to;               /* one stream per peer ordinal */
    CUevent gate_open;
    int sms;
    CUdeviceptr src, inbox, chain, scratch;
    gsize chain_bytes;
    void *staging;              /* pinned, 2 chunks */
    GError *error;              /* of the open thread */
} Gpu;

typedef struct {
    const VerifyOptions *o;
    VerifyReport *r;
    Gpu *gpus;
    int n;
    int *report_of;             /* ordinal -> index in r->gpus */
    volatile int *flag;         /* pinned, mapped: releases the spins */
    CUdeviceptr flag_dev;
    uint64_t *results;          /* pinned: per GPU, n check words + chase */
    void *host;                 /* pinned, the size: host <-> device */
    int host_pattern;           /* whose pattern host holds, -1 none */
    gsize bytes;
    unsigned loops, warmup;
    double watchdog_s;          /* longest wait for any GPU work */
    bool *gone;                 /* per ordinal: lost or hung, unused since */
    gint64 t0;
} Run;

/* One transfer of a batch, and what came of it. */
typedef struct {
    XferKind kind;
    int src, dst;               /* ordinals */
    unsigned warmup;            /* untimed copies before the timed ones */
    gsize off, len;             /* at dst's inbox; len 0: the full size */
    CUevent start, stop;
    CUevent down[2], up[2];     /* staged copies */
    double ms;
    int64_t bad;                /* first bad byte offset at dst, -1 none */
    unsigned bad_copy, copies;  /* which copy of how many came back bad */
    bool bad_in_warmup;         /* bad_copy counts the warm-up copies */
} Xfer;

/* The pattern seed of GPU @ordinal's source buffer, fixed for the run:
 * the fill and check kernels and the host all use it. */
static uint32_t pattern_seed(int ordinal)
{
    return 0x5eed0000u | (uint32_t)ordinal;
}

static const char *cu_err(CUresult r)
{
    const char *s = NULL;

    if (p_cuGetErrorString) {
        p_cuGetErrorString(r, &s);
    }
    return s ? s : "unknown CUDA error";
}

/* The CUDA error of this thread's last failed CU_TRY or wait. */
static __thread CUresult cu_last;

#define CU_TRY(call, ...)                                                  \
    do {                                                                   \
        CUresult r_ = (call);                                              \
        if (r_ != CUDA_SUCCESS) {                                          \
            cu_last = r_;                                                  \
            g_autofree char *what_ = g_strdup_printf(__VA_ARGS__);         \
            g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: %s (%d)",       \
                        what_, cu_err(r_), (int)r_);                       \
            return false;                                                  \
        }                                                                  \
    } while (0)

static bool cuda_load(GError **errp)
{
    typedef CUresult (*GetProc)(const char *, void **, int, uint64_t, int *);
    static bool loaded;
    void *h;
    GetProc get;

    if (loaded) {
        return true;
    }
    h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND,
                    "CUDA driver not loaded: %s", dlerror());
        return false;
    }
    get = (GetProc)dlsym(h, "cuGetProcAddress_v2");
    if (!get) {
        g_set_error(errp, GP_ERROR, GP_ERROR_UNSUPPORTED,
                    "CUDA driver too old: no cuGetProcAddress_v2 (needs a "
                    "CUDA 12 driver or later)");
        return false;
    }
#define CU_RESOLVE(name, params)                                           \
    {                                                                      \
        int st_ = 0;                                                       \
        if (get(#name, (void **)&p_##name, 12000,                          \
                CU_GET_PROC_ADDRESS_DEFAULT, &st_) != CUDA_SUCCESS ||      \
            !p_##name) {                                                   \
            g_set_error(errp, GP_ERROR, GP_ERROR_UNSUPPORTED,              \
                        "CUDA driver lacks " #name);                       \
            return false;                                                  \
        }                                                                  \
    }
    CU_APIS(CU_RESOLVE)
    loaded = true;
    return true;
}

static CUresult launch(CUfunction f, unsigned grid, unsigned block,
                       CUstream s, void **args)
{
    return p_cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, args, NULL);
}

/* Sticky errors: the context (and the GPU, until reset) is unusable. */
static bool cu_sticky(CUresult r)
{
    switch (r) {
    case 46:    /* CUDA_ERROR_DEVICE_UNAVAILABLE */
    case 214:   /* CUDA_ERROR_ECC_UNCORRECTABLE */
    case 700:   /* CUDA_ERROR_ILLEGAL_ADDRESS */
    case 702:   /* CUDA_ERROR_LAUNCH_TIMEOUT */
    case 714:   /* CUDA_ERROR_HARDWARE_STACK_ERROR */
    case 715:   /* CUDA_ERROR_ILLEGAL_INSTRUCTION */
    case 716:   /* CUDA_ERROR_MISALIGNED_ADDRESS */
    case 717:   /* CUDA_ERROR_INVALID_ADDRESS_SPACE */
    case 718:   /* CUDA_ERROR_INVALID_PC */
    case 719:   /* CUDA_ERROR_LAUNCH_FAILED */
        return true;
    }
    return false;
}

/*
 * Waits for event @e (or, with @e NULL, all work of stream @s) by polling,
 * never longer than the watchdog: hung work fails, naming @what, instead
 * of hanging the tool (cuEventSynchronize has no time limit).
 */
static bool wait_done(Run *run, CUevent e, CUstream s, const char *what,
                      GError **errp)
{
    gint64 end = g_get_monotonic_time() + (gint64)(run->watchdog_s * 1e6);
    gulong nap = 20;

    for (;;) {
        CUresult res = e ? p_cuEventQuery(e) : p_cuStreamQuery(s);

        if (res == CUDA_SUCCESS) {
            return true;
        }
        if (res != CUDA_ERROR_NOT_READY) {
            cu_last = res;
            g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: %s (%d)", what,
                        cu_err(res), (int)res);
            return false;
        }
        if (g_get_monotonic_time() > end) {
            cu_last = CUDA_ERROR_NOT_READY;
            g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: not finished "
                        "after %g s (--watchdog-s): hung", what,
                        run->watchdog_s);
            return false;
        }
        g_usleep(nap);
        nap = MIN(nap * 2, 1000);
    }
}

#define WAIT(run, e, s, ...)                                               \
    do {                                                                   \
        g_autofree char *w_ = g_strdup_printf(__VA_ARGS__);                \
        if (!wait_done(run, e, s, w_, errp)) {                             \
            return false;                                                  \
        }                                                                  \
    } while (0)

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

static bool discover(Run *run, GError **errp)
{
    VerifyReport *r = run->r;
    int i;

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
    for (i = 0; i < run->n; i++) {
        Gpu *g = &run->gpus[i];
        char bus[32], norm[GP_BDF_LEN];
        VerifyGpu *vg;
        int at;

        g->ordinal = i;
        CU_TRY(p_cuDeviceGet(&g->dev, i), "cuDeviceGet %d", i);
        CU_TRY(p_cuDeviceGetPCIBusId(bus, sizeof(bus), g->dev),
               "cuDeviceGetPCIBusId %d", i);
        if (!gp_bdf_normalize(bus, norm)) {
            g_strlcpy(norm, bus, sizeof(norm));
        }
        at = find_gpu_by_bdf(r, norm);
        if (at < 0) {
            /* CUDA sees a GPU the PCI scan did not. */
            VerifyGpu add = { .clique = -1, .numa_node = -1 };

            g_strlcpy(add.bdf, norm, sizeof(add.bdf));
            g_array_append_val(r->gpus, add);
            at = r->gpus->len - 1;
            /* A failure of the PCI check: its capability is unknown. */
            r->p2p_broken = true;
            verify_note(r, "GPU %d (%s): seen by CUDA but not on PCI: the "
                        "PCI check failed for it", at, norm);
        }
        run->report_of[i] = at;
        vg = &g_array_index(r->gpus, VerifyGpu, at);
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
    }
    return true;
}

/*
 * GPUs on PCI that CUDA does not use, once NVML has looked: "hidden" only
 * where NVML (which ignores CUDA_VISIBLE_DEVICES) sees the GPU and
 * CUDA_VISIBLE_DEVICES is set; a GPU neither sees is untested, whatever
 * the variable says (the driver may never have bound it).
 */
static void judge_unseen_gpus(VerifyReport *r)
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

static bool gpu_open(Run *run, Gpu *g, GError **errp)
{
    /* One inbox slot: a GPU receives one transfer at a time, except in
     * all-to-one, where each peer's share of the slot is its own. */
    gsize inbox = run->bytes;

    CU_TRY(p_cuDevicePrimaryCtxRetain(&g->ctx, g->dev),
           "GPU %d: cuDevicePrimaryCtxRetain", g->ordinal);
    CU_TRY(p_cuCtxSetCurrent(g->ctx), "GPU %d: cuCtxSetCurrent", g->ordinal);
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
#endif
    CU_TRY(p_cuStreamCreate(&g->gate, CU_STREAM_NON_BLOCKING),
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
    CU_TRY(p_cuMemAlloc(&g->scratch, 4096), "GPU %d: scratch", g->ordinal);
    if (verify_figure_wanted(run->o, FIG_STAGED)) {
        /* Pinning takes time: only for the host-staged figure. */
        CU_TRY(p_cuMemHostAlloc(&g->staging, 2 * STAGING_CHUNK,
                                CU_MEMHOSTALLOC_PORTABLE),
               "GPU %d: pinned staging memory", g->ordinal);
    }
#ifdef VERIFY_HAVE_KERNELS
    {
        uint64_t words = run->bytes / 4;
        uint32_t seed = pattern_seed(g->ordinal);
        void *args[] = { &g->src, &words, &seed };

        CU_TRY(launch(g->fill, g->sms * 4, 512, g->gate, args),
               "GPU %d: fill_pattern", g->ordinal);
        WAIT(run, NULL, g->gate, "GPU %d: fill_pattern", g->ordinal);
    }
#endif
    return true;
}

static gpointer gpu_open_thread(gpointer data)
{
    void **args = data;

    gpu_open(args[0], args[1], &((Gpu *)args[1])->error);
    return NULL;
}

/* Contexts, modules and buffers, for all GPUs at once (each takes time). */
static bool allocate(Run *run, GError **errp)
{
    g_autofree GThread **threads = g_new0(GThread *, run->n);
    g_autofree void **args = g_new0(void *, 2 * run->n);
    int i;
    bool ok = true;

    for (i = 0; i < run->n; i++) {
        args[2 * i] = run;
        args[2 * i + 1] = &run->gpus[i];
        threads[i] = g_thread_new("gpu-open", gpu_open_thread, &args[2 * i]);
    }
    for (i = 0; i < run->n; i++) {
        g_thread_join(threads[i]);
        if (run->gpus[i].error && ok) {
            g_propagate_error(errp, run->gpus[i].error);
            run->gpus[i].error = NULL;
            ok = false;
        }
        g_clear_error(&run->gpus[i].error);
    }
    if (!ok) {
        return false;
    }
    CU_TRY(p_cuCtxSetCurrent(run->gpus[0].ctx), "cuCtxSetCurrent");
    CU_TRY(p_cuMemHostAlloc((void **)&run->flag, 4096,
                            CU_MEMHOSTALLOC_PORTABLE |
                            CU_MEMHOSTALLOC_DEVICEMAP), "pinned flag");
    CU_TRY(p_cuMemHostGetDevicePointer(&run->flag_dev, (void *)run->flag, 0),
           "mapped flag");
    CU_TRY(p_cuMemHostAlloc((void **)&run->results,
                            sizeof(uint64_t) * run->n * (run->n + 2),
                            CU_MEMHOSTALLOC_PORTABLE), "pinned results");
    if (verify_figure_wanted(run->o, FIG_PAIR_COUNT + AGG_H2D) ||
        verify_figure_wanted(run->o, FIG_PAIR_COUNT + AGG_D2H)) {
        /* Pinned, portable, the full size; one for all GPUs, measured
         * one at a time, allocated in GPU 0's context with no NUMA
         * placement (nvbandwidth pins its thread near each GPU first).
         * Without it only the host figures are missing. */
        CUresult res = p_cuMemHostAlloc(&run->host, run->bytes,
                                        CU_MEMHOSTALLOC_PORTABLE);

        if (res) {
            run->host = NULL;
            verify_record_untested(run->r, "host <-> device figures not "
                                   "measured: pinning %" G_GSIZE_FORMAT
                                   " bytes of host memory failed: %s",
                                   run->bytes, cu_err(res));
        }
    }
    return true;
}

/* Word @i of the pattern for @seed: the kernels' pattern() (kernels.cu),
 * so that the host can fill a buffer and name an exact bad byte. */
static uint32_t host_pattern(uint64_t i, uint32_t seed)
{
    uint64_t v = i * 0x9E3779B97F4A7C15ull + seed;

    v ^= v >> 31;
    v *= 0xBF58476D1CE4E5B9ull;
    return (uint32_t)(v ^ (v >> 29));
}

/* GPU @g (ordinal) is unusable from now on: lost, or hung. */
static void mark_gone(Run *run, int g, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
/* GPU @g's context has an error of its own (or it is gone already). */
static bool gpu_probe_lost(Run *run, int g);

/* The pointer-chase chain in every GPU's memory, built once. */
static bool build_chains(Run *run, GError **errp)
{
    gsize bytes = MIN(run->bytes, (gsize)256 << 20);
    gsize entries = bytes / 4, lines = entries / 32, i;
    g_autofree uint32_t *order = g_new(uint32_t, lines);
    uint32_t *chain;
    GRand *rnd = g_rand_new_with_seed(42);
    int g;

    /* A random cycle over whole cache lines of the footprint. */
    for (i = 0; i < lines; i++) {
        order[i] = (uint32_t)(i * 32);
    }
    for (i = lines - 1; i > 0; i--) {
        gsize j = g_rand_int_range(rnd, 0, (gint32)i + 1);
        uint32_t t = order[i];

        order[i] = order[j];
        order[j] = t;
    }
    g_rand_free(rnd);
    CU_TRY(p_cuMemHostAlloc((void **)&chain, bytes, CU_MEMHOSTALLOC_PORTABLE),
           "pinned chain");
    memset(chain, 0, bytes);
    for (i = 0; i < lines; i++) {
        chain[order[i]] = order[(i + 1) % lines];
    }
    for (g = 0; g < run->n; g++) {
        Gpu *gp = &run->gpus[g];
        g_autoptr(GError) err = NULL;
        CUresult res;

        if (run->gone[g]) {
            continue;   /* lost in the data checks: nothing more on it */
        }
        p_cuCtxSetCurrent(gp->ctx);
        /* Stream-ordered from pinned memory: no race with later work. */
        if ((res = p_cuMemAlloc(&gp->chain, bytes)) ||
            (res = p_cuMemcpyHtoDAsync(gp->chain, chain, bytes, gp->gate))) {
            g_set_error(&err, GP_ERROR, GP_ERROR_IO, "GPU %d: latency "
                        "chain: %s", g, cu_err(res));
        } else if (wait_done(run, NULL, gp->gate, "latency chain", &err)) {
            gp->chain_bytes = bytes;
            continue;
        } else {
            res = cu_last;
        }
        if (gpu_probe_lost(run, g) || res == CUDA_ERROR_NOT_READY) {
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

/* ---- one batch of transfers ------------------------------------------- */

/* Where @x lands, and how many bytes it moves. */
static CUdeviceptr slot(Run *run, const Xfer *x)
{
    return run->gpus[x->dst].inbox + x->off;
}

static gsize xfer_len(const Run *run, const Xfer *x)
{
    if (x->kind == XFER_CE_LATENCY) {
        return CE_LATENCY_REPS * 16;    /* each copy 16 bytes of its own */
    }
    return x->len ? x->len : run->bytes;
}

/* Reads are issued by the destination, as nvbandwidth's read tests. */
static bool issued_by_dst(XferKind k)
{
    return k == XFER_SM_READ || k == XFER_CE_READ;
}

/* The GPU whose stream carries @x. */
static int exec_gpu(const Xfer *x)
{
    return issued_by_dst(x->kind) ? x->dst : x->src;
}

static int exec_peer(const Xfer *x)
{
    return issued_by_dst(x->kind) ? x->src : x->dst;
}

/* Leaves bytes at the destination to check (the pointer chase does not). */
static bool moves_data(XferKind k)
{
    return k != XFER_SM_LATENCY;
}

/* Bulk copies, each timed and checked on its own; the rest run once. */
static bool copy_by_copy(XferKind k)
{
    return k != XFER_CE_LATENCY && k != XFER_SM_LATENCY && k != XFER_STAGED;
}

/* Between one GPU and pinned host memory: no peer, no P2P verdict. */
static bool host_path(XferKind k)
{
    return k == XFER_H2D || k == XFER_D2H || k == XFER_STAGED;
}

/*
 * Host-staged a -> b: the source stream moves a chunk to pinned memory,
 * the destination stream moves it on; two chunks in flight. The last
 * chunk takes what is left, so any size moves whole.
 */
static bool enqueue_staged(Run *run, Xfer *x, CUstream s, GError **errp)
{
    Gpu *gs = &run->gpus[x->src], *gd = &run->gpus[x->dst];
    CUstream ds = gd->to[x->src];
    CUdeviceptr dst = slot(run, x);
    gsize bytes = xfer_len(run, x);
    gsize chunk = MIN(bytes, STAGING_CHUNK);
    gsize nchunks = (bytes + chunk - 1) / chunk, c;

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

static bool enqueue(Run *run, Xfer *x, unsigned loops, GError **errp)
{
    Gpu *gs = &run->gpus[x->src], *gd = &run->gpus[x->dst];
    Gpu *ge = &run->gpus[exec_gpu(x)];
    CUstream s = ge->to[exec_peer(x)];
    CUdeviceptr dst = slot(run, x);
    gsize bytes = xfer_len(run, x);
    unsigned i;

    switch (x->kind) {
    case XFER_CE:
    case XFER_CE_READ:
    case XFER_CE_BIDIR:
        for (i = 0; i < loops; i++) {
            CU_TRY(p_cuMemcpyPeerAsync(dst, gd->ctx, gs->src, gs->ctx,
                                       bytes, s),
                   "copy engine %d->%d", x->src, x->dst);
        }
        break;
    case XFER_SM_WRITE:
    case XFER_SM_READ:
        for (i = 0; i < loops; i++) {
            uint64_t n = bytes / 16;
            void *args[] = { &gs->src, &dst, &n };

            CU_TRY(launch(ge->copy, ge->sms * 4, 1024, s, args),
                   "SM copy %d->%d", x->src, x->dst);
        }
        break;
    case XFER_CE_LATENCY:
        /* Each copy to a place of its own, so every one is checked. */
        for (i = 0; i < CE_LATENCY_REPS; i++) {
            CU_TRY(p_cuMemcpyPeerAsync(dst + 16 * i, gd->ctx,
                                       gs->src + 16 * i, gs->ctx, 16, s),
                   "copy engine %d->%d", x->src, x->dst);
        }
        break;
    case XFER_SM_LATENCY: {
        uint32_t hops = CHASE_HOPS;
        CUdeviceptr sink = gs->scratch + 2048 + 16 * x->dst;
        CUdeviceptr ns = sink + 8;
        void *args[] = { &gd->chain, &hops, &sink, &ns };

        CU_TRY(launch(gs->chase, 1, 1, s, args), "pointer chase %d->%d",
               x->src, x->dst);
        break;
    }
    case XFER_STAGED:
        return enqueue_staged(run, x, s, errp);
    case XFER_H2D:
        for (i = 0; i < loops; i++) {
            CU_TRY(p_cuMemcpyHtoDAsync(dst, run->host, bytes, s),
                   "host to device copy into %d", x->dst);
        }
        break;
    case XFER_D2H:
        for (i = 0; i < loops; i++) {
            CU_TRY(p_cuMemcpyDtoHAsync(run->host, gs->src, bytes, s),
                   "device to host copy out of %d", x->src);
        }
        break;
    }
    return true;
}

static void xfer_events_free(Run *run, Xfer *x, int nx)
{
    int i, k;

    for (i = 0; i < nx; i++) {
        p_cuCtxSetCurrent(run->gpus[exec_gpu(&x[i])].ctx);
        if (x[i].start) {
            p_cuEventDestroy(x[i].start);
        }
        if (x[i].stop) {
            p_cuEventDestroy(x[i].stop);
        }
        for (k = 0; k < 2; k++) {
            if (x[i].down[k]) {
                p_cuEventDestroy(x[i].down[k]);
            }
            if (x[i].up[k]) {
                p_cuEventDestroy(x[i].up[k]);
            }
        }
        x[i].start = x[i].stop = NULL;
        memset(x[i].down, 0, sizeof(x[i].down));
        memset(x[i].up, 0, sizeof(x[i].up));
    }
}

static void mark_gone(Run *run, int g, const char *fmt, ...)
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

/* Waits out every stream of GPU @g (watchdog); marks it gone if hung or
 * left with a sticky error. */
static void drain_gpu(Run *run, int g)
{
    Gpu *gp = &run->gpus[g];
    g_autoptr(GError) err = NULL;
    bool ok = true;

    if (run->gone[g] || !gp->ctx) {
        return;
    }
    p_cuCtxSetCurrent(gp->ctx);
    ok = !gp->gate || wait_done(run, NULL, gp->gate, "gate stream", &err);
    for (int k = 0; ok && gp->to && k < run->n; k++) {
        ok = !gp->to[k] || wait_done(run, NULL, gp->to[k], "stream", &err);
    }
    if (!ok && cu_last == CUDA_ERROR_NOT_READY) {
        mark_gone(run, g, "hung: %s", err->message);
    } else if (!ok && cu_sticky(cu_last)) {
        mark_gone(run, g, "sticky CUDA error: %s", err->message);
    }
}

/*
 * The pinned host buffer before a host <-> device copy: the GPU's own
 * pattern for host -> device, poison for device -> host.
 */
static bool prepare_host(Run *run, const Xfer *x, GError **errp)
{
    Gpu *g = &run->gpus[x->src];

    if (x->kind == XFER_D2H) {
        /* Poisoned by the GPU, faster than the CPU: with unified
         * addressing, pinned memory has one address for host and GPU;
         * where the driver refuses, by the CPU. */
        CU_TRY(p_cuCtxSetCurrent(g->ctx), "cuCtxSetCurrent");
        if (p_cuMemsetD32Async((CUdeviceptr)(uintptr_t)run->host,
                               0xdeadbeefu, xfer_len(run, x) / 4,
                               g->gate) != CUDA_SUCCESS) {
            memset(run->host, 0xa5, xfer_len(run, x));
        }
        WAIT(run, NULL, g->gate, "GPU %d: poisoning host memory", x->src);
        run->host_pattern = -1;
    } else if (x->kind == XFER_H2D && run->host_pattern != x->src) {
        /* Filled by the CPU, so that host -> device does not rest on
         * device -> host; host -> device copies leave it as it is. */
        uint32_t *w = run->host, seed = pattern_seed(x->src);

        for (gsize i = 0; i < xfer_len(run, x) / 4; i++) {
            w[i] = host_pattern(i, seed);
        }
        run->host_pattern = x->src;
    }
    return true;
}

/* Events of @x, on the GPUs whose streams record them. */
static bool create_xfer_events(Run *run, Xfer *x, GError **errp)
{
    CU_TRY(p_cuCtxSetCurrent(run->gpus[exec_gpu(x)].ctx), "cuCtxSetCurrent");
    CU_TRY(p_cuEventCreate(&x->start, CU_EVENT_DEFAULT), "event");
    CU_TRY(p_cuEventCreate(&x->stop, CU_EVENT_DEFAULT), "event");
    for (int k = 0; x->kind == XFER_STAGED && k < 2; k++) {
        CU_TRY(p_cuCtxSetCurrent(run->gpus[x->src].ctx), "ctx");
        CU_TRY(p_cuEventCreate(&x->down[k], CU_EVENT_DISABLE_TIMING),
               "event");
        CU_TRY(p_cuCtxSetCurrent(run->gpus[x->dst].ctx), "ctx");
        CU_TRY(p_cuEventCreate(&x->up[k], CU_EVENT_DISABLE_TIMING), "event");
    }
    return true;
}

/*
 * Before the batch: each destination poisoned (so nothing stale passes
 * the check), host memory prepared, events made; used[g]: GPU g carries
 * a transfer.
 */
static bool prepare_xfers(Run *run, Xfer *x, int nx, bool *used,
                          GError **errp)
{
    for (int i = 0; i < nx; i++) {
        Gpu *gd = &run->gpus[x[i].dst];

        x[i].bad = -1;
        used[exec_gpu(&x[i])] = true;
        if (moves_data(x[i].kind)) {
            CU_TRY(p_cuCtxSetCurrent(gd->ctx), "cuCtxSetCurrent");
            CU_TRY(p_cuMemsetD32Async(slot(run, &x[i]), 0xdeadbeefu,
                                      xfer_len(run, &x[i]) / 4, gd->gate),
                   "poisoning GPU %d", x[i].dst);
            WAIT(run, NULL, gd->gate, "poisoning GPU %d", x[i].dst);
        }
        if (!prepare_host(run, &x[i], errp) ||
            !create_xfer_events(run, &x[i], errp)) {
            return false;
        }
    }
    return true;
}

/* GPU @g's gate stream spins until the host sets the flag. */
static bool hold_gpu(Run *run, int g, GError **errp)
{
    Gpu *gp = &run->gpus[g];
    uint64_t max_ns = 5000000000ull;
    CUdeviceptr flag = run->flag_dev;
    void *args[] = { &flag, &max_ns };

    CU_TRY(p_cuCtxSetCurrent(gp->ctx), "cuCtxSetCurrent");
    CU_TRY(launch(gp->spin, 1, 1, gp->gate, args), "GPU %d: spin", g);
    return true;
}

/* Holds every executing GPU; gate_open fires at the release. */
static bool hold_gpus(Run *run, const bool *used, GError **errp)
{
    *run->flag = 0;
    __sync_synchronize();
    for (int g = 0; g < run->n; g++) {
        if (!used[g]) {
            continue;
        }
        if (!hold_gpu(run, g, errp)) {
            return false;
        }
        CU_TRY(p_cuEventRecord(run->gpus[g].gate_open, run->gpus[g].gate),
               "cuEventRecord");
    }
    return true;
}

/* The span's start, on the observer (x[0]'s destination) at release. */
static bool span_begin(Run *run, const Xfer *x, const bool *used,
                       CUevent *span, GError **errp)
{
    Gpu *go = &run->gpus[x[0].dst];

    if (!used[x[0].dst] && !hold_gpu(run, x[0].dst, errp)) {
        return false;   /* the observer holds like the others */
    }
    CU_TRY(p_cuCtxSetCurrent(go->ctx), "cuCtxSetCurrent");
    CU_TRY(p_cuEventCreate(&span[0], CU_EVENT_DEFAULT), "event");
    CU_TRY(p_cuEventCreate(&span[1], CU_EVENT_DEFAULT), "event");
    return true;
}

/* The span's end: after every transfer's stop, on the observer. */
static bool span_end(Run *run, const Xfer *x, int nx, CUevent *span,
                     GError **errp)
{
    Gpu *go = &run->gpus[x[0].dst];

    CU_TRY(p_cuCtxSetCurrent(go->ctx), "cuCtxSetCurrent");
    for (int i = 0; i < nx; i++) {
        CU_TRY(p_cuStreamWaitEvent(go->gate, x[i].stop, 0), "wait");
    }
    CU_TRY(p_cuEventRecord(span[1], go->gate), "cuEventRecord");
    return true;
}

/* Transfer @x behind its GPU's hold, then its warm-up copies, then its
 * start mark. */
static bool queue_warmup(Run *run, Xfer *x, GError **errp)
{
    Gpu *ge = &run->gpus[exec_gpu(x)];
    CUstream s = ge->to[exec_peer(x)];

    CU_TRY(p_cuCtxSetCurrent(ge->ctx), "cuCtxSetCurrent");
    CU_TRY(p_cuStreamWaitEvent(s, ge->gate_open, 0), "cuStreamWaitEvent");
    if (x->kind == XFER_STAGED) {
        CU_TRY(p_cuStreamWaitEvent(run->gpus[x->dst].to[x->src],
                                   ge->gate_open, 0), "wait");
    }
    if (x->warmup && !enqueue(run, x, x->warmup, errp)) {
        return false;
    }
    CU_TRY(p_cuCtxSetCurrent(ge->ctx), "cuCtxSetCurrent");
    CU_TRY(p_cuEventRecord(x->start, s), "cuEventRecord");
    return true;
}

/* @x's timed copies and its stop mark; after @begin where given (a span's
 * start, which the start mark is then moved behind). */
static bool queue_timed(Run *run, Xfer *x, unsigned loops, CUevent begin,
                        GError **errp)
{
    Gpu *ge = &run->gpus[exec_gpu(x)];
    CUstream s = ge->to[exec_peer(x)];

    CU_TRY(p_cuCtxSetCurrent(ge->ctx), "cuCtxSetCurrent");
    if (begin) {
        CU_TRY(p_cuStreamWaitEvent(s, begin, 0), "cuStreamWaitEvent");
        CU_TRY(p_cuEventRecord(x->start, s), "cuEventRecord");
    }
    if (!enqueue(run, x, loops, errp)) {
        return false;
    }
    CU_TRY(p_cuCtxSetCurrent(ge->ctx), "cuCtxSetCurrent");
    CU_TRY(p_cuEventRecord(x->stop, s), "cuEventRecord");
    return true;
}

/*
 * Each transfer: warm-up, start, @loops, stop. With a span (aggregates),
 * the span starts on the observer once every warm-up is done and every
 * timed copy waits for it, so the span holds the timed copies alone,
 * started together (nvbandwidth waits for its first sender's warm-up
 * only); before, it held the warm-up copies too (4 of 20: 0.80 of
 * nvbandwidth's figure).
 */
static bool queue_xfers(Run *run, Xfer *x, int nx, unsigned loops,
                        CUevent *span, GError **errp)
{
    Gpu *go = &run->gpus[x[0].dst];

    for (int i = 0; i < nx; i++) {
        if (!queue_warmup(run, &x[i], errp) ||
            (!span && !queue_timed(run, &x[i], loops, NULL, errp))) {
            return false;
        }
    }
    if (!span) {
        return true;
    }
    CU_TRY(p_cuCtxSetCurrent(go->ctx), "cuCtxSetCurrent");
    for (int i = 0; i < nx; i++) {
        CU_TRY(p_cuStreamWaitEvent(go->gate, x[i].start, 0), "wait");
    }
    CU_TRY(p_cuEventRecord(span[0], go->gate), "cuEventRecord");
    for (int i = 0; i < nx; i++) {
        if (!queue_timed(run, &x[i], loops, span[0], errp)) {
            return false;
        }
    }
    return true;
}

/* After the release: each transfer's time, and the span's. */
static bool read_times(Run *run, Xfer *x, int nx, CUevent *span,
                       double *span_ms, GError **errp)
{
    float ms = 0;

    if (span_ms) {
        WAIT(run, span[1], NULL, "aggregate on GPU %d", x[0].dst);
        CU_TRY(p_cuEventElapsedTime(&ms, span[0], span[1]),
               "cuEventElapsedTime");
        *span_ms = ms;
    }
    for (int i = 0; i < nx; i++) {
        WAIT(run, x[i].stop, NULL, "transfer %d->%d", x[i].src, x[i].dst);
        CU_TRY(p_cuEventElapsedTime(&ms, x[i].start, x[i].stop),
               "cuEventElapsedTime");
        x[i].ms = ms;
    }
    return true;
}

/* The first bad byte of @x, from its first bad word @w: the word is read
 * back and compared byte by byte (the offset of the word where it cannot
 * be read). */
static int64_t first_bad_byte(Run *run, const Xfer *x, uint64_t w)
{
    Gpu *gd = &run->gpus[x->dst];
    uint32_t want = host_pattern(w, pattern_seed(x->src)), got;
    const unsigned char *a = (const unsigned char *)&want;
    const unsigned char *b = (const unsigned char *)&got;

    if (p_cuMemcpyDtoHAsync(&got, slot(run, x) + 4 * w, 4, gd->gate) ||
        !wait_done(run, NULL, gd->gate, "bad word", NULL)) {
        return (int64_t)(w * 4);
    }
    for (int k = 0; k < 4; k++) {
        if (a[k] != b[k]) {
            return (int64_t)(w * 4 + k);
        }
    }
    return (int64_t)(w * 4);
}

/* Where @x's check writes its first bad word, on the host. */
static uint64_t *check_result(Run *run, const Xfer *x)
{
    return &run->results[x->dst * (run->n + 2) + x->src];
}

/* Every byte checked at its destination, by the destination GPU. */
static bool queue_checks(Run *run, Xfer *x, int nx, GError **errp)
{
    for (int i = 0; i < nx; i++) {
        Gpu *gd = &run->gpus[x[i].dst];
        CUdeviceptr word = gd->scratch + 8 * x[i].src;
        CUdeviceptr buf = slot(run, &x[i]);
        uint64_t words = xfer_len(run, &x[i]) / 4;
        uint32_t seed = pattern_seed(x[i].src);
        void *args[] = { &buf, &words, &seed, &word };

        if (!moves_data(x[i].kind)) {
            continue;
        }
        CU_TRY(p_cuCtxSetCurrent(gd->ctx), "cuCtxSetCurrent");
        if (x[i].kind == XFER_D2H) {
            /* What reached host memory, back into the GPU to be checked
             * there (the slot was poisoned, so nothing stale passes). */
            CU_TRY(p_cuMemcpyHtoDAsync(buf, run->host, words * 4, gd->gate),
                   "GPU %d: reading back host memory", x[i].dst);
        }
        CU_TRY(p_cuMemsetD32Async(word, 0xffffffffu, 2, gd->gate), "memset");
        CU_TRY(launch(gd->check, gd->sms * 4, 512, gd->gate, args),
               "GPU %d: check_pattern", x[i].dst);
        CU_TRY(p_cuMemcpyDtoHAsync(check_result(run, &x[i]), word, 8,
                                   gd->gate), "check result");
    }
    return true;
}

/* The checks' verdicts (x[i].bad) and the pointer chase's own time. */
static bool read_checks(Run *run, Xfer *x, int nx, GError **errp)
{
    for (int i = 0; i < nx; i++) {
        Gpu *gs = &run->gpus[x[i].src];
        Gpu *gd = &run->gpus[x[i].dst];
        uint64_t *res = check_result(run, &x[i]);

        if (moves_data(x[i].kind)) {
            CU_TRY(p_cuCtxSetCurrent(gd->ctx), "cuCtxSetCurrent");
            WAIT(run, NULL, gd->gate, "GPU %d: check_pattern", x[i].dst);
            x[i].bad = *res == ~0ull ? -1 : first_bad_byte(run, &x[i], *res);
        } else if (x[i].kind == XFER_SM_LATENCY) {
            uint64_t *ns = &run->results[x[i].src * (run->n + 2) + run->n];

            CU_TRY(p_cuCtxSetCurrent(gs->ctx), "cuCtxSetCurrent");
            CU_TRY(p_cuMemcpyDtoHAsync(ns, gs->scratch + 2048 +
                                       16 * x[i].dst + 8, 8, gs->gate),
                   "chase time");
            WAIT(run, NULL, gs->gate, "GPU %d: chase time", x[i].src);
            x[i].ms = *ns / 1e6;
        }
    }
    return true;
}

/*
 * Run @x together: prepare, hold every executing GPU with a spin kernel,
 * queue all work behind the holds, release, then time and check. With
 * @span_ms, the whole batch is also timed on one GPU (the first
 * transfer's destination): from the start every transfer's timed copies
 * wait for (after all warm-ups) to the last transfer's end, waited for
 * across GPUs. Several streams of one GPU can share its
 * copy engines, so per-stream events alone do not give the span of an
 * aggregate.
 */
static bool run_batch_inner(Run *run, Xfer *x, int nx, unsigned loops,
                            double *span_ms, CUevent *span, GError **errp)
{
    g_autofree bool *used = g_new0(bool, run->n);

    if (!prepare_xfers(run, x, nx, used, errp) ||
        !hold_gpus(run, used, errp) ||
        (span_ms && !span_begin(run, x, used, span, errp)) ||
        !queue_xfers(run, x, nx, loops, span_ms ? span : NULL, errp) ||
        (span_ms && !span_end(run, x, nx, span, errp))) {
        return false;
    }
    __sync_synchronize();
    *run->flag = 1;
    return read_times(run, x, nx, span, span_ms, errp) &&
           queue_checks(run, x, nx, errp) && read_checks(run, x, nx, errp);
}

static bool run_batch_once(Run *run, Xfer *x, int nx, unsigned loops,
                           double *span_ms, GError **errp)
{
    CUevent span[2] = { NULL, NULL };
    bool ok = run_batch_inner(run, x, nx, loops, span_ms, span, errp);

    if (!ok) {
        CUresult why = cu_last;

        /* Let nothing wait on a spin after an error; nothing hangs. */
        *run->flag = 1;
        for (int g = 0; g < run->n; g++) {
            drain_gpu(run, g);
        }
        cu_last = why;
    }
    xfer_events_free(run, x, nx);
    if (span[0] || span[1]) {
        p_cuCtxSetCurrent(run->gpus[x[0].dst].ctx);
        if (span[0]) {
            p_cuEventDestroy(span[0]);
        }
        if (span[1]) {
            p_cuEventDestroy(span[1]);
        }
    }
    return ok;
}

/*
 * @x (one kind) with @loops copies each. Bulk copies run as @loops
 * batches of one copy, each timed on its own and checked at its
 * destination (poisoned before), so a bad copy cannot hide behind a good
 * one that overwrites it; times (and spans) are summed. Their warm-up
 * copies run first the same way, checked but not timed: a bad warm-up
 * copy is as bad as a timed one. x[i].bad is then the first bad copy's
 * first bad byte.
 */
static bool run_batch_span(Run *run, Xfer *x, int nx, unsigned loops,
                           double *span_ms, GError **errp)
{
    bool one_by_one = copy_by_copy(x[0].kind);
    unsigned copies = one_by_one ? loops : 1, warm_rounds = 0;
    g_autofree double *ms = g_new0(double, nx);
    g_autofree int64_t *bad = g_new(int64_t, nx);
    g_autofree unsigned *warm = g_new(unsigned, nx);
    double span = 0;

    for (int i = 0; i < nx; i++) {
        bad[i] = -1;
        warm[i] = x[i].warmup;
        warm_rounds = one_by_one ? MAX(warm_rounds, warm[i]) : 0;
        x[i].copies = copies;
        x[i].bad_copy = 0;
        x[i].bad_in_warmup = false;
    }
    for (unsigned c = 0; c < warm_rounds + copies; c++) {
        bool warming = c < warm_rounds;
        double one = 0;
        bool ok;

        for (int i = 0; i < nx; i++) {
            /* Copy by copy, every warm-up is a checked round of its own;
             * otherwise they go unchecked before the first. */
            x[i].warmup = one_by_one || c ? 0 : warm[i];
        }
        ok = run_batch_once(run, x, nx, one_by_one ? 1 : loops,
                            span_ms ? &one : NULL, errp);
        for (int i = 0; i < nx; i++) {
            x[i].warmup = warm[i];
        }
        if (!ok) {
            return false;
        }
        span += warming ? 0 : one;
        for (int i = 0; i < nx; i++) {
            ms[i] += warming ? 0 : x[i].ms;
            if (bad[i] < 0 && x[i].bad >= 0) {
                bad[i] = x[i].bad;
                x[i].bad_in_warmup = warming;
                x[i].bad_copy = warming ? c : c - warm_rounds;
            }
        }
    }
    for (int i = 0; i < nx; i++) {
        x[i].ms = ms[i];
        x[i].bad = bad[i];
    }
    if (span_ms) {
        *span_ms = span;
    }
    return true;
}

static bool run_batch(Run *run, Xfer *x, int nx, unsigned loops,
                      GError **errp)
{
    return run_batch_span(run, x, nx, loops, NULL, errp);
}

/* ---- pairs and their schedule ----------------------------------------- */

static VerifyPair *pair_of(Run *run, int a, int b)
{
    return verify_pair_find(run->r, run->report_of[a], run->report_of[b]);
}

static void pair_problem(VerifyPair *p, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);

static void pair_problem(VerifyPair *p, const char *fmt, ...)
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

/* Host-staged copies all go through host memory: one pair at a time. */
static bool through_host(int a, int b, int c, int d, gpointer data)
{
    (void)a; (void)b; (void)c; (void)d; (void)data;
    return false;
}

/* Pairs on NVLink, or on PCIe paths that share no link, run together. */
static bool independent(int a, int b, int c, int d, gpointer data)
{
    Run *run = data;
    const VerifyGpu *g[4];
    const int ord[4] = { a, b, c, d };

    if (pair_of(run, a, b)->nvlinks || pair_of(run, c, d)->nvlinks) {
        return true;
    }
    for (int i = 0; i < 4; i++) {
        g[i] = &g_array_index(run->r->gpus, VerifyGpu, run->report_of[ord[i]]);
    }
    return verify_pcie_paths_disjoint(g[0], g[1], g[2], g[3]);
}

/* A read a -> b runs on b's context: it needs b's access to a. */
static bool reader_has_access(Run *run, int a, int b, XferKind k)
{
    return !issued_by_dst(k) || pair_of(run, b, a)->peer_enabled;
}

static bool pair_usable(Run *run, int a, int b, const VerifyFigureInfo *f)
{
    VerifyPair *p = pair_of(run, a, b);

    if (!p->peer_enabled || p->verified_ce != CHECK_OK || run->gone[a] ||
        run->gone[b] || !reader_has_access(run, a, b, f->kind)) {
        return false;
    }
    return !f->needs_sm ||
           (p->verified_sm == CHECK_OK && p->verified_sm_read == CHECK_OK);
}

static void figure_set(Figure *f, double *v, unsigned n)
{
    unsigned i, j;

    for (i = 1; i < n; i++) {
        for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];

            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    }
    f->samples = n;
    f->min = v[0];
    f->max = v[n - 1];
    f->median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A figure's value from one finished transfer. */
static double xfer_value(Run *run, const Xfer *x, unsigned loops)
{
    switch (x->kind) {
    case XFER_CE_LATENCY:
        return x->ms * 1e3 / CE_LATENCY_REPS;
    case XFER_SM_LATENCY:
        return x->ms * 1e3 / CHASE_HOPS;
    case XFER_STAGED:
        return (double)xfer_len(run, x) / (x->ms / 1e3) / 1e9;
    default:
        return (double)xfer_len(run, x) * loops / (x->ms / 1e3) / 1e9;
    }
}

static const char *kind_name(XferKind k);

/* "copy engine 0->1", or "host to device copy, GPU 0", into @buf. */
static const char *xfer_label(Run *run, const Xfer *x, char *buf, gsize n)
{
    unsigned a = run->report_of[x->src], b = run->report_of[x->dst];

    if (x->kind == XFER_H2D || x->kind == XFER_D2H) {
        g_snprintf(buf, n, "%s, GPU %u", kind_name(x->kind), a);
    } else {
        g_snprintf(buf, n, "%s %u->%u", kind_name(x->kind), a, b);
    }
    return buf;
}

/* A destination that came back wrong after a transfer. */
static void judge_bytes(Run *run, const Xfer *x, const char *what)
{
    VerifyPair *p = pair_of(run, x->src, x->dst);
    char label[96];

    if (x->bad < 0) {
        return;
    }
    if (host_path(x->kind)) {
        /* Through host memory, not P2P: no verdict on P2P, but nothing
         * to call good either. */
        verify_record_untested(run->r, "%s: first bad byte at offset %"
                               G_GINT64_FORMAT " (host path, not P2P)",
                               xfer_label(run, x, label, sizeof(label)),
                               x->bad);
        return;
    }
    /* A failed path state is the finding: verify_judge() reads it. */
    if (x->kind == XFER_SM_WRITE) {
        p->verified_sm = CHECK_FAILED;
    } else if (x->kind == XFER_SM_READ) {
        p->verified_sm_read = CHECK_FAILED;
    } else {
        p->verified_ce = CHECK_FAILED;
    }
    if (x->bad_in_warmup) {
        g_snprintf(label, sizeof(label), " (warm-up copy %u of %u)",
                   x->bad_copy + 1, x->warmup);
    } else if (x->copies > 1) {
        g_snprintf(label, sizeof(label), " (copy %u of %u)", x->bad_copy + 1,
                   x->copies);
    } else {
        label[0] = 0;
    }
    pair_problem(p, "%s %u->%u: first bad byte at offset %" G_GINT64_FORMAT
                 "%s", what, run->report_of[x->src], run->report_of[x->dst],
                 x->bad, label);
}

/* The data-check state that a transfer of @k proves or fails. */
static CheckState *path_state(VerifyPair *p, XferKind k)
{
    return k == XFER_SM_WRITE ? &p->verified_sm :
           k == XFER_SM_READ ? &p->verified_sm_read : &p->verified_ce;
}

static const char *kind_name(XferKind k)
{
    static const char *const names[] = {
        [XFER_CE] = "copy engine", [XFER_CE_READ] = "copy engine read",
        [XFER_CE_BIDIR] = "bidirectional copy engine",
        [XFER_SM_WRITE] = "SM write", [XFER_SM_READ] = "SM read",
        [XFER_STAGED] = "host-staged copy", [XFER_CE_LATENCY] = "copy-engine "
        "latency", [XFER_SM_LATENCY] = "SM latency",
        [XFER_H2D] = "host to device copy", [XFER_D2H] = "device to host copy",
    };

    return names[k];
}

/* Does GPU @g answer with a sticky error (its context is gone)? */
static bool gpu_probe_lost(Run *run, int g)
{
    CUresult res;

    if (run->gone[g]) {
        return true;
    }
    p_cuCtxSetCurrent(run->gpus[g].ctx);
    res = p_cuStreamQuery(run->gpus[g].gate);
    /* A stream query fails only for its context's own trouble: any error
     * (220 after the driver took the context down included) is lost. */
    return res != CUDA_SUCCESS && res != CUDA_ERROR_NOT_READY;
}

/*
 * CUDA error 220 (CUDA_ERROR_NVLINK_UNCORRECTABLE) on @x: a fault of the
 * NVLink between its two GPUs, named as such on the pair (both ways: one
 * link), not a bare "P2P broken". A GPU whose context the error took down
 * is lost as well.
 */
static void blame_nvlink(Run *run, const Xfer *x, VerifyPair *p,
                         const char *label, const GError *err)
{
    unsigned a = run->report_of[x->src], b = run->report_of[x->dst];
    VerifyPair *back = pair_of(run, x->dst, x->src);

    /* nvlink_fault is the finding: verify_judge() reads it. */
    p->nvlink_fault = back->nvlink_fault = true;
    if (x->kind != XFER_CE_LATENCY && x->kind != XFER_SM_LATENCY &&
        x->kind != XFER_STAGED) {
        *path_state(p, x->kind) = CHECK_FAILED;
    }
    pair_problem(p, "NVLink fault between GPUs %u and %u: %s: %s", a, b,
                 label, err->message);
    verify_note(run->r, "NVLink fault between GPUs %u and %u (uncorrectable "
                "NVLink error, CUDA error 220, at %s): the link, not P2P "
                "setup; see the GPUs' NVLink error counters (nvidia-smi "
                "nvlink -e)", a, b, label);
    for (int i = 0; i < 2; i++) {
        int g = i ? x->dst : x->src;

        if (gpu_probe_lost(run, g)) {
            mark_gone(run, g, "after an NVLink fault: %s", err->message);
        }
    }
}

/*
 * @x failed on its own with @err (CUDA error @code). A sticky error marks
 * the GPU it left unusable "lost", not P2P; a hung transfer (watchdog)
 * fails its pair and retires its GPU; a host-staged copy never judges P2P;
 * anything else fails the pair's path.
 */
static void blame(Run *run, const Xfer *x, const GError *err, CUresult code)
{
    VerifyPair *p = pair_of(run, x->src, x->dst);     /* NULL: host path */
    char label[96];
    bool data = x->kind == XFER_CE || x->kind == XFER_SM_WRITE ||
                x->kind == XFER_SM_READ;

    xfer_label(run, x, label, sizeof(label));
    if (code == CUDA_ERROR_NVLINK_UNCORRECTABLE && p &&
        !host_path(x->kind) && !run->gone[x->src] && !run->gone[x->dst]) {
        blame_nvlink(run, x, p, label, err);
        return;
    }
    if (code != CUDA_ERROR_NOT_READY &&
        (cu_sticky(code) || run->gone[x->src] || run->gone[x->dst])) {
        bool any = false;

        for (int i = 0; i < 2; i++) {
            int g = i ? x->dst : x->src;

            if (gpu_probe_lost(run, g)) {
                mark_gone(run, g, "%s", err->message);
                any = true;
            }
        }
        if (!any) {
            mark_gone(run, exec_gpu(x), "%s", err->message);
        }
        if (p && data && *path_state(p, x->kind) == CHECK_OK) {
            *path_state(p, x->kind) = CHECK_UNTESTABLE;
        }
        if (p) {
            pair_problem(p, "%s: %s (GPU lost, not a P2P verdict)", label,
                         err->message);
        }
        return;
    }
    if (code == CUDA_ERROR_NOT_READY) {
        mark_gone(run, exec_gpu(x), "hung at %s", label);
    }
    if (host_path(x->kind)) {
        verify_record_untested(run->r, "%s: %s (host path, not P2P)", label,
                               err->message);
        return;
    }
    run->r->p2p_broken = true;
    if (data) {
        *path_state(p, x->kind) = CHECK_FAILED;
    }
    pair_problem(p, "%s: %s", label, err->message);
}

/*
 * The batch @x (@ng pairs, @per transfers each) failed with @err (CUDA
 * error @code), and pair group @gx passed when it ran again alone. The
 * error is not forgotten, as the batch cannot say whose it was: it is
 * recorded on every pair that passed alone (those that failed alone are
 * blamed for their own error). Error 220 is an NVLink fault whatever the
 * retry says (exit 1); any other code leaves the pair "failed under
 * concurrent load", its check not proven (untested at least).
 */
static void blame_batch(Run *run, const Xfer *gx, int ng, const GError *err,
                        CUresult code)
{
    VerifyPair *p = pair_of(run, gx->src, gx->dst);
    char label[96];

    xfer_label(run, gx, label, sizeof(label));
    if (!p) {
        verify_record_untested(run->r, "%s: failed under concurrent load "
                               "(%s), passed alone", label, err->message);
        return;
    }
    if (gx->kind == XFER_CE || gx->kind == XFER_SM_WRITE ||
        gx->kind == XFER_SM_READ) {
        CheckState *st = path_state(p, gx->kind);

        *st = code == CUDA_ERROR_NVLINK_UNCORRECTABLE ? CHECK_FAILED :
              *st == CHECK_OK ? CHECK_UNTESTABLE : *st;
    }
    if (code == CUDA_ERROR_NVLINK_UNCORRECTABLE) {
        p->nvlink_fault = pair_of(run, gx->dst, gx->src)->nvlink_fault = true;
        pair_problem(p, "NVLink fault (CUDA error 220) in a batch of %d "
                     "pairs run together, at %s: %s; not seen again alone, "
                     "so every pair of the batch carries it", ng, label,
                     err->message);
        verify_record_broken(run->r, "NVLink fault (uncorrectable NVLink "
                             "error, CUDA error 220) in a batch with %s; see "
                             "the GPUs' NVLink error counters (nvidia-smi "
                             "nvlink -e)", label);
        return;
    }
    pair_problem(p, "%s: failed under concurrent load (%s) in a batch of %d "
                 "pairs; passed alone", label, err->message, ng);
    verify_record_untested(run->r, "%s: failed under concurrent load (%s); "
                           "it passed alone, which proves nothing under "
                           "load", label, err->message);
}

/*
 * The batch @x (@nx transfers, @per of them for one pair) failed with
 * @err: each pair runs again alone, and a pair that fails alone is blamed
 * for that. Where none fails alone with the batch's error code, the error
 * did not reproduce and every pair that passed alone still carries it
 * (blame_batch). ok[i]: pair i came through, alone.
 */
static void retry_each(Run *run, Xfer *x, int nx, int per, unsigned loops,
                       const GError *err, CUresult code, bool *ok)
{
    int ng = nx / per;
    bool reproduced = false;

    for (int g = 0; g < ng; g++) {
        g_autoptr(GError) one = NULL;
        Xfer *gx = &x[g * per];

        ok[g] = false;
        if (ng == 1 || run->gone[gx->src] || run->gone[gx->dst]) {
            blame(run, gx, err, code);
            reproduced = true;
        } else if (run_batch(run, gx, per, loops, &one)) {
            ok[g] = true;
        } else {
            reproduced |= cu_last == code;
            blame(run, gx, one, cu_last);
        }
    }
    for (int g = 0; g < ng && !reproduced; g++) {
        if (ok[g]) {
            blame_batch(run, &x[g * per], ng, err, code);
        }
    }
}

/* Runs @x as one batch; retried pair by pair when it fails. */
static void run_blamed(Run *run, Xfer *x, int nx, int per, unsigned loops,
                       bool *ok)
{
    g_autoptr(GError) err = NULL;

    if (run_batch(run, x, nx, loops, &err)) {
        for (int g = 0; g < nx / per; g++) {
            ok[g] = true;
        }
        return;
    }
    retry_each(run, x, nx, per, loops, err, cu_last, ok);
}

/* A bandwidth or latency value of pair group @gx (@per transfers). */
static double group_value(Run *run, const Xfer *gx, int per,
                          unsigned loops)
{
    if (per == 2) {
        /* As nvbandwidth's bidirectional _total: the sum of the two
         * directions' bandwidths, each over its own time. */
        return xfer_value(run, &gx[0], loops) + xfer_value(run, &gx[1], loops);
    }
    return xfer_value(run, gx, loops);
}

/*
 * Samples of figure @fig for the pairs of one batch (@per transfers a
 * pair). A pair that fails, or whose bytes come back wrong, gets no
 * figure; the others keep theirs.
 */
static void measure_batch(Run *run, int fig, Xfer *x, int nx, int per)
{
    const VerifyFigureInfo *f = &verify_pair_figures[fig];
    unsigned samples = run->o->samples, s;
    unsigned loops = f->kind == XFER_STAGED ? 1 : run->loops;
    int ng = nx / per;
    g_autofree double *v = g_new0(double, ng * samples);
    g_autofree bool *alive = g_new0(bool, ng);
    g_autofree bool *ok = g_new0(bool, ng);
    g_autofree int *map = g_new0(int, ng);
    g_autofree Xfer *y = g_new0(Xfer, nx);

    memset(alive, 1, ng * sizeof(bool));
    for (s = 0; s < samples; s++) {
        int ny = 0;

        for (int g = 0; g < ng; g++) {
            if (alive[g]) {
                map[ny / per] = g;
                memcpy(&y[ny], &x[g * per], per * sizeof(Xfer));
                ny += per;
            }
        }
        if (!ny) {
            return;
        }
        run_blamed(run, y, ny, per, loops, ok);
        for (int j = 0; j < ny / per; j++) {
            Xfer *gx = &y[j * per];
            bool bad = false;

            for (int k = 0; k < per && ok[j]; k++) {
                judge_bytes(run, &gx[k], f->key);
                bad |= gx[k].bad >= 0;
            }
            alive[map[j]] = ok[j] && !bad;
            v[map[j] * samples + s] = group_value(run, gx, per, loops);
        }
    }
    for (int g = 0; g < ng; g++) {
        VerifyPair *p = pair_of(run, x[g * per].src, x[g * per].dst);

        if (!alive[g]) {
            continue;
        }
        figure_set(&p->fig[fig], &v[g * samples], samples);
        if (per == 2) {
            pair_of(run, x[g * per].dst, x[g * per].src)->fig[fig] =
                p->fig[fig];
        }
    }
}

/* One figure for every usable ordered pair, batch by batch. */
static void measure_pairs(Run *run, GPtrArray *rounds, int fig)
{
    const VerifyFigureInfo *f = &verify_pair_figures[fig];
    bool bidir = f->kind == XFER_CE_BIDIR;
    bool warm = f->kind == XFER_CE || f->kind == XFER_CE_READ || bidir ||
                f->kind == XFER_SM_WRITE || f->kind == XFER_SM_READ;

    for (guint ri = 0; ri < rounds->len; ri++) {
        GArray *round = g_ptr_array_index(rounds, ri);

        for (int dir = 0; dir < (bidir ? 1 : 2); dir++) {
            g_autofree Xfer *x = g_new0(Xfer, round->len);
            int nx = 0;

            for (guint k = 0; k + 1 < round->len; k += 2) {
                int a = g_array_index(round, int, k + dir);
                int b = g_array_index(round, int, k + 1 - dir);

                if (!pair_usable(run, a, b, f) ||
                    (bidir && !pair_usable(run, b, a, f))) {
                    continue;
                }
                x[nx++] = (Xfer){ .kind = f->kind, .src = a, .dst = b,
                                  .warmup = warm ? run->warmup : 0 };
                if (bidir) {
                    x[nx] = x[nx - 1];
                    x[nx].src = b;
                    x[nx++].dst = a;
                }
            }
            if (nx) {
                measure_batch(run, fig, x, nx, bidir ? 2 : 1);
            }
        }
    }
}

/* All-to-one and one-to-all copy-engine figures for GPU @k. */
/*
 * The samples of aggregate @which at GPU @k into @v; false (no figure)
 * where a batch failed or a byte came back bad. A failed batch is retried
 * transfer by transfer, blaming only those failing alone; where all pass
 * alone, the note says the aggregate alone failed.
 */
static bool aggregate_samples(Run *run, int which, int k, Xfer *x, int nx,
                              double *v)
{
    unsigned loops = run->loops;

    for (unsigned s = 0; s < run->o->samples; s++) {
        g_autoptr(GError) err = NULL;
        g_autofree bool *ok = g_new0(bool, nx);
        double span = 0;
        bool bad = false, all_ok = true;

        if (!run_batch_span(run, x, nx, loops, &span, &err)) {
            retry_each(run, x, nx, 1, loops, err, cu_last, ok);
            for (int i = 0; i < nx; i++) {
                all_ok &= ok[i];
            }
            if (all_ok) {
                verify_note(run->r, "GPU %d: %s not measured: its transfers "
                            "failed together (%s) and passed one by one",
                            run->report_of[k], verify_gpu_figures[which].key,
                            err->message);
            }
            return false;
        }
        for (int i = 0; i < nx; i++) {
            judge_bytes(run, &x[i], verify_gpu_figures[which].key);
            bad |= x[i].bad >= 0;
        }
        if (bad) {
            return false;   /* the pair is failed; no figure of bad bytes */
        }
        /* All bytes over the span on one GPU's clock. */
        v[s] = (double)xfer_len(run, &x[0]) * loops * nx / (span / 1e3) / 1e9;
    }
    return true;
}

static void measure_aggregates(Run *run, int k)
{
    VerifyGpu *vg = &g_array_index(run->r->gpus, VerifyGpu,
                                   run->report_of[k]);
    const VerifyFigureInfo *ce = &verify_pair_figures[FIG_UNI_CE];

    for (int which = 0; which <= AGG_ONE_TO_ALL; which++) {
        g_autofree Xfer *x = NULL;
        double v[16];
        int nx = 0;

        if (!verify_figure_wanted(run->o, FIG_PAIR_COUNT + which)) {
            continue;
        }
        x = g_new0(Xfer, run->n);
        for (int j = 0; j < run->n; j++) {
            int a = which == AGG_ALL_TO_ONE ? j : k;
            int b = which == AGG_ALL_TO_ONE ? k : j;

            if (j == k) {
                continue;
            }
            if (!pair_usable(run, a, b, ce)) {
                nx = 0;
                break;
            }
            x[nx++] = (Xfer){ .kind = XFER_CE, .src = a, .dst = b,
                              .warmup = run->warmup };
        }
        if (nx < 1) {
            continue;
        }
        for (int i = 0; which == AGG_ALL_TO_ONE && i < nx; i++) {
            /* n-1 senders share the one inbox slot: a share each. */
            x[i].len = MAX((run->bytes / nx) & ~(gsize)255, (gsize)256);
            x[i].off = i * x[i].len;
        }
        if (aggregate_samples(run, which, k, x, nx, v)) {
            figure_set(&vg->agg[which], v, run->o->samples);
        }
    }
}

/*
 * Host -> device and device -> host for GPU @k, one GPU at a time as
 * nvbandwidth measures them: pinned host memory, the GPU's own stream.
 * A failure or a bad byte is no P2P verdict (the run is then untested).
 */
static void measure_host(Run *run, int k)
{
    VerifyGpu *vg = &g_array_index(run->r->gpus, VerifyGpu,
                                   run->report_of[k]);

    for (int which = AGG_H2D; which <= AGG_D2H; which++) {
        const VerifyFigureInfo *f = &verify_gpu_figures[which];
        Xfer x = { .kind = f->kind, .src = k, .dst = k,
                   .warmup = run->warmup };
        double v[16];
        unsigned s;

        if (!verify_figure_wanted(run->o, FIG_PAIR_COUNT + which) ||
            !run->host) {
            continue;
        }
        for (s = 0; s < run->o->samples && !run->gone[k]; s++) {
            g_autoptr(GError) err = NULL;

            if (!run_batch(run, &x, 1, run->loops, &err)) {
                blame(run, &x, err, cu_last);
                break;
            }
            judge_bytes(run, &x, f->key);
            if (x.bad >= 0) {
                break;
            }
            v[s] = xfer_value(run, &x, run->loops);
        }
        if (s == run->o->samples) {
            figure_set(&vg->agg[which], v, s);
        }
    }
}

/* Peer access for every ordered pair: enabled where CUDA offers it. */
static void pair_access(Run *run)
{
    VerifyReport *r = run->r;
    int a, b;

    for (a = 0; a < run->n; a++) {
        for (b = 0; b < run->n; b++) {
            VerifyPair p = { .peer_access = -1, .perf_rank = -1,
                             .native_atomics = -1 };
            Gpu *ga = &run->gpus[a], *gb = &run->gpus[b];
            int can = 0;
            CUresult res;

            if (a == b) {
                continue;
            }
            p.a = run->report_of[a];
            p.b = run->report_of[b];
            g_strlcpy(p.link, "unknown", sizeof(p.link));
            res = p_cuDeviceCanAccessPeer(&can, ga->dev, gb->dev);
            if (res == CUDA_SUCCESS) {
                p.peer_access = can;
            } else {
                /* Not "no peer access": unknown, so untested, named. */
                pair_problem(&p, "cuDeviceCanAccessPeer %u->%u: %s (%d)",
                             p.a, p.b, cu_err(res), (int)res);
                verify_record_untested(r, "GPUs %u -> %u: "
                                       "cuDeviceCanAccessPeer failed: %s "
                                       "(%d)", p.a, p.b, cu_err(res),
                                       (int)res);
            }
            if (p_cuDeviceGetP2PAttribute(&p.perf_rank,
                    CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, ga->dev,
                    gb->dev) != CUDA_SUCCESS) {
                p.perf_rank = -1;
            }
            if (p_cuDeviceGetP2PAttribute(&p.native_atomics,
                    CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, ga->dev,
                    gb->dev) != CUDA_SUCCESS) {
                p.native_atomics = -1;
            }
            if (p.peer_access == 1) {
                /* Offered peer access that cannot be enabled is broken. */
                p_cuCtxSetCurrent(ga->ctx);
                res = p_cuCtxEnablePeerAccess(gb->ctx, 0);
                if (res != CUDA_SUCCESS &&
                    res != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
                    /* Its paths are failed below: verify_judge() reads
                     * them. */
                    pair_problem(&p, "cuCtxEnablePeerAccess %u->%u: %s",
                                 p.a, p.b, cu_err(res));
                } else {
                    p.peer_enabled = true;
                }
            }
            if (!p.peer_enabled) {
                p.verified_ce = p.verified_sm = p.verified_sm_read =
                    p.peer_access == 1 ? CHECK_FAILED : CHECK_UNTESTABLE;
                pair_problem(&p, "no peer access");
            } else if (!run->r->kernels) {
                p.verified_ce = p.verified_sm = p.verified_sm_read =
                    CHECK_UNTESTABLE;
                pair_problem(&p, "not testable: built without CUDA kernels");
            } else {
                p.verified_ce = p.verified_sm = p.verified_sm_read =
                    CHECK_OK;
            }
            g_array_append_val(r->pairs, p);
        }
    }
}

/* Pairs of a round whose @path may still be checked, into @x. */
static int check_xfers(Run *run, GArray *round, int dir, XferKind path,
                       Xfer *x)
{
    int nx = 0;

    for (guint k = 0; k + 1 < round->len; k += 2) {
        int sa = g_array_index(round, int, k + dir);
        int sb = g_array_index(round, int, k + 1 - dir);
        VerifyPair *p = pair_of(run, sa, sb);

        if (!p->peer_enabled || *path_state(p, path) != CHECK_OK) {
            continue;
        }
        if (run->gone[sa] || run->gone[sb]) {
            *path_state(p, path) = CHECK_UNTESTABLE;
            pair_problem(p, "not tested: GPU %d lost", run->report_of[
                         run->gone[sa] ? sa : sb]);
            continue;
        }
        if (!reader_has_access(run, sa, sb, path)) {
            *path_state(p, path) = CHECK_UNTESTABLE;
            pair_problem(p, "%s not tested: GPU %d has no peer access to "
                         "GPU %d to read from it", kind_name(path),
                         run->report_of[sb], run->report_of[sa]);
            continue;
        }
        x[nx++] = (Xfer){ .kind = path, .src = sa, .dst = sb };
    }
    return nx;
}

/* One verified copy per path and direction; pairs of a round at once. */
static void data_checks(Run *run, GPtrArray *rounds)
{
    VerifyReport *r = run->r;
    static const XferKind paths[] = { XFER_CE, XFER_SM_WRITE, XFER_SM_READ };

    if (!run->r->kernels) {
        verify_record_untested(r, "data checks and figures not testable: "
                               "built without CUDA kernels (no nvcc at build "
                               "time)");
        return;
    }
    for (guint pi = 0; pi < r->pairs->len; pi++) {
        VerifyPair *p = &g_array_index(r->pairs, VerifyPair, pi);

        if (p->peer_access == 0) {
            /* A copy would be staged through the host: nothing proven. */
            verify_record_untested(r, "GPUs %u and %u: CUDA grants no peer "
                                   "access; P2P not available between them",
                                   p->a, p->b);
        }
    }
    for (guint pi = 0; pi < G_N_ELEMENTS(paths); pi++) {
        for (guint ri = 0; ri < rounds->len; ri++) {
            GArray *round = g_ptr_array_index(rounds, ri);

            for (int dir = 0; dir < 2; dir++) {
                g_autofree Xfer *x = g_new0(Xfer, round->len);
                g_autofree bool *ok = g_new0(bool, round->len);
                int nx = check_xfers(run, round, dir, paths[pi], x);

                if (!nx) {
                    continue;
                }
                run_blamed(run, x, nx, 1, 1, ok);
                for (int i = 0; i < nx; i++) {
                    if (ok[i]) {
                        judge_bytes(run, &x[i], kind_name(paths[pi]));
                    }
                }
            }
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
    if (g->gate_open) {
        p_cuEventDestroy(g->gate_open);
    }
}

static void teardown(Run *run)
{
    for (int i = 0; i < run->n; i++) {
        Gpu *g = &run->gpus[i];

        if (!g->ctx) {
            continue;
        }
        p_cuCtxSetCurrent(g->ctx);
        drain_gpu(run, i);
        if (run->gone[i]) {
            /* Lost or hung: what could block (frees, the context) is left
             * to the driver at exit; streams go without waiting. */
            teardown_streams(run, g);
            continue;
        }
        if (g->src) {
            p_cuMemFree(g->src);
        }
        if (g->inbox) {
            p_cuMemFree(g->inbox);
        }
        if (g->chain) {
            p_cuMemFree(g->chain);
        }
        if (g->scratch) {
            p_cuMemFree(g->scratch);
        }
        if (g->staging) {
            p_cuMemFreeHost(g->staging);
        }
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
    if (run->host && !run->r->gpu_lost) {
        /* A hung GPU may still be copying into it: left to exit. */
        p_cuMemFreeHost(run->host);
    }
    g_free(run->gpus);
    g_free(run->report_of);
    g_free(run->gone);
}

void verify_cuda(const VerifyOptions *o, VerifyReport *r)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GPtrArray) rounds = NULL;
    g_autoptr(GPtrArray) one_by_one = NULL;
    Run run = { .o = o, .r = r, .bytes = o->bytes,
                .loops = o->quick ? VERIFY_QUICK_LOOPS : VERIFY_LOOPS,
                .warmup = o->quick ? VERIFY_QUICK_WARMUP : VERIFY_WARMUP,
                .watchdog_s = o->watchdog_s, .host_pattern = -1 };
    gint64 t = g_get_monotonic_time();
#define PHASE(i) do { gint64 now_ = g_get_monotonic_time();               \
                      r->phase_s[i] = (now_ - t) / 1e6; t = now_; } while (0)

    run.t0 = t;

#ifdef VERIFY_HAVE_KERNELS
    r->kernels = true;
#endif
    r->loops = run.loops;
    if (!discover(&run, &err)) {
        r->cuda_status = g_strdup(err->message);
        r->untested = true;
        goto out;
    }
    if (run.n == 0) {
        r->cuda_status = g_strdup("CUDA sees no GPU");
        r->untested = true;
        goto out;
    }
    verify_nvml(r);
    judge_unseen_gpus(r);
    PHASE(1);
    r->phase_s[1] -= r->phase_s[0];
    if (!allocate(&run, &err)) {
        r->cuda_status = g_strdup(err->message);
        r->untested = true;
        goto out;
    }
    PHASE(2);
    pair_access(&run);
    PHASE(3);
    verify_nvml_pairs(r);
    /* Checks run pairs on independent links together; figures are
     * timed one pair at a time unless --concurrent (host-staged always). */
    rounds = verify_schedule(run.n, independent, &run);
    one_by_one = verify_schedule(run.n, through_host, NULL);
    for (guint i = 0; i < rounds->len && o->concurrent; i++) {
        r->concurrent |= ((GArray *)g_ptr_array_index(rounds, i))->len > 2;
    }
    data_checks(&run, rounds);
    PHASE(4);
    if (!r->kernels) {
        goto out;
    }
    if (verify_figure_wanted(o, FIG_LAT_SM) && !build_chains(&run, &err)) {
        r->p2p_broken = true;
        verify_note(r, "%s", err->message);
        goto out;
    }
    for (int fig = 0; fig < FIG_PAIR_COUNT; fig++) {
        if (!verify_figure_wanted(o, fig)) {
            continue;
        }
        measure_pairs(&run, verify_pair_figures[fig].kind == XFER_STAGED ||
                      !o->concurrent ? one_by_one : rounds, fig);
    }
    for (int k = 0; k < run.n; k++) {
        measure_aggregates(&run, k);
        measure_host(&run, k);
    }
    PHASE(5);
out:
    teardown(&run);
    PHASE(6);
}

/* ---- GPU memory for the RDMA checks ------------------------------------ */

struct VerifyGpuMem {
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr ptr;
    gsize bytes;
};

VerifyGpuMem *verify_gpu_mem_new(int ordinal, gsize bytes, GError **errp)
{
    g_autofree VerifyGpuMem *m = g_new0(VerifyGpuMem, 1);
    CUresult res;

    if (!cuda_load(errp)) {
        return NULL;
    }
    m->bytes = bytes;
    if ((res = p_cuInit(0)) || (res = p_cuDeviceGet(&m->dev, ordinal)) ||
        (res = p_cuDevicePrimaryCtxRetain(&m->ctx, m->dev))) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "CUDA GPU %d: %s", ordinal,
                    cu_err(res));
        return NULL;
    }
    if ((res = p_cuCtxSetCurrent(m->ctx)) ||
        (res = p_cuMemAlloc(&m->ptr, bytes))) {
        p_cuDevicePrimaryCtxRelease(m->dev);
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "allocating GPU memory: %s",
                    cu_err(res));
        return NULL;
    }
    return g_steal_pointer(&m);
}

unsigned long long verify_gpu_mem_ptr(const VerifyGpuMem *m)
{
    return m->ptr;
}

int verify_gpu_mem_dmabuf(VerifyGpuMem *m, guint64 page, guint64 *offset,
                          GError **errp)
{
    guint64 start, size;
    int supported = 0, fd = -1;
    CUresult res;

    p_cuCtxSetCurrent(m->ctx);
    if (p_cuDeviceGetAttribute(&supported,
                               CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
                               m->dev) != CUDA_SUCCESS || !supported) {
        g_set_error(errp, GP_ERROR, GP_ERROR_UNSUPPORTED,
                    "the GPU or driver does not export dma-buf "
                    "(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0)");
        return -1;
    }
    /* The export covers whole pages; the MR starts at the offset. */
    verify_page_range(m->ptr, m->bytes, page, &start, &size, offset);
    res = p_cuMemGetHandleForAddressRange(&fd, start, size,
                                          CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                                          0);
    if (res != CUDA_SUCCESS) {
        g_set_error(errp, GP_ERROR, res == CUDA_ERROR_NOT_SUPPORTED ?
                    GP_ERROR_UNSUPPORTED : GP_ERROR_IO,
                    "exporting GPU memory as dma-buf: %s", cu_err(res));
        return -1;
    }
    return fd;
}

bool verify_gpu_mem_read(VerifyGpuMem *m, void *out, GError **errp)
{
    CU_TRY(p_cuCtxSetCurrent(m->ctx), "cuCtxSetCurrent");
    CU_TRY(p_cuMemcpyDtoHAsync(out, m->ptr, m->bytes, NULL),
           "reading GPU memory");
    CU_TRY(p_cuCtxSynchronize(), "reading GPU memory");
    return true;
}

bool verify_gpu_mem_write(VerifyGpuMem *m, const void *in, GError **errp)
{
    CU_TRY(p_cuCtxSetCurrent(m->ctx), "cuCtxSetCurrent");
    CU_TRY(p_cuMemcpyHtoDAsync(m->ptr, in, m->bytes, NULL),
           "writing GPU memory");
    CU_TRY(p_cuCtxSynchronize(), "writing GPU memory");
    return true;
}

void verify_gpu_mem_free(VerifyGpuMem *m)
{
    if (!m) {
        return;
    }
    p_cuCtxSetCurrent(m->ctx);
    p_cuMemFree(m->ptr);
    p_cuDevicePrimaryCtxRelease(m->dev);
    g_free(m);
}
