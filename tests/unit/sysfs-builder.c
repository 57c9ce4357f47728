/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <glib/gstdio.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpup2p/p2pcap.h"
#include "gpup2p/snapshot.h"
#include "sysfs-builder.h"

struct SysfsBuilder {
    char *root;
    GHashTable *paths;      /* bdf -> "devices/pci.../bdf" */
};

SysfsBuilder *sb_new(void)
{
    SysfsBuilder *sb = g_new0(SysfsBuilder, 1);
    g_autofree char *bus = NULL;

    sb->root = g_dir_make_tmp("gpup2p-sysfs-XXXXXX", NULL);
    g_assert_nonnull(sb->root);
    sb->paths = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    bus = g_build_filename(sb->root, "sys/bus/pci/devices", NULL);
    g_assert_cmpint(g_mkdir_with_parents(bus, 0755), ==, 0);
    return sb;
}

const char *sb_root(const SysfsBuilder *sb)
{
    return sb->root;
}

static void write_text(const char *dir, const char *name, const char *text)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);

    g_assert_true(g_file_set_contents(path, text, -1, NULL));
}

void sb_write(SysfsBuilder *sb, const char *rel, const char *text)
{
    g_autofree char *path = g_build_filename(sb->root, rel, NULL);
    g_autofree char *dir = g_path_get_dirname(path);

    g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
    g_assert_true(g_file_set_contents(path, text, -1, NULL));
}

void sb_cpu(SysfsBuilder *sb, const char *vendor_id, unsigned family)
{
    g_autofree char *dir = g_build_filename(sb->root, "proc", NULL);
    g_autofree char *text = g_strdup_printf(
        "processor\t: 0\nvendor_id\t: %s\ncpu family\t: %u\n"
        "model name\t: test cpu\n\nprocessor\t: 1\nvendor_id\t: other\n",
        vendor_id, family);

    g_mkdir_with_parents(dir, 0755);
    write_text(dir, "cpuinfo", text);
}

static void put16(uint8_t *b, size_t off, uint16_t v)
{
    b[off] = v & 0xff;
    b[off + 1] = v >> 8;
}

static void put32(uint8_t *b, size_t off, uint32_t v)
{
    put16(b, off, v & 0xffff);
    put16(b, off + 2, v >> 16);
}

char *sb_device_dir(const SysfsBuilder *sb, const char *bdf)
{
    const char *rel = g_hash_table_lookup(sb->paths, bdf);

    g_assert_nonnull(rel);
    return g_build_filename(sb->root, "sys", rel, NULL);
}

void sb_add_rdma_device(SysfsBuilder *sb, const char *name, const char *bdf)
{
    g_autofree char *dir = g_build_filename(sb->root, "sys/class/infiniband",
                                            name, NULL);
    g_autofree char *link = g_build_filename(dir, "device", NULL);
    g_autofree char *target = sb_device_dir(sb, bdf);

    g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
    g_assert_cmpint(symlink(target, link), ==, 0);
}

