/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host topology model: PCI devices read once from sysfs (live or a
 * captured tree), their bridge chains up to a host bridge, switches, NUMA
 * nodes, IOMMU groups, drivers, BARs and links. Everything else (path
 * classes, P2P verdicts, clique plans) is computed from this model.
 */
#ifndef GPUP2P_TOPO_H
#define GPUP2P_TOPO_H

#include "gpup2p/pcicfg.h"

/* "dddddddd:bb:dd.f" + NUL: Intel VMD domains start at 10000. */
#define GP_BDF_LEN 17

/* The only vendor whose GPUs take a clique capability (QEMU's test too). */
#define GP_PCI_VENDOR_NVIDIA 0x10de

typedef struct GpHostBridge GpHostBridge;
typedef struct GpDevice GpDevice;

struct GpHostBridge {
    char name[24];              /* sysfs directory, e.g. "pci0000:00" */
    unsigned domain;
    unsigned bus;
    /* Identity of the device Linux's p2pdma matches its host bridge list
     * on: the first device of the root bus, when it is at 00.0 or is a
     * root port; 0 (and root_bdf empty) when there is none. */
    uint16_t vendor;
    uint16_t device;
    char root_bdf[GP_BDF_LEN];
};

typedef struct GpBar {
    unsigned index;
    uint64_t start;
    uint64_t size;
    bool io;
    bool is64;
    bool prefetchable;
} GpBar;

typedef enum {
    GP_CPU_VENDOR_UNKNOWN,
    GP_CPU_VENDOR_INTEL,
    GP_CPU_VENDOR_AMD,
    GP_CPU_VENDOR_OTHER,
} GpCpuVendor;

struct GpDevice {
    char bdf[GP_BDF_LEN];
    unsigned model_index;       /* place in GpTopology.devices */
    unsigned domain, bus, slot, function;
    uint16_t vendor, device, subsystem_vendor, subsystem_device;
    uint32_t class_code;        /* 24-bit class, e.g. 0x030200 */
    int numa_node;              /* -1: none reported */
    int iommu_group;            /* -1: none */
    char *driver;               /* NULL: not bound */
    char *cpu_affinity;         /* local_cpulist, else the node's; NULL */
    char *sysfs_path;           /* e.g. "devices/pci0000:00/0000:00:01.0" */

    GpDevice *parent;           /* upstream bridge, NULL on a root bus */
    GpDevice *physfn;           /* PF of a VF, else NULL */
    const GpHostBridge *host;

    GpPciConfig *config;
    /*
     * Why the config space could not be used, naming the file: not
     * readable, or all ones where the vendor attribute says otherwise (the
     * device no longer answers, e.g. fell off the bus). NULL when read;
     * else config is empty, so ACS and capabilities read as unknown.
     */
    char *config_unreadable;
    /*
     * Off every GPU and NIC path (no such device, its PF, a bridge above
     * them, a member of their IOMMU groups, nor the head of a root bus):
     * config space left alone, is_bridge from the class code.
     */
    bool config_not_read;
    bool is_bridge;             /* header type 1 */
    GpPcieInfo pcie;
    GpAcsInfo acs;
    bool acs_known;             /* false: extended config was not readable */
    GpAtsInfo ats;
    bool ats_known;             /* false: extended config was not readable */
    /* char *: RDMA (verbs) devices of class/infiniband on this function,
     * e.g. "mlx5_0"; NULL when none. */
    GPtrArray *verbs_devices;

    /*
     * Why an attribute holds a value the kernel never writes (a link
     * speed "fast"), naming the file and the value; NULL when each reads
     * as Linux writes it. The attribute itself reads as absent. Such a
     * capture of the device was edited or broken, so the device's own
     * pairs are undecided, naming this, and the rest of the host is
     * judged. On a bridge it is only named: the rule reads a bridge's ACS
     * and port type from config space, nothing from its link attributes.
     */
    char *attr_invalid;

    /* Link attributes as sysfs reports them (text kept as read); NULL when
     * absent or not as Linux writes them (see attr_invalid). */
    char *link_speed, *max_link_speed;
    int link_width, max_link_width;

    GArray *bars;               /* GpBar */
};

/*
 * A verdict the kernel module (/dev/gpup2p) gave for an ordered pair, as
 * `gpup2p snapshot` recorded it in GP_KERNEL_VERDICTS_FILE: the codes and
 * out_flags of kernel/include/uapi/gpup2p.h; or, with @error set, why the
 * module could not answer for the pair (then the pair is unknown).
 */
typedef struct GpKernelVerdict {
    unsigned kind;              /* GPUP2P_VERDICT_* */
    unsigned distance;
    unsigned vm_kind;           /* GPUP2P_VM_* */
    unsigned flags;             /* GPUP2P_VERDICT_* out_flags */
    char error[160];            /* "": answered */
} GpKernelVerdict;

/* In a capture: the module's verdicts, one ordered pair a line. */
#define GP_KERNEL_VERDICTS_FILE "gpup2p/kernel-verdicts"

