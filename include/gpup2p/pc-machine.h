/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Where QEMU's PC machines (q35 and i440fx) declare the guest's 64-bit PCI
 * window before firmware runs: QEMU's pc_pci_hole64_start() and the
 * pci-hole64-end property, from the machine type, the RAM split below
 * and above 4 GiB, the hot-plug memory region and AMD's relocation of RAM
 * above 1 TiB. As QEMU 10.0 computes them, for machine types 2.11 and
 * later.
 */
#ifndef GPUP2P_PC_MACHINE_H
#define GPUP2P_PC_MACHINE_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "gpup2p/topo.h"

/* pci-hole64-size when none is set: q35's 32 GiB, i440fx's 2 GiB. */
#define GP_Q35_DEFAULT_HOLE64 (32ULL << 30)
#define GP_I440FX_DEFAULT_HOLE64 (2ULL << 30)

/* AMD's HyperTransport hole, below 1 TiB, which QEMU moves RAM above. */
#define GP_AMD_HT_START 0xfd00000000ULL
#define GP_AMD_ABOVE_1TB (1ULL << 40)

typedef struct GpPcMachine {
    const char *type;           /* e.g. "pc-q35-10.0", "q35", "pc" */
    uint64_t ram;               /* -m size: boot RAM, no memory devices */
    uint64_t maxram;            /* -m maxmem; 0: no hot-plug region */
    unsigned slots;             /* -m slots */
    bool hole64_set;            /* pci-hole64-size given (0 is a size) */
    uint64_t hole64_size;
    GpCpuVendor vendor;         /* the vCPU's, as QEMU sets it */
    const char *vendor_how;     /* how the vendor is known, or NULL */
    bool no_long_mode;          /* a 32-bit vCPU (no CPUID LM) */
    /* The QEMU's version, naming what "q35" and "pc" alias; 0: unknown */
    unsigned qemu_major, qemu_minor;
    /* NULL, or what else moves the window (SGX EPC, CXL, ...) */
    const char *not_modelled;
} GpPcMachine;

/*
 * @m's pci-hole64-size: as set, else its chipset's default (q35's for
 * a machine type that is neither).
 */
uint64_t gp_pc_hole64_size(const GpPcMachine *m);

/*
 * The window QEMU declares: [start, end], end inclusive (end < start: an
 * empty window, a pci-hole64-size of 0).
 */
typedef struct GpPcWindow {
    uint64_t start, end;
    /* QEMU's highest address in use, the one phys-bits must reach */
    uint64_t last_used;
    bool exact;
    bool bounds;                /* not exact, but the window lies within */
    /*
     * bounds that rest on upstream's layout and default hole, which a
     * distribution's machine type need not keep: its own is not read
     */
    bool layout_assumed;
    char *why;                  /* !exact: why it is not known exactly */
    char *how;                  /* exact: what it rests on, for texts */
} GpPcWindow;

/*
 * @m's 64-bit PCI window before firmware runs, as QEMU 10.0 declares it
 * (pci-hole64-start, pci-hole64-end - 1). Not exact where something it
 * depends on is not known or not modelled; why says what, and:
 * - bounds, where a distribution's q35 or i440fx type (by upstream's
 *   layout and default hole), one before 2.11, or whether QEMU moves RAM
 *   above 1 TiB (the vendor, an alias's version) leaves it open: from
 *   4 GiB (or the start without the move) to the end of the highest
 *   window QEMU could declare (all RAM above 4 GiB, moved above 1 TiB
 *   unless the vCPU is known not to be AMD's); a distribution's type's
 *   bounds are also layout_assumed;
 * - else (another chipset, SGX EPC, CXL, what <qemu:commandline> sets)
 *   that highest window as an estimate.
 * Cleared with gp_pc_window_clear().
 */
void gp_pc_window(const GpPcMachine *m, GpPcWindow *out);
void gp_pc_window_clear(GpPcWindow *w);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(GpPcWindow, gp_pc_window_clear)

/*
 * The vCPU's vendor as QEMU sets it: with KVM, every CPU model takes the
 * host's vendor (host_cpu_instance_init()), unless the domain names one;
 * under TCG, the named model's (qemu64, with none; "maximum": max, AMD's
 * under TCG). @how says which; UNKNOWN where neither tells (host-model
 * under TCG: libvirt picks the model at start).
 */
GpCpuVendor gp_pc_vcpu_vendor(bool kvm, const char *cpu_mode,
                              const char *cpu_model, const char *vendor,
                              GpCpuVendor host, const char **how);

/* Whether QEMU 10.0's CPU model @model lacks long mode (a 32-bit one). */
bool gp_pc_cpu_model_32bit(const char *model);

#endif
