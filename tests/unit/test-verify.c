/* SPDX-License-Identifier: GPL-2.0-or-later */
/* gpup2p-verify's PCI checks, exit codes, JSON and NCCL topology file. */
#include <dlfcn.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <sys/stat.h>

#include "sysfs-builder.h"

typedef struct {
    int status;
    char *out, *err;
} Run;

static void run_verify(Run *r, const char *root, const char *extra)
{
    g_autofree char *cmd = g_strdup_printf("%s --sysfs-root %s --json %s",
                                           g_getenv("GPUP2P_VERIFY"), root,
                                           extra ? extra : "");
    g_autoptr(GError) err = NULL;
    int ws;

    g_assert_true(g_spawn_command_line_sync(cmd, &r->out, &r->err, &ws,
                                            &err));
    g_assert_no_error(err);
    g_assert_true(WIFEXITED(ws));
    r->status = WEXITSTATUS(ws);
}

static void run_free(Run *r)
{
    g_free(r->out);
    g_free(r->err);
}

static JsonObject *gpu(JsonParser *p, const char *text, const char *bdf)
{
    JsonArray *gpus;
    guint i;

    g_assert_true(json_parser_load_from_data(p, text, -1, NULL));
    gpus = json_object_get_array_member(
        json_node_get_object(json_parser_get_root(p)), "gpus");
    for (i = 0; i < json_array_get_length(gpus); i++) {
        JsonObject *g = json_array_get_object_element(gpus, i);

        if (!g_strcmp0(json_object_get_string_member(g, "bdf"), bdf)) {
            return g;
        }
    }
    return NULL;
}

static void test_h200_fixture(void)
{
    g_autofree char *root = g_test_build_filename(G_TEST_DIST, "..",
                                                  "fixtures", "h200x2-vm",
                                                  NULL);
    g_autoptr(JsonParser) p = json_parser_new();
    Run r = { 0 };
    JsonObject *g;

    /* Two H200s on NVLink, no capability: PCI alone approves nothing and
     * cannot see NVLink, so the run is untested (exit 3), never "good". */
    run_verify(&r, root, NULL);
    g_assert_cmpint(r.status, ==, 3);
    g_assert_nonnull(strstr(r.out, "no GPU carries the P2P capability"));
    g = gpu(p, r.out, "0000:00:07.0");
    g_assert_nonnull(g);
    g_assert_true(json_object_get_null_member(g, "clique"));
    g_assert_true(json_object_get_null_member(g, "capability"));
    run_free(&r);
}

static void test_cliques_and_problems(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(JsonParser) p = json_parser_new();
    g_autoptr(JsonParser) p2 = json_parser_new();
    Run ok = { 0 }, bad = { 0 };
    JsonObject *g, *cap;

    sb_two_node_host(sb, 0x29c0);
    sb_set_p2pcap(sb, SB_GPU_A, 3, 8);
    sb_set_p2pcap(sb, SB_GPU_B, 3, 8);
    run_verify(&ok, sb_root(sb), NULL);
    /* The other GPUs carry no capability: the PCI checks cannot approve
     * them, so the run is untested (it was "all good", issue 30). */
    g_assert_cmpint(ok.status, ==, 3);
    g_assert_nonnull(strstr(ok.out, "GPU 2 (" SB_GPU_C ") has no P2P "
                            "capability"));
    g = gpu(p, ok.out, SB_GPU_A);
    g_assert_cmpint(json_object_get_int_member(g, "clique"), ==, 3);
    cap = json_object_get_object_member(g, "capability");
    g_assert_cmpint(json_object_get_int_member(cap, "offset"), ==, 0xc8);
    g_assert_true(json_object_get_boolean_member(cap, "valid"));
    g = gpu(p, ok.out, SB_GPU_C);
    g_assert_true(json_object_get_null_member(g, "clique"));

    /* A capability with the wrong length: P2P broken, exit 1. */
    sb_set_p2pcap(sb, SB_GPU_C, 3, 12);
    run_verify(&bad, sb_root(sb), NULL);
    g_assert_cmpint(bad.status, ==, 1);
    g = gpu(p2, bad.out, SB_GPU_C);
    cap = json_object_get_object_member(g, "capability");
    g_assert_false(json_object_get_boolean_member(cap, "valid"));
    g_assert_nonnull(strstr(json_object_get_string_member(cap, "problem"),
                            "length is 12"));
    g_assert_true(json_object_get_null_member(g, "clique"));
    run_free(&ok);
    run_free(&bad);
}

