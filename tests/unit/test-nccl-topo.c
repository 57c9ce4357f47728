/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpup2p-verify's NCCL topology file, judged by a small strict reader that
 * follows the rules of NCCL's own (src/graph/xml.cc: xmlGetNode,
 * xmlGetToken, xmlGetValue, xmlLoadSub and the per-element handler lists),
 * not the rules of our writer:
 * - between elements only ' ', '\n' and '\r'; every element starts '<';
 * - a name ends at ' ', '>', '/', '\n' or '\r'; attributes follow only
 *   after a single ' ' (a newline inside a tag fails: "expected >");
 * - key=value with the value in '"' or '\'', no escapes, then ' ', '/' or
 *   '>'; names and values shorter than 255 characters; at most 16
 *   attributes are kept;
 * - "<!--" comments are skipped; "<?xml ...?>" fails ("expected >, got
 *   '?'"); a closing tag must name the open element and end in '>';
 * - elements NCCL loads: system > cpu > (pci | nic); pci > (pci | gpu |
 *   nic | pcilink); gpu > (nvlink | c2c); nic > net; system version="1";
 *   NCCL only logs and skips other names, this reader refuses them.
 */
#include <glib/gstdio.h>
#include <stdbool.h>
#include <string.h>

#include "gpup2p/mirror.h"
#include "sysfs-builder.h"

#define NCCL_MAX_STR 255
#define NCCL_MAX_ATTRS 16

typedef struct {
    const char *p, *end;
    char *error;
    unsigned elements, nvlinks, gpus, bridges;
    /* busid of each <pci> -> its <pci> ancestors, nearest first, then
     * "cpuN" ("0000:80:02.0 cpu1"). */
    GHashTable *parents;
} Reader;

typedef struct {
    char name[NCCL_MAX_STR + 1];
    char keys[NCCL_MAX_ATTRS + 1][NCCL_MAX_STR + 1];
    char values[NCCL_MAX_ATTRS + 1][NCCL_MAX_STR + 1];
    int nattrs;
    enum { NODE_NONE, NODE_OPEN, NODE_CLOSE, NODE_SINGLE } type;
} Node;

static bool fail(Reader *r, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static bool fail(Reader *r, const char *fmt, ...)
{
    va_list ap;

    if (!r->error) {
        va_start(ap, fmt);
        r->error = g_strdup_vprintf(fmt, ap);
        va_end(ap);
    }
    return false;
}

static bool get_char(Reader *r, char *c)
{
    if (r->p == r->end) {
        return fail(r, "unexpected end of file");
    }
    *c = *r->p++;
    return true;
}

/* A quoted value after '='; *last is the character after the quote. */
static bool get_value(Reader *r, char *value, char *last)
{
    char c = 0, quote;
    int o = 0;

    if (!get_char(r, &c)) {
        return false;
    }
    if (c != '"' && c != '\'') {
        return fail(r, "expected (double) quote, got '%c'", c);
    }
    quote = c;
    for (;;) {
        if (!get_char(r, &c)) {
            return false;
        }
        if (c == quote) {
            break;
        }
        if (o == NCCL_MAX_STR - 1) {
            return fail(r, "value too long (max %d)", NCCL_MAX_STR);
        }
        value[o++] = c;
    }
    value[o] = '\0';
    return get_char(r, last);
}

static bool is_end(char c)
{
    return c == ' ' || c == '>' || c == '/' || c == '\n' || c == '\r';
}

static bool get_token(Reader *r, char *name, char *value, char *last)
{
    char c = 0;
    int o = 0;

    for (;;) {
        if (!get_char(r, &c)) {
            return false;
        }
        if (c == '=') {
            name[o] = '\0';
            if (!value) {
                return fail(r, "unexpected value with name %s", name);
            }
            return get_value(r, value, last);
        }
        if (is_end(c)) {
            break;
        }
        if (o == NCCL_MAX_STR - 1) {
            return fail(r, "name too long (max %d)", NCCL_MAX_STR);
        }
        name[o++] = c;
    }
    name[o] = '\0';
    *last = c;
    return true;
}

static bool get_node(Reader *r, Node *n)
{
    char c = ' ';

    memset(n, 0, sizeof(*n));
    while (c == ' ' || c == '\n' || c == '\r') {
        if (r->p == r->end) {
            n->type = NODE_NONE;
            return true;
        }
        c = *r->p++;
    }
    if (c != '<') {
        return fail(r, "expecting '<', got '%c'", c);
    }
    if (!get_token(r, n->name, NULL, &c)) {
        return false;
    }
    if (g_str_has_prefix(n->name, "!--")) {
        const char *close = g_strstr_len(r->p - 3, r->end - r->p + 3, "-->");

        if (!close) {
            return fail(r, "unterminated comment");
        }
        r->p = close + 3;
        return get_node(r, n);
    }
    if (!n->name[0] && c == '/') {
        n->type = NODE_CLOSE;
        if (!get_token(r, n->name, NULL, &c)) {
            return false;
        }
        return c == '>' ||
               fail(r, "unexpected trailing %c in closing tag %s", c, n->name);
    }
    n->type = NODE_OPEN;
    while (c == ' ') {
        int a = MIN(n->nattrs, NCCL_MAX_ATTRS);

        if (!get_token(r, n->keys[a], n->values[a], &c)) {
            return false;
        }
        if (!n->keys[a][0]) {
            /* NCCL would take an empty key: two spaces or a trailing one. */
            return fail(r, "empty attribute in <%s>", n->name);
        }
        if (n->nattrs < NCCL_MAX_ATTRS) {
            n->nattrs++;
        }
    }
    if (c == '/') {
        char rest[NCCL_MAX_STR + 1];

        n->type = NODE_SINGLE;
        if (!get_token(r, rest, NULL, &c)) {
            return false;
        }
    }
    return c == '>' || fail(r, "expected >, got '%c'", c);
}

static const char *attr(const Node *n, const char *key)
{
    for (int i = 0; i < n->nattrs; i++) {
        if (!strcmp(n->keys[i], key)) {
            return n->values[i];
        }
    }
    return NULL;
}

/* The element names NCCL loads under @parent. */
static bool allowed(const char *parent, const char *name)
{
    static const char *const rules[][2] = {
        { "", "system" }, { "system", "cpu" }, { "cpu", "pci" },
        { "cpu", "nic" }, { "pci", "pci" }, { "pci", "gpu" },
        { "pci", "nic" }, { "pci", "pcilink" }, { "gpu", "nvlink" },
        { "gpu", "c2c" }, { "nic", "net" },
    };

    for (guint i = 0; i < G_N_ELEMENTS(rules); i++) {
        if (!strcmp(rules[i][0], parent) && !strcmp(rules[i][1], name)) {
            return true;
        }
    }
    return false;
}

static bool load_sub_child(Reader *r, const Node *n, const char *chain);

static bool load_sub(Reader *r, const Node *head, const char *chain)
{
    Node n;

    if (head && head->type == NODE_SINGLE) {
        return true;
    }
    for (;;) {
        if (!get_node(r, &n)) {
            return false;
        }
        if (n.type == NODE_NONE) {
            return !head || fail(r, "unterminated %s", head->name);
        }
        if (n.type == NODE_CLOSE) {
            if (!head || strcmp(n.name, head->name)) {
                return fail(r, "mismatch: %s / %s", head ? head->name : "",
                            n.name);
            }
            return true;
        }
        if (!allowed(head ? head->name : "", n.name)) {
            return fail(r, "<%s> is not an element NCCL loads under <%s>",
                        n.name, head ? head->name : "");
        }
        if (!strcmp(n.name, "system") &&
            g_strcmp0(attr(&n, "version"), "1")) {
            return fail(r, "system version must be 1");
        }
        r->elements++;
        r->nvlinks += !strcmp(n.name, "nvlink");
        r->gpus += !strcmp(n.name, "pci") && attr(&n, "class") &&
                   g_str_has_prefix(attr(&n, "class"), "0x03");
        r->bridges += !strcmp(n.name, "pci") &&
                      !g_strcmp0(attr(&n, "class"), "0x060400");
        if (!strcmp(n.name, "nvlink") &&
            (!attr(&n, "target") || !attr(&n, "count") ||
             !attr(&n, "tclass"))) {
            return fail(r, "nvlink needs target, count and tclass");
        }
        if (!strcmp(n.name, "pci") && (!attr(&n, "busid") ||
                                       !attr(&n, "class"))) {
            return fail(r, "pci needs busid and class");
        }
        if (!load_sub_child(r, &n, chain)) {
            return false;
        }
    }
}

/* Record where a <pci> sits, then read what it holds. */
static bool load_sub_child(Reader *r, const Node *n, const char *chain)
{
    g_autofree char *sub = NULL;
    const char *busid = attr(n, "busid");

    if (!strcmp(n->name, "cpu")) {
        sub = g_strdup_printf("cpu%s", attr(n, "numaid") ?
                              attr(n, "numaid") : "?");
    } else if (!strcmp(n->name, "pci") && busid) {
        if (g_hash_table_contains(r->parents, busid)) {
            return fail(r, "busid %s appears twice", busid);
        }
        g_hash_table_insert(r->parents, g_ascii_strdown(busid, -1),
                            g_strdup(chain));
        sub = g_strdup_printf("%s %s", busid, chain);
    } else {
        sub = g_strdup(chain);
    }
    return load_sub(r, n, sub);
}

static void reader_clear(Reader *r)
{
    g_clear_pointer(&r->parents, g_hash_table_unref);
    g_clear_pointer(&r->error, g_free);
}

static bool nccl_read(const char *text, Reader *r)
{
    memset(r, 0, sizeof(*r));
    r->p = text;
    r->end = text + strlen(text);
    r->parents = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                       g_free);
    return load_sub(r, NULL, "");
}

/* The reader refuses what NCCL refuses: it can fail. */
static void test_reader_rejects(void)
{
    static const char *const bad[] = {
        "<?xml version=\"1.0\"?>\n<system version=\"1\">\n</system>\n",
        "<system version=\"1\">\n\t<cpu numaid=\"0\"/>\n</system>\n",
        "<system version=\"1\">\n<cpu\nnumaid=\"0\"/>\n</system>\n",
        "<system version=\"1\">\n<cpu numaid=0/>\n</system>\n",
        "<system version=\"1\">\n<cpu numaid=\"0\">\n</system>\n",
        "<system version=\"2\">\n</system>\n",
        "<system version=\"1\">\n<gpu/>\n</system>\n",
        "<system version=\"1\">\n<cpu  numaid=\"0\"/>\n</system>\n",
        "<system version=\"1\">\n<cpu numaid=\"0\"/>\n",
    };
    g_autofree char *longv = g_strdup_printf("<system version=\"1\">\n<cpu "
                                             "numaid=\"%0300d\"/>\n"
                                             "</system>\n", 0);
    Reader r;

    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_assert_false(nccl_read(bad[i], &r));
        g_assert_nonnull(r.error);
        reader_clear(&r);
    }
    g_assert_false(nccl_read(longv, &r));
    g_assert_nonnull(strstr(r.error, "too long"));
    reader_clear(&r);
    g_assert_true(nccl_read("<!-- x -->\n<system version='1'>\r\n"
                            "<cpu numaid=\"0\" arch=\"x86_64\"/>\n"
                            "</system>\n", &r));
    g_assert_cmpuint(r.elements, ==, 2);
    reader_clear(&r);
}

