/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The sysfs reader, path classes and P2P verdicts. */
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpup2p/module-client.h"
#include "gpup2p/p2p.h"
#include "gpup2p/rdma.h"
#include "gpup2p/snapshot.h"
#include "sysfs-builder.h"

static char *fixture(const char *name)
{
    return g_test_build_filename(G_TEST_DIST, "..", "fixtures", name, NULL);
}

static GpTopology *read_ok(const char *root)
{
    g_autoptr(GError) err = NULL;
    GpTopology *topo = gp_topo_read(root, &err);

    g_assert_no_error(err);
    g_assert_nonnull(topo);
    return topo;
}

static GpPathType path(const GpTopology *t, const char *a, const char *b)
{
    const GpDevice *da = gp_topo_find(t, a), *db = gp_topo_find(t, b);

    g_assert_nonnull(da);
    g_assert_nonnull(db);
    g_assert_cmpint(gp_path_classify(da, db), ==, gp_path_classify(db, da));
    return gp_path_classify(da, db);
}

static GpP2pKind verdict(const GpTopology *t, const char *a, const char *b,
                         char **reason)
{
    GpP2pVerdict v;
    GpP2pKind kind;

    gp_p2p_verdict(t, gp_topo_find(t, a), gp_topo_find(t, b), &v);
    kind = v.kind;
    if (reason) {
        *reason = g_steal_pointer(&v.reason);
    }
    gp_p2p_verdict_clear(&v);
    return kind;
}

static void test_h200_fixture(void)
{
    g_autofree char *root = fixture("h200x2-vm");
    g_autoptr(GpTopology) t = read_ok(root);
    g_autofree char *why = NULL;
    const GpDevice *g0, *g1;
    const GpBar *bar1;

    g_assert_cmpuint(t->devices->len, ==, 8);
    g_assert_cmpuint(t->host_bridges->len, ==, 1);
    g0 = gp_topo_find(t, "0000:00:06.0");
    g1 = gp_topo_find(t, "00:07.0");
    g_assert_nonnull(g0);
    g_assert_nonnull(g1);
    g_assert_true(gp_device_is_nvidia_gpu(g0));
    g_assert_cmphex(g0->device, ==, 0x2335);
    g_assert_cmpstr(g0->driver, ==, "nvidia");
    g_assert_cmpint(g0->numa_node, ==, -1);
    g_assert_cmpint(g0->iommu_group, ==, -1);
    g_assert_null(g0->parent);
    g_assert_cmpuint(g0->config->len, ==, 4096);
    g_assert_true(g0->acs_known);
    g_assert_false(g0->acs.present);
    g_assert_cmpint(g0->pcie.type, ==, GP_PCIE_TYPE_ENDPOINT);
    /* BAR1: 256 GiB, 64-bit prefetchable. */
    bar1 = gp_device_bar(g0, 2);
    g_assert_nonnull(bar1);
    g_assert_cmpuint(bar1->size, ==, 256ull << 30);
    g_assert_true(bar1->prefetchable && bar1->is64);
    g_assert_cmpstr(g0->host->name, ==, "pci0000:00");
    g_assert_cmphex(g0->host->device, ==, 0x0d57);
    g_assert_cmpint(path(t, "0000:00:06.0", "0000:00:07.0"), ==, GP_PATH_PHB);
    g_assert_cmpint(path(t, "0000:00:06.0", "0000:00:06.0"), ==,
                    GP_PATH_SELF);
    /* No proc/cpuinfo in this capture: AMD forwarding is undecidable. */
    g_assert_cmpint(verdict(t, "0000:00:06.0", "0000:00:07.0", &why), ==,
                    GP_P2P_UNKNOWN);
    g_assert_nonnull(strstr(why, "CPU vendor is unknown"));
    g_assert_nonnull(strstr(why, "8086:0d57"));
}

/* A capture from the virtual GPU host (tests/vhost/topologies/two-numa). */
static void test_vhost_fixture(void)
{
    g_autofree char *root = fixture("vhost-two-numa");
    g_autofree char *off_root = fixture("vhost-two-numa-acs-off");
    g_autoptr(GpTopology) t = read_ok(root);
    g_autoptr(GpTopology) off = read_ok(off_root);
    g_autofree char *why = NULL;
    const GpDevice *rp;

    g_assert_cmpuint(t->host_bridges->len, ==, 3);
    g_assert_cmpuint(t->cpu_vendor, ==, GP_CPU_VENDOR_AMD);
    /* The virtual host's TCG CPU is AMD family 19h (tests/vhost). */
    g_assert_cmpuint(t->cpu_family, ==, 0x19);
    /* Linux turned on SV RR CR UF on the root ports. */
    rp = gp_topo_find(t, "0000:00:10.0");
    g_assert_true(rp->acs_known && rp->acs.present);
    g_assert_cmphex(rp->acs.ctrl, ==, GP_ACS_SV | GP_ACS_RR | GP_ACS_CR |
                    GP_ACS_UF);
    g_assert_cmpint(gp_topo_find(t, "0000:41:00.0")->numa_node, ==, 1);
    g_assert_cmpint(gp_topo_find(t, "0000:03:00.0")->numa_node, ==, -1);

    g_assert_cmpint(path(t, "0000:03:00.0", "0000:04:00.0"), ==, GP_PATH_PIX);
    g_assert_cmpint(path(t, "0000:03:00.0", "0000:05:00.0"), ==, GP_PATH_PHB);
    g_assert_cmpint(path(t, "0000:41:00.0", "0000:81:00.0"), ==,
                    GP_PATH_NODE);
    g_assert_cmpint(path(t, "0000:03:00.0", "0000:41:00.0"), ==, GP_PATH_SYS);
    g_assert_cmpint(path(t, "0000:06:00.0", "0000:06:00.1"), ==, GP_PATH_PIX);

    g_assert_cmpint(verdict(t, "0000:03:00.0", "0000:04:00.0", NULL), ==,
                    GP_P2P_DIRECT);
    /* Redirected at the root port; AMD Zen's root complex forwards. */
    g_assert_cmpint(verdict(t, "0000:06:00.0", "0000:06:00.1", &why), ==,
                    GP_P2P_HOST_BRIDGE);
    g_assert_nonnull(strstr(why, "0000:00:12.0 (RR CR)"));
    g_assert_cmpint(verdict(off, "0000:06:00.0", "0000:06:00.1", NULL), ==,
                    GP_P2P_DIRECT);
}

static void test_switch_topology(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *why = NULL;
    const GpDevice *a;

    sb_two_node_host(sb, 0x29c0);
    t = read_ok(sb_root(sb));
    g_assert_cmpuint(t->host_bridges->len, ==, 3);
    a = gp_topo_find(t, SB_GPU_A);
    g_assert_cmpstr(a->parent->bdf, ==, "0000:02:00.0");
    g_assert_cmpstr(gp_device_switch(a->parent)->bdf, ==, "0000:01:00.0");
    g_assert_cmpstr(gp_device_root_port(a)->bdf, ==, "0000:00:01.0");
    g_assert_cmpint(a->iommu_group, ==, 10);
    g_assert_cmpstr(a->driver, ==, "vfio-pci");
    g_assert_cmpint(a->pcie.link_width, ==, 16);
    g_assert_cmpuint(t->cpu_vendor, ==, GP_CPU_VENDOR_INTEL);

    g_assert_cmpint(path(t, SB_GPU_A, SB_GPU_B), ==, GP_PATH_PIX);
    g_assert_cmpint(path(t, SB_GPU_A, SB_GPU_C), ==, GP_PATH_PHB);
    g_assert_cmpint(path(t, SB_GPU_A, SB_GPU_F), ==, GP_PATH_NODE);
    g_assert_cmpint(path(t, SB_GPU_A, SB_GPU_D), ==, GP_PATH_SYS);
    g_assert_cmpint(path(t, SB_GPU_D, SB_NIC), ==, GP_PATH_PHB);
    g_assert_cmpint(path(t, SB_GPU_A, "0000:02:00.0"), ==, GP_PATH_PIX);

    g_assert_cmpint(verdict(t, SB_GPU_A, SB_GPU_B, &why), ==, GP_P2P_DIRECT);
    g_assert_nonnull(strstr(why, "0000:01:00.0"));
    g_clear_pointer(&why, g_free);
    /* Q35's 8086:29c0 is not on Linux's list: no forwarding between ports. */
    g_assert_cmpint(verdict(t, SB_GPU_A, SB_GPU_C, &why), ==, GP_P2P_NONE);
    g_assert_nonnull(strstr(why, "8086:29c0"));
    g_clear_pointer(&why, g_free);
    /* No device at 80:00.0: that host bridge is never on the list. */
    g_assert_cmpint(verdict(t, SB_GPU_D, SB_NIC, &why), ==, GP_P2P_NONE);
    g_assert_nonnull(strstr(why, "pci0000:80"));
}

