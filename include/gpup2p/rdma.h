/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * GPUDirect RDMA pairs: each RDMA NIC with its nearest GPUs by path class,
 * and the path the NIC's DMA to the GPU's BAR takes for a guest.
 *
 * The isolation half is the GPU-GPU rule (gp_p2p_verdict(), the VM rule of
 * gpup2p/p2p-rule.h): a port that does not isolate routes the NIC's
 * untranslated request on host windows ("bypass"). An isolated pair goes
 * through the root complex. It may instead go switch-local where the NIC
 * and GPU share a switch below the root port and the NIC sends translated
 * requests: ATS on the NIC, ACS Direct Translated P2P (with SV RR CR UF) on
 * the NIC's downstream port of that switch, every other port isolated, the
 * two in different IOMMU groups (NVIDIA's policy for VMs, rdma-core's
 * rdma_topo --virt). Where the two meet only at the root complex, ATS buys
 * nothing and lets the NIC send requests the IOMMU does not check again:
 * it is wanted off, as rdma_topo wants it for GPUs on root ports.
 */
#ifndef GPUP2P_RDMA_H
#define GPUP2P_RDMA_H

#include "gpup2p/p2p.h"

typedef enum {
    GP_RDMA_PATH_SWITCH_TRANSLATED, /* translated requests stay in the switch */
    GP_RDMA_PATH_ROOT_COMPLEX,      /* isolated: through the IOMMU; slower */
    GP_RDMA_PATH_BYPASS,            /* a port routes the NIC's request itself */
    GP_RDMA_PATH_NONE,              /* isolated, the root complex does not
                                     * forward, no switch-local path */
    GP_RDMA_PATH_UNKNOWN,
} GpRdmaPathKind;

typedef enum {
    GP_RDMA_PORT_NIC_SWITCH,    /* the NIC's downstream port of the shared switch */
    GP_RDMA_PORT_GPU_SWITCH,    /* the GPU's downstream port of that switch */
    GP_RDMA_PORT_PATH,          /* another port on the way up */
    GP_RDMA_PORT_ROOT,          /* a root port */
} GpRdmaPortRole;

/* What one port must have for the pair's best path, and whether it has. */
typedef struct GpRdmaPort {
    const GpDevice *port;
    GpRdmaPortRole role;
    uint16_t need;              /* ACS controls to have on */
    uint16_t missing;           /* of @need: off, or not implemented */
    bool met;
    /* Setting ACS Control can meet it (an ACS port that implements each
     * control of @need, no quirk of Linux's answering for it). */
    bool settable;
} GpRdmaPort;

typedef struct GpRdmaPair {
    const GpDevice *nic;
    const GpDevice *gpu;
    GpPathType path;
    /* The switch (its upstream port) both sit below, under the root port;
     * NULL where they meet only at the root complex or beyond. */
    const GpDevice *shared_switch;
    GpRdmaPathKind kind;
    char *reason;
    GArray *ports;              /* GpRdmaPort, in BDF order */
    bool ats_wanted;            /* on for the switch-local path, else off */
    bool ats_met;
    bool groups_differ;         /* both in IOMMU groups, different ones */
} GpRdmaPair;

/* The RDMA NICs of @topo (gp_device_is_rdma_nic()), in BDF order. */
GPtrArray *gp_rdma_nics(const GpTopology *topo);

/*
 * Each NIC of @nics with the GPUs of @gpus nearest to it (the lowest path
 * class; ties all pair), NIC by NIC in BDF order: GpRdmaPair *, freed with
 * the array.
 */
GPtrArray *gp_rdma_pairs(const GpTopology *topo, const GPtrArray *nics,
                         const GPtrArray *gpus);

/*
 * The NIC of @nics nearest to @gpu, as a GPU's side of the pairing: the
 * lowest path class (gp_path_classify()), ties to the lowest BDF; NULL
 * when @nics is empty. gp_rdma_pairs() is the NIC's side.
 */
const GpDevice *gp_rdma_nearest_nic(const GpDevice *gpu,
                                    const GPtrArray *nics);

/* "switch-local-translated", "root-complex", "bypass", "none", "unknown". */
const char *gp_rdma_path_kind_name(GpRdmaPathKind kind);
/* "NIC's downstream port", "GPU's downstream port", "port", "root port". */
const char *gp_rdma_port_role_name(GpRdmaPortRole role);

/* The ACS controls @port still lacks for its pair, as "DT RR" (g_free). */
char *gp_rdma_port_missing(const GpRdmaPort *port);
/*
 * ACS controls as Linux's pci=config_acs= writes them: bit 6 (DT) first,
 * bit 0 (SV) last, '1' for each of @need, 'x' (left as is) elsewhere.
 */
char *gp_rdma_acs_flags(uint16_t need);
/*
 * What to set where the pair's path is not yet its best: the kernel
 * argument for the ports ("pci=config_acs=FLAGS@BDF;..."), or NULL when
 * every port has what it needs.
 */
char *gp_rdma_config_acs(const GpRdmaPair *pair);

#endif /* GPUP2P_RDMA_H */
