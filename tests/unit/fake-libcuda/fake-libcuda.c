/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * FAKE libcuda.so.1: a stand-in for NVIDIA's CUDA driver, for the unit
 * tests of gpup2p-verify only. It is not a CUDA driver and drives no GPU.
 *
 * It exports cuGetProcAddress_v2 alone and hands out exactly the entry
 * points of guest-tools/cuda-abi.h (CU_APIS), nothing else, so a call the
 * tool makes and the stand-in lacks fails loudly. Everything runs in host
 * memory and synchronously, in the order it is queued (always a valid
 * order for CUDA streams: work only waits on work queued before it); a
 * device pointer is the host address of the allocation. The tool's kernels
 * (guest-tools/kernels.cu) are matched by name and run on the CPU; the
 * "spin" kernel, which holds a stream until the host releases it, returns
 * at once. Events carry the time of a virtual clock that each operation
 * advances by a made-up cost, so figures are finite and repeatable.
 * Because work runs as it is queued, a wait the tool forgot would go
 * unseen; the ordering check ("the ordering check", below) aborts on an
 * access to bytes that another stream wrote, or a write to bytes another
 * stream used, with no chain of waits between the two.
 *
 * Environment (read at cuInit; bad values are named on stderr and abort):
 *   GPUP2P_FAKE_CUDA_BUS_IDS=B,...  one stand-in GPU per PCI bus id, in
 *                           CUDA order (e.g. a sysfs capture's GPUs:
 *                           0000:00:06.0,0000:00:07.0); up to 16.
 *   GPUP2P_FAKE_CUDA_GPUS=N   without BUS_IDS: N GPUs (0 to 16, default
 *                           2), GPU i at 0000:<i+1>:00.0 (hex).
 *   GPUP2P_FAKE_CUDA_MEM_MIB=M  each GPU has M MiB of memory (default
 *                           unlimited): cuMemAlloc past it fails with
 *                           CUDA_ERROR_OUT_OF_MEMORY.
 *   GPUP2P_FAKE_CUDA_NO_PEER=A-B,...  ordered pairs (CUDA ordinals) that
 *                           cuDeviceCanAccessPeer denies; "all": every
 *                           pair. The rest are offered peer access.
 *   GPUP2P_FAKE_CUDA_FAULT=F,...  faults; GPU is a CUDA ordinal, "S-D"
 *                           narrows a fault to copies from S into D:
 *     corrupt-byte:GPU:OFFSET[:N]  a peer copy (copy engine or SM) out of
 *                           GPU flips the byte at OFFSET of what it writes
 *                           (copies shorter than OFFSET are left alone);
 *                           with N, only the Nth peer copy it matches
 *                           (counted from 1, warm-up copies included).
 *     fail-source:GPU[:CODE[:N]]  a peer copy out of GPU returns CODE
 *                           (default 1, CUDA_ERROR_INVALID_VALUE) and moves
 *                           nothing; with N, only the Nth peer copy it
 *                           matches fails (one-shot: a transient fault that
 *                           a retry does not meet).
 *     corrupt-host:GPU:OFFSET[:N]  a copy out of GPU into pinned host
 *                           memory (device to host) flips the byte at
 *                           OFFSET; with N, only the Nth such copy.
 *     peer-query:S-D[:CODE]  cuDeviceCanAccessPeer(S, D) returns CODE
 *                           (default 999, CUDA_ERROR_UNKNOWN).
 *     ctx-set:GPU[:CODE[:N]]  cuCtxSetCurrent with GPU's context returns
 *                           CODE (default 999, CUDA_ERROR_UNKNOWN) and
 *                           leaves the current context as it was; with
 *                           N, only the Nth such call (counted from 1).
 *     slow-copy:GPU:FACTOR  a peer copy out of GPU takes FACTOR times as
 *                           long on the clock (moves the same bytes).
 *     slow-issuer:GPU:FACTOR  a peer copy queued on a stream of GPU
 *                           (whichever way it moves) takes FACTOR times
 *                           as long: shows which GPU issued a copy.
 *     hang-copy:GPU        a peer copy out of GPU never completes: its
 *                           stream, and every stream that waits on it,
 *                           stays busy; synchronizing on it blocks forever
 *                           (as the driver does), querying says not ready.
 *     drop-copy:GPU[:N]    a peer copy out of GPU is reported done and
 *                           moves nothing (writes lost on the way); with
 *                           N, only the Nth peer copy it matches.
 *     drop-host:GPU[:N]    the same for a copy of more than 4 KiB out of
 *                           GPU into pinned host memory (device to host;
 *                           the check words and times the tool reads
 *                           back are smaller); with N, only the Nth.
 *     lost-gpu:GPU[:CODE]  GPU is lost at its first peer copy (it "falls
 *                           off the bus"): that call and every later call
 *                           on its context, streams, events or memory
 *                           return CODE (default 719, CUDA_ERROR_LAUNCH_
 *                           FAILED, a sticky error).
 *
 *   GPUP2P_FAKE_CUDA_COUNT_FILE=PATH  at exit, the copies made are
 *                           written there, a line each: "peer_copies_from
 *                           GPU COUNT" (copy engine or SM, out of GPU into
 *                           a peer: what the N of a fault out of GPU
 *                           counts) and "host_copies COUNT" (between a GPU
 *                           and host memory), so a test can inject a fault
 *                           at every copy; "ctx_set_current GPU COUNT"
 *                           (cuCtxSetCurrent calls with GPU's context:
 *                           what the N of a ctx-set fault counts).
 *   GPUP2P_FAKE_CUDA_PLACEMENT_FILE=PATH  a line appended for each copy
 *                           between a GPU and more than 4 KiB of pinned
 *                           host memory, and for each peer copy: "h2d GPU
 *                           ...", "d2h GPU ..." or "peer SRC-DST ...",
 *                           then the calling thread's "cpus=LIST" (its
 *                           CPU affinity) and "policy=MODE[:NODES]" (its
 *                           memory policy) at the copy, and for a host
 *                           copy "alloc_cpus=" and "alloc_policy=", the
 *                           same of the thread that pinned the memory, at
 *                           cuMemHostAlloc: so a test sees from outside
 *                           where the tool placed its host figures.
 *   GPUP2P_FAKE_EVENT_FILE=PATH  a line appended for each piece of work
 *                           given to a GPU: "cuda work GPU" (a kernel:
 *                           its stream's GPU; a memset: the memory's; a
 *                           copy: each GPU whose memory it moves); the
 *                           stand-in NVML appends its counter reads to the
 *                           same file, so a test sees the order of both.
 *
 * The tests point the tool at this file with LD_LIBRARY_PATH (the tool
 * dlopens "libcuda.so.1" by name); the tool has no path override.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/mempolicy.h>

#include "cuda-abi.h"
#include "../fake-event-log.h"

