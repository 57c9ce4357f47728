/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A STAND-IN libibverbs.so.1 for the unit suite: no kernel, no NIC. It
 * offers the entry points gpup2p-verify resolves and runs RDMA WRITE and
 * READ on an RC queue pair connected to itself as memcpy between memory
 * regions registered in this process, checking keys, bounds and access
 * flags as a NIC would. dma-buf registration is refused with EOPNOTSUPP
 * (no dma-buf exporter here).
 *
 * GPUP2P_STANDIN_VERBS: devices and port states, "name:AD,name2:A" (A
 * active, D down). GPUP2P_STANDIN_VERBS_FAULT: "corrupt-read" flips a
 * byte of every RDMA READ; "fail-write" completes every RDMA WRITE with a
 * remote access error; "fail-reg:N" makes the Nth ibv_reg_mr (from 1)
 * fail with EFAULT, as a peer-memory registration the kernel cannot pin.
 */
#include <errno.h>
#include <glib.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVS 8
#define MAX_MRS 64

typedef struct {
    struct ibv_device dev;
    char ports[16];             /* 'A' or 'D' per port */
} Dev;

static Dev devs[MAX_DEVS];
static struct ibv_device *list[MAX_DEVS + 1];
static struct ibv_mr *mrs[MAX_MRS];     /* by key - 1 */
static struct ibv_wc pending;
static bool have_pending;

static const char *fault(void)
{
    const char *f = getenv("GPUP2P_STANDIN_VERBS_FAULT");

    return f ? f : "";
}

struct ibv_device **ibv_get_device_list(int *num)
{
    g_auto(GStrv) specs = g_strsplit(getenv("GPUP2P_STANDIN_VERBS") ?
                                     getenv("GPUP2P_STANDIN_VERBS") : "",
                                     ",", MAX_DEVS);
    int n = 0;

    for (int i = 0; specs[i] && specs[i][0]; i++) {
        char *colon = strchr(specs[i], ':');

        memset(&devs[n], 0, sizeof(devs[n]));
        g_strlcpy(devs[n].dev.name, specs[i], colon ?
                  (gsize)(colon - specs[i] + 1) : sizeof(devs[n].dev.name));
        g_strlcpy(devs[n].ports, colon ? colon + 1 : "A",
                  sizeof(devs[n].ports));
        list[n] = &devs[n].dev;
        n++;
    }
    list[n] = NULL;
    if (num) {
        *num = n;
    }
    return list;
}

void ibv_free_device_list(struct ibv_device **l)
{
    (void)l;
}

const char *ibv_get_device_name(struct ibv_device *d)
{
    return d->name;
}

static int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
                     struct ibv_send_wr **bad);
static int poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);

struct ibv_context *ibv_open_device(struct ibv_device *d)
{
    struct ibv_context *c = g_new0(struct ibv_context, 1);

    c->device = d;
    c->ops.post_send = post_send;
    c->ops.poll_cq = poll_cq;
    return c;
}

int ibv_close_device(struct ibv_context *c)
{
    g_free(c);
    return 0;
}

int ibv_query_device(struct ibv_context *c, struct ibv_device_attr *a)
{
    memset(a, 0, sizeof(*a));
    a->phys_port_cnt = strlen(((Dev *)c->device)->ports);
    return 0;
}

int (ibv_query_port)(struct ibv_context *c, uint8_t port,
                     struct _compat_ibv_port_attr *attr)
{
    struct ibv_port_attr *a = (struct ibv_port_attr *)attr;
    const char *ports = ((Dev *)c->device)->ports;

    if (port < 1 || port > strlen(ports)) {
        errno = EINVAL;
        return EINVAL;
    }
    memset(a, 0, sizeof(*a));
    a->state = ports[port - 1] == 'A' ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
    a->active_mtu = IBV_MTU_1024;
    a->lid = 1;
    a->gid_tbl_len = 0;
    a->link_layer = IBV_LINK_LAYER_INFINIBAND;
    return 0;
}

int ibv_query_gid(struct ibv_context *c, uint8_t port, int index,
                  union ibv_gid *gid)
{
    (void)c; (void)port; (void)index;
    memset(gid, 0, sizeof(*gid));
    return 0;
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *c)
{
    struct ibv_pd *pd = g_new0(struct ibv_pd, 1);

    pd->context = c;
    return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
    g_free(pd);
    return 0;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *c, int cqe, void *ctx,
                             struct ibv_comp_channel *ch, int vector)
{
    struct ibv_cq *cq = g_new0(struct ibv_cq, 1);

