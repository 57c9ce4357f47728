/*
 * vfio-gpu-p2p: NVIDIA P2P clique capability from the host's topology
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_VFIO_GPU_P2P_H
#define HW_VFIO_GPU_P2P_H

#include "hw/qdev-properties.h"
#include "qapi/qapi-types-vfio.h"

typedef struct VFIOPCIDevice VFIOPCIDevice;
typedef struct VFIOContainerBase VFIOContainerBase;

/* How one BAR of the device was last offered to an IOMMU for peers. */
typedef struct VFIOGpuP2PBarMap {
    /*
     * Keyed by container and section: a BAR split around its MSI-X table
     * gives two sections, and a device may sit in more than one container.
     */
    const void *container;
    char *region;               /* the memory region's name */
    uint64_t offset;            /* the section's offset within the region */
    const char *path;           /* the container type that mapped it */
    uint64_t iova, size;
    int err;                    /* 0 mapped, else -errno or -EINVAL */
    char *why;                  /* why not, when err != 0 */
    bool live;                  /* false once the section went away */
    bool reported;              /* its failure was reported once */
} VFIOGpuP2PBarMap;

/*
 * The machine type of machine.c: the newest q35 of this QEMU with
 * x-gpu-p2p-clique=auto as a compat property.
 */
#define VFIO_GPU_P2P_Q35_BASE   "pc-q35-10.0"
#define VFIO_GPU_P2P_Q35_ALIAS  "q35-gpup2p"

/* Property values as stored: 0 off, 1 auto, 2 + id. */
#define VFIO_GPU_P2P_CLIQUE_OFF      0
#define VFIO_GPU_P2P_CLIQUE_AUTO     1
#define VFIO_GPU_P2P_CLIQUE_ID(n)    (2 + (n))


typedef struct VFIOGpuP2P {
    /* Properties */
    uint8_t clique;             /* see VFIO_GPU_P2P_CLIQUE_* */
    VfioGpuP2pVerify verify;    /* qapi/vfio.json */
    bool cap_anywhere;          /* place past C8h/D4h when both are taken */
    char *host_snapshot;        /* a captured sysfs tree to read instead */

    /* State; all zero until realize */
    bool has_cap;               /* the capability is in the list */
    uint8_t cap_offset;
    int8_t id;                  /* -1: none yet */
    char *host_bdf;             /* the host PCI address, NULL: unknown */
    char *source;               /* where the host topology came from */
    Error *migration_blocker;
    bool registered;
    /* Why peers' writes to its BARs would fault; NULL: they would not. */
    char *unmappable;
    GPtrArray *bar_maps;        /* VFIOGpuP2PBarMap *, as the listener saw */
    /*
     * The window check's last warning, so that a re-check at hot-plug
     * repeats nothing; NULL: none given.
     */
    char *window_warned;
} VFIOGpuP2P;

extern const PropertyInfo vfio_gpu_p2p_prop_clique;
extern const PropertyInfo vfio_gpu_p2p_prop_verify;

void vfio_gpu_p2p_class_init(ObjectClass *klass);
bool vfio_gpu_p2p_realize(VFIOPCIDevice *vdev, Error **errp);
void vfio_gpu_p2p_exit(VFIOPCIDevice *vdev);
/*
 * Whether a guest config write lands on the capability: such writes stay
 * in QEMU (write mask 0) and are not passed to the device.
 */
bool vfio_gpu_p2p_owns_config(VFIOPCIDevice *vdev, uint32_t addr, int len);
/*
 * From the container's listener, for every RAM-device section (a BAR's
 * mmap) it offers to the IOMMU: @err 0 when mapped, else why not.
 */
void vfio_gpu_p2p_ram_device_map(VFIOContainerBase *bcontainer,
                                 MemoryRegionSection *section, uint64_t iova,
                                 uint64_t size, int err, const char *why);
void vfio_gpu_p2p_ram_device_unmap(VFIOContainerBase *bcontainer,
                                   MemoryRegionSection *section);

#endif /* HW_VFIO_GPU_P2P_H */
