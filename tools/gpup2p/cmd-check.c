/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `gpup2p check`: is this host (and, with --domain, this VM) ready for P2P
 * between the GPUs it passes through? One line per item with a verdict and,
 * where it is not ok, the fix. What cannot be checked from the input (a
 * capture has no loaded modules) is "untested", never "ok".
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#ifdef GP_HAVE_LIBVIRT
#include <libxml/parser.h>
#include <libxml/xpath.h>

#include "libvirt-domain.h"
#endif

typedef enum { ITEM_OK, ITEM_WARN, ITEM_FAIL, ITEM_UNTESTED } ItemState;

typedef struct {
    JsonBuilder *json;
    bool as_json;
    unsigned fails, warns, untested;
} Report;

/* What a libvirt domain says about the VM the GPUs go to. */
typedef struct {
    char *path;
    char *emulator;             /* <emulator>, NULL when absent */
    char *kvm_hidden;           /* how KVM is hidden, NULL when it is not */
    guint64 memory;             /* bytes */
    bool ovmf;
    char *cpu_mode;             /* <cpu mode=...>, NULL when absent */
    char *maxphys_mode;         /* <maxphysaddr mode=...> */
    unsigned maxphys_bits, maxphys_limit;
    guint64 ovmf_mmio64;        /* opt/ovmf/X-PciMmio64Mb in bytes, or 0 */
    guint64 pcihole64;          /* <pcihole64> in bytes, or 0 */
    GPtrArray *hostdevs;        /* char * BDFs of PCI <hostdev>s */
    GHashTable *managed;        /* the BDFs of those with managed='yes' */
    bool uses_ours;             /* sets an x-gpu-p2p-* property */
} Domain;

typedef struct {
    const GpTopology *topo;
    GPtrArray *gpus;
    bool captured;
    const char *qemu;           /* NULL: not known for a capture */
    const Domain *dom;
    Report *r;
} Check;

/* QEMU's default guest physical address width for named CPU models. */
#define QEMU_DEFAULT_PHYS_BITS 40
/* OVMF caps the guest's address width (4-level paging) at 46 bits. */
#define OVMF_MAX_PHYS_BITS 46
/* OVMF's fixed 64-bit aperture when it cannot size it dynamically. */
#define OVMF_FIXED_MMIO64 (32ULL << 30)
/* QEMU q35's pci-hole64-size when libvirt sets no <pcihole64>. */
#define Q35_DEFAULT_HOLE64 (32ULL << 30)

/*
 * One item: @check names it ("driver", "P2P", ...), @a and @b are the
 * devices it is about (or NULL). Text shows "BDF check" or "P2P a-b";
 * JSON keeps the name and the devices apart.
 */
static void item_for(Report *r, ItemState st, const char *check,
                     const GpDevice *a, const GpDevice *b,
                     const char *detail, const char *fix)
{
    static const char *const names[] = { "ok", "warn", "fail", "untested" };
    g_autofree char *label =
        b ? g_strdup_printf("%s %s-%s", check, a->bdf + 5, b->bdf + 5) :
        a ? g_strdup_printf("%s %s", a->bdf, check) : g_strdup(check);

    r->fails += st == ITEM_FAIL;
    r->warns += st == ITEM_WARN;
    r->untested += st == ITEM_UNTESTED;
    if (r->as_json) {
        json_builder_begin_object(r->json);
        json_builder_set_member_name(r->json, "check");
        json_builder_add_string_value(r->json, check);
        json_builder_set_member_name(r->json, "devices");
        json_builder_begin_array(r->json);
        if (a) {
            json_builder_add_string_value(r->json, a->bdf);
        }
        if (b) {
            json_builder_add_string_value(r->json, b->bdf);
        }
        json_builder_end_array(r->json);
        json_builder_set_member_name(r->json, "item");
        json_builder_add_string_value(r->json, label);
        json_builder_set_member_name(r->json, "verdict");
        json_builder_add_string_value(r->json, names[st]);
        json_builder_set_member_name(r->json, "detail");
        json_builder_add_string_value(r->json, detail);
        if (fix && st != ITEM_OK) {
            json_builder_set_member_name(r->json, "fix");
            json_builder_add_string_value(r->json, fix);
        }
        json_builder_end_object(r->json);
        return;
    }
    printf("%-8s %-26s %s\n", names[st], label, detail);
    if (fix && st != ITEM_OK) {
        printf("         fix: %s\n", fix);
    }
}

