/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The driver's floor under `gpup2p-verify --quick` (a reference for the
 * GPU scripts, not part of the tool): only the driver calls no P2P check
 * can do without, each phase timed, so that the tool's wall time is read
 * as a ratio to what the driver alone costs on the same machine.
 *
 *   driver-floor release|exit|_exit
 *
 * Phases: cuInit and the device count; NVML's start (the tool needs NVML
 * to tell a hidden GPU from a missing one); each GPU's primary context and
 * a 64 MiB source and a 64 MiB slot per peer, one thread per GPU as the
 * tool does; peer access for every ordered pair; one 64 MiB copy per
 * ordered pair into its own slot, on the source's context, waited for;
 * then the end: "release" frees everything and releases the contexts
 * before returning from main, "exit" returns from main holding them (the
 * driver's own exit handlers clean up), "_exit" leaves at once (the
 * kernel cleans up). One JSON line on stdout: phase seconds and the GPU
 * count; exit 0, or 1 naming the failed call on stderr (also with fewer
 * than two GPUs: no pair, no floor of a P2P check).
 *
 * Build: cc -O2 -I CUDA/include driver-floor.c -L CUDA/lib64/stubs -lcuda
 *        -ldl -lpthread
 */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_GPUS 64
#define BYTES (64u << 20)

typedef struct {
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr src, inbox;
    CUstream stream;
    CUresult res;
    const char *what;
} Gpu;

static Gpu gpus[MAX_GPUS];
static int n;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void check(CUresult res, const char *what, int gpu)
{
    const char *name = NULL;

    if (res == CUDA_SUCCESS) {
        return;
    }
    cuGetErrorName(res, &name);
    fprintf(stderr, "driver-floor: GPU %d: %s: %s\n", gpu, what,
            name ? name : "unknown error");
    exit(1);
}

static void *open_gpu(void *arg)
{
    Gpu *g = arg;

#define TRY(call, name) do { if ((g->res = (call))) { g->what = name;   \
                                 return NULL; } } while (0)
    TRY(cuDevicePrimaryCtxRetain(&g->ctx, g->dev), "cuDevicePrimaryCtxRetain");
    TRY(cuCtxSetCurrent(g->ctx), "cuCtxSetCurrent");
    TRY(cuStreamCreate(&g->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    TRY(cuMemAlloc(&g->src, BYTES), "cuMemAlloc");
    TRY(cuMemAlloc(&g->inbox, (size_t)BYTES * n), "cuMemAlloc");
    TRY(cuMemsetD32Async(g->src, 0x5a5a5a5au, BYTES / 4, g->stream),
        "cuMemsetD32Async");
    TRY(cuStreamSynchronize(g->stream), "cuStreamSynchronize");
#undef TRY
    return NULL;
}

/* NVML by name, as the tool finds it: its start and end only. */
static int nvml_start(void **handle)
{
    int (*init)(void);

    *handle = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (!*handle) {
        fprintf(stderr, "driver-floor: %s\n", dlerror());
        return -1;
    }
    init = (int (*)(void))dlsym(*handle, "nvmlInit_v2");
    if (!init || init() != 0) {
        fprintf(stderr, "driver-floor: nvmlInit_v2 failed\n");
        return -1;
    }
    return 0;
}

static void nvml_end(void *handle)
{
    int (*shutdown)(void) = (int (*)(void))dlsym(handle, "nvmlShutdown");

    if (shutdown) {
        shutdown();
    }
}

int main(int argc, char **argv)
{
    const char *end = argc == 2 ? argv[1] : "";
    double t[7];
    pthread_t threads[MAX_GPUS];
    void *nvml;

    if (strcmp(end, "release") && strcmp(end, "exit") && strcmp(end, "_exit")) {
        fprintf(stderr, "usage: driver-floor release|exit|_exit\n");
        return 64;
    }
    t[0] = now();
    check(cuInit(0), "cuInit", -1);
    check(cuDeviceGetCount(&n), "cuDeviceGetCount", -1);
    if (n > MAX_GPUS) {
        n = MAX_GPUS;
    }
    if (n < 2) {
        fprintf(stderr, "driver-floor: %d GPU(s): no pair to measure\n", n);
        return 1;
    }
    t[1] = now();
    if (nvml_start(&nvml)) {
        return 1;
    }
    t[2] = now();
    for (int i = 0; i < n; i++) {
        check(cuDeviceGet(&gpus[i].dev, i), "cuDeviceGet", i);
        if (pthread_create(&threads[i], NULL, open_gpu, &gpus[i])) {
            fprintf(stderr, "driver-floor: pthread_create failed\n");
            return 1;
        }
    }
    for (int i = 0; i < n; i++) {
        pthread_join(threads[i], NULL);
        check(gpus[i].res, gpus[i].what, i);
    }
    t[3] = now();
    for (int a = 0; a < n; a++) {
        check(cuCtxSetCurrent(gpus[a].ctx), "cuCtxSetCurrent", a);
        for (int b = 0; b < n; b++) {
            if (a != b) {
                check(cuCtxEnablePeerAccess(gpus[b].ctx, 0),
                      "cuCtxEnablePeerAccess", a);
            }
        }
    }
    t[4] = now();
    for (int a = 0; a < n; a++) {
        check(cuCtxSetCurrent(gpus[a].ctx), "cuCtxSetCurrent", a);
        for (int b = 0; b < n; b++) {
            if (a != b) {
                check(cuMemcpyPeerAsync(gpus[b].inbox + (size_t)BYTES * a,
                                        gpus[b].ctx,
                                        gpus[a].src, gpus[a].ctx, BYTES,
                                        gpus[a].stream),
                      "cuMemcpyPeerAsync", a);
            }
        }
    }
    for (int a = 0; a < n; a++) {
        check(cuStreamSynchronize(gpus[a].stream), "cuStreamSynchronize", a);
    }
    t[5] = now();
    if (!strcmp(end, "release")) {
        for (int i = 0; i < n; i++) {
            check(cuCtxSetCurrent(gpus[i].ctx), "cuCtxSetCurrent", i);
            check(cuMemFree(gpus[i].src), "cuMemFree", i);
            check(cuMemFree(gpus[i].inbox), "cuMemFree", i);
            check(cuStreamDestroy(gpus[i].stream), "cuStreamDestroy", i);
            check(cuCtxSetCurrent(NULL), "cuCtxSetCurrent", i);
            check(cuDevicePrimaryCtxRelease(gpus[i].dev),
                  "cuDevicePrimaryCtxRelease", i);
        }
        nvml_end(nvml);
    }
    t[6] = now();
    printf("{\"end\": \"%s\", \"gpus\": %d, \"cuda_init\": %.3f, "
           "\"nvml_init\": %.3f, \"contexts_and_buffers\": %.3f, "
           "\"peer_access\": %.3f, \"copies\": %.3f, \"release\": %.3f, "
           "\"seconds\": %.3f}\n", end, n, t[1] - t[0], t[2] - t[1],
           t[3] - t[2], t[4] - t[3], t[5] - t[4], t[6] - t[5], t[6] - t[0]);
    if (fflush(stdout)) {
        return 1;
    }
    if (!strcmp(end, "_exit")) {
        _exit(0);
    }
    return 0;
}
