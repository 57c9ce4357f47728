/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A libvirt domain's GPU hostdevs and their P2P clique settings. */
#include <libxml/c14n.h>
#include <libxml/parser.h>
#include <stdio.h>
#include <string.h>

#include "bar-plan.h"
#include "cli.h"
#include "libvirt-domain.h"

#define QEMU_NS "http://libvirt.org/schemas/domain/qemu/1.0"

static const char *const clique_properties[] = {
    "x-gpu-p2p-clique",         /* the extension's: auto, off or 0-15 */
    "x-nv-gpudirect-clique",    /* upstream QEMU's: 0-15 */
};

static xmlNodePtr child(xmlNodePtr parent, const char *name, xmlNsPtr ns)
{
    xmlNodePtr c;

    for (c = parent ? parent->children : NULL; c; c = c->next) {
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

static bool is_element(xmlNodePtr n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && !xmlStrcmp(n->name, BAD_CAST name);
}

static bool prop_equals(xmlNodePtr n, const char *name, const char *value)
{
    g_autofree xmlChar *v = xmlGetProp(n, BAD_CAST name);

    return v && !xmlStrcmp(v, BAD_CAST value);
}

static bool prop_hex(xmlNodePtr n, const char *name, unsigned *out)
{
    g_autofree xmlChar *v = xmlGetProp(n, BAD_CAST name);
    char *end;
    guint64 x;

    if (!v) {
        return false;
    }
    x = g_ascii_strtoull((const char *)v, &end, 0);
    *out = (unsigned)x;
    return end != (char *)v && !*end && x <= G_MAXUINT;
}

/* A decimal attribute, as libvirt's unsignedInt. */
static bool prop_uint(xmlNodePtr n, const char *name, unsigned *out)
{
    g_autofree xmlChar *v = xmlGetProp(n, BAD_CAST name);
    guint64 x;

    if (!v || !g_ascii_string_to_unsigned((const char *)v, 10, 0,
                                          G_MAXUINT, &x, NULL)) {
        return false;
    }
    *out = (unsigned)x;
    return true;
}

/* The host BDF a <hostdev type='pci'> assigns. */
static bool hostdev_bdf(xmlNodePtr hd, char out[GP_BDF_LEN])
{
    xmlNodePtr addr = child(child(hd, "source", NULL), "address", NULL);
    unsigned d = 0, b, s, f;

    if (!addr) {
        return false;
    }
    if (xmlHasProp(addr, BAD_CAST "domain") && !prop_hex(addr, "domain", &d)) {
        return false;
    }
    if (!prop_hex(addr, "bus", &b) || !prop_hex(addr, "slot", &s) ||
        !prop_hex(addr, "function", &f) || d > 0xffff || b > 0xff ||
        s > 0x1f || f > 7) {
        return false;
    }
    g_snprintf(out, GP_BDF_LEN, "%04x:%02x:%02x.%x", d, b, s, f);
    return true;
}

static xmlNsPtr qemu_ns(const GpDomain *d)
{
    return xmlSearchNsByHref(d->doc, d->root, BAD_CAST QEMU_NS);
}

/*
 * For reading: matches libvirt's QEMU namespace by its URI, wherever the
 * document declares it (on <domain>, or on the element itself), as libvirt
 * does; child() compares namespaces by href only.
 */
static xmlNsPtr qemu_ns_any(void)
{
    static xmlNs any = { .href = BAD_CAST QEMU_NS };

    return &any;
}

static xmlNodePtr override_frontend(const GpDomain *d, const char *alias)
{
    xmlNsPtr ns = qemu_ns_any();
    xmlNodePtr ov = ns ? child(d->root, "override", ns) : NULL;
    xmlNodePtr dev;

    if (!ov || !alias) {
        return NULL;
    }
    for (dev = ov->children; dev; dev = dev->next) {
        if (is_element(dev, "device") && prop_equals(dev, "alias", alias)) {
            return child(dev, "frontend", ns);
        }
    }
    return NULL;
}

/* Attribute @attr of @property's <qemu:property> in @frontend, or NULL. */
static xmlChar *frontend_attr(xmlNodePtr frontend, const char *property,
                              const char *attr)
{
    xmlNodePtr p;

    for (p = frontend ? frontend->children : NULL; p; p = p->next) {
        if (is_element(p, "property") && prop_equals(p, "name", property)) {
            return xmlGetProp(p, BAD_CAST attr);
        }
    }
    return NULL;
}

static xmlChar *frontend_value(xmlNodePtr frontend, const char *property)
{
    return frontend_attr(frontend, property, "value");
}

/*
 * The value a -global argument gives vfio-pci's @property, in either of
 * QEMU's spellings: "vfio-pci.PROPERTY=VALUE" or
 * "driver=vfio-pci,property=PROPERTY,value=VALUE" (keys in any order).
 */
static char *global_arg_value(const char *arg, const char *property)
{
    g_autofree char *prefix = g_strdup_printf("vfio-pci.%s=", property);
    g_auto(GStrv) keys = NULL;
    const char *driver = NULL, *prop = NULL, *value = NULL;
    size_t i;

    if (g_str_has_prefix(arg, prefix)) {
        return g_strdup(arg + strlen(prefix));
    }
    keys = g_strsplit(arg, ",", -1);
    for (i = 0; keys[i]; i++) {
        if (g_str_has_prefix(keys[i], "driver=")) {
            driver = keys[i] + strlen("driver=");
        } else if (g_str_has_prefix(keys[i], "property=")) {
            prop = keys[i] + strlen("property=");
        } else if (g_str_has_prefix(keys[i], "value=")) {
            value = keys[i] + strlen("value=");
        }
    }
    if (!g_strcmp0(driver, "vfio-pci") && !g_strcmp0(prop, property) &&
        value) {
        return g_strdup(value);
    }
    return NULL;
}

/*
 * The value the last "@option ARG" of <qemu:commandline> gives, as
 * @value_of(ARG, @data) reads it (NULL: this ARG says nothing); the last
 * one wins, as in QEMU.
 */
static char *commandline_value(const GpDomain *d, const char *option,
                               char *(*value_of)(const char *arg,
                                                 const char *data),
                               const char *data)
{
    xmlNodePtr cl = child(d->root, "commandline", qemu_ns_any());
    char *found = NULL;
    bool after_option = false;
    xmlNodePtr a;

    for (a = cl ? cl->children : NULL; a; a = a->next) {
        g_autofree xmlChar *v = NULL;

        if (!is_element(a, "arg")) {
            continue;
        }
        v = xmlGetProp(a, BAD_CAST "value");
        if (v && after_option) {
            char *val = value_of((const char *)v, data);

            if (val) {
                g_free(found);
                found = val;
            }
        }
        after_option = v && !xmlStrcmp(v, BAD_CAST option);
    }
    return found;
}

/* What the <qemu:commandline> -global arguments give @property. */
static char *global_value(const GpDomain *d, const char *property)
{
    return commandline_value(d, "-global", global_arg_value, property);
}

/* The value after @prefix in a -set argument, or NULL. */
static char *set_arg_value(const char *arg, const char *prefix)
{
    return g_str_has_prefix(arg, prefix) ? g_strdup(arg + strlen(prefix))
                                         : NULL;
}

/*
 * What the <qemu:commandline> "-set device.@id.@property=VALUE" arguments
 * give the device whose QEMU id is @id (the last one wins, as in QEMU).
 * libvirt passes -device as JSON since QEMU 6.2, and QEMU then refuses a
 * -set for it; an id set so is judged all the same, as the domain says.
 */
static char *set_value(const GpDomain *d, const char *id,
                       const char *property)
{
    g_autofree char *prefix = g_strdup_printf("device.%s.%s=", id, property);

    return commandline_value(d, "-set", set_arg_value, prefix);
}

/* -1 for auto or off, the id for 0-15, -2 for anything else. */
static int parse_clique(const char *value)
{
    guint64 id;

    if (!strcmp(value, "auto") || !strcmp(value, "off")) {
        return -1;
    }
    if (!g_ascii_string_to_unsigned(value, 10, 0, GP_PLAN_MAX_CLIQUES - 1,
                                    &id, NULL)) {
        return -2;
    }
    return (int)id;
}

/*
 * x-gpu-p2p-clique is a string in QEMU; libvirt passes type='unsigned' as a
 * JSON integer, which QEMU refuses at start.
 */
static bool frontend_says_string(const GpDomain *d, const GpDomainHostdev *h,
                                 xmlNodePtr fe, GError **errp)
{
    g_autofree xmlChar *type = frontend_attr(fe, "x-gpu-p2p-clique",
                                             "type");

    if (type && xmlStrcmp(type, BAD_CAST "string")) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s: %s: "
                    "x-gpu-p2p-clique has type='%s'; QEMU takes it as a "
                    "string (type='string'), and refuses the integer "
                    "libvirt would pass", d->name, h->bdf,
                    (const char *)type);
        return false;
    }
    return true;
}

