/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Path classes between two devices (the meaning `nvidia-smi topo -m` gives
 * them) and P2P verdicts by the rules of Linux's drivers/pci/p2pdma.c.
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

typedef struct GpP2pVerdict {
    GpP2pKind kind;
    int distance;       /* bridge hops, as p2pdma counts them */
    const GpDevice *common;     /* common upstream bridge, or NULL */
    const GpDevice *redirect;   /* first hop whose ACS redirects, or NULL */
    struct gp_p2p_outcome rule; /* the shared rule's codes */
    char *reason;
} GpP2pVerdict;

GpPathType gp_path_classify(const GpDevice *a, const GpDevice *b);
const char *gp_path_type_name(GpPathType type);

/* Fills @v; free its reason with gp_p2p_verdict_clear(). */
void gp_p2p_verdict(const GpTopology *topo, const GpDevice *a,
                    const GpDevice *b, GpP2pVerdict *v);
void gp_p2p_verdict_clear(GpP2pVerdict *v);
const char *gp_p2p_kind_name(GpP2pKind kind);
bool gp_p2p_possible(GpP2pKind kind);

#endif /* GPUP2P_P2P_H */