#define FAKE_MAX_GPUS 16
#define FAKE_ERROR_NOT_READY 600
#define FAKE_ERROR_INVALID_HANDLE 400
#define FAKE_ERROR_NOT_FOUND 500
#define FAKE_ERROR_NOT_INITIALIZED 3
#define FAKE_ERROR_INVALID_DEVICE 101
#define FAKE_ERROR_ILLEGAL_ADDRESS 700

struct CUctx_st {
    int dev;
};

/*
 * The ordering check: the stand-in runs work when it is queued, so it
 * would never show a wait between streams that the tool forgot. Each
 * stream keeps a vector clock (one count per stream) that its events
 * carry and that waits merge, as do the host's observations (a stream or
 * event found done). Every byte range of an allocation remembers which
 * streams read or wrote it, at which count; a write and another access
 * on different streams with no chain of waits (or host observations)
 * between them is a race on real GPUs, and the stand-in aborts naming it.
 */
#define FAKE_MAX_STREAMS 1024
typedef struct {
    uint32_t t[FAKE_MAX_STREAMS];
} Clock;

struct CUstream_st {
    int dev;
    bool hung;              /* behind a copy that never completes */
    int id;                 /* in the ordering check, 0: none yet */
    Clock *vc;
};

struct CUevent_st {
    int dev;
    unsigned flags;
    bool recorded, never;
    Clock *vc;              /* the stream's clock when recorded */
    unsigned long long t_ns;
    struct CUevent_st *prev, *next;     /* the live events, as the driver
                                         * keeps them per context */
};

/* The ordering check (below). */
static uint32_t op_tick(struct CUstream_st *s);
static void touch(struct CUstream_st *s, uint32_t tick, const void *ptr,
                  size_t len, bool write);
static void host_saw_stream(struct CUstream_st *s);
static struct CUstream_st *streams_by_id[FAKE_MAX_STREAMS];
static int last_stream_id;

/* Live events: the driver frees a context's events with the context. */
static struct CUevent_st *live_events;
static void events_free_of(int dev);

struct CUmod_st {
    int dev;
};

enum { K_FILL, K_CHECK, K_COPY, K_SPIN, K_CHASE, K_COUNT };
static const char *const kernel_names[K_COUNT] = {
    "fill_pattern", "check_pattern", "copy_int4", "spin", "pointer_chase",
};

struct CUfunc_st {
    int kind;
};

/* An access to an allocation's bytes [off, off + len), by a stream. */
typedef struct {
    size_t off, len;
    int stream;
    uint32_t tick;
    bool write;
} Access;

typedef struct Alloc {
    struct Alloc *next;
    Access *log;            /* the ordering check's accesses */
    size_t nlog, caplog;
    char *base;
    size_t bytes;
    int dev;                /* -1: pinned host memory */
    char place[160];        /* host memory: the pinning thread's
                             * placement (GPUP2P_FAKE_CUDA_PLACEMENT_FILE) */
} Alloc;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool initialized;
static int ngpus = 2;
static struct CUctx_st ctxs[FAKE_MAX_GPUS];
static int ctx_refs[FAKE_MAX_GPUS];
static bool peer_enabled[FAKE_MAX_GPUS][FAKE_MAX_GPUS];
static struct CUstream_st null_streams[FAKE_MAX_GPUS];
static struct CUfunc_st funcs[K_COUNT] = {
    { K_FILL }, { K_CHECK }, { K_COPY }, { K_SPIN }, { K_CHASE },
};
static Alloc *allocs;
static unsigned long long clock_ns;
static __thread CUcontext current;

/* Fault injection, from the environment. */
enum {
    F_CORRUPT, F_FAIL, F_HANG, F_LOSE, F_CORRUPT_HOST, F_SLOW,
    F_SLOW_ISSUER, F_PEER_QUERY, F_CTX_SET, F_DROP, F_DROP_HOST, F_KINDS
};
typedef struct {
    int kind, src, dst;         /* dst -1: any peer */
    long long arg;              /* byte offset, or the error code */
    long long nth;              /* only the nth matching copy, 0 all */
    long long seen;             /* copies it matched so far */
} Fault;
#define FAKE_MAX_FAULTS 8
static Fault faults[FAKE_MAX_FAULTS];
static int nfaults;
static int lose_code = 719;
static bool no_peer[FAKE_MAX_GPUS][FAKE_MAX_GPUS];
static char bus_ids[FAKE_MAX_GPUS][32];
static bool lost[FAKE_MAX_GPUS];
static size_t mem_limit;                /* bytes per GPU, 0: none */
static size_t mem_used[FAKE_MAX_GPUS];
static bool dev_hung[FAKE_MAX_GPUS];     /* a stream of it never finishes */
static unsigned long long peer_copies[FAKE_MAX_GPUS], host_copies;
static unsigned long long ctx_sets[FAKE_MAX_GPUS];
static const char *count_file;
static const char *placement_file;

/* "cpus=LIST policy=MODE[:NODES]" of the calling thread, into @buf. */
static void thread_place(const char *prefix, char *buf, size_t n)
{
    static const char *const modes[] = { "default", "preferred", "bind",
                                         "interleave", "local" };
    cpu_set_t set;
    unsigned long nodes[17] = { 0 };
    int mode = -1;
    size_t at;

    at = (size_t)snprintf(buf, n, "%scpus=", prefix);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        bool first = true;

        for (int c = 0; c < CPU_SETSIZE && at < n; c++) {
            int end = c;

            if (!CPU_ISSET(c, &set)) {
                continue;
            }
            while (end + 1 < CPU_SETSIZE && CPU_ISSET(end + 1, &set)) {
                end++;
            }
            at += (size_t)snprintf(buf + at, n - at, end > c ? "%s%d-%d" :
                                   "%s%d", first ? "" : ",", c, end);
            first = false;
            c = end;
        }
    }
    if (at < n && syscall(SYS_get_mempolicy, &mode, nodes, 1025UL, NULL,
                          0UL) == 0) {
        mode &= ~MPOL_MODE_FLAGS;
        at += (size_t)snprintf(buf + at, n - at, " %spolicy=%s", prefix,
                               mode >= 0 && mode < 5 ? modes[mode] : "?");
        for (int i = 0, first = 1; i < 1024 && at < n; i++) {
            if (nodes[i / 64] >> (i % 64) & 1) {
                at += (size_t)snprintf(buf + at, n - at, "%c%d",
                                       first ? ':' : ',', i);
                first = 0;
            }
        }
    }
}

static const char *event_file;

/* "cuda work GPU" in GPUP2P_FAKE_EVENT_FILE. */
static void record_work(int dev)
{
    if (event_file && dev >= 0) {
        fake_event_line(event_file, "cuda work %d\n", dev);
    }
}

/* One line of GPUP2P_FAKE_CUDA_PLACEMENT_FILE, under the lock. */
static void record_place(const char *what, int a, int b, const Alloc *host)
{
    char place[160];
    FILE *f;

    if (!placement_file || !(f = fopen(placement_file, "a"))) {
        return;
    }
    thread_place("", place, sizeof(place));
    if (b >= 0) {
        fprintf(f, "%s %d-%d %s\n", what, a, b, place);
    } else {
        fprintf(f, "%s %d %s %s\n", what, a, place, host->place);
    }
    fclose(f);
}