/*
 * The clique setting in effect for @h: its override, else a -set for its
 * QEMU id (@qemu_id), else a -global.
 */
static bool read_explicit_id(const GpDomain *d, GpDomainHostdev *h,
                             const char *qemu_id, GError **errp)
{
    xmlNodePtr fe = override_frontend(d, h->alias);
    g_autofree xmlChar *verify = frontend_value(fe, "x-gpu-p2p-verify");
    g_autofree char *gverify = global_value(d, "x-gpu-p2p-verify");
    const char *v = verify ? (const char *)verify : gverify;
    size_t i;

    h->explicit_id = -1;
    h->id_property = NULL;
    h->setting_from = NULL;
    h->verify_relaxed = v && (!strcmp(v, "warn") || !strcmp(v, "trust"));
    for (i = 0; i < G_N_ELEMENTS(clique_properties); i++) {
        g_autofree xmlChar *own = frontend_value(fe, clique_properties[i]);
        g_autofree char *set = own ? NULL :
                               set_value(d, qemu_id, clique_properties[i]);
        g_autofree char *global = own || set ? NULL :
                                  global_value(d, clique_properties[i]);
        const char *value = own ? (const char *)own : set ? set : global;
        int id;

        if (!value) {
            continue;
        }
        id = parse_clique(value);
        if (id == -2) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s: %s: %s='%s' "
                        "is not auto, off or a clique id 0-%d", d->name,
                        h->bdf, clique_properties[i], value,
                        GP_PLAN_MAX_CLIQUES - 1);
            return false;
        }
        if (own && i == 0 && !frontend_says_string(d, h, fe, errp)) {
            return false;
        }
        h->explicit_id = id;
        h->id_property = clique_properties[i];
        h->auto_set = !strcmp(value, "auto");
        h->setting_from = own ? "<qemu:override>" : set ? "-set" :
                          "-global";
        return true;            /* the extension's property comes first */
    }
    return true;
}

static void hostdev_free(gpointer p)
{
    GpDomainHostdev *h = p;

    g_free(h->alias);
    g_free(h);
}

static bool collect_hostdevs(GpDomain *d, GError **errp)
{
    xmlNodePtr devices = child(d->root, "devices", NULL);
    xmlNodePtr hd;
    unsigned unnamed = 0;

    for (hd = devices ? devices->children : NULL; hd; hd = hd->next) {
        g_autofree char *qemu_id = NULL;
        GpDomainHostdev *h;
        xmlNodePtr alias;

        if (!is_element(hd, "hostdev")) {
            continue;
        }
        /*
         * QEMU's id for the device: its user alias, else the one libvirt
         * gives at start, hostdevN, counting the hostdevs (of any type)
         * that have no user alias.
         */
        alias = child(hd, "alias", NULL);
        qemu_id = alias ? (char *)xmlGetProp(alias, BAD_CAST "name") : NULL;
        if (!qemu_id || !g_str_has_prefix(qemu_id, "ua-")) {
            g_free(qemu_id);
            qemu_id = g_strdup_printf("hostdev%u", unnamed++);
        }
        if (!prop_equals(hd, "type", "pci")) {
            continue;
        }
        h = g_new0(GpDomainHostdev, 1);
        h->hostdev = hd;
        g_ptr_array_add(d->hostdevs, h);
        if (!hostdev_bdf(hd, h->bdf)) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s: line %ld: a "
                        "PCI <hostdev> without a valid source address",
                        d->name, xmlGetLineNo(hd));
            return false;
        }
        h->alias = alias ? (char *)xmlGetProp(alias, BAD_CAST "name") : NULL;
        if (!read_explicit_id(d, h, qemu_id, errp)) {
            return false;
        }
    }
    return true;
}

xmlDocPtr gp_xml_read(const char *xml, const char *name, GError **errp)
{
    xmlDocPtr doc;
    const xmlError *e;
    g_autofree char *why = NULL;
    const char *p;

    /* libxml2 says "line 0" and nothing else for an empty document. */
    for (p = xml; g_ascii_isspace(*p); p++) {
    }
    if (!*p) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s: the file is "
                    "empty%s: no XML, so no <domain>", name,
                    *xml ? " (blanks only)" : "");
        return NULL;
    }
    doc = xmlReadMemory(xml, (int)strlen(xml), name, NULL,
                        XML_PARSE_NONET | XML_PARSE_NOBLANKS |
                        XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    if (doc) {
        return doc;
    }
    e = xmlGetLastError();
    why = g_strchomp(g_strdup(e && e->message ? e->message :
                              "libxml2 gives no reason"));
    if (e && e->line > 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s: not well-formed "
                    "XML: line %d: %s", name, e->line, why);
    } else {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s: not well-formed "
                    "XML: %s", name, why);
    }
    return NULL;
}

GpDomain *gp_domain_parse(const char *xml, const char *name, GError **errp)
{
    g_autoptr(GpDomain) d = g_new0(GpDomain, 1);

    d->name = name;
    d->hostdevs = g_ptr_array_new_with_free_func(hostdev_free);
    d->gpus = g_ptr_array_new();
    d->doc = gp_xml_read(xml, name, errp);
    if (!d->doc) {
        return NULL;
    }
    d->root = xmlDocGetRootElement(d->doc);
    if (!d->root || xmlStrcmp(d->root->name, BAD_CAST "domain")) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "%s: the root element is not <domain>", name);
        return NULL;
    }
    d->domain_name = (char *)xmlNodeGetContent(child(d->root, "name", NULL));
    if (!d->domain_name) {
        d->domain_name = g_strdup("?");
    }
    if (!collect_hostdevs(d, errp)) {
        return NULL;
    }
    return g_steal_pointer(&d);
}

void gp_domain_free(GpDomain *d)
{
    if (!d) {
        return;
    }
    if (d->doc) {
        xmlFreeDoc(d->doc);
    }
    g_ptr_array_unref(d->gpus);
    g_ptr_array_unref(d->hostdevs);
    g_free(d->domain_name);
    g_free(d);
}

bool gp_domain_has_explicit_ids(const GpDomain *d)
{
    guint i;

    for (i = 0; i < d->hostdevs->len; i++) {
        const GpDomainHostdev *h = g_ptr_array_index(d->hostdevs, i);

        if (h->explicit_id >= 0) {
            return true;
        }
    }
    return false;
}

