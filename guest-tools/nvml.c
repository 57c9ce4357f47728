/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Link types from NVML (libnvidia-ml.so.1, loaded at run time): NVLinks
 * between each pair, else the PCIe link the GPU negotiated.
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
#define NVLINK_GBPS_PER_LINK 25.0   /* per direction, NVLink 4 */

static nvmlReturn_t (*p_init)(void);
static nvmlReturn_t (*p_by_bus)(const char *, nvmlDevice_t *);
static nvmlReturn_t (*p_link_state)(nvmlDevice_t, unsigned, int *);
static nvmlReturn_t (*p_remote_pci)(nvmlDevice_t, unsigned, nvmlPciInfo_t *);
static nvmlReturn_t (*p_p2p_status)(nvmlDevice_t, nvmlDevice_t, int, int *);
static nvmlReturn_t (*p_driver_version)(char *, unsigned);

#define NVML_P2P_CAPS_INDEX_NVLINK 2
#define NVML_P2P_STATUS_OK 0

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
        unsigned link;

        if (p_by_bus(g->bdf, &dev) != 0) {
            continue;
        }
        for (link = 0; link < NVML_NVLINK_MAX_LINKS; link++) {
            nvmlPciInfo_t pci;
            int active = 0;
            char bdf[GP_BDF_LEN];

            if (p_link_state(dev, link, &active) != 0 || !active) {
                continue;
            }
            g->nvlinks_total++;
            if (p_remote_pci(dev, link, &pci) != 0) {
                continue;
            }
            /* busId is "00000000:07:00.0": a 32-bit domain. */
            pci.busId[sizeof(pci.busId) - 1] = '\0';
            if (strlen(pci.busId) < 12 ||
                !gp_bdf_normalize(pci.busId + strlen(pci.busId) - 12, bdf)) {
                g_snprintf(bdf, sizeof(bdf), "%04x:%02x:%02x.0",
                           pci.domain & 0xffff, pci.bus, pci.device);
            }
            g_strlcpy(g->nvlink_peer[link], bdf,
                      sizeof(g->nvlink_peer[link]));
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
            p->link_limit_gbps = p->nvlinks * NVLINK_GBPS_PER_LINK;
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
