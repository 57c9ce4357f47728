/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `gpup2p check --domain`, the VM items: clique ids, hidden KVM, guest
 * address bits, the firmware's 64-bit aperture and pci-hole64. */
#include <string.h>

#include "check.h"

#ifdef GP_HAVE_LIBVIRT
#include "bar-gate-front.h"
#include "libvirt-domain.h"
#endif

/* The guest's physical address width as QEMU will set it; @how says why. */
static unsigned guest_phys_bits(const Check *c, const char **how)
{
    const Domain *d = c->dom;

    return gp_guest_phys_bits(d->cpu_mode, d->maxphys_mode, d->maxphys_bits,
                              d->maxphys_limit, c->topo->cpu_phys_bits, how);
}

#ifdef GP_HAVE_LIBVIRT
/* The domain as libvirt-domain.h reads it; with @gpus, its GPUs found on
 * the host (gp_domain_find_gpus()). NULL with @errp. */
static GpDomain *read_gp_domain(const Check *c, bool gpus, GError **errp)
{
    g_autofree gchar *xml = NULL;
    g_autoptr(GpDomain) d = NULL;

    if (!g_file_get_contents(c->dom->path, &xml, NULL, errp) ||
        !(d = gp_domain_parse(xml, c->dom->path, errp)) ||
        (gpus && !gp_domain_find_gpus(d, c->topo, errp))) {
        return NULL;
    }
    return g_steal_pointer(&d);
}
#endif

#ifndef GP_HAVE_LIBVIRT
/* Without libvirt no domain is read (check_domain_read() refuses one). */
typedef struct {
    GpPcMachine m;
} GpDomainMachine;

