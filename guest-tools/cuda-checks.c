/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The data checks: every byte a transfer leaves is checked where it
 * lands, one verified copy per path (copy engine, SM write, SM read) and
 * direction proves a pair; a bad byte or a CUDA error says what it says
 * about the pair (P2P broken, an NVLink fault, a GPU lost, or nothing
 * proven), recorded in the pair states that verify_judge() reads.
 */
#include "cuda-run.h"

/* Where @x's check writes its first bad byte's offset, on the host. */
static uint64_t *check_result(Run *run, const Xfer *x)
{
    return &run->results[x->dst * (run->n + 2) + x->src];
}

/* Every byte checked at its destination, by the destination GPU. */
bool queue_checks(Run *run, Xfer *x, int nx, GError **errp)
{
    for (int i = 0; i < nx; i++) {
        const XferMethod *m = xfer_method(x[i].kind);
        Gpu *gd = &run->gpus[x[i].dst];
        CUdeviceptr word = gd->scratch + 8 * x[i].src;
        CUdeviceptr buf = xfer_slot(run, &x[i]);
        uint64_t words = xfer_len(run, &x[i]) / 4;
        uint32_t seed = xfer_seed(&x[i]);
        void *args[] = { &buf, &words, &seed, &word };

        if (!m->checked_at_dst) {
            continue;
        }
        USE_GPU(gd);
        if (m->check_reads_host) {
            /* What reached host memory, back into the GPU to be checked
             * there (the slot was poisoned, so nothing stale passes). */
            CU_TRY(p_cuMemcpyHtoDAsync(buf, run->host_in, words * 4,
                                       gd->gate),
                   "GPU %d: reading back host memory", x[i].dst);
        }
        CU_TRY(p_cuMemsetD32Async(word, 0xffffffffu, 2, gd->gate), "memset");
        CU_TRY(launch(gd->check, gd->sms * 4, 512, gd->gate, args),
               "GPU %d: check_pattern", x[i].dst);
        CU_TRY(p_cuMemcpyDtoHAsync(check_result(run, &x[i]), word, 8,
                                   gd->gate), "check result");
    }
    return true;
}

/* The checks' verdicts (x[i].bad), and the time of a transfer that
 * measures itself. */
bool read_checks(Run *run, Xfer *x, int nx, GError **errp)
{
    for (int i = 0; i < nx; i++) {
        const XferMethod *m = xfer_method(x[i].kind);
        Gpu *gd = &run->gpus[x[i].dst];
        uint64_t *res = check_result(run, &x[i]);

        if (m->checked_at_dst) {
            USE_GPU(gd);
            WAIT(run, NULL, gd->gate, "GPU %d: check_pattern", x[i].dst);
            /* The check kernel gives the first bad byte's offset. */
            x[i].bad = *res == ~0ull ? -1 : (int64_t)*res;
        } else if (m->read_own_time && !m->read_own_time(run, &x[i], errp)) {
            return false;
        }
    }
    return true;
}

/* A destination that came back wrong after a transfer. */
void judge_bytes(Run *run, const Xfer *x, const char *what)
{
    const XferMethod *m = xfer_method(x->kind);
    VerifyPair *p = pair_of(run, x->src, x->dst);
    char label[96];

    if (x->bad < 0) {
        return;
    }
    if (m->host_path) {
        /* Through host memory, not P2P: no verdict on P2P, but nothing
         * to call good either. */
        verify_record_untested(run->r, "%s: first bad byte at offset %"
                               G_GINT64_FORMAT " (host path, not P2P)",
                               xfer_label(run, x, label, sizeof(label)),
                               x->bad);
        return;
    }
    /* A failed path state is the finding: verify_judge() reads it. */
    *pair_path_state(p, m->path) = CHECK_FAILED;
    if (x->bad_in_warmup) {
        g_snprintf(label, sizeof(label), " (warm-up copy %u of %u)",
                   x->bad_copy + 1, x->warmup);
    } else if (x->copies > 1) {
        g_snprintf(label, sizeof(label), " (copy %u of %u)", x->bad_copy + 1,
                   x->copies);
    } else {
        label[0] = 0;
    }
    pair_problem(p, "%s %u->%u: first bad byte at offset %" G_GINT64_FORMAT
                 "%s", what, run->report_of[x->src], run->report_of[x->dst],
                 x->bad, label);
}

/*
 * CUDA error 220 (CUDA_ERROR_NVLINK_UNCORRECTABLE) on @x: a fault of the
 * NVLink between its two GPUs, named as such on the pair (both ways: one
 * link), not a bare "P2P broken". A GPU whose context the error took down
 * is lost as well.
 */
