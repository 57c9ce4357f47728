/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Path classes between two devices (the meaning `nvidia-smi topo -m` gives
 * them) and P2P verdicts: the bare-metal one of Linux's
 * drivers/pci/p2pdma.c, and the one for a guest's request (the VM rule of
 * gpup2p/p2p-rule.h), which every clique decision uses.
 */
#ifndef GPUP2P_P2P_H
#define GPUP2P_P2P_H

#include "gpup2p/p2p-rule.h"
#include "gpup2p/topo.h"

typedef enum {
    GP_PATH_SELF,       /* X: the same device */
    GP_PATH_PIX,        /* at most one PCIe switch (or bridge) */
    GP_PATH_PXB,        /* several switches, no host bridge */
    GP_PATH_PHB,        /* through one host bridge */
    GP_PATH_NODE,       /* between host bridges of one NUMA node */
    GP_PATH_SYS,        /* across the SMP interconnect between NUMA nodes */
} GpPathType;

/* The shared rule's verdicts (gpup2p/p2p-rule.h), by name. */
typedef enum {
    GP_P2P_DIRECT = GP_P2P_RULE_DIRECT,
    GP_P2P_HOST_BRIDGE = GP_P2P_RULE_HOST_BRIDGE,
    GP_P2P_NONE = GP_P2P_RULE_NONE,
    GP_P2P_UNKNOWN = GP_P2P_RULE_UNKNOWN,
} GpP2pKind;

/* The VM rule's verdicts (gpup2p/p2p-rule.h), by name. */
typedef enum {
    GP_VM_P2P_OK = GP_P2P_VM_OK,
    GP_VM_P2P_BYPASS = GP_P2P_VM_BYPASS,
    GP_VM_P2P_NONE = GP_P2P_VM_NONE,
    GP_VM_P2P_UNKNOWN = GP_P2P_VM_UNKNOWN,
} GpVmP2pKind;

typedef struct GpP2pVerdict {
    /* Bare metal (p2pdma): what `topo` shows beside the VM verdict. */
    GpP2pKind kind;
    int distance;       /* bridge hops, as p2pdma counts them */
    const GpDevice *common;     /* common upstream bridge, or NULL */
    const GpDevice *redirect;   /* first hop whose ACS redirects, or NULL */
    struct gp_p2p_outcome rule; /* the shared rule's codes */
    char *reason;
    /* A guest's request: the verdict cliques follow. */
    GpVmP2pKind vm_kind;
    struct gp_p2p_vm_outcome vm;
    const GpDevice *bypass;     /* first port that routes it itself, or NULL */
    char *vm_reason;
    /* Both kinds are the kernel module's, recorded in a snapshot
     * (GP_KERNEL_VERDICTS_FILE); the rule's fields stay the library's. */
    bool kernel_recorded;
    /* The kernel's IOMMU groups overruled the guest verdict: one of the
     * two is in no group, or both are in one. */
    bool group_decided;
} GpP2pVerdict;

GpPathType gp_path_classify(const GpDevice *a, const GpDevice *b);
const char *gp_path_type_name(GpPathType type);

/* Fills @v, both verdicts; free the reasons with gp_p2p_verdict_clear(). */
void gp_p2p_verdict(const GpTopology *topo, const GpDevice *a,
                    const GpDevice *b, GpP2pVerdict *v);
void gp_p2p_verdict_clear(GpP2pVerdict *v);
const char *gp_p2p_kind_name(GpP2pKind kind);
bool gp_p2p_possible(GpP2pKind kind);
/* "through-iommu", "bypasses-iommu", "none", "unknown". */
const char *gp_vm_p2p_kind_name(GpVmP2pKind kind);
/* May the pair share a clique? Only GP_VM_P2P_OK. */
bool gp_vm_p2p_ok(GpVmP2pKind kind);

#endif /* GPUP2P_P2P_H */
