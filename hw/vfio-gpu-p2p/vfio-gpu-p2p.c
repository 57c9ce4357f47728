/*
 * vfio-gpu-p2p: the NVIDIA P2P clique capability, computed from the host
 *
 * QEMU's x-nv-gpudirect-clique makes the operator pick a clique id and
 * trusts it. Here "auto" works the ids out from the host's PCI topology with
 * the vfio-gpu-p2p core library, explicit ids are constraints the planner
 * respects and are checked against the host, and the capability goes where
 * upstream puts it (C8h, else D4h), last in the list.
 *
 * Copyright (c) vfio-gpu-p2p contributors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <sys/ioctl.h>
#include <linux/vfio.h>
#include <linux/iommufd.h>
#include "qapi/error.h"
#include "qapi/util.h"
#include "qapi/visitor.h"
#include "qapi/qapi-visit-vfio.h"
#include "qemu/cutils.h"
#include "qemu/error-report.h"
#include "hw/boards.h"
#include "hw/core/cpu.h"
#include "hw/qdev-core.h"
#include "hw/core/qdev-prop-internal.h"
#include "hw/pci/pci.h"
#include "migration/blocker.h"
#include "hw/vfio/pci.h"
#include "hw/vfio/vfio-common.h"
#include "hw/vfio/vfio-container-base.h"
#include "system/iommufd.h"
#include "qemu/range.h"
#include "gpup2p/bar-gate.h"
#include "gpup2p/p2pcap.h"
#include "gpup2p/plan.h"
#include "trace.h"

/* Written by `gpup2p snapshot` and kept current by a root service. */
#define HOST_SNAPSHOT_DEFAULT "/run/gpup2p/host"

/* The host facts pair verdicts come from, read once per VM. */
typedef struct HostSource {
    char *name;                 /* "sysfs" or "snapshot DIR" */
    GpTopology *topo;
} HostSource;

/*
 * What the devices of one machine share, kept in a child of the machine
 * object ("/machine/gpu-p2p") rather than in file-scope variables: its
 * life is the machine's, and qom-list shows it.
 */
#define TYPE_VFIO_GPU_P2P_VM "vfio-gpu-p2p-vm"
OBJECT_DECLARE_SIMPLE_TYPE(VFIOGpuP2PVm, VFIO_GPU_P2P_VM)

struct VFIOGpuP2PVm {
    Object parent_obj;
    GPtrArray *devices;         /* every vfio-pci device with the cap */
    Notifier machine_done;      /* .notify set once registered */
    DeviceListener plugged;     /* the window re-check after a hot plug */
    HostSource *host_source;
    char *host_source_error;    /* why there is none */
    GpBarGateHost *bar_gate_host;   /* the BAR gate's host facts */
};

#define VM_STATE_CHILD "gpu-p2p"

/* The machine's state, NULL before any device needed one. */
static VFIOGpuP2PVm *vm_state_peek(void)
{
    Object *o = object_resolve_path_component(qdev_get_machine(),
                                              VM_STATE_CHILD);

    return o ? VFIO_GPU_P2P_VM(o) : NULL;
}

static void device_plugged(DeviceListener *listener, DeviceState *dev);

static VFIOGpuP2PVm *vm_state(void)
{
    VFIOGpuP2PVm *vm = vm_state_peek();
    Object *o;

    if (!vm) {
        o = object_new(TYPE_VFIO_GPU_P2P_VM);
        object_property_add_child(qdev_get_machine(), VM_STATE_CHILD, o);
        object_unref(o);
        vm = VFIO_GPU_P2P_VM(o);
        /* Its replay of existing devices finds vm->devices empty. */
        vm->plugged.realize = device_plugged;
        device_listener_register(&vm->plugged);
    }
    return vm;
}

/* ------------------------------------------------------------------ */
/* Properties                                                          */

static bool clique_from_text(const char *name, const char *text,
                             uint8_t *ptr, Error **errp)
{
    uint64_t id;

    if (!strcmp(text, "off")) {
        *ptr = VFIO_GPU_P2P_CLIQUE_OFF;
    } else if (!strcmp(text, "auto")) {
        *ptr = VFIO_GPU_P2P_CLIQUE_AUTO;
    } else if (text[0] && strspn(text, "0123456789") == strlen(text) &&
               !parse_uint_full(text, 10, &id) &&
               id <= GP_P2PCAP_MAX_CLIQUE) {
        /*
         * Digits only: parse_uint_full() alone takes blanks and a sign,
         * and qemu_strtou64() wraps a negative number into range.
         */
        *ptr = VFIO_GPU_P2P_CLIQUE_ID(id);
    } else {
        error_setg(errp, "Property %s: '%s' is not off, auto or a clique "
                   "id 0-%d", name, text, GP_P2PCAP_MAX_CLIQUE);
        return false;
    }
    return true;
}

/* The text form every input syntax gives: off, auto or the id. */
static void get_clique(Object *obj, Visitor *v, const char *name,
                       void *opaque, Error **errp)
{
    const Property *prop = opaque;
    uint8_t *ptr = object_field_prop_ptr(obj, prop);
    g_autofree char *text = NULL;

    if (*ptr >= VFIO_GPU_P2P_CLIQUE_ID(0)) {
        text = g_strdup_printf("%d", *ptr - VFIO_GPU_P2P_CLIQUE_ID(0));
    } else {
        text = g_strdup(*ptr == VFIO_GPU_P2P_CLIQUE_AUTO ? "auto" : "off");
    }
    visit_type_str(v, name, &text, errp);
}

/*
 * A string in every syntax (-device k=v, -global, compat properties,
 * JSON -device and device_add): the string visitor of -global and of
 * machine compat properties cannot visit alternates, so one type serves
 * all. A JSON integer is refused by the visitor, naming the property.
 */
static void set_clique(Object *obj, Visitor *v, const char *name,
                       void *opaque, Error **errp)
{
    const Property *prop = opaque;
    uint8_t *ptr = object_field_prop_ptr(obj, prop);
    g_autofree char *text = NULL;

    if (visit_type_str(v, name, &text, errp)) {
        clique_from_text(name, text, ptr, errp);
    }
}

/* off: stock QEMU's guest ABI; auto is the default of machine.c's type. */
static void set_clique_default(ObjectProperty *op, const Property *prop)
{
    object_property_set_default_str(op, "off");
}

const PropertyInfo vfio_gpu_p2p_prop_clique = {
    .type = "str",
    .description = "NVIDIA P2P clique: off, auto (from the host "
                   "topology) or an id 0-15",
    .get = get_clique,
    .set = set_clique,
    .set_default_value = set_clique_default,
};

/* A QAPI enum (qapi/vfio.json), so management can read its values. */
const PropertyInfo vfio_gpu_p2p_prop_verify = {
    .type = "VfioGpuP2pVerify",
    .description = "What an explicit clique id the host topology "
                   "contradicts gets: refuse (default), warn or trust",
    .enum_table = &VfioGpuP2pVerify_lookup,
    .get = qdev_propinfo_get_enum,
    .set = qdev_propinfo_set_enum,
    .set_default_value = qdev_propinfo_set_default_value_enum,
};

static int id_in_effect(VFIOPCIDevice *vdev)
{
    return vdev->gpu_p2p.has_cap ? vdev->gpu_p2p.id : -1;
}

static void get_id_in_effect(Object *obj, Visitor *v, const char *name,
                             void *opaque, Error **errp)
{
    int64_t id = id_in_effect(VFIO_PCI(obj));

    visit_type_int(v, name, &id, errp);
}

static char *get_source(Object *obj, Error **errp)
{
    VFIOPCIDevice *vdev = VFIO_PCI(obj);

    return g_strdup(vdev->gpu_p2p.source ? vdev->gpu_p2p.source : "");
}

/* What a vIOMMU in front of the device is, e.g. "intel-iommu". */
static const char *viommu_name(VFIODevice *vbasedev)
{
    AddressSpace *as = vbasedev->bcontainer->space->as;
    Object *owner = memory_region_owner(as->root);

    return owner ? object_get_typename(owner) : as->name;
}

/*
 * Behind a vIOMMU, why the record misses maps: the guest's IOMMU maps
 * reach VFIO through its notifier, not through the RAM-device sections
 * recorded here. NULL elsewhere.
 */
static char *unrecorded_why(VFIOPCIDevice *vdev)
{
    if (!vdev->vbasedev.bcontainer || !vfio_viommu_preset(&vdev->vbasedev)) {
        return NULL;
    }
    return g_strdup_printf("behind a vIOMMU (%s), the guest's own IOMMU "
                           "maps decide which BARs peers reach; maps made "
                           "through its notifier are not recorded here",
                           viommu_name(&vdev->vbasedev));
}

