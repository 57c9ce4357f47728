/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `gpup2p check`, the GPU items: driver, IOMMU group, each pair's P2P. */
#include <string.h>

#include "check.h"

/* Does the VM's domain assign @bdf with managed='yes'? */
static bool domain_manages(const Check *c, const char *bdf)
{
    return c->dom && g_hash_table_contains(c->dom->managed, bdf);
}

/*
 * The GPU's driver: vfio-pci, or any driver when the domain assigns it
 * with managed='yes' (libvirt then binds it to vfio-pci at VM start).
 */
static void check_gpu_driver(Check *c, const GpDevice *g)
{
    const char *drv = g->driver ? g->driver : "nothing";
    g_autofree char *detail = NULL, *fix = NULL, *unbind = NULL;
    ItemState st;

    if (!g_strcmp0(g->driver, "vfio-pci")) {
        detail = g_strdup("bound to vfio-pci");
        st = ITEM_OK;
    } else if (domain_manages(c, g->bdf)) {
        detail = g_strdup_printf("bound to %s; the domain assigns it with "
                                 "managed='yes', so libvirt binds it to "
                                 "vfio-pci at VM start", drv);
        /* A driver in use (nvidia with its clients) holds up the unbind. */
        st = g->driver ? ITEM_WARN : ITEM_OK;
        fix = g_strdup_printf("nothing on the host may hold %s when the "
                              "VM starts (nvidia-persistenced, a display "
                              "server), or bind it to vfio-pci beforehand",
                              g->bdf);
    } else {
        detail = g_strdup_printf("bound to %s", drv);
        st = ITEM_FAIL;
        /* drivers_probe does not move a device that has a driver. */
        unbind = g->driver ?
            g_strdup_printf("echo %s > /sys/bus/pci/devices/%s/driver/"
                            "unbind; ", g->bdf, g->bdf) : g_strdup("");
        fix = g_strdup_printf(
            "modprobe vfio-pci; %s"
            "echo vfio-pci > /sys/bus/pci/devices/%s/driver_override; "
            "echo %s > /sys/bus/pci/drivers_probe (or assign it in the "
            "domain with <hostdev managed='yes'>)", unbind, g->bdf, g->bdf);
    }
    check_item_for(c->r, st, "driver", g, NULL, detail, fix);
}

/*
 * VFIO takes a group only when each device in it is unbound or bound to a
 * driver that leaves DMA to its user (vfio-pci, pci-stub; the kernel's
 * driver_managed_dma): a device on any other driver blocks the group,
 * unless the domain assigns it with managed='yes' too.
 */
static bool group_member_blocks(const Check *c, const GpDevice *o)
{
    return o->driver && strcmp(o->driver, "vfio-pci") &&
           strcmp(o->driver, "pci-stub") && !domain_manages(c, o->bdf);
}

/* Does the VM's domain assign @bdf (in any mode)? */
static bool domain_assigns(const Check *c, const char *bdf)
{
    return c->dom && g_ptr_array_find_with_equal_func(c->dom->hostdevs, bdf,
                                                      g_str_equal, NULL);
}

static void check_gpu_binding(Check *c, const GpDevice *g)
{
    g_autofree char *detail = NULL;
    g_autoptr(GString) others = g_string_new(NULL);
    g_autoptr(GString) left = g_string_new(NULL);
    guint j;

    check_gpu_driver(c, g);
    if (g->iommu_group < 0) {
        check_item_for(c->r, ITEM_FAIL, "IOMMU group", g, NULL,
                 "in no IOMMU group (the IOMMU is off for it), so VFIO "
                 "cannot take it", "turn the IOMMU on (see the IOMMU item)");
        return;
    }
    for (j = 0; j < c->topo->devices->len; j++) {
        const GpDevice *o = g_ptr_array_index(c->topo->devices, j);

        if (o == g || o->iommu_group != g->iommu_group || o->is_bridge) {
            continue;
        }
        if (group_member_blocks(c, o)) {
            g_string_append_printf(others, " %s(%s)", o->bdf, o->driver);
        } else if (c->dom && !domain_assigns(c, o->bdf)) {
            g_string_append_printf(left, " %s", o->bdf);
        }
    }
    if (!others->len && left->len) {
        /* VFIO lets the group go; it is shared with whoever gets the rest. */
        detail = g_strdup_printf("group %d also holds%s, which this domain "
                                 "does not assign: the group is split across "
                                 "VMs or the host", g->iommu_group,
                                 left->str);
        check_item_for(c->r, ITEM_WARN, "IOMMU group", g, NULL, detail,
             "assign every device of the group to this VM, or separate "
             "them (ACS on the path)");
        return;
    }
    detail = others->len ?
        g_strdup_printf("group %d also holds, bound to a host driver,%s",
                        g->iommu_group, others->str) :
        g_strdup_printf("group %d holds no device bound to a host driver",
                        g->iommu_group);
    check_item_for(c->r, others->len ? ITEM_FAIL : ITEM_OK, "IOMMU group",
                   g, NULL, detail,
         "unbind every other device of the group from its driver (or bind "
         "it to vfio-pci) and give them all to the same VM, or separate "
         "them (ACS on the path)");
}

/* Does any device on the way from @d up to @stop lack readable ACS? */
static bool acs_unknown_on_path(const GpDevice *d, const GpDevice *stop)
{
    for (; d && d != stop; d = d->physfn ? d->physfn : d->parent) {
        if (!d->acs_known) {
            return true;
        }
    }
    return false;
}

