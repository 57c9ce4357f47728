/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Link types from NVML (libnvidia-ml.so.1, loaded at run time): NVLinks
 * between each pair, else the PCIe link the GPU negotiated. An NVLink's
 * one-way figure is the one NCCL uses for that NVLink generation
 * (src/graph/topo.h, SMxx_NVLINK_BW), chosen by NVML's link version.
 */
#include <dlfcn.h>
#include <string.h>

#include "gpup2p/pcicfg.h"
#include "gpup2p/topo.h"
#include "verify.h"

/* The few NVML types used here, as its ABI defines them. */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

#define NVML_NVLINK_MAX_LINKS 18
G_STATIC_ASSERT(NVML_NVLINK_MAX_LINKS == VERIFY_MAX_NVLINKS);

/* Health queries: values from nvml.h (NVML 13.3, checked against it). */
#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_TIMEOUT 10
#define NVML_MEMORY_ERROR_TYPE_CORRECTED 0      /* nvmlMemoryErrorType_t */
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define NVML_VOLATILE_ECC 0                     /* nvmlEccCounterType_t */
#define NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS 0
#define NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR 1
#define NVML_EVENT_TYPE_XID_CRITICAL_ERROR 0x0000000000000008ULL
/* nvmlNvLinkErrorCounter_t: DL_REPLAY 0, DL_RECOVERY 1, DL_CRC_FLIT 2,
 * DL_CRC_DATA 3, the order of HEALTH_NVLINK_* (verify.h). */
G_STATIC_ASSERT(HEALTH_NVLINK_REPLAY == 0 && HEALTH_NVLINK_RECOVERY == 1 &&
                HEALTH_NVLINK_CRC_FLIT == 2 && HEALTH_NVLINK_CRC_DATA == 3);

typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct {                /* nvmlEventData_t */
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData;       /* the Xid */
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlEventData_t;

static nvmlReturn_t (*p_init)(void);
static nvmlReturn_t (*p_by_bus)(const char *, nvmlDevice_t *);
static nvmlReturn_t (*p_link_state)(nvmlDevice_t, unsigned, int *);
static nvmlReturn_t (*p_remote_pci)(nvmlDevice_t, unsigned, nvmlPciInfo_t *);
static nvmlReturn_t (*p_p2p_status)(nvmlDevice_t, nvmlDevice_t, int, int *);
static nvmlReturn_t (*p_driver_version)(char *, unsigned);
static nvmlReturn_t (*p_link_version)(nvmlDevice_t, unsigned, unsigned *);
static nvmlReturn_t (*p_nvlink_errors)(nvmlDevice_t, unsigned, int,
                                       unsigned long long *);
static nvmlReturn_t (*p_ecc_total)(nvmlDevice_t, int, int,
                                   unsigned long long *);
static nvmlReturn_t (*p_retired_pages)(nvmlDevice_t, int, unsigned *,
                                       unsigned long long *);
static nvmlReturn_t (*p_remapped_rows)(nvmlDevice_t, unsigned *, unsigned *,
                                       unsigned *, unsigned *);
static nvmlReturn_t (*p_event_set_create)(nvmlEventSet_t *);
static nvmlReturn_t (*p_register_events)(nvmlDevice_t, unsigned long long,
                                         nvmlEventSet_t);
static nvmlReturn_t (*p_event_wait)(nvmlEventSet_t, nvmlEventData_t *,
                                    unsigned);
static nvmlReturn_t (*p_event_set_free)(nvmlEventSet_t);

/* Xid events since verify_nvml registered them; NULL: none registered,
 * for the reason in xid_set_rc. */
static nvmlEventSet_t xid_events;
static nvmlReturn_t xid_set_rc = NVML_ERROR_NOT_SUPPORTED;

/* NCCL's per-generation NVLink figures, GB/s one way per link. */
#define NCCL_NVLINK1_GBPS 18.0      /* SM60_NVLINK_BW */
#define NCCL_NVLINK2_GBPS 20.0      /* SM70_NVLINK_BW */
#define NCCL_NVLINK3_GBPS 20.0      /* SM80_NVLINK_BW */
#define NCCL_SM86_GBPS 12.0         /* SM86_NVLINK_BW */
#define NCCL_NVLINK4_GBPS 20.6      /* SM90_NVLINK_BW */
#define NCCL_NVLINK5_GBPS 40.1      /* SM100_NVLINK_BW */

double verify_nvlink_gbps(unsigned nvml_version, int sm_major, int sm_minor)
{
    int sm = sm_major * 10 + sm_minor;

    if (sm == 86) {
        return NCCL_SM86_GBPS;      /* NCCL's own exception, by SM */
    }
    /* nvmlNvlinkVersion_t: 1 = 1.0, 2 = 2.0, 3 = 2.2, 4 = 3.0, 5 = 3.1,
     * 6 = 4.0, 7 = 5.0 (nvml.h). */
    switch (nvml_version) {
    case 1: return NCCL_NVLINK1_GBPS;
    case 2: case 3: return NCCL_NVLINK2_GBPS;
    case 4: case 5: return NCCL_NVLINK3_GBPS;
    case 6: return NCCL_NVLINK4_GBPS;
    case 7: return NCCL_NVLINK5_GBPS;
    default: break;
    }
    /* Version unknown: NCCL's own choice, by compute capability. */
    return sm >= 100 ? NCCL_NVLINK5_GBPS : sm >= 90 ? NCCL_NVLINK4_GBPS :
           sm >= 80 ? NCCL_NVLINK3_GBPS : sm >= 70 ? NCCL_NVLINK2_GBPS :
           sm >= 60 ? NCCL_NVLINK1_GBPS : 0;
}

#define NVML_P2P_CAPS_INDEX_NVLINK 2
#define NVML_P2P_STATUS_OK 0

/* The active NVLinks of @g: far ends, count, NVLink version. A link
 * whose far end NVML cannot name is counted as unresolved, never lost. */
static void gpu_links(VerifyGpu *g, nvmlDevice_t dev)
{
    unsigned link;

    for (link = 0; link < NVML_NVLINK_MAX_LINKS; link++) {
        nvmlPciInfo_t pci;
        int active = 0;
        unsigned version = 0;
        char bdf[GP_BDF_LEN];

        if (p_link_state(dev, link, &active) != 0 || !active) {
            continue;
        }
        g->nvlinks_total++;
        g->nvlinks_active |= 1u << link;
        if (p_link_version && p_link_version(dev, link, &version) == 0 &&
            version > g->nvlink_version) {
            g->nvlink_version = version;
        }
        memset(&pci, 0, sizeof(pci));
        if (p_remote_pci(dev, link, &pci) != 0) {
            g->nvlinks_unresolved++;
            continue;
        }
        /* busId is "00000000:07:00.0": a 32-bit domain. */
        pci.busId[sizeof(pci.busId) - 1] = '\0';
        if (strlen(pci.busId) < 12 ||
            !gp_bdf_normalize(pci.busId + strlen(pci.busId) - 12, bdf)) {
            g_snprintf(bdf, sizeof(bdf), "%04x:%02x:%02x.0",
                       pci.domain & 0xffff, pci.bus & 0xff,
                       pci.device & 0xff);
        }
        g_strlcpy(g->nvlink_peer[link], bdf, sizeof(g->nvlink_peer[link]));
    }
}

/* One reading of a counter into @v, before the run or after it; a
 * counter not read before is not read after (nothing to compare). */
static void health_store(VerifyHealthValue *v, bool after, nvmlReturn_t rc,
                         unsigned long long value)
{
    if (after && v->state != HEALTH_READ_BEFORE) {
        return;
    }
    if (rc == NVML_SUCCESS && after) {
        v->after = value;
        v->after_us = g_get_monotonic_time();
        v->state = HEALTH_READ_BOTH;
    } else if (rc == NVML_SUCCESS) {
        v->before = value;
        v->before_us = g_get_monotonic_time();
        v->state = HEALTH_READ_BEFORE;
    } else if (rc == NVML_ERROR_NOT_SUPPORTED) {
        v->state = HEALTH_UNSUPPORTED;
    } else {
        v->state = HEALTH_READ_ERROR;
        v->nvml_error = rc;
    }
}

static void health_read_ecc(VerifyGpu *g, nvmlDevice_t dev, bool after)
{
    static const struct { int counter, type; } ecc[] = {
        { HEALTH_ECC_UNCORRECTED, NVML_MEMORY_ERROR_TYPE_UNCORRECTED },
        { HEALTH_ECC_CORRECTED, NVML_MEMORY_ERROR_TYPE_CORRECTED },
    };

    for (guint i = 0; i < G_N_ELEMENTS(ecc); i++) {
        unsigned long long n = 0;
        nvmlReturn_t rc = p_ecc_total ?
            p_ecc_total(dev, ecc[i].type, NVML_VOLATILE_ECC, &n) :
            NVML_ERROR_NOT_SUPPORTED;

        health_store(&g->health[ecc[i].counter], after, rc, n);
    }
}

/* Pre-Ampere GPUs retire pages; Ampere and later remap rows instead and
 * answer "not supported" here. */
static void health_read_retired(VerifyGpu *g, nvmlDevice_t dev, bool after)
{
    static const struct { int counter, cause; } retired[] = {
        { HEALTH_RETIRED_DOUBLE_BIT,
          NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR },
        { HEALTH_RETIRED_SINGLE_BIT,
          NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS },
    };

    for (guint i = 0; i < G_N_ELEMENTS(retired); i++) {
        unsigned long long addresses[64];
        unsigned count = G_N_ELEMENTS(addresses);
        nvmlReturn_t rc = p_retired_pages ?
            p_retired_pages(dev, retired[i].cause, &count, addresses) :
            NVML_ERROR_NOT_SUPPORTED;

        /* Too many for the buffer: NVML set count to how many there are. */
        if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
            rc = NVML_SUCCESS;
        }
        health_store(&g->health[retired[i].counter], after, rc, count);
    }
}