/*
 * The names of the VFIO devices in @container now, none once it is gone:
 * read from QEMU's list of devices, so that a container that went away
 * is never touched.
 */
static GPtrArray *container_devices(const void *container)
{
    GPtrArray *names = g_ptr_array_new();
    VFIODevice *vbasedev;

    QLIST_FOREACH(vbasedev, &vfio_device_list, global_next) {
        if ((const void *)vbasedev->bcontainer == container) {
            g_ptr_array_add(names, vbasedev->name);
        }
    }
    return names;
}

/* Whether @p's live maps were made by more than one container. */
static bool maps_span_containers(const VFIOGpuP2P *p)
{
    const void *first = NULL;
    unsigned i;

    for (i = 0; p->bar_maps && i < p->bar_maps->len; i++) {
        VFIOGpuP2PBarMap *m = g_ptr_array_index(p->bar_maps, i);

        if (!m->live) {
            continue;
        }
        if (first && m->container != first) {
            return true;
        }
        first = m->container;
    }
    return false;
}

/*
 * "REGION[+0xOFFSET]: PATH 0xIOVA+0xSIZE" or "REGION[+0xOFFSET]: not mapped
 * by PATH (WHY)", joined by "; ", each followed by " in the container of
 * DEVICES" where more than one container made them (behind a vIOMMU, one
 * per device). Behind a vIOMMU, what the record misses follows, as the
 * QAPI struct's "unrecorded" says it.
 */
static void describe_bar_maps(GString *out, VFIOPCIDevice *vdev)
{
    VFIOGpuP2P *p = &vdev->gpu_p2p;
    g_autofree char *why = NULL;
    unsigned shown = 0, i;
    bool name_containers = maps_span_containers(p);

    if (p->unmappable) {
        g_string_append_printf(out, "none: %s", p->unmappable);
        return;
    }
    for (i = 0; p->bar_maps && i < p->bar_maps->len; i++) {
        VFIOGpuP2PBarMap *m = g_ptr_array_index(p->bar_maps, i);

        if (!m->live) {
            continue;
        }
        g_string_append_printf(out, "%s%s", shown++ ? "; " : "",
                               m->region);
        if (m->offset) {
            g_string_append_printf(out, "+0x%" PRIx64, m->offset);
        }
        g_string_append(out, ": ");
        if (m->err) {
            g_string_append_printf(out, "not mapped by %s (%s)", m->path,
                                   m->why);
        } else {
            g_string_append_printf(out, "%s 0x%" PRIx64 "+0x%" PRIx64,
                                   m->path, m->iova, m->size);
        }
        if (name_containers) {
            g_autoptr(GPtrArray) names = container_devices(m->container);
            g_autofree char *list = NULL;

            g_ptr_array_add(names, NULL);
            list = g_strjoinv(", ", (char **)names->pdata);
            g_string_append_printf(out, " in the container of %s",
                                   *list ? list : "no device now (closed)");
        }
    }
    why = unrecorded_why(vdev);
    if (shown && why) {
        g_string_append_printf(out, "; others not recorded: %s", why);
    } else if (why) {
        g_string_append_printf(out, "none recorded: %s", why);
    } else if (!shown) {
        g_string_append(out, "none (no BAR of it in the guest's address "
                        "space)");
    }
}

/* The same as a QAPI struct (qapi/vfio.json) that a client reads over QMP */
static void get_bar_map_status(Object *obj, Visitor *v, const char *name,
                               void *opaque, Error **errp)
{
    VFIOGpuP2P *p = &VFIO_PCI(obj)->gpu_p2p;
    VfioGpuP2pBarMaps *status = g_new0(VfioGpuP2pBarMaps, 1);
    VfioGpuP2pBarMapList **tail = &status->maps;
    unsigned i, j;

    status->unmappable = g_strdup(p->unmappable);
    status->unrecorded = unrecorded_why(VFIO_PCI(obj));
    for (i = 0; p->bar_maps && i < p->bar_maps->len; i++) {
        VFIOGpuP2PBarMap *m = g_ptr_array_index(p->bar_maps, i);
        VfioGpuP2pBarMap *entry;
        strList **devtail;
        GPtrArray *names;

        if (!m->live) {
            continue;
        }
        entry = g_new0(VfioGpuP2pBarMap, 1);
        entry->region = g_strdup(m->region);
        entry->offset = m->offset;
        entry->backend = g_strdup(m->path);
        entry->mapped = !m->err;
        entry->iova = m->iova;
        entry->size = m->size;
        entry->reason = g_strdup(m->why);
        names = container_devices(m->container);
        devtail = &entry->container;
        for (j = 0; j < names->len; j++) {
            QAPI_LIST_APPEND(devtail,
                             g_strdup(g_ptr_array_index(names, j)));
        }
        g_ptr_array_unref(names);
        QAPI_LIST_APPEND(tail, entry);
    }
    visit_type_VfioGpuP2pBarMaps(v, name, &status, errp);
    qapi_free_VfioGpuP2pBarMaps(status);
}

static char *get_bar_maps(Object *obj, Error **errp)
{
    GString *out = g_string_new(NULL);

    describe_bar_maps(out, VFIO_PCI(obj));
    return g_string_free(out, false);
}

/* The BAR mappings of every other device holding the same clique id. */
static char *get_peer_maps(Object *obj, Error **errp)
{
    VFIOPCIDevice *vdev = VFIO_PCI(obj);
    GString *out = g_string_new(NULL);
    VFIOGpuP2PVm *vm = vm_state_peek();
    int id = id_in_effect(vdev);
    unsigned i;

    for (i = 0; id >= 0 && vm && i < vm->devices->len; i++) {
        VFIOPCIDevice *o = g_ptr_array_index(vm->devices, i);

        if (o == vdev || id_in_effect(o) != id) {
            continue;
        }
        g_string_append_printf(out, "%s%s: {", out->len ? "; " : "",
                               o->vbasedev.name);
        describe_bar_maps(out, o);
        g_string_append_c(out, '}');
    }
    return g_string_free(out, false);
}

void vfio_gpu_p2p_class_init(ObjectClass *klass)
{
    object_class_property_add(klass, "x-gpu-p2p-clique-in-effect", "int",
                              get_id_in_effect, NULL, NULL, NULL);
    object_class_property_set_description(klass,
        "x-gpu-p2p-clique-in-effect",
        "The P2P clique id the guest sees, -1 for none (read-only)");
    object_class_property_add_str(klass, "x-gpu-p2p-source", get_source,
                                  NULL);
    object_class_property_set_description(klass, "x-gpu-p2p-source",
        "Where the host topology for x-gpu-p2p-clique came from (read-only)");
    object_class_property_add_str(klass, "x-gpu-p2p-bar-maps", get_bar_maps,
                                  NULL);
    object_class_property_set_description(klass, "x-gpu-p2p-bar-maps",
        "Where the IOMMU maps this device's BARs for its P2P peers, as the "
        "container's listener last did or failed (read-only)");
    object_class_property_add(klass, "x-gpu-p2p-bar-map-status",
                              "VfioGpuP2pBarMaps", get_bar_map_status, NULL,
                              NULL, NULL);
    object_class_property_set_description(klass, "x-gpu-p2p-bar-map-status",
        "x-gpu-p2p-bar-maps as a VfioGpuP2pBarMaps struct (read-only)");
    object_class_property_add_str(klass, "x-gpu-p2p-peer-maps",
                                  get_peer_maps, NULL);
    object_class_property_set_description(klass, "x-gpu-p2p-peer-maps",
        "x-gpu-p2p-bar-maps of every device in this device's P2P clique "
        "(read-only)");
    object_class_property_set_description(klass, "x-gpu-p2p-host-snapshot",
        "A host topology captured by 'gpup2p snapshot DIR' to read instead "
        "of sysfs (default: sysfs, then " HOST_SNAPSHOT_DEFAULT ")");
    object_class_property_set_description(klass, "x-gpu-p2p-cap-anywhere",
        "Place the P2P capability past C8h and D4h when both are taken "
        "(hides whatever registers the device has there)");
}

/* ------------------------------------------------------------------ */
/* Host topology                                                       */

static const char *name_of(VFIOPCIDevice *vdev)
{
    return vdev->vbasedev.name;
}

static void host_source_free(HostSource *s)
{
    if (s) {
        g_free(s->name);
        gp_topo_free(s->topo);
        g_free(s);
    }
}

static HostSource *host_source_read(const char *root, const char *name,
                                    GError **errp)
{
    GpTopology *topo = gp_topo_read(root, errp);
    HostSource *s;

    if (!topo) {
        return NULL;
    }
    s = g_new0(HostSource, 1);
    s->name = g_strdup(name);
    s->topo = topo;
    return s;
}

