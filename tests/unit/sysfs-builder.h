/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Build sysfs-shaped trees for tests: the same files and links the kernel
 * shows (vendor, class, config, resource, numa_node, driver and
 * iommu_group links, bus/pci/devices links), with config spaces that carry
 * a PCIe capability and, where asked, an ACS capability.
 */
#ifndef SYSFS_BUILDER_H
#define SYSFS_BUILDER_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

typedef struct SysfsBuilder SysfsBuilder;

/* ACS Control as Linux's pci_std_enable_acs() sets it: SV RR CR UF. */
#define SB_ACS_LINUX 0x001d

typedef enum {
    SB_HOST_BRIDGE,         /* device 00.0 on a root bus */
    SB_ROOT_PORT,
    SB_SWITCH_UP,
    SB_SWITCH_DOWN,
    SB_ENDPOINT,
    SB_PCI_BRIDGE,          /* PCIe-to-PCI bridge: conventional bus below */
    SB_PCI_ENDPOINT,        /* conventional PCI: no PCIe capability */
} SbKind;

SysfsBuilder *sb_new(void);
const char *sb_root(const SysfsBuilder *sb);
/* Write proc/cpuinfo with this vendor id and family. */
void sb_cpu(SysfsBuilder *sb, const char *vendor_id, unsigned family);
/*
 * Add a device under @parent (a BDF already added) or, with @parent NULL,
 * on the root bus of host bridge "pciDDDD:BB" taken from @bdf. A @parent
 * "BDF/pciDDDDD:BB" puts @bdf on a root bus that sits below BDF's
 * directory, as Intel VMD's do.
 */
void sb_add(SysfsBuilder *sb, const char *parent, const char *bdf,
            SbKind kind, uint16_t vendor, uint16_t device, uint32_t class_code,
            int numa_node, int iommu_group, const char *driver);
/* Give @bdf an ACS capability with these Capability and Control bits. */
void sb_set_acs(SysfsBuilder *sb, const char *bdf, uint16_t cap,
                uint16_t ctrl);
/* Set the multi-function bit of @bdf's header type. */
void sb_set_multifunction(SysfsBuilder *sb, const char *bdf);
/* Cut @bdf's config file to @len bytes (as an unprivileged read shows). */
void sb_truncate_config(SysfsBuilder *sb, const char *bdf, size_t len);
/* Write @text to the file @rel (e.g. "proc/interrupts") under the root. */
void sb_write(SysfsBuilder *sb, const char *rel, const char *text);
/* An RDMA device @name of /sys/class/infiniband on @bdf (its "device"
 * link), as an RDMA driver (mlx5_ib, irdma, rxe on a netdev) makes. */
void sb_add_rdma_device(SysfsBuilder *sb, const char *name, const char *bdf);
/*
 * Write kernel/iommu_groups as the kernel shows it: a directory for each
 * group that a device's iommu_group link names, with a devices/BDF link
 * (relative, as in sysfs) to each member.
 */
void sb_iommu_groups(SysfsBuilder *sb);
/* Path of @bdf's device directory. */
char *sb_device_dir(const SysfsBuilder *sb, const char *bdf);
/*
 * What the BAR gate (gpup2p/bar-gate.h) reads of a host, as Linux shows
 * it: Linux @release (proc/sys/kernel/osrelease; NULL: none) with
 * boot/config-@release holding @config (NULL: none), the type1 module
 * where @type1, and, for each device in an IOMMU group, an `iommu`
 * link to Intel IOMMU dmar0 whose
 * Capability register is @cap (NULL: no link) and its group's reserved
 * regions (the MSI window).
 */
void sb_gate_host(SysfsBuilder *sb, const char *release, const char *config,
                  bool type1, const char *cap);
void sb_free(SysfsBuilder *sb);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SysfsBuilder, sb_free)

/* Remove a directory tree (test clean-up). */
void sb_remove_tree(const char *path);

#endif

/*
 * A host with two NUMA nodes (hand-made, in the shape of a real capture):
 *   pci0000:00 (node 0, host bridge 8086:@hb_device at 00:00.0)
 *     00:01.0 root port > 01:00.0 switch up > 02:00.0 down > 03:00.0 GPU A
 *                                           > 02:01.0 down > 04:00.0 GPU B
 *     00:02.0 root port > 05:00.0 GPU C
 *   pci0000:40 (node 0, host bridge 8086:@hb_device at 40:00.0)
 *     40:01.0 root port > 41:00.0 GPU F
 *   pci0000:80 (node 1, no device at 80:00.0, like QEMU's pxb-pcie)
 *     80:01.0 root port > 81:00.0 GPU D
 *     80:02.0 root port > 82:00.0 NIC (15b3:101d)
 * GPUs are 10de:2335 bound to vfio-pci, each in its own IOMMU group. Root
 * ports have ACS with SV RR CR UF on (Linux's pci_std_enable_acs() with
 * an IOMMU); the switch's downstream ports have ACS with nothing on.
 */
#define SB_GPU_A "0000:03:00.0"
#define SB_GPU_B "0000:04:00.0"
#define SB_GPU_C "0000:05:00.0"
#define SB_GPU_D "0000:81:00.0"
#define SB_GPU_F "0000:41:00.0"
#define SB_NIC   "0000:82:00.0"
void sb_two_node_host(SysfsBuilder *sb, uint16_t hb_device);

/* Place the P2P capability in @bdf's config space (the core codec's
 * choice of slot); then set its length byte to @length (8 is valid). */
void sb_set_p2pcap(SysfsBuilder *sb, const char *bdf, unsigned clique,
                   uint8_t length);
