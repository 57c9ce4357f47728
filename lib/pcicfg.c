/* SPDX-License-Identifier: GPL-2.0-or-later */
/* PCI configuration space decoding. */
#include <string.h>

#include "gpup2p/pcicfg.h"

void gp_pcicfg_init(GpPciConfig *cfg, const uint8_t *bytes, size_t len)
{
    memset(cfg, 0, sizeof(*cfg));
    if (len > sizeof(cfg->bytes)) {
        len = sizeof(cfg->bytes);
    }
    if (bytes && len) {
        memcpy(cfg->bytes, bytes, len);
    }
    cfg->len = len;
}

bool gp_pcicfg_read8(const GpPciConfig *cfg, size_t off, uint8_t *val)
{
    if (off >= cfg->len) {
        return false;
    }
    *val = cfg->bytes[off];
    return true;
}

bool gp_pcicfg_read16(const GpPciConfig *cfg, size_t off, uint16_t *val)
{
    if (off + 2 > cfg->len) {
        return false;
    }
    *val = (uint16_t)(cfg->bytes[off] | cfg->bytes[off + 1] << 8);
    return true;
}

bool gp_pcicfg_read32(const GpPciConfig *cfg, size_t off, uint32_t *val)
{
    if (off + 4 > cfg->len) {
        return false;
    }
    *val = (uint32_t)cfg->bytes[off] | (uint32_t)cfg->bytes[off + 1] << 8 |
           (uint32_t)cfg->bytes[off + 2] << 16 |
           (uint32_t)cfg->bytes[off + 3] << 24;
    return true;
}

uint8_t gp_pcicfg_header_type(const GpPciConfig *cfg)
{
    uint8_t ht = 0;

    gp_pcicfg_read8(cfg, GP_PCI_HEADER_TYPE, &ht);
    return ht & 0x7f;
}

uint16_t gp_pcicfg_std_cap_length(const GpPciConfig *cfg, uint16_t off)
{
    uint8_t id = cfg->bytes[off];
    uint16_t flags = 0;

    switch (id) {
    case GP_PCI_CAP_ID_PM:
        return 8;
    case 0x03:                  /* VPD */
        return 8;
    case 0x04:                  /* Slot identification */
        return 4;
    case GP_PCI_CAP_ID_MSI: {
        uint16_t len = 10;

        if (!gp_pcicfg_read16(cfg, off + 2, &flags)) {
            return 0;
        }
        if (flags & 0x0080) {   /* 64-bit address */
            len += 4;
        }
        if (flags & 0x0100) {   /* per-vector masking: mask + pending */
            len += 10;
        }
        return len;
    }
    case GP_PCI_CAP_ID_VNDR: {
        uint8_t len = 0;

        if (!gp_pcicfg_read8(cfg, off + 2, &len) || len < 3) {
            return 0;
        }
        return len;
    }
    case 0x0d:                  /* Subsystem vendor id (bridges) */
        return 8;
    case GP_PCI_CAP_ID_EXP:
        if (!gp_pcicfg_read16(cfg, off + 2, &flags)) {
            return 0;
        }
        if ((flags & 0xf) >= 2) {
            return 0x3c;
        }
        /*
         * Version 1 ends after the last register block its port type
         * has: link (endpoints, 14h), slot (downstream ports, 1Ch), root
         * (root ports and event collectors, 24h).
         */
        switch ((flags >> 4) & 0xf) {
        case 0x4:               /* root port */
        case 0xa:               /* root complex event collector */
            return 0x24;
        case 0x6:               /* switch downstream port */
        case 0x8:               /* PCIe to PCI/PCI-X bridge */
            return 0x1c;
        default:
            return 0x14;
        }
    case GP_PCI_CAP_ID_MSIX:
        return 12;
    case 0x12:                  /* SATA */
        return 8;
    case 0x13:                  /* Advanced features */
        return 6;
    default:
        return 0;
    }
}

