/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Path classes and P2P verdicts between two devices of a topology. */
#include <string.h>

#include "gpup2p/p2p.h"
#include "uapi/gpup2p.h"

/* Linux's pci_upstream_bridge(): a VF's upstream bridge is its PF's. */
static const GpDevice *upstream(const GpDevice *dev)
{
    return (dev->physfn ? dev->physfn : dev)->parent;
}

/*
 * One device where the paths do not show it: functions of one slot on a
 * root bus (no link joins them), a PF and its VFs, or VFs of one PF. Below
 * a root or downstream port the shared link decides, whatever the slot
 * numbers (gp_p2p_share_link() in the rule header).
 */
static bool gp_same_device(const GpDevice *a, const GpDevice *b)
{
    const GpDevice *pa = a->physfn ? a->physfn : a;
    const GpDevice *pb = b->physfn ? b->physfn : b;

    if (a == b) {
        return false;
    }
    return pa == pb || (!upstream(a) && !upstream(b) && a->host == b->host &&
                        a->domain == b->domain && a->bus == b->bus &&
                        a->slot == b->slot);
}

static bool is_ancestor_or_self(const GpDevice *anc, const GpDevice *dev)
{
    for (; dev; dev = upstream(dev)) {
        if (dev == anc) {
            return true;
        }
    }
    return false;
}

static const GpDevice *common_upstream(const GpDevice *a, const GpDevice *b)
{
    for (; a; a = upstream(a)) {
        if (is_ancestor_or_self(a, b)) {
            return a;
        }
    }
    return NULL;
}

/* A switch counts once whether the path meets its upstream or a downstream
 * port; any other bridge counts as itself. */
static const GpDevice *bridge_unit(const GpDevice *dev)
{
    const GpDevice *sw = gp_device_switch(dev);

    return sw ? sw : dev;
}

GpPathType gp_path_classify(const GpDevice *a, const GpDevice *b)
{
    const GpDevice *units[64];
    const GpDevice *common, *d;
    const GpDevice *ends[2] = { a, b };
    size_t n = 0, i, k;

    if (a == b) {
        return GP_PATH_SELF;
    }
    if (a->host != b->host) {
        return a->numa_node == b->numa_node ? GP_PATH_NODE : GP_PATH_SYS;
    }
    if (is_ancestor_or_self(a, b) || is_ancestor_or_self(b, a)) {
        /* One is the other's bridge: the path stays below the host. */
        return GP_PATH_PIX;
    }
    common = common_upstream(upstream(a), b);
    if (!common) {
        return GP_PATH_PHB;
    }
    for (k = 0; k < 2; k++) {
        for (d = upstream(ends[k]); d; d = upstream(d)) {
            const GpDevice *u = bridge_unit(d);

            for (i = 0; i < n && units[i] != u; i++) {
            }
            if (i == n && n < G_N_ELEMENTS(units)) {
                units[n++] = u;
            }
            if (d == common) {
                break;
            }
        }
    }
    return n <= 1 ? GP_PATH_PIX : GP_PATH_PXB;
}

const char *gp_path_type_name(GpPathType type)
{
    static const char *const names[] = {
        [GP_PATH_SELF] = "X",
        [GP_PATH_PIX] = "PIX",
        [GP_PATH_PXB] = "PXB",
        [GP_PATH_PHB] = "PHB",
        [GP_PATH_NODE] = "NODE",
        [GP_PATH_SYS] = "SYS",
    };

    return names[type];
}

const char *gp_p2p_kind_name(GpP2pKind kind)
{
    switch (kind) {
    case GP_P2P_DIRECT:
        return "direct";
    case GP_P2P_HOST_BRIDGE:
        return "host-bridge";
    case GP_P2P_NONE:
        return "none";
    case GP_P2P_UNKNOWN:
        return "unknown";
    }
    return "unknown";
}

bool gp_p2p_possible(GpP2pKind kind)
{
    return kind == GP_P2P_DIRECT || kind == GP_P2P_HOST_BRIDGE;
}

const char *gp_vm_p2p_kind_name(GpVmP2pKind kind)
{
    switch (kind) {
    case GP_VM_P2P_OK:
        return "through-iommu";
    case GP_VM_P2P_BYPASS:
        return "bypasses-iommu";
    case GP_VM_P2P_NONE:
        return "none";
    case GP_VM_P2P_UNKNOWN:
        return "unknown";
    }
    return "unknown";
}