/* The copy counts, for a test that injects a fault at each copy. */
static void write_counts(void)
{
    FILE *f = fopen(count_file, "w");

    if (!f) {
        perror(count_file);
        return;
    }
    for (int g = 0; g < ngpus; g++) {
        fprintf(f, "peer_copies_from %d %llu\n", g, peer_copies[g]);
    }
    fprintf(f, "host_copies %llu\n", host_copies);
    for (int g = 0; g < ngpus; g++) {
        fprintf(f, "ctx_set_current %d %llu\n", g, ctx_sets[g]);
    }
    fclose(f);
}

static void die(const char *var, const char *v, const char *why)
{
    fprintf(stderr, "fake libcuda (stand-in): %s=%s: %s\n", var, v, why);
    abort();
}

/* "S" or "S-D", CUDA ordinals below the GPU count. */
static const char *parse_gpus(const char *at, int *s, int *d)
{
    char *end;

    *s = (int)strtol(at, &end, 10);
    *d = -1;
    if (end == at || *s < 0 || *s >= ngpus) {
        return NULL;
    }
    if (*end == '-') {
        at = end + 1;
        *d = (int)strtol(at, &end, 10);
        if (end == at || *d < 0 || *d >= ngpus || *d == *s) {
            return NULL;
        }
    }
    return end;
}

static void parse_fault(const char *var, const char *v, const char *item)
{
    static const char *const kinds[] = {
        [F_CORRUPT] = "corrupt-byte:", [F_FAIL] = "fail-source:",
        [F_HANG] = "hang-copy:", [F_LOSE] = "lost-gpu:",
        [F_CORRUPT_HOST] = "corrupt-host:", [F_SLOW] = "slow-copy:",
        [F_SLOW_ISSUER] = "slow-issuer:", [F_PEER_QUERY] = "peer-query:",
        [F_CTX_SET] = "ctx-set:", [F_DROP] = "drop-copy:",
        [F_DROP_HOST] = "drop-host:",
    };
    Fault f = { .kind = -1, .arg = -1 };
    const char *at = NULL;
    char *end;

    for (int k = 0; k < F_KINDS; k++) {
        if (!strncmp(item, kinds[k], strlen(kinds[k]))) {
            f.kind = k;
            at = item + strlen(kinds[k]);
        }
    }
    if (f.kind < 0 || nfaults == FAKE_MAX_FAULTS) {
        die(var, v, "each fault is corrupt-byte:GPU:OFFSET[:N], "
            "corrupt-host:GPU:OFFSET, fail-source:GPU[:CODE], hang-copy:GPU,"
            " lost-gpu:GPU[:CODE], slow-copy:GPU:FACTOR, "
            "slow-issuer:GPU:FACTOR, peer-query:S-D[:CODE], "
            "ctx-set:GPU[:CODE[:N]], drop-copy:GPU[:N] or "
            "drop-host:GPU[:N] (at most 8)");
    }
    if (!(at = parse_gpus(at, &f.src, &f.dst))) {
        die(var, v, "GPU must be a CUDA ordinal (or S-D) of a stand-in GPU");
    }
    if (*at == ':' && (f.kind == F_DROP || f.kind == F_DROP_HOST)) {
        f.nth = strtoll(at + 1, &end, 0);
        at = end;
    } else if (*at == ':' && f.kind != F_HANG) {
        f.arg = strtoll(at + 1, &end, 0);
        at = end;
    }
    if (*at == ':' && (f.kind == F_CORRUPT || f.kind == F_FAIL ||
                       f.kind == F_CORRUPT_HOST || f.kind == F_CTX_SET)) {
        f.nth = strtoll(at + 1, &end, 0);
        at = end;
    }
    if ((*at && *at != ',') || f.nth < 0 ||
        (f.kind == F_PEER_QUERY && f.dst < 0) ||
        (f.kind == F_CTX_SET && f.dst >= 0) ||
        ((f.kind == F_CORRUPT || f.kind == F_CORRUPT_HOST) && f.arg < 0) ||
        ((f.kind == F_SLOW || f.kind == F_SLOW_ISSUER) && f.arg < 1)) {
        die(var, v, "bad fault (corrupt-byte needs an OFFSET)");
    }
    if (f.kind == F_LOSE && f.arg >= 0) {
        lose_code = (int)f.arg;
    }
    faults[nfaults++] = f;
}

static void parse_env(void)
{
    const char *v = getenv("GPUP2P_FAKE_CUDA_BUS_IDS");

    ngpus = 2;
    if (v && *v) {
        ngpus = 0;
        for (const char *at = v; *at; at += *at == ',') {
            size_t len = strcspn(at, ",");

            if (ngpus == FAKE_MAX_GPUS || len < 7 || len >= 32) {
                die("GPUP2P_FAKE_CUDA_BUS_IDS", v, "1 to 16 PCI bus ids");
            }
            /* The driver's own form: an 8-digit domain. */
            snprintf(bus_ids[ngpus++], sizeof(bus_ids[0]), "%s%.*s",
                     strcspn(at, ":") == 4 ? "0000" : "", (int)len, at);
            at += len;
        }
    } else if ((v = getenv("GPUP2P_FAKE_CUDA_GPUS")) && *v) {
        ngpus = atoi(v);
        if (ngpus < 0 || ngpus > FAKE_MAX_GPUS) {
            die("GPUP2P_FAKE_CUDA_GPUS", v, "0 to 16");
        }
    }
    for (int i = 0; i < ngpus && !bus_ids[i][0]; i++) {
        snprintf(bus_ids[i], sizeof(bus_ids[i]), "00000000:%02X:00.0", i + 1);
    }
    if ((v = getenv("GPUP2P_FAKE_CUDA_MEM_MIB")) && *v) {
        mem_limit = (size_t)strtoull(v, NULL, 10) << 20;
    }
    if ((v = getenv("GPUP2P_FAKE_CUDA_NO_PEER")) && *v) {
        for (const char *at = v; *at; at++) {
            int a, b;

            if (!strcmp(v, "all")) {
                memset(no_peer, 1, sizeof(no_peer));
                break;
            }
            if (!(at = parse_gpus(at, &a, &b)) || b < 0 ||
                (*at && *at != ',')) {
                die("GPUP2P_FAKE_CUDA_NO_PEER", v, "A-B,... or all");
            }
            no_peer[a][b] = true;
            if (!*at) {
                break;
            }
        }
    }
    if ((v = getenv("GPUP2P_FAKE_CUDA_COUNT_FILE")) && *v) {
        count_file = v;
        atexit(write_counts);
    }
    if ((v = getenv("GPUP2P_FAKE_CUDA_PLACEMENT_FILE")) && *v) {
        placement_file = v;
    }
    if ((v = getenv("GPUP2P_FAKE_EVENT_FILE")) && *v) {
        event_file = v;
    }
    if ((v = getenv("GPUP2P_FAKE_CUDA_FAULT")) && *v) {
        for (const char *at = v; at; at = strchr(at, ',')) {
            at += *at == ',';
            parse_fault("GPUP2P_FAKE_CUDA_FAULT", v, at);
        }
    }
}

