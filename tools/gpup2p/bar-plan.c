/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Large BARs in a VM: address bits and the start cost of mapping them. */
#include <string.h>

#include "bar-plan.h"

bool gp_libvirt_unit_scale(const char *unit, guint64 default_scale,
                           guint64 *scale)
{
    static const struct { const char *name; guint64 scale; } units[] = {
        { "b", 1 }, { "bytes", 1 }, { "KB", 1000 }, { "k", 1024 },
        { "KiB", 1024 }, { "MB", 1000000 }, { "M", 1 << 20 },
        { "MiB", 1 << 20 }, { "GB", 1000000000 }, { "G", 1 << 30 },
        { "GiB", 1 << 30 }, { "TB", 1000000000000ULL }, { "T", 1ULL << 40 },
        { "TiB", 1ULL << 40 },
    };
    size_t i;

    if (!unit) {
        *scale = default_scale;
        return true;
    }
    for (i = 0; i < G_N_ELEMENTS(units); i++) {
        if (!strcmp(unit, units[i].name)) {
            *scale = units[i].scale;
            return true;
        }
    }
    return false;
}

unsigned gp_log2_ceil(guint64 v)
{
    unsigned bits = 0;

    while (bits < 64 && (1ULL << bits) < v) {
        bits++;
    }
    return bits;
}

unsigned gp_guest_bits_for_bars(const GpPcMachine *m, guint64 window,
                                guint64 hole, GpPcWindow *placed)
{
    GpPcMachine sized = *m;
    unsigned eighth = gp_log2_ceil(window) + 3;

    /* The hole as the plan sizes it, at least the BARs' window. */
    sized.hole64_set = true;
    sized.hole64_size = MAX(window, hole);
    gp_pc_window(&sized, placed);
    /* QEMU's own check: phys-bits must reach the hole's last byte. */
    return MAX(eighth, gp_log2_ceil(placed->last_used + 1));
}

bool gp_guest_width_may_be_hosts(const GpPcMachine *m, const char *how)
{
    g_auto(GpPcWindow) w = { 0 };

    if (m->no_long_mode || !strcmp(how, GP_MAXPHYS_LIMIT_HOW)) {
        return false;
    }
    gp_pc_window(m, &w);
    return w.layout_assumed;
}

unsigned gp_guest_phys_bits(const char *cpu_mode, const char *maxphys_mode,
                            unsigned maxphys_bits, unsigned maxphys_limit,
                            unsigned host_bits, const char **how)
{
    unsigned bits;

    if (!g_strcmp0(maxphys_mode, "emulate") && maxphys_bits) {
        *how = "<maxphysaddr mode='emulate'>";
        return maxphys_bits;
    }
    if (!g_strcmp0(maxphys_mode, "passthrough") ||
        !g_strcmp0(cpu_mode, "host-passthrough") ||
        !g_strcmp0(cpu_mode, "maximum")) {
        /* QEMU's host and max CPU models take the host's width. */
        *how = maxphys_mode ? "<maxphysaddr mode='passthrough'>" :
               "the host CPU model";
        bits = host_bits;
        if (maxphys_limit && maxphys_limit < bits) {
            bits = maxphys_limit;
            *how = GP_MAXPHYS_LIMIT_HOW;
        }
        return bits;
    }
    *how = GP_QEMU_DEFAULT_PHYS_BITS_HOW;
    return GP_QEMU_DEFAULT_PHYS_BITS;
}

/*
 * The kernels docs/results.md has a figure for. Linux 6.15 (0fd06844de5d,
 * "vfio/type1: Use mapping page mask for pfnmaps") maps a huge pfnmap
 * entry at once, so every 7.x release maps as 7.3 did; Debian's 6.12 lacks
 * it. 6.13-6.19 were not measured: no figure.
 */
static const struct {
    const char *prefix;
    bool per_gib;
    double seconds;         /* per GiB, or for any size */
    const char *figure, *why;
} start_costs[] = {
    { "6.12.", true, 0.35, "about 0.35 s per GiB of BAR (6.12 aligned map: "
      "0.356 s for 1 GiB, 22.41 s for 64 GiB)",
      "Linux 6.12's type1 pins a BAR mapping 4 KiB at a time" },
    { "7.", false, 0.0004, "0.4 ms for 64 GiB of BAR (7.3 aligned map), at "
      "the timer's noise",
      "Linux 6.15 and later map an aligned huge pfnmap (QEMU 9.2+ aligns "
      "BAR mmaps) at once" },
};

#define START_COST_SOURCE "docs/results.md, \"Linux 6.12 against 7.3: " \
    "huge pfnmap mappings\""

void gp_start_cost_predict(const char *release, guint64 bar_bytes,
                           bool iommufd, GpStartCost *out)
{
    size_t i;

    memset(out, 0, sizeof(*out));
    if (iommufd) {
        /* One BAR on one kernel and one QEMU, at the bench's noise: a
         * figure, not a prediction for other GPUs, QEMUs or kernels. */
        out->why = "the iommufd backend, whose BAR mapping (as dma-bufs, "
                   "Linux 6.19 and later with QEMU 11) was measured for "
                   "one BAR only (Linux 7.3, QEMU 11.1.3: within the "
                   "bench's noise, about 16 ms or less; docs/results.md, "
                   "\"VM start with large BARs: type1 and iommufd\"), so "
                   "no prediction is made";
        return;
    }
    for (i = 0; release && i < G_N_ELEMENTS(start_costs); i++) {
        if (!g_str_has_prefix(release, start_costs[i].prefix)) {
            continue;
        }
        out->known = true;
        out->per_gib = start_costs[i].per_gib;
        out->seconds = start_costs[i].per_gib ?
            start_costs[i].seconds * ((double)bar_bytes / (1ULL << 30)) :
            start_costs[i].seconds;
        out->figure = start_costs[i].figure;
        out->source = START_COST_SOURCE;
        out->why = start_costs[i].why;
        return;
    }
}