bool gp_vm_p2p_ok(GpVmP2pKind kind)
{
    return kind == GP_VM_P2P_OK;
}

void gp_p2p_verdict_clear(GpP2pVerdict *v)
{
    g_clear_pointer(&v->reason, g_free);
    g_clear_pointer(&v->vm_reason, g_free);
}

/* A device's path for the shared rule, with the model's device per hop. */
typedef struct {
    struct gp_p2p_path path;
    const GpDevice *dev[GP_P2P_MAX_HOPS];
} RulePath;

/*
 * A hop's addr only has to tell devices apart for the rule: the model's
 * index does, for any domain. GP_P2P_ADDR() keeps 16 bits of domain, and
 * Intel VMD domains (10000 and up) would alias domain 0.
 */
static unsigned hop_id(const GpDevice *dev)
{
    return dev->model_index;
}

/*
 * Why @d cannot be judged: config space unusable, or (for the device
 * itself, @first) an attribute holding a value the kernel never writes,
 * which marks the capture of it as edited or broken; NULL when it can. A
 * bridge's odd link speed is not taken against it: the rule reads its ACS
 * and port type from config space, and nothing from its link attributes.
 */
static const char *device_untrusted(const GpDevice *d, bool first)
{
    return d->config_unreadable ? d->config_unreadable :
           first ? d->attr_invalid : NULL;
}

/*
 * What a hop is, by the types pci_acs_enabled() tells apart; hop 0 is the
 * device itself. Without its whole standard config space (an unprivileged
 * read) a missing PCIe capability says nothing: a bridge is then unknown,
 * and the device itself is taken as the endpoint it was found as.
 */
static unsigned char hop_port(const GpDevice *d, bool first)
{
    if (device_untrusted(d, first)) {
        return GP_P2P_PORT_UNKNOWN;
    }
    if (d->pcie.type == GP_PCIE_TYPE_NONE &&
        d->config->len < GP_PCICFG_STD_SIZE) {
        return first ? GP_P2P_PORT_ENDPOINT : GP_P2P_PORT_UNKNOWN;
    }
    switch (d->pcie.type) {
    case GP_PCIE_TYPE_NONE:
        return GP_P2P_PORT_CONVENTIONAL;
    case GP_PCIE_TYPE_ENDPOINT:
    case GP_PCIE_TYPE_LEGACY_ENDPOINT:
        return GP_P2P_PORT_ENDPOINT;
    case GP_PCIE_TYPE_RC_INTEGRATED:
        return GP_P2P_PORT_RC_ENDPOINT;
    case GP_PCIE_TYPE_ROOT_PORT:
        return GP_P2P_PORT_ROOT;
    case GP_PCIE_TYPE_UPSTREAM_PORT:
        return GP_P2P_PORT_SWITCH_UP;
    case GP_PCIE_TYPE_DOWNSTREAM_PORT:
        return GP_P2P_PORT_SWITCH_DOWN;
    case GP_PCIE_TYPE_PCIE_TO_PCI_BRIDGE:
        return GP_P2P_PORT_PCI_BRIDGE;
    default:
        return first ? GP_P2P_PORT_ENDPOINT : GP_P2P_PORT_OTHER_BRIDGE;
    }
}

/*
 * Linux's pci_dev.multifunction: the header type's multi-function bit, or
 * any function but the first of a slot (pci_scan_slot() sets it on those).
 */
static bool hop_multifunction(const GpDevice *d)
{
    uint8_t ht = 0;

    return d->function != 0 ||
           (gp_pcicfg_read8(d->config, GP_PCI_HEADER_TYPE, &ht) &&
            (ht & 0x80));
}

