/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The mirrored guest hierarchy: planning, addresses and QEMU arguments. */
#include <stdlib.h>
#include <string.h>

#include "gpup2p/mirror.h"
#include "gpup2p/rdma.h"

static void node_free(gpointer p)
{
    GpMirrorNode *n = p;

    g_ptr_array_free(n->children, TRUE);
    g_free(n);
}

static void nic_place_free(gpointer p)
{
    GpMirrorNicPlace *np = p;

    g_free(np->reason);
    g_free(np);
}

void gp_mirror_free(GpMirror *m)
{
    if (!m) {
        return;
    }
    g_ptr_array_free(m->nic_places, TRUE);
    g_ptr_array_free(m->expanders, TRUE);
    g_ptr_array_free(m->nodes, TRUE);
    g_array_free(m->cell_host_node, TRUE);
    g_free(m);
}

const char *gp_mirror_kind_name(GpMirrorKind kind)
{
    static const char *const names[] = {
        [GP_MIRROR_EXPANDER] = "expander",
        [GP_MIRROR_ROOT_PORT] = "root-port",
        [GP_MIRROR_SWITCH_UP] = "switch-upstream",
        [GP_MIRROR_SWITCH_DOWN] = "switch-downstream",
        [GP_MIRROR_ENDPOINT] = "device",
    };

    return names[kind];
}

static GpMirrorNode *node_new(GpMirror *m, GpMirrorKind kind,
                              GpMirrorNode *parent, const GpDevice *host,
                              const char *sort_key)
{
    GpMirrorNode *n = g_new0(GpMirrorNode, 1);

    n->kind = kind;
    n->parent = parent;
    n->host = host;
    n->children = g_ptr_array_new();
    n->guest_node = -1;
    n->host_node = -1;
    g_strlcpy(n->sort_key, sort_key, sizeof(n->sort_key));
    if (parent) {
        n->host_bridge = parent->host_bridge;
        g_ptr_array_add(parent->children, n);
    }
    g_ptr_array_add(m->nodes, n);
    return n;
}

static GpMirrorNode *child_with_key(GpMirrorNode *parent, GpMirrorKind kind,
                                    const char *key)
{
    guint i;

    for (i = 0; i < parent->children->len; i++) {
        GpMirrorNode *c = g_ptr_array_index(parent->children, i);

        if (c->kind == kind && !strcmp(c->sort_key, key)) {
            return c;
        }
    }
    return NULL;
}

static GpMirrorNode *child_get(GpMirror *m, GpMirrorNode *parent,
                               GpMirrorKind kind, const GpDevice *host,
                               const char *key)
{
    GpMirrorNode *c = child_with_key(parent, kind, key);

    return c ? c : node_new(m, kind, parent, host, key);
}

static GpMirrorNode *expander_get(GpMirror *m, const GpDevice *dev)
{
    GpMirrorNode *e;
    char key[GP_BDF_LEN];
    guint i;

    for (i = 0; i < m->expanders->len; i++) {
        e = g_ptr_array_index(m->expanders, i);
        if (e->host_bridge == dev->host) {
            return e;
        }
    }
    g_snprintf(key, sizeof(key), "%04x:%02x", dev->host->domain,
               dev->host->bus);
    e = node_new(m, GP_MIRROR_EXPANDER, NULL, NULL, key);
    e->host_bridge = dev->host;
    e->host_node = dev->numa_node;
    g_ptr_array_add(m->expanders, e);
    return e;
}

static bool is_below(const GpDevice *bridge, const GpDevice *dev)
{
    for (dev = dev->parent; dev; dev = dev->parent) {
        if (dev == bridge) {
            return true;
        }
    }
    return false;
}

static unsigned count_below(const GpDevice *bridge, GPtrArray *devs)
{
    unsigned n = 0;
    guint i;

    for (i = 0; i < devs->len; i++) {
        n += is_below(bridge, g_ptr_array_index(devs, i));
    }
    return n;
}

/*
 * Place @dev: the expander of its host bridge, the root port standing for
 * its host root port, then a guest switch for each host switch on the way
 * down that holds two or more of the devices. Other bridges in between
 * (conventional PCI bridges, switches holding one device) are left out:
 * they change no path class between the devices.
 */
