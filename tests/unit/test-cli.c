/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The `gpup2p` command line: output shapes, exit codes, snapshots. */
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sysfs-builder.h"

typedef struct {
    int status;
    char *out;
    char *err;
} Run;

/* tests/unit/qemu-standin.sh: answers like a QEMU with the extension. */
static const char *qemu_standin(void)
{
    static char *path;

    if (!path) {
        path = g_test_build_filename(G_TEST_DIST, "qemu-standin.sh", NULL);
    }
    return path;
}

static void run_clear(Run *r)
{
    g_free(r->out);
    g_free(r->err);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Run, run_clear)

/* gpup2p with @args (NULL-terminated). */
static void run_argv(Run *r, const char *const *args)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_autoptr(GError) err = NULL;
    int wait_status;

    g_ptr_array_add(argv, (gpointer)g_getenv("GPUP2P"));
    for (; *args; args++) {
        g_ptr_array_add(argv, (gpointer)*args);
    }
    g_ptr_array_add(argv, NULL);
    g_assert_nonnull(g_ptr_array_index(argv, 0));
    g_assert_true(g_spawn_sync(NULL, (char **)argv->pdata, NULL,
                               G_SPAWN_DEFAULT, NULL, NULL, &r->out, &r->err,
                               &wait_status, &err));
    g_assert_no_error(err);
    g_assert_true(WIFEXITED(wait_status));
    r->status = WEXITSTATUS(wait_status);
}

static void run(Run *r, const char *first, ...)
{
    g_autoptr(GPtrArray) args = g_ptr_array_new();
    const char *arg;
    va_list ap;

    va_start(ap, first);
    for (arg = first; arg; arg = va_arg(ap, const char *)) {
        g_ptr_array_add(args, (gpointer)arg);
    }
    va_end(ap);
    g_ptr_array_add(args, NULL);
    run_argv(r, (const char *const *)args->pdata);
}

static JsonObject *parse_object(JsonParser *p, const char *text)
{
    g_autoptr(GError) err = NULL;

    g_assert_true(json_parser_load_from_data(p, text, -1, &err));
    g_assert_no_error(err);
    return json_node_get_object(json_parser_get_root(p));
}

static char *fixture(const char *name)
{
    return g_test_build_filename(G_TEST_DIST, "..", "fixtures", name, NULL);
}

static JsonObject *find_by(JsonArray *arr, const char *key, const char *val)
{
    guint i;

    for (i = 0; i < json_array_get_length(arr); i++) {
        JsonObject *o = json_array_get_object_element(arr, i);

        if (!g_strcmp0(json_object_get_string_member(o, key), val)) {
            return o;
        }
    }
    return NULL;
}

static void test_topo_json_fixture(void)
{
    g_autofree char *root = fixture("h200x2-vm");
    g_auto(Run) r = { 0 };
    g_autoptr(JsonParser) p = json_parser_new();
    JsonObject *top, *gpu, *link = NULL;
    JsonArray *links;
    guint i;

    run(&r, "topo", "--sysfs-root", root, "--json", NULL);
    g_assert_cmpint(r.status, ==, 0);
    top = parse_object(p, r.out);
    gpu = find_by(json_object_get_array_member(top, "devices"), "bdf",
                  "0000:00:06.0");
    g_assert_nonnull(gpu);
    g_assert_cmpstr(json_object_get_string_member(gpu, "vendor"), ==, "10de");
    g_assert_cmpstr(json_object_get_string_member(gpu, "device"), ==, "2335");
    g_assert_cmpstr(json_object_get_string_member(gpu, "class"), ==,
                    "030200");
    g_assert_cmpint(json_object_get_int_member(gpu, "numa_node"), ==, -1);
    g_assert_true(json_object_get_null_member(gpu, "iommu_group"));
    g_assert_cmpstr(json_object_get_string_member(gpu, "host_bridge"), ==,
                    "pci0000:00");
    g_assert_cmpuint(json_array_get_length(
        json_object_get_array_member(gpu, "upstream")), ==, 0);
    links = json_object_get_array_member(top, "links");
    for (i = 0; i < json_array_get_length(links); i++) {
        JsonObject *o = json_array_get_object_element(links, i);

        if (!g_strcmp0(json_object_get_string_member(o, "a"), "0000:00:06.0")
            && !g_strcmp0(json_object_get_string_member(o, "b"),
                          "0000:00:07.0")) {
            link = o;
        }
    }
    g_assert_nonnull(link);
    g_assert_cmpstr(json_object_get_string_member(link, "type"), ==, "PHB");
    g_assert_cmpstr(json_object_get_string_member(link, "p2p"), ==,
                    "unknown");
    g_assert_nonnull(strstr(json_object_get_string_member(link, "reason"),
                            "CPU vendor is unknown"));
}

/* A device whose config space reads all ones: named in text and JSON. */
static void test_topo_unreadable(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(JsonParser) p = json_parser_new();
    g_auto(Run) text = { 0 }, json = { 0 };
    g_autofree char *dir = NULL, *path = NULL;
    g_autofree gchar *cfg = NULL;
    JsonObject *root, *dev;
    gsize len;

    sb_two_node_host(sb, 0x29c0);
    dir = sb_device_dir(sb, SB_GPU_B);
    path = g_build_filename(dir, "config", NULL);
    g_assert_true(g_file_get_contents(path, &cfg, &len, NULL));
    memset(cfg, 0xff, len);
    g_assert_true(g_file_set_contents(path, cfg, (gssize)len, NULL));
    run(&text, "topo", "--sysfs-root", sb_root(sb), NULL);
    g_assert_cmpint(text.status, ==, 0);
    g_assert_nonnull(strstr(text.out, "warning: " SB_GPU_B ": config space "
                            "unusable: "));
    g_assert_nonnull(strstr(text.out, "all ones"));
    run(&json, "topo", "--sysfs-root", sb_root(sb), "--json", NULL);
    g_assert_cmpint(json.status, ==, 0);
    root = parse_object(p, json.out);
    g_assert_cmpint(json_object_get_int_member(root, "config_unreadable"), ==,
                    1);
    dev = find_by(json_object_get_array_member(root, "devices"), "bdf",
                  SB_GPU_B);
    g_assert_nonnull(dev);
    g_assert_nonnull(strstr(json_object_get_string_member(
        dev, "config_unreadable"), "0000:04:00.0/config"));
}

/* The link between @a and @b in topo --json's "links". */
static JsonObject *find_link(JsonObject *root, const char *a, const char *b)
{
    JsonArray *links = json_object_get_array_member(root, "links");
    guint i;

    for (i = 0; i < json_array_get_length(links); i++) {
        JsonObject *o = json_array_get_object_element(links, i);

        if (!g_strcmp0(json_object_get_string_member(o, "a"), a) &&
            !g_strcmp0(json_object_get_string_member(o, "b"), b)) {
            return o;
        }
    }
    return NULL;
}

/*
 * A capture with the kernel module's verdicts (gpup2p/kernel-verdicts):
 * topo shows them as the kernel's; a capture of a capture asks no module
 * and keeps no such file.
 */
static void test_topo_kernel_verdicts(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(JsonParser) p = json_parser_new();
    g_autofree char *tmp = g_dir_make_tmp("gpup2p-snap-XXXXXX", NULL);
    g_autofree char *dest = g_build_filename(tmp, "capture", NULL);
    g_autofree char *kv = g_build_filename(dest, "gpup2p", "kernel-verdicts",
                                           NULL);
    g_auto(Run) json = { 0 }, snap = { 0 };
    JsonObject *root, *cf, *ab;

    sb_two_node_host(sb, 0x29c0);
    sb_cpu(sb, "GenuineIntel", 6);
    sb_write(sb, "gpup2p/kernel-verdicts", "source p2pdma\n"
             SB_GPU_C " " SB_GPU_F " host-bridge 4 through-iommu 0x18\n");
    run(&json, "topo", "--sysfs-root", sb_root(sb), "--json", NULL);
    g_assert_cmpint(json.status, ==, 0);
    root = parse_object(p, json.out);
    cf = find_link(root, SB_GPU_C, SB_GPU_F);
    ab = find_link(root, SB_GPU_A, SB_GPU_B);
    g_assert_nonnull(cf);
    g_assert_nonnull(ab);
    g_assert_cmpstr(json_object_get_string_member(cf, "verdict_source"), ==,
                    "kernel");
    g_assert_cmpstr(json_object_get_string_member(cf, "guest_p2p"), ==,
                    "through-iommu");
    g_assert_nonnull(strstr(json_object_get_string_member(cf,
                                                          "guest_reason"),
                            "recorded in the snapshot"));
    g_assert_cmpstr(json_object_get_string_member(ab, "verdict_source"), ==,
                    "library");

    run(&snap, "snapshot", "--sysfs-root", sb_root(sb), dest, NULL);
    g_assert_cmpint(snap.status, ==, 0);
    g_assert_false(g_file_test(kv, G_FILE_TEST_EXISTS));
    sb_remove_tree(tmp);
}