bool gp_domain_find_gpus(GpDomain *d, const GpTopology *topo,
                         GError **errp)
{
    guint i;

    g_ptr_array_set_size(d->gpus, 0);
    for (i = 0; i < d->hostdevs->len; i++) {
        GpDomainHostdev *h = g_ptr_array_index(d->hostdevs, i);
        guint j;

        /* libvirt would refuse the domain later, with less to go on. */
        for (j = 0; j < i; j++) {
            if (!strcmp(h->bdf, ((GpDomainHostdev *)g_ptr_array_index(
                    d->hostdevs, j))->bdf)) {
                g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s: <hostdev> "
                            "%s is assigned twice", d->name, h->bdf);
                return false;
            }
        }
        h->dev = gp_topo_find(topo, h->bdf);
        if (!h->dev) {
            g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND, "%s: <hostdev> "
                        "%s is not a PCI device of this host", d->name,
                        h->bdf);
            return false;
        }
        if (gp_device_is_gpu(h->dev)) {
            g_ptr_array_add(d->gpus, h);
        }
    }
    return true;
}

/*
 * Why @a and @b may not share a clique on @topo; NULL when they may.
 * @proven: the host proves it wrong (a guest's request would bypass the
 * IOMMU, or the IOMMU cannot tell the two apart); otherwise it only
 * lacks proof that it works (a root complex not known to forward P2P, a
 * verdict it cannot reach).
 */
static char *pair_objection(const GpTopology *topo, const GpDomainHostdev *a,
                            const GpDomainHostdev *b, bool *proven)
{
    GpP2pVerdict v;
    char *why;

    *proven = true;
    if (a->dev->iommu_group >= 0 &&
        a->dev->iommu_group == b->dev->iommu_group) {
        return g_strdup_printf("both are in IOMMU group %d, so the IOMMU "
                               "cannot keep a guest's P2P request between "
                               "them apart", a->dev->iommu_group);
    }
    gp_p2p_verdict(topo, a->dev, b->dev, &v);
    if (gp_vm_p2p_ok(v.vm_kind)) {
        gp_p2p_verdict_clear(&v);
        return NULL;
    }
    *proven = v.vm_kind == GP_VM_P2P_BYPASS;
    why = g_strdup_printf("%s (guest P2P %s)", v.vm_reason,
                          gp_vm_p2p_kind_name(v.vm_kind));
    gp_p2p_verdict_clear(&v);
    return why;
}

/* A GPU given an id that is not on the host: libvirt could not start it. */
static bool ids_on_host(const GpDomain *d, GError **errp)
{
    guint i;

    for (i = 0; i < d->hostdevs->len; i++) {
        const GpDomainHostdev *h = g_ptr_array_index(d->hostdevs, i);

        if (h->explicit_id >= 0 && !h->dev) {
            g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND, "%s is given "
                        "clique %d (%s), but it is not a PCI device of this "
                        "host", h->bdf, h->explicit_id, h->id_property);
            return false;
        }
    }
    return true;
}

bool gp_domain_check_ids(const GpDomain *d, const GpTopology *topo,
                         GPtrArray *warnings, GError **errp)
{
    guint i, j;

    for (i = 0; i < d->hostdevs->len; i++) {
        GpDomainHostdev *h = g_ptr_array_index(d->hostdevs, i);

        h->dev = gp_topo_find(topo, h->bdf);
    }
    if (!ids_on_host(d, errp)) {
        return false;
    }
    for (i = 0; i < d->hostdevs->len; i++) {
        const GpDomainHostdev *a = g_ptr_array_index(d->hostdevs, i);

        for (j = i + 1; a->explicit_id >= 0 && j < d->hostdevs->len; j++) {
            const GpDomainHostdev *b = g_ptr_array_index(d->hostdevs, j);
            g_autofree char *why = NULL;
            bool proven;

            if (b->explicit_id != a->explicit_id ||
                !gp_device_is_gpu(a->dev) || !gp_device_is_gpu(b->dev)) {
                continue;
            }
            why = pair_objection(topo, a, b, &proven);
            if (!why) {
                continue;
            }
            /*
             * Only proof refuses: what the host cannot confirm keeps its
             * id with a warning, and x-gpu-p2p-verify=warn|trust on both
             * turns a proven no into one too, as in QEMU.
             */
            if (!proven || (a->verify_relaxed && b->verify_relaxed)) {
                g_ptr_array_add(warnings, g_strdup_printf(
                    "domain '%s': %s and %s share clique %d, which the host "
                    "%s: %s", d->domain_name, a->bdf, b->bdf,
                    a->explicit_id, proven ? "contradicts" :
                    "cannot confirm", why));
                continue;
            }
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s and %s "
                        "share clique %d (%s), but the host proves they "
                        "cannot do P2P in a guest: %s", a->bdf, b->bdf,
                        a->explicit_id, a->id_property, why);
            return false;
        }
    }
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

/* The device's <qemu:frontend>, created with its override where missing. */
static xmlNodePtr frontend_for(GpDomain *d, xmlNsPtr ns, const char *alias)
{
    xmlNodePtr ov = child_or_new(d->root, "override", ns);
    xmlNodePtr dev = override_frontend(d, alias);

    if (dev) {
        return dev;
    }
    for (dev = ov->children; dev; dev = dev->next) {
        if (is_element(dev, "device") && prop_equals(dev, "alias", alias)) {
            return child_or_new(dev, "frontend", ns);
        }
    }
    dev = xmlNewChild(ov, ns, BAD_CAST "device", NULL);
    xmlNewProp(dev, BAD_CAST "alias", BAD_CAST alias);
    return xmlNewChild(dev, ns, BAD_CAST "frontend", NULL);
}

static bool has_elements(xmlNodePtr n)
{
    xmlNodePtr c;

    for (c = n->children; c; c = c->next) {
        if (c->type == XML_ELEMENT_NODE) {
            return true;
        }
    }
    return false;
}

/*
 * Drop @frontend when it sets nothing, then its <qemu:device> and the
 * <qemu:override> when they are left empty: no empty elements for GPUs
 * without a clique.
 */
static void prune_empty_frontend(xmlNodePtr frontend)
{
    xmlNodePtr n = frontend, parent;
    int levels;

    for (levels = 0; levels < 3 && n && !has_elements(n); levels++) {
        parent = n->parent;
        xmlUnlinkNode(n);
        xmlFreeNode(n);
        n = parent && parent->type == XML_ELEMENT_NODE ? parent : NULL;
    }
}

/* libvirt keeps only user aliases that start with "ua-". */
static void ensure_alias(GpDomainHostdev *h)
{
    xmlNodePtr a = child(h->hostdev, "alias", NULL);

    if (h->alias && g_str_has_prefix(h->alias, "ua-")) {
        return;
    }
    g_free(h->alias);
    h->alias = g_strdup_printf("ua-gpup2p-%s", h->bdf);
    g_strdelimit(h->alias, ":.", '-');
    if (!a) {
        a = xmlNewChild(h->hostdev, NULL, BAD_CAST "alias", NULL);
    }
    xmlSetProp(a, BAD_CAST "name", BAD_CAST h->alias);
}

static xmlNsPtr ensure_qemu_ns(GpDomain *d)
{
    xmlNsPtr ns = qemu_ns(d);

    return ns ? ns : xmlNewNs(d->root, BAD_CAST QEMU_NS, BAD_CAST "qemu");
}

void gp_domain_set_auto(GpDomain *d, const char *snapshot)
{
    xmlNsPtr ns = ensure_qemu_ns(d);
    guint i;

    for (i = 0; i < d->gpus->len; i++) {
        GpDomainHostdev *h = g_ptr_array_index(d->gpus, i);
        xmlNodePtr fe;

        if (h->explicit_id >= 0) {
            continue;           /* the operator's id is kept as written */
        }
        ensure_alias(h);
        fe = frontend_for(d, ns, h->alias);
        set_property(fe, ns, "x-nv-gpudirect-clique", NULL, NULL);
        set_property(fe, ns, "x-gpu-p2p-clique", "string", "auto");
        /* QEMU no longer reads plans; earlier runs may have set one. */
        set_property(fe, ns, "x-gpu-p2p-host-plan", NULL, NULL);
        set_property(fe, ns, "x-gpu-p2p-host-snapshot", "string", snapshot);
    }
}