/*
 * A GPU's nearest NIC (gp_rdma_nearest_nic()): the lowest path class,
 * then the lowest BDF, whatever order the NICs come in. The two-node host
 * with two more NICs on root ports of pci0000:00: 06:00.0 and 07:00.0.
 */
static void test_rdma_nearest_nic(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autoptr(GPtrArray) nics = g_ptr_array_new();
    g_autoptr(GPtrArray) none = g_ptr_array_new();

    sb_two_node_host(sb, 0x29c0);
    sb_add(sb, NULL, "0000:00:03.0", SB_ROOT_PORT, 0x8086, 0x2032, 0x060400,
           0, 30, "pcieport");
    sb_add(sb, "0000:00:03.0", "0000:06:00.0", SB_ENDPOINT, 0x15b3, 0x101d,
           0x020700, 0, 31, "mlx5_core");
    sb_add(sb, NULL, "0000:00:04.0", SB_ROOT_PORT, 0x8086, 0x2033, 0x060400,
           0, 32, "pcieport");
    sb_add(sb, "0000:00:04.0", "0000:07:00.0", SB_ENDPOINT, 0x15b3, 0x101d,
           0x020700, 0, 33, "mlx5_core");
    t = read_ok(sb_root(sb));
    /* Highest BDF first: a tie must not go to the first listed. */
    g_ptr_array_add(nics, gp_topo_find(t, "0000:07:00.0"));
    g_ptr_array_add(nics, gp_topo_find(t, SB_NIC));
    g_ptr_array_add(nics, gp_topo_find(t, "0000:06:00.0"));

    /* PHB to 06:00.0 and 07:00.0, SYS to 82:00.0: the lower BDF. */
    g_assert_cmpstr(gp_rdma_nearest_nic(gp_topo_find(t, SB_GPU_A),
                                        nics)->bdf, ==, "0000:06:00.0");
    /* NODE to 06:00.0 and 07:00.0, SYS to 82:00.0. */
    g_assert_cmpstr(gp_rdma_nearest_nic(gp_topo_find(t, SB_GPU_F),
                                        nics)->bdf, ==, "0000:06:00.0");
    /* PHB to 82:00.0 beats the lower BDFs across the nodes. */
    g_assert_cmpstr(gp_rdma_nearest_nic(gp_topo_find(t, SB_GPU_D),
                                        nics)->bdf, ==, SB_NIC);
    g_assert_null(gp_rdma_nearest_nic(gp_topo_find(t, SB_GPU_A), none));
}

static void test_pxb_switches(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;

    /* Two switches stacked under one: PXB between their leaves. */
    sb_add(sb, NULL, "0000:00:00.0", SB_HOST_BRIDGE, 0x8086, 0x29c0,
           0x060000, 0, -1, NULL);
    sb_add(sb, NULL, "0000:00:01.0", SB_ROOT_PORT, 0x8086, 1, 0x060400, 0,
           1, NULL);
    sb_add(sb, "0000:00:01.0", "0000:01:00.0", SB_SWITCH_UP, 1, 2, 0x060400,
           0, 1, NULL);
    sb_add(sb, "0000:01:00.0", "0000:02:00.0", SB_SWITCH_DOWN, 1, 2,
           0x060400, 0, 1, NULL);
    sb_add(sb, "0000:01:00.0", "0000:02:01.0", SB_SWITCH_DOWN, 1, 2,
           0x060400, 0, 1, NULL);
    sb_add(sb, "0000:02:00.0", "0000:03:00.0", SB_SWITCH_UP, 1, 3, 0x060400,
           0, 1, NULL);
    sb_add(sb, "0000:03:00.0", "0000:04:00.0", SB_SWITCH_DOWN, 1, 3,
           0x060400, 0, 1, NULL);
    sb_add(sb, "0000:04:00.0", "0000:05:00.0", SB_ENDPOINT, 0x10de, 1,
           0x030200, 0, 1, NULL);
    sb_add(sb, "0000:02:01.0", "0000:06:00.0", SB_ENDPOINT, 0x10de, 1,
           0x030200, 0, 1, NULL);
    t = read_ok(sb_root(sb));
    g_assert_cmpint(path(t, "0000:05:00.0", "0000:06:00.0"), ==, GP_PATH_PXB);
    g_assert_cmpint(verdict(t, "0000:05:00.0", "0000:06:00.0", NULL), ==,
                    GP_P2P_DIRECT);
}

static void test_acs_redirect(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *why = NULL;

    sb_two_node_host(sb, 0x29c0);
    /* What Linux sets on switch ports when an IOMMU is on. */
    sb_set_acs(sb, "0000:02:01.0", 0x5f, GP_ACS_SV | GP_ACS_RR | GP_ACS_CR |
               GP_ACS_UF);
    t = read_ok(sb_root(sb));
    g_assert_cmpint(path(t, SB_GPU_A, SB_GPU_B), ==, GP_PATH_PIX);
    g_assert_cmpint(verdict(t, SB_GPU_A, SB_GPU_B, &why), ==, GP_P2P_NONE);
    g_assert_nonnull(strstr(why, "0000:02:01.0 (RR CR)"));
    g_clear_pointer(&why, g_free);
    /* Either direction names the same port. */
    g_assert_cmpint(verdict(t, SB_GPU_B, SB_GPU_A, &why), ==, GP_P2P_NONE);
    g_assert_nonnull(strstr(why, "0000:02:01.0 (RR CR)"));
}

static void test_host_bridge_lists(void)
{
    g_autoptr(SysfsBuilder) sky = sb_new();
    g_autoptr(SysfsBuilder) hsw = sb_new();
    g_autoptr(SysfsBuilder) amd = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *why = NULL;

    /* Skylake-SP forwards within and between its host bridges. */
    sb_two_node_host(sky, 0x2020);
    t = read_ok(sb_root(sky));
    g_assert_cmpint(verdict(t, SB_GPU_A, SB_GPU_C, &why), ==,
                    GP_P2P_HOST_BRIDGE);
    g_assert_nonnull(strstr(why, "Skylake"));
    g_assert_cmpint(verdict(t, SB_GPU_A, SB_GPU_F, NULL), ==,
                    GP_P2P_HOST_BRIDGE);
    g_clear_pointer(&t, gp_topo_free);

    /* Haswell-EP 2f00 forwards only within one host bridge. */
    sb_two_node_host(hsw, 0x2f00);
    t = read_ok(sb_root(hsw));
    g_assert_cmpint(verdict(t, SB_GPU_A, SB_GPU_C, NULL), ==,
                    GP_P2P_HOST_BRIDGE);
    g_assert_cmpint(verdict(t, SB_GPU_A, SB_GPU_F, NULL), ==, GP_P2P_NONE);
    g_clear_pointer(&t, gp_topo_free);

    /* AMD Zen forwards everywhere, whatever the host bridge. */
    sb_two_node_host(amd, 0x29c0);
    sb_cpu(amd, "AuthenticAMD", 0x19);
    t = read_ok(sb_root(amd));
    g_assert_cmpint(verdict(t, SB_GPU_A, SB_GPU_D, NULL), ==,
                    GP_P2P_HOST_BRIDGE);
    sb_cpu(amd, "AuthenticAMD", 0x15);
    g_clear_pointer(&t, gp_topo_free);
    t = read_ok(sb_root(amd));
    g_assert_cmpint(verdict(t, SB_GPU_A, SB_GPU_D, NULL), ==, GP_P2P_NONE);
}

/*
 * Skylake-SP: no device at 00.0; the first device of the root bus is a
 * listed root port (8086:2030) at 02.0. p2pdma (Linux 5.19+) matches its
 * list on it, so GPUs below two of its root ports go through the host
 * bridge. Also when the port's config space is cut short (unprivileged).
 */