static bool rule_path_gather(const GpDevice *dev, RulePath *rp)
{
    const GpDevice *d;

    rp->path.nhops = 0;
    for (d = dev; d; d = upstream(d)) {
        struct gp_p2p_hop *h;

        if (rp->path.nhops == GP_P2P_MAX_HOPS) {
            return false;
        }
        rp->dev[rp->path.nhops] = d;
        h = &rp->path.hops[rp->path.nhops++];
        h->addr = hop_id(d);
        h->acs_state = !d->acs_known || device_untrusted(d, d == dev) ?
                       GP_P2P_ACS_UNKNOWN :
                       d->acs.present ? GP_P2P_ACS_PRESENT : GP_P2P_ACS_ABSENT;
        h->acs_ctrl = d->acs.present ? d->acs.ctrl : 0;
        h->acs_cap = d->acs.present ? d->acs.cap : 0;
        h->port = hop_port(d, d == dev);
        h->multifunction = hop_multifunction(d);
        h->vendor = d->vendor;
        h->device = d->device;
        /* Intel Sunrise Point's Control at ACS + 8: the reader fetched it
         * for these ids (lib/sysfs.c); 0 where the file ends before. */
        h->acs_ctrl8_known = h->acs_state == GP_P2P_ACS_PRESENT &&
                             gp_acs_quirk_ctrl8_wanted(d->vendor, d->device) &&
                             gp_pcicfg_read16(d->config, d->acs.offset + 8u,
                                              &h->acs_ctrl8);
        /* Linux's PCI_DEV_FLAGS_ACS_ENABLED_QUIRK is not in sysfs. */
        h->acs_enabled_quirk = GP_P2P_FLAG_UNKNOWN;
    }
    rp->path.host.domain = dev->host->domain;
    rp->path.host.bus = dev->host->bus;
    rp->path.host.has_root_dev = dev->host->root_bdf[0] != 0;
    rp->path.host.vendor = dev->host->vendor;
    rp->path.host.device = dev->host->device;
    return true;
}

static void rule_cpu(const GpTopology *topo, struct gp_p2p_cpu *cpu)
{
    static const unsigned vendors[] = {
        [GP_CPU_VENDOR_UNKNOWN] = GP_P2P_CPU_UNKNOWN,
        [GP_CPU_VENDOR_INTEL] = GP_P2P_CPU_INTEL,
        [GP_CPU_VENDOR_AMD] = GP_P2P_CPU_AMD,
        [GP_CPU_VENDOR_OTHER] = GP_P2P_CPU_OTHER,
    };

    cpu->vendor = vendors[topo->cpu_vendor];
    cpu->family = topo->cpu_family;
}

/* "bdf (RR CR), ..." of the hops of @rp whose bit is set in @mask. */
static void append_hops(GString *out, const RulePath *rp, unsigned mask,
                        bool with_bits)
{
    unsigned i;

    for (i = 0; i < rp->path.nhops; i++) {
        if (!(mask & (1u << i))) {
            continue;
        }
        g_string_append_printf(out, "%s%s", out->len ? ", " : "",
                               rp->dev[i]->bdf);
        if (with_bits) {
            g_autofree char *bits = gp_acs_bits_string(
                rp->path.hops[i].acs_ctrl & GP_ACS_REDIRECT_MASK);

            g_string_append_printf(out, " (%s)", bits);
        }
    }
}

/* Why the first hop of @rp in @mask cannot be judged, or NULL. */
static const char *first_unreadable(const RulePath *rp, unsigned mask)
{
    unsigned i;

    for (i = 0; i < rp->path.nhops; i++) {
        if ((mask & (1u << i)) && device_untrusted(rp->dev[i], i == 0)) {
            return device_untrusted(rp->dev[i], i == 0);
        }
    }
    return NULL;
}

static const GpDevice *first_hop(const RulePath *rp, unsigned mask)
{
    unsigned i;

    for (i = 0; i < rp->path.nhops; i++) {
        if (mask & (1u << i)) {
            return rp->dev[i];
        }
    }
    return NULL;
}

static const char *hb_desc(const GpHostBridge *hb, char *buf, size_t len)
{
    if (hb->root_bdf[0]) {
        g_snprintf(buf, len, "%s (%04x:%04x at %s)", hb->name, hb->vendor,
                   hb->device, hb->root_bdf);
    } else {
        g_snprintf(buf, len, "%s (its bus has neither a device at "
                   "00.0 nor a root port first)", hb->name);
    }
    return buf;
}

