/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpup2p-verify's topology matrix (guest-tools/topo-matrix.c, formatting
 * the report model that pci.c fills as the tool does, path classes
 * included; no CUDA or NVML is loaded):
 * - on the real two-H200 VM capture (tests/fixtures/h200x2-vm), with the
 *   NVLink counts that VM's nvidia-smi gave, every GPU-GPU cell is the
 *   one of its `nvidia-smi topo -m` (meta/nvidia-smi-topo-m.txt);
 * - without NVLinks, the cells are the core library's path classes
 *   (gp_path_classify) on a host with every class, PXB included, and
 *   with a GPU below more bridges than the model keeps of its uplinks.
 * The NVLink counts are the test's (nvidia-smi's, by verify_nvml_pairs()'s
 * rule); only how NV cells are written is compared with nvidia-smi.
 */
#include <stdio.h>
#include <string.h>

#include "gpup2p/p2p.h"
#include "sysfs-builder.h"
#include "topo-matrix.h"

static char *meta(const char *name)
{
    g_autofree char *path = g_test_build_filename(
        G_TEST_DIST, "..", "fixtures", "h200x2-vm", "meta", name, NULL);
    gchar *text = NULL;

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    return text;
}

static void read_gpus(VerifyReport *r, const char *root)
{
    VerifyOptions o = { .sysfs_root = (char *)root, .pci_only = TRUE };

    verify_report_init(r);
    g_assert_true(verify_pci(&o, r));
}

/* "GPU n: ..." then "Link l: 26.562 GB/s" per active link (nvidia-smi
 * nvlink -s; an inactive link reads "<inactive>"). */
static void nvlinks_from_smi(VerifyReport *r, const char *text)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    VerifyGpu *g = NULL;
    size_t i;

    for (i = 0; lines[i]; i++) {
        unsigned n, l;
        double gbps;

        if (sscanf(lines[i], "GPU %u:", &n) == 1) {
            g_assert_cmpuint(n, <, r->gpus->len);
            g = &g_array_index(r->gpus, VerifyGpu, n);
        } else if (sscanf(lines[i], " Link %u: %lf GB/s", &l, &gbps) == 2) {
            g_assert_nonnull(g);
            g->nvlinks_total++;
        }
    }
}

/*
 * The pairs as verify_nvml_pairs() makes them where the far ends are
 * NVSwitches the VM does not show: NVML's P2P status of the pair (here
 * `nvidia-smi topo -p2p r`, OK) gives it the links of its narrower end.
 */
static void pairs_from_smi(VerifyReport *r, const char *p2p)
{
    guint a, b;

    g_assert_nonnull(strstr(p2p, "GPU0\tX\tOK"));
    g_assert_nonnull(strstr(p2p, "GPU1\tOK\tX"));
    for (a = 0; a < r->gpus->len; a++) {
        for (b = 0; b < r->gpus->len; b++) {
            const VerifyGpu *ga = &g_array_index(r->gpus, VerifyGpu, a);
            const VerifyGpu *gb = &g_array_index(r->gpus, VerifyGpu, b);
            VerifyPair p = { .a = a, .b = b, .peer_access = 1 };

            if (a != b) {
                p.nvlinks = MIN(ga->nvlinks_total, gb->nvlinks_total);
                g_array_append_val(r->pairs, p);
            }
        }
    }
}

