/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * An NCCL topology file (NCCL_TOPO_FILE) for this VM, written the way
 * NCCL's own reader (src/graph/xml.cc) takes it: no XML declaration, one
 * element per line, attributes as key="value" separated by one space,
 * values of at most 254 characters and no escapes, only the element names
 * NCCL loads (system, cpu, pci, gpu, nvlink).
 *
 * One CPU per NUMA node, arch and vendor from this machine. GPUs that
 * share a P2P clique sit together behind one virtual switch (as Azure's
 * NDv5 file does) so NCCL sees PIX between them instead of a flat bus.
 * RDMA NICs sit at their real PCI path in this guest, under their real
 * bridges, never under a virtual switch; a GPU that shares a real bridge
 * with a NIC keeps its real path too, so NCCL sees what the PCIe fabric
 * really gives between them. Each GPU carries its NVLinks as NVML reports
 * them, all or none: a GPU with a link whose far end NVML could not name
 * gets no <nvlink> (any <nvlink> turns NCCL's own NVML probe off for that
 * GPU). Link speeds and widths come from sysfs and are left out when
 * unknown; NCCL then reads or defaults them itself.
 */
#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "gpup2p/output.h"
#include "verify.h"

/* The link speeds NCCL's table knows (kvDictPciGen). */
static bool speed_known(const char *s)
{
    static const char *const known[] = {
        "2.5 GT/s", "5 GT/s", "8 GT/s", "16 GT/s", "32 GT/s",
        "2.5 GT/s PCIe", "5.0 GT/s PCIe", "8.0 GT/s PCIe", "16.0 GT/s PCIe",
        "32.0 GT/s PCIe", "64.0 GT/s PCIe",
    };

    for (guint i = 0; s && i < G_N_ELEMENTS(known); i++) {
        if (!strcmp(s, known[i])) {
            return true;
        }
    }
    return false;
}

static double speed_value(const char *s)
{
    return speed_known(s) ? g_ascii_strtod(s, NULL) : 0;
}

static void indent(GString *x, int depth)
{
    g_string_append_printf(x, "%*s", 2 * depth, "");
}

static void pci_open(GString *x, int depth, const char *bdf, unsigned cls,
                     unsigned vendor, unsigned device, unsigned sv,
                     unsigned sd, const char *speed, int width)
{
    indent(x, depth);
    g_string_append_printf(x, "<pci busid=\"%s\" class=\"0x%06x\"", bdf, cls);
    if (vendor) {
        g_string_append_printf(x, " vendor=\"0x%04x\" device=\"0x%04x\"",
                               vendor, device);
    }
    if (sv) {
        g_string_append_printf(x, " subsystem_vendor=\"0x%04x\""
                               " subsystem_device=\"0x%04x\"", sv, sd);
    }
    if (speed_known(speed)) {
        g_string_append_printf(x, " link_speed=\"%s\"", speed);
    }
    if (width > 0) {
        g_string_append_printf(x, " link_width=\"%d\"", width);
    }
}

static const VerifyGpu *gpu_by_bdf(const VerifyReport *r, const char *bdf)
{
    for (guint i = 0; i < r->gpus->len; i++) {
        const VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);

        if (!g_ascii_strcasecmp(g->bdf, bdf)) {
            return g;
        }
    }
    return NULL;
}

static void gpu_node(GString *x, int depth, const VerifyReport *r,
                     const VerifyGpu *g)
{
    bool done[18] = { false };
    bool any = false;
    unsigned l, m;

    pci_open(x, depth, g->bdf, g->class_code, g->vendor, g->device,
             g->subsystem_vendor, g->subsystem_device, g->link_speed,
             g->link_width);
    for (l = 0; l < 18; l++) {
        any |= g->nvlink_peer[l][0] != '\0';
    }
    if (!any || g->nvlinks_unresolved) {
        /* No full per-link view: NCCL asks NVML itself. */
        g_string_append(x, "/>\n");
        return;
    }
    g_string_append(x, ">\n");
    indent(x, depth + 1);
    g_string_append(x, "<gpu>\n");
    for (l = 0; l < 18; l++) {
        const VerifyGpu *peer;
        unsigned count = 0;

        if (!g->nvlink_peer[l][0] || done[l]) {
            continue;
        }
        for (m = l; m < 18; m++) {
            if (!g_ascii_strcasecmp(g->nvlink_peer[m], g->nvlink_peer[l])) {
                done[m] = true;
                count++;
            }
        }
        /* A far end that is no GPU of this VM: NVSwitch (or hidden). */
        peer = gpu_by_bdf(r, g->nvlink_peer[l]);
        indent(x, depth + 2);
        g_string_append_printf(x, "<nvlink target=\"%s\" count=\"%u\" "
                               "tclass=\"0x%06x\"/>\n", g->nvlink_peer[l],
                               count, peer ? peer->class_code : 0x068000);
    }
    indent(x, depth + 1);
    g_string_append(x, "</gpu>\n");
    indent(x, depth);
    g_string_append(x, "</pci>\n");
}

