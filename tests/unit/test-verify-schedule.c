/* SPDX-License-Identifier: GPL-2.0-or-later */
/* gpup2p-verify's schedule: which GPU pairs are measured together. */
#include <string.h>

#include "verify.h"

/* GPUs of the two-node host in sysfs-builder.c: A and B behind one switch
 * under root port 00:01.0, C under 00:02.0, F under 40:01.0, D under
 * 80:01.0; the chains are what pci.c records from the core topology. */
static VerifyGpu gpus[5];

static void chain(VerifyGpu *g, const char *const *bdfs)
{
    memset(g, 0, sizeof(*g));
    for (; *bdfs; bdfs++) {
        g_strlcpy(g->uplinks[g->n_uplinks++], *bdfs, sizeof(g->uplinks[0]));
    }
}

static void build_host(void)
{
    chain(&gpus[0], (const char *[]){ "0000:03:00.0", "0000:02:00.0",
                                      "0000:01:00.0", "0000:00:01.0", NULL });
    chain(&gpus[1], (const char *[]){ "0000:04:00.0", "0000:02:01.0",
                                      "0000:01:00.0", "0000:00:01.0", NULL });
    chain(&gpus[2], (const char *[]){ "0000:05:00.0", "0000:00:02.0", NULL });
    chain(&gpus[3], (const char *[]){ "0000:41:00.0", "0000:40:01.0", NULL });
    chain(&gpus[4], (const char *[]){ "0000:81:00.0", "0000:80:01.0", NULL });
}

static bool always(int a, int b, int c, int d, gpointer data)
{
    (void)a; (void)b; (void)c; (void)d; (void)data;
    return true;
}

static bool pcie(int a, int b, int c, int d, gpointer data)
{
    (void)data;
    return verify_pcie_paths_disjoint(&gpus[a], &gpus[b], &gpus[c],
                                      &gpus[d]);
}

/* Every unordered pair exactly once, pairs of a batch disjoint. */
static void check_cover(GPtrArray *batches, guint n)
{
    g_autofree int *seen = g_new0(int, n * n);

    for (guint i = 0; i < batches->len; i++) {
        GArray *b = g_ptr_array_index(batches, i);
        g_autofree int *used = g_new0(int, n);

        g_assert_cmpuint(b->len % 2, ==, 0);
        g_assert_cmpuint(b->len, >, 0);
        for (guint k = 0; k < b->len; k++) {
            int g = g_array_index(b, int, k);

            g_assert_cmpint(g, >=, 0);
            g_assert_cmpint(g, <, (int)n);
            g_assert_cmpint(used[g]++, ==, 0);
        }
        for (guint k = 0; k + 1 < b->len; k += 2) {
            int a = g_array_index(b, int, k), c = g_array_index(b, int, k + 1);

            g_assert_cmpint(a, <, c);
            seen[a * n + c]++;
        }
    }
    for (guint a = 0; a < n; a++) {
        for (guint c = a + 1; c < n; c++) {
            g_assert_cmpint(seen[a * n + c], ==, 1);
        }
    }
}

static void test_matchings(void)
{
    for (guint n = 1; n <= 9; n++) {
        g_autoptr(GPtrArray) batches = verify_schedule(n, always, NULL);

        check_cover(batches, n);
        /* Perfect matchings: n - 1 rounds (n even) or n (odd) of n / 2. */
        if (n > 1) {
            g_assert_cmpuint(batches->len, ==, n % 2 ? n : n - 1);
        }
        for (guint i = 0; i < batches->len; i++) {
            g_assert_cmpuint(((GArray *)g_ptr_array_index(batches, i))->len,
                             ==, 2 * (n / 2));
        }
    }
}

static void test_pcie_paths(void)
{
    g_autoptr(GPtrArray) batches = NULL;

    build_host();
    /* A-B stays inside the switch; C-F crosses the root complex: apart. */
    g_assert_true(verify_pcie_paths_disjoint(&gpus[0], &gpus[1], &gpus[2],
                                             &gpus[3]));
    /* A-C and B-F both climb the switch's uplink: together they share it. */
    g_assert_false(verify_pcie_paths_disjoint(&gpus[0], &gpus[2], &gpus[1],
                                              &gpus[3]));
    /* A-C and F-D share nothing below the root complex. */
    g_assert_true(verify_pcie_paths_disjoint(&gpus[0], &gpus[2], &gpus[3],
                                             &gpus[4]));
    batches = verify_schedule(5, pcie, NULL);
    check_cover(batches, 5);
    for (guint i = 0; i < batches->len; i++) {
        GArray *b = g_ptr_array_index(batches, i);

        for (guint k = 0; k + 1 < b->len; k += 2) {
            for (guint j = k + 2; j + 1 < b->len; j += 2) {
                g_assert_true(pcie(g_array_index(b, int, k),
                                   g_array_index(b, int, k + 1),
                                   g_array_index(b, int, j),
                                   g_array_index(b, int, j + 1), NULL));
            }
        }
    }
    /* Splitting costs batches: more than the 5 rounds of matchings. */
    g_assert_cmpuint(batches->len, >, 5);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/verify-schedule/matchings", test_matchings);
    g_test_add_func("/verify-schedule/pcie-paths", test_pcie_paths);
    return g_test_run();
}
