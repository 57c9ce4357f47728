/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The mirrored guest hierarchy: layout, addresses, NUMA cells, QEMU
 * arguments and the NCCL file, on a captured virtual host and on a
 * synthetic host with two switches under two host bridges on two nodes.
 */
#include <glib/gstdio.h>
#include <string.h>

#include "gpup2p/mirror.h"
#include "gpup2p/p2p.h"
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
    return topo;
}

static GpMirror *plan_ok(const GpTopology *t, const char *const *bdfs)
{
    g_autoptr(GError) err = NULL;
    GpMirror *m = gp_mirror_plan(t, bdfs, NULL, NULL, &err);

    g_assert_no_error(err);
    g_assert_nonnull(m);
    return m;
}

/*
 * The guest as its kernel would read it: a topology built from the plan's
 * guest addresses, so the path rules can be asked about the guest.
 */
static GpTopology *guest_topology(const GpMirror *m)
{
    GpTopology *g = gp_topo_new(NULL);
    guint i;

    for (i = 0; i < m->nodes->len; i++) {
        const GpMirrorNode *n = g_ptr_array_index(m->nodes, i);
        const GpMirrorNode *p = n->parent;
        GpHostBridge *hb;
        GpDevice *d;

        if (n->kind == GP_MIRROR_EXPANDER) {
            continue;
        }
        while (p->parent) {
            p = p->parent;
        }
        hb = gp_topo_add_host_bridge(g, 0, p->bus);
        d = gp_topo_add_device(g, hb, n->parent->kind == GP_MIRROR_EXPANDER
                               ? NULL : gp_topo_find(g, n->parent->guest_bdf),
                               n->guest_bdf, NULL);
        g_assert_nonnull(d);
        d->numa_node = p->guest_node;
        d->is_bridge = n->kind != GP_MIRROR_ENDPOINT;
        d->pcie.type = n->kind == GP_MIRROR_ROOT_PORT ?
                       GP_PCIE_TYPE_ROOT_PORT :
                       n->kind == GP_MIRROR_SWITCH_UP ?
                       GP_PCIE_TYPE_UPSTREAM_PORT :
                       n->kind == GP_MIRROR_SWITCH_DOWN ?
                       GP_PCIE_TYPE_DOWNSTREAM_PORT : GP_PCIE_TYPE_ENDPOINT;
    }
    gp_topo_finish(g);
    return g;
}

/* Every pair keeps its path class, with NUMA nodes compared as the guest
 * numbers them. */
static void assert_classes_kept(const GpTopology *host, const GpMirror *m,
                                const char *const *bdfs)
{
    g_autoptr(GpTopology) guest = guest_topology(m);
    guint i, j;

    for (i = 0; bdfs[i]; i++) {
        for (j = 0; bdfs[j]; j++) {
            const GpMirrorNode *a = gp_mirror_find(m, bdfs[i]);
            const GpMirrorNode *b = gp_mirror_find(m, bdfs[j]);
            GpPathType want, got;

            g_assert_nonnull(a);
            g_assert_nonnull(b);
            want = gp_path_classify(gp_topo_find(host, bdfs[i]),
                                    gp_topo_find(host, bdfs[j]));
            got = gp_path_classify(gp_topo_find(guest, a->guest_bdf),
                                   gp_topo_find(guest, b->guest_bdf));
            if (want != got) {
                g_test_message("%s-%s: host %s, guest %s", bdfs[i], bdfs[j],
                               gp_path_type_name(want),
                               gp_path_type_name(got));
            }
            g_assert_cmpstr(gp_path_type_name(got), ==,
                            gp_path_type_name(want));
        }
    }
}

static const char *guest_of(const GpMirror *m, const char *bdf)
{
    const GpMirrorNode *n = gp_mirror_find(m, bdf);

    g_assert_nonnull(n);
    return n->guest_bdf;
}

static bool has_arg(char **args, const char *text)
{
    guint i;

    for (i = 0; args[i]; i++) {
        if (!strcmp(args[i], text)) {
            return true;
        }
    }
    return false;
}