static void test_topo_text(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_auto(Run) r = { 0 }, all = { 0 }, some = { 0 }, both = { 0 };

    sb_two_node_host(sb, 0x29c0);
    sb_write(sb, "sys/devices/system/node/node0/cpulist", "0-15\n");
    sb_write(sb, "sys/devices/system/node/node1/cpulist", "16-31\n");
    /* Default: GPUs and NICs only, named, with CPU and NUMA affinity. */
    run(&r, "topo", "--sysfs-root", sb_root(sb), NULL);
    g_assert_cmpint(r.status, ==, 0);
    g_assert_nonnull(strstr(r.out, "GPU0    X      PIX    PHB    NODE   "
                                   "SYS    SYS    0-15           0\n"));
    g_assert_nonnull(strstr(r.out, "NIC0    SYS"));
    g_assert_nonnull(strstr(r.out, "16-31          1\n"));
    g_assert_nonnull(strstr(r.out, "GPU0    " SB_GPU_A "  10de:2335"));
    g_assert_nonnull(strstr(r.out, "NIC0    " SB_NIC "  15b3:101d"));
    /* NVIDIA GPUs on vfio-pci: NVLink is said to be invisible here, and
     * where to look. */
    g_assert_nonnull(strstr(r.out, "NVLink: not visible here"));
    g_assert_nonnull(strstr(r.out, "'nvidia-smi topo -m' or 'gpup2p-verify'"));
    /* The guest's matrix first (cliques follow it), then bare metal's. */
    g_assert_nonnull(strstr(r.out, "GUEST   GPU0"));
    g_assert_nonnull(strstr(r.out, "HOST    GPU0"));
    g_assert_true(strstr(r.out, "GUEST   GPU0") <
                  strstr(r.out, "HOST    GPU0"));
    g_assert_nonnull(strstr(r.out, "  BY GPU0-GPU1: bypasses the IOMMU: not "
                                   "isolated on the way to the root port "
                                   "(Linux's pci_acs_enabled() with SV RR "
                                   "CR UF fails), so a port can route the "
                                   "guest-physical address on host "
                                   "windows; at 0000:02:00.0"));
    g_assert_nonnull(strstr(r.out, "  OK GPU0-GPU1: common upstream bridge "
                                   "0000:01:00.0"));
    g_assert_null(strstr(r.out, "0000:01:00.0  "));     /* no bridges */
    g_assert_null(strstr(r.out, "DEVICE"));
    /* One reason line holds every pair it applies to. */
    g_assert_nonnull(strstr(r.out, "GPU0-GPU2, GPU0-GPU3"));

    /* --all: every device, and every endpoint in the matrix. */
    run(&all, "topo", "--sysfs-root", sb_root(sb), "--all", NULL);
    g_assert_cmpint(all.status, ==, 0);
    g_assert_nonnull(strstr(all.out, "DEVICE"));
    g_assert_nonnull(strstr(all.out, "0000:01:00.0  1000:c010"));

    /* --devices: the matrix of those, in BDF order whatever the order given. */
    run(&some, "topo", "--sysfs-root", sb_root(sb), "--devices",
        SB_GPU_D "," SB_GPU_A, NULL);
    g_assert_cmpint(some.status, ==, 0);
    g_assert_nonnull(strstr(some.out, "GPU0    " SB_GPU_A));
    g_assert_nonnull(strstr(some.out, "GPU1    " SB_GPU_D));
    g_assert_null(strstr(some.out, "GPU2"));

    run(&both, "topo", "--sysfs-root", sb_root(sb), "--all", "--devices",
        SB_GPU_A, NULL);
    g_assert_cmpint(both.status, ==, 64);
}

/* Pairs in BDF order whatever order --devices gives; names, not BDFs, key. */
static void test_topo_json_order(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_auto(Run) fwd = { 0 }, rev = { 0 };
    g_autoptr(JsonParser) p = json_parser_new();
    JsonObject *top, *link;
    JsonArray *links;

    sb_two_node_host(sb, 0x29c0);
    run(&fwd, "topo", "--sysfs-root", sb_root(sb), "--devices",
        SB_GPU_A "," SB_GPU_D "," SB_NIC, "--json", NULL);
    run(&rev, "topo", "--sysfs-root", sb_root(sb), "--devices",
        SB_NIC "," SB_GPU_D "," SB_GPU_A, "--json", NULL);
    g_assert_cmpint(fwd.status, ==, 0);
    g_assert_cmpstr(fwd.out, ==, rev.out);
    top = parse_object(p, fwd.out);
    g_assert_cmpint(json_object_get_int_member(top, "schema_version"), ==, 1);
    links = json_object_get_array_member(top, "links");
    g_assert_cmpuint(json_array_get_length(links), ==, 3);
    link = json_array_get_object_element(links, 0);
    g_assert_cmpstr(json_object_get_string_member(link, "a"), ==, SB_GPU_A);
    g_assert_cmpstr(json_object_get_string_member(link, "b"), ==, SB_GPU_D);
    g_assert_cmpstr(json_object_get_string_member(link, "a_name"), ==,
                    "GPU0");
    link = json_array_get_object_element(links, 2);
    g_assert_cmpstr(json_object_get_string_member(link, "a_name"), ==,
                    "GPU1");
    g_assert_cmpstr(json_object_get_string_member(link, "b_name"), ==,
                    "NIC0");
}

static void test_plan_json(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_auto(Run) r = { 0 };
    g_autoptr(JsonParser) p = json_parser_new();
    JsonObject *top, *c0, *dev;
    JsonArray *cliques, *members;

    sb_two_node_host(sb, 0x2020);
    /* Switch ports that redirect, as Linux sets them with an IOMMU on. */
    sb_set_acs(sb, "0000:02:00.0", 0x1f, 0x1d);
    sb_set_acs(sb, "0000:02:01.0", 0x1f, 0x1d);
    run(&r, "plan", "--sysfs-root", sb_root(sb), "--policy", "host-bridge",
        "--json", NULL);
    g_assert_cmpint(r.status, ==, 0);
    top = parse_object(p, r.out);
    g_assert_cmpstr(json_object_get_string_member(top, "policy"), ==,
                    "host-bridge");
    cliques = json_object_get_array_member(top, "cliques");
    g_assert_cmpuint(json_array_get_length(cliques), ==, 1);
    c0 = json_array_get_object_element(cliques, 0);
    g_assert_cmpint(json_object_get_int_member(c0, "id"), ==, 0);
    members = json_object_get_array_member(c0, "devices");
    g_assert_cmpuint(json_array_get_length(members), ==, 3);
    g_assert_cmpstr(json_array_get_string_element(members, 0), ==, SB_GPU_A);
    dev = find_by(json_object_get_array_member(top, "devices"), "bdf",
                  SB_GPU_F);
    g_assert_true(json_object_get_null_member(dev, "clique"));
    dev = find_by(json_object_get_array_member(top, "devices"), "bdf",
                  SB_GPU_B);
    g_assert_cmpint(json_object_get_int_member(dev, "clique"), ==, 0);
    g_assert_nonnull(find_by(json_object_get_array_member(top, "unassigned"),
                             "bdf", SB_GPU_D));
}

static void test_exit_codes(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_auto(Run) r1 = { 0 }, r2 = { 0 }, r3 = { 0 }, r4 = { 0 }, r5 = { 0 };
    g_auto(Run) r6 = { 0 }, r7 = { 0 };

    sb_two_node_host(sb, 0x29c0);
    run(&r1, "frobnicate", NULL);
    g_assert_cmpint(r1.status, ==, 64);
    g_assert_nonnull(strstr(r1.err, "unknown command 'frobnicate'"));
    run(&r2, "topo", "--no-such-option", NULL);
    g_assert_cmpint(r2.status, ==, 64);
    run(&r3, "topo", "--sysfs-root", "/nonexistent", NULL);
    g_assert_cmpint(r3.status, ==, 1);
    g_assert_nonnull(strstr(r3.err, "/nonexistent"));
    run(&r4, "plan", "--sysfs-root", sb_root(sb), "--devices", "0000:09:00.0",
        NULL);
    g_assert_cmpint(r4.status, ==, 1);
    g_assert_nonnull(strstr(r4.err, "'0000:09:00.0' is not in the topology"));
    run(&r5, "plan", "--sysfs-root", sb_root(sb), "--policy", "wide", NULL);
    g_assert_cmpint(r5.status, ==, 64);
    g_assert_nonnull(strstr(r5.err, "'wide'"));
    run(&r6, "--help", NULL);
    g_assert_cmpint(r6.status, ==, 0);
    g_assert_nonnull(strstr(r6.out, "Exit codes"));
    /* A switch port named as a device to plan: bad input, nothing out. */
    run(&r7, "plan", "--sysfs-root", sb_root(sb), "--devices",
        "0000:03:00.0,0000:02:00.0", NULL);
    g_assert_cmpint(r7.status, ==, 1);
    g_assert_nonnull(strstr(r7.err, "0000:02:00.0 is a PCI bridge"));
    g_assert_cmpstr(r7.out, ==, "");
}

/*
 * Every rule of the command line with its own message (exit 64), naming
 * the option and value, or the options that exclude each other. A row's
 * command prefixes the message ("gpup2p plan: ..."); NULL: no command.
 */
typedef struct {
    const char *args[9];
    const char *says;
    /* Where set, after @says in the same line: for a message GLib words
     * itself, whose quotes differ between versions and locales ("Cannot
     * parse integer value 'many'" has curly quotes in the GLib here), so
     * the row names the parts either side of them. */
    const char *then;
} UsageRule;