static void skylake_root_ports(SysfsBuilder *sb)
{
    const uint32_t gpu = 0x030200, port = 0x060400;

    sb_add(sb, NULL, "0000:00:02.0", SB_ROOT_PORT, 0x8086, 0x2030, port, 0,
           1, "pcieport");
    sb_add(sb, "0000:00:02.0", "0000:01:00.0", SB_ENDPOINT, 0x10de, 0x2335,
           gpu, 0, 10, "vfio-pci");
    sb_add(sb, NULL, "0000:00:03.0", SB_ROOT_PORT, 0x8086, 0x2031, port, 0,
           2, "pcieport");
    sb_add(sb, "0000:00:03.0", "0000:02:00.0", SB_ENDPOINT, 0x10de, 0x2335,
           gpu, 0, 11, "vfio-pci");
    sb_add(sb, NULL, "0000:40:05.0", SB_ENDPOINT, 0x8086, 0x2034, 0x088000,
           0, -1, NULL);
    sb_add(sb, NULL, "0000:40:06.0", SB_ROOT_PORT, 0x8086, 0x2032, port, 0,
           3, "pcieport");
    sb_add(sb, "0000:40:06.0", "0000:41:00.0", SB_ENDPOINT, 0x10de, 0x2335,
           gpu, 0, 12, "vfio-pci");
    sb_add(sb, NULL, "0000:40:07.0", SB_ROOT_PORT, 0x8086, 0x2033, port, 0,
           4, "pcieport");
    sb_add(sb, "0000:40:07.0", "0000:42:00.0", SB_ENDPOINT, 0x10de, 0x2335,
           gpu, 0, 13, "vfio-pci");
    sb_cpu(sb, "GenuineIntel", 6);
}

static void test_root_port_host_bridge(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(SysfsBuilder) cut = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *why = NULL;
    const GpHostBridge *hb;

    skylake_root_ports(sb);
    t = read_ok(sb_root(sb));
    hb = gp_topo_find(t, "0000:01:00.0")->host;
    g_assert_cmpstr(hb->root_bdf, ==, "0000:00:02.0");
    g_assert_cmphex(hb->device, ==, 0x2030);
    g_assert_cmpint(verdict(t, "0000:01:00.0", "0000:02:00.0", &why), ==,
                    GP_P2P_HOST_BRIDGE);
    g_assert_nonnull(strstr(why, "Skylake"));
    /* pci0000:40 starts with an endpoint at 05.0: p2pdma finds nothing. */
    hb = gp_topo_find(t, "0000:41:00.0")->host;
    g_assert_cmpstr(hb->root_bdf, ==, "");
    g_assert_cmpint(verdict(t, "0000:41:00.0", "0000:42:00.0", NULL), ==,
                    GP_P2P_NONE);
    g_clear_pointer(&t, gp_topo_free);

    skylake_root_ports(cut);
    sb_truncate_config(cut, "0000:00:02.0", 64);
    t = read_ok(sb_root(cut));
    g_assert_cmpstr(gp_topo_find(t, "0000:01:00.0")->host->root_bdf, ==,
                    "0000:00:02.0");
}

/*
 * Intel VMD: a root bus of domain 10000 below an endpoint of domain 0,
 * beside a domain-0 root bus with the same bus and device numbers.
 */
static void test_vmd_domain(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autoptr(GError) err = NULL;
    const uint32_t nvme = 0x010802, port = 0x060400;
    char norm[GP_BDF_LEN];
    const GpDevice *rp, *ssd;
    uint32_t addr;

    sb_two_node_host(sb, 0x29c0);
    sb_add(sb, NULL, "0000:00:0e.0", SB_ENDPOINT, 0x8086, 0x201d, 0x010400,
           0, 20, "vmd");
    sb_add(sb, "0000:00:0e.0/pci10000:e0", "10000:e0:06.0", SB_ROOT_PORT,
           0x8086, 0x347a, port, 0, 20, "pcieport");
    sb_add(sb, "10000:e0:06.0", "10000:e1:00.0", SB_ENDPOINT, 0x144d,
           0xa80a, nvme, 0, 20, "nvme");
    sb_add(sb, NULL, "0000:e0:06.0", SB_ROOT_PORT, 0x8086, 0x347a, port, 0,
           21, "pcieport");
    sb_add(sb, "0000:e0:06.0", "0000:e1:00.0", SB_ENDPOINT, 0x144d, 0xa80a,
           nvme, 0, 22, "nvme");
    t = read_ok(sb_root(sb));
    rp = gp_topo_find(t, "10000:e0:06.0");
    ssd = gp_topo_find(t, "10000:e1:00.0");
    g_assert_nonnull(rp);
    g_assert_nonnull(ssd);
    g_assert_cmphex(ssd->domain, ==, 0x10000);
    g_assert_null(rp->parent);
    g_assert_true(ssd->parent == rp);
    g_assert_cmpstr(rp->host->name, ==, "pci10000:e0");
    g_assert_true(rp->host != gp_topo_find(t, "0000:00:0e.0")->host);
    g_assert_cmpstr(ssd->host->root_bdf, ==, "10000:e0:06.0");
    /* Numeric order: as text, 10000 would sort before ffff. */
    {
        g_autoptr(GpTopology) h = gp_topo_new(NULL);
        GpHostBridge *vmd = gp_topo_add_host_bridge(h, 0x10000, 0);
        GpHostBridge *top = gp_topo_add_host_bridge(h, 0xffff, 0);

        g_assert_nonnull(gp_topo_add_device(h, vmd, NULL, "10000:00:00.0",
                                            NULL));
        g_assert_nonnull(gp_topo_add_device(h, top, NULL, "ffff:00:00.0",
                                            NULL));
        gp_topo_finish(h);
        g_assert_cmpstr(((GpDevice *)h->devices->pdata[0])->bdf, ==,
                        "ffff:00:00.0");
        g_assert_cmpuint(((GpDevice *)h->devices->pdata[1])->model_index,
                         ==, 1);
    }
    /* The root port 10000:e0:06.0 is not 0000:e0:06.0: no common bridge. */
    g_assert_cmpint(path(t, "10000:e1:00.0", "0000:e1:00.0"), ==,
                    GP_PATH_NODE);
    g_assert_cmpint(verdict(t, "10000:e1:00.0", "0000:e1:00.0", NULL), ==,
                    GP_P2P_NONE);

    g_assert_true(gp_bdf_normalize("10000:e1:00.0", norm));
    g_assert_cmpstr(norm, ==, "10000:e1:00.0");
    g_assert_true(gp_bdf_normalize("00000000:07:00.0", norm));
    g_assert_cmpstr(norm, ==, "0000:07:00.0");
    g_assert_false(gp_bdf_normalize("100000000:07:00.0", norm));
    /* The kernel module's addresses hold 16 bits of domain. */
    g_assert_false(gp_pci_addr_parse("10000:e1:00.0", &addr, &err));
    g_assert_error(err, GP_ERROR, GP_ERROR_INVALID);
    g_assert_nonnull(strstr(err->message, "10000:e1:00.0"));
    g_assert_true(gp_pci_addr_parse("ffff:e1:00.0", &addr, NULL));
    g_assert_cmphex(addr, ==, 0xffffe100);
}

static void test_unprivileged_read(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *why = NULL;

    sb_two_node_host(sb, 0x29c0);
    sb_truncate_config(sb, "0000:02:00.0", 64);
    t = read_ok(sb_root(sb));
    g_assert_cmpuint(t->config_truncated, ==, 1);
    g_assert_false(gp_topo_find(t, "0000:02:00.0")->acs_known);
    g_assert_cmpint(verdict(t, SB_GPU_A, SB_GPU_B, &why), ==, GP_P2P_UNKNOWN);
    g_assert_nonnull(strstr(why, "0000:02:00.0"));
    g_assert_nonnull(strstr(why, "needs root"));
}

/* A missing vendor file: the device is on its way out (sysfs removes its
 * files first), so it alone is left out, naming the file. */
static void test_missing_file(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *dir = NULL;
    g_autofree char *vendor = NULL;

    sb_two_node_host(sb, 0x29c0);
    dir = sb_device_dir(sb, SB_GPU_B);
    vendor = g_build_filename(dir, "vendor", NULL);
    g_assert_cmpint(g_unlink(vendor), ==, 0);
    t = read_ok(sb_root(sb));
    g_assert_null(gp_topo_find(t, SB_GPU_B));
    g_assert_cmpuint(t->devices_gone->len, ==, 1);
    g_assert_nonnull(strstr(g_ptr_array_index(t->devices_gone, 0),
                            "0000:04:00.0/vendor"));
}

