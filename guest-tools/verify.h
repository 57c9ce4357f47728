/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpup2p-verify: the result model. Every check fills this model; the text
 * report and the JSON come from it alone. GPUs are numbered by their
 * position in VerifyReport.gpus (PCI order) everywhere: pairs, matrices
 * and JSON; the CUDA ordinal is only an attribute of a GPU.
 */
#ifndef GPUP2P_VERIFY_H
#define GPUP2P_VERIFY_H

#include <stdbool.h>
#include <glib.h>

#include "gpup2p/error.h"

#define VERIFY_JSON_SCHEMA 2
#define VERIFY_PHASES { "cuda_init", "discover", "allocate", "peer_access", \
                        "pair_checks", "figures", "teardown" }

/* Exit codes, in order of precedence (docs/guest-tool.md). */
enum {
    VERIFY_EXIT_OK = 0,
    VERIFY_EXIT_P2P_BROKEN = 1,
    VERIFY_EXIT_RDMA_BROKEN = 2,
    VERIFY_EXIT_UNTESTED = 3,
    VERIFY_EXIT_GPU_LOST = 4,
    VERIFY_EXIT_USAGE = 64,
};

typedef enum {
    CHECK_NOT_RUN,      /* not asked for */
    CHECK_OK,
    CHECK_FAILED,
    CHECK_UNTESTABLE,   /* could not be tested here, with a reason */
} CheckState;

/* How a figure moves its bytes (cuda.c runs each kind). */
typedef enum {
    XFER_CE,            /* copy engine, queued on the source GPU (write) */
    XFER_CE_READ,       /* copy engine, queued on the destination GPU */
    XFER_CE_BIDIR,      /* copy engine both ways, each on its source GPU */
    XFER_SM_WRITE,      /* source GPU's SMs store into the peer */
    XFER_SM_READ,       /* destination GPU's SMs load from the peer */
    XFER_STAGED,        /* through pinned host memory, P2P off */
    XFER_CE_LATENCY,    /* 16-byte copy-engine copies */
    XFER_SM_LATENCY,    /* pointer chase through the peer's memory */
    XFER_H2D,           /* copy engine, pinned host memory -> the GPU */
    XFER_D2H,           /* copy engine, the GPU -> pinned host memory */
    XFER_KIND_COUNT
} XferKind;

/*
 * One row of the figure registry (figures.c): it drives measuring,
 * --list, --figures, the text report, the JSON and the metrics.
 */
typedef struct {
    const char *name;           /* --figures, --list: nvbandwidth's test
                                 * name where ours measures the same */
    const char *nvbandwidth;    /* nvbandwidth's counterpart, NULL: none */
    const char *method;         /* how, in one line (--list) */
    const char *key;            /* JSON member */
    const char *title;          /* text matrix heading */
    XferKind kind;
    bool quick;                 /* measured with --quick too */
    bool needs_sm;              /* needs SM access to peer memory */
    bool latency;               /* microseconds, lower is better */
    bool per_gpu;               /* one value per GPU, not per pair */
} VerifyFigureInfo;

enum {
    FIG_UNI_CE, FIG_UNI_CE_READ, FIG_UNI_SM, FIG_UNI_SM_READ, FIG_BI_CE,
    FIG_STAGED, FIG_LAT_CE, FIG_LAT_SM, FIG_PAIR_COUNT
};
/* Per-GPU figures (VerifyGpu.agg): aggregates and host <-> device. */
enum { AGG_ALL_TO_ONE, AGG_ONE_TO_ALL, AGG_H2D, AGG_D2H, AGG_COUNT };
#define VERIFY_FIGURE_COUNT (FIG_PAIR_COUNT + AGG_COUNT)

/* The registry: pair figures (FIG_*) first, then per-GPU ones (AGG_*). */
extern const VerifyFigureInfo verify_figures[VERIFY_FIGURE_COUNT];
extern const VerifyFigureInfo *const verify_pair_figures;  /* FIG_* */
extern const VerifyFigureInfo *const verify_gpu_figures;   /* AGG_* */

/* Registry index of @name, -1 when there is none. */
int verify_figure_find(const char *name);
/* The registry bits that "NAME,..." names into *mask; else FALSE with
 * the first unknown name in *bad (to be freed). */