/*
 * The live sysfs when it is complete (QEMU runs as root), else the
 * snapshot a root service keeps at HOST_SNAPSHOT_DEFAULT; @snapshot, when
 * set, instead of both. NULL, with vm->host_source_error saying why, when
 * there is none.
 */
static HostSource *host_source_get(VFIOGpuP2PVm *vm, const char *snapshot)
{
    g_autoptr(GError) live_err = NULL;
    g_autoptr(GError) snap_err = NULL;
    g_autofree char *snap_name = NULL;
    g_autofree char *live_why = NULL;
    HostSource *s;

    if (vm->host_source || vm->host_source_error) {
        return vm->host_source;
    }
    if (snapshot) {
        snap_name = g_strdup_printf("snapshot %s", snapshot);
        vm->host_source = host_source_read(snapshot, snap_name, &snap_err);
        if (!vm->host_source) {
            vm->host_source_error = g_strdup_printf("x-gpu-p2p-host-snapshot: "
                                                "%s", snap_err->message);
        }
        return vm->host_source;
    }
    s = host_source_read("/", "sysfs", &live_err);
    if (s && !s->topo->config_truncated) {
        vm->host_source = s;
        return s;
    }
    live_why = s ? g_strdup_printf("the config space of %u devices is cut "
                                   "short (not root)",
                                   s->topo->config_truncated) :
                   g_strdup(live_err->message);
    host_source_free(s);
    snap_name = g_strdup_printf("snapshot %s", HOST_SNAPSHOT_DEFAULT);
    vm->host_source = host_source_read(HOST_SNAPSHOT_DEFAULT, snap_name,
                                   &snap_err);
    if (!vm->host_source) {
        vm->host_source_error = g_strdup_printf("sysfs: %s; %s: %s", live_why,
                                            HOST_SNAPSHOT_DEFAULT,
                                            snap_err->message);
    }
    return vm->host_source;
}

/* The host source for @vdev, noted in its x-gpu-p2p-source. */
static HostSource *source_for(VFIOPCIDevice *vdev)
{
    HostSource *src = host_source_get(vm_state(),
                                      vdev->gpu_p2p.host_snapshot);

    if (src && !vdev->gpu_p2p.source) {
        vdev->gpu_p2p.source = g_strdup(src->name);
        trace_vfio_gpu_p2p_source(name_of(vdev), src->name);
    }
    return src;
}

static void host_source_reset(VFIOGpuP2PVm *vm)
{
    g_clear_pointer(&vm->host_source, host_source_free);
    g_clear_pointer(&vm->host_source_error, g_free);
}

/*
 * The device's address on the host: from host=, else from the sysfs path
 * (an mdev's parent is the PCI device). NULL for an fd= device without
 * either.
 */
static char *host_bdf_of(VFIOPCIDevice *vdev)
{
    char bdf[GP_BDF_LEN];
    g_autofree char *path = NULL;
    g_autofree char *base = NULL;
    g_autofree char *parent = NULL;
    g_autofree char *parent_base = NULL;

    if (~vdev->host.domain && ~vdev->host.bus && ~vdev->host.slot &&
        ~vdev->host.function) {
        return g_strdup_printf("%04x:%02x:%02x.%x", vdev->host.domain,
                               vdev->host.bus, vdev->host.slot,
                               vdev->host.function);
    }
    if (!vdev->vbasedev.sysfsdev) {
        return NULL;
    }
    path = realpath(vdev->vbasedev.sysfsdev, NULL);
    if (!path) {
        return NULL;
    }
    base = g_path_get_basename(path);
    if (gp_bdf_normalize(base, bdf)) {
        return g_strdup(bdf);
    }
    parent = g_path_get_dirname(path);
    parent_base = g_path_get_basename(parent);
    return gp_bdf_normalize(parent_base, bdf) ? g_strdup(bdf) : NULL;
}

/* Why the host topology cannot place @vdev, or NULL when it can. */
static char *host_unknown_why(VFIOPCIDevice *vdev, HostSource *src)
{
    if (!src) {
        VFIOGpuP2PVm *vm = vm_state_peek();

        return g_strdup_printf("no host topology: %s",
                               vm && vm->host_source_error ?
                               vm->host_source_error : "none read");
    }
    if (!vdev->gpu_p2p.host_bdf) {
        return g_strdup("its host PCI address is unknown (fd= without "
                        "host= or sysfsdev=)");
    }
    if (!gp_topo_find(src->topo, vdev->gpu_p2p.host_bdf)) {
        return g_strdup_printf("%s is not in the host topology (%s)",
                               vdev->gpu_p2p.host_bdf, src->name);
    }
    return NULL;
}

/*
 * Whether two devices may share a clique on the host: 1 yes, 0 no, -1 the
 * topology cannot tell; @why gives the core library's reason.
 */
static int host_pair(HostSource *src, VFIOPCIDevice *a, VFIOPCIDevice *b,
                     char **why)
{
    GpDevice *da, *db;
    GpP2pVerdict v;
    int res;

    *why = NULL;
    if (!src || !a->gpu_p2p.host_bdf || !b->gpu_p2p.host_bdf) {
        *why = host_unknown_why(src && a->gpu_p2p.host_bdf ? b : a, src);
        return -1;
    }
    da = gp_topo_find(src->topo, a->gpu_p2p.host_bdf);
    db = gp_topo_find(src->topo, b->gpu_p2p.host_bdf);
    if (!da || !db) {
        *why = host_unknown_why(da ? b : a, src);
        return -1;
    }
    gp_p2p_verdict(src->topo, da, db, &v);
    /* A clique promises that the guest's requests arrive: the VM rule. */
    res = v.vm_kind == GP_VM_P2P_UNKNOWN ? -1 : gp_vm_p2p_ok(v.vm_kind);
    *why = g_strdup_printf("guest P2P %s: %s",
                           gp_vm_p2p_kind_name(v.vm_kind), v.vm_reason);
    gp_p2p_verdict_clear(&v);
    trace_vfio_gpu_p2p_pair(a->gpu_p2p.host_bdf, b->gpu_p2p.host_bdf, res,
                            *why);
    return res;
}

/* ------------------------------------------------------------------ */
/* The capability                                                      */

static bool is_auto(VFIOPCIDevice *vdev)
{
    return vdev->gpu_p2p.clique == VFIO_GPU_P2P_CLIQUE_AUTO;
}

static int explicit_id(VFIOPCIDevice *vdev)
{
    return is_auto(vdev) ? -1 : vdev->gpu_p2p.clique -
                                VFIO_GPU_P2P_CLIQUE_ID(0);
}

static void set_cap_clique(VFIOPCIDevice *vdev, int id, const char *how)
{
    VFIOGpuP2P *p = &vdev->gpu_p2p;

    p->id = id;
    gp_p2pcap_set_clique(vdev->pdev.config + p->cap_offset, id);
    trace_vfio_gpu_p2p_clique(name_of(vdev), id, p->cap_offset, how);
}

/*
 * Take the capability placed at realize out of the list again, and give
 * the guest the device's own bytes there, as if it had never been added.
 */
static void remove_cap(VFIOPCIDevice *vdev, const char *why)
{
    VFIOGpuP2P *p = &vdev->gpu_p2p;
    PCIDevice *pdev = &vdev->pdev;
    uint8_t *link = &pdev->config[PCI_CAPABILITY_LIST];
    int off = p->cap_offset, hops = 0;

    trace_vfio_gpu_p2p_no_clique(name_of(vdev), why);
    if (!p->has_cap) {
        return;
    }
    while (*link && *link != off && hops++ < PCI_CONFIG_SPACE_SIZE / 4) {
        link = &pdev->config[*link + PCI_CAP_LIST_NEXT];
    }
    if (*link == off) {
        *link = pdev->config[off + PCI_CAP_LIST_NEXT];
    }
    if (!pdev->config[PCI_CAPABILITY_LIST]) {
        pdev->config[PCI_STATUS] &= ~PCI_STATUS_CAP_LIST;
    }
    memset(pdev->config + off, 0, GP_P2PCAP_LENGTH);
    memset(pdev->cmask + off, 0, GP_P2PCAP_LENGTH);
    memset(pdev->used + off, 0, GP_P2PCAP_LENGTH);
    memset(vdev->emulated_config_bits + off, 0, GP_P2PCAP_LENGTH);
    p->has_cap = false;
    p->id = -1;
    migrate_del_blocker(&p->migration_blocker);
    if (p->registered) {
        g_ptr_array_remove(vm_state()->devices, vdev);
        p->registered = false;
    }
}