static void gp_domain_machine_clear(GpDomainMachine *m)
{
    (void)m;
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(GpDomainMachine, gp_domain_machine_clear)
#endif

/*
 * The domain's machine as the gate and `gpup2p libvirt` read it; where
 * the domain cannot be read so, only its RAM (the items that judge the
 * domain fail it).
 */
static void domain_machine(const Check *c, GpDomainMachine *out)
{
#ifdef GP_HAVE_LIBVIRT
    g_autoptr(GError) err = NULL;
    g_autoptr(GpDomain) d = read_gp_domain(c, false, &err);

    if (d) {
        gp_domain_pc_machine(d, c->topo->cpu_vendor, out);
        gp_domain_machine_resolve(out, c->qemu);
        /* Else what "q35" and "pc" alias: that QEMU's latest. */
        if (c->qemu && !gp_qemu_version(c->qemu, &out->m.qemu_major,
                                        &out->m.qemu_minor, NULL)) {
            out->m.qemu_major = out->m.qemu_minor = 0;
        }
        return;
    }
#endif
    memset(out, 0, sizeof(*out));
    out->m.ram = c->dom->memory;
}

/*
 * The window QEMU declares, as JSON: start, end (inclusive; start - 1 for
 * an empty one), exact, bounds, layout_assumed (bounds by upstream's
 * layout for a distribution's type), empty, and how (exact) or why.
 */
static JsonNode *window_json(const GpPcWindow *w)
{
    g_autoptr(JsonBuilder) b = json_builder_new();

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "start");
    json_builder_add_int_value(b, (gint64)w->start);
    json_builder_set_member_name(b, "end");
    json_builder_add_int_value(b, (gint64)w->end);
    json_builder_set_member_name(b, "exact");
    json_builder_add_boolean_value(b, w->exact);
    json_builder_set_member_name(b, "bounds");
    json_builder_add_boolean_value(b, w->bounds);
    json_builder_set_member_name(b, "layout_assumed");
    json_builder_add_boolean_value(b, w->layout_assumed);
    json_builder_set_member_name(b, "empty");
    json_builder_add_boolean_value(b, w->end < w->start);
    json_builder_set_member_name(b, w->exact ? "how" : "why");
    json_builder_add_string_value(b, w->exact ? w->how : w->why);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

/* "at 0xSTART-0xEND (how it is known)", for the items' texts. */
static char *window_text(const GpPcWindow *w)
{
    return g_strdup_printf("at 0x%" G_GINT64_MODIFIER "x-0x%"
                           G_GINT64_MODIFIER "x (%s%s)", w->start, w->end,
                           w->exact ? w->how : w->bounds ? "bounds, as " :
                           "estimated, as ", w->exact ? "" : w->why);
}

void check_domain_kvm(Check *c)
{
    g_autofree char *detail = NULL;

    if (c->dom->kvm_hidden) {
        detail = g_strdup_printf("KVM is hidden (%s): the NVIDIA driver "
                                 "then ignores the P2P clique capability",
                                 c->dom->kvm_hidden);
    }
    check_item(c->r, c->dom->kvm_hidden ? ITEM_FAIL : ITEM_OK, "hidden KVM",
         detail ? detail : "KVM is visible to the guest",
         "remove <kvm><hidden state='on'/></kvm> and kvm=off");
}

void check_domain_address_bits(Check *c)
{
    guint64 need = c->need;
    const char *how = NULL;
    unsigned bits = guest_phys_bits(c, &how);
    g_auto(GpDomainMachine) machine = { 0 };
    g_auto(GpPcWindow) placed = { 0 }, declared = { 0 };
    const GpPcWindow *shown;
    ItemState state;
    unsigned want;
    g_autofree char *detail = NULL, *where = NULL;
    g_autofree char *need_text = check_size_text(need);

    domain_machine(c, &machine);
    /* The window as the domain stands, for the JSON reader. */
    gp_pc_window(&machine.m, &declared);
    if (machine.m.no_long_mode) {
        /* Not settable: 32 bits, or 36 where the model has PSE36. */
        detail = g_strdup_printf("a 32-bit vCPU (its CPU model lacks long "
                                 "mode): QEMU fixes its address bits at 32, "
                                 "or 36 with PSE36; its RAM ends at 0x%"
                                 G_GINT64_MODIFIER "x, the pci-hole64 at "
                                 "0x%" G_GINT64_MODIFIER "x",
                                 declared.last_used, declared.end);
        /* The hole lies above 4 GiB: within 36 bits at best. */
        check_item_data(c->r, ITEM_WARN, "guest address bits", detail,
                        "a 64-bit CPU model", "declared_window",
                        window_json(&declared));
        return;
    }
    if (!bits) {
        check_item_data(c->r, ITEM_UNTESTED, "guest address bits",
             "the host's address width is unknown (no 'address sizes' in "
             "proc/cpuinfo)", "run on the host, or capture with "
             "'gpup2p snapshot'", "declared_window", window_json(&declared));
        return;
    }
    if (need) {
        /* The rule `gpup2p libvirt` writes <maxphysaddr> by. */
        want = gp_guest_bits_for_bars(&machine.m, need, c->dom->pcihole64,
                                      &placed);
        detail = g_strdup_printf("%u bits (%s); the BARs' %s window, in a "
                                 "pci-hole64 %s, needs %u", bits, how,
                                 need_text, where = window_text(&placed),
                                 want);
    } else if (declared.end < declared.start) {
        want = 0;
        detail = g_strdup_printf("%u bits (%s); no 64-bit BARs, and no "
                                 "64-bit window (<pcihole64> of 0)", bits,
                                 how);
    } else {
        /* QEMU's own check: phys-bits must reach the hole's last byte. */
        want = gp_log2_ceil(declared.last_used + 1);
        detail = g_strdup_printf("%u bits (%s); no 64-bit BARs, and the "
                                 "pci-hole64 %s needs %u", bits, how,
                                 where = window_text(&declared), want);
    }
    shown = need ? &placed : &declared;
    if (bits != c->topo->cpu_phys_bits &&
        gp_guest_width_may_be_hosts(&machine.m, how)) {
        g_autofree char *said = g_steal_pointer(&detail);

        detail = g_strdup_printf("%s; a distribution's machine type may "
                                 "also give the vCPU the host's width "
                                 "(host-phys-bits), whatever phys-bits says",
                                 said);
    }
    /* Only a window QEMU is known to declare proves a refusal; one left
     * open passes where its highest end fits, unless those bounds rest
     * on upstream's layout for a distribution's type. */
    state = bits >= want && (shown->exact || (shown->bounds &&
                                              !shown->layout_assumed)) ?
            ITEM_OK : shown->exact ? ITEM_FAIL : ITEM_WARN;
    check_item_data(c->r, state, "guest address bits", detail,
         "'gpup2p libvirt' writes <cpu><maxphysaddr> (passthrough with "
         "host-passthrough, else emulate with the bits needed)",
         "declared_window", window_json(&declared));
}

void check_domain_firmware(Check *c)
{
    guint64 need = c->need;
    const Domain *d = c->dom;
    const char *how = NULL;
    g_autofree char *need_text = check_size_text(need);
    g_autofree char *detail = NULL, *have = NULL, *fix = NULL;
    g_auto(GpDomainMachine) machine = { 0 };
    unsigned bits;
    guint64 window, hole;

    fix = g_strdup_printf("'gpup2p libvirt' writes it: "
                          "<qemu:commandline><qemu:arg value='-fw_cfg'/>"
                          "<qemu:arg value='name=opt/ovmf/X-PciMmio64Mb,"
                          "string=%" G_GUINT64_FORMAT "'/></qemu:commandline>",
                          need >> 20);
    if (d->ovmf && d->ovmf_mmio64) {
        have = check_size_text(d->ovmf_mmio64);
        detail = g_strdup_printf("OVMF's 64-bit aperture is set to %s; the "
                                 "BARs need %s", have, need_text);
        check_item(c->r, d->ovmf_mmio64 >= need ? ITEM_OK : ITEM_FAIL,
             "firmware 64-bit aperture", detail, fix);
    } else if (d->ovmf && !guest_phys_bits(c, &how)) {
        /* The host's CPU model with the host's width, which is unknown. */
        detail = g_strdup_printf("OVMF sizes its aperture from the guest's "
                                 "address bits, the host's here, which are "
                                 "unknown (no 'address sizes' in "
                                 "proc/cpuinfo); the BARs need %s",
                                 need_text);
        check_item(c->r, ITEM_UNTESTED, "firmware 64-bit aperture", detail,
             "run on the host, or capture with 'gpup2p snapshot'");
    } else if (d->ovmf) {
        bits = MIN(guest_phys_bits(c, &how), OVMF_MAX_PHYS_BITS);
        window = bits > 3 ? 1ULL << (bits - 3) : 0;
        have = check_size_text(window);
        detail = g_strdup_printf("OVMF sizes its aperture to %s from %u "
                                 "address bits; builds without the dynamic "
                                 "window keep 32 GiB; the BARs need %s",
                                 have, bits, need_text);
        check_item(c->r, window < need ? ITEM_FAIL :
             need > GP_OVMF_FIXED_MMIO64 ? ITEM_WARN : ITEM_OK,
             "firmware 64-bit aperture", detail, fix);
    } else {
        check_item(c->r, ITEM_OK, "firmware 64-bit aperture",
             "SeaBIOS places 64-bit BARs above RAM without a fixed "
             "aperture", NULL);
    }
    g_free(detail);
    g_free(have);
    domain_machine(c, &machine);
    hole = gp_pc_hole64_size(&machine.m);
    have = check_size_text(hole);
    detail = g_strdup_printf("%s (%s); the BARs need %s", have,
                             machine.m.hole64_set ? "<pcihole64>" :
                             "QEMU's default, no <pcihole64>", need_text);
    check_item(c->r, hole >= need ? ITEM_OK : machine.m.hole64_set ?
               ITEM_FAIL : ITEM_WARN, "pci-hole64", detail,
         "'gpup2p libvirt' sets <pcihole64> on the root controller");
}


/*
 * The domain's explicit clique ids, judged by the one check the hook and
 * `gpup2p libvirt` run (gp_domain_check_ids()): every way an id can be
 * given (overrides, -global in both spellings, the namespace declared
 * anywhere) counts.
 */
void check_domain_ids(Check *c)
{
#ifdef GP_HAVE_LIBVIRT
    g_autoptr(GError) err = NULL;
    g_autoptr(GpDomain) d = read_gp_domain(c, false, &err);
    g_autoptr(GPtrArray) doubts = g_ptr_array_new_with_free_func(g_free);
    g_autofree char *joined = NULL;

    if (!d) {
        check_item(c->r, ITEM_FAIL, "clique ids", err->message,
             "fix the domain XML");
        return;
    }
    if (!gp_domain_has_explicit_ids(d)) {
        check_item(c->r, ITEM_OK, "clique ids", "none set by the domain "
                   "(auto, or none)", NULL);
        return;
    }
    if (!gp_domain_check_ids(d, c->topo, doubts, &err)) {
        check_item(c->r, ITEM_FAIL, "clique ids", err->message,
             "give those GPUs different ids, or let QEMU plan them "
             "(x-gpu-p2p-clique=auto)");
        return;
    }
    if (doubts->len) {
        /* Not proof that P2P fails: the VM starts, the hook lets it. */
        g_ptr_array_add(doubts, NULL);
        joined = g_strjoinv("; ", (char **)doubts->pdata);
        check_item(c->r, ITEM_WARN, "clique ids", joined,
             "if P2P fails in the guest (gpup2p-verify says so), give those "
             "GPUs different ids, or let QEMU plan them "
             "(x-gpu-p2p-clique=auto)");
        return;
    }
    check_item(c->r, ITEM_OK, "clique ids", "every explicit id holds GPUs the "
         "host lets a guest pair", NULL);
#else
    (void)c;
#endif
}

#ifdef GP_HAVE_LIBVIRT
/*
 * What clique NVIDIA GPU @h gets on a QEMU whose vfio-pci offers @props,
 * with @machine: NULL when it gets one, else why not. @how says where
 * the clique comes from.
 */
static const char *gpu_clique(const GpDomainHostdev *h, unsigned props,
                              const char *machine, char **how)
{
    bool ours = props & GP_QEMU_CLIQUE_AUTO;

    if (h->id_property && !strcmp(h->id_property, "x-gpu-p2p-clique")) {
        if (!ours) {
            return "it sets x-gpu-p2p-clique, which this QEMU lacks: the VM "
                   "will not start";
        }
        if (h->explicit_id < 0 && !h->auto_set) {
            return "x-gpu-p2p-clique is off for it";
        }
        *how = g_strdup_printf("%s (x-gpu-p2p-clique, %s)",
                               h->auto_set ? "auto" : "an explicit id",
                               h->setting_from);
        return NULL;
    }
    if (h->id_property) {       /* upstream's: any QEMU, ids only */
        if (h->explicit_id < 0) {
            return "x-nv-gpudirect-clique takes an id 0-15, not auto or "
                   "off: QEMU refuses the VM";
        }
        *how = g_strdup_printf("id %d (x-nv-gpudirect-clique, %s)",
                               h->explicit_id, h->setting_from);
        return NULL;
    }
    if (ours && gp_machine_defaults_auto(machine)) {
        *how = g_strdup_printf("auto (the default of machine type %s)",
                               machine);
        return NULL;
    }
    if (ours) {
        return "no setting, and x-gpu-p2p-clique defaults to off on this "
               "machine type";
    }
    return "no x-nv-gpudirect-clique id, and this QEMU has no "
           "x-gpu-p2p-clique";
}
#endif

/*
 * Will the VM's GPUs get their clique? From each GPU's setting (its
 * override, a -set, a -global), the machine type's default and what the
 * domain's QEMU offers: two or more GPUs of which one gets none is a
 * failure (the guest driver refuses P2P with a GPU that has none).
 */
void check_domain_clique(Check *c)
{
#ifdef GP_HAVE_LIBVIRT
    const char *fix = "the machine type q35-gpup2p on the packaged QEMU "
                      "('gpup2p libvirt --qemu-default-auto'), or "
                      "x-gpu-p2p-clique=auto per GPU ('gpup2p libvirt'), "
                      "or planned ids for stock QEMU ('gpup2p libvirt "
                      "--qemu-stock')";
    g_autofree char *machine = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(GpDomain) d = read_gp_domain(c, true, &err);
    g_autoptr(GString) got = g_string_new(NULL);
    g_autoptr(GString) none = g_string_new(NULL);
    g_autoptr(GPtrArray) nvidia = g_ptr_array_new();
    unsigned props;
    guint i;

    if (!d) {
        check_item(c->r, ITEM_FAIL, "VM clique", err->message,
                   "fix the domain XML");
        return;
    }
    /* Only NVIDIA's GPUs take a clique, in any QEMU. */
    for (i = 0; i < d->gpus->len; i++) {
        if (gp_domain_guest_nvidia(d, g_ptr_array_index(d->gpus, i))) {
            g_ptr_array_add(nvidia, g_ptr_array_index(d->gpus, i));
        }
    }
    if (nvidia->len < 2) {
        check_item(c->r, ITEM_OK, "VM clique", "fewer than two NVIDIA GPUs "
                   "(as the guest sees them): no peer to share a clique "
                   "with", NULL);
        return;
    }
    if (!c->qemu || !gp_qemu_vfio_props(c->qemu, &props, NULL)) {
        check_item(c->r, ITEM_UNTESTED, "VM clique", "what the GPUs get "
                   "depends on the QEMU, which cannot be asked here",
                   "name the binary with --qemu");
        return;
    }
    machine = gp_domain_machine(d);
    for (i = 0; i < nvidia->len; i++) {
        const GpDomainHostdev *h = g_ptr_array_index(nvidia, i);
        g_autofree char *how = NULL;
        const char *why = gpu_clique(h, props, machine, &how);

        if (why) {
            g_string_append_printf(none, "%s%s: %s", none->len ? "; " : "",
                                   h->bdf, why);
        } else {
            g_string_append_printf(got, "%s%s: %s", got->len ? "; " : "",
                                   h->bdf, how);
        }
    }
    if (none->len) {
        g_string_prepend(none, "with ");
        g_string_append_printf(none, " (machine type %s, QEMU %s), the "
                               "guest gets no clique for these GPUs",
                               machine ? machine : "not named", c->qemu);
        check_item(c->r, ITEM_FAIL, "VM clique", none->str, fix);
        return;
    }
    check_item(c->r, ITEM_OK, "VM clique", got->str, NULL);
#else
    (void)c;
#endif
}

#ifdef GP_HAVE_LIBVIRT
/* Whether a GPU gets a clique in the guest, and how (or why not). */
typedef struct {
    bool has;
    char *why;
} Clique;

static void clique_free(gpointer p)
{
    Clique *q = p;

    g_free(q->why);
    g_free(q);
}

/*
 * Per GPU of d->gpus, the clique the domain gives it, read as "VM clique"
 * reads it (gpu_clique()). Where the QEMU cannot be asked, as on a QEMU
 * with the extension: a domain that sets x-gpu-p2p-clique or names
 * q35-gpup2p starts on no other, and an x-nv-gpudirect-clique id or no
 * setting reads the same on both.
 */
static GPtrArray *domain_cliques(const Check *c, const GpDomain *d)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(clique_free);
    g_autofree char *machine = gp_domain_machine(d);
    unsigned props = GP_QEMU_CLIQUE_AUTO;
    guint i;

    if (c->qemu && !gp_qemu_vfio_props(c->qemu, &props, NULL)) {
        props = GP_QEMU_CLIQUE_AUTO;
    }
    for (i = 0; i < d->gpus->len; i++) {
        const GpDomainHostdev *h = g_ptr_array_index(d->gpus, i);
        Clique *q = g_new0(Clique, 1);
        g_autofree char *how = NULL;
        const char *why = NULL;

        /* Neither QEMU gives another vendor's device a clique. */
        if (!gp_domain_guest_nvidia(d, h)) {
            q->why = g_strdup_printf("the guest sees vendor %04x, not "
                                     "NVIDIA's: no clique",
                                     gp_domain_guest_vendor(d, h));
        } else if ((why = gpu_clique(h, props, machine, &how))) {
            q->why = g_strdup(why);
        } else {
            q->has = true;
            q->why = g_steal_pointer(&how);
        }
        g_ptr_array_add(out, q);
    }
    return out;
}