static void health_read_remapped(VerifyGpu *g, nvmlDevice_t dev, bool after)
{
    unsigned corr = 0, unc = 0, pending = 0, failure = 0;
    nvmlReturn_t rc = p_remapped_rows ?
        p_remapped_rows(dev, &corr, &unc, &pending, &failure) :
        NVML_ERROR_NOT_SUPPORTED;

    health_store(&g->health[HEALTH_REMAPPED_CORRECTABLE], after, rc, corr);
    health_store(&g->health[HEALTH_REMAPPED_UNCORRECTABLE], after, rc, unc);
    health_store(&g->health[HEALTH_REMAP_PENDING], after, rc, pending);
    health_store(&g->health[HEALTH_REMAP_FAILURE], after, rc, failure);
}

/* The error counters of every link gpu_links() found active. */
static void health_read_links(VerifyGpu *g, nvmlDevice_t dev, bool after)
{
    for (unsigned l = 0; l < VERIFY_MAX_NVLINKS; l++) {
        if (!(g->nvlinks_active & (1u << l))) {
            continue;
        }
        for (int c = 0; c < HEALTH_LINK_COUNTERS; c++) {
            unsigned long long n = 0;
            nvmlReturn_t rc = p_nvlink_errors ?
                p_nvlink_errors(dev, l, c, &n) : NVML_ERROR_NOT_SUPPORTED;

            health_store(&g->link_health[l][c], after, rc, n);
        }
    }
}

static void health_read(VerifyGpu *g, nvmlDevice_t dev, bool after)
{
    health_read_ecc(g, dev, after);
    health_read_retired(g, dev, after);
    health_read_remapped(g, dev, after);
    health_read_links(g, dev, after);
}

/* Xid events are counted from here on: NVML does not deliver those that
 * came before the registration. */
static void xid_register(VerifyGpu *g, nvmlDevice_t dev)
{
    nvmlReturn_t rc = xid_set_rc;

    if (xid_events) {
        rc = p_register_events(dev, NVML_EVENT_TYPE_XID_CRITICAL_ERROR,
                               xid_events);
    }
    health_store(&g->health[HEALTH_XID_EVENTS], false, rc, 0);
}

/* A counter read before the run of a GPU that NVML cannot find after it
 * (fell off the bus?): nothing to compare, and never a pass. */
static void health_lost_after(VerifyHealthValue *v, nvmlReturn_t rc)
{
    if (v->state == HEALTH_READ_BEFORE) {
        v->state = HEALTH_LOST_AFTER;
        v->nvml_error = rc;
    }
}

static void health_gpu_lost_after(VerifyGpu *g, nvmlReturn_t rc)
{
    for (int c = 0; c < HEALTH_GPU_COUNTERS; c++) {
        health_lost_after(&g->health[c], rc);
    }
    for (int l = 0; l < VERIFY_MAX_NVLINKS; l++) {
        for (int c = 0; c < HEALTH_LINK_COUNTERS; c++) {
            health_lost_after(&g->link_health[l][c], rc);
        }
    }
}