bool gp_pcicfg_walk_caps(const GpPciConfig *cfg, GpPciCapList *list,
                         GError **errp)
{
    bool visited[GP_PCICFG_STD_SIZE / 4] = { false };
    uint16_t status;
    uint8_t ptr;
    size_t i;

    list->count = 0;
    if (!gp_pcicfg_read16(cfg, GP_PCI_STATUS, &status) ||
        !gp_pcicfg_read8(cfg, GP_PCI_CAPABILITY_LIST, &ptr)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INCOMPLETE,
                    "config space holds %zu bytes, too few for the header",
                    cfg->len);
        return false;
    }
    if (!(status & GP_PCI_STATUS_CAP_LIST)) {
        return true;
    }
    ptr &= 0xfc;
    while (ptr) {
        GpPciCap *cap;
        uint8_t id, next;

        if (ptr < GP_PCICFG_HEADER_SIZE) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                        "capability pointer 0x%02x points into the "
                        "standard header", ptr);
            return false;
        }
        if (!gp_pcicfg_read8(cfg, ptr, &id) ||
            !gp_pcicfg_read8(cfg, ptr + 1u, &next)) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INCOMPLETE,
                        "capability at 0x%02x lies beyond the %zu readable "
                        "bytes of config space", ptr, cfg->len);
            return false;
        }
        if (visited[ptr / 4]) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                        "capability list loops back to 0x%02x", ptr);
            return false;
        }
        visited[ptr / 4] = true;
        if (list->count == GP_PCICFG_MAX_CAPS) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                        "more than %d capabilities in the list",
                        GP_PCICFG_MAX_CAPS);
            return false;
        }
        cap = &list->caps[list->count++];
        memset(cap, 0, sizeof(*cap));
        cap->offset = ptr;
        cap->id = id;
        cap->length = gp_pcicfg_std_cap_length(cfg, ptr);
        cap->length_known = cap->length != 0;
        ptr = next & 0xfc;
    }

    /*
     * A capability of unknown length is taken to reach up to the next one
     * above it (or the end of standard space): an upper bound, so nothing
     * placed later can overlap it.
     */
    for (i = 0; i < list->count; i++) {
        GpPciCap *cap = &list->caps[i];
        uint16_t limit = GP_PCICFG_STD_SIZE;
        size_t j;

        for (j = 0; j < list->count; j++) {
            uint16_t o = list->caps[j].offset;

            if (o > cap->offset && o < limit) {
                limit = o;
            }
        }
        if (!cap->length_known || cap->offset + cap->length > 0x100) {
            if (cap->length_known) {
                g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                            "capability 0x%02x at 0x%02x runs past the end "
                            "of standard config space", cap->id,
                            cap->offset);
                return false;
            }
            cap->length = limit - cap->offset;
        }
    }
    return true;
}

bool gp_pcicfg_walk_ext_caps(const GpPciConfig *cfg, GpPciCap *caps,
                             size_t max, size_t *count, GError **errp)
{
    bool visited[GP_PCICFG_MAX_EXT_CAPS] = { false };
    uint16_t off = GP_PCICFG_STD_SIZE;
    uint32_t hdr;

    *count = 0;
    if (cfg->len == GP_PCICFG_STD_SIZE) {
        /* The kernel found no extended space (conventional PCI, or a
         * host that cannot reach it): there are no extended capabilities. */
        return true;
    }
    if (cfg->len < GP_PCICFG_EXT_SIZE) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INCOMPLETE,
                    "extended config space not readable (%zu of %d bytes; "
                    "reading it needs root)", cfg->len, GP_PCICFG_EXT_SIZE);
        return false;
    }
    gp_pcicfg_read32(cfg, off, &hdr);
    if (hdr == 0 || hdr == 0xffffffff) {
        return true;
    }
    for (;;) {
        uint16_t next;

        if (visited[(off - GP_PCICFG_STD_SIZE) / 4]) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                        "extended capability list loops back to 0x%03x", off);
            return false;
        }
        visited[(off - GP_PCICFG_STD_SIZE) / 4] = true;
        gp_pcicfg_read32(cfg, off, &hdr);
        if (*count == max) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                        "more than %zu extended capabilities", max);
            return false;
        }
        memset(&caps[*count], 0, sizeof(caps[*count]));
        caps[*count].offset = off;
        caps[*count].id = hdr & 0xffff;
        caps[*count].version = (hdr >> 16) & 0xf;
        caps[*count].extended = true;
        (*count)++;
        next = (hdr >> 20) & 0xffc;
        if (!next) {
            break;
        }
        if (next < GP_PCICFG_STD_SIZE) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                        "extended capability at 0x%03x points to 0x%03x, "
                        "inside standard config space", off, next);
            return false;
        }
        off = next;
    }
    return true;
}