bool verify_figures_parse(const char *list, guint32 *mask, char **bad);
/* The registry as --list prints it. */
char *verify_figures_list_text(void);

typedef struct {
    double median, min, max;    /* over samples */
    unsigned samples;           /* 0: not measured */
} Figure;

#define VERIFY_MAX_UPLINKS 8
#define VERIFY_MAX_NVLINKS 18   /* NVML_NVLINK_MAX_LINKS */

/*
 * GPU health around the run (what DCGM's diagnostics read): NVML counters
 * read before the data checks and after the last check. The registry
 * (health.c) names each counter and what a rise means; coverage.c judges.
 */
enum {
    HEALTH_ECC_UNCORRECTED, HEALTH_ECC_CORRECTED,
    HEALTH_RETIRED_DOUBLE_BIT, HEALTH_RETIRED_SINGLE_BIT,
    HEALTH_REMAPPED_UNCORRECTABLE, HEALTH_REMAPPED_CORRECTABLE,
    HEALTH_REMAP_PENDING, HEALTH_REMAP_FAILURE,
    HEALTH_XID_EVENTS,
    HEALTH_GPU_COUNTERS
};
/* Per active NVLink, in nvmlNvLinkErrorCounter_t order (nvml.h). */
enum {
    HEALTH_NVLINK_REPLAY, HEALTH_NVLINK_RECOVERY, HEALTH_NVLINK_CRC_FLIT,
    HEALTH_NVLINK_CRC_DATA,
    HEALTH_LINK_COUNTERS
};

typedef enum {
    HEALTH_NOT_READ,            /* never a pass or a fail */
    HEALTH_OK,                  /* read twice, no rise */
    HEALTH_WARNING,             /* rose; the counter is a warning */
    HEALTH_FAILED,              /* rose; the counter fails the GPU/link */
} HealthVerdict;

typedef struct {
    const char *name;           /* JSON, text, notes */
    HealthVerdict on_rise;      /* HEALTH_WARNING or HEALTH_FAILED */
    const char *what;           /* the NVML call and value, one line */
    /* > 0: a rise fails only at this many per second or more over the
     * time between the two readings, and warns below (DCGM's rule for
     * NVLink CRC errors); 0: every rise is on_rise. */
    double fail_per_second;
} VerifyHealthCounterInfo;

extern const VerifyHealthCounterInfo
    verify_health_gpu_counters[HEALTH_GPU_COUNTERS];
extern const VerifyHealthCounterInfo
    verify_health_link_counters[HEALTH_LINK_COUNTERS];

/* Per GPU: a link counter summed over the active links, judged on the
 * sum (DCGM's NVLink CRC totals). */
enum {
    HEALTH_NVLINK_CRC_FLIT_TOTAL, HEALTH_NVLINK_CRC_DATA_TOTAL,
    HEALTH_LINK_TOTALS
};

typedef struct {
    VerifyHealthCounterInfo info;
    int link_counter;           /* the HEALTH_NVLINK_* it sums */
} VerifyHealthTotalInfo;

extern const VerifyHealthTotalInfo
    verify_health_link_totals[HEALTH_LINK_TOTALS];

typedef enum {
    HEALTH_UNREAD,              /* not asked (no NVML view, link inactive) */
    HEALTH_UNSUPPORTED,         /* NVML_ERROR_NOT_SUPPORTED, or no symbol */
    HEALTH_READ_ERROR,          /* another NVML error, in nvml_error */
    HEALTH_READ_BEFORE,         /* read before the run, not yet after */
    HEALTH_READ_BOTH,           /* read before and after */
    HEALTH_LOST_AFTER,          /* read before; NVML could not find the
                                 * GPU after (lookup's error in nvml_error) */
    HEALTH_UNATTRIBUTED,        /* xid_events: an Xid came for a device
                                 * that is none of the GPUs */
} HealthReadState;

typedef struct {
    HealthReadState state;
    int nvml_error;             /* HEALTH_READ_ERROR: nvmlReturn_t */
    unsigned long long before, after;
    gint64 before_us, after_us; /* g_get_monotonic_time() of each read */
} VerifyHealthValue;