/* The words for the host bridge half of the rule's outcome. */
static void host_reason_text(const GpTopology *topo, const GpDevice *a,
                             const GpDevice *b,
                             const struct gp_p2p_outcome *out, GString *why)
{
    char da[96], db[96];

    hb_desc(a->host, da, sizeof(da));
    hb_desc(b->host, db, sizeof(db));
    switch (out->host_reason) {
    case GP_P2P_HOST_AMD_ZEN:
        g_string_append_printf(why, "AMD CPU family %xh forwards P2P between "
                               "root ports", topo->cpu_family);
        break;
    case GP_P2P_HOST_SAME_LISTED:
        g_string_append_printf(why, "host bridge %s (%s) forwards P2P", da,
                               out->host_a_name);
        break;
    case GP_P2P_HOST_BOTH_LISTED:
        g_string_append_printf(why, "host bridges %s and %s forward P2P "
                               "between each other", da, db);
        break;
    case GP_P2P_HOST_CPU_UNKNOWN:
        g_string_append_printf(why, "host bridge %s is not on the P2P list "
                               "and the CPU vendor is unknown (no "
                               "proc/cpuinfo), so AMD Zen forwarding cannot "
                               "be ruled in or out", da);
        break;
    case GP_P2P_HOST_A_NOT_LISTED:
        g_string_append_printf(why, "host bridge %s is not known to forward "
                               "P2P", da);
        break;
    case GP_P2P_HOST_B_NOT_LISTED:
        g_string_append_printf(why, "host bridge %s is not known to forward "
                               "P2P", db);
        break;
    case GP_P2P_HOST_SAME_ONLY:
        g_string_append_printf(why, "host bridges %s and %s forward P2P only "
                               "within one host bridge", da, db);
        break;
    }
}

static void reason_text(const GpTopology *topo, const GpDevice *a,
                        const GpDevice *b, const RulePath *pa,
                        const RulePath *pb, const GpP2pVerdict *v,
                        GString *why)
{
    const struct gp_p2p_outcome *out = &v->rule;
    g_autoptr(GString) hops = g_string_new(NULL);

    switch (out->path_reason) {
    case GP_P2P_PATH_COMMON_BRIDGE:
        if (v->common == a || v->common == b) {
            g_string_append_printf(why, "same device path through %s",
                                   v->common->bdf);
        } else {
            g_string_append_printf(why, "common upstream bridge %s, no ACS "
                                   "redirect on the path", v->common->bdf);
        }
        return;
    case GP_P2P_PATH_ACS_UNKNOWN: {
        const char *dead = first_unreadable(pa, out->unknown_a);

        dead = dead ? dead : first_unreadable(pb, out->unknown_b);
        append_hops(hops, pa, out->unknown_a, false);
        append_hops(hops, pb, out->unknown_b, false);
        if (dead) {
            g_string_append_printf(why, "ACS state unknown at %s: %s",
                                   hops->str, dead);
        } else {
            g_string_append_printf(why, "ACS state unknown: extended config "
                                   "space of %s not readable (needs root)",
                                   hops->str);
        }
        return;
    }
    case GP_P2P_PATH_ACS_REDIRECT:
        append_hops(hops, pa, out->redirect_a, true);
        append_hops(hops, pb, out->redirect_b, true);
        g_string_append_printf(why, "common upstream bridge %s but ACS "
                               "Control redirects P2P upstream at %s; ",
                               v->common->bdf, hops->str);
        break;
    case GP_P2P_PATH_NO_COMMON:
        g_string_append(why, "no common upstream bridge; ");
        break;
    }
    host_reason_text(topo, a, b, out, why);
}

/* What a hop is, in a reason's words. */
static const char *port_words(const struct gp_p2p_hop *h)
{
    switch (h->port) {
    case GP_P2P_PORT_ROOT:
        return "root port";
    case GP_P2P_PORT_SWITCH_DOWN:
        return "switch downstream port";
    case GP_P2P_PORT_SWITCH_UP:
        return h->multifunction ? "multifunction switch upstream port" :
               "switch upstream port";
    case GP_P2P_PORT_ENDPOINT:
    case GP_P2P_PORT_RC_ENDPOINT:
        return h->multifunction ? "multifunction device" : "device";
    default:
        return "bridge";
    }
}

/*
 * Each hop of @rp in @mask, less those of @seen in @seen_mask (already
 * named), and why pci_acs_enabled(REQ_ACS_FLAGS) fails there: "bdf (no ACS capability)", "bdf (root port, ACS Control SV,
 * needs SV RR CR UF)", or the bus type that never isolates.
 */
/* Is @d one of the hops of @rp in @mask? */
static bool hop_in_mask(const RulePath *rp, unsigned mask,
                         const GpDevice *d)
{
    unsigned i;

    for (i = 0; i < rp->path.nhops; i++) {
        if ((mask & (1u << i)) && rp->dev[i] == d) {
            return true;
        }
    }
    return false;
}