/*
 * The id stock QEMU gets for the planner's clique @k: the k-th id that no
 * explicit setting of the domain uses, so planned cliques never merge with
 * an operator's.
 */
static int stock_id(const GpDomain *d, int k)
{
    bool used[GP_PLAN_MAX_CLIQUES] = { false };
    guint i;
    int id;

    for (i = 0; i < d->gpus->len; i++) {
        const GpDomainHostdev *h = g_ptr_array_index(d->gpus, i);

        if (h->explicit_id >= 0) {
            used[h->explicit_id] = true;
        }
    }
    for (id = 0; id < GP_PLAN_MAX_CLIQUES; id++) {
        if (!used[id] && k-- == 0) {
            return id;
        }
    }
    return -1;
}

unsigned gp_domain_guest_vendor(const GpDomain *d, const GpDomainHostdev *h)
{
    g_autofree xmlChar *own = frontend_value(override_frontend(d, h->alias),
                                             "x-pci-vendor-id");
    g_autofree char *global = own ? NULL :
                              global_value(d, "x-pci-vendor-id");
    const char *v = own ? (const char *)own : global;
    char *end;
    guint64 id;

    if (v) {
        /* QEMU reads integers in decimal or 0x hex. */
        id = g_ascii_strtoull(v, &end, 0);
        if (end != v && !*end && id <= 0xffff) {
            return (unsigned)id;
        }
    }
    return h->dev ? h->dev->vendor : 0xffff;
}

bool gp_domain_guest_nvidia(const GpDomain *d, const GpDomainHostdev *h)
{
    return gp_domain_guest_vendor(d, h) == GP_PCI_VENDOR_NVIDIA;
}

void gp_domain_set_stock(GpDomain *d, const GpPlan *plan)
{
    xmlNsPtr ns = ensure_qemu_ns(d);
    guint i;

    for (i = 0; i < d->gpus->len; i++) {
        GpDomainHostdev *h = g_ptr_array_index(d->gpus, i);
        int k = gp_plan_clique_of(plan, h->dev);
        int id = h->explicit_id >= 0 ? h->explicit_id :
                 k >= 0 ? stock_id(d, k) : -1;
        g_autofree char *v = id >= 0 ? g_strdup_printf("%d", id) : NULL;
        xmlNodePtr fe;

        /*
         * Stock QEMU knows none of the extension's properties, and refuses
         * x-nv-gpudirect-clique on another vendor's device ("invalid
         * device vendor"): such a device keeps no clique setting at all.
         */
        if (!gp_domain_guest_nvidia(d, h)) {
            fe = override_frontend(d, h->alias);
            g_clear_pointer(&v, g_free);
        } else {
            ensure_alias(h);
            fe = frontend_for(d, ns, h->alias);
        }
        if (!fe) {
            continue;
        }
        set_property(fe, ns, "x-gpu-p2p-clique", NULL, NULL);
        set_property(fe, ns, "x-gpu-p2p-host-plan", NULL, NULL);
        set_property(fe, ns, "x-gpu-p2p-host-snapshot", NULL, NULL);
        set_property(fe, ns, "x-nv-gpudirect-clique", "unsigned", v);
        prune_empty_frontend(fe);
    }
}

static guint64 next_pow2(guint64 v)
{
    guint64 p = 1;

    while (p < v) {
        p <<= 1;
    }
    return p;
}

/* The domain's PCI root controller, NULL when it has none. */
static xmlNodePtr root_controller_find(const GpDomain *d)
{
    xmlNodePtr devices = child(d->root, "devices", NULL);
    xmlNodePtr c;

    for (c = devices ? devices->children : NULL; c; c = c->next) {
        if (is_element(c, "controller") && prop_equals(c, "type", "pci") &&
            (prop_equals(c, "model", "pcie-root") ||
             prop_equals(c, "model", "pci-root"))) {
            return c;
        }
    }
    return NULL;
}

static xmlNodePtr root_controller(xmlNodePtr devices)
{
    xmlNodePtr c;

    for (c = devices->children; c; c = c->next) {
        if (is_element(c, "controller") && prop_equals(c, "type", "pci") &&
            (prop_equals(c, "model", "pcie-root") ||
             prop_equals(c, "model", "pci-root"))) {
            return c;
        }
    }
    c = xmlNewChild(devices, NULL, BAD_CAST "controller", NULL);
    xmlNewProp(c, BAD_CAST "type", BAD_CAST "pci");
    xmlNewProp(c, BAD_CAST "index", BAD_CAST "0");
    xmlNewProp(c, BAD_CAST "model", BAD_CAST "pcie-root");
    return c;
}

/* A libvirt size element (@unit, KiB by default) in bytes; 0 unreadable. */
static guint64 size_bytes(xmlNodePtr n)
{
    g_autofree xmlChar *text = n ? xmlNodeGetContent(n) : NULL;
    g_autofree xmlChar *unit = n ? xmlGetProp(n, BAD_CAST "unit") : NULL;
    guint64 scale, v;

    if (!text || !gp_libvirt_unit_scale((const char *)unit, 1024, &scale) ||
        !g_ascii_string_to_unsigned(g_strstrip((char *)text), 10, 0,
                                    G_MAXUINT64 / scale, &v, NULL)) {
        return 0;
    }
    return v * scale;
}

static guint64 hole_kib(xmlNodePtr hole)
{
    return size_bytes(hole) / 1024;
}

void gp_domain_size_pci_hole(GpDomain *d, GPtrArray *notes)
{
    xmlNodePtr devices = child(d->root, "devices", NULL);
    xmlNodePtr hole;
    g_autofree char *text = NULL;
    guint64 need = 0;
    guint i, j;

    for (i = 0; i < d->gpus->len; i++) {
        const GpDomainHostdev *h = g_ptr_array_index(d->gpus, i);

        for (j = 0; j < h->dev->bars->len; j++) {
            const GpBar *b = &g_array_index(h->dev->bars, GpBar, j);

            if (b->is64 && !b->io) {
                need += next_pow2(b->size);
            }
        }
    }
    if (!need || !devices) {
        return;
    }
    need = next_pow2(need) / 1024;
    hole = child(root_controller(devices), "pcihole64", NULL);
    if (hole && hole_kib(hole) >= need) {
        return;
    }
    if (!hole) {
        hole = xmlNewChild(root_controller(devices), NULL,
                           BAD_CAST "pcihole64", NULL);
    } else {
        g_ptr_array_add(notes, g_strdup_printf("<pcihole64> of %"
                        G_GUINT64_FORMAT " KiB is too small for the GPUs' "
                        "64-bit BARs: raised to %" G_GUINT64_FORMAT " KiB",
                        hole_kib(hole), need));
    }
    text = g_strdup_printf("%" G_GUINT64_FORMAT, need);
    xmlNodeSetContent(hole, BAD_CAST text);
    xmlSetProp(hole, BAD_CAST "unit", BAD_CAST "KiB");
}

bool gp_domain_boots_ovmf(const GpDomain *d)
{
    xmlNodePtr os = child(d->root, "os", NULL);
    g_autofree xmlChar *loader = os ? xmlNodeGetContent(child(os, "loader",
                                                              NULL)) : NULL;

    return (os && prop_equals(os, "firmware", "efi")) ||
           (loader && (strstr((const char *)loader, "OVMF") ||
                       strstr((const char *)loader, "edk2")));
}

#define OVMF_MMIO64_PREFIX "name=opt/ovmf/X-PciMmio64Mb,string="

/* The <qemu:arg> that follows a "-fw_cfg" and sets X-PciMmio64Mb. */
static xmlNodePtr ovmf_mmio64_arg(const GpDomain *d)
{
    xmlNodePtr cl = child(d->root, "commandline", qemu_ns_any());
    xmlNodePtr a, found = NULL;
    bool after_fw_cfg = false;

    for (a = cl ? cl->children : NULL; a; a = a->next) {
        g_autofree xmlChar *v = NULL;

        if (!is_element(a, "arg")) {
            continue;
        }
        v = xmlGetProp(a, BAD_CAST "value");
        if (v && after_fw_cfg &&
            g_str_has_prefix((const char *)v, OVMF_MMIO64_PREFIX)) {
            found = a;          /* the last one wins, as in QEMU */
        }
        after_fw_cfg = v && !xmlStrcmp(v, BAD_CAST "-fw_cfg");
    }
    return found;
}

