/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Helpers shared by the sysfs reader and the snapshot writer. */
#ifndef GPUP2P_SYSFS_INTERNAL_H
#define GPUP2P_SYSFS_INTERNAL_H

#include <glib.h>

#include "gpup2p/pcicfg.h"

/* Link text of @path, also when a capture stored the link as a file. */
char *gp_sysfs_read_link_text(const char *path);
/* Resolve @target found in @dir (both relative to sys) without the disk. */
char *gp_sysfs_resolve(const char *dir, const char *target);

/* Of a config file, only the bytes the capability walks use. */
bool gp_sysfs_read_config(const char *path, GpPciConfig *cfg, GError **errp);

#endif