/* Drains the Xid events without waiting and counts them per GPU. */
static void xid_count(VerifyReport *r)
{
    guint n = r->gpus->len;
    g_autofree unsigned long long *count = g_new0(unsigned long long, n);
    g_autofree nvmlDevice_t *dev = g_new0(nvmlDevice_t, n);
    nvmlReturn_t failed = NVML_SUCCESS;
    unsigned long long stray = 0, stray_xid = 0;

    for (guint i = 0; i < n; i++) {
        VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);
        nvmlReturn_t rc;

        if (g->nvml_seen && (rc = p_by_bus(g->bdf, &dev[i])) != 0) {
            dev[i] = NULL;
            health_lost_after(&g->health[HEALTH_XID_EVENTS], rc);
        }
    }
    /* Bounded: a GPU that raises Xids without end must not hold the run. */
    for (int e = 0; e < 4096; e++) {
        nvmlEventData_t data;
        nvmlReturn_t rc;
        bool matched = false;

        memset(&data, 0, sizeof(data));
        rc = p_event_wait(xid_events, &data, 0);
        if (rc == NVML_ERROR_TIMEOUT) {
            break;
        }
        if (rc != NVML_SUCCESS) {
            failed = rc;
            break;
        }
        if (!(data.eventType & NVML_EVENT_TYPE_XID_CRITICAL_ERROR)) {
            continue;
        }
        for (guint i = 0; i < n; i++) {
            if (dev[i] && dev[i] == data.device) {
                count[i]++;
                g_array_index(r->gpus, VerifyGpu, i).last_xid = data.eventData;
                matched = true;
            }
        }
        if (!matched) {
            stray++;
            stray_xid = data.eventData;
        }
    }
    if (stray) {
        verify_note(r, "NVML delivered %llu Xid event(s) (last Xid %llu) for "
                    "a device that is none of the GPUs it named after the "
                    "run: xid_events is not read on every GPU without Xids "
                    "of its own", stray, stray_xid);
    }
    for (guint i = 0; i < n; i++) {
        VerifyHealthValue *v = &g_array_index(r->gpus, VerifyGpu, i).health[
            HEALTH_XID_EVENTS];

        /* Events counted before a failed wait, or beside one we cannot
         * attribute, are real: they still count. */
        if (stray && !count[i] && v->state == HEALTH_READ_BEFORE) {
            /* It may have been this GPU's: never a pass. */
            v->state = HEALTH_UNATTRIBUTED;
            continue;
        }
        health_store(v, true, count[i] ? NVML_SUCCESS : failed, count[i]);
    }
    p_event_set_free(xid_events);
    xid_events = NULL;
}

void verify_nvml_health_after(VerifyReport *r)
{
    if (!r->health_read) {
        return;
    }
    for (guint i = 0; i < r->gpus->len; i++) {
        VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);
        nvmlDevice_t dev;
        nvmlReturn_t rc;

        if (!g->nvml_seen) {
            continue;
        }
        rc = p_by_bus(g->bdf, &dev);
        if (rc == NVML_SUCCESS) {
            health_read(g, dev, true);
        } else {
            health_gpu_lost_after(g, rc);
        }
    }
    if (xid_events) {
        xid_count(r);
    }
}

#define NVML_SYM(h, ptr, name) ((ptr) = (__typeof__(ptr))dlsym(h, name))

/* The health queries; any that this NVML lacks reads "not supported". */
static void health_symbols(void *h)
{
    NVML_SYM(h, p_nvlink_errors, "nvmlDeviceGetNvLinkErrorCounter");
    NVML_SYM(h, p_ecc_total, "nvmlDeviceGetTotalEccErrors");
    NVML_SYM(h, p_retired_pages, "nvmlDeviceGetRetiredPages");
    NVML_SYM(h, p_remapped_rows, "nvmlDeviceGetRemappedRows");
    NVML_SYM(h, p_event_set_create, "nvmlEventSetCreate");
    NVML_SYM(h, p_register_events, "nvmlDeviceRegisterEvents");
    NVML_SYM(h, p_event_wait, "nvmlEventSetWait_v2");
    NVML_SYM(h, p_event_set_free, "nvmlEventSetFree");
}

/* Xid events need all four event calls and a set. */
static void xid_set_create(void)
{
    xid_events = NULL;
    xid_set_rc = NVML_ERROR_NOT_SUPPORTED;
    if (p_event_set_create && p_register_events && p_event_wait &&
        p_event_set_free) {
        xid_set_rc = p_event_set_create(&xid_events);
        if (xid_set_rc != NVML_SUCCESS) {
            xid_events = NULL;
        }
    }
}

