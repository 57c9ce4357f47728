/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The BAR gate (gp_bar_gate_decide()) on synthetic hosts: two GPUs on
 * root ports (groups 1 and 2, a 32 GiB BAR1 each), the kernel release and
 * config, sys/module, the IOMMU's Capability register and the groups'
 * reserved regions written as Linux shows them; each condition gives
 * mapped, not mapped (proven) or unknown, and the reason names it.
 */
#include <string.h>
#include <unistd.h>

#include "gpup2p/bar-gate.h"
#include "sysfs-builder.h"

#define GPU_A "0000:01:00.0"
#define GPU_B "0000:02:00.0"
#define REL "7.3.4+bpo-amd64"
/* VT-d Capability registers; MGAW (bits 21:16) + 1 is the width. */
#define CAP_48 "d2008c406f0462"
#define CAP_39 "d2008c40660462"
#define CAP_34 "d2008c40610462"

#define CONFIG_TYPE1 "CONFIG_VFIO=m\nCONFIG_VFIO_CONTAINER=y\n" \
    "CONFIG_VFIO_IOMMU_TYPE1=m\nCONFIG_VFIO_PCI_DMABUF=y\n"
#define CONFIG_EMULATED "CONFIG_VFIO=m\nCONFIG_IOMMUFD=m\n" \
    "# CONFIG_VFIO_CONTAINER is not set\nCONFIG_IOMMUFD_VFIO_CONTAINER=y\n" \
    "CONFIG_VFIO_DEVICE_CDEV=y\nCONFIG_VFIO_PCI_DMABUF=y\n"
#define CONFIG_NO_DMABUF "CONFIG_VFIO=m\nCONFIG_VFIO_CONTAINER=y\n" \
    "CONFIG_VFIO_IOMMU_TYPE1=m\nCONFIG_IOMMUFD=m\n" \
    "CONFIG_VFIO_DEVICE_CDEV=y\n# CONFIG_PCI_P2PDMA is not set\n"

typedef struct {
    SysfsBuilder *sb;
    GpTopology *topo;
} Host;

/* Two GPUs, @release, @config (NULL: none), the type1 module or not,
 * an Intel IOMMU with @cap (NULL: no iommu link). */
static Host host_new(const char *release, const char *config, bool type1,
                     const char *cap)
{
    Host h = { sb_new(), NULL };
    g_autoptr(GError) err = NULL;

    sb_add(h.sb, NULL, "0000:00:00.0", SB_HOST_BRIDGE, 0x8086, 0x29c0,
           0x060000, 0, -1, NULL);
    sb_add(h.sb, NULL, "0000:00:01.0", SB_ROOT_PORT, 0x8086, 1, 0x060400, 0,
           -1, "pcieport");
    sb_add(h.sb, NULL, "0000:00:02.0", SB_ROOT_PORT, 0x8086, 1, 0x060400, 0,
           -1, "pcieport");
    sb_add(h.sb, "0000:00:01.0", GPU_A, SB_ENDPOINT, 0x10de, 0x2335,
           0x030200, 0, 1, "vfio-pci");
    sb_add(h.sb, "0000:00:02.0", GPU_B, SB_ENDPOINT, 0x10de, 0x2335,
           0x030200, 0, 2, "vfio-pci");
    sb_iommu_groups(h.sb);
    sb_gate_host(h.sb, release, config, type1, cap);
    h.topo = gp_topo_read(sb_root(h.sb), &err);
    g_assert_no_error(err);
    return h;
}

static void host_free(Host *h)
{
    gp_topo_free(h->topo);
    sb_free(h->sb);
}

/* A stock QEMU 10.0 q35 VM on the container, 64 GiB, 46 bits, an Intel
 * vCPU, SeaBIOS. */
static GpBarGateVm vm_default(void)
{
    GpBarGateVm vm = {
        .vmm = GP_VMM_STOCK, .qemu_major = 10, .qemu_minor = 0,
        .guest_phys_bits = 46,
        .machine = { .type = "pc-q35-10.0", .ram = 64ULL << 30,
                     .vendor = GP_CPU_VENDOR_INTEL },
    };

    return vm;
}

/* The gate for both GPUs; @no_mmap_b sets x-no-mmap on GPU B. */
static GPtrArray *decide(const Host *h, const GpBarGateVm *vm, bool iommufd,
                         bool no_mmap_b)
{
    g_autoptr(GpBarGateHost) host = gp_bar_gate_host_read(sb_root(h->sb));
    GpBarGateGpu gpus[2] = {
        { gp_topo_find(h->topo, GPU_A), iommufd, false },
        { gp_topo_find(h->topo, GPU_B), iommufd, no_mmap_b },
    };

    g_assert_nonnull(gpus[0].dev);
    g_assert_nonnull(gpus[1].dev);
    return gp_bar_gate_decide(host, vm, gpus, 2);
}

static void assert_gate(GPtrArray *gates, unsigned i, GpBarGateVerdict want,
                        const char *words)
{
    const GpBarGate *g = g_ptr_array_index(gates, i);

    if (g->verdict != want || !strstr(g->reason, words)) {
        g_test_message("GPU %u: %s: %s", i, gp_bar_gate_verdict_name(
                       g->verdict), g->reason);
    }
    g_assert_cmpstr(gp_bar_gate_verdict_name(g->verdict), ==,
                    gp_bar_gate_verdict_name(want));
    g_assert_nonnull(strstr(g->reason, words));
}

static void test_type1_real(void)
{
    Host h = host_new(REL, CONFIG_TYPE1, true, CAP_48);
    GpBarGateVm vm = vm_default();
    g_autoptr(GPtrArray) g = decide(&h, &vm, false, false);

    assert_gate(g, 0, GP_BAR_GATE_MAPPED, "vfio_iommu_type1");
    assert_gate(g, 1, GP_BAR_GATE_MAPPED, "48-bit address space");
    host_free(&h);
}