/* ------------------------------------------------------------------ */
/* Clique assignment                                                   */

typedef struct PairCtx {
    GPtrArray *devs;            /* VFIOPCIDevice * */
    int8_t *known;              /* n x n: 1, 0, -1 unknown; NULL: ask */
} PairCtx;

static bool pair_allowed(unsigned i, unsigned j, void *opaque)
{
    PairCtx *c = opaque;
    g_autofree char *why = NULL;

    if (c->known) {
        return c->known[i * c->devs->len + j] == 1;
    }
    return host_pair(vm_state()->host_source, g_ptr_array_index(c->devs, i),
                     g_ptr_array_index(c->devs, j), &why) == 1;
}

/* For the final check: operators may pair explicit ids as they like. */
static bool pair_consistent(unsigned i, unsigned j, void *opaque)
{
    PairCtx *c = opaque;

    return (!is_auto(g_ptr_array_index(c->devs, i)) &&
            !is_auto(g_ptr_array_index(c->devs, j))) ||
           pair_allowed(i, j, opaque);
}

/*
 * Give the auto devices among @devs (a copy of the VM's devices) their ids,
 * every other device's id being fixed, then check every id in effect.
 * @newcomer: a hot-plugged device, the one that loses its capability when
 * the check fails (the guest has already read the others'); NULL at cold
 * plug, where the auto device of a failing pair does.
 */
static void assign(GPtrArray *devs, int8_t *known, VFIOPCIDevice *newcomer)
{
    g_autofree int *fixed = g_new(int, devs->len);
    g_autofree int *ids = g_new(int, devs->len);
    PairCtx ctx = { devs, known };
    unsigned i, bad_i, bad_j;

    for (i = 0; i < devs->len; i++) {
        VFIOPCIDevice *d = g_ptr_array_index(devs, i);

        fixed[i] = is_auto(d) && d->gpu_p2p.id < 0 ? -1 : d->gpu_p2p.id;
    }
    gp_plan_assign(devs->len, pair_allowed, &ctx, fixed, ids);
    for (i = 0; i < devs->len; i++) {
        VFIOPCIDevice *d = g_ptr_array_index(devs, i);

        if (fixed[i] >= 0) {
            continue;
        }
        if (ids[i] < 0) {
            warn_report("vfio %s: x-gpu-p2p-clique=auto: all %d clique ids "
                        "are in use by other devices of this VM; no "
                        "capability", name_of(d), GP_PLAN_MAX_CLIQUES);
            remove_cap(d, "all clique ids in use");
            continue;
        }
        set_cap_clique(d, ids[i], "auto");
    }
    /* The planner's contract, checked where a wrong id would reach a guest */
    while (!gp_plan_check(devs->len, pair_consistent, &ctx, ids, &bad_i,
                          &bad_j)) {
        VFIOPCIDevice *a = g_ptr_array_index(devs, bad_i);
        VFIOPCIDevice *b = g_ptr_array_index(devs, bad_j);
        VFIOPCIDevice *drop = newcomer == a || newcomer == b ? newcomer :
                              is_auto(b) ? b : a;

        error_report("vfio %s: x-gpu-p2p-clique: clique %d would hold %s "
                     "and %s, which cannot do P2P; no capability",
                     name_of(drop), ids[bad_i], name_of(a), name_of(b));
        remove_cap(drop, "clique check failed");
        ids[drop == a ? bad_i : bad_j] = -1;
    }
}

/* By host PCI address; devices whose address is unknown last, as given. */
static gint by_host_address(gconstpointer a, gconstpointer b)
{
    const char *x = (*(VFIOPCIDevice *const *)a)->gpu_p2p.host_bdf;
    const char *y = (*(VFIOPCIDevice *const *)b)->gpu_p2p.host_bdf;

    if (!x || !y) {
        return !x - !y;
    }
    return strcmp(x, y);
}

/*
 * Where the guest may put 64-bit BARs, known before any firmware runs:
 * the window its PCI host declares (q35's or i440fx's pci-hole64), and
 * the top of the guest's physical address space, where SeaBIOS (1.16.3)
 * and OVMF move their 64-bit window, capped at GP_FIRMWARE_TOP_BITS
 * (@fw_end; 0 where phys-bits cannot be read). Inclusive; false where
 * the machine declares no window.
 */
static bool declared_window(uint64_t *start, uint64_t *end, uint64_t *fw_end)
{
    MachineState *ms = MACHINE(qdev_get_machine());
    Object *host = object_resolve_path_component(OBJECT(ms), "q35");
    Error *err = NULL;
    uint64_t hole_end, bits = 0;

    if (!host) {
        host = object_resolve_path_component(OBJECT(ms), "i440fx");
    }
    if (!host) {
        return false;
    }
    /*
     * Read by name (hw/i386/pc.h's PCI_HOST_PROP_PCI_HOLE64_*): vfio is
     * not x86's only, and these are the hosts' QOM properties.
     */
    *start = object_property_get_uint(host, "pci-hole64-start", &err);
    hole_end = err ? 0 : object_property_get_uint(host, "pci-hole64-end",
                                                  &err);
    if (err || hole_end <= *start) {
        error_free(err);
        return false;
    }
    *end = hole_end - 1;
    if (first_cpu) {
        bits = object_property_get_uint(OBJECT(first_cpu), "phys-bits", NULL);
    }
    *fw_end = gp_bar_gate_firmware_top(bits);
    return true;
}

/* A type1 container's IOVA ranges as its kernel gives them now. */
static GArray *type1_iova_ranges(VFIOContainer *c)
{
    g_autofree struct vfio_iommu_type1_info *info = NULL;
    struct vfio_iommu_type1_info_cap_iova_range *cap;
    struct vfio_info_cap_header *hdr;
    uint32_t argsz = sizeof(*info);
    GArray *out;

    /* sPAPR's container is a legacy one too, with another GET_INFO. */
    if (c->iommu_type != VFIO_TYPE1v2_IOMMU &&
        c->iommu_type != VFIO_TYPE1_IOMMU) {
        errno = ENOTSUP;
        return NULL;
    }
    for (;;) {
        info = g_realloc(info, argsz);
        memset(info, 0, argsz);
        info->argsz = argsz;
        if (ioctl(c->fd, VFIO_IOMMU_GET_INFO, info)) {
            return NULL;
        }
        if (info->argsz <= argsz) {
            break;
        }
        argsz = info->argsz;
    }
    hdr = !(info->flags & VFIO_IOMMU_INFO_CAPS) ? NULL :
          vfio_get_cap(info, info->cap_offset,
                       VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE);
    if (!hdr) {
        errno = ENOENT;         /* a kernel without the capability */
        return NULL;
    }
    cap = (void *)hdr;
    out = g_array_sized_new(FALSE, TRUE, sizeof(GpRange), cap->nr_iovas);
    for (uint32_t i = 0; i < cap->nr_iovas; i++) {
        GpRange r = { cap->iova_ranges[i].start, cap->iova_ranges[i].end };

        g_array_append_val(out, r);
    }
    return out;
}

/* An iommufd container's IOAS ranges as its kernel gives them now. */
static GArray *iommufd_iova_ranges(VFIOIOMMUFDContainer *c)
{
    g_autofree struct iommu_ioas_iova_ranges *info = NULL;
    struct iommu_iova_range *ranges;
    GArray *out;
    uint32_t n = 0;

    /*
     * The count, then the ranges (EMSGSIZE while the buffer is short);
     * again if an attach added ranges in between, a few times at most.
     */
    for (int pass = 0; pass < 4; pass++) {
        info = g_realloc(info, sizeof(*info) + n * sizeof(*ranges));
        memset(info, 0, sizeof(*info));
        info->size = sizeof(*info);
        info->ioas_id = c->ioas_id;
        info->num_iovas = n;
        info->allowed_iovas = (uintptr_t)(info + 1);
        if (!ioctl(c->be->fd, IOMMU_IOAS_IOVA_RANGES, info)) {
            break;
        }
        if (errno != EMSGSIZE || pass == 3) {
            return NULL;
        }
        n = info->num_iovas;
    }
    ranges = (struct iommu_iova_range *)(uintptr_t)info->allowed_iovas;
    out = g_array_sized_new(FALSE, TRUE, sizeof(GpRange), info->num_iovas);
    for (uint32_t i = 0; i < info->num_iovas; i++) {
        GpRange r = { ranges[i].start, ranges[i].last };

        g_array_append_val(out, r);
    }
    return out;
}

/*
 * @bc's IOVA ranges as the kernel gives them at this point: a group that
 * joined the container after it was made may have narrowed those VFIO
 * read then. QEMU's own copy where the kernel cannot be asked; *@source
 * says which.
 */
