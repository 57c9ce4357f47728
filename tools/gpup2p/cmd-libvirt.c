/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `gpup2p libvirt`: add the P2P clique settings for a domain's GPU
 * hostdevs through <qemu:override>, size the 64-bit PCI hole for their
 * BARs, and warn about what breaks P2P in the guest. Reads a file or a
 * domain on a libvirt connection; writes standard output, the file
 * (atomically) or the connection.
 */
#include <errno.h>
#include <fcntl.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xpath.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "libvirt-mirror.h"

#define QEMU_NS "http://libvirt.org/schemas/domain/qemu/1.0"

typedef struct {
    char *root;
    gboolean stock, in_place, define, diff, mirror;
    char *host_plan, *nccl_topo;
    GpPlanPolicy policy;
} LibvirtOpts;

typedef struct {
    xmlNodePtr hostdev;
    GpDevice *dev;
    char alias[64];
} Gpu;

static xmlNodePtr child(xmlNodePtr parent, const char *name, xmlNsPtr ns)
{
    xmlNodePtr c;

    for (c = parent->children; c; c = c->next) {
        if (c->type == XML_ELEMENT_NODE &&
            !xmlStrcmp(c->name, BAD_CAST name) &&
            (ns ? c->ns && !xmlStrcmp(c->ns->href, ns->href) : !c->ns)) {
            return c;
        }
    }
    return NULL;
}

static xmlNodePtr child_or_new(xmlNodePtr parent, const char *name,
                               xmlNsPtr ns)
{
    xmlNodePtr c = child(parent, name, ns);

    return c ? c : xmlNewChild(parent, ns, BAD_CAST name, NULL);
}

static bool prop_equals(xmlNodePtr n, const char *name, const char *value)
{
    g_autofree xmlChar *v = xmlGetProp(n, BAD_CAST name);

    return v && !xmlStrcmp(v, BAD_CAST value);
}

static unsigned prop_hex(xmlNodePtr n, const char *name, bool *ok)
{
    xmlChar *v = xmlGetProp(n, BAD_CAST name);
    char *end;
    unsigned long x;

    if (!v) {
        *ok = false;
        return 0;
    }
    x = strtoul((const char *)v, &end, 0);
    *ok = *ok && end != (char *)v && !*end;
    xmlFree(v);
    return (unsigned)x;
}

/* The host BDF a <hostdev type='pci'> assigns. */
static bool hostdev_bdf(xmlNodePtr hd, char out[GP_BDF_LEN])
{
    xmlNodePtr src = child(hd, "source", NULL);
    xmlNodePtr addr = src ? child(src, "address", NULL) : NULL;
    unsigned d, b, s, f;
    bool ok = true;

    if (!addr) {
        return false;
    }
    d = prop_hex(addr, "domain", &ok);
    if (!ok) {
        d = 0;
        ok = true;
    }
    b = prop_hex(addr, "bus", &ok);
    s = prop_hex(addr, "slot", &ok);
    f = prop_hex(addr, "function", &ok);
    if (!ok) {
        return false;
    }
    g_snprintf(out, GP_BDF_LEN, "%04x:%02x:%02x.%x", d, b, s, f);
    return true;
}

/* Set <qemu:property name=...> under the device's frontend; NULL removes. */
static void set_property(xmlNodePtr frontend, xmlNsPtr ns, const char *name,
                         const char *type, const char *value)
{
    xmlNodePtr p, next;

    for (p = frontend->children; p; p = next) {
        next = p->next;
        if (p->type == XML_ELEMENT_NODE && prop_equals(p, "name", name)) {
            xmlUnlinkNode(p);
            xmlFreeNode(p);
        }
    }
    if (value) {
        p = xmlNewChild(frontend, ns, BAD_CAST "property", NULL);
        xmlNewProp(p, BAD_CAST "name", BAD_CAST name);
        xmlNewProp(p, BAD_CAST "type", BAD_CAST type);
        xmlNewProp(p, BAD_CAST "value", BAD_CAST value);
    }
}

static xmlNodePtr override_device(xmlNodePtr root, xmlNsPtr ns,
                                  const char *alias)
{
    xmlNodePtr ov = child_or_new(root, "override", ns), d;

    for (d = ov->children; d; d = d->next) {
        if (d->type == XML_ELEMENT_NODE && prop_equals(d, "alias", alias)) {
            return child_or_new(d, "frontend", ns);
        }
    }
    d = xmlNewChild(ov, ns, BAD_CAST "device", NULL);
    xmlNewProp(d, BAD_CAST "alias", BAD_CAST alias);
    return xmlNewChild(d, ns, BAD_CAST "frontend", NULL);
}

