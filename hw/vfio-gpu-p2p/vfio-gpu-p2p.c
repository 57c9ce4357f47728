/*
 * vfio-gpu-p2p: the NVIDIA P2P clique capability, computed from the host
 *
 * QEMU's x-nv-gpudirect-clique makes the operator pick a clique id and
 * trusts it. Here "auto" works the ids out from the host's PCI topology with
 * the vfio-gpu-p2p core library, explicit ids are checked against it, and
 * the capability is placed where no existing capability overlaps it, last
 * in the list.
 *
 * Copyright (c) vfio-gpu-p2p contributors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/util.h"
#include "qapi/visitor.h"
#include "qemu/cutils.h"
#include "qemu/error-report.h"
#include "qobject/qdict.h"
#include "qobject/qjson.h"
#include "qobject/qlist.h"
#include "qobject/qobject.h"
#include "qobject/qstring.h"
#include "hw/qdev-core.h"
#include "hw/pci/pci.h"
#include "system/system.h"
#include "hw/vfio/pci.h"
#include "gpup2p/p2pcap.h"
#include "gpup2p/plan.h"
#include "trace.h"

#define NO_CLIQUE (-1)
#define PENDING_CLIQUE (-2)

/* Every vfio-pci device of this VM with a clique setting other than off. */
static GPtrArray *gpu_p2p_devices;
static Notifier gpu_p2p_machine_done;

/*
 * Where pair verdicts come from: the live sysfs (complete only for root),
 * or a plan that `gpup2p plan --json` wrote as root.
 */
typedef struct HostSource {
    char *name;
    GpTopology *topo;
    GHashTable *links;          /* "a b" -> "direct" | "host-bridge" | ... */
    GHashTable *reasons;        /* "a b" -> reason */
} HostSource;

static HostSource *host_source;

/* ------------------------------------------------------------------ */
/* Properties                                                          */

static void get_clique(Object *obj, Visitor *v, const char *name,
                       void *opaque, Error **errp)
{
    const Property *prop = opaque;
    uint8_t *ptr = object_field_prop_ptr(obj, prop);
    g_autofree char *text = NULL;

    if (*ptr == VFIO_GPU_P2P_CLIQUE_OFF) {
        text = g_strdup("off");
    } else if (*ptr == VFIO_GPU_P2P_CLIQUE_AUTO) {
        text = g_strdup("auto");
    } else {
        text = g_strdup_printf("%u", *ptr - VFIO_GPU_P2P_CLIQUE_ID(0));
    }
    visit_type_str(v, name, &text, errp);
}

static void set_clique(Object *obj, Visitor *v, const char *name,
                       void *opaque, Error **errp)
{
    const Property *prop = opaque;
    uint8_t *ptr = object_field_prop_ptr(obj, prop);
    g_autofree char *text = NULL;
    uint64_t id;

    if (!visit_type_str(v, name, &text, errp)) {
        return;
    }
    if (!strcmp(text, "off")) {
        *ptr = VFIO_GPU_P2P_CLIQUE_OFF;
    } else if (!strcmp(text, "auto")) {
        *ptr = VFIO_GPU_P2P_CLIQUE_AUTO;
    } else if (!qemu_strtou64(text, NULL, 10, &id) &&
               id <= GP_P2PCAP_MAX_CLIQUE) {
        *ptr = VFIO_GPU_P2P_CLIQUE_ID(id);
    } else {
        error_setg(errp, "Property %s: '%s' is not off, auto or a clique "
                   "id 0-%d", name, text, GP_P2PCAP_MAX_CLIQUE);
    }
}

const PropertyInfo vfio_gpu_p2p_prop_clique = {
    .type = "str",
    .description = "NVIDIA P2P clique: off, auto (from the host "
                   "topology) or an id 0-15",
    .get = get_clique,
    .set = set_clique,
};

