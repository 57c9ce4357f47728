/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The validation harness (the default): every copy of a sample, warm-ups
 * included, is checked at its destination in stream order, and the host
 * waits once, at the end of the sample. Consecutive copies move two
 * different patterns (a source and its alternate), so a copy that does
 * not land leaves the other pattern behind and fails its check; the slot
 * is poisoned once per sample, not once per copy. Each copy is timed by
 * its own events and the check that follows it is outside them; the
 * next copy waits for that check, so no copy overwrites bytes still
 * being checked. --benchmark keeps the copy-by-copy method instead
 * (cuda-harness.c).
 */
#include <string.h>

#include "cuda-run.h"

/* One copy's marks: timed on the executing GPU, checked on the
 * destination. */
typedef struct {
    CUevent start, stop, checked;
} CopyMarks;

typedef struct {
    Run *run;
    Xfer *x;
    int nx;
    unsigned copies, warm;
    CopyMarks *marks;           /* nx x copies */
    CUevent *ready;             /* per transfer: destination poisoned */
    CUevent *span;              /* with a span: 2 per copy, observer's */
} Sample;

static CopyMarks *marks_of(Sample *s, int i, unsigned c)
{
    return &s->marks[i * s->copies + c];
}

/* The check word of copy @c of @x, on its destination GPU. */
static CUdeviceptr copy_word(const Run *run, const Xfer *x, unsigned c)
{
    return run->gpus[x->dst].scratch + SCRATCH_COPY_WORDS +
           8 * ((gsize)x->src * MAX_COPIES + c);
}

static uint64_t *copy_result(const Run *run, const Xfer *x, unsigned c)
{
    return &run->copy_results[((gsize)x->dst * run->n + x->src) *
                              MAX_COPIES + c];
}

static bool new_event(CUevent *e, unsigned flags, GError **errp)
{
    CU_TRY(p_cuEventCreate(e, flags), "cuEventCreate");
    return true;
}

/* The events of every copy; each on the GPU whose stream records it. */
static bool sample_events(Sample *s, GError **errp)
{
    Run *run = s->run;

    for (int i = 0; i < s->nx; i++) {
        Xfer *x = &s->x[i];

        USE_GPU(&run->gpus[exec_gpu(x)]);
        for (unsigned c = 0; c < s->copies; c++) {
            if (!new_event(&marks_of(s, i, c)->start, CU_EVENT_DEFAULT,
                           errp) ||
                !new_event(&marks_of(s, i, c)->stop, CU_EVENT_DEFAULT,
                           errp)) {
                return false;
            }
        }
        USE_GPU(&run->gpus[x->dst]);
        for (unsigned c = 0; c < s->copies; c++) {
            if (!new_event(&marks_of(s, i, c)->checked,
                           CU_EVENT_DISABLE_TIMING, errp)) {
                return false;
            }
        }
        if (!new_event(&s->ready[i], CU_EVENT_DISABLE_TIMING, errp)) {
            return false;
        }
    }
    if (s->span) {
        USE_GPU(&run->gpus[s->x[0].dst]);
        for (unsigned c = 0; c < 2 * s->copies; c++) {
            if (!new_event(&s->span[c], CU_EVENT_DEFAULT, errp)) {
                return false;
            }
        }
    }
    return true;
}

/* Without its context, a GPU's events are left to the driver. */
static void sample_events_free(Sample *s)
{
    Run *run = s->run;

    for (int i = 0; i < s->nx; i++) {
        Xfer *x = &s->x[i];

        if (gpu_current_or_gone(run, exec_gpu(x))) {
            for (unsigned c = 0; c < s->copies; c++) {
                destroy_event(&marks_of(s, i, c)->start);
                destroy_event(&marks_of(s, i, c)->stop);
            }
        }
        if (gpu_current_or_gone(run, x->dst)) {
            for (unsigned c = 0; c < s->copies; c++) {
                destroy_event(&marks_of(s, i, c)->checked);
            }
            destroy_event(&s->ready[i]);
        }
    }
    if (s->span && gpu_current_or_gone(run, s->x[0].dst)) {
        for (unsigned c = 0; c < 2 * s->copies; c++) {
            destroy_event(&s->span[c]);
        }
    }
}

/*
 * Before the hold, on each destination's gate stream: the slot poisoned
 * (device -> host: host memory, by the executing GPU) and the check
 * words reset; `ready` marks the end. used[g]: GPU g issues copies.
 */