void sb_add(SysfsBuilder *sb, const char *parent, const char *bdf,
            SbKind kind, uint16_t vendor, uint16_t device, uint32_t class_code,
            int numa_node, int iommu_group, const char *driver)
{
    static const uint8_t pcie_type[] = {
        [SB_ROOT_PORT] = 0x4, [SB_SWITCH_UP] = 0x5, [SB_SWITCH_DOWN] = 0x6,
        [SB_ENDPOINT] = 0x0, [SB_PCI_BRIDGE] = 0x7,
    };
    uint8_t cfg[4096] = { 0 };
    g_autofree char *rel = NULL;
    g_autofree char *dir = NULL;
    g_autofree char *link = NULL;
    g_autofree char *target = NULL;
    g_autofree char *text = NULL;
    g_autofree char *cfgpath = NULL;
    bool bridge = kind == SB_ROOT_PORT || kind == SB_SWITCH_UP ||
                  kind == SB_SWITCH_DOWN || kind == SB_PCI_BRIDGE;

    if (parent) {
        g_auto(GStrv) split = g_strsplit(parent, "/", 2);
        const char *prel = g_hash_table_lookup(sb->paths, split[0]);

        g_assert_nonnull(prel);
        /* "BDF/pciDDDDD:BB": a root bus below a device (Intel VMD). */
        rel = g_build_filename(prel, split[1] ? split[1] : bdf,
                               split[1] ? bdf : NULL, NULL);
    } else {
        unsigned domain, bus;

        g_assert_cmpint(sscanf(bdf, "%x:%x:", &domain, &bus), ==, 2);
        rel = g_strdup_printf("devices/pci%04x:%02x/%s", domain, bus, bdf);
    }
    dir = g_build_filename(sb->root, "sys", rel, NULL);
    g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
    g_hash_table_insert(sb->paths, g_strdup(bdf), g_strdup(rel));

    text = g_strdup_printf("0x%04x\n", vendor);
    write_text(dir, "vendor", text);
    g_free(text);
    text = g_strdup_printf("0x%04x\n", device);
    write_text(dir, "device", text);
    g_free(text);
    text = g_strdup_printf("0x%06x\n", class_code);
    write_text(dir, "class", text);
    g_free(text);
    text = g_strdup_printf("%d\n", numa_node);
    write_text(dir, "numa_node", text);
    write_text(dir, "subsystem_vendor", "0x0000\n");
    write_text(dir, "subsystem_device", "0x0000\n");
    if (kind == SB_ENDPOINT || kind == SB_PCI_ENDPOINT) {
        /* A 16 MiB register BAR0 and a 64-bit prefetchable BAR1. */
        write_text(dir, "resource",
                   "0x00000000fd000000 0x00000000fdffffff 0x0000000000040200\n"
                   "0x0000380000000000 0x00003807ffffffff 0x000000000014220c\n"
                   "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
                   "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
                   "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
                   "0x0000000000000000 0x0000000000000000 0x0000000000000000\n");
    }

    put16(cfg, 0x00, vendor);
    put16(cfg, 0x02, device);
    put32(cfg, 0x08, class_code << 8);
    cfg[0x0e] = bridge ? 1 : 0;
    if (kind == SB_PCI_ENDPOINT) {
        put16(cfg, 0x06, 0x0010);           /* capability list */
        cfg[0x34] = 0x40;
        cfg[0x40] = 0x01;                   /* PM only: not PCIe */
        cfg[0x41] = 0x00;
        put16(cfg, 0x42, 0x0003);
    } else if (kind != SB_HOST_BRIDGE) {
        put16(cfg, 0x06, 0x0010);           /* capability list */
        cfg[0x34] = 0x40;
        cfg[0x40] = 0x01;                   /* PM, 8 bytes */
        cfg[0x41] = 0x60;
        put16(cfg, 0x42, 0x0003);
        cfg[0x60] = 0x10;                   /* PCIe v2 */
        cfg[0x61] = 0x00;
        put16(cfg, 0x62, (uint16_t)(0x2 | pcie_type[kind] << 4));
        put32(cfg, 0x6c, 0x00000104);       /* link cap: Gen4 x16 */
        put16(cfg, 0x72, 0x0104);           /* link status: Gen4 x16 */
    }
    cfgpath = g_build_filename(dir, "config", NULL);
    g_assert_true(g_file_set_contents(cfgpath, (const char *)cfg,
                                      sizeof(cfg), NULL));

    if (driver) {
        g_autofree char *d = g_strdup_printf("../../../bus/pci/drivers/%s",
                                             driver);
        g_autofree char *p = g_build_filename(dir, "driver", NULL);

        g_assert_cmpint(symlink(d, p), ==, 0);
    }
    if (iommu_group >= 0) {
        g_autofree char *g = g_strdup_printf("../../../kernel/iommu_groups/%d",
                                             iommu_group);
        g_autofree char *p = g_build_filename(dir, "iommu_group", NULL);

        g_assert_cmpint(symlink(g, p), ==, 0);
    }
    target = g_strdup_printf("../../../%s", rel);
    link = g_build_filename(sb->root, "sys/bus/pci/devices", bdf, NULL);
    g_assert_cmpint(symlink(target, link), ==, 0);
}

static void edit_config(SysfsBuilder *sb, const char *bdf, uint8_t *cfg,
                        gsize *len, bool write)
{
    g_autofree char *dir = sb_device_dir(sb, bdf);
    g_autofree char *path = g_build_filename(dir, "config", NULL);

    if (write) {
        g_assert_true(g_file_set_contents(path, (const char *)cfg,
                                          (gssize)*len, NULL));
    } else {
        g_autofree gchar *data = NULL;

        g_assert_true(g_file_get_contents(path, &data, len, NULL));
        memcpy(cfg, data, *len);
    }
}

