/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The guest hierarchy that mirrors the host's for a set of assigned
 * devices: one PCIe expander bus (QEMU pxb-pcie, libvirt
 * pcie-expander-bus) per host bridge, carrying the host bridge's NUMA
 * node; a root port per host root port; a switch (upstream and downstream
 * ports) wherever two or more of the devices share a host switch; the
 * devices below. Guest addresses, bus numbers and NUMA node ids follow
 * from the host topology alone, so the same input gives the same guest.
 *
 * One expander per host bridge, not per NUMA node: two host bridges of one
 * node then stay NODE apart in the guest instead of collapsing to PHB.
 */
#ifndef GPUP2P_MIRROR_H
#define GPUP2P_MIRROR_H

#include "gpup2p/p2p.h"

typedef enum {
    GP_MIRROR_EXPANDER,     /* an extra host bridge on pcie.0 */
    GP_MIRROR_ROOT_PORT,
    GP_MIRROR_SWITCH_UP,
    GP_MIRROR_SWITCH_DOWN,
    GP_MIRROR_ENDPOINT,     /* an assigned device (vfio-pci) */
} GpMirrorKind;

typedef struct GpMirrorNode GpMirrorNode;

struct GpMirrorNode {
    GpMirrorKind kind;
    char id[40];                /* QEMU id; libvirt alias is "ua-" + id */
    GpMirrorNode *parent;       /* NULL for an expander (on pcie.0) */
    GPtrArray *children;        /* GpMirrorNode *, in address order */
    /* The host device it stands for: the assigned device, the host port
     * or switch port; NULL for an expander, and for a root port made for
     * a device that sits on a host root bus. */
    const GpDevice *host;
    const GpHostBridge *host_bridge;
    char sort_key[GP_BDF_LEN];  /* host BDF that orders siblings */
    unsigned slot, function;    /* on the parent's bus (pcie.0: expander) */
    bool multifunction;         /* function 0 of several */
    unsigned bus;               /* the bus it sits on, as firmware numbers */
    unsigned secondary;         /* bridges and expanders: the bus below */
    char guest_bdf[GP_BDF_LEN];
    unsigned chassis, port_slot;        /* PCIe slot identity of ports */
    int host_node;              /* expander: the host bridge's NUMA node */
    int guest_node;             /* expander: guest NUMA node, -1: none */
    /* Root ports: the host link, as QEMU's x-speed/x-width take it;
     * NULL/0 when the host does not say. */
    const char *link_speed;
    unsigned link_width;
};

/*
 * Where an assigned RDMA NIC went, beside which GPU, and why. Its partner
 * is the GPU it pairs with on the host (gp_rdma_pairs(): its nearest GPUs
 * of the host by path class), where that GPU is assigned too. NCCL uses
 * GPUDirect RDMA only when the NIC and GPU are close in its topology
 * (PXB or nearer by default), so a host switch they share must stay in
 * the guest: the plan keeps every host switch where two of the devices
 * meet, so the pair gets one emulated switch wherever the host gives them
 * one. Without an assigned partner the NIC is placed by its host path
 * alone, and the reason says so.
 */
typedef struct GpMirrorNicPlace {
    const GpMirrorNode *nic;
    const GpMirrorNode *gpu;    /* its assigned partner; NULL: none */
    /* The nearest guest node above both: a switch's upstream port, a root
     * port or an expander; NULL where they meet only above the expanders
     * or there is no partner. */
    const GpMirrorNode *meeting;
    GpPathType host_path;       /* NIC to partner on the host */
    char *reason;               /* one sentence for the operator */
} GpMirrorNicPlace;

typedef struct GpMirror {
    GPtrArray *nodes;           /* every node, parents before children */
    GPtrArray *expanders;       /* in host bridge order */
    GArray *cell_host_node;     /* int: host node of guest node i */
    GPtrArray *nic_places;      /* GpMirrorNicPlace *, by NIC host BDF */
} GpMirror;

/* pcie.0 slots the expanders take, from the highest down. */
#define GP_MIRROR_TOP_SLOT      0x1e
/* The first expander's bus number: buses below it stay for pcie.0. */
#define GP_MIRROR_FIRST_BUS     0x80

/*
 * Plan the guest hierarchy for @bdfs (host devices of @topo). Each
 * expander takes the highest slot of pcie.0 from GP_MIRROR_TOP_SLOT down
 * that @slot_taken (may be NULL) does not reject.
 */
GpMirror *gp_mirror_plan(const GpTopology *topo, const char *const *bdfs,
                         bool (*slot_taken)(unsigned slot, void *opaque),
                         void *opaque, GError **errp);
void gp_mirror_free(GpMirror *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(GpMirror, gp_mirror_free)

/* The placement of assigned RDMA NIC @bdf, or NULL. */
const GpMirrorNicPlace *gp_mirror_nic_place(const GpMirror *m,
                                            const char *bdf);

/* The node standing for host device @bdf, or NULL. */
const GpMirrorNode *gp_mirror_find(const GpMirror *m, const char *bdf);
unsigned gp_mirror_cells(const GpMirror *m);
const char *gp_mirror_kind_name(GpMirrorKind kind);

/* How CPUs and memory spread over the guest NUMA cells. */
typedef struct GpMirrorCell {
    unsigned first_cpu, cpus;
    guint64 memory_mib;
} GpMirrorCell;

/* Split @cpus and @memory_mib over the cells; false if too few CPUs or
 * too little memory for one of each per cell. */
bool gp_mirror_split(const GpMirror *m, unsigned cpus, guint64 memory_mib,
                     GpMirrorCell *cells, GError **errp);

/* "2-3" or "2": the cell's CPUs as QEMU and libvirt write them. */
char *gp_mirror_cpu_range(const GpMirrorCell *cell);

/*
 * QEMU arguments: -m, -smp, the NUMA cells, the expanders, ports and
 * vfio-pci devices. @vfio_props (may be NULL) is appended to every
 * vfio-pci device. Returns a NULL-terminated vector.
 */
char **gp_mirror_qemu_args(const GpMirror *m, unsigned cpus,
                           guint64 memory_mib, const char *vfio_props,
                           GError **errp);

/*
 * The NCCL topology file for the guest (NCCL_TOPO_FILE): a <cpu> per
 * guest NUMA node, a <pci> per mirrored switch (its upstream port, as
 * NCCL records a switch), and the devices below, at their guest bus ids
 * with the host's ids, class and link. No XML declaration: NCCL's parser
 * does not take one.
 */
char *gp_mirror_nccl_topo(const GpMirror *m);

/* The fw_cfg item name the host passes the NCCL file under. */
#define GP_FWCFG_NCCL_TOPO "opt/gpup2p/nccl-topo.xml"

/*
 * Read fw_cfg item @name as the guest's qemu_fw_cfg module shows it under
 * @root ("/" for the live system). NULL with G_FILE_ERROR_NOENT when the
 * item (or the module) is absent.
 */
char *gp_fwcfg_read(const char *root, const char *name, gsize *len,
                    GError **errp);

/*
 * Copy fw_cfg item @name to @dest (atomically) when the guest has it:
 * *found tells whether it did. False only when the item exists but
 * cannot be read or @dest cannot be written. The guest tool's
 * --nccl-topo takes the host's file this way and falls back to its own.
 */
bool gp_fwcfg_copy(const char *root, const char *name, const char *dest,
                   bool *found, GError **errp);

#endif /* GPUP2P_MIRROR_H */