static void test_bad_attribute(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GError) err = NULL;
    g_autofree char *dir = NULL;
    g_autofree char *cls = NULL;

    sb_two_node_host(sb, 0x29c0);
    dir = sb_device_dir(sb, SB_GPU_B);
    cls = g_build_filename(dir, "class", NULL);
    g_assert_true(g_file_set_contents(cls, "display\n", -1, NULL));
    g_assert_null(gp_topo_read(sb_root(sb), &err));
    g_assert_error(err, GP_ERROR, GP_ERROR_INVALID);
    g_assert_nonnull(strstr(err->message, "'display'"));
}

static void test_missing_root(void)
{
    g_autoptr(GError) err = NULL;

    g_assert_null(gp_topo_read("/nonexistent/capture", &err));
    g_assert_error(err, GP_ERROR, GP_ERROR_NOT_FOUND);
    g_assert_nonnull(strstr(err->message, "/nonexistent/capture"));
}

static void test_sys_dir_as_root(void)
{
    g_autofree char *root = fixture("h200x2-vm");
    g_autofree char *sys = g_build_filename(root, "sys", NULL);
    g_autoptr(GpTopology) t = read_ok(sys);

    g_assert_nonnull(gp_topo_find(t, "0000:00:07.0"));
}

static void test_unknown_bdf(void)
{
    g_autofree char *root = fixture("h200x2-vm");
    g_autoptr(GpTopology) t = read_ok(root);

    g_assert_null(gp_topo_find(t, "0000:00:08.0"));
    g_assert_null(gp_topo_find(t, "not-a-bdf"));
}

/* Each garbage read fails naming the file and the value it holds. */
static void expect_misread(SysfsBuilder *sb, const char *file,
                           const char *value_text)
{
    g_autoptr(GError) err = NULL;

    g_assert_null(gp_topo_read(sb_root(sb), &err));
    g_assert_error(err, GP_ERROR, GP_ERROR_INVALID);
    g_assert_nonnull(strstr(err->message, file));
    if (value_text) {
        g_assert_nonnull(strstr(err->message, value_text));
    }
}

static void set_attr(SysfsBuilder *sb, const char *bdf, const char *name,
                     const char *text, gssize len)
{
    g_autofree char *dir = sb_device_dir(sb, bdf);
    g_autofree char *path = g_build_filename(dir, name, NULL);

    g_unlink(path);
    g_assert_true(g_file_set_contents(path, text, len, NULL));
}

static void test_misread_numa_node(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();

    sb_two_node_host(sb, 0x29c0);
    set_attr(sb, SB_GPU_B, "numa_node", "zero\n", -1);
    expect_misread(sb, "0000:04:00.0/numa_node", "'zero'");
}

static void test_misread_resource(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();

    sb_two_node_host(sb, 0x29c0);
    set_attr(sb, SB_GPU_B, "resource",
             "0x00000000fd000000 0x00000000fdffffff 0x0000000000040200\n"
             "0x0000380000000000 garbage 0x000000000014220c\n", -1);
    expect_misread(sb, "0000:04:00.0/resource", "line 2");
    /* A start of 40 hex digits would saturate and drop the BAR. */
    set_attr(sb, SB_GPU_B, "resource",
             "0x0000000000000000000000000000fd000000 0x00000000fdffffff "
             "0x0000000000040200\n", -1);
    expect_misread(sb, "0000:04:00.0/resource", "line 1");
}

/*
 * Garbage where sysfs has a file is named, never read as "absent"; a FIFO
 * is never opened (a read would block for ever).
 */
static void test_misread_special_files(void)
{
    static const char *const attrs[] = { "numa_node", "resource",
                                         "max_link_width" };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(attrs); i++) {
        g_autoptr(SysfsBuilder) dir_sb = sb_new();
        g_autoptr(SysfsBuilder) fifo_sb = sb_new();
        g_autofree char *d1 = NULL, *d2 = NULL, *p1 = NULL, *p2 = NULL;

        sb_two_node_host(dir_sb, 0x29c0);
        sb_two_node_host(fifo_sb, 0x29c0);
        d1 = sb_device_dir(dir_sb, SB_GPU_B);
        d2 = sb_device_dir(fifo_sb, SB_GPU_B);
        p1 = g_build_filename(d1, attrs[i], NULL);
        p2 = g_build_filename(d2, attrs[i], NULL);
        g_unlink(p1);
        g_unlink(p2);
        g_assert_cmpint(g_mkdir(p1, 0755), ==, 0);
        g_assert_cmpint(mkfifo(p2, 0600), ==, 0);
        expect_misread(dir_sb, attrs[i], "a directory");
        expect_misread(fifo_sb, attrs[i], "a FIFO");
        g_rmdir(p1);
    }
}

/* A device in D3cold is not woken: its config space is not read. */
static void test_d3cold_not_woken(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *dir = NULL, *cfg = NULL;
    const GpDevice *d;

    sb_two_node_host(sb, 0x29c0);
    set_attr(sb, SB_NIC, "power_state", "D3cold\n", -1);
    /* Were it read, a config FIFO would block: the proof it is not. */
    dir = sb_device_dir(sb, SB_NIC);
    cfg = g_build_filename(dir, "config", NULL);
    g_unlink(cfg);
    g_assert_cmpint(mkfifo(cfg, 0600), ==, 0);
    t = read_ok(sb_root(sb));
    d = gp_topo_find(t, SB_NIC);
    g_assert_nonnull(d->config_unreadable);
    g_assert_nonnull(strstr(d->config_unreadable, "D3cold"));
    g_assert_cmpint(verdict(t, SB_GPU_A, SB_GPU_C, NULL), !=, GP_P2P_UNKNOWN);
}

/* A snapshot generation link is resolved once, at the start. */
static void test_root_link_resolved_once(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *tmp = g_dir_make_tmp("gpup2p-gen-XXXXXX", NULL);
    g_autofree char *link = g_build_filename(tmp, "host", NULL);

    sb_two_node_host(sb, 0x29c0);
    g_assert_cmpint(symlink(sb_root(sb), link), ==, 0);
    t = read_ok(link);
    g_assert_cmpstr(t->root, !=, link);
    g_assert_true(g_str_has_prefix(t->root, "/"));
    g_assert_nonnull(gp_topo_find(t, SB_GPU_A));
    g_unlink(link);
    g_rmdir(tmp);
}

/*
 * @bdf alone is marked (attr_invalid or config_unreadable naming @file and
 * @text): the host reads, @bdf's pairs are unknown, and a pair elsewhere
 * is judged.
 */
static void expect_marked(SysfsBuilder *sb, const char *bdf, const char *file,
                          const char *text)
{
    g_autoptr(GpTopology) t = read_ok(sb_root(sb));
    const GpDevice *d = gp_topo_find(t, bdf);
    const char *why = d->config_unreadable ? d->config_unreadable :
                      d->attr_invalid;
    const char *peer = strcmp(bdf, SB_GPU_C) ? SB_GPU_C : SB_GPU_F;
    GpP2pVerdict v;

    if (!why || !strstr(why, file) || !strstr(why, text)) {
        g_error("%s: marked '%s', wanted '%s' and '%s'", bdf,
                why ? why : "(nothing)", file, text);
    }
    gp_p2p_verdict(t, d, gp_topo_find(t, peer), &v);
    g_assert_cmpint(v.vm_kind, ==, GP_VM_P2P_UNKNOWN);
    g_assert_nonnull(strstr(v.vm_reason, text));
    gp_p2p_verdict_clear(&v);
    g_assert_cmpint(verdict(t, SB_GPU_D, SB_NIC, NULL), !=, GP_P2P_UNKNOWN);
}

static void test_misread_iommu_group(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autofree char *dir = NULL, *link = NULL;

    sb_two_node_host(sb, 0x29c0);
    dir = sb_device_dir(sb, SB_GPU_B);
    link = g_build_filename(dir, "iommu_group", NULL);
    g_unlink(link);
    g_assert_cmpint(symlink("../../../../kernel/iommu_groups/seven", link),
                    ==, 0);
    expect_marked(sb, SB_GPU_B, "0000:04:00.0/iommu_group", "seven");
}

/*
 * One odd device marks only itself, live or in a capture: config bytes of
 * another vendor (a slot re-populated mid-read), an iommu_group link to a
 * group the input lacks, a device whose directory went away while sysfs
 * was read. The rest of the host reads and is judged.
 */
