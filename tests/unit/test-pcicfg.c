/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Config space walks, PCIe and ACS decoding, BAR resource lines. */
#include <string.h>

#include "gpup2p/pcicfg.h"
#include "gpup2p/topo.h"

static void cfg_with_caps(GpPciConfig *cfg, size_t len)
{
    gp_pcicfg_init(cfg, NULL, len);
    cfg->bytes[0x06] = 0x10;        /* capability list present */
    cfg->bytes[0x34] = 0x40;
}

static void add_cap(GpPciConfig *cfg, uint8_t off, uint8_t id, uint8_t next)
{
    cfg->bytes[off] = id;
    cfg->bytes[off + 1] = next;
}

static void test_walk_basic(void)
{
    GpPciConfig cfg;
    GpPciCapList list;
    g_autoptr(GError) err = NULL;

    cfg_with_caps(&cfg, 256);
    add_cap(&cfg, 0x40, GP_PCI_CAP_ID_PM, 0x48);
    add_cap(&cfg, 0x48, GP_PCI_CAP_ID_MSI, 0x60);
    cfg.bytes[0x4a] = 0x80;         /* MSI 64-bit, no masking: 14 bytes */
    add_cap(&cfg, 0x60, GP_PCI_CAP_ID_EXP, 0xb0);
    cfg.bytes[0x62] = 0x02;         /* PCIe v2, endpoint */
    add_cap(&cfg, 0xb0, GP_PCI_CAP_ID_MSIX, 0x00);

    g_assert_true(gp_pcicfg_walk_caps(&cfg, &list, &err));
    g_assert_no_error(err);
    g_assert_cmpuint(list.count, ==, 4);
    g_assert_cmpuint(list.caps[0].length, ==, 8);
    g_assert_cmpuint(list.caps[1].length, ==, 14);
    g_assert_cmpuint(list.caps[2].length, ==, 0x3c);
    g_assert_cmpuint(list.caps[3].offset, ==, 0xb0);
    g_assert_cmpuint(list.caps[3].length, ==, 12);
    g_assert_nonnull(gp_pcicfg_find_cap(&list, GP_PCI_CAP_ID_MSIX));
    g_assert_null(gp_pcicfg_find_cap(&list, 0x12));
}

static void test_walk_no_list(void)
{
    GpPciConfig cfg;
    GpPciCapList list;

    gp_pcicfg_init(&cfg, NULL, 256);
    cfg.bytes[0x34] = 0x40;         /* pointer without the status bit */
    g_assert_true(gp_pcicfg_walk_caps(&cfg, &list, NULL));
    g_assert_cmpuint(list.count, ==, 0);
}

static void test_walk_loop(void)
{
    GpPciConfig cfg;
    GpPciCapList list;
    g_autoptr(GError) err = NULL;

    cfg_with_caps(&cfg, 256);
    add_cap(&cfg, 0x40, GP_PCI_CAP_ID_PM, 0x50);
    add_cap(&cfg, 0x50, GP_PCI_CAP_ID_MSIX, 0x40);
    g_assert_false(gp_pcicfg_walk_caps(&cfg, &list, &err));
    g_assert_error(err, GP_ERROR, GP_ERROR_INVALID);
    g_assert_nonnull(strstr(err->message, "loops back to 0x40"));
}

static void test_walk_self_loop(void)
{
    GpPciConfig cfg;
    GpPciCapList list;
    g_autoptr(GError) err = NULL;

    cfg_with_caps(&cfg, 256);
    add_cap(&cfg, 0x40, GP_PCI_CAP_ID_PM, 0x40);
    g_assert_false(gp_pcicfg_walk_caps(&cfg, &list, &err));
    g_assert_error(err, GP_ERROR, GP_ERROR_INVALID);
}

static void test_walk_into_header(void)
{
    GpPciConfig cfg;
    GpPciCapList list;
    g_autoptr(GError) err = NULL;

    cfg_with_caps(&cfg, 256);
    add_cap(&cfg, 0x40, GP_PCI_CAP_ID_PM, 0x10);
    g_assert_false(gp_pcicfg_walk_caps(&cfg, &list, &err));
    g_assert_error(err, GP_ERROR, GP_ERROR_INVALID);
    g_assert_nonnull(strstr(err->message, "0x10"));
}

