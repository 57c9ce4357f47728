/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The verdict, decided once at the end. From the GPUs that PCI, NVML and
 * CUDA saw and the figures asked for, what had to be done: every GPU on
 * PCI used or named as hidden; every ordered pair of usable GPUs checked
 * by the copy engine, SM write and SM read; every requested figure with
 * samples on every such pair or GPU. The checks recorded what they did
 * in the result model (pair states, figures, lost GPUs); whatever had to
 * be done and was neither done nor failed is untested (exit 3), with a
 * note naming it. As DCGM's diagnostics and nvbandwidth's waived tests:
 * the run is judged against what was asked, not against what happened
 * to be reported. GPU health (NVML's counters around the run) is judged
 * here too: it is never owed, only a rise fails or warns. GPUDirect RDMA
 * of each GPU with its paired NIC (the one NCCL would use) is owed on
 * every port whose host memory moved, and is named where it was not done.
 */
#include <string.h>

#include "verify.h"

/* A GPU whose pairs had to be checked: CUDA uses it and it is not lost
 * (a lost GPU is exit 4 on its own). */
static bool gpu_usable(const VerifyGpu *g)
{
    return g->cuda_index >= 0 && !g->lost;
}

static bool pair_failed(const VerifyPair *p)
{
    return p->verified_ce == CHECK_FAILED || p->verified_sm == CHECK_FAILED ||
           p->verified_sm_read == CHECK_FAILED || p->nvlink_fault;
}

/* "CE check, SM write check, unidirectional_ce_gbps" of @p not done. */
static void pair_missing(const VerifyOptions *o, const VerifyPair *p,
                         GString *what)
{
    static const char *const path_names[] = { "CE check", "SM write check",
                                              "SM read check" };
    const CheckState states[] = { p->verified_ce, p->verified_sm,
                                  p->verified_sm_read };

    for (guint i = 0; i < G_N_ELEMENTS(states); i++) {
        if (states[i] != CHECK_OK && states[i] != CHECK_FAILED) {
            g_string_append_printf(what, "%s%s", what->len ? ", " : "",
                                   path_names[i]);
        }
    }
    /* A failed pair has its verdict: its figures are not owed. */
    for (int f = 0; f < FIG_PAIR_COUNT && !pair_failed(p); f++) {
        if (verify_figure_wanted(o, f) && !p->fig[f].samples) {
            g_string_append_printf(what, "%s%s", what->len ? ", " : "",
                                   verify_pair_figures[f].key);
        }
    }
}

/* Every ordered pair of usable GPUs, every path, every requested figure. */
static void judge_pairs_done(const VerifyOptions *o, VerifyReport *r)
{
    guint a, b;

    for (a = 0; a < r->gpus->len; a++) {
        for (b = 0; b < r->gpus->len; b++) {
            const VerifyGpu *ga = &g_array_index(r->gpus, VerifyGpu, a);
            const VerifyGpu *gb = &g_array_index(r->gpus, VerifyGpu, b);
            const VerifyPair *p;
            g_autoptr(GString) what = g_string_new(NULL);

            if (a == b || !gpu_usable(ga) || !gpu_usable(gb)) {
                continue;
            }
            p = verify_pair_find(r, a, b);
            if (!p) {
                verify_record_untested(r, "GPUs %u -> %u: never checked",
                                       a, b);
                continue;
            }
            pair_missing(o, p, what);
            if (what->len) {
                verify_record_untested(r, "GPUs %u -> %u: not done: %s%s%s%s",
                                       a, b, what->str,
                                       p->verify_problem[0] ? " (" : "",
                                       p->verify_problem,
                                       p->verify_problem[0] ? ")" : "");
            }
        }
    }
}

/* Every requested per-GPU figure on every usable GPU. */
static void judge_gpus_done(const VerifyOptions *o, VerifyReport *r)
{
    for (guint i = 0; i < r->gpus->len; i++) {
        const VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);
        g_autoptr(GString) what = g_string_new(NULL);

        if (!gpu_usable(g)) {
            continue;
        }
        for (int f = 0; f < AGG_COUNT; f++) {
            if (verify_figure_wanted(o, FIG_PAIR_COUNT + f) &&
                !g->agg[f].samples) {
                g_string_append_printf(what, "%s%s", what->len ? ", " : "",
                                       verify_gpu_figures[f].key);
            }
        }
        if (what->len) {
            verify_record_untested(r, "GPU %u: not measured: %s", i,
                                   what->str);
        }
    }
}