static void place(GpMirror *m, const GpDevice *dev, GPtrArray *devs)
{
    g_autoptr(GPtrArray) chain = g_ptr_array_new();
    GpMirrorNode *cur = expander_get(m, dev);
    const GpDevice *d;
    char key[GP_BDF_LEN];
    guint i;

    for (d = dev->parent; d; d = d->parent) {
        g_ptr_array_insert(chain, 0, (gpointer)d);
    }
    if (chain->len) {
        d = g_ptr_array_index(chain, 0);
        cur = child_get(m, cur, GP_MIRROR_ROOT_PORT, d, d->bdf);
    } else {
        /* On a host root bus: a port of its own, shared by functions of
         * one device. */
        g_snprintf(key, sizeof(key), "%04x:%02x:%02x", dev->domain, dev->bus,
                   dev->slot);
        cur = child_get(m, cur, GP_MIRROR_ROOT_PORT, NULL, key);
    }
    for (i = 1; i + 1 < chain->len; i++) {
        const GpDevice *up = g_ptr_array_index(chain, i);
        const GpDevice *down = g_ptr_array_index(chain, i + 1);

        if (up->pcie.type == GP_PCIE_TYPE_UPSTREAM_PORT &&
            down->pcie.type == GP_PCIE_TYPE_DOWNSTREAM_PORT &&
            count_below(up, devs) >= 2) {
            cur = child_get(m, cur, GP_MIRROR_SWITCH_UP, up, up->bdf);
            cur = child_get(m, cur, GP_MIRROR_SWITCH_DOWN, down, down->bdf);
            i++;
        }
    }
    node_new(m, GP_MIRROR_ENDPOINT, cur, dev, dev->bdf);
}

static gint node_key_cmp(gconstpointer a, gconstpointer b)
{
    const GpMirrorNode *na = *(GpMirrorNode *const *)a;
    const GpMirrorNode *nb = *(GpMirrorNode *const *)b;

    return strcmp(na->sort_key, nb->sort_key);
}

/* PCIe link speeds: sysfs text ("16.0 GT/s PCIe", "8 GT/s") to QEMU's
 * PCIELinkSpeed names. */
static const struct {
    double gts;
    const char *name;
} link_speeds[] = {
    { 2.5, "2_5" }, { 5, "5" }, { 8, "8" }, { 16, "16" }, { 32, "32" },
    { 64, "64" },
};

/* Index into link_speeds, or -1 for text that names none. */
static int link_speed_index(const char *sysfs)
{
    double v;
    size_t i;

    if (!sysfs) {
        return -1;
    }
    v = g_ascii_strtod(sysfs, NULL);
    for (i = 0; i < G_N_ELEMENTS(link_speeds); i++) {
        if (v > link_speeds[i].gts - 0.1 && v < link_speeds[i].gts + 0.1) {
            return (int)i;
        }
    }
    return -1;
}

/* The host link a root port stands for: the slower of the host port and
 * the device below it, by their capabilities (an idle GPU trains its link
 * down, so the current speed would understate it). An end whose link
 * attributes hold garbage is refused, naming it: without its speed the
 * port would silently lose x-speed. */
static bool root_port_link(GpMirrorNode *rp, GError **errp)
{
    const GpMirrorNode *leaf = rp;
    const GpDevice *ends[2] = { rp->host, NULL };
    int speed = -1, width = 0;
    const GpDevice *d;
    size_t i;

    while (leaf->children->len) {
        leaf = g_ptr_array_index(leaf->children, 0);
    }
    for (d = leaf->host; d; d = d->parent) {
        if (d->parent == rp->host) {
            ends[1] = d;
            break;
        }
    }
    for (i = 0; i < G_N_ELEMENTS(ends); i++) {
        if (ends[i] && ends[i]->attr_invalid) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "cannot mirror "
                        "the link of %s: %s", ends[i]->bdf,
                        ends[i]->attr_invalid);
            return false;
        }
    }
    for (i = 0; i < G_N_ELEMENTS(ends); i++) {
        int s = ends[i] ? link_speed_index(ends[i]->max_link_speed) : -1;
        int w = ends[i] ? ends[i]->max_link_width : 0;

        if (s >= 0 && (speed < 0 || s < speed)) {
            speed = s;
        }
        if (w > 0 && (!width || w < width)) {
            width = w;
        }
    }
    rp->link_speed = speed >= 0 ? link_speeds[speed].name : NULL;
    rp->link_width = width;
    return true;
}

/* What a guest bus can hold: 32 slots; below a port, one switch or up to
 * eight functions of the devices. */
