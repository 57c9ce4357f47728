/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The VM rule (gp_p2p_vm_rule() in gpup2p/p2p-rule.h) on synthetic sysfs
 * trees: a guest's P2P request must reach the IOMMU (every switch port on
 * the way redirects it: ACS RR and CR) and the root complex must forward
 * it (Linux's host bridge rule). Plans and the VM verdict agree.
 */
#include <string.h>
#include <unistd.h>

#include "gpup2p/p2p.h"
#include "gpup2p/plan.h"
#include "gpup2p/snapshot.h"
#include "sysfs-builder.h"

#define DOWN_A "0000:02:00.0"
#define DOWN_B "0000:02:01.0"
#define RR_CR  (GP_ACS_SV | GP_ACS_RR | GP_ACS_CR | GP_ACS_UF)

static GpTopology *read_ok(const char *root)
{
    g_autoptr(GError) err = NULL;
    GpTopology *topo = gp_topo_read(root, &err);

    g_assert_no_error(err);
    g_assert_nonnull(topo);
    return topo;
}

/* Both verdicts for @a, @b, checking that the VM one is symmetric. */
static GpVmP2pKind vm(const GpTopology *t, const char *a, const char *b,
                      GpP2pKind *bare, char **reason)
{
    GpP2pVerdict v, w;
    GpVmP2pKind kind;

    gp_p2p_verdict(t, gp_topo_find(t, a), gp_topo_find(t, b), &v);
    gp_p2p_verdict(t, gp_topo_find(t, b), gp_topo_find(t, a), &w);
    g_assert_cmpint(v.vm_kind, ==, w.vm_kind);
    kind = v.vm_kind;
    if (bare) {
        *bare = v.kind;
    }
    if (reason) {
        *reason = g_steal_pointer(&v.vm_reason);
    }
    gp_p2p_verdict_clear(&v);
    gp_p2p_verdict_clear(&w);
    return kind;
}

static void assert_has(const char *text, const char *part)
{
    if (!strstr(text, part)) {
        g_error("'%s' lacks '%s'", text, part);
    }
}

/*
 * Switch peers whose downstream ports have no ACS: p2pdma says direct,
 * but the switch routes the guest-physical address on host windows.
 */
static void test_switch_without_acs(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *why = NULL;
    GpP2pKind bare;

    sb_two_node_host(sb, 0x2020);       /* a listed root complex */
    t = read_ok(sb_root(sb));
    g_assert_cmpint(vm(t, SB_GPU_A, SB_GPU_B, &bare, &why), ==,
                    GP_VM_P2P_BYPASS);
    g_assert_cmpint(bare, ==, GP_P2P_DIRECT);
    assert_has(why, "bypasses the IOMMU");
    /* The builder's switch ports carry ACS with nothing enabled. */
    assert_has(why, DOWN_A " (switch downstream port, ACS Control none, "
               "needs SV RR CR UF)");
    assert_has(why, DOWN_B " (switch downstream port, ACS Control none, "
               "needs SV RR CR UF)");
    g_clear_pointer(&why, g_free);
    /* A switch port routes the guest address whoever the peer is. */
    g_assert_cmpint(vm(t, SB_GPU_A, SB_GPU_C, &bare, &why), ==,
                    GP_VM_P2P_BYPASS);
    g_assert_cmpint(bare, ==, GP_P2P_HOST_BRIDGE);
    assert_has(why, DOWN_A);
    g_assert_null(strstr(why, DOWN_B));
    /* GPUs below two root ports that isolate (Linux's default) pass. */
    g_assert_cmpint(vm(t, SB_GPU_C, SB_GPU_F, NULL, NULL), ==,
                    GP_VM_P2P_OK);
}

/* With RR and CR on both downstream ports the request reaches the IOMMU. */
static void test_switch_with_acs(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *why = NULL;
    GpP2pKind bare;

    sb_two_node_host(sb, 0x2020);
    sb_set_acs(sb, DOWN_A, 0x5f, RR_CR);
    sb_set_acs(sb, DOWN_B, 0x5f, RR_CR);
    t = read_ok(sb_root(sb));
    g_assert_cmpint(vm(t, SB_GPU_A, SB_GPU_B, &bare, &why), ==,
                    GP_VM_P2P_OK);
    g_assert_cmpint(bare, ==, GP_P2P_HOST_BRIDGE);
    assert_has(why, "isolated up to the root port");
    assert_has(why, "Skylake-SP");
    g_assert_cmpint(vm(t, SB_GPU_A, SB_GPU_F, NULL, NULL), ==,
                    GP_VM_P2P_OK);
}

/* RR without CR (or the other way round) is not enough; nor is one port. */
static void test_switch_partial_acs(void)
{
    static const struct {
        uint16_t ctrl_a, ctrl_b;
        const char *blamed, *cleared;
    } cases[] = {
        { GP_ACS_SV | GP_ACS_RR, RR_CR, DOWN_A, DOWN_B },
        { RR_CR, GP_ACS_SV | GP_ACS_CR, DOWN_B, DOWN_A },
        { RR_CR, GP_ACS_SV | GP_ACS_EC, DOWN_B, DOWN_A },
    };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(SysfsBuilder) sb = sb_new();
        g_autoptr(GpTopology) t = NULL;
        g_autofree char *why = NULL;

        sb_two_node_host(sb, 0x2020);
        sb_set_acs(sb, DOWN_A, 0x7f, cases[i].ctrl_a);
        sb_set_acs(sb, DOWN_B, 0x7f, cases[i].ctrl_b);
        t = read_ok(sb_root(sb));
        g_assert_cmpint(vm(t, SB_GPU_A, SB_GPU_B, NULL, &why), ==,
                        GP_VM_P2P_BYPASS);
        assert_has(why, cases[i].blamed);
        assert_has(why, "needs SV RR CR UF");
        g_assert_null(strstr(why, cases[i].cleared));
    }
}