static void append_bypass_ports(GString *out, const RulePath *rp,
                                unsigned mask, const RulePath *seen,
                                unsigned seen_mask)
{
    unsigned i;

    for (i = 0; i < rp->path.nhops; i++) {
        const struct gp_p2p_hop *h = &rp->path.hops[i];
        const struct gp_acs_quirk_entry *e;
        g_autofree char *bits = NULL;
        g_autofree char *need = NULL;

        /* A hop both paths share is named once, with the first path. */
        if (!(mask & (1u << i)) ||
            (seen && hop_in_mask(seen, seen_mask, rp->dev[i]))) {
            continue;
        }
        g_string_append_printf(out, "%s%s", out->len ? ", " : "",
                               rp->dev[i]->bdf);
        /* A device quirk answers before any register (Linux's order). */
        if (gp_acs_quirk(h, GP_P2P_ACS_ISOLATE, &e) == GP_ACS_QUIRK_FAILS) {
            g_string_append_printf(out, " (%s %04x:%04x: Linux's ACS quirk "
                                   "%s says it does not isolate)",
                                   port_words(h), h->vendor, h->device,
                                   gp_acs_quirk_name(e->kind));
            continue;
        }
        switch (h->port) {
        case GP_P2P_PORT_CONVENTIONAL:
            g_string_append(out, " (conventional PCI: a shared bus, no ACS)");
            continue;
        case GP_P2P_PORT_PCI_BRIDGE:
            g_string_append(out, " (PCIe-to-PCI bridge: the conventional "
                            "PCI bus below it is shared, no ACS)");
            continue;
        case GP_P2P_PORT_OTHER_BRIDGE:
            g_string_append(out, " (a PCI-to-PCIe bridge or event "
                            "collector: Linux never counts it as "
                            "isolating)");
            continue;
        default:
            break;
        }
        if (h->acs_state != GP_P2P_ACS_PRESENT) {
            g_string_append_printf(out, " (%sno ACS capability)",
                                   h->multifunction ? "multifunction, " :
                                   "");
            continue;
        }
        bits = gp_acs_bits_string(h->acs_ctrl & (GP_P2P_ACS_ISOLATE |
                                                 GP_ACS_EC));
        need = gp_acs_bits_string(GP_P2P_ACS_ISOLATE &
                                  (h->acs_cap | GP_P2P_ACS_EC));
        g_string_append_printf(out, " (%s, ACS Control %s, needs %s)",
                               port_words(h), bits, need);
    }
}

/*
 * Why a hop of @rp in @mask that config space could be read of is still
 * unknown: a device quirk of Linux's answers by what sysfs does not show.
 * NULL when none is.
 */
static char *quirk_unknown_why(const RulePath *rp, unsigned mask)
{
    unsigned i;

    for (i = 0; i < rp->path.nhops; i++) {
        const struct gp_p2p_hop *h = &rp->path.hops[i];
        const struct gp_acs_quirk_entry *e;

        if (!(mask & (1u << i)) ||
            gp_acs_quirk(h, GP_P2P_ACS_ISOLATE, &e) != GP_ACS_QUIRK_UNKNOWN) {
            continue;
        }
        if (e->kind == GP_ACS_QUIRK_INTEL_PCH) {
            return g_strdup_printf("Linux's ACS quirk %s isolates Intel PCH "
                                   "root port %s (8086:%04x) only where it "
                                   "set PCI_DEV_FLAGS_ACS_ENABLED_QUIRK at "
                                   "boot, which sysfs does not show",
                                   gp_acs_quirk_name(e->kind),
                                   rp->dev[i]->bdf, h->device);
        }
        return g_strdup_printf("Linux's ACS quirk %s reads ACS Control of "
                               "%s at ACS + 8, which was not read (needs "
                               "root)", gp_acs_quirk_name(e->kind),
                               rp->dev[i]->bdf);
    }
    return NULL;
}