static void test_vhost_fixture(void)
{
    static const char *const bdfs[] = {
        "0000:81:00.0", "0000:03:00.0", "0000:04:00.0", "0000:05:00.0",
        "0000:41:00.0", "0000:06:00.0", "0000:06:00.1", NULL,
    };
    g_autofree char *root = fixture("vhost-two-numa");
    g_autoptr(GpTopology) t = read_ok(root);
    g_autoptr(GpMirror) m = plan_ok(t, bdfs);
    g_autoptr(GError) err = NULL;
    g_auto(GStrv) args = NULL;
    const GpMirrorNode *n;

    /* pci0000:00 (no node), pci0000:40 and pci0000:80 (both node 1). */
    g_assert_cmpuint(m->expanders->len, ==, 3);
    g_assert_cmpuint(gp_mirror_cells(m), ==, 1);
    g_assert_cmpint(g_array_index(m->cell_host_node, int, 0), ==, 1);
    /* Switch under the first root port, depth first from bus 0x80. */
    g_assert_cmpstr(guest_of(m, "0000:01:00.0"), ==, "0000:81:00.0");
    g_assert_cmpstr(guest_of(m, "0000:02:01.0"), ==, "0000:82:01.0");
    g_assert_cmpstr(guest_of(m, "0000:03:00.0"), ==, "0000:83:00.0");
    g_assert_cmpstr(guest_of(m, "0000:04:00.0"), ==, "0000:84:00.0");
    g_assert_cmpstr(guest_of(m, "0000:05:00.0"), ==, "0000:85:00.0");
    /* Two functions of one device stay functions of one guest device. */
    g_assert_cmpstr(guest_of(m, "0000:06:00.0"), ==, "0000:86:00.0");
    g_assert_cmpstr(guest_of(m, "0000:06:00.1"), ==, "0000:86:00.1");
    n = gp_mirror_find(m, "0000:06:00.0");
    g_assert_true(n->multifunction);
    g_assert_cmpstr(guest_of(m, "0000:41:00.0"), ==, "0000:89:00.0");
    g_assert_cmpstr(guest_of(m, "0000:81:00.0"), ==, "0000:91:00.0");
    assert_classes_kept(t, m, bdfs);

    args = gp_mirror_qemu_args(m, 2, 2048, "x-pci-vendor-id=0x10de", &err);
    g_assert_no_error(err);
    g_assert_true(has_arg(args, "node,nodeid=0,cpus=0-1,memdev=gpup2p-mem0"));
    g_assert_true(has_arg(args, "memory-backend-ram,id=gpup2p-mem0,"
                          "size=2048M"));
    g_assert_true(has_arg(args, "pxb-pcie,id=gpup2p-hb0,bus=pcie.0,addr=0x1e,"
                          "bus_nr=128"));
    g_assert_true(has_arg(args, "pxb-pcie,id=gpup2p-hb1,bus=pcie.0,addr=0x1d,"
                          "bus_nr=136,numa_node=0"));
    g_assert_true(has_arg(args, "x3130-upstream,id=gpup2p-up0,"
                          "bus=gpup2p-rp0,addr=0x0.0"));
    g_assert_true(has_arg(args, "vfio-pci,host=0000:06:00.0,id=gpup2p-dev3,"
                          "bus=gpup2p-rp2,addr=0x0.0,multifunction=on,"
                          "x-pci-vendor-id=0x10de"));
    /* QEMU's own root ports on the capture: 2.5 GT/s x1. */
    g_assert_true(has_arg(args, "pcie-root-port,id=gpup2p-rp1,"
                          "bus=gpup2p-hb0,addr=0x1.0,chassis=128,slot=4,"
                          "x-speed=2_5,x-width=1"));
}

/* The virtual host booted from tests/vhost/topologies/hidden.json. */
static void test_hidden_fixture(void)
{
    static const char *const bdfs[] = {
        "0000:23:00.0", "0000:24:00.0", "0000:25:00.0", "0000:43:00.0",
        "0000:44:00.0", "0000:45:00.0", "0000:61:00.0", NULL,
    };
    g_autofree char *root = fixture("vhost-hidden");
    g_autoptr(GpTopology) t = read_ok(root);
    g_autoptr(GpMirror) m = plan_ok(t, bdfs);

    g_assert_cmpuint(m->expanders->len, ==, 3);
    g_assert_cmpuint(gp_mirror_cells(m), ==, 2);
    g_assert_cmpstr(guest_of(m, "0000:25:00.0"), ==, "0000:85:00.0");
    g_assert_cmpstr(guest_of(m, "0000:45:00.0"), ==, "0000:8d:00.0");
    g_assert_cmpstr(guest_of(m, "0000:61:00.0"), ==, "0000:91:00.0");
    assert_classes_kept(t, m, bdfs);
}