static GArray *iova_ranges_now(VFIOContainerBase *bc, const char **source)
{
    Object *legacy = object_dynamic_cast(OBJECT(bc), TYPE_VFIO_IOMMU_LEGACY);
    Object *iommufd = object_dynamic_cast(OBJECT(bc),
                                          TYPE_VFIO_IOMMU_IOMMUFD);
    const char *asked = NULL;
    GArray *out = NULL;
    GList *l;

    if (legacy) {
        asked = "VFIO_IOMMU_GET_INFO";
        out = type1_iova_ranges(VFIO_IOMMU_LEGACY(legacy));
    } else if (iommufd) {
        asked = "IOMMU_IOAS_IOVA_RANGES";
        out = iommufd_iova_ranges(VFIO_IOMMU_IOMMUFD(iommufd));
    }
    if (out) {
        *source = legacy ? "the kernel (VFIO_IOMMU_GET_INFO)" :
                  "the kernel (IOMMU_IOAS_IOVA_RANGES)";
        return out;
    }
    if (asked) {
        trace_vfio_gpu_p2p_iova_ranges_failed(asked, strerror(errno));
    }
    *source = "QEMU's copy, read when the container was made";
    out = g_array_new(FALSE, TRUE, sizeof(GpRange));
    for (l = bc->iova_ranges; l; l = l->next) {
        GpRange r = { range_lob(l->data), range_upb(l->data) };

        g_array_append_val(out, r);
    }
    return out;
}

/*
 * What the IOVA space of @issuer's container, which translates the P2P
 * writes @issuer makes, leaves unknown for BARs in the window [@start,
 * @end] (@fw_end: where firmware may move it), appended to @unknown.
 */
static void check_issuer(VFIOPCIDevice *target, VFIOPCIDevice *issuer,
                         uint64_t start, uint64_t end, uint64_t fw_end,
                         GString *unknown)
{
    g_autoptr(GArray) ranges = NULL, holes = NULL;
    g_autofree char *whose = NULL;
    const char *source = NULL;
    uint64_t top = 0;

    whose = issuer->vbasedev.bcontainer == target->vbasedev.bcontainer ?
            g_strdup("its container's IOVA ranges") :
            g_strdup_printf("the IOVA ranges of its peer %s's container",
                            name_of(issuer));
    ranges = iova_ranges_now(issuer->vbasedev.bcontainer, &source);
    holes = gp_iova_holes((const GpRange *)ranges->data, ranges->len, whose,
                          &top);
    trace_vfio_gpu_p2p_iova_ranges(name_of(issuer), ranges->len, top,
                                   source);
    if (!top) {
        /* None, or none that is a range (end before start). */
        g_autofree char *why = g_strdup_printf("no IOVA ranges known of "
                                               "the container of its peer "
                                               "%s", name_of(issuer));

        trace_vfio_gpu_p2p_window_skipped(name_of(target), why);
        return;
    }
    /*
     * Holes only in the window the machine declares: firmware keeps clear
     * of what the guest's e820 reserves beyond it.
     */
    gp_bar_gate_window_unknowns(unknown, "as this machine declares it "
                                "(pci-hole64)", start, end, whose, top,
                                (const GpWindowHole *)holes->data,
                                holes->len, GP_FIRMWARE_PLACES_NOTE);
    gp_bar_gate_firmware_unknowns(unknown, start, end, fw_end, whose, top,
                                  GP_FIRMWARE_PLACES_NOTE);
}

/*
 * Before firmware places any BAR (or at hot-plug, again for every device,
 * as the newcomer may narrow a container they share): a GPU with peers in
 * its clique whose BARs may land outside the IOVA ranges of a peer's
 * container (past their end, or in a hole between them, e.g. a reserved
 * region), which translates that peer's writes to it, is warned, naming
 * the window, once for each new text; never refused, as the firmware
 * decides where BARs go. The ranges are the kernel's at this point. A
 * peer behind a vIOMMU writes to guest IOVAs, not the containers': its
 * container is not judged (the vIOMMU warning stands).
 */
static void check_window(GPtrArray *devs, GPtrArray *all)
{
    uint64_t start, end, fw_end;
    guint i, j;

    if (!declared_window(&start, &end, &fw_end)) {
        trace_vfio_gpu_p2p_window_skipped("machine", "no pci-hole64 "
                                          "declared (not a PC)");
        return;
    }
    for (i = 0; i < devs->len; i++) {
        VFIOPCIDevice *vdev = g_ptr_array_index(devs, i);
        g_autoptr(GString) unknown = g_string_new(NULL);
        g_autoptr(GPtrArray) seen = g_ptr_array_new();
        unsigned peers = 0;

        if (id_in_effect(vdev) >= 0 && !is_auto(vdev) &&
            vdev->gpu_p2p.verify == VFIO_GPU_P2P_VERIFY_TRUST) {
            trace_vfio_gpu_p2p_window_skipped(name_of(vdev),
                                              "x-gpu-p2p-verify=trust");
            continue;
        }
        /* Each peer's container once (they are mostly one). */
        for (j = 0; id_in_effect(vdev) >= 0 && j < all->len; j++) {
            VFIOPCIDevice *p = g_ptr_array_index(all, j);
            VFIOContainerBase *pbc = p->vbasedev.bcontainer;
            g_autofree char *why = NULL;

            if (p == vdev || id_in_effect(p) != id_in_effect(vdev)) {
                continue;
            }
            peers++;
            if (g_ptr_array_find(seen, pbc, NULL)) {
                continue;
            }
            if (!pbc || vfio_viommu_preset(&p->vbasedev)) {
                why = g_strdup_printf("its peer %s: %s", name_of(p), !pbc ?
                                      "no container" : "behind a vIOMMU, "
                                      "whose warning stands");
                trace_vfio_gpu_p2p_window_skipped(name_of(vdev), why);
                continue;
            }
            g_ptr_array_add(seen, pbc);
            check_issuer(vdev, p, start, end, fw_end, unknown);
        }
        if (!peers) {
            trace_vfio_gpu_p2p_window_skipped(name_of(vdev),
                                              "no peer in its clique");
            continue;
        }
        if (!seen->len) {
            trace_vfio_gpu_p2p_window_skipped(name_of(vdev), "no peer's "
                                              "container to judge");
        }
        if (!unknown->len ||
            !g_strcmp0(vdev->gpu_p2p.window_warned, unknown->str)) {
            /* Nothing, or what was said already (a re-check at hot-plug) */
            continue;
        }
        g_free(vdev->gpu_p2p.window_warned);
        vdev->gpu_p2p.window_warned = g_strdup(unknown->str);
        trace_vfio_gpu_p2p_unknown(name_of(vdev), unknown->str);
        if (is_auto(vdev)) {
            warn_report("vfio %s: x-gpu-p2p-clique=auto: P2P writes of its "
                        "peers to it may fault: %s", name_of(vdev),
                        unknown->str);
        } else {
            warn_report("vfio %s: x-gpu-p2p-clique=%d: P2P writes of its "
                        "peers to it may fault: %s", name_of(vdev),
                        explicit_id(vdev), unknown->str);
        }
    }
}

static bool any_auto(GPtrArray *devs)
{
    guint i;

    for (i = 0; i < devs->len; i++) {
        if (is_auto(g_ptr_array_index(devs, i))) {
            return true;
        }
    }
    return false;
}

/*
 * After a hot plug of any VFIO PCI device, once its own realize has
 * returned (a GPU whose realize failed has left the list): every
 * capability holder again, as its clique may have gained a writer and the
 * newcomer's group may have narrowed a container others share. What was
 * said already is not repeated. A failure later in the plug (its hot-plug
 * handler) does not take back what this said.
 */
static void device_plugged(DeviceListener *listener, DeviceState *dev)
{
    VFIOGpuP2PVm *vm = container_of(listener, VFIOGpuP2PVm, plugged);

    if (!phase_check(PHASE_MACHINE_READY) ||
        !object_dynamic_cast(OBJECT(dev), TYPE_VFIO_PCI) ||
        !vm->devices->len) {
        return;
    }
    check_window(vm->devices, vm->devices);
}

