/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `gpup2p libvirt --mirror`: the mirrored hierarchy (gpup2p/mirror.h) as
 * libvirt controllers, hostdev addresses and NUMA cells. A second run
 * replaces what the first added, so the result does not drift.
 */
#include <stdio.h>
#include <string.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>

#include "gpup2p/output.h"
#include "libvirt-mirror.h"

#define QEMU_NS "http://libvirt.org/schemas/domain/qemu/1.0"

/* Aliases of the controllers a run adds: "ua-" + the mirror node id. */
static bool is_mirror_alias(const xmlChar *alias)
{
    static const char *const prefixes[] = {
        "ua-gpup2p-hb", "ua-gpup2p-rp", "ua-gpup2p-up", "ua-gpup2p-dp",
    };
    size_t i;

    for (i = 0; alias && i < G_N_ELEMENTS(prefixes); i++) {
        if (g_str_has_prefix((const char *)alias, prefixes[i])) {
            return true;
        }
    }
    return false;
}

static xmlXPathObjectPtr xpath(xmlDocPtr doc, const char *expr)
{
    xmlXPathContextPtr ctx = xmlXPathNewContext(doc);
    xmlXPathObjectPtr r;

    xmlXPathRegisterNs(ctx, BAD_CAST "qemu", BAD_CAST QEMU_NS);
    r = xmlXPathEvalExpression(BAD_CAST expr, ctx);
    xmlXPathFreeContext(ctx);
    return r;
}

static guint nodes_len(xmlXPathObjectPtr r)
{
    return r && r->nodesetval ? (guint)r->nodesetval->nodeNr : 0;
}

static void remove_nodes(xmlDocPtr doc, const char *expr)
{
    xmlXPathObjectPtr r = xpath(doc, expr);
    guint i;

    for (i = 0; i < nodes_len(r); i++) {
        xmlNodePtr n = r->nodesetval->nodeTab[i];

        xmlUnlinkNode(n);
        xmlFreeNode(n);
    }
    xmlXPathFreeObject(r);
}

/* Drop the controllers and overrides an earlier run added. */
static void remove_previous(xmlDocPtr doc)
{
    xmlXPathObjectPtr r = xpath(doc, "/domain/devices/controller[alias]");
    guint i;

    for (i = 0; i < nodes_len(r); i++) {
        xmlNodePtr c = r->nodesetval->nodeTab[i], a;

        for (a = c->children; a; a = a->next) {
            g_autofree xmlChar *name = NULL;

            if (a->type != XML_ELEMENT_NODE ||
                xmlStrcmp(a->name, BAD_CAST "alias")) {
                continue;
            }
            name = xmlGetProp(a, BAD_CAST "name");
            if (is_mirror_alias(name)) {
                xmlUnlinkNode(c);
                xmlFreeNode(c);
                break;
            }
        }
    }
    xmlXPathFreeObject(r);
    remove_nodes(doc, "/domain/qemu:override/qemu:device"
                 "[starts-with(@alias, 'ua-gpup2p-rp')]");
    remove_nodes(doc, "/domain/qemu:override[not(*)]");
    remove_nodes(doc, "/domain/sysinfo[@type='fwcfg']/entry"
                 "[@name='" GP_FWCFG_NCCL_TOPO "']");
    remove_nodes(doc, "/domain/sysinfo[@type='fwcfg'][not(*)]");
}

static unsigned prop_uint(xmlNodePtr n, const char *name, unsigned dflt)
{
    g_autofree xmlChar *v = xmlGetProp(n, BAD_CAST name);
    char *end;
    unsigned long x;

    if (!v) {
        return dflt;
    }
    x = strtoul((const char *)v, &end, 0);
    return end != (char *)v && !*end ? (unsigned)x : dflt;
}

typedef struct {
    bool taken[32];
} Bus0Slots;

static bool slot_taken(unsigned slot, void *opaque)
{
    return slot < 32 && ((Bus0Slots *)opaque)->taken[slot];
}

/* Slots of pcie.0 that other devices of the domain hold. */
static void bus0_slots(xmlDocPtr doc, Bus0Slots *s)
{
    xmlXPathObjectPtr r = xpath(doc, "/domain/devices/*/address"
                                "[@type='pci']");
    guint i;

    memset(s, 0, sizeof(*s));
    s->taken[0x1f] = true;          /* q35's ICH9 functions */
    for (i = 0; i < nodes_len(r); i++) {
        xmlNodePtr a = r->nodesetval->nodeTab[i];

        if (prop_uint(a, "bus", 1) == 0 && prop_uint(a, "slot", 32) < 32) {
            s->taken[prop_uint(a, "slot", 0)] = true;
        }
    }
    xmlXPathFreeObject(r);
}

