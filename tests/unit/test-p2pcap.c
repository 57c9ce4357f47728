/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The P2P capability codec and its placement in config space. */
#include <string.h>

#include "gpup2p/p2pcap.h"

static void load_h200_config(GpPciConfig *cfg)
{
    g_autofree char *path = g_test_build_filename(G_TEST_DIST, "..",
        "fixtures", "h200x2-vm", "sys", "devices", "pci0000:00",
        "0000:00:06.0", "config", NULL);
    g_autofree gchar *data = NULL;
    gsize len;

    g_assert_true(g_file_get_contents(path, &data, &len, NULL));
    g_assert_cmpuint(len, ==, 4096);
    gp_pcicfg_init(cfg, (const uint8_t *)data, len);
}

static void add_cap(GpPciConfig *cfg, uint8_t off, uint8_t id, uint8_t next)
{
    cfg->bytes[off] = id;
    cfg->bytes[off + 1] = next;
}

/* PM 40h, MSI 48h (14 bytes), PCIe 60h (3Ch bytes), then @last_id at @last. */
static void turing_like(GpPciConfig *cfg, uint8_t last, uint8_t last_id)
{
    gp_pcicfg_init(cfg, NULL, 4096);
    cfg->bytes[0x06] = 0x10;
    cfg->bytes[0x34] = 0x40;
    add_cap(cfg, 0x40, GP_PCI_CAP_ID_PM, 0x48);
    add_cap(cfg, 0x48, GP_PCI_CAP_ID_MSI, 0x60);
    cfg->bytes[0x4a] = 0x80;
    add_cap(cfg, 0x60, GP_PCI_CAP_ID_EXP, last);
    cfg->bytes[0x62] = 0x02;
    add_cap(cfg, last, last_id, 0);
}

static void test_encode_matches_reference(void)
{
    /* What QEMU's x-nv-gpudirect-clique=5 shows a guest (seen at C8h). */
    static const uint8_t ref[8] = { 0x09, 0x00, 0x08, 0x50, 0x32, 0x50,
                                    0x28, 0x00 };
    uint8_t out[8];
    GpP2pCap cap;

    gp_p2pcap_encode(out, 5, 0);
    g_assert_cmpmem(out, 8, ref, 8);
    g_assert_true(gp_p2pcap_decode(out, &cap));
    g_assert_true(cap.valid);
    g_assert_cmpuint(cap.clique, ==, 5);
    g_assert_cmpuint(cap.version, ==, 0);
    g_assert_true(cap.last);

    gp_p2pcap_encode(out, 15, 0xd4);
    g_assert_cmphex(out[6], ==, 0x78);
    g_assert_cmphex(out[1], ==, 0xd4);
    g_assert_true(gp_p2pcap_decode(out, &cap));
    g_assert_cmpuint(cap.clique, ==, 15);
    g_assert_false(cap.last);
}

static void test_set_clique_keeps_other_bytes(void)
{
    uint8_t b[8];
    unsigned id;

    for (id = 0; id <= GP_P2PCAP_MAX_CLIQUE; id++) {
        gp_p2pcap_encode(b, 0, 0xd4);
        b[7] = 0x5a;
        gp_p2pcap_set_clique(b, id);
        g_assert_cmphex(b[1], ==, 0xd4);
        g_assert_cmphex(b[7], ==, 0x5a);
        g_assert_cmphex(b[6], ==, id << 3);
    }
}

static void test_decode_invalid(void)
{
    uint8_t b[8];
    GpP2pCap cap;

    gp_p2pcap_encode(b, 3, 0);
    b[2] = 12;
    g_assert_true(gp_p2pcap_decode(b, &cap));
    g_assert_false(cap.valid);
    g_assert_nonnull(strstr(cap.problem, "length is 12"));

    gp_p2pcap_encode(b, 3, 0);
    b[6] |= 0x1;
    g_assert_true(gp_p2pcap_decode(b, &cap));
    g_assert_false(cap.valid);
    g_assert_nonnull(strstr(cap.problem, "version is 1"));

    gp_p2pcap_encode(b, 3, 0);
    b[7] = 0x80;
    g_assert_true(gp_p2pcap_decode(b, &cap));
    g_assert_false(cap.valid);
    g_assert_nonnull(strstr(cap.problem, "reserved"));

    gp_p2pcap_encode(b, 3, 0);
    b[4] = 'X';
    g_assert_false(gp_p2pcap_decode(b, &cap));
    b[4] = '2';
    b[0] = 0x10;
    g_assert_false(gp_p2pcap_decode(b, &cap));
}

