/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpup2p-verify's CUDA side, shared by its files (not by the rest of the
 * tool, which sees verify.h alone):
 *   cuda-driver.c   the driver API loaded at run time, errors, waiting
 *   cuda-setup.c    devices, contexts, buffers, peer access, lost GPUs,
 *                   teardown
 *   cuda-xfer.c     the transfer methods: one row per XferKind of what
 *                   it moves, how it is queued, checked and valued
 *   cuda-harness.c  one batch of transfers held, released, timed and
 *                   checked; the one retry policy of every sample loop
 *   cuda-checks.c   the data checks and what a bad byte or an error
 *                   says about a pair
 *   cuda-figures.c  the figures of the registry (figures.c), sampled
 *   cuda.c          verify_cuda(): the phases in order
 *   cuda-gpumem.c   GPU memory for the RDMA checks
 *
 * Errors travel as GError in the VERIFY_CUDA_ERROR domain, whose code is
 * the CUresult (CUDA_ERROR_NOT_READY: hung past the watchdog).
 */
#ifndef GPUP2P_CUDA_RUN_H
#define GPUP2P_CUDA_RUN_H

#include <stdint.h>

#include "cuda-abi.h"
#include "verify.h"

#define CU_DECLARE_EXTERN(name, params) extern CUresult (*p_##name) params;
CU_APIS(CU_DECLARE_EXTERN)
#undef CU_DECLARE_EXTERN

#ifdef VERIFY_HAVE_KERNELS
extern const unsigned char verify_kernels_fatbin[];
#endif

/* Pointer-chase hops: --benchmark's, and the validation run's. */
#define CHASE_HOPS 20000u
#define CHASE_HOPS_VALIDATE 5000u
#define CE_LATENCY_REPS 100u
#define STAGING_CHUNK ((gsize)32 << 20)
/* Copies of one transfer in one sample, warm-ups included, at most. */
#define MAX_COPIES 32u
/* Scratch per GPU: chase sinks, the benchmark's check words, and from
 * SCRATCH_COPY_WORDS one check word per (source, copy) of a sample. */
#define SCRATCH_COPY_WORDS 4096u

typedef struct {
    int ordinal;
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fill, check, copy, spin, chase;
    CUstream gate;              /* spin kernel, checks */
    CUstream checks;            /* validation: checks of what lands here,
                                 * aggregates' spans, check words home */
    CUstream *to;               /* one stream per peer ordinal */
    CUevent gate_open;
    int sms;
    CUdeviceptr src, inbox, chain, scratch;
    CUdeviceptr src_alt;        /* validation: the alternate pattern */
    gsize chain_bytes;
    void *staging;              /* pinned, 2 chunks */
    GError *open_error;         /* what gpu_open() met on its thread */
} Gpu;

typedef struct {
    const VerifyOptions *o;
    VerifyReport *r;
    Gpu *gpus;
    int n;
    int *report_of;             /* ordinal -> index in r->gpus */
    volatile int *flag;         /* pinned, mapped: releases the spins */
    CUdeviceptr flag_dev;
    uint64_t *results;          /* pinned: per GPU, n check words + chase */
    uint64_t *copy_results;     /* pinned: per (dst, src, copy) a check
                                 * word of a validated sample */
    void *host, *host_alt;      /* pinned, the size: host -> device sources
                                 * (the host's patterns, filled once) */
    void *host_in;              /* pinned, the size: device -> host lands */
    bool validate;              /* every copy checked in stream order
                                 * (default); else --benchmark's method */
    uint32_t chase_hops;        /* per pointer chase */
    gsize bytes;
    unsigned loops, warmup;
    double watchdog_s;          /* longest wait for any GPU work */
    bool *gone;                 /* per ordinal: lost or hung, unused since */
    gint64 t0;
} Run;

/* One transfer of a batch, and what came of it. */
typedef struct {
    XferKind kind;
    int src, dst;               /* ordinals */
    unsigned warmup;            /* untimed copies before the timed ones */
    bool alt;                   /* this copy moves the alternate pattern */
    gsize off, len;             /* at dst's inbox; len 0: the full size */
    CUevent start, stop;
    CUevent down[2], up[2];     /* staged copies */
    double ms;
    int64_t bad;                /* first bad byte offset at dst, -1 none */
    unsigned bad_copy, copies;  /* which copy of how many came back bad */
    bool bad_in_warmup;         /* bad_copy counts the warm-up copies */
} Xfer;

