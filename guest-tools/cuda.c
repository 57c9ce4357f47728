/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The driver view, the data checks and the figures, through the CUDA
 * driver API (cuda-run.h names the files and what each holds).
 *
 * Phases: discover (devices, contexts), allocate (a source buffer and an
 * inbox with one slot per peer on every GPU), pair checks (peer access,
 * one verified copy per path), figures (the table in figures.c), teardown.
 */
#include "cuda-run.h"

/* Copies that go through host memory: one pair at a time. */
static bool through_host(int a, int b, int c, int d, gpointer data)
{
    (void)a; (void)b; (void)c; (void)d; (void)data;
    return false;
}

/* Pairs on NVLink, or on PCIe paths that share no link, run together. */
static bool independent(int a, int b, int c, int d, gpointer data)
{
    Run *run = data;
    const VerifyGpu *g[4];
    const int ord[4] = { a, b, c, d };

    if (pair_of(run, a, b)->nvlinks || pair_of(run, c, d)->nvlinks) {
        return true;
    }
    for (int i = 0; i < 4; i++) {
        g[i] = &g_array_index(run->r->gpus, VerifyGpu, run->report_of[ord[i]]);
    }
    return verify_pcie_paths_disjoint(g[0], g[1], g[2], g[3]);
}

/* Only pairs on NVLink run together: the links a VM shows for PCIe are
 * the hypervisor's, which may hide a switch the pairs share. */
static bool nvlink_independent(int a, int b, int c, int d, gpointer data)
{
    Run *run = data;

    return pair_of(run, a, b)->nvlinks && pair_of(run, c, d)->nvlinks;
}

/* Every figure asked for: pairs first, then each GPU's own, on
 * @schedule (serial methods one pair at a time always). */
static void measure_figures(Run *run, GPtrArray *schedule,
                            GPtrArray *one_by_one)
{
    const VerifyOptions *o = run->o;

    for (int fig = 0; fig < FIG_PAIR_COUNT; fig++) {
        gint64 t0 = g_get_monotonic_time();

        if (!verify_figure_wanted(o, fig)) {
            continue;
        }
        measure_pairs(run, xfer_method(verify_pair_figures[fig].kind)->serial
                      ? one_by_one : schedule, fig);
        run->r->figure_s[fig] += (g_get_monotonic_time() - t0) / 1e6;
    }
    for (int k = 0; k < run->n; k++) {
        measure_aggregates(run, k);
        measure_host(run, k);
    }
}

/* Discover and allocate; false, with cuda_status, where CUDA cannot be
 * used at all. */
static bool cuda_open(Run *run, gint64 *t)
{
    VerifyReport *r = run->r;
    g_autoptr(GError) err = NULL;
    gint64 now;

    if (!cuda_discover(run, &err)) {
        r->cuda_status = g_strdup(err->message);
        r->untested = true;
        return false;
    }
    if (run->n == 0) {
        r->cuda_status = g_strdup("CUDA sees no GPU");
        r->untested = true;
        return false;
    }
    verify_nvml(r);
    judge_unseen_gpus(r);
    now = g_get_monotonic_time();
    r->phase_s[1] = (now - *t) / 1e6 - r->phase_s[0];
    *t = now;
    if (!cuda_allocate(run, &err)) {
        r->cuda_status = g_strdup(err->message);
        r->untested = true;
        return false;
    }
    return true;
}

void verify_cuda(const VerifyOptions *o, VerifyReport *r)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GPtrArray) rounds = NULL;
    g_autoptr(GPtrArray) one_by_one = NULL;
    g_autoptr(GPtrArray) figure_rounds = NULL;
    Run run = { .o = o, .r = r, .bytes = o->bytes,
                .loops = o->quick ? VERIFY_QUICK_LOOPS :
                         o->benchmark ? VERIFY_BENCH_LOOPS : VERIFY_LOOPS,
                .warmup = o->quick ? VERIFY_QUICK_WARMUP :
                          o->benchmark ? VERIFY_BENCH_WARMUP : VERIFY_WARMUP,
                .validate = !o->benchmark,
                .chase_hops = o->benchmark ? CHASE_HOPS : CHASE_HOPS_VALIDATE,
                .watchdog_s = o->watchdog_s };
    gint64 t = g_get_monotonic_time();
#define PHASE(i) do { gint64 now_ = g_get_monotonic_time();               \
                      r->phase_s[i] = (now_ - t) / 1e6; t = now_; } while (0)

    run.t0 = t;

#ifdef VERIFY_HAVE_KERNELS
    r->kernels = true;
#endif
    r->loops = run.loops;
    if (!cuda_open(&run, &t)) {
        goto out;
    }
    PHASE(2);
    pair_access(&run);
    PHASE(3);
    verify_nvml_pairs(r);
    /* Checks run pairs on independent links together. */
    rounds = verify_schedule(run.n, independent, &run);
    one_by_one = verify_schedule(run.n, through_host, NULL);
    /* Figures: pairs on independent links together with --concurrent;
     * validation times NVLink pairs together; --benchmark one at a
     * time, as nvbandwidth. */
    figure_rounds = o->concurrent ? g_ptr_array_ref(rounds) :
                    !o->benchmark ?
                    verify_schedule(run.n, nvlink_independent, &run) :
                    g_ptr_array_ref(one_by_one);
    for (guint i = 0; i < figure_rounds->len; i++) {
        r->concurrent |=
            ((GArray *)g_ptr_array_index(figure_rounds, i))->len > 2;
    }
    data_checks(&run, rounds);
    PHASE(4);
    if (!r->kernels) {
        goto out;
    }
    if (verify_figure_wanted(o, FIG_LAT_SM)) {
        gint64 t0 = g_get_monotonic_time();

        if (!build_chains(&run, &err)) {
            r->p2p_broken = true;
            verify_note(r, "%s", err->message);
            goto out;
        }
        /* The chain is the latency figure's: its time counts there. */
        r->figure_s[FIG_LAT_SM] = (g_get_monotonic_time() - t0) / 1e6;
    }
    measure_figures(&run, figure_rounds, one_by_one);
    PHASE(5);
out:
    cuda_teardown(&run);
    PHASE(6);
#undef PHASE
}
