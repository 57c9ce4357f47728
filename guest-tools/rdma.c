/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * GPUDirect RDMA checks through rdma-core's libibverbs, loaded at run time
 * so that the tool starts without rdma-core: every device and every active
 * port, each over an RC queue pair connected to itself; host memory by
 * RDMA WRITE and RDMA READ (the path that must work regardless) on every
 * port; then every GPU CUDA sees on every port, each GPU on its paired
 * NIC (its nearest, verify_pci()'s VerifyNicPath) first, then on the
 * others: its memory registered as perftest does (dma-buf of the
 * page-aligned range with the offset, else ibv_reg_mr on the device
 * pointer where nvidia-peermem is loaded, else "not testable") and moved
 * into and out of it by WRITE and by READ, checked at the far end.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
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

/*
 * One RDMA operation (@op: IBV_WR_RDMA_WRITE or IBV_WR_RDMA_READ) of
 * RDMA_BYTES between local (@lmr at @laddr) and remote (@raddr, @rkey)
 * memory, waited for.
 */
static bool xfer(Loop *l, enum ibv_wr_opcode op, struct ibv_mr *lmr,
                 uint64_t laddr, uint64_t raddr, uint32_t rkey, GError **errp)
{
    const char *what = op == IBV_WR_RDMA_READ ? "read" : "write";
    struct ibv_sge sge = {
        .addr = laddr, .length = RDMA_BYTES, .lkey = lmr->lkey,
    };
    struct ibv_send_wr wr = {
        .sg_list = &sge, .num_sge = 1, .opcode = op,
        .send_flags = IBV_SEND_SIGNALED,
        .wr.rdma = { .remote_addr = raddr, .rkey = rkey },
    }, *bad;
    struct ibv_wc wc;
    gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
    int n;

    if (ibv_post_send(l->qp, &wr, &bad)) {
        FAIL("ibv_post_send: %s", g_strerror(errno));
    }
    while ((n = ibv_poll_cq(l->cq, 1, &wc)) == 0) {
        if (g_get_monotonic_time() > deadline) {
            FAIL("no completion of the RDMA %s within 5 s", what);
        }
        g_usleep(100);
    }
    if (n < 0) {
        FAIL("ibv_poll_cq failed");
    }
    if (wc.status != IBV_WC_SUCCESS) {
        FAIL("RDMA %s completed with %s", what,
             V.ibv_wc_status_str(wc.status));
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

/* nvidia-peermem (or MLNX_OFED's nv_mem peer client) under @root. */
static bool peermem_loaded(const char *root)
{
    g_autofree char *a = g_build_filename(root, "sys/kernel/mm/memory_peers/"
                                          "nv_mem/version", NULL);
    g_autofree char *b = g_build_filename(root, "sys/module/nvidia_peermem/"
                                          "version", NULL);

    return g_file_test(a, G_FILE_TEST_EXISTS) ||
           g_file_test(b, G_FILE_TEST_EXISTS);
}

/* errno values that mean "this device or kernel has no such path". */
static bool not_supported(int err)
{
    return err == EOPNOTSUPP || err == ENOTSUP || err == ENOSYS ||
           err == EPROTONOSUPPORT;
}

/* Failed outranks not testable, which outranks ok, which outranks not
 * run: a port's GPU state is its worst GPU's. */
static void worst(CheckState *into, CheckState s)
{
    static const int rank[] = {
        [CHECK_NOT_RUN] = 0, [CHECK_OK] = 1, [CHECK_UNTESTABLE] = 2,
        [CHECK_FAILED] = 3,
    };

    if (rank[s] > rank[*into]) {
        *into = s;
    }
}

/* The first reason wins, except that the first failure replaces a
 * missing path: the reason names what went wrong first. */
static void why_v(VerifyRdma *out, bool failure, const char *fmt, va_list ap)
    G_GNUC_PRINTF(3, 0);

static void why_v(VerifyRdma *out, bool failure, const char *fmt, va_list ap)
{
    if (out->why[0] && (out->why_failed || !failure)) {
        return;
    }
    g_vsnprintf(out->why, sizeof(out->why), fmt, ap);
    out->why_failed = failure;
}

/* Why something failed. */
static void why(VerifyRdma *out, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static void why(VerifyRdma *out, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    why_v(out, true, fmt, ap);
    va_end(ap);
}

/* Why something could not be tested. */
static void why_not(VerifyRdma *out, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);

static void why_not(VerifyRdma *out, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    why_v(out, false, fmt, ap);
    va_end(ap);
}

/* Host memory of one port: the two buffers every check moves through. */
typedef struct {
    uint8_t *src, *dst;
    struct ibv_mr *smr, *dmr;
} HostBufs;

/* What one GPU's memory gave on one port. */
typedef struct {
    CheckState dmabuf, peermem, write, read;
} GpuResult;

/*
 * GPU memory registered as perftest does: dma-buf of the page-aligned
 * range at its offset, else ibv_reg_mr on the device pointer through
 * nvidia-peermem (only where it is loaded: without it that call fails
 * for want of the module, not of P2P), else NULL and not testable.
 */
static struct ibv_mr *reg_gpu(Loop *l, VerifyGpuMem *mem, VerifyRdma *out,
                              const char *root, GpuResult *res)
{
    const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                       IBV_ACCESS_REMOTE_READ;
    unsigned long long gptr = verify_gpu_mem_ptr(mem);
    g_autoptr(GError) err = NULL;
    struct ibv_mr *mr = NULL;
    guint64 offset = 0;
    int fd = verify_gpu_mem_dmabuf(mem, sysconf(_SC_PAGESIZE), &offset, &err);

    if (fd < 0) {
        res->dmabuf = g_error_matches(err, GP_ERROR, GP_ERROR_UNSUPPORTED) ?
                      CHECK_UNTESTABLE : CHECK_FAILED;
        (res->dmabuf == CHECK_FAILED ? why : why_not)(out, "dma-buf: %s",
                                                      err->message);
    } else {
        mr = V.ibv_reg_dmabuf_mr(l->pd, offset, RDMA_BYTES, gptr, fd,
                                 access);
        if (mr) {
            res->dmabuf = CHECK_OK;
        } else {
            int e = errno;

            /* Only a missing path is "not testable"; EINVAL or EFAULT
             * from a broken P2P mapping is a failure. */
            res->dmabuf = not_supported(e) ? CHECK_UNTESTABLE : CHECK_FAILED;
            (not_supported(e) ? why_not : why)(out, "%s cannot register dma-buf GPU memory: %s%s",
                out->name, g_strerror(e), not_supported(e) ?
                " (its driver has no dma-buf registration)" : "");
        }
        close(fd);
    }
    if (mr) {
        return mr;
    }
    if (!peermem_loaded(root)) {
        res->peermem = CHECK_UNTESTABLE;
        why_not(out, "no dma-buf registration and nvidia-peermem is not "
                "loaded: GPU memory cannot be registered");
    } else if ((mr = (V.ibv_reg_mr)(l->pd, (void *)(uintptr_t)gptr,
                                    RDMA_BYTES, access))) {
        res->peermem = CHECK_OK;
    } else {
        res->peermem = CHECK_FAILED;
        why(out, "nvidia-peermem loaded but ibv_reg_mr on GPU memory "
            "failed: %s", g_strerror(errno));
    }
    return mr;
}

/* @op into GPU memory from host memory, checked in GPU memory. */
static bool into_gpu(Loop *l, enum ibv_wr_opcode op, VerifyGpuMem *mem,
                     struct ibv_mr *gmr, HostBufs *h, unsigned seed,
                     VerifyRdma *out)
{
    g_autofree uint8_t *back = g_malloc0(RDMA_BYTES);
    unsigned long long gptr = verify_gpu_mem_ptr(mem);
    g_autoptr(GError) err = NULL;
    bool ok;
    long bad;

    fill(h->src, seed);
    if (!verify_gpu_mem_write(mem, back, &err)) {           /* zeros */
        why(out, "%s", err->message);
        return false;
    }
    /* WRITE: the host buffer is the local source, GPU memory the remote
     * sink. READ: GPU memory is the local sink, the host buffer remote. */
    ok = op == IBV_WR_RDMA_WRITE ?
         xfer(l, op, h->smr, (uintptr_t)h->src, gptr, gmr->rkey, &err) :
         xfer(l, op, gmr, gptr, (uintptr_t)h->src, h->smr->rkey, &err);
    if (!ok || !verify_gpu_mem_read(mem, back, &err)) {
        why(out, "into GPU memory: %s", err->message);
        return false;
    }
    if ((bad = first_bad(back, seed)) >= 0) {
        why(out, "RDMA %s into GPU memory: first bad byte at offset %ld",
            op == IBV_WR_RDMA_READ ? "read" : "write", bad);
        return false;
    }
    return true;
}

/* @op out of GPU memory into host memory, checked in host memory. */
static bool out_of_gpu(Loop *l, enum ibv_wr_opcode op, VerifyGpuMem *mem,
                       struct ibv_mr *gmr, HostBufs *h, unsigned seed,
                       VerifyRdma *out)
{
    g_autofree uint8_t *pattern = g_malloc(RDMA_BYTES);
    unsigned long long gptr = verify_gpu_mem_ptr(mem);
    g_autoptr(GError) err = NULL;
    bool ok;
    long bad;

    fill(pattern, seed);
    memset(h->dst, 0, RDMA_BYTES);
    if (!verify_gpu_mem_write(mem, pattern, &err)) {
        why(out, "%s", err->message);
        return false;
    }
    ok = op == IBV_WR_RDMA_WRITE ?
         xfer(l, op, gmr, gptr, (uintptr_t)h->dst, h->dmr->rkey, &err) :
         xfer(l, op, h->dmr, (uintptr_t)h->dst, gptr, gmr->rkey, &err);
    if (!ok) {
        why(out, "out of GPU memory: %s", err->message);
        return false;
    }
    if ((bad = first_bad(h->dst, seed)) >= 0) {
        why(out, "RDMA %s from GPU memory: first bad byte at offset %ld",
            op == IBV_WR_RDMA_READ ? "read" : "write", bad);
        return false;
    }
    return true;
}

/* One GPU's memory on one port: registered, then WRITE and READ into
 * and out of it. */
static void check_gpu(VerifyRdma *out, Loop *l, HostBufs *h, int ordinal,
                      const char *root, GpuResult *res)
{
    g_autoptr(GError) err = NULL;
    VerifyGpuMem *mem = verify_gpu_mem_new(ordinal, RDMA_BYTES, &err);
    struct ibv_mr *gmr;
    bool in, outw;

    *res = (GpuResult) { CHECK_UNTESTABLE, CHECK_UNTESTABLE,
                         CHECK_UNTESTABLE, CHECK_UNTESTABLE };
    if (!mem) {
        why_not(out, "CUDA GPU %d: %s", ordinal, err->message);
        return;
    }
    gmr = reg_gpu(l, mem, out, root, res);
    if (gmr) {
        in = into_gpu(l, IBV_WR_RDMA_WRITE, mem, gmr, h, 7, out);
        outw = out_of_gpu(l, IBV_WR_RDMA_WRITE, mem, gmr, h, 11, out);
        res->write = in && outw ? CHECK_OK : CHECK_FAILED;
        in = into_gpu(l, IBV_WR_RDMA_READ, mem, gmr, h, 13, out);
        outw = out_of_gpu(l, IBV_WR_RDMA_READ, mem, gmr, h, 17, out);
        res->read = in && outw ? CHECK_OK : CHECK_FAILED;
        V.ibv_dereg_mr(gmr);
    }
    verify_gpu_mem_free(mem);
}

/* One GPU's result on one port: kept in the port's list, in the order
 * checked; the port keeps the worst of each state. */
static void record_gpu(VerifyRdma *out, const VerifyRdmaGpu *checked,
                       const GpuResult *res)
{
    VerifyRdmaGpu *g;

    worst(&out->dmabuf, res->dmabuf);
    worst(&out->peermem, res->peermem);
    worst(&out->gpu_write, res->write);
    worst(&out->gpu_read, res->read);
    out->gpus_tested += res->write == CHECK_OK && res->read == CHECK_OK;
    if (out->n_gpus >= G_N_ELEMENTS(out->gpus)) {
        return;
    }
    g = &out->gpus[out->n_gpus++];
    *g = *checked;
    g->dmabuf = res->dmabuf;
    g->peermem = res->peermem;
    g->write = res->write;
    g->read = res->read;
}

/* Host memory both ways on one port: WRITE src -> dst, then READ of src
 * into dst; each checked in dst. */
static bool check_host(Loop *l, HostBufs *h, VerifyRdma *out)
{
    g_autoptr(GError) err = NULL;
    long bad;

    fill(h->src, 3);
    memset(h->dst, 0, RDMA_BYTES);
    if (!xfer(l, IBV_WR_RDMA_WRITE, h->smr, (uintptr_t)h->src,
              (uintptr_t)h->dst, h->dmr->rkey, &err)) {
        out->host_write = CHECK_FAILED;
        why(out, "%s", err->message);
    } else if ((bad = first_bad(h->dst, 3)) >= 0) {
        out->host_write = CHECK_FAILED;
        why(out, "RDMA write into host memory: first bad byte at offset "
            "%ld", bad);
    } else {
        out->host_write = CHECK_OK;
    }
    fill(h->src, 5);
    memset(h->dst, 0, RDMA_BYTES);
    g_clear_error(&err);
    if (!xfer(l, IBV_WR_RDMA_READ, h->dmr, (uintptr_t)h->dst,
              (uintptr_t)h->src, h->smr->rkey, &err)) {
        out->host_read = CHECK_FAILED;
        why(out, "%s", err->message);
    } else if ((bad = first_bad(h->dst, 5)) >= 0) {
        out->host_read = CHECK_FAILED;
        why(out, "RDMA read into host memory: first bad byte at offset "
            "%ld", bad);
    } else {
        out->host_read = CHECK_OK;
    }
    return out->host_write == CHECK_OK && out->host_read == CHECK_OK;
}

/*
 * One active port, open from its host checks until every GPU has been
 * checked on it: the GPU checks run pair by pair across ports.
 */
typedef struct {
    Loop loop;
    HostBufs host;
    guint entry;                /* its VerifyRdma in r->rdma */
    int nic;                    /* its NIC in r->nics, -1 none (rxe) */
    bool ready;                 /* host memory moved both ways */
} PortRun;

static void port_run_close(PortRun *p)
{
    if (p->host.smr) {
        V.ibv_dereg_mr(p->host.smr);
    }
    if (p->host.dmr) {
        V.ibv_dereg_mr(p->host.dmr);
    }
    g_free(p->host.src);
    g_free(p->host.dst);
    loop_close(&p->loop);
    memset(p, 0, sizeof(*p));
}

/* Host memory on one active port of @dev (out->port); @p stays open for
 * the GPU checks where it passed. */
static void check_port_host(struct ibv_device *dev, VerifyRdma *out,
                            PortRun *p)
{
    const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                       IBV_ACCESS_REMOTE_READ;
    g_autoptr(GError) err = NULL;
    HostBufs *h = &p->host;

    if (!loop_open(&p->loop, dev, out->port, &err)) {
        out->host_mr = CHECK_FAILED;
        why(out, "%s", err->message);
        return;
    }
    h->src = g_malloc(RDMA_BYTES);
    h->dst = g_malloc0(RDMA_BYTES);
    h->smr = (V.ibv_reg_mr)(p->loop.pd, h->src, RDMA_BYTES, access);
    h->dmr = (V.ibv_reg_mr)(p->loop.pd, h->dst, RDMA_BYTES, access);
    if (!h->smr || !h->dmr) {
        out->host_mr = CHECK_FAILED;
        why(out, "ibv_reg_mr on host memory: %s", g_strerror(errno));
        return;
    }
    out->host_mr = CHECK_OK;
    p->ready = check_host(&p->loop, h, out);
}

/* The device's active ports (at most 32), and how many it has. */
static unsigned active_ports(struct ibv_device *dev, uint8_t *ports,
                             VerifyRdma *out)
{
    struct ibv_context *ctx = V.ibv_open_device(dev);
    struct ibv_device_attr da;
    unsigned n = 0;

    if (!ctx || V.ibv_query_device(ctx, &da)) {
        out->host_mr = CHECK_FAILED;
        why(out, "cannot open or query: %s", g_strerror(errno));
        if (ctx) {
            V.ibv_close_device(ctx);
        }
        return 0;
    }
    for (unsigned p = 1; p <= da.phys_port_cnt && n < 32; p++) {
        struct ibv_port_attr pa;

        if (!query_port(ctx, p, &pa) && pa.state == IBV_PORT_ACTIVE) {
            ports[n++] = p;
        }
    }
    V.ibv_close_device(ctx);
    return n;
}

/* A port's verdict on the run: failed is broken, not testable untested. */
static void judge_port(VerifyReport *r, const VerifyRdma *d)
{
    const CheckState all[] = {
        d->host_mr, d->host_write, d->host_read, d->dmabuf, d->peermem,
        d->gpu_write, d->gpu_read,
    };
    bool gpu_ok = d->gpu_write == CHECK_OK && d->gpu_read == CHECK_OK;
    bool failed = false;

    for (guint k = 0; k < G_N_ELEMENTS(all); k++) {
        failed |= all[k] == CHECK_FAILED;
    }
    r->rdma_broken |= failed;
    /* Not every GPU moved data both ways, and nothing failed: untested. */
    if (!gpu_ok && !failed) {
        r->untested = true;
    }
}

/* Every active port of @dev, one entry each (one saying why, when none);
 * each port's host checks, its run left in @runs for the GPU checks. */
static void check_device(VerifyReport *r, struct ibv_device *dev,
                         const char *bdf, GArray *runs)
{
    VerifyRdma d = { 0 };
    uint8_t ports[32];
    unsigned n;

    g_strlcpy(d.name, V.ibv_get_device_name(dev), sizeof(d.name));
    g_strlcpy(d.bdf, bdf, sizeof(d.bdf));
    n = active_ports(dev, ports, &d);
    if (!n) {
        if (d.host_mr != CHECK_FAILED) {
            d.host_mr = d.host_write = d.host_read = CHECK_UNTESTABLE;
            why_not(&d, "no active port");
        }
        judge_port(r, &d);
        g_array_append_val(r->rdma, d);
        return;
    }
    for (unsigned k = 0; k < n; k++) {
        VerifyRdma out = d;
        PortRun p = { .entry = r->rdma->len,
                      .nic = verify_nic_find(r, bdf) };

        out.port = ports[k];
        out.ports_active = n;
        check_port_host(dev, &out, &p);
        g_array_append_val(r->rdma, out);
        g_array_append_val(runs, p);
    }
}

/* Every GPU CUDA sees on the open ports: with @paired, each GPU on its
 * paired NIC's ports; else on the others. */
static void check_gpus_on_ports(const VerifyOptions *o, VerifyReport *r,
                                GArray *runs, bool paired, unsigned *order)
{
    const char *root = o->sysfs_root ? o->sysfs_root : "/";

    for (guint i = 0; i < r->gpus->len; i++) {
        const VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);

        if (g->cuda_index < 0) {
            continue;
        }
        for (guint k = 0; k < runs->len; k++) {
            PortRun *p = &g_array_index(runs, PortRun, k);
            VerifyRdma *out = &g_array_index(r->rdma, VerifyRdma, p->entry);
            const VerifyNicPath *path = p->nic < 0 ? NULL :
                verify_nic_path(r, (guint)p->nic, i);
            VerifyRdmaGpu checked = { .gpu = i, .pair = path && path->pair };
            GpuResult res;

            if (!p->ready || checked.pair != paired) {
                continue;
            }
            g_strlcpy(checked.path, path ? path->cls : "",
                      sizeof(checked.path));
            checked.order = ++*order;
            check_gpu(out, &p->loop, &p->host, g->cuda_index, root, &res);
            record_gpu(out, &checked, &res);
        }
    }
}

/* A port's GPU states once every GPU had its turn, its verdict, and its
 * resources given back. */
static void finish_port(VerifyReport *r, PortRun *p)
{
    VerifyRdma *out = &g_array_index(r->rdma, VerifyRdma, p->entry);

    if (p->ready && !out->n_gpus) {
        out->dmabuf = out->peermem = out->gpu_write = out->gpu_read =
            CHECK_UNTESTABLE;
        why_not(out, "no GPU usable through CUDA%s%s",
                r->cuda_status ? ": " : "",
                r->cuda_status ? r->cuda_status : "");
    }
    judge_port(r, out);
    port_run_close(p);
}

/* Each GPU on its paired NIC first, then on the other NICs: a GPU whose
 * pair is broken shows it before anything else is tried with it. */
static void check_ports(const VerifyOptions *o, VerifyReport *r,
                        GArray *runs)
{
    unsigned order = 0;

    check_gpus_on_ports(o, r, runs, true, &order);
    check_gpus_on_ports(o, r, runs, false, &order);
    for (guint k = 0; k < runs->len; k++) {
        finish_port(r, &g_array_index(runs, PortRun, k));
    }
}

/* Each NIC's verbs device, and whether its GPU memory moved both ways on
 * every port. */
static void note_nic_devices(VerifyReport *r, struct ibv_device **list,
                             int n, char *const *bdfs)
{
    for (guint j = 0; j < r->nics->len; j++) {
        VerifyNic *nic = &g_array_index(r->nics, VerifyNic, j);

        for (int i = 0; i < n; i++) {
            bool any = false, ok = true;

            if (!bdfs[i][0] || g_ascii_strcasecmp(nic->bdf, bdfs[i])) {
                continue;
            }
            g_strlcpy(nic->rdma_device, V.ibv_get_device_name(list[i]),
                      sizeof(nic->rdma_device));
            for (guint k = 0; k < r->rdma->len; k++) {
                const VerifyRdma *d = &g_array_index(r->rdma, VerifyRdma, k);

                if (strcmp(d->name, nic->rdma_device)) {
                    continue;
                }
                any = true;
                ok &= d->gpu_write == CHECK_OK && d->gpu_read == CHECK_OK;
            }
            nic->gpu_rdma_ok = any && ok;
        }
    }
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
    g_auto(GStrv) bdfs = NULL;
    struct ibv_device **list;
    GArray *runs;
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
    bdfs = g_new0(char *, n + 1);
    runs = g_array_new(FALSE, TRUE, sizeof(PortRun));
    for (i = 0; i < n; i++) {
        char bdf[16];

        rdma_bdf(o, V.ibv_get_device_name(list[i]), bdf, sizeof(bdf));
        bdfs[i] = g_strdup(bdf);
        check_device(r, list[i], bdf, runs);
    }
    check_ports(o, r, runs);
    note_nic_devices(r, list, n, bdfs);
    g_array_free(runs, TRUE);
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