static void test_emulated_container(void)
{
    Host h = host_new(REL, CONFIG_EMULATED, false, CAP_48);
    GpBarGateVm vm = vm_default();
    g_autoptr(GPtrArray) g = decide(&h, &vm, false, false);

    assert_gate(g, 0, GP_BAR_GATE_NOT_MAPPED, "iommufd's emulated type1 "
                "container (CONFIG_IOMMUFD_VFIO_CONTAINER=y");
    assert_gate(g, 1, GP_BAR_GATE_NOT_MAPPED, "lacks peer-to-peer DMA");
    host_free(&h);
}

/* No config to read, iommufd loaded and type1 not: not proven. */
static void test_emulated_unknown(void)
{
    Host h = host_new(REL, NULL, false, CAP_48);
    GpBarGateVm vm = vm_default();
    g_autoptr(GPtrArray) g = NULL;

    sb_write(h.sb, "sys/module/iommufd/parameters/allow_unsafe_interrupts",
             "N\n");
    g = decide(&h, &vm, false, false);
    assert_gate(g, 0, GP_BAR_GATE_UNKNOWN, "may be iommufd's emulated "
                "container");
    host_free(&h);
}

/*
 * The same host seen by a VMM holding a working container (QEMU at
 * realize): that container is iommufd's emulation, proven. With the type1
 * module, or with neither module, the open container changes nothing.
 */
static void test_emulated_container_open(void)
{
    Host h = host_new(REL, NULL, false, CAP_48);
    GpBarGateVm vm = vm_default();
    g_autoptr(GpBarGateHost) none = gp_bar_gate_host_read(sb_root(h.sb));
    g_autoptr(GpBarGateHost) host = NULL;
    g_autoptr(GPtrArray) g = NULL;
    GpBarGateGpu gpu = { gp_topo_find(h.topo, GPU_A), false, false };
    bool proven;
    g_autofree char *why = NULL;

    gp_bar_gate_host_container_open(none);
    g_assert_cmpint(none->container, ==, GP_VFIO_CONTAINER_UNKNOWN);
    sb_write(h.sb, "sys/module/iommufd/parameters/allow_unsafe_interrupts",
             "N\n");
    host = gp_bar_gate_host_read(sb_root(h.sb));
    gp_bar_gate_host_container_open(host);
    g_assert_cmpint(host->container, ==, GP_VFIO_CONTAINER_EMULATED);
    g = gp_bar_gate_decide(host, &vm, &gpu, 1);
    assert_gate(g, 0, GP_BAR_GATE_NOT_MAPPED, "iommufd's emulated type1 "
                "container (a VFIO container is open, and sys/module has "
                "iommufd but not vfio_iommu_type1), which lacks "
                "peer-to-peer DMA");
    why = gp_bar_gate_container_why(host, &proven);
    g_assert_true(proven);
    g_assert_cmpstr(why, ==, ((GpBarGate *)g_ptr_array_index(g, 0))->reason);
    host_free(&h);

    /*
     * A config that is not the running kernel's (boot/config-RELEASE of a
     * release rebuilt since) says type1: the open container outweighs it.
     */
    h = host_new(REL, CONFIG_TYPE1, false, CAP_48);
    sb_write(h.sb, "sys/module/iommufd/parameters/allow_unsafe_interrupts",
             "N\n");
    g_clear_pointer(&host, gp_bar_gate_host_free);
    host = gp_bar_gate_host_read(sb_root(h.sb));
    g_assert_cmpint(host->container, ==, GP_VFIO_CONTAINER_TYPE1);
    gp_bar_gate_host_container_open(host);
    g_assert_cmpint(host->container, ==, GP_VFIO_CONTAINER_EMULATED);
    host_free(&h);

    h = host_new(REL, NULL, true, CAP_48);
    sb_write(h.sb, "sys/module/iommufd/parameters/allow_unsafe_interrupts",
             "N\n");
    g_clear_pointer(&host, gp_bar_gate_host_free);
    host = gp_bar_gate_host_read(sb_root(h.sb));
    gp_bar_gate_host_container_open(host);
    g_assert_cmpint(host->container, ==, GP_VFIO_CONTAINER_TYPE1);
    host_free(&h);
}

/* Sparse mmaps: the bytes no area covers, areas unsorted or overlapping. */
static void test_mmap_uncovered(void)
{
    const GpMmapArea whole[] = { { 0, 1 << 20 } };
    const GpMmapArea split[] = { { 0x3000, 0xd000 }, { 0, 0x2000 } };
    const GpMmapArea overlap[] = { { 0, 0x8000 }, { 0x4000, 0x8000 },
                                   { 0x2000, 0x1000 } };
    const GpMmapArea past[] = { { 0x8000, 0x10000 }, { 0x20000, 0x1000 } };
    g_autofree char *why = gp_bar_gate_sparse_why(1, 0x10000, 0x1000);
    g_autofree char *none = gp_bar_gate_sparse_why(1, 0x10000, 0);

    g_assert_cmpuint(gp_bar_mmap_uncovered(1 << 20, whole, 1), ==, 0);
    g_assert_cmpuint(gp_bar_mmap_uncovered(1 << 20, NULL, 0), ==, 1 << 20);
    g_assert_cmpuint(gp_bar_mmap_uncovered(0x10000, split, 2), ==, 0x1000);
    g_assert_cmpuint(gp_bar_mmap_uncovered(0x10000, overlap, 3), ==, 0x4000);
    g_assert_cmpuint(gp_bar_mmap_uncovered(0x10000, past, 2), ==, 0x8000);
    g_assert_nonnull(strstr(why, "BAR1: its mmaps leave 4096 of its 65536 "
                            "bytes uncovered (a sparse mmap)"));
    g_assert_null(none);
}