const GpPciCap *gp_pcicfg_find_cap(const GpPciCapList *list, uint16_t id)
{
    size_t i;

    for (i = 0; i < list->count; i++) {
        if (list->caps[i].id == id) {
            return &list->caps[i];
        }
    }
    return NULL;
}

bool gp_pcicfg_pcie_info(const GpPciConfig *cfg, const GpPciCapList *list,
                         GpPcieInfo *info)
{
    const GpPciCap *cap = gp_pcicfg_find_cap(list, GP_PCI_CAP_ID_EXP);
    uint16_t flags, lnksta;
    uint32_t lnkcap;

    memset(info, 0, sizeof(*info));
    info->type = GP_PCIE_TYPE_NONE;
    if (!cap || !gp_pcicfg_read16(cfg, cap->offset + 2u, &flags)) {
        return false;
    }
    info->type = (GpPcieType)((flags >> 4) & 0xf);
    info->version = flags & 0xf;
    if (info->type != GP_PCIE_TYPE_RC_INTEGRATED &&
        info->type != GP_PCIE_TYPE_RC_EVENT_COLLECTOR &&
        gp_pcicfg_read32(cfg, cap->offset + 0x0cu, &lnkcap) &&
        gp_pcicfg_read16(cfg, cap->offset + 0x12u, &lnksta)) {
        info->has_link = true;
        info->link_max_speed = lnkcap & 0xf;
        info->link_max_width = (lnkcap >> 4) & 0x3f;
        info->link_speed = lnksta & 0xf;
        info->link_width = (lnksta >> 4) & 0x3f;
    }
    return true;
}

bool gp_pcicfg_acs_info(const GpPciConfig *cfg, GpAcsInfo *acs, GError **errp)
{
    GpPciCap caps[GP_PCICFG_MAX_EXT_CAPS];
    size_t n, i;

    uint32_t hdr = 0;

    memset(acs, 0, sizeof(*acs));
    /*
     * All ones where the kernel found extended space (it sizes a config
     * file at 256 bytes when 0x100 reads all ones at enumeration) is a
     * device that stopped answering: its ACS is unknown, never "absent".
     */
    if (cfg->len > GP_PCICFG_STD_SIZE &&
        gp_pcicfg_read32(cfg, GP_PCICFG_STD_SIZE, &hdr) && hdr == 0xffffffff) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "extended config space reads all ones at 0x100: the "
                    "device does not answer there, so its ACS is unknown");
        return false;
    }
    if (!gp_pcicfg_walk_ext_caps(cfg, caps, G_N_ELEMENTS(caps), &n, errp)) {
        return false;
    }
    for (i = 0; i < n; i++) {
        if (caps[i].id == GP_PCI_EXT_CAP_ID_ACS) {
            acs->present = true;
            acs->offset = caps[i].offset;
            gp_pcicfg_read16(cfg, caps[i].offset + 4u, &acs->cap);
            gp_pcicfg_read16(cfg, caps[i].offset + 6u, &acs->ctrl);
            break;
        }
    }
    /* A Control register of all ones sets its reserved bits 15:13: no
     * device answered, and its RR and CR must not read as "redirects". */
    if (acs->present && acs->ctrl == 0xffff) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "ACS Control at 0x%03x reads all ones (0xffff, reserved "
                    "bits set): the device does not answer, so its ACS is "
                    "unknown", acs->offset + 6u);
        memset(acs, 0, sizeof(*acs));
        return false;
    }
    return true;
}