#define BDF "0000:01:00.0"
static const UsageRule usage_rules[] = {
    { { NULL }, "gpup2p: no command given" },
    { { "frobnicate" }, "gpup2p: unknown command 'frobnicate'" },
    { { "topo", "--no-such-option" }, "Unknown option --no-such-option" },
    { { "topo", "--devices" }, "Missing argument for --devices" },
    { { "topo", "extra" }, "unexpected argument 'extra' (topo takes "
      "options only)" },
    { { "topo", "--all", "--devices", BDF },
      "--all and --devices exclude each other" },
    { { "topo", "--devices", "foo" },
      "--devices needs BDFs like 0000:01:00.0, not 'foo'" },
    { { "topo", "--devices", BDF ",01:00.9" },
      "--devices needs BDFs like 0000:01:00.0, not '01:00.9'" },
    { { "topo", "--devices", "," },
      "--devices needs at least one BDF, like 0000:01:00.0, not ','" },
    { { "topo", "--devices", BDF ",01:00.0" },
      "--devices names 0000:01:00.0 twice ('01:00.0')" },
    { { "plan", "--devices", "1:00.0," BDF },
      "--devices names 0000:01:00.0 twice ('" BDF "')" },
    { { "check", "--devices", BDF "," BDF },
      "--devices names 0000:01:00.0 twice ('" BDF "')" },
    { { "qemu-args", "--mirror", BDF, "01:00.0" },
      "each device once: 0000:01:00.0 is named twice ('01:00.0')" },
    { { "plan", "extra" }, "unexpected argument 'extra' (plan takes "
      "options only)" },
    { { "plan", "--policy", "wide" },
      "--policy must be system, host-bridge or switch, not 'wide'" },
    { { "plan", "--devices", "gpu0" },
      "--devices needs BDFs like 0000:01:00.0, not 'gpu0'" },
    { { "check", "extra" }, "unexpected argument 'extra' (check takes "
      "options only)" },
    { { "check", "--devices", "1:2:3" },
      "--devices needs BDFs like 0000:01:00.0, not '1:2:3'" },
    { { "snapshot" }, "give the new directory to capture into (NEWDIR)" },
    { { "snapshot", "a", "b" }, "one directory only, not also 'b'" },
    { { "verdict" }, "give two devices A B, or --all (none given)" },
    { { "verdict", BDF }, "give two devices A B, or --all (B missing)" },
    { { "verdict", BDF, BDF, "c" }, "two devices only, not also 'c'" },
    { { "verdict", "--all", BDF },
      "--all compares every pair: it takes no device, not '" BDF "'" },
    { { "verdict", "foo", BDF },
      "device A needs a BDF like 0000:01:00.0, not 'foo'" },
    { { "verdict", BDF, "bar" },
      "device B needs a BDF like 0000:01:00.0, not 'bar'" },
    { { "qemu-args", BDF }, "give --mirror (the only mode)" },
    { { "qemu-args", "--mirror" },
      "--mirror needs the host devices, BDFs like 0000:01:00.0" },
    { { "qemu-args", "--mirror", "gpu0" },
      "each device needs a BDF like 0000:01:00.0, not 'gpu0'" },
    { { "qemu-args", "--mirror", BDF, "--nccl-topo", "a,b" },
      "--nccl-topo 'a,b': a comma in the path would split QEMU's option" },
    { { "qemu-args", "--mirror", BDF, "--cpus", "-1" },
      "--cpus must be 1 or more (without it: one per NUMA cell), not '-1'" },
    { { "qemu-args", "--mirror", BDF, "--cpus", "0" },
      "--cpus must be 1 or more (without it: one per NUMA cell), not '0'" },
    { { "qemu-args", "--mirror", BDF, "--memory", "0" },
      "--memory must be a positive number of MiB, not '0'" },
    { { "qemu-args", "--mirror", BDF, "--cpus", "many" },
      "--cpus must be 1 or more (without it: one per NUMA cell), not "
      "'many'" },
    { { "qemu-args", "--mirror", BDF, "--memory", "lots" }, "lots",
      "for --memory" },
#ifdef GP_HAVE_LIBVIRT
    { { "libvirt" }, "give FILE, - (standard input) or --domain NAME" },
    { { "libvirt", "a.xml", "b.xml" }, "one FILE only, not also 'b.xml'" },
    { { "libvirt", "a.xml", "--domain", "vm" },
      "FILE 'a.xml' and --domain 'vm' exclude each other" },
    { { "libvirt", "a.xml", "--connect", "test:///default" },
      "--connect 'test:///default' goes with --domain NAME; FILE 'a.xml' "
      "is read from disk" },
    { { "libvirt", "--domain", "vm", "--in-place" },
      "--in-place rewrites a FILE, not --domain 'vm' (use --define)" },
    { { "libvirt", "-", "--in-place" },
      "--in-place needs a FILE to rewrite, not - (standard input)" },
    { { "libvirt", "a.xml", "--define" },
      "--define goes with --domain NAME, not FILE 'a.xml'" },
    { { "libvirt", "a.xml", "--qemu-stock", "--qemu-default-auto" },
      "--qemu-stock and --qemu-default-auto exclude each other" },
    { { "libvirt", "a.xml", "--host-snapshot", "/s", "--qemu-stock" },
      "--host-snapshot and --qemu-stock exclude each other" },
    { { "libvirt", "a.xml", "--host-snapshot", "/s",
        "--qemu-default-auto" },
      "--host-snapshot and --qemu-default-auto exclude each other" },
    { { "libvirt", "a.xml", "--nccl-topo", "n.xml" },
      "--nccl-topo 'n.xml' goes with --mirror" },
    { { "libvirt", "a.xml", "--check", "--in-place" },
      "--check only reads the domain: it excludes --in-place" },
    { { "libvirt", "--domain", "vm", "--check", "--define" },
      "--check only reads the domain: it excludes --define" },
    { { "libvirt", "a.xml", "--check", "--diff" },
      "--check only reads the domain: it excludes --diff" },
    { { "libvirt", "a.xml", "--check", "--host-snapshot", "/s" },
      "--check only reads the domain: it excludes --host-snapshot" },
    { { "libvirt", "a.xml", "--check", "--emulator", "/q" },
      "--check only reads the domain: it excludes --emulator" },
    { { "libvirt", "a.xml", "--check", "--mirror" },
      "--check only reads the domain: it excludes --mirror" },
    { { "libvirt", "a.xml", "--policy", "x" },
      "--policy must be system, host-bridge or switch, not 'x'" },
#endif
};
#undef BDF

/* "gpup2p CMD: " before a command's usage message, "gpup2p: " before
 * main's (no command, or an unknown one). */
static char *usage_prefix(const UsageRule *u)
{
    if (!u->args[0] || !strcmp(u->args[0], "frobnicate")) {
        return g_strdup("gpup2p: ");
    }
    return g_strdup_printf("gpup2p %s: ", u->args[0]);
}

static void test_usage_rules(void)
{
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(usage_rules); i++) {
        const UsageRule *u = &usage_rules[i];
        g_autofree char *prefix = usage_prefix(u);
        g_autofree char *first = NULL;
        const char *at;
        g_auto(Run) r = { 0 };

        run_argv(&r, u->args);
        first = g_strndup(r.err, strcspn(r.err, "\n"));
        g_test_message("%s", first);
        g_assert_cmpint(r.status, ==, 64);
        g_assert_cmpstr(r.out, ==, "");
        /* The rule's own line comes first: no catch-all sentence. */
        at = strstr(first, u->says);
        if (!g_str_has_prefix(first, prefix) || !at ||
            (u->then && !strstr(at + strlen(u->says), u->then))) {
            g_error("row %zu: expected '%s...%s...%s', got: %s", i, prefix,
                    u->says, u->then ? u->then : "", r.err);
        }
    }
}

/*
 * Nothing to plan (no GPU in the capture, no --devices) is no success:
 * exit 3, as for no valid plan, with a message naming the input and no
 * plan on stdout, in text and JSON alike.
 */
static void test_plan_nothing(void)
{
    g_autofree char *tmp = g_dir_make_tmp("gpup2p-empty-XXXXXX", NULL);
    g_autofree char *devs = g_build_filename(tmp, "sys", "bus", "pci",
                                             "devices", NULL);
    g_auto(Run) text = { 0 }, json = { 0 };

    g_assert_cmpint(g_mkdir_with_parents(devs, 0755), ==, 0);
    run(&text, "plan", "--sysfs-root", tmp, NULL);
    g_assert_cmpint(text.status, ==, 3);
    g_assert_nonnull(strstr(text.err, "nothing to plan"));
    g_assert_nonnull(strstr(text.err, tmp));
    g_assert_cmpstr(text.out, ==, "");
    run(&json, "plan", "--sysfs-root", tmp, "--json", NULL);
    g_assert_cmpint(json.status, ==, 3);
    g_assert_cmpstr(json.out, ==, "");
    /* devices, pci, bus, sys, then tmp itself. */
    while (strlen(devs) >= strlen(tmp)) {
        g_assert_cmpint(g_rmdir(devs), ==, 0);
        *strrchr(devs, '/') = '\0';
    }
}

