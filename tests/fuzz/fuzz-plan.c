/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the clique planner over arbitrary pair verdicts. The
 * first byte gives the number of devices, the rest the pair matrix, one
 * bit per pair. Whatever it is given, no two devices that may not do P2P
 * may share an id, and ids stay within the 16 the capability holds.
 */
#include <stdint.h>
#include <string.h>

#include "gpup2p/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
    const uint8_t *bits;
    size_t nbits;
    unsigned n;
} Pairs;

static bool pair_allowed(unsigned i, unsigned j, void *ctx)
{
    const Pairs *p = ctx;
    unsigned lo = MIN(i, j), hi = MAX(i, j);
    size_t bit = (size_t)lo * p->n + hi;

    return bit < p->nbits && (p->bits[bit / 8] >> (bit % 8)) & 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Pairs p;
    int ids[64];
    GError *err = NULL;
    unsigned i, j;
    int r;

    if (size < 1) {
        return 0;
    }
    p.n = data[0] % G_N_ELEMENTS(ids) + 1;
    p.bits = data + 1;
    p.nbits = (size - 1) * 8;
    r = gp_plan_group(p.n, pair_allowed, &p, ids, &err);
    if (r < 0) {
        g_assert(err != NULL);
        g_clear_error(&err);
        return 0;
    }
    g_assert(err == NULL);
    for (i = 0; i < p.n; i++) {
        g_assert(ids[i] >= -1 && ids[i] < 16);
        for (j = i + 1; j < p.n; j++) {
            g_assert(ids[i] < 0 || ids[i] != ids[j] ||
                     pair_allowed(i, j, &p));
        }
    }
    return 0;
}
