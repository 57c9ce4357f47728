/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `gpup2p check --domain`: what a libvirt domain says about the VM. */
#include <string.h>

#include "check.h"

#ifdef GP_HAVE_LIBVIRT
#include <libxml/parser.h>
#include <libxml/xpath.h>

#include "libvirt-domain.h"
#endif

void check_domain_free(Domain *d)
{
    if (!d) {
        return;
    }
    g_free(d->path);
    g_free(d->emulator);
    g_free(d->kvm_hidden);
    g_free(d->cpu_mode);
    g_free(d->maxphys_mode);
    if (d->hostdevs) {
        g_ptr_array_free(d->hostdevs, TRUE);
    }
    if (d->managed) {
        g_hash_table_destroy(d->managed);
    }
    g_free(d);
}
#ifdef GP_HAVE_LIBVIRT
/* The string value of @expr, NULL when it is empty. */
static char *xpath_string(xmlXPathContextPtr ctx, const char *expr)
{
    xmlXPathObjectPtr o = xmlXPathEvalExpression(BAD_CAST expr, ctx);
    char *out = NULL;

    if (o && o->type == XPATH_STRING && o->stringval && o->stringval[0]) {
        out = g_strstrip(g_strdup((const char *)o->stringval));
    }
    xmlXPathFreeObject(o);
    return out;
}

static bool parse_scaled(const Domain *d, const char *what, const char *num,
                         const char *unit, guint64 dflt_scale, guint64 *out,
                         GError **errp)
{
    guint64 scale, v;

    if (!gp_libvirt_unit_scale(unit, dflt_scale, &scale)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "%s: %s: unit '%s' is not a libvirt size unit",
                    d->path, what, unit);
        return false;
    }
    if (!g_ascii_string_to_unsigned(num, 10, 0, G_MAXUINT64 / scale, &v,
                                    NULL)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "%s: %s: '%s' is not a size", d->path, what, num);
        return false;
    }
    *out = v * scale;
    return true;
}

static bool hostdev_field(const Domain *d, xmlNodePtr a, const char *name,
                          guint64 max, guint64 *out, GError **errp)
{
    g_autofree char *text = (char *)xmlGetProp(a, BAD_CAST name);
    const char *digits = text;

    if (!text && !strcmp(name, "domain")) {
        *out = 0;
        return true;
    }
    if (text && g_str_has_prefix(text, "0x")) {
        digits = text + 2;
    }
    if (!text || !g_ascii_string_to_unsigned(digits, 16, 0, max, out,
                                             NULL)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "%s: hostdev source address %s='%s' is not a number up "
                    "to 0x%" G_GINT64_MODIFIER "x", d->path, name,
                    text ? text : "(missing)", max);
        return false;
    }
    return true;
}

static bool domain_read_hostdevs(Domain *d, xmlXPathContextPtr ctx,
                                 GError **errp)
{
    xmlXPathObjectPtr o = xmlXPathEvalExpression(BAD_CAST
        "/domain/devices/hostdev[@type='pci']/source/address", ctx);
    int i, n = o && o->nodesetval ? o->nodesetval->nodeNr : 0;
    bool ok = true;

    for (i = 0; i < n && ok; i++) {
        xmlNodePtr a = o->nodesetval->nodeTab[i];
        guint64 dom, bus, slot, fn;

        ok = hostdev_field(d, a, "domain", 0xffff, &dom, errp) &&
             hostdev_field(d, a, "bus", 0xff, &bus, errp) &&
             hostdev_field(d, a, "slot", 0x1f, &slot, errp) &&
             hostdev_field(d, a, "function", 7, &fn, errp);
        if (ok) {
            char *bdf = g_strdup_printf("%04x:%02x:%02x.%x", (unsigned)dom,
                                        (unsigned)bus, (unsigned)slot,
                                        (unsigned)fn);
            /* <hostdev managed=...>; libvirt's default is "no". */
            xmlChar *managed = a->parent && a->parent->parent ?
                xmlGetProp(a->parent->parent, BAD_CAST "managed") : NULL;

            /* As `gpup2p libvirt` (and libvirt at define) refuses it. */
            if (g_ptr_array_find_with_equal_func(d->hostdevs, bdf,
                                                 g_str_equal, NULL)) {
                g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s: "
                            "<hostdev> %s is assigned twice", d->path, bdf);
                g_free(bdf);
                xmlFree(managed);
                ok = false;
                break;
            }
            g_ptr_array_add(d->hostdevs, bdf);
            if (managed && !xmlStrcmp(managed, BAD_CAST "yes")) {
                g_hash_table_add(d->managed, g_strdup(bdf));
            }
            xmlFree(managed);
        }
    }
    xmlXPathFreeObject(o);
    return ok;
}