static void ensure_alias(Gpu *g)
{
    xmlNodePtr a = child(g->hostdev, "alias", NULL);
    g_autofree xmlChar *name = a ? xmlGetProp(a, BAD_CAST "name") : NULL;

    if (name && g_str_has_prefix((const char *)name, "ua-")) {
        g_strlcpy(g->alias, (const char *)name, sizeof(g->alias));
        return;
    }
    /* User aliases must start with "ua-" for libvirt to keep them. */
    g_snprintf(g->alias, sizeof(g->alias), "ua-gpup2p-%s", g->dev->bdf);
    g_strdelimit(g->alias, ":.", '-');
    if (!a) {
        a = xmlNewChild(g->hostdev, NULL, BAD_CAST "alias", NULL);
    }
    xmlSetProp(a, BAD_CAST "name", BAD_CAST g->alias);
}

static guint64 next_pow2(guint64 v)
{
    guint64 p = 1;

    while (p < v) {
        p <<= 1;
    }
    return p;
}

/* The 64-bit hole must hold every 64-bit BAR of the assigned devices. */
static void size_pci_hole(xmlDocPtr doc, const GPtrArray *gpus)
{
    xmlNodePtr devices = child(xmlDocGetRootElement(doc), "devices", NULL);
    xmlNodePtr c, hole;
    guint64 need = 0, have = 0;
    guint i, j;

    for (i = 0; i < gpus->len; i++) {
        const Gpu *g = g_ptr_array_index(gpus, i);

        for (j = 0; j < g->dev->bars->len; j++) {
            const GpBar *b = &g_array_index(g->dev->bars, GpBar, j);

            if (b->is64 && !b->io) {
                need += next_pow2(b->size);
            }
        }
    }
    if (!need || !devices) {
        return;
    }
    need = next_pow2(need) / 1024;     /* KiB */
    for (c = devices->children; c; c = c->next) {
        if (c->type == XML_ELEMENT_NODE &&
            !xmlStrcmp(c->name, BAD_CAST "controller") &&
            prop_equals(c, "type", "pci") &&
            (prop_equals(c, "model", "pcie-root") ||
             prop_equals(c, "model", "pci-root"))) {
            break;
        }
    }
    if (!c) {
        c = xmlNewChild(devices, NULL, BAD_CAST "controller", NULL);
        xmlNewProp(c, BAD_CAST "type", BAD_CAST "pci");
        xmlNewProp(c, BAD_CAST "index", BAD_CAST "0");
        xmlNewProp(c, BAD_CAST "model", BAD_CAST "pcie-root");
    }
    hole = child(c, "pcihole64", NULL);
    if (hole) {
        g_autofree xmlChar *text = xmlNodeGetContent(hole);
        g_autofree xmlChar *unit = xmlGetProp(hole, BAD_CAST "unit");
        guint64 scale = 1;

        if (unit && !xmlStrcmp(unit, BAD_CAST "MiB")) {
            scale = 1024;
        } else if (unit && !xmlStrcmp(unit, BAD_CAST "GiB")) {
            scale = 1024 * 1024;
        }
        have = g_ascii_strtoull((const char *)text, NULL, 10) * scale;
    }
    if (have >= need) {
        return;
    }
    if (!hole) {
        hole = xmlNewChild(c, NULL, BAD_CAST "pcihole64", NULL);
    }
    {
        g_autofree char *v = g_strdup_printf("%" G_GUINT64_FORMAT, need);

        xmlNodeSetContent(hole, BAD_CAST v);
        xmlSetProp(hole, BAD_CAST "unit", BAD_CAST "KiB");
    }
}

