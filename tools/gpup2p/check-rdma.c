/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `gpup2p check`: each GPUDirect RDMA pair (an RDMA NIC with its nearest
 * GPU among those checked), its path for a guest (gpup2p/rdma.h), and the
 * exact fix: which ACS controls on which port, ATS on the NIC; with
 * --domain, whether each NIC it assigns sits near the GPUs it assigns.
 */
#include <stdio.h>

#include "check.h"

/* The NICs to pair: the domain's, else every RDMA NIC of the host. */
static GPtrArray *rdma_nics(const Check *c)
{
    GPtrArray *nics;
    guint i;

    if (!c->dom) {
        return gp_rdma_nics(c->topo);
    }
    nics = g_ptr_array_new();
    for (i = 0; i < c->dom->hostdevs->len; i++) {
        GpDevice *dev = gp_topo_find(c->topo,
                                     g_ptr_array_index(c->dom->hostdevs, i));

        if (dev && gp_device_is_rdma_nic(dev)) {
            g_ptr_array_add(nics, dev);
        }
    }
    return nics;
}

/* The ACS half of the fix: the kernel argument, and setpci for kernels
 * before 6.11, which lack pci=config_acs=. */
static void append_acs_fix(GString *fix, const GpRdmaPair *pair)
{
    g_autofree char *arg = gp_rdma_config_acs(pair);
    g_autoptr(GString) setpci = g_string_new(NULL);
    guint i;

    for (i = 0; i < pair->ports->len; i++) {
        const GpRdmaPort *p = &g_array_index(pair->ports, GpRdmaPort, i);
        g_autofree char *missing = NULL;

        if (p->met) {
            continue;
        }
        missing = gp_rdma_port_missing(p);
        if (!p->settable) {
            g_string_append_printf(fix, "%s%s (%s) cannot get ACS %s by "
                                   "setting ACS Control: put the devices "
                                   "behind another port",
                                   fix->len ? "; " : "", p->port->bdf,
                                   gp_rdma_port_role_name(p->role), missing);
            continue;
        }
        g_string_append_printf(setpci, "%ssetpci -s %s ECAP_ACS+0x6.w=%04x",
                               setpci->len ? "; " : "", p->port->bdf,
                               (p->port->acs.ctrl | p->need) & 0xffff);
    }
    if (arg) {
        g_string_append_printf(fix, "%sset ACS on the ports: boot with %s "
                               "(Linux 6.11 and later; each FLAGS@BDF "
                               "lists bit 6 DT first, bit 0 SV last, x "
                               "leaves a control as it is), or on an older "
                               "kernel at every boot before VMs start: %s",
                               fix->len ? "; " : "", arg, setpci->str);
    }
}

static void append_ats_fix(GString *fix, const GpRdmaPair *pair)
{
    const GpDevice *nic = pair->nic;

    if (pair->ats_met) {
        return;
    }
    if (!nic->ats_known) {
        g_string_append_printf(fix, "%sread ATS of %s as root (extended "
                               "config space)", fix->len ? "; " : "",
                               nic->bdf);
    } else if (pair->ats_wanted && !nic->ats.present) {
        g_string_append_printf(fix, "%sexpose ATS on NIC %s in its firmware "
                               "(ConnectX: mlxconfig -d %s set "
                               "ATS_ENABLED=true, then a cold reboot)",
                               fix->len ? "; " : "", nic->bdf, nic->bdf);
    } else if (pair->ats_wanted) {
        g_string_append_printf(fix, "%sATS of %s is implemented but off: the "
                               "host IOMMU driver turns it on when the NIC "
                               "attaches to a DMA domain (bound to vfio-pci, "
                               "IOMMU not in passthrough; Intel needs the "
                               "root port in the DMAR table's ATSR)",
                               fix->len ? "; " : "", nic->bdf);
    } else {
        g_string_append_printf(fix, "%sturn ATS off on NIC %s (ConnectX: "
                               "mlxconfig -d %s set ATS_ENABLED=false, then "
                               "a cold reboot): with no switch shared with "
                               "the GPU it gains nothing, and the IOMMU does "
                               "not check translated requests again",
                               fix->len ? "; " : "", nic->bdf, nic->bdf);
    }
}

static char *pair_fix(const GpRdmaPair *pair)
{
    g_autoptr(GString) fix = g_string_new(NULL);

    if (pair->kind == GP_RDMA_PATH_UNKNOWN) {
        return g_strdup("see the reason: what the rule needs was not "
                        "readable (run as root, or capture with 'gpup2p "
                        "snapshot')");
    }
    append_acs_fix(fix, pair);
    /* ATS is only worth turning on once the ports isolate. */
    if (pair->kind != GP_RDMA_PATH_BYPASS) {
        append_ats_fix(fix, pair);
    }
    if (pair->shared_switch && !pair->groups_differ &&
        pair->kind != GP_RDMA_PATH_BYPASS) {
        g_string_append_printf(fix, "%s%s and %s must be in different "
                               "IOMMU groups (the ACS above separates "
                               "them)", fix->len ? "; " : "",
                               pair->nic->bdf, pair->gpu->bdf);
    }
    return fix->len ? g_string_free(g_steal_pointer(&fix), FALSE) : NULL;
}