static void test_walk_truncated(void)
{
    GpPciConfig cfg;
    GpPciCapList list;
    g_autoptr(GError) err = NULL;

    /* An unprivileged sysfs read: 64 bytes, the list starts past them. */
    cfg_with_caps(&cfg, 64);
    g_assert_false(gp_pcicfg_walk_caps(&cfg, &list, &err));
    g_assert_error(err, GP_ERROR, GP_ERROR_INCOMPLETE);
    g_assert_nonnull(strstr(err->message, "64 readable bytes"));
    g_clear_error(&err);

    gp_pcicfg_init(&cfg, NULL, 16);
    g_assert_false(gp_pcicfg_walk_caps(&cfg, &list, &err));
    g_assert_error(err, GP_ERROR, GP_ERROR_INCOMPLETE);
}

static void test_unknown_length_is_bounded(void)
{
    GpPciConfig cfg;
    GpPciCapList list;

    cfg_with_caps(&cfg, 256);
    add_cap(&cfg, 0x40, 0x0a, 0x80);    /* debug port: length unknown */
    add_cap(&cfg, 0x80, GP_PCI_CAP_ID_PM, 0x00);
    g_assert_true(gp_pcicfg_walk_caps(&cfg, &list, NULL));
    g_assert_false(list.caps[0].length_known);
    g_assert_cmpuint(list.caps[0].length, ==, 0x40);
}

static void put32(GpPciConfig *cfg, size_t off, uint32_t v)
{
    cfg->bytes[off] = v & 0xff;
    cfg->bytes[off + 1] = (v >> 8) & 0xff;
    cfg->bytes[off + 2] = (v >> 16) & 0xff;
    cfg->bytes[off + 3] = v >> 24;
}

static void test_ext_walk_and_acs(void)
{
    GpPciConfig cfg;
    GpPciCap caps[16];
    GpAcsInfo acs;
    size_t n;
    g_autoptr(GError) err = NULL;

    gp_pcicfg_init(&cfg, NULL, 4096);
    put32(&cfg, 0x100, 0x0001 | 1u << 16 | 0x148u << 20);   /* AER */
    put32(&cfg, 0x148, 0x000d | 1u << 16);                  /* ACS, last */
    cfg.bytes[0x14c] = 0x5f;        /* cap: SV TB RR CR UF DT */
    cfg.bytes[0x14e] = 0x1d;        /* ctrl: SV RR CR UF */
    g_assert_true(gp_pcicfg_walk_ext_caps(&cfg, caps, 16, &n, &err));
    g_assert_cmpuint(n, ==, 2);
    g_assert_cmpuint(caps[1].offset, ==, 0x148);
    g_assert_true(gp_pcicfg_acs_info(&cfg, &acs, &err));
    g_assert_true(acs.present);
    g_assert_cmphex(acs.ctrl, ==, 0x1d);
    g_assert_cmphex(acs.ctrl & GP_ACS_REDIRECT_MASK, ==, GP_ACS_RR | GP_ACS_CR);
    {
        g_autofree char *s = gp_acs_bits_string(acs.ctrl);

        g_assert_cmpstr(s, ==, "SV RR CR UF");
    }
}

static void test_ext_walk_loop(void)
{
    GpPciConfig cfg;
    GpPciCap caps[16];
    size_t n;
    g_autoptr(GError) err = NULL;

    gp_pcicfg_init(&cfg, NULL, 4096);
    put32(&cfg, 0x100, 0x0001 | 1u << 16 | 0x200u << 20);
    put32(&cfg, 0x200, 0x000d | 1u << 16 | 0x100u << 20);
    g_assert_false(gp_pcicfg_walk_ext_caps(&cfg, caps, 16, &n, &err));
    g_assert_error(err, GP_ERROR, GP_ERROR_INVALID);
    g_assert_nonnull(strstr(err->message, "loops"));
    g_clear_error(&err);

    put32(&cfg, 0x200, 0x000d | 1u << 16 | 0x080u << 20);
    g_assert_false(gp_pcicfg_walk_ext_caps(&cfg, caps, 16, &n, &err));
    g_assert_error(err, GP_ERROR, GP_ERROR_INVALID);
    g_assert_nonnull(strstr(err->message, "inside standard config space"));
}

static void test_ext_walk_truncated(void)
{
    GpPciConfig cfg;
    GpAcsInfo acs;
    g_autoptr(GError) err = NULL;

    gp_pcicfg_init(&cfg, NULL, 64);
    g_assert_false(gp_pcicfg_acs_info(&cfg, &acs, &err));
    g_assert_error(err, GP_ERROR, GP_ERROR_INCOMPLETE);
    g_assert_nonnull(strstr(err->message, "needs root"));
    g_clear_error(&err);

    /* 256 bytes readable: the kernel itself sees no extended space. */
    gp_pcicfg_init(&cfg, NULL, 256);
    g_assert_true(gp_pcicfg_acs_info(&cfg, &acs, &err));
    g_assert_false(acs.present);
}