static void warn_breakers(xmlDocPtr doc, const GpTopology *topo,
                          const GPtrArray *gpus, const char *all_bdfs)
{
    xmlNodePtr root = xmlDocGetRootElement(doc);
    xmlNodePtr f = child(root, "features", NULL);
    xmlNodePtr kvm = f ? child(f, "kvm", NULL) : NULL;
    xmlNodePtr hidden = kvm ? child(kvm, "hidden", NULL) : NULL;
    guint i, j;

    if (hidden && prop_equals(hidden, "state", "on")) {
        fprintf(stderr, "gpup2p libvirt: warning: <kvm><hidden state='on'/> "
                "hides the hypervisor, so the guest's NVIDIA driver ignores "
                "the P2P capability\n");
    }
    for (i = 0; i < gpus->len; i++) {
        const Gpu *g = g_ptr_array_index(gpus, i);

        for (j = 0; j < topo->devices->len && g->dev->iommu_group >= 0; j++) {
            const GpDevice *o = g_ptr_array_index(topo->devices, j);

            if (o != g->dev && o->iommu_group == g->dev->iommu_group &&
                !o->is_bridge && !strstr(all_bdfs, o->bdf)) {
                fprintf(stderr, "gpup2p libvirt: warning: IOMMU group %d of "
                        "%s also holds %s, which this domain does not "
                        "assign: the group is split across VMs or the host\n",
                        g->dev->iommu_group, g->dev->bdf, o->bdf);
            }
        }
    }
}

static bool write_atomic(const char *path, const char *data, gsize len,
                         GError **errp)
{
    g_autofree char *dir = g_path_get_dirname(path);
    g_autofree char *base = g_path_get_basename(path);
    g_autofree char *tmp = g_strdup_printf("%s/.%s.XXXXXX", dir, base);
    struct stat st;
    int fd;

    if (access(path, W_OK) < 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: cannot write: %s",
                    path, g_strerror(errno));
        return false;
    }
    fd = g_mkstemp_full(tmp, O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: cannot create a file "
                    "beside it: %s", path, g_strerror(errno));
        return false;
    }
    if (stat(path, &st) == 0) {
        fchmod(fd, st.st_mode & 07777);
    }
    if (write(fd, data, len) != (ssize_t)len || fsync(fd) < 0 ||
        close(fd) < 0 || rename(tmp, path) < 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: writing: %s", path,
                    g_strerror(errno));
        unlink(tmp);
        return false;
    }
    return true;
}

static void print_diff(const char *old, const char *new_)
{
    g_autofree char *a = NULL, *b = NULL;
    int fa = g_file_open_tmp("gpup2p-old-XXXXXX.xml", &a, NULL);
    int fb = g_file_open_tmp("gpup2p-new-XXXXXX.xml", &b, NULL);
    const char *argv[] = { "diff", "-u", NULL, NULL, NULL };
    g_autofree char *out = NULL;

    if (fa < 0 || fb < 0) {
        return;
    }
    if (write(fa, old, strlen(old)) < 0 || write(fb, new_, strlen(new_)) < 0) {
        return;
    }
    close(fa);
    close(fb);
    argv[2] = a;
    argv[3] = b;
    g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                 &out, NULL, NULL, NULL);
    fputs(out ? out : "", stdout);
    unlink(a);
    unlink(b);
}