void sb_set_acs(SysfsBuilder *sb, const char *bdf, uint16_t cap,
                uint16_t ctrl)
{
    uint8_t cfg[4096];
    gsize len;

    edit_config(sb, bdf, cfg, &len, false);
    put32(cfg, 0x100, 0x000d | 1u << 16);   /* ACS v1, last */
    put16(cfg, 0x104, cap);
    put16(cfg, 0x106, ctrl);
    edit_config(sb, bdf, cfg, &len, true);
}

void sb_set_multifunction(SysfsBuilder *sb, const char *bdf)
{
    uint8_t cfg[4096];
    gsize len;

    edit_config(sb, bdf, cfg, &len, false);
    cfg[0x0e] |= 0x80;
    edit_config(sb, bdf, cfg, &len, true);
}

void sb_truncate_config(SysfsBuilder *sb, const char *bdf, size_t len)
{
    uint8_t cfg[4096];
    gsize n;

    edit_config(sb, bdf, cfg, &n, false);
    n = len;
    edit_config(sb, bdf, cfg, &n, true);
}

/* The IOMMU group @bdf's iommu_group link names, NULL without one. */
static char *device_group(const SysfsBuilder *sb, const char *bdf)
{
    g_autofree char *dir = sb_device_dir(sb, bdf);
    g_autofree char *link = g_build_filename(dir, "iommu_group", NULL);
    g_autofree char *text = g_file_read_link(link, NULL);

    return text ? g_path_get_basename(text) : NULL;
}

void sb_iommu_groups(SysfsBuilder *sb)
{
    g_autofree char *groups = g_build_filename(sb->root, "sys", "kernel",
                                               "iommu_groups", NULL);
    GHashTableIter it;
    gpointer bdf, rel;

    g_assert_cmpint(g_mkdir_with_parents(groups, 0755), ==, 0);
    g_hash_table_iter_init(&it, sb->paths);
    while (g_hash_table_iter_next(&it, &bdf, &rel)) {
        g_autofree char *group = device_group(sb, bdf);
        g_autofree char *members = NULL, *member = NULL, *target = NULL;

        if (!group) {
            continue;
        }
        members = g_build_filename(groups, group, "devices", NULL);
        g_assert_cmpint(g_mkdir_with_parents(members, 0755), ==, 0);
        member = g_build_filename(members, bdf, NULL);
        target = g_strdup_printf("../../../../%s", (const char *)rel);
        g_assert_cmpint(symlink(target, member), ==, 0);
    }
}

void sb_gate_host(SysfsBuilder *sb, const char *release, const char *config,
                  bool type1, const char *cap)
{
    GHashTableIter it;
    gpointer bdf;

    g_hash_table_iter_init(&it, sb->paths);
    while (g_hash_table_iter_next(&it, &bdf, NULL)) {
        g_autofree char *group = device_group(sb, bdf);
        g_autofree char *rr = NULL, *dir = NULL, *link = NULL;
        g_autofree char *target = NULL;

        if (!group) {
            continue;
        }
        rr = g_build_filename("sys", "kernel", "iommu_groups", group,
                              "reserved_regions", NULL);
        sb_write(sb, rr, "0x00000000fee00000 0x00000000feefffff msi\n");
        if (cap) {
            /* The gate reads the link's last component, as Linux names
             * the IOMMU. */
            dir = sb_device_dir(sb, bdf);
            link = g_build_filename(dir, "iommu", NULL);
            target = g_build_filename(sb->root, "sys", "devices", "virtual",
                                      "iommu", "dmar0", NULL);
            g_assert_cmpint(symlink(target, link), ==, 0);
        }
    }
    if (cap) {
        sb_write(sb, "sys/class/iommu/dmar0/intel-iommu/cap", cap);
    }
    if (release) {
        g_autofree char *path = g_strdup_printf("boot/config-%s", release);

        sb_write(sb, "proc/sys/kernel/osrelease", release);
        if (config) {
            sb_write(sb, path, config);
        }
    }
    if (type1) {
        sb_write(sb, "sys/module/vfio_iommu_type1/parameters/"
                 "dma_entry_limit", "65535\n");
    }
}

void sb_remove_tree(const char *path)
{
    gp_remove_tree(path);
}

void sb_free(SysfsBuilder *sb)
{
    sb_remove_tree(sb->root);
    g_free(sb->root);
    g_hash_table_destroy(sb->paths);
    g_free(sb);
}