/*
 * Where the file puts @bdf against where it is: its <pci> ancestors must
 * be its real upstream bridges in @root's sysfs, nearest first, under the
 * CPU of its NUMA node, nothing virtual and nothing foreign. NULL when
 * they are; else what is wrong.
 */
static char *placement_problem(const Reader *r, const char *root,
                               const char *bdf)
{
    g_autoptr(GpTopology) topo = gp_topo_read(root, NULL);
    const GpDevice *dev = topo ? gp_topo_find(topo, bdf) : NULL;
    const char *got = g_hash_table_lookup(r->parents, bdf);
    g_autoptr(GString) want = g_string_new("");

    if (!dev) {
        return g_strdup_printf("%s is not in the capture", bdf);
    }
    if (!got) {
        return g_strdup_printf("%s is not in the file", bdf);
    }
    for (const GpDevice *up = dev->parent; up; up = up->parent) {
        g_string_append_printf(want, "%s ", up->bdf);
    }
    g_string_append_printf(want, "cpu%d", MAX(dev->numa_node, 0));
    if (strcmp(got, want->str)) {
        return g_strdup_printf("%s sits under \"%s\" in the file, under "
                               "\"%s\" in sysfs", bdf, got, want->str);
    }
    return NULL;
}

static char *write_topo(const char *root)
{
    g_autofree char *dir = g_dir_make_tmp("gpup2p-nccl-XXXXXX", NULL);
    g_autofree char *file = g_build_filename(dir, "topo.xml", NULL);
    g_autofree char *cmd = g_strdup_printf("%s --sysfs-root %s --json "
                                           "--nccl-topo %s",
                                           g_getenv("GPUP2P_VERIFY"), root,
                                           file);
    g_autofree char *out = NULL;
    char *xml = NULL;
    int ws;

    g_assert_true(g_spawn_command_line_sync(cmd, &out, NULL, &ws, NULL));
    g_assert_true(WIFEXITED(ws));
    g_assert_true(g_file_get_contents(file, &xml, NULL, NULL));
    g_unlink(file);
    g_rmdir(dir);
    return xml;
}