static void machine_done(Notifier *notifier, void *data)
{
    VFIOGpuP2PVm *vm = container_of(notifier, VFIOGpuP2PVm, machine_done);
    g_autoptr(GPtrArray) devs = NULL;
    g_autofree int8_t *known = NULL;
    guint n, i, j;

    if (!vm->devices->len) {
        return;
    }
    devs = g_ptr_array_copy(vm->devices, NULL, NULL);
    if (!any_auto(devs)) {
        /* Explicit ids only: nothing to plan, the window to check. */
        check_window(devs, vm->devices);
        return;
    }
    /*
     * Ids follow host addresses, not -device order: reordering a domain's
     * hostdevs must not move a GPU to another clique id.
     */
    g_ptr_array_sort(devs, by_host_address);
    n = devs->len;
    known = g_new0(int8_t, n * n);
    for (i = 0; i < n; i++) {
        for (j = i + 1; j < n; j++) {
            VFIOPCIDevice *a = g_ptr_array_index(devs, i);
            VFIOPCIDevice *b = g_ptr_array_index(devs, j);
            g_autofree char *why = NULL;
            int r = 0;

            /* Fixed pairs are never asked: no sysfs work for them. */
            if (is_auto(a) || is_auto(b)) {
                r = host_pair(vm->host_source, a, b, &why);
            }
            known[i * n + j] = known[j * n + i] = r;
        }
    }
    assign(devs, known, NULL);
    check_window(devs, vm->devices);
}

/*
 * An explicit id: every other device holding it must be a P2P peer on the
 * host. A contradiction refuses (or warns, per x-gpu-p2p-verify); what
 * the host cannot tell keeps the id with a warning, as upstream's
 * x-nv-gpudirect-clique would.
 */
static bool verify_explicit(VFIOPCIDevice *vdev, Error **errp)
{
    VFIOGpuP2P *p = &vdev->gpu_p2p;
    GPtrArray *devices = vm_state()->devices;
    int id = explicit_id(vdev);
    guint i;

    if (p->verify == VFIO_GPU_P2P_VERIFY_TRUST) {
        return true;
    }
    for (i = 0; i < devices->len; i++) {
        VFIOPCIDevice *o = g_ptr_array_index(devices, i);
        g_autofree char *why = NULL;
        int r;

        if (o == vdev || id_in_effect(o) != id ||
            (is_auto(o) && o->gpu_p2p.id < 0)) {
            continue;
        }
        r = host_pair(source_for(vdev), vdev, o, &why);
        if (r == 1) {
            continue;
        }
        if (r < 0) {
            warn_report("vfio %s: x-gpu-p2p-clique=%d: kept without a check "
                        "against %s: %s", name_of(vdev), id, name_of(o), why);
            continue;
        }
        if (p->verify == VFIO_GPU_P2P_VERIFY_WARN) {
            warn_report("vfio %s: x-gpu-p2p-clique=%d: %s holds it too but "
                        "they cannot do P2P on the host: %s", name_of(vdev),
                        id, name_of(o), why);
            continue;
        }
        error_setg(errp, "x-gpu-p2p-clique=%d: %s holds it too but they "
                   "cannot do P2P on the host: %s", id, name_of(o), why);
        error_append_hint(errp, "Set x-gpu-p2p-verify=warn or trust to use "
                          "the id anyway.\n");
        return false;
    }
    return true;
}

/*
 * What a step of realize decided: go on towards the capability, give this
 * device none (the VM starts; said on stderr or in a trace), or refuse the
 * device with @errp set.
 */
typedef enum GateResult {
    GATE_GO_ON,
    GATE_NO_CAPABILITY,
    GATE_REFUSE,
} GateResult;

/* Whether the device may carry the capability; auto stays quiet if not. */
static GateResult qualifies(VFIOPCIDevice *vdev, Error **errp)
{
    PCIDevice *pdev = &vdev->pdev;
    uint8_t class = pci_get_byte(pdev->config + PCI_CLASS_DEVICE + 1);
    const char *why = NULL;

    if (vdev->nv_gpudirect_clique != 0xFF) {
        why = "x-nv-gpudirect-clique is set";
    } else if (!vfio_pci_is(vdev, PCI_VENDOR_ID_NVIDIA, PCI_ANY_ID)) {
        why = "not an NVIDIA device";
    } else if (class != PCI_BASE_CLASS_DISPLAY) {
        why = "not a display-class device";
    }
    if (!why) {
        return GATE_GO_ON;
    }
    if (is_auto(vdev)) {
        trace_vfio_gpu_p2p_no_clique(name_of(vdev), why);
        return GATE_NO_CAPABILITY;
    }
    if (vdev->nv_gpudirect_clique != 0xFF) {
        error_setg(errp, "x-gpu-p2p-clique and x-nv-gpudirect-clique "
                   "cannot be used together");
    } else {
        error_setg(errp, "x-gpu-p2p-clique: %s (vendor %04x, class %04x "
                   "as the guest sees it)", why, vdev->vendor_id,
                   pci_get_word(pdev->config + PCI_CLASS_DEVICE));
    }
    return GATE_REFUSE;
}

/*
 * The BAR gate's host facts, read once per QEMU, when a device on a VFIO
 * container first asks: that container being open tells the type1
 * module from iommufd's emulation of it (lib/bar-gate.c).
 */
static GpBarGateHost *bar_gate_host(void)
{
    VFIOGpuP2PVm *vm = vm_state();

    if (!vm->bar_gate_host) {
        vm->bar_gate_host = gp_bar_gate_host_read("/");
        gp_bar_gate_host_container_open(vm->bar_gate_host);
    }
    return vm->bar_gate_host;
}

/*
 * The library's list of unknowns, so both front ends join them alike;
 * takes @why.
 */
static void add_unknown(GString *unknown, char *why)
{
    gp_bar_gate_add_unknown(unknown, why);
    g_free(why);
}

/*
 * Why a prefetchable BAR is not mapped for peers, or NULL. The listener
 * maps a BAR from its mmaps, so each must exist and together cover it.
 */
static char *bar_unmappable_why(VFIOBAR *bar, int i)
{
    g_autofree GpMmapArea *areas = g_new0(GpMmapArea, bar->region.nr_mmaps);
    int j;

    if (!bar->region.nr_mmaps) {
        return g_strdup_printf("BAR%d: the kernel offers no mmap of it, so "
                               "the IOMMU cannot map it for peers", i);
    }
    for (j = 0; j < bar->region.nr_mmaps; j++) {
        if (!bar->region.mmaps[j].mmap) {
            return g_strdup_printf("BAR%d could not be mmapped, so the "
                                   "IOMMU cannot map it for peers", i);
        }
        areas[j].offset = bar->region.mmaps[j].offset;
        areas[j].size = bar->region.mmaps[j].size;
    }
    return gp_bar_gate_sparse_why(i, bar->region.size,
                                  gp_bar_mmap_uncovered(bar->region.size,
                                      areas, bar->region.nr_mmaps));
}

/*
 * Why a peer's write to one of the device's BARs cannot reach it, or NULL;
 * what is not known goes to @unknown. A guest GPU writes to its peer's BAR
 * at a guest-physical address; the IOMMU translates that only where the
 * container's listener mapped the BAR, which it does from the BAR's mmap,
 * through the legacy (type1) container on this QEMU. Prefetchable BARs
 * are where GPUs take P2P writes (VRAM); each must be mmapped whole, and
 * fit under the IOMMU's top IOVA. The rules shared with `gpup2p check
 * --domain` are the core library's (lib/bar-gate.c).
 */
static char *unmappable_why(VFIOPCIDevice *vdev, GString *unknown)
{
    VFIODevice *vbasedev = &vdev->vbasedev;
    uint64_t top = 0, largest = 0;
    g_autofree char *container = NULL;
    bool proven;
    GList *l;
    int i;

    /* In the library's order, so that both name the same condition. */
    if (vbasedev->no_mmap) {
        return gp_bar_gate_nommap_why();
    }
    if (vbasedev->iommufd) {
        return gp_bar_gate_iommufd_ours_why();
    }
    container = gp_bar_gate_container_why(bar_gate_host(), &proven);
    if (container && proven) {
        return g_steal_pointer(&container);
    } else if (container) {
        add_unknown(unknown, g_steal_pointer(&container));
    }
    for (i = 0; i < PCI_ROM_SLOT; i++) {
        VFIOBAR *bar = &vdev->bars[i];
        char *why;

        if (!bar->region.size || bar->ioport ||
            !(bar->type & PCI_BASE_ADDRESS_MEM_PREFETCH)) {
            continue;
        }
        why = bar_unmappable_why(bar, i);
        if (why) {
            return why;
        }
        largest = MAX(largest, bar->region.size);
    }
    for (l = vbasedev->bcontainer ? vbasedev->bcontainer->iova_ranges : NULL;
         l; l = l->next) {
        top = MAX(top, range_upb(l->data));
    }
    if (top && largest && largest - 1 > top) {
        return g_strdup_printf("a %" PRIu64 " MiB BAR does not fit the "
                               "IOMMU's IOVA space (up to 0x%" PRIx64 ")",
                               largest >> 20, top);
    }
    if (vbasedev->bcontainer && vfio_viommu_preset(vbasedev)) {
        add_unknown(unknown, gp_bar_gate_viommu_why(viommu_name(vbasedev)));
    }
    return NULL;
}

