/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The CUDA driver API, loaded at run time (libcuda.so.1), so the tool
 * runs, and says so, without it; its errors as GError carrying the
 * CUresult; waiting for GPU work under the watchdog.
 */
#include <dlfcn.h>

#include "cuda-run.h"

#define CU_DEFINE(name, params) CUresult (*p_##name) params;
CU_APIS(CU_DEFINE)
#undef CU_DEFINE

G_DEFINE_QUARK(verify-cuda-error-quark, verify_cuda_error)

CUresult cuda_error_code(const GError *err)
{
    return err && err->domain == VERIFY_CUDA_ERROR ? err->code :
           CUDA_SUCCESS;
}

const char *cu_err(CUresult r)
{
    const char *s = NULL;

    if (p_cuGetErrorString) {
        p_cuGetErrorString(r, &s);
    }
    return s ? s : "unknown CUDA error";
}

bool cuda_load(GError **errp)
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
#undef CU_RESOLVE
    loaded = true;
    return true;
}

CUresult launch(CUfunction f, unsigned grid, unsigned block, CUstream s,
                void **args)
{
    return p_cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, args, NULL);
}

/* Sticky errors: the context (and the GPU, until reset) is unusable. */
bool cu_sticky(CUresult r)
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
 * never longer than the watchdog: hung work fails, naming @what, with
 * CUDA_ERROR_NOT_READY, instead of hanging the tool (cuEventSynchronize
 * has no time limit). The interval is fixed and short: a nap that grows
 * would add up to its length to every wait.
 */
bool wait_done(const Run *run, CUevent e, CUstream s, const char *what,
               GError **errp)
{
    gint64 end = g_get_monotonic_time() + (gint64)(run->watchdog_s * 1e6);
    const gulong nap_us = 50;

    for (;;) {
        CUresult res = e ? p_cuEventQuery(e) : p_cuStreamQuery(s);

        if (res == CUDA_SUCCESS) {
            return true;
        }
        if (res != CUDA_ERROR_NOT_READY) {
            g_set_error(errp, VERIFY_CUDA_ERROR, res, "%s: %s (%d)", what,
                        cu_err(res), (int)res);
            return false;
        }
        if (g_get_monotonic_time() > end) {
            g_set_error(errp, VERIFY_CUDA_ERROR, CUDA_ERROR_NOT_READY,
                        "%s: not finished after %g s (--watchdog-s): hung",
                        what, run->watchdog_s);
            return false;
        }
        g_usleep(nap_us);
    }
}

bool gpu_make_current(const Gpu *g, GError **errp)
{
    CU_TRY(p_cuCtxSetCurrent(g->ctx), "GPU %d: cuCtxSetCurrent", g->ordinal);
    return true;
}