static JsonNode *bar_gate_json(const GPtrArray *gates,
                               const GPtrArray *cliques)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    guint i;

    json_builder_begin_array(b);
    for (i = 0; i < gates->len; i++) {
        const GpBarGate *g = g_ptr_array_index(gates, i);
        const Clique *q = g_ptr_array_index(cliques, i);

        json_builder_begin_object(b);
        json_builder_set_member_name(b, "bdf");
        json_builder_add_string_value(b, g->dev->bdf);
        json_builder_set_member_name(b, "verdict");
        json_builder_add_string_value(b, gp_bar_gate_verdict_name(g->verdict));
        json_builder_set_member_name(b, "reason");
        json_builder_add_string_value(b, g->reason);
        json_builder_set_member_name(b, "clique");
        json_builder_add_boolean_value(b, q->has);
        json_builder_set_member_name(b, "clique_reason");
        json_builder_add_string_value(b, q->why);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    return json_builder_get_root(b);
}

/* "; " between them, each line of @lines after @label. */
static void append_gate_lines(GString *detail, const char *label,
                              const GPtrArray *lines)
{
    guint i;

    for (i = 0; i < lines->len; i++) {
        g_string_append_printf(detail, "%s%s%s", detail->len ? "; " : "",
                               label,
                               (const char *)g_ptr_array_index(lines, i));
    }
}