/* Through the IOMMU, but the root complex must forward: Linux's list. */
static void test_root_complex(void)
{
    static const struct {
        uint16_t hb_device;
        const char *vendor;
        unsigned family;
        GpVmP2pKind same, across;
    } cases[] = {
        { 0x2020, "GenuineIntel", 6, GP_VM_P2P_OK, GP_VM_P2P_OK },
        /* Haswell-EP forwards only within one host bridge. */
        { 0x2f00, "GenuineIntel", 6, GP_VM_P2P_OK, GP_VM_P2P_NONE },
        /* Q35's 29c0 is on no list. */
        { 0x29c0, "GenuineIntel", 6, GP_VM_P2P_NONE, GP_VM_P2P_NONE },
        /* Sapphire Rapids DSA and QAT 4xxx: Linux 7.x's additions. */
        { 0x0b25, "GenuineIntel", 6, GP_VM_P2P_OK, GP_VM_P2P_OK },
        { 0x4940, "GenuineIntel", 6, GP_VM_P2P_OK, GP_VM_P2P_OK },
        /* AMD Zen forwards whatever the host bridge; older AMD does not. */
        { 0x29c0, "AuthenticAMD", 0x19, GP_VM_P2P_OK, GP_VM_P2P_OK },
        { 0x29c0, "AuthenticAMD", 0x17, GP_VM_P2P_OK, GP_VM_P2P_OK },
        { 0x29c0, "AuthenticAMD", 0x15, GP_VM_P2P_NONE, GP_VM_P2P_NONE },
        /* cpu_supports_p2pdma() tests X86_VENDOR_AMD: Hygon is not. */
        { 0x29c0, "HygonGenuine", 0x18, GP_VM_P2P_NONE, GP_VM_P2P_NONE },
    };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(SysfsBuilder) sb = sb_new();
        g_autoptr(GpTopology) t = NULL;

        sb_two_node_host(sb, cases[i].hb_device);
        sb_cpu(sb, cases[i].vendor, cases[i].family);
        sb_set_acs(sb, DOWN_A, 0x5f, RR_CR);
        sb_set_acs(sb, DOWN_B, 0x5f, RR_CR);
        t = read_ok(sb_root(sb));
        if (vm(t, SB_GPU_A, SB_GPU_C, NULL, NULL) != cases[i].same ||
            vm(t, SB_GPU_A, SB_GPU_F, NULL, NULL) != cases[i].across) {
            g_error("case %zu (%04x, %s %x): got %s/%s", i,
                    cases[i].hb_device, cases[i].vendor, cases[i].family,
                    gp_vm_p2p_kind_name(vm(t, SB_GPU_A, SB_GPU_C, NULL,
                                           NULL)),
                    gp_vm_p2p_kind_name(vm(t, SB_GPU_A, SB_GPU_F, NULL,
                                           NULL)));
        }
    }
}

/* {PCI_VENDOR_ID_GOOGLE, PCI_ANY_ID}: any Google root complex forwards. */
static void test_google_root_complex(void)
{
    const uint32_t gpu = 0x030200, port = 0x060400;
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *why = NULL;

    sb_cpu(sb, "ARM", 0);
    sb_add(sb, NULL, "0000:00:00.0", SB_HOST_BRIDGE, 0x1ae0, 0x5a17,
           0x060000, 0, -1, NULL);
    sb_add(sb, NULL, "0000:00:01.0", SB_ROOT_PORT, 0x1ae0, 0x0042, port, 0,
           1, "pcieport");
    sb_add(sb, NULL, "0000:00:02.0", SB_ROOT_PORT, 0x1ae0, 0x0042, port, 0,
           2, "pcieport");
    sb_add(sb, "0000:00:01.0", "0000:01:00.0", SB_ENDPOINT, 0x10de, 0x2335,
           gpu, 0, 3, "vfio-pci");
    sb_add(sb, "0000:00:02.0", "0000:02:00.0", SB_ENDPOINT, 0x10de, 0x2335,
           gpu, 0, 4, "vfio-pci");
    sb_set_acs(sb, "0000:00:01.0", 0x5f, SB_ACS_LINUX);
    sb_set_acs(sb, "0000:00:02.0", 0x5f, SB_ACS_LINUX);
    t = read_ok(sb_root(sb));
    g_assert_cmpint(vm(t, "0000:01:00.0", "0000:02:00.0", NULL, &why), ==,
                    GP_VM_P2P_OK);
    assert_has(why, "Google");
}

/* A switch port whose ACS cannot be read: never a clique, never "bypass". */
static void test_acs_unknown(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *why = NULL;

    sb_two_node_host(sb, 0x2020);
    sb_set_acs(sb, DOWN_A, 0x5f, RR_CR);
    sb_set_acs(sb, DOWN_B, 0x5f, RR_CR);
    sb_truncate_config(sb, DOWN_B, 64);
    t = read_ok(sb_root(sb));
    g_assert_cmpint(vm(t, SB_GPU_A, SB_GPU_B, NULL, &why), ==,
                    GP_VM_P2P_UNKNOWN);
    assert_has(why, DOWN_B);
    /* The pairs whose path does not cross it are still decided. */
    g_assert_cmpint(vm(t, SB_GPU_A, SB_GPU_C, NULL, NULL), ==,
                    GP_VM_P2P_OK);
}

/* Overwrite @len bytes of @bdf's config file at @off with 0xff. */
static void config_all_ones(SysfsBuilder *sb, const char *bdf, size_t off,
                            size_t len)
{
    g_autofree char *dir = sb_device_dir(sb, bdf);
    g_autofree char *path = g_build_filename(dir, "config", NULL);
    g_autofree gchar *cfg = NULL;
    gsize n;

    g_assert_true(g_file_get_contents(path, &cfg, &n, NULL));
    g_assert_cmpuint(off + len, <=, n);
    memset(cfg + off, 0xff, len);
    g_assert_true(g_file_set_contents(path, cfg, (gssize)n, NULL));
}

/*
 * ACS registers that read all ones (a port that stopped answering, or in
 * D3cold) are unknown: all ones has RR and CR set, and must never read as
 * "redirects"; nor may extended space of all ones read as "no ACS".
 */
