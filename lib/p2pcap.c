/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Codec and placement of the NVIDIA P2P clique capability. */
#include <string.h>

#include "gpup2p/p2pcap.h"

void gp_p2pcap_encode(uint8_t out[GP_P2PCAP_LENGTH], unsigned clique,
                      uint8_t next)
{
    out[0] = GP_PCI_CAP_ID_VNDR;
    out[1] = next;
    out[2] = GP_P2PCAP_LENGTH;
    out[3] = 'P';
    out[4] = '2';
    out[5] = 'P';
    gp_p2pcap_set_clique(out, clique);
    out[7] = 0;
}

void gp_p2pcap_set_clique(uint8_t bytes[GP_P2PCAP_LENGTH], unsigned clique)
{
    bytes[6] = (uint8_t)(((clique & 0xf) << 3) | GP_P2PCAP_VERSION);
}

bool gp_p2pcap_decode(const uint8_t bytes[GP_P2PCAP_LENGTH], GpP2pCap *cap)
{
    memset(cap, 0, sizeof(*cap));
    if (bytes[0] != GP_PCI_CAP_ID_VNDR || bytes[3] != 'P' ||
        bytes[4] != '2' || bytes[5] != 'P') {
        return false;
    }
    cap->version = bytes[6] & 0x7;
    cap->clique = (bytes[6] >> 3) & 0xf;
    cap->last = bytes[1] == 0;
    cap->valid = true;
    if (bytes[2] != GP_P2PCAP_LENGTH) {
        g_snprintf(cap->problem, sizeof(cap->problem),
                   "length is %u, expected %u", bytes[2], GP_P2PCAP_LENGTH);
    } else if (cap->version != GP_P2PCAP_VERSION) {
        g_snprintf(cap->problem, sizeof(cap->problem),
                   "version is %u, expected %u", cap->version,
                   GP_P2PCAP_VERSION);
    } else if ((bytes[6] & 0x80) || bytes[7]) {
        g_snprintf(cap->problem, sizeof(cap->problem),
                   "reserved bits set (byte 6 bit 7 or byte 7)");
    }
    cap->valid = cap->problem[0] == '\0';
    return true;
}

bool gp_p2pcap_find(const GpPciConfig *cfg, GpP2pCap *cap, GError **errp)
{
    GpPciCapList list;
    size_t i;

    if (!gp_pcicfg_walk_caps(cfg, &list, errp)) {
        return false;
    }
    for (i = 0; i < list.count; i++) {
        uint16_t off = list.caps[i].offset;

        if (list.caps[i].id != GP_PCI_CAP_ID_VNDR ||
            (size_t)off + GP_P2PCAP_LENGTH > cfg->len) {
            continue;
        }
        if (gp_p2pcap_decode(&cfg->bytes[off], cap)) {
            cap->offset = off;
            if (cap->valid && i + 1 != list.count) {
                cap->valid = false;
                g_snprintf(cap->problem, sizeof(cap->problem),
                           "not last in the capability list (next 0x%02x)",
                           cfg->bytes[off + 1]);
            }
            return true;
        }
    }
    g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND,
                "no P2P vendor capability in the capability list");
    return false;
}

static bool slot_is_free(const GpPciCapList *list, uint16_t off)
{
    size_t i;

    if (off < GP_PCICFG_HEADER_SIZE ||
        off + GP_P2PCAP_LENGTH > GP_PCICFG_STD_SIZE) {
        return false;
    }
    for (i = 0; i < list->count; i++) {
        uint16_t start = list->caps[i].offset;
        uint16_t end = start + list->caps[i].length;

        if (off < end && start < off + GP_P2PCAP_LENGTH) {
            return false;
        }
    }
    return true;
}

/* What occupies the 8 bytes at @off, for messages. */
static char *slot_user(const GpPciCapList *list, uint16_t off)
{
    size_t i;

    for (i = 0; i < list->count; i++) {
        uint16_t start = list->caps[i].offset;
        uint16_t end = start + list->caps[i].length;

        if (off < end && start < off + GP_P2PCAP_LENGTH) {
            return g_strdup_printf("capability %02xh at %02xh..%02xh",
                                   list->caps[i].id, start, end - 1);
        }
    }
    return g_strdup("free");
}

bool gp_p2pcap_choose_offset(const GpPciConfig *cfg, bool allow_elsewhere,
                             uint16_t *offset, GError **errp)
{
    GpPciCapList list;
    uint16_t off;

    if (cfg->len < GP_PCICFG_STD_SIZE) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INCOMPLETE,
                    "only %zu bytes of config space readable; placing the "
                    "capability needs all 256", cfg->len);
        return false;
    }
    if (!gp_pcicfg_walk_caps(cfg, &list, errp)) {
        return false;
    }
    if (slot_is_free(&list, GP_P2PCAP_PREFERRED)) {
        *offset = GP_P2PCAP_PREFERRED;
        return true;
    }
    if (slot_is_free(&list, GP_P2PCAP_ALTERNATE)) {
        *offset = GP_P2PCAP_ALTERNATE;
        return true;
    }
    if (!allow_elsewhere) {
        g_autofree char *c8 = slot_user(&list, GP_P2PCAP_PREFERRED);
        g_autofree char *d4 = slot_user(&list, GP_P2PCAP_ALTERNATE);

        g_set_error(errp, GP_ERROR, GP_ERROR_NO_ROOM,
                    "neither C8h nor D4h is free for the P2P capability "
                    "(C8h: %s; D4h: %s)", c8, d4);
        return false;
    }
    for (off = GP_PCICFG_HEADER_SIZE; off + GP_P2PCAP_LENGTH <=
         GP_PCICFG_STD_SIZE; off += 4) {
        if (slot_is_free(&list, off)) {
            *offset = off;
            return true;
        }
    }
    g_set_error(errp, GP_ERROR, GP_ERROR_NO_ROOM,
                "no free 8-byte slot in standard config space for the P2P "
                "capability (%zu capabilities present)", list.count);
    return false;
}

bool gp_p2pcap_insert(GpPciConfig *cfg, unsigned clique, uint16_t *offset,
                      GError **errp)
{
    GpPciCapList list;
    uint16_t off;

    if (clique > GP_P2PCAP_MAX_CLIQUE) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "clique id %u is out of range 0..%d", clique,
                    GP_P2PCAP_MAX_CLIQUE);
        return false;
    }
    if (!gp_p2pcap_choose_offset(cfg, false, &off, errp) ||
        !gp_pcicfg_walk_caps(cfg, &list, errp)) {
        return false;
    }
    gp_p2pcap_encode(&cfg->bytes[off], clique, 0);
    if (list.count) {
        cfg->bytes[list.caps[list.count - 1].offset + 1] = (uint8_t)off;
    } else {
        cfg->bytes[GP_PCI_CAPABILITY_LIST] = (uint8_t)off;
        cfg->bytes[GP_PCI_STATUS] |= GP_PCI_STATUS_CAP_LIST;
    }
    if (offset) {
        *offset = off;
    }
    return true;
}
