/*
 * vfio-gpu-p2p: NVIDIA P2P clique capability from the host's topology
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_VFIO_GPU_P2P_H
#define HW_VFIO_GPU_P2P_H

#include "hw/qdev-properties.h"

typedef struct VFIOPCIDevice VFIOPCIDevice;

/* Property values as stored: 0 off (the default), 1 auto, 2 + id. */
#define VFIO_GPU_P2P_CLIQUE_OFF      0
#define VFIO_GPU_P2P_CLIQUE_AUTO     1
#define VFIO_GPU_P2P_CLIQUE_ID(n)    (2 + (n))

typedef enum VFIOGpuP2PVerify {
    VFIO_GPU_P2P_VERIFY_REFUSE,
    VFIO_GPU_P2P_VERIFY_WARN,
    VFIO_GPU_P2P_VERIFY_TRUST,
} VFIOGpuP2PVerify;

typedef enum VFIOGpuP2PMapper {
    VFIO_GPU_P2P_MAPPER_VMM,    /* the VMM's IOMMU backend maps BARs */
    VFIO_GPU_P2P_MAPPER_HELPER, /* the gpup2p kernel helper does */
} VFIOGpuP2PMapper;

typedef struct VFIOGpuP2P {
    uint8_t clique;             /* see VFIO_GPU_P2P_CLIQUE_* */
    uint8_t mapper;             /* VFIOGpuP2PMapper */
    bool audit;                 /* check peer BAR mappings with the helper */
    uint8_t verify;             /* VFIOGpuP2PVerify */
    char *host_plan;            /* `gpup2p plan --json` written as root */
    int id_in_effect;           /* -1: no capability */
    int cap_offset;             /* -1: none placed */
    char *source;               /* where the host topology came from */
    bool registered;
} VFIOGpuP2P;

extern const PropertyInfo vfio_gpu_p2p_prop_clique;
extern const PropertyInfo vfio_gpu_p2p_prop_verify;
extern const PropertyInfo vfio_gpu_p2p_prop_mapper;

/* Get and set for string-valued enum properties (enum_table names). */
void vfio_gpu_p2p_get_enum(Object *obj, Visitor *v, const char *name,
                           void *opaque, Error **errp);
void vfio_gpu_p2p_set_enum(Object *obj, Visitor *v, const char *name,
                           void *opaque, Error **errp);

void vfio_gpu_p2p_class_init(ObjectClass *klass);
bool vfio_gpu_p2p_realize(VFIOPCIDevice *vdev, Error **errp);
void vfio_gpu_p2p_exit(VFIOPCIDevice *vdev);

/* Peer BAR mappings by the kernel helper (bar-mapper.c). */
bool vfio_gpu_p2p_mapper_realize(VFIOPCIDevice *vdev, Error **errp);
void vfio_gpu_p2p_mapper_exit(VFIOPCIDevice *vdev);
/* Whether the VMM's own listener must leave this region to the helper. */
bool vfio_gpu_p2p_region_is_helper_mapped(MemoryRegion *mr);

#endif /* HW_VFIO_GPU_P2P_H */