static void test_acs_all_ones(void)
{
    static const struct {
        const char *port;
        size_t off, len;
        const char *words;
    } cases[] = {
        /* The ACS Capability and Control registers. */
        { DOWN_B, 0x104, 4, "ACS Control at 0x106 reads all ones" },
        { "0000:00:02.0", 0x104, 4, "ACS Control at 0x106 reads all ones" },
        /* The whole extended space, header included. */
        { DOWN_B, 0x100, 0xf00, "extended config space reads all ones" },
    };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(SysfsBuilder) sb = sb_new();
        g_autoptr(GpTopology) t = NULL;
        g_autofree char *why = NULL;
        const char *peer = i == 1 ? SB_GPU_C : SB_GPU_B;
        const char *other = i == 1 ? SB_GPU_F : SB_GPU_A;
        GpP2pKind bare;

        sb_two_node_host(sb, 0x2020);
        sb_set_acs(sb, DOWN_A, 0x5f, SB_ACS_LINUX);
        sb_set_acs(sb, DOWN_B, 0x5f, SB_ACS_LINUX);
        config_all_ones(sb, cases[i].port, cases[i].off, cases[i].len);
        t = read_ok(sb_root(sb));
        if (vm(t, other, peer, &bare, &why) != GP_VM_P2P_UNKNOWN ||
            !strstr(why, cases[i].port) || !strstr(why, cases[i].words) ||
            /* p2pdma reads ACS only up to a common bridge. */
            (i != 1 && bare != GP_P2P_UNKNOWN)) {
            g_error("case %zu (%s): %s (bare %s): %s", i, cases[i].port,
                    gp_vm_p2p_kind_name(vm(t, other, peer, NULL, NULL)),
                    gp_p2p_kind_name(bare), why);
        }
        /* Only the pairs through it: the rest of the host is judged. */
        g_assert_cmpint(vm(t, SB_GPU_D, SB_GPU_F, NULL, NULL), !=,
                        GP_VM_P2P_UNKNOWN);
    }
}

/*
 * A link speed Linux never writes on a bridge is named (topo shows it),
 * but the rule reads nothing from a bridge's link attributes: the pairs
 * through it are judged. On the device itself it still marks the device.
 */
/* Write "fast", a link speed Linux never writes, as @bdf's current one. */
static void odd_link_speed(SysfsBuilder *sb, const char *bdf)
{
    g_autofree char *dir = sb_device_dir(sb, bdf);
    g_autofree char *path = g_build_filename(dir, "current_link_speed", NULL);

    g_assert_true(g_file_set_contents(path, "fast\n", -1, NULL));
}

static void test_bridge_link_speed(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *why = NULL;

    sb_two_node_host(sb, 0x2020);
    sb_set_acs(sb, DOWN_A, 0x5f, SB_ACS_LINUX);
    sb_set_acs(sb, DOWN_B, 0x5f, SB_ACS_LINUX);
    odd_link_speed(sb, DOWN_B);
    t = read_ok(sb_root(sb));
    g_assert_nonnull(gp_topo_find(t, DOWN_B)->attr_invalid);
    g_assert_cmpint(vm(t, SB_GPU_A, SB_GPU_B, NULL, &why), ==,
                    GP_VM_P2P_OK);
    g_clear_pointer(&t, gp_topo_free);
    g_clear_pointer(&why, g_free);
    odd_link_speed(sb, SB_GPU_B);
    t = read_ok(sb_root(sb));
    g_assert_cmpint(vm(t, SB_GPU_A, SB_GPU_B, NULL, &why), ==,
                    GP_VM_P2P_UNKNOWN);
    assert_has(why, "'fast'");
}

/* Two functions of one device route between themselves unless both
 * redirect, whatever the port above them does. */
static void test_functions_of_one_device(void)
{
    const uint32_t gpu = 0x030200;
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *why = NULL;
    const char *fn1 = "0000:05:00.1";

    sb_two_node_host(sb, 0x2020);
    sb_add(sb, "0000:00:02.0", fn1, SB_ENDPOINT, 0x10de, 0x2335, gpu, 0, 9,
           "vfio-pci");
    t = read_ok(sb_root(sb));
    g_assert_cmpint(vm(t, SB_GPU_C, fn1, NULL, &why), ==, GP_VM_P2P_BYPASS);
    assert_has(why, "functions of one device");
    g_clear_pointer(&t, gp_topo_free);
    sb_set_acs(sb, SB_GPU_C, 0x5f, RR_CR);
    sb_set_acs(sb, fn1, 0x5f, RR_CR);
    t = read_ok(sb_root(sb));
    g_assert_cmpint(vm(t, SB_GPU_C, fn1, NULL, NULL), ==, GP_VM_P2P_OK);
}

#define GPU_CLASS  0x030200
#define PORT_CLASS 0x060400

/* Point @bdf's iommu_group link at @group; below 0, remove the link. */
static void set_group(SysfsBuilder *sb, const char *bdf, int group)
{
    g_autofree char *dir = sb_device_dir(sb, bdf);
    g_autofree char *link = g_build_filename(dir, "iommu_group", NULL);
    g_autofree char *target = g_strdup_printf(
        "../../../kernel/iommu_groups/%d", group);

    g_assert_cmpint(unlink(link), ==, 0);
    if (group >= 0) {
        g_assert_cmpint(symlink(target, link), ==, 0);
    }
}

static void add_gpu(SysfsBuilder *sb, const char *parent, const char *bdf,
                    int group)
{
    sb_add(sb, parent, bdf, SB_ENDPOINT, 0x10de, 0x2335, GPU_CLASS, 0, group,
           "vfio-pci");
}

static void add_port(SysfsBuilder *sb, const char *parent, const char *bdf,
                     SbKind kind, int group)
{
    sb_add(sb, parent, bdf, kind, 0x1000, 0xc010, PORT_CLASS, 0, group,
           "pcieport");
}

/*
 * Cascaded switches: two GPUs below a lower switch whose ports isolate,
 * under an upper switch's downstream port without ACS. Every redirected
 * request climbs through that port, which routes on host windows; Linux's
 * pci_acs_path_enabled() fails there and groups the lower switch whole.
 *   00:01.0 root port > 10:00.0 up > 11:00.0 down (no ACS) > 12:00.0 up
 *        > 13:00.0 down > 14:00.0 GPU X;  > 13:01.0 down > 15:00.0 GPU Y
 *     > 11:01.0 down > 16:00.0 GPU Z
 *   00:02.0 root port > 20:00.0 GPU W
 */