static void test_two_node_host(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autofree char *xml = NULL;
    Reader r;

    sb_two_node_host(sb, 0x29c0);
    sb_set_p2pcap(sb, SB_GPU_A, 0, 8);
    sb_set_p2pcap(sb, SB_GPU_B, 0, 8);
    xml = write_topo(sb_root(sb));
    if (!nccl_read(xml, &r)) {
        g_test_message("%s\n%s", r.error, xml);
    }
    g_assert_null(r.error);
    g_assert_cmpuint(r.gpus, ==, 5);
    /* A and B share clique 0: one virtual switch holds both; the NIC's
     * real root port is the other bridge. */
    g_assert_cmpuint(r.bridges, ==, 2);
    g_assert_cmpstr(g_hash_table_lookup(r.parents, SB_GPU_A), ==,
                    "ffff:ff:00.0 cpu0");
    g_assert_cmpstr(g_hash_table_lookup(r.parents, SB_GPU_B), ==,
                    "ffff:ff:00.0 cpu0");
    /* The InfiniBand NIC (class 0x0207) at its real path, on node 1. */
    g_assert_null(placement_problem(&r, sb_root(sb), SB_NIC));
    g_assert_false(g_str_has_prefix(xml, "<?"));
    reader_clear(&r);
}

/*
 * A guest where a NIC shares a real switch with GPU A, and GPU B (A's
 * clique) hangs off its own root port:
 *   00:01.0 root port > 01:00.0 up > 02:00.0 down > 03:00.0 GPU A
 *                                  > 02:01.0 down > 04:00.0 NIC (RoCE)
 *   00:02.0 root port > 05:00.0 GPU B
 *   00:03.0 Ethernet controller without an RDMA device
 */