static void item(Report *r, ItemState st, const char *what,
                 const char *detail, const char *fix)
{
    item_for(r, st, what, NULL, NULL, detail, fix);
}

static char *size_text(guint64 bytes)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    double v = bytes;
    unsigned u = 0;

    while (u + 1 < G_N_ELEMENTS(units) && v >= 1024) {
        v /= 1024;
        u++;
    }
    if (v == (double)(guint64)v) {
        return g_strdup_printf("%" G_GUINT64_FORMAT " %s", (guint64)v,
                               units[u]);
    }
    return g_strdup_printf("%.2f %s", v, units[u]);
}

static unsigned log2_ceil(guint64 v)
{
    unsigned bits = 0;

    while (bits < 64 && (1ULL << bits) < v) {
        bits++;
    }
    return bits;
}

/* ---- the domain ---- */

static void domain_free(Domain *d)
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
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Domain, domain_free)

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
    static const struct { const char *name; guint64 scale; } units[] = {
        { "b", 1 }, { "bytes", 1 }, { "KB", 1000 }, { "k", 1024 },
        { "KiB", 1024 }, { "MB", 1000000 }, { "M", 1 << 20 },
        { "MiB", 1 << 20 }, { "GB", 1000000000 }, { "G", 1 << 30 },
        { "GiB", 1 << 30 }, { "TB", 1000000000000ULL }, { "T", 1ULL << 40 },
        { "TiB", 1ULL << 40 },
    };
    guint64 scale = dflt_scale, v;
    size_t i;

    if (unit) {
        for (i = 0; i < G_N_ELEMENTS(units); i++) {
            if (!strcmp(unit, units[i].name)) {
                break;
            }
        }
        if (i == G_N_ELEMENTS(units)) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                        "%s: %s: unit '%s' is not a libvirt size unit",
                        d->path, what, unit);
            return false;
        }
        scale = units[i].scale;
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

static Domain *domain_read(const char *path, GError **errp)
{
    g_autoptr(Domain) d = g_new0(Domain, 1);
    xmlDocPtr doc;
    xmlXPathContextPtr ctx;
    g_autofree char *type = NULL, *hidden = NULL, *fw = NULL;
    g_autofree char *loader = NULL;
    bool ok;

    d->path = g_strdup(path);
    d->hostdevs = g_ptr_array_new_with_free_func(g_free);
    d->managed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                       NULL);
    doc = xmlReadFile(path, NULL, XML_PARSE_NONET | XML_PARSE_NOERROR |
                      XML_PARSE_NOWARNING);
    if (!doc) {
        const xmlError *e = xmlGetLastError();
        g_autofree char *why = g_strdup(e && e->message ? e->message :
                                        "unreadable");

        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "%s: not a readable XML file: %s", path,
                    g_strchomp(why));
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
static Domain *domain_read(const char *path, GError **errp)
{
    g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "--domain %s: %s", path,
                GP_WITHOUT_LIBVIRT);
    return NULL;
}
#endif

/* ---- host items ---- */

static void check_iommu(Check *c)
{
    g_autofree char *groups = g_build_filename(c->topo->sys, "kernel",
                                               "iommu_groups", NULL);
    g_autoptr(GDir) d = g_dir_open(groups, 0, NULL);
    bool on = d && g_dir_read_name(d);
    guint i;

    for (i = 0; i < c->topo->devices->len && !on; i++) {
        on = ((GpDevice *)g_ptr_array_index(c->topo->devices, i))
                 ->iommu_group >= 0;
    }
    item(c->r, on ? ITEM_OK : ITEM_FAIL, "IOMMU",
         on ? "IOMMU groups exist" : "no IOMMU groups: the IOMMU is off",
         "Intel: enable VT-d in firmware and boot with intel_iommu=on; "
         "AMD: enable the IOMMU (AMD-Vi) in firmware, the kernel turns it "
         "on by default (no amd_iommu=off or iommu=off on its command "
         "line)");
}

