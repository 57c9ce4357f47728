/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host's NCCL topology for a mirrored guest, and the guest's reader of
 * the fw_cfg item that carries it.
 */
#include <errno.h>
#include <string.h>

#include "gpup2p/output.h"
#include "gpup2p/mirror.h"

static void indent(GString *s, unsigned depth)
{
    g_string_append_printf(s, "%*s", (int)depth * 2, "");
}

/* A <pci> element with the host device's identity at a guest bus id. The
 * link is the host's: NCCL weighs paths by it, and the guest's emulated
 * switch ports would report 2.5 GT/s x1. */
static void pci_open(GString *s, unsigned depth, const char *guest_bdf,
                     const GpDevice *dev, bool has_children)
{
    g_autofree char *attrs = g_markup_printf_escaped(
        "busid=\"%s\" class=\"0x%06x\" vendor=\"0x%04x\" device=\"0x%04x\" "
        "subsystem_vendor=\"0x%04x\" subsystem_device=\"0x%04x\"",
        guest_bdf, dev->class_code, dev->vendor, dev->device,
        dev->subsystem_vendor, dev->subsystem_device);

    indent(s, depth);
    g_string_append_printf(s, "<pci %s", attrs);
    /* "Unknown" is what Linux writes where the link has no speed. */
    if (dev->max_link_speed && *dev->max_link_speed &&
        strcmp(dev->max_link_speed, "Unknown") != 0) {
        g_autofree char *v = g_markup_escape_text(dev->max_link_speed, -1);

        g_string_append_printf(s, " link_speed=\"%s\"", v);
    }
    if (dev->max_link_width > 0) {
        g_string_append_printf(s, " link_width=\"%d\"", dev->max_link_width);
    }
    g_string_append(s, has_children ? ">\n" : "/>\n");
}

/*
 * NCCL records a switch by its upstream port and skips downstream and
 * root ports (xml.cc walks two path components at a time): so do we.
 */
static void emit(GString *s, const GpMirrorNode *n, unsigned depth)
{
    guint i;

    if (n->kind == GP_MIRROR_ENDPOINT) {
        pci_open(s, depth, n->guest_bdf, n->host, false);
        return;
    }
    if (n->kind == GP_MIRROR_SWITCH_UP) {
        pci_open(s, depth, n->guest_bdf, n->host, true);
        depth++;
    }
    for (i = 0; i < n->children->len; i++) {
        emit(s, g_ptr_array_index(n->children, i), depth);
    }
    if (n->kind == GP_MIRROR_SWITCH_UP) {
        indent(s, depth - 1);
        g_string_append(s, "</pci>\n");
    }
}

char *gp_mirror_nccl_topo(const GpMirror *m)
{
    GString *s = g_string_new("<system version=\"1\">\n");
    int node;
    guint i;

    /* -1: expanders without a node, which NCCL files under numaid -1. */
    for (node = -1; node < (int)gp_mirror_cells(m); node++) {
        bool open = false;

        for (i = 0; i < m->expanders->len; i++) {
            const GpMirrorNode *e = g_ptr_array_index(m->expanders, i);

            if (e->guest_node != node) {
                continue;
            }
            if (!open) {
                /* Affinity, vendor and model come from the guest itself:
                 * NCCL fills what the file leaves out. */
                g_string_append_printf(s, "  <cpu numaid=\"%d\">\n", node);
                open = true;
            }
            emit(s, e, 2);
        }
        if (open) {
            g_string_append(s, "  </cpu>\n");
        }
    }
    g_string_append(s, "</system>\n");
    return g_string_free(s, FALSE);
}

char *gp_fwcfg_read(const char *root, const char *name, gsize *len,
                    GError **errp)
{
    g_autofree char *path = g_build_filename(root, "sys", "firmware",
                                             "qemu_fw_cfg", "by_name", name,
                                             "raw", NULL);
    char *data = NULL;

    if (!g_file_get_contents(path, &data, len, errp)) {
        return NULL;
    }
    return data;
}

bool gp_fwcfg_copy(const char *root, const char *name, const char *dest,
                   bool *found, GError **errp)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *data = NULL;
    gsize len = 0;

    *found = false;
    data = gp_fwcfg_read(root, name, &len, &err);
    if (!data) {
        if (g_error_matches(err, G_FILE_ERROR, G_FILE_ERROR_NOENT)) {
            return true;
        }
        g_propagate_error(errp, g_steal_pointer(&err));
        return false;
    }
    *found = true;
    return gp_output_write(dest, data, (gssize)len, 0644, errp);
}