static void add_qemu_arg(xmlNodePtr commandline, xmlNsPtr ns,
                         const char *value)
{
    xmlNodePtr a = xmlNewChild(commandline, ns, BAD_CAST "arg", NULL);

    xmlNewProp(a, BAD_CAST "value", BAD_CAST value);
}

/*
 * OVMF's 64-bit aperture: its fixed 32 GiB (or an eighth of the address
 * space, in builds that size it) would leave large BARs unplaced, and
 * opt/ovmf/X-PciMmio64Mb is the only way libvirt lets us set it. An
 * operator's value that holds the window is kept; a smaller one is raised
 * (it only sizes the aperture, the guest's ABI does not change).
 */
static bool size_ovmf_aperture(GpDomain *d, guint64 window, guint64 hole,
                               GPtrArray *notes, GError **errp)
{
    xmlNodePtr arg = ovmf_mmio64_arg(d);
    g_autofree char *value = g_strdup_printf(OVMF_MMIO64_PREFIX
                                             "%" G_GUINT64_FORMAT,
                                             MAX(window, hole) >> 20);
    g_autofree xmlChar *have = arg ? xmlGetProp(arg, BAD_CAST "value") :
                               NULL;
    xmlNsPtr ns;
    guint64 mb;

    if (have) {
        if (!g_ascii_string_to_unsigned((const char *)have +
                                        strlen(OVMF_MMIO64_PREFIX), 10, 1,
                                        G_MAXUINT64 >> 20, &mb, NULL)) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s: <qemu:arg "
                        "value='%s'>: X-PciMmio64Mb is not a number of MiB",
                        d->name, (const char *)have);
            return false;
        }
        if (mb << 20 >= window) {
            return true;
        }
        g_ptr_array_add(notes, g_strdup_printf("<qemu:arg value='%s'> gives "
                        "OVMF a %" G_GUINT64_FORMAT " MiB 64-bit aperture, "
                        "too small for the GPUs' %" G_GUINT64_FORMAT " MiB "
                        "of BARs: raised to '%s'", (const char *)have, mb,
                        window >> 20, value));
        xmlSetProp(arg, BAD_CAST "value", BAD_CAST value);
        return true;
    }
    if (window <= GP_OVMF_FIXED_MMIO64) {
        return true;            /* OVMF's own aperture holds them */
    }
    ns = ensure_qemu_ns(d);
    arg = child_or_new(d->root, "commandline", ns);
    add_qemu_arg(arg, ns, "-fw_cfg");
    add_qemu_arg(arg, ns, value);
    return true;
}

/*
 * The guest's physical address width (<cpu><maxphysaddr>), wide enough
 * for RAM and the 64-bit hole. passthrough (the host's width) where the
 * CPU is the host's, which libvirt requires for it; else emulate with the
 * bits needed, which libvirt checks against the host's at start. An
 * operator's <maxphysaddr> too narrow is refused, not changed: the width
 * is part of the guest's ABI (and of where it may migrate).
 */
static bool size_guest_address(GpDomain *d, unsigned host_bits,
                               unsigned want, GPtrArray *notes,
                               GError **errp)
{
    xmlNodePtr cpu = child(d->root, "cpu", NULL);
    xmlNodePtr mp = child(cpu, "maxphysaddr", NULL);
    bool host_cpu = cpu && (prop_equals(cpu, "mode", "host-passthrough") ||
                            prop_equals(cpu, "mode", "maximum"));
    unsigned have, limit;

    if (mp && prop_equals(mp, "mode", "emulate")) {
        if (!prop_uint(mp, "bits", &have) || have < want) {
            g_autofree xmlChar *bits = xmlGetProp(mp, BAD_CAST "bits");

            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s: <cpu>"
                        "<maxphysaddr mode='emulate' bits='%s'/>: the GPUs' "
                        "64-bit BARs need %u guest physical address bits; "
                        "gpup2p does not change a width the domain sets (it "
                        "is part of the guest's ABI): set bits='%u' or more",
                        d->name, bits ? (const char *)bits : "", want, want);
            return false;
        }
        return true;
    }
    if (mp && prop_uint(mp, "limit", &limit) && limit < want) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s: <cpu><maxphysaddr "
                    "limit='%u'/>: the GPUs' 64-bit BARs need %u guest "
                    "physical address bits; gpup2p does not change a limit "
                    "the domain sets: raise or remove it", d->name, limit,
                    want);
        return false;
    }
    if (host_bits && host_bits < want) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s: the GPUs' 64-bit "
                    "BARs need %u guest physical address bits, and this "
                    "host's CPUs have %u: give these GPUs to more than one "
                    "VM", d->name, want, host_bits);
        return false;
    }
    if (mp || (host_cpu ? host_bits >= want && host_bits :
               want <= GP_QEMU_DEFAULT_PHYS_BITS)) {
        return true;            /* the width QEMU gives already holds them */
    }
    cpu = cpu ? cpu : xmlNewChild(d->root, NULL, BAD_CAST "cpu", NULL);
    mp = xmlNewChild(cpu, NULL, BAD_CAST "maxphysaddr", NULL);
    if (host_cpu) {
        xmlNewProp(mp, BAD_CAST "mode", BAD_CAST "passthrough");
        return true;
    }
    {
        g_autofree char *bits = g_strdup_printf("%u", want);

        xmlNewProp(mp, BAD_CAST "mode", BAD_CAST "emulate");
        xmlNewProp(mp, BAD_CAST "bits", BAD_CAST bits);
    }
    if (!host_bits) {
        g_ptr_array_add(notes, g_strdup_printf("<maxphysaddr mode='emulate' "
                        "bits='%u'/> written, but this host's address width "
                        "is unknown (no 'address sizes' in proc/cpuinfo): "
                        "libvirt refuses the VM where its CPUs have fewer",
                        want));
    }
    return true;
}

bool gp_domain_plan_large_bars(GpDomain *d, unsigned host_bits,
                               GpCpuVendor host_vendor, const char *qemu,
                               GPtrArray *notes, GError **errp)
{
    g_autoptr(GPtrArray) devs = g_ptr_array_new();
    g_auto(GpDomainMachine) machine = { 0 };
    g_auto(GpPcWindow) placed = { 0 };
    xmlNodePtr hole = child(root_controller_find(d), "pcihole64", NULL);
    guint64 window, hole_bytes = hole ? hole_kib(hole) * 1024 : 0;
    unsigned want;
    guint i;

    for (i = 0; i < d->gpus->len; i++) {
        g_ptr_array_add(devs, (gpointer)((const GpDomainHostdev *)
                        g_ptr_array_index(d->gpus, i))->dev);
    }
    window = gp_devices_mmio64_size(devs);
    if (!window) {
        return true;
    }
    if (gp_domain_boots_ovmf(d) &&
        !size_ovmf_aperture(d, window, hole_bytes, notes, errp)) {
        return false;
    }
    gp_domain_pc_machine(d, host_vendor, &machine);
    gp_domain_machine_resolve(&machine, qemu);
    if (machine.m.no_long_mode) {
        /* QEMU refuses phys-bits for a 32-bit vCPU: nothing to write. */
        g_ptr_array_add(notes, g_strdup("the vCPU's CPU model lacks long "
                        "mode (a 32-bit vCPU): its address bits are 32, or "
                        "36, not settable, and <maxphysaddr> is not written; "
                        "give the VM a 64-bit CPU model for the GPUs' "
                        "64-bit BARs"));
        return true;
    }
    want = gp_guest_bits_for_bars(&machine.m, window, hole_bytes, &placed);
    if (!placed.exact) {
        g_ptr_array_add(notes, g_strdup_printf("the guest address bits are "
                        "planned from %s of where QEMU places the 64-bit "
                        "window (its highest end), as %s%s", placed.bounds ?
                        "bounds" : "an estimate", placed.why,
                        placed.layout_assumed ? "; a distribution may lay "
                        "out its types otherwise, which nothing here reads, "
                        "and may give the vCPU the host's width whatever "
                        "the bits written (host-phys-bits)" : ""));
    }
    return size_guest_address(d, host_bits, want, notes, errp);
}