/* Two switches under two host bridges on two NUMA nodes, a GPU pair and a
 * NIC behind each switch, Gen5 links; and a lone GPU behind a third
 * switch. */
static void hidden_host(SysfsBuilder *sb)
{
    static const char *const gen5[] = {
        "0000:10:01.0", "0000:11:00.0", "0000:12:00.0", "0000:12:01.0",
        "0000:12:02.0", "0000:13:00.0", "0000:14:00.0", "0000:15:00.0",
        "0000:90:01.0", "0000:91:00.0", "0000:92:00.0", "0000:92:01.0",
        "0000:92:02.0", "0000:93:00.0", "0000:94:00.0", "0000:95:00.0",
    };
    guint i;

    sb_cpu(sb, "GenuineIntel", 6);
    sb_add(sb, NULL, "0000:10:00.0", SB_HOST_BRIDGE, 0x8086, 0x09a2,
           0x060000, 0, 1, NULL);
    sb_add(sb, NULL, "0000:10:01.0", SB_ROOT_PORT, 0x8086, 0x347a,
           0x060400, 0, 2, "pcieport");
    sb_add(sb, "0000:10:01.0", "0000:11:00.0", SB_SWITCH_UP, 0x1000, 0xc030,
           0x060400, 0, 3, "pcieport");
    sb_add(sb, "0000:11:00.0", "0000:12:00.0", SB_SWITCH_DOWN, 0x1000,
           0xc030, 0x060400, 0, 4, "pcieport");
    sb_add(sb, "0000:11:00.0", "0000:12:01.0", SB_SWITCH_DOWN, 0x1000,
           0xc030, 0x060400, 0, 5, "pcieport");
    sb_add(sb, "0000:11:00.0", "0000:12:02.0", SB_SWITCH_DOWN, 0x1000,
           0xc030, 0x060400, 0, 6, "pcieport");
    sb_add(sb, "0000:12:00.0", "0000:13:00.0", SB_ENDPOINT, 0x10de, 0x2335,
           0x030200, 0, 7, "vfio-pci");
    sb_add(sb, "0000:12:01.0", "0000:14:00.0", SB_ENDPOINT, 0x10de, 0x2335,
           0x030200, 0, 8, "vfio-pci");
    sb_add(sb, "0000:12:02.0", "0000:15:00.0", SB_ENDPOINT, 0x15b3, 0x101d,
           0x020700, 0, 9, "vfio-pci");
    sb_add(sb, NULL, "0000:90:00.0", SB_HOST_BRIDGE, 0x8086, 0x09a2,
           0x060000, 1, 11, NULL);
    sb_add(sb, NULL, "0000:90:01.0", SB_ROOT_PORT, 0x8086, 0x347a,
           0x060400, 1, 12, "pcieport");
    sb_add(sb, "0000:90:01.0", "0000:91:00.0", SB_SWITCH_UP, 0x1000, 0xc030,
           0x060400, 1, 13, "pcieport");
    sb_add(sb, "0000:91:00.0", "0000:92:00.0", SB_SWITCH_DOWN, 0x1000,
           0xc030, 0x060400, 1, 14, "pcieport");
    sb_add(sb, "0000:91:00.0", "0000:92:01.0", SB_SWITCH_DOWN, 0x1000,
           0xc030, 0x060400, 1, 15, "pcieport");
    sb_add(sb, "0000:91:00.0", "0000:92:02.0", SB_SWITCH_DOWN, 0x1000,
           0xc030, 0x060400, 1, 16, "pcieport");
    sb_add(sb, "0000:92:00.0", "0000:93:00.0", SB_ENDPOINT, 0x10de, 0x2335,
           0x030200, 1, 17, "vfio-pci");
    sb_add(sb, "0000:92:01.0", "0000:94:00.0", SB_ENDPOINT, 0x10de, 0x2335,
           0x030200, 1, 18, "vfio-pci");
    sb_add(sb, "0000:92:02.0", "0000:95:00.0", SB_ENDPOINT, 0x15b3, 0x101d,
           0x020700, 1, 19, "vfio-pci");
    sb_add(sb, NULL, "0000:90:02.0", SB_ROOT_PORT, 0x8086, 0x347a,
           0x060400, 1, 20, "pcieport");
    sb_add(sb, "0000:90:02.0", "0000:a1:00.0", SB_SWITCH_UP, 0x1000, 0xc030,
           0x060400, 1, 21, "pcieport");
    sb_add(sb, "0000:a1:00.0", "0000:a2:00.0", SB_SWITCH_DOWN, 0x1000,
           0xc030, 0x060400, 1, 22, "pcieport");
    sb_add(sb, "0000:a2:00.0", "0000:a3:00.0", SB_ENDPOINT, 0x10de, 0x2335,
           0x030200, 1, 23, "vfio-pci");
    for (i = 0; i < G_N_ELEMENTS(gen5); i++) {
        g_autofree char *dir = sb_device_dir(sb, gen5[i]);
        g_autofree char *s = g_build_filename(dir, "max_link_speed", NULL);
        g_autofree char *w = g_build_filename(dir, "max_link_width", NULL);

        g_assert_true(g_file_set_contents(s, "32.0 GT/s PCIe\n", -1, NULL));
        g_assert_true(g_file_set_contents(w, "16\n", -1, NULL));
    }
}