/*
 * With interrupt remapping on, the kernel's MSI and IO-APIC interrupt
 * chips carry an "IR-" prefix in /proc/interrupts.
 */
static void check_interrupt_remapping(Check *c)
{
    g_autofree char *path = g_build_filename(c->topo->root, "proc",
                                             "interrupts", NULL);
    g_autofree char *unsafe_path = g_build_filename(c->topo->sys, "module",
        "vfio_iommu_type1", "parameters", "allow_unsafe_interrupts", NULL);
    g_autofree char *text = NULL, *unsafe = NULL, *detail = NULL;
    const char *fix = "enable interrupt remapping: VT-d/AMD-Vi with "
                      "interrupt remapping in firmware, and no intremap=off "
                      "or amd_iommu=nointremap on the kernel command line";

    if (!g_file_get_contents(path, &text, NULL, NULL)) {
        detail = g_strdup_printf("%s is missing: cannot tell", path);
        item(c->r, ITEM_UNTESTED, "interrupt remapping", detail,
             "capture with 'gpup2p snapshot', which copies "
             "/proc/interrupts");
        return;
    }
    if (g_file_get_contents(unsafe_path, &unsafe, NULL, NULL) &&
        g_str_has_prefix(unsafe, "Y")) {
        item(c->r, ITEM_FAIL, "interrupt remapping",
             "vfio_iommu_type1 allow_unsafe_interrupts=Y: a guest can "
             "forge interrupts (MSI) to the host", fix);
        return;
    }
    if (strstr(text, " IR-")) {
        item(c->r, ITEM_OK, "interrupt remapping",
             "on (IR- interrupt chips in /proc/interrupts)", NULL);
    } else {
        item(c->r, ITEM_FAIL, "interrupt remapping",
             "off: no IR- interrupt chip in /proc/interrupts, so VFIO "
             "refuses device assignment", fix);
    }
}

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
    item_for(c->r, st, "driver", g, NULL, detail, fix);
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