/* Rewrite @xml; returns the new text or NULL with an error. */
static char *transform(const LibvirtOpts *o, const char *xml,
                       const char *name, GError **errp)
{
    g_autoptr(GpTopology) topo = NULL;
    g_autoptr(GPtrArray) gpus = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GString) bdfs = g_string_new(NULL);
    g_autoptr(GpPlan) plan = NULL;
    xmlDocPtr doc;
    xmlNodePtr root, devices, hd;
    xmlNsPtr ns;
    xmlChar *buf = NULL;
    int len;
    char *out;
    guint i;

    doc = xmlReadMemory(xml, strlen(xml), name, NULL,
                        XML_PARSE_NONET | XML_PARSE_NOBLANKS |
                        XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    if (!doc) {
        const xmlError *e = xmlGetLastError();

        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s: not well-formed "
                    "XML: line %d: %s", name, e ? e->line : 0,
                    e && e->message ? g_strchomp(e->message) : "?");
        return NULL;
    }
    root = xmlDocGetRootElement(doc);
    if (!root || xmlStrcmp(root->name, BAD_CAST "domain")) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "%s: the root element is not <domain>", name);
        xmlFreeDoc(doc);
        return NULL;
    }
    topo = gp_topo_read(o->root ? o->root : "/", errp);
    if (!topo) {
        xmlFreeDoc(doc);
        return NULL;
    }
    devices = child(root, "devices", NULL);
    for (hd = devices ? devices->children : NULL; hd; hd = hd->next) {
        char bdf[GP_BDF_LEN];
        Gpu *g;

        if (hd->type != XML_ELEMENT_NODE ||
            xmlStrcmp(hd->name, BAD_CAST "hostdev") ||
            !prop_equals(hd, "type", "pci")) {
            continue;
        }
        if (!hostdev_bdf(hd, bdf)) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s: line %ld: a "
                        "PCI <hostdev> without a source address", name,
                        xmlGetLineNo(hd));
            xmlFreeDoc(doc);
            return NULL;
        }
        g_string_append_printf(bdfs, "%s ", bdf);
        g = g_new0(Gpu, 1);
        g->hostdev = hd;
        g->dev = gp_topo_find(topo, bdf);
        if (!g->dev) {
            g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND, "%s: <hostdev> "
                        "%s is not a PCI device of this host", name, bdf);
            g_free(g);
            xmlFreeDoc(doc);
            return NULL;
        }
        if (!gp_device_is_gpu(g->dev)) {
            g_free(g);
            continue;
        }
        g_ptr_array_add(gpus, g);
    }
    if (!gpus->len) {
        g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND, "%s: the domain "
                    "assigns no GPU (no display-class PCI <hostdev>)", name);
        xmlFreeDoc(doc);
        return NULL;
    }
    if (o->stock || o->host_plan) {
        g_autofree const char **list = g_new0(const char *, gpus->len + 1);

        for (i = 0; i < gpus->len; i++) {
            list[i] = ((Gpu *)g_ptr_array_index(gpus, i))->dev->bdf;
        }
        plan = gp_plan_compute(topo, list, o->policy, errp);
        if (!plan) {
            xmlFreeDoc(doc);
            return NULL;
        }
    }
    if (o->host_plan) {
        g_autoptr(JsonNode) node = gp_json_plan(topo, plan);
        g_autofree char *text = gp_json_to_string(node);

        if (!g_file_set_contents(o->host_plan, text, -1, errp)) {
            xmlFreeDoc(doc);
            return NULL;
        }
    }

    ns = xmlSearchNsByHref(doc, root, BAD_CAST QEMU_NS);
    if (!ns) {
        ns = xmlNewNs(root, BAD_CAST QEMU_NS, BAD_CAST "qemu");
    }
    for (i = 0; i < gpus->len; i++) {
        Gpu *g = g_ptr_array_index(gpus, i);
        xmlNodePtr fe;

        ensure_alias(g);
        fe = override_device(root, ns, g->alias);
        if (o->stock) {
            int id = gp_plan_clique_of(plan, g->dev);
            g_autofree char *v = id >= 0 ? g_strdup_printf("%d", id) : NULL;

            set_property(fe, ns, "x-gpu-p2p-clique", NULL, NULL);
            set_property(fe, ns, "x-gpu-p2p-host-plan", NULL, NULL);
            set_property(fe, ns, "x-nv-gpudirect-clique", "unsigned", v);
        } else {
            set_property(fe, ns, "x-nv-gpudirect-clique", NULL, NULL);
            set_property(fe, ns, "x-gpu-p2p-clique", "string", "auto");
            set_property(fe, ns, "x-gpu-p2p-host-plan", "string",
                         o->host_plan);
        }
    }
    size_pci_hole(doc, gpus);
    warn_breakers(doc, topo, gpus, bdfs->str);
    if (o->mirror &&
        !gp_libvirt_mirror(doc, topo, o->nccl_topo, name, errp)) {
        xmlFreeDoc(doc);
        return NULL;
    }

    xmlDocDumpFormatMemoryEnc(doc, &buf, &len, "UTF-8", 1);
    out = g_strndup((const char *)buf, len);
    xmlFree(buf);
    xmlFreeDoc(doc);
    return out;
}