static const char *const hidden_bdfs[] = {
    "0000:93:00.0", "0000:14:00.0", "0000:15:00.0", "0000:13:00.0",
    "0000:95:00.0", "0000:94:00.0", "0000:a3:00.0", NULL,
};

static void test_hidden_style(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autoptr(GpMirror) m = NULL;
    const GpMirrorNode *e0, *e1, *lone, *rp;

    hidden_host(sb);
    t = read_ok(sb_root(sb));
    m = plan_ok(t, hidden_bdfs);
    g_assert_cmpuint(m->expanders->len, ==, 2);
    g_assert_cmpuint(gp_mirror_cells(m), ==, 2);
    e0 = g_ptr_array_index(m->expanders, 0);
    e1 = g_ptr_array_index(m->expanders, 1);
    g_assert_cmpint(e0->guest_node, ==, 0);
    g_assert_cmpint(e1->guest_node, ==, 1);
    g_assert_cmpstr(e0->sort_key, ==, "0000:10");
    /* Node 0: rp 80:00.0 > up 81:00.0 > down 82:0x.0 > devices 83-85. */
    g_assert_cmpstr(guest_of(m, "0000:11:00.0"), ==, "0000:81:00.0");
    g_assert_cmpstr(guest_of(m, "0000:13:00.0"), ==, "0000:83:00.0");
    g_assert_cmpstr(guest_of(m, "0000:14:00.0"), ==, "0000:84:00.0");
    g_assert_cmpstr(guest_of(m, "0000:15:00.0"), ==, "0000:85:00.0");
    g_assert_cmpuint(e1->bus, ==, 0x88);
    g_assert_cmpstr(guest_of(m, "0000:93:00.0"), ==, "0000:8b:00.0");
    /* A switch holding one of the devices is left out. */
    lone = gp_mirror_find(m, "0000:a3:00.0");
    g_assert_cmpint(lone->parent->kind, ==, GP_MIRROR_ROOT_PORT);
    g_assert_null(gp_mirror_find(m, "0000:a1:00.0"));
    /* Gen5 x16 from the host's link capabilities. */
    rp = gp_mirror_find(m, "0000:10:01.0");
    g_assert_cmpstr(rp->link_speed, ==, "32");
    g_assert_cmpuint(rp->link_width, ==, 16);
    assert_classes_kept(t, m, hidden_bdfs);
    g_assert_cmpint(gp_path_classify(gp_topo_find(t, "0000:13:00.0"),
                                     gp_topo_find(t, "0000:15:00.0")), ==,
                    GP_PATH_PIX);
    g_assert_cmpint(gp_path_classify(gp_topo_find(t, "0000:13:00.0"),
                                     gp_topo_find(t, "0000:93:00.0")), ==,
                    GP_PATH_SYS);
}

