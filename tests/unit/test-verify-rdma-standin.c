/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpup2p-verify's RDMA checks against a STAND-IN libibverbs.so.1
 * (tests/unit/standin-verbs: RDMA WRITE and READ as memcpy between
 * registered regions; no kernel, no NIC, not rdma-core), on a machine
 * without the CUDA driver:
 * - every active port of every device gets an entry, inactive ports none;
 *   host memory moves by RDMA WRITE and by RDMA READ, bytes checked;
 * - GPU memory is "not testable" (no CUDA), the run exits 3, "could not
 *   test": untested is never passed;
 * - a device without an active port is "not testable", named;
 * - a corrupted READ and a failing WRITE are "failed", exit 2;
 * - the dma-buf range is page-aligned with the offset, as perftest's;
 * - with the STAND-IN libcuda.so.1 too (tests/unit/fake-libcuda: device
 *   pointers are host addresses) on a capture (--sysfs-root --with-cuda):
 *   GPU memory of every GPU registered through peer memory where the
 *   capture shows nvidia-peermem and moved by WRITE and READ both ways;
 *   without nvidia-peermem "not testable" (exit 3), the verdict naming
 *   each GPU and its paired NIC; a registration that fails with EFAULT
 *   is "failed" (exit 2);
 * - with a NIC under the same switch as GPU 0 and another on a root port
 *   of its own: each GPU's pair is its nearest NIC (lowest path class,
 *   then lowest BDF), each (NIC, GPU) carries the path class the guest
 *   sees, and each GPU is checked on its paired NIC before the others:
 *   the JSON's order and the stand-in's own count of registrations
 *   (a registration failed by number lands on the GPU checked then).
 */
#include <dlfcn.h>
#include <json-glib/json-glib.h>
#include <stdbool.h>
#include <string.h>

#include "sysfs-builder.h"
#include "verify.h"

typedef struct {
    int status;
    JsonParser *p;
    JsonArray *rdma;
} Run;

/* Run @argv with @env and the stand-in verbs' @fault; parse its JSON. */
static void spawn_json(Run *r, const char *const *argv, GStrv env,
                       const char *fault)
{
    g_autofree char *out = NULL, *err = NULL;
    int ws;

    env = fault ? g_environ_setenv(env, "GPUP2P_STANDIN_VERBS_FAULT", fault,
                                   TRUE) :
                  g_environ_unsetenv(env, "GPUP2P_STANDIN_VERBS_FAULT");
    g_assert_true(g_spawn_sync(NULL, (char **)argv, env, G_SPAWN_DEFAULT,
                               NULL, NULL, &out, &err, &ws, NULL));
    g_strfreev(env);
    g_assert_true(WIFEXITED(ws));
    r->status = WEXITSTATUS(ws);
    r->p = json_parser_new();
    if (!json_parser_load_from_data(r->p, out, -1, NULL)) {
        g_test_message("%s\n%s", out, err);
        g_assert_not_reached();
    }
    r->rdma = json_object_get_array_member(
        json_node_get_object(json_parser_get_root(r->p)), "rdma");
}

static void run(Run *r, const char *devices, const char *fault)
{
    GStrv env = g_get_environ();
    const char *argv[] = { g_getenv("GPUP2P_VERIFY"), "--json", NULL };

    env = g_environ_setenv(env, "LD_LIBRARY_PATH",
                           g_getenv("STANDIN_VERBS_DIR"), TRUE);
    env = g_environ_setenv(env, "GPUP2P_STANDIN_VERBS", devices, TRUE);
    spawn_json(r, argv, env, fault);
    /* libibverbs loaded and listed devices: no reason to give. */
    g_assert_true(json_object_get_null_member(
        json_node_get_object(json_parser_get_root(r->p)), "rdma_status"));
}

static const char *get(Run *r, guint i, const char *key)
{
    JsonObject *d = json_array_get_object_element(r->rdma, i);

    return json_object_get_null_member(d, key) ? NULL :
           json_object_get_string_member(d, key);
}

