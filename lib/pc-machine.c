/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU's PC machines' 64-bit PCI window, as QEMU 10.0 places it before
 * firmware runs (hw/i386/pc.c, pc_q35.c, pc_piix.c, pci-host/q35.c).
 */
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gpup2p/pc-machine.h"

#define GIB (1ULL << 30)

typedef enum { CHIPSET_NONE, CHIPSET_Q35, CHIPSET_I440FX } Chipset;

/* A machine type's chipset and version. */
typedef struct {
    Chipset chipset;
    bool upstream;          /* upstream QEMU's pc-q35-X.Y, an alias, ... */
    bool versioned;         /* major.minor known (an alias: the QEMU's) */
    unsigned major, minor;
} MachineType;

typedef enum { NO, YES, UNSURE } Tri;

static uint64_t round_up_gib(uint64_t v)
{
    return (v + GIB - 1) & ~(GIB - 1);
}

/*
 * "q35", "pc-q35-X.Y[.Z]", "pc", "pc-i440fx-X.Y[.Z]" (and our QEMU's q35
 * types, "-gpup2p" after them) are upstream's, an alias being the
 * running QEMU's latest (@m's qemu_major.qemu_minor where known); any
 * other name holding "q35" or "i440fx" is a distribution's, on that
 * chipset; anything else, NONE.
 */
static MachineType parse_type(const GpPcMachine *m)
{
    static const struct {
        const char *prefix;
        Chipset chipset;
    } names[] = {
        { "pc-q35-", CHIPSET_Q35 },
        { "pc-i440fx-", CHIPSET_I440FX },
    };
    MachineType t = { CHIPSET_NONE, false, false, 0, 0 };
    g_autofree char *base = NULL;
    const char *type = m->type;
    unsigned i;

    if (!type) {
        return t;
    }
    /*
     * Our QEMU's pc-q35-X.Y-gpup2p (alias q35-gpup2p) is pc-q35-X.Y with
     * its vfio-pci defaults: the same memory map.
     */
    if (g_str_has_suffix(type, "-gpup2p")) {
        base = g_strndup(type, strlen(type) - strlen("-gpup2p"));
        type = base;
    }
    if (!strcmp(type, "q35") || !strcmp(type, "pc")) {
        t.chipset = type[0] == 'q' ? CHIPSET_Q35 : CHIPSET_I440FX;
        t.upstream = true;
        t.versioned = m->qemu_major != 0;
        t.major = m->qemu_major;
        t.minor = m->qemu_minor;
        return t;
    }
    for (i = 0; i < G_N_ELEMENTS(names); i++) {
        const char *v = type + strlen(names[i].prefix);
        unsigned micro;
        char end;

        if (g_str_has_prefix(type, names[i].prefix) &&
            v[0] >= '0' && v[0] <= '9' &&
            (sscanf(v, "%u.%u%c", &t.major, &t.minor, &end) == 2 ||
             sscanf(v, "%u.%u.%u%c", &t.major, &t.minor, &micro,
                    &end) == 3)) {
            t.chipset = names[i].chipset;
            t.upstream = t.versioned = true;
            return t;
        }
    }
    t.major = t.minor = 0;
    t.chipset = strstr(type, "q35") ? CHIPSET_Q35 :
                strstr(type, "i440fx") ? CHIPSET_I440FX : CHIPSET_NONE;
    return t;
}

/* Whether @t is @major.@minor or later. */
static Tri at_least(const MachineType *t, unsigned major, unsigned minor)
{
    if (!t->versioned) {
        return UNSURE;
    }
    return t->major > major || (t->major == major && t->minor >= minor) ?
           YES : NO;
}

/*
 * pc_pci_hole64_start() with RAM above 4 GiB at @above_start: after that
 * RAM, or after the hot-plug region where there is one (1 GiB a slot for
 * alignment), 1 GiB aligned.
 */
static uint64_t hole64_start(const GpPcMachine *m, uint64_t above_start,
                             uint64_t above)
{
    uint64_t end = above_start + above;

    if (m->maxram > m->ram) {
        end = round_up_gib(end) + (m->maxram - m->ram) + GIB * m->slots;
    }
    return round_up_gib(end);
}

static void set_window(GpPcWindow *out, uint64_t start, uint64_t size)
{
    out->start = start;
    /* q35's and i440fx's pci-hole64-end: rounded up to 1 GiB. */
    out->end = round_up_gib(start + size) - 1;
    out->last_used = start + size - 1;
}

uint64_t gp_pc_hole64_size(const GpPcMachine *m)
{
    if (m->hole64_set) {
        return m->hole64_size;
    }
    return parse_type(m).chipset == CHIPSET_I440FX ?
           GP_I440FX_DEFAULT_HOLE64 : GP_Q35_DEFAULT_HOLE64;
}