/*
 * String-valued enum properties kept in a uint8_t field; the names come
 * from the PropertyInfo's enum_table.
 */
void vfio_gpu_p2p_get_enum(Object *obj, Visitor *v, const char *name,
                           void *opaque, Error **errp)
{
    const Property *prop = opaque;
    uint8_t *ptr = object_field_prop_ptr(obj, prop);
    char *text = (char *)qapi_enum_lookup(prop->info->enum_table, *ptr);

    visit_type_str(v, name, &text, errp);
}

void vfio_gpu_p2p_set_enum(Object *obj, Visitor *v, const char *name,
                           void *opaque, Error **errp)
{
    const Property *prop = opaque;
    const QEnumLookup *table = prop->info->enum_table;
    uint8_t *ptr = object_field_prop_ptr(obj, prop);
    g_autofree char *text = NULL;
    g_autoptr(GString) names = g_string_new(NULL);
    int i;

    if (!visit_type_str(v, name, &text, errp)) {
        return;
    }
    i = qapi_enum_parse(table, text, -1, NULL);
    if (i >= 0) {
        *ptr = i;
        return;
    }
    for (i = 0; i < table->size; i++) {
        g_string_append_printf(names, "%s%s", i ? (i + 1 == table->size ?
                               " or " : ", ") : "", table->array[i]);
    }
    error_setg(errp, "Property %s: '%s' is not %s", name, text, names->str);
}

static const QEnumLookup verify_lookup = {
    .array = (const char *const[]) {
        [VFIO_GPU_P2P_VERIFY_REFUSE] = "refuse",
        [VFIO_GPU_P2P_VERIFY_WARN] = "warn",
        [VFIO_GPU_P2P_VERIFY_TRUST] = "trust",
    },
    .size = VFIO_GPU_P2P_VERIFY_TRUST + 1,
};

const PropertyInfo vfio_gpu_p2p_prop_verify = {
    .type = "str",
    .description = "What an explicit clique id the host topology "
                   "contradicts gets: refuse (default), warn or trust",
    .enum_table = &verify_lookup,
    .get = vfio_gpu_p2p_get_enum,
    .set = vfio_gpu_p2p_set_enum,
};

static void get_id_in_effect(Object *obj, Visitor *v, const char *name,
                             void *opaque, Error **errp)
{
    VFIOPCIDevice *vdev = VFIO_PCI(obj);
    int64_t id = vdev->gpu_p2p.id_in_effect;

    visit_type_int(v, name, &id, errp);
}

static char *get_source(Object *obj, Error **errp)
{
    VFIOPCIDevice *vdev = VFIO_PCI(obj);

    return g_strdup(vdev->gpu_p2p.source ? vdev->gpu_p2p.source : "");
}

void vfio_gpu_p2p_class_init(ObjectClass *klass)
{
    object_class_property_add(klass, "x-gpu-p2p-clique-in-effect", "int",
                              get_id_in_effect, NULL, NULL, NULL);
    object_class_property_set_description(klass,
        "x-gpu-p2p-clique-in-effect",
        "The P2P clique id the guest sees, -1 for none (read-only)");
    object_class_property_add_str(klass, "x-gpu-p2p-source", get_source,
                                  NULL);
    object_class_property_set_description(klass, "x-gpu-p2p-source",
        "Where the host topology for x-gpu-p2p-clique came from (read-only)");
    object_class_property_set_description(klass, "x-gpu-p2p-audit",
        "Check with the gpup2p helper that this device's BARs are mapped "
        "for every other assigned device, and warn where not");
    object_class_property_set_description(klass, "x-gpu-p2p-host-plan",
        "A clique plan written by 'gpup2p plan --json' as root, for a "
        "QEMU that cannot read all of sysfs");
}

/* ------------------------------------------------------------------ */
/* Host topology sources                                               */

