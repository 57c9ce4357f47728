/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The GPU topology matrix of the text report, in the cells of
 * `nvidia-smi topo -m`: NV# where NVLinks join two GPUs, else the PCIe
 * path class. It only formats the report model: NVML's link counts, and
 * the class verify_pci() recorded for each pair from the core library's
 * gp_path_classify() (lib/p2p.c) over the PCI topology it read.
 */

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

char *verify_topo_cell(const VerifyReport *r, guint a, guint b)
{
    const char *cls;
    unsigned n;

    if (a == b) {
        return g_strdup("X");
    }
    n = nvlinks_between(r, a, b);
    if (n) {
        return g_strdup_printf("NV%u", n);
    }
    cls = verify_path_class(r, a, b);
    return g_strdup(cls ? cls : "?");
}

char *verify_topo_title(const VerifyReport *r)
{
    if (!r->nvml_status && !r->cuda_status) {
        return g_strdup("Topology (as nvidia-smi topo -m: NV# = # NVLinks, "
                        "else the PCIe path class)");
    }
    /* NVML runs only after CUDA found its GPUs. */
    return g_strdup_printf("Topology (the PCIe path class as nvidia-smi "
                           "topo -m; NVLinks not read: %s)",
                           r->nvml_status ? r->nvml_status :
                           "not used (CUDA unavailable)");
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