/* GPUs that share no clique with any other: a note (CUDA judges the
 * pairs); with the PCI checks alone, nothing else can pass them. */
static void judge_cliques(const VerifyOptions *o, VerifyReport *r)
{
    bool pci_only = verify_pci_checks_only(o);

    for (guint i = 0; i < r->gpus->len; i++) {
        const VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);
        bool shared = false;

        for (guint j = 0; j < r->gpus->len && g->clique >= 0; j++) {
            shared |= j != i &&
                      g_array_index(r->gpus, VerifyGpu, j).clique == g->clique;
        }
        if (pci_only && !g->has_cap && !g->cap_problem[0]) {
            verify_record_untested(r, "GPU %u (%s) has no P2P capability "
                                   "the PCI checks could read: they cannot "
                                   "approve it", i, g->bdf);
        } else if (g->clique >= 0 && !shared && pci_only) {
            verify_record_untested(r, "GPU %u (%s) is alone in clique %d: no "
                                   "other GPU may do PCIe P2P with it", i,
                                   g->bdf, g->clique);
        } else if (g->clique >= 0 && !shared) {
            verify_note(r, "%s is alone in clique %d", g->bdf, g->clique);
        }
    }
}

/* What the measurements mean for the verdict: thresholds, cliques. */
static void judge_pairs_found(const VerifyOptions *o, VerifyReport *r)
{
    for (guint i = 0; i < r->pairs->len; i++) {
        const VerifyPair *p = &g_array_index(r->pairs, VerifyPair, i);
        const VerifyGpu *a = &g_array_index(r->gpus, VerifyGpu, p->a);
        const VerifyGpu *b = &g_array_index(r->gpus, VerifyGpu, p->b);
        const Figure *uni = &p->fig[FIG_UNI_CE];
        const Figure *lat = &p->fig[FIG_LAT_SM];

        if (pair_failed(p)) {
            r->p2p_broken = true;
        }
        if (a->clique >= 0 && a->clique == b->clique && p->peer_access == 0) {
            verify_record_broken(r, "%s and %s share clique %d but CUDA "
                                 "grants no peer access", a->bdf, b->bdf,
                                 a->clique);
        }
        if (o->min_bandwidth > 0 && p->peer_access == 1 && uni->samples &&
            uni->median < o->min_bandwidth) {
            verify_record_broken(r, "%s -> %s: %.1f GB/s is below the "
                                 "minimum %.1f", a->bdf, b->bdf, uni->median,
                                 o->min_bandwidth);
        }
        if (o->max_latency > 0 && lat->samples &&
            lat->median > o->max_latency) {
            verify_record_broken(r, "%s -> %s: latency %.2f us is above the "
                                 "maximum %.2f", a->bdf, b->bdf, lat->median,
                                 o->max_latency);
        }
    }
}