static bool sample_prepare(Sample *s, bool *used, GError **errp)
{
    Run *run = s->run;

    for (int i = 0; i < s->nx; i++) {
        Xfer *x = &s->x[i];
        const XferMethod *m = xfer_method(x->kind);
        Gpu *gd = &run->gpus[x->dst];

        x->bad = -1;
        used[exec_gpu(x)] = true;
        /* Host memory is prepared on the source's gate, and `ready` is
         * recorded on the destination's: one GPU (device -> host). */
        g_assert(!m->prepare_host || x->src == x->dst);
        if (m->prepare_host && !m->prepare_host(run, x, errp)) {
            return false;
        }
        USE_GPU(gd);
        CU_TRY(p_cuMemsetD32Async(xfer_slot(run, x), 0xdeadbeefu,
                                  xfer_len(run, x) / 4, gd->gate),
               "poisoning GPU %d", x->dst);
        CU_TRY(p_cuMemsetD32Async(copy_word(run, x, 0), 0xffffffffu,
                                  2 * s->copies, gd->gate), "memset");
        CU_TRY(p_cuEventRecord(s->ready[i], gd->gate), "cuEventRecord");
    }
    return true;
}

static CUstream exec_stream(const Run *run, const Xfer *x)
{
    return run->gpus[exec_gpu(x)].to[exec_peer(x)];
}

/* What copy @c of transfer @i waits for: the hold and the poison before
 * the first copy, the previous copy's check after, or (with a span) the
 * span's start of this round. */
static bool copy_waits(Sample *s, int i, unsigned c, GError **errp)
{
    Run *run = s->run;
    Xfer *x = &s->x[i];
    CUstream st = exec_stream(run, x);

    USE_GPU(&run->gpus[exec_gpu(x)]);
    if (c == 0) {
        CU_TRY(p_cuStreamWaitEvent(st, run->gpus[exec_gpu(x)].gate_open, 0),
               "cuStreamWaitEvent");
        CU_TRY(p_cuStreamWaitEvent(st, s->ready[i], 0), "cuStreamWaitEvent");
    } else if (!s->span) {
        /* Both ways at once: each round starts together, or one way
         * could drift ahead and run part of its copy alone. */
        bool together = xfer_method(x->kind)->both_ways;

        for (int k = together ? 0 : i; k < (together ? s->nx : i + 1); k++) {
            CU_TRY(p_cuStreamWaitEvent(st, marks_of(s, k, c - 1)->checked,
                                       0), "cuStreamWaitEvent");
        }
    }
    if (s->span) {
        CU_TRY(p_cuStreamWaitEvent(st, s->span[2 * c], 0),
               "cuStreamWaitEvent");
    }
    return true;
}

/* The span's start of round @c, on the observer: after every transfer
 * is ready for it (the previous round checked). */
static bool span_start(Sample *s, unsigned c, GError **errp)
{
    Run *run = s->run;
    Gpu *go = &run->gpus[s->x[0].dst];

    USE_GPU(go);
    for (int i = 0; i < s->nx; i++) {
        CUevent before = c ? marks_of(s, i, c - 1)->checked : s->ready[i];

        CU_TRY(p_cuStreamWaitEvent(go->checks, before, 0), "wait");
        if (c == 0) {
            CU_TRY(p_cuStreamWaitEvent(go->checks,
                                       run->gpus[exec_gpu(&s->x[i])].gate_open,
                                       0), "wait");
        }
    }
    CU_TRY(p_cuEventRecord(s->span[2 * c], go->checks), "cuEventRecord");
    return true;
}

static bool span_stop(Sample *s, unsigned c, GError **errp)
{
    Gpu *go = &s->run->gpus[s->x[0].dst];

    USE_GPU(go);
    for (int i = 0; i < s->nx; i++) {
        CU_TRY(p_cuStreamWaitEvent(go->checks, marks_of(s, i, c)->stop, 0),
               "wait");
    }
    CU_TRY(p_cuEventRecord(s->span[2 * c + 1], go->checks), "cuEventRecord");
    return true;
}