static void host_source_free(HostSource *s)
{
    if (!s) {
        return;
    }
    g_free(s->name);
    gp_topo_free(s->topo);
    if (s->links) {
        g_hash_table_destroy(s->links);
        g_hash_table_destroy(s->reasons);
    }
    g_free(s);
}

static char *pair_key(const char *a, const char *b)
{
    return strcmp(a, b) < 0 ? g_strdup_printf("%s %s", a, b) :
                              g_strdup_printf("%s %s", b, a);
}

static HostSource *host_source_from_plan(const char *path, Error **errp)
{
    g_autofree char *text = NULL;
    g_autoptr(GError) gerr = NULL;
    QObject *obj;
    HostSource *s;
    QDict *top;
    QList *links;
    QListEntry *e;

    if (!g_file_get_contents(path, &text, NULL, &gerr)) {
        error_setg(errp, "x-gpu-p2p-host-plan: %s", gerr->message);
        return NULL;
    }
    obj = qobject_from_json(text, errp);
    if (!obj) {
        error_prepend(errp, "x-gpu-p2p-host-plan: %s: ", path);
        return NULL;
    }
    top = qobject_to(QDict, obj);
    links = top ? qdict_get_qlist(top, "links") : NULL;
    if (!links) {
        error_setg(errp, "x-gpu-p2p-host-plan: %s: no \"links\" array; "
                   "write it with 'gpup2p plan --json'", path);
        qobject_unref(obj);
        return NULL;
    }
    s = g_new0(HostSource, 1);
    s->name = g_strdup_printf("plan %s", path);
    s->links = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    s->reasons = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                       g_free);
    QLIST_FOREACH_ENTRY(links, e) {
        QDict *l = qobject_to(QDict, qlist_entry_obj(e));
        const char *a = l ? qdict_get_try_str(l, "a") : NULL;
        const char *b = l ? qdict_get_try_str(l, "b") : NULL;
        const char *p2p = l ? qdict_get_try_str(l, "p2p") : NULL;
        const char *why = l ? qdict_get_try_str(l, "reason") : NULL;

        if (!a || !b || !p2p) {
            error_setg(errp, "x-gpu-p2p-host-plan: %s: a link lacks a, b "
                       "or p2p", path);
            host_source_free(s);
            qobject_unref(obj);
            return NULL;
        }
        g_hash_table_insert(s->links, pair_key(a, b), g_strdup(p2p));
        g_hash_table_insert(s->reasons, pair_key(a, b),
                            g_strdup(why ? why : ""));
    }
    qobject_unref(obj);
    return s;
}

static HostSource *host_source_get(const char *plan_path, Error **errp)
{
    g_autoptr(GError) gerr = NULL;
    HostSource *s;

    if (host_source) {
        if (plan_path && !g_str_has_suffix(host_source->name, plan_path)) {
            error_setg(errp, "x-gpu-p2p-host-plan: '%s' differs from the "
                       "host topology already in use (%s)", plan_path,
                       host_source->name);
            return NULL;
        }
        return host_source;
    }
    if (plan_path) {
        s = host_source_from_plan(plan_path, errp);
        if (!s) {
            return NULL;
        }
    } else {
        s = g_new0(HostSource, 1);
        s->topo = gp_topo_read("/", &gerr);
        if (!s->topo) {
            error_setg(errp, "x-gpu-p2p-clique: reading the host's sysfs: "
                       "%s", gerr->message);
            g_free(s);
            return NULL;
        }
        s->name = g_strdup("sysfs");
    }
    host_source = s;
    return s;
}

/*
 * Whether two host devices may share a clique: 1 yes, 0 no, -1 the source
 * cannot tell (with @why saying what is missing).
 */
