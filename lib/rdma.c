/* SPDX-License-Identifier: GPL-2.0-or-later */
/* GPUDirect RDMA pairs and their path for a guest (gpup2p/rdma.h). */
#include <string.h>

#include "gpup2p/rdma.h"

const char *gp_rdma_path_kind_name(GpRdmaPathKind kind)
{
    static const char *const names[] = {
        [GP_RDMA_PATH_SWITCH_TRANSLATED] = "switch-local-translated",
        [GP_RDMA_PATH_ROOT_COMPLEX] = "root-complex",
        [GP_RDMA_PATH_BYPASS] = "bypass",
        [GP_RDMA_PATH_NONE] = "none",
        [GP_RDMA_PATH_UNKNOWN] = "unknown",
    };

    return kind < G_N_ELEMENTS(names) ? names[kind] : "unknown";
}

const char *gp_rdma_port_role_name(GpRdmaPortRole role)
{
    static const char *const names[] = {
        [GP_RDMA_PORT_NIC_SWITCH] = "NIC's downstream port",
        [GP_RDMA_PORT_GPU_SWITCH] = "GPU's downstream port",
        [GP_RDMA_PORT_PATH] = "port",
        [GP_RDMA_PORT_ROOT] = "root port",
    };

    return role < G_N_ELEMENTS(names) ? names[role] : "port";
}

char *gp_rdma_acs_flags(uint16_t need)
{
    char flags[8];
    int bit;

    for (bit = 6; bit >= 0; bit--) {
        flags[6 - bit] = need & (1u << bit) ? '1' : 'x';
    }
    flags[7] = '\0';
    return g_strdup(flags);
}

char *gp_rdma_config_acs(const GpRdmaPair *pair)
{
    g_autoptr(GString) arg = g_string_new(NULL);
    guint i;

    for (i = 0; i < pair->ports->len; i++) {
        const GpRdmaPort *p = &g_array_index(pair->ports, GpRdmaPort, i);
        g_autofree char *flags = NULL;

        if (p->met || !p->settable) {
            continue;
        }
        flags = gp_rdma_acs_flags(p->need);
        g_string_append_printf(arg, "%s%s@%s", arg->len ? ";" : "", flags,
                               p->port->bdf);
    }
    if (!arg->len) {
        return NULL;
    }
    return g_strdup_printf("pci=config_acs=%s", arg->str);
}

static void pair_free(gpointer p)
{
    GpRdmaPair *pair = p;

    g_free(pair->reason);
    g_array_free(pair->ports, TRUE);
    g_free(pair);
}

static gint device_ptr_cmp(gconstpointer a, gconstpointer b)
{
    const GpDevice *da = *(GpDevice *const *)a;
    const GpDevice *db = *(GpDevice *const *)b;

    return da->model_index < db->model_index ? -1 :
           da->model_index > db->model_index;
}

GPtrArray *gp_rdma_nics(const GpTopology *topo)
{
    GPtrArray *nics = g_ptr_array_new();
    guint i;

    for (i = 0; i < topo->devices->len; i++) {
        GpDevice *dev = g_ptr_array_index(topo->devices, i);

        if (gp_device_is_rdma_nic(dev)) {
            g_ptr_array_add(nics, dev);
        }
    }
    return nics;
}

/* The bridge above @dev whose upstream bridge is @top, or NULL. */
static const GpDevice *child_below(const GpDevice *dev, const GpDevice *top)
{
    const GpDevice *d;

    for (d = (dev->physfn ? dev->physfn : dev)->parent; d; d = d->parent) {
        if (d->parent == top) {
            return d;
        }
    }
    return NULL;
}

/* Add or tighten @port in @ports (one entry per port). */
static GpRdmaPort *port_entry(GArray *ports, const GpDevice *port)
{
    GpRdmaPort blank = { .port = port, .met = true, .settable = true };
    guint i;

    for (i = 0; i < ports->len; i++) {
        GpRdmaPort *p = &g_array_index(ports, GpRdmaPort, i);

        if (p->port == port) {
            return p;
        }
    }
    blank.role = port->parent ? GP_RDMA_PORT_PATH : GP_RDMA_PORT_ROOT;
    g_array_append_val(ports, blank);
    return &g_array_index(ports, GpRdmaPort, ports->len - 1);
}

/* The isolation Linux asks of each port above @dev: the VM rule's hops. */
static bool add_isolation(GArray *ports, const GpDevice *dev)
{
    g_autoptr(GArray) hops = gp_p2p_isolation_hops(dev);
    guint i;

    if (!hops) {
        return false;
    }
    for (i = 0; i < hops->len; i++) {
        const GpIsolationHop *h = &g_array_index(hops, GpIsolationHop, i);
        GpRdmaPort *p = port_entry(ports, h->port);
        uint16_t ctrl = h->port->acs.present ? h->port->acs.ctrl : 0;

        p->need |= h->need;
        p->met &= h->passes == 1;
        p->missing |= h->passes == 1 ? 0 : h->need & ~ctrl;
        p->settable &= h->settable;
    }
    return true;
}