/* The host BDFs of the domain's PCI hostdevs, and those elements. */
static bool hostdevs(xmlDocPtr doc, const char *name, GPtrArray *bdfs,
                     GPtrArray *elems, GError **errp)
{
    xmlXPathObjectPtr r = xpath(doc, "/domain/devices/hostdev"
                                "[@type='pci']");
    guint i;

    for (i = 0; i < nodes_len(r); i++) {
        xmlNodePtr hd = r->nodesetval->nodeTab[i];
        xmlXPathContextPtr ctx = xmlXPathNewContext(doc);
        xmlXPathObjectPtr a;
        xmlNodePtr addr = NULL;

        ctx->node = hd;
        a = xmlXPathEvalExpression(BAD_CAST "source/address", ctx);
        if (nodes_len(a) == 1) {
            addr = a->nodesetval->nodeTab[0];
        }
        xmlXPathFreeObject(a);
        xmlXPathFreeContext(ctx);
        if (!addr || prop_uint(addr, "bus", 256) > 255 ||
            prop_uint(addr, "slot", 32) > 31 ||
            prop_uint(addr, "function", 8) > 7) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s: line %ld: a "
                        "PCI <hostdev> without a valid source address", name,
                        xmlGetLineNo(hd));
            xmlXPathFreeObject(r);
            return false;
        }
        g_ptr_array_add(bdfs, g_strdup_printf(
            "%04x:%02x:%02x.%x", prop_uint(addr, "domain", 0),
            prop_uint(addr, "bus", 0), prop_uint(addr, "slot", 0),
            prop_uint(addr, "function", 0)));
        g_ptr_array_add(elems, hd);
    }
    xmlXPathFreeObject(r);
    if (!bdfs->len) {
        g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND, "%s: --mirror: the "
                    "domain assigns no PCI device", name);
        return false;
    }
    g_ptr_array_add(bdfs, NULL);
    return true;
}

static void set_pci_address(xmlNodePtr parent, unsigned bus, unsigned slot,
                            unsigned function, bool multifunction)
{
    xmlNodePtr a, next;
    char v[16];

    for (a = parent->children; a; a = next) {
        next = a->next;
        if (a->type == XML_ELEMENT_NODE &&
            !xmlStrcmp(a->name, BAD_CAST "address")) {
            xmlUnlinkNode(a);
            xmlFreeNode(a);
        }
    }
    a = xmlNewChild(parent, NULL, BAD_CAST "address", NULL);
    xmlNewProp(a, BAD_CAST "type", BAD_CAST "pci");
    xmlNewProp(a, BAD_CAST "domain", BAD_CAST "0x0000");
    g_snprintf(v, sizeof(v), "0x%02x", bus);
    xmlNewProp(a, BAD_CAST "bus", BAD_CAST v);
    g_snprintf(v, sizeof(v), "0x%02x", slot);
    xmlNewProp(a, BAD_CAST "slot", BAD_CAST v);
    g_snprintf(v, sizeof(v), "0x%x", function);
    xmlNewProp(a, BAD_CAST "function", BAD_CAST v);
    if (multifunction) {
        xmlNewProp(a, BAD_CAST "multifunction", BAD_CAST "on");
    }
}

/* The first index above every PCI controller the domain keeps. */
static unsigned first_free_index(xmlDocPtr doc)
{
    xmlXPathObjectPtr r = xpath(doc, "/domain/devices/controller"
                                "[@type='pci']");
    unsigned next = 1;
    guint i;

    for (i = 0; i < nodes_len(r); i++) {
        next = MAX(next, prop_uint(r->nodesetval->nodeTab[i], "index", 0)
                   + 1);
    }
    xmlXPathFreeObject(r);
    return next;
}

static const struct {
    const char *model, *name;
} controller_models[] = {
    [GP_MIRROR_EXPANDER] = { "pcie-expander-bus", "pxb-pcie" },
    [GP_MIRROR_ROOT_PORT] = { "pcie-root-port", "pcie-root-port" },
    [GP_MIRROR_SWITCH_UP] = { "pcie-switch-upstream-port",
                              "x3130-upstream" },
    [GP_MIRROR_SWITCH_DOWN] = { "pcie-switch-downstream-port",
                                "xio3130-downstream" },
};