static gint64 port(Run *r, guint i)
{
    JsonObject *d = json_array_get_object_element(r->rdma, i);

    return json_object_get_null_member(d, "port") ? -1 :
           json_object_get_int_member(d, "port");
}

/* The runs without CUDA need a machine without NVIDIA's driver (meson's
 * LD_LIBRARY_PATH may show this process the stand-in, which exports
 * cuGetProcAddress_v2 alone; the tool's runs get no such path). */
static bool no_cuda(void)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    bool real = cuda && dlsym(cuda, "cuInit");

    if (cuda) {
        dlclose(cuda);
    }
    if (real) {
        g_test_skip("libcuda.so.1 loads here: these runs need a machine "
                    "without the CUDA driver");
        return false;
    }
    return true;
}

static void test_every_active_port(void)
{
    Run r;

    if (!no_cuda()) {
        return;
    }
    run(&r, "standin0:ADA,standin1:A", NULL);
    g_assert_cmpuint(json_array_get_length(r.rdma), ==, 3);
    g_assert_cmpstr(get(&r, 0, "device"), ==, "standin0");
    g_assert_cmpint(port(&r, 0), ==, 1);
    g_assert_cmpint(port(&r, 1), ==, 3);
    g_assert_cmpstr(get(&r, 2, "device"), ==, "standin1");
    for (guint i = 0; i < 3; i++) {
        g_assert_cmpstr(get(&r, i, "host_mr"), ==, "ok");
        g_assert_cmpstr(get(&r, i, "host_rdma_write"), ==, "ok");
        g_assert_cmpstr(get(&r, i, "host_rdma_read"), ==, "ok");
        g_assert_cmpstr(get(&r, i, "gpu_rdma_write"), ==, "not testable");
        g_assert_cmpstr(get(&r, i, "gpu_rdma_read"), ==, "not testable");
        g_assert_nonnull(strstr(get(&r, i, "reason"), "CUDA"));
    }
    /* Host memory alone is no GPUDirect RDMA: untested, not good. */
    g_assert_cmpint(r.status, ==, 3);
    g_object_unref(r.p);
}

static void test_no_active_port(void)
{
    Run r;

    if (!no_cuda()) {
        return;
    }
    run(&r, "standin0:DD", NULL);
    g_assert_cmpuint(json_array_get_length(r.rdma), ==, 1);
    g_assert_cmpint(port(&r, 0), ==, -1);
    g_assert_cmpstr(get(&r, 0, "host_rdma_write"), ==, "not testable");
    g_assert_cmpstr(get(&r, 0, "reason"), ==, "no active port");
    g_assert_cmpint(r.status, ==, 3);
    g_object_unref(r.p);
}

static void test_faults_fail(void)
{
    Run r;

    if (!no_cuda()) {
        return;
    }
    run(&r, "standin0:A", "corrupt-read");
    g_assert_cmpstr(get(&r, 0, "host_rdma_write"), ==, "ok");
    g_assert_cmpstr(get(&r, 0, "host_rdma_read"), ==, "failed");
    g_assert_nonnull(strstr(get(&r, 0, "reason"),
                            "first bad byte at offset 32768"));
    g_assert_cmpint(r.status, ==, 2);
    g_object_unref(r.p);

    run(&r, "standin0:A", "fail-write");
    g_assert_cmpstr(get(&r, 0, "host_rdma_write"), ==, "failed");
    g_assert_nonnull(strstr(get(&r, 0, "reason"), "remote access error"));
    g_assert_cmpint(r.status, ==, 2);
    g_object_unref(r.p);
}

/* cuMemGetHandleForAddressRange wants whole pages; the MR starts at the
 * offset of the memory into the first page. */