static int host_pair(HostSource *s, const char *a, const char *b,
                     char **why)
{
    g_autofree char *key = NULL;
    const char *p2p;

    if (s->topo) {
        GpDevice *da = gp_topo_find(s->topo, a);
        GpDevice *db = gp_topo_find(s->topo, b);
        GpP2pVerdict v;
        int res;

        if (!da || !db) {
            *why = g_strdup_printf("%s is not in the host's sysfs",
                                   da ? b : a);
            return -1;
        }
        gp_p2p_verdict(s->topo, da, db, &v);
        res = v.kind == GP_P2P_UNKNOWN ? -1 : gp_p2p_possible(v.kind);
        *why = g_steal_pointer(&v.reason);
        gp_p2p_verdict_clear(&v);
        return res;
    }
    key = pair_key(a, b);
    p2p = g_hash_table_lookup(s->links, key);
    if (!p2p) {
        *why = g_strdup_printf("the plan has no link %s", key);
        return -1;
    }
    *why = g_strdup(g_hash_table_lookup(s->reasons, key));
    if (!strcmp(p2p, "unknown")) {
        return -1;
    }
    return !strcmp(p2p, "direct") || !strcmp(p2p, "host-bridge");
}

/* ------------------------------------------------------------------ */
/* Clique assignment                                                   */

static const char *host_name(VFIOPCIDevice *vdev)
{
    return vdev->vbasedev.name;
}

static bool is_auto(VFIOPCIDevice *vdev)
{
    return vdev->gpu_p2p.clique == VFIO_GPU_P2P_CLIQUE_AUTO;
}

static int explicit_id(VFIOPCIDevice *vdev)
{
    return vdev->gpu_p2p.clique - VFIO_GPU_P2P_CLIQUE_ID(0);
}

static const char *plan_path_of(GPtrArray *devs)
{
    guint i;

    for (i = 0; i < devs->len; i++) {
        VFIOPCIDevice *d = g_ptr_array_index(devs, i);

        if (d->gpu_p2p.host_plan) {
            return d->gpu_p2p.host_plan;
        }
    }
    return NULL;
}

typedef struct PairCtx {
    HostSource *src;
    GPtrArray *devs;
    int8_t *matrix;             /* n x n: 1, 0, or -1 unknown */
} PairCtx;

static bool pair_allowed(unsigned i, unsigned j, void *opaque)
{
    PairCtx *c = opaque;

    return c->matrix[i * c->devs->len + j] == 1;
}

static bool fill_matrix(PairCtx *c, Error **errp)
{
    guint n = c->devs->len, i, j;

    for (i = 0; i < n; i++) {
        for (j = i + 1; j < n; j++) {
            VFIOPCIDevice *a = g_ptr_array_index(c->devs, i);
            VFIOPCIDevice *b = g_ptr_array_index(c->devs, j);
            g_autofree char *why = NULL;
            int r = host_pair(c->src, host_name(a), host_name(b), &why);

            trace_vfio_gpu_p2p_pair(host_name(a), host_name(b), r, why);
            if (r < 0) {
                error_setg(errp, "x-gpu-p2p-clique=auto: the host topology "
                           "(%s) is incomplete for %s and %s: %s",
                           c->src->name, host_name(a), host_name(b), why);
                error_append_hint(errp, "Run QEMU where it can read the "
                                  "extended config space in sysfs (root), "
                                  "or give x-gpu-p2p-host-plan= a plan "
                                  "written as root by "
                                  "'gpup2p plan --devices ... --json'.\n");
                return false;
            }
            c->matrix[i * n + j] = c->matrix[j * n + i] = r;
        }
    }
    return true;
}

/* Mark the capability placed at realize absent: it is last in the list. */
static void unlink_cap(VFIOPCIDevice *vdev)
{
    PCIDevice *pdev = &vdev->pdev;
    int off = vdev->gpu_p2p.cap_offset;
    uint8_t *p = &pdev->config[PCI_CAPABILITY_LIST];
    int guard = 0;

    while (*p && *p != off && guard++ < 64) {
        p = &pdev->config[*p + PCI_CAP_LIST_NEXT];
    }
    if (*p == off) {
        *p = 0;
    }
    memset(pdev->config + off, 0, GP_P2PCAP_LENGTH);
    vdev->gpu_p2p.cap_offset = -1;
}

