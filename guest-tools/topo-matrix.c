/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The GPU topology matrix of the text report, in the cells of
 * `nvidia-smi topo -m`: NV# where NVLinks join two GPUs, else the PCIe
 * path class. The class is that of the core library's gp_path_classify()
 * (lib/p2p.c), computed from what the model keeps of each GPU: its
 * uplinks (the GPU and its upstream bridges, nearest first) and NUMA node.
 */
#include <string.h>

#include "topo-matrix.h"

/* NVML's links between @a and @b: the pair's count where CUDA made the
 * pair (verify_nvml_pairs() also counts links behind an NVSwitch), else
 * the links of @a whose far end is @b. */
static unsigned nvlinks_between(const VerifyReport *r, guint a, guint b)
{
    const VerifyGpu *ga = &g_array_index(r->gpus, VerifyGpu, a);
    const VerifyGpu *gb = &g_array_index(r->gpus, VerifyGpu, b);
    const VerifyPair *p = r->pairs ? verify_pair_find(r, a, b) : NULL;
    unsigned n = 0;
    size_t l;

    if (p) {
        return p->nvlinks;
    }
    for (l = 0; l < G_N_ELEMENTS(ga->nvlink_peer); l++) {
        n += !g_ascii_strcasecmp(ga->nvlink_peer[l], gb->bdf);
    }
    return n;
}

/* The root bus ("dddd:bb") of @g's topmost uplink: its host bridge. */
static bool host_bridge(const VerifyGpu *g, char out[8])
{
    const char *top = g->uplinks[g->n_uplinks - 1];

    if (strlen(top) < 7) {
        return false;
    }
    g_strlcpy(out, top, 8);
    return true;
}

static int uplink_index(const VerifyGpu *g, const char *bdf)
{
    unsigned i;

    for (i = 0; i < g->n_uplinks; i++) {
        if (!strcmp(g->uplinks[i], bdf)) {
            return (int)i;
        }
    }
    return -1;
}

/*
 * The switch a bridge belongs to, as gp_device_switch() groups ports:
 * below a root port, upstream and downstream ports alternate, so counted
 * from the root port (depth 0) an odd depth is a switch's upstream port
 * and an even one a downstream port, whose switch is its parent's.
 */
static const char *bridge_unit(const VerifyGpu *g, unsigned i)
{
    unsigned depth = g->n_uplinks - 1 - i;

    return depth > 0 && depth % 2 == 0 ? g->uplinks[i + 1] : g->uplinks[i];
}

/* Distinct switches (and bridges) on the path through @common: PIX or PXB. */
static const char *below_host(const VerifyGpu *ga, const VerifyGpu *gb,
                              const char *common)
{
    const VerifyGpu *ends[2] = { ga, gb };
    const char *units[2 * VERIFY_MAX_UPLINKS];
    unsigned n = 0, k, i, j;

    for (k = 0; k < 2; k++) {
        int top = uplink_index(ends[k], common);

        for (i = 1; i <= (unsigned)top; i++) {
            const char *u = bridge_unit(ends[k], i);

            for (j = 0; j < n && strcmp(units[j], u); j++) {
            }
            if (j == n) {
                units[n++] = u;
            }
        }
    }
    return n <= 1 ? "PIX" : "PXB";
}

static const char *pcie_class(const VerifyGpu *ga, const VerifyGpu *gb)
{
    char ha[8], hb[8];
    unsigned i;

    if (!ga->n_uplinks || !gb->n_uplinks ||
        ga->n_uplinks == VERIFY_MAX_UPLINKS ||
        gb->n_uplinks == VERIFY_MAX_UPLINKS ||
        !host_bridge(ga, ha) || !host_bridge(gb, hb)) {
        return "?";     /* no uplinks, or perhaps cut short */
    }
    if (strcmp(ha, hb)) {
        return ga->numa_node == gb->numa_node ? "NODE" : "SYS";
    }
    if (uplink_index(ga, gb->bdf) >= 0 || uplink_index(gb, ga->bdf) >= 0) {
        return "PIX";   /* one is the other's bridge */
    }
    for (i = 1; i < ga->n_uplinks; i++) {
        if (uplink_index(gb, ga->uplinks[i]) > 0) {
            return below_host(ga, gb, ga->uplinks[i]);
        }
    }
    return "PHB";
}

char *verify_topo_cell(const VerifyReport *r, guint a, guint b)
{
    unsigned n;

    if (a == b) {
        return g_strdup("X");
    }
    n = nvlinks_between(r, a, b);
    if (n) {
        return g_strdup_printf("NV%u", n);
    }
    return g_strdup(pcie_class(&g_array_index(r->gpus, VerifyGpu, a),
                               &g_array_index(r->gpus, VerifyGpu, b)));
}

char *verify_topo_title(const VerifyReport *r)
{
    if (!r->nvml_status) {
        return g_strdup("Topology (as nvidia-smi topo -m: NV# = # NVLinks, "
                        "else the PCIe path class)");
    }
    return g_strdup_printf("Topology (the PCIe path class as nvidia-smi "
                           "topo -m; NVLinks not read: %s)", r->nvml_status);
}

char *verify_topo_matrix(const VerifyReport *r)
{
    GString *out = g_string_new("");
    guint a, b;

    g_string_append_printf(out, "%-6s", "");
    for (b = 0; b < r->gpus->len; b++) {
        g_autofree char *name = g_strdup_printf("GPU%u", b);

        g_string_append_printf(out, " %6s", name);
    }
    g_string_append_c(out, '\n');
    for (a = 0; a < r->gpus->len; a++) {
        g_string_append_printf(out, "GPU%-3u", a);
        for (b = 0; b < r->gpus->len; b++) {
            g_autofree char *cell = verify_topo_cell(r, a, b);

            g_string_append_printf(out, " %6s", cell);
        }
        g_string_append_c(out, '\n');
    }
    return g_string_free(out, FALSE);
}