static void blame_nvlink(Run *run, const Xfer *x, VerifyPair *p,
                         const char *label, const GError *err)
{
    const XferMethod *m = xfer_method(x->kind);
    unsigned a = run->report_of[x->src], b = run->report_of[x->dst];
    VerifyPair *back = pair_of(run, x->dst, x->src);

    /* nvlink_fault is the finding: verify_judge() reads it. */
    p->nvlink_fault = back->nvlink_fault = true;
    if (m->nvlink_fails_path) {
        *pair_path_state(p, m->path) = CHECK_FAILED;
    }
    pair_problem(p, "NVLink fault between GPUs %u and %u: %s: %s", a, b,
                 label, err->message);
    verify_note(run->r, "NVLink fault between GPUs %u and %u (uncorrectable "
                "NVLink error, CUDA error 220, at %s): the link, not P2P "
                "setup; see the GPUs' NVLink error counters (nvidia-smi "
                "nvlink -e)", a, b, label);
    for (int i = 0; i < 2; i++) {
        int g = i ? x->dst : x->src;

        if (gpu_probe_lost(run, g)) {
            mark_gone(run, g, "after an NVLink fault: %s", err->message);
        }
    }
}

/* @x failed with a sticky error, or on a GPU already gone: the GPU it
 * left unusable is lost, and the pair gets no P2P verdict. */
static void blame_lost(Run *run, const Xfer *x, VerifyPair *p,
                       const char *label, const GError *err)
{
    const XferMethod *m = xfer_method(x->kind);
    bool any = false;

    for (int i = 0; i < 2; i++) {
        int g = i ? x->dst : x->src;

        if (gpu_probe_lost(run, g)) {
            mark_gone(run, g, "%s", err->message);
            any = true;
        }
    }
    if (!any) {
        mark_gone(run, exec_gpu(x), "%s", err->message);
    }
    if (p && m->data_check && *pair_path_state(p, m->path) == CHECK_OK) {
        *pair_path_state(p, m->path) = CHECK_UNTESTABLE;
    }
    if (p) {
        pair_problem(p, "%s: %s (GPU lost, not a P2P verdict)", label,
                     err->message);
    }
}

/*
 * @x failed on its own with @err. A sticky error marks the GPU it left
 * unusable "lost", not P2P; a hung transfer (watchdog) fails its pair and
 * retires its GPU; a host-staged copy never judges P2P; anything else
 * fails the pair's path.
 */
void blame(Run *run, const Xfer *x, const GError *err)
{
    const XferMethod *m = xfer_method(x->kind);
    VerifyPair *p = pair_of(run, x->src, x->dst);     /* NULL: host path */
    CUresult code = cuda_error_code(err);
    char label[96];

    xfer_label(run, x, label, sizeof(label));
    if (code == CUDA_ERROR_NVLINK_UNCORRECTABLE && p && !m->host_path &&
        !run->gone[x->src] && !run->gone[x->dst]) {
        blame_nvlink(run, x, p, label, err);
        return;
    }
    if (code != CUDA_ERROR_NOT_READY &&
        (cu_sticky(code) || run->gone[x->src] || run->gone[x->dst])) {
        blame_lost(run, x, p, label, err);
        return;
    }
    if (code == CUDA_ERROR_NOT_READY) {
        mark_gone(run, exec_gpu(x), "hung at %s", label);
    }
    if (m->host_path) {
        verify_record_untested(run->r, "%s: %s (host path, not P2P)", label,
                               err->message);
        return;
    }
    run->r->p2p_broken = true;
    if (m->data_check) {
        *pair_path_state(p, m->path) = CHECK_FAILED;
    }
    pair_problem(p, "%s: %s", label, err->message);
}

/*
 * The batch of @ng pairs around pair group @gx failed with @err, and @gx
 * passed when it ran again alone. The error is not forgotten, as the
 * batch cannot say whose it was: it is recorded on every pair that passed
 * alone (those that failed alone are blamed for their own error). Error
 * 220 is an NVLink fault whatever the retry says (exit 1); any other code
 * leaves the pair "failed under concurrent load", its check not proven
 * (untested at least).
 */