/*
 * pc_memory_init(): QEMU moves RAM above 4 GiB to 1 TiB for an AMD vCPU,
 * on machine types from 7.1, where pc_max_used_gpa() reaches AMD's
 * HyperTransport hole: with long mode, the window's end (from @start,
 * before the move); without, from 8.2, the end of RAM or of the
 * hot-plug region, and before, the top of its phys-bits (32 or 36, not
 * settable: never there). @why: why UNSURE.
 */
static Tri amd_move(const GpPcMachine *m, const MachineType *t,
                    uint64_t above, uint64_t start, uint64_t size,
                    const char **why)
{
    Tri enforce = at_least(t, 7, 1), v82 = at_least(t, 8, 2);
    uint64_t used;

    if (enforce == NO || m->vendor == GP_CPU_VENDOR_INTEL ||
        m->vendor == GP_CPU_VENDOR_OTHER ||
        (m->no_long_mode && v82 == NO)) {
        return NO;
    }
    used = !m->no_long_mode ? start + size - 1 :
           m->maxram > m->ram ? hole64_start(m, 4 * GIB, above) - 1 :
           4 * GIB + above - 1;
    if (used < GP_AMD_HT_START) {
        return NO;
    }
    if (m->vendor == GP_CPU_VENDOR_UNKNOWN) {
        *why = "it reaches AMD's HyperTransport hole at 0xfd00000000, "
               "where QEMU moves an AMD vCPU's RAM above 1 TiB, and the "
               "vCPU's vendor is not known";
        return UNSURE;
    }
    if (enforce == UNSURE || (m->no_long_mode && v82 == UNSURE)) {
        *why = "it reaches AMD's HyperTransport hole at 0xfd00000000, "
               "and whether QEMU moves the AMD vCPU's RAM above 1 TiB "
               "depends on the version the machine type alias names";
        return UNSURE;
    }
    return YES;
}

/*
 * The window as if all RAM sat above 4 GiB (no split puts more there),
 * moved above 1 TiB unless the vCPU is known not to be AMD's.
 */
static void highest_window(const GpPcMachine *m, uint64_t size,
                           GpPcWindow *out)
{
    uint64_t start = hole64_start(m, 4 * GIB, m->ram);

    if (start + size - 1 >= GP_AMD_HT_START &&
        m->vendor != GP_CPU_VENDOR_INTEL &&
        m->vendor != GP_CPU_VENDOR_OTHER) {
        start = hole64_start(m, GP_AMD_ABOVE_1TB, m->ram);
    }
    set_window(out, start, size);
}

static void place_window(const GpPcMachine *m, GpPcWindow *out)
{
    MachineType t = parse_type(m);
    uint64_t lowmem, above, size, start, moved;
    const char *unsure = NULL;
    Tri move;

    memset(out, 0, sizeof(*out));
    size = gp_pc_hole64_size(m);
    if (m->not_modelled || t.chipset == CHIPSET_NONE) {
        highest_window(m, size, out);
        out->why = m->not_modelled ? g_strdup(m->not_modelled) :
                   g_strdup_printf("machine type '%s' is neither q35 nor "
                                   "i440fx", m->type ? m->type : "(none)");
        return;
    }
    if (!t.upstream || at_least(&t, 2, 11) == NO) {
        /* From 4 GiB to the end of the highest window. */
        highest_window(m, size, out);
        out->start = 4 * GIB;
        out->bounds = true;
        out->layout_assumed = !t.upstream;
        out->why = !t.upstream ?
                   g_strdup_printf("machine type '%s' is a distribution's "
                                   "(bounds by upstream QEMU's layout and "
                                   "the chipset's default hole)", m->type) :
                   g_strdup_printf("machine type '%s' is older than 2.11, "
                                   "which declares no 64-bit window before "
                                   "firmware (x-pci-hole64-fix off)",
                                   m->type);
        return;
    }
    if (t.chipset == CHIPSET_Q35) {
        /* Below 4 GiB: all RAM under 2816 MiB, else 2 GiB. */
        lowmem = m->ram >= 0xb0000000ULL ? 2 * GIB : 0xb0000000ULL;
    } else {
        /* i440fx, gigabyte-aligned: 3 GiB once RAM reaches 3.5 GiB. */
        lowmem = m->ram >= 0xe0000000ULL ? 0xc0000000ULL : 0xe0000000ULL;
    }
    above = m->ram >= lowmem ? m->ram - lowmem : 0;
    start = hole64_start(m, 4 * GIB, above);
    moved = hole64_start(m, GP_AMD_ABOVE_1TB, above);
    move = amd_move(m, &t, above, start, size, &unsure);
    if (move == UNSURE) {
        set_window(out, moved, size);
        out->start = start;
        out->bounds = true;
        out->why = g_strdup(unsure);
        return;
    }
    set_window(out, move == YES ? moved : start, size);
    if (m->no_long_mode) {
        /*
         * A 32-bit vCPU's highest address is its RAM's, not the hole's
         * (pc_max_used_gpa() from 8.2; before, QEMU checks only the top
         * of its phys-bits).
         */
        out->last_used = m->maxram > m->ram ?
                         hole64_start(m, move == YES ? GP_AMD_ABOVE_1TB :
                                      4 * GIB, above) - 1 :
                         (move == YES ? GP_AMD_ABOVE_1TB : 4 * GIB) +
                         above - 1;
    }
    out->exact = true;
    out->how = g_strdup_printf("as QEMU places it for %s with %" PRIu64
                               " MiB of RAM%s%s", m->type, m->ram >> 20,
                               m->maxram > m->ram ?
                               " and a hot-plug region" : "",
                               move == YES ? ", RAM above 4 GiB "
                               "moved above 1 TiB for an AMD vCPU" : "");
}