/* The first fault of @kind on a peer copy from @s into @d, or NULL. */
static Fault *fault(int kind, int s, int d)
{
    for (int i = 0; i < nfaults; i++) {
        Fault *f = &faults[i];

        if (f->kind == kind && f->src == s && (f->dst < 0 || f->dst == d)) {
            return f;
        }
    }
    return NULL;
}

/* ---- bookkeeping ------------------------------------------------------- */

static Alloc *find_alloc(const void *p, size_t bytes)
{
    const char *c = p;

    for (Alloc *a = allocs; a; a = a->next) {
        if (c >= a->base && c < a->base + a->bytes) {
            return bytes <= (size_t)(a->base + a->bytes - c) ? a : NULL;
        }
    }
    return NULL;
}

static int current_dev(void)
{
    return current ? current->dev : -1;
}

static struct CUstream_st *stream_of(CUstream s)
{
    int d = current_dev();

    return s ? s : d >= 0 ? &null_streams[d] : NULL;
}

/* The GPU is lost from now on: every later call touching it fails. */
static bool is_lost(int dev)
{
    return dev >= 0 && dev < ngpus && lost[dev];
}

static void advance(size_t bytes, double gbps, unsigned long long fixed_ns)
{
    clock_ns += fixed_ns + (unsigned long long)(bytes / gbps);
}

/*
 * A copy of @bytes from @src to @dst queued on @s: host memory moves now,
 * unless a fault says otherwise; @gbps: the made-up speed of the clock.
 * Both sides are allocations of the stand-in, except that @host_side (of
 * a host <-> device copy) may be the caller's pageable memory: the driver
 * takes that too, so the stand-in does; the other side must be a GPU's.
 */
static CUresult do_copy(void *dst, const void *src, size_t bytes,
                        struct CUstream_st *s, double gbps,
                        const void *host_side)
{
    Alloc *as = find_alloc(src, bytes), *ad = find_alloc(dst, bytes);
    Fault *f;
    int sd, dd;
    bool peer;

    if (host_side && !find_alloc(host_side, bytes)) {
        Alloc *gpu = host_side == src ? ad : as;

        if (!gpu || gpu->dev < 0 || !s) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        sd = dd = gpu->dev;     /* pageable: no fault of a peer copy */
    } else {
        if (!as || !ad || !s) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        sd = as->dev;
        dd = ad->dev;
    }
    peer = sd >= 0 && dd >= 0 && sd != dd;
    record_work(sd);
    if (dd != sd) {
        record_work(dd);
    }
    if (peer) {
        record_place("peer", sd, dd, NULL);
    } else if ((sd < 0) != (dd < 0) && bytes > 4096) {
        record_place(sd < 0 ? "h2d" : "d2h", sd < 0 ? dd : sd, -1,
                     sd < 0 ? as : ad);
    }
    if (peer) {
        for (int i = 0; i < nfaults; i++) {
            if (faults[i].kind == F_LOSE &&
                (faults[i].src == sd || faults[i].src == dd)) {
                lost[faults[i].src] = true;
            }
        }
        peer_copies[sd]++;
        /* With N, one-shot: only the Nth matching copy fails. */
        if ((f = fault(F_FAIL, sd, dd)) && (++f->seen == f->nth || !f->nth)) {
            return f->arg >= 0 ? (CUresult)f->arg : CUDA_ERROR_INVALID_VALUE;
        }
    }
    if (is_lost(sd) || is_lost(dd) || is_lost(s->dev)) {
        return lose_code;
    }
    if (s->hung) {
        return CUDA_SUCCESS;        /* queued behind a hung copy */
    }
    if (peer && fault(F_HANG, sd, dd)) {
        s->hung = dev_hung[s->dev] = true;
        return CUDA_SUCCESS;
    }
    {
        uint32_t t = op_tick(s);

        touch(s, t, src, bytes, false);
        touch(s, t, dst, bytes, true);
    }
    if (peer && (f = fault(F_SLOW, sd, dd))) {
        gbps /= (double)f->arg;
    }
    if (peer && (f = fault(F_SLOW_ISSUER, s->dev, -1))) {
        gbps /= (double)f->arg;
    }
    if (peer && (f = fault(F_DROP, sd, dd)) &&
        (++f->seen == f->nth || !f->nth)) {
        advance(bytes, gbps, 2000);
        return CUDA_SUCCESS;    /* said done, moved nothing */
    }
    if (sd >= 0 && dd < 0 && bytes > 4096 &&
        (f = fault(F_DROP_HOST, sd, -1)) &&
        (++f->seen == f->nth || !f->nth)) {
        host_copies++;
        advance(bytes, gbps, 2000);
        return CUDA_SUCCESS;    /* said done, moved nothing */
    }
    memmove(dst, src, bytes);
    if (peer && (f = fault(F_CORRUPT, sd, dd)) &&
        (++f->seen == f->nth || !f->nth) &&
        (unsigned long long)f->arg < bytes) {
        ((unsigned char *)dst)[f->arg] ^= 0x5a;
    }
    host_copies += (sd < 0) != (dd < 0);
    if (sd >= 0 && dd < 0 && (f = fault(F_CORRUPT_HOST, sd, -1)) &&
        (++f->seen == f->nth || !f->nth) &&
        (unsigned long long)f->arg < bytes) {
        ((unsigned char *)dst)[f->arg] ^= 0x5a;
    }
    advance(bytes, gbps, 2000);
    return CUDA_SUCCESS;
}

/* ---- the tool's kernels, on the CPU ------------------------------------ */

/* As kernels.cu's pattern(): the top bit of the seed inverts it. */
static uint32_t pattern(uint64_t i, uint32_t s)
{
    uint64_t x = i * 0x9E3779B97F4A7C15ull + (s & 0x7fffffffu);

    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    return (uint32_t)(x ^ (x >> 29)) ^ (s & 0x80000000u ? ~0u : 0u);
}