static void set_cap_clique(VFIOPCIDevice *vdev, int id, const char *how)
{
    PCIDevice *pdev = &vdev->pdev;
    int off = vdev->gpu_p2p.cap_offset;

    vdev->gpu_p2p.id_in_effect = id;
    if (id < 0) {
        trace_vfio_gpu_p2p_no_clique(host_name(vdev), how);
        if (off >= 0) {
            unlink_cap(vdev);
        }
        return;
    }
    pdev->config[off + 6] = (uint8_t)((id & 0xf) << 3 | GP_P2PCAP_VERSION);
    trace_vfio_gpu_p2p_clique(host_name(vdev), id, how);
    trace_vfio_gpu_p2p_cap(host_name(vdev), id, off);
}

/* Explicit ids: every other device with the same id must be a P2P peer. */
static bool verify_explicit(VFIOPCIDevice *vdev, Error **errp)
{
    ERRP_GUARD();
    VFIOGpuP2P *p = &vdev->gpu_p2p;
    HostSource *src;
    Error *local = NULL;
    guint i;

    if (p->verify == VFIO_GPU_P2P_VERIFY_TRUST) {
        return true;
    }
    src = host_source_get(p->host_plan, &local);
    if (src) {
        g_free(p->source);
        p->source = g_strdup(src->name);
        trace_vfio_gpu_p2p_source(host_name(vdev), src->name);
    }
    for (i = 0; src && i < gpu_p2p_devices->len; i++) {
        VFIOPCIDevice *o = g_ptr_array_index(gpu_p2p_devices, i);
        g_autofree char *why = NULL;
        int r;

        if (o == vdev || o->gpu_p2p.id_in_effect != explicit_id(vdev)) {
            continue;
        }
        r = host_pair(src, host_name(vdev), host_name(o), &why);
        trace_vfio_gpu_p2p_pair(host_name(vdev), host_name(o), r, why);
        if (r == 1) {
            continue;
        }
        error_setg(&local, "x-gpu-p2p-clique=%d: %s and %s %s: %s",
                   explicit_id(vdev), host_name(vdev), host_name(o),
                   r == 0 ? "cannot do P2P on the host" :
                   "cannot be checked against the host", why);
        break;
    }
    if (!local) {
        return true;
    }
    if (p->verify == VFIO_GPU_P2P_VERIFY_WARN) {
        warn_report_err(local);
        return true;
    }
    error_propagate(errp, local);
    error_append_hint(errp, "Set x-gpu-p2p-verify=warn or trust to use the "
                      "id anyway.\n");
    return false;
}

static bool assign_cold(Error **errp)
{
    g_autoptr(GPtrArray) autos = g_ptr_array_new();
    g_autofree int8_t *matrix = NULL;
    g_autofree int *ids = NULL;
    g_autoptr(GError) gerr = NULL;
    HostSource *src;
    PairCtx ctx;
    guint i;

    for (i = 0; i < gpu_p2p_devices->len; i++) {
        VFIOPCIDevice *d = g_ptr_array_index(gpu_p2p_devices, i);

        if (is_auto(d)) {
            g_ptr_array_add(autos, d);
        } else {
            d->gpu_p2p.id_in_effect = explicit_id(d);
        }
    }
    for (i = 0; i < gpu_p2p_devices->len; i++) {
        VFIOPCIDevice *d = g_ptr_array_index(gpu_p2p_devices, i);

        if (!is_auto(d) && !verify_explicit(d, errp)) {
            return false;
        }
    }
    if (!autos->len) {
        return true;
    }
    src = host_source_get(plan_path_of(autos), errp);
    if (!src) {
        return false;
    }
    matrix = g_new0(int8_t, autos->len * autos->len);
    ctx = (PairCtx){ src, autos, matrix };
    if (!fill_matrix(&ctx, errp)) {
        return false;
    }
    ids = g_new(int, autos->len);
    if (gp_plan_group(autos->len, pair_allowed, &ctx, ids, &gerr) < 0) {
        error_setg(errp, "x-gpu-p2p-clique=auto: %s", gerr->message);
        return false;
    }
    for (i = 0; i < autos->len; i++) {
        VFIOPCIDevice *d = g_ptr_array_index(autos, i);

        g_free(d->gpu_p2p.source);
        d->gpu_p2p.source = g_strdup(src->name);
        trace_vfio_gpu_p2p_source(host_name(d), src->name);
        set_cap_clique(d, ids[i], ids[i] >= 0 ? "auto" :
                       "no P2P peer among this VM's devices");
    }
    return true;
}