static bool check_children(const GpMirrorNode *n, GError **errp)
{
    unsigned endpoints = 0, bridges = 0;
    guint i;

    for (i = 0; i < n->children->len; i++) {
        const GpMirrorNode *c = g_ptr_array_index(n->children, i);

        endpoints += c->kind == GP_MIRROR_ENDPOINT;
        bridges += c->kind != GP_MIRROR_ENDPOINT;
    }
    if (n->kind == GP_MIRROR_EXPANDER || n->kind == GP_MIRROR_SWITCH_UP) {
        if (n->children->len > 32) {
            g_set_error(errp, GP_ERROR, GP_ERROR_NO_ROOM, "host %s: %u "
                        "ports to mirror, a bus holds 32", n->host ?
                        n->host->bdf : n->sort_key, n->children->len);
            return false;
        }
        return true;
    }
    if (endpoints > 8 || (bridges && n->children->len > 1)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_UNSUPPORTED, "host %s: %u "
                    "devices and %u switches below one port cannot be "
                    "mirrored (a port takes one switch or up to eight "
                    "functions)", n->host ? n->host->bdf : n->sort_key,
                    endpoints, bridges);
        return false;
    }
    return true;
}

typedef struct {
    unsigned next_bus;
    unsigned chassis, port_slot;
} Numbering;

/*
 * Give @n and its subtree slots and bus numbers, depth first in slot
 * order, as firmware (SeaBIOS, OVMF) numbers the buses of a root bus.
 */
static bool number(GpMirrorNode *n, Numbering *nb, GError **errp)
{
    guint i;

    g_ptr_array_sort(n->children, node_key_cmp);
    if (!check_children(n, errp)) {
        return false;
    }
    if (n->kind != GP_MIRROR_ENDPOINT) {
        n->secondary = n->kind == GP_MIRROR_EXPANDER ? n->bus : ++nb->next_bus;
        if (nb->next_bus > 0xff) {
            g_set_error(errp, GP_ERROR, GP_ERROR_NO_ROOM, "the mirrored "
                        "hierarchy needs more than 256 PCI buses");
            return false;
        }
    }
    if (n->kind == GP_MIRROR_ROOT_PORT || n->kind == GP_MIRROR_SWITCH_DOWN) {
        n->chassis = nb->chassis;
        n->port_slot = ++nb->port_slot;
    }
    if (n->kind == GP_MIRROR_ROOT_PORT && !root_port_link(n, errp)) {
        return false;
    }
    for (i = 0; i < n->children->len; i++) {
        GpMirrorNode *c = g_ptr_array_index(n->children, i);

        c->bus = n->secondary;
        if (c->kind == GP_MIRROR_ENDPOINT) {
            c->slot = 0;
            c->function = i;
            c->multifunction = i == 0 && n->children->len > 1;
        } else {
            c->slot = n->kind == GP_MIRROR_SWITCH_UP ||
                      n->kind == GP_MIRROR_EXPANDER ? i : 0;
        }
        g_snprintf(c->guest_bdf, sizeof(c->guest_bdf), "0000:%02x:%02x.%x",
                   c->bus, c->slot, c->function);
        if (!number(c, nb, errp)) {
            return false;
        }
    }
    return true;
}

static void name_nodes(GpMirror *m)
{
    unsigned count[GP_MIRROR_ENDPOINT + 1] = { 0 };
    static const char *const prefix[] = {
        [GP_MIRROR_EXPANDER] = "gpup2p-hb",
        [GP_MIRROR_ROOT_PORT] = "gpup2p-rp",
        [GP_MIRROR_SWITCH_UP] = "gpup2p-up",
        [GP_MIRROR_SWITCH_DOWN] = "gpup2p-dp",
        [GP_MIRROR_ENDPOINT] = "gpup2p-dev",
    };
    guint i;

    for (i = 0; i < m->nodes->len; i++) {
        GpMirrorNode *n = g_ptr_array_index(m->nodes, i);

        g_snprintf(n->id, sizeof(n->id), "%s%u", prefix[n->kind],
                   count[n->kind]++);
    }
}

/* Parents before children, siblings in address order: ids then follow the
 * guest's layout, not the order the devices were named in. */
static void order_nodes(GpMirror *m, GpMirrorNode *n)
{
    guint i;

    g_ptr_array_add(m->nodes, n);
    for (i = 0; i < n->children->len; i++) {
        order_nodes(m, g_ptr_array_index(n->children, i));
    }
}

