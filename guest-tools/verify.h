/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpup2p-verify: the result model. Every check fills this model; the text
 * report and the JSON come from it alone.
 */
#ifndef GPUP2P_VERIFY_H
#define GPUP2P_VERIFY_H

#include <stdbool.h>
#include <glib.h>

/* Exit codes, in order of precedence (docs/guest-tool.md). */
enum {
    VERIFY_EXIT_OK = 0,
    VERIFY_EXIT_P2P_BROKEN = 1,
    VERIFY_EXIT_RDMA_BROKEN = 2,
    VERIFY_EXIT_UNTESTED = 3,
    VERIFY_EXIT_USAGE = 64,
};

typedef enum {
    CHECK_NOT_RUN,      /* not asked for */
    CHECK_OK,
    CHECK_FAILED,
    CHECK_UNTESTABLE,   /* could not be tested here, with a reason */
} CheckState;

typedef struct {
    double median, min, max;    /* over samples */
    unsigned samples;
} Figure;

typedef struct VerifyGpu {
    char bdf[16];
    unsigned vendor, device;
    int clique;                 /* -1: none */
    bool has_cap;
    unsigned cap_offset;
    bool cap_valid;
    char cap_problem[128];
    int cuda_index;             /* -1: CUDA does not see it */
    char name[96];
    unsigned nvlinks_total;
    unsigned pcie_gen, pcie_width;      /* negotiated link, 0 unknown */
    int numa_node;
    unsigned subsystem_vendor, subsystem_device;
    char link_speed[32];
    char nvlink_peer[18][16];           /* remote BDF of each active link */
} VerifyGpu;

typedef struct VerifyPair {
    unsigned a, b;              /* indices into gpus */
    int peer_access;            /* -1 unknown, 0 no, 1 yes */
    int perf_rank, native_atomics;
    unsigned nvlinks;           /* links between a and b (NVML) */
    char link[32];              /* "NV18", "PCIe Gen5 x16", "unknown" */
    double link_limit_gbps;     /* per direction, 0 unknown */
    CheckState verified_ce, verified_sm;
    char verify_problem[160];
    Figure uni_ce, uni_sm, uni_sm_read, bi_ce, uni_staged, lat_ce_us,
        lat_sm_us;
} VerifyPair;

typedef struct VerifyNic {
    char bdf[16];
    unsigned vendor, device, class_code;
    int numa_node;
} VerifyNic;

typedef struct VerifyRdma {
    char name[64];
    char transport[16];
    unsigned ports_active;
    CheckState host_mr, host_write;
    CheckState dmabuf, peermem, gpu_write;
    char why[192];
} VerifyRdma;

typedef struct VerifyReport {
    GArray *gpus;               /* VerifyGpu */
    GArray *pairs;              /* VerifyPair */
    GArray *rdma;               /* VerifyRdma */
    GArray *nics;               /* VerifyNic: RDMA-capable NICs on PCI */
    GPtrArray *notes;           /* char *: what could not be seen and why */
    char *cuda_status;          /* NULL when CUDA was used */
    char *nvml_status;
    char *rdma_status;
    bool p2p_broken, rdma_broken, untested;
    double seconds;
} VerifyReport;

typedef struct VerifyOptions {
    char *sysfs_root;
    gboolean json, quick, pci_only, no_rdma;   /* GOption writes gboolean */
    double min_bandwidth;       /* GB/s, 0: none */
    double max_latency;         /* us, 0: none */
    char *nccl_topo;
    gsize bytes;                /* transfer size */
    unsigned samples;
} VerifyOptions;

void verify_note(VerifyReport *r, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

bool verify_pci(const VerifyOptions *o, VerifyReport *r);
void verify_cuda(const VerifyOptions *o, VerifyReport *r);
void verify_nvml(VerifyReport *r);
void verify_nvml_pairs(VerifyReport *r);
/* GPU memory for the RDMA checks (cuda.c). */
int verify_cuda_dmabuf(int ordinal, gsize bytes, unsigned long long *ptr,
                       char **why);
bool verify_cuda_read(int ordinal, unsigned long long ptr, void *out,
                      gsize bytes);
bool verify_cuda_write(int ordinal, unsigned long long ptr, const void *in,
                       gsize bytes);
void verify_rdma(const VerifyOptions *o, VerifyReport *r);
bool verify_nccl_topo(const VerifyOptions *o, const VerifyReport *r,
                      GError **errp);
void verify_print_text(const VerifyOptions *o, const VerifyReport *r);
void verify_print_json(const VerifyOptions *o, const VerifyReport *r);
int verify_exit_code(const VerifyReport *r);

#endif