/* The same devices named in another order give the same guest. */
static void test_stable(void)
{
    static const char *const reordered[] = {
        "0000:a3:00.0", "0000:95:00.0", "0000:94:00.0", "0000:93:00.0",
        "0000:15:00.0", "0000:14:00.0", "0000:13:00.0", NULL,
    };
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autoptr(GpMirror) a = NULL, b = NULL;
    g_auto(GStrv) args_a = NULL, args_b = NULL;
    g_autofree char *joined_a = NULL, *joined_b = NULL;
    g_autofree char *nccl_a = NULL, *nccl_b = NULL;

    hidden_host(sb);
    t = read_ok(sb_root(sb));
    a = plan_ok(t, hidden_bdfs);
    b = plan_ok(t, reordered);
    args_a = gp_mirror_qemu_args(a, 4, 4096, NULL, NULL);
    args_b = gp_mirror_qemu_args(b, 4, 4096, NULL, NULL);
    joined_a = g_strjoinv(" ", args_a);
    joined_b = g_strjoinv(" ", args_b);
    g_assert_cmpstr(joined_a, ==, joined_b);
    nccl_a = gp_mirror_nccl_topo(a);
    nccl_b = gp_mirror_nccl_topo(b);
    g_assert_cmpstr(nccl_a, ==, nccl_b);
    g_assert_nonnull(strstr(joined_a, "-numa node,nodeid=0,cpus=0-1,"
                            "memdev=gpup2p-mem0"));
    g_assert_nonnull(strstr(joined_a, "-numa node,nodeid=1,cpus=2-3,"
                            "memdev=gpup2p-mem1"));
    g_assert_nonnull(strstr(joined_a, "numa_node=1"));
}

typedef struct {
    GString *path;
    GString *seen;
} NcclWalk;

static void nccl_start(GMarkupParseContext *ctx, const char *name,
                       const char **keys, const char **values, gpointer data,
                       GError **errp)
{
    NcclWalk *w = data;
    guint i;

    (void)ctx;
    (void)errp;
    g_string_append_printf(w->seen, "%*s%s", (int)w->path->len, "", name);
    for (i = 0; keys[i]; i++) {
        if (!strcmp(keys[i], "busid") || !strcmp(keys[i], "numaid") ||
            !strcmp(keys[i], "link_speed")) {
            g_string_append_printf(w->seen, " %s", values[i]);
        }
    }
    g_string_append_c(w->seen, '\n');
    g_string_append_c(w->path, ' ');
}

static void nccl_end(GMarkupParseContext *ctx, const char *name,
                     gpointer data, GError **errp)
{
    NcclWalk *w = data;

    (void)ctx;
    (void)name;
    (void)errp;
    g_string_truncate(w->path, w->path->len - 1);
}

/* The NCCL file parses, has no declaration, and nests as NCCL nests:
 * a cpu per node, a switch by its upstream port, devices below it. */
static void test_nccl_topo(void)
{
    static const GMarkupParser parser = { nccl_start, nccl_end, NULL, NULL,
                                          NULL };
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autoptr(GpMirror) m = NULL;
    g_autofree char *xml = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(GMarkupParseContext) ctx = NULL;
    NcclWalk w = { g_string_new(NULL), g_string_new(NULL) };

    hidden_host(sb);
    t = read_ok(sb_root(sb));
    m = plan_ok(t, hidden_bdfs);
    xml = gp_mirror_nccl_topo(m);
    g_assert_true(g_str_has_prefix(xml, "<system version=\"1\">"));
    g_assert_null(strstr(xml, "<?xml"));
    ctx = g_markup_parse_context_new(&parser, 0, &w, NULL);
    g_assert_true(g_markup_parse_context_parse(ctx, xml, -1, &err));
    g_assert_no_error(err);
    g_assert_cmpstr(w.seen->str, ==,
        "system\n"
        " cpu 0\n"
        "  pci 0000:81:00.0 32.0 GT/s PCIe\n"
        "   pci 0000:83:00.0 32.0 GT/s PCIe\n"
        "   pci 0000:84:00.0 32.0 GT/s PCIe\n"
        "   pci 0000:85:00.0 32.0 GT/s PCIe\n"
        " cpu 1\n"
        "  pci 0000:89:00.0 32.0 GT/s PCIe\n"
        "   pci 0000:8b:00.0 32.0 GT/s PCIe\n"
        "   pci 0000:8c:00.0 32.0 GT/s PCIe\n"
        "   pci 0000:8d:00.0 32.0 GT/s PCIe\n"
        "  pci 0000:8e:00.0\n");
    g_assert_nonnull(strstr(xml, "busid=\"0000:85:00.0\" class=\"0x020700\" "
                            "vendor=\"0x15b3\" device=\"0x101d\""));
    g_string_free(w.path, TRUE);
    g_string_free(w.seen, TRUE);
}

/* The guest's path class between two assigned host devices. */
static GpPathType guest_class(const GpMirror *m, const char *a,
                              const char *b)
{
    g_autoptr(GpTopology) guest = guest_topology(m);

    return gp_path_classify(gp_topo_find(guest, guest_of(m, a)),
                            gp_topo_find(guest, guest_of(m, b)));
}

