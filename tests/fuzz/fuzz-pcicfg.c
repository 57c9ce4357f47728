/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the config-space walker and the P2P capability codec
 * over arbitrary config bytes (what a device, a capture or a VMM may hand
 * the library).
 */
#include <stdint.h>
#include <string.h>

#include "gpup2p/p2pcap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void drop(GError **err)
{
    if (*err) {
        /* Messages are formatted from the bytes: touch them. */
        g_assert(strlen((*err)->message) > 0);
        g_clear_error(err);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static GpPciConfig cfg;
    GpPciCapList caps;
    GpPciCap ext[GP_PCICFG_MAX_EXT_CAPS];
    GpPcieInfo pcie;
    GpAcsInfo acs;
    GpP2pCap cap;
    GError *err = NULL;
    uint16_t offset;
    bool had_cap;
    size_t n, i;

    gp_pcicfg_init(&cfg, data, MIN(size, (size_t)GP_PCICFG_EXT_SIZE));
    if (gp_pcicfg_walk_caps(&cfg, &caps, &err)) {
        gp_pcicfg_pcie_info(&cfg, &caps, &pcie);
        for (i = 0; i < caps.count; i++) {
            gp_pcicfg_std_cap_length(&cfg, caps.caps[i].offset);
        }
    }
    drop(&err);
    gp_pcicfg_walk_ext_caps(&cfg, ext, G_N_ELEMENTS(ext), &n, &err);
    drop(&err);
    gp_pcicfg_acs_info(&cfg, &acs, &err);
    drop(&err);
    had_cap = gp_p2pcap_find(&cfg, &cap, &err);
    drop(&err);
    /* Where the codec places the capability, it must read back. */
    if (!had_cap && gp_p2pcap_insert(&cfg, 5, &offset, &err)) {
        g_assert(gp_p2pcap_find(&cfg, &cap, &err));
        g_assert(cap.clique == 5 && cap.offset == offset);
    }
    drop(&err);
    return 0;
}