static void vm_reason_text(const GpTopology *topo, const GpDevice *a,
                           const GpDevice *b, const RulePath *pa,
                           const RulePath *pb, const GpP2pVerdict *v,
                           GString *why)
{
    const struct gp_p2p_vm_outcome *vm = &v->vm;
    g_autoptr(GString) ports = g_string_new(NULL);

    switch (v->vm_kind) {
    case GP_VM_P2P_UNKNOWN:
        if (vm->unknown_a || vm->unknown_b) {
            const char *dead = first_unreadable(pa, vm->unknown_a);
            g_autofree char *quirk = NULL;

            dead = dead ? dead : first_unreadable(pb, vm->unknown_b);
            if (!dead) {
                quirk = quirk_unknown_why(pa, vm->unknown_a);
                quirk = quirk ? quirk : quirk_unknown_why(pb, vm->unknown_b);
                dead = quirk;
            }
            append_hops(ports, pa, vm->unknown_a, false);
            append_hops(ports, pb, vm->unknown_b, false);
            g_string_append_printf(why, "cannot tell whether a guest's "
                                   "request reaches the IOMMU: ACS state "
                                   "of %s unknown (%s)", ports->str,
                                   dead ? dead : "extended config space "
                                   "not readable; needs root");
            return;
        }
        break;
    case GP_VM_P2P_BYPASS:
        append_bypass_ports(ports, pa, vm->bypass_a, NULL, 0);
        append_bypass_ports(ports, pb, vm->bypass_b, pa, vm->bypass_a);
        if (vm->same_device) {
            g_string_append_printf(why, "bypasses the IOMMU: %s and %s are "
                                   "functions of one device that routes "
                                   "between them; not isolated: %s",
                                   a->bdf, b->bdf, ports->str);
        } else {
            g_string_append_printf(why, "bypasses the IOMMU: not isolated "
                                   "on the way to the root port (Linux's "
                                   "pci_acs_enabled() with SV RR CR UF "
                                   "fails), so a port can route the "
                                   "guest-physical address on host "
                                   "windows; at %s", ports->str);
        }
        return;
    case GP_VM_P2P_OK:
    case GP_VM_P2P_NONE:
        break;
    }
    g_string_append(why, "isolated up to the root port (ACS SV RR CR UF, "
                    "Linux's pci_acs_path_enabled()); ");
    host_reason_text(topo, a, b, &vm->host, why);
}

/*
 * A capture that recorded the kernel module's verdicts (lib/snapshot.c):
 * the kernel's answer is preferred, since on a kernel with p2pdma it is
 * the running kernel's own (its host bridge list, its walk). The reasons
 * say so where it changes the library's verdict, the rule's words kept.
 */
/*
 * The guest verdict from the library's and the kernel's: a "bypass" from
 * either is proof, then an "unknown" from either stands (the module reads
 * an all-ones register as isolating; a module built from an older rule may
 * answer by it); only where both reach the IOMMU does the root complex
 * half follow p2pdma's own answer, the kernel's authority.
 * @why: which answer decided.
 */
static GpVmP2pKind combine_vm(GpVmP2pKind lib, GpVmP2pKind kern,
                              bool kern_from_p2pdma, const char **why)
{
    if (lib == GP_VM_P2P_BYPASS || kern == GP_VM_P2P_BYPASS ||
        lib == GP_VM_P2P_UNKNOWN || kern == GP_VM_P2P_UNKNOWN) {
        GpVmP2pKind k = lib == GP_VM_P2P_BYPASS || kern == GP_VM_P2P_BYPASS
                        ? GP_VM_P2P_BYPASS : GP_VM_P2P_UNKNOWN;

        *why = k == lib ? "the library's, the more cautious" :
               "the kernel's, the more cautious";
        return k;
    }
    if (kern_from_p2pdma) {
        *why = "the kernel's: p2pdma's own answer for the root complex";
        return kern;
    }
    *why = lib == GP_VM_P2P_NONE ? "the library's, the more cautious" :
           "the kernel's, the more cautious";
    return lib == GP_VM_P2P_NONE ? lib : kern;
}

/*
 * A pair the module could not answer when the snapshot was taken (@kv's
 * error): the kernel's answer, which readers prefer, is missing, so the
 * bare-metal verdict is unknown; the guest verdict is the more cautious of
 * the library's and "unknown" (a bypass the library proves stands).
 */
static void kernel_unanswered(const GpKernelVerdict *kv, GpP2pVerdict *v)
{
    const char *why;
    GpVmP2pKind k = combine_vm(v->vm_kind, GP_VM_P2P_UNKNOWN, false, &why);
    char *old = v->reason;

    v->reason = g_strdup_printf("the kernel module could not answer for "
                                "this pair when the snapshot was taken "
                                "(%s); the library's rule said %s: %s",
                                kv->error, gp_p2p_kind_name(v->kind), old);
    g_free(old);
    v->kind = GP_P2P_UNKNOWN;
    old = v->vm_reason;
    v->vm_reason = g_strdup_printf("the kernel module could not answer for "
                                   "this pair when the snapshot was taken "
                                   "(%s); the library's rule said %s: %s; "
                                   "%s stands", kv->error,
                                   gp_vm_p2p_kind_name(v->vm_kind), old, why);
    g_free(old);
    v->vm_kind = k;
}

