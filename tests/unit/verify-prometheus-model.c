/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Prints the metrics of a made-up result model: two GPUs, both pair
 * directions, one figure unknown, an RDMA device. This machine has no GPU,
 * so no run fills these series; test_verify_prometheus.py parses the text.
 */
#include <stdio.h>
#include <string.h>

#include "verify.h"

static void figure(Figure *f, double median)
{
    f->median = f->min = f->max = median;
    f->samples = 3;
}

int main(void)
{
    VerifyOptions o = { .samples = 3, .quick = TRUE };
    VerifyReport r = { 0 };
    VerifyGpu g = { 0 };
    VerifyPair p = { 0 };
    VerifyRdma d = { 0 };
    g_autofree char *text = NULL;

    r.gpus = g_array_new(FALSE, TRUE, sizeof(VerifyGpu));
    r.pairs = g_array_new(FALSE, TRUE, sizeof(VerifyPair));
    r.rdma = g_array_new(FALSE, TRUE, sizeof(VerifyRdma));
    r.nics = g_array_new(FALSE, TRUE, sizeof(VerifyNic));
    r.notes = g_ptr_array_new_with_free_func(g_free);

    g_strlcpy(g.bdf, "0000:01:00.0", sizeof(g.bdf));
    g.clique = 7;
    g.has_cap = g.cap_valid = true;
    figure(&g.agg[AGG_ALL_TO_ONE], 400);
    /* Health: no ECC rise, two Xid events, NVLink 3's CRC-data errors
     * at 5 a second (a warning); the rest never read. */
    r.health_read = true;
    g.health[HEALTH_ECC_UNCORRECTED] = (VerifyHealthValue){
        HEALTH_READ_BOTH, 0, 4, 4, 0, G_USEC_PER_SEC };
    g.health[HEALTH_XID_EVENTS] = (VerifyHealthValue){
        HEALTH_READ_BOTH, 0, 0, 2, 0, G_USEC_PER_SEC };
    g.nvlinks_active = 1u << 3;
    g.link_health[3][HEALTH_NVLINK_CRC_DATA] = (VerifyHealthValue){
        HEALTH_READ_BOTH, 0, 10, 15, 0, G_USEC_PER_SEC };
    g.link_health[3][HEALTH_NVLINK_REPLAY] = (VerifyHealthValue){
        HEALTH_READ_ERROR, 999, 0, 0, 0, 0 };
    g_array_append_val(r.gpus, g);
    g_strlcpy(g.bdf, "0000:02:00.0", sizeof(g.bdf));
    g.cap_valid = false;
    memset(g.agg, 0, sizeof(g.agg));
    memset(g.health, 0, sizeof(g.health));
    memset(g.link_health, 0, sizeof(g.link_health));
    g.nvlinks_active = 0;
    figure(&g.agg[AGG_H2D], 55.5);
    g_array_append_val(r.gpus, g);

    p.a = 0;
    p.b = 1;
    p.peer_access = 1;
    p.link_limit_gbps = 450;
    p.verified_ce = CHECK_OK;
    p.verified_sm = CHECK_FAILED;
    p.verified_sm_read = CHECK_UNTESTABLE;
    figure(&p.fig[FIG_UNI_CE], 380.5);
    figure(&p.fig[FIG_UNI_CE_READ], 370.25);
    p.nvlink_fault = true;
    figure(&p.fig[FIG_LAT_SM], 2.5);
    g_array_append_val(r.pairs, p);
    p.a = 1;
    p.b = 0;
    p.peer_access = -1;
    p.link_limit_gbps = 0;
    p.verified_ce = p.verified_sm = p.verified_sm_read = CHECK_NOT_RUN;
    p.nvlink_fault = false;
    memset(p.fig, 0, sizeof(p.fig));
    figure(&p.fig[FIG_UNI_CE], 12.25);
    g_array_append_val(r.pairs, p);

    g_strlcpy(d.name, "mlx5_0", sizeof(d.name));
    d.host_mr = d.host_write = CHECK_OK;
    g_array_append_val(r.rdma, d);

    /* Quote, backslash and line feed must come out escaped. */
    g_strlcpy(r.driver_version, "570.1 \"beta\\x\"\n", sizeof(r.driver_version));
    r.p2p_broken = true;
    r.seconds = 1.5;

    text = verify_prometheus_text(&o, &r, G_GINT64_CONSTANT(1700000000) *
                                  G_USEC_PER_SEC);
    fputs(text, stdout);
    g_array_free(r.gpus, TRUE);
    g_array_free(r.pairs, TRUE);
    g_array_free(r.rdma, TRUE);
    g_array_free(r.nics, TRUE);
    g_ptr_array_free(r.notes, TRUE);
    return 0;
}