/* -cpu ...,kvm=off and OVMF's aperture option in <qemu:commandline>. */
static bool domain_read_commandline(Domain *d, xmlXPathContextPtr ctx,
                                    GError **errp)
{
    xmlXPathObjectPtr o = xmlXPathEvalExpression(BAD_CAST
        "/domain/*[local-name()='commandline']/*[local-name()='arg']/@value",
        ctx);
    int i, n = o && o->nodesetval ? o->nodesetval->nodeNr : 0;
    bool ok = true;

    for (i = 0; i < n && ok; i++) {
        g_autofree char *v = (char *)xmlNodeGetContent(
            o->nodesetval->nodeTab[i]);
        const char *mb;

        if (!v) {
            continue;
        }
        if (strstr(v, "kvm=off") && !d->kvm_hidden) {
            d->kvm_hidden = g_strdup_printf("<qemu:arg value='%s'/>", v);
        }
        mb = strstr(v, "opt/ovmf/X-PciMmio64Mb,string=");
        if (mb) {
            mb += strlen("opt/ovmf/X-PciMmio64Mb,string=");
            ok = parse_scaled(d, "opt/ovmf/X-PciMmio64Mb", mb, "MiB", 0,
                              &d->ovmf_mmio64, errp);
        }
    }
    xmlXPathFreeObject(o);
    return ok;
}

static bool domain_read_numbers(Domain *d, xmlXPathContextPtr ctx,
                                GError **errp)
{
    g_autofree char *mem = xpath_string(ctx, "string(/domain/memory)");
    g_autofree char *mem_unit = xpath_string(ctx,
                                             "string(/domain/memory/@unit)");
    g_autofree char *hole = xpath_string(ctx,
        "string(/domain/devices/controller[@type='pci' and "
        "(@model='pcie-root' or @model='pci-root')]/pcihole64)");
    g_autofree char *hole_unit = xpath_string(ctx,
        "string(/domain/devices/controller[@type='pci' and "
        "(@model='pcie-root' or @model='pci-root')]/pcihole64/@unit)");
    g_autofree char *bits = xpath_string(ctx,
        "string(/domain/cpu/maxphysaddr/@bits)");
    g_autofree char *limit = xpath_string(ctx,
        "string(/domain/cpu/maxphysaddr/@limit)");
    guint64 v;

    if (!mem) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "%s: no <memory> in the domain", d->path);
        return false;
    }
    if (!parse_scaled(d, "<memory>", mem, mem_unit, 1024, &d->memory, errp) ||
        (hole && !parse_scaled(d, "<pcihole64>", hole, hole_unit, 1024,
                               &d->pcihole64, errp))) {
        return false;
    }
    if (bits) {
        if (!g_ascii_string_to_unsigned(bits, 10, 1, 64, &v, NULL)) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                        "%s: <maxphysaddr bits='%s'> is not 1-64", d->path,
                        bits);
            return false;
        }
        d->maxphys_bits = v;
    }
    if (limit) {
        if (!g_ascii_string_to_unsigned(limit, 10, 1, 64, &v, NULL)) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                        "%s: <maxphysaddr limit='%s'> is not 1-64",
                        d->path, limit);
            return false;
        }
        d->maxphys_limit = v;
    }
    return true;
}

Domain *check_domain_read(const char *path, GError **errp)
{
    g_autoptr(Domain) d = g_new0(Domain, 1);
    xmlDocPtr doc;
    xmlXPathContextPtr ctx;
    g_autofree char *type = NULL, *hidden = NULL, *fw = NULL;
    g_autofree char *loader = NULL, *text = NULL;
    bool ok;

    d->path = g_strdup(path);
    d->hostdevs = g_ptr_array_new_with_free_func(g_free);
    d->managed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                       NULL);
    if (!g_file_get_contents(path, &text, NULL, errp) ||
        !(doc = gp_xml_read(text, path, errp))) {
        return NULL;
    }
    ctx = xmlXPathNewContext(doc);
    type = xpath_string(ctx, "string(/domain/@type)");
    if (!type) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "%s: not a libvirt domain (no <domain type=...>)", path);
        ok = false;
    } else {
        g_autofree char *ours = xpath_string(ctx,
            "string(boolean(//*[local-name()='property']"
            "[starts-with(@name, 'x-gpu-p2p-')] | "
            "/domain/*[local-name()='commandline']/*[local-name()='arg']"
            "[contains(@value, 'x-gpu-p2p-')]))");

        d->uses_ours = !g_strcmp0(ours, "true");
        d->emulator = xpath_string(ctx, "string(/domain/devices/emulator)");
        hidden = xpath_string(ctx,
                              "string(/domain/features/kvm/hidden/@state)");
        if (!g_strcmp0(hidden, "on")) {
            d->kvm_hidden = g_strdup("<kvm><hidden state='on'/>");
        }
        fw = xpath_string(ctx, "string(/domain/os/@firmware)");
        loader = xpath_string(ctx, "string(/domain/os/loader)");
        d->ovmf = !g_strcmp0(fw, "efi") ||
                  (loader && (strstr(loader, "OVMF") ||
                              strstr(loader, "edk2")));
        d->cpu_mode = xpath_string(ctx, "string(/domain/cpu/@mode)");
        d->maxphys_mode = xpath_string(ctx,
            "string(/domain/cpu/maxphysaddr/@mode)");
        ok = domain_read_numbers(d, ctx, errp) &&
             domain_read_hostdevs(d, ctx, errp) &&
             domain_read_commandline(d, ctx, errp);
    }
    xmlXPathFreeContext(ctx);
    xmlFreeDoc(doc);
    return ok ? g_steal_pointer(&d) : NULL;
}
#else
/* A domain is read with libxml2, which a build without libvirt lacks. */
Domain *check_domain_read(const char *path, GError **errp)
{
    g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "--domain %s: %s", path,
                GP_WITHOUT_LIBVIRT);
    return NULL;
}
#endif