static void prefer_kernel(const GpTopology *topo, const GpDevice *a,
                          const GpDevice *b, GpP2pVerdict *v)
{
    g_autofree char *key = NULL;
    const GpKernelVerdict *kv;
    const char *source;
    char *old;

    if (!topo->kernel_verdicts) {
        return;
    }
    key = g_strdup_printf("%s %s", a->bdf, b->bdf);
    kv = g_hash_table_lookup(topo->kernel_verdicts, key);
    if (!kv) {
        return;
    }
    v->kernel_recorded = true;
    if (kv->error[0]) {
        kernel_unanswered(kv, v);
        return;
    }
    source = kv->flags & GPUP2P_VERDICT_FROM_P2PDMA ? "p2pdma" :
             "the module's rule";
    if (kv->kind != (unsigned)v->kind) {
        old = v->reason;
        v->reason = g_strdup_printf("the kernel (%s, recorded in the "
                                    "snapshot) says %s at distance %u; the "
                                    "library's rule said %s: %s", source,
                                    gp_p2p_kind_name((GpP2pKind)kv->kind),
                                    kv->distance, gp_p2p_kind_name(v->kind),
                                    old);
        g_free(old);
        v->kind = (GpP2pKind)kv->kind;
        v->distance = (int)kv->distance;
    }
    source = kv->flags & GPUP2P_VERDICT_VM_FROM_P2PDMA ?
             "the root complex as p2pdma answers" : "the module's rule";
    if (kv->vm_kind != (unsigned)v->vm_kind) {
        const char *why;
        GpVmP2pKind k = combine_vm(v->vm_kind, (GpVmP2pKind)kv->vm_kind,
                                   kv->flags & GPUP2P_VERDICT_VM_FROM_P2PDMA,
                                   &why);

        old = v->vm_reason;
        v->vm_reason = g_strdup_printf(
            "the kernel (%s, recorded in the snapshot) says %s; the "
            "library's rule said %s: %s; %s stands", source,
            gp_vm_p2p_kind_name((GpVmP2pKind)kv->vm_kind),
            gp_vm_p2p_kind_name(v->vm_kind), old, why);
        g_free(old);
        v->vm_kind = k;
    }
}

/*
 * The kernel's IOMMU groups as witness of the guest verdict. VFIO hands a
 * guest whole groups, and Linux's pci_device_group() (drivers/iommu/
 * iommu.c) puts devices it cannot isolate from each other in one: so a
 * "yes" needs both devices in groups, and different ones. Groups are
 * necessary, not sufficient: the subtrees of sibling downstream ports
 * without ACS get groups of their own, so where the groups differ the
 * config-space rule still decides. Where the two disagree the more
 * cautious answer is kept, and the reason says which decided.
 */
static void witness_groups(const GpDevice *a, const GpDevice *b,
                           GpP2pVerdict *v)
{
    const GpDevice *none = a->iommu_group < 0 ? a :
                           b->iommu_group < 0 ? b : NULL;
    char *old = v->vm_reason;

    /* A device with itself is no peer pair: its group proves nothing (and
     * the module, which has no group witness, answers by the rule). */
    if (a == b) {
        return;
    }
    if (none && v->vm_kind == GP_VM_P2P_OK) {
        v->vm_reason = g_strdup_printf(
            "%s is in no IOMMU group (no IOMMU, or the capture lacks its "
            "iommu_group link), so nothing shows the kernel isolates it; "
            "the config-space rule alone said through-iommu: %s",
            none->bdf, old);
        v->vm_kind = GP_VM_P2P_UNKNOWN;
        v->group_decided = true;
    } else if (!none && a->iommu_group == b->iommu_group) {
        if (v->vm_kind == GP_VM_P2P_BYPASS) {
            v->vm_reason = g_strdup_printf("%s; the kernel's IOMMU group %d "
                                           "holds both", old, a->iommu_group);
        } else {
            v->vm_reason = g_strdup_printf(
                "bypasses the IOMMU: the kernel put %s and %s in one IOMMU "
                "group (%d): Linux does not isolate them from each other "
                "(pci_device_group()), and the group decides over the "
                "config-space rule, which said %s: %s", a->bdf, b->bdf,
                a->iommu_group, gp_vm_p2p_kind_name(v->vm_kind), old);
            v->vm_kind = GP_VM_P2P_BYPASS;
            v->group_decided = true;
        }
    } else if (!none && v->vm_kind == GP_VM_P2P_BYPASS) {
        v->vm_reason = g_strdup_printf(
            "%s; the kernel gave them different IOMMU groups (%d, %d), "
            "which is necessary, not sufficient (pci_device_group() gives "
            "the subtrees of sibling ports without ACS groups of their "
            "own): the config-space rule, the more cautious, decides", old,
            a->iommu_group, b->iommu_group);
    } else {
        return;
    }
    g_free(old);
}

