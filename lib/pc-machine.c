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

static uint64_t round_up_gib(uint64_t v)
{
    return (v + GIB - 1) & ~(GIB - 1);
}

/*
 * "q35", "pc-q35-X.Y", "pc", "pc-i440fx-X.Y" (and our QEMU's q35 types,
 * "-gpup2p" after them): the chipset and whether the
 * version is known (an alias names the QEMU's latest). NONE for any other
 * name, a distribution's own included.
 */
static Chipset parse_type(const char *type, unsigned *major, unsigned *minor,
                          bool *alias)
{
    static const struct {
        const char *prefix;
        Chipset chipset;
    } names[] = {
        { "pc-q35-", CHIPSET_Q35 },
        { "pc-i440fx-", CHIPSET_I440FX },
    };
    g_autofree char *base = NULL;
    unsigned i;

    *alias = false;
    if (!type) {
        return CHIPSET_NONE;
    }
    /*
     * Our QEMU's pc-q35-X.Y-gpup2p (alias q35-gpup2p) is pc-q35-X.Y with
     * its vfio-pci defaults: the same memory map.
     */
    if (g_str_has_suffix(type, "-gpup2p")) {
        base = g_strndup(type, strlen(type) - strlen("-gpup2p"));
        type = base;
        if (strcmp(type, "q35") && !g_str_has_prefix(type, "pc-q35-")) {
            return CHIPSET_NONE;
        }
    }
    if (!strcmp(type, "q35") || !strcmp(type, "pc")) {
        *alias = true;
        return type[0] == 'q' ? CHIPSET_Q35 : CHIPSET_I440FX;
    }
    for (i = 0; i < G_N_ELEMENTS(names); i++) {
        const char *v = type + strlen(names[i].prefix);
        unsigned micro;
        char end;

        if (!g_str_has_prefix(type, names[i].prefix)) {
            continue;
        }

        if ((sscanf(v, "%u.%u%c", major, minor, &end) == 2 ||
             sscanf(v, "%u.%u.%u%c", major, minor, &micro, &end) == 3) &&
            v[0] >= '0' && v[0] <= '9') {
            return names[i].chipset;
        }
    }
    return CHIPSET_NONE;
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
    unsigned major, minor;
    bool alias;

    if (m->hole64_set) {
        return m->hole64_size;
    }
    return parse_type(m->type, &major, &minor, &alias) == CHIPSET_I440FX ?
           GP_I440FX_DEFAULT_HOLE64 : GP_Q35_DEFAULT_HOLE64;
}

typedef enum { MOVE_NO, MOVE_YES, MOVE_MAYBE } Move;

/*
 * pc_memory_init(): QEMU moves RAM above 4 GiB to 1 TiB for an AMD vCPU,
 * on machine types from 7.1, where pc_max_used_gpa() reaches AMD's
 * HyperTransport hole: the window's end (from @start, before the move)
 * with long mode; without, the end of RAM or of the hot-plug region
 * from 8.2, and the top of phys-bits on 7.1-8.1. @why: why MAYBE.
 */
static Move amd_move(const GpPcMachine *m, bool alias, unsigned major,
                     unsigned minor, uint64_t above, uint64_t start,
                     uint64_t size, const char **why)
{
    bool v82 = alias || major > 8 || (major == 8 && minor >= 2);
    uint64_t used;

    if ((!alias && (major < 7 || (major == 7 && minor < 1))) ||
        m->vendor == GP_CPU_VENDOR_INTEL || m->vendor == GP_CPU_VENDOR_OTHER) {
        return MOVE_NO;
    }
    if (!m->no_long_mode) {
        used = start + size - 1;
    } else if (v82) {
        used = m->maxram > m->ram ? hole64_start(m, 4 * GIB, above) - 1 :
               4 * GIB + above - 1;
    } else {
        *why = "a vCPU without long mode, on a machine type of 7.1 to "
               "8.1, moves RAM above 1 TiB by its phys-bits";
        return MOVE_MAYBE;
    }
    if (used < GP_AMD_HT_START) {
        return MOVE_NO;
    }
    if (m->vendor == GP_CPU_VENDOR_AMD) {
        return MOVE_YES;
    }
    *why = "it reaches AMD's HyperTransport hole at 0xfd00000000, where "
           "QEMU moves an AMD vCPU's RAM above 1 TiB, and the vCPU's "
           "vendor is not known";
    return MOVE_MAYBE;
}

/* Where only the machine type is not known: from 4 GiB to the end of
 * the highest window. */
static void bound_window(const GpPcMachine *m, uint64_t size,
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

void gp_pc_window(const GpPcMachine *m, GpPcWindow *out)
{
    unsigned major = 0, minor = 0;
    bool alias;
    Chipset chipset = parse_type(m->type, &major, &minor, &alias);
    uint64_t lowmem, above, size, start, moved;
    const char *maybe = NULL;
    Move move;

    memset(out, 0, sizeof(*out));
    size = gp_pc_hole64_size(m);
    if (m->not_modelled) {
        bound_window(m, size, out);
        out->why = g_strdup(m->not_modelled);
        return;
    }
    if (chipset == CHIPSET_NONE ||
        (!alias && (major < 2 || (major == 2 && minor < 11)))) {
        /* No split puts more above 4 GiB than all of RAM. */
        bound_window(m, size, out);
        out->start = 4 * GIB;
        out->bounds = true;
        out->why = chipset == CHIPSET_NONE ?
                   g_strdup_printf("machine type '%s' is neither q35 nor "
                                   "i440fx of upstream QEMU",
                                   m->type ? m->type : "(none)") :
                   g_strdup_printf("machine type '%s' is older than 2.11, "
                                   "which declares no 64-bit window before "
                                   "firmware (x-pci-hole64-fix off)",
                                   m->type);
        return;
    }
    if (chipset == CHIPSET_Q35) {
        /* Below 4 GiB: all RAM under 2816 MiB, else 2 GiB. */
        lowmem = m->ram >= 0xb0000000ULL ? 2 * GIB : 0xb0000000ULL;
    } else {
        /* i440fx, gigabyte-aligned: 3 GiB once RAM reaches 3.5 GiB. */
        lowmem = m->ram >= 0xe0000000ULL ? 0xc0000000ULL : 0xe0000000ULL;
    }
    above = m->ram >= lowmem ? m->ram - lowmem : 0;
    start = hole64_start(m, 4 * GIB, above);
    moved = hole64_start(m, GP_AMD_ABOVE_1TB, above);
    move = amd_move(m, alias, major, minor, above, start, size, &maybe);
    if (move == MOVE_MAYBE) {
        set_window(out, moved, size);
        out->start = start;
        out->bounds = true;
        out->why = g_strdup(maybe);
        return;
    }
    set_window(out, move == MOVE_YES ? moved : start, size);
    out->exact = true;
    out->how = g_strdup_printf("as QEMU places it for %s with %" PRIu64
                               " MiB of RAM%s%s", m->type, m->ram >> 20,
                               m->maxram > m->ram ?
                               " and a hot-plug region" : "",
                               move == MOVE_YES ? ", RAM above 4 GiB "
                               "moved above 1 TiB for an AMD vCPU" : "");
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