/*
 * The gate: no clique promise where peers' writes would fault. auto: no
 * capability; an explicit id: refused, warned or trusted per
 * x-gpu-p2p-verify. What is not known is said and never stops the VM:
 * the capability stays, as the host tool's verdict "unknown" keeps it.
 */
static GateResult peers_can_reach(VFIOPCIDevice *vdev, Error **errp)
{
    VFIOGpuP2P *p = &vdev->gpu_p2p;
    g_autoptr(GString) unknown = g_string_new(NULL);

    g_free(p->unmappable);
    p->unmappable = unmappable_why(vdev, unknown);
    if (!p->unmappable) {
        if (unknown->len) {
            trace_vfio_gpu_p2p_unknown(name_of(vdev), unknown->str);
        }
        if (unknown->len && is_auto(vdev)) {
            warn_report("vfio %s: x-gpu-p2p-clique=auto: P2P writes of its "
                        "peers to it may fault: %s", name_of(vdev),
                        unknown->str);
        } else if (unknown->len && p->verify != VFIO_GPU_P2P_VERIFY_TRUST) {
            warn_report("vfio %s: x-gpu-p2p-clique=%d: P2P writes of its "
                        "peers to it may fault: %s", name_of(vdev),
                        explicit_id(vdev), unknown->str);
        }
        return GATE_GO_ON;
    }
    trace_vfio_gpu_p2p_no_clique(name_of(vdev), p->unmappable);
    if (is_auto(vdev)) {
        warn_report("vfio %s: x-gpu-p2p-clique=auto: no capability: P2P "
                    "writes to it would fault: %s", name_of(vdev),
                    p->unmappable);
        return GATE_NO_CAPABILITY;
    }
    switch (p->verify) {
    case VFIO_GPU_P2P_VERIFY_REFUSE:
        error_setg(errp, "x-gpu-p2p-clique=%d: P2P writes of its peers to "
                   "it would fault: %s", explicit_id(vdev), p->unmappable);
        error_append_hint(errp, "Set x-gpu-p2p-verify=warn or trust to "
                          "give the capability anyway.\n");
        return GATE_REFUSE;
    case VFIO_GPU_P2P_VERIFY_WARN:
        warn_report("vfio %s: x-gpu-p2p-clique=%d: P2P writes of its peers "
                    "to it would fault: %s", name_of(vdev), explicit_id(vdev),
                    p->unmappable);
        return GATE_GO_ON;
    default:
        return GATE_GO_ON;
    }
}

/*
 * Upstream's x-nv-gpudirect-clique is the user's promise, kept as given;
 * the gate's verdict on it is said, as gpup2p check --domain says it,
 * unless x-gpu-p2p-verify=trust silences it, as for an explicit id.
 */
static void judge_upstream_clique(VFIOPCIDevice *vdev)
{
    VFIOGpuP2P *p = &vdev->gpu_p2p;
    g_autoptr(GString) unknown = g_string_new(NULL);

    if (p->verify == VFIO_GPU_P2P_VERIFY_TRUST) {
        return;
    }
    g_free(p->unmappable);
    p->unmappable = unmappable_why(vdev, unknown);
    if (p->unmappable) {
        warn_report("vfio %s: x-nv-gpudirect-clique=%u: P2P writes of its "
                    "peers to it would fault: %s", name_of(vdev),
                    vdev->nv_gpudirect_clique, p->unmappable);
    } else if (unknown->len) {
        warn_report("vfio %s: x-nv-gpudirect-clique=%u: P2P writes of its "
                    "peers to it may fault: %s", name_of(vdev),
                    vdev->nv_gpudirect_clique, unknown->str);
    }
}

/* A free offset for the capability in the device's config space. */
static bool find_offset(VFIOPCIDevice *vdev, uint16_t *off, Error **errp)
{
    PCIDevice *pdev = &vdev->pdev;
    g_autoptr(GError) gerr = NULL;
    GpPciConfig cfg;
    uint8_t head;

    /* The emulated list head is cleared by now; the device's is not. */
    if (pread(vdev->vbasedev.fd, &head, 1,
              vdev->config_offset + PCI_CAPABILITY_LIST) != 1) {
        error_setg_errno(errp, errno, "x-gpu-p2p-clique: reading the "
                         "capability list");
        return false;
    }
    gp_pcicfg_init(&cfg, pdev->config, PCI_CONFIG_SPACE_SIZE);
    cfg.bytes[PCI_CAPABILITY_LIST] = head;
    cfg.bytes[PCI_STATUS] |= PCI_STATUS_CAP_LIST;
    if (!gp_p2pcap_choose_offset(&cfg, vdev->gpu_p2p.cap_anywhere, off,
                                 &gerr)) {
        error_setg(errp, "x-gpu-p2p-clique: %s", gerr->message);
        if (!vdev->gpu_p2p.cap_anywhere) {
            error_append_hint(errp, "x-gpu-p2p-cap-anywhere=on places it "
                              "in the first free slot instead.\n");
        }
        return false;
    }
    if (*off != GP_P2PCAP_PREFERRED && *off != GP_P2PCAP_ALTERNATE) {
        warn_report("vfio %s: x-gpu-p2p-cap-anywhere: P2P capability at "
                    "%02xh; the guest no longer sees the device's own bytes "
                    "there", name_of(vdev), *off);
    }
    return true;
}

/*
 * C8h, else D4h, as upstream; elsewhere only when opted in. No room: auto
 * gives no capability, an explicit id refuses the device.
 */
static GateResult choose_offset(VFIOPCIDevice *vdev, uint16_t *off,
                                Error **errp)
{
    Error *local = NULL;

    if (find_offset(vdev, off, &local)) {
        return GATE_GO_ON;
    }
    if (is_auto(vdev)) {
        warn_reportf_err(local, "vfio %s: no capability: ", name_of(vdev));
        return GATE_NO_CAPABILITY;
    }
    error_propagate(errp, local);
    return GATE_REFUSE;
}

/*
 * Called from vfio_add_virt_caps(), while the emulated capability list is
 * still empty: what is added now ends up last in the list.
 */
bool vfio_gpu_p2p_realize(VFIOPCIDevice *vdev, Error **errp)
{
    ERRP_GUARD();
    VFIOGpuP2P *p = &vdev->gpu_p2p;
    PCIDevice *pdev = &vdev->pdev;
    bool hotplug = phase_check(PHASE_MACHINE_READY);
    g_autofree char *why = NULL;
    HostSource *src = NULL;
    Error *no_blocker = NULL;
    GateResult gate;
    VFIOGpuP2PVm *vm;
    uint16_t off;

    p->id = -1;
    if (vdev->nv_gpudirect_clique != 0xFF &&
        (p->clique == VFIO_GPU_P2P_CLIQUE_OFF || is_auto(vdev))) {
        judge_upstream_clique(vdev);
    }
    if (p->clique == VFIO_GPU_P2P_CLIQUE_OFF) {
        return true;
    }
    gate = qualifies(vdev, errp);
    if (gate == GATE_GO_ON) {
        gate = peers_can_reach(vdev, errp);
    }
    if (gate == GATE_GO_ON) {
        p->host_bdf = host_bdf_of(vdev);
        gate = choose_offset(vdev, &off, errp);
    }
    if (gate != GATE_GO_ON) {
        return gate == GATE_NO_CAPABILITY;
    }
    vm = vm_state();
    if (hotplug && !vm->host_source) {
        host_source_reset(vm);      /* read afresh for a hot plug */
    }
    if (is_auto(vdev)) {
        src = source_for(vdev);
        why = host_unknown_why(vdev, src);
        if (why) {
            /* Unknown topology never stops a VM: no capability. */
            warn_report("vfio %s: x-gpu-p2p-clique=auto: no capability: %s",
                        name_of(vdev), why);
            trace_vfio_gpu_p2p_no_clique(name_of(vdev), why);
            return true;
        }
        error_setg(&p->migration_blocker, "vfio %s: x-gpu-p2p-clique=auto "
                   "computes the clique from this host's topology, and the "
                   "destination's may differ; migrate with an explicit "
                   "x-gpu-p2p-clique=N", name_of(vdev));
        /*
         * Normal migration only: CPR keeps the device and this host, so
         * the ids stay right. auto must never stop a VM: where a blocker
         * cannot be added (-only-migratable, a migration under way) the
         * device gets no capability and the reason is said.
         */
        if (migrate_add_blocker_normal(&p->migration_blocker,
                                       &no_blocker) < 0) {
            warn_report("vfio %s: x-gpu-p2p-clique=auto: no capability: %s",
                        name_of(vdev), error_get_pretty(no_blocker));
            trace_vfio_gpu_p2p_no_clique(name_of(vdev),
                                         error_get_pretty(no_blocker));
            error_free(no_blocker);
            return true;
        }
    }

    if (!is_auto(vdev)) {
        p->id = explicit_id(vdev);
        if (!verify_explicit(vdev, errp)) {
            return false;
        }
    }
    if (pci_add_capability(pdev, PCI_CAP_ID_VNDR, off, GP_P2PCAP_LENGTH,
                           errp) < 0) {
        error_prepend(errp, "x-gpu-p2p-clique: ");
        migrate_del_blocker(&p->migration_blocker);
        return false;
    }
    /* pci_add_capability() linked it; keep that next pointer. */
    gp_p2pcap_encode(pdev->config + off, 0,
                     pdev->config[off + PCI_CAP_LIST_NEXT]);
    /* Emulated: the guest reads these bytes, and wmask 0 drops writes. */
    memset(vdev->emulated_config_bits + off, 0xff, GP_P2PCAP_LENGTH);
    p->cap_offset = off;
    p->has_cap = true;
    g_ptr_array_add(vm->devices, vdev);
    p->registered = true;

    if (!is_auto(vdev)) {
        set_cap_clique(vdev, p->id, "explicit");
    }
    if (hotplug) {
        /*
         * Join the earlier devices' cliques now; ids already given stay.
         * An explicit id goes through the same final check: with
         * verify=warn it may land in an auto device's clique it cannot
         * share.
         */
        g_autoptr(GPtrArray) devs = g_ptr_array_copy(vm->devices, NULL,
                                                     NULL);

        /* The window: device_plugged(), once realize has ended. */
        assign(devs, NULL, vdev);
    } else if (!vm->machine_done.notify) {
        /* Cold plug: planned and checked once every device is known. */
        vm->machine_done.notify = machine_done;
        qemu_add_machine_init_done_notifier(&vm->machine_done);
    }
    return true;
}

