/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The driver view and the data checks, through the CUDA driver API loaded
 * at run time (libcuda.so.1) so the tool runs, and says so, without it.
 *
 * Timing follows one harness for every test: a spin kernel holds the
 * stream while the copies queue, events bracket the loop, and the median
 * of the samples is kept with the spread.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "gpup2p/topo.h"
#include "verify.h"

extern const unsigned char verify_kernels_fatbin[];

#define CU_APIS(X)                                                        \
    X(cuInit) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)       \
    X(cuDeviceGetPCIBusId) X(cuDeviceGetAttribute) X(cuDeviceCanAccessPeer) \
    X(cuDeviceGetP2PAttribute) X(cuDevicePrimaryCtxRetain)                \
    X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxEnablePeerAccess) \
    X(cuCtxSynchronize) X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc)      \
    X(cuMemFreeHost) X(cuMemHostGetDevicePointer) X(cuMemcpyPeerAsync)    \
    X(cuMemcpyDtoHAsync) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoH)             \
    X(cuMemcpyHtoD) X(cuMemsetD32Async) X(cuStreamCreate) X(cuStreamDestroy) \
    X(cuStreamSynchronize) X(cuStreamWaitEvent) X(cuEventCreate)          \
    X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize)              \
    X(cuEventElapsedTime) X(cuModuleLoadData) X(cuModuleUnload)           \
    X(cuModuleGetFunction) X(cuLaunchKernel) X(cuGetErrorString)          \
    X(cuMemGetHandleForAddressRange)

#define CU_DECLARE(name) static __typeof__(&name) p_##name;
CU_APIS(CU_DECLARE)

typedef struct {
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fill, check, copy, spin, chase;
    CUstream stream, stream2;
    int sms;
} Gpu;

static const char *cu_err(CUresult r)
{
    const char *s = NULL;

    if (p_cuGetErrorString) {
        p_cuGetErrorString(r, &s);
    }
    return s ? s : "unknown CUDA error";
}