static CUresult run_kernel(int kind, struct CUstream_st *s, void **args,
                           unsigned gx)
{
    int dev = s->dev;

    switch (kind) {
    case K_FILL: {
        uint32_t *dst = *(uint32_t **)args[0];
        uint64_t words = *(uint64_t *)args[1];
        uint32_t seed = *(uint32_t *)args[2];
        Alloc *a = find_alloc(dst, words * 4);

        if (!a || a->dev != dev) {
            return FAKE_ERROR_ILLEGAL_ADDRESS;
        }
        touch(s, op_tick(s), dst, words * 4, true);
        for (uint64_t i = 0; i < words; i++) {
            dst[i] = pattern(i, seed);
        }
        advance(words * 4, 2000, 3000);
        return CUDA_SUCCESS;
    }
    case K_CHECK: {
        const uint32_t *buf = *(const uint32_t **)args[0];
        uint64_t words = *(uint64_t *)args[1];
        uint32_t seed = *(uint32_t *)args[2];
        unsigned long long *first = *(unsigned long long **)args[3];
        Alloc *a = find_alloc(buf, words * 4), *f = find_alloc(first, 8);

        if (!a || !f || a->dev != dev || f->dev != dev) {
            return FAKE_ERROR_ILLEGAL_ADDRESS;
        }
        {
            uint32_t t = op_tick(s);

            touch(s, t, buf, words * 4, false);
            touch(s, t, first, 8, true);
        }
        /* The first bad byte's offset, as the kernel gives it. */
        for (uint64_t i = 0; i < words && i * 4 < *first; i++) {
            uint32_t diff = buf[i] ^ pattern(i, seed);

            if (diff) {
                *first = i * 4 + (uint64_t)__builtin_ctz(diff) / 8;
                break;
            }
        }
        advance(words * 4, 2000, 3000);
        return CUDA_SUCCESS;
    }
    case K_COPY: {
        const char *src = *(const char **)args[0];
        char *dst = *(char **)args[1];
        uint64_t n = *(uint64_t *)args[2];
        Alloc *as = find_alloc(src, n * 16), *ad = find_alloc(dst, n * 16);

        if (!as || !ad) {
            return FAKE_ERROR_ILLEGAL_ADDRESS;
        }
        /* SMs reach a peer's memory only with peer access enabled. */
        if ((as->dev != dev && (as->dev < 0 || !peer_enabled[dev][as->dev])) ||
            (ad->dev != dev && (ad->dev < 0 || !peer_enabled[dev][ad->dev]))) {
            lost[dev] = true;
            return FAKE_ERROR_ILLEGAL_ADDRESS;
        }
        return do_copy(dst, src, n * 16, s, 350, NULL);
    }
    case K_SPIN:
        /* Holds nothing: work here runs as it is queued. */
        return CUDA_SUCCESS;
    case K_CHASE: {
        const uint32_t *next = *(const uint32_t **)args[0];
        uint32_t hops = *(uint32_t *)args[1];
        uint32_t *sink = *(uint32_t **)args[2];
        uint64_t *ns = *(uint64_t **)args[3];
        uint32_t cached = *(uint32_t *)args[4];     /* plain loads: 1 */
        uint32_t at = *(uint32_t *)args[5];         /* start */
        uint32_t target = *(uint32_t *)args[6];     /* the one block */
        Alloc *a = find_alloc(next, 4);

        if (!a || !find_alloc(sink, 4) || !find_alloc(ns, 8) || cached > 1 ||
            target >= gx ||
            (a->dev != dev && !peer_enabled[dev][a->dev])) {
            return FAKE_ERROR_ILLEGAL_ADDRESS;
        }
        {
            uint32_t t = op_tick(s);

            touch(s, t, a->base, a->bytes, false);
            touch(s, t, sink, 4, true);
            touch(s, t, ns, 8, true);
        }
        for (uint32_t h = 0; h < hops; h++) {
            if (!find_alloc(next + at, 4)) {
                return FAKE_ERROR_ILLEGAL_ADDRESS;
            }
            at = next[at];
        }
        *sink = at;
        /* Each launch adds its own time, as the kernel's atomicAdd. */
        *ns += (uint64_t)hops * (a->dev == dev ? 600 : 1500);
        advance(0, 1, (uint64_t)hops * (a->dev == dev ? 600 : 1500));
        return CUDA_SUCCESS;
    }
    }
    return CUDA_ERROR_INVALID_VALUE;
}

/* ---- the entry points -------------------------------------------------- */

#define FAKE_DECLARE(name, params) static CUresult fake_##name params;
CU_APIS(FAKE_DECLARE)

#define LOCKED(body)                                                       \
    do {                                                                   \
        CUresult r_;                                                       \
        pthread_mutex_lock(&lock);                                         \
        r_ = (body);                                                       \
        pthread_mutex_unlock(&lock);                                       \
        return r_;                                                         \
    } while (0)

#define NEED_INIT()                                                        \
    do {                                                                   \
        if (!initialized) {                                                \
            return FAKE_ERROR_NOT_INITIALIZED;                             \
        }                                                                  \
    } while (0)

static CUresult check_dev(CUdevice d)
{
    return initialized ? d >= 0 && d < ngpus ? CUDA_SUCCESS
                                             : FAKE_ERROR_INVALID_DEVICE
                       : FAKE_ERROR_NOT_INITIALIZED;
}

