/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `gpup2p libvirt --mirror`: the host's hierarchy and NUMA in a domain. */
#ifndef GPUP2P_LIBVIRT_MIRROR_H
#define GPUP2P_LIBVIRT_MIRROR_H

#include <libxml/tree.h>

#include "gpup2p/mirror.h"

/*
 * Give every PCI <hostdev> of @doc (a <domain>) its place in the mirrored
 * hierarchy: replace the controllers an earlier run added (aliases
 * ua-gpup2p-hb/rp/up/dp), add the expander buses, ports and switches,
 * address the hostdevs on them, and set <cpu><numa> cells from <vcpu> and
 * <memory>. With @nccl_topo, write the guest's NCCL file there and pass
 * it by <sysinfo type='fwcfg'>. @name names the input in errors.
 */
bool gp_libvirt_mirror(xmlDocPtr doc, const GpTopology *topo,
                       const char *nccl_topo, const char *name,
                       GError **errp);

#endif /* GPUP2P_LIBVIRT_MIRROR_H */