/* Nothing under sys/module, no config: a capture. Unknown, never "no". */
static void test_unknown_config(void)
{
    Host h = host_new(REL, NULL, false, CAP_48);
    GpBarGateVm vm = vm_default();
    g_autoptr(GPtrArray) g = decide(&h, &vm, false, false);
    g_autoptr(GpBarGateHost) host = gp_bar_gate_host_read(sb_root(h.sb));

    assert_gate(g, 0, GP_BAR_GATE_UNKNOWN, "no kernel config is readable");
    g_assert_cmpint(host->dmabuf, ==, GP_TRI_UNKNOWN);
    g_assert_nonnull(strstr(host->dmabuf_why, "CONFIG_VFIO_PCI_DMABUF"));
    /* A config read elsewhere (proc/config.gz) decides again. */
    gp_bar_gate_host_set_config(host, CONFIG_EMULATED, "/proc/config.gz");
    g_assert_cmpint(host->container, ==, GP_VFIO_CONTAINER_EMULATED);
    g_assert_nonnull(strstr(host->container_why, "/proc/config.gz"));
    g_assert_cmpint(host->dmabuf, ==, GP_TRI_YES);
    host_free(&h);
}

/* No release known, a config read elsewhere: the config decides. */
static void test_config_without_release(void)
{
    Host h = host_new(NULL, NULL, false, CAP_48);
    g_autoptr(GpBarGateHost) host = gp_bar_gate_host_read(sb_root(h.sb));

    g_assert_cmpint(host->dmabuf, ==, GP_TRI_UNKNOWN);
    gp_bar_gate_host_set_config(host, CONFIG_TYPE1, "/proc/config.gz");
    g_assert_cmpint(host->dmabuf, ==, GP_TRI_YES);
    g_assert_nonnull(strstr(host->dmabuf_why, "CONFIG_VFIO_PCI_DMABUF=y "
                            "in /proc/config.gz"));
    gp_bar_gate_host_set_config(host, CONFIG_NO_DMABUF, "/proc/config.gz");
    g_assert_cmpint(host->dmabuf, ==, GP_TRI_NO);
    host_free(&h);
}

static void test_iommufd(void)
{
    static const struct {
        const char *release, *config;
        GpVmmKind vmm;
        unsigned major, minor;
        GpBarGateVerdict want;
        const char *words;
    } cases[] = {
        { REL, CONFIG_EMULATED, GP_VMM_STOCK, 11, 1, GP_BAR_GATE_MAPPED,
          "CONFIG_VFIO_PCI_DMABUF=y" },
        { REL, CONFIG_EMULATED, GP_VMM_STOCK, 10, 2, GP_BAR_GATE_NOT_MAPPED,
          "on QEMU 10.2" },
        { REL, CONFIG_EMULATED, GP_VMM_OURS, 0, 0, GP_BAR_GATE_NOT_MAPPED,
          "on our QEMU (10.0)" },
        { REL, CONFIG_EMULATED, GP_VMM_STOCK, 0, 0, GP_BAR_GATE_UNKNOWN,
          "this QEMU's version is not known" },
        /* An older release proves nothing: its config decides (a vendor
         * kernel may backport the export), and without one, unknown. */
        { "6.12.95+deb12-amd64", CONFIG_NO_DMABUF, GP_VMM_STOCK, 11, 1,
          GP_BAR_GATE_NOT_MAPPED, "built without CONFIG_VFIO_PCI_DMABUF" },
        { "6.12.95+deb12-amd64", CONFIG_EMULATED, GP_VMM_STOCK, 11, 1,
          GP_BAR_GATE_MAPPED, "CONFIG_VFIO_PCI_DMABUF=y" },
        { "6.12.95+deb12-amd64", NULL, GP_VMM_STOCK, 11, 1,
          GP_BAR_GATE_UNKNOWN, "a vendor kernel may backport it, and no "
          "kernel config is readable" },
        { REL, CONFIG_NO_DMABUF, GP_VMM_STOCK, 11, 1, GP_BAR_GATE_NOT_MAPPED,
          "built without CONFIG_VFIO_PCI_DMABUF" },
        { REL, NULL, GP_VMM_STOCK, 11, 1, GP_BAR_GATE_UNKNOWN,
          "no kernel config is readable (proc/config.gz, boot/config-" REL },
        { NULL, NULL, GP_VMM_STOCK, 11, 1, GP_BAR_GATE_UNKNOWN,
          "no proc/sys/kernel/osrelease" },
    };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        Host h = host_new(cases[i].release, cases[i].config, false, CAP_48);
        GpBarGateVm vm = vm_default();
        g_autoptr(GPtrArray) g = NULL;

        vm.vmm = cases[i].vmm;
        vm.qemu_major = cases[i].major;
        vm.qemu_minor = cases[i].minor;
        g = decide(&h, &vm, true, false);
        g_test_message("iommufd case %zu", i);
        assert_gate(g, 0, cases[i].want, cases[i].words);
        host_free(&h);
    }
}

static void test_no_mmap(void)
{
    Host h = host_new(REL, CONFIG_TYPE1, true, CAP_48);
    GpBarGateVm vm = vm_default();
    g_autoptr(GPtrArray) g = decide(&h, &vm, false, true);

    assert_gate(g, 0, GP_BAR_GATE_MAPPED, "vfio_iommu_type1");
    assert_gate(g, 1, GP_BAR_GATE_NOT_MAPPED, "x-no-mmap=on");
    host_free(&h);
}

/* x-no-mmap's value not known (a spelling QEMU does not read): unknown,
 * with the front's reason. */