static void set_link_override(xmlDocPtr doc, const GpMirrorNode *n,
                              const char *alias)
{
    xmlNodePtr root = xmlDocGetRootElement(doc);
    xmlNsPtr ns = xmlSearchNsByHref(doc, root, BAD_CAST QEMU_NS);
    xmlXPathObjectPtr r;
    xmlNodePtr ov, dev, fe, p;
    char width[8];

    if (!n->link_speed && !n->link_width) {
        return;
    }
    if (!ns) {
        ns = xmlNewNs(root, BAD_CAST QEMU_NS, BAD_CAST "qemu");
    }
    r = xpath(doc, "/domain/qemu:override");
    ov = nodes_len(r) ? r->nodesetval->nodeTab[0] :
         xmlNewChild(root, ns, BAD_CAST "override", NULL);
    xmlXPathFreeObject(r);
    dev = xmlNewChild(ov, ns, BAD_CAST "device", NULL);
    xmlNewProp(dev, BAD_CAST "alias", BAD_CAST alias);
    fe = xmlNewChild(dev, ns, BAD_CAST "frontend", NULL);
    /* libvirt has no words for a port's link; QEMU's x-speed and
     * x-width properties take them. */
    if (n->link_speed) {
        p = xmlNewChild(fe, ns, BAD_CAST "property", NULL);
        xmlNewProp(p, BAD_CAST "name", BAD_CAST "x-speed");
        xmlNewProp(p, BAD_CAST "type", BAD_CAST "string");
        xmlNewProp(p, BAD_CAST "value", BAD_CAST n->link_speed);
    }
    if (n->link_width) {
        g_snprintf(width, sizeof(width), "%u", n->link_width);
        p = xmlNewChild(fe, ns, BAD_CAST "property", NULL);
        xmlNewProp(p, BAD_CAST "name", BAD_CAST "x-width");
        xmlNewProp(p, BAD_CAST "type", BAD_CAST "string");
        xmlNewProp(p, BAD_CAST "value", BAD_CAST width);
    }
}

/*
 * Controllers in the plan's order (parents first), each with an index
 * above the domain's own; @index_of gets the index of each node.
 */
static void add_controllers(xmlDocPtr doc, const GpMirror *m,
                            GHashTable *index_of)
{
    xmlXPathObjectPtr r = xpath(doc, "/domain/devices");
    xmlNodePtr devices = r->nodesetval->nodeTab[0];
    unsigned index = first_free_index(doc);
    guint i;

    xmlXPathFreeObject(r);
    for (i = 0; i < m->nodes->len; i++) {
        const GpMirrorNode *n = g_ptr_array_index(m->nodes, i);
        g_autofree char *alias = g_strdup_printf("ua-%s", n->id);
        g_autofree char *idx = NULL;
        xmlNodePtr c, e;

        if (n->kind == GP_MIRROR_ENDPOINT) {
            continue;
        }
        g_hash_table_insert(index_of, (gpointer)n, GUINT_TO_POINTER(index));
        idx = g_strdup_printf("%u", index++);
        c = xmlNewChild(devices, NULL, BAD_CAST "controller", NULL);
        xmlNewProp(c, BAD_CAST "type", BAD_CAST "pci");
        xmlNewProp(c, BAD_CAST "index", BAD_CAST idx);
        xmlNewProp(c, BAD_CAST "model",
                   BAD_CAST controller_models[n->kind].model);
        e = xmlNewChild(c, NULL, BAD_CAST "model", NULL);
        xmlNewProp(e, BAD_CAST "name",
                   BAD_CAST controller_models[n->kind].name);
        if (n->kind == GP_MIRROR_EXPANDER) {
            g_autofree char *bus = g_strdup_printf("%u", n->bus);

            e = xmlNewChild(c, NULL, BAD_CAST "target", NULL);
            xmlNewProp(e, BAD_CAST "busNr", BAD_CAST bus);
            if (n->guest_node >= 0) {
                g_autofree char *node = g_strdup_printf("%d", n->guest_node);

                xmlNewChild(e, NULL, BAD_CAST "node", BAD_CAST node);
            }
        }
        e = xmlNewChild(c, NULL, BAD_CAST "alias", NULL);
        xmlNewProp(e, BAD_CAST "name", BAD_CAST alias);
        set_pci_address(c, n->parent ? GPOINTER_TO_UINT(g_hash_table_lookup(
                               index_of, n->parent)) : 0,
                        n->slot, n->function, false);
        if (n->kind == GP_MIRROR_ROOT_PORT) {
            set_link_override(doc, n, alias);
        }
    }
}