void sb_two_node_host(SysfsBuilder *sb, uint16_t hb_device)
{
    const uint32_t gpu = 0x030200, port = 0x060400;

    sb_add(sb, NULL, "0000:00:00.0", SB_HOST_BRIDGE, 0x8086, hb_device,
           0x060000, 0, -1, NULL);
    sb_add(sb, NULL, "0000:00:01.0", SB_ROOT_PORT, 0x8086, 0x2030, port, 0,
           1, "pcieport");
    sb_add(sb, "0000:00:01.0", "0000:01:00.0", SB_SWITCH_UP, 0x1000, 0xc010,
           port, 0, 2, "pcieport");
    sb_add(sb, "0000:01:00.0", "0000:02:00.0", SB_SWITCH_DOWN, 0x1000,
           0xc010, port, 0, 3, "pcieport");
    sb_add(sb, "0000:01:00.0", "0000:02:01.0", SB_SWITCH_DOWN, 0x1000,
           0xc010, port, 0, 4, "pcieport");
    sb_add(sb, "0000:02:00.0", SB_GPU_A, SB_ENDPOINT, 0x10de, 0x2335, gpu, 0,
           10, "vfio-pci");
    sb_add(sb, "0000:02:01.0", SB_GPU_B, SB_ENDPOINT, 0x10de, 0x2335, gpu, 0,
           11, "vfio-pci");
    sb_add(sb, NULL, "0000:00:02.0", SB_ROOT_PORT, 0x8086, 0x2031, port, 0,
           5, "pcieport");
    sb_add(sb, "0000:00:02.0", SB_GPU_C, SB_ENDPOINT, 0x10de, 0x2335, gpu, 0,
           12, "vfio-pci");
    sb_add(sb, NULL, "0000:40:00.0", SB_HOST_BRIDGE, 0x8086, hb_device,
           0x060000, 0, -1, NULL);
    sb_add(sb, NULL, "0000:40:01.0", SB_ROOT_PORT, 0x8086, 0x2030, port, 0,
           6, "pcieport");
    sb_add(sb, "0000:40:01.0", SB_GPU_F, SB_ENDPOINT, 0x10de, 0x2335, gpu, 0,
           14, "vfio-pci");
    sb_add(sb, NULL, "0000:80:01.0", SB_ROOT_PORT, 0x1b36, 0x000c, port, 1,
           7, "pcieport");
    sb_add(sb, "0000:80:01.0", SB_GPU_D, SB_ENDPOINT, 0x10de, 0x2335, gpu, 1,
           13, "vfio-pci");
    sb_add(sb, NULL, "0000:80:02.0", SB_ROOT_PORT, 0x1b36, 0x000c, port, 1,
           8, "pcieport");
    sb_add(sb, "0000:80:02.0", SB_NIC, SB_ENDPOINT, 0x15b3, 0x101d, 0x020700,
           1, 15, "mlx5_core");
    /* Root ports isolate as Linux leaves them with an IOMMU (SV RR CR
     * UF); the switch's downstream ports carry ACS with nothing on. */
    sb_set_acs(sb, "0000:00:01.0", 0x5f, SB_ACS_LINUX);
    sb_set_acs(sb, "0000:00:02.0", 0x5f, SB_ACS_LINUX);
    sb_set_acs(sb, "0000:02:00.0", 0x5f, 0);
    sb_set_acs(sb, "0000:02:01.0", 0x5f, 0);
    sb_set_acs(sb, "0000:40:01.0", 0x5f, SB_ACS_LINUX);
    sb_set_acs(sb, "0000:80:01.0", 0x5f, SB_ACS_LINUX);
    sb_set_acs(sb, "0000:80:02.0", 0x5f, SB_ACS_LINUX);
    sb_cpu(sb, "GenuineIntel", 6);
}

void sb_set_p2pcap(SysfsBuilder *sb, const char *bdf, unsigned clique,
                   uint8_t length)
{
    GpPciConfig cfg;
    uint8_t raw[4096];
    uint16_t off;
    gsize len;

    edit_config(sb, bdf, raw, &len, false);
    gp_pcicfg_init(&cfg, raw, len);
    g_assert_true(gp_p2pcap_insert(&cfg, clique, &off, NULL));
    cfg.bytes[off + 2] = length;
    edit_config(sb, bdf, cfg.bytes, &len, true);
}