void gp_pc_window(const GpPcMachine *m, GpPcWindow *out)
{
    place_window(m, out);
    if (!gp_pc_hole64_size(m)) {
        /* A hole of 0 declares no window, whatever bounds its start. */
        out->end = out->start - 1;
    }
}

void gp_pc_window_clear(GpPcWindow *w)
{
    g_free(w->why);
    g_free(w->how);
    memset(w, 0, sizeof(*w));
}

GpCpuVendor gp_pc_vcpu_vendor(bool kvm, const char *cpu_mode,
                              const char *cpu_model, const char *vendor,
                              GpCpuVendor host, const char **how)
{
    /*
     * QEMU 10.0's CPU models by vendor (their versions and aliases share
     * these prefixes).
     */
    static const char *const amd[] = {
        "EPYC", "Opteron_G", "athlon", "phenom", "qemu64",
    };
    static const char *const intel[] = {
        "486", "Broadwell", "Cascadelake", "ClearwaterForest", "Conroe",
        "Cooperlake", "Denverton", "GraniteRapids", "Haswell", "Icelake",
        "IvyBridge", "KnightsMill", "Nehalem", "Penryn", "SandyBridge",
        "SapphireRapids", "SierraForest", "Skylake", "Snowridge",
        "Westmere", "core2duo", "coreduo", "kvm32", "kvm64", "n270",
        "pentium", "qemu32",
    };
    unsigned i;

    if (vendor) {
        *how = "<model vendor_id=...>";
        return !strcmp(vendor, "AuthenticAMD") ? GP_CPU_VENDOR_AMD :
               !strcmp(vendor, "GenuineIntel") ? GP_CPU_VENDOR_INTEL :
               GP_CPU_VENDOR_OTHER;
    }
    if (kvm) {
        *how = "the host's, as KVM gives every CPU model";
        return host;
    }
    if (!g_strcmp0(cpu_mode, "maximum")) {
        *how = "TCG's max CPU model";
        return GP_CPU_VENDOR_AMD;
    }
    if (!g_strcmp0(cpu_mode, "host-model")) {
        *how = NULL;            /* libvirt picks the model at start */
        return GP_CPU_VENDOR_UNKNOWN;
    }
    if (!cpu_model) {
        /* No model: QEMU's default, qemu64. */
        cpu_model = "qemu64";
    }
    *how = "the CPU model's";
    for (i = 0; i < G_N_ELEMENTS(amd); i++) {
        if (g_str_has_prefix(cpu_model, amd[i])) {
            return GP_CPU_VENDOR_AMD;
        }
    }
    for (i = 0; i < G_N_ELEMENTS(intel); i++) {
        if (g_str_has_prefix(cpu_model, intel[i])) {
            return GP_CPU_VENDOR_INTEL;
        }
    }
    *how = NULL;
    return GP_CPU_VENDOR_UNKNOWN;
}

bool gp_pc_cpu_model_32bit(const char *model)
{
    /* QEMU 10.0's models without CPUID_EXT2_LM. */
    static const char *const no_lm[] = {
        "486", "athlon", "coreduo", "kvm32", "n270", "pentium", "qemu32",
    };
    unsigned i;

    for (i = 0; model && i < G_N_ELEMENTS(no_lm); i++) {
        if (g_str_has_prefix(model, no_lm[i])) {
            return true;
        }
    }
    return false;
}
