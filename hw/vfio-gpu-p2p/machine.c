/*
 * vfio-gpu-p2p: a q35 machine type whose vfio-pci devices default to
 * x-gpu-p2p-clique=auto
 *
 * The capability changes what the guest sees in config space, so a
 * default of "auto" belongs to a machine type, never to the build: a VM
 * started as pc-q35-X.Y keeps stock QEMU's guest ABI (and migrates to and
 * from it), and a fleet opts in by choosing this type (Nova's
 * hw_machine_type, KubeVirt's machine type, libvirt's <type machine=>)
 * with no per-VM edit. It is its parent q35 version, compat properties
 * included, plus one compat property.
 *
 * Copyright (c) vfio-gpu-p2p contributors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "hw/boards.h"
#include "hw/vfio-gpu-p2p/vfio-gpu-p2p.h"

static GlobalProperty gpu_p2p_machine_props[] = {
    { "vfio-pci", "x-gpu-p2p-clique", "auto" },
};

static void gpu_p2p_q35_class_init(ObjectClass *oc, void *data)
{
    MachineClass *mc = MACHINE_CLASS(oc);
    MachineClass *parent = MACHINE_CLASS(object_class_get_parent(oc));
    guint i;

    mc->desc = "Standard PC (Q35 + ICH9, 2009) as " VFIO_GPU_P2P_Q35_BASE
               ", NVIDIA P2P cliques from the host (x-gpu-p2p-clique=auto)";
    /* The parent's "q35" alias and default flag stay the parent's. */
    mc->alias = VFIO_GPU_P2P_Q35_ALIAS;
    mc->is_default = false;
    /*
     * The machine base_init gives every machine class an empty
     * compat_props, so the parent's (pc_q35_compat_defaults and, on an
     * older base, its hw_compat/pc_compat tables) must be carried over or
     * this type would differ from its parent in guest ABI. Ours go last so
     * they take effect over the parent's.
     */
    for (i = 0; i < parent->compat_props->len; i++) {
        g_ptr_array_add(mc->compat_props,
                        g_ptr_array_index(parent->compat_props, i));
    }
    compat_props_add(mc->compat_props, gpu_p2p_machine_props,
                     G_N_ELEMENTS(gpu_p2p_machine_props));
}

static const TypeInfo gpu_p2p_q35_info = {
    .name = MACHINE_TYPE_NAME(VFIO_GPU_P2P_Q35_BASE "-gpup2p"),
    .parent = MACHINE_TYPE_NAME(VFIO_GPU_P2P_Q35_BASE),
    .class_init = gpu_p2p_q35_class_init,
};

static void gpu_p2p_machine_register(void)
{
    type_register_static(&gpu_p2p_q35_info);
}

type_init(gpu_p2p_machine_register)