static void test_dmabuf_range(void)
{
    guint64 start, size, offset;

    verify_page_range(0x7f0000200000, 65536, 4096, &start, &size, &offset);
    g_assert_cmphex(start, ==, 0x7f0000200000);
    g_assert_cmpuint(offset, ==, 0);
    g_assert_cmpuint(size, ==, 65536);
    verify_page_range(0x7f0000200100, 65536, 4096, &start, &size, &offset);
    g_assert_cmphex(start, ==, 0x7f0000200000);
    g_assert_cmpuint(offset, ==, 0x100);
    g_assert_cmpuint(size, ==, 65536 + 4096);
    /* 64 KiB pages (arm64): 64 KiB at an offset spans two. */
    verify_page_range(0x10010, 65536, 65536, &start, &size, &offset);
    g_assert_cmphex(start, ==, 0x10000);
    g_assert_cmpuint(offset, ==, 0x10);
    g_assert_cmpuint(size, ==, 131072);
}

/* Two GPUs of clique 0 and an InfiniBand NIC under their own root ports;
 * the NIC carries the verbs device "standin0". */
static SysfsBuilder *gpus_and_nic(bool peermem)
{
    SysfsBuilder *sb = sb_new();
    static const char *const ports[] = {
        "0000:00:01.0", "0000:00:02.0", "0000:00:03.0",
    };

    sb_add(sb, NULL, "0000:00:00.0", SB_HOST_BRIDGE, 0x8086, 0x29c0,
           0x060000, 0, -1, NULL);
    for (guint i = 0; i < G_N_ELEMENTS(ports); i++) {
        sb_add(sb, NULL, ports[i], SB_ROOT_PORT, 0x1b36, 0xc, 0x060400, 0,
               (int)i + 1, "pcieport");
    }
    sb_add(sb, ports[0], "0000:01:00.0", SB_ENDPOINT, 0x10de, 0x2335,
           0x030200, 0, 4, "nvidia");
    sb_add(sb, ports[1], "0000:02:00.0", SB_ENDPOINT, 0x10de, 0x2335,
           0x030200, 0, 5, "nvidia");
    sb_add(sb, ports[2], "0000:03:00.0", SB_ENDPOINT, 0x15b3, 0x101d,
           0x020700, 0, 6, "mlx5_core");
    sb_add_rdma_device(sb, "standin0", "0000:03:00.0");
    sb_set_p2pcap(sb, "0000:01:00.0", 0, 8);
    sb_set_p2pcap(sb, "0000:02:00.0", 0, 8);
    if (peermem) {
        sb_write(sb, "sys/module/nvidia_peermem/version", "1.0\n");
    }
    sb_cpu(sb, "GenuineIntel", 6);
    return sb;
}

static void run_gpus(Run *r, const char *root, const char *fault)
{
    g_autofree char *path = g_strdup_printf("%s:%s",
                                            g_getenv("STANDIN_VERBS_DIR"),
                                            g_getenv("FAKE_LIBCUDA_DIR"));
    GStrv env = g_get_environ();
    const char *argv[] = { g_getenv("GPUP2P_VERIFY_CUDA"), "--sysfs-root",
                           root, "--with-cuda", "--quick", "--json", NULL };

    env = g_environ_setenv(env, "LD_LIBRARY_PATH", path, TRUE);
    env = g_environ_setenv(env, "GPUP2P_STANDIN_VERBS", "standin0:A", TRUE);
    env = g_environ_setenv(env, "GPUP2P_FAKE_CUDA_BUS_IDS",
                           "0000:01:00.0,0000:02:00.0", TRUE);
    env = g_environ_unsetenv(env, "GPUP2P_FAKE_CUDA_FAULT");
    env = g_environ_unsetenv(env, "CUDA_VISIBLE_DEVICES");
    spawn_json(r, argv, env, fault);
    g_assert_cmpuint(json_array_get_length(r->rdma), ==, 1);
}