static int node_of(int numa)
{
    return numa < 0 ? 0 : numa;
}

/* arch (and on x86 vendor, family, model) as NCCL names them. */
static void cpu_attrs(GString *x)
{
    struct utsname u;
    g_autofree char *info = NULL;
    const char *arch = NULL;

    if (uname(&u) == 0) {
        arch = !strcmp(u.machine, "x86_64") ? "x86_64" :
               !strcmp(u.machine, "aarch64") ? "arm64" :
               g_str_has_prefix(u.machine, "ppc64") ? "ppc64" : NULL;
    }
    if (!arch) {
        return;         /* NCCL fills it in from its own probe */
    }
    g_string_append_printf(x, " arch=\"%s\"", arch);
    if (strcmp(arch, "x86_64") ||
        !g_file_get_contents("/proc/cpuinfo", &info, NULL, NULL)) {
        return;
    }
    {
        g_auto(GStrv) lines = g_strsplit(info, "\n", -1);
        char vendor[64] = "";
        int family = -1, model = -1;

        for (guint i = 0; lines[i] && lines[i][0]; i++) {
            char *colon = strchr(lines[i], ':');
            g_autofree char *key = NULL;

            if (!colon) {
                continue;
            }
            key = g_strstrip(g_strndup(lines[i], colon - lines[i]));
            if (!strcmp(key, "vendor_id")) {
                g_strlcpy(vendor, g_strstrip(colon + 1), sizeof(vendor));
            } else if (!strcmp(key, "cpu family")) {
                family = atoi(colon + 1);
            } else if (!strcmp(key, "model")) {
                model = atoi(colon + 1);
            }
        }
        if (vendor[0] && family >= 0 && model >= 0) {
            g_string_append_printf(x, " vendor=\"%s\" familyid=\"%d\" "
                                   "modelid=\"%d\"", vendor, family, model);
        }
    }
}

/* A node of the file's PCI tree under one CPU: a bridge (real or the
 * virtual switch of a clique) or a device, in the order first added. */
typedef struct TopoNode {
    char busid[16];
    const VerifyGpu *gpu;
    const VerifyNic *nic;
    bool bridge;
    char speed[32];         /* virtual switch: its fastest GPU's link */
    int width;
    GPtrArray *kids;        /* TopoNode */
} TopoNode;

static void topo_node_free(gpointer p)
{
    TopoNode *n = p;

    g_ptr_array_unref(n->kids);
    g_free(n);
}

static TopoNode *topo_node_new(const char *busid)
{
    TopoNode *n = g_new0(TopoNode, 1);

    g_strlcpy(n->busid, busid, sizeof(n->busid));
    n->kids = g_ptr_array_new_with_free_func(topo_node_free);
    return n;
}

/* The bridge @busid under @parent, added when missing. */
static TopoNode *topo_bridge(TopoNode *parent, const char *busid)
{
    TopoNode *n;

    for (guint i = 0; i < parent->kids->len; i++) {
        n = g_ptr_array_index(parent->kids, i);
        if (n->bridge && !g_ascii_strcasecmp(n->busid, busid)) {
            return n;
        }
    }
    n = topo_node_new(busid);
    n->bridge = true;
    g_ptr_array_add(parent->kids, n);
    return n;
}

/* Under @cpu, the chain of real bridges above a device (uplinks[1..],
 * nearest first), topmost first. */
static TopoNode *topo_real_path(TopoNode *cpu, char (*uplinks)[16],
                                unsigned n)
{
    TopoNode *at = cpu;

    for (unsigned k = n; k > 1; k--) {
        at = topo_bridge(at, uplinks[k - 1]);
    }
    return at;
}

/* Does one of @g's real bridges sit above an RDMA NIC too? */
static bool shares_bridge_with_nic(const VerifyReport *r, const VerifyGpu *g)
{
    for (guint j = 0; j < r->nics->len; j++) {
        const VerifyNic *n = &g_array_index(r->nics, VerifyNic, j);

        for (unsigned a = 1; a < g->n_uplinks; a++) {
            for (unsigned b = 1; b < n->n_uplinks; b++) {
                if (!g_ascii_strcasecmp(g->uplinks[a], n->uplinks[b])) {
                    return true;
                }
            }
        }
    }
    return false;
}