static void test_cascaded_switches(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *why = NULL;

    sb_add(sb, NULL, "0000:00:00.0", SB_HOST_BRIDGE, 0x8086, 0x2020,
           0x060000, 0, -1, NULL);
    add_port(sb, NULL, "0000:00:01.0", SB_ROOT_PORT, 1);
    add_port(sb, "0000:00:01.0", "0000:10:00.0", SB_SWITCH_UP, 2);
    add_port(sb, "0000:10:00.0", "0000:11:00.0", SB_SWITCH_DOWN, 3);
    add_port(sb, "0000:11:00.0", "0000:12:00.0", SB_SWITCH_UP, 3);
    add_port(sb, "0000:12:00.0", "0000:13:00.0", SB_SWITCH_DOWN, 3);
    add_port(sb, "0000:12:00.0", "0000:13:01.0", SB_SWITCH_DOWN, 3);
    add_gpu(sb, "0000:13:00.0", "0000:14:00.0", 3);
    add_gpu(sb, "0000:13:01.0", "0000:15:00.0", 3);
    add_port(sb, "0000:10:00.0", "0000:11:01.0", SB_SWITCH_DOWN, 4);
    add_gpu(sb, "0000:11:01.0", "0000:16:00.0", 5);
    add_port(sb, NULL, "0000:00:02.0", SB_ROOT_PORT, 6);
    add_gpu(sb, "0000:00:02.0", "0000:20:00.0", 7);
    sb_set_acs(sb, "0000:00:01.0", 0x5f, SB_ACS_LINUX);
    sb_set_acs(sb, "0000:00:02.0", 0x5f, SB_ACS_LINUX);
    sb_set_acs(sb, "0000:11:01.0", 0x5f, SB_ACS_LINUX);
    sb_set_acs(sb, "0000:13:00.0", 0x5f, SB_ACS_LINUX);
    sb_set_acs(sb, "0000:13:01.0", 0x5f, SB_ACS_LINUX);
    sb_cpu(sb, "GenuineIntel", 6);
    t = read_ok(sb_root(sb));
    g_assert_cmpint(vm(t, "0000:14:00.0", "0000:15:00.0", NULL, &why), ==,
                    GP_VM_P2P_BYPASS);
    assert_has(why, "0000:11:00.0 (no ACS capability)");
    /* Named once, though both paths cross it. */
    g_assert_null(strstr(strstr(why, "0000:11:00.0") + 1, "0000:11:00.0"));
    g_assert_null(strstr(why, "0000:13:0"));
    /* Linux groups the lower switch whole, as the rule refuses it. */
    assert_has(why, "the kernel's IOMMU group 3 holds both");
    g_clear_pointer(&why, g_free);
    g_assert_cmpint(vm(t, "0000:14:00.0", "0000:16:00.0", NULL, &why), ==,
                    GP_VM_P2P_BYPASS);
    assert_has(why, "0000:11:00.0 (no ACS capability)");
    /* Isolated all the way up: the sibling and the root port's GPU pair. */
    g_assert_cmpint(vm(t, "0000:16:00.0", "0000:20:00.0", NULL, NULL), ==,
                    GP_VM_P2P_OK);
}

/*
 * Two functions of one multifunction root port: with ACS Control cleared
 * (pci=disable_acs_redir) they route between each other, and Linux checks
 * root ports; with Linux's default they isolate.
 */
static void test_multifunction_root_port(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *why = NULL;

    sb_add(sb, NULL, "0000:00:00.0", SB_HOST_BRIDGE, 0x8086, 0x2020,
           0x060000, 0, -1, NULL);
    add_port(sb, NULL, "0000:00:1c.0", SB_ROOT_PORT, 1);
    add_port(sb, NULL, "0000:00:1c.1", SB_ROOT_PORT, 1);
    add_gpu(sb, "0000:00:1c.0", "0000:01:00.0", 1);
    add_gpu(sb, "0000:00:1c.1", "0000:02:00.0", 1);
    sb_set_multifunction(sb, "0000:00:1c.0");
    sb_set_acs(sb, "0000:00:1c.0", 0x5f, 0);
    sb_set_acs(sb, "0000:00:1c.1", 0x5f, 0);
    sb_cpu(sb, "GenuineIntel", 6);
    t = read_ok(sb_root(sb));
    g_assert_cmpint(vm(t, "0000:01:00.0", "0000:02:00.0", NULL, &why), ==,
                    GP_VM_P2P_BYPASS);
    assert_has(why, "0000:00:1c.0 (root port, ACS Control none, needs SV RR "
               "CR UF)");
    assert_has(why, "0000:00:1c.1 (root port, ACS Control none, needs SV RR "
               "CR UF)");
    g_clear_pointer(&t, gp_topo_free);
    sb_set_acs(sb, "0000:00:1c.0", 0x5f, SB_ACS_LINUX);
    sb_set_acs(sb, "0000:00:1c.1", 0x5f, SB_ACS_LINUX);
    /* ... and Linux then gives each side a group of its own. */
    set_group(sb, "0000:00:1c.1", 2);
    set_group(sb, "0000:02:00.0", 2);
    t = read_ok(sb_root(sb));
    g_assert_cmpint(vm(t, "0000:01:00.0", "0000:02:00.0", NULL, NULL), ==,
                    GP_VM_P2P_OK);
}

/*
 * pci_acs_flags_enabled() requires only the controls the Capability
 * register implements (the rest are hard-wired), Egress Control aside.
 */
static void test_acs_capability_mask(void)
{
    static const struct {
        uint16_t cap, ctrl;
        GpVmP2pKind want;
        const char *words;
    } cases[] = {
        /* RR and CR not implemented: not required. */
        { GP_ACS_SV | GP_ACS_UF, GP_ACS_SV | GP_ACS_UF, GP_VM_P2P_OK, NULL },
        { GP_ACS_RR | GP_ACS_CR, GP_ACS_RR | GP_ACS_CR, GP_VM_P2P_OK, NULL },
        /* Implemented and off: required. */
        { 0x5f, GP_ACS_SV | GP_ACS_UF, GP_VM_P2P_BYPASS,
          "ACS Control SV UF, needs SV RR CR UF" },
        { GP_ACS_SV | GP_ACS_RR | GP_ACS_CR, GP_ACS_RR | GP_ACS_CR,
          GP_VM_P2P_BYPASS, "ACS Control RR CR, needs SV RR CR)" },
    };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(SysfsBuilder) sb = sb_new();
        g_autoptr(GpTopology) t = NULL;
        g_autofree char *why = NULL;
        GpVmP2pKind got;

        sb_two_node_host(sb, 0x2020);
        sb_set_acs(sb, DOWN_A, cases[i].cap, cases[i].ctrl);
        sb_set_acs(sb, DOWN_B, cases[i].cap, cases[i].ctrl);
        t = read_ok(sb_root(sb));
        got = vm(t, SB_GPU_A, SB_GPU_B, NULL, &why);
        if (got != cases[i].want ||
            (cases[i].words && !strstr(why, cases[i].words))) {
            g_error("case %zu (cap %04x ctrl %04x): %s: %s", i, cases[i].cap,
                    cases[i].ctrl, gp_vm_p2p_kind_name(got), why);
        }
    }
}