static CUresult fake_cuInit(unsigned flags)
{
    if (flags) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_lock(&lock);
    if (!initialized) {
        parse_env();
        for (int i = 0; i < FAKE_MAX_GPUS; i++) {
            ctxs[i].dev = i;
            null_streams[i].dev = i;
        }
        initialized = true;
    }
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

static CUresult fake_cuDriverGetVersion(int *version)
{
    *version = 13000;
    return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetCount(int *count)
{
    NEED_INIT();
    *count = ngpus;
    return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGet(CUdevice *dev, int ordinal)
{
    CUresult r = check_dev(ordinal);

    if (r == CUDA_SUCCESS) {
        *dev = ordinal;
    }
    return r;
}

static CUresult fake_cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult r = check_dev(dev);

    if (r == CUDA_SUCCESS) {
        snprintf(name, len, "Fake CUDA stand-in GPU %d", dev);
    }
    return r;
}

static CUresult fake_cuDeviceGetPCIBusId(char *bus, int len, CUdevice dev)
{
    CUresult r = check_dev(dev);

    if (r == CUDA_SUCCESS) {
        /* The driver's own form: an 8-digit domain, upper-case hex. */
        snprintf(bus, len, "%s", bus_ids[dev]);
    }
    return r;
}

static CUresult fake_cuDeviceGetAttribute(int *v, int attr, CUdevice dev)
{
    CUresult r = check_dev(dev);

    if (r != CUDA_SUCCESS) {
        return r;
    }
    switch (attr) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *v = 4;
        return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *v = 9;
        return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        *v = 0;
        return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:
        *v = 0;
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult fake_cuDeviceCanAccessPeer(int *can, CUdevice dev,
                                           CUdevice peer)
{
    CUresult r = check_dev(dev);
    Fault *f;

    if (r == CUDA_SUCCESS && (r = check_dev(peer)) == CUDA_SUCCESS &&
        (f = fault(F_PEER_QUERY, dev, peer))) {
        return f->arg >= 0 ? (CUresult)f->arg : 999;
    }
    if (r == CUDA_SUCCESS) {
        *can = dev != peer && !no_peer[dev][peer];
    }
    return r;
}

static CUresult fake_cuDeviceGetP2PAttribute(int *v, int attr, CUdevice src,
                                             CUdevice dst)
{
    CUresult r = check_dev(src);

    if (r != CUDA_SUCCESS || (r = check_dev(dst)) != CUDA_SUCCESS) {
        return r;
    }
    switch (attr) {
    case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK:
        *v = 0;
        return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
        *v = 1;
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult ctx_retain(CUcontext *ctx, CUdevice dev)
{
    CUresult r = check_dev(dev);

    if (r == CUDA_SUCCESS) {
        ctx_refs[dev]++;
        *ctx = &ctxs[dev];
    }
    return r;
}

static CUresult fake_cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
    LOCKED(ctx_retain(ctx, dev));
}

static CUresult ctx_release(CUdevice dev)
{
    CUresult r = check_dev(dev);

    if (r == CUDA_SUCCESS) {
        r = ctx_refs[dev] > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
        ctx_refs[dev] -= ctx_refs[dev] > 0;
        if (r == CUDA_SUCCESS && ctx_refs[dev] == 0) {
            events_free_of(dev);
        }
    }
    return r;
}

static CUresult fake_cuDevicePrimaryCtxRelease(CUdevice dev)
{
    LOCKED(ctx_release(dev));
}

static CUresult ctx_set_current(CUcontext ctx)
{
    Fault *f;

    if (ctx && (ctx < ctxs || ctx >= ctxs + ngpus)) {
        return FAKE_ERROR_INVALID_HANDLE;
    }
    if (ctx) {
        ctx_sets[ctx->dev]++;
        /* With N, one-shot: only the Nth call for that GPU fails. */
        if ((f = fault(F_CTX_SET, ctx->dev, -1)) &&
            (++f->seen == f->nth || !f->nth)) {
            return f->arg >= 0 ? (CUresult)f->arg : 999;
        }
    }
    current = ctx;
    return CUDA_SUCCESS;
}

static CUresult fake_cuCtxSetCurrent(CUcontext ctx)
{
    LOCKED(ctx_set_current(ctx));
}

static CUresult enable_peer(CUcontext peer)
{
    int d = current_dev();

    if (d < 0 || !peer || peer < ctxs || peer >= ctxs + ngpus ||
        peer->dev == d) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (is_lost(d)) {
        return lose_code;
    }
    if (peer_enabled[d][peer->dev]) {
        return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    }
    peer_enabled[d][peer->dev] = true;
    return CUDA_SUCCESS;
}

static CUresult fake_cuCtxEnablePeerAccess(CUcontext peer, unsigned flags)
{
    if (flags) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    LOCKED(enable_peer(peer));
}

static CUresult ctx_state(void)
{
    int d = current_dev();

    if (d < 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (is_lost(d)) {
        return lose_code;
    }
    if (dev_hung[d]) {
        return FAKE_ERROR_NOT_READY;
    }
    for (int k = 1; k <= last_stream_id; k++) {
        if (streams_by_id[k] && streams_by_id[k]->dev == d) {
            host_saw_stream(streams_by_id[k]);
        }
    }
    return CUDA_SUCCESS;
}

/* Blocks, as the driver does, while the awaited work never completes. */
static CUresult wait_until_done(CUresult (*state)(const void *),
                                const void *what)
{
    for (;;) {
        CUresult r;

        pthread_mutex_lock(&lock);
        r = state(what);
        pthread_mutex_unlock(&lock);
        if (r != FAKE_ERROR_NOT_READY) {
            return r;
        }
        usleep(10000);
    }
}

static CUresult ctx_state_of(const void *unused)
{
    (void)unused;
    return ctx_state();
}

static CUresult fake_cuCtxSynchronize(void)
{
    return wait_until_done(ctx_state_of, NULL);
}

static CUresult mem_alloc(void **p, size_t bytes, int dev)
{
    Alloc *a;

    if (!bytes) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (is_lost(dev)) {
        return lose_code;
    }
    if (dev >= 0 && mem_limit && mem_used[dev] + bytes > mem_limit) {
        return 2;       /* CUDA_ERROR_OUT_OF_MEMORY */
    }
    a = calloc(1, sizeof(*a));
    if (!a || posix_memalign((void **)&a->base, 256, bytes)) {
        free(a);
        return 2;       /* CUDA_ERROR_OUT_OF_MEMORY */
    }
    /* Fresh device memory holds old data, never zeros to count on. */
    memset(a->base, 0xa5, bytes);
    a->bytes = bytes;
    a->dev = dev;
    if (dev < 0) {
        thread_place("alloc_", a->place, sizeof(a->place));
    }
    if (dev >= 0) {
        mem_used[dev] += bytes;
    }
    a->next = allocs;
    allocs = a;
    *p = a->base;
    return CUDA_SUCCESS;
}

/* ---- the ordering check ------------------------------------------------ */

static Clock host_seen;             /* per stream: what the host saw done */

static void order_fail(const char *fmt, ...) __attribute__((format(printf,
                                                                   1, 2)));
static void order_fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fputs("FAKE libcuda: ordering check: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

static Clock *stream_clock(struct CUstream_st *s)
{
    if (!s->vc) {
        if (last_stream_id + 1 >= FAKE_MAX_STREAMS) {
            order_fail("more than %d streams", FAKE_MAX_STREAMS - 1);
        }
        s->vc = calloc(1, sizeof(*s->vc));
        s->id = ++last_stream_id;
        streams_by_id[s->id] = s;
    }
    return s->vc;
}

static void clock_merge(Clock *into, const Clock *from)
{
    for (int k = 1; k <= last_stream_id; k++) {
        if (from->t[k] > into->t[k]) {
            into->t[k] = from->t[k];
        }
    }
}

/* One more operation on @s, queued after what the host has seen done. */
static uint32_t op_tick(struct CUstream_st *s)
{
    Clock *c = stream_clock(s);

    clock_merge(c, &host_seen);
    return ++c->t[s->id];
}

/* The host found @s done: everything queued on it so far is. */
static void host_saw_stream(struct CUstream_st *s)
{
    if (s->vc && s->vc->t[s->id] > host_seen.t[s->id]) {
        host_seen.t[s->id] = s->vc->t[s->id];
    }
}

static bool ordered_before(const Access *p, const struct CUstream_st *s)
{
    return p->stream == s->id || s->vc->t[p->stream] >= p->tick;
}

/* Operation @tick of @s reads or writes @len bytes at @ptr. */
static void touch(struct CUstream_st *s, uint32_t tick, const void *ptr,
                  size_t len, bool write)
{
    Alloc *a = find_alloc(ptr, len);
    Access now;
    size_t keep = 0;

    if (!a || !len) {
        return;             /* pageable host memory: the caller's */
    }
    now = (Access){ (size_t)((const char *)ptr - a->base), len, s->id, tick,
                    write };
    for (size_t i = 0; i < a->nlog; i++) {
        Access *p = &a->log[i];
        bool overlap = p->off < now.off + now.len &&
                       now.off < p->off + p->len;
        bool covered = now.off <= p->off &&
                       p->off + p->len <= now.off + now.len;

        if (overlap && (write || p->write) && !ordered_before(p, s)) {
            order_fail("stream %d (GPU %d) %s bytes %zu+%zu of an "
                       "allocation of %s that stream %d %s (its operation "
                       "%u) with no wait between them", s->id, s->dev,
                       write ? "writes" : "reads", now.off, now.len,
                       a->dev < 0 ? "pinned host memory" : "a GPU",
                       p->stream, p->write ? "wrote" : "read", p->tick);
        }
        /* Superseded: a later write covers it, or a later read covers a
         * read (a write stays for the readers that follow). */
        if (covered && ordered_before(p, s) && (write || !p->write)) {
            continue;
        }
        a->log[keep++] = *p;
    }
    a->nlog = keep;
    if (a->nlog == a->caplog) {
        a->caplog = a->caplog ? 2 * a->caplog : 8;
        a->log = realloc(a->log, a->caplog * sizeof(*a->log));
    }
    a->log[a->nlog++] = now;
}

static CUresult mem_free(void *p, bool host)
{
    for (Alloc **at = &allocs; *at; at = &(*at)->next) {
        Alloc *a = *at;

        if (a->base == p && (a->dev < 0) == host) {
            int dev = a->dev;

            if (dev >= 0) {
                mem_used[dev] -= a->bytes;
            }
            *at = a->next;
            free(a->base);
            free(a->log);
            free(a);
            return is_lost(dev) ? lose_code : CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult dev_alloc(CUdeviceptr *p, size_t bytes)
{
    void *h = NULL;
    CUresult r;

    if (current_dev() < 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    r = mem_alloc(&h, bytes, current_dev());
    *p = (CUdeviceptr)(uintptr_t)h;
    return r;
}

static CUresult fake_cuMemAlloc(CUdeviceptr *p, size_t bytes)
{
    LOCKED(dev_alloc(p, bytes));
}

static CUresult fake_cuMemFree(CUdeviceptr p)
{
    LOCKED(mem_free((void *)(uintptr_t)p, false));
}

static CUresult fake_cuMemHostAlloc(void **p, size_t bytes, unsigned flags)
{
    (void)flags;
    LOCKED(mem_alloc(p, bytes, -1));
}

static CUresult fake_cuMemFreeHost(void *p)
{
    LOCKED(mem_free(p, true));
}

static CUresult host_dev_ptr(CUdeviceptr *d, void *p)
{
    Alloc *a = find_alloc(p, 1);

    if (!a || a->dev >= 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *d = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

static CUresult fake_cuMemHostGetDevicePointer(CUdeviceptr *d, void *p,
                                               unsigned flags)
{
    if (flags) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    LOCKED(host_dev_ptr(d, p));
}

static CUresult peer_copy(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
                          CUcontext sctx, size_t bytes, CUstream s)
{
    Alloc *as = find_alloc((void *)(uintptr_t)src, bytes);
    Alloc *ad = find_alloc((void *)(uintptr_t)dst, bytes);

    if (!as || !ad || !dctx || !sctx || as->dev != sctx->dev ||
        ad->dev != dctx->dev) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return do_copy((void *)(uintptr_t)dst, (void *)(uintptr_t)src, bytes,
                   stream_of(s), 400, NULL);
}

static CUresult fake_cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dctx,
                                       CUdeviceptr src, CUcontext sctx,
                                       size_t bytes, CUstream s)
{
    LOCKED(peer_copy(dst, dctx, src, sctx, bytes, s));
}

static CUresult fake_cuMemcpyDtoHAsync(void *dst, CUdeviceptr src,
                                       size_t bytes, CUstream s)
{
    LOCKED(do_copy(dst, (void *)(uintptr_t)src, bytes, stream_of(s), 50,
                   dst));
}

static CUresult fake_cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src,
                                       size_t bytes, CUstream s)
{
    LOCKED(do_copy((void *)(uintptr_t)dst, src, bytes, stream_of(s), 50,
                   src));
}

static CUresult memset32(CUdeviceptr p, unsigned v, size_t n, CUstream s)
{
    struct CUstream_st *st = stream_of(s);
    uint32_t *w = (uint32_t *)(uintptr_t)p;
    Alloc *a = find_alloc(w, n * 4);

    if (!a || !st) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (is_lost(a->dev) || is_lost(st->dev)) {
        return lose_code;
    }
    record_work(a->dev);
    if (!st->hung) {
        touch(st, op_tick(st), w, n * 4, true);
        for (size_t i = 0; i < n; i++) {
            w[i] = v;
        }
        advance(n * 4, 1000, 1000);
    }
    return CUDA_SUCCESS;
}

static CUresult fake_cuMemsetD32Async(CUdeviceptr p, unsigned v, size_t n,
                                      CUstream s)
{
    LOCKED(memset32(p, v, n, s));
}

static CUresult stream_create(CUstream *s, unsigned flags)
{
    int d = current_dev();

    if (d < 0 || (flags & ~CU_STREAM_NON_BLOCKING)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (is_lost(d)) {
        return lose_code;
    }
    *s = calloc(1, sizeof(**s));
    (*s)->dev = d;
    return CUDA_SUCCESS;
}

static CUresult fake_cuStreamCreate(CUstream *s, unsigned flags)
{
    LOCKED(stream_create(s, flags));
}

static CUresult stream_destroy(CUstream s)
{
    if (!s) {
        return FAKE_ERROR_INVALID_HANDLE;
    }
    if (s->id) {
        streams_by_id[s->id] = NULL;
    }
    free(s->vc);
    free(s);
    return CUDA_SUCCESS;
}

static CUresult fake_cuStreamDestroy(CUstream s)
{
    LOCKED(stream_destroy(s));
}

static CUresult stream_state(const void *p)
{
    struct CUstream_st *s = (struct CUstream_st *)p;

    if (!s) {
        return FAKE_ERROR_INVALID_HANDLE;
    }
    if (is_lost(s->dev)) {
        return lose_code;
    }
    if (s->hung) {
        return FAKE_ERROR_NOT_READY;
    }
    host_saw_stream(s);
    return CUDA_SUCCESS;
}

static CUresult fake_cuStreamSynchronize(CUstream s)
{
    return wait_until_done(stream_state, stream_of(s));
}

static CUresult fake_cuStreamQuery(CUstream s)
{
    LOCKED(stream_state(stream_of(s)));
}

static CUresult stream_wait(CUstream s, CUevent e, unsigned flags)
{
    struct CUstream_st *st = stream_of(s);

    if (!st || !e || flags) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (is_lost(st->dev) || is_lost(e->dev)) {
        return lose_code;
    }
    /* Work behind an event that never fires never starts. */
    st->hung |= e->never;
    if (e->vc) {
        clock_merge(stream_clock(st), e->vc);
    }
    dev_hung[st->dev] |= e->never;
    return CUDA_SUCCESS;
}

static CUresult fake_cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags)
{
    LOCKED(stream_wait(s, e, flags));
}

static CUresult event_create(CUevent *e, unsigned flags)
{
    int d = current_dev();

    if (d < 0 || (flags & ~CU_EVENT_DISABLE_TIMING)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (is_lost(d)) {
        return lose_code;
    }
    *e = calloc(1, sizeof(**e));
    (*e)->dev = d;
    (*e)->flags = flags;
    (*e)->next = live_events;
    if (live_events) {
        live_events->prev = *e;
    }
    live_events = *e;
    return CUDA_SUCCESS;
}

static void event_free(CUevent e)
{
    if (e->prev) {
        e->prev->next = e->next;
    } else {
        live_events = e->next;
    }
    if (e->next) {
        e->next->prev = e->prev;
    }
    free(e->vc);
    free(e);
}

/* The primary context of @dev is gone: so are its events. */
static void events_free_of(int dev)
{
    CUevent e = live_events, next;

    for (; e; e = next) {
        next = e->next;
        if (e->dev == dev) {
            event_free(e);
        }
    }
}

static CUresult fake_cuEventCreate(CUevent *e, unsigned flags)
{
    LOCKED(event_create(e, flags));
}

static CUresult event_destroy(CUevent e)
{
    if (!e) {
        return FAKE_ERROR_INVALID_HANDLE;
    }
    event_free(e);
    return CUDA_SUCCESS;
}

static CUresult fake_cuEventDestroy(CUevent e)
{
    LOCKED(event_destroy(e));
}

static CUresult event_record(CUevent e, CUstream s)
{
    struct CUstream_st *st = stream_of(s);

    if (!e || !st || e->dev != st->dev) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (is_lost(st->dev)) {
        return lose_code;
    }
    e->recorded = true;
    e->never = st->hung;
    e->t_ns = clock_ns;
    op_tick(st);
    if (!e->vc) {
        e->vc = malloc(sizeof(*e->vc));
    }
    *e->vc = *st->vc;
    return CUDA_SUCCESS;
}

static CUresult fake_cuEventRecord(CUevent e, CUstream s)
{
    LOCKED(event_record(e, s));
}

static CUresult event_state(const void *p)
{
    const struct CUevent_st *e = p;

    if (!e) {
        return FAKE_ERROR_INVALID_HANDLE;
    }
    if (is_lost(e->dev)) {
        return lose_code;
    }
    if (e->never) {
        return FAKE_ERROR_NOT_READY;
    }
    if (e->vc) {
        clock_merge(&host_seen, e->vc);     /* the host saw it done */
    }
    return CUDA_SUCCESS;
}

static CUresult fake_cuEventSynchronize(CUevent e)
{
    return wait_until_done(event_state, e);
}

static CUresult fake_cuEventQuery(CUevent e)
{
    LOCKED(event_state(e));
}

static CUresult elapsed(float *ms, CUevent a, CUevent b)
{
    CUresult r;

    if (!a || !b || (a->flags | b->flags) & CU_EVENT_DISABLE_TIMING ||
        !a->recorded || !b->recorded) {
        return FAKE_ERROR_INVALID_HANDLE;
    }
    if ((r = event_state(a)) != CUDA_SUCCESS ||
        (r = event_state(b)) != CUDA_SUCCESS) {
        return r;
    }
    *ms = (float)((double)b->t_ns - (double)a->t_ns) / 1e6f;
    return CUDA_SUCCESS;
}

static CUresult fake_cuEventElapsedTime(float *ms, CUevent start, CUevent end)
{
    LOCKED(elapsed(ms, start, end));
}

/* One module per GPU, never freed: a tool that leaves a lost GPU's
 * module loaded (as it should not wait on it) leaks nothing. */
static struct CUmod_st modules[FAKE_MAX_GPUS];

static CUresult module_load(CUmodule *m, const void *image)
{
    int d = current_dev();

    if (d < 0 || !image) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (is_lost(d)) {
        return lose_code;
    }
    modules[d].dev = d;
    *m = &modules[d];
    return CUDA_SUCCESS;
}

static CUresult fake_cuModuleLoadData(CUmodule *m, const void *image)
{
    LOCKED(module_load(m, image));
}

static CUresult fake_cuModuleUnload(CUmodule m)
{
    return m ? CUDA_SUCCESS : FAKE_ERROR_INVALID_HANDLE;
}

static CUresult fake_cuModuleGetFunction(CUfunction *f, CUmodule m,
                                         const char *name)
{
    if (!m || !name) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (int k = 0; k < K_COUNT; k++) {
        if (!strcmp(name, kernel_names[k])) {
            *f = &funcs[k];
            return CUDA_SUCCESS;
        }
    }
    return FAKE_ERROR_NOT_FOUND;
}

static CUresult launch(CUfunction f, unsigned gx, unsigned bx, CUstream s,
                       void **args, void **extra)
{
    struct CUstream_st *st = stream_of(s);

    if (!f || !st || !gx || !bx || bx > 1024 || !args || extra) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (is_lost(st->dev)) {
        return lose_code;
    }
    record_work(st->dev);
    if (st->hung) {
        return CUDA_SUCCESS;
    }
    return run_kernel(f->kind, st, args, gx);
}

static CUresult fake_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy,
                                    unsigned gz, unsigned bx, unsigned by,
                                    unsigned bz, unsigned shared, CUstream s,
                                    void **args, void **extra)
{
    if (gy != 1 || gz != 1 || by != 1 || bz != 1 || shared) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    LOCKED(launch(f, gx, bx, s, args, extra));
}

static CUresult fake_cuGetErrorString(CUresult r, const char **s)
{
    static const struct { int code; const char *text; } texts[] = {
        { 0, "no error" },
        { 1, "invalid argument" },
        { 2, "out of memory" },
        { 3, "initialization error" },
        { 101, "invalid device ordinal" },
        { 217, "peer access is not supported between these two devices" },
        { 220, "uncorrectable NVLink error was detected during the "
          "execution" },
        { 400, "invalid resource handle" },
        { 500, "named symbol not found" },
        { 600, "device not ready" },
        { 700, "an illegal memory access was encountered" },
        { 704, "peer access is already enabled" },
        { 719, "unspecified launch failure" },
        { 801, "operation not supported" },
        { 999, "unknown error" },
    };

    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        if (texts[i].code == r) {
            *s = texts[i].text;
            return CUDA_SUCCESS;
        }
    }
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult fake_cuMemGetHandleForAddressRange(void *handle,
                                                   CUdeviceptr p,
                                                   size_t bytes, int type,
                                                   unsigned long long flags)
{
    (void)handle; (void)p; (void)bytes; (void)type; (void)flags;
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- the one exported symbol ------------------------------------------- */

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                             uint64_t flags, int *status);

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                             uint64_t flags, int *status)
{
    static const struct { const char *name; void *fn; } table[] = {
#define FAKE_ENTRY(name, params) { #name, (void *)fake_##name },
        CU_APIS(FAKE_ENTRY)
    };

    if (status) {
        *status = 0;
    }
    if (!symbol || !pfn || version < 12000 ||
        flags != CU_GET_PROC_ADDRESS_DEFAULT) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (!strcmp(symbol, table[i].name)) {
            *pfn = table[i].fn;
            return CUDA_SUCCESS;
        }
    }
    *pfn = NULL;
    return FAKE_ERROR_NOT_FOUND;
}