static void test_no_mmap_unknown(void)
{
    Host h = host_new(REL, CONFIG_TYPE1, true, CAP_48);
    GpBarGateVm vm = vm_default();
    g_autoptr(GpBarGateHost) host = gp_bar_gate_host_read(sb_root(h.sb));
    GpBarGateGpu gpus[2] = {
        { gp_topo_find(h.topo, GPU_A), false, false, NULL },
        { gp_topo_find(h.topo, GPU_B), false, false,
          "x-no-mmap='ON' is none of QEMU's bool spellings" },
    };
    g_autoptr(GPtrArray) g = gp_bar_gate_decide(host, &vm, gpus, 2);

    assert_gate(g, 0, GP_BAR_GATE_MAPPED, "vfio_iommu_type1");
    assert_gate(g, 1, GP_BAR_GATE_UNKNOWN, "x-no-mmap='ON' is none");
    host_free(&h);
}

static void test_viommu(void)
{
    Host h = host_new(REL, CONFIG_TYPE1, true, CAP_48);
    GpBarGateVm vm = vm_default();
    g_autoptr(GPtrArray) g = NULL;

    vm.viommu = "<iommu model='intel'>";
    g = decide(&h, &vm, false, false);
    assert_gate(g, 0, GP_BAR_GATE_UNKNOWN, "a vIOMMU in the VM (<iommu "
                "model='intel'>)");
    host_free(&h);
}

static void test_window_beyond_iommu(void)
{
    Host h = host_new(REL, CONFIG_TYPE1, true, CAP_39);
    GpBarGateVm vm = vm_default();
    g_autoptr(GPtrArray) g = NULL, g2 = NULL, g3 = NULL;

    /* 600 GiB of RAM: q35 puts 598 GiB above 4 GiB, so the window QEMU
     * declares starts past 2^39; firmware places the BARs, so unknown,
     * saying why. */
    vm.machine.ram = 600ULL << 30;
    g = decide(&h, &vm, false, false);
    assert_gate(g, 0, GP_BAR_GATE_UNKNOWN, "window as QEMU places it for "
                "pc-q35-10.0 with 614400 MiB of RAM, "
                "0x9680000000-0x9e7fffffff, starts past the IOMMU's 39-bit "
                "address space");
    assert_gate(g, 0, GP_BAR_GATE_UNKNOWN, "SeaBIOS may keep 64-bit BARs "
                "below 4 GiB");
    /* Either firmware (SeaBIOS 1.16.3 and OVMF alike) may move the
     * window (at 10 GiB, 32 GiB) up to the guest's 2^46, as our QEMU
     * judges its declared window: partly beyond, not proven. */
    vm.machine.ram = 8ULL << 30;
    {
        g_autoptr(GPtrArray) g2f = decide(&h, &vm, false, false);

        assert_gate(g2f, 0, GP_BAR_GATE_UNKNOWN, "window as firmware may "
                    "move it (anywhere up to the top of the guest's address "
                    "space, at most 46 bits), 0x280000000-0x3fffffffffff");
        assert_gate(g2f, 0, GP_BAR_GATE_UNKNOWN, "reaches past the IOMMU's "
                    "39-bit address space (up to 0x7fffffffff)");
    }
    /* A guest of 39 bits: the window and the top it may move to fit. */
    vm.guest_phys_bits = 39;
    g2 = decide(&h, &vm, false, false);
    assert_gate(g2, 0, GP_BAR_GATE_MAPPED, "0x280000000-0xa7fffffff, is "
                "inside the IOMMU's 39-bit address space and clear of its "
                "reserved regions, and the top firmware may move it to, "
                "0x7fffffffff, is inside that address space too");
    /* 2^52 bits of guest: firmware stops at 2^46, on a 48-bit IOMMU. */
    host_free(&h);
    h = host_new(REL, CONFIG_TYPE1, true, CAP_48);
    vm.guest_phys_bits = 52;
    g3 = decide(&h, &vm, false, false);
    assert_gate(g3, 0, GP_BAR_GATE_MAPPED, "move it to, 0x3fffffffffff, "
                "is inside");
    host_free(&h);
}

static void test_bar_beyond_iommu(void)
{
    Host h = host_new(REL, CONFIG_TYPE1, true, CAP_34);
    GpBarGateVm vm = vm_default();
    g_autoptr(GPtrArray) g = decide(&h, &vm, false, false);

    assert_gate(g, 0, GP_BAR_GATE_NOT_MAPPED, "BAR1 (32768 MiB) is larger "
                "than the IOMMU's 34-bit address space");
    host_free(&h);
}

