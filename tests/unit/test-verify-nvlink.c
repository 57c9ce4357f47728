/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NVLinks in gpup2p-verify's model and NCCL file (guest-tools/nvml.c and
 * nccl.c compiled in, on hand-made reports; no NVML is loaded):
 * - a GPU with an NVLink whose far end NVML could not name gets no
 *   <nvlink> at all, so NCCL's own NVML probe counts its links; a GPU
 *   whose every link is named gets them all, counted per far end;
 * - the per-link figure is NCCL's for the NVLink generation NVML reports
 *   (src/graph/topo.h: SM60 18.0, SM70 20.0, SM80 20.0, SM86 12.0,
 *   SM90 20.6, SM100 40.1 GB/s), else NCCL's by compute capability.
 */
#include <string.h>

#include "verify.h"

static VerifyGpu gpu(const char *bdf, unsigned links, const char *peer,
                     unsigned unresolved)
{
    VerifyGpu g = { .clique = -1, .cuda_index = 0, .class_code = 0x030200,
                    .vendor = 0x10de, .device = 0x2335 };

    g_strlcpy(g.bdf, bdf, sizeof(g.bdf));
    g.n_uplinks = 1;
    g_strlcpy(g.uplinks[0], bdf, sizeof(g.uplinks[0]));
    for (unsigned l = 0; l < links; l++) {
        g_strlcpy(g.nvlink_peer[l], peer, sizeof(g.nvlink_peer[l]));
    }
    g.nvlinks_total = links + unresolved;
    g.nvlinks_unresolved = unresolved;
    return g;
}

static unsigned count(const char *hay, const char *needle)
{
    unsigned n = 0;

    for (const char *p = hay; (p = strstr(p, needle)); p++) {
        n++;
    }
    return n;
}

static void test_unresolved_link_leaves_gpu_to_nccl(void)
{
    VerifyReport r = { 0 };
    VerifyGpu a = gpu("0000:07:00.0", 4, "0000:08:00.0", 0);
    VerifyGpu b = gpu("0000:08:00.0", 3, "0000:07:00.0", 1);
    g_autofree char *xml = NULL;
    char *at_b;

    r.gpus = g_array_new(FALSE, TRUE, sizeof(VerifyGpu));
    r.nics = g_array_new(FALSE, TRUE, sizeof(VerifyNic));
    g_array_append_val(r.gpus, a);
    g_array_append_val(r.gpus, b);
    xml = verify_nccl_topo_xml(&r);
    /* A: all four links named, one element with count 4. */
    g_assert_cmpuint(count(xml, "<nvlink "), ==, 1);
    g_assert_nonnull(strstr(xml, "<nvlink target=\"0000:08:00.0\" "
                            "count=\"4\" tclass=\"0x030200\"/>"));
    /* B: one of four unnamed: no <nvlink>, not three of four. */
    at_b = strstr(xml, "busid=\"0000:08:00.0\"");
    g_assert_nonnull(at_b);
    g_assert_null(strstr(at_b, "<nvlink"));
    g_assert_true(g_str_has_prefix(strchr(at_b, '>') - 1, "/>"));
    g_array_free(r.gpus, TRUE);
    g_array_free(r.nics, TRUE);
}

static void test_nvlink_figures(void)
{
    /* nvmlNvlinkVersion_t values, any compute capability. */
    g_assert_cmpfloat(verify_nvlink_gbps(1, 0, 0), ==, 18.0);
    g_assert_cmpfloat(verify_nvlink_gbps(2, 0, 0), ==, 20.0);
    g_assert_cmpfloat(verify_nvlink_gbps(3, 0, 0), ==, 20.0);
    g_assert_cmpfloat(verify_nvlink_gbps(4, 8, 0), ==, 20.0);
    g_assert_cmpfloat(verify_nvlink_gbps(5, 8, 0), ==, 20.0);
    g_assert_cmpfloat(verify_nvlink_gbps(6, 9, 0), ==, 20.6);
    g_assert_cmpfloat(verify_nvlink_gbps(7, 10, 0), ==, 40.1);
    /* NCCL's exception for SM 8.6 holds whatever the version. */
    g_assert_cmpfloat(verify_nvlink_gbps(4, 8, 6), ==, 12.0);
    /* Version unknown: by compute capability, as NCCL does. */
    g_assert_cmpfloat(verify_nvlink_gbps(0, 10, 0), ==, 40.1);
    g_assert_cmpfloat(verify_nvlink_gbps(0, 9, 0), ==, 20.6);
    g_assert_cmpfloat(verify_nvlink_gbps(0, 7, 0), ==, 20.0);
    /* Neither known: unknown, never a made-up figure. */
    g_assert_cmpfloat(verify_nvlink_gbps(0, 0, 0), ==, 0.0);
    g_assert_cmpfloat(verify_nvlink_gbps(99, 0, 0), ==, 0.0);
}

/* A pair's limit: links times the older end's figure (NV18 on NVLink 4:
 * 370.8 GB/s, NCCL's "NVL[370.8]"; NVLink 5: 721.8). */
static void test_pair_limit(void)
{
    VerifyReport r = { 0 };
    VerifyGpu a = gpu("0000:07:00.0", 18, "0000:08:00.0", 0);
    VerifyGpu b = gpu("0000:08:00.0", 18, "0000:07:00.0", 0);
    VerifyPair p = { .a = 0, .b = 1 };

    r.gpus = g_array_new(FALSE, TRUE, sizeof(VerifyGpu));
    r.pairs = g_array_new(FALSE, TRUE, sizeof(VerifyPair));
    a.nvlink_version = b.nvlink_version = 6;
    g_array_append_val(r.gpus, a);
    g_array_append_val(r.gpus, b);
    g_array_append_val(r.pairs, p);
    verify_nvml_pairs(&r);
    g_assert_cmpstr(g_array_index(r.pairs, VerifyPair, 0).link, ==, "NV18");
    g_assert_cmpfloat_with_epsilon(
        g_array_index(r.pairs, VerifyPair, 0).link_limit_gbps, 370.8, 1e-9);
    g_array_index(r.gpus, VerifyGpu, 0).nvlink_version = 7;
    g_array_index(r.gpus, VerifyGpu, 1).nvlink_version = 7;
    verify_nvml_pairs(&r);
    g_assert_cmpfloat_with_epsilon(
        g_array_index(r.pairs, VerifyPair, 0).link_limit_gbps, 721.8, 1e-9);
    g_array_free(r.gpus, TRUE);
    g_array_free(r.pairs, TRUE);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/verify-nvlink/unresolved-link-leaves-gpu-to-nccl",
                    test_unresolved_link_leaves_gpu_to_nccl);
    g_test_add_func("/verify-nvlink/figures", test_nvlink_figures);
    g_test_add_func("/verify-nvlink/pair-limit", test_pair_limit);
    return g_test_run();
}
