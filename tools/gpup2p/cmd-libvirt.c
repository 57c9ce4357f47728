/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `gpup2p libvirt`: add the P2P clique settings for a domain's GPU
 * hostdevs, size the 64-bit PCI hole for their BARs, and warn about what
 * breaks P2P in the guest or keeps an unprivileged QEMU from starting;
 * or, with --check (the libvirt hook), refuse a domain whose explicit
 * clique ids the host contradicts. Reads a file, standard input or a
 * domain on a libvirt connection; writes standard output, the file
 * (atomically) or the connection.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpup2p/output.h"
#include "bar-gate-front.h"
#include "cli.h"
#include "libvirt-domain.h"
#include "libvirt-mirror.h"

typedef struct {
    char *root;                 /* --sysfs-root */
    char *snapshot;             /* --host-snapshot, for QEMU */
    char *emulator;
    char *nccl_topo;            /* --nccl-topo, with --mirror */
    gboolean stock, qemu_auto, check, in_place, define, diff, mirror;
    GpPlanPolicy policy;
} LibvirtOpts;

/*
 * libvirt's client library, loaded only when a command names a
 * connection, so that the rest of gpup2p runs where libvirt is absent.
 */
typedef struct {
    void *handle;
    __typeof__(virConnectOpen) *connect_open;
    __typeof__(virConnectClose) *connect_close;
    __typeof__(virDomainLookupByName) *lookup_by_name;
    __typeof__(virDomainGetXMLDesc) *get_xml_desc;
    __typeof__(virDomainDefineXML) *define_xml;
    __typeof__(virDomainFree) *domain_free;
    __typeof__(virGetLastError) *last_error;
} VirtLib;

#define LIBVIRT_SONAME "libvirt.so.0"

static bool virt_load(VirtLib *v, GError **errp)
{
    const struct {
        const char *name;
        void **slot;
    } syms[] = {
        { "virConnectOpen", (void **)&v->connect_open },
        { "virConnectClose", (void **)&v->connect_close },
        { "virDomainLookupByName", (void **)&v->lookup_by_name },
        { "virDomainGetXMLDesc", (void **)&v->get_xml_desc },
        { "virDomainDefineXML", (void **)&v->define_xml },
        { "virDomainFree", (void **)&v->domain_free },
        { "virGetLastError", (void **)&v->last_error },
    };
    size_t i;

    v->handle = dlopen(LIBVIRT_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!v->handle) {
        g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND, "--connect needs "
                    "libvirt's client library (Debian package libvirt0): "
                    "%s", dlerror());
        return false;
    }
    for (i = 0; i < G_N_ELEMENTS(syms); i++) {
        *syms[i].slot = dlsym(v->handle, syms[i].name);
        if (!*syms[i].slot) {
            g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND, "%s lacks %s",
                        LIBVIRT_SONAME, syms[i].name);
            return false;
        }
    }
    return true;
}

static const char *virt_error(const VirtLib *v, const char *fallback)
{
    const virError *e = v->last_error ? v->last_error() : NULL;

    return e && e->message ? e->message : fallback;
}

/* A domain read from a libvirt connection, kept open to define it back. */
typedef struct {
    VirtLib lib;
    virConnectPtr conn;
    virDomainPtr dom;
} VirtConnection;

static char *virt_read_domain(VirtConnection *s, const char *uri,
                              const char *domain, GError **errp)
{
    char *xml = NULL;

    if (!virt_load(&s->lib, errp)) {
        return NULL;
    }
    s->conn = s->lib.connect_open(uri);
    if (!s->conn || !(s->dom = s->lib.lookup_by_name(s->conn, domain)) ||
        !(xml = s->lib.get_xml_desc(s->dom, VIR_DOMAIN_XML_INACTIVE))) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: %s", domain,
                    virt_error(&s->lib, "cannot read the domain"));
        return NULL;
    }
    return xml;
}

static void virt_connection_close(VirtConnection *s)
{
    if (s->dom) {
        s->lib.domain_free(s->dom);
    }
    if (s->conn) {
        s->lib.connect_close(s->conn);
    }
    if (s->lib.handle) {
        dlclose(s->lib.handle);
    }
}

static char *read_stream(FILE *f, const char *name, GError **errp)
{
    g_autoptr(GString) s = g_string_new(NULL);
    char buf[65536];
    size_t n;

    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
        g_string_append_len(s, buf, (gssize)n);
    }
    if (ferror(f)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: reading: %s", name,
                    g_strerror(errno));
        return NULL;
    }
    return g_string_free(g_steal_pointer(&s), FALSE);
}

static bool write_atomic(const char *path, const char *data, GError **errp)
{
    return gp_output_write(path, data, -1, 0644, errp);
}