/* Direct Translated P2P on the NIC's port of the shared switch. */
static void add_direct_translated(GArray *ports, const GpDevice *port)
{
    GpRdmaPort *p = port_entry(ports, port);
    bool has = port->acs_known && port->acs.present &&
               (port->acs.cap & GP_ACS_DT) && (port->acs.ctrl & GP_ACS_DT);

    p->role = GP_RDMA_PORT_NIC_SWITCH;
    p->need |= GP_ACS_DT;
    p->met &= has;
    p->missing |= has ? 0 : GP_ACS_DT;
    p->settable &= port->acs_known && port->acs.present &&
                   (port->acs.cap & GP_ACS_DT);
}

static gint port_cmp(gconstpointer a, gconstpointer b)
{
    const GpRdmaPort *pa = a, *pb = b;

    return pa->port->model_index < pb->port->model_index ? -1 :
           pa->port->model_index > pb->port->model_index;
}

char *gp_rdma_port_missing(const GpRdmaPort *port)
{
    return gp_acs_bits_string(port->missing ? port->missing : port->need);
}

/* "0000:04:00.0 (NIC's downstream port) lacks DT", ... for unmet ports. */
static void append_unmet_ports(GString *out, const GpRdmaPair *pair)
{
    guint i;

    for (i = 0; i < pair->ports->len; i++) {
        const GpRdmaPort *p = &g_array_index(pair->ports, GpRdmaPort, i);
        g_autofree char *missing = NULL;

        if (p->met) {
            continue;
        }
        missing = gp_rdma_port_missing(p);
        g_string_append_printf(out, "%s%s (%s) lacks ACS %s%s",
                               out->len ? "; " : "", p->port->bdf,
                               gp_rdma_port_role_name(p->role), missing,
                               p->settable ? "" : ", which ACS Control "
                               "cannot give it");
    }
}

/* Why the switch-local path is not taken, or "" when it is. */
static char *switch_local_missing(const GpRdmaPair *pair)
{
    g_autoptr(GString) out = g_string_new(NULL);
    const GpDevice *nic = pair->nic;

    append_unmet_ports(out, pair);
    if (!nic->ats_known) {
        g_string_append_printf(out, "%sATS of %s unknown (extended config "
                               "space not readable; needs root)",
                               out->len ? "; " : "", nic->bdf);
    } else if (!nic->ats.present) {
        g_string_append_printf(out, "%s%s has no ATS capability",
                               out->len ? "; " : "", nic->bdf);
    } else if (!nic->ats.enabled) {
        g_string_append_printf(out, "%sATS of %s is not enabled",
                               out->len ? "; " : "", nic->bdf);
    }
    if (!pair->groups_differ) {
        g_string_append_printf(out, "%s%s and %s are not in different IOMMU "
                               "groups", out->len ? "; " : "", nic->bdf,
                               pair->gpu->bdf);
    }
    return g_string_free(g_steal_pointer(&out), FALSE);
}

/* The kind and reason of an isolated pair (the VM rule said OK or NONE). */
static void judge_isolated(GpRdmaPair *pair, const GpP2pVerdict *v)
{
    g_autofree char *missing = NULL;
    bool rc_forwards = v->vm_kind == GP_VM_P2P_OK;

    if (!pair->shared_switch) {
        pair->kind = rc_forwards ? GP_RDMA_PATH_ROOT_COMPLEX :
                     GP_RDMA_PATH_NONE;
        pair->reason = g_strdup_printf(
            "%s; they share no switch below the root port, so there is no "
            "switch-local path (ATS wanted off: it would gain nothing)",
            v->vm_reason);
        return;
    }
    missing = switch_local_missing(pair);
    if (!*missing) {
        pair->kind = GP_RDMA_PATH_SWITCH_TRANSLATED;
        pair->reason = g_strdup_printf(
            "the NIC's translated requests turn in switch %s (ATS on %s, "
            "ACS Direct Translated P2P on its downstream port); untranslated "
            "ones go to the IOMMU: every port isolates (SV RR CR UF) and "
            "the IOMMU groups differ", pair->shared_switch->bdf,
            pair->nic->bdf);
        return;
    }
    pair->kind = rc_forwards ? GP_RDMA_PATH_ROOT_COMPLEX : GP_RDMA_PATH_NONE;
    pair->reason = g_strdup_printf("%s; switch-local translated P2P in %s "
                                   "is not set up: %s", v->vm_reason,
                                   pair->shared_switch->bdf, missing);
}

