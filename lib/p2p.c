/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Path classes and P2P verdicts between two devices of a topology. */
#include <string.h>

#include "gpup2p/p2p.h"
#include "gpup2p/p2p-hostbridge.h"

/* Linux's pci_upstream_bridge(): a VF's upstream bridge is its PF's. */
static const GpDevice *upstream(const GpDevice *dev)
{
    return (dev->physfn ? dev->physfn : dev)->parent;
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

void gp_p2p_verdict_clear(GpP2pVerdict *v)
{
    g_clear_pointer(&v->reason, g_free);
}

typedef struct {
    GString *redirects;         /* "0000:02:01.0 (RR CR)" ... */
    GString *unknown;           /* devices whose ACS could not be read */
} AcsScan;

static void acs_check(AcsScan *scan, const GpDevice *dev)
{
    if (!dev->acs_known) {
        g_string_append_printf(scan->unknown, "%s%s",
                               scan->unknown->len ? ", " : "", dev->bdf);
        return;
    }
    if (dev->acs.present && (dev->acs.ctrl & GP_ACS_REDIRECT_MASK)) {
        g_autofree char *bits =
            gp_acs_bits_string(dev->acs.ctrl & GP_ACS_REDIRECT_MASK);

        g_string_append_printf(scan->redirects, "%s%s (%s)",
                               scan->redirects->len ? ", " : "", dev->bdf,
                               bits);
    }
}

static const char *hb_desc(const GpHostBridge *hb, char *buf, size_t len)
{
    if (hb->root_bdf[0]) {
        g_snprintf(buf, len, "%s (%04x:%04x at %s)", hb->name, hb->vendor,
                   hb->device, hb->root_bdf);
    } else {
        g_snprintf(buf, len, "%s (no device at 00.0 of its bus)", hb->name);
    }
    return buf;
}

/* Linux's cpu_supports_p2pdma() and host_bridge_whitelist(). */
static GpP2pKind host_bridge_rule(const GpTopology *topo, const GpDevice *a,
                                  const GpDevice *b, GString *why)
{
    const struct gp_hostbridge_entry *ea, *eb;
    char da[96], db[96];

    if (topo->cpu_vendor == GP_CPU_VENDOR_AMD &&
        topo->cpu_family >= GP_AMD_P2P_MIN_FAMILY) {
        g_string_append_printf(why, "AMD CPU family %xh forwards P2P between "
                               "root ports", topo->cpu_family);
        return GP_P2P_HOST_BRIDGE;
    }
    ea = a->host->root_bdf[0] ?
         gp_hostbridge_lookup(a->host->vendor, a->host->device) : NULL;
    eb = b->host->root_bdf[0] ?
         gp_hostbridge_lookup(b->host->vendor, b->host->device) : NULL;
    hb_desc(a->host, da, sizeof(da));
    hb_desc(b->host, db, sizeof(db));
    if (a->host == b->host && ea) {
        g_string_append_printf(why, "host bridge %s (%s) forwards P2P", da,
                               ea->name);
        return GP_P2P_HOST_BRIDGE;
    }
    if (a->host != b->host && ea && eb &&
        !(ea->flags & GP_HOSTBRIDGE_REQ_SAME_HOST_BRIDGE) &&
        !(eb->flags & GP_HOSTBRIDGE_REQ_SAME_HOST_BRIDGE)) {
        g_string_append_printf(why, "host bridges %s and %s forward P2P "
                               "between each other", da, db);
        return GP_P2P_HOST_BRIDGE;
    }
    if (topo->cpu_vendor == GP_CPU_VENDOR_UNKNOWN) {
        g_string_append_printf(why, "host bridge %s is not on the P2P list "
                               "and the CPU vendor is unknown (no "
                               "proc/cpuinfo), so AMD Zen forwarding cannot "
                               "be ruled in or out", da);
        return GP_P2P_UNKNOWN;
    }
    if (a->host == b->host || !ea) {
        g_string_append_printf(why, "host bridge %s is not known to forward "
                               "P2P", da);
    } else if (!eb) {
        g_string_append_printf(why, "host bridge %s is not known to forward "
                               "P2P", db);
    } else {
        g_string_append_printf(why, "host bridges %s and %s forward P2P only "
                               "within one host bridge", da, db);
    }
    return GP_P2P_NONE;
}

void gp_p2p_verdict(const GpTopology *topo, const GpDevice *a,
                    const GpDevice *b, GpP2pVerdict *v)
{
    AcsScan scan = { g_string_new(NULL), g_string_new(NULL) };
    g_autoptr(GString) why = g_string_new(NULL);
    const GpDevice *pa, *pb, *common = NULL;
    int dist_a = 0, dist_b = 0;

    memset(v, 0, sizeof(*v));
    /* The walk of p2pdma's calc_map_type_and_dist(), provider = a. */
    for (pa = a; pa; pa = upstream(pa), dist_a++) {
        acs_check(&scan, pa);
        for (pb = b, dist_b = 0; pb; pb = upstream(pb), dist_b++) {
            if (pa == pb) {
                common = pa;
                break;
            }
        }
        if (common) {
            break;
        }
    }
    if (common) {
        for (pb = b; pb && pb != common; pb = upstream(pb)) {
            acs_check(&scan, pb);
        }
        v->common = common;
    } else {
        dist_b = 0;
        for (pb = b; pb; pb = upstream(pb)) {
            dist_b++;
        }
    }
    v->distance = dist_a + dist_b;

    if (scan.unknown->len) {
        v->kind = GP_P2P_UNKNOWN;
        g_string_append_printf(why, "ACS state unknown: extended config "
                               "space of %s not readable (needs root)",
                               scan.unknown->str);
    } else if (common && !scan.redirects->len) {
        v->kind = GP_P2P_DIRECT;
        if (common == a || common == b) {
            g_string_append_printf(why, "same device path through %s",
                                   common->bdf);
        } else {
            g_string_append_printf(why, "common upstream bridge %s, no ACS "
                                   "redirect on the path", common->bdf);
        }
    } else {
        if (common) {
            g_string_append_printf(why, "common upstream bridge %s but ACS "
                                   "Control redirects P2P upstream at %s; ",
                                   common->bdf, scan.redirects->str);
        } else {
            g_string_append(why, "no common upstream bridge; ");
        }
        v->kind = host_bridge_rule(topo, a, b, why);
    }
    v->reason = g_string_free(g_steal_pointer(&why), FALSE);
    g_string_free(scan.redirects, TRUE);
    g_string_free(scan.unknown, TRUE);
}