static void test_too_many_cliques_exit(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_auto(Run) r = { 0 };
    unsigned s;

    /* 17 Xeon E5 host bridges (8086:3c00 forwards only within itself),
     * each with two GPUs on root ports: 17 P2P domains for a guest. */
    for (s = 0; s < 17; s++) {
        char hb[16], rp0[16], rp1[16], g0[16], g1[16];
        unsigned bus = s * 8;

        g_snprintf(hb, sizeof(hb), "0000:%02x:00.0", bus);
        g_snprintf(rp0, sizeof(rp0), "0000:%02x:01.0", bus);
        g_snprintf(rp1, sizeof(rp1), "0000:%02x:02.0", bus);
        g_snprintf(g0, sizeof(g0), "0000:%02x:00.0", bus + 1);
        g_snprintf(g1, sizeof(g1), "0000:%02x:00.0", bus + 2);
        sb_add(sb, NULL, hb, SB_HOST_BRIDGE, 0x8086, 0x3c00, 0x060000, 0, -1,
               NULL);
        sb_add(sb, NULL, rp0, SB_ROOT_PORT, 0x8086, 1, 0x060400, 0,
               (int)s * 4, NULL);
        sb_add(sb, NULL, rp1, SB_ROOT_PORT, 0x8086, 1, 0x060400, 0,
               (int)s * 4 + 1, NULL);
        sb_add(sb, rp0, g0, SB_ENDPOINT, 0x10de, 0x2335, 0x030200, 0,
               (int)s * 4 + 2, NULL);
        sb_add(sb, rp1, g1, SB_ENDPOINT, 0x10de, 0x2335, 0x030200, 0,
               (int)s * 4 + 3, NULL);
        sb_set_acs(sb, rp0, 0x5f, SB_ACS_LINUX);
        sb_set_acs(sb, rp1, 0x5f, SB_ACS_LINUX);
    }
    sb_cpu(sb, "GenuineIntel", 6);
    run(&r, "plan", "--sysfs-root", sb_root(sb), NULL);
    g_assert_cmpint(r.status, ==, 3);
    g_assert_nonnull(strstr(r.err, "17 P2P cliques"));
    g_assert_nonnull(strstr(r.err, "0000:81:00.0, 0000:82:00.0"));
}

static void test_snapshot_round_trip(void)
{
    g_autofree char *root = fixture("h200x2-vm");
    g_autofree char *tmp = g_dir_make_tmp("gpup2p-snap-XXXXXX", NULL);
    g_autofree char *dest = g_build_filename(tmp, "capture", NULL);
    g_auto(Run) snap = { 0 }, a = { 0 }, b = { 0 }, again = { 0 };
    g_autoptr(JsonParser) pa = json_parser_new();
    g_autoptr(JsonParser) pb = json_parser_new();
    JsonObject *oa, *ob;
    g_autofree char *da = NULL, *db = NULL;
    g_autofree char *link = NULL;
    g_autofree char *target = NULL;

    run(&snap, "snapshot", "--sysfs-root", root, dest, NULL);
    g_assert_cmpint(snap.status, ==, 0);
    /* Links come out as real relative links. */
    link = g_build_filename(dest, "sys/bus/pci/devices/0000:00:06.0", NULL);
    target = g_file_read_link(link, NULL);
    g_assert_cmpstr(target, ==, "../../../devices/pci0000:00/0000:00:06.0");

    run(&a, "topo", "--sysfs-root", root, "--json", NULL);
    run(&b, "topo", "--sysfs-root", dest, "--json", NULL);
    g_assert_cmpint(a.status, ==, 0);
    g_assert_cmpint(b.status, ==, 0);
    oa = parse_object(pa, a.out);
    ob = parse_object(pb, b.out);
    json_object_remove_member(oa, "root");
    json_object_remove_member(ob, "root");
    da = json_to_string(json_parser_get_root(pa), TRUE);
    db = json_to_string(json_parser_get_root(pb), TRUE);
    g_assert_cmpstr(da, ==, db);

    /* Config space: the walks' bytes only, never a register body. */
    {
        const char *rel = "sys/devices/pci0000:00/0000:00:07.0/config";
        g_autofree char *src = g_build_filename(root, rel, NULL);
        g_autofree char *dst = g_build_filename(dest, rel, NULL);
        g_autofree gchar *sb = NULL, *db2 = NULL;
        gsize sl, dl;

        g_assert_true(g_file_get_contents(src, &sb, &sl, NULL));
        g_assert_true(g_file_get_contents(dst, &db2, &dl, NULL));
        g_assert_cmpuint(sl, ==, 4096);
        g_assert_cmpuint(dl, ==, sl);
        g_assert_cmpmem(sb, 0x40, db2, 0x40);         /* the header */
        g_assert_cmpuint((uint8_t)sb[0x108], ==, 0xe0);
        g_assert_cmpuint((uint8_t)db2[0x108], ==, 0);
    }
    /* Of a device off every GPU and NIC path too, the same bytes: what
     * `topo --all` and `--devices` read of it is the host's. */
    {
        const char *rel = "sys/devices/pci0000:00/0000:00:01.0/config";
        g_autofree char *src = g_build_filename(root, rel, NULL);
        g_autofree char *dst = g_build_filename(dest, rel, NULL);
        g_autofree gchar *sb = NULL, *db2 = NULL;
        gsize sl, dl;
        const char *const views[][2] = {
            { "--all", NULL }, { "--devices", "00:01.0,00:06.0" },
        };
        size_t i;

        g_assert_true(g_file_get_contents(src, &sb, &sl, NULL));
        g_assert_true(g_file_get_contents(dst, &db2, &dl, NULL));
        g_assert_cmpuint(dl, ==, sl);
        g_assert_cmpmem(sb, 0x40, db2, 0x40);         /* the header */
        for (i = 0; i < G_N_ELEMENTS(views); i++) {
            g_auto(Run) va = { 0 }, vb = { 0 };

            /* --all's NULL ends the arguments there. */
            run(&va, "topo", "--sysfs-root", root, "--json", views[i][0],
                views[i][1], NULL);
            run(&vb, "topo", "--sysfs-root", dest, "--json", views[i][0],
                views[i][1], NULL);
            g_assert_cmpint(va.status, ==, 0);
            g_assert_cmpint(vb.status, ==, 0);
            g_assert_nonnull(strstr(vb.out, "\"config_unreadable\" : 0"));
            g_assert_cmpstr(strstr(vb.out, "\"cpu\""), ==,
                            strstr(va.out, "\"cpu\""));
        }
    }

    /* A second snapshot into the same place is refused, the first kept. */
    run(&again, "snapshot", "--sysfs-root", root, dest, NULL);
    g_assert_cmpint(again.status, ==, 1);
    g_assert_nonnull(strstr(again.err, "already exists"));
    g_assert_true(g_file_test(link, G_FILE_TEST_IS_SYMLINK));
    sb_remove_tree(tmp);
}

static void test_snapshot_failure_leaves_nothing(void)
{
    g_autofree char *tmp = g_dir_make_tmp("gpup2p-snap-XXXXXX", NULL);
    g_autofree char *dest = g_build_filename(tmp, "capture", NULL);
    g_autoptr(GDir) dir = NULL;
    g_auto(Run) r = { 0 };

    run(&r, "snapshot", "--sysfs-root", "/nonexistent", dest, NULL);
    g_assert_cmpint(r.status, ==, 1);
    dir = g_dir_open(tmp, 0, NULL);
    g_assert_null(g_dir_read_name(dir));        /* no partial directory */
    g_rmdir(tmp);
}

/* The snapshot of @sb's host in @tmp/capture, taken under umask 027 as
 * the host service takes it (data/gpup2p-host-snapshot.in). */
static char *snapshot_of(SysfsBuilder *sb, const char *tmp)
{
    g_autofree char *dest = g_build_filename(tmp, "capture", NULL);
    g_auto(Run) snap = { 0 };
    mode_t old = umask(027);

    run(&snap, "snapshot", "--sysfs-root", sb_root(sb), dest, NULL);
    umask(old);
    g_assert_cmpstr(snap.err, ==, "");
    g_assert_cmpint(snap.status, ==, 0);
    return g_steal_pointer(&dest);
}

/*
 * The snapshot keeps kernel/iommu_groups (group directories, relative
 * devices links), so that its reader catches an iommu_group link to a
 * group the host did not have, or one that does not list the device: that
 * device alone is marked and named, and the rest is read.
 */
