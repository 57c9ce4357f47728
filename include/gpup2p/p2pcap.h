/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NVIDIA's virtual P2P approval capability: a vendor-specific PCI capability
 * (id 09h, length 8, signature "P2P") that tells a guest driver which GPUs
 * may use PCIe peer-to-peer. Byte 6 holds the version in bits 2:0 and the
 * clique id in bits 6:3; byte 7 is reserved.
 */
#ifndef GPUP2P_P2PCAP_H
#define GPUP2P_P2PCAP_H

#include "gpup2p/pcicfg.h"

#define GP_P2PCAP_LENGTH        8
#define GP_P2PCAP_VERSION       0
#define GP_P2PCAP_MAX_CLIQUE    15
#define GP_P2PCAP_PREFERRED     0xc8    /* 2017 recommendation */
#define GP_P2PCAP_ALTERNATE     0xd4    /* where MSI-X takes C8h (Turing+) */

typedef struct GpP2pCap {
    uint16_t offset;
    uint8_t clique;
    uint8_t version;
    bool valid;
    bool last;                  /* next pointer is 0 */
    char problem[128];          /* why it is invalid, empty when valid */
} GpP2pCap;

/* The 8 capability bytes with next pointer @next. */
void gp_p2pcap_encode(uint8_t out[GP_P2PCAP_LENGTH], unsigned clique,
                      uint8_t next);

/* Change the clique id of encoded bytes; the other bytes stay as they are. */
void gp_p2pcap_set_clique(uint8_t bytes[GP_P2PCAP_LENGTH], unsigned clique);

/*
 * Decode 8 bytes. Returns false for bytes that are not a P2P capability at
 * all (other id or signature); a capability with the right signature but
 * bad length, version or reserved bits decodes with valid = false and a
 * problem.
 */
bool gp_p2pcap_decode(const uint8_t bytes[GP_P2PCAP_LENGTH], GpP2pCap *cap);

/*
 * Find the P2P capability in a config space. Returns false with
 * GP_ERROR_NOT_FOUND when there is none, or the capability walk's error.
 * A capability that is found but is not last in the list is reported
 * invalid.
 */
bool gp_p2pcap_find(const GpPciConfig *cfg, GpP2pCap *cap, GError **errp);

/*
 * Choose where the capability goes: C8h, then D4h, as NVIDIA's
 * specification and QEMU's x-nv-gpudirect-clique place it; with
 * @allow_elsewhere, then the first free dword-aligned 8 bytes. Free means
 * no byte of the header or of any existing capability (by its real
 * length) lies there. Other offsets are off by default because they may
 * hold vendor-private registers.
 */
bool gp_p2pcap_choose_offset(const GpPciConfig *cfg, bool allow_elsewhere,
                             uint16_t *offset, GError **errp);

/*
 * Place the capability in @cfg at C8h or D4h, linked last in the list with
 * next = 0. @cfg is unchanged on failure.
 */
bool gp_p2pcap_insert(GpPciConfig *cfg, unsigned clique, uint16_t *offset,
                      GError **errp);

#endif /* GPUP2P_P2PCAP_H */
