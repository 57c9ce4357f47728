/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * GPUDirect RDMA checks through rdma-core's libibverbs: every device and
 * port, a host-memory RDMA write loopback (the path that must work
 * regardless), then GPU memory registered by dma-buf, else by peer memory,
 * written by RDMA and checked in GPU memory.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "verify.h"

#define RDMA_BYTES 65536

typedef struct {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    uint8_t port;
} Loop;

static void loop_close(Loop *l)
{
    if (l->qp) {
        ibv_destroy_qp(l->qp);
    }
    if (l->cq) {
        ibv_destroy_cq(l->cq);
    }
    if (l->pd) {
        ibv_dealloc_pd(l->pd);
    }
    if (l->ctx) {
        ibv_close_device(l->ctx);
    }
}

#define FAIL(...) do { g_snprintf(why, whylen, __VA_ARGS__); return false; } \
                  while (0)

/* An RC queue pair connected to itself on @port. */
static bool loop_open(Loop *l, struct ibv_device *dev, uint8_t port,
                      char *why, size_t whylen)
{
    struct ibv_qp_init_attr init = {
        .qp_type = IBV_QPT_RC,
        .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
                 .max_recv_sge = 1 },
    };
    struct ibv_port_attr pattr;
    struct ibv_qp_attr a;
    union ibv_gid gid;
    int gid_index = -1, i;

    l->port = port;
    if (!(l->ctx = ibv_open_device(dev))) {
        FAIL("ibv_open_device: %s", g_strerror(errno));
    }
    if (ibv_query_port(l->ctx, port, &pattr)) {
        FAIL("ibv_query_port %u: %s", port, g_strerror(errno));
    }
    for (i = 0; i < pattr.gid_tbl_len && i < 16; i++) {
        if (!ibv_query_gid(l->ctx, port, i, &gid) &&
            (gid.global.subnet_prefix || gid.global.interface_id)) {
            gid_index = i;
            break;
        }
    }
    if (!(l->pd = ibv_alloc_pd(l->ctx))) {
        FAIL("ibv_alloc_pd: %s", g_strerror(errno));
    }
    if (!(l->cq = ibv_create_cq(l->ctx, 8, NULL, NULL, 0))) {
        FAIL("ibv_create_cq: %s", g_strerror(errno));
    }
    init.send_cq = init.recv_cq = l->cq;
    if (!(l->qp = ibv_create_qp(l->pd, &init))) {
        FAIL("ibv_create_qp: %s", g_strerror(errno));
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.port_num = port;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE |
                        IBV_ACCESS_REMOTE_READ;
    if (ibv_modify_qp(l->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                      IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
        FAIL("ibv_modify_qp INIT: %s", g_strerror(errno));
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = MIN(pattr.active_mtu, IBV_MTU_1024);
    a.dest_qp_num = l->qp->qp_num;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.port_num = port;
    a.ah_attr.dlid = pattr.lid;
    if (gid_index >= 0) {
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.dgid = gid;
        a.ah_attr.grh.sgid_index = gid_index;
        a.ah_attr.grh.hop_limit = 1;
    } else if (pattr.link_layer == IBV_LINK_LAYER_ETHERNET) {
        FAIL("port %u has no GID (is the netdev up with an address?)", port);
    }
    if (ibv_modify_qp(l->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
        FAIL("ibv_modify_qp RTR: %s", g_strerror(errno));
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    if (ibv_modify_qp(l->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
                      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                      IBV_QP_MAX_QP_RD_ATOMIC)) {
        FAIL("ibv_modify_qp RTS: %s", g_strerror(errno));
    }
    return true;
}

/* RDMA WRITE @src_mr -> (@dst_addr, @rkey) and wait for its completion. */
static bool loop_write(Loop *l, struct ibv_mr *src_mr, uint64_t dst_addr,
                       uint32_t rkey, char *why, size_t whylen)
{
    struct ibv_sge sge = {
        .addr = (uintptr_t)src_mr->addr, .length = RDMA_BYTES,
        .lkey = src_mr->lkey,
    };
    struct ibv_send_wr wr = {
        .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
        .send_flags = IBV_SEND_SIGNALED,
        .wr.rdma = { .remote_addr = dst_addr, .rkey = rkey },
    }, *bad;
    struct ibv_wc wc;
    gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
    int n;

    if (ibv_post_send(l->qp, &wr, &bad)) {
        FAIL("ibv_post_send: %s", g_strerror(errno));
    }
    while ((n = ibv_poll_cq(l->cq, 1, &wc)) == 0) {
        if (g_get_monotonic_time() > deadline) {
            FAIL("no completion of the RDMA write within 5 s");
        }
        g_usleep(100);
    }
    if (n < 0) {
        FAIL("ibv_poll_cq failed");
    }
    if (wc.status != IBV_WC_SUCCESS) {
        FAIL("RDMA write completed with %s", ibv_wc_status_str(wc.status));
    }
    return true;
}

static void fill(uint8_t *buf, unsigned seed)
{
    size_t i;

    for (i = 0; i < RDMA_BYTES; i++) {
        buf[i] = (uint8_t)(i * 131 + seed);
    }
}

static long first_bad(const uint8_t *buf, unsigned seed)
{
    size_t i;

    for (i = 0; i < RDMA_BYTES; i++) {
        if (buf[i] != (uint8_t)(i * 131 + seed)) {
            return (long)i;
        }
    }
    return -1;
}

static bool peermem_loaded(void)
{
    return g_file_test("/sys/kernel/mm/memory_peers/nv_mem/version",
                       G_FILE_TEST_EXISTS) ||
           g_file_test("/sys/module/nvidia_peermem/version",
                       G_FILE_TEST_EXISTS);
}

static void check_gpu_write(const VerifyReport *r, VerifyRdma *out, Loop *l,
                            struct ibv_mr *src)
{
    const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    g_autofree uint8_t *back = g_malloc0(RDMA_BYTES);
    g_autofree char *why = NULL;
    unsigned long long gptr = 0;
    struct ibv_mr *mr = NULL;
    int ordinal = -1, fd;
    guint i;
    long bad;

    for (i = 0; i < r->gpus->len && ordinal < 0; i++) {
        ordinal = g_array_index(r->gpus, VerifyGpu, i).cuda_index;
    }
    if (ordinal < 0) {
        out->dmabuf = out->peermem = out->gpu_write = CHECK_UNTESTABLE;
        g_snprintf(out->why, sizeof(out->why), "no GPU usable through CUDA%s%s",
                   r->cuda_status ? ": " : "",
                   r->cuda_status ? r->cuda_status : "");
        return;
    }
    fd = verify_cuda_dmabuf(ordinal, RDMA_BYTES, &gptr, &why);
    if (fd < 0) {
        out->dmabuf = CHECK_UNTESTABLE;
        g_snprintf(out->why, sizeof(out->why), "dma-buf: %s", why);
    } else {
        mr = ibv_reg_dmabuf_mr(l->pd, 0, RDMA_BYTES, gptr, fd, access);
        if (!mr) {
            out->dmabuf = CHECK_UNTESTABLE;
            g_snprintf(out->why, sizeof(out->why),
                       "%s cannot register dma-buf GPU memory: %s%s",
                       out->name, g_strerror(errno),
                       errno == EOPNOTSUPP ?
                       " (its driver has no dma-buf registration)" : "");
        } else {
            out->dmabuf = CHECK_OK;
        }
        close(fd);
    }
    if (!mr && gptr) {
        if (!peermem_loaded()) {
            out->peermem = CHECK_UNTESTABLE;
        } else if ((mr = ibv_reg_mr(l->pd, (void *)(uintptr_t)gptr,
                                    RDMA_BYTES, access))) {
            out->peermem = CHECK_OK;
        } else {
            out->peermem = CHECK_FAILED;
            g_snprintf(out->why, sizeof(out->why),
                       "nvidia-peermem loaded but ibv_reg_mr on GPU memory "
                       "failed: %s", g_strerror(errno));
        }
    } else if (!gptr) {
        out->peermem = CHECK_UNTESTABLE;
    }
    if (!mr) {
        out->gpu_write = CHECK_UNTESTABLE;
        return;
    }
    verify_cuda_write(ordinal, gptr, back, RDMA_BYTES);     /* zeros */
    fill(src->addr, 7);
    {
        char w[160] = "";

        if (!loop_write(l, src, gptr, mr->rkey, w, sizeof(w)) ||
            !verify_cuda_read(ordinal, gptr, back, RDMA_BYTES)) {
            out->gpu_write = CHECK_FAILED;
            g_snprintf(out->why, sizeof(out->why), "GPU memory: %s", w);
        } else if ((bad = first_bad(back, 7)) >= 0) {
            out->gpu_write = CHECK_FAILED;
            g_snprintf(out->why, sizeof(out->why), "RDMA write into GPU "
                       "memory: first bad byte at offset %ld", bad);
        } else {
            out->gpu_write = CHECK_OK;
        }
    }
    ibv_dereg_mr(mr);
}

static void check_device(VerifyReport *r, struct ibv_device *dev,
                         VerifyRdma *out)
{
    struct ibv_context *ctx = ibv_open_device(dev);
    struct ibv_device_attr da;
    g_autofree uint8_t *src = NULL, *dst = NULL;
    struct ibv_mr *smr = NULL, *dmr = NULL;
    Loop l = { 0 };
    uint8_t port, active = 0;
    long bad;

    g_strlcpy(out->name, ibv_get_device_name(dev), sizeof(out->name));
    g_strlcpy(out->transport,
              dev->transport_type == IBV_TRANSPORT_IB ? "ib" : "other",
              sizeof(out->transport));
    if (!ctx || ibv_query_device(ctx, &da)) {
        out->host_mr = CHECK_FAILED;
        g_snprintf(out->why, sizeof(out->why), "cannot open or query: %s",
                   g_strerror(errno));
        r->rdma_broken = true;
        if (ctx) {
            ibv_close_device(ctx);
        }
        return;
    }
    for (port = 1; port <= da.phys_port_cnt; port++) {
        struct ibv_port_attr pa;

        if (!ibv_query_port(ctx, port, &pa) && pa.state == IBV_PORT_ACTIVE) {
            out->ports_active++;
            if (!active) {
                active = port;
            }
        }
    }
    ibv_close_device(ctx);
    if (!active) {
        out->host_mr = out->host_write = CHECK_UNTESTABLE;
        g_snprintf(out->why, sizeof(out->why), "no active port");
        r->untested = true;
        return;
    }
    src = g_malloc(RDMA_BYTES);
    dst = g_malloc0(RDMA_BYTES);
    if (!loop_open(&l, dev, active, out->why, sizeof(out->why))) {
        out->host_mr = CHECK_FAILED;
        r->rdma_broken = true;
        goto out;
    }
    smr = ibv_reg_mr(l.pd, src, RDMA_BYTES, IBV_ACCESS_LOCAL_WRITE);
    dmr = ibv_reg_mr(l.pd, dst, RDMA_BYTES, IBV_ACCESS_LOCAL_WRITE |
                     IBV_ACCESS_REMOTE_WRITE);
    if (!smr || !dmr) {
        out->host_mr = CHECK_FAILED;
        g_snprintf(out->why, sizeof(out->why), "ibv_reg_mr on host memory: "
                   "%s", g_strerror(errno));
        r->rdma_broken = true;
        goto out;
    }
    out->host_mr = CHECK_OK;
    fill(src, 3);
    if (!loop_write(&l, smr, (uintptr_t)dst, dmr->rkey, out->why,
                    sizeof(out->why))) {
        out->host_write = CHECK_FAILED;
        r->rdma_broken = true;
        goto out;
    }
    if ((bad = first_bad(dst, 3)) >= 0) {
        out->host_write = CHECK_FAILED;
        g_snprintf(out->why, sizeof(out->why), "RDMA write into host memory: "
                   "first bad byte at offset %ld", bad);
        r->rdma_broken = true;
        goto out;
    }
    out->host_write = CHECK_OK;
    check_gpu_write(r, out, &l, smr);
    if (out->gpu_write == CHECK_FAILED || out->peermem == CHECK_FAILED) {
        r->rdma_broken = true;
    }
out:
    if (smr) {
        ibv_dereg_mr(smr);
    }
    if (dmr) {
        ibv_dereg_mr(dmr);
    }
    loop_close(&l);
}

void verify_rdma(const VerifyOptions *o, VerifyReport *r)
{
    struct ibv_device **list;
    int n = 0, i;

    (void)o;
    list = ibv_get_device_list(&n);
    if (!list) {
        r->rdma_status = g_strdup_printf("ibv_get_device_list: %s",
                                         g_strerror(errno));
        return;
    }
    if (n == 0) {
        r->rdma_status = g_strdup("no RDMA device");
    }
    for (i = 0; i < n; i++) {
        VerifyRdma d = { 0 };

        check_device(r, list[i], &d);
        g_array_append_val(r->rdma, d);
    }
    ibv_free_device_list(list);
}