char *gp_domain_machine(const GpDomain *d)
{
    xmlNodePtr type = child(child(d->root, "os", NULL), "type", NULL);

    return type ? (char *)xmlGetProp(type, BAD_CAST "machine") : NULL;
}

bool gp_machine_defaults_auto(const char *machine)
{
    return machine && (!strcmp(machine, "q35-gpup2p") ||
                       (g_str_has_prefix(machine, "pc-q35-") &&
                        g_str_has_suffix(machine, "-gpup2p")));
}

void gp_domain_set_machine(GpDomain *d, const char *machine)
{
    xmlNodePtr type = child(child(d->root, "os", NULL), "type", NULL);

    if (type) {
        xmlSetProp(type, BAD_CAST "machine", BAD_CAST machine);
    }
}

char *gp_domain_emulator(const GpDomain *d)
{
    xmlNodePtr em = child(child(d->root, "devices", NULL), "emulator", NULL);
    xmlChar *text = em ? xmlNodeGetContent(em) : NULL;
    char *out = text && *text ? g_strstrip(g_strdup((char *)text)) : NULL;

    xmlFree(text);
    return out;
}

void gp_domain_set_emulator(GpDomain *d, const char *path)
{
    xmlNodePtr devices = child_or_new(d->root, "devices", NULL);
    xmlNodePtr em = child(devices, "emulator", NULL);

    if (!em) {
        /* libvirt's schema wants it first among the devices. */
        em = xmlNewNode(NULL, BAD_CAST "emulator");
        if (devices->children) {
            xmlAddPrevSibling(devices->children, em);
        } else {
            xmlAddChild(devices, em);
        }
    }
    xmlNodeSetContent(em, BAD_CAST path);
}

bool gp_domain_hook_off(const GpDomain *d, bool *off, GError **errp)
{
    static xmlNs ns = { .href = BAD_CAST GP_LIBVIRT_METADATA_NS };
    xmlNodePtr hook = child(child(d->root, "metadata", NULL), "hook", &ns);
    g_autofree xmlChar *check = hook ? xmlGetProp(hook, BAD_CAST "check") :
                                NULL;

    *off = false;
    if (!check || !xmlStrcmp(check, BAD_CAST "on")) {
        return true;
    }
    if (xmlStrcmp(check, BAD_CAST "off")) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s: <hook "
                    "xmlns='%s' check='%s'> in <metadata>: check is on or "
                    "off", d->name, GP_LIBVIRT_METADATA_NS,
                    (const char *)check);
        return false;
    }
    *off = true;
    return true;
}

bool gp_domain_qemu_unprivileged(const GpDomain *d)
{
    xmlNodePtr s;

    for (s = d->root->children; s; s = s->next) {
        g_autofree xmlChar *label = NULL;

        if (!is_element(s, "seclabel") || !prop_equals(s, "model", "dac")) {
            continue;
        }
        label = xmlNodeGetContent(child(s, "label", NULL));
        if (label && (g_str_has_prefix((const char *)label, "+0:") ||
                      g_str_has_prefix((const char *)label, "root:"))) {
            return false;
        }
    }
    /* qemu.conf's user = "root" cannot be seen from here. */
    return true;
}

bool gp_domain_hides_kvm(const GpDomain *d)
{
    xmlNodePtr hidden = child(child(child(d->root, "features", NULL), "kvm",
                                    NULL), "hidden", NULL);

    return hidden && prop_equals(hidden, "state", "on");
}

char *gp_domain_format(const GpDomain *d)
{
    xmlChar *buf = NULL;
    int len = 0;
    char *out;

    xmlDocDumpFormatMemoryEnc(d->doc, &buf, &len, "UTF-8", 1);
    out = g_strndup((const char *)buf, len);
    xmlFree(buf);
    return out;
}

char *gp_xml_canonical(const char *xml, const char *name, GError **errp)
{
    const int flags = XML_PARSE_NONET | XML_PARSE_NOBLANKS |
                      XML_PARSE_NOERROR | XML_PARSE_NOWARNING;
    xmlDocPtr doc = xmlReadMemory(xml, (int)strlen(xml), name, NULL, flags);
    xmlChar *c14n = NULL;
    xmlChar *buf = NULL;
    int len = 0;
    char *out = NULL;

    if (doc) {
        len = xmlC14NDocDumpMemory(doc, NULL, XML_C14N_1_0, NULL, 1, &c14n);
        xmlFreeDoc(doc);
        doc = len >= 0 ? xmlReadMemory((const char *)c14n, len, name, NULL,
                                       flags) : NULL;
    }
    if (!doc) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "%s: cannot canonicalise the XML", name);
        xmlFree(c14n);
        return NULL;
    }
    /* C14N puts each element on the text it had; indent it back. */
    xmlDocDumpFormatMemoryEnc(doc, &buf, &len, "UTF-8", 1);
    out = g_strndup((const char *)buf, len);
    xmlFree(buf);
    xmlFree(c14n);
    xmlFreeDoc(doc);
    return out;
}

/* ---- what libvirt kept of a defined domain ---- */

static bool in_qemu_ns(xmlNodePtr n)
{
    return n->type == XML_ELEMENT_NODE && n->ns &&
           !xmlStrcmp(n->ns->href, BAD_CAST QEMU_NS);
}

static gint str_ptr_cmp(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "name='value'" for each attribute of @n, in name order (libvirt may
 * write them in another order than we did). */
static void append_attrs(GString *out, xmlNodePtr n)
{
    g_autoptr(GPtrArray) attrs = g_ptr_array_new_with_free_func(g_free);
    xmlAttrPtr a;
    guint i;

    for (a = n->properties; a; a = a->next) {
        g_autofree char *v = (char *)xmlNodeGetContent((xmlNodePtr)a);

        g_ptr_array_add(attrs, g_strdup_printf("%s='%s'", (char *)a->name,
                                               v ? v : ""));
    }
    g_ptr_array_sort(attrs, str_ptr_cmp);
    for (i = 0; i < attrs->len; i++) {
        g_string_append_printf(out, " %s", (char *)attrs->pdata[i]);
    }
}

/*
 * One line for each element of the QEMU namespace with no element below
 * it, with the chain of QEMU elements above it and every attribute on the
 * way: "<qemu:override> <qemu:device alias='a'> <qemu:frontend>
 * <qemu:property name='x' type='string' value='auto'>". Which prefix a
 * document binds to the namespace does not matter.
 */
static void qemu_leaf_lines(xmlNodePtr n, GString *chain, GPtrArray *out)
{
    xmlNodePtr c;
    gsize len = chain->len;
    bool leaf = true;

    if (in_qemu_ns(n)) {
        g_string_append_printf(chain, "%s<qemu:%s", chain->len ? " " : "",
                               (char *)n->name);
        append_attrs(chain, n);
        g_string_append_c(chain, '>');
    }
    for (c = n->children; c; c = c->next) {
        if (c->type == XML_ELEMENT_NODE) {
            leaf = false;
            qemu_leaf_lines(c, chain, out);
        }
    }
    if (leaf && in_qemu_ns(n)) {
        g_ptr_array_add(out, g_strdup(chain->str));
    }
    g_string_truncate(chain, len);
}

/*
 * What of @d the transform answers for, one line each: every QEMU
 * namespace element (overrides, command-line arguments), <maxphysaddr>,
 * each PCI hostdev's alias (the overrides name the devices by it),
 * <emulator> and <pcihole64>.
 */
static GPtrArray *written_lines(const GpDomain *d)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GString) chain = g_string_new(NULL);
    xmlNodePtr devices = child(d->root, "devices", NULL);
    xmlNodePtr c, hole, mp;
    guint i;

    qemu_leaf_lines(d->root, chain, out);
    mp = child(child(d->root, "cpu", NULL), "maxphysaddr", NULL);
    if (mp) {
        g_string_assign(chain, "<maxphysaddr");
        append_attrs(chain, mp);
        g_string_append(chain, "/> in <cpu>");
        g_ptr_array_add(out, g_strdup(chain->str));
    }
    for (i = 0; i < d->hostdevs->len; i++) {
        const GpDomainHostdev *h = g_ptr_array_index(d->hostdevs, i);

        if (h->alias) {
            g_ptr_array_add(out, g_strdup_printf("<alias name='%s'/> of "
                                                 "hostdev %s", h->alias,
                                                 h->bdf));
        }
    }
    for (c = devices ? devices->children : NULL; c; c = c->next) {
        g_autofree char *text = NULL, *unit = NULL;

        if (is_element(c, "emulator")) {
            text = (char *)xmlNodeGetContent(c);
            g_ptr_array_add(out, g_strdup_printf("<emulator>%s</emulator>",
                                                 text ? g_strstrip(text) :
                                                 ""));
        } else if (is_element(c, "controller") &&
                   (hole = child(c, "pcihole64", NULL))) {
            text = (char *)xmlNodeGetContent(hole);
            unit = (char *)xmlGetProp(hole, BAD_CAST "unit");
            g_ptr_array_add(out, g_strdup_printf(
                "<pcihole64 unit='%s'>%s</pcihole64>", unit ? unit : "KiB",
                text ? g_strstrip(text) : ""));
        }
    }
    return out;
}