static void test_gpu_memory_both_ways(void)
{
    g_autoptr(SysfsBuilder) sb = gpus_and_nic(true);
    JsonObject *d;
    Run r;

    run_gpus(&r, sb_root(sb), NULL);
    d = json_array_get_object_element(r.rdma, 0);
    g_assert_cmpstr(get(&r, 0, "bdf"), ==, "0000:03:00.0");
    /* The stand-in CUDA exports no dma-buf: perftest's next path. */
    g_assert_cmpstr(get(&r, 0, "gpu_dmabuf"), ==, "not testable");
    g_assert_cmpstr(get(&r, 0, "gpu_peermem"), ==, "ok");
    g_assert_cmpstr(get(&r, 0, "gpu_rdma_write"), ==, "ok");
    g_assert_cmpstr(get(&r, 0, "gpu_rdma_read"), ==, "ok");
    g_assert_cmpint(json_object_get_int_member(d, "gpus_both_ways"), ==, 2);
    g_assert_cmpint(r.status, !=, 2);
    g_assert_cmpint(r.status, !=, 3);
    g_object_unref(r.p);
}

/* Does a note of the run's JSON contain @text? */
static bool has_note(Run *r, const char *text)
{
    JsonArray *notes = json_object_get_array_member(
        json_node_get_object(json_parser_get_root(r->p)), "notes");

    for (guint i = 0; i < json_array_get_length(notes); i++) {
        if (strstr(json_array_get_string_element(notes, i), text)) {
            return true;
        }
    }
    return false;
}

static void test_gpu_memory_untested_or_failed(void)
{
    g_autoptr(SysfsBuilder) none = gpus_and_nic(false);
    g_autoptr(SysfsBuilder) sb = gpus_and_nic(true);
    Run r;

    /* No dma-buf, no nvidia-peermem: nothing to register GPU memory
     * with; never passed. */
    run_gpus(&r, sb_root(none), NULL);
    g_assert_cmpstr(get(&r, 0, "host_rdma_read"), ==, "ok");
    g_assert_cmpstr(get(&r, 0, "gpu_peermem"), ==, "not testable");
    g_assert_cmpstr(get(&r, 0, "gpu_rdma_write"), ==, "not testable");
    g_assert_cmpint(r.status, ==, 3);
    /* The verdict names each GPU whose pair did not move its memory
     * (one NIC on a root port of its own: both GPUs' pair, PHB). */
    for (guint i = 0; i < 2; i++) {
        g_autofree char *what = g_strdup_printf(
            "untested: GPU %u (0000:0%u:00.0) and its paired NIC standin0 "
            "(0000:03:00.0, port 1, path PHB): GPUDirect RDMA not done both "
            "ways", i, i + 1);

        g_assert_true(has_note(&r, what));
    }
    g_object_unref(r.p);
    /* nvidia-peermem loaded, and the GPU registration (the third
     * ibv_reg_mr, after the two host buffers) fails with EFAULT. */
    run_gpus(&r, sb_root(sb), "fail-reg:3");
    g_assert_cmpstr(get(&r, 0, "gpu_peermem"), ==, "failed");
    g_assert_nonnull(strstr(get(&r, 0, "reason"), "Bad address"));
    g_assert_cmpint(r.status, ==, 2);
    g_object_unref(r.p);
}

/*
 * A NIC beside GPU 0 in one switch, another NIC elsewhere:
 *   00:01.0 root port > 01:00.0 NIC "standin0" (the lowest BDF)
 *   00:02.0 root port > 02:00.0 switch up > 03:00.0 down > 04:00.0 GPU 0
 *                                         > 03:01.0 down > 05:00.0 NIC
 *                                                          "standin1"
 *   00:03.0 root port > 06:00.0 GPU 1
 * GPU 0: standin1 is PIX, standin0 PHB: its pair is standin1, though
 * standin0 has the lower BDF and comes first in the verbs list. GPU 1:
 * both PHB, the tie goes to the lower BDF: standin0.
 */
#define PAIR_NIC_ELSEWHERE "0000:01:00.0"
#define PAIR_GPU0 "0000:04:00.0"
#define PAIR_NIC_BESIDE "0000:05:00.0"
#define PAIR_GPU1 "0000:06:00.0"

