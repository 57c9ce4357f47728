/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Large BARs in a VM: how many guest physical address bits a 64-bit BAR
 * window needs, OVMF's aperture, and what mapping the BARs costs a VM's
 * start on a given host kernel. Pure functions over numbers, shared by
 * `gpup2p libvirt` (which writes the settings) and `gpup2p check
 * --domain` (which judges them), so the two never disagree.
 */
#ifndef GPUP2P_BAR_PLAN_H
#define GPUP2P_BAR_PLAN_H

#include <glib.h>
#include <stdbool.h>

#include "gpup2p/pc-machine.h"

/* QEMU's default guest physical address width for named CPU models. */
#define GP_QEMU_DEFAULT_PHYS_BITS 40
/* OVMF's fixed 64-bit aperture when it cannot size it dynamically. */
#define GP_OVMF_FIXED_MMIO64 (32ULL << 30)

/*
 * The bytes one @unit of a libvirt size stands for (libvirt's units:
 * "b", "KiB", "MB", "G", ...; NULL: @default_scale); false for a unit
 * libvirt does not know.
 */
bool gp_libvirt_unit_scale(const char *unit, guint64 default_scale,
                           guint64 *scale);

/* The smallest n with 2^n >= @v. */
unsigned gp_log2_ceil(guint64 v);

/*
 * The guest physical address bits VM @m needs for a 64-bit BAR window of
 * @window bytes (the BARs packed with alignment) inside a pci-hole64 of
 * @hole bytes (0: as large as the window). Two rules, the larger wins:
 * OVMF sizes its dynamic aperture to an eighth of the address space
 * (log2(window) + 3 bits), and QEMU refuses to start where the hole, as
 * it places it (gp_pc_window(), returned in @placed, cleared by the
 * caller), ends past the address width ("phys-bits too low").
 */
unsigned gp_guest_bits_for_bars(const GpPcMachine *m, guint64 window,
                                guint64 hole, GpPcWindow *placed);

/*
 * The guest's physical address width as QEMU will set it, from the
 * domain's <cpu mode> (@cpu_mode) and <maxphysaddr mode bits limit>
 * (NULL, 0: absent): emulate's bits; the host's (@host_bits, 0 unknown)
 * for passthrough or the host's CPU model (host-passthrough, maximum),
 * capped by limit; else QEMU's default for named models. @how says which.
 * `check --domain` and `gpup2p libvirt` (its BAR gate) read it so.
 */
/* @how where the width is QEMU's default for named CPU models. */
#define GP_QEMU_DEFAULT_PHYS_BITS_HOW "QEMU's default for named CPU models"
/* @how where libvirt caps the host's width (host-phys-bits-limit). */
#define GP_MAXPHYS_LIMIT_HOW "<maxphysaddr limit=...>"

unsigned gp_guest_phys_bits(const char *cpu_mode, const char *maxphys_mode,
                            unsigned maxphys_bits, unsigned maxphys_limit,
                            unsigned host_bits, const char **how);

/*
 * Whether the vCPU of @m may have the host's width whatever @how (from
 * gp_guest_phys_bits()) says: a distribution's machine type may default
 * to host-phys-bits, which wins over phys-bits (Red Hat's types, Ubuntu's
 * -hpb ones); never under libvirt's limit, nor for a 32-bit vCPU.
 */
bool gp_guest_width_may_be_hosts(const GpPcMachine *m, const char *how);

/* What mapping a VM's BARs through its VFIO backend costs its start. */
typedef struct {
    bool known;             /* false: no figure for this kernel or backend */
    bool per_gib;           /* grows with the BARs: seconds = GiB * figure */
    double seconds;         /* the prediction for the BARs given */
    const char *figure;     /* the measured figure, in words */
    const char *source;     /* where it is: docs/results.md and section */
    const char *why;        /* the kernel behaviour behind it, or why no
                             * figure applies (NULL: no figure for the
                             * kernel) */
} GpStartCost;

/*
 * The start cost of mapping @bar_bytes of BARs on a host running Linux
 * @release (uname -r; NULL: not known), from the figures measured in
 * docs/results.md. type1: Linux 6.12 maps a BAR 4 KiB at a time (about
 * 0.35 s per GiB), 7.x maps aligned huge pfnmaps at once (0.4 ms for
 * 64 GiB, measured on 7.3). Any other release: not known, no guess.
 * With @iommufd (QEMU 11 maps each BAR into the IOAS as one dma-buf,
 * Linux 6.19 and later): not known, @why naming the one measurement
 * there is (one BAR, 7.3, QEMU 11.1.3), which predicts nothing else.
 */
void gp_start_cost_predict(const char *release, guint64 bar_bytes,
                           bool iommufd, GpStartCost *out);

#endif /* GPUP2P_BAR_PLAN_H */
