/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The harness every batch of transfers goes through, timed or not. In
 * the default validation run, kinds copied copy by copy go to
 * cuda-validate.c; the rest, and all of --benchmark, run nvbandwidth's
 * way: the destination slot is poisoned, a spin kernel holds each GPU's
 * gate stream until all work is queued, events bracket the loops on the
 * executing GPU's own stream, and a kernel at the destination checks
 * every byte afterwards. Transfers of one batch run at the same time;
 * the schedule only puts pairs on independent links into one batch. A
 * batch that fails is retried pair by pair: the one failure policy of
 * every sample loop, whichever harness ran it.
 */
#include <string.h>

#include "cuda-run.h"

void destroy_event(CUevent *e)
{
    if (*e) {
        p_cuEventDestroy(*e);
        *e = NULL;
    }
}

static void xfer_events_free(Run *run, Xfer *x, int nx)
{
    for (int i = 0; i < nx; i++) {
        /* Without its context, the events are left to the driver. */
        if (gpu_current_or_gone(run, exec_gpu(&x[i]))) {
            destroy_event(&x[i].start);
            destroy_event(&x[i].stop);
            for (int k = 0; k < 2; k++) {
                destroy_event(&x[i].down[k]);
                destroy_event(&x[i].up[k]);
            }
        }
        x[i].start = x[i].stop = NULL;
        memset(x[i].down, 0, sizeof(x[i].down));
        memset(x[i].up, 0, sizeof(x[i].up));
    }
}

/* Events of @x, on the GPUs whose streams record them. */
static bool create_xfer_events(Run *run, Xfer *x, GError **errp)
{
    USE_GPU(&run->gpus[exec_gpu(x)]);
    CU_TRY(p_cuEventCreate(&x->start, CU_EVENT_DEFAULT), "event");
    CU_TRY(p_cuEventCreate(&x->stop, CU_EVENT_DEFAULT), "event");
    for (int k = 0; xfer_method(x->kind)->two_streams && k < 2; k++) {
        USE_GPU(&run->gpus[x->src]);
        CU_TRY(p_cuEventCreate(&x->down[k], CU_EVENT_DISABLE_TIMING),
               "event");
        USE_GPU(&run->gpus[x->dst]);
        CU_TRY(p_cuEventCreate(&x->up[k], CU_EVENT_DISABLE_TIMING), "event");
    }
    return true;
}

/*
 * Before the batch: each destination poisoned (so nothing stale passes
 * the check), host memory prepared, events made; used[g]: GPU g carries
 * a transfer.
 */
static bool prepare_xfers(Run *run, Xfer *x, int nx, bool *used,
                          GError **errp)
{
    for (int i = 0; i < nx; i++) {
        const XferMethod *m = xfer_method(x[i].kind);
        Gpu *gd = &run->gpus[x[i].dst];

        x[i].bad = -1;
        used[exec_gpu(&x[i])] = true;
        if (m->checked_at_dst) {
            USE_GPU(gd);
            CU_TRY(p_cuMemsetD32Async(xfer_slot(run, &x[i]), 0xdeadbeefu,
                                      xfer_len(run, &x[i]) / 4, gd->gate),
                   "poisoning GPU %d", x[i].dst);
            WAIT(run, NULL, gd->gate, "poisoning GPU %d", x[i].dst);
        }
        if ((m->prepare_host && !m->prepare_host(run, &x[i], errp)) ||
            !create_xfer_events(run, &x[i], errp)) {
            return false;
        }
    }
    return true;
}

/* GPU @g's gate stream spins until the host sets the flag. */
static bool hold_gpu(Run *run, int g, GError **errp)
{
    Gpu *gp = &run->gpus[g];
    uint64_t max_ns = 5000000000ull;
    CUdeviceptr flag = run->flag_dev;
    void *args[] = { &flag, &max_ns };

    USE_GPU(gp);
    CU_TRY(launch(gp->spin, 1, 1, gp->gate, args), "GPU %d: spin", g);
    return true;
}

/* Holds every executing GPU; gate_open fires at the release. */
bool hold_gpus(Run *run, const bool *used, GError **errp)
{
    *run->flag = 0;
    __sync_synchronize();
    for (int g = 0; g < run->n; g++) {
        if (!used[g]) {
            continue;
        }
        if (!hold_gpu(run, g, errp)) {
            return false;
        }
        CU_TRY(p_cuEventRecord(run->gpus[g].gate_open, run->gpus[g].gate),
               "cuEventRecord");
    }
    return true;
}

/* The span's start, on the observer (x[0]'s destination) at release. */
static bool span_begin(Run *run, const Xfer *x, const bool *used,
                       CUevent *span, GError **errp)
{
    Gpu *go = &run->gpus[x[0].dst];

    if (!used[x[0].dst] && !hold_gpu(run, x[0].dst, errp)) {
        return false;   /* the observer holds like the others */
    }
    USE_GPU(go);
    CU_TRY(p_cuEventCreate(&span[0], CU_EVENT_DEFAULT), "event");
    CU_TRY(p_cuEventCreate(&span[1], CU_EVENT_DEFAULT), "event");
    return true;
}