/* @vswitch: this node's clique -> switch number, [16] the last given. */
static void add_gpu(const VerifyReport *r, TopoNode *cpu, const VerifyGpu *g,
                    int *vswitch)
{
    TopoNode *at = cpu, *leaf;

    if (shares_bridge_with_nic(r, g)) {
        at = topo_real_path(cpu, (char (*)[16])g->uplinks, g->n_uplinks);
    } else if (g->clique >= 0) {
        /* The clique's virtual switch: as fast as its fastest GPU link,
         * as sysfs reports it. */
        char busid[16];

        if (vswitch[g->clique] < 0) {
            vswitch[g->clique] = ++vswitch[16];
        }
        g_snprintf(busid, sizeof(busid), "ffff:ff:%02x.0",
                   vswitch[g->clique]);
        at = topo_bridge(cpu, busid);
        if (speed_value(g->link_speed) > speed_value(at->speed)) {
            g_strlcpy(at->speed, g->link_speed, sizeof(at->speed));
        }
        at->width = MAX(at->width, g->link_width);
    }
    leaf = topo_node_new(g->bdf);
    leaf->gpu = g;
    g_ptr_array_add(at->kids, leaf);
}

static void emit(GString *x, int depth, const VerifyReport *r,
                 const TopoNode *n)
{
    if (n->gpu) {
        gpu_node(x, depth, r, n->gpu);
        return;
    }
    if (n->nic) {
        pci_open(x, depth, n->nic->bdf, n->nic->class_code, n->nic->vendor,
                 n->nic->device, 0, 0, n->nic->link_speed,
                 n->nic->link_width);
        g_string_append(x, "/>\n");
        return;
    }
    pci_open(x, depth, n->busid, 0x060400, 0, 0, 0, 0, n->speed, n->width);
    g_string_append(x, ">\n");
    for (guint i = 0; i < n->kids->len; i++) {
        emit(x, depth + 1, r, g_ptr_array_index(n->kids, i));
    }
    indent(x, depth);
    g_string_append(x, "</pci>\n");
}

/* The devices of NUMA node @node: GPUs by clique (no clique first), then
 * NICs at their real path. */
static TopoNode *cpu_tree(const VerifyReport *r, int node, int *vswitch)
{
    TopoNode *cpu = topo_node_new("");
    guint i;

    for (int clique = -1; clique <= 15; clique++) {
        for (i = 0; i < r->gpus->len; i++) {
            const VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);

            if (g->clique == clique && node_of(g->numa_node) == node &&
                !g->hidden) {
                add_gpu(r, cpu, g, vswitch);
            }
        }
    }
    for (i = 0; i < r->nics->len; i++) {
        const VerifyNic *n = &g_array_index(r->nics, VerifyNic, i);
        TopoNode *leaf;

        if (node_of(n->numa_node) != node) {
            continue;
        }
        leaf = topo_node_new(n->bdf);
        leaf->nic = n;
        g_ptr_array_add(topo_real_path(cpu, (char (*)[16])n->uplinks,
                                       n->n_uplinks)->kids, leaf);
    }
    return cpu;
}

char *verify_nccl_topo_xml(const VerifyReport *r)
{
    GString *x = g_string_new("<system version=\"1\">\n");
    int max_node = 0, node;
    /* This node's clique -> virtual switch number; [16]: the last given
     * (numbers run on across nodes, so no busid repeats). */
    int vswitch[17];
    guint i;

    vswitch[16] = -1;
    for (i = 0; i < r->gpus->len; i++) {
        max_node = MAX(max_node,
                       node_of(g_array_index(r->gpus, VerifyGpu, i).numa_node));
    }
    for (i = 0; i < r->nics->len; i++) {
        max_node = MAX(max_node,
                       node_of(g_array_index(r->nics, VerifyNic, i).numa_node));
    }
    for (node = 0; node <= max_node; node++) {
        TopoNode *cpu;

        for (i = 0; i < 16; i++) {
            vswitch[i] = -1;
        }
        cpu = cpu_tree(r, node, vswitch);

        indent(x, 1);
        g_string_append_printf(x, "<cpu numaid=\"%d\"", node);
        cpu_attrs(x);
        g_string_append(x, ">\n");
        for (i = 0; i < cpu->kids->len; i++) {
            emit(x, 2, r, g_ptr_array_index(cpu->kids, i));
        }
        indent(x, 1);
        g_string_append(x, "</cpu>\n");
        topo_node_free(cpu);
    }
    g_string_append(x, "</system>\n");
    return g_string_free(x, FALSE);
}

bool verify_nccl_topo(const VerifyOptions *o, const VerifyReport *r,
                      GError **errp)
{
    g_autofree char *xml = verify_nccl_topo_xml(r);
    g_autoptr(GError) err = NULL;

    /* The core's one atomic writer: written beside the file, renamed in,
     * and never over a device node or FIFO (run as root). */
    if (!gp_output_write(o->nccl_topo, xml, -1, 0644, &err)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "cannot write the NCCL "
                    "topology file %s: %s", o->nccl_topo, err->message);
        return false;
    }
    return true;
}
