/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Output files an operator names, written safely (lib/output.c). */
#ifndef GPUP2P_OUTPUT_H
#define GPUP2P_OUTPUT_H

#include <stdbool.h>

#include "gpup2p/error.h"

/*
 * Replace the file @path with @len bytes of @data (-1: a string), at once.
 * Refuses anything but a regular file or a path that does not exist yet
 * (a device node, FIFO, socket or directory is named in the error and
 * left alone); writes through a symbolic link to its target, except
 * where fs.protected_symlinks' rule forbids following it (a link in a
 * sticky world-writable directory owned by neither that directory's
 * owner nor the caller: refused, GP_ERROR_INVALID); an existing
 * file keeps its owner, group, mode and ACL, a new one gets @mode. On
 * failure the old contents stay and no temporary file is left.
 */
bool gp_output_write(const char *path, const char *data, gssize len,
                     unsigned mode, GError **errp);

#endif