/* Each NIC of the hidden-style host shares its switch with two GPUs: it
 * goes beside the first of them, under the emulated switch standing for
 * that host switch. */
static void test_nic_beside_gpu(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autoptr(GpMirror) m = NULL;
    const GpMirrorNicPlace *np;

    hidden_host(sb);
    t = read_ok(sb_root(sb));
    m = plan_ok(t, hidden_bdfs);
    g_assert_cmpuint(m->nic_places->len, ==, 2);
    np = gp_mirror_nic_place(m, "0000:15:00.0");
    g_assert_nonnull(np);
    g_assert_nonnull(np->gpu);
    g_assert_cmpstr(np->gpu->host->bdf, ==, "0000:13:00.0");
    g_assert_cmpint(np->host_path, ==, GP_PATH_PIX);
    g_assert_nonnull(np->meeting);
    g_assert_cmpint(np->meeting->kind, ==, GP_MIRROR_SWITCH_UP);
    g_assert_cmpstr(np->meeting->host->bdf, ==, "0000:11:00.0");
    g_assert_true(np->nic->parent->parent == np->meeting);
    g_assert_cmpint(guest_class(m, "0000:15:00.0", "0000:13:00.0"), ==,
                    GP_PATH_PIX);
    g_test_message("%s", np->reason);
    g_assert_nonnull(strstr(np->reason, "NIC 0000:15:00.0 (guest "
                            "0000:85:00.0) is placed beside GPU "
                            "0000:13:00.0 (guest 0000:83:00.0)"));
    g_assert_nonnull(strstr(np->reason, "under emulated switch gpup2p-up0 "
                            "(guest 0000:81:00.0, host 0000:11:00.0)"));
    np = gp_mirror_nic_place(m, "0000:95:00.0");
    g_assert_nonnull(np);
    g_assert_cmpstr(np->gpu->host->bdf, ==, "0000:93:00.0");
    g_assert_cmpstr(np->meeting->host->bdf, ==, "0000:91:00.0");
    g_assert_null(gp_mirror_nic_place(m, "0000:13:00.0"));
}

/* Without its host partners the NIC keeps its own host path (a switch
 * holding only it is left out) and the reason names what is missing. */
static void test_nic_without_partner(void)
{
    static const char *const far_gpu[] = { "0000:15:00.0", "0000:a3:00.0",
                                           NULL };
    static const char *const alone[] = { "0000:15:00.0", NULL };
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autoptr(GpMirror) m = NULL;
    const GpMirrorNicPlace *np;

    hidden_host(sb);
    t = read_ok(sb_root(sb));
    m = plan_ok(t, far_gpu);
    np = gp_mirror_nic_place(m, "0000:15:00.0");
    g_assert_nonnull(np);
    g_assert_null(np->gpu);
    g_assert_null(np->meeting);
    g_assert_cmpint(np->nic->parent->kind, ==, GP_MIRROR_ROOT_PORT);
    g_test_message("%s", np->reason);
    g_assert_nonnull(strstr(np->reason, "NIC 0000:15:00.0 (guest "
                            "0000:81:00.0) has no assigned GPU partner: its "
                            "nearest GPUs on the host (0000:13:00.0, "
                            "0000:14:00.0: PIX) are not assigned and the "
                            "nearest assigned GPU, 0000:a3:00.0, is SYS "
                            "from it; placed by its own host path"));
    g_clear_pointer(&m, gp_mirror_free);
    m = plan_ok(t, alone);
    np = gp_mirror_nic_place(m, "0000:15:00.0");
    g_assert_null(np->gpu);
    g_assert_nonnull(strstr(np->reason, "are not assigned and no GPU is "
                            "assigned"));
}

/*
 * NVIDIA's "inline" shape: the NIC on a port of a ConnectX switch, the
 * GPUs below a second switch on another of its ports. The pair meets at
 * the ConnectX switch (PXB), and so does the guest.
 *   00:01.0 rp > 01:00.0 CX up > 02:00.0 CX down > 03:00.0 NIC (IB)
 *                              > 02:01.0 CX down > 04:00.0 up
 *                                > 05:00.0 down > 06:00.0 GPU
 *                                > 05:01.0 down > 07:00.0 GPU
 */