/*
 * A conventional PCI bus on either path (behind a PCIe-to-PCI bridge):
 * every device on it sees every request, and nothing there has ACS.
 */
static void test_conventional_pci(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *why = NULL;

    sb_add(sb, NULL, "0000:00:00.0", SB_HOST_BRIDGE, 0x8086, 0x2020,
           0x060000, 0, -1, NULL);
    add_port(sb, NULL, "0000:00:01.0", SB_ROOT_PORT, 1);
    sb_add(sb, "0000:00:01.0", "0000:01:00.0", SB_PCI_BRIDGE, 0x1b36,
           0x000e, PORT_CLASS, 0, 2, NULL);
    sb_add(sb, "0000:01:00.0", "0000:02:01.0", SB_PCI_ENDPOINT, 0x10de,
           0x2335, GPU_CLASS, 0, 2, "vfio-pci");
    sb_add(sb, "0000:01:00.0", "0000:02:02.0", SB_PCI_ENDPOINT, 0x10de,
           0x2335, GPU_CLASS, 0, 2, "vfio-pci");
    add_port(sb, NULL, "0000:00:02.0", SB_ROOT_PORT, 3);
    add_gpu(sb, "0000:00:02.0", "0000:03:00.0", 4);
    sb_add(sb, NULL, "0000:00:1f.0", SB_PCI_ENDPOINT, 0x10de, 0x2335,
           GPU_CLASS, 0, 5, "vfio-pci");
    sb_set_acs(sb, "0000:00:01.0", 0x5f, SB_ACS_LINUX);
    sb_set_acs(sb, "0000:00:02.0", 0x5f, SB_ACS_LINUX);
    sb_cpu(sb, "GenuineIntel", 6);
    t = read_ok(sb_root(sb));
    g_assert_cmpint(vm(t, "0000:02:01.0", "0000:02:02.0", NULL, &why), ==,
                    GP_VM_P2P_BYPASS);
    assert_has(why, "0000:01:00.0 (PCIe-to-PCI bridge");
    g_clear_pointer(&why, g_free);
    g_assert_cmpint(vm(t, "0000:02:01.0", "0000:03:00.0", NULL, &why), ==,
                    GP_VM_P2P_BYPASS);
    assert_has(why, "0000:01:00.0 (PCIe-to-PCI bridge");
    /* A conventional device integrated on the root bus is behind no
     * conventional bus: Linux checks no ACS for it (its path has no
     * bridge) and gives it a group of its own. */
    g_assert_cmpint(vm(t, "0000:00:1f.0", "0000:03:00.0", NULL, NULL), ==,
                    GP_VM_P2P_OK);
}

/*
 * Functions of one device are told by their shared link, not by slot:
 * with ARI a device's functions fill slots 0 to 31 of the bus below its
 * port. Without ACS of their own they route between themselves.
 */
static void test_one_device_by_link(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *why = NULL;
    const char *ari = "0000:05:01.0";

    sb_two_node_host(sb, 0x2020);
    add_gpu(sb, "0000:00:02.0", ari, 12);
    t = read_ok(sb_root(sb));
    g_assert_cmpint(vm(t, SB_GPU_C, ari, NULL, &why), ==, GP_VM_P2P_BYPASS);
    assert_has(why, "functions of one device");
    g_clear_pointer(&t, gp_topo_free);
    sb_set_acs(sb, SB_GPU_C, 0x5f, SB_ACS_LINUX);
    sb_set_acs(sb, ari, 0x5f, SB_ACS_LINUX);
    set_group(sb, ari, 16);     /* isolated functions: groups of their own */
    t = read_ok(sb_root(sb));
    g_assert_cmpint(vm(t, SB_GPU_C, ari, NULL, NULL), ==, GP_VM_P2P_OK);
}

/*
 * The kernel's IOMMU groups witness the guest verdict: a "yes" needs both
 * devices in groups, and different ones. Where the groups and config space
 * disagree, the more cautious decides and the reason says which.
 */
static void test_iommu_groups_witness(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *why = NULL;

    sb_two_node_host(sb, 0x2020);
    t = read_ok(sb_root(sb));
    g_assert_cmpint(vm(t, SB_GPU_C, SB_GPU_F, NULL, NULL), ==,
                    GP_VM_P2P_OK);
    /* A device with itself shares its group with itself: no proof of
     * anything, the rule's answer (as the kernel module gives it). */
    g_assert_cmpint(vm(t, SB_GPU_C, SB_GPU_C, NULL, NULL), ==,
                    GP_VM_P2P_OK);
    /* Separate groups under sibling ports without ACS: config decides. */
    g_assert_cmpint(vm(t, SB_GPU_A, SB_GPU_B, NULL, &why), ==,
                    GP_VM_P2P_BYPASS);
    assert_has(why, "different IOMMU groups (10, 11)");
    assert_has(why, "the config-space rule, the more cautious, decides");
    g_clear_pointer(&why, g_free);
    g_clear_pointer(&t, gp_topo_free);

    /* One group: never a clique, whatever config space says. */
    set_group(sb, SB_GPU_F, 12);
    t = read_ok(sb_root(sb));
    g_assert_cmpint(vm(t, SB_GPU_C, SB_GPU_F, NULL, &why), ==,
                    GP_VM_P2P_BYPASS);
    assert_has(why, "one IOMMU group (12)");
    assert_has(why, "which said through-iommu");
    g_clear_pointer(&why, g_free);
    g_clear_pointer(&t, gp_topo_free);

    /* No group: nothing shows the kernel isolates it. */
    set_group(sb, SB_GPU_F, -1);
    t = read_ok(sb_root(sb));
    g_assert_cmpint(vm(t, SB_GPU_C, SB_GPU_F, NULL, &why), ==,
                    GP_VM_P2P_UNKNOWN);
    assert_has(why, SB_GPU_F " is in no IOMMU group");
}