/* The span's end: after every transfer's stop, on the observer. */
static bool span_end(Run *run, const Xfer *x, int nx, CUevent *span,
                     GError **errp)
{
    Gpu *go = &run->gpus[x[0].dst];

    USE_GPU(go);
    for (int i = 0; i < nx; i++) {
        CU_TRY(p_cuStreamWaitEvent(go->gate, x[i].stop, 0), "wait");
    }
    CU_TRY(p_cuEventRecord(span[1], go->gate), "cuEventRecord");
    return true;
}

/* @loops copies of @x on its executing GPU's stream to its peer. */
static bool enqueue(Run *run, Xfer *x, unsigned loops, GError **errp)
{
    Gpu *ge = &run->gpus[exec_gpu(x)];

    return xfer_method(x->kind)->enqueue(run, x, ge->to[exec_peer(x)],
                                         loops, errp);
}

/* Transfer @x behind its GPU's hold, then its warm-up copies, then its
 * start mark. */
static bool queue_warmup(Run *run, Xfer *x, GError **errp)
{
    Gpu *ge = &run->gpus[exec_gpu(x)];
    CUstream s = ge->to[exec_peer(x)];

    USE_GPU(ge);
    CU_TRY(p_cuStreamWaitEvent(s, ge->gate_open, 0), "cuStreamWaitEvent");
    if (xfer_method(x->kind)->two_streams) {
        CU_TRY(p_cuStreamWaitEvent(run->gpus[x->dst].to[x->src],
                                   ge->gate_open, 0), "wait");
    }
    if (x->warmup && !enqueue(run, x, x->warmup, errp)) {
        return false;
    }
    USE_GPU(ge);
    CU_TRY(p_cuEventRecord(x->start, s), "cuEventRecord");
    return true;
}

/* @x's timed copies and its stop mark; after @begin where given (a span's
 * start, which the start mark is then moved behind). */
static bool queue_timed(Run *run, Xfer *x, unsigned loops, CUevent begin,
                        GError **errp)
{
    Gpu *ge = &run->gpus[exec_gpu(x)];
    CUstream s = ge->to[exec_peer(x)];

    USE_GPU(ge);
    if (begin) {
        CU_TRY(p_cuStreamWaitEvent(s, begin, 0), "cuStreamWaitEvent");
        CU_TRY(p_cuEventRecord(x->start, s), "cuEventRecord");
    }
    if (!enqueue(run, x, loops, errp)) {
        return false;
    }
    USE_GPU(ge);
    CU_TRY(p_cuEventRecord(x->stop, s), "cuEventRecord");
    return true;
}

/*
 * Each transfer: warm-up, start, @loops, stop. With a span (aggregates),
 * the span starts on the observer once every warm-up is done and every
 * timed copy waits for it, so the span holds the timed copies alone,
 * started together (nvbandwidth waits for its first sender's warm-up
 * only); before, it held the warm-up copies too (4 of 20: 0.80 of
 * nvbandwidth's figure).
 */
static bool queue_xfers(Run *run, Xfer *x, int nx, unsigned loops,
                        CUevent *span, GError **errp)
{
    Gpu *go = &run->gpus[x[0].dst];

    for (int i = 0; i < nx; i++) {
        if (!queue_warmup(run, &x[i], errp) ||
            (!span && !queue_timed(run, &x[i], loops, NULL, errp))) {
            return false;
        }
    }
    if (!span) {
        return true;
    }
    USE_GPU(go);
    for (int i = 0; i < nx; i++) {
        CU_TRY(p_cuStreamWaitEvent(go->gate, x[i].start, 0), "wait");
    }
    CU_TRY(p_cuEventRecord(span[0], go->gate), "cuEventRecord");
    for (int i = 0; i < nx; i++) {
        if (!queue_timed(run, &x[i], loops, span[0], errp)) {
            return false;
        }
    }
    return true;
}

/* After the release: each transfer's time, and the span's. */
static bool read_times(Run *run, Xfer *x, int nx, CUevent *span,
                       double *span_ms, GError **errp)
{
    float ms = 0;

    if (span_ms) {
        WAIT(run, span[1], NULL, "aggregate on GPU %d", x[0].dst);
        CU_TRY(p_cuEventElapsedTime(&ms, span[0], span[1]),
               "cuEventElapsedTime");
        *span_ms = ms;
    }
    for (int i = 0; i < nx; i++) {
        WAIT(run, x[i].stop, NULL, "transfer %d->%d", x[i].src, x[i].dst);
        CU_TRY(p_cuEventElapsedTime(&ms, x[i].start, x[i].stop),
               "cuEventElapsedTime");
        x[i].ms = ms;
    }
    return true;
}