static void test_reserved_region(void)
{
    Host h = host_new(REL, CONFIG_TYPE1, true, CAP_48);
    GpBarGateVm vm = vm_default();
    g_autoptr(GPtrArray) g = NULL, g2 = NULL, amd = NULL, unknown = NULL;

    /* AMD's hole below 1 TiB, in group 2: it binds GPU A too (one
     * container, one IOVA space). 1000 GiB of RAM on an Intel vCPU: the
     * window is 1002-1034 GiB. */
    sb_write(h.sb, "sys/kernel/iommu_groups/2/reserved_regions",
             "0x00000000fee00000 0x00000000feefffff msi\n"
             "0x000000fd00000000 0x000000ffffffffff reserved\n");
    vm.machine.ram = 1000ULL << 30;
    g = decide(&h, &vm, false, false);
    assert_gate(g, 0, GP_BAR_GATE_UNKNOWN, "overlaps IOMMU group 2's "
                "reserved region 0xfd00000000-0xffffffffff (reserved)");
    /* An AMD vCPU: QEMU moves its RAM above 1 TiB, and the window after
     * it (2022-2054 GiB) clears the hole. */
    vm.machine.vendor = GP_CPU_VENDOR_AMD;
    amd = decide(&h, &vm, false, false);
    assert_gate(amd, 0, GP_BAR_GATE_MAPPED, "window as QEMU places it for "
                "pc-q35-10.0 with 1024000 MiB of RAM, RAM above 4 GiB moved "
                "above 1 TiB for an AMD vCPU, 0x1f980000000-0x2017fffffff, "
                "is inside");
    /* Neither known: bounds from the unmoved start to the moved end,
     * which meet the hole. */
    vm.machine.vendor = GP_CPU_VENDOR_UNKNOWN;
    unknown = decide(&h, &vm, false, false);
    assert_gate(unknown, 0, GP_BAR_GATE_UNKNOWN, "window as bounded (every "
                "window QEMU could declare, as it reaches AMD's "
                "HyperTransport hole at 0xfd00000000, where QEMU moves an AMD "
                "vCPU's RAM above 1 TiB, and the vCPU's vendor is not "
                "known), 0xfa80000000-0x2017fffffff, overlaps IOMMU group 2's "
                "reserved region");
    vm.machine.vendor = GP_CPU_VENDOR_INTEL;
    /* A window wholly inside a reserved region: unknown, as firmware
     * places the BARs. */
    sb_write(h.sb, "sys/kernel/iommu_groups/1/reserved_regions",
             "0x0000100000000000 0x00001fffffffffff reserved\n");
    vm.machine.ram = (16ULL << 40) - (2ULL << 30);
    g2 = decide(&h, &vm, false, false);
    assert_gate(g2, 1, GP_BAR_GATE_UNKNOWN, "window as QEMU places it for "
                "pc-q35-10.0 with 16775168 MiB of RAM, "
                "0x100000000000-0x1007ffffffff, lies inside IOMMU group 1's "
                "reserved region");
    host_free(&h);
}

/* A direct-relaxable region is mapped over by VFIO; a bad line is named. */
static void test_reserved_parse(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GArray) r = NULL, bad = NULL;
    g_autofree char *why = NULL;

    sb_write(sb, "sys/kernel/iommu_groups/7/reserved_regions",
             "0x00000000fee00000 0x00000000feefffff msi\n"
             "0x0000000000000000 0x0000000000ffffff direct-relaxable\n");
    r = gp_iommu_group_reserved(sb_root(sb), 7, &why);
    g_assert_nonnull(r);
    g_assert_cmpuint(r->len, ==, 1);
    g_assert_cmpstr(g_array_index(r, GpRange, 0).type, ==, "msi");
    sb_write(sb, "sys/kernel/iommu_groups/8/reserved_regions",
             "0x00000000fee00000 msi\n");
    bad = gp_iommu_group_reserved(sb_root(sb), 8, &why);
    g_assert_null(bad);
    g_assert_nonnull(strstr(why, "iommu_groups/8/reserved_regions: line 1 "
                            "'0x00000000fee00000 msi' is not"));
}

static void test_amd_iommu(void)
{
    Host h = host_new(REL, CONFIG_TYPE1, true, NULL);
    GpBarGateVm vm = vm_default();
    g_autoptr(GPtrArray) g = NULL;
    g_autofree char *dir = sb_device_dir(h.sb, GPU_A);
    g_autofree char *link = g_build_filename(dir, "iommu", NULL);

    g_assert_cmpint(symlink("../../../virtual/iommu/ivhd0", link), ==, 0);
    g = decide(&h, &vm, false, false);
    assert_gate(g, 0, GP_BAR_GATE_UNKNOWN, "IOMMU ivhd0, whose address "
                "width no documented sysfs file gives (AMD)");
    host_free(&h);
}

/* Neither the IOMMU nor the groups' reserved regions known: both said
 * (and, under ASan, no reason string lost on the way). */
static void test_iommu_and_reserved_unknown(void)
{
    Host h = host_new(REL, CONFIG_TYPE1, true, NULL);
    GpBarGateVm vm = vm_default();
    g_autoptr(GPtrArray) g = NULL;
    unsigned i;

    for (i = 1; i <= 2; i++) {
        g_autofree char *path = g_strdup_printf(
            "%s/sys/kernel/iommu_groups/%u/reserved_regions", sb_root(h.sb),
            i);

        g_assert_cmpint(unlink(path), ==, 0);
    }
    g = decide(&h, &vm, false, false);
    assert_gate(g, 1, GP_BAR_GATE_UNKNOWN, "reserved_regions is not "
                "readable");
    assert_gate(g, 1, GP_BAR_GATE_UNKNOWN, "0000:01:00.0/iommu is absent");
    host_free(&h);
}

/*
 * The window rule QEMU applies at machine done, on its container's IOVA
 * ranges: each hole the window meets, and the end it passes, named; a
 * window clear of both says nothing.
 */
