/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `gpup2p check`, the host items: IOMMU, interrupt remapping, the kernel
 * helper, the QEMU extension and the 64-bit MMIO window.
 */
#include <string.h>

#include "check.h"

void check_iommu(Check *c)
{
    g_autofree char *groups = g_build_filename(c->topo->sys, "kernel",
                                               "iommu_groups", NULL);
    g_autoptr(GDir) d = g_dir_open(groups, 0, NULL);
    bool on = d && g_dir_read_name(d);
    guint i;

    for (i = 0; i < c->topo->devices->len && !on; i++) {
        on = ((GpDevice *)g_ptr_array_index(c->topo->devices, i))
                 ->iommu_group >= 0;
    }
    check_item(c->r, on ? ITEM_OK : ITEM_FAIL, "IOMMU",
         on ? "IOMMU groups exist" : "no IOMMU groups: the IOMMU is off",
         "Intel: enable VT-d in firmware and boot with intel_iommu=on; "
         "AMD: enable the IOMMU (AMD-Vi) in firmware, the kernel turns it "
         "on by default (no amd_iommu=off or iommu=off on its command "
         "line)");
}

/*
 * With interrupt remapping on, the kernel's MSI and IO-APIC interrupt
 * chips carry an "IR-" prefix in /proc/interrupts.
 */
void check_interrupt_remapping(Check *c)
{
    g_autofree char *path = g_build_filename(c->topo->root, "proc",
                                             "interrupts", NULL);
    g_autofree char *unsafe_path = g_build_filename(c->topo->sys, "module",
        "vfio_iommu_type1", "parameters", "allow_unsafe_interrupts", NULL);
    g_autofree char *text = NULL, *unsafe = NULL, *detail = NULL;
    const char *fix = "enable interrupt remapping: VT-d/AMD-Vi with "
                      "interrupt remapping in firmware, and no intremap=off "
                      "or amd_iommu=nointremap on the kernel command line";

    if (!g_file_get_contents(path, &text, NULL, NULL)) {
        detail = g_strdup_printf("%s is missing: cannot tell", path);
        check_item(c->r, ITEM_UNTESTED, "interrupt remapping", detail,
             "capture with 'gpup2p snapshot', which copies "
             "/proc/interrupts");
        return;
    }
    if (g_file_get_contents(unsafe_path, &unsafe, NULL, NULL) &&
        g_str_has_prefix(unsafe, "Y")) {
        check_item(c->r, ITEM_FAIL, "interrupt remapping",
             "vfio_iommu_type1 allow_unsafe_interrupts=Y: a guest can "
             "forge interrupts (MSI) to the host", fix);
        return;
    }
    if (strstr(text, " IR-")) {
        check_item(c->r, ITEM_OK, "interrupt remapping",
             "on (IR- interrupt chips in /proc/interrupts)", NULL);
    } else {
        check_item(c->r, ITEM_FAIL, "interrupt remapping",
             "off: no IR- interrupt chip in /proc/interrupts, so VFIO "
             "refuses device assignment", fix);
    }
}

void check_helper(Check *c)
{
    g_autofree char *helper = g_build_filename(c->topo->sys, "module",
                                               "gpup2p", NULL);
    bool loaded = g_file_test(helper, G_FILE_TEST_IS_DIR);

    if (c->captured && !loaded) {
        check_item(c->r, ITEM_UNTESTED, "kernel helper",
             "a capture does not record loaded modules",
             "run 'gpup2p check' on the host itself");
        return;
    }
    check_item(c->r, loaded ? ITEM_OK : ITEM_WARN, "kernel helper",
         loaded ? "gpup2p module loaded" : "gpup2p module not loaded "
         "(optional: 'gpup2p verdict' checks these verdicts against the "
         "kernel's)", "apt install gpup2p-dkms && modprobe gpup2p");
}

void check_qemu(Check *c)
{
    g_autofree char *detail = NULL;
    g_autoptr(GError) err = NULL;
    const char *fix = "install the gpup2p-qemu package (its QEMU is "
                      GP_QEMU_EMULATOR "); or use "
                      "'gpup2p libvirt --qemu-stock'";
    unsigned props;

    if (!c->qemu) {
        check_item(c->r, ITEM_UNTESTED, "QEMU extension",
             "a captured host: its QEMU is not here",
             "name the binary with --qemu, or the domain with --domain");
        return;
    }
    if (!gp_qemu_vfio_props(c->qemu, &props, &err)) {
        check_item(c->r, ITEM_FAIL, "QEMU extension", err->message, fix);
        return;
    }
    if (!(props & GP_QEMU_CLIQUE_AUTO)) {
        /* A domain that sets our property cannot start on it. */
        bool needed = c->dom && c->dom->uses_ours;

        detail = g_strdup_printf("%s has no x-gpu-p2p-clique on vfio-pci%s",
                                 c->qemu, needed ? ", which the domain "
                                 "sets: it will not start" :
                                 props & GP_QEMU_CLIQUE_STOCK ?
                                 " (upstream's x-nv-gpudirect-clique only)" :
                                 "");
        check_item(c->r, needed ? ITEM_FAIL : ITEM_WARN, "QEMU extension",
                   detail, fix);
        return;
    }
    detail = g_strdup_printf("%s has x-gpu-p2p-clique", c->qemu);
    check_item(c->r, ITEM_OK, "QEMU extension", detail, NULL);
}

void check_mmio64(Check *c)
{
    guint64 need = c->need;
    g_autofree char *size = check_size_text(need);
    g_autofree char *detail = NULL;
    unsigned want = check_bits_for_window(need);
    unsigned have = c->topo->cpu_phys_bits;

    if (!need) {
        check_item(c->r, ITEM_OK, "64-bit MMIO", "the GPUs have no 64-bit BAR",
             NULL);
        return;
    }
    if (!have) {
        detail = g_strdup_printf("the GPUs' 64-bit BARs need a %s window; "
                                 "the CPU's address width is unknown (no "
                                 "'address sizes' in proc/cpuinfo)", size);
        check_item(c->r, ITEM_UNTESTED, "64-bit MMIO", detail,
             "capture with 'gpup2p snapshot', which copies the CPU's "
             "identity");
        return;
    }
    detail = g_strdup_printf("the GPUs' 64-bit BARs need a %s window "
                             "(hole64), which takes %u guest physical "
                             "address bits; the host's CPUs have %u", size,
                             want, have);
    check_item(c->r,
               MIN(have, OVMF_MAX_PHYS_BITS) >= want ? ITEM_OK : ITEM_FAIL,
         "64-bit MMIO", detail,
         "give these GPUs to more than one VM, or use a host with a wider "
         "physical address space");
}