const char *gp_pcie_type_name(GpPcieType type)
{
    switch (type) {
    case GP_PCIE_TYPE_ENDPOINT:
        return "endpoint";
    case GP_PCIE_TYPE_LEGACY_ENDPOINT:
        return "legacy-endpoint";
    case GP_PCIE_TYPE_ROOT_PORT:
        return "root-port";
    case GP_PCIE_TYPE_UPSTREAM_PORT:
        return "switch-upstream-port";
    case GP_PCIE_TYPE_DOWNSTREAM_PORT:
        return "switch-downstream-port";
    case GP_PCIE_TYPE_PCIE_TO_PCI_BRIDGE:
        return "pcie-to-pci-bridge";
    case GP_PCIE_TYPE_PCI_TO_PCIE_BRIDGE:
        return "pci-to-pcie-bridge";
    case GP_PCIE_TYPE_RC_INTEGRATED:
        return "rc-integrated-endpoint";
    case GP_PCIE_TYPE_RC_EVENT_COLLECTOR:
        return "rc-event-collector";
    case GP_PCIE_TYPE_NONE:
        return "conventional-pci";
    }
    return "unknown";
}

const char *gp_pcie_speed_name(uint8_t gen)
{
    static const char *const names[] = {
        NULL, "2.5", "5", "8", "16", "32", "64",
    };

    return gen < G_N_ELEMENTS(names) && names[gen] ? names[gen] : "unknown";
}

double gp_pcie_lane_gbps(uint8_t gen)
{
    /* GT/s per lane x encoding efficiency / 8 bits; Gen6 FLIT ~ 242/256. */
    static const double gbps[] = {
        0, 2.5 * 0.8 / 8, 5.0 * 0.8 / 8, 8.0 * 128 / 130 / 8,
        16.0 * 128 / 130 / 8, 32.0 * 128 / 130 / 8, 64.0 * 242 / 256 / 8,
    };

    return gen < G_N_ELEMENTS(gbps) ? gbps[gen] : 0;
}

bool gp_pcicfg_ats_info(const GpPciConfig *cfg, GpAtsInfo *ats, GError **errp)
{
    GpPciCap caps[GP_PCICFG_MAX_EXT_CAPS];
    uint16_t ctrl = 0;
    size_t n, i;

    memset(ats, 0, sizeof(*ats));
    if (!gp_pcicfg_walk_ext_caps(cfg, caps, G_N_ELEMENTS(caps), &n, errp)) {
        return false;
    }
    for (i = 0; i < n; i++) {
        if (caps[i].id == GP_PCI_EXT_CAP_ID_ATS) {
            ats->present = true;
            ats->offset = caps[i].offset;
            ats->enabled = gp_pcicfg_read16(cfg, caps[i].offset + 6u, &ctrl) &&
                           (ctrl & GP_ATS_CTRL_ENABLE);
            break;
        }
    }
    return true;
}

char *gp_acs_bits_string(uint16_t bits)
{
    static const char *const names[] = {
        "SV", "TB", "RR", "CR", "UF", "EC", "DT",
    };
    GString *s = g_string_new(NULL);
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(names); i++) {
        if (bits & (1u << i)) {
            g_string_append_printf(s, "%s%s", s->len ? " " : "", names[i]);
        }
    }
    if (!s->len) {
        g_string_append(s, "none");
    }
    return g_string_free(s, FALSE);
}
