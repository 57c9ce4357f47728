/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Capture the PCI part of sysfs (plus NUMA nodes, the first CPU's identity
 * and /proc/interrupts) into a directory that gp_topo_read() and
 * `gpup2p check` read like the live system.
 */
#ifndef GPUP2P_SNAPSHOT_H
#define GPUP2P_SNAPSHOT_H

#include "gpup2p/error.h"
#include "gpup2p/topo.h"
#include "uapi/gpup2p.h"

/*
 * Copy from @root ("/" or another capture) into @dest, which must not
 * exist. The capture is built beside @dest and renamed into place, so a
 * failure leaves nothing behind.
 */
gboolean gp_snapshot_write(const char *root, const char *dest, GError **errp);

/*
 * Answers one GPUP2P_VERDICT question (@v's a and b filled in): the kernel
 * module's ioctl, or a stand-in in tests. False and @errp's errno code
 * (GP_ERROR_IO) when it cannot.
 */
typedef bool (*GpKernelAsk)(void *ctx, struct gpup2p_verdict *v,
                            GError **errp);

/*
 * The GP_KERNEL_VERDICTS_FILE text for every ordered pair of @topo's GPUs
 * and NICs, each asked of @ask; @from_p2pdma: the module asks p2pdma
 * (GPUP2P_CAP_P2PDMA). A pair @ask cannot answer is recorded as that
 * pair's unknown, with the error: it never fails the whole record.
 */
char *gp_kernel_verdicts_format(const GpTopology *topo, bool from_p2pdma,
                                GpKernelAsk ask, void *ctx);

/* Remove @path and everything under it; links are removed, not followed. */
void gp_remove_tree(const char *path);

#endif /* GPUP2P_SNAPSHOT_H */