void verify_nvml(VerifyReport *r)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    guint i;

    if (!h) {
        r->nvml_status = g_strdup_printf("NVML not loaded: %s", dlerror());
        return;
    }
    p_init = (__typeof__(p_init))dlsym(h, "nvmlInit_v2");
    p_by_bus = (__typeof__(p_by_bus))dlsym(h,
                                           "nvmlDeviceGetHandleByPciBusId_v2");
    p_link_state = (__typeof__(p_link_state))dlsym(h,
                                                   "nvmlDeviceGetNvLinkState");
    p_remote_pci = (__typeof__(p_remote_pci))dlsym(h,
                       "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    p_p2p_status = (__typeof__(p_p2p_status))dlsym(h, "nvmlDeviceGetP2PStatus");
    p_driver_version = (__typeof__(p_driver_version))dlsym(h,
                           "nvmlSystemGetDriverVersion");
    p_link_version = (__typeof__(p_link_version))dlsym(h,
                         "nvmlDeviceGetNvLinkVersion");
    if (!p_init || !p_by_bus || !p_link_state || !p_remote_pci) {
        r->nvml_status = g_strdup("NVML lacks the NVLink queries");
        return;
    }
    if (p_init() != 0) {
        r->nvml_status = g_strdup("nvmlInit failed");
        return;
    }
    health_symbols(h);
    xid_set_create();
    r->health_read = true;
    if (p_driver_version &&
        p_driver_version(r->driver_version, sizeof(r->driver_version)) != 0) {
        r->driver_version[0] = '\0';
    }
    for (i = 0; i < r->gpus->len; i++) {
        VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);
        nvmlDevice_t dev;

        if (p_by_bus(g->bdf, &dev) == 0) {
            g->nvml_seen = true;
            gpu_links(g, dev);
            /* Before the data checks: what the run adds is then seen. */
            health_read(g, dev, false);
            xid_register(g, dev);
        }
        if (g->nvlinks_unresolved) {
            verify_note(r, "%s: NVML could not name the far end of %u of "
                        "its %u NVLinks; the NCCL file leaves its links to "
                        "NCCL's own probe", g->bdf, g->nvlinks_unresolved,
                        g->nvlinks_total);
        }
    }
}

void verify_nvml_pairs(VerifyReport *r)
{
    guint i, l;

    for (i = 0; i < r->pairs->len; i++) {
        VerifyPair *p = &g_array_index(r->pairs, VerifyPair, i);
        VerifyGpu *a = &g_array_index(r->gpus, VerifyGpu, p->a);
        VerifyGpu *b = &g_array_index(r->gpus, VerifyGpu, p->b);

        p->nvlinks = 0;
        for (l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
            if (!g_ascii_strcasecmp(a->nvlink_peer[l], b->bdf)) {
                p->nvlinks++;
            }
        }
        if (!p->nvlinks && a->nvlinks_total && b->nvlinks_total &&
            p_p2p_status) {
            /* The far end is hidden (a VM) or an NVSwitch: NVML still says
             * whether this pair talks over NVLink, and the pair gets the
             * links of its narrower end. */
            nvmlDevice_t da, db;
            int status = -1;

            if (p_by_bus(a->bdf, &da) == 0 && p_by_bus(b->bdf, &db) == 0 &&
                p_p2p_status(da, db, NVML_P2P_CAPS_INDEX_NVLINK, &status) ==
                0 && status == NVML_P2P_STATUS_OK) {
                p->nvlinks = MIN(a->nvlinks_total, b->nvlinks_total);
            }
        }
        if (p->nvlinks) {
            g_snprintf(p->link, sizeof(p->link), "NV%u", p->nvlinks);
            /* The older generation of the two ends sets the pace. */
            unsigned v = MIN(a->nvlink_version ? a->nvlink_version : 99,
                             b->nvlink_version ? b->nvlink_version : 99);

            p->link_limit_gbps = p->nvlinks *
                verify_nvlink_gbps(v == 99 ? 0 : v, a->sm_major, a->sm_minor);
        } else if (r->nvml_status) {
            /* Without NVML an NVLink pair cannot be told from a PCIe one:
             * a PCIe label would set a limit its figure exceeds 7x. */
            g_strlcpy(p->link, "unknown (no NVML)", sizeof(p->link));
            p->link_limit_gbps = 0;
        } else if (a->pcie_gen && a->pcie_width) {
            unsigned gen = MIN(a->pcie_gen, b->pcie_gen ? b->pcie_gen : 99);
            unsigned width = MIN(a->pcie_width,
                                 b->pcie_width ? b->pcie_width : 99);

            g_snprintf(p->link, sizeof(p->link), "PCIe Gen%u x%u", gen,
                       width);
            p->link_limit_gbps = gp_pcie_lane_gbps(gen) * width;
        }
    }
}