bool vfio_gpu_p2p_owns_config(VFIOPCIDevice *vdev, uint32_t addr, int len)
{
    VFIOGpuP2P *p = &vdev->gpu_p2p;

    /*
     * The capability's bytes are ours, not the device's: at C8h/D4h (or
     * wherever cap-anywhere put it) the device may keep registers of its
     * own, which a guest must not reach through this capability.
     */
    return p->has_cap && ranges_overlap(addr, len, p->cap_offset,
                                        GP_P2PCAP_LENGTH);
}

void vfio_gpu_p2p_exit(VFIOPCIDevice *vdev)
{
    VFIOGpuP2P *p = &vdev->gpu_p2p;
    VFIOGpuP2PVm *vm = vm_state_peek();

    migrate_del_blocker(&p->migration_blocker);
    if (p->registered && vm) {
        g_ptr_array_remove(vm->devices, vdev);
    }
    p->registered = false;
    p->has_cap = false;
    g_clear_pointer(&p->source, g_free);
    g_clear_pointer(&p->host_bdf, g_free);
    g_clear_pointer(&p->unmappable, g_free);
    g_clear_pointer(&p->bar_maps, g_ptr_array_unref);
    g_clear_pointer(&p->window_warned, g_free);
    if (vm && !vm->devices->len && phase_check(PHASE_MACHINE_READY)) {
        /* A later hot plug reads the host afresh. */
        host_source_reset(vm);
    }
}

/* ------------------------------------------------------------------ */
/* What the container's listener did with the device's BARs            */

static void bar_map_free(gpointer data)
{
    VFIOGpuP2PBarMap *m = data;

    g_free(m->region);
    g_free(m->why);
    g_free(m);
}

/* The device a RAM-device section belongs to, when it is a vfio-pci one */
static VFIOPCIDevice *bar_owner(MemoryRegionSection *section)
{
    Object *owner = memory_region_owner(section->mr);

    return owner ? (VFIOPCIDevice *)object_dynamic_cast(owner, TYPE_VFIO_PCI)
                 : NULL;
}

static VFIOGpuP2PBarMap *bar_map_of(VFIOGpuP2P *p,
                                    VFIOContainerBase *bcontainer,
                                    MemoryRegionSection *section, bool create)
{
    const char *region = memory_region_name(section->mr);
    VFIOGpuP2PBarMap *m;
    unsigned i;

    for (i = 0; p->bar_maps && i < p->bar_maps->len; i++) {
        m = g_ptr_array_index(p->bar_maps, i);
        if (m->container == bcontainer && !strcmp(m->region, region) &&
            m->offset == section->offset_within_region) {
            return m;
        }
    }
    if (!create) {
        return NULL;
    }
    if (!p->bar_maps) {
        p->bar_maps = g_ptr_array_new_with_free_func(bar_map_free);
    }
    m = g_new0(VFIOGpuP2PBarMap, 1);
    m->container = bcontainer;
    m->region = g_strdup(region);
    m->offset = section->offset_within_region;
    g_ptr_array_add(p->bar_maps, m);
    return m;
}

/* "type1" for the legacy container, "iommufd", else the container type */
static const char *container_path(VFIOContainerBase *bcontainer)
{
    const char *type = object_get_typename(OBJECT(bcontainer));

    if (!strcmp(type, TYPE_VFIO_IOMMU_LEGACY)) {
        return "type1";
    }
    if (!strcmp(type, TYPE_VFIO_IOMMU_IOMMUFD)) {
        return "iommufd";
    }
    return type;
}

void vfio_gpu_p2p_ram_device_map(VFIOContainerBase *bcontainer,
                                 MemoryRegionSection *section, uint64_t iova,
                                 uint64_t size, int err, const char *why)
{
    VFIOPCIDevice *vdev = bar_owner(section);
    VFIOGpuP2PBarMap *m;
    VFIOGpuP2P *p;

    if (!vdev) {
        return;
    }
    p = &vdev->gpu_p2p;
    m = bar_map_of(p, bcontainer, section, true);
    m->path = container_path(bcontainer);
    m->iova = iova;
    m->size = size;
    m->err = err;
    g_free(m->why);
    m->why = err ? g_strdup(why ? why : strerror(-err)) : NULL;
    m->live = true;
    trace_vfio_gpu_p2p_bar_map(name_of(vdev), m->region, m->path, iova, size,
                               err);
    if (!err) {
        m->reported = false;
    } else if (p->has_cap && !m->reported) {
        /*
         * The guest was told P2P works; say plainly that it will not,
         * once per section (a guest toggles its BARs at will).
         */
        m->reported = true;
        error_report("vfio %s: x-gpu-p2p-clique: %s at 0x%" PRIx64 " is not "
                     "mapped by %s (%s): P2P writes of its clique peers to "
                     "it will fault", name_of(vdev), m->region, iova, m->path,
                     m->why);
    }
}

void vfio_gpu_p2p_ram_device_unmap(VFIOContainerBase *bcontainer,
                                   MemoryRegionSection *section)
{
    VFIOPCIDevice *vdev = bar_owner(section);
    VFIOGpuP2PBarMap *m;

    if (!vdev) {
        return;
    }
    m = bar_map_of(&vdev->gpu_p2p, bcontainer, section, false);
    if (m) {
        m->live = false;
    }
}

/* ------------------------------------------------------------------ */
/* The per-machine state object                                        */

static void vfio_gpu_p2p_vm_init(Object *obj)
{
    VFIOGpuP2PVm *vm = VFIO_GPU_P2P_VM(obj);

    vm->devices = g_ptr_array_new();
}

static void vfio_gpu_p2p_vm_finalize(Object *obj)
{
    VFIOGpuP2PVm *vm = VFIO_GPU_P2P_VM(obj);

    if (vm->machine_done.notify) {
        qemu_remove_machine_init_done_notifier(&vm->machine_done);
    }
    device_listener_unregister(&vm->plugged);
    host_source_reset(vm);
    gp_bar_gate_host_free(vm->bar_gate_host);
    g_ptr_array_unref(vm->devices);
}

static const TypeInfo vfio_gpu_p2p_vm_info = {
    .name = TYPE_VFIO_GPU_P2P_VM,
    .parent = TYPE_OBJECT,
    .instance_size = sizeof(VFIOGpuP2PVm),
    .instance_init = vfio_gpu_p2p_vm_init,
    .instance_finalize = vfio_gpu_p2p_vm_finalize,
};

static void vfio_gpu_p2p_register_types(void)
{
    type_register_static(&vfio_gpu_p2p_vm_info);
}

type_init(vfio_gpu_p2p_register_types)