static void test_snapshot_iommu_groups(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autofree char *tmp = g_dir_make_tmp("gpup2p-snap-XXXXXX", NULL);
    g_autofree char *dest = NULL, *member = NULL, *text = NULL;
    g_autofree char *group = NULL;
    g_auto(Run) a = { 0 }, b = { 0 }, gone = { 0 }, unlisted = { 0 };
    const char *rel = "sys/kernel/iommu_groups/11/devices/" SB_GPU_B;

    sb_two_node_host(sb, 0x29c0);
    sb_iommu_groups(sb);
    dest = snapshot_of(sb, tmp);
    member = g_build_filename(dest, rel, NULL);
    text = g_file_read_link(member, NULL);
    g_assert_cmpstr(text, ==, "../../../../devices/pci0000:00/0000:00:01.0/"
                    "0000:01:00.0/0000:02:01.0/" SB_GPU_B);
    /* The modes of the rest of the snapshot: 0750 directories. */
    {
        g_autofree char *dir = g_path_get_dirname(member);
        g_autofree char *vendor = g_build_filename(
            dest, "sys/bus/pci/devices", SB_GPU_B, "vendor", NULL);
        GStatBuf st;

        g_assert_cmpint(g_stat(dir, &st), ==, 0);
        g_assert_cmpint(st.st_mode & 07777, ==, 0750);
        g_assert_cmpint(g_stat(vendor, &st), ==, 0);
        g_assert_cmpint(st.st_mode & 07777, ==, 0640);
    }
    run(&a, "topo", "--sysfs-root", sb_root(sb), "--json", NULL);
    run(&b, "topo", "--sysfs-root", dest, "--json", NULL);
    g_assert_cmpint(b.status, ==, 0);
    g_assert_nonnull(strstr(b.out, "\"iommu_group\" : 11"));
    g_assert_cmpstr(strstr(a.out, "\"devices\""), ==,
                    strstr(b.out, "\"devices\""));

    /* The group listed no longer lists GPU B: B named, not judged. */
    g_assert_cmpint(g_unlink(member), ==, 0);
    run(&unlisted, "topo", "--sysfs-root", dest, NULL);
    g_assert_cmpint(unlisted.status, ==, 0);
    g_assert_nonnull(strstr(unlisted.out, "warning: " SB_GPU_B ": not "
                            "judged: "));
    g_assert_nonnull(strstr(unlisted.out, SB_GPU_B "/iommu_group"));
    g_assert_nonnull(strstr(unlisted.out, "IOMMU group 11, but the group "
                            "does not list " SB_GPU_B));
    /* The group gone: named, with the device. */
    group = g_build_filename(dest, "sys/kernel/iommu_groups/11", NULL);
    sb_remove_tree(group);
    run(&gone, "topo", "--sysfs-root", dest, NULL);
    g_assert_cmpint(gone.status, ==, 0);
    g_assert_nonnull(strstr(gone.out, SB_GPU_B "/iommu_group"));
    g_assert_nonnull(strstr(gone.out, "names IOMMU group 11"));
    g_assert_nonnull(strstr(gone.out, "no such group"));
    sb_remove_tree(tmp);
}

/*
 * A capture the reader refuses is no snapshot: GPU B's numa_node holds a
 * word, which no kernel writes. The snapshot fails naming the file, writes
 * nothing (no temporary directory left), and the previous generation
 * beside it stays as it was.
 */
static void test_snapshot_refused_capture(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autofree char *tmp = g_dir_make_tmp("gpup2p-snap-XXXXXX", NULL);
    g_autofree char *group = NULL, *prev = NULL, *next = NULL;
    g_autofree char *bdir = NULL;
    g_autoptr(GDir) dir = NULL;
    g_auto(Run) before = { 0 }, snap = { 0 }, after = { 0 };
    const char *name;
    guint n = 0;

    sb_two_node_host(sb, 0x29c0);
    sb_iommu_groups(sb);
    prev = snapshot_of(sb, tmp);
    run(&before, "topo", "--sysfs-root", prev, "--json", NULL);
    g_assert_cmpint(before.status, ==, 0);

    bdir = sb_device_dir(sb, SB_GPU_B);
    group = g_build_filename(bdir, "numa_node", NULL);
    g_assert_true(g_file_set_contents(group, "zero\n", -1, NULL));
    next = g_build_filename(tmp, "next", NULL);
    run(&snap, "snapshot", "--sysfs-root", sb_root(sb), next, NULL);
    g_assert_cmpint(snap.status, ==, 1);
    g_assert_cmpstr(snap.out, ==, "");
    g_assert_nonnull(strstr(snap.err, "not one gpup2p can read"));
    g_assert_nonnull(strstr(snap.err, SB_GPU_B "/numa_node"));
    g_assert_nonnull(strstr(snap.err, "'zero'"));
    g_assert_false(g_file_test(next, G_FILE_TEST_EXISTS));
    dir = g_dir_open(tmp, 0, NULL);
    while ((name = g_dir_read_name(dir))) {
        g_assert_cmpstr(name, ==, "capture");     /* no .next.XXXXXX */
        n++;
    }
    g_assert_cmpuint(n, ==, 1);
    run(&after, "topo", "--sysfs-root", prev, "--json", NULL);
    g_assert_cmpint(after.status, ==, 0);
    g_assert_cmpstr(after.out, ==, before.out);
    sb_remove_tree(tmp);
}

/* The item @name of a `check --json` report, or NULL. */
static JsonObject *check_item(JsonParser *p, const char *out,
                              const char *name)
{
    g_autoptr(GError) err = NULL;
    JsonObject *top;
    JsonArray *items;

    g_assert_true(json_parser_load_from_data(p, out, -1, &err));
    top = json_node_get_object(json_parser_get_root(p));
    g_assert_cmpint(json_object_get_int_member(top, "schema_version"), ==,
                    1);
    items = json_object_get_array_member(top, "items");
    return find_by(items, "item", name);
}

static const char *verdict_of(JsonObject *item)
{
    g_assert_nonnull(item);
    return json_object_get_string_member(item, "verdict");
}

static char *write_tmp(const char *dir, const char *name, const char *text,
                       int mode)
{
    char *path = g_build_filename(dir, name, NULL);

    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    g_assert_cmpint(g_chmod(path, mode), ==, 0);
    return path;
}

/*
 * The H200 capture: no IOMMU group is not "viable", a missing cpuinfo
 * asks for a full capture (not root), and the live QEMU is not run.
 */
static void test_check_capture(void)
{
    g_autofree char *root = fixture("h200x2-vm");
    g_autofree char *tmp = g_dir_make_tmp("gpup2p-check-XXXXXX", NULL);
    g_autofree char *marker = g_build_filename(tmp, "ran", NULL);
    g_autofree char *script = g_strdup_printf("#!/bin/sh\ntouch %s\n",
                                              marker);
    g_autofree char *qemu = write_tmp(tmp, "qemu-system-x86_64", script,
                                      0755);
    g_autofree char *old_path = g_strdup(g_getenv("PATH"));
    g_autofree char *path = g_strdup_printf("%s:%s", tmp, old_path);
    g_auto(Run) r = { 0 }, t = { 0 };
    g_autoptr(JsonParser) p = json_parser_new();
    JsonObject *o;

    g_setenv("PATH", path, TRUE);
    run(&r, "check", "--sysfs-root", root, "--json", NULL);
    run(&t, "check", "--sysfs-root", root, NULL);
    g_setenv("PATH", old_path, TRUE);
    g_assert_cmpint(r.status, ==, 5);
    g_assert_cmpint(t.status, ==, 5);
    g_assert_false(g_file_test(marker, G_FILE_TEST_EXISTS));
    g_assert_null(strstr(t.out, "viable"));
    g_assert_null(strstr(t.out, "run as root"));
    g_assert_nonnull(strstr(t.out, "untested"));
    o = check_item(p, r.out, "0000:00:06.0 IOMMU group");
    g_assert_cmpstr(verdict_of(o), ==, "fail");
    g_assert_nonnull(strstr(json_object_get_string_member(o, "detail"),
                            "no IOMMU group"));
    o = check_item(p, r.out, "P2P 00:06.0-00:07.0");
    g_assert_cmpstr(verdict_of(o), ==, "untested");
    g_assert_nonnull(strstr(json_object_get_string_member(o, "fix"),
                            "lacks proc/cpuinfo"));
    g_assert_cmpstr(verdict_of(check_item(p, r.out, "QEMU extension")), ==,
                    "untested");
    g_assert_cmpstr(verdict_of(check_item(p, r.out, "kernel helper")), ==,
                    "untested");
    sb_remove_tree(tmp);
}

/* A host the builder makes ready, but for what each test changes. */
static void ready_host(SysfsBuilder *sb, uint16_t hb_device)
{
    sb_two_node_host(sb, hb_device);
    sb_write(sb, "proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\n"
             "cpu family\t: 6\naddress sizes\t: 46 bits physical, 57 bits "
             "virtual\n\n");
    sb_write(sb, "proc/interrupts", "           CPU0\n 24:  0  IR-PCI-MSI "
             "1-edge  vfio-msi[0]\n");
    sb_write(sb, "sys/module/gpup2p/refcnt", "0\n");
    /* VFIO's own type1 on Linux 7.3, a 48-bit Intel IOMMU: every GPU's
     * BARs are mapped for its peers (the BAR gate can tell). */
    sb_gate_host(sb, "7.3.4+bpo-amd64", "CONFIG_VFIO=m\n"
                 "CONFIG_VFIO_CONTAINER=y\nCONFIG_VFIO_IOMMU_TYPE1=m\n"
                 "CONFIG_VFIO_PCI_DMABUF=y\n", true, "d2008c406f0462");
}