static bool write_temp(const char *text, char **path, GError **errp)
{
    int fd = g_file_open_tmp("gpup2p-XXXXXX.xml", path, errp);
    size_t len = strlen(text);
    bool ok;

    if (fd < 0) {
        return false;
    }
    ok = write(fd, text, len) == (ssize_t)len;
    if (close(fd) < 0 || !ok) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: writing: %s", *path,
                    g_strerror(errno));
        return false;
    }
    return true;
}

/* A unified diff of the two documents, both canonicalised first. */
static bool print_diff(const char *old, const char *new_, const char *name,
                       GError **errp)
{
    g_autofree char *a = gp_xml_canonical(old, name, errp);
    g_autofree char *b = a ? gp_xml_canonical(new_, name, errp) : NULL;
    g_autofree char *pa = NULL, *pb = NULL, *out = NULL;
    g_autofree char *label_b = g_strdup_printf("%s (gpup2p)", name);
    int status;
    bool ok = false;

    if (!b || !write_temp(a, &pa, errp) || !write_temp(b, &pb, errp)) {
        goto out;
    }
    {
        const char *argv[] = { "diff", "-u", "--label", name, "--label",
                               label_b, pa, pb, NULL };

        if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH,
                          NULL, NULL, &out, NULL, &status, errp)) {
            goto out;
        }
    }
    /* diff exits 0 for no difference, 1 for some, 2 for trouble. */
    if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "diff failed on %s", name);
        goto out;
    }
    fputs(out, stdout);
    ok = true;
out:
    if (pa) {
        unlink(pa);
    }
    if (pb) {
        unlink(pb);
    }
    return ok;
}