#endif

#ifdef GP_HAVE_LIBVIRT
/*
 * What settles the unknowns among @gates: a run on the host reads its own
 * facts; what the VM does (a vIOMMU, its firmware's BAR placement) only
 * the guest can show. NULL where nothing is unknown.
 */
static char *unknown_fix(const GPtrArray *gates)
{
    g_autoptr(GString) fix = g_string_new(NULL);
    unsigned from = 0;
    guint i;

    for (i = 0; i < gates->len; i++) {
        const GpBarGate *g = g_ptr_array_index(gates, i);

        if (g->verdict == GP_BAR_GATE_UNKNOWN) {
            from |= g->unknown_from;
        }
    }
    if (from & GP_BAR_GATE_UNKNOWN_HOST) {
        g_string_append(fix, "run on the host itself (modules, kernel "
                        "config, IOMMU registers)");
    }
    if (from & GP_BAR_GATE_UNKNOWN_VM) {
        g_string_append_printf(fix, "%swhat the VM itself does (named in "
                               "the reason) no reading of the host settles: "
                               "remove it from the domain, or prove P2P in "
                               "the guest with gpup2p-verify",
                               fix->len ? "; " : "");
    }
    return fix->len ? g_string_free(g_steal_pointer(&fix), FALSE) : NULL;
}
#endif