static SysfsBuilder *nic_beside_gpu(void)
{
    SysfsBuilder *sb = sb_new();

    sb_add(sb, NULL, "0000:00:00.0", SB_HOST_BRIDGE, 0x8086, 0x29c0,
           0x060000, 0, -1, NULL);
    sb_add(sb, NULL, "0000:00:01.0", SB_ROOT_PORT, 0x1b36, 0xc, 0x060400,
           0, 1, "pcieport");
    sb_add(sb, "0000:00:01.0", "0000:01:00.0", SB_SWITCH_UP, 0x10b5,
           0x8747, 0x060400, 0, 1, "pcieport");
    sb_add(sb, "0000:01:00.0", "0000:02:00.0", SB_SWITCH_DOWN, 0x10b5,
           0x8747, 0x060400, 0, 1, "pcieport");
    sb_add(sb, "0000:01:00.0", "0000:02:01.0", SB_SWITCH_DOWN, 0x10b5,
           0x8747, 0x060400, 0, 1, "pcieport");
    sb_add(sb, "0000:02:00.0", "0000:03:00.0", SB_ENDPOINT, 0x10de, 0x2335,
           0x030200, 0, 2, "vfio-pci");
    sb_add(sb, "0000:02:01.0", "0000:04:00.0", SB_ENDPOINT, 0x15b3, 0x1021,
           0x020000, 0, 3, "mlx5_core");
    sb_add(sb, NULL, "0000:00:02.0", SB_ROOT_PORT, 0x1b36, 0xc, 0x060400,
           0, 4, "pcieport");
    sb_add(sb, "0000:00:02.0", "0000:05:00.0", SB_ENDPOINT, 0x10de, 0x2335,
           0x030200, 0, 5, "vfio-pci");
    sb_add(sb, NULL, "0000:00:03.0", SB_ENDPOINT, 0x8086, 0x10d3, 0x020000,
           0, 6, "e1000e");
    sb_add_rdma_device(sb, "mlx5_0", "0000:04:00.0");
    sb_set_p2pcap(sb, "0000:03:00.0", 0, 8);
    sb_set_p2pcap(sb, "0000:05:00.0", 0, 8);
    sb_cpu(sb, "GenuineIntel", 6);
    return sb;
}