static void test_check_advice(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(SysfsBuilder) acs = sb_new();
    g_autoptr(SysfsBuilder) user = sb_new();
    g_auto(Run) r = { 0 }, a = { 0 }, u = { 0 };
    g_autoptr(JsonParser) p = json_parser_new();
    JsonObject *o;
    const char *fix;

    /* GPU C and D: root ports of host bridges not on Linux's list. */
    ready_host(sb, 0x29c0);
    run(&r, "check", "--sysfs-root", sb_root(sb), "--qemu", qemu_standin(),
        "--devices", SB_GPU_C "," SB_GPU_D "," SB_GPU_A "," SB_GPU_B,
        "--json", NULL);
    o = check_item(p, r.out, "P2P 05:00.0-81:00.0");
    g_assert_cmpstr(verdict_of(o), ==, "warn");
    fix = json_object_get_string_member(o, "fix");
    g_assert_nonnull(strstr(fix, "root complex is not known to forward"));
    g_assert_null(strstr(fix, "disable_acs_redir"));
    /* GPU A and B under a switch whose ports do not redirect: the guest's
     * request never reaches the IOMMU. The fix turns ACS on, never off. */
    o = check_item(p, r.out, "P2P 03:00.0-04:00.0");
    g_assert_cmpstr(verdict_of(o), ==, "warn");
    g_assert_nonnull(strstr(json_object_get_string_member(o, "detail"),
                            "bypasses the IOMMU"));
    fix = json_object_get_string_member(o, "fix");
    g_assert_nonnull(strstr(fix, "turn ACS (SV RR CR UF) on"));
    g_assert_null(strstr(fix, "boot with pci=disable_acs_redir"));

    /* GPU A and B under one switch whose ports redirect: through the
     * IOMMU, but Q35's host bridge does not forward: the root complex. */
    ready_host(acs, 0x29c0);
    sb_set_acs(acs, "0000:02:00.0", 0x1f, 0x1d);
    sb_set_acs(acs, "0000:02:01.0", 0x1f, 0x1d);
    run(&a, "check", "--sysfs-root", sb_root(acs), "--qemu", qemu_standin(),
        "--devices", SB_GPU_A "," SB_GPU_B, "--json", NULL);
    o = check_item(p, a.out, "P2P 03:00.0-04:00.0");
    g_assert_cmpstr(verdict_of(o), ==, "warn");
    fix = json_object_get_string_member(o, "fix");
    g_assert_nonnull(strstr(fix, "root complex is not known to forward"));
    g_assert_null(strstr(fix, "disable_acs_redir"));

    /* A config space cut short (non-root capture): capture as root. */
    ready_host(user, 0x2020);
    sb_truncate_config(user, "0000:02:00.0", 64);
    run(&u, "check", "--sysfs-root", sb_root(user), "--qemu", qemu_standin(),
        "--devices", SB_GPU_A "," SB_GPU_B, "--json", NULL);
    o = check_item(p, u.out, "P2P 03:00.0-04:00.0");
    g_assert_cmpstr(verdict_of(o), ==, "untested");
    g_assert_nonnull(strstr(json_object_get_string_member(o, "fix"),
                            "capture as root"));
    g_assert_cmpint(u.status, ==, 6);
}

/* A switch port that no longer answers: named, and not "run as root". */
static void test_check_unreadable(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(JsonParser) p = json_parser_new();
    g_auto(Run) r = { 0 };
    g_autofree char *dir = NULL, *path = NULL;
    g_autofree gchar *cfg = NULL;
    const char *fix, *detail;
    JsonObject *o;
    gsize len;

    ready_host(sb, 0x2020);
    dir = sb_device_dir(sb, "0000:02:00.0");
    path = g_build_filename(dir, "config", NULL);
    g_assert_true(g_file_get_contents(path, &cfg, &len, NULL));
    memset(cfg, 0xff, len);
    g_assert_true(g_file_set_contents(path, cfg, (gssize)len, NULL));
    run(&r, "check", "--sysfs-root", sb_root(sb), "--qemu", qemu_standin(),
        "--devices", SB_GPU_A "," SB_GPU_B, "--json", NULL);
    o = check_item(p, r.out, "P2P 03:00.0-04:00.0");
    g_assert_cmpstr(verdict_of(o), ==, "untested");
    fix = json_object_get_string_member(o, "fix");
    g_assert_nonnull(strstr(fix, "does not answer config reads"));
    g_assert_null(strstr(fix, "root"));
    detail = json_object_get_string_member(o, "detail");
    g_assert_nonnull(strstr(detail, "0000:02:00.0/config"));
    g_assert_cmpint(r.status, ==, 6);
}

/*
 * A link speed Linux never writes: `topo` and `check` name the file and the
 * value; the device's pairs are untested (exit 6), never judged on it.
 */
static void test_check_garbage_link_speed(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(JsonParser) p = json_parser_new();
    g_auto(Run) r = { 0 }, topo = { 0 };
    g_autofree char *dir = NULL, *path = NULL;
    const char *detail;
    JsonObject *o;

    ready_host(sb, 0x2020);
    dir = sb_device_dir(sb, SB_GPU_B);
    path = g_build_filename(dir, "current_link_speed", NULL);
    g_assert_true(g_file_set_contents(path, "fast\n", -1, NULL));
    run(&topo, "topo", "--sysfs-root", sb_root(sb), NULL);
    g_assert_cmpint(topo.status, ==, 0);
    g_assert_nonnull(strstr(topo.out, "warning: " SB_GPU_B ": not judged: "));
    g_assert_nonnull(strstr(topo.out, "0000:04:00.0/current_link_speed: "
                            "'fast'"));
    run(&r, "check", "--sysfs-root", sb_root(sb), "--qemu", qemu_standin(),
        "--devices", SB_GPU_A "," SB_GPU_B, "--json", NULL);
    o = check_item(p, r.out, "P2P 03:00.0-04:00.0");
    g_assert_cmpstr(verdict_of(o), ==, "untested");
    detail = json_object_get_string_member(o, "detail");
    g_assert_nonnull(strstr(detail, "0000:04:00.0/current_link_speed: "
                            "'fast'"));
    g_assert_nonnull(strstr(json_object_get_string_member(o, "fix"),
                            "capture the host again"));
    g_assert_cmpint(r.status, ==, 6);
}

#ifdef GP_HAVE_LIBVIRT
static const char domain_xml[] =
    "<domain type='kvm' xmlns:qemu='http://libvirt.org/schemas/domain/"
    "qemu/1.0'>\n  <name>g</name>\n  <memory unit='GiB'>%u</memory>\n"
    "  <os firmware='efi'><type arch='x86_64' machine='%s'>hvm</type>"
    "</os>\n  %s\n  <cpu mode='%s'/>\n  <devices>\n"
    "    <emulator>%s</emulator>\n"
    "    <hostdev mode='subsystem' type='pci'><source><address "
    "domain='0x0000' bus='0x03' slot='0x00' function='0x0'/></source>"
    "</hostdev>\n"
    "    <hostdev mode='subsystem' type='pci'><source><address "
    "domain='0x0000' bus='0x04' slot='0x00' function='0x0'/></source>"
    "</hostdev>\n  </devices>\n%s</domain>\n";

static void validate_domain(const char *path)
{
    const char *argv[] = { "virt-xml-validate", path, "domain", NULL };
    g_autoptr(GError) err = NULL;
    g_autofree char *out = NULL, *errout = NULL;
    int status;

    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL,
                               G_SPAWN_SEARCH_PATH, NULL, NULL, &out,
                               &errout, &status, &err));
    g_assert_no_error(err);
    if (!WIFEXITED(status) || WEXITSTATUS(status)) {
        g_printerr("%s%s", out, errout);
    }
    g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* --domain: its <emulator>, hidden KVM, address bits and aperture. */