char *gp_domain_lost(const char *wrote, const char *kept, const char *name,
                     GError **errp)
{
    g_autoptr(GpDomain) w = gp_domain_parse(wrote, name, errp);
    g_autoptr(GpDomain) k = NULL;
    g_autoptr(GPtrArray) want = NULL, have = NULL;
    g_autoptr(GHashTable) count = NULL;
    g_autoptr(GString) lost = g_string_new(NULL);
    guint i;

    if (!w || !(k = gp_domain_parse(kept, name, errp))) {
        return NULL;
    }
    want = written_lines(w);
    have = written_lines(k);
    /* A multiset: two equal -global arguments need two kept. */
    count = g_hash_table_new(g_str_hash, g_str_equal);
    for (i = 0; i < have->len; i++) {
        gpointer key = have->pdata[i];

        g_hash_table_insert(count, key, GUINT_TO_POINTER(
            GPOINTER_TO_UINT(g_hash_table_lookup(count, key)) + 1));
    }
    for (i = 0; i < want->len; i++) {
        gpointer key = want->pdata[i];
        guint n = GPOINTER_TO_UINT(g_hash_table_lookup(count, key));

        if (n) {
            g_hash_table_insert(count, key, GUINT_TO_POINTER(n - 1));
        } else {
            g_string_append_printf(lost, "\n  %s", (char *)key);
        }
    }
    return g_string_free(g_steal_pointer(&lost), FALSE);
}

/* <driver iommufd='yes'>, <driver><iommufd/> or <iommufd enabled='yes'>. */
static bool hostdev_iommufd(xmlNodePtr hostdev)
{
    xmlNodePtr drv = child(hostdev, "driver", NULL);
    xmlNodePtr fd = child(drv, "iommufd", NULL);

    if (drv && prop_equals(drv, "iommufd", "yes")) {
        return true;
    }
    return fd && !prop_equals(fd, "enabled", "no");
}

bool gp_domain_hostdev_iommufd(const GpDomainHostdev *h)
{
    return hostdev_iommufd(h->hostdev);
}

/*
 * A bool property's value as QEMU reads it from text (qapi_bool_parse(),
 * qapi/qapi-util.c: exactly these spellings, case-sensitive); unknown
 * for any other, which QEMU refuses.
 */
static GpTri qemu_bool(const char *v)
{
    static const char *const yes[] = { "on", "yes", "true", "y" };
    static const char *const no[] = { "off", "no", "false", "n" };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(yes); i++) {
        if (!strcmp(v, yes[i])) {
            return GP_TRI_YES;
        }
        if (!strcmp(v, no[i])) {
            return GP_TRI_NO;
        }
    }
    return GP_TRI_UNKNOWN;
}

/*
 * x-no-mmap on @h: its override, else a -global; unset is off. @why: set
 * where the value is none of QEMU's spellings.
 */
static GpTri hostdev_no_mmap(const GpDomain *d, const GpDomainHostdev *h,
                             char **why)
{
    g_autofree xmlChar *own = frontend_value(override_frontend(d, h->alias),
                                             "x-no-mmap");
    g_autofree char *global = own ? NULL : global_value(d, "x-no-mmap");
    const char *v = own ? (const char *)own : global;
    GpTri t;

    if (!v) {
        return GP_TRI_NO;
    }
    t = qemu_bool(v);
    if (t == GP_TRI_UNKNOWN) {
        *why = g_strdup_printf("x-no-mmap='%s' (%s) is none of QEMU's bool "
                               "spellings (on, yes, true, y; off, no, "
                               "false, n; case matters): whether its BARs "
                               "are mmapped is not known", v,
                               own ? "<qemu:override>" : "-global");
    }
    return t;
}

unsigned gp_domain_guest_phys_bits(const GpDomain *d, unsigned host_bits,
                                   const char **how)
{
    xmlNodePtr cpu = child(d->root, "cpu", NULL);
    xmlNodePtr mp = child(cpu, "maxphysaddr", NULL);
    g_autofree xmlChar *cpu_mode = cpu ? xmlGetProp(cpu, BAD_CAST "mode") :
                                   NULL;
    g_autofree xmlChar *mp_mode = mp ? xmlGetProp(mp, BAD_CAST "mode") :
                                  NULL;
    unsigned bits = 0, limit = 0;

    if (mp && !prop_uint(mp, "bits", &bits)) {
        bits = 0;
    }
    if (mp && !prop_uint(mp, "limit", &limit)) {
        limit = 0;
    }
    return gp_guest_phys_bits((const char *)cpu_mode, (const char *)mp_mode,
                              bits, limit, host_bits, how);
}

/* libvirt rounds the boot RAM, each NUMA cell and <maxMemory> up to
 * 1 MiB on x86 before QEMU sees them. */
static guint64 round_mib(guint64 bytes)
{
    return (bytes + (1 << 20) - 1) & ~(guint64)((1 << 20) - 1);
}

/* The memory of @numa's cells, in bytes (each rounded as libvirt does);
 * 0 for none. */
static guint64 numa_memory(xmlNodePtr numa)
{
    guint64 sum = 0;
    xmlNodePtr c;

    for (c = numa ? numa->children : NULL; c; c = c->next) {
        g_autofree xmlChar *v = NULL, *unit = NULL;
        guint64 scale, x;

        if (!is_element(c, "cell")) {
            continue;
        }
        v = xmlGetProp(c, BAD_CAST "memory");
        unit = xmlGetProp(c, BAD_CAST "unit");
        if (v && gp_libvirt_unit_scale((const char *)unit, 1024, &scale) &&
            g_ascii_string_to_unsigned((const char *)v, 10, 0,
                                       G_MAXUINT64 / scale, &x, NULL)) {
            sum += round_mib(x * scale);
        }
    }
    return sum;
}

/*
 * What of <qemu:commandline> moves the 64-bit window in ways not modelled
 * (the RAM split, SGX EPC, CXL windows, the hole's size or RAM given past
 * libvirt), naming the argument; NULL for none.
 */
