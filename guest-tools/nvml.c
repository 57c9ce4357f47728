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

static nvmlReturn_t (*p_init)(void);
static nvmlReturn_t (*p_by_bus)(const char *, nvmlDevice_t *);
static nvmlReturn_t (*p_link_state)(nvmlDevice_t, unsigned, int *);
static nvmlReturn_t (*p_remote_pci)(nvmlDevice_t, unsigned, nvmlPciInfo_t *);
static nvmlReturn_t (*p_p2p_status)(nvmlDevice_t, nvmlDevice_t, int, int *);
static nvmlReturn_t (*p_driver_version)(char *, unsigned);
static nvmlReturn_t (*p_link_version)(nvmlDevice_t, unsigned, unsigned *);

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