/*
 * Will each GPU's BARs be mapped in the IOMMU for its peers? The BAR
 * gate (gpup2p/bar-gate.h), as `gpup2p libvirt` asks it: a GPU proven
 * unmapped fails where the domain gives it a clique (which would promise
 * P2P that faults), and is ok without one (nothing is promised). An
 * unknown for a GPU with a clique is untested: that promise could not be
 * checked; for one without, a warning with its reason.
 */
void check_domain_bar_gate(Check *c)
{
#ifdef GP_HAVE_LIBVIRT
    g_autoptr(GError) err = NULL;
    g_autoptr(GpDomain) d = read_gp_domain(c, true, &err);
    g_autoptr(GPtrArray) gates = NULL, cliques = NULL, no = NULL;
    g_autoptr(GPtrArray) unchecked = NULL, unknown = NULL, spared = NULL;
    g_autoptr(GPtrArray) promised = g_ptr_array_new();
    g_autoptr(GPtrArray) unpromised = g_ptr_array_new();
    g_autoptr(GString) detail = g_string_new(NULL);
    g_autofree char *fix = NULL;
    ItemState st;
    guint i;

    if (!d) {
        check_item(c->r, ITEM_FAIL, "peer BAR maps", err->message,
                   "fix the domain XML");
        return;
    }
    gates = gp_front_domain_gate(d, c->topo, gp_front_vmm_of(c->qemu),
                                 c->qemu);
    cliques = domain_cliques(c, d);
    /* The gate's verdicts are in d->gpus' order, as the cliques are. */
    for (i = 0; i < gates->len && i < cliques->len; i++) {
        const Clique *q = g_ptr_array_index(cliques, i);

        g_ptr_array_add(q->has ? promised : unpromised,
                        g_ptr_array_index(gates, i));
    }
    no = gp_front_gate_lines(promised, GP_BAR_GATE_NOT_MAPPED);
    unchecked = gp_front_gate_lines(promised, GP_BAR_GATE_UNKNOWN);
    unknown = gp_front_gate_lines(unpromised, GP_BAR_GATE_UNKNOWN);
    spared = gp_front_gate_lines(unpromised, GP_BAR_GATE_NOT_MAPPED);
    append_gate_lines(detail, "not mapped: ", no);
    append_gate_lines(detail, "not checked (a clique, but whether the BARs "
                      "will be mapped for peers is unknown): ", unchecked);
    append_gate_lines(detail, "unknown: ", unknown);
    append_gate_lines(detail, "no clique; its BARs are not mapped: ",
                      spared);
    if (!detail->len) {
        g_string_append(detail, gates->len ? "every GPU's BARs will be "
                        "mapped for its peers" : "no GPU");
    }
    st = no->len ? ITEM_FAIL : unchecked->len ? ITEM_UNTESTED :
         unknown->len ? ITEM_WARN : ITEM_OK;
    fix = st == ITEM_FAIL ?
          g_strdup("no clique for those GPUs ('gpup2p libvirt' writes "
                   "none); or remove the condition named") :
          unknown_fix(gates);
    check_item_data(c->r, st, "peer BAR maps", detail->str, fix,
                    "bar_gate", bar_gate_json(gates, cliques));
#else
    (void)c;
#endif
}