/* A libvirt memory size (@unit NULL or "": KiB, libvirt's default). */
static bool size_kib(const char *value, const char *unit, guint64 *kib)
{
    static const struct {
        const char *unit;
        guint64 bytes;
    } units[] = {
        { "b", 1 }, { "bytes", 1 }, { "KB", 1000 }, { "k", 1024 },
        { "KiB", 1024 }, { "MB", 1000000 }, { "M", 1 << 20 },
        { "MiB", 1 << 20 }, { "GB", 1000000000 }, { "G", 1 << 30 },
        { "GiB", 1 << 30 }, { "TB", 1000000000000 }, { "T", 1ull << 40 },
        { "TiB", 1ull << 40 },
    };
    guint64 v = g_ascii_strtoull(value, NULL, 10);
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(units); i++) {
        if (!strcmp(unit && *unit ? unit : "KiB", units[i].unit)) {
            *kib = v * units[i].bytes / 1024;
            return true;
        }
    }
    return false;
}

static bool domain_size(xmlDocPtr doc, const char *name, unsigned *vcpus,
                        guint64 *memory_kib, GError **errp)
{
    xmlXPathObjectPtr rv = xpath(doc, "string(/domain/vcpu)");
    xmlXPathObjectPtr rm = xpath(doc, "string(/domain/memory)");
    xmlXPathObjectPtr ru = xpath(doc, "string(/domain/memory/@unit)");
    const char *unit = ru->stringval[0] ? (const char *)ru->stringval : "KiB";
    bool ok;

    *vcpus = (unsigned)g_ascii_strtoull((const char *)rv->stringval, NULL,
                                        10);
    ok = size_kib((const char *)rm->stringval, unit, memory_kib);
    if (!ok || !*memory_kib || !*vcpus) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s: --mirror needs "
                    "<vcpu> and <memory> to spread over NUMA cells (got "
                    "'%s' vCPUs, '%s' %s)", name, rv->stringval,
                    rm->stringval, unit);
        ok = false;
    }
    xmlXPathFreeObject(rv);
    xmlXPathFreeObject(rm);
    xmlXPathFreeObject(ru);
    return ok;
}

/*
 * Whether libvirt's CPU list @text ("0-3,6,^2") holds exactly the CPUs
 * @first to @first + @count - 1.
 */
static bool cpus_are(const char *text, unsigned first, unsigned count)
{
    g_auto(GStrv) parts = g_strsplit(text, ",", -1);
    g_autoptr(GHashTable) set = g_hash_table_new(NULL, NULL);
    unsigned i;

    for (i = 0; parts[i]; i++) {
        const char *p = g_strstrip(parts[i]);
        bool minus = *p == '^';
        guint64 lo, hi;
        char *end;

        p += minus;
        lo = g_ascii_strtoull(p, &end, 10);
        if (end == p || lo > G_MAXUINT16) {
            return false;
        }
        hi = lo;
        if (*end == '-') {
            p = end + 1;
            hi = g_ascii_strtoull(p, &end, 10);
            if (end == p || hi < lo || hi > G_MAXUINT16) {
                return false;
            }
        }
        if (*end) {
            return false;
        }
        for (; lo <= hi; lo++) {
            gpointer key = GUINT_TO_POINTER((guint)lo + 1);

            if (minus) {
                g_hash_table_remove(set, key);
            } else {
                g_hash_table_add(set, key);
            }
        }
    }
    for (i = first; i < first + count; i++) {
        if (!g_hash_table_contains(set, GUINT_TO_POINTER(i + 1))) {
            return false;
        }
    }
    return g_hash_table_size(set) == count;
}

/*
 * Whether the domain's own <numa> @old means the cells --mirror would
 * write: as many cells, each id with the same CPUs and memory, however
 * written (GiB or KiB, "0,1" or "0-1"), and nothing else in them.
 */
