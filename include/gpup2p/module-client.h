/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kernel module's client (/dev/gpup2p): its API version and
 * capabilities, and the P2P verdicts (bare metal and a guest's) and IOMMU
 * groups as the kernel's PCI device tree sees them. It maps nothing: peer
 * BAR mappings are VFIO's, made at the VMM's request.
 */
#ifndef GPUP2P_MODULE_CLIENT_H
#define GPUP2P_MODULE_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "gpup2p/error.h"
#include "uapi/gpup2p.h"

bool gp_pci_addr_parse(const char *bdf, uint32_t *addr, GError **errp);
void gp_pci_addr_format(uint32_t addr, char out[16]);

int gp_module_open(GError **errp);
bool gp_module_info(int fd, struct gpup2p_info *info, GError **errp);
bool gp_module_verdict(int fd, struct gpup2p_verdict *v, GError **errp);

#endif /* GPUP2P_MODULE_CLIENT_H */