/* Which data-check state of a pair a transfer method proves or fails. */
typedef enum {
    PATH_CE,                    /* VerifyPair.verified_ce */
    PATH_SM_WRITE,              /* VerifyPair.verified_sm */
    PATH_SM_READ,               /* VerifyPair.verified_sm_read */
} PairPath;

/*
 * How one XferKind is run: the columns that the registry's kind column
 * (VerifyFigureInfo.kind) selects, and that the data checks use for the
 * three paths they prove. cuda-xfer.c holds the table.
 */
typedef struct {
    const char *name;           /* in notes: "copy engine 0->1" */
    bool issued_by_dst;         /* reads: queued on the destination */
    bool checked_at_dst;        /* leaves bytes at the destination that a
                                 * kernel there checks */
    bool copy_by_copy;          /* validation: each copy timed and
                                 * checked alone (cuda-validate.c) */
    bool host_path;             /* through host memory: no P2P verdict */
    bool one_gpu;               /* host <-> one GPU, no peer */
    bool both_ways;             /* a -> b and b -> a at once, summed */
    bool warms_up;              /* warm-up copies before the timed ones */
    bool serial;                /* one pair at a time, whatever the links */
    bool two_streams;           /* also runs on the destination's stream */
    bool check_reads_host;      /* its bytes are in host memory: read back
                                 * into the GPU to be checked */
    bool data_check;            /* one of the three data-check paths */
    bool nvlink_fails_path;     /* error 220 fails its path state */
    PairPath path;              /* the state a bad byte or error fails */
    gsize fixed_len;            /* bytes moved whatever the size, 0: the
                                 * transfer's share of the slot */
    /* Queues @loops copies of @x on stream @s. */
    bool (*enqueue)(Run *run, Xfer *x, CUstream s, unsigned loops,
                    GError **errp);
    /* Host memory made ready for @x, where it uses any (NULL: none). */
    bool (*prepare_host)(Run *run, const Xfer *x, GError **errp);
    /* Reads a time the transfer measured itself into x->ms (NULL: the
     * events' time stands). */
    bool (*read_own_time)(Run *run, Xfer *x, GError **errp);
    /* The figure's value from one finished transfer of @loops copies. */
    double (*value)(const Run *run, const Xfer *x, unsigned loops);
} XferMethod;

const XferMethod *xfer_method(XferKind k);

/* cuda-driver.c */
#define VERIFY_CUDA_ERROR verify_cuda_error_quark()
GQuark verify_cuda_error_quark(void);
/* The CUresult an error carries; CUDA_SUCCESS for one of another kind. */
CUresult cuda_error_code(const GError *err);
const char *cu_err(CUresult r);
bool cuda_load(GError **errp);
CUresult launch(CUfunction f, unsigned grid, unsigned block, CUstream s,
                void **args);
bool cu_sticky(CUresult r);
bool wait_done(const Run *run, CUevent e, CUstream s, const char *what,
               GError **errp);
/* GPU @g's context made current; the error names the GPU. */
bool gpu_make_current(const Gpu *g, GError **errp);

/* On a failed call: the error, with what was done, and return false. */
#define CU_TRY(call, ...)                                                  \
    do {                                                                   \
        CUresult r_ = (call);                                              \
        if (r_ != CUDA_SUCCESS) {                                          \
            g_autofree char *what_ = g_strdup_printf(__VA_ARGS__);         \
            g_set_error(errp, VERIFY_CUDA_ERROR, r_, "%s: %s (%d)",        \
                        what_, cu_err(r_), (int)r_);                       \
            return false;                                                  \
        }                                                                  \
    } while (0)

#define WAIT(run, e, s, ...)                                               \
    do {                                                                   \
        g_autofree char *w_ = g_strdup_printf(__VA_ARGS__);                \
        if (!wait_done(run, e, s, w_, errp)) {                             \
            return false;                                                  \
        }                                                                  \
    } while (0)