/* A hot-plugged device joins the clique its host position gives it. */
static int assign_hotplug_auto(VFIOPCIDevice *vdev, Error **errp)
{
    HostSource *src = host_source_get(vdev->gpu_p2p.host_plan, errp);
    int id, best = NO_CLIQUE;
    guint i;

    if (!src) {
        return PENDING_CLIQUE;
    }
    g_free(vdev->gpu_p2p.source);
    vdev->gpu_p2p.source = g_strdup(src->name);
    trace_vfio_gpu_p2p_source(host_name(vdev), src->name);
    for (id = 0; id <= GP_P2PCAP_MAX_CLIQUE && best < 0; id++) {
        bool members = false, all = true;

        for (i = 0; i < gpu_p2p_devices->len && all; i++) {
            VFIOPCIDevice *o = g_ptr_array_index(gpu_p2p_devices, i);
            g_autofree char *why = NULL;
            int r;

            if (o == vdev || o->gpu_p2p.id_in_effect != id) {
                continue;
            }
            members = true;
            r = host_pair(src, host_name(vdev), host_name(o), &why);
            trace_vfio_gpu_p2p_pair(host_name(vdev), host_name(o), r, why);
            if (r < 0) {
                error_setg(errp, "x-gpu-p2p-clique=auto: the host topology "
                           "(%s) is incomplete for %s and %s: %s", src->name,
                           host_name(vdev), host_name(o), why);
                return PENDING_CLIQUE;
            }
            all = r == 1;
        }
        if (members && all) {
            best = id;
        }
    }
    return best;
}

static void machine_done(Notifier *notifier, void *data)
{
    Error *err = NULL;

    if (!assign_cold(&err)) {
        error_report_err(err);
        exit(1);
    }
}

/*
 * Called from vfio_add_virt_caps(), while the emulated capability list is
 * still empty: what is added now ends up last in the list. The slot is
 * chosen against the device's own list by each capability's real length.
 */