static SysfsBuilder *nic_beside_gpu0(void)
{
    SysfsBuilder *sb = sb_new();

    sb_add(sb, NULL, "0000:00:00.0", SB_HOST_BRIDGE, 0x8086, 0x29c0,
           0x060000, 0, -1, NULL);
    sb_add(sb, NULL, "0000:00:01.0", SB_ROOT_PORT, 0x1b36, 0xc, 0x060400, 0,
           1, "pcieport");
    sb_add(sb, NULL, "0000:00:02.0", SB_ROOT_PORT, 0x1b36, 0xc, 0x060400, 0,
           2, "pcieport");
    sb_add(sb, NULL, "0000:00:03.0", SB_ROOT_PORT, 0x1b36, 0xc, 0x060400, 0,
           3, "pcieport");
    sb_add(sb, "0000:00:01.0", PAIR_NIC_ELSEWHERE, SB_ENDPOINT, 0x15b3,
           0x101d, 0x020700, 0, 4, "mlx5_core");
    sb_add(sb, "0000:00:02.0", "0000:02:00.0", SB_SWITCH_UP, 0x10b5, 0x8747,
           0x060400, 0, 5, "pcieport");
    sb_add(sb, "0000:02:00.0", "0000:03:00.0", SB_SWITCH_DOWN, 0x10b5,
           0x8747, 0x060400, 0, 6, "pcieport");
    sb_add(sb, "0000:02:00.0", "0000:03:01.0", SB_SWITCH_DOWN, 0x10b5,
           0x8747, 0x060400, 0, 7, "pcieport");
    sb_add(sb, "0000:03:00.0", PAIR_GPU0, SB_ENDPOINT, 0x10de, 0x2335,
           0x030200, 0, 8, "nvidia");
    sb_add(sb, "0000:03:01.0", PAIR_NIC_BESIDE, SB_ENDPOINT, 0x15b3, 0x101d,
           0x020700, 0, 9, "mlx5_core");
    sb_add(sb, "0000:00:03.0", PAIR_GPU1, SB_ENDPOINT, 0x10de, 0x2335,
           0x030200, 0, 10, "nvidia");
    sb_add_rdma_device(sb, "standin0", PAIR_NIC_ELSEWHERE);
    sb_add_rdma_device(sb, "standin1", PAIR_NIC_BESIDE);
    sb_set_p2pcap(sb, PAIR_GPU0, 0, 8);
    sb_set_p2pcap(sb, PAIR_GPU1, 0, 8);
    sb_write(sb, "sys/module/nvidia_peermem/version", "1.0\n");
    sb_cpu(sb, "GenuineIntel", 6);
    return sb;
}

/* The tool on @root with both stand-in devices, one port each. */
static void run_pairs(Run *r, const char *root, const char *fault)
{
    g_autofree char *path = g_strdup_printf("%s:%s",
                                            g_getenv("STANDIN_VERBS_DIR"),
                                            g_getenv("FAKE_LIBCUDA_DIR"));
    GStrv env = g_get_environ();
    const char *argv[] = { g_getenv("GPUP2P_VERIFY_CUDA"), "--sysfs-root",
                           root, "--with-cuda", "--quick", "--json", NULL };

    env = g_environ_setenv(env, "LD_LIBRARY_PATH", path, TRUE);
    env = g_environ_setenv(env, "GPUP2P_STANDIN_VERBS",
                           "standin0:A,standin1:A", TRUE);
    env = g_environ_setenv(env, "GPUP2P_FAKE_CUDA_BUS_IDS",
                           PAIR_GPU0 "," PAIR_GPU1, TRUE);
    env = g_environ_unsetenv(env, "GPUP2P_FAKE_CUDA_FAULT");
    env = g_environ_unsetenv(env, "CUDA_VISIBLE_DEVICES");
    spawn_json(r, argv, env, fault);
    g_assert_cmpuint(json_array_get_length(r->rdma), ==, 2);
}