/*
 * Run @x together: prepare, hold every executing GPU with a spin kernel,
 * queue all work behind the holds, release, then time and check. With
 * @span_ms, the whole batch is also timed on one GPU (the first
 * transfer's destination): from the start every transfer's timed copies
 * wait for (after all warm-ups) to the last transfer's end, waited for
 * across GPUs. Several streams of one GPU can share its
 * copy engines, so per-stream events alone do not give the span of an
 * aggregate.
 */
static bool run_batch_inner(Run *run, Xfer *x, int nx, unsigned loops,
                            double *span_ms, CUevent *span, GError **errp)
{
    g_autofree bool *used = g_new0(bool, run->n);

    if (!prepare_xfers(run, x, nx, used, errp) ||
        !hold_gpus(run, used, errp) ||
        (span_ms && !span_begin(run, x, used, span, errp)) ||
        !queue_xfers(run, x, nx, loops, span_ms ? span : NULL, errp) ||
        (span_ms && !span_end(run, x, nx, span, errp))) {
        return false;
    }
    __sync_synchronize();
    *run->flag = 1;
    return read_times(run, x, nx, span, span_ms, errp) &&
           queue_checks(run, x, nx, errp) && read_checks(run, x, nx, errp);
}

static bool run_batch_once(Run *run, Xfer *x, int nx, unsigned loops,
                           double *span_ms, GError **errp)
{
    CUevent span[2] = { NULL, NULL };
    bool ok = run_batch_inner(run, x, nx, loops, span_ms, span, errp);

    if (!ok) {
        /* Let nothing wait on a spin after an error; nothing hangs. */
        *run->flag = 1;
        for (int g = 0; g < run->n; g++) {
            drain_gpu(run, g);
        }
    }
    xfer_events_free(run, x, nx);
    if ((span[0] || span[1]) && gpu_current_or_gone(run, x[0].dst)) {
        destroy_event(&span[0]);
        destroy_event(&span[1]);
    }
    return ok;
}

/*
 * nvbandwidth's method (--benchmark, and the kinds that are not copied
 * copy by copy in any mode): @x's warm-up copies, then @loops copies
 * between one pair of events, all queued behind the hold; the bytes the
 * last copy left are checked at the destination (poisoned before). The
 * data checks, which every run makes first, checked one copy per path.
 */
static bool run_batch_bracketed(Run *run, Xfer *x, int nx, unsigned loops,
                                double *span_ms, GError **errp)
{
    for (int i = 0; i < nx; i++) {
        x[i].copies = 1;
        x[i].bad_copy = 0;
        x[i].bad_in_warmup = false;
    }
    return run_batch_once(run, x, nx, loops, span_ms, errp);
}

/* @x (one kind) with @loops copies each, in the run's mode: every copy
 * validated in stream order (cuda-validate.c), or nvbandwidth's. */
bool run_batch_span(Run *run, Xfer *x, int nx, unsigned loops,
                    double *span_ms, GError **errp)
{
    if (run->validate && xfer_method(x[0].kind)->copy_by_copy) {
        return run_batch_validated(run, x, nx, loops, span_ms, errp);
    }
    return run_batch_bracketed(run, x, nx, loops, span_ms, errp);
}

bool run_batch(Run *run, Xfer *x, int nx, unsigned loops, GError **errp)
{
    return run_batch_span(run, x, nx, loops, NULL, errp);
}

/*
 * The batch @x (@nx transfers, @per of them for one pair) failed with
 * @err: each pair runs again alone, and a pair that fails alone is blamed
 * for that. Where none fails alone with the batch's error code, the error
 * did not reproduce and every pair that passed alone still carries it
 * (blame_batch). ok[i]: pair i came through, alone.
 */
void retry_each(Run *run, Xfer *x, int nx, int per, unsigned loops,
                const GError *err, bool *ok)
{
    int ng = nx / per;
    bool reproduced = false;

    for (int g = 0; g < ng; g++) {
        g_autoptr(GError) one = NULL;
        Xfer *gx = &x[g * per];

        ok[g] = false;
        if (ng == 1 || run->gone[gx->src] || run->gone[gx->dst]) {
            blame(run, gx, err);
            reproduced = true;
        } else if (run_batch(run, gx, per, loops, &one)) {
            ok[g] = true;
        } else {
            reproduced |= cuda_error_code(one) == cuda_error_code(err);
            blame(run, gx, one);
        }
    }
    for (int g = 0; g < ng && !reproduced; g++) {
        if (ok[g]) {
            blame_batch(run, &x[g * per], ng, err);
        }
    }
}

/* Runs @x as one batch; retried pair by pair when it fails. */
void run_blamed(Run *run, Xfer *x, int nx, int per, unsigned loops, bool *ok)
{
    g_autoptr(GError) err = NULL;

    if (run_batch(run, x, nx, loops, &err)) {
        for (int g = 0; g < nx / per; g++) {
            ok[g] = true;
        }
        return;
    }
    retry_each(run, x, nx, per, loops, err, ok);
}
