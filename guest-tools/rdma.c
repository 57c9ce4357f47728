/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * GPUDirect RDMA checks through rdma-core's libibverbs, loaded at run time
 * so that the tool starts without rdma-core: every device and port, a
 * host-memory RDMA write loopback (the path that must work regardless),
 * then GPU memory (allocated first) registered by dma-buf, else by peer
 * memory, and RDMA writes into it and out of it, checked at the far end.
 */
#include <dlfcn.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <string.h>
#include <unistd.h>

#include "verify.h"

/* The libibverbs entry points used here (the header's inline helpers
 * call through the device's own ops and need none of these). */
#define IBV_APIS(X)                                                         \
    X(ibv_get_device_list) X(ibv_free_device_list) X(ibv_get_device_name)   \
    X(ibv_open_device) X(ibv_close_device) X(ibv_query_device)              \
    X(ibv_query_gid) X(ibv_alloc_pd) X(ibv_dealloc_pd) X(ibv_create_cq)     \
    X(ibv_destroy_cq) X(ibv_create_qp) X(ibv_destroy_qp) X(ibv_modify_qp)   \
    X(ibv_reg_mr) X(ibv_reg_dmabuf_mr) X(ibv_dereg_mr) X(ibv_wc_status_str)

static struct {
#define IBV_FIELD(name) __typeof__(&name) name;
    IBV_APIS(IBV_FIELD)
    int (*query_port)(struct ibv_context *, uint8_t, void *);
} V;

static bool verbs_load(GError **errp)
{
    void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);

    if (!h) {
        g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND,
                    "libibverbs not loaded (rdma-core not installed?): %s",
                    dlerror());
        return false;
    }
#define IBV_RESOLVE(name)                                                   \
    if (!(V.name = (__typeof__(V.name))dlsym(h, #name))) {                  \
        g_set_error(errp, GP_ERROR, GP_ERROR_UNSUPPORTED,                   \
                    "libibverbs lacks " #name);                             \
        return false;                                                       \
    }
    IBV_APIS(IBV_RESOLVE)
    V.query_port = (__typeof__(V.query_port))dlsym(h, "ibv_query_port");
    return true;
}

/* ibv_query_port as the header's inline does it, through the symbol. */
static int query_port(struct ibv_context *ctx, uint8_t port,
                      struct ibv_port_attr *attr)
{
    struct verbs_context *vctx = verbs_get_ctx_op(ctx, query_port);

    if (vctx) {
        return vctx->query_port(ctx, port, attr, sizeof(*attr));
    }
    memset(attr, 0, sizeof(*attr));
    return V.query_port ? V.query_port(ctx, port, attr) : ENOSYS;
}

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
        V.ibv_destroy_qp(l->qp);
    }
    if (l->cq) {
        V.ibv_destroy_cq(l->cq);
    }
    if (l->pd) {
        V.ibv_dealloc_pd(l->pd);
    }
    if (l->ctx) {
        V.ibv_close_device(l->ctx);
    }
}

#define FAIL(...) do {                                                     \
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, __VA_ARGS__);            \
        return false;                                                     \
    } while (0)