static void test_odd_device_marks_itself(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(SysfsBuilder) groups = sb_new();
    g_autoptr(SysfsBuilder) gone = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *dir = NULL, *group = NULL;
    g_autofree gchar *cfg = NULL;
    gsize len;

    sb_two_node_host(sb, 0x2020);
    dir = sb_device_dir(sb, SB_GPU_B);
    {
        g_autofree char *path = g_build_filename(dir, "config", NULL);

        g_assert_true(g_file_get_contents(path, &cfg, &len, NULL));
        cfg[0] = 0x86;          /* 8086: not the 10de sysfs names */
        cfg[1] = (char)0x80;
        set_attr(sb, SB_GPU_B, "config", cfg, (gssize)len);
    }
    expect_marked(sb, SB_GPU_B, "0000:04:00.0/config",
                  "vendor id 0x8086 in config space, but the vendor "
                  "attribute says 0x10de");

    sb_two_node_host(groups, 0x2020);
    sb_iommu_groups(groups);
    group = g_build_filename(sb_root(groups), "sys/kernel/iommu_groups/11",
                             NULL);
    sb_remove_tree(group);
    expect_marked(groups, SB_GPU_B, "0000:04:00.0/iommu_group",
                  "no such group");
    t = read_ok(sb_root(groups));
    g_assert_cmpint(gp_topo_find(t, SB_GPU_B)->iommu_group, ==, -1);
    g_clear_pointer(&t, gp_topo_free);

    sb_two_node_host(gone, 0x2020);
    g_free(dir);
    dir = sb_device_dir(gone, SB_GPU_B);
    sb_remove_tree(dir);
    t = read_ok(sb_root(gone));
    g_assert_null(gp_topo_find(t, SB_GPU_B));
    g_assert_cmpuint(t->devices_gone->len, ==, 1);
    g_assert_nonnull(strstr(g_ptr_array_index(t->devices_gone, 0),
                            SB_GPU_B ": "));
    g_assert_nonnull(strstr(g_ptr_array_index(t->devices_gone, 0),
                            "went away while sysfs was read"));
    g_assert_cmpint(verdict(t, SB_GPU_C, SB_GPU_F, NULL), ==,
                    GP_P2P_HOST_BRIDGE);
}

/*
 * A device going away mid-read: sysfs removes its attribute files before
 * its directory, so a reader can find the directory with "vendor" already
 * gone. That device alone is left out and named, live and in a snapshot
 * taken meanwhile; the rest of the host is read and judged.
 */
static void test_device_vanishing_mid_read(void)
{
    static const char *const attrs[] = { "vendor", "device", "class",
                                         "config" };
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autoptr(GError) err = NULL;
    g_autofree char *dir = NULL, *out = NULL, *dest = NULL;
    size_t i;

    sb_two_node_host(sb, 0x2020);
    dir = sb_device_dir(sb, SB_GPU_B);
    for (i = 0; i < G_N_ELEMENTS(attrs); i++) {
        g_autofree char *path = g_build_filename(dir, attrs[i], NULL);

        g_assert_cmpint(g_unlink(path), ==, 0);
    }
    t = read_ok(sb_root(sb));
    g_assert_null(gp_topo_find(t, SB_GPU_B));
    g_assert_cmpuint(t->devices_gone->len, ==, 1);
    g_assert_nonnull(strstr(g_ptr_array_index(t->devices_gone, 0),
                            SB_GPU_B ": "));
    g_assert_nonnull(strstr(g_ptr_array_index(t->devices_gone, 0),
                            "/vendor: missing or unreadable"));
    g_assert_cmpint(verdict(t, SB_GPU_C, SB_GPU_F, NULL), ==,
                    GP_P2P_HOST_BRIDGE);
    g_clear_pointer(&t, gp_topo_free);

    /* A bridge caught so: it and the devices below it are left out. */
    {
        g_autoptr(SysfsBuilder) up = sb_new();
        g_autofree char *port = NULL;

        sb_two_node_host(up, 0x2020);
        port = sb_device_dir(up, "0000:02:01.0");
        for (i = 0; i < G_N_ELEMENTS(attrs); i++) {
            g_autofree char *path = g_build_filename(port, attrs[i], NULL);

            g_assert_cmpint(g_unlink(path), ==, 0);
        }
        t = read_ok(sb_root(up));
        g_assert_null(gp_topo_find(t, SB_GPU_B));
        g_assert_null(gp_topo_find(t, "0000:02:01.0"));
        g_assert_cmpuint(t->devices_gone->len, ==, 2);
        g_assert_nonnull(strstr(g_ptr_array_index(t->devices_gone, 1),
                                SB_GPU_B ": its upstream bridge "
                                "0000:02:01.0 went away"));
        g_assert_cmpint(verdict(t, SB_GPU_A, SB_GPU_C, NULL), !=,
                        GP_P2P_UNKNOWN);
        g_clear_pointer(&t, gp_topo_free);
    }

    /* A snapshot taken meanwhile: taken, with the device left out. */
    out = g_dir_make_tmp("gpup2p-snap-XXXXXX", NULL);
    dest = g_build_filename(out, "snap", NULL);
    g_assert_true(gp_snapshot_write(sb_root(sb), dest, &err));
    g_assert_no_error(err);
    t = read_ok(dest);
    g_assert_null(gp_topo_find(t, SB_GPU_B));
    g_assert_cmpuint(t->devices_gone->len, ==, 1);
    g_assert_cmpint(verdict(t, SB_GPU_C, SB_GPU_F, NULL), ==,
                    GP_P2P_HOST_BRIDGE);
    sb_remove_tree(out);
}

static void test_misread_config(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(SysfsBuilder) loop = sb_new();
    g_autoptr(GRand) rand = g_rand_new_with_seed(14);
    g_autofree char *dir = NULL, *path = NULL;
    g_autofree gchar *cfg = NULL;
    uint8_t random_bytes[4096];
    gsize len;
    size_t i;

    /* Random bytes contradict the vendor: that device alone is marked. */
    sb_two_node_host(sb, 0x29c0);
    for (i = 0; i < sizeof(random_bytes); i++) {
        random_bytes[i] = (uint8_t)g_rand_int_range(rand, 0, 256);
    }
    random_bytes[0] = 0x34;     /* vendor 0x1234, not all ones */
    random_bytes[1] = 0x12;
    set_attr(sb, SB_GPU_B, "config", (const char *)random_bytes,
             sizeof(random_bytes));
    expect_marked(sb, SB_GPU_B, "0000:04:00.0/config",
                  "vendor id 0x1234 in config space");

    /* A capability list that loops is named as such. */
    sb_two_node_host(loop, 0x29c0);
    dir = sb_device_dir(loop, SB_GPU_B);
    path = g_build_filename(dir, "config", NULL);
    g_assert_true(g_file_get_contents(path, &cfg, &len, NULL));
    g_assert_cmpuint(len, >=, 0x100);
    cfg[0x34] = 0x40;
    cfg[0x40] = 0x01;
    cfg[0x41] = 0x40;
    set_attr(loop, SB_GPU_B, "config", cfg, (gssize)len);
    /* It marks that device alone: the host is still read, only the pairs
     * whose path crosses it are undecided, and the reason names it. */
    {
        g_autoptr(GpTopology) t = read_ok(sb_root(loop));
        const GpDevice *b = gp_topo_find(t, SB_GPU_B);
        GpP2pVerdict v;

        g_assert_nonnull(b->config_unreadable);
        g_assert_nonnull(strstr(b->config_unreadable, "0000:04:00.0/config"));
        g_assert_nonnull(strstr(b->config_unreadable, "loops"));
        g_assert_cmpuint(t->config_unreadable, ==, 1);
        gp_p2p_verdict(t, gp_topo_find(t, SB_GPU_A), b, &v);
        g_assert_cmpint(v.vm_kind, ==, GP_VM_P2P_UNKNOWN);
        g_assert_nonnull(strstr(v.vm_reason, "loops"));
        gp_p2p_verdict_clear(&v);
        g_assert_cmpint(verdict(t, SB_GPU_A, SB_GPU_C, NULL), !=,
                        GP_P2P_UNKNOWN);
    }
}

/*
 * Values the kernel really writes: max_link_width 255 and speed "Unknown"
 * for a device whose Link Capabilities read 0 (root-complex-integrated
 * devices, an e1000e seen on a real host) read as "no link known".
 */
static void test_unknown_link(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    const GpDevice *d;

    sb_two_node_host(sb, 0x29c0);
    set_attr(sb, SB_NIC, "max_link_width", "255\n", -1);
    set_attr(sb, SB_NIC, "current_link_width", "255\n", -1);
    set_attr(sb, SB_NIC, "max_link_speed", "Unknown\n", -1);
    set_attr(sb, SB_NIC, "current_link_speed", "Unknown\n", -1);
    t = read_ok(sb_root(sb));
    d = gp_topo_find(t, SB_NIC);
    g_assert_cmpint(d->max_link_width, ==, 0);
    g_assert_cmpint(d->link_width, ==, 0);
    g_assert_cmpstr(d->max_link_speed, ==, "Unknown");
    /* 64 is no width Linux writes: still refused, naming the file. */
    set_attr(sb, SB_NIC, "max_link_width", "64\n", -1);
    expect_misread(sb, "max_link_width", "'64'");
}