static void check_gpu_binding(Check *c, const GpDevice *g)
{
    g_autofree char *detail = NULL;
    g_autoptr(GString) others = g_string_new(NULL);
    guint j;

    check_gpu_driver(c, g);
    if (g->iommu_group < 0) {
        item_for(c->r, ITEM_FAIL, "IOMMU group", g, NULL,
                 "in no IOMMU group (the IOMMU is off for it), so VFIO "
                 "cannot take it", "turn the IOMMU on (see the IOMMU item)");
        return;
    }
    for (j = 0; j < c->topo->devices->len; j++) {
        const GpDevice *o = g_ptr_array_index(c->topo->devices, j);

        if (o != g && o->iommu_group == g->iommu_group && !o->is_bridge &&
            group_member_blocks(c, o)) {
            g_string_append_printf(others, " %s(%s)", o->bdf, o->driver);
        }
    }
    detail = others->len ?
        g_strdup_printf("group %d also holds, bound to a host driver,%s",
                        g->iommu_group, others->str) :
        g_strdup_printf("group %d holds no device bound to a host driver",
                        g->iommu_group);
    item_for(c->r, others->len ? ITEM_FAIL : ITEM_OK, "IOMMU group", g, NULL,
             detail,
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

/* The first device from @d up to @stop whose attributes hold garbage. */
static const GpDevice *invalid_on_path(const GpDevice *d,
                                       const GpDevice *stop)
{
    for (; d && d != stop; d = d->physfn ? d->physfn : d->parent) {
        if (d->attr_invalid) {
            return d;
        }
    }
    return NULL;
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
    if (v->vm_kind == GP_VM_P2P_UNKNOWN &&
        (invalid_on_path(a, NULL) || invalid_on_path(b, NULL))) {
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
        return "turn ACS redirect on at the named switch ports (Linux does "
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

static void check_pairs(Check *c)
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
            item_for(c->r, gp_vm_p2p_ok(v.vm_kind) ? ITEM_OK :
                     v.vm_kind == GP_VM_P2P_UNKNOWN ? ITEM_UNTESTED :
                     ITEM_WARN, "P2P", a, b, detail, p2p_fix(c, a, b, &v));
            gp_p2p_verdict_clear(&v);
        }
    }
}

static void check_helper(Check *c)
{
    g_autofree char *helper = g_build_filename(c->topo->sys, "module",
                                               "gpup2p", NULL);
    bool loaded = g_file_test(helper, G_FILE_TEST_IS_DIR);

    if (c->captured && !loaded) {
        item(c->r, ITEM_UNTESTED, "kernel helper",
             "a capture does not record loaded modules",
             "run 'gpup2p check' on the host itself");
        return;
    }
    item(c->r, loaded ? ITEM_OK : ITEM_WARN, "kernel helper",
         loaded ? "gpup2p module loaded" : "gpup2p module not loaded "
         "(optional: 'gpup2p verdict' checks these verdicts against the "
         "kernel's)", "apt install gpup2p-dkms && modprobe gpup2p");
}

static void check_qemu(Check *c)
{
    g_autofree char *detail = NULL;
    g_autoptr(GError) err = NULL;
    const char *fix = "install the gpup2p-qemu package (its QEMU is "
                      GP_QEMU_EMULATOR "); or use "
                      "'gpup2p libvirt --qemu-stock'";
    unsigned props;

    if (!c->qemu) {
        item(c->r, ITEM_UNTESTED, "QEMU extension",
             "a captured host: its QEMU is not here",
             "name the binary with --qemu, or the domain with --domain");
        return;
    }
    if (!gp_qemu_vfio_props(c->qemu, &props, &err)) {
        item(c->r, ITEM_FAIL, "QEMU extension", err->message, fix);
        return;
    }
    if (!(props & GP_QEMU_CLIQUE_AUTO)) {
        /* A domain that sets our property cannot start on it. */
        bool needed = c->dom && c->dom->uses_ours;

        detail = g_strdup_printf("%s has no x-gpu-p2p-clique on vfio-pci%s",
                                 c->qemu, needed ? ", which the domain "
                                 "sets: it will not start" :
                                 props & GP_QEMU_CLIQUE_STOCK ?
                                 " (upstream's x-nv-gpudirect-clique only)" :
                                 "");
        item(c->r, needed ? ITEM_FAIL : ITEM_WARN, "QEMU extension", detail,
             fix);
        return;
    }
    detail = g_strdup_printf("%s has x-gpu-p2p-clique", c->qemu);
    item(c->r, ITEM_OK, "QEMU extension", detail, NULL);
}

/*
 * OVMF sizes its 64-bit aperture to an eighth of the guest's physical
 * address space: the BARs need log2(window) + 3 bits.
 */
static unsigned bits_for_window(guint64 need)
{
    return log2_ceil(need) + 3;
}

static void check_mmio64(Check *c, guint64 need)
{
    g_autofree char *size = size_text(need);
    g_autofree char *detail = NULL;
    unsigned want = bits_for_window(need);
    unsigned have = c->topo->cpu_phys_bits;

    if (!need) {
        item(c->r, ITEM_OK, "64-bit MMIO", "the GPUs have no 64-bit BAR",
             NULL);
        return;
    }
    if (!have) {
        detail = g_strdup_printf("the GPUs' 64-bit BARs need a %s window; "
                                 "the CPU's address width is unknown (no "
                                 "'address sizes' in proc/cpuinfo)", size);
        item(c->r, ITEM_UNTESTED, "64-bit MMIO", detail,
             "capture with 'gpup2p snapshot', which copies the CPU's "
             "identity");
        return;
    }
    detail = g_strdup_printf("the GPUs' 64-bit BARs need a %s window "
                             "(hole64), which takes %u guest physical "
                             "address bits; the host's CPUs have %u", size,
                             want, have);
    item(c->r, MIN(have, OVMF_MAX_PHYS_BITS) >= want ? ITEM_OK : ITEM_FAIL,
         "64-bit MMIO", detail,
         "give these GPUs to more than one VM, or use a host with a wider "
         "physical address space");
}

/* ---- VM items (--domain) ---- */

/* The guest's physical address width as QEMU will set it; @how says why. */
static unsigned guest_phys_bits(const Check *c, const char **how)
{
    const Domain *d = c->dom;
    unsigned host = c->topo->cpu_phys_bits, bits;

    if (!g_strcmp0(d->maxphys_mode, "emulate") && d->maxphys_bits) {
        *how = "<maxphysaddr mode='emulate'>";
        return d->maxphys_bits;
    }
    if (!g_strcmp0(d->maxphys_mode, "passthrough") ||
        !g_strcmp0(d->cpu_mode, "host-passthrough") ||
        !g_strcmp0(d->cpu_mode, "maximum")) {
        /* QEMU's host and max CPU models take the host's width. */
        *how = d->maxphys_mode ? "<maxphysaddr mode='passthrough'>" :
               "the host CPU model";
        bits = host;
        if (d->maxphys_limit && d->maxphys_limit < bits) {
            bits = d->maxphys_limit;
            *how = "<maxphysaddr limit=...>";
        }
        return bits;
    }
    *how = "QEMU's default for named CPU models";
    return QEMU_DEFAULT_PHYS_BITS;
}

static void check_domain_kvm(Check *c)
{
    g_autofree char *detail = NULL;

    if (c->dom->kvm_hidden) {
        detail = g_strdup_printf("KVM is hidden (%s): the NVIDIA driver "
                                 "then ignores the P2P clique capability",
                                 c->dom->kvm_hidden);
    }
    item(c->r, c->dom->kvm_hidden ? ITEM_FAIL : ITEM_OK, "hidden KVM",
         detail ? detail : "KVM is visible to the guest",
         "remove <kvm><hidden state='on'/></kvm> and kvm=off");
}

static void check_domain_address_bits(Check *c, guint64 need)
{
    const char *how = NULL;
    unsigned bits = guest_phys_bits(c, &how);
    unsigned want = bits_for_window(need);
    g_autofree char *detail = NULL;
    g_autofree char *mem = size_text(c->dom->memory);
    g_autofree char *need_text = size_text(need);

    if (!bits) {
        item(c->r, ITEM_UNTESTED, "guest address bits",
             "the host's address width is unknown (no 'address sizes' in "
             "proc/cpuinfo)", "run on the host, or capture with "
             "'gpup2p snapshot'");
        return;
    }
    /* RAM (and the 32-bit hole below 4 GiB) sits under the window. */
    want = MAX(want, log2_ceil(c->dom->memory + (4ULL << 30) + need));
    detail = g_strdup_printf("%u bits (%s); %s of RAM and the BARs' %s "
                             "window need %u", bits, how, mem, need_text,
                             want);
    item(c->r, bits >= want ? ITEM_OK : ITEM_FAIL, "guest address bits",
         detail,
         "<cpu mode='host-passthrough'><maxphysaddr mode='passthrough'/>"
         "</cpu>");
}

static void check_domain_firmware(Check *c, guint64 need)
{
    const Domain *d = c->dom;
    const char *how = NULL;
    g_autofree char *need_text = size_text(need);
    g_autofree char *detail = NULL, *have = NULL, *fix = NULL;
    unsigned bits;
    guint64 window;

    fix = g_strdup_printf("<qemu:commandline><qemu:arg value='-fw_cfg'/>"
                          "<qemu:arg value='name=opt/ovmf/X-PciMmio64Mb,"
                          "string=%" G_GUINT64_FORMAT "'/></qemu:commandline>",
                          need >> 20);
    if (d->ovmf && d->ovmf_mmio64) {
        have = size_text(d->ovmf_mmio64);
        detail = g_strdup_printf("OVMF's 64-bit aperture is set to %s; the "
                                 "BARs need %s", have, need_text);
        item(c->r, d->ovmf_mmio64 >= need ? ITEM_OK : ITEM_FAIL,
             "firmware 64-bit aperture", detail, fix);
    } else if (d->ovmf) {
        bits = MIN(guest_phys_bits(c, &how), OVMF_MAX_PHYS_BITS);
        window = bits > 3 ? 1ULL << (bits - 3) : 0;
        have = size_text(window);
        detail = g_strdup_printf("OVMF sizes its aperture to %s from %u "
                                 "address bits; builds without the dynamic "
                                 "window keep 32 GiB; the BARs need %s",
                                 have, bits, need_text);
        item(c->r, window < need ? ITEM_FAIL :
             need > OVMF_FIXED_MMIO64 ? ITEM_WARN : ITEM_OK,
             "firmware 64-bit aperture", detail, fix);
    } else {
        item(c->r, ITEM_OK, "firmware 64-bit aperture",
             "SeaBIOS places 64-bit BARs above RAM without a fixed "
             "aperture", NULL);
    }
    g_free(detail);
    g_free(have);
    have = size_text(d->pcihole64 ? d->pcihole64 : Q35_DEFAULT_HOLE64);
    detail = g_strdup_printf("%s (%s); the BARs need %s", have,
                             d->pcihole64 ? "<pcihole64>" :
                             "QEMU's default, no <pcihole64>", need_text);
    item(c->r, (d->pcihole64 ? d->pcihole64 : Q35_DEFAULT_HOLE64) >= need ?
         ITEM_OK : d->pcihole64 ? ITEM_FAIL : ITEM_WARN,
         "pci-hole64", detail,
         "'gpup2p libvirt' sets <pcihole64> on the root controller");
}

/*
 * The domain's explicit clique ids, judged by the one check the hook and
 * `gpup2p libvirt` run (gp_domain_check_ids()): every way an id can be
 * given (overrides, -global in both spellings, the namespace declared
 * anywhere) counts.
 */
static void check_domain_ids(Check *c)
{
#ifdef GP_HAVE_LIBVIRT
    g_autofree gchar *xml = NULL;
    g_autoptr(GpDomain) d = NULL;
    g_autoptr(GError) err = NULL;

    if (!g_file_get_contents(c->dom->path, &xml, NULL, &err) ||
        !(d = gp_domain_parse(xml, c->dom->path, &err))) {
        item(c->r, ITEM_FAIL, "clique ids", err->message,
             "fix the domain XML");
        return;
    }
    if (!gp_domain_has_explicit_ids(d)) {
        item(c->r, ITEM_OK, "clique ids", "none set by the domain (auto, "
             "or none)", NULL);
        return;
    }
    if (!gp_domain_check_ids(d, c->topo, &err)) {
        item(c->r, ITEM_FAIL, "clique ids", err->message,
             "give those GPUs different ids, or let QEMU plan them "
             "(x-gpu-p2p-clique=auto)");
        return;
    }
    item(c->r, ITEM_OK, "clique ids", "every explicit id holds GPUs the "
         "host lets a guest pair", NULL);
#else
    (void)c;
#endif
}

static void check_domain(Check *c, guint64 need)
{
    check_domain_ids(c);
    check_domain_kvm(c);
    check_domain_address_bits(c, need);
    check_domain_firmware(c, need);
}

/* ---- the command ---- */

static GPtrArray *select_gpus(const GpTopology *topo, char **bdfs,
                              const Domain *dom, GError **errp)
{
    g_autoptr(GPtrArray) named = NULL;

    if (!bdfs && dom) {
        GPtrArray *out = g_ptr_array_new();
        guint i;

        for (i = 0; i < dom->hostdevs->len; i++) {
            const char *bdf = g_ptr_array_index(dom->hostdevs, i);
            GpDevice *dev = gp_topo_find(topo, bdf);

            if (!dev) {
                g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND,
                            "%s: hostdev %s is not on this host",
                            dom->path, bdf);
                g_ptr_array_free(out, TRUE);
                return NULL;
            }
            if (gp_device_is_gpu(dev)) {
                g_ptr_array_add(out, dev);
            }
        }
        return out;
    }
    return gp_cli_select(topo, bdfs, gp_device_is_nvidia_gpu, errp);
}

