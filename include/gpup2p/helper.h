/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * User side of the kernel module (/dev/gpup2p): its API version and
 * capabilities, and the P2P verdicts (bare metal and a guest's) and IOMMU
 * groups as the kernel's PCI device tree sees them. It maps nothing: peer
 * BAR mappings are VFIO's, made at the VMM's request.
 */
#ifndef GPUP2P_HELPER_H
#define GPUP2P_HELPER_H

#include <stdbool.h>
#include <stdint.h>

#include "gpup2p/error.h"
#include "uapi/gpup2p.h"

bool gp_pci_addr_parse(const char *bdf, uint32_t *addr, GError **errp);
void gp_pci_addr_format(uint32_t addr, char out[16]);

int gp_helper_open(GError **errp);
bool gp_helper_info(int fd, struct gpup2p_info *info, GError **errp);
bool gp_helper_verdict(int fd, struct gpup2p_verdict *v, GError **errp);


#endif /* GPUP2P_HELPER_H */