typedef struct {
    /* HEALTH_READ_BOTH where a link was read twice: the sums of the
     * links' readings, timed from the first before to the last after. */
    VerifyHealthValue sum;
    guint32 links_summed;       /* bit per link read twice */
    guint32 links_rose;         /* bit per link whose counter rose */
} VerifyHealthTotal;

/* --benchmark, nvbandwidth's counts: 16 timed copies a sample after 4
 * warm-up ones. */
#define VERIFY_BENCH_LOOPS 16
#define VERIFY_BENCH_WARMUP 4
/* The default validation run: every copy checked, fewer of them. */
#define VERIFY_LOOPS 4
#define VERIFY_WARMUP 1
#define VERIFY_QUICK_LOOPS 2
#define VERIFY_QUICK_WARMUP 1

/* Where a GPU's host figures (AGG_H2D, AGG_D2H) ran (host-place.h). */
typedef struct {
    bool tried;                 /* --benchmark measured them: placement
                                 * was tried (validation never places) */
    int node;                   /* the thread ran on this node's CPUs;
                                 * -1: not pinned */
    char cpus[256];             /* those CPUs, as a cpulist ("..." where
                                 * cut); "" */
    int memory_node;            /* pinned memory allocated with this node
                                 * preferred (the kernel may still take
                                 * another's pages); -1: the thread's own
                                 * policy */
    char why[512];              /* what was not placed and why; "" */
} VerifyHostPlacement;

/* Why the validation run places nothing. */
#define VERIFY_HOST_PLACE_VALIDATION                                      \
    "not placed: the validation run shares one set of host buffers "      \
    "among all GPUs; --benchmark places them near each GPU"

typedef struct VerifyGpu {
    char bdf[16];
    unsigned vendor, device, class_code;
    int clique;                 /* -1: none */
    bool has_cap;
    unsigned cap_offset;
    bool cap_valid;
    char cap_problem[128];
    int cuda_index;             /* -1: CUDA does not see it */
    bool hidden;                /* NVML sees it, CUDA_VISIBLE_DEVICES
                                 * hides it from CUDA */
    bool nvml_seen;             /* NVML has a handle for its bus id */
    char name[96];
    int sm_major, sm_minor;     /* compute capability, 0 unknown */
    unsigned nvlinks_total;
    unsigned nvlinks_unresolved;        /* active, far end not named */
    unsigned nvlink_version;            /* nvmlNvlinkVersion_t, 0 unknown */
    unsigned pcie_gen, pcie_width;      /* negotiated link, 0 unknown */
    int numa_node;
    unsigned subsystem_vendor, subsystem_device;
    char link_speed[32];                /* sysfs current_link_speed */
    int link_width;                     /* sysfs current_link_width, 0 */
    char nvlink_peer[VERIFY_MAX_NVLINKS][16];   /* remote BDF per link */
    guint32 nvlinks_active;             /* bit per active link (NVML) */
    VerifyHealthValue health[HEALTH_GPU_COUNTERS];
    VerifyHealthValue link_health[VERIFY_MAX_NVLINKS][HEALTH_LINK_COUNTERS];
    unsigned long long last_xid;        /* of the Xid events counted */
    /* The GPU and its upstream bridges, nearest first: the PCIe links
     * above each (core library topology). */
    char uplinks[VERIFY_MAX_UPLINKS][16];
    unsigned n_uplinks;
    Figure agg[AGG_COUNT];      /* per-GPU figures (AGG_*) */
    VerifyHostPlacement host_place;     /* of agg[AGG_H2D], agg[AGG_D2H] */
    bool lost;                  /* sticky CUDA error or hung work */
    char lost_why[192];
} VerifyGpu;

typedef struct VerifyPair {
    unsigned a, b;              /* indices into gpus */
    int peer_access;            /* -1 unknown, 0 no, 1 yes */
    bool peer_enabled;          /* cuCtxEnablePeerAccess succeeded */
    int perf_rank, native_atomics;      /* -1 unknown */
    unsigned nvlinks;           /* links between a and b (NVML) */
    char link[32];              /* "NV18", "PCIe Gen5 x16", "unknown" */
    double link_limit_gbps;     /* per direction, 0 unknown */
    CheckState verified_ce, verified_sm, verified_sm_read;
    char verify_problem[192];
    bool nvlink_fault;          /* CUDA error 220 on a transfer a <-> b */
    Figure fig[FIG_PAIR_COUNT];
} VerifyPair;