static gint bdf_cmp(gconstpointer a, gconstpointer b)
{
    return strcmp((*(GpDevice *const *)a)->bdf, (*(GpDevice *const *)b)->bdf);
}

static gint int_cmp(gconstpointer a, gconstpointer b)
{
    return *(const int *)a - *(const int *)b;
}

static GPtrArray *select_devices(const GpTopology *topo,
                                 const char *const *bdfs, GError **errp)
{
    g_autoptr(GPtrArray) devs = g_ptr_array_new();
    guint i, j;

    for (i = 0; bdfs && bdfs[i]; i++) {
        GpDevice *dev = gp_topo_find(topo, bdfs[i]);

        if (!dev) {
            g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND, "'%s' is not a "
                        "PCI device of this host", bdfs[i]);
            return NULL;
        }
        if (dev->is_bridge) {
            g_set_error(errp, GP_ERROR, GP_ERROR_UNSUPPORTED, "%s is a "
                        "bridge: only endpoints are assigned", dev->bdf);
            return NULL;
        }
        for (j = 0; j < devs->len; j++) {
            if (g_ptr_array_index(devs, j) == dev) {
                g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s is named "
                            "twice", dev->bdf);
                return NULL;
            }
        }
        g_ptr_array_add(devs, dev);
    }
    if (!devs->len) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "no device to mirror");
        return NULL;
    }
    g_ptr_array_sort(devs, bdf_cmp);
    return g_steal_pointer(&devs);
}

/* One guest NUMA cell per host node of the expanders, numbered from 0
 * (QEMU wants no gaps) in host order; expanders without a node get none. */
static void assign_cells(GpMirror *m)
{
    guint i, j;

    for (i = 0; i < m->expanders->len; i++) {
        const GpMirrorNode *e = g_ptr_array_index(m->expanders, i);

        for (j = 0; j < m->cell_host_node->len &&
             g_array_index(m->cell_host_node, int, j) != e->host_node; j++) {
        }
        if (e->host_node >= 0 && j == m->cell_host_node->len) {
            g_array_append_val(m->cell_host_node, e->host_node);
        }
    }
    g_array_sort(m->cell_host_node, int_cmp);
    for (i = 0; i < m->expanders->len; i++) {
        GpMirrorNode *e = g_ptr_array_index(m->expanders, i);

        for (j = 0; j < m->cell_host_node->len; j++) {
            if (g_array_index(m->cell_host_node, int, j) == e->host_node) {
                e->guest_node = j;
            }
        }
    }
}

static const GpMirrorNode *node_of(const GpMirror *m, const GpDevice *dev)
{
    guint i;

    for (i = 0; i < m->nodes->len; i++) {
        const GpMirrorNode *n = g_ptr_array_index(m->nodes, i);

        if (n->kind == GP_MIRROR_ENDPOINT && n->host == dev) {
            return n;
        }
    }
    return NULL;
}

/* The nearest node above both @a and @b, or NULL. */
static const GpMirrorNode *meeting_node(const GpMirrorNode *a,
                                        const GpMirrorNode *b)
{
    const GpMirrorNode *x, *y;

    for (x = a->parent; x; x = x->parent) {
        for (y = b->parent; y; y = y->parent) {
            if (x == y) {
                return x;
            }
        }
    }
    return NULL;
}

static char *partner_reason(const GpMirrorNicPlace *np)
{
    const GpMirrorNode *at = np->meeting;
    g_autofree char *where = NULL;

    if (!at) {
        where = g_strdup("on different guest host bridges");
    } else if (at->kind == GP_MIRROR_SWITCH_UP) {
        where = g_strdup_printf("both under emulated switch %s (guest %s, "
                                "host %s)", at->id, at->guest_bdf,
                                at->host->bdf);
    } else if (at->kind == GP_MIRROR_ROOT_PORT) {
        where = g_strdup_printf("both below root port %s (guest %s)",
                                at->id, at->guest_bdf);
    } else {
        where = g_strdup_printf("both on guest host bridge %s (guest %s), "
                                "on root ports of their own", at->id,
                                at->guest_bdf);
    }
    return g_strdup_printf("NIC %s (guest %s) is placed beside GPU %s "
                           "(guest %s), its GPUDirect RDMA partner on the "
                           "host (%s): %s, as on the host",
                           np->nic->host->bdf, np->nic->guest_bdf,
                           np->gpu->host->bdf, np->gpu->guest_bdf,
                           gp_path_type_name(np->host_path), where);
}

