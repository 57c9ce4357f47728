/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * PCI configuration space: capability walks, PCIe and ACS fields, BARs.
 *
 * Everything here works on a byte copy of config space with a known
 * readable length, because an unprivileged reader of sysfs gets only the
 * first 64 bytes and must be told what it cannot see rather than guess.
 */
#ifndef GPUP2P_PCICFG_H
#define GPUP2P_PCICFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <glib.h>

#include "gpup2p/error.h"

#define GP_PCICFG_HEADER_SIZE   0x40
#define GP_PCICFG_STD_SIZE      0x100
#define GP_PCICFG_EXT_SIZE      0x1000

/* Standard header registers (offsets) and bits the library reads. */
#define GP_PCI_STATUS           0x06
#define GP_PCI_STATUS_CAP_LIST  0x10
#define GP_PCI_HEADER_TYPE      0x0e
#define GP_PCI_CAPABILITY_LIST  0x34

#define GP_PCI_CAP_ID_PM        0x01
#define GP_PCI_CAP_ID_MSI       0x05
#define GP_PCI_CAP_ID_VNDR      0x09
#define GP_PCI_CAP_ID_EXP       0x10
#define GP_PCI_CAP_ID_MSIX      0x11

#define GP_PCI_EXT_CAP_ID_ACS   0x000d
#define GP_PCI_EXT_CAP_ID_ATS   0x000f
/* ATS Control (ATS + 6): Enable (PCIe r6.0, 10.5.1.3). */
#define GP_ATS_CTRL_ENABLE      0x8000

/* ACS Capability/Control register bits (PCIe r6.0, 7.7.8). */
#define GP_ACS_SV               0x0001
#define GP_ACS_TB               0x0002
#define GP_ACS_RR               0x0004
#define GP_ACS_CR               0x0008
#define GP_ACS_UF               0x0010
#define GP_ACS_EC               0x0020
#define GP_ACS_DT               0x0040
/* The bits whose control makes a port redirect peer requests upstream. */
#define GP_ACS_REDIRECT_MASK    (GP_ACS_RR | GP_ACS_CR | GP_ACS_EC)

/* PCIe device/port types (PCIe capability, flags bits 7:4). */
typedef enum {
    GP_PCIE_TYPE_ENDPOINT = 0x0,
    GP_PCIE_TYPE_LEGACY_ENDPOINT = 0x1,
    GP_PCIE_TYPE_ROOT_PORT = 0x4,
    GP_PCIE_TYPE_UPSTREAM_PORT = 0x5,
    GP_PCIE_TYPE_DOWNSTREAM_PORT = 0x6,
    GP_PCIE_TYPE_PCIE_TO_PCI_BRIDGE = 0x7,
    GP_PCIE_TYPE_PCI_TO_PCIE_BRIDGE = 0x8,
    GP_PCIE_TYPE_RC_INTEGRATED = 0x9,
    GP_PCIE_TYPE_RC_EVENT_COLLECTOR = 0xa,
    GP_PCIE_TYPE_NONE = -1,
} GpPcieType;

typedef struct GpPciConfig {
    uint8_t bytes[GP_PCICFG_EXT_SIZE];
    size_t len;                 /* how many bytes were readable */
} GpPciConfig;

typedef struct GpPciCap {
    uint16_t offset;
    uint16_t id;
    uint8_t version;            /* extended capabilities only */
    uint16_t length;            /* bytes the capability occupies */
    bool extended;
    bool length_known;          /* false: length is an upper bound */
} GpPciCap;

#define GP_PCICFG_MAX_CAPS      48
#define GP_PCICFG_MAX_EXT_CAPS  ((GP_PCICFG_EXT_SIZE - GP_PCICFG_STD_SIZE) / 4)

typedef struct GpPciCapList {
    GpPciCap caps[GP_PCICFG_MAX_CAPS];
    size_t count;
} GpPciCapList;

typedef struct GpPcieInfo {
    GpPcieType type;
    uint8_t version;
    uint8_t link_max_speed;     /* PCIe generation code, 1 = 2.5 GT/s */
    uint8_t link_max_width;
    uint8_t link_speed;
    uint8_t link_width;
    bool has_link;
} GpPcieInfo;

typedef struct GpAcsInfo {
    bool present;
    uint16_t offset;
    uint16_t cap;
    uint16_t ctrl;
} GpAcsInfo;

/* Address Translation Services: a device that can send translated
 * requests (GPUDirect RDMA's switch-local path needs it on the NIC). */
typedef struct GpAtsInfo {
    bool present;
    uint16_t offset;
    bool enabled;               /* ATS Control Enable: the kernel turned it on */
} GpAtsInfo;

void gp_pcicfg_init(GpPciConfig *cfg, const uint8_t *bytes, size_t len);

bool gp_pcicfg_read8(const GpPciConfig *cfg, size_t off, uint8_t *val);
bool gp_pcicfg_read16(const GpPciConfig *cfg, size_t off, uint16_t *val);
bool gp_pcicfg_read32(const GpPciConfig *cfg, size_t off, uint32_t *val);

uint8_t gp_pcicfg_header_type(const GpPciConfig *cfg);

/*
 * Walk the standard capability list. Fails on a pointer into the header,
 * past the end, into bytes that were not readable, or on a loop.
 */
bool gp_pcicfg_walk_caps(const GpPciConfig *cfg, GpPciCapList *list,
                         GError **errp);

/*
 * Walk the extended capability list; fails with GP_ERROR_INCOMPLETE when
 * only the first 256 bytes (or fewer) were readable.
 */
bool gp_pcicfg_walk_ext_caps(const GpPciConfig *cfg, GpPciCap *caps,
                             size_t max, size_t *count, GError **errp);

const GpPciCap *gp_pcicfg_find_cap(const GpPciCapList *list, uint16_t id);

/* Length in bytes of the standard capability at @off, 0 if unknown. */
uint16_t gp_pcicfg_std_cap_length(const GpPciConfig *cfg, uint16_t off);

bool gp_pcicfg_pcie_info(const GpPciConfig *cfg, const GpPciCapList *list,
                         GpPcieInfo *info);
bool gp_pcicfg_acs_info(const GpPciConfig *cfg, GpAcsInfo *acs,
                        GError **errp);

/* Fails as gp_pcicfg_acs_info() does where extended space is missing. */
bool gp_pcicfg_ats_info(const GpPciConfig *cfg, GpAtsInfo *ats,
                        GError **errp);

const char *gp_pcie_type_name(GpPcieType type);
/* "2.5", "5", "8", "16", "32", "64" GT/s for generation codes 1..6. */
const char *gp_pcie_speed_name(uint8_t gen);
/* Per-lane payload bandwidth in GB/s after line coding, 0 if unknown. */
double gp_pcie_lane_gbps(uint8_t gen);

/* ACS bits as "SV RR CR UF" for messages. Returns a newly allocated string. */
char *gp_acs_bits_string(uint16_t bits);

#endif /* GPUP2P_PCICFG_H */