static void test_pcie_info(void)
{
    GpPciConfig cfg;
    GpPciCapList list;
    GpPcieInfo info;

    cfg_with_caps(&cfg, 256);
    add_cap(&cfg, 0x40, GP_PCI_CAP_ID_EXP, 0);
    cfg.bytes[0x42] = 0x62;         /* v2, downstream port */
    put32(&cfg, 0x4c, 0x00000105);  /* link cap: Gen5 x16 */
    cfg.bytes[0x52] = 0x84;         /* link status: Gen4 x8 */
    cfg.bytes[0x53] = 0x00;
    g_assert_true(gp_pcicfg_walk_caps(&cfg, &list, NULL));
    g_assert_true(gp_pcicfg_pcie_info(&cfg, &list, &info));
    g_assert_cmpint(info.type, ==, GP_PCIE_TYPE_DOWNSTREAM_PORT);
    g_assert_cmpuint(info.link_max_speed, ==, 5);
    g_assert_cmpuint(info.link_max_width, ==, 16);
    g_assert_cmpuint(info.link_speed, ==, 4);
    g_assert_cmpuint(info.link_width, ==, 8);
    g_assert_cmpstr(gp_pcie_speed_name(5), ==, "32");
    g_assert_cmpfloat_with_epsilon(gp_pcie_lane_gbps(5) * 16, 63.0, 0.1);
}

static void test_bar_resource_line(void)
{
    GpBar bar;

    g_assert_true(gp_bar_parse_resource_line(
        "0x0000100000000000 0x0000103fffffffff 0x000000000014220c", 2, &bar));
    g_assert_cmpuint(bar.index, ==, 2);
    g_assert_cmphex(bar.start, ==, 0x100000000000ull);
    g_assert_cmpuint(bar.size, ==, 256ull << 30);
    g_assert_true(bar.is64);
    g_assert_true(bar.prefetchable);
    g_assert_false(bar.io);

    g_assert_true(gp_bar_parse_resource_line(
        "0x000000000000c000 0x000000000000c03f 0x0000000000040101", 4, &bar));
    g_assert_true(bar.io);
    g_assert_cmpuint(bar.size, ==, 64);

    g_assert_true(gp_bar_parse_resource_line(
        "0x0000000000000000 0x0000000000000000 0x0000000000000000", 1, &bar));
    g_assert_cmpuint(bar.size, ==, 0);
    g_assert_false(gp_bar_parse_resource_line("garbage", 0, &bar));
}

static void test_bdf_normalize(void)
{
    char out[GP_BDF_LEN];

    g_assert_true(gp_bdf_normalize("3:0.1", out));
    g_assert_cmpstr(out, ==, "0000:03:00.1");
    g_assert_true(gp_bdf_normalize("0001:A0:1f.7", out));
    g_assert_cmpstr(out, ==, "0001:a0:1f.7");
    g_assert_false(gp_bdf_normalize("0000:00:20.0", out));
    g_assert_false(gp_bdf_normalize("0000:00:01.8", out));
    g_assert_false(gp_bdf_normalize("00:01.0x", out));
    g_assert_false(gp_bdf_normalize("gpu0", out));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/pcicfg/walk/basic", test_walk_basic);
    g_test_add_func("/pcicfg/walk/no-list", test_walk_no_list);
    g_test_add_func("/pcicfg/walk/loop", test_walk_loop);
    g_test_add_func("/pcicfg/walk/self-loop", test_walk_self_loop);
    g_test_add_func("/pcicfg/walk/into-header", test_walk_into_header);
    g_test_add_func("/pcicfg/walk/truncated", test_walk_truncated);
    g_test_add_func("/pcicfg/walk/unknown-length", test_unknown_length_is_bounded);
    g_test_add_func("/pcicfg/ext/acs", test_ext_walk_and_acs);
    g_test_add_func("/pcicfg/ext/loop", test_ext_walk_loop);
    g_test_add_func("/pcicfg/ext/truncated", test_ext_walk_truncated);
    g_test_add_func("/pcicfg/pcie-info", test_pcie_info);
    g_test_add_func("/pcicfg/bar-resource", test_bar_resource_line);
    g_test_add_func("/pcicfg/bdf", test_bdf_normalize);
    return g_test_run();
}