static void test_nic_inline_switch(void)
{
    static const char *const bdfs[] = { "0000:03:00.0", "0000:06:00.0",
                                        "0000:07:00.0", NULL };
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autoptr(GpMirror) m = NULL;
    const GpMirrorNicPlace *np;

    sb_cpu(sb, "GenuineIntel", 6);
    sb_add(sb, NULL, "0000:00:00.0", SB_HOST_BRIDGE, 0x8086, 0x09a2,
           0x060000, 0, -1, NULL);
    sb_add(sb, NULL, "0000:00:01.0", SB_ROOT_PORT, 0x8086, 0x347a,
           0x060400, 0, 1, "pcieport");
    sb_add(sb, "0000:00:01.0", "0000:01:00.0", SB_SWITCH_UP, 0x15b3, 0x197c,
           0x060400, 0, 2, "pcieport");
    sb_add(sb, "0000:01:00.0", "0000:02:00.0", SB_SWITCH_DOWN, 0x15b3,
           0x1979, 0x060400, 0, 3, "pcieport");
    sb_add(sb, "0000:01:00.0", "0000:02:01.0", SB_SWITCH_DOWN, 0x15b3,
           0x1979, 0x060400, 0, 4, "pcieport");
    sb_add(sb, "0000:02:00.0", "0000:03:00.0", SB_ENDPOINT, 0x15b3, 0x1023,
           0x020700, 0, 5, "vfio-pci");
    sb_add(sb, "0000:02:01.0", "0000:04:00.0", SB_SWITCH_UP, 0x1000, 0xc030,
           0x060400, 0, 6, "pcieport");
    sb_add(sb, "0000:04:00.0", "0000:05:00.0", SB_SWITCH_DOWN, 0x1000,
           0xc030, 0x060400, 0, 7, "pcieport");
    sb_add(sb, "0000:04:00.0", "0000:05:01.0", SB_SWITCH_DOWN, 0x1000,
           0xc030, 0x060400, 0, 8, "pcieport");
    sb_add(sb, "0000:05:00.0", "0000:06:00.0", SB_ENDPOINT, 0x10de, 0x2335,
           0x030200, 0, 9, "vfio-pci");
    sb_add(sb, "0000:05:01.0", "0000:07:00.0", SB_ENDPOINT, 0x10de, 0x2335,
           0x030200, 0, 10, "vfio-pci");
    t = read_ok(sb_root(sb));
    m = plan_ok(t, bdfs);
    np = gp_mirror_nic_place(m, "0000:03:00.0");
    g_assert_nonnull(np);
    g_assert_cmpstr(np->gpu->host->bdf, ==, "0000:06:00.0");
    g_assert_cmpint(np->host_path, ==, GP_PATH_PXB);
    g_assert_cmpint(np->meeting->kind, ==, GP_MIRROR_SWITCH_UP);
    g_assert_cmpstr(np->meeting->host->bdf, ==, "0000:01:00.0");
    g_assert_cmpint(guest_class(m, "0000:03:00.0", "0000:06:00.0"), ==,
                    GP_PATH_PXB);
    assert_classes_kept(t, m, bdfs);
}

static void expect_plan_error(const GpTopology *t, const char *const *bdfs,
                              const char *needle)
{
    g_autoptr(GError) err = NULL;
    GpMirror *m = gp_mirror_plan(t, bdfs, NULL, NULL, &err);

    g_assert_null(m);
    g_assert_nonnull(err);
    if (!strstr(err->message, needle)) {
        g_test_message("error: %s", err->message);
    }
    g_assert_nonnull(strstr(err->message, needle));
}

static void test_errors(void)
{
    static const char *const unknown[] = { "0000:13:00.0", "0000:77:00.0",
                                           NULL };
    static const char *const bridge[] = { "0000:12:00.0", NULL };
    static const char *const twice[] = { "13:00.0", "0000:13:00.0", NULL };
    static const char *const none[] = { NULL };
    static const char *const bad[] = { "13:00", NULL };
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autoptr(GpMirror) m = NULL;
    g_autoptr(GError) err = NULL;
    char **args;

    hidden_host(sb);
    t = read_ok(sb_root(sb));
    expect_plan_error(t, unknown, "'0000:77:00.0' is not a PCI device");
    expect_plan_error(t, bridge, "0000:12:00.0 is a bridge");
    expect_plan_error(t, twice, "0000:13:00.0 is named twice");
    expect_plan_error(t, none, "no device to mirror");
    expect_plan_error(t, bad, "'13:00' is not a PCI device");
    m = plan_ok(t, hidden_bdfs);
    args = gp_mirror_qemu_args(m, 1, 1024, NULL, &err);
    g_assert_null(args);
    g_assert_nonnull(strstr(err->message, "cannot fill 2 NUMA cells"));
}