/*
 * A link speed the kernel never writes ("fast") is named with its file and
 * value, never read as absent: it marks that device alone, as a broken
 * capability list does, so its pairs are undecided and the rest of the
 * host is judged. The forms Linux writes are read as they are.
 */
static void test_misread_link_speed(void)
{
    static const char *const names[] = { "current_link_speed",
                                         "max_link_speed" };
    static const char *const kernel_forms[] = {
        "16.0 GT/s PCIe\n", "2.5 GT/s PCIe\n", "8 GT/s\n", "Unknown\n",
        "Unknown speed\n",
    };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(names); i++) {
        g_autoptr(SysfsBuilder) sb = sb_new();
        g_autoptr(GpTopology) t = NULL;
        g_autofree char *file = g_strdup_printf("0000:04:00.0/%s", names[i]);
        const GpDevice *b;
        GpP2pVerdict v;

        sb_two_node_host(sb, 0x29c0);
        set_attr(sb, SB_GPU_B, names[i], "fast\n", -1);
        t = read_ok(sb_root(sb));
        b = gp_topo_find(t, SB_GPU_B);
        g_assert_nonnull(b->attr_invalid);
        g_assert_nonnull(strstr(b->attr_invalid, file));
        g_assert_nonnull(strstr(b->attr_invalid, "'fast'"));
        g_assert_null(b->link_speed);
        g_assert_null(b->max_link_speed);
        gp_p2p_verdict(t, gp_topo_find(t, SB_GPU_A), b, &v);
        g_assert_cmpint(v.vm_kind, ==, GP_VM_P2P_UNKNOWN);
        g_assert_nonnull(strstr(v.vm_reason, "'fast'"));
        gp_p2p_verdict_clear(&v);
        g_assert_cmpint(verdict(t, SB_GPU_A, SB_GPU_C, NULL), !=,
                        GP_P2P_UNKNOWN);
        g_assert_null(gp_topo_find(t, SB_GPU_A)->attr_invalid);
    }
    for (i = 0; i < G_N_ELEMENTS(kernel_forms); i++) {
        g_autoptr(SysfsBuilder) sb = sb_new();
        g_autoptr(GpTopology) t = NULL;
        g_autofree char *kept = g_strstrip(g_strdup(kernel_forms[i]));
        const GpDevice *b;

        sb_two_node_host(sb, 0x29c0);
        set_attr(sb, SB_GPU_B, "current_link_speed", kernel_forms[i], -1);
        set_attr(sb, SB_GPU_B, "max_link_speed", kernel_forms[i], -1);
        t = read_ok(sb_root(sb));
        b = gp_topo_find(t, SB_GPU_B);
        g_assert_null(b->attr_invalid);
        g_assert_cmpstr(b->link_speed, ==, kept);
        g_assert_cmpstr(b->max_link_speed, ==, kept);
    }
}

/*
 * Where the input holds kernel/iommu_groups, an iommu_group link must name
 * one of its groups; a capture without the directory reads the number.
 */
static void test_iommu_group_missing(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *groups = NULL, *dir = NULL, *link = NULL;
    guint i;

    sb_two_node_host(sb, 0x29c0);
    t = read_ok(sb_root(sb));
    groups = g_build_filename(sb_root(sb), "sys", "kernel", "iommu_groups",
                              NULL);
    for (i = 0; i < t->devices->len; i++) {
        const GpDevice *d = g_ptr_array_index(t->devices, i);
        g_autofree char *g = g_strdup_printf("%s/%d", groups, d->iommu_group);

        if (d->iommu_group >= 0) {
            g_assert_cmpint(g_mkdir_with_parents(g, 0755), ==, 0);
        }
    }
    g_clear_pointer(&t, gp_topo_free);
    t = read_ok(sb_root(sb));
    g_assert_cmpint(gp_topo_find(t, SB_GPU_B)->iommu_group, >=, 0);
    dir = sb_device_dir(sb, SB_GPU_B);
    link = g_build_filename(dir, "iommu_group", NULL);
    g_unlink(link);
    g_assert_cmpint(symlink("../../../../kernel/iommu_groups/999", link),
                    ==, 0);
    expect_marked(sb, SB_GPU_B, "0000:04:00.0/iommu_group", "group 999");
    /* Without kernel/iommu_groups (older captures), the number is read. */
    {
        g_autoptr(GDir) gd = g_dir_open(groups, 0, NULL);
        const char *name;

        while (gd && (name = g_dir_read_name(gd))) {
            g_autofree char *g = g_build_filename(groups, name, NULL);

            g_assert_cmpint(g_rmdir(g), ==, 0);
        }
    }
    g_assert_cmpint(g_rmdir(groups), ==, 0);
    g_clear_pointer(&t, gp_topo_free);
    t = read_ok(sb_root(sb));
    g_assert_cmpint(gp_topo_find(t, SB_GPU_B)->iommu_group, ==, 999);
}

/*
 * A VF's config space reads vendor 0xffff: that is no misread. Its physfn
 * must name a device beside it, or the upstream walk could loop.
 */
static void test_vf(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(SysfsBuilder) not_vf = sb_new();
    g_autoptr(SysfsBuilder) bad_pf = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autoptr(GpTopology) t2 = NULL;
    g_autofree char *why = NULL;
    const GpDevice *dead;
    g_autofree char *dir = NULL, *path = NULL, *link = NULL;
    g_autofree char *bad_dir = NULL, *bad_link = NULL;
    g_autofree gchar *cfg = NULL;
    const char *vf = "0000:04:00.1";
    gsize len;

    sb_two_node_host(sb, 0x29c0);
    sb_add(sb, "0000:02:01.0", vf, SB_ENDPOINT, 0x10de, 0x2335, 0x030200, 0,
           12, "vfio-pci");
    dir = sb_device_dir(sb, vf);
    path = g_build_filename(dir, "config", NULL);
    g_assert_true(g_file_get_contents(path, &cfg, &len, NULL));
    cfg[0] = cfg[1] = (char)0xff;
    set_attr(sb, vf, "config", cfg, (gssize)len);
    link = g_build_filename(dir, "physfn", NULL);
    g_assert_cmpint(symlink("../0000:04:00.0", link), ==, 0);
    t = read_ok(sb_root(sb));
    g_assert_cmphex(gp_topo_find(t, vf)->vendor, ==, 0x10de);
    g_assert_true(gp_topo_find(t, vf)->physfn == gp_topo_find(t, SB_GPU_B));

    /* Without physfn, all ones is a device that no longer answers: it
     * alone is unreadable, named with its file; the host still reads. */
    sb_two_node_host(not_vf, 0x29c0);
    memset(cfg, 0xff, len);
    set_attr(not_vf, SB_GPU_B, "config", cfg, (gssize)len);
    t2 = read_ok(sb_root(not_vf));
    dead = gp_topo_find(t2, SB_GPU_B);
    g_assert_cmpuint(t2->config_unreadable, ==, 1);
    g_assert_nonnull(dead->config_unreadable);
    g_assert_nonnull(strstr(dead->config_unreadable, "0000:04:00.0/config"));
    g_assert_nonnull(strstr(dead->config_unreadable, "all ones"));
    g_assert_false(dead->acs_known);
    g_assert_null(gp_topo_find(t2, SB_GPU_A)->config_unreadable);
    g_assert_cmpint(verdict(t2, SB_GPU_B, SB_GPU_A, &why), ==,
                    GP_P2P_UNKNOWN);
    g_assert_nonnull(strstr(why, "all ones"));
    g_assert_null(strstr(why, "needs root"));
    g_assert_cmpint(verdict(t2, SB_GPU_A, SB_GPU_C, NULL), ==, GP_P2P_NONE);

    /* A physfn naming the device's own port is refused. */
    sb_two_node_host(bad_pf, 0x29c0);
    bad_dir = sb_device_dir(bad_pf, SB_GPU_B);
    bad_link = g_build_filename(bad_dir, "physfn", NULL);
    g_assert_cmpint(symlink("../../0000:02:01.0", bad_link), ==, 0);
    expect_misread(bad_pf, "0000:04:00.0/physfn", "0000:02:01.0");
}