#define USE_GPU(g)                                                         \
    do {                                                                   \
        if (!gpu_make_current(g, errp)) {                                  \
            return false;                                                  \
        }                                                                  \
    } while (0)

/* cuda-setup.c */
bool cuda_discover(Run *run, GError **errp);
void judge_unseen_gpus(VerifyReport *r);
bool cuda_allocate(Run *run, GError **errp);
bool build_chains(Run *run, GError **errp);
void pair_access(Run *run);
void cuda_teardown(Run *run);
/* The pinned host buffers of the host figures asked for (run->host,
 * host_alt, host_in) in the current context, the host's patterns
 * filled; one that cannot be pinned is NULL and the run untested. */
void host_buffers_pin(Run *run);
/* Freed, unless a GPU may still be @copying (one was lost or hung: left
 * to exit), and NULL. */
void host_buffers_free(Run *run, bool copying);
/* GPU @g's context made current outside a batch; where it cannot be,
 * the GPU is marked gone with the error (false). */
bool gpu_current_or_gone(Run *run, int g);
/* GPU @g (ordinal) is unusable from now on: lost, or hung. */
void mark_gone(Run *run, int g, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
/* Waits out every stream of GPU @g; marks it gone if hung or left with
 * a sticky error. */
void drain_gpu(Run *run, int g);
/* Streams of GPU @g whose work waits on a GPU that hung, made anew, so
 * that @g is not taken for hung; then drained. */
void renew_streams_waiting_on_gone(Run *run, int g);
/* GPU @g's context has an error of its own (or it is gone already). */
bool gpu_probe_lost(Run *run, int g);
VerifyPair *pair_of(const Run *run, int a, int b);
void pair_problem(VerifyPair *p, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
CheckState *pair_path_state(VerifyPair *p, PairPath path);

/* cuda-xfer.c; the table covers every XferKind. */
uint32_t pattern_seed(int ordinal);
uint32_t host_pattern(uint64_t i, uint32_t seed);
/* The seed of what @x's copy moves, and where it reads it. */
uint32_t xfer_seed(const Xfer *x);
CUdeviceptr xfer_source(const Run *run, const Xfer *x);
/* The host's own patterns (HOST_SEED, alternate), into pinned memory. */
void fill_host_patterns(Run *run);
CUdeviceptr xfer_slot(const Run *run, const Xfer *x);
gsize xfer_len(const Run *run, const Xfer *x);
int exec_gpu(const Xfer *x);
int exec_peer(const Xfer *x);
const char *xfer_label(const Run *run, const Xfer *x, char *buf, gsize n);

/* cuda-checks.c */
bool queue_checks(Run *run, Xfer *x, int nx, GError **errp);
bool read_checks(Run *run, Xfer *x, int nx, GError **errp);
void judge_bytes(Run *run, const Xfer *x, const char *what);
void blame(Run *run, const Xfer *x, const GError *err);
void blame_batch(Run *run, const Xfer *gx, int ng, const GError *err);
void data_checks(Run *run, GPtrArray *rounds);
bool reader_has_access(const Run *run, int a, int b, XferKind k);

/* cuda-harness.c */
/* *@e destroyed where made, and NULL. */
void destroy_event(CUevent *e);
/* Every GPU marked in @used holds its gate stream with a spin kernel
 * until the host sets run->flag; gate_open fires at the release. */
bool hold_gpus(Run *run, const bool *used, GError **errp);
bool run_batch_span(Run *run, Xfer *x, int nx, unsigned loops,
                    double *span_ms, GError **errp);
bool run_batch(Run *run, Xfer *x, int nx, unsigned loops, GError **errp);
void retry_each(Run *run, Xfer *x, int nx, int per, unsigned loops,
                const GError *err, bool *ok);
void run_blamed(Run *run, Xfer *x, int nx, int per, unsigned loops,
                bool *ok);

/* cuda-validate.c */
bool run_batch_validated(Run *run, Xfer *x, int nx, unsigned loops,
                         double *span_ms, GError **errp);

/* cuda-figures.c */
void measure_pairs(Run *run, GPtrArray *rounds, int fig);
void measure_aggregates(Run *run, int k);
void measure_host(Run *run, int k);

#endif
