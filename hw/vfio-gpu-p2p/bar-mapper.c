/*
 * vfio-gpu-p2p: peer BAR mappings made by the gpup2p kernel helper
 *
 * With x-gpu-p2p-bar-mapper=helper, the VMM's own IOMMU backend leaves a
 * device's BARs alone, and this listener asks /dev/gpup2p to map each BAR
 * window, wherever the guest places it, into the IOMMU domain of every
 * other assigned device, and to unmap it when the guest moves or disables
 * it. The kernel helper works for any backend (type1 or iommufd).
 *
 * Copyright (c) vfio-gpu-p2p contributors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/ioctl.h>
#include "qapi/error.h"
#include "qapi/util.h"
#include "qemu/error-report.h"
#include "exec/address-spaces.h"
#include "exec/memory.h"
#include "hw/vfio/pci.h"
#include "uapi/gpup2p.h"
#include "trace.h"

/* Every realized vfio-pci device: the initiators a peer BAR is mapped for. */
static bool listener_wanted(VFIOPCIDevice *vdev)
{
    return vdev->gpu_p2p.mapper == VFIO_GPU_P2P_MAPPER_HELPER ||
           vdev->gpu_p2p.audit;
}

static GPtrArray *vfio_devices;
static int helper_fd = -1;
static MemoryListener helper_listener;
static bool listener_registered;

typedef struct HelperMapping {
    MemoryRegion *mr;
    hwaddr gpa;
    VFIOPCIDevice *initiator;
    uint64_t id;
} HelperMapping;

static GArray *helper_mappings;

static const QEnumLookup mapper_lookup = {
    .array = (const char *const[]) {
        [VFIO_GPU_P2P_MAPPER_VMM] = "vmm",
        [VFIO_GPU_P2P_MAPPER_HELPER] = "helper",
    },
    .size = VFIO_GPU_P2P_MAPPER_HELPER + 1,
};

const PropertyInfo vfio_gpu_p2p_prop_mapper = {
    .type = "str",
    .description = "Who maps this device's BARs for peers' DMA: vmm (the "
                   "IOMMU backend, default) or helper (/dev/gpup2p)",
    .enum_table = &mapper_lookup,
    .get = vfio_gpu_p2p_get_enum,
    .set = vfio_gpu_p2p_set_enum,
};

static bool pci_addr_of(VFIOPCIDevice *vdev, uint32_t *addr)
{
    unsigned d, b, s, f;

    if (sscanf(vdev->vbasedev.name, "%x:%x:%x.%x", &d, &b, &s, &f) != 4) {
        return false;
    }
    *addr = GPUP2P_PCI_ADDR(d, b, (s << 3) | f);
    return true;
}

/* The BAR of a helper-mapped or audited device an mmap region is of. */
static bool find_bar(MemoryRegion *mr, VFIOPCIDevice **out, int *bar,
                     VFIOMmap **mmap)
{
    guint i;
    int b;
    uint32_t m;

    for (i = 0; vfio_devices && i < vfio_devices->len; i++) {
        VFIOPCIDevice *vdev = g_ptr_array_index(vfio_devices, i);

        if (!listener_wanted(vdev)) {
            continue;
        }
        for (b = 0; b < PCI_ROM_SLOT; b++) {
            VFIORegion *r = &vdev->bars[b].region;

            for (m = 0; m < r->nr_mmaps; m++) {
                if (&r->mmaps[m].mem == mr) {
                    *out = vdev;
                    *bar = b;
                    *mmap = &r->mmaps[m];
                    return true;
                }
            }
        }
    }
    return false;
}

bool vfio_gpu_p2p_region_is_helper_mapped(MemoryRegion *mr)
{
    VFIOPCIDevice *vdev;
    VFIOMmap *mmap;
    int bar;

    return find_bar(mr, &vdev, &bar, &mmap) &&
           vdev->gpu_p2p.mapper == VFIO_GPU_P2P_MAPPER_HELPER;
}

/*
 * Ask the helper whether the window is mapped in @init's domain, whoever
 * mapped it, and say so: a missing mapping means P2P DMA to it faults.
 */
