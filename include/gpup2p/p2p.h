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

/*
 * A bridge above a device that Linux's isolation walk asks
 * (pci_acs_path_enabled() calling pci_acs_enabled() with REQ_ACS_FLAGS):
 * root and downstream ports, multifunction ones, and bridges that never
 * pass. The answer is the VM rule's own per-hop test (gp_p2p_acs_enabled()
 * of gpup2p/p2p-rule.h), so a pair's "bypass" names exactly these.
 */
typedef struct GpIsolationHop {
    const GpDevice *port;
    /* The ACS controls Linux requires on: SV RR CR UF, those of them the
     * port implements (pci_acs_flags_enabled()). */
    uint16_t need;
    int passes;                 /* 1 yes, 0 no, -1 not known */
    /* Setting ACS Control could make it pass: an ACS port, not a
     * conventional bridge or a device a quirk of Linux's answers for. */
    bool settable;
} GpIsolationHop;

/* The hops of @dev's path that Linux asks, nearest first, the device
 * itself left out; NULL when the path is deeper than the rule reads. */
GArray *gp_p2p_isolation_hops(const GpDevice *dev);

#endif /* GPUP2P_P2P_H */