static void test_h200_places_at_c8(void)
{
    GpPciConfig cfg;
    GpPciCapList before, after;
    GpP2pCap cap;
    uint16_t off;
    g_autoptr(GError) err = NULL;

    load_h200_config(&cfg);
    g_assert_true(gp_pcicfg_walk_caps(&cfg, &before, &err));
    /* PM 40h, MSI 48h, PCIe 60h, MSI-X B0h: the capture's own list. */
    g_assert_cmpuint(before.count, ==, 4);
    g_assert_cmphex(before.caps[3].offset, ==, 0xb0);
    g_assert_false(gp_p2pcap_find(&cfg, &cap, &err));
    g_assert_error(err, GP_ERROR, GP_ERROR_NOT_FOUND);
    g_clear_error(&err);

    g_assert_true(gp_p2pcap_choose_offset(&cfg, false, &off, &err));
    g_assert_cmphex(off, ==, 0xc8);
    g_assert_true(gp_p2pcap_insert(&cfg, 7, &off, &err));
    g_assert_cmphex(off, ==, 0xc8);
    g_assert_true(gp_pcicfg_walk_caps(&cfg, &after, &err));
    g_assert_cmpuint(after.count, ==, 5);
    g_assert_cmphex(after.caps[4].offset, ==, 0xc8);
    g_assert_cmphex(cfg.bytes[0xb1], ==, 0xc8);     /* MSI-X now links on */
    g_assert_true(gp_p2pcap_find(&cfg, &cap, &err));
    g_assert_true(cap.valid);
    g_assert_true(cap.last);
    g_assert_cmpuint(cap.clique, ==, 7);
}

static void test_msix_at_c8_places_at_d4(void)
{
    GpPciConfig cfg;
    uint16_t off;

    turing_like(&cfg, 0xc8, GP_PCI_CAP_ID_MSIX);
    g_assert_true(gp_p2pcap_choose_offset(&cfg, false, &off, NULL));
    g_assert_cmphex(off, ==, 0xd4);
}

static void test_both_taken(void)
{
    GpPciConfig cfg;
    uint16_t off = 0;
    g_autoptr(GError) err = NULL;

    turing_like(&cfg, 0xc8, GP_PCI_CAP_ID_MSIX);    /* C8h..D3h */
    cfg.bytes[0xc9] = 0xd4;
    add_cap(&cfg, 0xd4, GP_PCI_CAP_ID_VNDR, 0);     /* D4h..E3h */
    cfg.bytes[0xd6] = 16;
    /* By default only C8h and D4h: refused, naming what covers them. */
    g_assert_false(gp_p2pcap_choose_offset(&cfg, false, &off, &err));
    g_assert_error(err, GP_ERROR, GP_ERROR_NO_ROOM);
    g_assert_nonnull(strstr(err->message, "capability 11h at c8h..d3h"));
    g_assert_nonnull(strstr(err->message, "capability 09h at d4h..e3h"));
    g_clear_error(&err);
    /* Opted in: 40h..47h PM, 48h..55h MSI, 60h..9Bh PCIe: 58h is free. */
    g_assert_true(gp_p2pcap_choose_offset(&cfg, true, &off, NULL));
    g_assert_cmphex(off, ==, 0x58);
}

static void test_overlap_without_start(void)
{
    GpPciConfig cfg;
    uint16_t off;

    /* A vendor capability at C0h, 16 bytes long, covers C8h..CFh without
     * starting there: C8h is not free although nothing starts at C8h. */
    turing_like(&cfg, 0xc0, GP_PCI_CAP_ID_VNDR);
    cfg.bytes[0xc2] = 16;
    g_assert_true(gp_p2pcap_choose_offset(&cfg, false, &off, NULL));
    g_assert_cmphex(off, ==, 0xd4);

    /* Grown to 24 bytes it also covers D4h: refused unless opted in. */
    cfg.bytes[0xc2] = 24;
    g_assert_false(gp_p2pcap_choose_offset(&cfg, false, &off, NULL));
    g_assert_true(gp_p2pcap_choose_offset(&cfg, true, &off, NULL));
    g_assert_cmphex(off, ==, 0x58);
}