typedef struct VerifyNic {
    char bdf[16];
    unsigned vendor, device, class_code;
    int numa_node;
    char link_speed[32];
    int link_width;
    char rdma_device[64];       /* verbs device on this function, or "" */
    bool gpu_rdma_ok;           /* GPU memory both ways by RDMA, checked */
    /* The NIC and its upstream bridges, nearest first (as VerifyGpu). */
    char uplinks[VERIFY_MAX_UPLINKS][16];
    unsigned n_uplinks;
} VerifyNic;

/* GPUs listed per port; more are checked and count in the port's states,
 * but unlisted, so the verdict calls their pairs untested (fail closed). */
#define VERIFY_MAX_RDMA_GPUS 32

/* One GPU's memory on one port, as checked (rdma.c). */
typedef struct VerifyRdmaGpu {
    unsigned gpu;               /* index into gpus */
    bool pair;                  /* the port's NIC is this GPU's pair */
    char path[8];               /* NIC to GPU class as the guest sees it,
                                 * "" unknown (no PCI NIC, as rxe) */
    unsigned order;             /* 1, 2, ...: the run's GPU checks */
    CheckState dmabuf, peermem, write, read;
} VerifyRdmaGpu;

typedef struct VerifyRdma {      /* one active port of one device */
    char name[64];
    char bdf[16];               /* PCI function, "" when virtual (rxe) */
    unsigned port;              /* 0: none active */
    unsigned ports_active;      /* of the device */
    CheckState host_mr, host_write, host_read;
    /* Over every GPU CUDA sees, the worst of them (failed, not testable,
     * ok); gpu_write: RDMA WRITE into and out of GPU memory; gpu_read:
     * RDMA READ into and out of it. */
    CheckState dmabuf, peermem, gpu_write, gpu_read;
    unsigned gpus_tested;       /* GPUs whose memory moved both ways */
    /* Each GPU checked on this port, in the order checked. */
    VerifyRdmaGpu gpus[VERIFY_MAX_RDMA_GPUS];
    unsigned n_gpus;
    char why[192];
    bool why_failed;            /* why names a failure, not a missing path */
} VerifyRdma;

/* Two GPUs' PCIe path class: the core library's gp_path_classify(), named
 * as nvidia-smi topo -m names it (gp_path_type_name()). */
typedef struct VerifyPath {
    unsigned a, b;              /* indices into gpus, a != b */
    char cls[8];                /* "PIX", "PXB", "PHB", "NODE", "SYS" */
} VerifyPath;

/* An RDMA NIC and a GPU: their PCIe path class as the guest sees it
 * (gp_path_classify()), and whether the NIC is the GPU's pair, its
 * nearest (gp_rdma_nearest_nic()). One per NIC and GPU verify_pci() read. */
typedef struct VerifyNicPath {
    unsigned nic, gpu;          /* indices into nics and gpus */
    char cls[8];                /* "PIX", "PXB", "PHB", "NODE", "SYS" */
    bool pair;
} VerifyNicPath;

typedef struct VerifyReport {
    GArray *gpus;               /* VerifyGpu */
    GArray *pairs;              /* VerifyPair */
    GArray *paths;              /* VerifyPath: every ordered pair of the
                                 * GPUs verify_pci() read */
    GArray *rdma;               /* VerifyRdma */
    GArray *nics;               /* VerifyNic: RDMA-capable NICs on PCI */
    GArray *nic_paths;          /* VerifyNicPath */
    GPtrArray *notes;           /* char *: what could not be seen and why */
    char *cuda_status;          /* NULL when CUDA was used */
    char *nvml_status;
    char *rdma_status;
    bool health_read;           /* NVML's health counters were read before
                                 * the run (verify_nvml) */
    int cuda_driver_version;    /* cuDriverGetVersion, 0 unknown */
    char driver_version[32];    /* NVML's driver version, "" unknown */
    bool kernels;               /* built with the GPU kernels */
    bool concurrent;            /* pairs measured together */
    unsigned loops;
    bool p2p_broken, rdma_broken, untested;
    bool gpu_lost;              /* a GPU stopped answering (exit 4) */
    double seconds;
    /* Wall time of the CUDA phases (VERIFY_PHASES). */
    double phase_s[7];
    /* Wall time of each figure (registry order), 0: not measured. */
    double figure_s[VERIFY_FIGURE_COUNT];
} VerifyReport;