static GpRdmaPair *pair_judge(const GpTopology *topo, const GpDevice *nic,
                              const GpDevice *gpu)
{
    GpRdmaPair *pair = g_new0(GpRdmaPair, 1);
    const GpDevice *nic_port = NULL, *gpu_port = NULL;
    GpP2pVerdict v;

    pair->nic = nic;
    pair->gpu = gpu;
    pair->path = gp_path_classify(nic, gpu);
    pair->ports = g_array_new(FALSE, TRUE, sizeof(GpRdmaPort));
    pair->groups_differ = nic->iommu_group >= 0 && gpu->iommu_group >= 0 &&
                          nic->iommu_group != gpu->iommu_group;
    /* The GPU-GPU rule decides isolation; a pair is a pair whichever end. */
    gp_p2p_verdict(topo, nic, gpu, &v);
    if (v.common && v.common->parent &&
        v.common->pcie.type == GP_PCIE_TYPE_UPSTREAM_PORT) {
        nic_port = child_below(nic, v.common);
        gpu_port = child_below(gpu, v.common);
        pair->shared_switch = nic_port && gpu_port ? v.common : NULL;
    }
    if (!add_isolation(pair->ports, nic) ||
        !add_isolation(pair->ports, gpu)) {
        pair->kind = GP_RDMA_PATH_UNKNOWN;
        pair->reason = g_strdup(v.vm_reason);
        gp_p2p_verdict_clear(&v);
        return pair;
    }
    if (pair->shared_switch) {
        add_direct_translated(pair->ports, nic_port);
        port_entry(pair->ports, gpu_port)->role = GP_RDMA_PORT_GPU_SWITCH;
    }
    g_array_sort(pair->ports, port_cmp);
    pair->ats_wanted = pair->shared_switch != NULL;
    pair->ats_met = nic->ats_known &&
                    (pair->ats_wanted ? nic->ats.present && nic->ats.enabled :
                     !nic->ats.present);
    switch (v.vm_kind) {
    case GP_VM_P2P_BYPASS:
        pair->kind = GP_RDMA_PATH_BYPASS;
        pair->reason = g_strdup(v.vm_reason);
        break;
    case GP_VM_P2P_UNKNOWN:
        pair->kind = GP_RDMA_PATH_UNKNOWN;
        pair->reason = g_strdup(v.vm_reason);
        break;
    default:
        judge_isolated(pair, &v);
        break;
    }
    gp_p2p_verdict_clear(&v);
    return pair;
}

GPtrArray *gp_rdma_pairs(const GpTopology *topo, const GPtrArray *nics,
                         const GPtrArray *gpus)
{
    GPtrArray *pairs = g_ptr_array_new_with_free_func(pair_free);
    g_autoptr(GPtrArray) sorted = g_ptr_array_copy((GPtrArray *)nics, NULL,
                                                   NULL);
    guint i, j;

    g_ptr_array_sort(sorted, device_ptr_cmp);
    for (i = 0; i < sorted->len; i++) {
        const GpDevice *nic = g_ptr_array_index(sorted, i);
        g_autoptr(GPtrArray) near = g_ptr_array_new();
        GpPathType best = GP_PATH_SYS;

        for (j = 0; j < gpus->len; j++) {
            const GpDevice *gpu = g_ptr_array_index(gpus, j);
            GpPathType t = gp_path_classify(nic, gpu);

            if (gpu == nic) {
                continue;
            }
            if (t < best || !near->len) {
                g_ptr_array_set_size(near, 0);
                best = t;
            }
            if (t == best) {
                g_ptr_array_add(near, (gpointer)gpu);
            }
        }
        g_ptr_array_sort(near, device_ptr_cmp);
        for (j = 0; j < near->len; j++) {
            g_ptr_array_add(pairs, pair_judge(topo, nic,
                                              g_ptr_array_index(near, j)));
        }
    }
    return pairs;
}

const GpDevice *gp_rdma_nearest_nic(const GpDevice *gpu,
                                    const GPtrArray *nics)
{
    const GpDevice *best = NULL;
    GpPathType best_path = GP_PATH_SYS;
    guint i;

    for (i = 0; i < nics->len; i++) {
        const GpDevice *nic = g_ptr_array_index(nics, i);
        GpPathType t = gp_path_classify(gpu, nic);

        /* Normalized BDFs ("dddd:bb:dd.f", lower case) sort as numbers. */
        if (!best || t < best_path ||
            (t == best_path && strcmp(nic->bdf, best->bdf) < 0)) {
            best = nic;
            best_path = t;
        }
    }
    return best;
}