static void test_no_room(void)
{
    GpPciConfig cfg;
    uint16_t off;
    g_autoptr(GError) err = NULL;

    /* One vendor capability that fills all of 40h..FFh. */
    gp_pcicfg_init(&cfg, NULL, 256);
    cfg.bytes[0x06] = 0x10;
    cfg.bytes[0x34] = 0x40;
    add_cap(&cfg, 0x40, GP_PCI_CAP_ID_VNDR, 0);
    cfg.bytes[0x42] = 0xc0;
    g_assert_false(gp_p2pcap_choose_offset(&cfg, true, &off, &err));
    g_assert_error(err, GP_ERROR, GP_ERROR_NO_ROOM);
    g_clear_error(&err);
    g_assert_false(gp_p2pcap_insert(&cfg, 1, &off, &err));
    g_assert_error(err, GP_ERROR, GP_ERROR_NO_ROOM);
    g_assert_cmphex(cfg.bytes[0x41], ==, 0);        /* untouched */
}

static void test_insert_rejects_bad_input(void)
{
    GpPciConfig cfg, copy;
    uint16_t off;
    g_autoptr(GError) err = NULL;

    load_h200_config(&cfg);
    copy = cfg;
    g_assert_false(gp_p2pcap_insert(&cfg, 16, &off, &err));
    g_assert_error(err, GP_ERROR, GP_ERROR_INVALID);
    g_assert_cmpmem(cfg.bytes, 256, copy.bytes, 256);
    g_clear_error(&err);

    gp_pcicfg_init(&cfg, copy.bytes, 64);           /* unprivileged read */
    g_assert_false(gp_p2pcap_insert(&cfg, 1, &off, &err));
    g_assert_error(err, GP_ERROR, GP_ERROR_INCOMPLETE);
}

static void test_insert_into_empty_list(void)
{
    GpPciConfig cfg;
    GpP2pCap cap;
    uint16_t off;

    gp_pcicfg_init(&cfg, NULL, 256);
    g_assert_true(gp_p2pcap_insert(&cfg, 2, &off, NULL));
    g_assert_cmphex(off, ==, 0xc8);
    g_assert_cmphex(cfg.bytes[0x34], ==, 0xc8);
    g_assert_true(cfg.bytes[0x06] & 0x10);
    g_assert_true(gp_p2pcap_find(&cfg, &cap, NULL));
    g_assert_cmpuint(cap.clique, ==, 2);
}

static void test_find_not_last(void)
{
    GpPciConfig cfg;
    GpP2pCap cap;

    turing_like(&cfg, 0xc8, GP_PCI_CAP_ID_MSIX);
    /* Put the P2P capability at D4h but not last: PM links to it and it
     * links on to MSI. */
    gp_p2pcap_encode(&cfg.bytes[0xd4], 4, 0x48);
    cfg.bytes[0x41] = 0xd4;
    g_assert_true(gp_p2pcap_find(&cfg, &cap, NULL));
    g_assert_cmphex(cap.offset, ==, 0xd4);
    g_assert_false(cap.valid);
    g_assert_nonnull(strstr(cap.problem, "not last"));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/p2pcap/encode-reference", test_encode_matches_reference);
    g_test_add_func("/p2pcap/set-clique", test_set_clique_keeps_other_bytes);
    g_test_add_func("/p2pcap/decode-invalid", test_decode_invalid);
    g_test_add_func("/p2pcap/place/h200-c8", test_h200_places_at_c8);
    g_test_add_func("/p2pcap/place/msix-at-c8", test_msix_at_c8_places_at_d4);
    g_test_add_func("/p2pcap/place/both-taken", test_both_taken);
    g_test_add_func("/p2pcap/place/overlap", test_overlap_without_start);
    g_test_add_func("/p2pcap/place/no-room", test_no_room);
    g_test_add_func("/p2pcap/insert/bad-input", test_insert_rejects_bad_input);
    g_test_add_func("/p2pcap/insert/empty-list", test_insert_into_empty_list);
    g_test_add_func("/p2pcap/find/not-last", test_find_not_last);
    return g_test_run();
}