static void test_window_unknowns(void)
{
    const GpWindowHole holes[] = {
        { 0xfee00000, 0xfeefffff, "the MSI range" },
        { 0xfd00000000, 0xffffffffff, "the HyperTransport hole" },
    };
    const uint64_t top = (1ULL << 48) - 1;
    g_autoptr(GString) u = g_string_new(NULL);

    /* Below the hole, inside the ranges: nothing. */
    gp_bar_gate_window_unknowns(u, "as declared", 1ULL << 32,
                                (1ULL << 36) - 1, "the ranges", top,
                                holes, G_N_ELEMENTS(holes), "a note");
    g_assert_cmpstr(u->str, ==, "");
    /* Across the HyperTransport hole and past the end. */
    gp_bar_gate_window_unknowns(u, "as declared", 0xf000000000,
                                1ULL << 48, "the ranges", top, holes,
                                G_N_ELEMENTS(holes), "a note");
    g_assert_cmpstr(u->str, ==,
                    "the guest's 64-bit BAR window as declared, "
                    "0xf000000000-0x1000000000000, overlaps the "
                    "HyperTransport hole, where nothing is mapped: a BAR "
                    "the firmware places there is not; the guest's 64-bit "
                    "BAR window as declared, 0xf000000000-0x1000000000000, "
                    "reaches past the ranges (up to 0xffffffffffff): a BAR "
                    "the firmware places above it is not mapped");
    /* Wholly in a hole, and wholly past the end: the note says why that
     * is still no proof. */
    g_string_truncate(u, 0);
    gp_bar_gate_window_unknowns(u, "as declared", 0xfd00000000,
                                0xfdffffffff, "the ranges", top, holes,
                                G_N_ELEMENTS(holes), "a note");
    g_assert_cmpstr(u->str, ==,
                    "the guest's 64-bit BAR window as declared, "
                    "0xfd00000000-0xfdffffffff, lies inside the "
                    "HyperTransport hole, where nothing is mapped; a note");
    g_string_truncate(u, 0);
    gp_bar_gate_window_unknowns(u, "as declared", 1ULL << 48, 1ULL << 49,
                                "the ranges", top, NULL, 0, NULL);
    g_assert_cmpstr(u->str, ==,
                    "the guest's 64-bit BAR window as declared, "
                    "0x1000000000000-0x2000000000000, starts past the "
                    "ranges (up to 0xffffffffffff): a BAR placed there is "
                    "not mapped");
    /* The end not known: only the holes are judged. */
    g_string_truncate(u, 0);
    gp_bar_gate_window_unknowns(u, "as declared", 1ULL << 48, 1ULL << 49,
                                NULL, 0, holes, G_N_ELEMENTS(holes), NULL);
    g_assert_cmpstr(u->str, ==, "");

    /* Where firmware may move the window: the guest's top, at most 46
     * bits; nowhere for an unknown or 32-bit guest. */
    g_assert_cmpuint(gp_bar_gate_firmware_top(0), ==, 0);
    g_assert_cmpuint(gp_bar_gate_firmware_top(32), ==, 0);
    g_assert_cmpuint(gp_bar_gate_firmware_top(39), ==, (1ULL << 39) - 1);
    g_assert_cmpuint(gp_bar_gate_firmware_top(46), ==, (1ULL << 46) - 1);
    g_assert_cmpuint(gp_bar_gate_firmware_top(52), ==, (1ULL << 46) - 1);
    /* Said only where the window fits and that top does not. */
    gp_bar_gate_firmware_unknowns(u, 1ULL << 32, (1ULL << 36) - 1,
                                  (1ULL << 46) - 1, "the ranges",
                                  (1ULL << 39) - 1, "a note");
    g_assert_cmpstr(u->str, ==,
                    "the guest's 64-bit BAR window as firmware may move it "
                    "(anywhere up to the top of the guest's address space, "
                    "at most 46 bits), 0x100000000-0x3fffffffffff, reaches "
                    "past the "
                    "ranges (up to 0x7fffffffff): a BAR the firmware places "
                    "above it is not mapped");
    g_string_truncate(u, 0);
    gp_bar_gate_firmware_unknowns(u, 1ULL << 32, (1ULL << 40) - 1,
                                  (1ULL << 46) - 1, "the ranges",
                                  (1ULL << 39) - 1, "a note");
    gp_bar_gate_firmware_unknowns(u, 1ULL << 32, (1ULL << 36) - 1,
                                  (1ULL << 39) - 1, "the ranges",
                                  (1ULL << 39) - 1, "a note");
    gp_bar_gate_firmware_unknowns(u, 1ULL << 32, (1ULL << 36) - 1,
                                  (1ULL << 46) - 1, NULL, 0, "a note");
    g_assert_cmpstr(u->str, ==, "");
}

/* A container's ranges as the kernel gives them: holes between them,
 * whatever their order, overlaps and neighbours merged. */
static void test_iova_holes(void)
{
    const GpRange msi[] = {
        { 0xfef00000, 0xffffffffffff, "" },
        { 0, 0xfedfffff, "" },
    };
    const GpRange merged[] = {
        { 0, 0xfff, "" }, { 0x1000, 0x1fff, "" }, { 0x800, 0x17ff, "" },
        { 0x5000, 0x5fff, "" }, { 0x5800, 0x57ff, "" },
    };
    const GpRange whole[] = { { 0, UINT64_MAX, "" }, { 5, 7, "" } };
    g_autoptr(GArray) h = NULL, m = NULL, w = NULL, none = NULL;
    uint64_t top = 1;

    h = gp_iova_holes(msi, G_N_ELEMENTS(msi), "its container's IOVA ranges",
                      &top);
    g_assert_cmpuint(h->len, ==, 1);
    g_assert_cmpuint(g_array_index(h, GpWindowHole, 0).start, ==,
                     0xfee00000);
    g_assert_cmpuint(g_array_index(h, GpWindowHole, 0).end, ==, 0xfeefffff);
    g_assert_cmpstr(g_array_index(h, GpWindowHole, 0).name, ==,
                    "a hole in its container's IOVA ranges, "
                    "0xfee00000-0xfeefffff");
    g_assert_cmpuint(top, ==, 0xffffffffffff);
    /* Adjacent and overlapping ranges leave no hole; an empty one (end
     * before start) is no range; the gap to 0x5000 is one. */
    m = gp_iova_holes(merged, G_N_ELEMENTS(merged), "x", &top);
    g_assert_cmpuint(m->len, ==, 1);
    g_assert_cmpuint(g_array_index(m, GpWindowHole, 0).start, ==, 0x2000);
    g_assert_cmpuint(g_array_index(m, GpWindowHole, 0).end, ==, 0x4fff);
    g_assert_cmpuint(top, ==, 0x5fff);
    /* The whole 64-bit space: no hole, and no wrap past its end. */
    w = gp_iova_holes(whole, G_N_ELEMENTS(whole), "x", &top);
    g_assert_cmpuint(w->len, ==, 0);
    g_assert_cmpuint(top, ==, UINT64_MAX);
    none = gp_iova_holes(NULL, 0, "x", &top);
    g_assert_cmpuint(none->len, ==, 0);
    g_assert_cmpuint(top, ==, 0);
}