bool vfio_gpu_p2p_realize(VFIOPCIDevice *vdev, Error **errp)
{
    ERRP_GUARD();
    VFIOGpuP2P *p = &vdev->gpu_p2p;
    PCIDevice *pdev = &vdev->pdev;
    g_autoptr(GError) gerr = NULL;
    GpPciConfig cfg;
    uint16_t off;
    uint8_t head;
    int id;

    p->id_in_effect = NO_CLIQUE;
    p->cap_offset = -1;
    if (p->clique == VFIO_GPU_P2P_CLIQUE_OFF) {
        return true;
    }
    if (vdev->nv_gpudirect_clique != 0xFF) {
        error_setg(errp, "x-gpu-p2p-clique and x-nv-gpudirect-clique "
                   "cannot be used together");
        return false;
    }
    if (!vfio_pci_is(vdev, PCI_VENDOR_ID_NVIDIA, PCI_ANY_ID)) {
        error_setg(errp, "x-gpu-p2p-clique: %s is not an NVIDIA device "
                   "(vendor %04x as the guest sees it)", host_name(vdev),
                   vdev->vendor_id);
        return false;
    }
    if (pci_get_byte(pdev->config + PCI_CLASS_DEVICE + 1) !=
        PCI_BASE_CLASS_DISPLAY) {
        error_setg(errp, "x-gpu-p2p-clique: %s is not a display-class "
                   "device (class %04x)", host_name(vdev),
                   pci_get_word(pdev->config + PCI_CLASS_DEVICE));
        return false;
    }

    /* The emulated list head is cleared by now; the device's is not. */
    if (pread(vdev->vbasedev.fd, &head, 1,
              vdev->config_offset + PCI_CAPABILITY_LIST) != 1) {
        error_setg_errno(errp, errno, "x-gpu-p2p-clique: %s: reading the "
                         "capability list", host_name(vdev));
        return false;
    }
    gp_pcicfg_init(&cfg, pdev->config, PCI_CONFIG_SPACE_SIZE);
    cfg.bytes[PCI_CAPABILITY_LIST] = head;
    cfg.bytes[PCI_STATUS] |= PCI_STATUS_CAP_LIST;
    if (!gp_p2pcap_choose_offset(&cfg, &off, &gerr)) {
        error_setg(errp, "x-gpu-p2p-clique: %s: %s", host_name(vdev),
                   gerr->message);
        return false;
    }

    if (!gpu_p2p_devices) {
        gpu_p2p_devices = g_ptr_array_new();
    }
    if (!phase_check(PHASE_MACHINE_READY)) {
        /* Cold plug: the ids are planned once every device is known. */
        if (!gpu_p2p_machine_done.notify) {
            gpu_p2p_machine_done.notify = machine_done;
            qemu_add_machine_init_done_notifier(&gpu_p2p_machine_done);
        }
        id = is_auto(vdev) ? PENDING_CLIQUE : explicit_id(vdev);
    } else if (is_auto(vdev)) {
        id = assign_hotplug_auto(vdev, errp);
        if (id == PENDING_CLIQUE) {
            return false;
        }
        if (id < 0) {
            trace_vfio_gpu_p2p_no_clique(host_name(vdev),
                                         "no clique of this VM takes it");
            g_ptr_array_add(gpu_p2p_devices, vdev);
            p->registered = true;
            return true;
        }
    } else {
        id = explicit_id(vdev);
        p->id_in_effect = id;
        if (!verify_explicit(vdev, errp)) {
            p->id_in_effect = NO_CLIQUE;
            return false;
        }
    }

    if (pci_add_capability(pdev, PCI_CAP_ID_VNDR, off, GP_P2PCAP_LENGTH,
                           errp) < 0) {
        error_prepend(errp, "x-gpu-p2p-clique: %s: ", host_name(vdev));
        return false;
    }
    gp_p2pcap_encode(pdev->config + off, id < 0 ? 0 : id, 0);
    /* Emulated: the guest reads these bytes, and wmask 0 drops writes. */
    memset(vdev->emulated_config_bits + off, 0xff, GP_P2PCAP_LENGTH);
    p->cap_offset = off;
    g_ptr_array_add(gpu_p2p_devices, vdev);
    p->registered = true;
    if (id >= 0) {
        set_cap_clique(vdev, id, is_auto(vdev) ? "auto, hot-plugged" :
                       "explicit");
    }
    return true;
}

void vfio_gpu_p2p_exit(VFIOPCIDevice *vdev)
{
    vfio_gpu_p2p_mapper_exit(vdev);
    if (vdev->gpu_p2p.registered) {
        g_ptr_array_remove(gpu_p2p_devices, vdev);
        vdev->gpu_p2p.registered = false;
    }
    g_clear_pointer(&vdev->gpu_p2p.source, g_free);
    if (gpu_p2p_devices && !gpu_p2p_devices->len &&
        phase_check(PHASE_MACHINE_READY)) {
        /* A later hot-plug reads the host afresh. */
        g_clear_pointer(&host_source, host_source_free);
    }
}