/* Does any device on the way from @d up to @stop not answer config reads? */
static bool unreadable_on_path(const GpDevice *d, const GpDevice *stop)
{
    for (; d && d != stop; d = d->physfn ? d->physfn : d->parent) {
        if (d->config_unreadable) {
            return true;
        }
    }
    return false;
}

/* The fix for a pair whose guest P2P is not possible, by what blocks it. */
static const char *p2p_fix(const Check *c, const GpDevice *a,
                           const GpDevice *b, const GpP2pVerdict *v)
{
    if (v->group_decided && v->vm_kind == GP_VM_P2P_UNKNOWN) {
        return c->captured ?
            "a device is in no IOMMU group: capture with 'gpup2p "
            "snapshot', which keeps each device's iommu_group link, on a "
            "host with the IOMMU on" :
            "a device is in no IOMMU group: turn the IOMMU on "
            "(intel_iommu=on; AMD's is on by default), which VFIO needs";
    }
    if (v->group_decided) {
        return "the kernel puts both in one IOMMU group, so it cannot keep "
               "their DMA apart: give the guest GPUs in different groups";
    }
    /* Only the devices' own attributes decide (lib/p2p.c); a bridge's
     * odd link speed is named by topo, not blamed here. */
    if (v->vm_kind == GP_VM_P2P_UNKNOWN &&
        (a->attr_invalid || b->attr_invalid)) {
        return c->captured ?
            "a sysfs attribute holds a value Linux never writes (see the "
            "reason): capture the host again with 'gpup2p snapshot'" :
            "a sysfs attribute holds a value this tool does not know (see "
            "the reason): report it with the kernel version";
    }
    if (v->vm_kind == GP_VM_P2P_UNKNOWN &&
        (unreadable_on_path(a, NULL) || unreadable_on_path(b, NULL))) {
        return "a device on the path does not answer config reads (see the "
               "reason): look in the kernel log for it (Xid 79, AER), reset "
               "or power-cycle it";
    }
    if (v->vm_kind == GP_VM_P2P_UNKNOWN) {
        if (acs_unknown_on_path(a, NULL) || acs_unknown_on_path(b, NULL)) {
            return c->captured ?
                "capture as root ('sudo gpup2p snapshot'): ACS sits in "
                "extended config space, which needs root to read" :
                "run as root: ACS sits in extended config space, which "
                "needs root to read";
        }
        return c->captured ?
            "the capture lacks proc/cpuinfo: capture with 'gpup2p "
            "snapshot', which copies the CPU's identity" :
            "/proc/cpuinfo is not readable: the CPU vendor decides whether "
            "the root complex forwards P2P";
    }
    if (v->vm_kind == GP_VM_P2P_BYPASS && v->vm.same_device) {
        return "functions of one device route between themselves: give the "
               "guest one of them, or a device whose functions support ACS";
    }
    if (v->vm_kind == GP_VM_P2P_BYPASS) {
        return "turn ACS (SV RR CR UF) on at the named ports, root ports "
               "included (Linux does "
               "when an IOMMU is on and the port has ACS, unless a "
               "disable_acs_redir or config_acs kernel argument turns it "
               "off: remove it); a switch without ACS cannot carry a "
               "guest's P2P: use GPUs below ports that have it";
    }
    return "the root complex is not known to forward P2P between these "
           "root ports (Linux's p2pdma list; AMD Zen forwards): use GPUs "
           "under one root port whose root complex is listed, a host whose "
           "root complex is, or an NVLink path";
}

void check_pairs(Check *c)
{
    guint i, j;

    for (i = 0; i < c->gpus->len; i++) {
        for (j = i + 1; j < c->gpus->len; j++) {
            const GpDevice *a = g_ptr_array_index(c->gpus, i);
            const GpDevice *b = g_ptr_array_index(c->gpus, j);
            g_autofree char *detail = NULL;
            GpP2pVerdict v;

            gp_p2p_verdict(c->topo, a, b, &v);
            detail = g_strdup_printf("guest %s (%s): %s; bare metal: %s",
                gp_vm_p2p_kind_name(v.vm_kind),
                gp_path_type_name(gp_path_classify(a, b)), v.vm_reason,
                gp_p2p_kind_name(v.kind));
            check_item_for(c->r, gp_vm_p2p_ok(v.vm_kind) ? ITEM_OK :
                     v.vm_kind == GP_VM_P2P_UNKNOWN ? ITEM_UNTESTED :
                     ITEM_WARN, "P2P", a, b, detail, p2p_fix(c, a, b, &v));
            gp_p2p_verdict_clear(&v);
        }
    }
}

/* How many GPUs were found (or named). */
void check_gpus_found(Check *c)
{
    g_autofree char *found = g_strdup_printf("%u GPUs to check",
                                             c->gpus->len);

    check_item(c->r, c->gpus->len ? ITEM_OK : ITEM_WARN, "GPUs",
               c->gpus->len ? found : "no NVIDIA display-class device",
               "name the devices with --devices");
}

/* Each GPU's driver and IOMMU group. */
void check_gpu_bindings(Check *c)
{
    guint i;

    for (i = 0; i < c->gpus->len; i++) {
        check_gpu_binding(c, g_ptr_array_index(c->gpus, i));
    }
}