int gp_cmd_libvirt(int argc, char **argv)
{
    LibvirtOpts o = { .policy = GP_PLAN_POLICY_SYSTEM };
    g_autofree char *uri = NULL, *domain = NULL, *policy = NULL;
    GOptionEntry entries[] = {
        { "sysfs-root", 0, 0, G_OPTION_ARG_FILENAME, &o.root,
          "Read a captured host instead of /sys", "DIR" },
        { "connect", 'c', 0, G_OPTION_ARG_STRING, &uri,
          "libvirt connection URI", "URI" },
        { "domain", 'd', 0, G_OPTION_ARG_STRING, &domain,
          "Domain on the connection (instead of FILE)", "NAME" },
        { "qemu-stock", 0, 0, G_OPTION_ARG_NONE, &o.stock,
          "For a QEMU without the extension: planned ids through "
          "x-nv-gpudirect-clique", NULL },
        { "host-plan", 0, 0, G_OPTION_ARG_FILENAME, &o.host_plan,
          "Write the host plan here and point x-gpu-p2p-host-plan at it "
          "(for an unprivileged QEMU)", "FILE" },
        { "policy", 0, 0, G_OPTION_ARG_STRING, &policy,
          "Clique width for --qemu-stock: system, host-bridge, switch",
          "POLICY" },
        { "in-place", 'i', 0, G_OPTION_ARG_NONE, &o.in_place,
          "Rewrite FILE atomically", NULL },
        { "define", 0, 0, G_OPTION_ARG_NONE, &o.define,
          "Redefine the domain on the connection", NULL },
        { "diff", 0, 0, G_OPTION_ARG_NONE, &o.diff,
          "Show the change as a unified diff", NULL },
        { "mirror", 0, 0, G_OPTION_ARG_NONE, &o.mirror,
          "Mirror the host's PCIe hierarchy and NUMA nodes", NULL },
        { "nccl-topo", 0, 0, G_OPTION_ARG_FILENAME, &o.nccl_topo,
          "With --mirror: write the guest's NCCL topology here, pass it "
          "by fw_cfg", "FILE" },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("[FILE] - P2P settings for a libvirt domain");
    g_autoptr(GError) err = NULL;
    g_autofree char *xml = NULL, *out = NULL;
    const char *name;
    virConnectPtr conn = NULL;
    virDomainPtr dom = NULL;
    int ret = GP_EXIT_OK;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!gp_cli_parse(ctx, &argc, &argv)) {
        return GP_EXIT_USAGE;
    }
    if (policy && !gp_plan_policy_parse(policy, &o.policy, &err)) {
        return gp_cli_fail("libvirt", GP_EXIT_USAGE, "--policy: %s",
                           err->message);
    }
    if ((argc == 2) == !!domain || (o.in_place && domain) ||
        (o.define && !domain) || (o.nccl_topo && !o.mirror)) {
        ret = gp_cli_fail("libvirt", GP_EXIT_USAGE, "give FILE, or "
                          "--connect URI --domain NAME; --in-place goes "
                          "with FILE, --define with --domain, --nccl-topo "
                          "with --mirror");
        goto out;
    }
    if (domain) {
        conn = virConnectOpen(uri);
        if (!conn || !(dom = virDomainLookupByName(conn, domain)) ||
            !(xml = virDomainGetXMLDesc(dom, VIR_DOMAIN_XML_INACTIVE))) {
            const virError *e = virGetLastError();

            ret = gp_cli_fail("libvirt", GP_EXIT_FAILED, "%s: %s",
                              domain, e && e->message ? e->message :
                              "cannot read the domain");
            goto out;
        }
        name = domain;
    } else {
        if (!g_file_get_contents(argv[1], &xml, NULL, &err)) {
            return gp_cli_fail("libvirt", GP_EXIT_FAILED, "%s",
                               err->message);
        }
        name = argv[1];
    }
    out = transform(&o, xml, name, &err);
    if (!out) {
        ret = gp_cli_fail("libvirt", GP_EXIT_FAILED, "%s", err->message);
        goto out;
    }
    if (o.diff) {
        print_diff(xml, out);
    } else if (!o.in_place && !o.define) {
        fputs(out, stdout);
    }
    if (o.in_place && strcmp(xml, out) &&
        !write_atomic(argv[1], out, strlen(out), &err)) {
        ret = gp_cli_fail("libvirt", GP_EXIT_FAILED, "%s", err->message);
    }
    if (o.define) {
        virDomainPtr nd = virDomainDefineXML(conn, out);

        if (!nd) {
            const virError *e = virGetLastError();

            ret = gp_cli_fail("libvirt", GP_EXIT_FAILED, "defining %s: %s",
                              domain, e ? e->message : "failed");
        } else {
            /* What libvirt kept, as it formats it back. */
            g_autofree char *kept = virDomainGetXMLDesc(nd,
                                        VIR_DOMAIN_XML_INACTIVE);

            fputs(kept ? kept : "", stdout);
            virDomainFree(nd);
        }
    }
out:
    if (dom) {
        virDomainFree(dom);
    }
    if (conn) {
        virConnectClose(conn);
    }
    g_free(o.root);
    g_free(o.host_plan);
    g_free(o.nccl_topo);
    return ret;
}