static int report_end(Report *r, bool with_domain)
{
    int status = r->fails ? GP_EXIT_NOT_READY :
                 r->untested ? GP_EXIT_UNTESTED : GP_EXIT_OK;

    json_builder_end_array(r->json);
    if (r->as_json) {
        g_autoptr(JsonNode) node = NULL;

        json_builder_set_member_name(r->json, "failed");
        json_builder_add_int_value(r->json, r->fails);
        json_builder_set_member_name(r->json, "warnings");
        json_builder_add_int_value(r->json, r->warns);
        json_builder_set_member_name(r->json, "untested");
        json_builder_add_int_value(r->json, r->untested);
        json_builder_set_member_name(r->json, "ready");
        json_builder_add_string_value(r->json, status == GP_EXIT_OK ? "yes" :
                                      status == GP_EXIT_NOT_READY ? "no" :
                                      "not fully checked");
        json_builder_end_object(r->json);
        node = json_builder_get_root(r->json);
        gp_cli_print_json(node);
    } else {
        if (!with_domain) {
            printf("(the VM's settings -- hidden KVM, address bits, "
                   "firmware aperture -- are checked with --domain)\n");
        }
        printf("%u failed, %u warnings, %u untested\n", r->fails, r->warns,
               r->untested);
    }
    return status;
}