typedef struct VerifyOptions {
    char *sysfs_root;
    gboolean json, quick, pci_only, skip_rdma;  /* GOption writes gboolean */
    gboolean with_cuda;         /* CUDA checks on a --sysfs-root capture */
    gboolean concurrent;        /* time pairs on independent links at once */
    gboolean benchmark;         /* nvbandwidth's method, not validation */
    double watchdog_s;          /* longest wait for GPU work */
    double min_bandwidth;       /* GB/s, 0: none */
    double max_latency;         /* us, 0: none */
    char *nccl_topo;
    char *prometheus;           /* textfile-collector metrics file */
    gsize bytes;                /* transfer size */
    unsigned samples;
    guint32 figures;            /* registry bits to measure (--figures) */
} VerifyOptions;

/* Is registry figure @i (FIG_* or FIG_PAIR_COUNT + AGG_*) to be measured? */
static inline bool verify_figure_wanted(const VerifyOptions *o, int i)
{
    return (o->figures >> i) & 1;
}
/* The figures measured when --figures is not given. */
guint32 verify_figures_default(bool quick);

/* result.c: the result model every check writes to. */
void verify_report_init(VerifyReport *r);
void verify_report_clear(VerifyReport *r);
void verify_note(VerifyReport *r, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* Something that had to be done was not: exit 3, a note "untested: ...". */
void verify_record_untested(VerifyReport *r, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);
/* A P2P finding: exit 1, a note saying what. */
void verify_record_broken(VerifyReport *r, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);
/* Did any bytes move and get checked (a data check passed or failed, or
 * a per-GPU figure was measured)? False for the PCI checks alone. */
bool verify_data_moved(const VerifyReport *r);
/* --pci-only, or --sysfs-root without --with-cuda: no CUDA, NVML, RDMA. */
bool verify_pci_checks_only(const VerifyOptions *o);
VerifyPair *verify_pair_find(const VerifyReport *r, guint a, guint b);
/* The PCIe path class of GPUs @a and @b as verify_pci() recorded it, or
 * NULL where it did not (a GPU not read from the PCI topology). */
const char *verify_path_class(const VerifyReport *r, guint a, guint b);

/* The index in nics of the NIC at @bdf, -1 where none is. */
int verify_nic_find(const VerifyReport *r, const char *bdf);
/* NIC @nic and GPU @gpu as verify_pci() recorded them, or NULL. */
const VerifyNicPath *verify_nic_path(const VerifyReport *r, guint nic,
                                     guint gpu);

bool verify_pci(const VerifyOptions *o, VerifyReport *r);
/* An RDMA NIC by PCI class: InfiniBand (0x0207), or Ethernet (0x0200)
 * with an RDMA device (/sys/class/infiniband) on the function. */
bool verify_is_rdma_nic(unsigned class_code, bool has_rdma_device);
void verify_cuda(const VerifyOptions *o, VerifyReport *r);
void verify_nvml(VerifyReport *r);
void verify_nvml_pairs(VerifyReport *r);
/* The health counters again, after the last check; Xid events since
 * verify_nvml registered them. Nothing where they were not read before. */
void verify_nvml_health_after(VerifyReport *r);
/* health.c: what a counter's two readings mean (the policy table). */
HealthVerdict verify_health_verdict(const VerifyHealthValue *v,
                                    const VerifyHealthCounterInfo *info);
const char *verify_health_verdict_name(HealthVerdict v);
/* Read before and after, and not gone down: a verdict other than
 * "not read" is possible. */
bool verify_health_read_twice(const VerifyHealthValue *v);
/* A counter's rise per second between its two readings. */
double verify_health_rise_per_second(const VerifyHealthValue *v);
/* Why @v was not read ("not supported", "NVML error 15", ...). */
char *verify_health_unread_reason(const VerifyHealthValue *v);
/* Why no GPU's health was read, or NULL where it was. */
const char *verify_health_not_read(const VerifyReport *r);
/* Link counter @counter is judged on its GPU's total, not per link. */
bool verify_health_link_summed(int counter);
/* Total @total (HEALTH_NVLINK_*_TOTAL) of @g into @out; its verdict. */
void verify_health_total(const VerifyGpu *g, int total,
                         VerifyHealthTotal *out);
HealthVerdict verify_health_total_verdict(const VerifyGpu *g, int total,
                                          VerifyHealthTotal *out);
/* "12.5 per second", or why there is no rate. */
char *verify_health_rate_text(const VerifyHealthValue *v);
/* "0, 3, 17": the links whose bits @links sets. */
char *verify_health_link_list(guint32 links);
/* The worst verdict over @g's counters; HEALTH_NOT_READ if none read. */
HealthVerdict verify_health_gpu_verdict(const VerifyGpu *g);
/* One way, GB/s per link: NCCL's figure for the NVLink generation NVML
 * reports (nvmlNvlinkVersion_t), else for the compute capability; 0 when
 * neither is known. */
double verify_nvlink_gbps(unsigned nvml_version, int sm_major, int sm_minor);

/* GPU memory for the RDMA checks (cuda.c); all report through GError. */
typedef struct VerifyGpuMem VerifyGpuMem;
VerifyGpuMem *verify_gpu_mem_new(int ordinal, gsize bytes, GError **errp);
unsigned long long verify_gpu_mem_ptr(const VerifyGpuMem *m);
/* A dma-buf fd of the @page-aligned range around the memory, with the
 * memory's offset into it in *offset (for ibv_reg_dmabuf_mr, as perftest
 * does); GP_ERROR_UNSUPPORTED when the GPU or driver exports none. */
int verify_gpu_mem_dmabuf(VerifyGpuMem *m, guint64 page, guint64 *offset,
                          GError **errp);

/* The page-aligned range [*start, *start + *size) that holds [ptr, ptr +
 * bytes), and ptr's offset into it; @page a power of two. */
static inline void verify_page_range(guint64 ptr, guint64 bytes,
                                     guint64 page, guint64 *start,
                                     guint64 *size, guint64 *offset)
{
    *start = ptr & ~(page - 1);
    *offset = ptr - *start;
    *size = (*offset + bytes + page - 1) & ~(page - 1);
}
bool verify_gpu_mem_read(VerifyGpuMem *m, void *out, GError **errp);
bool verify_gpu_mem_write(VerifyGpuMem *m, const void *in, GError **errp);
void verify_gpu_mem_free(VerifyGpuMem *m);

/* May pairs {a, b} and {c, d} (disjoint) move data at the same time? */
typedef bool (*VerifyIndependentFn)(int a, int b, int c, int d,
                                    gpointer data);
/* Batches (GArray of int, two per pair) covering every unordered pair of
 * 0..n-1 once; pairs of one batch are disjoint and independent. */
GPtrArray *verify_schedule(guint n, VerifyIndependentFn independent,
                           gpointer data);
bool verify_pcie_paths_disjoint(const VerifyGpu *a, const VerifyGpu *b,
                                const VerifyGpu *c, const VerifyGpu *d);

void verify_rdma(const VerifyOptions *o, VerifyReport *r);
char *verify_nccl_topo_xml(const VerifyReport *r);
bool verify_nccl_topo(const VerifyOptions *o, const VerifyReport *r,
                      GError **errp);
void verify_print_text(const VerifyOptions *o, const VerifyReport *r);
void verify_print_json(const VerifyOptions *o, const VerifyReport *r);
int verify_exit_code(const VerifyReport *r);
/* coverage.c: what was asked against what was done, once, at the end. */
void verify_judge(const VerifyOptions *o, VerifyReport *r);
/* Prometheus text format 0.0.4; @end_real_time as g_get_real_time(). */
char *verify_prometheus_text(const VerifyOptions *o, const VerifyReport *r,
                             gint64 end_real_time);
/* Written atomically (renamed into place) to o->prometheus. */
bool verify_write_prometheus(const VerifyOptions *o, const VerifyReport *r,
                             GError **errp);

#endif