/* Why @nic has no partner: its nearest GPUs of the host (@nearest, @path
 * from it) are not assigned, and how far the nearest assigned one is. */
static char *lone_reason(const GpMirrorNode *nic, const GPtrArray *nearest,
                         GpPathType path, const GPtrArray *devs)
{
    g_autoptr(GString) names = g_string_new(NULL);
    g_autofree char *assigned = NULL;
    const GpDevice *best = NULL;
    GpPathType best_path = GP_PATH_SYS;
    guint i;

    if (!nearest->len) {
        return g_strdup_printf("NIC %s (guest %s) has no assigned GPU "
                               "partner: the host has no GPU; placed by "
                               "its own host path", nic->host->bdf,
                               nic->guest_bdf);
    }
    for (i = 0; i < nearest->len; i++) {
        g_string_append_printf(names, "%s%s", i ? ", " : "",
                               ((const GpDevice *)
                                g_ptr_array_index(nearest, i))->bdf);
    }
    for (i = 0; i < devs->len; i++) {
        const GpDevice *dev = g_ptr_array_index(devs, i);
        GpPathType t;

        if (!gp_device_is_gpu(dev)) {
            continue;
        }
        t = gp_path_classify(nic->host, dev);
        if (!best || t < best_path) {
            best = dev;
            best_path = t;
        }
    }
    assigned = best ? g_strdup_printf("the nearest assigned GPU, %s, is %s "
                                      "from it", best->bdf,
                                      gp_path_type_name(best_path)) :
                      g_strdup("no GPU is assigned");
    return g_strdup_printf("NIC %s (guest %s) has no assigned GPU partner: "
                           "its nearest GPUs on the host (%s: %s) are not "
                           "assigned and %s; placed by its own host path",
                           nic->host->bdf, nic->guest_bdf, names->str,
                           gp_path_type_name(path), assigned);
}

/*
 * Each assigned RDMA NIC with the GPU it pairs with on the host, where
 * that GPU is assigned: the pairing is gp_rdma_pairs() over every GPU of
 * the host, so the guest keeps the host's pairs rather than making new
 * ones from whatever GPUs this guest happens to get.
 */
static void place_nics(GpMirror *m, const GpTopology *topo,
                       const GPtrArray *devs)
{
    g_autoptr(GPtrArray) nics = g_ptr_array_new();
    g_autoptr(GPtrArray) gpus = g_ptr_array_new();
    g_autoptr(GPtrArray) pairs = NULL;
    guint i, j;

    for (i = 0; i < devs->len; i++) {
        if (gp_device_is_rdma_nic(g_ptr_array_index(devs, i))) {
            g_ptr_array_add(nics, g_ptr_array_index(devs, i));
        }
    }
    if (!nics->len) {
        return;
    }
    for (i = 0; i < topo->devices->len; i++) {
        if (gp_device_is_gpu(g_ptr_array_index(topo->devices, i))) {
            g_ptr_array_add(gpus, g_ptr_array_index(topo->devices, i));
        }
    }
    pairs = gp_rdma_pairs(topo, nics, gpus);
    for (i = 0; i < nics->len; i++) {
        const GpDevice *nic = g_ptr_array_index(nics, i);
        GpMirrorNicPlace *np = g_new0(GpMirrorNicPlace, 1);
        g_autoptr(GPtrArray) nearest = g_ptr_array_new();
        GpPathType path = GP_PATH_SYS;

        np->nic = node_of(m, nic);
        for (j = 0; j < pairs->len; j++) {
            const GpRdmaPair *pair = g_ptr_array_index(pairs, j);
            const GpMirrorNode *gpu;

            if (pair->nic != nic) {
                continue;
            }
            g_ptr_array_add(nearest, (gpointer)pair->gpu);
            path = pair->path;
            gpu = node_of(m, pair->gpu);
            if (gpu && !np->gpu) {
                np->gpu = gpu;
                np->host_path = pair->path;
            }
        }
        if (np->gpu) {
            np->meeting = meeting_node(np->nic, np->gpu);
            np->reason = partner_reason(np);
        } else {
            np->reason = lone_reason(np->nic, nearest, path, devs);
        }
        g_ptr_array_add(m->nic_places, np);
    }
}

