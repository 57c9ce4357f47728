/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Which GPU pairs may be measured at the same time: a round-robin schedule
 * of perfect matchings (every unordered pair once, each round a set of
 * disjoint pairs), each round then split so that only pairs on independent
 * links share a batch. On NVLink every pair has links of its own; on PCIe
 * two pairs are independent when their paths share no link, a link being
 * the one above a device, up to (not including) the pair's lowest common
 * upstream bridge, as the core library's topology gives it.
 */
#include <string.h>

#include "verify.h"

/* The links of the path between @a and @b: chain entries below the
 * common part of the two chains. */
static guint path_links(const VerifyGpu *a, const VerifyGpu *b,
                        const char **out)
{
    guint na = a->n_uplinks, nb = b->n_uplinks, n = 0, i;

    while (na && nb && !strcmp(a->uplinks[na - 1], b->uplinks[nb - 1])) {
        na--;
        nb--;
    }
    for (i = 0; i < na; i++) {
        out[n++] = a->uplinks[i];
    }
    for (i = 0; i < nb; i++) {
        out[n++] = b->uplinks[i];
    }
    return n;
}

bool verify_pcie_paths_disjoint(const VerifyGpu *a, const VerifyGpu *b,
                                const VerifyGpu *c, const VerifyGpu *d)
{
    const char *p[2 * VERIFY_MAX_UPLINKS], *q[2 * VERIFY_MAX_UPLINKS];
    guint np = path_links(a, b, p), nq = path_links(c, d, q), i, j;

    for (i = 0; i < np; i++) {
        for (j = 0; j < nq; j++) {
            if (!strcmp(p[i], q[j])) {
                return false;
            }
        }
    }
    return true;
}

GPtrArray *verify_schedule(guint n, VerifyIndependentFn independent,
                           gpointer data)
{
    GPtrArray *batches = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_array_unref);
    guint m = n + (n & 1), r, k;

    for (r = 0; m > 1 && r < m - 1; r++) {
        GArray *round = g_array_new(FALSE, FALSE, sizeof(int));
        guint first = batches->len;

        /* Circle method: m - 1 fixed, the others turn one step a round. */
        for (k = 0; k < m / 2; k++) {
            int a = k == 0 ? (int)m - 1 : (int)((r + k) % (m - 1));
            int b = k == 0 ? (int)r : (int)((r + m - 1 - k) % (m - 1));
            int lo = MIN(a, b), hi = MAX(a, b);

            if ((guint)hi < n) {
                g_array_append_val(round, lo);
                g_array_append_val(round, hi);
            }
        }
        /* First fit: each pair joins the first batch of this round whose
         * pairs are all independent of it. */
        for (k = 0; k + 1 < round->len; k += 2) {
            int a = g_array_index(round, int, k);
            int b = g_array_index(round, int, k + 1);
            GArray *home = NULL;

            for (guint bi = first; bi < batches->len && !home; bi++) {
                GArray *batch = g_ptr_array_index(batches, bi);
                bool fits = true;

                for (guint j = 0; j + 1 < batch->len && fits; j += 2) {
                    fits = independent(a, b, g_array_index(batch, int, j),
                                       g_array_index(batch, int, j + 1),
                                       data);
                }
                if (fits) {
                    home = batch;
                }
            }
            if (!home) {
                home = g_array_new(FALSE, FALSE, sizeof(int));
                g_ptr_array_add(batches, home);
            }
            g_array_append_val(home, a);
            g_array_append_val(home, b);
        }
        g_array_unref(round);
    }
    return batches;
}