/*
 * Fail closed: a run that tested nothing says so in its exit code (3) and
 * its report, whatever the reason.
 */
static void test_fail_closed(void)
{
    g_autoptr(SysfsBuilder) one = sb_new();
    g_autofree char *empty = g_dir_make_tmp("gpup2p-empty-XXXXXX", NULL);
    g_autofree char *sys = g_build_filename(empty, "sys", "bus", "pci",
                                            "devices", NULL);
    Run none = { 0 }, single = { 0 }, thr = { 0 };

    /* No GPU at all: an empty tree. */
    g_assert_cmpint(g_mkdir_with_parents(sys, 0755), ==, 0);
    run_verify(&none, empty, NULL);
    g_assert_cmpint(none.status, ==, 3);
    g_assert_nonnull(strstr(none.out, "no NVIDIA GPU was found"));
    /* One GPU, with a capability: no pair. */
    sb_add(one, NULL, "0000:00:00.0", SB_HOST_BRIDGE, 0x8086, 0x29c0,
           0x060000, 0, -1, NULL);
    sb_add(one, NULL, "0000:00:01.0", SB_ROOT_PORT, 0x8086, 1, 0x060400, 0,
           -1, NULL);
    sb_add(one, "0000:00:01.0", "0000:01:00.0", SB_ENDPOINT, 0x10de, 0x2335,
           0x030200, 0, 1, NULL);
    sb_set_p2pcap(one, "0000:01:00.0", 2, 8);
    run_verify(&single, sb_root(one), NULL);
    g_assert_cmpint(single.status, ==, 3);
    g_assert_nonnull(strstr(single.out, "fewer than 2 GPUs"));
    /* A threshold whose figure was never measured. */
    run_verify(&thr, sb_root(one), "--max-latency 0.000001");
    g_assert_cmpint(thr.status, ==, 3);
    g_assert_nonnull(strstr(thr.out, "--max-latency was given, but no "
                                     "latency was measured"));
    run_free(&none);
    run_free(&single);
    run_free(&thr);
    sb_remove_tree(empty);
}

static void test_unprivileged_view(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    Run r = { 0 };

    sb_two_node_host(sb, 0x29c0);
    sb_truncate_config(sb, SB_GPU_A, 64);
    run_verify(&r, sb_root(sb), NULL);
    /* What it cannot see it says, and the run is "could not test". */
    g_assert_cmpint(r.status, ==, 3);
    g_assert_nonnull(strstr(r.out, "P2P capability not visible"));
    run_free(&r);
}

