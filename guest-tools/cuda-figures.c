/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The figures of the registry (figures.c): pair figures batch by batch,
 * the aggregates of each GPU, host <-> device; the median of the samples
 * kept. Every sample goes through the harness and is checked; a pair or
 * GPU whose bytes come back wrong, or whose transfer fails, gets no
 * figure.
 */
#include <string.h>

#include "cuda-run.h"
#include "host-place.h"

static bool pair_usable(Run *run, int a, int b, const VerifyFigureInfo *f)
{
    VerifyPair *p = pair_of(run, a, b);

    if (!p->peer_enabled || p->verified_ce != CHECK_OK || run->gone[a] ||
        run->gone[b] || !reader_has_access(run, a, b, f->kind)) {
        return false;
    }
    return !f->needs_sm ||
           (p->verified_sm == CHECK_OK && p->verified_sm_read == CHECK_OK);
}

static void figure_set(Figure *f, double *v, unsigned n)
{
    unsigned i, j;

    for (i = 1; i < n; i++) {
        for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];

            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    }
    f->samples = n;
    f->min = v[0];
    f->max = v[n - 1];
    f->median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double xfer_value(const Run *run, const Xfer *x, unsigned loops)
{
    return xfer_method(x->kind)->value(run, x, loops);
}

/* A bandwidth or latency value of pair group @gx (@per transfers). */
static double group_value(Run *run, const Xfer *gx, int per,
                          unsigned loops)
{
    if (per == 2) {
        /* As nvbandwidth's bidirectional _total: the sum of the two
         * directions' bandwidths, each over its own time. */
        return xfer_value(run, &gx[0], loops) + xfer_value(run, &gx[1], loops);
    }
    return xfer_value(run, gx, loops);
}

/*
 * Samples of figure @fig for the pairs of one batch (@per transfers a
 * pair). A pair that fails, or whose bytes come back wrong, gets no
 * figure; the others keep theirs.
 */
static void measure_batch(Run *run, int fig, Xfer *x, int nx, int per)
{
    const VerifyFigureInfo *f = &verify_pair_figures[fig];
    unsigned samples = run->o->samples, s;
    unsigned loops = run->loops;
    int ng = nx / per;
    g_autofree double *v = g_new0(double, ng * samples);
    g_autofree bool *alive = g_new0(bool, ng);
    g_autofree bool *ok = g_new0(bool, ng);
    g_autofree int *map = g_new0(int, ng);
    g_autofree Xfer *y = g_new0(Xfer, nx);

    memset(alive, 1, ng * sizeof(bool));
    for (s = 0; s < samples; s++) {
        int ny = 0;

        for (int g = 0; g < ng; g++) {
            if (alive[g]) {
                map[ny / per] = g;
                memcpy(&y[ny], &x[g * per], per * sizeof(Xfer));
                ny += per;
            }
        }
        if (!ny) {
            return;
        }
        run_blamed(run, y, ny, per, loops, ok);
        for (int j = 0; j < ny / per; j++) {
            Xfer *gx = &y[j * per];
            bool bad = false;

            for (int k = 0; k < per && ok[j]; k++) {
                judge_bytes(run, &gx[k], f->key);
                bad |= gx[k].bad >= 0;
            }
            alive[map[j]] = ok[j] && !bad;
            v[map[j] * samples + s] = group_value(run, gx, per, loops);
        }
    }
    for (int g = 0; g < ng; g++) {
        VerifyPair *p = pair_of(run, x[g * per].src, x[g * per].dst);

        if (!alive[g]) {
            continue;
        }
        figure_set(&p->fig[fig], &v[g * samples], samples);
        if (per == 2) {
            pair_of(run, x[g * per].dst, x[g * per].src)->fig[fig] =
                p->fig[fig];
        }
    }
}