static void test_release_version(void)
{
    unsigned a = 0, b = 0;

    g_assert_true(gp_release_version("6.19.0-rc1", &a, &b));
    g_assert_cmpuint(a, ==, 6);
    g_assert_cmpuint(b, ==, 19);
    g_assert_true(gp_release_version(REL, &a, &b));
    g_assert_cmpuint(a, ==, 7);
    g_assert_false(gp_release_version("linux", &a, &b));
    g_assert_false(gp_release_version("7", &a, &b));
    g_assert_false(gp_release_version(NULL, &a, &b));
}

/*
 * The vCPU's vendor, as QEMU sets it. Under KVM (not available to the
 * tests here) every model takes the host's (host_cpu_instance_init());
 * test_pc_window.py judges the TCG side against QEMU itself.
 */
static void test_vcpu_vendor(void)
{
    const char *how = NULL;

    g_assert_cmpint(gp_pc_vcpu_vendor(true, "custom", "Skylake-Server",
                                      NULL, GP_CPU_VENDOR_AMD, &how), ==,
                    GP_CPU_VENDOR_AMD);
    g_assert_nonnull(strstr(how, "the host's"));
    g_assert_cmpint(gp_pc_vcpu_vendor(true, "host-passthrough", NULL, NULL,
                                      GP_CPU_VENDOR_UNKNOWN, &how), ==,
                    GP_CPU_VENDOR_UNKNOWN);
    g_assert_cmpint(gp_pc_vcpu_vendor(true, "custom", "EPYC", "GenuineIntel",
                                      GP_CPU_VENDOR_AMD, &how), ==,
                    GP_CPU_VENDOR_INTEL);
    g_assert_cmpint(gp_pc_vcpu_vendor(false, "maximum", NULL, NULL,
                                      GP_CPU_VENDOR_INTEL, &how), ==,
                    GP_CPU_VENDOR_AMD);
    g_assert_cmpint(gp_pc_vcpu_vendor(false, NULL, NULL, NULL,
                                      GP_CPU_VENDOR_INTEL, &how), ==,
                    GP_CPU_VENDOR_AMD);     /* qemu64 */
    g_assert_cmpint(gp_pc_vcpu_vendor(false, "custom", "Dhyana", NULL,
                                      GP_CPU_VENDOR_AMD, &how), ==,
                    GP_CPU_VENDOR_UNKNOWN);
    g_assert_null(how);
}

/*
 * The window past the guest's own width (QEMU refuses such a VM): an
 * unknown, not a clipped window that passes; and what "q35" aliases
 * follows the QEMU's version.
 */
static void test_window_past_guest(void)
{
    Host h = host_new(REL, CONFIG_TYPE1, true, CAP_48);
    GpBarGateVm vm = vm_default();
    g_autoptr(GPtrArray) g = NULL, old = NULL, unsure = NULL;

    /* An AMD vCPU of 40 bits with 1000 GiB: moved to 0x1f980000000. */
    vm.guest_phys_bits = 40;
    vm.machine.ram = 1000ULL << 30;
    vm.machine.vendor = GP_CPU_VENDOR_AMD;
    g = decide(&h, &vm, false, false);
    assert_gate(g, 0, GP_BAR_GATE_UNKNOWN, "0x1f980000000-0x2017fffffff, "
                "reaches past the guest's 40-bit address space: QEMU "
                "refuses to start the VM");
    /* Not moved (Intel), 0xfa80000000-0x1027fffffff: its end past 2^40,
     * which QEMU refuses as well, never clipped into a pass. */
    vm.machine.vendor = GP_CPU_VENDOR_INTEL;
    g_ptr_array_unref(g);
    g = decide(&h, &vm, false, false);
    assert_gate(g, 0, GP_BAR_GATE_UNKNOWN, "reaches past the guest's "
                "40-bit address space: QEMU refuses");
    vm.machine.vendor = GP_CPU_VENDOR_AMD;
    /* "q35" on a stock QEMU 7.0: no move, the window crosses the hole's
     * place (no reserved region here) and fits 48 bits. */
    vm.guest_phys_bits = 48;
    vm.machine.type = "q35";
    vm.qemu_major = 7;
    old = decide(&h, &vm, false, false);
    assert_gate(old, 0, GP_BAR_GATE_MAPPED, "0xfa80000000-0x1027fffffff, "
                "is inside");
    /* ... and on a QEMU of no known version: bounds over both. */
    vm.vmm = GP_VMM_UNKNOWN;
    vm.qemu_major = 0;
    unsure = decide(&h, &vm, false, false);
    assert_gate(unsure, 0, GP_BAR_GATE_MAPPED, "as bounded (every window "
                "QEMU could declare, as it reaches AMD's HyperTransport hole "
                "at 0xfd00000000, and whether QEMU moves the AMD vCPU's RAM "
                "above 1 TiB depends on the version the machine type alias "
                "names), 0xfa80000000-0x2017fffffff");
    host_free(&h);
}

/*
 * A distribution's type: the gate judges all from 4 GiB to the guest's
 * top, as nothing reads its layout. Upstream's type of the same VM is
 * judged on its own window, clear of AMD's hole; the distribution's
 * meets it.
 */