static void test_nic_real_path(void)
{
    g_autoptr(SysfsBuilder) sb = nic_beside_gpu();
    g_autofree char *xml = write_topo(sb_root(sb));
    g_autofree char *why = NULL;
    Reader r;

    if (!nccl_read(xml, &r)) {
        g_test_message("%s\n%s", r.error, xml);
    }
    g_assert_null(r.error);
    /* The RoCE NIC and GPU A at their real path: the switch they share is
     * in the file, so NCCL sees PIX between them, as PCIe gives. */
    why = placement_problem(&r, sb_root(sb), "0000:04:00.0");
    g_assert_null(why);
    why = placement_problem(&r, sb_root(sb), "0000:03:00.0");
    g_assert_null(why);
    /* GPU B shares no bridge with a NIC: in its clique's virtual switch. */
    g_assert_cmpstr(g_hash_table_lookup(r.parents, "0000:05:00.0"), ==,
                    "ffff:ff:00.0 cpu0");
    /* An Ethernet controller with no RDMA device is no RDMA NIC. */
    g_assert_null(strstr(xml, "0000:00:03.0"));
    reader_clear(&r);
}

/* Negative controls: the judge above catches a NIC put under a GPU
 * clique's virtual switch (what the writer did before) or under a real
 * switch it does not sit under. */