static ItemState pair_state(const GpRdmaPair *pair)
{
    switch (pair->kind) {
    case GP_RDMA_PATH_SWITCH_TRANSLATED:
        return ITEM_OK;
    case GP_RDMA_PATH_ROOT_COMPLEX:
        /* Works; slower where a switch-local path could be set up. */
        return pair->shared_switch || !pair->ats_met ? ITEM_WARN : ITEM_OK;
    case GP_RDMA_PATH_NONE:
        return ITEM_WARN;
    case GP_RDMA_PATH_BYPASS:
        /* As a GPU pair that bypasses: not to be placed together in a
         * guest, where the NIC's DMA would land on whatever host window
         * the guest address hits; the host itself is not broken. */
        return ITEM_WARN;
    default:
        return ITEM_UNTESTED;
    }
}

/* The GPU of @gpus nearest to @nic (the first of the lowest class). */
static const GpDevice *nearest_gpu(const GpDevice *nic, const GPtrArray *gpus,
                                   GpPathType *type)
{
    const GpDevice *best = NULL;
    guint i;

    *type = GP_PATH_SYS;
    for (i = 0; i < gpus->len; i++) {
        const GpDevice *gpu = g_ptr_array_index(gpus, i);
        GpPathType t = gp_path_classify(nic, gpu);

        if (!best || t < *type) {
            best = gpu;
            *type = t;
        }
    }
    return best;
}

/*
 * With --domain: each NIC it assigns against the GPUs it assigns. A NIC
 * whose nearest assigned GPU sits across host bridges or NUMA nodes, or
 * farther than a GPU of the host it could have been given, warns.
 */
static void check_rdma_placement(Check *c, const GPtrArray *nics)
{
    g_autoptr(GPtrArray) host_gpus = NULL;
    g_autoptr(GError) err = NULL;
    guint i;

    host_gpus = gp_cli_select(c->topo, NULL, gp_device_is_nvidia_gpu, &err);
    if (!host_gpus) {
        return;
    }
    for (i = 0; i < nics->len; i++) {
        const GpDevice *nic = g_ptr_array_index(nics, i);
        GpPathType mine, best;
        const GpDevice *ours = nearest_gpu(nic, c->gpus, &mine);
        const GpDevice *near = nearest_gpu(nic, host_gpus, &best);
        g_autofree char *detail = NULL, *fix = NULL;
        bool far = mine == GP_PATH_NODE || mine == GP_PATH_SYS;

        if (!ours) {
            continue;
        }
        detail = g_strdup_printf("the domain's GPU nearest to NIC %s is %s "
                                 "(%s)%s%s%s%s", nic->bdf, ours->bdf,
                                 gp_path_type_name(mine),
                                 best < mine ? "; GPU " : "",
                                 best < mine ? near->bdf : "",
                                 best < mine ? " of this host is " : "",
                                 best < mine ? gp_path_type_name(best) : "");
        fix = g_strdup_printf("assign the NIC with the GPUs nearest it%s%s, "
                              "or the NIC nearest the domain's GPUs: "
                              "GPUDirect RDMA %s", best < mine ? " (" : "",
                              best < mine ? near->bdf : "",
                              far ? "between them crosses the CPU's "
                              "interconnect" : "takes a longer path");
        check_item_for(c->r, far || best < mine ? ITEM_WARN : ITEM_OK,
                       "RDMA placement", nic, NULL, detail, fix);
    }
}

void check_rdma_pairs(Check *c)
{
    g_autoptr(GPtrArray) nics = rdma_nics(c);
    g_autoptr(GPtrArray) pairs = NULL;
    guint i;

    if (!nics->len || !c->gpus->len) {
        return;
    }
    pairs = gp_rdma_pairs(c->topo, nics, c->gpus);
    for (i = 0; i < pairs->len; i++) {
        const GpRdmaPair *pair = g_ptr_array_index(pairs, i);
        g_autofree char *detail = g_strdup_printf(
            "GPUDirect RDMA for a guest: %s (%s): %s",
            gp_rdma_path_kind_name(pair->kind),
            gp_path_type_name(pair->path), pair->reason);
        g_autofree char *fix = pair_fix(pair);

        check_item_for(c->r, pair_state(pair), "RDMA", pair->nic, pair->gpu,
                       detail, fix);
    }
    if (c->dom) {
        check_rdma_placement(c, nics);
    }
}