/* Fail closed: "all good" only where something was really tested. */
static void judge_run_done(const VerifyOptions *o, VerifyReport *r)
{
    bool bw = false, lat = false, any_cap = false;
    guint usable = 0;

    for (guint i = 0; i < r->gpus->len; i++) {
        usable += gpu_usable(&g_array_index(r->gpus, VerifyGpu, i));
        any_cap |= g_array_index(r->gpus, VerifyGpu, i).clique >= 0;
    }
    for (guint i = 0; i < r->pairs->len; i++) {
        const VerifyPair *p = &g_array_index(r->pairs, VerifyPair, i);

        bw |= p->fig[FIG_UNI_CE].samples > 0;
        lat |= p->fig[FIG_LAT_SM].samples > 0;
    }
    if (!r->gpus->len) {
        verify_record_untested(r, "no NVIDIA GPU was found on PCI: nothing "
                               "was tested");
    } else if (r->gpus->len < 2) {
        verify_record_untested(r, "fewer than 2 GPUs: there is no pair to "
                               "test");
    } else if (verify_pci_checks_only(o) && !any_cap) {
        verify_record_untested(r, "no GPU carries the P2P capability: PCIe "
                               "P2P cannot be approved, and NVLink cannot be "
                               "judged without CUDA");
    } else if (!verify_pci_checks_only(o) && usable < 2) {
        verify_record_untested(r, "fewer than 2 GPUs could be paired: P2P "
                               "was not tested");
    }
    if (o->min_bandwidth > 0 && !bw) {
        verify_record_untested(r, "--min-bandwidth was given, but no "
                               "bandwidth was measured");
    }
    if (o->max_latency > 0 && !lat) {
        verify_record_untested(r, "--max-latency was given, but no latency "
                               "was measured");
    }
}

/* One health counter of GPU @i (@link -1: the GPU's own): a rise of a
 * failing counter fails the GPU or link (exit 1), of a warning counter
 * warns; a counter not read is neither (report.c says so once). */
static void judge_health_value(VerifyReport *r, guint i, int link,
                               const VerifyHealthValue *v,
                               const VerifyHealthCounterInfo *info)
{
    const VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);
    HealthVerdict verdict = verify_health_verdict(v, info);
    g_autofree char *where = link < 0 ? g_strdup("") :
                             g_strdup_printf(" NVLink %d", link);
    g_autofree char *xid = v == &g->health[HEALTH_XID_EVENTS] ?
        g_strdup_printf(" (last Xid %llu)", g->last_xid) : g_strdup("");
    g_autofree char *per = info->fail_per_second > 0 ?
        verify_health_rate_text(v) : NULL;
    g_autofree char *rate = per ?
        g_strdup_printf(" (%s; fails at %.0f per second)", per,
                        info->fail_per_second) : g_strdup("");

    if (verdict == HEALTH_FAILED) {
        verify_record_broken(r, "GPU %u (%s)%s: health: %s rose from %llu to "
                             "%llu during the run%s%s", i, g->bdf, where,
                             info->name, v->before, v->after, xid, rate);
    } else if (verdict == HEALTH_WARNING) {
        verify_note(r, "warning: GPU %u (%s)%s: health: %s rose from %llu "
                    "to %llu during the run%s", i, g->bdf, where, info->name,
                    v->before, v->after, rate);
    }
}

/* A link counter summed over GPU @i's links (DCGM's CRC totals): one
 * warning note with the rate and the links that rose (the links' own
 * rates decide, judge_health_value). */
static void judge_health_total(VerifyReport *r, guint i, int t)
{
    const VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);
    const VerifyHealthCounterInfo *info = &verify_health_link_totals[t].info;
    VerifyHealthTotal sum;
    HealthVerdict verdict = verify_health_total_verdict(g, t, &sum);
    g_autofree char *links = NULL, *rate = NULL, *what = NULL;

    if (verdict != HEALTH_FAILED && verdict != HEALTH_WARNING) {
        return;
    }
    links = verify_health_link_list(sum.links_rose);
    rate = verify_health_rate_text(&sum.sum);
    what = g_strdup_printf("GPU %u (%s): health: %s rose from %llu to %llu "
                           "during the run: %llu over its NVLinks, %s "
                           "(DCGM's watch fails a GPU's total at %.0f per "
                           "second; this tool judges each link at that "
                           "rate); NVLinks that rose: %s", i, g->bdf,
                           info->name, sum.sum.before,
                           sum.sum.after, sum.sum.after - sum.sum.before,
                           rate, info->fail_per_second, links);
    if (verdict == HEALTH_FAILED) {
        verify_record_broken(r, "%s", what);
    } else {
        verify_note(r, "warning: %s", what);
    }
}