static bool cells_match(xmlNodePtr old, const GpMirrorCell *cells,
                        unsigned n, guint64 kib)
{
    static const char *const known[] = { "id", "cpus", "memory", "unit" };
    g_autofree bool *got = g_new0(bool, n);
    unsigned seen = 0;
    xmlNodePtr c;
    xmlAttrPtr a;

    for (c = old->children; c; c = c->next) {
        g_autofree char *id = NULL, *cpus = NULL, *mem = NULL, *unit = NULL;
        guint64 i, have;
        size_t k;

        if (c->type != XML_ELEMENT_NODE) {
            continue;
        }
        if (xmlStrcmp(c->name, BAD_CAST "cell") || c->children) {
            return false;       /* distances, caches: the operator's own */
        }
        for (a = c->properties; a; a = a->next) {
            for (k = 0; k < G_N_ELEMENTS(known) &&
                 xmlStrcmp(a->name, BAD_CAST known[k]); k++) {
            }
            if (k == G_N_ELEMENTS(known)) {
                return false;
            }
        }
        id = (char *)xmlGetProp(c, BAD_CAST "id");
        cpus = (char *)xmlGetProp(c, BAD_CAST "cpus");
        mem = (char *)xmlGetProp(c, BAD_CAST "memory");
        unit = (char *)xmlGetProp(c, BAD_CAST "unit");
        if (!id || !cpus || !mem ||
            !g_ascii_string_to_unsigned(id, 10, 0, n - 1, &i, NULL) ||
            got[i] || !size_kib(mem, unit, &have) ||
            have != kib / n + (i == n - 1 ? kib % n : 0) ||
            !cpus_are(cpus, cells[i].first_cpu, cells[i].cpus)) {
            return false;
        }
        got[i] = true;
        seen++;
    }
    return seen == n;
}

/*
 * <cpu><numa>: one cell per guest node. An operator's own, different cells
 * are refused, never replaced: <numatune> memnodes and pinning refer to
 * them by id, and a silent change would make libvirt refuse the domain or
 * place its memory elsewhere. (Identical cells: a second run.)
 */
static bool set_numa(xmlDocPtr doc, const GpMirror *m, const char *name,
                     GError **errp)
{
    unsigned n = gp_mirror_cells(m), vcpus = 0, i;
    g_autofree GpMirrorCell *cells = g_new0(GpMirrorCell, MAX(n, 1));
    xmlNodePtr root = xmlDocGetRootElement(doc), cpu, numa, old;
    xmlXPathObjectPtr r;
    guint64 kib = 0;

    if (!n) {
        return true;
    }
    if (!domain_size(doc, name, &vcpus, &kib, errp) ||
        !gp_mirror_split(m, vcpus, kib / 1024, cells, errp)) {
        return false;
    }
    r = xpath(doc, "/domain/cpu");
    cpu = nodes_len(r) ? r->nodesetval->nodeTab[0] :
          xmlNewChild(root, NULL, BAD_CAST "cpu", NULL);
    xmlXPathFreeObject(r);
    for (numa = cpu->children; numa; numa = numa->next) {
        if (numa->type == XML_ELEMENT_NODE &&
            !xmlStrcmp(numa->name, BAD_CAST "numa")) {
            break;
        }
    }
    old = numa;
    numa = xmlNewNode(NULL, BAD_CAST "numa");
    for (i = 0; i < n; i++) {
        g_autofree char *id = g_strdup_printf("%u", i);
        g_autofree char *cpus = gp_mirror_cpu_range(&cells[i]);
        /* KiB, so that the cells add up to <memory> exactly. */
        g_autofree char *mem = g_strdup_printf("%" G_GUINT64_FORMAT,
                                               kib / n + (i == n - 1 ?
                                                          kib % n : 0));
        xmlNodePtr c = xmlNewChild(numa, NULL, BAD_CAST "cell", NULL);

        xmlNewProp(c, BAD_CAST "id", BAD_CAST id);
        xmlNewProp(c, BAD_CAST "cpus", BAD_CAST cpus);
        xmlNewProp(c, BAD_CAST "memory", BAD_CAST mem);
        xmlNewProp(c, BAD_CAST "unit", BAD_CAST "KiB");
    }
    if (old) {
        /* The same cells, however written, are kept as written. */
        xmlFreeNode(numa);
        if (!cells_match(old, cells, n, kib)) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s: the domain "
                        "has NUMA cells of its own, and --mirror would need "
                        "%u others (one per host NUMA node of the assigned "
                        "devices): remove <cpu><numa> and any <numatune> "
                        "memnode, or leave out --mirror", name, n);
            return false;
        }
    } else {
        xmlAddChild(cpu, numa);
    }
    return true;
}