/* One figure for every usable ordered pair, batch by batch. */
void measure_pairs(Run *run, GPtrArray *rounds, int fig)
{
    const VerifyFigureInfo *f = &verify_pair_figures[fig];
    const XferMethod *m = xfer_method(f->kind);
    bool bidir = m->both_ways;

    for (guint ri = 0; ri < rounds->len; ri++) {
        GArray *round = g_ptr_array_index(rounds, ri);

        for (int dir = 0; dir < (bidir ? 1 : 2); dir++) {
            g_autofree Xfer *x = g_new0(Xfer, round->len);
            int nx = 0;

            for (guint k = 0; k + 1 < round->len; k += 2) {
                int a = g_array_index(round, int, k + dir);
                int b = g_array_index(round, int, k + 1 - dir);

                if (!pair_usable(run, a, b, f) ||
                    (bidir && !pair_usable(run, b, a, f))) {
                    continue;
                }
                x[nx++] = (Xfer){ .kind = f->kind, .src = a, .dst = b,
                                  .warmup = m->warms_up ? run->warmup : 0 };
                if (bidir) {
                    x[nx] = x[nx - 1];
                    x[nx].src = b;
                    x[nx++].dst = a;
                }
            }
            if (nx) {
                measure_batch(run, fig, x, nx, bidir ? 2 : 1);
            }
        }
    }
}

/*
 * The samples of aggregate @which at GPU @k into @v; false (no figure)
 * where a batch failed or a byte came back bad. A failed batch is retried
 * transfer by transfer, blaming only those failing alone; where all pass
 * alone, the note says the aggregate alone failed.
 */
static bool aggregate_samples(Run *run, int which, int k, Xfer *x, int nx,
                              double *v)
{
    unsigned loops = run->loops;

    for (unsigned s = 0; s < run->o->samples; s++) {
        g_autoptr(GError) err = NULL;
        g_autofree bool *ok = g_new0(bool, nx);
        double span = 0;
        bool bad = false, all_ok = true;

        if (!run_batch_span(run, x, nx, loops, &span, &err)) {
            retry_each(run, x, nx, 1, loops, err, ok);
            for (int i = 0; i < nx; i++) {
                all_ok &= ok[i];
            }
            if (all_ok) {
                verify_note(run->r, "GPU %d: %s not measured: its transfers "
                            "failed together (%s) and passed one by one",
                            run->report_of[k], verify_gpu_figures[which].key,
                            err->message);
            }
            return false;
        }
        for (int i = 0; i < nx; i++) {
            judge_bytes(run, &x[i], verify_gpu_figures[which].key);
            bad |= x[i].bad >= 0;
        }
        if (bad) {
            return false;   /* the pair is failed; no figure of bad bytes */
        }
        /* All bytes over the span on one GPU's clock. */
        v[s] = (double)xfer_len(run, &x[0]) * loops * nx / (span / 1e3) / 1e9;
    }
    return true;
}

/* The transfers of aggregate @which at GPU @k, into @x; 0 where a pair
 * it needs is not usable. */
static int aggregate_xfers(Run *run, int which, int k, Xfer *x)
{
    const VerifyFigureInfo *f = &verify_gpu_figures[which];
    int nx = 0;

    for (int j = 0; j < run->n; j++) {
        int a = which == AGG_ALL_TO_ONE ? j : k;
        int b = which == AGG_ALL_TO_ONE ? k : j;

        if (j == k) {
            continue;
        }
        if (!pair_usable(run, a, b, f)) {
            return 0;
        }
        x[nx++] = (Xfer){ .kind = f->kind, .src = a, .dst = b,
                          .warmup = run->warmup };
    }
    for (int i = 0; which == AGG_ALL_TO_ONE && i < nx; i++) {
        /* n-1 senders share the one inbox slot: a share each. */
        x[i].len = MAX((run->bytes / nx) & ~(gsize)255, (gsize)256);
        x[i].off = i * x[i].len;
    }
    return nx;
}