/* Copy @c of transfer @i between its marks, with pattern @c % 2. */
static bool queue_copy(Sample *s, int i, unsigned c, GError **errp)
{
    Run *run = s->run;
    Xfer *x = &s->x[i];
    CUstream st = exec_stream(run, x);
    CopyMarks *mk = marks_of(s, i, c);

    x->alt = c % 2;
    USE_GPU(&run->gpus[exec_gpu(x)]);
    CU_TRY(p_cuEventRecord(mk->start, st), "cuEventRecord");
    if (!xfer_method(x->kind)->enqueue(run, x, st, 1, errp)) {
        return false;
    }
    USE_GPU(&run->gpus[exec_gpu(x)]);
    CU_TRY(p_cuEventRecord(mk->stop, st), "cuEventRecord");
    return true;
}

/* Copy @c of transfer @i checked on its destination after it landed
 * (device -> host: read back from host memory first). */
static bool queue_check(Sample *s, int i, unsigned c, GError **errp)
{
    Run *run = s->run;
    Xfer *x = &s->x[i];
    Gpu *gd = &run->gpus[x->dst];
    CUdeviceptr buf = xfer_slot(run, x), word = copy_word(run, x, c);
    uint64_t words = xfer_len(run, x) / 4;
    uint32_t seed;
    void *args[] = { &buf, &words, &seed, &word };

    x->alt = c % 2;
    seed = xfer_seed(x);
    USE_GPU(gd);
    CU_TRY(p_cuStreamWaitEvent(gd->checks, marks_of(s, i, c)->stop, 0),
           "cuStreamWaitEvent");
    if (xfer_method(x->kind)->check_reads_host) {
        CU_TRY(p_cuMemcpyHtoDAsync(buf, run->host_in, words * 4, gd->checks),
               "GPU %d: reading back host memory", x->dst);
    }
    CU_TRY(launch(gd->check, gd->sms * 4, 512, gd->checks, args),
           "GPU %d: check_pattern", x->dst);
    CU_TRY(p_cuEventRecord(marks_of(s, i, c)->checked, gd->checks),
           "cuEventRecord");
    return true;
}

/* Every round of copies, their checks, and the check words home. */
static bool sample_queue(Sample *s, GError **errp)
{
    Run *run = s->run;

    for (unsigned c = 0; c < s->copies; c++) {
        if (s->span && !span_start(s, c, errp)) {
            return false;
        }
        for (int i = 0; i < s->nx; i++) {
            if (!copy_waits(s, i, c, errp) || !queue_copy(s, i, c, errp)) {
                return false;
            }
        }
        /* The span ends before any check of its round is queued on the
         * observer's stream. */
        if (s->span && !span_stop(s, c, errp)) {
            return false;
        }
        for (int i = 0; i < s->nx; i++) {
            if (!queue_check(s, i, c, errp)) {
                return false;
            }
        }
    }
    for (int i = 0; i < s->nx; i++) {
        Xfer *x = &s->x[i];
        Gpu *gd = &run->gpus[x->dst];

        USE_GPU(gd);
        CU_TRY(p_cuMemcpyDtoHAsync(copy_result(run, x, 0),
                                   copy_word(run, x, 0), 8 * s->copies,
                                   gd->checks), "check results");
    }
    return true;
}

/*
 * After the release: the wait, then times and verdicts. Each transfer's
 * last copy is waited for on the GPU that issued it, so a copy that hangs
 * is named as the transfer's, not as its destination's checks; then each
 * destination's checks stream, which ends with its check words.
 */
static bool sample_read(Sample *s, double *span_ms, GError **errp)
{
    Run *run = s->run;
    g_autofree bool *waited = g_new0(bool, run->n);

    for (int i = 0; i < s->nx; i++) {
        WAIT(run, marks_of(s, i, s->copies - 1)->stop, NULL,
             "transfer %d->%d", s->x[i].src, s->x[i].dst);
    }
    for (int i = 0; i < s->nx; i++) {
        int d = s->x[i].dst;

        if (!waited[d]) {
            WAIT(run, NULL, run->gpus[d].checks, "GPU %d: %u copies checked",
                 d, s->copies);
            waited[d] = true;
        }
    }
    for (int i = 0; i < s->nx; i++) {
        Xfer *x = &s->x[i];

        x->ms = 0;
        for (unsigned c = 0; c < s->copies; c++) {
            uint64_t bad = *copy_result(run, x, c);
            float ms = 0;

            if (c >= s->warm) {
                CU_TRY(p_cuEventElapsedTime(&ms, marks_of(s, i, c)->start,
                                            marks_of(s, i, c)->stop),
                       "cuEventElapsedTime");
                x->ms += ms;
            }
            if (bad != ~0ull && x->bad < 0) {
                x->bad = (int64_t)bad;
                x->bad_in_warmup = c < s->warm;
                x->bad_copy = c < s->warm ? c : c - s->warm;
            }
        }
    }
    for (unsigned c = s->warm; span_ms && c < s->copies; c++) {
        float ms = 0;

        CU_TRY(p_cuEventElapsedTime(&ms, s->span[2 * c], s->span[2 * c + 1]),
               "cuEventElapsedTime");
        *span_ms += ms;
    }
    return true;
}