/* A config file that cannot be read marks that device, naming the file. */
/*
 * Of config space only the header, the capability chains, the PCIe
 * capability and ACS's registers are read: bytes elsewhere (here a
 * pattern no walk uses) never reach the reader.
 */
static void test_config_read_minimal(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *dir = NULL, *path = NULL;
    g_autofree gchar *raw = NULL;
    const GpDevice *port;
    gsize len, i;

    sb_two_node_host(sb, 0x29c0);
    sb_set_acs(sb, "0000:02:00.0", 0x5f, GP_ACS_RR | GP_ACS_CR);
    dir = sb_device_dir(sb, "0000:02:00.0");
    path = g_build_filename(dir, "config", NULL);
    g_assert_true(g_file_get_contents(path, &raw, &len, NULL));
    g_assert_cmpuint(len, ==, GP_PCICFG_EXT_SIZE);
    /* The builder's chain: PM at 0x40, PCIe at 0x60 (0x3c bytes), ACS
     * at 0x100; the pattern fills PM's body and all past the chains. */
    g_assert_cmpuint((uint8_t)raw[GP_PCI_CAPABILITY_LIST], ==, 0x40);
    g_assert_cmpuint((uint8_t)raw[0x41], ==, 0x60);
    g_assert_cmpuint((uint8_t)raw[0x61], ==, 0);
    memset(raw + 0x44, 0xa5, 0x60 - 0x44);
    memset(raw + 0xa0, 0xa5, 0x100 - 0xa0);
    memset(raw + 0x110, 0xa5, len - 0x110);
    g_assert_true(g_file_set_contents(path, raw, (gssize)len, NULL));

    t = read_ok(sb_root(sb));
    port = gp_topo_find(t, "0000:02:00.0");
    g_assert_null(port->config_unreadable);
    g_assert_cmpuint(port->config->len, ==, GP_PCICFG_EXT_SIZE);
    g_assert_true(port->acs_known && port->acs.present);
    g_assert_cmphex(port->acs.ctrl, ==, GP_ACS_RR | GP_ACS_CR);
    g_assert_cmpint(port->pcie.type, ==, GP_PCIE_TYPE_DOWNSTREAM_PORT);
    for (i = 0x44; i < len; i++) {
        if ((i >= 0x60 && i < 0xa0) || (i >= 0x100 && i < 0x110)) {
            continue;
        }
        if (port->config->bytes[i]) {
            g_error("config byte 0x%zx was read (0x%02x)", i,
                    port->config->bytes[i]);
        }
    }
}

/*
 * Config space of a device off every GPU and NIC path is left alone (a
 * FIFO in its place would block a read); one in a GPU's IOMMU group is
 * read, and an unread bridge is still known as one by its class.
 */
static void test_config_off_paths_not_read(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *dir = NULL, *cfg = NULL;
    const GpDevice *smbus, *port, *member;

    sb_two_node_host(sb, 0x29c0);
    sb_add(sb, NULL, "0000:00:1f.3", SB_ENDPOINT, 0x8086, 0xa123, 0x0c0500,
           0, 20, NULL);
    sb_add(sb, NULL, "0000:00:1c.0", SB_ROOT_PORT, 0x8086, 0xa110,
           0x060400, 0, 21, "pcieport");
    sb_add(sb, NULL, "0000:00:1f.4", SB_ENDPOINT, 0x8086, 0xa124, 0x0c0500,
           0, 10, NULL);                /* GPU A's group */
    dir = sb_device_dir(sb, "0000:00:1f.3");
    cfg = g_build_filename(dir, "config", NULL);
    g_unlink(cfg);
    g_assert_cmpint(mkfifo(cfg, 0600), ==, 0);

    t = read_ok(sb_root(sb));
    smbus = gp_topo_find(t, "0000:00:1f.3");
    port = gp_topo_find(t, "0000:00:1c.0");
    member = gp_topo_find(t, "0000:00:1f.4");
    g_assert_true(smbus->config_not_read);
    g_assert_null(smbus->config_unreadable);
    g_assert_cmpuint(smbus->config->len, ==, 0);
    g_assert_true(port->config_not_read && port->is_bridge);
    g_assert_false(member->config_not_read);
    g_assert_cmpuint(member->config->len, ==, GP_PCICFG_EXT_SIZE);
    g_assert_cmpuint(t->config_not_read, ==, 2);
    g_assert_cmpuint(t->config_unreadable, ==, 0);
    g_assert_false(gp_topo_find(t, SB_GPU_A)->config_not_read);
    g_assert_false(gp_topo_find(t, "0000:02:00.0")->config_not_read);
    g_assert_cmpint(verdict(t, SB_GPU_A, SB_GPU_C, NULL), !=,
                    GP_P2P_UNKNOWN);
}

/*
 * A device named by the caller that is neither GPU nor NIC (a virtio NIC:
 * to the rule the VM's own) has the config on its path read by
 * gp_topo_read_devices(): under the GPU's switch it is PIX from the GPU
 * with a known verdict. gp_topo_read() leaves its port unread, so the
 * port's PCIe type and ACS are unknown to a view of that pair.
 */
static void test_config_named_devices_read(void)
{
    const char *const bdfs[] = { "06:00.0", SB_GPU_A, NULL };
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) plain = NULL, named = NULL;
    g_autoptr(GError) err = NULL;

    sb_two_node_host(sb, 0x29c0);
    sb_add(sb, "0000:01:00.0", "0000:02:02.0", SB_SWITCH_DOWN, 0x1000,
           0xc010, 0x060400, 0, 16, "pcieport");
    sb_set_acs(sb, "0000:02:02.0", 0x5f, 0);
    sb_add(sb, "0000:02:02.0", "0000:06:00.0", SB_ENDPOINT, 0x1af4, 0x1041,
           0x020000, 0, 17, "virtio-pci");

    plain = read_ok(sb_root(sb));
    g_assert_true(gp_topo_find(plain, "0000:02:02.0")->config_not_read);
    g_assert_true(gp_topo_find(plain, "0000:06:00.0")->config_not_read);

    named = gp_topo_read_devices(sb_root(sb), bdfs, &err);
    g_assert_no_error(err);
    g_assert_false(gp_topo_find(named, "0000:02:02.0")->config_not_read);
    g_assert_false(gp_topo_find(named, "0000:06:00.0")->config_not_read);
    g_assert_cmpint(path(named, "0000:06:00.0", SB_GPU_A), ==, GP_PATH_PIX);
    g_assert_cmpint(verdict(named, "0000:06:00.0", SB_GPU_A, NULL), ==,
                    GP_P2P_DIRECT);
    /* Only the named device's path is added: the rest stays unread. */
    g_assert_cmpuint(named->config_not_read, ==, plain->config_not_read - 2);
}

/*
 * What a read made of each device's config space, one line a device:
 * read or not, why not (D3cold, else unreadable), port type, ACS.
 */
static char *config_reads(const GpTopology *t)
{
    GString *out = g_string_new(NULL);
    guint i;

    for (i = 0; i < t->devices->len; i++) {
        const GpDevice *d = g_ptr_array_index(t->devices, i);
        const char *state = d->config_not_read ? "not read" :
            !d->config_unreadable ? "read" :
            strstr(d->config_unreadable, "D3cold") ? "D3cold" : "unreadable";

        g_string_append_printf(out, "%s %s %s", d->bdf, state,
                               gp_pcie_type_name(d->pcie.type));
        if (!d->acs_known) {
            g_string_append(out, " acs unknown\n");
        } else if (!d->acs.present) {
            g_string_append(out, " acs absent\n");
        } else {
            g_string_append_printf(out, " acs cap 0x%04x ctrl 0x%04x\n",
                                   d->acs.cap, d->acs.ctrl);
        }
    }
    return g_string_free(out, FALSE);
}

/* Path class and bare-metal verdict of the pair @a @b, as text. */
static char *pair_reads(const GpTopology *t, const char *a, const char *b)
{
    g_autofree char *why = NULL;
    GpP2pKind kind = verdict(t, a, b, &why);

    return g_strdup_printf("%s %s: %s, %s (%s)", a, b,
                           gp_path_type_name(path(t, a, b)),
                           gp_p2p_kind_name(kind), why ? why : "");
}