/* The text report of the same run as run_pairs(). */
static char *run_pairs_text(const char *root)
{
    g_autofree char *path = g_strdup_printf("%s:%s",
                                            g_getenv("STANDIN_VERBS_DIR"),
                                            g_getenv("FAKE_LIBCUDA_DIR"));
    g_auto(GStrv) env = g_get_environ();
    const char *argv[] = { g_getenv("GPUP2P_VERIFY_CUDA"), "--sysfs-root",
                           root, "--with-cuda", "--quick", NULL };
    char *out = NULL;

    env = g_environ_setenv(env, "LD_LIBRARY_PATH", path, TRUE);
    env = g_environ_setenv(env, "GPUP2P_STANDIN_VERBS",
                           "standin0:A,standin1:A", TRUE);
    env = g_environ_setenv(env, "GPUP2P_FAKE_CUDA_BUS_IDS",
                           PAIR_GPU0 "," PAIR_GPU1, TRUE);
    env = g_environ_unsetenv(env, "GPUP2P_STANDIN_VERBS_FAULT");
    env = g_environ_unsetenv(env, "GPUP2P_FAKE_CUDA_FAULT");
    env = g_environ_unsetenv(env, "CUDA_VISIBLE_DEVICES");
    g_assert_true(g_spawn_sync(NULL, (char **)argv, env, G_SPAWN_DEFAULT,
                               NULL, NULL, &out, NULL, NULL, NULL));
    return out;
}

/* rdma[@i].gpus[], the GPUs checked on that port in the order checked. */
static JsonArray *port_gpus(Run *r, guint i)
{
    JsonObject *d = json_array_get_object_element(r->rdma, i);

    g_assert_true(json_object_has_member(d, "gpus"));
    return json_object_get_array_member(d, "gpus");
}

/* The entry of GPU @gpu (a gpus[] index) in rdma[@i].gpus[]. */
static JsonObject *port_gpu(Run *r, guint i, gint64 gpu)
{
    JsonArray *gpus = port_gpus(r, i);

    for (guint k = 0; k < json_array_get_length(gpus); k++) {
        JsonObject *g = json_array_get_object_element(gpus, k);

        if (json_object_get_int_member(g, "gpu") == gpu) {
            return g;
        }
    }
    g_test_message("rdma[%u] has no entry for GPU %" G_GINT64_FORMAT, i,
                   gpu);
    g_assert_not_reached();
    return NULL;
}

static void test_pair_and_path(void)
{
    g_autoptr(SysfsBuilder) sb = nic_beside_gpu0();
    g_autofree char *text = NULL;
    /* rdma[] keeps the verbs list's order: standin0, standin1. */
    static const struct {
        guint port;
        gint64 gpu;
        const char *bdf;
        bool pair;
        const char *path;
    } want[] = {
        { 0, 0, PAIR_GPU0, false, "PHB" },
        { 0, 1, PAIR_GPU1, true, "PHB" },   /* the tie: lower BDF */
        { 1, 0, PAIR_GPU0, true, "PIX" },   /* one switch beats a BDF */
        { 1, 1, PAIR_GPU1, false, "PHB" },
    };
    Run r;

    run_pairs(&r, sb_root(sb), NULL);
    g_assert_cmpstr(get(&r, 0, "bdf"), ==, PAIR_NIC_ELSEWHERE);
    g_assert_cmpstr(get(&r, 1, "bdf"), ==, PAIR_NIC_BESIDE);
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        JsonObject *g = port_gpu(&r, want[i].port, want[i].gpu);

        g_assert_cmpuint(json_array_get_length(port_gpus(&r, want[i].port)),
                         ==, 2);
        g_assert_cmpstr(json_object_get_string_member(g, "bdf"), ==,
                        want[i].bdf);
        g_assert_cmpint(json_object_get_boolean_member(g, "pair"), ==,
                        want[i].pair);
        g_assert_cmpstr(json_object_get_string_member(g, "path"), ==,
                        want[i].path);
        g_assert_cmpstr(json_object_get_string_member(g, "gpu_rdma_write"),
                        ==, "ok");
        g_assert_cmpstr(json_object_get_string_member(g, "gpu_rdma_read"),
                        ==, "ok");
    }
    /* The port's fields as before: every GPU both ways. */
    for (guint i = 0; i < 2; i++) {
        JsonObject *d = json_array_get_object_element(r.rdma, i);

        g_assert_cmpstr(get(&r, i, "gpu_rdma_write"), ==, "ok");
        g_assert_cmpint(json_object_get_int_member(d, "gpus_both_ways"), ==,
                        2);
    }
    g_assert_cmpint(r.status, !=, 2);
    g_assert_cmpint(r.status, !=, 3);
    g_object_unref(r.p);

    /* The text says the same, under each port, in check order. */
    text = run_pairs_text(sb_root(sb));
    g_assert_nonnull(strstr(text, "    #1 GPU 0 (" PAIR_GPU0 ") paired with "
                            "this NIC, path PIX: dma-buf not testable, peer "
                            "memory ok, RDMA write ok, read ok\n"));
    g_assert_nonnull(strstr(text, "    #3 GPU 0 (" PAIR_GPU0 "), path PHB: "));
}