/* Every memory BAR of the GPUs QEMU maps through type1 (those not in
 * @iommufd, "BDF, BDF"). */
static guint64 mapped_bar_bytes(const GPtrArray *gpus, const char *iommufd)
{
    guint64 sum = 0;
    guint i, j;

    for (i = 0; i < gpus->len; i++) {
        const GpDevice *dev = g_ptr_array_index(gpus, i);

        if (strstr(iommufd, dev->bdf)) {
            continue;
        }
        for (j = 0; j < dev->bars->len; j++) {
            const GpBar *b = &g_array_index(dev->bars, GpBar, j);

            sum += b->io ? 0 : b->size;
        }
    }
    return sum;
}

/*
 * The domain's GPUs on the iommufd backend, as the BAR gate reads them
 * (gp_domain_gate_facts()): "BDF, BDF", "" for none; NULL with @errp
 * where the domain cannot be read.
 */
static char *iommufd_gpus(const Check *c, GError **errp)
{
#ifdef GP_HAVE_LIBVIRT
    g_autoptr(GpDomain) d = read_gp_domain(c, true, errp);
    g_autoptr(GString) out = g_string_new(NULL);
    GpDomainGate facts;
    guint i;

    if (!d) {
        return NULL;
    }
    /* Only the backends are read: no QEMU asked. */
    gp_domain_gate_facts(d, c->topo->cpu_phys_bits, c->topo->cpu_vendor,
                         NULL, &facts);
    for (i = 0; i < facts.gpus->len; i++) {
        const GpBarGateGpu *g = &g_array_index(facts.gpus, GpBarGateGpu, i);

        if (g->iommufd) {
            g_string_append_printf(out, "%s%s", out->len ? ", " : "",
                                   g->dev->bdf);
        }
    }
    gp_domain_gate_clear(&facts);
    return g_string_free(g_steal_pointer(&out), FALSE);
#else
    (void)c;
    (void)errp;
    return g_strdup("");        /* no --domain without libvirt */
#endif
}