static void test_h200x2_vm_as_nvidia_smi(void)
{
    g_autofree char *root = g_test_build_filename(G_TEST_DIST, "..",
                                                  "fixtures", "h200x2-vm",
                                                  NULL);
    g_autofree char *links = meta("nvidia-smi-nvlink-s.txt");
    g_autofree char *p2p = meta("nvidia-smi-topo-p2p-r.txt");
    g_autofree char *smi = meta("nvidia-smi-topo-m.txt");
    g_auto(GStrv) rows = g_strsplit(smi, "\n", -1);
    g_autofree char *text = NULL, *title = NULL;
    VerifyReport r;
    guint a, b, checked = 0;

    read_gpus(&r, root);
    g_assert_cmpuint(r.gpus->len, ==, 2);
    g_assert_cmpstr(g_array_index(r.gpus, VerifyGpu, 0).bdf, ==,
                    "0000:00:06.0");
    nvlinks_from_smi(&r, links);
    pairs_from_smi(&r, p2p);
    /* nvidia-smi's rows: "GPU0\t X \tNV18\t0-31\t...": GPU columns first. */
    for (a = 0; rows[a]; a++) {
        g_auto(GStrv) cells = g_strsplit(rows[a], "\t", -1);
        unsigned row;

        if (!cells[0] || sscanf(cells[0], "GPU%u", &row) != 1) {
            continue;
        }
        for (b = 0; b < r.gpus->len; b++) {
            g_autofree char *ours = verify_topo_cell(&r, row, b);

            g_assert_nonnull(cells[b + 1]);
            g_assert_cmpstr(ours, ==, g_strstrip(cells[b + 1]));
            checked++;
        }
    }
    g_assert_cmpuint(checked, ==, 4);
    text = verify_topo_matrix(&r);
    g_assert_cmpstr(text, ==, "         GPU0   GPU1\n"
                              "GPU0        X   NV18\n"
                              "GPU1     NV18      X\n");
    title = verify_topo_title(&r);
    g_assert_cmpstr(title, ==, "Topology (as nvidia-smi topo -m: NV# = # "
                    "NVLinks, else the PCIe path class)");
    verify_report_clear(&r);
}

/* Below the two-node host: a second switch under the first, GPU at 08. */
static void add_cascaded_gpu(SysfsBuilder *sb)
{
    sb_add(sb, "0000:01:00.0", "0000:02:02.0", SB_SWITCH_DOWN, 0x1000,
           0xc010, 0x060400, 0, 20, "pcieport");
    sb_add(sb, "0000:02:02.0", "0000:06:00.0", SB_SWITCH_UP, 0x1000, 0xc010,
           0x060400, 0, 21, "pcieport");
    sb_add(sb, "0000:06:00.0", "0000:07:00.0", SB_SWITCH_DOWN, 0x1000,
           0xc010, 0x060400, 0, 22, "pcieport");
    sb_add(sb, "0000:07:00.0", "0000:08:00.0", SB_ENDPOINT, 0x10de, 0x2335,
           0x030200, 0, 23, "vfio-pci");
}

/* Below GPU A's switch, five more switches: ten bridges above the GPU at
 * 10:00.0, more than the VERIFY_MAX_UPLINKS the model keeps. */
static void add_deep_gpu(SysfsBuilder *sb)
{
    char parent[16] = "0000:02:03.0", bdf[16];
    unsigned bus = 0x0a, group = 30;

    sb_add(sb, "0000:01:00.0", parent, SB_SWITCH_DOWN, 0x1000, 0xc010,
           0x060400, 0, group++, "pcieport");
    for (; bus < 0x10; bus++) {
        g_snprintf(bdf, sizeof(bdf), "0000:%02x:00.0", bus);
        sb_add(sb, parent, bdf, bus % 2 ? SB_SWITCH_DOWN : SB_SWITCH_UP,
               0x1000, 0xc010, 0x060400, 0, group++, "pcieport");
        g_strlcpy(parent, bdf, sizeof(parent));
    }
    sb_add(sb, parent, "0000:10:00.0", SB_ENDPOINT, 0x10de, 0x2335,
           0x030200, 0, group, "vfio-pci");
}