/*
 * A snapshot keeps the config space of every function, so that what a
 * read of named devices (topo/plan --devices) or of all (--all) finds in
 * it is what it finds on the host. An NVMe controller (neither GPU nor
 * NIC) beside GPU A under its switch, on a downstream port with ACS
 * redirect on: named, the port's ACS decides their pair on the host, and
 * must on the snapshot too. Off every path: a function in D3cold (not
 * woken, so the snapshot has no config of it) and one whose config cannot
 * be read (a FIFO): neither fails the snapshot, and each reads as
 * unreadable on both.
 */
static void test_config_named_devices_snapshot(void)
{
    const char *const bdfs[] = { "06:00.0", SB_GPU_A, NULL };
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) host = NULL, snap = NULL;
    g_autoptr(GpTopology) host_all = NULL, snap_all = NULL;
    g_autoptr(GError) err = NULL;
    g_autofree char *tmp = g_dir_make_tmp("gpup2p-snap-XXXXXX", NULL);
    g_autofree char *dest = g_build_filename(tmp, "snap", NULL);
    g_autofree char *dir = NULL, *cfg = NULL, *copy = NULL;
    g_autofree char *a = NULL, *b = NULL;

    sb_two_node_host(sb, 0x29c0);
    sb_add(sb, "0000:01:00.0", "0000:02:02.0", SB_SWITCH_DOWN, 0x1000,
           0xc010, 0x060400, 0, 16, "pcieport");
    sb_set_acs(sb, "0000:02:02.0", 0x5f, SB_ACS_LINUX);
    sb_add(sb, "0000:02:02.0", "0000:06:00.0", SB_ENDPOINT, 0x144d, 0xa80a,
           0x010802, 0, 17, "nvme");
    sb_add(sb, NULL, "0000:00:1f.3", SB_ENDPOINT, 0x8086, 0xa123, 0x0c0500,
           0, 20, NULL);
    sb_add(sb, NULL, "0000:00:1f.4", SB_ENDPOINT, 0x8086, 0xa171, 0x040300,
           0, 21, NULL);
    set_attr(sb, "0000:00:1f.4", "power_state", "D3cold\n", -1);
    dir = sb_device_dir(sb, "0000:00:1f.3");
    cfg = g_build_filename(dir, "config", NULL);
    g_unlink(cfg);
    g_assert_cmpint(mkfifo(cfg, 0600), ==, 0);

    g_assert_true(gp_snapshot_write(sb_root(sb), dest, &err));
    g_assert_no_error(err);

    host = gp_topo_read_devices(sb_root(sb), bdfs, &err);
    g_assert_no_error(err);
    snap = gp_topo_read_devices(dest, bdfs, &err);
    g_assert_no_error(err);
    a = config_reads(host);
    b = config_reads(snap);
    g_assert_cmpstr(b, ==, a);
    g_clear_pointer(&a, g_free);
    g_clear_pointer(&b, g_free);
    a = pair_reads(host, "0000:06:00.0", SB_GPU_A);
    b = pair_reads(snap, "0000:06:00.0", SB_GPU_A);
    g_assert_cmpstr(b, ==, a);
    /* The host's answer: the port's ACS redirects the pair. */
    g_assert_true(gp_topo_find(snap, "0000:02:02.0")->acs_known);
    g_assert_cmpint(path(snap, "0000:06:00.0", SB_GPU_A), ==, GP_PATH_PIX);
    g_assert_cmpint(verdict(snap, "0000:06:00.0", SB_GPU_A, NULL), !=,
                    GP_P2P_UNKNOWN);

    host_all = gp_topo_read_all(sb_root(sb), &err);
    g_assert_no_error(err);
    snap_all = gp_topo_read_all(dest, &err);
    g_assert_no_error(err);
    g_clear_pointer(&a, g_free);
    g_clear_pointer(&b, g_free);
    a = config_reads(host_all);
    b = config_reads(snap_all);
    g_assert_cmpstr(b, ==, a);
    g_assert_nonnull(strstr(b, "0000:00:1f.3 unreadable"));
    g_assert_nonnull(strstr(b, "0000:00:1f.4 D3cold"));

    /* The device in D3cold was not woken: no config of it was kept. */
    copy = g_build_filename(dest, "sys/bus/pci/devices/0000:00:1f.4",
                            "config", NULL);
    g_assert_false(g_file_test(copy, G_FILE_TEST_EXISTS));
    sb_remove_tree(tmp);
}

static void test_config_unreadable(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *dir = NULL, *path = NULL, *why = NULL;
    const GpDevice *dev;

    sb_two_node_host(sb, 0x29c0);
    dir = sb_device_dir(sb, "0000:02:01.0");
    path = g_build_filename(dir, "config", NULL);
    /* A directory in its place: unreadable even for root. */
    g_assert_cmpint(g_unlink(path), ==, 0);
    g_assert_cmpint(g_mkdir(path, 0755), ==, 0);
    t = read_ok(sb_root(sb));
    dev = gp_topo_find(t, "0000:02:01.0");
    g_assert_cmpuint(t->config_unreadable, ==, 1);
    g_assert_cmpuint(t->config_truncated, ==, 0);
    g_assert_nonnull(dev->config_unreadable);
    g_assert_nonnull(strstr(dev->config_unreadable, "0000:02:01.0/config"));
    g_assert_nonnull(strstr(dev->config_unreadable, "not readable"));
    g_assert_cmpint(verdict(t, SB_GPU_A, SB_GPU_B, &why), ==, GP_P2P_UNKNOWN);
    g_assert_nonnull(strstr(why, "0000:02:01.0/config"));
    g_assert_cmpint(g_rmdir(path), ==, 0);
}

static void test_misread_cpuinfo(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();

    sb_two_node_host(sb, 0x29c0);
    sb_write(sb, "proc/cpuinfo", "processor\t: 0\nvendor_id\t: AuthenticAMD\n"
             "cpu family\t: twenty-five\n\n");
    expect_misread(sb, "proc/cpuinfo", "'twenty-five'");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/topo/fixture/h200x2-vm", test_h200_fixture);
    g_test_add_func("/topo/fixture/vhost-two-numa", test_vhost_fixture);
    g_test_add_func("/topo/switches", test_switch_topology);
    g_test_add_func("/topo/pxb", test_pxb_switches);
    g_test_add_func("/topo/rdma-nearest-nic", test_rdma_nearest_nic);
    g_test_add_func("/topo/acs-redirect", test_acs_redirect);
    g_test_add_func("/topo/host-bridge-lists", test_host_bridge_lists);
    g_test_add_func("/topo/unprivileged", test_unprivileged_read);
    g_test_add_func("/topo/vmd-domain", test_vmd_domain);
    g_test_add_func("/topo/host-bridge/root-port-first",
                    test_root_port_host_bridge);
    g_test_add_func("/topo/error/missing-file", test_missing_file);
    g_test_add_func("/topo/error/bad-attribute", test_bad_attribute);
    g_test_add_func("/topo/error/missing-root", test_missing_root);
    g_test_add_func("/topo/sys-dir-as-root", test_sys_dir_as_root);
    g_test_add_func("/topo/unknown-bdf", test_unknown_bdf);
    g_test_add_func("/topo/misread/numa-node", test_misread_numa_node);
    g_test_add_func("/topo/misread/resource", test_misread_resource);
    g_test_add_func("/topo/misread/special-files",
                    test_misread_special_files);
    g_test_add_func("/topo/d3cold", test_d3cold_not_woken);
    g_test_add_func("/topo/root-link-resolved-once",
                    test_root_link_resolved_once);
    g_test_add_func("/topo/misread/iommu-group", test_misread_iommu_group);
    g_test_add_func("/topo/misread/iommu-group-missing",
                    test_iommu_group_missing);
    g_test_add_func("/topo/misread/link-speed", test_misread_link_speed);
    g_test_add_func("/topo/misread/config", test_misread_config);
    g_test_add_func("/topo/odd-device-marks-itself",
                    test_odd_device_marks_itself);
    g_test_add_func("/topo/odd-device/vanishing-mid-read",
                    test_device_vanishing_mid_read);
    g_test_add_func("/topo/unknown-link", test_unknown_link);
    g_test_add_func("/topo/misread/cpuinfo", test_misread_cpuinfo);
    g_test_add_func("/topo/config-unreadable", test_config_unreadable);
    g_test_add_func("/topo/config-read-minimal", test_config_read_minimal);
    g_test_add_func("/topo/config-off-paths", test_config_off_paths_not_read);
    g_test_add_func("/topo/config-named-devices",
                    test_config_named_devices_read);
    g_test_add_func("/topo/config-named-devices/snapshot",
                    test_config_named_devices_snapshot);
    g_test_add_func("/topo/vf", test_vf);
    return g_test_run();
}