static void test_nic_misplaced_detected(void)
{
    static const char *const wrong[] = {
        "<system version=\"1\">\n  <cpu numaid=\"0\">\n"
        "    <pci busid=\"ffff:ff:00.0\" class=\"0x060400\">\n"
        "      <pci busid=\"0000:03:00.0\" class=\"0x030200\"/>\n"
        "      <pci busid=\"0000:05:00.0\" class=\"0x030200\"/>\n"
        "      <pci busid=\"0000:04:00.0\" class=\"0x020000\"/>\n"
        "    </pci>\n  </cpu>\n</system>\n",
        "<system version=\"1\">\n  <cpu numaid=\"0\">\n"
        "    <pci busid=\"0000:00:02.0\" class=\"0x060400\">\n"
        "      <pci busid=\"0000:05:00.0\" class=\"0x030200\"/>\n"
        "      <pci busid=\"0000:04:00.0\" class=\"0x020000\"/>\n"
        "    </pci>\n  </cpu>\n</system>\n",
        "<system version=\"1\">\n  <cpu numaid=\"1\">\n"
        "    <pci busid=\"0000:00:01.0\" class=\"0x060400\">\n"
        "      <pci busid=\"0000:01:00.0\" class=\"0x060400\">\n"
        "        <pci busid=\"0000:02:01.0\" class=\"0x060400\">\n"
        "          <pci busid=\"0000:04:00.0\" class=\"0x020000\"/>\n"
        "        </pci>\n      </pci>\n    </pci>\n  </cpu>\n</system>\n",
    };
    g_autoptr(SysfsBuilder) sb = nic_beside_gpu();

    for (guint i = 0; i < G_N_ELEMENTS(wrong); i++) {
        g_autofree char *why = NULL;
        Reader r;

        g_assert_true(nccl_read(wrong[i], &r));
        why = placement_problem(&r, sb_root(sb), "0000:04:00.0");
        g_assert_nonnull(why);
        g_test_message("caught: %s", why);
        reader_clear(&r);
    }
}

static void test_h200_fixture(void)
{
    g_autofree char *root = g_test_build_filename(G_TEST_DIST, "..",
                                                  "fixtures", "h200x2-vm",
                                                  NULL);
    g_autofree char *xml = write_topo(root);
    Reader r;

    if (!nccl_read(xml, &r)) {
        g_test_message("%s\n%s", r.error, xml);
    }
    g_assert_null(r.error);
    g_assert_cmpuint(r.gpus, ==, 2);
    g_assert_cmpuint(r.bridges, ==, 0);
    reader_clear(&r);
}

/* The file the host writes for a mirrored guest (gpup2p --mirror
 * --nccl-topo), on the hidden-style capture: two switches, seven devices. */
static void test_mirror_file(void)
{
    static const char *const bdfs[] = {
        "0000:23:00.0", "0000:24:00.0", "0000:25:00.0", "0000:43:00.0",
        "0000:44:00.0", "0000:45:00.0", "0000:61:00.0", NULL,
    };
    g_autofree char *root = g_test_build_filename(G_TEST_DIST, "..",
                                                  "fixtures", "vhost-hidden",
                                                  NULL);
    g_autoptr(GpTopology) topo = gp_topo_read(root, NULL);
    g_autoptr(GpMirror) m = NULL;
    g_autofree char *xml = NULL;
    Reader r;

    g_assert_nonnull(topo);
    m = gp_mirror_plan(topo, bdfs, NULL, NULL, NULL);
    g_assert_nonnull(m);
    xml = gp_mirror_nccl_topo(m);
    if (!nccl_read(xml, &r)) {
        g_test_message("%s\n%s", r.error, xml);
    }
    g_assert_null(r.error);
    g_assert_cmpuint(r.gpus, ==, 5);
    g_assert_cmpuint(r.bridges, ==, 2);
    reader_clear(&r);
}

/*
 * The host's file for a mirrored guest that gets GPU A, its RoCE NIC
 * neighbour and GPU B (nic_beside_gpu()): NCCL hangs a <nic> and a <gpu>
 * under the <pci> whose busid is the device's, so the NIC's <pci> and GPU
 * A's must both sit directly under the <pci> of the emulated switch that
 * stands for their host switch, and GPU B outside it.
 */