static void test_nccl_topology(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autofree char *dir = g_dir_make_tmp("gpup2p-nccl-XXXXXX", NULL);
    g_autofree char *file = g_build_filename(dir, "topo.xml", NULL);
    g_autofree char *arg = g_strdup_printf("--nccl-topo %s", file);
    g_autofree char *xml = NULL;
    Run r = { 0 };
    char *bridge, *a, *b, *c, *end;

    sb_two_node_host(sb, 0x29c0);
    sb_set_p2pcap(sb, SB_GPU_A, 0, 8);
    sb_set_p2pcap(sb, SB_GPU_B, 0, 8);
    run_verify(&r, sb_root(sb), arg);
    /* C, D and F carry no capability: the PCI checks leave them untested
     * (3), and the file is written all the same. */
    g_assert_cmpint(r.status, ==, 3);
    g_assert_true(g_file_get_contents(file, &xml, NULL, NULL));
    g_assert_true(g_str_has_prefix(xml, "<system version=\"1\">\n"));
    /* The clique's GPUs and node 0's NIC-less bridge: A and B inside the
     * virtual switch, C (no clique) outside it, D under NUMA node 1. */
    bridge = strstr(xml, "busid=\"ffff:ff:00.0\"");
    a = strstr(xml, SB_GPU_A);
    b = strstr(xml, SB_GPU_B);
    c = strstr(xml, SB_GPU_C);
    g_assert_nonnull(bridge);
    g_assert_nonnull(a);
    g_assert_nonnull(c);
    end = strstr(bridge, "</pci>");
    g_assert_true(a > bridge && a < end && b > bridge && b < end);
    g_assert_true(c < bridge || c > end);
    g_assert_nonnull(strstr(xml, "numaid=\"1\""));
    /* The NIC at its real path (root port 80:02.0), never inside a GPU
     * clique's virtual switch: NCCL must not see it PIX to A and B. */
    g_assert_nonnull(strstr(xml, SB_NIC));
    g_assert_true(strstr(xml, SB_NIC) > strstr(xml, "busid=\"0000:80:02.0\""));
    g_assert_true(strstr(xml, SB_NIC) < bridge || strstr(xml, SB_NIC) > end);
    g_unlink(file);
    g_rmdir(dir);
    run_free(&r);
}

static void test_usage(void)
{
    static const char *const bad[] = {
        "--samples 0", "--samples 17", "--size-mib -1", "--size-mib 99999",
        "--size-mib 0", "--min-bandwidth -1", "--min-bandwidth nan",
        "--max-latency -0.5", "--max-latency inf", "extra",
    };

    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *cmd = g_strdup_printf("%s %s",
                                               g_getenv("GPUP2P_VERIFY"),
                                               bad[i]);
        g_autofree char *err = NULL;
        int ws;

        g_assert_true(g_spawn_command_line_sync(cmd, NULL, &err, &ws, NULL));
        g_assert_cmpint(WEXITSTATUS(ws), ==, 64);
        g_assert_nonnull(strstr(err, "gpup2p-verify:"));
    }
}

/* The JSON's header: schema, versions, sizes; null where unknown. */
static void test_json_header(void)
{
    g_autofree char *root = g_test_build_filename(G_TEST_DIST, "..",
                                                  "fixtures", "h200x2-vm",
                                                  NULL);
    g_autoptr(JsonParser) p = json_parser_new();
    Run r = { 0 };
    JsonObject *o, *g;
    JsonArray *gpus;

    run_verify(&r, root, "--size-mib 64 --samples 5");
    g_assert_true(json_parser_load_from_data(p, r.out, -1, NULL));
    o = json_node_get_object(json_parser_get_root(p));
    g_assert_cmpint(json_object_get_int_member(o, "schema_version"), ==, 2);
    g_assert_cmpstr(json_object_get_string_member(o, "tool"), ==,
                    "gpup2p-verify");
    g_assert_nonnull(json_object_get_string_member(o, "tool_version"));
    g_assert_cmpint(json_object_get_int_member(o, "size_bytes"), ==,
                    64 << 20);
    g_assert_cmpint(json_object_get_int_member(o, "samples"), ==, 5);
    /* No CUDA ran: nothing it would tell is invented, and it says so. */
    g_assert_cmpstr(json_object_get_string_member(o, "cuda"), ==,
                    "not run (--sysfs-root)");
    g_assert_cmpstr(json_object_get_string_member(o, "rdma_status"), ==,
                    "not run (--sysfs-root)");
    g_assert_true(json_object_get_null_member(o, "driver_version"));
    g_assert_true(json_object_get_null_member(o, "cuda_driver_api_version"));
    g_assert_true(json_object_get_null_member(o, "loops"));
    /* The PCI checks alone measure no figure. */
    g_assert_cmpuint(json_array_get_length(
        json_object_get_array_member(o, "figures")), ==, 0);
    gpus = json_object_get_array_member(o, "gpus");
    g_assert_cmpuint(json_array_get_length(gpus), ==, 2);
    g = json_array_get_object_element(gpus, 1);
    g_assert_cmpint(json_object_get_int_member(g, "index"), ==, 1);
    g_assert_true(json_object_get_null_member(g, "cuda_index"));
    g_assert_true(json_object_get_null_member(g, "nvlinks"));
    g_assert_cmpint(json_object_get_int_member(g, "pcie_gen"), ==, 5);
    g_assert_true(json_object_get_null_member(g, "all_to_one_ce_gbps"));
    run_free(&r);
}