/* @backend: "type1", "iommufd", or "type1 and iommufd" (mixed). */
static JsonNode *start_cost_json(const char *kernel, guint64 bar_bytes,
                                 const char *backend, const GpStartCost *cost)
{
    g_autoptr(JsonBuilder) b = json_builder_new();

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "kernel");
    if (kernel) {
        json_builder_add_string_value(b, kernel);
    } else {
        json_builder_add_null_value(b);
    }
    json_builder_set_member_name(b, "backend");
    json_builder_add_string_value(b, backend);
    json_builder_set_member_name(b, "bar_bytes");
    json_builder_add_int_value(b, (gint64)bar_bytes);
    json_builder_set_member_name(b, "known");
    json_builder_add_boolean_value(b, cost->known);
    json_builder_set_member_name(b, "seconds");
    if (cost->known) {
        json_builder_add_double_value(b, cost->seconds);
    } else {
        json_builder_add_null_value(b);
    }
    json_builder_set_member_name(b, "grows_with_bars");
    json_builder_add_boolean_value(b, cost->known && cost->per_gib);
    json_builder_set_member_name(b, "figure");
    json_builder_add_string_value(b, cost->figure);
    json_builder_set_member_name(b, "source");
    json_builder_add_string_value(b, cost->source);
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

/* Why no figure predicts the start cost, for check_domain_start_cost(). */
static char *start_cost_unknown(const Check *c, const char *iommufd,
                                const GpStartCost *cost, const char *size)
{
    if (*iommufd) {
        return g_strdup_printf("unknown: %s: %s, so no figure for the "
                               "GPUs' %s of BARs", iommufd, cost->why,
                               size);
    }
    if (c->kernel) {
        return g_strdup_printf("unknown: docs/results.md has no figure for "
                               "Linux %s (only 6.12 and 7.x) to predict the "
                               "type1 mapping of the GPUs' %s of BARs from",
                               c->kernel, size);
    }
    return g_strdup_printf("unknown: the host kernel's release is not "
                           "known (no proc/sys/kernel/osrelease), so no "
                           "figure for the type1 mapping of the GPUs' %s "
                           "of BARs", size);
}