void blame_batch(Run *run, const Xfer *gx, int ng, const GError *err)
{
    const XferMethod *m = xfer_method(gx->kind);
    VerifyPair *p = pair_of(run, gx->src, gx->dst);
    bool nvlink = cuda_error_code(err) == CUDA_ERROR_NVLINK_UNCORRECTABLE;
    char label[96];

    xfer_label(run, gx, label, sizeof(label));
    if (!p) {
        verify_record_untested(run->r, "%s: failed under concurrent load "
                               "(%s), passed alone", label, err->message);
        return;
    }
    if (m->data_check) {
        CheckState *st = pair_path_state(p, m->path);

        *st = nvlink ? CHECK_FAILED : *st == CHECK_OK ? CHECK_UNTESTABLE :
              *st;
    }
    if (nvlink) {
        p->nvlink_fault = pair_of(run, gx->dst, gx->src)->nvlink_fault = true;
        pair_problem(p, "NVLink fault (CUDA error 220) in a batch of %d "
                     "pairs run together, at %s: %s; not seen again alone, "
                     "so every pair of the batch carries it", ng, label,
                     err->message);
        verify_record_broken(run->r, "NVLink fault (uncorrectable NVLink "
                             "error, CUDA error 220) in a batch with %s; see "
                             "the GPUs' NVLink error counters (nvidia-smi "
                             "nvlink -e)", label);
        return;
    }
    pair_problem(p, "%s: failed under concurrent load (%s) in a batch of %d "
                 "pairs; passed alone", label, err->message, ng);
    verify_record_untested(run->r, "%s: failed under concurrent load (%s); "
                           "it passed alone, which proves nothing under "
                           "load", label, err->message);
}

/* A read a -> b runs on b's context: it needs b's access to a. */
bool reader_has_access(const Run *run, int a, int b, XferKind k)
{
    return !xfer_method(k)->issued_by_dst || pair_of(run, b, a)->peer_enabled;
}

/* Pairs of a round whose @kind's path may still be checked, into @x. */
static int check_xfers(Run *run, GArray *round, int dir, XferKind kind,
                       Xfer *x)
{
    const XferMethod *m = xfer_method(kind);
    int nx = 0;

    for (guint k = 0; k + 1 < round->len; k += 2) {
        int sa = g_array_index(round, int, k + dir);
        int sb = g_array_index(round, int, k + 1 - dir);
        VerifyPair *p = pair_of(run, sa, sb);
        CheckState *st = pair_path_state(p, m->path);

        if (!p->peer_enabled || *st != CHECK_OK) {
            continue;
        }
        if (run->gone[sa] || run->gone[sb]) {
            *st = CHECK_UNTESTABLE;
            pair_problem(p, "not tested: GPU %d lost", run->report_of[
                         run->gone[sa] ? sa : sb]);
            continue;
        }
        if (!reader_has_access(run, sa, sb, kind)) {
            *st = CHECK_UNTESTABLE;
            pair_problem(p, "%s not tested: GPU %d has no peer access to "
                         "GPU %d to read from it", m->name,
                         run->report_of[sb], run->report_of[sa]);
            continue;
        }
        x[nx++] = (Xfer){ .kind = kind, .src = sa, .dst = sb };
    }
    return nx;
}

/* Pairs CUDA grants no peer access: a copy would be staged through the
 * host, so nothing is proven. */
static void record_no_peer_access(VerifyReport *r)
{
    for (guint pi = 0; pi < r->pairs->len; pi++) {
        VerifyPair *p = &g_array_index(r->pairs, VerifyPair, pi);

        if (p->peer_access == 0) {
            verify_record_untested(r, "GPUs %u and %u: CUDA grants no peer "
                                   "access; P2P not available between them",
                                   p->a, p->b);
        }
    }
}

/* The data-check paths of round @round, direction @dir, for @kind. */
static void check_round(Run *run, GArray *round, int dir, XferKind kind)
{
    g_autofree Xfer *x = g_new0(Xfer, round->len);
    g_autofree bool *ok = g_new0(bool, round->len);
    int nx = check_xfers(run, round, dir, kind, x);

    if (!nx) {
        return;
    }
    run_blamed(run, x, nx, 1, 1, ok);
    for (int i = 0; i < nx; i++) {
        if (ok[i]) {
            judge_bytes(run, &x[i], xfer_method(kind)->name);
        }
    }
}

/* One verified copy per path (the methods marked data_check: copy
 * engine, SM write, SM read, in that order) and direction; pairs of a
 * round at once. */
void data_checks(Run *run, GPtrArray *rounds)
{

    if (!run->r->kernels) {
        verify_record_untested(run->r, "data checks and figures not "
                               "testable: built without CUDA kernels (no "
                               "nvcc at build time)");
        return;
    }
    record_no_peer_access(run->r);
    for (int k = 0; k < XFER_KIND_COUNT; k++) {
        if (!xfer_method(k)->data_check) {
            continue;
        }
        for (guint ri = 0; ri < rounds->len; ri++) {
            for (int dir = 0; dir < 2; dir++) {
                check_round(run, g_ptr_array_index(rounds, ri), dir, k);
            }
        }
    }
}