static void warn(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static void warn(const char *fmt, ...)
{
    va_list ap;

    fputs("gpup2p libvirt: warning: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void warn_split_groups(const GpDomain *d, const GpTopology *topo)
{
    guint i, j, k;

    for (i = 0; i < d->gpus->len; i++) {
        const GpDomainHostdev *g = g_ptr_array_index(d->gpus, i);

        for (j = 0; j < topo->devices->len && g->dev->iommu_group >= 0;
             j++) {
            const GpDevice *o = g_ptr_array_index(topo->devices, j);
            bool assigned = false;

            if (o == g->dev || o->is_bridge ||
                o->iommu_group != g->dev->iommu_group) {
                continue;
            }
            for (k = 0; k < d->hostdevs->len; k++) {
                const GpDomainHostdev *h = g_ptr_array_index(d->hostdevs, k);

                assigned = assigned || h->dev == o;
            }
            if (!assigned) {
                warn("IOMMU group %d of %s also holds %s, which this domain "
                     "does not assign: the group is split across VMs or the "
                     "host", g->dev->iommu_group, g->dev->bdf, o->bdf);
            }
        }
    }
}

/*
 * libvirt runs QEMU as libvirt-qemu, which reads 64 bytes of each
 * device's config space: auto then needs the host snapshot, and without
 * it QEMU starts the guest with no clique. Say so now.
 */
static void warn_unprivileged(const LibvirtOpts *o, bool stock,
                              const GpDomain *d)
{
    const char *path = o->snapshot ? o->snapshot : GP_HOST_SNAPSHOT;
    g_autoptr(GpTopology) snap = NULL;
    g_autoptr(GError) err = NULL;
    guint i, j;

    if (stock || !gp_domain_qemu_unprivileged(d)) {
        return;
    }
    if (!g_file_test(path, G_FILE_TEST_IS_DIR)) {
        warn("%s does not exist: QEMU, unprivileged under libvirt, cannot "
             "read the host's topology, so x-gpu-p2p-clique=auto gives the "
             "GPUs no clique; enable gpup2p-host-topology.service", path);
        return;
    }
    snap = gp_topo_read(path, &err);
    if (!snap) {
        warn("the host snapshot is unreadable, so x-gpu-p2p-clique=auto "
             "gives the GPUs no clique: %s", err->message);
        return;
    }
    for (i = 0; i < d->gpus->len; i++) {
        const GpDomainHostdev *a = g_ptr_array_index(d->gpus, i);
        const GpDevice *sa = gp_topo_find(snap, a->bdf);

        if (!sa) {
            warn("%s is not in the host snapshot %s (taken before it was "
                 "added?): x-gpu-p2p-clique=auto gives it no clique",
                 a->bdf, path);
            continue;
        }
        for (j = i + 1; j < d->gpus->len; j++) {
            const GpDomainHostdev *b = g_ptr_array_index(d->gpus, j);
            const GpDevice *sb = gp_topo_find(snap, b->bdf);
            GpP2pVerdict v;

            if (!sb) {
                continue;
            }
            gp_p2p_verdict(snap, sa, sb, &v);
            if (v.vm_kind == GP_VM_P2P_UNKNOWN) {
                warn("the host snapshot %s cannot decide %s and %s (%s; "
                     "was it taken as root?): x-gpu-p2p-clique=auto gives "
                     "them no clique", path, a->bdf, b->bdf, v.vm_reason);
            }
            gp_p2p_verdict_clear(&v);
        }
    }
}

static void warn_left_out(const GpPlan *plan)
{
    guint i;

    for (i = 0; i < plan->left_out->len; i++) {
        const GpPlanLeftOut *l = g_ptr_array_index(plan->left_out, i);

        warn("%s gets no clique id, so the guest will not use P2P with it: "
             "%s", l->device->bdf, l->reason);
    }
}

/*
 * Without --qemu-stock or --qemu-default-auto: what the domain's emulator
 * (after set_emulator()) accepts decides. Ours: auto. Upstream's only:
 * fixed ids from this host's plan, as --qemu-stock writes. Neither (or a
 * binary that cannot be asked): refused, as QEMU would refuse the domain.
 */
static bool emulator_wants_stock(const GpDomain *d, bool *stock,
                                 GError **errp)
{
    g_autofree char *em = gp_domain_emulator(d);
    const char *qemu = em ? em : "qemu-system-x86_64";
    unsigned props;

    if (!gp_qemu_vfio_props(qemu, &props, errp)) {
        g_prefix_error(errp, "the domain's emulator cannot be asked what it "
                       "accepts: ");
        return false;
    }
    if (props & GP_QEMU_CLIQUE_AUTO) {
        *stock = false;
        return true;
    }
    if (props & GP_QEMU_CLIQUE_STOCK) {
        warn("%s has no x-gpu-p2p-clique (not the gpup2p-qemu build): "
             "writing upstream's x-nv-gpudirect-clique, with ids planned "
             "from this host", qemu);
        *stock = true;
        return true;
    }
    g_set_error(errp, GP_ERROR, GP_ERROR_UNSUPPORTED, "%s offers neither "
                "x-gpu-p2p-clique nor x-nv-gpudirect-clique on vfio-pci: "
                "install gpup2p-qemu, or name a QEMU with --emulator", qemu);
    return false;
}

/*
 * --qemu-default-auto: auto is the default of the extension's machine
 * type only (plain q35 keeps off). q35, and pc-q35-10.0 (the version it
 * extends), become it; any other type is refused rather than changed to
 * another chipset or version, which would change the guest's ABI.
 */
static bool set_machine_auto(GpDomain *d, GError **errp)
{
    static const struct {
        const char *from, *to;
    } types[] = {
        { "q35", "q35-gpup2p" },
        { "pc-q35-10.0", "pc-q35-10.0-gpup2p" },
    };
    g_autofree char *machine = gp_domain_machine(d);
    size_t i;

    if (gp_machine_defaults_auto(machine)) {
        return true;
    }
    for (i = 0; machine && i < G_N_ELEMENTS(types); i++) {
        if (!strcmp(machine, types[i].from)) {
            warn("machine type %s set to %s: x-gpu-p2p-clique defaults to "
                 "auto only there (--qemu-default-auto)", machine,
                 types[i].to);
            gp_domain_set_machine(d, types[i].to);
            return true;
        }
    }
    g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s: --qemu-default-auto "
                "needs the machine type q35-gpup2p (x-gpu-p2p-clique "
                "defaults to auto only there), and the domain's is '%s': "
                "set <type machine='q35-gpup2p'> yourself (a change of "
                "guest ABI), or leave out --qemu-default-auto", d->name,
                machine ? machine : "not named");
    return false;
}

/* Whether the BAR gate proves @h's BARs will not be mapped for peers. */
static bool gated(const GPtrArray *gates, const GpDomainHostdev *h)
{
    const GpBarGate *g = gp_front_gate_of(gates, h->dev);

    return g && g->verdict == GP_BAR_GATE_NOT_MAPPED;
}

/*
 * Our QEMU refuses such an id where its own gate finds the BARs unmapped
 * (x-gpu-p2p-verify=refuse, the default): the domain does not start.
 * Upstream's x-nv-gpudirect-clique is not gated: its capability stays.
 */
static bool refused_by_our_qemu(const GpDomainHostdev *h)
{
    return h->explicit_id >= 0 && h->id_property &&
           !strcmp(h->id_property, "x-gpu-p2p-clique") && !h->verify_relaxed;
}

/*
 * Our QEMU: auto everywhere but on a GPU whose BARs will not be mapped
 * for its peers, which gets x-gpu-p2p-clique=off (also over the machine
 * type's auto default). The operator's explicit ids are kept.
 */
static bool set_ours(const LibvirtOpts *o, GpDomain *d,
                     const GPtrArray *gates, GError **errp)
{
    guint i;

    if (o->qemu_auto) {
        if (!set_machine_auto(d, errp)) {   /* QEMU's default is auto */
            return false;
        }
    } else {
        gp_domain_set_auto(d, o->snapshot);
    }
    for (i = 0; i < d->gpus->len; i++) {
        GpDomainHostdev *h = g_ptr_array_index(d->gpus, i);

        if (h->explicit_id < 0 && gated(gates, h)) {
            gp_domain_set_off(d, h);
        }
    }
    return true;
}

/* The clique settings: fixed ids, auto through overrides, or nothing;
 * none where the BAR gate proves a GPU's BARs will not be mapped. */
static bool set_cliques(const LibvirtOpts *o, bool stock, GpDomain *d,
                        const GpTopology *topo, const GPtrArray *gates,
                        GError **errp)
{
    g_autoptr(GpPlan) plan = NULL;
    g_autofree const char **bdfs = NULL;
    guint i, n = 0;

    if (!stock) {
        return set_ours(o, d, gates, errp);
    }
    /*
     * The operator's explicit ids are kept; the planner takes the rest of
     * the NVIDIA GPUs. Stock QEMU refuses the property on any other
     * vendor's device, and the VM would not start.
     */
    bdfs = g_new0(const char *, d->gpus->len + 1);
    for (i = 0; i < d->gpus->len; i++) {
        const GpDomainHostdev *h = g_ptr_array_index(d->gpus, i);

        if (!gp_domain_guest_nvidia(d, h)) {
            warn("%s is not an NVIDIA GPU (vendor %04x as the guest sees "
                 "it): stock QEMU refuses x-nv-gpudirect-clique on it, so "
                 "it gets no clique setting", h->bdf,
                 gp_domain_guest_vendor(d, h));
        } else if (h->explicit_id < 0 && !gated(gates, h)) {
            bdfs[n++] = h->bdf;
        }
    }
    plan = gp_plan_compute(topo, bdfs, o->policy, errp);
    if (!plan) {
        return false;
    }
    gp_domain_set_stock(d, plan);
    warn_left_out(plan);
    return true;
}

/*
 * The BAR gate's verdicts said: no clique for a GPU whose BARs will not
 * be mapped for its peers, and why; an unknown is a warning, its id
 * written. An explicit id on a gated GPU is the operator's, kept.
 */
static void warn_gate(const GpDomain *d, bool stock, const GPtrArray *all)
{
    g_autoptr(GPtrArray) gates = g_ptr_array_new();
    g_autoptr(GPtrArray) no = NULL, unknown = NULL;
    guint i;

    /* Stock QEMU gives no clique to another vendor's GPU anyway. */
    for (i = 0; i < d->gpus->len && i < all->len; i++) {
        if (!stock || gp_domain_guest_nvidia(d, g_ptr_array_index(d->gpus,
                                                                  i))) {
            g_ptr_array_add(gates, g_ptr_array_index(all, i));
        }
    }
    no = gp_front_gate_lines(gates, GP_BAR_GATE_NOT_MAPPED);
    unknown = gp_front_gate_lines(gates, GP_BAR_GATE_UNKNOWN);

    for (i = 0; i < no->len; i++) {
        warn("no clique id: peers' P2P writes would fault, the BARs will not "
             "be mapped in the IOMMU: %s",
             (const char *)g_ptr_array_index(no, i));
    }
    for (i = 0; i < unknown->len; i++) {
        warn("clique ids written, but whether the BARs will be mapped in the "
             "IOMMU for peers is unknown: %s",
             (const char *)g_ptr_array_index(unknown, i));
    }
    for (i = 0; i < d->gpus->len; i++) {
        const GpDomainHostdev *h = g_ptr_array_index(d->gpus, i);

        if (h->explicit_id >= 0 && gated(gates, h)) {
            warn("%s keeps the domain's explicit clique %d (%s), though its "
                 "BARs will not be mapped for peers%s", h->bdf,
                 h->explicit_id, h->id_property,
                 !stock && refused_by_our_qemu(h) ?
                 ": our QEMU will refuse the device at start-up "
                 "(x-gpu-p2p-verify=refuse, the default); set "
                 "x-gpu-p2p-clique=auto, or x-gpu-p2p-verify=warn to keep "
                 "the id" : "");
        }
    }
}

/* The gate for the QEMU the domain will run: ours, or stock (its version
 * asked of <emulator>, else of qemu-system-x86_64). */
static GPtrArray *bar_gate(const GpDomain *d, const GpTopology *topo,
                           bool stock)
{
    g_autofree char *em = gp_domain_emulator(d);

    return gp_front_domain_gate(d, topo, stock ? GP_VMM_STOCK : GP_VMM_OURS,
                                em ? em : "qemu-system-x86_64");
}

/* Our QEMU build where it is installed, unless QEMU is stock. */
static void set_emulator(const LibvirtOpts *o, GpDomain *d)
{
    if (o->stock) {
        return;
    }
    if (o->emulator) {
        if (!g_file_test(o->emulator, G_FILE_TEST_IS_EXECUTABLE)) {
            warn("--emulator %s is not an executable file here", o->emulator);
        }
        gp_domain_set_emulator(d, o->emulator);
    } else if (g_file_test(GP_QEMU_EMULATOR, G_FILE_TEST_IS_EXECUTABLE)) {
        gp_domain_set_emulator(d, GP_QEMU_EMULATOR);
    }
}

/* gp_domain_check_ids(), its doubts said as warnings. */
static bool ids_hold(const GpDomain *d, const GpTopology *topo, GError **errp)
{
    g_autoptr(GPtrArray) doubts = g_ptr_array_new_with_free_func(g_free);
    bool ok = gp_domain_check_ids(d, topo, doubts, errp);
    guint i;

    for (i = 0; i < doubts->len; i++) {
        warn("%s", (const char *)g_ptr_array_index(doubts, i));
    }
    return ok;
}

/*
 * What the VM needs to place its GPUs' BARs: <pcihole64>, the guest's
 * address width and OVMF's aperture; what was raised said as warnings.
 */
static bool plan_large_bars(GpDomain *d, const GpTopology *topo,
                            GError **errp)
{
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    g_autofree char *em = gp_domain_emulator(d);
    bool ok;
    guint i;

    gp_domain_size_pci_hole(d, notes);
    /* The emulator says what an alias such as q35 names (as for the
     * gate, bar_gate()). */
    ok = gp_domain_plan_large_bars(d, topo->cpu_phys_bits, topo->cpu_vendor,
                                   em ? em : "qemu-system-x86_64", notes,
                                   errp);
    for (i = 0; i < notes->len; i++) {
        warn("%s", (const char *)g_ptr_array_index(notes, i));
    }
    return ok;
}

/* Rewrite @xml; returns the new text or NULL with an error. */
static char *transform(const LibvirtOpts *o, const char *xml,
                       const char *name, GError **errp)
{
    g_autoptr(GpDomain) d = gp_domain_parse(xml, name, errp);
    g_autoptr(GpTopology) topo = NULL;
    g_autoptr(GPtrArray) gates = NULL;
    bool stock = o->stock;

    if (!d) {
        return NULL;
    }
    topo = gp_topo_read(o->root ? o->root : "/", errp);
    if (!topo || !gp_domain_find_gpus(d, topo, errp)) {
        return NULL;
    }
    if (!d->gpus->len) {
        g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND, "%s: the domain "
                    "assigns no GPU (no display-class PCI <hostdev>)", name);
        return NULL;
    }
    /* One judge with the hook and check --domain: explicit ids the host
     * proves wrong are refused here too, never passed on. */
    if (gp_domain_has_explicit_ids(d) && !ids_hold(d, topo, errp)) {
        g_prefix_error(errp, "refusing domain '%s': ", d->domain_name);
        return NULL;
    }
    set_emulator(o, d);
    if (!o->stock && !o->qemu_auto && !emulator_wants_stock(d, &stock,
                                                            errp)) {
        return NULL;
    }
    /* The gate reads the guest's address width the planning sets. */
    if (!plan_large_bars(d, topo, errp)) {
        return NULL;
    }
    gates = bar_gate(d, topo, stock);
    if (!set_cliques(o, stock, d, topo, gates, errp)) {
        return NULL;
    }
    warn_gate(d, stock, gates);
    if (o->mirror &&
        !gp_libvirt_mirror(d->doc, topo, o->nccl_topo, name, errp)) {
        return NULL;
    }
    if (gp_domain_hides_kvm(d)) {
        warn("<kvm><hidden state='on'/> hides the hypervisor, so the "
             "guest's NVIDIA driver ignores the P2P capability");
    }
    warn_split_groups(d, topo);
    warn_unprivileged(o, stock, d);
    return gp_domain_format(d);
}

/*
 * The hook's BAR gate, for the GPUs with an explicit id (the only clique
 * the hook judges): a GPU proven unmapped, or one the gate cannot tell,
 * is named with the reason. Never a refusal: an id that may fault is the
 * operator's to drop ('gpup2p libvirt' writes none), and libvirt gives a
 * prepare hook no way to change the domain it starts. Our QEMU's own
 * gate refuses a proven-unmapped x-gpu-p2p-clique id under its default
 * verify; the hook says so rather than that the domain starts.
 */
static void check_gate(GpDomain *d, const GpTopology *topo)
{
    g_autofree char *em = gp_domain_emulator(d);
    const char *qemu = em ? em : "qemu-system-x86_64";
    g_autoptr(GError) err = NULL;
    g_autoptr(GPtrArray) gates = NULL, no = NULL, unknown = NULL;
    g_autoptr(GPtrArray) refused = NULL, maybe = NULL;
    g_autoptr(GPtrArray) ided_refused = g_ptr_array_new();
    g_autoptr(GPtrArray) ided_started = g_ptr_array_new();
    bool vmm_matters = false;
    guint i;

    if (!gp_domain_find_gpus(d, topo, &err)) {
        warn("domain '%s' starts; whether its GPUs' BARs will be mapped for "
             "peers is not checked: %s", d->domain_name, err->message);
        return;
    }
    /* The emulator is asked what it is only where the gate needs it (a
     * GPU with an id on iommufd): the hook starts no program otherwise. */
    for (i = 0; i < d->gpus->len; i++) {
        const GpDomainHostdev *h = g_ptr_array_index(d->gpus, i);

        vmm_matters |= h->explicit_id >= 0 && gp_domain_hostdev_iommufd(h);
    }
    gates = gp_front_domain_gate(d, topo, vmm_matters ?
                                 gp_front_vmm_of(qemu) : GP_VMM_UNKNOWN,
                                 qemu);
    for (i = 0; i < d->gpus->len && i < gates->len; i++) {
        const GpDomainHostdev *h = g_ptr_array_index(d->gpus, i);

        if (h->explicit_id >= 0) {
            g_ptr_array_add(refused_by_our_qemu(h) ? ided_refused :
                            ided_started, g_ptr_array_index(gates, i));
        }
    }
    refused = gp_front_gate_lines(ided_refused, GP_BAR_GATE_NOT_MAPPED);
    no = gp_front_gate_lines(ided_started, GP_BAR_GATE_NOT_MAPPED);
    unknown = gp_front_gate_lines(ided_started, GP_BAR_GATE_UNKNOWN);
    /* Our QEMU's gate sees more (its container, each BAR's mmaps). */
    maybe = gp_front_gate_lines(ided_refused, GP_BAR_GATE_UNKNOWN);
    for (i = 0; i < refused->len; i++) {
        warn("domain '%s' will not start: our QEMU refuses an explicit "
             "x-gpu-p2p-clique id under x-gpu-p2p-verify=refuse (the "
             "default) where the BARs will not be mapped in the IOMMU: %s; "
             "'gpup2p libvirt' writes no id for them", d->domain_name,
             (const char *)g_ptr_array_index(refused, i));
    }
    for (i = 0; i < no->len; i++) {
        warn("domain '%s' starts, but its clique ids promise P2P that will "
             "fault, the BARs will not be mapped in the IOMMU: %s; 'gpup2p "
             "libvirt' writes no id for them", d->domain_name,
             (const char *)g_ptr_array_index(no, i));
    }
    for (i = 0; i < unknown->len; i++) {
        warn("domain '%s' starts; whether the BARs of GPUs with a clique id "
             "will be mapped in the IOMMU for peers is unknown: %s",
             d->domain_name, (const char *)g_ptr_array_index(unknown, i));
    }
    for (i = 0; i < maybe->len; i++) {
        warn("domain '%s' starts unless our QEMU's own gate, which sees its "
             "container and each BAR's mmaps, proves the BARs unmapped and "
             "refuses the explicit x-gpu-p2p-clique id; whether the BARs "
             "of GPUs with a clique id will be mapped in the IOMMU for "
             "peers is unknown: %s", d->domain_name,
             (const char *)g_ptr_array_index(maybe, i));
    }
}

/* The hook's test: explicit ids only, and only when there are some. */
static int check(const LibvirtOpts *o, const char *xml, const char *name)
{
    g_autoptr(GpDomain) d = NULL;
    g_autoptr(GpTopology) topo = NULL;
    g_autoptr(GError) err = NULL;
    bool off;

    d = gp_domain_parse(xml, name, &err);
    if (!d || !gp_domain_hook_off(d, &off, &err)) {
        return gp_cli_fail("libvirt", GP_EXIT_FAILED, "%s", err->message);
    }
    if (!gp_domain_has_explicit_ids(d)) {
        return GP_EXIT_OK;
    }
    topo = gp_topo_read(o->root ? o->root : "/", &err);
    if (!topo) {
        /* What the host cannot judge keeps its id, as in QEMU. */
        warn("domain '%s' sets clique ids, which the host topology cannot "
             "judge: %s", d->domain_name, err->message);
        return GP_EXIT_OK;
    }
    if (!ids_hold(d, topo, &err)) {
        if (off) {
            /* The operator's word for this VM, on any QEMU. */
            warn("domain '%s' is not refused: its <metadata> turns the "
                 "check off (<hook xmlns='%s' check='off'/>): %s",
                 d->domain_name, GP_LIBVIRT_METADATA_NS, err->message);
            return GP_EXIT_OK;
        }
        return gp_cli_fail("libvirt", GP_EXIT_REFUSED, "refusing domain "
                           "'%s': %s", d->domain_name, err->message);
    }
    check_gate(d, topo);
    return GP_EXIT_OK;
}

/* The input: one FILE, "-" or --domain NAME (with --connect). */
static bool input_valid(int argc, char **argv, const char *domain,
                        const char *uri)
{
    const char *file = argc > 1 ? argv[1] : NULL;

    if (argc > 2) {
        return gp_cli_usage("libvirt",
                            "one FILE only, not also '%s'", argv[2]);
    }
    if (!file && !domain) {
        return gp_cli_usage("libvirt",
                            "give FILE, - (standard input) or --domain NAME");
    }
    if (file && domain) {
        return gp_cli_usage("libvirt",
                            "FILE '%s' and --domain '%s' exclude each other",
                            file, domain);
    }
    if (uri && !domain) {
        return gp_cli_usage("libvirt",
                            "--connect '%s' goes with --domain NAME; FILE '%s' "
                            "is read from disk", uri, file);
    }
    return true;
}

/* Each rule of the command line, said on its own (exit 64). */
static bool options_valid(const LibvirtOpts *o, int argc, char **argv,
                          const char *domain, const char *uri)
{
    const char *writer = o->in_place ? "--in-place" :
                         o->define ? "--define" : o->diff ? "--diff" :
                         o->snapshot ? "--host-snapshot" :
                         o->emulator ? "--emulator" :
                         o->mirror ? "--mirror" : NULL;

    if (!input_valid(argc, argv, domain, uri)) {
        return false;
    }
    if (o->in_place && domain) {
        return gp_cli_usage("libvirt",
                            "--in-place rewrites a FILE, not --domain '%s' "
                            "(use --define)", domain);
    }
    if (o->in_place && !strcmp(argv[1], "-")) {
        return gp_cli_usage("libvirt",
                            "--in-place needs a FILE to rewrite, not - "
                            "(standard input)");
    }
    if (o->define && !domain) {
        return gp_cli_usage("libvirt",
                            "--define goes with --domain NAME, not FILE '%s'",
                            argv[1]);
    }
    if (o->stock && o->qemu_auto) {
        return gp_cli_usage("libvirt",
                            "--qemu-stock and --qemu-default-auto exclude each "
                            "other");
    }
    if (o->snapshot && (o->stock || o->qemu_auto)) {
        return gp_cli_usage("libvirt",
                            "--host-snapshot and %s exclude each other",
                            o->stock ? "--qemu-stock" : "--qemu-default-auto");
    }
    if (o->nccl_topo && !o->mirror) {
        return gp_cli_usage("libvirt",
                            "--nccl-topo '%s' goes with --mirror",
                            o->nccl_topo);
    }
    if (o->check && writer) {
        return gp_cli_usage("libvirt",
                            "--check only reads the domain: it excludes %s",
                            writer);
    }
    return true;
}

static char *read_input(const char *path, GError **errp)
{
    char *xml = NULL;

    if (!strcmp(path, "-")) {
        return read_stream(stdin, "standard input", errp);
    }
    return g_file_get_contents(path, &xml, NULL, errp) ? xml : NULL;
}

static bool flush_stdout(GError **errp)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "writing standard output: "
                    "%s", g_strerror(errno));
        return false;
    }
    return true;
}