/*
 * What mapping the GPUs' BARs adds to the VM's start, from the host
 * kernel and the figure docs/results.md measured for it (type1); a kernel
 * without a figure, or the iommufd backend (its dma-buf path is not
 * measured), is said to be unknown, never guessed.
 */
void check_domain_start_cost(Check *c)
{
    g_autofree char *size = NULL, *detail = NULL, *iommufd = NULL;
    g_autofree char *also = NULL;
    g_autoptr(GError) err = NULL;
    const char *backend;
    GpStartCost cost;
    guint64 bytes;
    bool all_iommufd;

    iommufd = iommufd_gpus(c, &err);
    if (!iommufd) {
        /* The domain's fault is failed once, by the items that judge it;
         * a cost that could not be worked out is untested. */
        g_autofree char *why = g_strdup_printf("not worked out: the domain "
                                               "could not be read: %s",
                                               err->message);

        check_item(c->r, ITEM_UNTESTED, "VM start cost", why,
                   "fix the domain XML");
        return;
    }
    /* The type1 GPUs' figure stands beside iommufd GPUs' unknown. */
    bytes = mapped_bar_bytes(c->gpus, iommufd);
    all_iommufd = *iommufd && !bytes;
    backend = !*iommufd ? "type1" : all_iommufd ? "iommufd" :
              "type1 and iommufd";
    if (all_iommufd) {
        bytes = mapped_bar_bytes(c->gpus, "");
    }
    size = check_size_text(bytes);
    gp_start_cost_predict(c->kernel, bytes, all_iommufd, &cost);
    if (!cost.known) {
        detail = start_cost_unknown(c, all_iommufd ? iommufd : "", &cost,
                                    size);
        check_item_data(c->r, ITEM_WARN, "VM start cost", detail,
                        all_iommufd ? NULL : "run on the host, or capture "
                        "with 'gpup2p snapshot', which copies the kernel's "
                        "release", "start_cost",
                        start_cost_json(c->kernel, bytes, backend, &cost));
        return;
    }
    if (*iommufd) {
        GpStartCost fd;

        gp_start_cost_predict(c->kernel, 1, true, &fd);
        also = g_strdup_printf("; %s: unknown: %s", iommufd, fd.why);
    }
    if (cost.per_gib) {
        detail = g_strdup_printf("about %.1f s to map the GPUs' %s of BARs "
                                 "through type1 on Linux %s: %s; measured "
                                 "%s in a virtual host under TCG: %s",
                                 cost.seconds, size, c->kernel, cost.why,
                                 cost.figure, cost.source);
    } else {
        detail = g_strdup_printf("about %.1f ms to map the GPUs' %s of BARs "
                                 "through type1 on Linux %s, whatever their "
                                 "size: %s; measured %s in a virtual host "
                                 "under TCG: %s", cost.seconds * 1000,
                                 size, c->kernel, cost.why, cost.figure,
                                 cost.source);
    }
    if (also) {
        g_autofree char *both = g_strconcat(detail, also, NULL);

        g_free(detail);
        detail = g_steal_pointer(&both);
    }
    /* A start that grows by seconds is worth a word, not a failure; so
     * is a part that cannot be told. */
    check_item_data(c->r, cost.seconds >= 1 || also ? ITEM_WARN : ITEM_OK,
                    "VM start cost", detail, "a Linux 7.x host kernel "
                    "(Debian's trixie-backports), whose type1 maps aligned "
                    "huge pfnmaps at once", "start_cost",
                    start_cost_json(c->kernel, bytes, backend, &cost));
}