static char *machine_commandline(const GpDomain *d)
{
    static const char *const moves[] = {
        "max-ram-below-4g", "sgx-epc", "cxl=", "cxl-fmw", "pci-hole64",
    };
    xmlNodePtr cl = child(d->root, "commandline", qemu_ns_any());
    xmlNodePtr a;
    unsigned i;

    for (a = cl ? cl->children : NULL; a; a = a->next) {
        g_autofree xmlChar *v = is_element(a, "arg") ?
                                xmlGetProp(a, BAD_CAST "value") : NULL;

        for (i = 0; v && i < G_N_ELEMENTS(moves); i++) {
            if (strstr((const char *)v, moves[i])) {
                return g_strdup_printf("<qemu:arg value='%s'/> sets what "
                                       "is not modelled (%s)", v, moves[i]);
            }
        }
        if (v && v[0] == '-') {
            /* QEMU takes "--opt" as "-opt". */
            const char *o = (const char *)v + (v[1] == '-' ? 2 : 1);

            if (!strcmp(o, "m") || !strcmp(o, "cpu") || !strcmp(o, "M") ||
                !strcmp(o, "machine")) {
                return g_strdup_printf("<qemu:arg value='%s'/> sets the %s "
                                       "past libvirt", v, !strcmp(o, "m") ?
                                       "RAM" : !strcmp(o, "cpu") ? "vCPU" :
                                       "machine");
            }
        }
    }
    return NULL;
}

void gp_domain_pc_machine(const GpDomain *d, GpCpuVendor host_vendor,
                          GpDomainMachine *out)
{
    xmlNodePtr hole = child(root_controller_find(d), "pcihole64", NULL);
    xmlNodePtr max = child(d->root, "maxMemory", NULL);
    xmlNodePtr devs = child(d->root, "devices", NULL);
    xmlNodePtr cpu = child(d->root, "cpu", NULL);
    xmlNodePtr model = child(cpu, "model", NULL);
    g_autofree xmlChar *mode = cpu ? xmlGetProp(cpu, BAD_CAST "mode") : NULL;
    g_autofree xmlChar *name = model ? xmlNodeGetContent(model) : NULL;
    g_autofree xmlChar *vendor_id = model ?
                                    xmlGetProp(model, BAD_CAST "vendor_id") :
                                    NULL;
    guint64 devices = 0, numa;
    xmlNodePtr n;

    memset(out, 0, sizeof(*out));
    out->type = gp_domain_machine(d);
    /* libvirt's <memory> counts the memory devices; -m size does not. */
    for (n = devs ? devs->children : NULL; n; n = n->next) {
        if (!is_element(n, "memory")) {
            continue;
        }
        if (prop_equals(n, "model", "sgx-epc") && !out->not_modelled) {
            out->not_modelled = g_strdup("<memory model='sgx-epc'> places "
                                         "SGX's EPC above RAM, which is not "
                                         "modelled");
        }
        devices += size_bytes(child(child(n, "target", NULL), "size", NULL));
    }
    numa = numa_memory(child(cpu, "numa", NULL));
    if (numa) {
        /* libvirt's -m is the cells' sum where there are cells. */
        out->m.ram = numa;
    } else {
        out->m.ram = size_bytes(child(d->root, "memory", NULL));
        out->m.ram = round_mib(out->m.ram > devices ? out->m.ram - devices :
                               0);
    }
    if (max) {
        out->m.maxram = round_mib(size_bytes(max));
        prop_uint(max, "slots", &out->m.slots);
    }
    if (hole) {
        out->m.hole64_set = true;
        out->m.hole64_size = size_bytes(hole);
    }
    if (!out->not_modelled) {
        out->not_modelled = machine_commandline(d);
    }
    if (name) {
        g_strstrip((char *)name);
    }
    out->m.no_long_mode = gp_pc_cpu_model_32bit((const char *)name);
    for (n = cpu ? cpu->children : NULL; n; n = n->next) {
        if (is_element(n, "feature") && prop_equals(n, "name", "lm")) {
            /* disable and forbid take it away; require and force give
             * it (optional: where the host has it, as it does). */
            out->m.no_long_mode = prop_equals(n, "policy", "disable") ||
                                  prop_equals(n, "policy", "forbid");
        }
    }
    out->m.vendor = gp_pc_vcpu_vendor(prop_equals(d->root, "type", "kvm"),
                                      (const char *)mode,
                                      (const char *)name,
                                      (const char *)vendor_id, host_vendor,
                                      &out->m.vendor_how);
    out->m.type = out->type;
    out->m.not_modelled = out->not_modelled;
}

void gp_domain_machine_clear(GpDomainMachine *m)
{
    g_free(m->type);
    g_free(m->not_modelled);
    memset(m, 0, sizeof(*m));
}

void gp_domain_machine_resolve(GpDomainMachine *m, const char *qemu)
{
    char *target = m->type && qemu ?
                   gp_qemu_machine_alias(qemu, m->type, NULL) : NULL;

    if (target) {
        g_free(m->type);
        m->type = target;
        m->m.type = target;
    }
}

void gp_domain_gate_facts(const GpDomain *d, unsigned host_bits,
                          GpCpuVendor host_vendor, const char *qemu,
                          GpDomainGate *out)
{
    xmlNodePtr iommu = child(child(d->root, "devices", NULL), "iommu", NULL);
    const char *how;
    guint i;

    memset(out, 0, sizeof(*out));
    if (iommu) {
        g_autofree xmlChar *model = xmlGetProp(iommu, BAD_CAST "model");

        out->viommu = g_strdup_printf("<iommu model='%s'>", model ?
                                      (const char *)model : "");
        out->vm.viommu = out->viommu;
    }
    out->vm.guest_phys_bits = gp_domain_guest_phys_bits(d, host_bits, &how);
    gp_domain_pc_machine(d, host_vendor, &out->machine);
    gp_domain_machine_resolve(&out->machine, qemu);
    out->vm.machine = out->machine.m;
    /* The gate judges the wider, and nothing where the host's is not
     * known. */
    if (host_bits != out->vm.guest_phys_bits &&
        gp_guest_width_may_be_hosts(&out->vm.machine, how)) {
        out->vm.guest_phys_bits = !host_bits ? 0 :
            MAX(host_bits, out->vm.guest_phys_bits);
    }
    out->gpus = g_array_new(FALSE, TRUE, sizeof(GpBarGateGpu));
    out->whys = g_ptr_array_new_with_free_func(g_free);
    for (i = 0; i < d->gpus->len; i++) {
        const GpDomainHostdev *h = g_ptr_array_index(d->gpus, i);
        char *why = NULL;
        GpBarGateGpu g = {
            .dev = h->dev,
            .iommufd = hostdev_iommufd(h->hostdev),
            .no_mmap = hostdev_no_mmap(d, h, &why) == GP_TRI_YES,
        };

        if (why) {
            g_ptr_array_add(out->whys, why);
            g.no_mmap_why = why;
        }
        g_array_append_val(out->gpus, g);
    }
}

void gp_domain_gate_clear(GpDomainGate *g)
{
    g_free(g->viommu);
    gp_domain_machine_clear(&g->machine);
    if (g->gpus) {
        g_array_unref(g->gpus);
    }
    if (g->whys) {
        g_ptr_array_unref(g->whys);
    }
    memset(g, 0, sizeof(*g));
}

void gp_domain_set_off(GpDomain *d, GpDomainHostdev *h)
{
    xmlNsPtr ns = ensure_qemu_ns(d);
    xmlNodePtr fe;

    ensure_alias(h);
    fe = frontend_for(d, ns, h->alias);
    set_property(fe, ns, "x-nv-gpudirect-clique", NULL, NULL);
    set_property(fe, ns, "x-gpu-p2p-clique", "string", "off");
    set_property(fe, ns, "x-gpu-p2p-host-snapshot", NULL, NULL);
}