int gp_cmd_check(int argc, char **argv)
{
    g_autofree char *root = NULL, *devices = NULL, *qemu = NULL;
    g_autofree char *domain = NULL;
    gboolean json = FALSE;
    GOptionEntry entries[] = {
        { "sysfs-root", 0, 0, G_OPTION_ARG_FILENAME, &root,
          "Read a captured host instead of /sys", "DIR" },
        { "devices", 0, 0, G_OPTION_ARG_STRING, &devices,
          "The GPUs to check (default: the domain's, else NVIDIA "
          "display-class devices)", "BDF,..." },
        { "domain", 0, 0, G_OPTION_ARG_FILENAME, &domain,
          "Also check this libvirt domain XML (its GPUs, <emulator>, "
          "firmware, address bits)", "FILE" },
        { "qemu", 0, 0, G_OPTION_ARG_FILENAME, &qemu,
          "The QEMU binary VMs use (default: the domain's <emulator>, "
          "else qemu-system-x86_64; none for a capture)", "PATH" },
        { "json", 0, 0, G_OPTION_ARG_NONE, &json, "JSON output", NULL },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("- is this host ready for GPU P2P in VMs?");
    g_autoptr(GError) err = NULL;
    g_autoptr(GpTopology) topo = NULL;
    g_autoptr(GPtrArray) gpus = NULL;
    g_autoptr(Domain) dom = NULL;
    g_auto(GStrv) bdfs = NULL;
    g_autoptr(JsonBuilder) jb = json_builder_new();
    Report r = { .json = jb, .as_json = json };
    Check c = { .r = &r };
    guint64 need;
    guint i;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!gp_cli_parse(ctx, &argc, &argv)) {
        return GP_EXIT_USAGE;
    }
    if (argc > 1) {
        return gp_cli_fail("check", GP_EXIT_USAGE,
                           "unexpected argument '%s'", argv[1]);
    }
    r.as_json = json;
    topo = gp_topo_read(root ? root : "/", &err);
    if (!topo || (domain && !(dom = domain_read(domain, &err)))) {
        return gp_cli_fail("check", GP_EXIT_FAILED, "%s", err->message);
    }
    bdfs = gp_cli_split_list(devices);
    gpus = select_gpus(topo, bdfs, dom, &err);
    if (!gpus) {
        return gp_cli_fail("check", GP_EXIT_FAILED, "%s", err->message);
    }
    c.topo = topo;
    c.gpus = gpus;
    c.captured = root != NULL;
    c.dom = dom;
    c.qemu = qemu ? qemu : dom && dom->emulator ? dom->emulator :
             root ? NULL : "qemu-system-x86_64";
    json_builder_begin_object(jb);
    json_builder_set_member_name(jb, "schema_version");
    json_builder_add_int_value(jb, GP_JSON_SCHEMA_VERSION);
    json_builder_set_member_name(jb, "items");
    json_builder_begin_array(jb);
    check_iommu(&c);
    check_interrupt_remapping(&c);
    {
        g_autofree char *found = g_strdup_printf("%u GPUs to check",
                                                 gpus->len);

        item(&r, gpus->len ? ITEM_OK : ITEM_WARN, "GPUs",
             gpus->len ? found : "no NVIDIA display-class device",
             "name the devices with --devices");
    }
    for (i = 0; i < gpus->len; i++) {
        check_gpu_binding(&c, g_ptr_array_index(gpus, i));
    }
    check_pairs(&c);
    check_helper(&c);
    check_qemu(&c);
    need = gp_devices_mmio64_size(gpus);
    check_mmio64(&c, need);
    if (dom) {
        check_domain(&c, need);
    }
    return report_end(&r, dom != NULL);
}