/*
 * Redefine on the connection, read the domain back and print what libvirt
 * kept. libvirt drops in silence what a driver does not know (the test
 * driver, or a libvirt without the QEMU namespace, drops
 * <qemu:override>), so what we wrote is compared with the read-back:
 * anything missing fails the command, named, and @before (the definition
 * read from the connection) is defined again.
 */
static bool define(const VirtConnection *s, const char *domain,
                   const char *before, const char *xml, GError **errp)
{
    const VirtLib *v = &s->lib;
    virDomainPtr nd = v->define_xml(s->conn, xml);
    g_autofree char *kept = NULL, *lost = NULL;

    if (!nd) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "defining %s: %s", domain,
                    virt_error(v, "failed"));
        return false;
    }
    kept = v->get_xml_desc(nd, VIR_DOMAIN_XML_INACTIVE);
    v->domain_free(nd);
    if (!kept) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: defined, but cannot "
                    "be read back to see what libvirt kept: %s", domain,
                    virt_error(v, "failed"));
        return false;
    }
    lost = gp_domain_lost(xml, kept, domain, errp);
    if (!lost) {
        g_prefix_error(errp, "%s: defined, but libvirt's read-back: ",
                       domain);
        return false;
    }
    if (*lost) {
        /* Half of our settings is worse than none: the definition read
         * from the connection goes back. */
        virDomainPtr back = v->define_xml(s->conn, before);

        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s: libvirt did not "
                    "keep what gpup2p wrote (does this libvirt driver know "
                    "the QEMU namespace?), %s; missing:%s", domain,
                    back ? "so the previous definition is back" :
                    "and the previous definition could not be put back",
                    lost);
        if (back) {
            v->domain_free(back);
        }
        return false;
    }
    fputs(kept, stdout);
    return true;
}