    (void)cqe; (void)ctx; (void)ch; (void)vector;
    cq->context = c;
    return cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
    g_free(cq);
    return 0;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
    static uint32_t next = 1;
    struct ibv_qp *qp = g_new0(struct ibv_qp, 1);

    qp->context = pd->context;
    qp->pd = pd;
    qp->send_cq = a->send_cq;
    qp->qp_num = next++;
    qp->state = IBV_QPS_RESET;
    return qp;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
    g_free(qp);
    return 0;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
    if (mask & IBV_QP_STATE) {
        qp->state = a->qp_state;
    }
    return 0;
}

struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t len,
                            int access)
{
    static int calls;

    if (g_str_has_prefix(fault(), "fail-reg:") &&
        ++calls == atoi(fault() + strlen("fail-reg:"))) {
        errno = EFAULT;
        return NULL;
    }
    for (int i = 0; i < MAX_MRS; i++) {
        if (!mrs[i]) {
            struct ibv_mr *mr = g_new0(struct ibv_mr, 1);

            mr->context = pd->context;
            mr->pd = pd;
            mr->addr = addr;
            mr->length = len;
            mr->lkey = mr->rkey = i + 1;
            mr->handle = (uint32_t)access;
            mrs[i] = mr;
            return mr;
        }
    }
    errno = ENOMEM;
    return NULL;
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
                                 size_t length, uint64_t iova, int fd,
                                 int access)
{
    (void)pd; (void)offset; (void)length; (void)iova; (void)fd; (void)access;
    errno = EOPNOTSUPP;
    return NULL;
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
    mrs[mr->lkey - 1] = NULL;
    g_free(mr);
    return 0;
}

const char *ibv_wc_status_str(enum ibv_wc_status s)
{
    return s == IBV_WC_SUCCESS ? "success" :
           s == IBV_WC_REM_ACCESS_ERR ? "remote access error" :
           s == IBV_WC_LOC_PROT_ERR ? "local protection error" :
           "error";
}

/* The registered region of @key holding [addr, addr + len) with @need. */
static bool covered(uint32_t key, uint64_t addr, uint32_t len, int need)
{
    struct ibv_mr *mr = key >= 1 && key <= MAX_MRS ? mrs[key - 1] : NULL;

    return mr && addr >= (uintptr_t)mr->addr &&
           addr + len <= (uintptr_t)mr->addr + mr->length &&
           ((int)mr->handle & need) == need;
}

static int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
                     struct ibv_send_wr **bad)
{
    bool read = wr->opcode == IBV_WR_RDMA_READ;
    struct ibv_sge *sge = wr->sg_list;
    uint8_t *local = (uint8_t *)(uintptr_t)sge->addr;
    uint8_t *remote = (uint8_t *)(uintptr_t)wr->wr.rdma.remote_addr;

    if (qp->state != IBV_QPS_RTS || have_pending ||
        (wr->opcode != IBV_WR_RDMA_WRITE && !read)) {
        *bad = wr;
        return EINVAL;
    }
    memset(&pending, 0, sizeof(pending));
    pending.wr_id = wr->wr_id;
    pending.opcode = read ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE;
    have_pending = true;
    if (!covered(sge->lkey, sge->addr, sge->length,
                 read ? IBV_ACCESS_LOCAL_WRITE : 0)) {
        pending.status = IBV_WC_LOC_PROT_ERR;
    } else if (!covered(wr->wr.rdma.rkey, wr->wr.rdma.remote_addr,
                        sge->length, read ? IBV_ACCESS_REMOTE_READ :
                        IBV_ACCESS_REMOTE_WRITE) ||
               (!read && !strcmp(fault(), "fail-write"))) {
        pending.status = IBV_WC_REM_ACCESS_ERR;
    } else if (read) {
        memcpy(local, remote, sge->length);
        if (!strcmp(fault(), "corrupt-read")) {
            local[sge->length / 2] ^= 0x5a;
        }
    } else {
        memcpy(remote, local, sge->length);
    }
    return 0;
}

static int poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
    (void)cq;
    if (n < 1 || !have_pending) {
        return 0;
    }
    *wc = pending;
    have_pending = false;
    return 1;
}