static void test_window_distribution(void)
{
    Host h = host_new(REL, CONFIG_TYPE1, true, CAP_48);
    GpBarGateVm vm = vm_default();
    g_autoptr(GPtrArray) upstream = NULL, distro = NULL, distro_hole = NULL;

    vm.machine.ram = 8ULL << 30;
    vm.machine.type = "pc-q35-rhel9.6.0";
    distro = decide(&h, &vm, false, false);
    assert_gate(distro, 0, GP_BAR_GATE_MAPPED, "window as bounded (anywhere "
                "from 4 GiB to the top of the 46-bit address space the guest "
                "may have: machine type 'pc-q35-rhel9.6.0' is a "
                "distribution's, whose memory layout and CPU defaults are not "
                "read here), 0x100000000-0x3fffffffffff, is inside the "
                "IOMMU's 48-bit address space");
    sb_write(h.sb, "sys/kernel/iommu_groups/2/reserved_regions",
             "0x000000fd00000000 0x000000ffffffffff reserved\n");
    distro_hole = decide(&h, &vm, false, false);
    assert_gate(distro_hole, 0, GP_BAR_GATE_UNKNOWN,
                "0x100000000-0x3fffffffffff, overlaps IOMMU group 2's "
                "reserved region 0xfd00000000-0xffffffffff");
    vm.machine.type = "pc-q35-10.0";
    upstream = decide(&h, &vm, false, false);
    assert_gate(upstream, 0, GP_BAR_GATE_MAPPED, "as QEMU places it for "
                "pc-q35-10.0 with 8192 MiB of RAM");
    host_free(&h);
}

/*
 * A distribution's q35 type: bounds by upstream's layout; another
 * chipset, or SGX EPC: an estimate; a hole of 0: empty.
 */
static void test_window_not_modelled(void)
{
    GpPcMachine m = { .type = "pc-q35-rhel9.6.0", .ram = 8ULL << 30,
                      .vendor = GP_CPU_VENDOR_INTEL };
    g_auto(GpPcWindow) w = { 0 };

    gp_pc_window(&m, &w);
    g_assert_false(w.exact);
    g_assert_true(w.bounds);
    g_assert_true(w.layout_assumed);
    g_assert_nonnull(strstr(w.why, "'pc-q35-rhel9.6.0' is a "
                            "distribution's"));
    /* From 4 GiB to the end of a window above all 8 GiB: 12 + 32 GiB. */
    g_assert_cmphex(w.start, ==, 4ULL << 30);
    g_assert_cmphex(w.end, ==, (44ULL << 30) - 1);
    gp_pc_window_clear(&w);
    /* Upstream's type before 2.11: bounds, by a layout that is read. */
    m.type = "pc-q35-2.10";
    gp_pc_window(&m, &w);
    g_assert_true(w.bounds);
    g_assert_false(w.layout_assumed);
    gp_pc_window_clear(&w);
    /* A distribution's i440fx type: i440fx's 2 GiB default hole. */
    m.type = "pc-i440fx-rhel7.6.0";
    g_assert_cmphex(gp_pc_hole64_size(&m), ==, 2ULL << 30);
    m.type = "microvm";
    gp_pc_window(&m, &w);
    g_assert_false(w.exact);
    g_assert_false(w.bounds);
    g_assert_nonnull(strstr(w.why, "neither q35 nor i440fx"));
    gp_pc_window_clear(&w);
    /* SGX EPC (not modelled): an estimate, not bounds. */
    m.type = "pc-q35-10.0";
    m.not_modelled = "<memory model='sgx-epc'>";
    gp_pc_window(&m, &w);
    g_assert_false(w.exact);
    g_assert_false(w.bounds);
    /* A hole of 0: an empty window. */
    m.not_modelled = NULL;
    m.hole64_set = true;
    m.hole64_size = 0;
    gp_pc_window_clear(&w);
    gp_pc_window(&m, &w);
    g_assert_true(w.exact);
    g_assert_cmphex(w.end + 1, ==, w.start);
    /* ... and on bounds too (a distribution's type). */
    m.type = "pc-q35-rhel9.6.0";
    gp_pc_window_clear(&w);
    gp_pc_window(&m, &w);
    g_assert_true(w.bounds);
    g_assert_cmphex(w.end + 1, ==, w.start);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/bar-gate/iova-holes", test_iova_holes);
    g_test_add_func("/bar-gate/type1-real", test_type1_real);
    g_test_add_func("/bar-gate/emulated-container", test_emulated_container);
    g_test_add_func("/bar-gate/emulated-unknown", test_emulated_unknown);
    g_test_add_func("/bar-gate/emulated-container-open",
                    test_emulated_container_open);
    g_test_add_func("/bar-gate/mmap-uncovered", test_mmap_uncovered);
    g_test_add_func("/bar-gate/unknown-config", test_unknown_config);
    g_test_add_func("/bar-gate/config-without-release",
                    test_config_without_release);
    g_test_add_func("/bar-gate/iommufd", test_iommufd);
    g_test_add_func("/bar-gate/no-mmap", test_no_mmap);
    g_test_add_func("/bar-gate/no-mmap-unknown", test_no_mmap_unknown);
    g_test_add_func("/bar-gate/viommu", test_viommu);
    g_test_add_func("/bar-gate/window-beyond-iommu", test_window_beyond_iommu);
    g_test_add_func("/bar-gate/window-unknowns", test_window_unknowns);
    g_test_add_func("/bar-gate/bar-beyond-iommu", test_bar_beyond_iommu);
    g_test_add_func("/bar-gate/reserved-region", test_reserved_region);
    g_test_add_func("/bar-gate/window-distribution",
                    test_window_distribution);
    g_test_add_func("/bar-gate/reserved-parse", test_reserved_parse);
    g_test_add_func("/bar-gate/amd-iommu", test_amd_iommu);
    g_test_add_func("/bar-gate/iommu-and-reserved-unknown",
                    test_iommu_and_reserved_unknown);
    g_test_add_func("/bar-gate/release-version", test_release_version);
    g_test_add_func("/bar-gate/vcpu-vendor", test_vcpu_vendor);
    g_test_add_func("/bar-gate/window-past-guest", test_window_past_guest);
    g_test_add_func("/bar-gate/window-not-modelled",
                    test_window_not_modelled);
    return g_test_run();
}