/* Each GPU on its paired NIC first: in the JSON's check order, and in
 * the stand-in's count of registrations. */
static void test_pair_checked_first(void)
{
    g_autoptr(SysfsBuilder) sb = nic_beside_gpu0();
    /* Registrations: two host buffers per port (1-4) while both ports
     * open, then one per GPU check: the pairs (GPU 0 on standin1, GPU 1
     * on standin0), then the rest. */
    static const struct {
        int reg;
        guint port;
        gint64 gpu;
    } order[] = {
        { 5, 1, 0 }, { 6, 0, 1 }, { 7, 0, 0 }, { 8, 1, 1 },
    };
    Run r;

    run_pairs(&r, sb_root(sb), NULL);
    for (guint i = 0; i < G_N_ELEMENTS(order); i++) {
        JsonObject *g = port_gpu(&r, order[i].port, order[i].gpu);

        g_assert_cmpint(json_object_get_int_member(g, "order"), ==, i + 1);
    }
    /* Within a port, gpus[] lists its GPUs in the order checked. */
    g_assert_cmpint(json_object_get_int_member(json_array_get_object_element(
        port_gpus(&r, 0), 0), "gpu"), ==, 1);
    g_assert_cmpint(json_object_get_int_member(json_array_get_object_element(
        port_gpus(&r, 1), 0), "gpu"), ==, 0);
    g_object_unref(r.p);

    for (guint i = 0; i < G_N_ELEMENTS(order); i++) {
        g_autofree char *fault = g_strdup_printf("fail-reg:%d",
                                                 order[i].reg);
        guint other = 1 - order[i].port;

        run_pairs(&r, sb_root(sb), fault);
        g_assert_cmpstr(json_object_get_string_member(
            port_gpu(&r, order[i].port, order[i].gpu), "gpu_peermem"), ==,
            "failed");
        g_assert_cmpstr(json_object_get_string_member(
            port_gpu(&r, order[i].port, 1 - order[i].gpu), "gpu_peermem"),
            ==, "ok");
        g_assert_cmpstr(get(&r, other, "gpu_peermem"), ==, "ok");
        g_assert_cmpstr(get(&r, order[i].port, "gpu_peermem"), ==, "failed");
        g_assert_cmpint(r.status, ==, 2);
        g_object_unref(r.p);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/verify-rdma-standin/every-active-port",
                    test_every_active_port);
    g_test_add_func("/verify-rdma-standin/no-active-port",
                    test_no_active_port);
    g_test_add_func("/verify-rdma-standin/faults-fail", test_faults_fail);
    g_test_add_func("/verify-rdma-standin/dmabuf-range", test_dmabuf_range);
    g_test_add_func("/verify-rdma-standin/gpu-memory-both-ways",
                    test_gpu_memory_both_ways);
    g_test_add_func("/verify-rdma-standin/gpu-memory-untested-or-failed",
                    test_gpu_memory_untested_or_failed);
    g_test_add_func("/verify-rdma-standin/pair-and-path", test_pair_and_path);
    g_test_add_func("/verify-rdma-standin/pair-checked-first",
                    test_pair_checked_first);
    return g_test_run();
}