/* The planner follows the VM rule: switch peers without ACS stay apart. */
static void test_plan_follows_vm_rule(void)
{
    const char *const gpus[] = { SB_GPU_A, SB_GPU_B, SB_GPU_C, SB_GPU_F,
                                 NULL };
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autoptr(GError) err = NULL;
    GpPlan *plan;
    guint i;

    sb_two_node_host(sb, 0x2020);
    t = read_ok(sb_root(sb));
    plan = gp_plan_compute(t, gpus, GP_PLAN_POLICY_SYSTEM, &err);
    g_assert_no_error(err);
    for (i = 0; i < plan->cliques->len; i++) {
        const GpClique *c = g_ptr_array_index(plan->cliques, i);

        g_assert_false(g_ptr_array_find(c->devices,
                                        gp_topo_find(t, SB_GPU_A), NULL));
        g_assert_false(g_ptr_array_find(c->devices,
                                        gp_topo_find(t, SB_GPU_B), NULL));
    }
    g_assert_cmpuint(plan->cliques->len, ==, 1);
    g_assert_cmpuint(plan->left_out->len, ==, 2);
    gp_plan_free(plan);
}

/*
 * A snapshot that recorded the kernel module's verdicts (`gpup2p snapshot`
 * with /dev/gpup2p there): readers prefer them, since on a kernel with
 * p2pdma they are the running kernel's own answer; the reasons say so. A
 * broken record is not taken, and the rule decides.
 */