/*
 * A root port end whose max_link_speed holds garbage is refused, naming
 * the file and the value, rather than mirrored without x-speed.
 */
static void test_link_speed_garbage(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autofree char *dir = NULL, *path = NULL;

    hidden_host(sb);
    dir = sb_device_dir(sb, "0000:10:01.0");
    path = g_build_filename(dir, "max_link_speed", NULL);
    g_assert_true(g_file_set_contents(path, "fast\n", -1, NULL));
    t = read_ok(sb_root(sb));
    expect_plan_error(t, hidden_bdfs, "0000:10:01.0/max_link_speed: 'fast'");
}

static bool taken_1e_1c(unsigned slot, void *opaque)
{
    (void)opaque;
    return slot == 0x1e || slot == 0x1c;
}

static void test_slots_taken(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autoptr(GpMirror) m = NULL;
    g_autoptr(GError) err = NULL;

    hidden_host(sb);
    t = read_ok(sb_root(sb));
    m = gp_mirror_plan(t, hidden_bdfs, taken_1e_1c, NULL, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(((GpMirrorNode *)g_ptr_array_index(m->expanders, 0))
                     ->slot, ==, 0x1d);
    g_assert_cmpuint(((GpMirrorNode *)g_ptr_array_index(m->expanders, 1))
                     ->slot, ==, 0x1b);
}

static void test_fwcfg_read(void)
{
    g_autofree char *root = g_dir_make_tmp("fwcfg-XXXXXX", NULL);
    g_autofree char *dir = g_build_filename(root, "sys/firmware/qemu_fw_cfg/"
                                            "by_name", GP_FWCFG_NCCL_TOPO,
                                            NULL);
    g_autofree char *raw = g_build_filename(dir, "raw", NULL);
    g_autofree char *data = NULL;
    g_autoptr(GError) err = NULL;
    gsize len = 0;

    data = gp_fwcfg_read(root, GP_FWCFG_NCCL_TOPO, &len, &err);
    g_assert_null(data);
    g_assert_error(err, G_FILE_ERROR, G_FILE_ERROR_NOENT);
    g_clear_error(&err);
    g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
    g_assert_true(g_file_set_contents(raw, "<system version=\"1\"/>\n", -1,
                                      NULL));
    data = gp_fwcfg_read(root, GP_FWCFG_NCCL_TOPO, &len, &err);
    g_assert_no_error(err);
    g_assert_cmpstr(data, ==, "<system version=\"1\"/>\n");
    g_assert_cmpuint(len, ==, strlen(data));
    {
        g_autofree char *dest = g_build_filename(root, "copy.xml", NULL);
        g_autofree char *got = NULL;
        bool found = false;

        g_assert_true(gp_fwcfg_copy(root, GP_FWCFG_NCCL_TOPO, dest, &found,
                                    &err));
        g_assert_no_error(err);
        g_assert_true(found);
        g_assert_true(g_file_get_contents(dest, &got, NULL, NULL));
        g_assert_cmpstr(got, ==, data);
        g_assert_true(gp_fwcfg_copy(root, "opt/none", dest, &found, &err));
        g_assert_false(found);
    }
    sb_remove_tree(root);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/mirror/fixture/vhost-two-numa", test_vhost_fixture);
    g_test_add_func("/mirror/fixture/vhost-hidden", test_hidden_fixture);
    g_test_add_func("/mirror/hidden-style", test_hidden_style);
    g_test_add_func("/mirror/nic-beside-gpu", test_nic_beside_gpu);
    g_test_add_func("/mirror/nic-without-partner", test_nic_without_partner);
    g_test_add_func("/mirror/nic-inline-switch", test_nic_inline_switch);
    g_test_add_func("/mirror/stable", test_stable);
    g_test_add_func("/mirror/nccl-topo", test_nccl_topo);
    g_test_add_func("/mirror/errors", test_errors);
    g_test_add_func("/mirror/link-speed-garbage", test_link_speed_garbage);
    g_test_add_func("/mirror/slots-taken", test_slots_taken);
    g_test_add_func("/mirror/fwcfg-read", test_fwcfg_read);
    return g_test_run();
}