static void test_mirror_nic_beside_gpu(void)
{
    static const char *const bdfs[] = { "0000:03:00.0", "0000:04:00.0",
                                        "0000:05:00.0", NULL };
    g_autoptr(SysfsBuilder) sb = nic_beside_gpu();
    g_autoptr(GpTopology) topo = gp_topo_read(sb_root(sb), NULL);
    g_autoptr(GpMirror) m = NULL;
    g_autofree char *xml = NULL, *under_switch = NULL;
    const GpMirrorNode *sw, *nic, *gpu_a, *gpu_b;
    Reader r;

    g_assert_nonnull(topo);
    m = gp_mirror_plan(topo, bdfs, NULL, NULL, NULL);
    g_assert_nonnull(m);
    sw = gp_mirror_find(m, "0000:01:00.0");
    nic = gp_mirror_find(m, "0000:04:00.0");
    gpu_a = gp_mirror_find(m, "0000:03:00.0");
    gpu_b = gp_mirror_find(m, "0000:05:00.0");
    g_assert_nonnull(sw);
    g_assert_cmpint(sw->kind, ==, GP_MIRROR_SWITCH_UP);
    g_assert_true(gp_mirror_nic_place(m, "0000:04:00.0")->gpu == gpu_a);
    xml = gp_mirror_nccl_topo(m);
    if (!nccl_read(xml, &r)) {
        g_test_message("%s\n%s", r.error, xml);
    }
    g_assert_null(r.error);
    under_switch = g_strdup_printf("%s cpu0", sw->guest_bdf);
    g_assert_cmpstr(g_hash_table_lookup(r.parents, nic->guest_bdf), ==,
                    under_switch);
    g_assert_cmpstr(g_hash_table_lookup(r.parents, gpu_a->guest_bdf), ==,
                    under_switch);
    g_assert_cmpstr(g_hash_table_lookup(r.parents, gpu_b->guest_bdf), ==,
                    "cpu0");
    g_assert_nonnull(strstr(xml, "class=\"0x020000\" vendor=\"0x15b3\""));
    reader_clear(&r);
}

/* With the host's file in fw_cfg, gpup2p-verify --nccl-topo writes that
 * file and says so; without it, its own view, and says that. */
static void test_verify_takes_host_file(void)
{
    static const char host[] = "<system version=\"1\">\n</system>\n";
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autofree char *item = NULL, *raw = NULL, *file = NULL, *cmd = NULL;
    g_autofree char *out = NULL, *got = NULL;
    int ws;

    sb_two_node_host(sb, 0x29c0);
    file = g_build_filename(sb_root(sb), "topo.xml", NULL);
    cmd = g_strdup_printf("%s --sysfs-root %s --json --nccl-topo %s",
                          g_getenv("GPUP2P_VERIFY"), sb_root(sb), file);
    g_assert_true(g_spawn_command_line_sync(cmd, &out, NULL, &ws, NULL));
    g_assert_nonnull(strstr(out, "NCCL topology: the guest's own view"));
    g_clear_pointer(&out, g_free);

    item = g_build_filename(sb_root(sb), "sys/firmware/qemu_fw_cfg/by_name",
                            GP_FWCFG_NCCL_TOPO, NULL);
    raw = g_build_filename(item, "raw", NULL);
    g_assert_cmpint(g_mkdir_with_parents(item, 0755), ==, 0);
    g_assert_true(g_file_set_contents(raw, host, -1, NULL));
    g_assert_true(g_spawn_command_line_sync(cmd, &out, NULL, &ws, NULL));
    g_assert_nonnull(strstr(out, "NCCL topology: the host's, from fw_cfg "
                            GP_FWCFG_NCCL_TOPO));
    g_assert_true(g_file_get_contents(file, &got, NULL, NULL));
    g_assert_cmpstr(got, ==, host);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/nccl-topo/reader-rejects", test_reader_rejects);
    g_test_add_func("/nccl-topo/two-node-host", test_two_node_host);
    g_test_add_func("/nccl-topo/h200-fixture", test_h200_fixture);
    g_test_add_func("/nccl-topo/nic-real-path", test_nic_real_path);
    g_test_add_func("/nccl-topo/nic-misplaced-detected",
                    test_nic_misplaced_detected);
    g_test_add_func("/nccl-topo/mirror-file", test_mirror_file);
    g_test_add_func("/nccl-topo/mirror-nic-beside-gpu",
                    test_mirror_nic_beside_gpu);
    g_test_add_func("/nccl-topo/verify-takes-host-file",
                    test_verify_takes_host_file);
    return g_test_run();
}