static void test_kernel_verdicts_preferred(void)
{
    const char *const gpus[] = { SB_GPU_C, SB_GPU_F, NULL };
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autoptr(GError) err = NULL;
    g_autofree char *why = NULL;
    GpP2pVerdict v;
    GpP2pKind bare;
    GpPlan *plan;

    /* Q35's 29c0 on an Intel host: the rule's list does not forward. */
    sb_two_node_host(sb, 0x29c0);
    sb_cpu(sb, "GenuineIntel", 6);
    t = read_ok(sb_root(sb));
    g_assert_null(t->kernel_verdicts);
    g_assert_cmpint(vm(t, SB_GPU_C, SB_GPU_F, &bare, NULL), ==,
                    GP_VM_P2P_NONE);
    g_clear_pointer(&t, gp_topo_free);

    /* This kernel's p2pdma forwards between them (a list of its own). */
    sb_write(sb, GP_KERNEL_VERDICTS_FILE,
             "# gpup2p kernel verdicts: A B bare-metal distance guest "
             "out_flags\n"
             "source p2pdma\n"
             SB_GPU_C " " SB_GPU_F " host-bridge 4 through-iommu 0x38\n"
             SB_GPU_F " " SB_GPU_C " host-bridge 4 through-iommu 0x38\n"
             /* a device gone since: ignored */
             "0000:e0:00.0 " SB_GPU_C " none 4 none 0x18\n");
    t = read_ok(sb_root(sb));
    g_assert_nonnull(t->kernel_verdicts);
    g_assert_null(t->kernel_verdicts_note);
    g_assert_cmpuint(g_hash_table_size(t->kernel_verdicts), ==, 2);
    g_assert_cmpint(vm(t, SB_GPU_C, SB_GPU_F, &bare, &why), ==,
                    GP_VM_P2P_OK);
    g_assert_cmpint(bare, ==, GP_P2P_HOST_BRIDGE);
    assert_has(why, "the kernel (the root complex as p2pdma answers, "
               "recorded in the snapshot) says through-iommu; the "
               "library's rule said none: ");
    gp_p2p_verdict(t, gp_topo_find(t, SB_GPU_C), gp_topo_find(t, SB_GPU_F),
                   &v);
    g_assert_true(v.kernel_recorded);
    g_assert_cmpint(v.distance, ==, 4);
    assert_has(v.reason, "the kernel (p2pdma, recorded in the snapshot) "
               "says host-bridge at distance 4; the library's rule said "
               "none");
    gp_p2p_verdict_clear(&v);
    /* A pair the kernel was not asked about: the rule's, unmarked. */
    gp_p2p_verdict(t, gp_topo_find(t, SB_GPU_A), gp_topo_find(t, SB_GPU_C),
                   &v);
    g_assert_false(v.kernel_recorded);
    g_assert_cmpint(v.vm_kind, ==, GP_VM_P2P_BYPASS);
    gp_p2p_verdict_clear(&v);
    /* Planning follows: C and F share a clique. */
    plan = gp_plan_compute(t, gpus, GP_PLAN_POLICY_SYSTEM, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(plan->cliques->len, ==, 1);
    g_assert_cmpuint(plan->left_out->len, ==, 0);
    gp_plan_free(plan);
    g_clear_pointer(&t, gp_topo_free);

    /*
     * A recorded "through the IOMMU" for a pair the library proves a guest
     * bypasses (A sits behind a switch port without ACS): a module of an
     * older rule, or one that read an all-ones register as isolating. The
     * proof stands; the kernel's answer never makes a clique of it.
     */
    sb_write(sb, GP_KERNEL_VERDICTS_FILE,
             "source p2pdma\n"
             SB_GPU_A " " SB_GPU_C " host-bridge 4 through-iommu 0x38\n"
             SB_GPU_C " " SB_GPU_A " host-bridge 4 through-iommu 0x38\n");
    t = read_ok(sb_root(sb));
    g_assert_nonnull(t->kernel_verdicts);
    g_clear_pointer(&why, g_free);
    g_assert_cmpint(vm(t, SB_GPU_A, SB_GPU_C, NULL, &why), ==,
                    GP_VM_P2P_BYPASS);
    assert_has(why, "says through-iommu; the library's rule said "
               "bypasses-iommu: ");
    assert_has(why, "the library's, the more cautious stands");
    g_clear_pointer(&t, gp_topo_free);

    /*
     * A module of API 4 that could not read a hop's ACS answers unknown
     * for a pair the library finds forwarded: unknown stands, never a
     * clique. (On API 3 the file could not carry the word: the whole
     * record was refused as broken.)
     */
    sb_write(sb, GP_KERNEL_VERDICTS_FILE,
             "source p2pdma\n"
             SB_GPU_C " " SB_GPU_F " unknown 0 unknown 0x0\n"
             SB_GPU_F " " SB_GPU_C " unknown 0 unknown 0x0\n");
    t = read_ok(sb_root(sb));
    g_assert_nonnull(t->kernel_verdicts);
    g_assert_null(t->kernel_verdicts_note);
    g_clear_pointer(&why, g_free);
    g_assert_cmpint(vm(t, SB_GPU_C, SB_GPU_F, &bare, &why), ==,
                    GP_VM_P2P_UNKNOWN);
    g_assert_cmpint(bare, ==, GP_P2P_UNKNOWN);
    assert_has(why, "says unknown; ");
    assert_has(why, "the kernel's, the more cautious stands");
    plan = gp_plan_compute(t, gpus, GP_PLAN_POLICY_SYSTEM, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(plan->cliques->len, ==, 0);
    gp_plan_free(plan);
    g_clear_pointer(&t, gp_topo_free);

    /* A broken line: the whole record is not taken, and the note says so. */
    sb_write(sb, GP_KERNEL_VERDICTS_FILE,
             SB_GPU_C " " SB_GPU_F " host-bridge 4 through-iommu 0x38\n"
             SB_GPU_F " " SB_GPU_C " sideways 4 through-iommu 0x38\n");
    t = read_ok(sb_root(sb));
    g_assert_null(t->kernel_verdicts);
    assert_has(t->kernel_verdicts_note, "line 2: 'sideways through-iommu' "
               "are not verdicts; not taken");
    g_assert_cmpint(vm(t, SB_GPU_C, SB_GPU_F, NULL, NULL), ==,
                    GP_VM_P2P_NONE);
}

/*
 * A host whose two root ports 00:01.0 and 00:02.0 are @vendor:@device,
 * with ACS (Capability 5fh, Control @ctrl, the word at ACS + 8 @ctrl8)
 * where @acs, each with a GPU below in a group of its own, on an AMD Zen
 * CPU (the root complex forwards): only the ports decide.
 */
static GpTopology *quirk_host(SysfsBuilder *sb, uint16_t vendor,
                              uint16_t device, bool acs, uint16_t ctrl,
                              uint16_t ctrl8)
{
    const char *const ports[] = { "0000:00:01.0", "0000:00:02.0" };
    size_t i;

    sb_add(sb, NULL, "0000:00:00.0", SB_HOST_BRIDGE, 0x1022, 0x1480,
           0x060000, 0, -1, NULL);
    for (i = 0; i < G_N_ELEMENTS(ports); i++) {
        g_autofree char *gpu = g_strdup_printf("0000:0%zu:00.0", i + 1);

        sb_add(sb, NULL, ports[i], SB_ROOT_PORT, vendor, device, PORT_CLASS,
               0, (int)i + 1, "pcieport");
        add_gpu(sb, ports[i], gpu, (int)i + 1);
        if (acs) {
            g_autofree char *dir = sb_device_dir(sb, ports[i]);
            g_autofree char *path = g_build_filename(dir, "config", NULL);
            g_autofree gchar *cfg = NULL;
            gsize len;

            sb_set_acs(sb, ports[i], 0x5f, ctrl);
            g_assert_true(g_file_get_contents(path, &cfg, &len, NULL));
            cfg[0x108] = (char)(ctrl8 & 0xff);
            cfg[0x109] = (char)(ctrl8 >> 8);
            g_assert_true(g_file_set_contents(path, cfg, (gssize)len, NULL));
        }
    }
    sb_cpu(sb, "AuthenticAMD", 0x19);
    return read_ok(sb_root(sb));
}

/*
 * Linux's ACS quirks (pci_dev_specific_acs_enabled(), drivers/pci/
 * quirks.c) answer before any ACS register, in the shared rule as in
 * pci_acs_enabled(): root ports without ACS that Linux counts as
 * isolating, ports with ACS it does not, a flag sysfs does not show, and
 * Sunrise Point's Control at ACS + 8.
 */
static void test_acs_quirks(void)
{
    static const struct {
        uint16_t vendor, device;
        bool acs;
        uint16_t ctrl, ctrl8;
        GpVmP2pKind want;
        const char *words;
    } cases[] = {
        /* Ampere root ports: no ACS, pci_quirk_xgene_acs isolates. */
        { 0x1def, 0xe005, false, 0, 0, GP_VM_P2P_OK, NULL },
        /* Cavium ThunderX1 root ports; one past its ids gets no quirk. */
        { 0x177d, 0xa000, false, 0, 0, GP_VM_P2P_OK, NULL },
        { 0x177d, 0xa800, false, 0, 0, GP_VM_P2P_BYPASS,
          "0000:00:01.0 (no ACS capability)" },
        /* Amazon Annapurna Labs root ports. */
        { 0x1c36, 0x0031, false, 0, 0, GP_VM_P2P_OK, NULL },
        /* Zhaoxin: listed ports isolate without ACS; others never do,
         * whatever their ACS Control says. */
        { 0x1d17, 0x0715, false, 0, 0, GP_VM_P2P_OK, NULL },
        { 0x1d17, 0x0700, true, SB_ACS_LINUX, 0, GP_VM_P2P_BYPASS,
          "0000:00:01.0 (root port 1d17:0700: Linux's ACS quirk "
          "pci_quirk_zhaoxin_pcie_ports_acs says it does not isolate)" },
        /* Intel PCH root ports: by a flag sysfs does not show. */
        { 0x8086, 0x1c10, false, 0, 0, GP_VM_P2P_UNKNOWN,
          "PCI_DEV_FLAGS_ACS_ENABLED_QUIRK at boot, which sysfs does not "
          "show" },
        /* Sunrise Point: Control is the word at ACS + 8, not + 6. */
        { 0x8086, 0xa110, true, 0, SB_ACS_LINUX, GP_VM_P2P_OK, NULL },
        { 0x8086, 0xa110, true, SB_ACS_LINUX, 0, GP_VM_P2P_BYPASS,
          "0000:00:01.0 (root port 8086:a110: Linux's ACS quirk "
          "pci_quirk_intel_spt_pch_acs says it does not isolate)" },
        /* Any other Intel root port: its ACS registers, as always. */
        { 0x8086, 0xa120, true, SB_ACS_LINUX, 0, GP_VM_P2P_OK, NULL },
    };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(SysfsBuilder) sb = sb_new();
        g_autoptr(GpTopology) t = NULL;
        g_autofree char *why = NULL;
        GpVmP2pKind got;

        t = quirk_host(sb, cases[i].vendor, cases[i].device, cases[i].acs,
                       cases[i].ctrl, cases[i].ctrl8);
        got = vm(t, "0000:01:00.0", "0000:02:00.0", NULL, &why);
        if (got != cases[i].want ||
            (cases[i].words && !strstr(why, cases[i].words))) {
            g_error("case %zu (%04x:%04x): %s: %s; wanted %s%s%s", i,
                    cases[i].vendor, cases[i].device,
                    gp_vm_p2p_kind_name(got), why,
                    gp_vm_p2p_kind_name(cases[i].want),
                    cases[i].words ? " with " : "",
                    cases[i].words ? cases[i].words : "");
        }
    }
}

/*
 * Two functions of a multifunction NIC that Linux's
 * pci_quirk_mf_endpoint_acs vouches for (Intel 82599): no ACS, yet their
 * functions do not reach each other, so Linux gives each its own group.
 */
static void test_acs_quirk_functions(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *why = NULL;
    const char *const fns[] = { "0000:01:00.0", "0000:01:00.1" };
    size_t i;

    sb_add(sb, NULL, "0000:00:00.0", SB_HOST_BRIDGE, 0x8086, 0x2020,
           0x060000, 0, -1, NULL);
    add_port(sb, NULL, "0000:00:01.0", SB_ROOT_PORT, 1);
    sb_set_acs(sb, "0000:00:01.0", 0x5f, SB_ACS_LINUX);
    for (i = 0; i < G_N_ELEMENTS(fns); i++) {
        sb_add(sb, "0000:00:01.0", fns[i], SB_ENDPOINT, 0x8086, 0x10fb,
               0x020000, 0, (int)i + 2, "vfio-pci");
        sb_set_multifunction(sb, fns[i]);
    }
    sb_cpu(sb, "GenuineIntel", 6);
    t = read_ok(sb_root(sb));
    g_assert_cmpint(vm(t, fns[0], fns[1], NULL, &why), ==, GP_VM_P2P_OK);
}

/* A stand-in for the module: every pair reaches the IOMMU, but it cannot
 * answer for C and F (a device the kernel no longer finds: ENODEV). */
static bool ask_standin(void *ctx, struct gpup2p_verdict *v, GError **errp)
{
    const uint32_t c = GPUP2P_PCI_ADDR(0, 0x05, 0);
    const uint32_t f = GPUP2P_PCI_ADDR(0, 0x41, 0);

    (*(unsigned *)ctx)++;
    if ((v->a == c && v->b == f) || (v->a == f && v->b == c)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "/dev/gpup2p: "
                    "GPUP2P_VERDICT: No such device (no such PCI device)");
        return false;
    }
    v->verdict = GPUP2P_VERDICT_HOST_BRIDGE;
    v->distance = 4;
    v->vm_verdict = GPUP2P_VM_OK;
    v->out_flags = GPUP2P_VERDICT_FROM_P2PDMA | GPUP2P_VERDICT_VM_FROM_P2PDMA;
    return true;
}