/*
 * On a machine without the CUDA driver (CI) the whole tool, not only its
 * PCI part, says "could not test" and never "all good"; RDMA left
 * untested counts too unless --skip-rdma asks for that.
 */
/* The text report without NVML (--sysfs-root): the H200s, joined by
 * NVLinks on their host, show PHB under a heading that says NVLinks were
 * not read and why, not nvidia-smi's NV# legend. */
static void test_text_topology_without_nvml(void)
{
    g_autofree char *root = g_test_build_filename(G_TEST_DIST, "..",
                                                  "fixtures", "h200x2-vm",
                                                  NULL);
    g_autofree char *cmd = g_strdup_printf("%s --sysfs-root %s",
                                           g_getenv("GPUP2P_VERIFY"), root);
    g_autofree char *out = NULL;
    int ws;

    g_assert_true(g_spawn_command_line_sync(cmd, &out, NULL, &ws, NULL));
    g_assert_true(WIFEXITED(ws));
    g_assert_nonnull(strstr(out, "\nTopology (the PCIe path class as "
                            "nvidia-smi topo -m; NVLinks not read: not run "
                            "(--sysfs-root))\n"
                            "         GPU0   GPU1\n"
                            "GPU0        X    PHB\n"
                            "GPU1      PHB      X\n"));
    g_assert_null(strstr(out, "NV# = # NVLinks"));
}

static void test_without_cuda(void)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    const char *const args[] = { "--json", "--json --skip-rdma" };

    if (cuda) {
        dlclose(cuda);
        g_test_skip("libcuda.so.1 loads here: this checks a machine "
                    "without the CUDA driver");
        return;
    }
    for (guint i = 0; i < G_N_ELEMENTS(args); i++) {
        g_autofree char *cmd = g_strdup_printf("%s %s",
                                               g_getenv("GPUP2P_VERIFY"),
                                               args[i]);
        g_autofree char *out = NULL;
        g_autoptr(JsonParser) p = json_parser_new();
        JsonObject *o;
        int ws;

        g_assert_true(g_spawn_command_line_sync(cmd, &out, NULL, &ws, NULL));
        g_assert_cmpint(WEXITSTATUS(ws), ==, 3);
        g_assert_true(json_parser_load_from_data(p, out, -1, NULL));
        o = json_node_get_object(json_parser_get_root(p));
        g_assert_cmpstr(json_object_get_string_member(o, "verdict"), ==,
                        "could not test");
        g_assert_nonnull(strstr(json_object_get_string_member(o, "cuda"),
                                "libcuda.so.1"));
        g_assert_cmpuint(json_array_get_length(
            json_object_get_array_member(o, "pairs")), ==, 0);
        /* RDMA: tried and said why, or skipped as asked. */
        if (i == 0) {
            g_assert_false(json_object_get_null_member(o, "rdma_status") &&
                           json_array_get_length(json_object_get_array_member(
                               o, "rdma")) == 0);
        } else {
            g_assert_cmpstr(json_object_get_string_member(o, "rdma_status"),
                            ==, "not run (--skip-rdma)");
            g_assert_cmpuint(json_array_get_length(
                json_object_get_array_member(o, "rdma")), ==, 0);
        }
    }
}

/* Runs the tool on @root, stdout to @stdout_path (NULL: captured and
 * dropped, as this test's own stdout is TAP), with @extra; the exit
 * code, stderr in *err. */