/*
 * The GPU whose work stopped first, in the order the sample's work
 * depends on itself (round by round: span start, copies, span end,
 * checks); -1 where nothing is pending. An event not recorded (queueing
 * failed before it) counts as done, as CUDA has it.
 */
static int first_stalled_gpu(Sample *s)
{
    for (unsigned c = 0; c < s->copies; c++) {
        if (s->span && p_cuEventQuery(s->span[2 * c]) != CUDA_SUCCESS) {
            return s->x[0].dst;
        }
        for (int i = 0; i < s->nx; i++) {
            if (p_cuEventQuery(marks_of(s, i, c)->stop) != CUDA_SUCCESS) {
                return exec_gpu(&s->x[i]);
            }
        }
        if (s->span && p_cuEventQuery(s->span[2 * c + 1]) != CUDA_SUCCESS) {
            return s->x[0].dst;
        }
        for (int i = 0; i < s->nx; i++) {
            if (p_cuEventQuery(marks_of(s, i, c)->checked) != CUDA_SUCCESS) {
                return s->x[i].dst;
            }
        }
    }
    return -1;
}

/*
 * After a failed sample: nothing may wait on a spin; the GPU whose own
 * work stopped first is drained first (and retired there if it hangs);
 * then on the others, streams still waiting on that GPU's work are made
 * anew, so that a healthy GPU coupled to a hung one is not taken for
 * hung too.
 */
static void sample_settle(Sample *s)
{
    Run *run = s->run;
    int stalled = first_stalled_gpu(s);

    *run->flag = 1;
    if (stalled >= 0) {
        drain_gpu(run, stalled);
    }
    for (int g = 0; g < run->n; g++) {
        if (g == stalled) {
            continue;
        }
        if (stalled >= 0 && run->gone[stalled]) {
            renew_streams_waiting_on_gone(run, g);
        } else {
            drain_gpu(run, g);
        }
    }
}

/*
 * @x together, each with its warm-up copies and @loops timed ones, every
 * copy checked; with @span_ms, each round of copies is also timed on the
 * first transfer's destination, from when all start to when all end
 * (aggregates), and the rounds' times are summed. x[i].bad is the first
 * bad copy's first bad byte, x[i].ms the timed copies' time.
 */
bool run_batch_validated(Run *run, Xfer *x, int nx, unsigned loops,
                         double *span_ms, GError **errp)
{
    unsigned warm = x[0].warmup;
    Sample s = { .run = run, .x = x, .nx = nx, .warm = warm,
                 .copies = warm + loops };
    g_autofree bool *used = g_new0(bool, run->n);
    g_autofree CopyMarks *marks = NULL;
    g_autofree CUevent *ready = g_new0(CUevent, nx);
    g_autofree CUevent *span = NULL;
    bool ok;

    g_assert(s.copies <= MAX_COPIES);
    for (int i = 1; i < nx; i++) {
        g_assert(x[i].warmup == warm);
    }
    marks = g_new0(CopyMarks, nx * s.copies);
    span = span_ms ? g_new0(CUevent, 2 * s.copies) : NULL;
    s.marks = marks;
    s.ready = ready;
    s.span = span;
    if (span_ms) {
        *span_ms = 0;
    }
    for (int i = 0; i < nx; i++) {
        x[i].copies = loops;
        x[i].bad_copy = 0;
        x[i].bad_in_warmup = false;
    }
    ok = sample_events(&s, errp) && sample_prepare(&s, used, errp) &&
         hold_gpus(run, used, errp) && sample_queue(&s, errp);
    __sync_synchronize();
    *run->flag = 1;
    ok = ok && sample_read(&s, span_ms, errp);
    if (!ok) {
        sample_settle(&s);
    }
    sample_events_free(&s);
    for (int i = 0; i < nx; i++) {
        x[i].alt = false;
    }
    return ok;
}