/* All-to-one and one-to-all copy-engine figures for GPU @k. */
void measure_aggregates(Run *run, int k)
{
    VerifyGpu *vg = &g_array_index(run->r->gpus, VerifyGpu,
                                   run->report_of[k]);

    for (int which = 0; which <= AGG_ONE_TO_ALL; which++) {
        g_autofree Xfer *x = NULL;
        gint64 t0 = g_get_monotonic_time();
        double v[16];
        int nx;

        if (!verify_figure_wanted(run->o, FIG_PAIR_COUNT + which)) {
            continue;
        }
        x = g_new0(Xfer, run->n);
        nx = aggregate_xfers(run, which, k, x);
        if (nx < 1) {
            continue;
        }
        if (aggregate_samples(run, which, k, x, nx, v)) {
            figure_set(&vg->agg[which], v, run->o->samples);
        }
        run->r->figure_s[FIG_PAIR_COUNT + which] +=
            (g_get_monotonic_time() - t0) / 1e6;
    }
}

/* Host -> device or device -> host (@which) for GPU @k, sampled. */
static void measure_host_figure(Run *run, int k, int which)
{
    VerifyGpu *vg = &g_array_index(run->r->gpus, VerifyGpu,
                                   run->report_of[k]);
    const VerifyFigureInfo *f = &verify_gpu_figures[which];
    Xfer x = { .kind = f->kind, .src = k, .dst = k, .warmup = run->warmup };
    gint64 t0 = g_get_monotonic_time();
    double v[16];
    unsigned s;

    if (which == AGG_H2D ? !run->host || (run->validate && !run->host_alt) :
                           !run->host_in) {
        return;     /* pinning failed, and the run said so */
    }
    for (s = 0; s < run->o->samples && !run->gone[k]; s++) {
        g_autoptr(GError) err = NULL;

        if (!run_batch(run, &x, 1, run->loops, &err)) {
            blame(run, &x, err);
            break;
        }
        judge_bytes(run, &x, f->key);
        if (x.bad >= 0) {
            break;
        }
        v[s] = xfer_value(run, &x, run->loops);
    }
    if (s == run->o->samples) {
        figure_set(&vg->agg[which], v, s);
    }
    run->r->figure_s[FIG_PAIR_COUNT + which] +=
        (g_get_monotonic_time() - t0) / 1e6;
}

/*
 * Host -> device and device -> host for GPU @k, one GPU at a time as
 * nvbandwidth measures them: pinned host memory, the GPU's own stream.
 * --benchmark does as nvbandwidth (host-place.h): this thread on the
 * GPU's NUMA node and buffers pinned there, in the GPU's context, for
 * this GPU alone; the validation run uses the one shared set. A failure
 * or a bad byte is no P2P verdict (the run is then untested).
 */
void measure_host(Run *run, int k)
{
    VerifyGpu *vg = &g_array_index(run->r->gpus, VerifyGpu,
                                   run->report_of[k]);
    HostPlaceSaved saved;

    if ((!verify_figure_wanted(run->o, FIG_PAIR_COUNT + AGG_H2D) &&
         !verify_figure_wanted(run->o, FIG_PAIR_COUNT + AGG_D2H)) ||
        run->gone[k]) {
        return;
    }
    if (!run->validate) {
        host_place_enter(run->o->sysfs_root ? run->o->sysfs_root : "/", vg,
                         &saved, &vg->host_place);
        if (!gpu_current_or_gone(run, k)) {
            host_place_leave(&saved, run->r);
            return;
        }
        host_buffers_pin(run);
    }
    for (int which = AGG_H2D; which <= AGG_D2H; which++) {
        if (verify_figure_wanted(run->o, FIG_PAIR_COUNT + which)) {
            measure_host_figure(run, k, which);
        }
    }
    if (!run->validate) {
        host_buffers_free(run, run->gone[k]);
        host_place_leave(&saved, run->r);
    }
}