#define CU_TRY(call, what)                                                 \
    do {                                                                   \
        CUresult r_ = (call);                                              \
        if (r_ != CUDA_SUCCESS) {                                          \
            g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: %s (%d)", \
                        (what), cu_err(r_), (int)r_);                      \
            return false;                                                  \
        }                                                                  \
    } while (0)

static bool cuda_load(char **why)
{
    typedef CUresult (*GetProc)(const char *, void **, int, cuuint64_t,
                                CUdriverProcAddressQueryResult *);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    GetProc get;

    if (!h) {
        *why = g_strdup_printf("CUDA driver not loaded: %s", dlerror());
        return false;
    }
    get = (GetProc)dlsym(h, "cuGetProcAddress_v2");
    if (!get) {
        *why = g_strdup("CUDA driver too old: no cuGetProcAddress_v2 "
                        "(needs a CUDA 12 driver or later)");
        return false;
    }
#define CU_RESOLVE(name)                                                   \
    {                                                                      \
        CUdriverProcAddressQueryResult st;                                 \
        if (get(#name, (void **)&p_##name, 12000, CU_GET_PROC_ADDRESS_DEFAULT, \
                &st) != CUDA_SUCCESS || !p_##name) {                       \
            *why = g_strdup("CUDA driver lacks " #name);                   \
            return false;                                                  \
        }                                                                  \
    }
    CU_APIS(CU_RESOLVE)
    return true;
}

static bool gpu_open(Gpu *g, int ordinal, GError **errp)
{
    CU_TRY(p_cuDeviceGet(&g->dev, ordinal), "cuDeviceGet");
    CU_TRY(p_cuDevicePrimaryCtxRetain(&g->ctx, g->dev),
           "cuDevicePrimaryCtxRetain");
    CU_TRY(p_cuCtxSetCurrent(g->ctx), "cuCtxSetCurrent");
    CU_TRY(p_cuModuleLoadData(&g->mod, verify_kernels_fatbin),
           "cuModuleLoadData (the tool's kernels)");
    CU_TRY(p_cuModuleGetFunction(&g->fill, g->mod, "fill_pattern"), "fill");
    CU_TRY(p_cuModuleGetFunction(&g->check, g->mod, "check_pattern"),
           "check");
    CU_TRY(p_cuModuleGetFunction(&g->copy, g->mod, "copy_int4"), "copy");
    CU_TRY(p_cuModuleGetFunction(&g->spin, g->mod, "spin"), "spin");
    CU_TRY(p_cuModuleGetFunction(&g->chase, g->mod, "pointer_chase"),
           "chase");
    CU_TRY(p_cuStreamCreate(&g->stream, CU_STREAM_NON_BLOCKING),
           "cuStreamCreate");
    CU_TRY(p_cuStreamCreate(&g->stream2, CU_STREAM_NON_BLOCKING),
           "cuStreamCreate");
    CU_TRY(p_cuDeviceGetAttribute(&g->sms,
                                  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                  g->dev), "multiprocessor count");
    return true;
}

static void gpu_close(Gpu *g)
{
    if (g->ctx) {
        p_cuCtxSetCurrent(g->ctx);
        p_cuCtxSynchronize();
        if (g->stream) {
            p_cuStreamDestroy(g->stream);
        }
        if (g->stream2) {
            p_cuStreamDestroy(g->stream2);
        }
        if (g->mod) {
            p_cuModuleUnload(g->mod);
        }
        p_cuDevicePrimaryCtxRelease(g->dev);
    }
}

static CUresult launch(CUfunction f, unsigned grid, unsigned block,
                       CUstream s, void **args)
{
    return p_cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, args, NULL);
}

/* Fill @buf (on @g) with the pattern of @seed. */
static bool fill(Gpu *g, CUdeviceptr buf, gsize bytes, uint32_t seed,
                 GError **errp)
{
    uint64_t words = bytes / 4;
    void *args[] = { &buf, &words, &seed };

    CU_TRY(p_cuCtxSetCurrent(g->ctx), "cuCtxSetCurrent");
    CU_TRY(launch(g->fill, g->sms * 4, 512, g->stream, args), "fill_pattern");
    CU_TRY(p_cuStreamSynchronize(g->stream), "fill_pattern");
    return true;
}

/* The first bad word offset in bytes, or -1 when all match. */
static bool check(Gpu *g, CUdeviceptr buf, gsize bytes, uint32_t seed,
                  CUdeviceptr scratch, int64_t *bad, GError **errp)
{
    uint64_t words = bytes / 4;
    unsigned long long first = ~0ull;
    void *args[] = { &buf, &words, &seed, &scratch };

    CU_TRY(p_cuCtxSetCurrent(g->ctx), "cuCtxSetCurrent");
    CU_TRY(p_cuMemcpyHtoD(scratch, &first, sizeof(first)), "cuMemcpyHtoD");
    CU_TRY(launch(g->check, g->sms * 4, 512, g->stream, args),
           "check_pattern");
    CU_TRY(p_cuStreamSynchronize(g->stream), "check_pattern");
    CU_TRY(p_cuMemcpyDtoH(&first, scratch, sizeof(first)), "cuMemcpyDtoH");
    *bad = first == ~0ull ? -1 : (int64_t)(first * 4);
    return true;
}

typedef struct {
    Gpu *gpus;
    CUdeviceptr *src, *dst, *scratch;   /* per GPU */
    int *host_flag;                     /* pinned, mapped */
    CUdeviceptr flag_dev;
    void *staging;                      /* pinned, for host-staged copies */
    gsize bytes;
    unsigned samples, loops;
} Bench;

static double median_of(double *v, unsigned n, double *min, double *max)
{
    unsigned i, j;

    for (i = 1; i < n; i++) {
        for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];

            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    }
    *min = v[0];
    *max = v[n - 1];
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void figure_set(Figure *f, double *v, unsigned n)
{
    f->samples = n;
    f->median = median_of(v, n, &f->min, &f->max);
}

typedef enum { COPY_CE, COPY_SM, COPY_SM_READ, COPY_CE_BIDIR } CopyKind;

/* Queue one unit of work of @kind for a -> b on @s. */
static CUresult enqueue(Bench *bn, CopyKind kind, int a, int b, CUstream s,
                        bool reverse)
{
    Gpu *ga = &bn->gpus[a], *gb = &bn->gpus[b];
    CUdeviceptr src = reverse ? bn->src[b] : bn->src[a];
    CUdeviceptr dst = reverse ? bn->dst[a] : bn->dst[b];
    CUcontext sctx = reverse ? gb->ctx : ga->ctx;
    CUcontext dctx = reverse ? ga->ctx : gb->ctx;

    if (kind == COPY_SM || kind == COPY_SM_READ) {
        uint64_t n = bn->bytes / 16;
        void *args[] = { &src, &dst, &n };
        Gpu *on = kind == COPY_SM ? ga : gb;

        /* Write: a's SMs push into b. Read: b's SMs pull from a. */
        return launch(on->copy, on->sms * 4, 1024, s, args);
    }
    return p_cuMemcpyPeerAsync(dst, dctx, src, sctx, bn->bytes, s);
}

/* GB/s of @loops copies a -> b (and b -> a for the bidirectional kind). */
static bool time_copies(Bench *bn, CopyKind kind, int a, int b, double *gbps,
                        GError **errp)
{
    Gpu *ga = &bn->gpus[kind == COPY_SM_READ ? b : a];
    CUevent start, stop, stop2;
    uint64_t max_ns = 5000000000ull;
    CUdeviceptr flag = bn->flag_dev;
    void *spin_args[] = { &flag, &max_ns };
    float ms = 0, ms2 = 0;
    unsigned i;

    CU_TRY(p_cuCtxSetCurrent(ga->ctx), "cuCtxSetCurrent");
    CU_TRY(p_cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
    CU_TRY(p_cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
    CU_TRY(p_cuEventCreate(&stop2, CU_EVENT_DEFAULT), "cuEventCreate");
    *(volatile int *)bn->host_flag = 0;
    CU_TRY(launch(ga->spin, 1, 1, ga->stream, spin_args), "spin");
    CU_TRY(p_cuEventRecord(start, ga->stream), "cuEventRecord");
    if (kind == COPY_CE_BIDIR) {
        CU_TRY(p_cuStreamWaitEvent(ga->stream2, start, 0),
               "cuStreamWaitEvent");
    }
    for (i = 0; i < bn->loops; i++) {
        CU_TRY(enqueue(bn, kind == COPY_CE_BIDIR ? COPY_CE : kind, a, b,
                       ga->stream, false), "copy");
        if (kind == COPY_CE_BIDIR) {
            CU_TRY(enqueue(bn, COPY_CE, a, b, ga->stream2, true), "copy");
        }
    }
    CU_TRY(p_cuEventRecord(stop, ga->stream), "cuEventRecord");
    if (kind == COPY_CE_BIDIR) {
        CU_TRY(p_cuEventRecord(stop2, ga->stream2), "cuEventRecord");
    }
    *(volatile int *)bn->host_flag = 1;
    CU_TRY(p_cuEventSynchronize(stop), "cuEventSynchronize");
    CU_TRY(p_cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
    if (kind == COPY_CE_BIDIR) {
        CU_TRY(p_cuEventSynchronize(stop2), "cuEventSynchronize");
        CU_TRY(p_cuEventElapsedTime(&ms2, start, stop2),
               "cuEventElapsedTime");
        ms = MAX(ms, ms2);
    }
    p_cuEventDestroy(start);
    p_cuEventDestroy(stop);
    p_cuEventDestroy(stop2);
    *gbps = (double)bn->bytes * bn->loops * (kind == COPY_CE_BIDIR ? 2 : 1) /
            (ms / 1e3) / 1e9;
    return true;
}

/* Host-staged (P2P off): a -> pinned host -> b, pipelined in chunks. */
static bool time_staged(Bench *bn, int a, int b, double *gbps, GError **errp)
{
    Gpu *ga = &bn->gpus[a], *gb = &bn->gpus[b];
    const gsize chunk = MIN(bn->bytes, (gsize)32 << 20);
    gsize nchunks = bn->bytes / chunk, i;
    CUevent down[2], up[2], start, stop;
    float ms;
    int k;

    /* An event is recorded on streams of the context it was made in. */
    CU_TRY(p_cuCtxSetCurrent(gb->ctx), "cuCtxSetCurrent");
    for (k = 0; k < 2; k++) {
        CU_TRY(p_cuEventCreate(&up[k], CU_EVENT_DISABLE_TIMING), "event");
    }
    CU_TRY(p_cuCtxSetCurrent(ga->ctx), "cuCtxSetCurrent");
    for (k = 0; k < 2; k++) {
        CU_TRY(p_cuEventCreate(&down[k], CU_EVENT_DISABLE_TIMING), "event");
    }
    CU_TRY(p_cuEventCreate(&start, CU_EVENT_BLOCKING_SYNC), "event");
    CU_TRY(p_cuEventCreate(&stop, CU_EVENT_BLOCKING_SYNC), "event");
    CU_TRY(p_cuEventRecord(start, ga->stream), "cuEventRecord");
    for (i = 0; i < nchunks; i++) {
        int buf = i % 2;
        char *host = (char *)bn->staging + buf * chunk;

        if (i >= 2) {
            CU_TRY(p_cuStreamWaitEvent(ga->stream, up[buf], 0), "wait");
        }
        CU_TRY(p_cuMemcpyDtoHAsync(host, bn->src[a] + i * chunk, chunk,
                                   ga->stream), "cuMemcpyDtoHAsync");
        CU_TRY(p_cuEventRecord(down[buf], ga->stream), "cuEventRecord");
        CU_TRY(p_cuStreamWaitEvent(gb->stream2, down[buf], 0), "wait");
        CU_TRY(p_cuMemcpyHtoDAsync(bn->dst[b] + i * chunk, host, chunk,
                                   gb->stream2), "cuMemcpyHtoDAsync");
        CU_TRY(p_cuEventRecord(up[buf], gb->stream2), "cuEventRecord");
    }
    CU_TRY(p_cuStreamWaitEvent(ga->stream, up[(nchunks - 1) % 2], 0),
           "wait");
    CU_TRY(p_cuEventRecord(stop, ga->stream), "cuEventRecord");
    CU_TRY(p_cuEventSynchronize(stop), "cuEventSynchronize");
    CU_TRY(p_cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
    for (k = 0; k < 2; k++) {
        p_cuEventDestroy(down[k]);
        p_cuEventDestroy(up[k]);
    }
    p_cuEventDestroy(start);
    p_cuEventDestroy(stop);
    *gbps = (double)nchunks * chunk / (ms / 1e3) / 1e9;
    return true;
}

/* Copy-engine latency: the median time of one small peer copy. */
static bool time_ce_latency(Bench *bn, int a, int b, double *us,
                            GError **errp)
{
    Gpu *ga = &bn->gpus[a], *gb = &bn->gpus[b];
    const unsigned reps = 100;
    CUevent start, stop;
    float ms;
    unsigned i;

    CU_TRY(p_cuCtxSetCurrent(ga->ctx), "cuCtxSetCurrent");
    CU_TRY(p_cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
    CU_TRY(p_cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
    CU_TRY(p_cuEventRecord(start, ga->stream), "cuEventRecord");
    for (i = 0; i < reps; i++) {
        CU_TRY(p_cuMemcpyPeerAsync(bn->dst[b], gb->ctx, bn->src[a], ga->ctx,
                                   16, ga->stream), "cuMemcpyPeerAsync");
    }
    CU_TRY(p_cuEventRecord(stop, ga->stream), "cuEventRecord");
    CU_TRY(p_cuEventSynchronize(stop), "cuEventSynchronize");
    CU_TRY(p_cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
    p_cuEventDestroy(start);
    p_cuEventDestroy(stop);
    *us = ms * 1e3 / reps;
    return true;
}

/*
 * SM latency: a pointer chase by GPU a through GPU b's memory, a random
 * cycle over a footprint larger than the caches, with loads that bypass L1.
 */
static bool time_sm_latency(Bench *bn, int a, int b, double *us,
                            GError **errp)
{
    Gpu *ga = &bn->gpus[a];
    gsize entries = MIN(bn->bytes, (gsize)256 << 20) / 4;
    uint32_t hops = 20000, sink_host;
    g_autofree uint32_t *chain = NULL;
    CUdeviceptr buf = bn->dst[b], scratch = bn->scratch[a];
    CUdeviceptr sink = scratch + 8, ns_dev = scratch + 16;
    uint64_t ns;
    void *args[] = { &buf, &hops, &sink, &ns_dev };
    gsize i;
    GRand *rnd = g_rand_new_with_seed(42);
    /* Stride by whole cache lines over the footprint: a random cycle. */
    gsize lines = entries / 32;
    g_autofree uint32_t *order = g_new(uint32_t, lines);

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
    chain = g_new0(uint32_t, entries);
    for (i = 0; i < lines; i++) {
        chain[order[i]] = order[(i + 1) % lines];
    }
    CU_TRY(p_cuCtxSetCurrent(bn->gpus[b].ctx), "cuCtxSetCurrent");
    CU_TRY(p_cuMemcpyHtoD(buf, chain, entries * 4), "cuMemcpyHtoD");
    CU_TRY(p_cuCtxSetCurrent(ga->ctx), "cuCtxSetCurrent");
    CU_TRY(launch(ga->chase, 1, 1, ga->stream, args), "pointer_chase");
    CU_TRY(p_cuStreamSynchronize(ga->stream), "pointer_chase");
    CU_TRY(p_cuMemcpyDtoH(&ns, ns_dev, sizeof(ns)), "cuMemcpyDtoH");
    CU_TRY(p_cuMemcpyDtoH(&sink_host, sink, sizeof(sink_host)),
           "cuMemcpyDtoH");
    *us = (double)ns / hops / 1e3;
    return true;
}

/* Copy a -> b by the copy engine and by the SMs; check the bytes at b. */
static void verify_pair_data(Bench *bn, VerifyPair *p, int a, int b,
                             bool sm_possible)
{
    g_autoptr(GError) err = NULL;
    GError **errp = &err;
    uint32_t seed = 0x5eed0000u | (uint32_t)(a << 8 | b);
    Gpu *gb = &bn->gpus[b];
    int64_t bad;

    p->verified_ce = CHECK_FAILED;
    if (!fill(&bn->gpus[a], bn->src[a], bn->bytes, seed, errp)) {
        goto fail;
    }
    p_cuCtxSetCurrent(gb->ctx);
    if (p_cuMemsetD32Async(bn->dst[b], 0, bn->bytes / 4, gb->stream) ||
        p_cuStreamSynchronize(gb->stream) ||
        enqueue(bn, COPY_CE, a, b, bn->gpus[a].stream, false) ||
        p_cuStreamSynchronize(bn->gpus[a].stream)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "CE copy failed");
        goto fail;
    }
    if (!check(gb, bn->dst[b], bn->bytes, seed, bn->scratch[b], &bad, errp)) {
        goto fail;
    }
    if (bad >= 0) {
        g_snprintf(p->verify_problem, sizeof(p->verify_problem),
                   "copy engine %d->%d: first bad byte at offset %" G_GINT64_FORMAT,
                   a, b, bad);
        return;
    }
    p->verified_ce = CHECK_OK;
    if (!sm_possible) {
        p->verified_sm = CHECK_UNTESTABLE;
        return;
    }
    p->verified_sm = CHECK_FAILED;
    p_cuCtxSetCurrent(gb->ctx);
    if (p_cuMemsetD32Async(bn->dst[b], 0, bn->bytes / 4, gb->stream) ||
        p_cuStreamSynchronize(gb->stream)) {
        goto fail;
    }
    p_cuCtxSetCurrent(bn->gpus[a].ctx);
    if (enqueue(bn, COPY_SM, a, b, bn->gpus[a].stream, false) ||
        p_cuStreamSynchronize(bn->gpus[a].stream)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "SM copy failed");
        goto fail;
    }
    if (!check(gb, bn->dst[b], bn->bytes, seed, bn->scratch[b], &bad, errp)) {
        goto fail;
    }
    if (bad >= 0) {
        g_snprintf(p->verify_problem, sizeof(p->verify_problem),
                   "SM copy %d->%d: first bad byte at offset %" G_GINT64_FORMAT,
                   a, b, bad);
        return;
    }
    p->verified_sm = CHECK_OK;
    return;
fail:
    g_snprintf(p->verify_problem, sizeof(p->verify_problem), "%d->%d: %s",
               a, b, err ? err->message : "failed");
}

static void measure(Bench *bn, Figure *f, GError **errp,
                    bool (*fn)(Bench *, int, int, double *, GError **),
                    int a, int b)
{
    double v[16] = { 0 };
    unsigned i, n = MIN(bn->samples, G_N_ELEMENTS(v));

    for (i = 0; i < n; i++) {
        if (!fn(bn, a, b, &v[i], errp)) {
            return;
        }
    }
    figure_set(f, v, n);
}

static bool bw_ce(Bench *bn, int a, int b, double *v, GError **errp)
{
    return time_copies(bn, COPY_CE, a, b, v, errp);
}

static bool bw_sm(Bench *bn, int a, int b, double *v, GError **errp)
{
    return time_copies(bn, COPY_SM, a, b, v, errp);
}

static bool bw_sm_read(Bench *bn, int a, int b, double *v, GError **errp)
{
    return time_copies(bn, COPY_SM_READ, a, b, v, errp);
}

static bool bw_bidir(Bench *bn, int a, int b, double *v, GError **errp)
{
    return time_copies(bn, COPY_CE_BIDIR, a, b, v, errp);
}

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

void verify_cuda(const VerifyOptions *o, VerifyReport *r)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *why = NULL;
    g_autofree Gpu *gpus = NULL;
    g_autofree int *gpu_of_cuda = NULL;
    GError **errp = &err;
    Bench bn = { 0 };
    int count = 0, i, j;
    CUresult res;

    if (!cuda_load(&why)) {
        r->cuda_status = g_steal_pointer(&why);
        r->untested = true;
        return;
    }
    res = p_cuInit(0);
    if (res == CUDA_SUCCESS) {
        res = p_cuDeviceGetCount(&count);
    }
    if (res != CUDA_SUCCESS) {
        r->cuda_status = g_strdup_printf("cuInit: %s", cu_err(res));
        r->untested = true;
        return;
    }
    gpus = g_new0(Gpu, count);
    gpu_of_cuda = g_new(int, count);
    for (i = 0; i < count; i++) {
        char bus[32], norm[GP_BDF_LEN];
        int gi;

        p_cuDeviceGetPCIBusId(bus, sizeof(bus), i);
        if (!gp_bdf_normalize(bus, norm)) {
            g_strlcpy(norm, bus, sizeof(norm));
        }
        gi = find_gpu_by_bdf(r, norm);
        if (gi < 0) {
            /* CUDA sees a GPU the PCI scan did not (e.g. a capture). */
            VerifyGpu g = { .clique = -1 };

            g_strlcpy(g.bdf, norm, sizeof(g.bdf));
            g_array_append_val(r->gpus, g);
            gi = r->gpus->len - 1;
        }
        gpu_of_cuda[i] = gi;
        g_array_index(r->gpus, VerifyGpu, gi).cuda_index = i;
        p_cuDeviceGetName(g_array_index(r->gpus, VerifyGpu, gi).name,
                          sizeof(g_array_index(r->gpus, VerifyGpu, gi).name),
                          i);
        if (!gpu_open(&gpus[i], i, errp)) {
            r->cuda_status = g_strdup_printf("GPU %d: %s", i, err->message);
            r->untested = true;
            goto out;
        }
    }
    verify_nvml(r);

    bn.gpus = gpus;
    bn.bytes = o->bytes;
    bn.samples = o->samples;
    bn.loops = o->quick ? 2 : 8;
    bn.src = g_new0(CUdeviceptr, count);
    bn.dst = g_new0(CUdeviceptr, count);
    bn.scratch = g_new0(CUdeviceptr, count);
    for (i = 0; i < count; i++) {
        p_cuCtxSetCurrent(gpus[i].ctx);
        if ((res = p_cuMemAlloc(&bn.src[i], bn.bytes)) ||
            (res = p_cuMemAlloc(&bn.dst[i], bn.bytes)) ||
            (res = p_cuMemAlloc(&bn.scratch[i], 4096))) {
            r->cuda_status = g_strdup_printf("GPU %d: allocating 2 x %"
                                             G_GSIZE_FORMAT " bytes: %s", i,
                                             bn.bytes, cu_err(res));
            r->untested = true;
            goto out;
        }
    }
    p_cuCtxSetCurrent(gpus[0].ctx);
    if ((res = p_cuMemHostAlloc((void **)&bn.host_flag, 4096,
                                CU_MEMHOSTALLOC_PORTABLE |
                                CU_MEMHOSTALLOC_DEVICEMAP)) ||
        (res = p_cuMemHostGetDevicePointer(&bn.flag_dev, bn.host_flag, 0)) ||
        (res = p_cuMemHostAlloc(&bn.staging, (gsize)64 << 20,
                                CU_MEMHOSTALLOC_PORTABLE))) {
        r->cuda_status = g_strdup_printf("pinned host memory: %s",
                                         cu_err(res));
        r->untested = true;
        goto out;
    }

    for (i = 0; i < count; i++) {
        for (j = 0; j < count; j++) {
            VerifyPair p = { .peer_access = -1 };
            int can = 0, rank = 0, atomics = 0;
            bool enabled = false;

            if (i == j) {
                continue;
            }
            p.a = gpu_of_cuda[i];
            p.b = gpu_of_cuda[j];
            g_strlcpy(p.link, "unknown", sizeof(p.link));
            if (p_cuDeviceCanAccessPeer(&can, gpus[i].dev, gpus[j].dev) ==
                CUDA_SUCCESS) {
                p.peer_access = can;
            }
            p_cuDeviceGetP2PAttribute(&rank,
                CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, gpus[i].dev,
                gpus[j].dev);
            p_cuDeviceGetP2PAttribute(&atomics,
                CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, gpus[i].dev,
                gpus[j].dev);
            p.perf_rank = rank;
            p.native_atomics = atomics;
            if (can) {
                CUresult e1, e2;

                p_cuCtxSetCurrent(gpus[i].ctx);
                e1 = p_cuCtxEnablePeerAccess(gpus[j].ctx, 0);
                p_cuCtxSetCurrent(gpus[j].ctx);
                e2 = p_cuCtxEnablePeerAccess(gpus[i].ctx, 0);
                enabled = (e1 == CUDA_SUCCESS ||
                           e1 == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) &&
                          (e2 == CUDA_SUCCESS ||
                           e2 == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
            }
            verify_pair_data(&bn, &p, i, j, enabled);
            g_array_append_val(r->pairs, p);
        }
    }
    verify_nvml_pairs(r);

    /* Figures: each ordered pair with peer access. */
    for (i = 0; i < (int)r->pairs->len; i++) {
        VerifyPair *p = &g_array_index(r->pairs, VerifyPair, i);
        int a = g_array_index(r->gpus, VerifyGpu, p->a).cuda_index;
        int b = g_array_index(r->gpus, VerifyGpu, p->b).cuda_index;

        g_clear_error(&err);
        if (p->verified_ce != CHECK_OK) {
            continue;
        }
        measure(&bn, &p->uni_ce, errp, bw_ce, a, b);
        if (p->verified_sm == CHECK_OK) {
            measure(&bn, &p->uni_sm, errp, bw_sm, a, b);
            if (!o->quick) {
                measure(&bn, &p->uni_sm_read, errp, bw_sm_read, a, b);
                measure(&bn, &p->lat_sm_us, errp, time_sm_latency, a, b);
            }
        }
        if (!o->quick) {
            if (a < b) {
                measure(&bn, &p->bi_ce, errp, bw_bidir, a, b);
            }
            measure(&bn, &p->uni_staged, errp, time_staged, a, b);
            measure(&bn, &p->lat_ce_us, errp, time_ce_latency, a, b);
        }
        if (err) {
            g_snprintf(p->verify_problem, sizeof(p->verify_problem),
                       "measuring: %s", err->message);
        }
    }
    /* Bidirectional figures belong to both orders of a pair. */
    for (i = 0; i < (int)r->pairs->len; i++) {
        VerifyPair *p = &g_array_index(r->pairs, VerifyPair, i);

        for (j = 0; j < (int)r->pairs->len && p->bi_ce.samples; j++) {
            VerifyPair *q = &g_array_index(r->pairs, VerifyPair, j);

            if (q->a == p->b && q->b == p->a && !q->bi_ce.samples) {
                q->bi_ce = p->bi_ce;
            }
        }
    }
out:
    for (i = 0; i < count; i++) {
        p_cuCtxSetCurrent(gpus[i].ctx);
        if (bn.src && bn.src[i]) {
            p_cuMemFree(bn.src[i]);
        }
        if (bn.dst && bn.dst[i]) {
            p_cuMemFree(bn.dst[i]);
        }
        if (bn.scratch && bn.scratch[i]) {
            p_cuMemFree(bn.scratch[i]);
        }
    }
    if (bn.host_flag) {
        p_cuMemFreeHost(bn.host_flag);
    }
    if (bn.staging) {
        p_cuMemFreeHost(bn.staging);
    }
    g_free(bn.src);
    g_free(bn.dst);
    g_free(bn.scratch);
    for (i = 0; i < count; i++) {
        gpu_close(&gpus[i]);
    }
}

/* For GPUDirect RDMA: a dma-buf fd for a GPU allocation, or -1. */
int verify_cuda_dmabuf(int ordinal, gsize bytes, unsigned long long *ptr,
                       char **why)
{
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr mem;
    int supported = 0, fd = -1;
    CUresult res;

    if (!p_cuInit && !cuda_load(why)) {
        return -1;
    }
    if ((res = p_cuInit(0)) || (res = p_cuDeviceGet(&dev, ordinal))) {
        *why = g_strdup_printf("CUDA: %s", cu_err(res));
        return -1;
    }
    p_cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
                           dev);
    if (!supported) {
        *why = g_strdup("the GPU or driver does not export dma-buf "
                        "(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0)");
        return -1;
    }
    if ((res = p_cuDevicePrimaryCtxRetain(&ctx, dev)) ||
        (res = p_cuCtxSetCurrent(ctx)) ||
        (res = p_cuMemAlloc(&mem, bytes)) ||
        (res = p_cuMemGetHandleForAddressRange(&fd, mem, bytes,
                CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0))) {
        *why = g_strdup_printf("exporting GPU memory as dma-buf: %s",
                               cu_err(res));
        return -1;
    }
    *ptr = mem;
    return fd;
}

/* Make GPU @ordinal's primary context current. */
static bool use_gpu(int ordinal)
{
    CUdevice dev;
    CUcontext ctx;

    return p_cuDeviceGet(&dev, ordinal) == CUDA_SUCCESS &&
           p_cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS &&
           p_cuCtxSetCurrent(ctx) == CUDA_SUCCESS;
}

/* Read @bytes of GPU memory at @ptr (after an RDMA write into it). */
bool verify_cuda_read(int ordinal, unsigned long long ptr, void *out,
                      gsize bytes)
{
    return use_gpu(ordinal) && p_cuMemcpyDtoH(out, ptr, bytes) == CUDA_SUCCESS;
}

bool verify_cuda_write(int ordinal, unsigned long long ptr, const void *in,
                       gsize bytes)
{
    return use_gpu(ordinal) && p_cuMemcpyHtoD(ptr, in, bytes) == CUDA_SUCCESS;
}