static bool pass_nccl_topo(xmlDocPtr doc, const GpMirror *m,
                           const char *path, GError **errp)
{
    g_autofree char *xml = gp_mirror_nccl_topo(m);
    g_autofree char *abs = g_canonicalize_filename(path, NULL);
    xmlNodePtr root = xmlDocGetRootElement(doc), si = NULL, e, before;
    xmlXPathObjectPtr r;

    if (!gp_output_write(path, xml, -1, 0644, errp)) {
        return false;
    }
    r = xpath(doc, "/domain/sysinfo[@type='fwcfg']");
    if (nodes_len(r)) {
        si = r->nodesetval->nodeTab[0];
    }
    xmlXPathFreeObject(r);
    if (!si) {
        /* <sysinfo> goes before <os> in libvirt's element order. */
        r = xpath(doc, "/domain/os");
        before = nodes_len(r) ? r->nodesetval->nodeTab[0] : NULL;
        xmlXPathFreeObject(r);
        si = xmlNewDocNode(doc, NULL, BAD_CAST "sysinfo", NULL);
        if (before) {
            xmlAddPrevSibling(before, si);
        } else {
            xmlAddChild(root, si);
        }
        xmlNewProp(si, BAD_CAST "type", BAD_CAST "fwcfg");
    }
    e = xmlNewChild(si, NULL, BAD_CAST "entry", NULL);
    xmlNewProp(e, BAD_CAST "name", BAD_CAST GP_FWCFG_NCCL_TOPO);
    xmlNewProp(e, BAD_CAST "file", BAD_CAST abs);
    return true;
}

/* A NIC without an assigned GPU partner keeps its host path: say why,
 * as NCCL will not use GPUDirect RDMA where it lands far from the GPUs. */
static void warn_lone_nics(const GpMirror *m)
{
    guint i;

    for (i = 0; i < m->nic_places->len; i++) {
        const GpMirrorNicPlace *np = g_ptr_array_index(m->nic_places, i);

        if (!np->gpu) {
            fprintf(stderr, "gpup2p libvirt: warning: %s\n", np->reason);
        }
    }
}

bool gp_libvirt_mirror(xmlDocPtr doc, const GpTopology *topo,
                       const char *nccl_topo, const char *name,
                       GError **errp)
{
    g_autoptr(GPtrArray) bdfs = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) elems = g_ptr_array_new();
    g_autoptr(GHashTable) index_of = g_hash_table_new(NULL, NULL);
    g_autoptr(GpMirror) m = NULL;
    xmlXPathObjectPtr r;
    Bus0Slots slots;
    guint i;

    r = xpath(doc, "/domain/devices");
    i = nodes_len(r);
    xmlXPathFreeObject(r);
    if (!i) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s: no <devices>",
                    name);
        return false;
    }
    remove_previous(doc);
    if (!hostdevs(doc, name, bdfs, elems, errp)) {
        return false;
    }
    bus0_slots(doc, &slots);
    /* The hostdevs move onto the mirrored ports: their slots free up. */
    for (i = 0; i < elems->len; i++) {
        xmlNodePtr a;

        for (a = ((xmlNodePtr)g_ptr_array_index(elems, i))->children; a;
             a = a->next) {
            if (a->type == XML_ELEMENT_NODE &&
                !xmlStrcmp(a->name, BAD_CAST "address") &&
                prop_uint(a, "bus", 1) == 0) {
                slots.taken[prop_uint(a, "slot", 0) & 31] = false;
            }
        }
    }
    m = gp_mirror_plan(topo, (const char *const *)bdfs->pdata, slot_taken,
                       &slots, errp);
    if (!m) {
        g_prefix_error(errp, "%s: --mirror: ", name);
        return false;
    }
    if (!set_numa(doc, m, name, errp)) {
        return false;
    }
    warn_lone_nics(m);
    add_controllers(doc, m, index_of);
    for (i = 0; i < elems->len; i++) {
        const GpMirrorNode *n = gp_mirror_find(m, g_ptr_array_index(bdfs, i));

        set_pci_address(g_ptr_array_index(elems, i),
                        GPOINTER_TO_UINT(g_hash_table_lookup(index_of,
                                                             n->parent)),
                        n->slot, n->function, n->multifunction);
    }
    if (nccl_topo && !pass_nccl_topo(doc, m, nccl_topo, errp)) {
        return false;
    }
    return true;
}