GpMirror *gp_mirror_plan(const GpTopology *topo, const char *const *bdfs,
                         bool (*slot_taken)(unsigned slot, void *opaque),
                         void *opaque, GError **errp)
{
    g_autoptr(GpMirror) m = g_new0(GpMirror, 1);
    g_autoptr(GPtrArray) devs = NULL;
    Numbering nb = { .next_bus = GP_MIRROR_FIRST_BUS - 1 };
    unsigned slot = GP_MIRROR_TOP_SLOT;
    guint i;

    m->nodes = g_ptr_array_new_with_free_func(node_free);
    m->expanders = g_ptr_array_new();
    m->cell_host_node = g_array_new(FALSE, FALSE, sizeof(int));
    m->nic_places = g_ptr_array_new_with_free_func(nic_place_free);
    devs = select_devices(topo, bdfs, errp);
    if (!devs) {
        return NULL;
    }
    for (i = 0; i < devs->len; i++) {
        place(m, g_ptr_array_index(devs, i), devs);
    }
    g_ptr_array_sort(m->expanders, node_key_cmp);
    assign_cells(m);
    for (i = 0; i < m->expanders->len; i++) {
        GpMirrorNode *e = g_ptr_array_index(m->expanders, i);

        while (slot > 0 && slot_taken && slot_taken(slot, opaque)) {
            slot--;
        }
        if (slot == 0) {
            g_set_error(errp, GP_ERROR, GP_ERROR_NO_ROOM, "no free slot on "
                        "pcie.0 for expander bus %u", i);
            return NULL;
        }
        e->slot = slot--;
        e->bus = nb.next_bus + 1;
        if (e->bus > 0xff) {
            g_set_error(errp, GP_ERROR, GP_ERROR_NO_ROOM, "the mirrored "
                        "hierarchy needs more than 256 PCI buses");
            return NULL;
        }
        nb.next_bus = e->bus;
        nb.chassis = 0x80 + i;
        nb.port_slot = 0;
        g_snprintf(e->guest_bdf, sizeof(e->guest_bdf), "0000:00:%02x.0",
                   e->slot);
        if (!number(e, &nb, errp)) {
            return NULL;
        }
        /* The next expander starts on a multiple of 8: a bus added here
         * later moves the next one less often. */
        nb.next_bus = ((nb.next_bus + 8) & ~7u) - 1;
    }
    g_ptr_array_set_free_func(m->nodes, NULL);
    g_ptr_array_set_size(m->nodes, 0);
    g_ptr_array_set_free_func(m->nodes, node_free);
    for (i = 0; i < m->expanders->len; i++) {
        order_nodes(m, g_ptr_array_index(m->expanders, i));
    }
    name_nodes(m);
    place_nics(m, topo, devs);
    return g_steal_pointer(&m);
}

const GpMirrorNode *gp_mirror_find(const GpMirror *m, const char *bdf)
{
    char norm[GP_BDF_LEN];
    guint i;

    if (!gp_bdf_normalize(bdf, norm)) {
        return NULL;
    }
    for (i = 0; i < m->nodes->len; i++) {
        const GpMirrorNode *n = g_ptr_array_index(m->nodes, i);

        if (n->host && !strcmp(n->host->bdf, norm)) {
            return n;
        }
    }
    return NULL;
}

const GpMirrorNicPlace *gp_mirror_nic_place(const GpMirror *m,
                                            const char *bdf)
{
    const GpMirrorNode *n = gp_mirror_find(m, bdf);
    guint i;

    for (i = 0; n && i < m->nic_places->len; i++) {
        const GpMirrorNicPlace *np = g_ptr_array_index(m->nic_places, i);

        if (np->nic == n) {
            return np;
        }
    }
    return NULL;
}

unsigned gp_mirror_cells(const GpMirror *m)
{
    return m->cell_host_node->len;
}

bool gp_mirror_split(const GpMirror *m, unsigned cpus, guint64 memory_mib,
                     GpMirrorCell *cells, GError **errp)
{
    unsigned n = gp_mirror_cells(m), i;

    if (!n) {
        return true;
    }
    if (cpus < n || memory_mib < n) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%u vCPUs and %"
                    G_GUINT64_FORMAT " MiB cannot fill %u NUMA cells (one "
                    "per host node of the devices)", cpus, memory_mib, n);
        return false;
    }
    for (i = 0; i < n; i++) {
        cells[i].first_cpu = i * cpus / n;
        cells[i].cpus = (i + 1) * cpus / n - cells[i].first_cpu;
        cells[i].memory_mib = memory_mib / n +
                              (i == n - 1 ? memory_mib % n : 0);
    }
    return true;
}

