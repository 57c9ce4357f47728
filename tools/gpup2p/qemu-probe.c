/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a QEMU binary's vfio-pci device offers for P2P cliques, asked of the
 * binary itself (-device vfio-pci,help): our x-gpu-p2p-clique, upstream's
 * x-nv-gpudirect-clique, both or neither. `check` and `libvirt` share it,
 * so both judge an emulator the same way.
 */
#include <string.h>

#include "cli.h"
#include "gpup2p/bar-gate.h"

/* @qemu run with @args (NULL-terminated); its stdout into @out, false
 * where it cannot run; @exited_ok: it exited 0. */
static bool qemu_output(const char *qemu, const char *const *args,
                        char **out, bool *exited_ok, GError **errp)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    int status;

    g_ptr_array_add(argv, (gpointer)qemu);
    for (; *args; args++) {
        g_ptr_array_add(argv, (gpointer)*args);
    }
    g_ptr_array_add(argv, NULL);
    if (!g_spawn_sync(NULL, (char **)argv->pdata, NULL,
                      G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL,
                      NULL, NULL, out, NULL, &status, errp)) {
        g_prefix_error(errp, "%s: ", qemu);
        return false;
    }
    *exited_ok = g_spawn_check_wait_status(status, NULL);
    return true;
}

bool gp_qemu_vfio_props(const char *qemu, unsigned *props, GError **errp)
{
    static const char *const args[] = { "-device", "vfio-pci,help", NULL };
    g_autofree char *out = NULL;
    bool ok;

    *props = 0;
    if (!qemu_output(qemu, args, &out, &ok, errp)) {
        return false;
    }
    if (!ok) {
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
    static const char *const args[] = { "-version", NULL };
    const char *key = "QEMU emulator version ";
    g_autofree char *out = NULL;
    const char *v;
    bool ok;

    if (!qemu_output(qemu, args, &out, &ok, errp)) {
        return false;
    }
    v = out && ok ? strstr(out, key) : NULL;
    /* "10.0.2 (Debian ...)": the same X.Y a kernel release starts with. */
    if (v && gp_release_version(v + strlen(key), major, minor)) {
        return true;
    }
    g_set_error(errp, GP_ERROR, GP_ERROR_UNSUPPORTED, "%s: '-version' does "
                "not say '%sX.Y'", qemu, key);
    return false;
}