static void test_check_domain(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autofree char *tmp = g_dir_make_tmp("gpup2p-check-XXXXXX", NULL);
    g_autofree char *qemu = write_tmp(tmp, "qemu-ext",
        "#!/bin/sh\necho 'x-gpu-p2p-clique=<str>'\n", 0755);
    g_autofree char *good_xml = g_strdup_printf(domain_xml, 16, "q35-gpup2p",
                                                "", "host-passthrough", qemu,
                                                "");
    g_autofree char *bad_xml = g_strdup_printf(domain_xml, 16, "q35",
        "<features><kvm><hidden state='on'/></kvm></features>", "host-model",
        qemu, "");
    g_autofree char *good = write_tmp(tmp, "good.xml", good_xml, 0644);
    g_autofree char *bad = write_tmp(tmp, "bad.xml", bad_xml, 0644);
    g_autofree char *junk = write_tmp(tmp, "junk.xml", "<domain", 0644);
    g_auto(Run) r = { 0 }, b = { 0 }, j = { 0 }, full = { 0 };
    g_autoptr(JsonParser) p = json_parser_new();
    JsonObject *o;

    /* libvirt's own schema judges the domains these cases use. */
    validate_domain(good);
    validate_domain(bad);
    ready_host(sb, 0x2020);
    run(&r, "check", "--sysfs-root", sb_root(sb), "--domain", good, "--json",
        NULL);
    if (r.status) {
        g_printerr("%s", r.out);
    }
    g_assert_cmpint(r.status, ==, 0);
    o = check_item(p, r.out, "QEMU extension");
    g_assert_cmpstr(verdict_of(o), ==, "ok");
    g_assert_nonnull(strstr(json_object_get_string_member(o, "detail"),
                            qemu));
    g_assert_cmpstr(verdict_of(check_item(p, r.out, "hidden KVM")), ==,
                    "ok");
    g_assert_cmpstr(verdict_of(check_item(p, r.out, "guest address bits")),
                    ==, "ok");
    o = check_item(p, r.out, "VM clique");
    g_assert_cmpstr(verdict_of(o), ==, "ok");
    g_assert_nonnull(strstr(json_object_get_string_member(o, "detail"),
                            "auto (the default of machine type q35-gpup2p)"));
    /* Two 32 GiB BARs: a 64 GiB hole, above QEMU's 32 GiB default. */
    o = check_item(p, r.out, "pci-hole64");
    g_assert_cmpstr(verdict_of(o), ==, "warn");
    g_assert_nonnull(strstr(json_object_get_string_member(o, "detail"),
                            "need 64 GiB"));

    run(&b, "check", "--sysfs-root", sb_root(sb), "--domain", bad, "--json",
        NULL);
    g_assert_cmpint(b.status, ==, 5);
    g_assert_cmpstr(verdict_of(check_item(p, b.out, "hidden KVM")), ==,
                    "fail");
    /* Plain q35 keeps x-gpu-p2p-clique off: no clique, with the fix. */
    o = check_item(p, b.out, "VM clique");
    g_assert_cmpstr(verdict_of(o), ==, "fail");
    g_assert_nonnull(strstr(json_object_get_string_member(o, "detail"),
                            "defaults to off on this machine type"));
    g_assert_nonnull(strstr(json_object_get_string_member(o, "fix"),
                            "q35-gpup2p"));
    /* host-model: QEMU's 40 bits; the 64 GiB window takes 37, fits. */
    g_assert_cmpstr(verdict_of(check_item(p, b.out, "guest address bits")),
                    ==, "ok");

    /* Bad input is exit 1, not "not ready". */
    run(&j, "check", "--sysfs-root", sb_root(sb), "--domain", junk, NULL);
    g_assert_cmpint(j.status, ==, 1);
    g_assert_nonnull(strstr(j.err, junk));

    /* A host with 36 address bits cannot map 64 GiB under OVMF. */
    sb_write(sb, "proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\n"
             "cpu family\t: 6\naddress sizes\t: 36 bits physical, 48 bits "
             "virtual\n\n");
    run(&full, "check", "--sysfs-root", sb_root(sb), "--domain", good,
        "--json", NULL);
    g_assert_cmpint(full.status, ==, 5);
    g_assert_cmpstr(verdict_of(check_item(p, full.out, "64-bit MMIO")), ==,
                    "fail");
    g_assert_cmpstr(verdict_of(check_item(p, full.out,
                                          "guest address bits")), ==, "fail");
    sb_remove_tree(tmp);
}

/*
 * Will the VM get its clique? The machine type's default, a setting per
 * GPU (here a -global), and what the domain's QEMU offers decide.
 */
static void test_check_domain_clique(void)
{
    static const struct {
        const char *qemu_says, *machine, *extra, *verdict, *detail;
    } cases[] = {
        { "x-gpu-p2p-clique=<str>", "pc-q35-10.0-gpup2p", "", "ok",
          "auto (the default of machine type pc-q35-10.0-gpup2p)" },
        { "x-gpu-p2p-clique=<str>", "q35",
          "<qemu:commandline><qemu:arg value='-global'/><qemu:arg "
          "value='vfio-pci.x-gpu-p2p-clique=auto'/></qemu:commandline>",
          "ok", "auto (x-gpu-p2p-clique, -global)" },
        { "x-gpu-p2p-clique=<str>", "q35",
          "<qemu:commandline><qemu:arg value='-global'/><qemu:arg "
          "value='vfio-pci.x-gpu-p2p-clique=off'/></qemu:commandline>",
          "fail", "x-gpu-p2p-clique is off for it" },
        { "x-nv-gpudirect-clique=<uint32>", "q35-gpup2p", "", "fail",
          "no x-nv-gpudirect-clique id, and this QEMU has no "
          "x-gpu-p2p-clique" },
        { "x-nv-gpudirect-clique=<uint32>", "q35",
          "<qemu:commandline><qemu:arg value='-global'/><qemu:arg "
          "value='vfio-pci.x-nv-gpudirect-clique=2'/></qemu:commandline>",
          "ok", "id 2 (x-nv-gpudirect-clique, -global)" },
        { "x-nv-gpudirect-clique=<uint32>", "q35",
          "<qemu:commandline><qemu:arg value='-global'/><qemu:arg "
          "value='vfio-pci.x-gpu-p2p-clique=auto'/></qemu:commandline>",
          "fail", "which this QEMU lacks: the VM will not start" },
        { "x-nv-gpudirect-clique=<uint32>", "q35",
          "<qemu:commandline><qemu:arg value='-global'/><qemu:arg "
          "value='vfio-pci.x-nv-gpudirect-clique=auto'/></qemu:commandline>",
          "fail", "x-nv-gpudirect-clique takes an id 0-15, not auto" },
    };
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autofree char *tmp = g_dir_make_tmp("gpup2p-clique-XXXXXX", NULL);
    size_t i;

    ready_host(sb, 0x2020);
    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *script = g_strdup_printf("#!/bin/sh\necho '%s'\n",
                                                  cases[i].qemu_says);
        g_autofree char *qemu = write_tmp(tmp, "qemu", script, 0755);
        g_autofree char *xml = g_strdup_printf(domain_xml, 16,
                                               cases[i].machine, "",
                                               "host-passthrough", qemu,
                                               cases[i].extra);
        g_autofree char *path = write_tmp(tmp, "vm.xml", xml, 0644);
        g_autoptr(JsonParser) p = json_parser_new();
        g_auto(Run) r = { 0 };
        JsonObject *o;

        g_test_message("case %zu: %s on %s", i, cases[i].machine,
                       cases[i].qemu_says);
        validate_domain(path);
        run(&r, "check", "--sysfs-root", sb_root(sb), "--domain", path,
            "--json", NULL);
        o = check_item(p, r.out, "VM clique");
        g_assert_nonnull(o);
        g_assert_cmpstr(verdict_of(o), ==, cases[i].verdict);
        g_assert_nonnull(strstr(json_object_get_string_member(o, "detail"),
                                cases[i].detail));
    }
    sb_remove_tree(tmp);
}
#else
/*
 * A build without libvirt (meson -Dlibvirt=disabled) reads no domain: its
 * libvirt command and check's --domain are refused, exit 1, saying why;
 * check without --domain still runs.
 */
static void test_libvirt_not_built(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autofree char *tmp = g_dir_make_tmp("gpup2p-check-XXXXXX", NULL);
    g_autofree char *xml = write_tmp(tmp, "vm.xml", "<domain type='kvm'/>",
                                     0644);
    g_auto(Run) l = { 0 }, d = { 0 }, h = { 0 };

    ready_host(sb, 0x2020);
    run(&l, "libvirt", "--check", xml, NULL);
    g_assert_cmpint(l.status, ==, 1);
    g_assert_nonnull(strstr(l.err, "gpup2p libvirt: gpup2p was built "
                            "without libvirt support (meson "
                            "-Dlibvirt=disabled)"));
    run(&d, "check", "--sysfs-root", sb_root(sb), "--domain", xml, NULL);
    g_assert_cmpint(d.status, ==, 1);
    g_assert_nonnull(strstr(d.err, xml));
    g_assert_nonnull(strstr(d.err, "built without libvirt support"));
    run(&h, "check", "--sysfs-root", sb_root(sb), "--qemu", qemu_standin(),
        "--json", NULL);
    g_assert_cmpint(h.status, !=, 1);
    g_assert_nonnull(strstr(h.out, "\"items\""));
    sb_remove_tree(tmp);
}
#endif

/* Point @bdf's driver link at @driver, or remove it for NULL. */
static void rebind(SysfsBuilder *sb, const char *bdf, const char *driver)
{
    g_autofree char *dir = sb_device_dir(sb, bdf);
    g_autofree char *link = g_build_filename(dir, "driver", NULL);
    g_autofree char *old = g_file_read_link(link, NULL);
    g_autofree char *target = NULL;
    char *slash;

    g_assert_nonnull(old);
    g_assert_cmpint(g_unlink(link), ==, 0);
    if (driver) {
        slash = strrchr(old, '/');
        g_assert_nonnull(slash);
        *slash = '\0';
        target = g_strdup_printf("%s/%s", old, driver);
        g_assert_cmpint(symlink(target, link), ==, 0);
    }
}

static const char managed_xml[] =
    "<domain type='kvm'>\n  <name>g</name>\n  <memory unit='GiB'>16</memory>"
    "\n  <os firmware='efi'><type arch='x86_64' machine='q35-gpup2p'>hvm</type>"
    "</os>\n  <cpu mode='host-passthrough'/>\n  <devices>\n"
    "    <emulator>%s</emulator>\n"
    "    <hostdev mode='subsystem' type='pci' managed='%s'><source><address "
    "domain='0x0000' bus='0x03' slot='0x00' function='0x0'/></source>"
    "</hostdev>\n"
    "    <hostdev mode='subsystem' type='pci' managed='yes'><source><address "
    "domain='0x0000' bus='0x03' slot='0x00' function='0x3'/></source>"
    "</hostdev>\n"
    "    <hostdev mode='subsystem' type='pci' managed='yes'><source><address "
    "domain='0x0000' bus='0x04' slot='0x00' function='0x0'/></source>"
    "</hostdev>\n  </devices>\n</domain>\n";

