/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a QEMU binary's vfio-pci device offers for P2P cliques, asked of the
 * binary itself (-device vfio-pci,help): our x-gpu-p2p-clique, upstream's
 * x-nv-gpudirect-clique, both or neither. `check` and `libvirt` share it,
 * so both judge an emulator the same way.
 */
#include <string.h>

#include "cli.h"

bool gp_qemu_vfio_props(const char *qemu, unsigned *props, GError **errp)
{
    const char *argv[] = { qemu, "-device", "vfio-pci,help", NULL };
    g_autofree char *out = NULL;
    int status;

    *props = 0;
    if (!g_spawn_sync(NULL, (char **)argv, NULL,
                      G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL,
                      NULL, NULL, &out, NULL, &status, errp)) {
        g_prefix_error(errp, "%s: ", qemu);
        return false;
    }
    if (!g_spawn_check_wait_status(status, NULL)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_UNSUPPORTED, "%s: '-device "
                    "vfio-pci,help' failed (not a QEMU with VFIO?)", qemu);
        return false;
    }
    if (out && strstr(out, "x-gpu-p2p-clique=")) {
        *props |= GP_QEMU_CLIQUE_AUTO;
    }
    if (out && strstr(out, "x-nv-gpudirect-clique=")) {
        *props |= GP_QEMU_CLIQUE_STOCK;
    }
    return true;
}