static void audit_window(VFIOPCIDevice *init, VFIOPCIDevice *peer, int bar,
                         uint64_t offset, uint64_t size, hwaddr iova)
{
    static const char *const status[] = { "ok", "missing", "wrong" };
    struct gpup2p_audit_entry e = {
        .bar = bar, .offset = offset, .size = size, .iova = iova,
    };
    struct gpup2p_audit a = {
        .argsz = sizeof(a), .flags = GPUP2P_AUDIT_BY_ADDRESS, .count = 1,
        .initiator.vfio_group_fd = -1, .entries = (uintptr_t)&e,
    };

    if (!pci_addr_of(init, &a.initiator.pci_addr) ||
        !pci_addr_of(peer, &e.peer)) {
        return;
    }
    if (ioctl(helper_fd, GPUP2P_AUDIT, &a) < 0) {
        warn_report("x-gpu-p2p-audit: %s: %s", init->vbasedev.name,
                    strerror(errno));
        return;
    }
    trace_vfio_gpu_p2p_audit(peer->vbasedev.name, bar, init->vbasedev.name,
                             iova, status[MIN(e.status, 2u)]);
    if (e.status != GPUP2P_AUDIT_OK) {
        warn_report("x-gpu-p2p-audit: BAR %d of %s at 0x%" HWADDR_PRIx
                    " is %s in the IOMMU domain of %s from 0x%" PRIx64
                    ": P2P DMA there will fault (try "
                    "x-gpu-p2p-bar-mapper=helper)", bar, peer->vbasedev.name,
                    iova, status[MIN(e.status, 2u)], init->vbasedev.name,
                    (uint64_t)e.first_bad_iova);
    }
}

static void helper_region_add(MemoryListener *listener,
                              MemoryRegionSection *section)
{
    VFIOPCIDevice *peer;
    VFIOMmap *mmap;
    int bar;
    guint i;

    if (!find_bar(section->mr, &peer, &bar, &mmap)) {
        return;
    }
    /*
     * An IOMMU maps whole pages: a BAR or window smaller than a page, or
     * not page-aligned (a small register BAR, which QEMU widens to a page
     * for the guest), has no exact mapping, and no peer DMA targets it.
     */
    if (peer->bars[bar].size < qemu_real_host_page_size() ||
        int128_get64(section->size) < qemu_real_host_page_size() ||
        (section->offset_within_address_space |
         (mmap->offset + section->offset_within_region)) &
        ~qemu_real_host_page_mask()) {
        return;
    }
    for (i = 0; i < vfio_devices->len; i++) {
        VFIOPCIDevice *init = g_ptr_array_index(vfio_devices, i);
        struct gpup2p_map m = {
            .argsz = sizeof(m),
            .flags = GPUP2P_MAP_READ | GPUP2P_MAP_WRITE,
            .bar = bar,
            .offset = mmap->offset + section->offset_within_region,
            .size = int128_get64(section->size),
            .iova = section->offset_within_address_space,
        };
        HelperMapping hm;

        if (init == peer) {
            continue;
        }
        if (peer->gpu_p2p.mapper != VFIO_GPU_P2P_MAPPER_HELPER) {
            /* The VMM's backend mapped it already: only check. */
            audit_window(init, peer, bar, m.offset, m.size, m.iova);
            continue;
        }
        if (!init->vbasedev.group || !peer->vbasedev.group ||
            !pci_addr_of(init, &m.initiator.pci_addr) ||
            !pci_addr_of(peer, &m.peer.pci_addr)) {
            continue;
        }
        m.initiator.vfio_group_fd = init->vbasedev.group->fd;
        m.peer.vfio_group_fd = peer->vbasedev.group->fd;
        if (ioctl(helper_fd, GPUP2P_MAP, &m) < 0) {
            /* Devices of one container share a domain: mapped already. */
            if (errno != EEXIST) {
                warn_report("x-gpu-p2p-bar-mapper=helper: mapping BAR %d of "
                            "%s at 0x%" HWADDR_PRIx " for %s: %s", bar,
                            peer->vbasedev.name,
                            section->offset_within_address_space,
                            init->vbasedev.name, strerror(errno));
            }
            continue;
        }
        trace_vfio_gpu_p2p_helper_map(peer->vbasedev.name, bar,
                                      init->vbasedev.name, m.iova, m.size,
                                      m.id);
        hm = (HelperMapping){ section->mr, m.iova, init, m.id };
        g_array_append_val(helper_mappings, hm);
        if (peer->gpu_p2p.audit) {
            audit_window(init, peer, bar, m.offset, m.size, m.iova);
        }
    }
}