/*
 * A GPU's driver and its IOMMU group as VFIO and libvirt judge them:
 * unbound and pci-stub members do not block the group (the kernel's
 * driver_managed_dma), a host driver does unless the domain assigns the
 * device with managed='yes', which also lets the GPU itself sit on any
 * driver until libvirt rebinds it.
 */
static void test_check_binding(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(SysfsBuilder) off = sb_new();
    g_autofree char *tmp = g_dir_make_tmp("gpup2p-check-XXXXXX", NULL);
    g_autofree char *qemu = write_tmp(tmp, "qemu-ext",
        "#!/bin/sh\necho 'x-gpu-p2p-clique=<str>'\n", 0755);
    g_autofree char *yes_xml = g_strdup_printf(managed_xml, qemu, "yes");
    g_autofree char *no_xml = g_strdup_printf(managed_xml, qemu, "no");
    g_autofree char *yes = write_tmp(tmp, "managed.xml", yes_xml, 0644);
    g_autofree char *no = write_tmp(tmp, "unmanaged.xml", no_xml, 0644);
    g_auto(Run) h = { 0 }, m = { 0 }, n = { 0 }, i = { 0 };
    g_autoptr(JsonParser) p = json_parser_new();
    const uint32_t audio = 0x040300;
    JsonObject *o;
    const char *text;

#ifdef GP_HAVE_LIBVIRT
    validate_domain(yes);
    validate_domain(no);
#endif
    ready_host(sb, 0x2020);
    /* GPU A's group: functions unbound, on pci-stub, on a host driver. */
    sb_add(sb, "0000:02:00.0", "0000:03:00.1", SB_ENDPOINT, 0x10de, 0x22a3,
           audio, 0, 10, NULL);
    sb_add(sb, "0000:02:00.0", "0000:03:00.2", SB_ENDPOINT, 0x10de, 0x22a3,
           audio, 0, 10, "pci-stub");
    sb_add(sb, "0000:02:00.0", "0000:03:00.3", SB_ENDPOINT, 0x10de, 0x22a3,
           audio, 0, 10, "snd_hda_intel");
    rebind(sb, SB_GPU_A, "nvidia");
    rebind(sb, SB_GPU_B, NULL);

    /* The host alone: both GPUs fail, the fix unbinds the bound one. */
    run(&h, "check", "--sysfs-root", sb_root(sb), "--qemu", qemu,
        "--devices", SB_GPU_A "," SB_GPU_B, "--json", NULL);
    g_assert_cmpint(h.status, ==, 5);
    o = check_item(p, h.out, SB_GPU_A " driver");
    g_assert_cmpstr(verdict_of(o), ==, "fail");
    text = json_object_get_string_member(o, "fix");
    g_assert_nonnull(strstr(text, "modprobe vfio-pci"));
    g_assert_nonnull(strstr(text, "echo " SB_GPU_A " > /sys/bus/pci/devices/"
                            SB_GPU_A "/driver/unbind"));
    o = check_item(p, h.out, SB_GPU_B " driver");
    g_assert_cmpstr(verdict_of(o), ==, "fail");
    g_assert_null(strstr(json_object_get_string_member(o, "fix"), "unbind"));
    o = check_item(p, h.out, SB_GPU_A " IOMMU group");
    g_assert_cmpstr(verdict_of(o), ==, "fail");
    text = json_object_get_string_member(o, "detail");
    g_assert_nonnull(strstr(text, "0000:03:00.3(snd_hda_intel)"));
    g_assert_null(strstr(text, "0000:03:00.1"));
    g_assert_null(strstr(text, "0000:03:00.2"));

#ifdef GP_HAVE_LIBVIRT
    /* managed='yes': libvirt rebinds what the domain assigns. */
    run(&m, "check", "--sysfs-root", sb_root(sb), "--domain", yes, "--json",
        NULL);
    g_assert_cmpint(m.status, ==, 0);
    o = check_item(p, m.out, SB_GPU_A " driver");
    g_assert_cmpstr(verdict_of(o), ==, "warn");
    g_assert_nonnull(strstr(json_object_get_string_member(o, "detail"),
                            "managed='yes'"));
    g_assert_cmpstr(verdict_of(check_item(p, m.out, SB_GPU_B " driver")), ==,
                    "ok");
    /* Nothing blocks the group, but the domain leaves 03:00.1 and
     * 03:00.2 out of it: a split group, warned about as `libvirt` does. */
    o = check_item(p, m.out, SB_GPU_A " IOMMU group");
    g_assert_cmpstr(verdict_of(o), ==, "warn");
    text = json_object_get_string_member(o, "detail");
    g_assert_nonnull(strstr(text, "0000:03:00.1 0000:03:00.2, which this "
                            "domain does not assign"));
    g_assert_null(strstr(text, "0000:03:00.3"));

    /* managed='no' on GPU A: its driver fails; the audio stays managed. */
    run(&n, "check", "--sysfs-root", sb_root(sb), "--domain", no, "--json",
        NULL);
    g_assert_cmpint(n.status, ==, 5);
    g_assert_cmpstr(verdict_of(check_item(p, n.out, SB_GPU_A " driver")), ==,
                    "fail");
    g_assert_cmpstr(verdict_of(check_item(p, n.out, SB_GPU_A " IOMMU group")),
                    ==, "warn");
#else
    /* Without libvirt no domain is read: --domain is refused. */
    run(&m, "check", "--sysfs-root", sb_root(sb), "--domain", yes, NULL);
    g_assert_cmpint(m.status, ==, 1);
    g_assert_nonnull(strstr(m.err, "built without libvirt support"));
    run(&n, "check", "--sysfs-root", sb_root(sb), "--domain", no, NULL);
    g_assert_cmpint(n.status, ==, 1);
#endif

    /* No IOMMU: the fix names options the kernel has (no amd_iommu=on). */
    sb_add(off, NULL, "0000:00:00.0", SB_HOST_BRIDGE, 0x1022, 0x14d8,
           0x060000, 0, -1, NULL);
    sb_add(off, NULL, "0000:00:01.0", SB_ENDPOINT, 0x10de, 0x2335, 0x030200,
           0, -1, NULL);
    run(&i, "check", "--sysfs-root", sb_root(off), "--qemu", qemu, "--json",
        NULL);
    o = check_item(p, i.out, "IOMMU");
    g_assert_cmpstr(verdict_of(o), ==, "fail");
    text = json_object_get_string_member(o, "fix");
    g_assert_null(strstr(text, "amd_iommu=on"));
    g_assert_nonnull(strstr(text, "intel_iommu=on"));
    g_assert_nonnull(strstr(text, "on by default"));
    sb_remove_tree(tmp);
}

/*
 * Output that cannot be written exits 1, as the man page says, whatever
 * the command would have exited with: `check` (5 or 6 here) too.
 */
static void test_write_error(void)
{
    g_autofree char *root = fixture("h200x2-vm");
    const char *commands[] = { "topo", "check", "check --json" };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(commands); i++) {
        g_autofree char *cmd = g_strdup_printf("'%s' %s --sysfs-root '%s' "
                                               "> /dev/full",
                                               g_getenv("GPUP2P"),
                                               commands[i], root);
        const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
        g_autofree char *err_text = NULL;
        int status;

        g_test_message("gpup2p %s > /dev/full", commands[i]);
        g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL,
                                   G_SPAWN_DEFAULT, NULL, NULL, NULL,
                                   &err_text, &status, NULL));
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 1);
        g_assert_nonnull(strstr(err_text, "writing the output failed"));
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cli/topo/json-fixture", test_topo_json_fixture);
    g_test_add_func("/cli/topo/text", test_topo_text);
    g_test_add_func("/cli/topo/unreadable", test_topo_unreadable);
    g_test_add_func("/cli/topo/kernel-verdicts", test_topo_kernel_verdicts);
    g_test_add_func("/cli/check/unreadable", test_check_unreadable);
    g_test_add_func("/cli/check/garbage-link-speed",
                    test_check_garbage_link_speed);
    g_test_add_func("/cli/topo/json-order", test_topo_json_order);
    g_test_add_func("/cli/plan/json", test_plan_json);
    g_test_add_func("/cli/exit-codes", test_exit_codes);
    g_test_add_func("/cli/plan/nothing", test_plan_nothing);
    g_test_add_func("/cli/plan/too-many-cliques", test_too_many_cliques_exit);
    g_test_add_func("/cli/snapshot/round-trip", test_snapshot_round_trip);
    g_test_add_func("/cli/snapshot/failure",
                    test_snapshot_failure_leaves_nothing);
    g_test_add_func("/cli/snapshot/iommu-groups", test_snapshot_iommu_groups);
    g_test_add_func("/cli/snapshot/refused-capture",
                    test_snapshot_refused_capture);
    g_test_add_func("/cli/usage/rules", test_usage_rules);
    g_test_add_func("/cli/check/capture", test_check_capture);
    g_test_add_func("/cli/check/advice", test_check_advice);
#ifdef GP_HAVE_LIBVIRT
    g_test_add_func("/cli/check/domain", test_check_domain);
    g_test_add_func("/cli/check/domain-clique", test_check_domain_clique);
#else
    g_test_add_func("/cli/libvirt/not-built", test_libvirt_not_built);
#endif
    g_test_add_func("/cli/check/binding", test_check_binding);
    g_test_add_func("/cli/write-error", test_write_error);
    return g_test_run();
}