/* NVML's health counters before and after the run (health.c's table). */
static void judge_health(VerifyReport *r)
{
    for (guint i = 0; i < r->gpus->len; i++) {
        const VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);

        for (int c = 0; c < HEALTH_GPU_COUNTERS; c++) {
            judge_health_value(r, i, -1, &g->health[c],
                               &verify_health_gpu_counters[c]);
        }
        for (int l = 0; l < VERIFY_MAX_NVLINKS; l++) {
            for (int c = 0; c < HEALTH_LINK_COUNTERS; c++) {
                /* A CRC link's warning is in its total's note. */
                if (!verify_health_link_summed(c) ||
                    verify_health_verdict(&g->link_health[l][c],
                                          &verify_health_link_counters[c]) ==
                    HEALTH_FAILED) {
                    judge_health_value(r, i, l, &g->link_health[l][c],
                                       &verify_health_link_counters[c]);
                }
            }
        }
        for (int t = 0; t < HEALTH_LINK_TOTALS; t++) {
            judge_health_total(r, i, t);
        }
    }
}

/* GPU @gpu on rdma[] entry @d, or NULL where it was never checked there. */
static const VerifyRdmaGpu *rdma_gpu_find(const VerifyRdma *d, guint gpu)
{
    for (guint k = 0; k < d->n_gpus; k++) {
        if (d->gpus[k].gpu == gpu) {
            return &d->gpus[k];
        }
    }
    return NULL;
}

/* Every usable GPU on every port of its paired NIC whose host memory
 * moved: its memory moved both ways there, or it failed; else untested,
 * naming the pair (a pair is what NCCL would use for GPUDirect RDMA). */
static void judge_rdma_pairs_done(VerifyReport *r)
{
    for (guint i = 0; i < r->rdma->len; i++) {
        const VerifyRdma *d = &g_array_index(r->rdma, VerifyRdma, i);
        int nic = verify_nic_find(r, d->bdf);

        if (nic < 0 || d->host_read != CHECK_OK) {
            continue;
        }
        for (guint g = 0; g < r->gpus->len; g++) {
            const VerifyNicPath *path = verify_nic_path(r, (guint)nic, g);
            const VerifyRdmaGpu *done = rdma_gpu_find(d, g);
            bool moved = done && done->write == CHECK_OK &&
                         done->read == CHECK_OK;
            bool failed = done && (done->dmabuf == CHECK_FAILED ||
                                   done->peermem == CHECK_FAILED ||
                                   done->write == CHECK_FAILED ||
                                   done->read == CHECK_FAILED);

            if (!path || !path->pair ||
                !gpu_usable(&g_array_index(r->gpus, VerifyGpu, g)) ||
                moved || failed) {
                continue;
            }
            verify_record_untested(r, "GPU %u (%s) and its paired NIC %s "
                                   "(%s, port %u, path %s): GPUDirect RDMA "
                                   "%s", g, g_array_index(r->gpus, VerifyGpu,
                                                          g).bdf,
                                   d->name, d->bdf, d->port, path->cls,
                                   done ? "not done both ways" :
                                   "never checked");
        }
    }
}

void verify_judge(const VerifyOptions *o, VerifyReport *r)
{
    judge_health(r);
    judge_pairs_found(o, r);
    judge_cliques(o, r);
    judge_run_done(o, r);
    if (!verify_pci_checks_only(o) && !r->cuda_status) {
        judge_pairs_done(o, r);
        judge_gpus_done(o, r);
        judge_rdma_pairs_done(r);
    }
}