/*
 * One pair the module cannot answer is that pair's unknown in the
 * snapshot's record, not a failed snapshot: every other pair keeps the
 * kernel's answer.
 */
static void test_kernel_verdicts_one_pair_fails(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *text = NULL;
    g_autofree char *why = NULL;
    unsigned asked = 0;
    GpP2pKind bare;

    sb_two_node_host(sb, 0x29c0);       /* the rule's list: not forwarded */
    sb_cpu(sb, "GenuineIntel", 6);
    t = read_ok(sb_root(sb));
    text = gp_kernel_verdicts_format(t, true, ask_standin, &asked);
    g_assert_nonnull(text);
    /* 5 GPUs and a NIC: every ordered pair asked, none skipped. */
    g_assert_cmpuint(asked, ==, 30);
    assert_has(text, SB_GPU_C " " SB_GPU_F " unknown 0 unknown 0x0 ");
    assert_has(text, SB_GPU_F " " SB_GPU_C " unknown 0 unknown 0x0 ");
    assert_has(text, SB_GPU_C " " SB_GPU_D " host-bridge 4 through-iommu "
               "0x18\n");
    g_clear_pointer(&t, gp_topo_free);

    sb_write(sb, GP_KERNEL_VERDICTS_FILE, text);
    t = read_ok(sb_root(sb));
    g_assert_nonnull(t->kernel_verdicts);
    g_assert_null(t->kernel_verdicts_note);
    g_assert_cmpint(vm(t, SB_GPU_C, SB_GPU_F, &bare, &why), ==,
                    GP_VM_P2P_UNKNOWN);
    g_assert_cmpint(bare, ==, GP_P2P_UNKNOWN);
    assert_has(why, "the kernel module could not answer for this pair when "
               "the snapshot was taken (/dev/gpup2p: GPUP2P_VERDICT: No "
               "such device (no such PCI device)); the library's rule "
               "said none: ");
    g_clear_pointer(&why, g_free);
    /* The pairs it answered: the kernel's, as before. */
    g_assert_cmpint(vm(t, SB_GPU_C, SB_GPU_D, NULL, NULL), ==,
                    GP_VM_P2P_OK);
    /* A proof of the library's still stands over the kernel's answer. */
    g_assert_cmpint(vm(t, SB_GPU_A, SB_GPU_B, NULL, NULL), ==,
                    GP_VM_P2P_BYPASS);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vm-rule/switch/no-acs", test_switch_without_acs);
    g_test_add_func("/vm-rule/switch/acs", test_switch_with_acs);
    g_test_add_func("/vm-rule/switch/partial-acs", test_switch_partial_acs);
    g_test_add_func("/vm-rule/root-complex", test_root_complex);
    g_test_add_func("/vm-rule/root-complex/google", test_google_root_complex);
    g_test_add_func("/vm-rule/acs-unknown", test_acs_unknown);
    g_test_add_func("/vm-rule/acs-all-ones", test_acs_all_ones);
    g_test_add_func("/vm-rule/bridge-link-speed", test_bridge_link_speed);
    g_test_add_func("/vm-rule/functions", test_functions_of_one_device);
    g_test_add_func("/vm-rule/linux/cascaded-switches",
                    test_cascaded_switches);
    g_test_add_func("/vm-rule/linux/multifunction-root-port",
                    test_multifunction_root_port);
    g_test_add_func("/vm-rule/linux/capability-mask",
                    test_acs_capability_mask);
    g_test_add_func("/vm-rule/linux/conventional-pci", test_conventional_pci);
    g_test_add_func("/vm-rule/linux/one-device-by-link",
                    test_one_device_by_link);
    g_test_add_func("/vm-rule/linux/acs-quirks", test_acs_quirks);
    g_test_add_func("/vm-rule/linux/acs-quirk-functions",
                    test_acs_quirk_functions);
    g_test_add_func("/vm-rule/iommu-groups", test_iommu_groups_witness);
    g_test_add_func("/vm-rule/plan", test_plan_follows_vm_rule);
    g_test_add_func("/vm-rule/kernel-verdicts",
                    test_kernel_verdicts_preferred);
    g_test_add_func("/vm-rule/kernel-verdicts/one-pair-fails",
                    test_kernel_verdicts_one_pair_fails);
    return g_test_run();
}
