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
 *   without nvidia-peermem "not testable" (exit 3); a registration that
 *   fails with EFAULT is "failed" (exit 2).
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
    g_object_unref(r.p);
    /* nvidia-peermem loaded, and the GPU registration (the third
     * ibv_reg_mr, after the two host buffers) fails with EFAULT. */
    run_gpus(&r, sb_root(sb), "fail-reg:3");
    g_assert_cmpstr(get(&r, 0, "gpu_peermem"), ==, "failed");
    g_assert_nonnull(strstr(get(&r, 0, "reason"), "Bad address"));
    g_assert_cmpint(r.status, ==, 2);
    g_object_unref(r.p);
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
    return g_test_run();
}