typedef struct GpTopology {
    char *root;                 /* directory playing the role of "/" */
    char *sys;                  /* root + "/sys" */
    GPtrArray *devices;         /* GpDevice *, sorted by BDF */
    GPtrArray *host_bridges;    /* GpHostBridge * */
    GHashTable *by_bdf;
    GpCpuVendor cpu_vendor;
    unsigned cpu_family;
    char *cpu_model_name;
    unsigned cpu_phys_bits;     /* "address sizes" of cpuinfo; 0: unknown */
    /* Devices whose config space was cut short (unprivileged read). */
    unsigned config_truncated;
    /* Devices with config_unreadable set. */
    unsigned config_unreadable;
    /* Devices with config_not_read set. */
    unsigned config_not_read;
    /*
     * A capture's GP_KERNEL_VERDICTS_FILE: "A B" (BDFs) -> GpKernelVerdict,
     * which gp_p2p_verdict() prefers to the library's rule; NULL without
     * one. kernel_verdicts_note says why a file there was not taken.
     */
    GHashTable *kernel_verdicts;
    char *kernel_verdicts_note;
    /* char *: devices listed in bus/pci/devices whose directory was gone
     * when read, each naming it; they are not in devices. */
    GPtrArray *devices_gone;
} GpTopology;

/*
 * Read the topology. @root is "/" for the live system, or a directory
 * holding a captured "sys/" tree (a directory that itself holds "bus/pci"
 * is taken as the sys directory). Links stored as plain files holding the
 * link text (as some copy tools leave them) read as links.
 */
GpTopology *gp_topo_read(const char *root, GError **errp);
/*
 * The same, reading also the config space on the paths of the devices
 * @bdfs names (NULL-terminated, any form gp_bdf_normalize() takes): for a
 * view of named devices that are neither GPUs nor NICs (`topo --devices`,
 * `plan --devices`), whose class and verdicts need their ports' PCIe and
 * ACS capabilities.
 */
GpTopology *gp_topo_read_devices(const char *root, const char *const *bdfs,
                                 GError **errp);
/*
 * The same, reading the config space of every device, not only of those on
 * GPU and NIC paths: for views of every pair (`gpup2p verdict --all`,
 * `topo --all`).
 */
GpTopology *gp_topo_read_all(const char *root, GError **errp);
void gp_topo_free(GpTopology *topo);
/* Was @bdf left out because it went away while sysfs was read
 * (devices_gone names it)? */
bool gp_topo_device_gone(const GpTopology *topo, const char *bdf);
/*
 * The names GP_KERNEL_VERDICTS_FILE and 'gpup2p verdict' give the kernel
 * module's verdict codes (kernel/include/uapi/gpup2p.h): bare-metal and
 * guest. NULL for a code this program does not know (a newer module).
 */
const char *gp_kernel_kind_name(unsigned code);
const char *gp_kernel_vm_kind_name(unsigned code);

/*
 * Build a topology by hand (benchmarks, tests of the rules): add host
 * bridges and devices parents first, then call gp_topo_finish().
 */
GpTopology *gp_topo_new(const char *root);
GpHostBridge *gp_topo_add_host_bridge(GpTopology *topo, unsigned domain,
                                      unsigned bus);
GpDevice *gp_topo_add_device(GpTopology *topo, GpHostBridge *host,
                             GpDevice *parent, const char *bdf,
                             GError **errp);
void gp_topo_finish(GpTopology *topo);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(GpTopology, gp_topo_free)

GpDevice *gp_topo_find(const GpTopology *topo, const char *bdf);
/*
 * Accepts "bb:dd.f" (domain 0) or "d:bb:dd.f" with up to 8 domain digits;
 * writes the domain with at least 4 digits, as Linux names devices.
 */
bool gp_bdf_normalize(const char *text, char out[GP_BDF_LEN]);

bool gp_device_is_nvidia_gpu(const GpDevice *dev);
bool gp_device_is_gpu(const GpDevice *dev);
/* A network or InfiniBand controller, not a paravirtual (virtio) one. */
bool gp_device_is_nic(const GpDevice *dev);
/* PCI vendor of Mellanox, now NVIDIA Networking (ConnectX, BlueField). */
#define GP_PCI_VENDOR_MELLANOX 0x15b3
/*
 * A NIC GPUDirect RDMA can use: an InfiniBand controller (0207), a
 * Mellanox/NVIDIA network function (ConnectX), or any function an RDMA
 * (verbs) device of class/infiniband sits on (RoCE, iWARP).
 */
bool gp_device_is_rdma_nic(const GpDevice *dev);

/* Sort GpDevice pointers by BDF: the order every view lists them in. */
void gp_devices_sort(GPtrArray *devices);
/*
 * Short names for @devices (sorted) as `nvidia-smi topo -m` gives them:
 * GPU0, GPU1, ... for display-class devices, NIC0, ... for NICs, DEV0, ...
 * for others. A NULL-terminated vector in the order of @devices.
 */
char **gp_device_names(const GPtrArray *devices);
/* The switch a port belongs to: its upstream port, else NULL. */
const GpDevice *gp_device_switch(const GpDevice *dev);
/* The root port above a device, or NULL when it sits on a root bus. */
const GpDevice *gp_device_root_port(const GpDevice *dev);
const GpBar *gp_device_bar(const GpDevice *dev, unsigned index);

/*
 * The smallest window that holds every 64-bit memory BAR of @devices
 * (GpDevice *), each at its natural alignment: the 64-bit PCI hole a VM
 * given these devices needs.
 */
uint64_t gp_devices_mmio64_size(const GPtrArray *devices);

/* Parse one line of a sysfs "resource" file into @bar. */
bool gp_bar_parse_resource_line(const char *line, unsigned index, GpBar *bar);

#endif /* GPUP2P_TOPO_H */