GArray *gp_p2p_isolation_hops(const GpDevice *dev)
{
    g_autofree RulePath *rp = g_new0(RulePath, 1);
    GArray *hops;
    unsigned i;

    if (!rule_path_gather(dev, rp)) {
        return NULL;
    }
    hops = g_array_new(FALSE, TRUE, sizeof(GpIsolationHop));
    for (i = 1; i < rp->path.nhops; i++) {
        const struct gp_p2p_hop *h = &rp->path.hops[i];
        const struct gp_acs_quirk_entry *e;
        GpIsolationHop hop = { .port = rp->dev[i] };
        bool port = h->port == GP_P2P_PORT_ROOT ||
                    h->port == GP_P2P_PORT_SWITCH_DOWN;

        hop.passes = gp_p2p_acs_enabled(h, GP_P2P_ACS_ISOLATE);
        if (hop.passes == 1 && !port && !h->multifunction) {
            continue;           /* a single-function upstream port: not asked */
        }
        hop.need = h->acs_state == GP_P2P_ACS_PRESENT ?
                   GP_P2P_ACS_ISOLATE & (h->acs_cap | GP_P2P_ACS_EC) :
                   GP_P2P_ACS_ISOLATE;
        hop.settable = h->acs_state == GP_P2P_ACS_PRESENT &&
                       (port || h->multifunction) &&
                       gp_acs_quirk(h, GP_P2P_ACS_ISOLATE, &e) ==
                       GP_ACS_QUIRK_NO_ANSWER;
        g_array_append_val(hops, hop);
    }
    return hops;
}

/* The shared rules (gpup2p/p2p-rule.h) over this model's paths. */
void gp_p2p_verdict(const GpTopology *topo, const GpDevice *a,
                    const GpDevice *b, GpP2pVerdict *v)
{
    g_autofree RulePath *pa = g_new0(RulePath, 1);
    g_autofree RulePath *pb = g_new0(RulePath, 1);
    g_autoptr(GString) why = g_string_new(NULL);
    struct gp_p2p_cpu cpu;
    int which, i;

    memset(v, 0, sizeof(*v));
    if (!rule_path_gather(a, pa) || !rule_path_gather(b, pb)) {
        v->kind = GP_P2P_UNKNOWN;
        v->vm_kind = GP_VM_P2P_UNKNOWN;
        v->reason = g_strdup_printf("the path of %s or %s is deeper than %d "
                                    "bridges", a->bdf, b->bdf,
                                    GP_P2P_MAX_HOPS);
        v->vm_reason = g_strdup(v->reason);
        return;
    }
    rule_cpu(topo, &cpu);
    gp_p2p_vm_rule(&pa->path, &pb->path, &cpu, gp_same_device(a, b), &v->vm);
    v->rule = v->vm.bare;
    v->kind = (GpP2pKind)v->rule.kind;
    v->distance = (int)v->rule.distance;
    v->common = v->rule.common_a >= 0 ? pa->dev[v->rule.common_a] : NULL;
    i = gp_p2p_first_redirect(&v->rule, &which);
    v->redirect = i < 0 ? NULL : (which ? pb : pa)->dev[i];
    reason_text(topo, a, b, pa, pb, v, why);
    v->reason = g_string_free(g_steal_pointer(&why), FALSE);
    v->vm_kind = (GpVmP2pKind)v->vm.kind;
    v->bypass = first_hop(pa, v->vm.bypass_a);
    v->bypass = v->bypass ? v->bypass : first_hop(pb, v->vm.bypass_b);
    why = g_string_new(NULL);
    vm_reason_text(topo, a, b, pa, pb, v, why);
    v->vm_reason = g_string_free(g_steal_pointer(&why), FALSE);
    prefer_kernel(topo, a, b, v);
    witness_groups(a, b, v);
}
