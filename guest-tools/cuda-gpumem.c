/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * GPU memory for the RDMA checks (rdma.c): one buffer on one GPU, its
 * dma-buf export, and plain reads and writes of it.
 */
#include "cuda-run.h"

struct VerifyGpuMem {
    int ordinal;
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr ptr;
    gsize bytes;
};

/* The buffer's context made current; the error names the GPU. */
static bool gpu_mem_use(const VerifyGpuMem *m, GError **errp)
{
    CU_TRY(p_cuCtxSetCurrent(m->ctx), "GPU %d: cuCtxSetCurrent", m->ordinal);
    return true;
}

VerifyGpuMem *verify_gpu_mem_new(int ordinal, gsize bytes, GError **errp)
{
    g_autofree VerifyGpuMem *m = g_new0(VerifyGpuMem, 1);
    CUresult res;

    if (!cuda_load(errp)) {
        return NULL;
    }
    m->ordinal = ordinal;
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

    if (!gpu_mem_use(m, errp)) {
        return -1;
    }
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
    if (!gpu_mem_use(m, errp)) {
        return false;
    }
    CU_TRY(p_cuMemcpyDtoHAsync(out, m->ptr, m->bytes, NULL),
           "reading GPU memory");
    CU_TRY(p_cuCtxSynchronize(), "reading GPU memory");
    return true;
}

bool verify_gpu_mem_write(VerifyGpuMem *m, const void *in, GError **errp)
{
    if (!gpu_mem_use(m, errp)) {
        return false;
    }
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
    /* Without its context the memory cannot be freed: left to exit. */
    if (p_cuCtxSetCurrent(m->ctx) == CUDA_SUCCESS) {
        p_cuMemFree(m->ptr);
    }
    p_cuDevicePrimaryCtxRelease(m->dev);
    g_free(m);
}
