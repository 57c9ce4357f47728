/*
 * vfio-gpu-p2p: NVIDIA P2P clique capability from the host's topology
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_VFIO_GPU_P2P_H
#define HW_VFIO_GPU_P2P_H

#include "hw/qdev-properties.h"

typedef struct VFIOPCIDevice VFIOPCIDevice;

/* Property values as stored: 0 off, 1 auto, 2 + id. */
#define VFIO_GPU_P2P_CLIQUE_OFF      0
#define VFIO_GPU_P2P_CLIQUE_AUTO     1
#define VFIO_GPU_P2P_CLIQUE_ID(n)    (2 + (n))

typedef enum VFIOGpuP2PVerify {
    VFIO_GPU_P2P_VERIFY_REFUSE,
    VFIO_GPU_P2P_VERIFY_WARN,
    VFIO_GPU_P2P_VERIFY_TRUST,
} VFIOGpuP2PVerify;

typedef struct VFIOGpuP2P {
    /* Properties */
    uint8_t clique;             /* see VFIO_GPU_P2P_CLIQUE_* */
    uint8_t verify;             /* VFIOGpuP2PVerify */
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
} VFIOGpuP2P;

extern const PropertyInfo vfio_gpu_p2p_prop_clique;
extern const PropertyInfo vfio_gpu_p2p_prop_verify;

void vfio_gpu_p2p_class_init(ObjectClass *klass);
bool vfio_gpu_p2p_realize(VFIOPCIDevice *vdev, Error **errp);
void vfio_gpu_p2p_exit(VFIOPCIDevice *vdev);

#endif /* HW_VFIO_GPU_P2P_H */
