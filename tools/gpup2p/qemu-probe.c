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

bool gp_qemu_version(const char *qemu, unsigned *major, unsigned *minor,
                     GError **errp)
{
    const char *argv[] = { qemu, "-version", NULL };
    const char *key = "QEMU emulator version ";
    g_autofree char *out = NULL;
    const char *v;
    char *end;
    guint64 a, b;
    int status;

    if (!g_spawn_sync(NULL, (char **)argv, NULL,
                      G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL,
                      NULL, NULL, &out, NULL, &status, errp)) {
        g_prefix_error(errp, "%s: ", qemu);
        return false;
    }
    v = out && g_spawn_check_wait_status(status, NULL) ? strstr(out, key) :
        NULL;
    if (v) {
        v += strlen(key);
        a = g_ascii_strtoull(v, &end, 10);
        if (end != v && *end == '.' && g_ascii_isdigit(end[1])) {
            b = g_ascii_strtoull(end + 1, NULL, 10);
            if (a < 1000 && b < 1000) {
                *major = (unsigned)a;
                *minor = (unsigned)b;
                return true;
            }
        }
    }
    g_set_error(errp, GP_ERROR, GP_ERROR_UNSUPPORTED, "%s: '-version' does "
                "not say '%sX.Y'", qemu, key);
    return false;
}