/* The result where the options send it: stdout, a diff, FILE, libvirt. */
static bool emit(const LibvirtOpts *o, const char *xml, const char *out,
                 const char *name, const char *file,
                 const VirtConnection *virt, GError **errp)
{
    if (o->diff) {
        if (!print_diff(xml, out, name, errp)) {
            return false;
        }
    } else if (!o->in_place && !o->define) {
        fputs(out, stdout);
    }
    if (o->in_place && strcmp(xml, out) && !write_atomic(file, out, errp)) {
        return false;
    }
    if (o->define && !define(virt, name, xml, out, errp)) {
        return false;
    }
    return flush_stdout(errp);
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
        { "check", 0, 0, G_OPTION_ARG_NONE, &o.check,
          "Only check explicit clique ids (the libvirt hook): exit 2 "
          "where the host proves them wrong, warn where it cannot "
          "confirm them or their GPUs' BARs will not (or may not) be "
          "mapped for peers", NULL },
        { "qemu-default-auto", 0, 0, G_OPTION_ARG_NONE, &o.qemu_auto,
          "The domain's machine type (q35-gpup2p; q35 is set to it) "
          "defaults to x-gpu-p2p-clique=auto and QEMU reads the host "
          "snapshot: add no per-device override", NULL },
        { "qemu-stock", 0, 0, G_OPTION_ARG_NONE, &o.stock,
          "For a QEMU without the extension: planned ids through "
          "x-nv-gpudirect-clique (NVIDIA GPUs only)", NULL },
        { "host-snapshot", 0, 0, G_OPTION_ARG_FILENAME, &o.snapshot,
          "QEMU reads the host from this snapshot (x-gpu-p2p-host-snapshot) "
          "instead of " GP_HOST_SNAPSHOT, "DIR" },
        { "emulator", 0, 0, G_OPTION_ARG_FILENAME, &o.emulator,
          "Set <emulator> (default: " GP_QEMU_EMULATOR " when present)",
          "PATH" },
        { "policy", 0, 0, G_OPTION_ARG_STRING, &policy,
          "Clique width for --qemu-stock: system, host-bridge, switch",
          "POLICY" },
        { "in-place", 'i', 0, G_OPTION_ARG_NONE, &o.in_place,
          "Rewrite FILE atomically", NULL },
        { "define", 0, 0, G_OPTION_ARG_NONE, &o.define,
          "Redefine the domain on the connection", NULL },
        { "diff", 0, 0, G_OPTION_ARG_NONE, &o.diff,
          "Show the change as a unified diff of canonical XML", NULL },
        { "mirror", 0, 0, G_OPTION_ARG_NONE, &o.mirror,
          "Mirror the host's PCIe hierarchy and NUMA nodes", NULL },
        { "nccl-topo", 0, 0, G_OPTION_ARG_FILENAME, &o.nccl_topo,
          "With --mirror: write the guest's NCCL topology here, pass it "
          "by fw_cfg", "FILE" },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new(
        "[FILE|-] - P2P settings for a libvirt domain");
    g_autoptr(GError) err = NULL;
    g_autofree char *xml = NULL, *out = NULL;
    const char *name;
    VirtConnection virt = { 0 };
    int ret = GP_EXIT_OK;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!gp_cli_parse(ctx, &argc, &argv)) {
        ret = GP_EXIT_USAGE;
        goto out;
    }
    if (!gp_cli_policy("libvirt", policy, &o.policy) ||
        !options_valid(&o, argc, argv, domain, uri)) {
        ret = GP_EXIT_USAGE;
        goto out;
    }
    if (domain) {
        name = domain;
        xml = virt_read_domain(&virt, uri, domain, &err);
    } else {
        name = strcmp(argv[1], "-") ? argv[1] : "standard input";
        xml = read_input(argv[1], &err);
    }
    if (!xml) {
        ret = gp_cli_fail("libvirt", GP_EXIT_FAILED, "%s", err->message);
    } else if (o.check) {
        ret = check(&o, xml, name);
    } else if (!(out = transform(&o, xml, name, &err)) ||
               !emit(&o, xml, out, name, domain ? NULL : argv[1], &virt,
                     &err)) {
        ret = gp_cli_fail("libvirt", GP_EXIT_FAILED, "%s", err->message);
    }
out:
    virt_connection_close(&virt);
    g_free(o.root);
    g_free(o.snapshot);
    g_free(o.emulator);
    g_free(o.nccl_topo);
    return ret;
}