static int run_to(const char *root, const char *stdout_path,
                  const char *extra, char **err)
{
    g_autofree char *cmd = g_strdup_printf(
        "sh -c 'exec %s --sysfs-root %s %s%s%s'", g_getenv("GPUP2P_VERIFY"),
        root, extra, stdout_path ? " >" : "", stdout_path ? stdout_path : "");
    g_autofree char *out = NULL;
    int ws;

    g_assert_true(g_spawn_command_line_sync(cmd, &out, err, &ws, NULL));
    g_assert_true(WIFEXITED(ws));
    return WEXITSTATUS(ws);
}

/*
 * Every report output that cannot be written is exit 3, named on stderr,
 * and left as it was: standard output (text and JSON) on a full disk,
 * --prometheus and --nccl-topo at a FIFO (it was replaced by a regular
 * file, exit 0: as root, "--prometheus /dev/full" replaced the device)
 * and in a directory that does not exist (--nccl-topo said so only in a
 * note). The run itself passes (two GPUs in one clique, PCI checks).
 */
static void test_report_write_failures(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autofree char *dir = g_dir_make_tmp("gpup2p-out-XXXXXX", NULL);
    g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
    g_autofree char *missing = g_build_filename(dir, "no-such-dir", "out",
                                                NULL);
    g_autofree char *good = g_build_filename(dir, "good", NULL);
    g_autofree char *err = NULL;
    const struct { const char *option, *path, *stdout_path; } cases[] = {
        { "", "", "/dev/full" },
        { "--json", "", "/dev/full" },
        { "--prometheus", fifo, NULL },
        { "--prometheus", missing, NULL },
        { "--nccl-topo", fifo, NULL },
        { "--nccl-topo", missing, NULL },
        { "--json --nccl-topo", fifo, NULL },
    };

    sb_add(sb, NULL, "0000:00:00.0", SB_HOST_BRIDGE, 0x8086, 0x29c0,
           0x060000, 0, -1, NULL);
    for (int i = 0; i < 2; i++) {
        g_autofree char *bdf = g_strdup_printf("0000:00:%02x.0", i + 1);

        sb_add(sb, NULL, bdf, SB_ENDPOINT, 0x10de, 0x2335, 0x030200, 0,
               i + 1, NULL);
        sb_set_p2pcap(sb, bdf, 1, 8);
    }
    g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
    /* The control: every output writable, the run passes. */
    {
        g_autofree char *args = g_strdup_printf("--prometheus %s.prom "
                                                "--nccl-topo %s.xml", good,
                                                good);

        g_assert_cmpint(run_to(sb_root(sb), NULL, args, &err), ==, 0);
        g_clear_pointer(&err, g_free);
    }
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *args = g_strdup_printf("%s %s", cases[i].option,
                                                cases[i].path);
        const char *named = cases[i].stdout_path ? "standard output" :
                            cases[i].path;
        int code = run_to(sb_root(sb), cases[i].stdout_path, args, &err);
        struct stat st;

        if (code != 3 || !strstr(err, named)) {
            g_printerr("%s: exit %d, stderr: %s\n", args, code, err);
        }
        g_assert_cmpint(code, ==, 3);
        g_assert_nonnull(strstr(err, named));
        g_assert_cmpint(lstat(fifo, &st), ==, 0);
        g_assert_true(S_ISFIFO(st.st_mode));
        g_assert_false(g_file_test(missing, G_FILE_TEST_EXISTS));
        g_clear_pointer(&err, g_free);
    }
    sb_remove_tree(dir);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/verify/h200-fixture", test_h200_fixture);
    g_test_add_func("/verify/cliques-and-problems", test_cliques_and_problems);
    g_test_add_func("/verify/unprivileged", test_unprivileged_view);
    g_test_add_func("/verify/fail-closed", test_fail_closed);
    g_test_add_func("/verify/nccl-topology", test_nccl_topology);
    g_test_add_func("/verify/usage", test_usage);
    g_test_add_func("/verify/json-header", test_json_header);
    g_test_add_func("/verify/without-cuda", test_without_cuda);
    g_test_add_func("/verify/text-topology-without-nvml",
                    test_text_topology_without_nvml);
    g_test_add_func("/verify/report-write-failures",
                    test_report_write_failures);
    return g_test_run();
}