char *gp_mirror_cpu_range(const GpMirrorCell *cell)
{
    if (cell->cpus == 1) {
        return g_strdup_printf("%u", cell->first_cpu);
    }
    return g_strdup_printf("%u-%u", cell->first_cpu,
                           cell->first_cpu + cell->cpus - 1);
}

static void add(GPtrArray *args, const char *opt, char *value)
{
    g_ptr_array_add(args, g_strdup(opt));
    g_ptr_array_add(args, value);
}

static char *device_arg(const GpMirrorNode *n, const char *vfio_props)
{
    g_autoptr(GString) s = g_string_new(NULL);
    const char *bus = n->parent ? n->parent->id : "pcie.0";

    switch (n->kind) {
    case GP_MIRROR_EXPANDER:
        g_string_append_printf(s, "pxb-pcie,id=%s,bus=pcie.0,addr=0x%x,"
                               "bus_nr=%u", n->id, n->slot, n->bus);
        if (n->guest_node >= 0) {
            g_string_append_printf(s, ",numa_node=%d", n->guest_node);
        }
        return g_string_free(g_steal_pointer(&s), FALSE);
    case GP_MIRROR_ROOT_PORT:
        g_string_append_printf(s, "pcie-root-port,id=%s", n->id);
        break;
    case GP_MIRROR_SWITCH_UP:
        g_string_append_printf(s, "x3130-upstream,id=%s", n->id);
        break;
    case GP_MIRROR_SWITCH_DOWN:
        g_string_append_printf(s, "xio3130-downstream,id=%s", n->id);
        break;
    case GP_MIRROR_ENDPOINT:
        g_string_append_printf(s, "vfio-pci,host=%s,id=%s", n->host->bdf,
                               n->id);
        break;
    }
    g_string_append_printf(s, ",bus=%s,addr=0x%x.%x", bus, n->slot,
                           n->function);
    if (n->multifunction) {
        g_string_append(s, ",multifunction=on");
    }
    if (n->kind == GP_MIRROR_ROOT_PORT || n->kind == GP_MIRROR_SWITCH_DOWN) {
        g_string_append_printf(s, ",chassis=%u,slot=%u", n->chassis,
                               n->port_slot);
    }
    if (n->kind == GP_MIRROR_ROOT_PORT && n->link_speed) {
        g_string_append_printf(s, ",x-speed=%s", n->link_speed);
    }
    if (n->kind == GP_MIRROR_ROOT_PORT && n->link_width) {
        g_string_append_printf(s, ",x-width=%u", n->link_width);
    }
    if (n->kind == GP_MIRROR_ENDPOINT && vfio_props && *vfio_props) {
        g_string_append_printf(s, ",%s", vfio_props);
    }
    return g_string_free(g_steal_pointer(&s), FALSE);
}

char **gp_mirror_qemu_args(const GpMirror *m, unsigned cpus,
                           guint64 memory_mib, const char *vfio_props,
                           GError **errp)
{
    unsigned n = gp_mirror_cells(m), i;
    g_autofree GpMirrorCell *cells = g_new0(GpMirrorCell, MAX(n, 1));
    g_autoptr(GPtrArray) args = g_ptr_array_new_with_free_func(g_free);

    if (!gp_mirror_split(m, cpus, memory_mib, cells, errp)) {
        return NULL;
    }
    add(args, "-m", g_strdup_printf("%" G_GUINT64_FORMAT "M", memory_mib));
    add(args, "-smp", g_strdup_printf("%u", cpus));
    for (i = 0; i < n; i++) {
        add(args, "-object", g_strdup_printf("memory-backend-ram,id="
                                             "gpup2p-mem%u,size=%"
                                             G_GUINT64_FORMAT "M", i,
                                             cells[i].memory_mib));
        g_autofree char *range = gp_mirror_cpu_range(&cells[i]);

        add(args, "-numa", g_strdup_printf("node,nodeid=%u,cpus=%s,"
                                           "memdev=gpup2p-mem%u", i, range,
                                           i));
    }
    for (i = 0; i < m->nodes->len; i++) {
        add(args, "-device", device_arg(g_ptr_array_index(m->nodes, i),
                                        vfio_props));
    }
    g_ptr_array_add(args, NULL);
    return (char **)g_ptr_array_free(g_steal_pointer(&args), FALSE);
}
