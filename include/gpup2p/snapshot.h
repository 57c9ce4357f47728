/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Capture the PCI part of sysfs (plus NUMA nodes, the first CPU's identity
 * and /proc/interrupts) into a directory that gp_topo_read() and
 * `gpup2p check` read like the live system.
 */
#ifndef GPUP2P_SNAPSHOT_H
#define GPUP2P_SNAPSHOT_H

#include "gpup2p/error.h"

/*
 * Copy from @root ("/" or another capture) into @dest, which must not
 * exist. The capture is built beside @dest and renamed into place, so a
 * failure leaves nothing behind.
 */
gboolean gp_snapshot_write(const char *root, const char *dest, GError **errp);

/* Remove @path and everything under it; links are removed, not followed. */
void gp_remove_tree(const char *path);

#endif /* GPUP2P_SNAPSHOT_H */