/* An RC queue pair connected to itself on @port. */
static bool loop_open(Loop *l, struct ibv_device *dev, uint8_t port,
                      GError **errp)
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
    if (!(l->ctx = V.ibv_open_device(dev))) {
        FAIL("ibv_open_device: %s", g_strerror(errno));
    }
    if (query_port(l->ctx, port, &pattr)) {
        FAIL("ibv_query_port %u: %s", port, g_strerror(errno));
    }
    for (i = 0; i < pattr.gid_tbl_len && i < 16; i++) {
        if (!V.ibv_query_gid(l->ctx, port, i, &gid) &&
            (gid.global.subnet_prefix || gid.global.interface_id)) {
            gid_index = i;
            break;
        }
    }
    if (!(l->pd = V.ibv_alloc_pd(l->ctx))) {
        FAIL("ibv_alloc_pd: %s", g_strerror(errno));
    }
    if (!(l->cq = V.ibv_create_cq(l->ctx, 8, NULL, NULL, 0))) {
        FAIL("ibv_create_cq: %s", g_strerror(errno));
    }
    init.send_cq = init.recv_cq = l->cq;
    if (!(l->qp = V.ibv_create_qp(l->pd, &init))) {
        FAIL("ibv_create_qp: %s", g_strerror(errno));
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.port_num = port;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE |
                        IBV_ACCESS_REMOTE_READ;
    if (V.ibv_modify_qp(l->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
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
    if (V.ibv_modify_qp(l->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
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
    if (V.ibv_modify_qp(l->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
                      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                      IBV_QP_MAX_QP_RD_ATOMIC)) {
        FAIL("ibv_modify_qp RTS: %s", g_strerror(errno));
    }
    return true;
}

/* RDMA WRITE @src_mr -> (@dst_addr, @rkey) and wait for its completion. */
static bool loop_write(Loop *l, struct ibv_mr *src_mr, uint64_t dst_addr,
                       uint32_t rkey, GError **errp)
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
        FAIL("RDMA write completed with %s", V.ibv_wc_status_str(wc.status));
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

/* errno values that mean "this device or kernel has no such path". */
static bool not_supported(int err)
{
    return err == EOPNOTSUPP || err == ENOTSUP || err == ENOSYS ||
           err == EPROTONOSUPPORT;
}

/*
 * GPU memory for RDMA: allocated first, then registered by dma-buf, else
 * by peer memory (nvidia-peermem); then an RDMA write into it and one out
 * of it, each checked at its destination.
 */
static void check_gpu(VerifyReport *r, VerifyRdma *out, Loop *l,
                      struct ibv_mr *host_src, struct ibv_mr *host_dst)
{
    const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                       IBV_ACCESS_REMOTE_READ;
    g_autofree uint8_t *back = g_malloc0(RDMA_BYTES);
    g_autoptr(GError) err = NULL;
    VerifyGpuMem *mem = NULL;
    unsigned long long gptr;
    struct ibv_mr *mr = NULL;
    int ordinal = -1, fd;
    guint i;
    long bad;

    out->dmabuf = out->peermem = out->gpu_write = out->gpu_read =
        CHECK_UNTESTABLE;
    for (i = 0; i < r->gpus->len && ordinal < 0; i++) {
        ordinal = g_array_index(r->gpus, VerifyGpu, i).cuda_index;
    }
    if (ordinal < 0) {
        g_snprintf(out->why, sizeof(out->why), "no GPU usable through CUDA%s%s",
                   r->cuda_status ? ": " : "",
                   r->cuda_status ? r->cuda_status : "");
        r->untested = true;
        return;
    }
    mem = verify_gpu_mem_new(ordinal, RDMA_BYTES, &err);
    if (!mem) {
        g_snprintf(out->why, sizeof(out->why), "%s", err->message);
        r->untested = true;
        return;
    }
    gptr = verify_gpu_mem_ptr(mem);
    fd = verify_gpu_mem_dmabuf(mem, &err);
    if (fd < 0) {
        out->dmabuf = g_error_matches(err, GP_ERROR, GP_ERROR_UNSUPPORTED) ?
                      CHECK_UNTESTABLE : CHECK_FAILED;
        g_snprintf(out->why, sizeof(out->why), "dma-buf: %s", err->message);
        g_clear_error(&err);
    } else {
        mr = V.ibv_reg_dmabuf_mr(l->pd, 0, RDMA_BYTES, gptr, fd, access);
        if (mr) {
            out->dmabuf = CHECK_OK;
        } else {
            int e = errno;

            /* Only a missing path is "not testable"; EINVAL or EFAULT
             * from a broken P2P mapping is a failure. */
            out->dmabuf = not_supported(e) ? CHECK_UNTESTABLE : CHECK_FAILED;
            g_snprintf(out->why, sizeof(out->why),
                       "%s cannot register dma-buf GPU memory: %s%s",
                       out->name, g_strerror(e), not_supported(e) ?
                       " (its driver has no dma-buf registration)" : "");
        }
        close(fd);
    }
    if (!mr) {
        if (!peermem_loaded()) {
            out->peermem = CHECK_UNTESTABLE;
        } else if ((mr = (V.ibv_reg_mr)(l->pd, (void *)(uintptr_t)gptr,
                                        RDMA_BYTES, access))) {
            out->peermem = CHECK_OK;
        } else {
            out->peermem = CHECK_FAILED;
            g_snprintf(out->why, sizeof(out->why),
                       "nvidia-peermem loaded but ibv_reg_mr on GPU memory "
                       "failed: %s", g_strerror(errno));
        }
    }
    if (out->dmabuf == CHECK_FAILED || out->peermem == CHECK_FAILED) {
        r->rdma_broken = true;
    }
    if (!mr) {
        if (out->dmabuf != CHECK_FAILED && out->peermem != CHECK_FAILED) {
            r->untested = true;
        }
        verify_gpu_mem_free(mem);
        return;
    }
    /* Host -> GPU memory, checked in GPU memory. */
    if (!verify_gpu_mem_write(mem, back, &err)) {           /* zeros */
        out->gpu_write = CHECK_FAILED;
        g_snprintf(out->why, sizeof(out->why), "%s", err->message);
    } else {
        fill(host_src->addr, 7);
        if (!loop_write(l, host_src, gptr, mr->rkey, &err)) {
            out->gpu_write = CHECK_FAILED;
            g_snprintf(out->why, sizeof(out->why), "into GPU memory: %s",
                       err->message);
        } else if (!verify_gpu_mem_read(mem, back, &err)) {
            out->gpu_write = CHECK_FAILED;
            g_snprintf(out->why, sizeof(out->why), "%s", err->message);
        } else if ((bad = first_bad(back, 7)) >= 0) {
            out->gpu_write = CHECK_FAILED;
            g_snprintf(out->why, sizeof(out->why), "RDMA write into GPU "
                       "memory: first bad byte at offset %ld", bad);
        } else {
            out->gpu_write = CHECK_OK;
        }
    }
    /* GPU memory -> host: the NIC reads GPU memory; checked in the host. */
    fill(back, 11);
    memset(host_dst->addr, 0, RDMA_BYTES);
    g_clear_error(&err);
    if (!verify_gpu_mem_write(mem, back, &err)) {
        out->gpu_read = CHECK_FAILED;
        g_snprintf(out->why, sizeof(out->why), "%s", err->message);
    } else if (!loop_write(l, mr, (uintptr_t)host_dst->addr, host_dst->rkey,
                           &err)) {
        out->gpu_read = CHECK_FAILED;
        g_snprintf(out->why, sizeof(out->why), "out of GPU memory: %s",
                   err->message);
    } else if ((bad = first_bad(host_dst->addr, 11)) >= 0) {
        out->gpu_read = CHECK_FAILED;
        g_snprintf(out->why, sizeof(out->why), "RDMA from GPU memory: first "
                   "bad byte at offset %ld", bad);
    } else {
        out->gpu_read = CHECK_OK;
    }
    if (out->gpu_write == CHECK_FAILED || out->gpu_read == CHECK_FAILED) {
        r->rdma_broken = true;
    }
    V.ibv_dereg_mr(mr);
    verify_gpu_mem_free(mem);
}

static void check_device(VerifyReport *r, struct ibv_device *dev,
                         VerifyRdma *out)
{
    struct ibv_context *ctx = V.ibv_open_device(dev);
    struct ibv_device_attr da;
    g_autofree uint8_t *src = NULL, *dst = NULL;
    struct ibv_mr *smr = NULL, *dmr = NULL;
    g_autoptr(GError) err = NULL;
    Loop l = { 0 };
    uint8_t port, active = 0;
    long bad;

    g_strlcpy(out->name, V.ibv_get_device_name(dev), sizeof(out->name));
    if (!ctx || V.ibv_query_device(ctx, &da)) {
        out->host_mr = CHECK_FAILED;
        g_snprintf(out->why, sizeof(out->why), "cannot open or query: %s",
                   g_strerror(errno));
        r->rdma_broken = true;
        if (ctx) {
            V.ibv_close_device(ctx);
        }
        return;
    }
    for (port = 1; port <= da.phys_port_cnt; port++) {
        struct ibv_port_attr pa;

        if (!query_port(ctx, port, &pa) && pa.state == IBV_PORT_ACTIVE) {
            out->ports_active++;
            if (!active) {
                active = port;
            }
        }
    }
    V.ibv_close_device(ctx);
    if (!active) {
        out->host_mr = out->host_write = CHECK_UNTESTABLE;
        g_snprintf(out->why, sizeof(out->why), "no active port");
        r->untested = true;
        return;
    }
    src = g_malloc(RDMA_BYTES);
    dst = g_malloc0(RDMA_BYTES);
    if (!loop_open(&l, dev, active, &err)) {
        out->host_mr = CHECK_FAILED;
        g_strlcpy(out->why, err->message, sizeof(out->why));
        r->rdma_broken = true;
        goto out;
    }
    smr = (V.ibv_reg_mr)(l.pd, src, RDMA_BYTES, IBV_ACCESS_LOCAL_WRITE);
    dmr = (V.ibv_reg_mr)(l.pd, dst, RDMA_BYTES, IBV_ACCESS_LOCAL_WRITE |
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
    if (!loop_write(&l, smr, (uintptr_t)dst, dmr->rkey, &err)) {
        out->host_write = CHECK_FAILED;
        g_strlcpy(out->why, err->message, sizeof(out->why));
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
    check_gpu(r, out, &l, smr, dmr);
out:
    if (smr) {
        V.ibv_dereg_mr(smr);
    }
    if (dmr) {
        V.ibv_dereg_mr(dmr);
    }
    loop_close(&l);
}

/* The PCI function under a verbs device, "" for a virtual one (rxe). */
static void rdma_bdf(const VerifyOptions *o, const char *name, char *bdf,
                     gsize len)
{
    g_autofree char *link = g_strdup_printf("%s/sys/class/infiniband/%s/"
                                            "device", o->sysfs_root ?
                                            o->sysfs_root : "", name);
    g_autofree char *target = g_file_read_link(link, NULL);
    g_autofree char *base = target ? g_path_get_basename(target) : NULL;

    g_strlcpy(bdf, base && strchr(base, ':') ? base : "", len);
}

void verify_rdma(const VerifyOptions *o, VerifyReport *r)
{
    g_autoptr(GError) err = NULL;
    struct ibv_device **list;
    int n = 0, i;
    guint j;

    if (!verbs_load(&err)) {
        r->rdma_status = g_strdup(err->message);
        r->untested = true;
        return;
    }
    list = V.ibv_get_device_list(&n);
    if (!list) {
        r->rdma_status = g_strdup_printf("ibv_get_device_list: %s",
                                         g_strerror(errno));
        r->untested = true;
        return;
    }
    if (n == 0) {
        /* Nothing tested is not "all good": --skip-rdma says it is meant. */
        r->rdma_status = g_strdup("no RDMA device (use --skip-rdma where "
                                  "none is expected)");
        r->untested = true;
    }
    for (i = 0; i < n; i++) {
        VerifyRdma d = { 0 };

        check_device(r, list[i], &d);
        rdma_bdf(o, d.name, d.bdf, sizeof(d.bdf));
        for (j = 0; j < r->nics->len; j++) {
            VerifyNic *nic = &g_array_index(r->nics, VerifyNic, j);

            if (d.bdf[0] && !g_ascii_strcasecmp(nic->bdf, d.bdf)) {
                g_strlcpy(nic->rdma_device, d.name, sizeof(nic->rdma_device));
                nic->gpu_rdma_ok = d.gpu_write == CHECK_OK &&
                                   d.gpu_read == CHECK_OK;
            }
        }
        g_array_append_val(r->rdma, d);
    }
    V.ibv_free_device_list(list);
    for (j = 0; j < r->nics->len; j++) {
        const VerifyNic *nic = &g_array_index(r->nics, VerifyNic, j);

        if (!nic->rdma_device[0]) {
            r->untested = true;
            verify_note(r, "NIC %s (%04x:%04x) is on PCI but no RDMA device "
                        "of verbs sits on it (RDMA driver not loaded?)",
                        nic->bdf, nic->vendor, nic->device);
        }
    }
}