static void helper_unmap_index(guint i)
{
    HelperMapping *hm = &g_array_index(helper_mappings, HelperMapping, i);
    struct gpup2p_unmap u = { .argsz = sizeof(u), .id = hm->id };

    if (ioctl(helper_fd, GPUP2P_UNMAP, &u) < 0) {
        warn_report("x-gpu-p2p-bar-mapper=helper: unmapping %" PRIu64
                    ": %s", hm->id, strerror(errno));
    }
    trace_vfio_gpu_p2p_helper_unmap(hm->id);
    g_array_remove_index_fast(helper_mappings, i);
}

static void helper_region_del(MemoryListener *listener,
                              MemoryRegionSection *section)
{
    guint i = 0;

    while (helper_mappings && i < helper_mappings->len) {
        HelperMapping *hm = &g_array_index(helper_mappings, HelperMapping, i);

        if (hm->mr == section->mr &&
            hm->gpa == section->offset_within_address_space) {
            helper_unmap_index(i);
        } else {
            i++;
        }
    }
}

bool vfio_gpu_p2p_mapper_realize(VFIOPCIDevice *vdev, Error **errp)
{
    if (!vfio_devices) {
        vfio_devices = g_ptr_array_new();
        helper_mappings = g_array_new(FALSE, FALSE, sizeof(HelperMapping));
    }
    if (listener_wanted(vdev)) {
        if (!vdev->vbasedev.group &&
            vdev->gpu_p2p.mapper == VFIO_GPU_P2P_MAPPER_HELPER) {
            error_setg(errp, "x-gpu-p2p-bar-mapper=helper: %s is not in a "
                       "VFIO group (the helper proves ownership through "
                       "group fds)", vdev->vbasedev.name);
            return false;
        }
        if (helper_fd < 0) {
            helper_fd = open("/dev/" GPUP2P_DEVICE_NAME, O_RDWR | O_CLOEXEC);
            if (helper_fd < 0) {
                error_setg_errno(errp, errno, "%s: /dev/%s",
                                 vdev->gpu_p2p.mapper ==
                                 VFIO_GPU_P2P_MAPPER_HELPER ?
                                 "x-gpu-p2p-bar-mapper=helper" :
                                 "x-gpu-p2p-audit", GPUP2P_DEVICE_NAME);
                error_append_hint(errp, "Load the gpup2p module; QEMU needs "
                                  "CAP_SYS_ADMIN to use it.\n");
                return false;
            }
        }
        if (!listener_registered) {
            helper_listener.name = "vfio-gpu-p2p-helper";
            /* After the container's listener maps, before it unmaps. */
            helper_listener.priority = MEMORY_LISTENER_PRIORITY_DEV_BACKEND + 1;
            helper_listener.region_add = helper_region_add;
            helper_listener.region_del = helper_region_del;
            memory_listener_register(&helper_listener, &address_space_memory);
            listener_registered = true;
        }
    }
    g_ptr_array_add(vfio_devices, vdev);
    return true;
}

void vfio_gpu_p2p_mapper_exit(VFIOPCIDevice *vdev)
{
    guint i = 0;

    if (!vfio_devices || !g_ptr_array_remove(vfio_devices, vdev)) {
        return;
    }
    while (i < helper_mappings->len) {
        HelperMapping *hm = &g_array_index(helper_mappings, HelperMapping, i);
        VFIOPCIDevice *peer;
        VFIOMmap *mmap;
        int bar;

        if (hm->initiator == vdev ||
            (find_bar(hm->mr, &peer, &bar, &mmap) && peer == vdev)) {
            helper_unmap_index(i);
        } else {
            i++;
        }
    }
}
