/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The BAR gate (gpup2p/bar-gate.h) for a libvirt domain, shared by
 * `gpup2p check --domain` and `gpup2p libvirt`, so both give the same
 * verdict with the same reason: the host's facts (with proc/config.gz,
 * which the GLib-only core library does not decompress), the domain's,
 * and the VMM's version where it is stock QEMU.
 */
#include <gio/gio.h>
#include <string.h>

#include "bar-gate-front.h"

/* proc/config.gz (CONFIG_IKCONFIG_PROC) as text; NULL where unreadable. */
static char *read_config_gz(const char *path)
{
    g_autoptr(GFile) file = g_file_new_for_path(path);
    g_autoptr(GFileInputStream) raw = g_file_read(file, NULL, NULL);
    g_autoptr(GZlibDecompressor) z = NULL;
    g_autoptr(GInputStream) in = NULL;
    g_autoptr(GString) text = g_string_new(NULL);
    char buf[65536];
    gssize n;

    if (!raw) {
        return NULL;
    }
    z = g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP);
    in = g_converter_input_stream_new(G_INPUT_STREAM(raw), G_CONVERTER(z));
    while ((n = g_input_stream_read(in, buf, sizeof(buf), NULL, NULL)) > 0) {
        g_string_append_len(text, buf, n);
    }
    return n < 0 ? NULL : g_string_free(g_steal_pointer(&text), FALSE);
}

GpBarGateHost *gp_front_gate_host(const char *root)
{
    GpBarGateHost *host = gp_bar_gate_host_read(root);
    g_autofree char *path = NULL, *text = NULL;

    /* The running kernel's own config wins over boot/config-RELEASE, a
     * file a package may have left for another build of that release. */
    path = g_build_filename(root, "proc", "config.gz", NULL);
    text = read_config_gz(path);
    if (text) {
        gp_bar_gate_host_set_config(host, text, path);
    }
    return host;
}

GpVmmKind gp_front_vmm_of(const char *qemu)
{
    unsigned props;

    if (!qemu || !gp_qemu_vfio_props(qemu, &props, NULL)) {
        return GP_VMM_UNKNOWN;
    }
    return props & GP_QEMU_CLIQUE_AUTO ? GP_VMM_OURS : GP_VMM_STOCK;
}

GPtrArray *gp_front_domain_gate(const GpDomain *d, const GpTopology *topo,
                                GpVmmKind vmm, const char *qemu)
{
    g_autoptr(GpBarGateHost) host = gp_front_gate_host(topo->root);
    GpDomainGate facts;
    GPtrArray *gates;

    /* The emulator is asked only where the caller let it be (@vmm). */
    gp_domain_gate_facts(d, topo->cpu_phys_bits, topo->cpu_vendor,
                         vmm != GP_VMM_UNKNOWN ? qemu : NULL, &facts);
    facts.vm.vmm = vmm;
    if (vmm == GP_VMM_STOCK && qemu &&
        !gp_qemu_version(qemu, &facts.vm.qemu_major, &facts.vm.qemu_minor,
                         NULL)) {
        facts.vm.qemu_major = facts.vm.qemu_minor = 0;
    }
    gates = gp_bar_gate_decide(host, &facts.vm,
                               (const GpBarGateGpu *)facts.gpus->data,
                               facts.gpus->len);
    gp_domain_gate_clear(&facts);
    return gates;
}

GPtrArray *gp_front_gate_lines(const GPtrArray *gates, GpBarGateVerdict v)
{
    GPtrArray *lines = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) reasons = g_ptr_array_new();
    guint i, j;

    for (i = 0; i < gates->len; i++) {
        const GpBarGate *g = g_ptr_array_index(gates, i);
        g_autoptr(GString) line = NULL;

        if (g->verdict != v || g_ptr_array_find_with_equal_func(
                reasons, g->reason, g_str_equal, NULL)) {
            continue;
        }
        g_ptr_array_add(reasons, g->reason);
        line = g_string_new(g->dev->bdf);
        for (j = i + 1; j < gates->len; j++) {
            const GpBarGate *o = g_ptr_array_index(gates, j);

            if (o->verdict == v && !strcmp(o->reason, g->reason)) {
                g_string_append_printf(line, ", %s", o->dev->bdf);
            }
        }
        g_string_append_printf(line, ": %s", g->reason);
        g_ptr_array_add(lines, g_string_free(g_steal_pointer(&line), FALSE));
    }
    return lines;
}

const GpBarGate *gp_front_gate_of(const GPtrArray *gates,
                                  const GpDevice *dev)
{
    guint i;

    for (i = 0; gates && i < gates->len; i++) {
        const GpBarGate *g = g_ptr_array_index(gates, i);

        if (g->dev == dev) {
            return g;
        }
    }
    return NULL;
}
