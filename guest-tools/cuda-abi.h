/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The part of the CUDA driver API that gpup2p-verify calls, declared from
 * the driver's documented ABI so that the tool builds where no CUDA
 * toolkit is installed. Every entry point is looked up at run time with
 * cuGetProcAddress_v2 (API version 12000), which hands out the versioned
 * symbol (cuMemAlloc_v2 and so on) that these prototypes describe.
 */
#ifndef GPUP2P_CUDA_ABI_H
#define GPUP2P_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217,
    CUDA_ERROR_NVLINK_UNCORRECTABLE = 220,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
    CUDA_ERROR_NOT_SUPPORTED = 801,
};

enum {
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 124,
};

enum {
    CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK = 1,
    CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED = 3,
};

#define CU_STREAM_NON_BLOCKING 0x1
#define CU_EVENT_DEFAULT 0x0
#define CU_EVENT_DISABLE_TIMING 0x2
#define CU_MEMHOSTALLOC_PORTABLE 0x01
#define CU_MEMHOSTALLOC_DEVICEMAP 0x02
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 0x1
#define CU_GET_PROC_ADDRESS_DEFAULT 0

/* name, then the parameter list of the versioned entry point. */
#define CU_APIS(X)                                                          \
    X(cuInit, (unsigned flags))                                             \
    X(cuDriverGetVersion, (int *version))                                   \
    X(cuDeviceGetCount, (int *count))                                       \
    X(cuDeviceGet, (CUdevice *dev, int ordinal))                            \
    X(cuDeviceGetName, (char *name, int len, CUdevice dev))                 \
    X(cuDeviceGetPCIBusId, (char *bus, int len, CUdevice dev))              \
    X(cuDeviceGetAttribute, (int *v, int attr, CUdevice dev))               \
    X(cuDeviceCanAccessPeer, (int *can, CUdevice dev, CUdevice peer))       \
    X(cuDeviceGetP2PAttribute, (int *v, int attr, CUdevice src,             \
                                CUdevice dst))                              \
    X(cuDevicePrimaryCtxRetain, (CUcontext *ctx, CUdevice dev))             \
    X(cuDevicePrimaryCtxRelease, (CUdevice dev))                            \
    X(cuCtxSetCurrent, (CUcontext ctx))                                     \
    X(cuCtxEnablePeerAccess, (CUcontext peer, unsigned flags))              \
    X(cuCtxSynchronize, (void))                                             \
    X(cuMemAlloc, (CUdeviceptr *p, size_t bytes))                           \
    X(cuMemFree, (CUdeviceptr p))                                           \
    X(cuMemHostAlloc, (void **p, size_t bytes, unsigned flags))             \
    X(cuMemFreeHost, (void *p))                                             \
    X(cuMemHostGetDevicePointer, (CUdeviceptr *d, void *p, unsigned flags)) \
    X(cuMemcpyPeerAsync, (CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, \
                          CUcontext sctx, size_t bytes, CUstream s))        \
    X(cuMemcpyDtoHAsync, (void *dst, CUdeviceptr src, size_t bytes,         \
                          CUstream s))                                      \
    X(cuMemcpyHtoDAsync, (CUdeviceptr dst, const void *src, size_t bytes,   \
                          CUstream s))                                      \
    X(cuMemsetD32Async, (CUdeviceptr p, unsigned v, size_t n, CUstream s))  \
    X(cuStreamCreate, (CUstream *s, unsigned flags))                        \
    X(cuStreamDestroy, (CUstream s))                                        \
    X(cuStreamSynchronize, (CUstream s))                                    \
    X(cuStreamQuery, (CUstream s))                                          \
    X(cuStreamWaitEvent, (CUstream s, CUevent e, unsigned flags))           \
    X(cuEventCreate, (CUevent *e, unsigned flags))                          \
    X(cuEventDestroy, (CUevent e))                                          \
    X(cuEventRecord, (CUevent e, CUstream s))                               \
    X(cuEventSynchronize, (CUevent e))                                      \
    X(cuEventQuery, (CUevent e))                                            \
    X(cuEventElapsedTime, (float *ms, CUevent start, CUevent end))          \
    X(cuModuleLoadData, (CUmodule *m, const void *image))                   \
    X(cuModuleUnload, (CUmodule m))                                         \
    X(cuModuleGetFunction, (CUfunction *f, CUmodule m, const char *name))   \
    X(cuLaunchKernel, (CUfunction f, unsigned gx, unsigned gy, unsigned gz, \
                       unsigned bx, unsigned by, unsigned bz,               \
                       unsigned shared, CUstream s, void **args,            \
                       void **extra))                                       \
    X(cuGetErrorString, (CUresult r, const char **s))                       \
    X(cuMemGetHandleForAddressRange, (void *handle, CUdeviceptr p,          \
                                      size_t bytes, int type,               \
                                      unsigned long long flags))

#endif
