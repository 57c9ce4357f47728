// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Stand-ins for the parts of the rest of NCCL that its topology reader
 * (xml.cc) links to: its logger and host hash, which the judge reaches
 * (the logger prints NCCL's warnings and, with NCCL_DEBUG=INFO, its INFO
 * lines; the hash only labels a <cpu>), and NVML and the CUDA runtime,
 * which only the GPU half of ncclTopoFillGpu calls and the judge never
 * reaches: they fail loudly.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "debug.h"
#include "nvmlwrap.h"
#include "utils.h"

int ncclDebugLevel = NCCL_LOG_WARN;
uint64_t ncclDebugMask = ~0ULL;
thread_local int ncclDebugNoWarn = 0;

__attribute__((constructor)) static void debug_from_env(void)
{
    const char *level = getenv("NCCL_DEBUG");

    if (level && strcasecmp(level, "INFO") == 0) {
        ncclDebugLevel = NCCL_LOG_INFO;
    }
}

void ncclDebugLog(ncclDebugLogLevel level, unsigned long flags,
                  const char *filefunc, int line, const char *fmt, ...)
{
    va_list ap;

    (void)flags;
    if (level > ncclDebugLevel ||
        (level == NCCL_LOG_WARN && ncclDebugNoWarn)) {
        return;
    }
    fprintf(stderr, "NCCL %s %s:%d ", level == NCCL_LOG_WARN ? "WARN" : "INFO",
            filefunc, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

// NCCL hashes the host name into each <cpu>'s host_hash; no check reads it.
uint64_t getHostHash(void)
{
    return 0;
}

static ncclResult_t outside(const char *what)
{
    fprintf(stderr, "nccl-topo-judge: %s is outside the judge (no GPU)\n",
            what);
    return ncclSystemError;
}

ncclResult_t ncclNvmlDeviceGetHandleByPciBusId(const char *, nvmlDevice_t *)
{
    return outside("NVML");
}

ncclResult_t ncclNvmlDeviceGetIndex(nvmlDevice_t, unsigned *)
{
    return outside("NVML");
}

ncclResult_t ncclNvmlDeviceGetNvLinkState(nvmlDevice_t, unsigned int,
                                          nvmlEnableState_t *)
{
    return outside("NVML");
}

ncclResult_t ncclNvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t, unsigned int,
                                                  nvmlPciInfo_t *)
{
    return outside("NVML");
}

ncclResult_t ncclNvmlDeviceGetNvLinkCapability(nvmlDevice_t, unsigned int,
                                               nvmlNvLinkCapability_t,
                                               unsigned int *)
{
    return outside("NVML");
}

ncclResult_t ncclNvmlDeviceGetCudaComputeCapability(nvmlDevice_t, int *, int *)
{
    return outside("NVML");
}

ncclResult_t ncclNvmlDeviceGetFieldValues(nvmlDevice_t, int,
                                          nvmlFieldValue_t *)
{
    return outside("NVML");
}

extern "C" {
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *, int)
{
    outside("the CUDA runtime");
    return cudaErrorNoDevice;
}

cudaError_t cudaGetLastError(void)
{
    return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t)
{
    return "no CUDA runtime in the judge";
}
}