static void test_pcie_classes_as_library(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) topo = NULL;
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    VerifyReport r;
    guint a, b;

    sb_two_node_host(sb, 0x29c0);
    add_cascaded_gpu(sb);
    add_deep_gpu(sb);
    topo = gp_topo_read(sb_root(sb), NULL);
    g_assert_nonnull(topo);
    read_gpus(&r, sb_root(sb));
    g_assert_cmpuint(r.gpus->len, ==, 7);
    g_assert_cmpuint(r.paths->len, ==, 7 * 6);
    for (a = 0; a < r.gpus->len; a++) {
        for (b = 0; b < r.gpus->len; b++) {
            const VerifyGpu *ga = &g_array_index(r.gpus, VerifyGpu, a);
            const VerifyGpu *gb = &g_array_index(r.gpus, VerifyGpu, b);
            const char *lib = gp_path_type_name(gp_path_classify(
                gp_topo_find(topo, ga->bdf), gp_topo_find(topo, gb->bdf)));
            g_autofree char *ours = verify_topo_cell(&r, a, b);

            g_test_message("%s %s: %s", ga->bdf, gb->bdf, ours);
            g_assert_cmpstr(ours, ==, lib);
            g_assert_cmpstr(ours, !=, "?");
            g_hash_table_add(seen, (gpointer)lib);
        }
    }
    /* Every class is met: X, PIX, PXB, PHB, NODE, SYS. */
    g_assert_cmpuint(g_hash_table_size(seen), ==, 6);
    verify_report_clear(&r);
}

/* Links named by their far end, without pairs (--pci-only, or a GPU CUDA
 * does not see); a pair whose class the model lacks gives "?", not a
 * guess. */
static void test_named_links_and_unknown(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    VerifyReport r;
    g_autofree char *ab = NULL, *ba = NULL, *cut = NULL;
    VerifyGpu *a, *b;
    unsigned l;

    sb_two_node_host(sb, 0x29c0);
    read_gpus(&r, sb_root(sb));
    a = &g_array_index(r.gpus, VerifyGpu, 0);
    b = &g_array_index(r.gpus, VerifyGpu, 1);
    for (l = 0; l < 4; l++) {
        g_strlcpy(a->nvlink_peer[l], b->bdf, sizeof(a->nvlink_peer[l]));
        g_strlcpy(b->nvlink_peer[l], a->bdf, sizeof(b->nvlink_peer[l]));
    }
    ab = verify_topo_cell(&r, 0, 1);
    ba = verify_topo_cell(&r, 1, 0);
    g_assert_cmpstr(ab, ==, "NV4");
    g_assert_cmpstr(ba, ==, "NV4");
    g_array_set_size(r.paths, 0);
    cut = verify_topo_cell(&r, 0, 2);
    g_assert_cmpstr(cut, ==, "?");
    verify_report_clear(&r);
}

/* NVML not read: the PCIe class where NVLinks may join the GPUs, under a
 * heading that says NVLinks were not read, and why; never NV#'s legend. */
static void test_title_without_nvml(void)
{
    g_autofree char *root = g_test_build_filename(G_TEST_DIST, "..",
                                                  "fixtures", "h200x2-vm",
                                                  NULL);
    g_autofree char *title = NULL, *text = NULL;
    VerifyReport r;

    read_gpus(&r, root);
    r.nvml_status = g_strdup("not run (--pci-only)");
    title = verify_topo_title(&r);
    text = verify_topo_matrix(&r);
    g_assert_cmpstr(title, ==, "Topology (the PCIe path class as nvidia-smi "
                    "topo -m; NVLinks not read: not run (--pci-only))");
    g_assert_null(strstr(title, "NV#"));
    g_assert_cmpstr(text, ==, "         GPU0   GPU1\n"
                              "GPU0        X    PHB\n"
                              "GPU1      PHB      X\n");
    /* CUDA failed, so NVML never ran: its status is unset, and the title
     * must still not promise NV cells. */
    g_clear_pointer(&r.nvml_status, g_free);
    r.cuda_status = g_strdup("CUDA sees no GPU");
    g_free(title);
    title = verify_topo_title(&r);
    g_assert_cmpstr(title, ==, "Topology (the PCIe path class as nvidia-smi "
                    "topo -m; NVLinks not read: not used (CUDA "
                    "unavailable))");
    verify_report_clear(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/verify-topo/h200x2-vm-as-nvidia-smi",
                    test_h200x2_vm_as_nvidia_smi);
    g_test_add_func("/verify-topo/pcie-classes-as-library",
                    test_pcie_classes_as_library);
    g_test_add_func("/verify-topo/named-links-and-unknown",
                    test_named_links_and_unknown);
    g_test_add_func("/verify-topo/title-without-nvml",
                    test_title_without_nvml);
    return g_test_run();
}
