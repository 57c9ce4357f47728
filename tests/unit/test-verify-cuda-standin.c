/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpup2p-verify's CUDA logic, run against the STAND-IN libcuda.so.1
 * (tests/unit/fake-libcuda: host memory, the tool's kernels on the CPU,
 * faults injected by GPUP2P_FAKE_CUDA_FAULT). Each case runs the real
 * tool binary with `--sysfs-root CAPTURE --with-cuda`, the stand-in's GPUs
 * at the capture's bus ids, and asserts its exit code and JSON.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/mempolicy.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sysfs-builder.h"

typedef struct {
    int status;
    double seconds;             /* wall time of the tool */
    char *out, *err;
    JsonParser *parser;
    JsonObject *root;
} Res;

static void res_clear(Res *r)
{
    g_free(r->out);
    g_free(r->err);
    g_clear_object(&r->parser);
    memset(r, 0, sizeof(*r));
}

/*
 * Run the tool on @root with the stand-in's GPUs at @bus_ids (a comma
 * list), faults @fault (GPUP2P_FAKE_CUDA_FAULT, or NULL), @no_peer
 * (GPUP2P_FAKE_CUDA_NO_PEER, or NULL), @args (space-separated) and
 * @extra_env ("NAME", "VALUE" pairs, NULL-terminated; or NULL).
 */
static void run_standin_env(Res *r, const char *root, const char *bus_ids,
                            const char *fault, const char *no_peer,
                            const char *args, const char *const *extra_env)
{
    const char *mem_mib;
    g_auto(GStrv) env = g_get_environ();
    g_autofree char *cmd = g_strdup_printf("%s --sysfs-root %s --with-cuda "
                                           "--skip-rdma --json %s",
                                           g_getenv("GPUP2P_VERIFY_CUDA"),
                                           root, args ? args : "");
    g_auto(GStrv) argv = NULL;
    g_autoptr(GError) err = NULL;
    gint64 t0;
    int ws;

    env = g_environ_setenv(env, "LD_LIBRARY_PATH",
                           g_getenv("FAKE_LIBCUDA_DIR"), TRUE);
    env = g_environ_setenv(env, "GPUP2P_FAKE_CUDA_BUS_IDS", bus_ids, TRUE);
    env = g_environ_unsetenv(env, "GPUP2P_FAKE_CUDA_NO_PEER");
    env = g_environ_unsetenv(env, "GPUP2P_FAKE_CUDA_FAULT");
    env = g_environ_unsetenv(env, "CUDA_VISIBLE_DEVICES");
    if (fault) {
        env = g_environ_setenv(env, "GPUP2P_FAKE_CUDA_FAULT", fault, TRUE);
    }
    if (no_peer) {
        env = g_environ_setenv(env, "GPUP2P_FAKE_CUDA_NO_PEER", no_peer,
                               TRUE);
    }
    for (int i = 0; extra_env && extra_env[i]; i += 2) {
        env = g_environ_setenv(env, extra_env[i], extra_env[i + 1], TRUE);
    }
    mem_mib = g_getenv("STANDIN_MEM_MIB");
    if (mem_mib) {
        env = g_environ_setenv(env, "GPUP2P_FAKE_CUDA_MEM_MIB", mem_mib,
                               TRUE);
    }
    g_assert_true(g_shell_parse_argv(cmd, NULL, &argv, &err));
    t0 = g_get_monotonic_time();
    g_assert_true(g_spawn_sync(NULL, argv, env, G_SPAWN_DEFAULT, NULL, NULL,
                               &r->out, &r->err, &ws, &err));
    g_assert_no_error(err);
    r->seconds = (g_get_monotonic_time() - t0) / 1e6;
    if (!WIFEXITED(ws)) {
        g_printerr("%s\n", r->err);
    }
    g_assert_true(WIFEXITED(ws));
    r->status = WEXITSTATUS(ws);
    r->parser = json_parser_new();
    if (!json_parser_load_from_data(r->parser, r->out, -1, NULL)) {
        g_printerr("not JSON:\n%s\n%s\n", r->out, r->err);
        g_assert_not_reached();
    }
    r->root = json_node_get_object(json_parser_get_root(r->parser));
    g_test_message("%s: exit %d, %.2f s; stderr: %s", cmd, r->status,
                   r->seconds, r->err);
}

static void run_standin(Res *r, const char *root, const char *bus_ids,
                        const char *fault, const char *no_peer,
                        const char *args)
{
    run_standin_env(r, root, bus_ids, fault, no_peer, args, NULL);
}

static void expect_exit(const Res *r, int code)
{
    if (r->status != code) {
        g_printerr("%s\n%s\n", r->out, r->err);
    }
    g_assert_cmpint(r->status, ==, code);
    g_assert_cmpint(json_object_get_int_member(r->root, "exit_code"), ==,
                    code);
}

/* The pair a -> b (indices into gpus[]). */
static JsonObject *pair(const Res *r, int a, int b)
{
    JsonArray *pairs = json_object_get_array_member(r->root, "pairs");

    for (guint i = 0; i < json_array_get_length(pairs); i++) {
        JsonObject *p = json_array_get_object_element(pairs, i);

        if (json_object_get_int_member(p, "a") == a &&
            json_object_get_int_member(p, "b") == b) {
            return p;
        }
    }
    g_assert_not_reached();
}

static JsonObject *gpu_of(const Res *r, int i)
{
    return json_array_get_object_element(
        json_object_get_array_member(r->root, "gpus"), i);
}

/* A figure's median, or -1 where it is null (not measured). */
static double median_or_none(JsonObject *o, const char *key)
{
    if (json_object_get_null_member(o, key)) {
        return -1;
    }
    return json_object_get_double_member(
        json_object_get_object_member(o, key), "median");
}

static const char *str_member(JsonObject *o, const char *key)
{
    return json_object_get_null_member(o, key) ? NULL :
           json_object_get_string_member(o, key);
}

static bool any_note(const Res *r, const char *part)
{
    JsonArray *notes = json_object_get_array_member(r->root, "notes");

    for (guint i = 0; i < json_array_get_length(notes); i++) {
        if (strstr(json_array_get_string_element(notes, i), part)) {
            return true;
        }
    }
    return false;
}

/*
 * @n GPUs (10de:2335) on one flat root bus, 0000:00:0{1..n}.0, all in
 * clique 1; their bus ids, comma-separated, in @bus_ids.
 */
static SysfsBuilder *flat_capture(int n, char **bus_ids)
{
    SysfsBuilder *sb = sb_new();
    GString *ids = g_string_new(NULL);

    sb_add(sb, NULL, "0000:00:00.0", SB_HOST_BRIDGE, 0x8086, 0x29c0,
           0x060000, 0, -1, NULL);
    for (int i = 0; i < n; i++) {
        g_autofree char *bdf = g_strdup_printf("0000:00:%02x.0", i + 1);

        sb_add(sb, NULL, bdf, SB_ENDPOINT, 0x10de, 0x2335, 0x030200, 0,
               i + 1, NULL);
        sb_set_p2pcap(sb, bdf, 1, 8);
        g_string_append_printf(ids, "%s%s", i ? "," : "", bdf);
    }
    *bus_ids = g_string_free(ids, FALSE);
    return sb;
}

static const char *fixture(void)
{
    static char *path;

    if (!path) {
        path = g_test_build_filename(G_TEST_DIST, "..", "fixtures",
                                     "h200x2-vm", NULL);
    }
    return path;
}

#define H200_BUS_IDS "0000:00:06.0,0000:00:07.0"

/* Two healthy stand-in GPUs at the H200 capture's bus ids: all good. */
static void test_healthy_h200(void)
{
    Res r = { 0 };
    JsonObject *p, *fig;

    run_standin(&r, fixture(), H200_BUS_IDS, NULL, NULL, "--size-mib 2");
    expect_exit(&r, 0);
    g_assert_cmpstr(json_object_get_string_member(r.root, "verdict"), ==,
                    "all good");
    g_assert_cmpstr(str_member(r.root, "cuda"), ==, "ok");
    g_assert_cmpint(json_array_get_length(
        json_object_get_array_member(r.root, "pairs")), ==, 2);
    for (int a = 0; a < 2; a++) {
        p = pair(&r, a, 1 - a);
        g_assert_true(json_object_get_boolean_member(p, "verified"));
        g_assert_cmpstr(str_member(p, "verified_ce"), ==, "ok");
        g_assert_cmpstr(str_member(p, "verified_sm_write"), ==, "ok");
        g_assert_cmpstr(str_member(p, "verified_sm_read"), ==, "ok");
        g_assert_null(str_member(p, "problem"));
        /* No NVML here: an NVLink pair is not to be called PCIe (the
         * H200s are joined by NVLinks on their host). */
        g_assert_cmpstr(str_member(p, "link"), ==, "unknown (no NVML)");
        g_assert_true(json_object_get_null_member(p, "link_limit_gbps"));
        fig = json_object_get_object_member(p, "unidirectional_ce_gbps");
        g_assert_nonnull(fig);
        g_assert_cmpfloat(json_object_get_double_member(fig, "median"), >,
                          0);
        g_assert_nonnull(json_object_get_object_member(p,
                                                       "host_staged_gbps"));
        g_assert_nonnull(json_object_get_object_member(p, "latency_ce_us"));
        /* Aggregates on any n >= 2. */
        g_assert_nonnull(json_object_get_object_member(
            json_array_get_object_element(
                json_object_get_array_member(r.root, "gpus"), a),
            "all_to_one_ce_gbps"));
    }
    /* The default is the validation run: 4 timed copies a sample. */
    g_assert_cmpint(json_object_get_int_member(r.root, "loops"), ==, 4);
    g_assert_cmpstr(str_member(r.root, "mode"), ==, "validation");
    res_clear(&r);
}

/* --benchmark: nvbandwidth's 16 copies a sample, and says so. */
static void test_benchmark_mode(void)
{
    Res r = { 0 };

    run_standin(&r, fixture(), H200_BUS_IDS, NULL, NULL,
                "--benchmark --size-mib 2 --samples 1");
    expect_exit(&r, 0);
    g_assert_cmpint(json_object_get_int_member(r.root, "loops"), ==, 16);
    g_assert_cmpstr(str_member(r.root, "mode"), ==, "benchmark");
    g_assert_nonnull(json_object_get_object_member(pair(&r, 0, 1),
                                                   "unidirectional_ce_gbps"));
    res_clear(&r);
    /* The last copy of a bracket is checked: data checks are copies 1
     * to 3, the figure's warm-ups 4 to 7, its timed copies 8 to 23. */
    run_standin(&r, fixture(), H200_BUS_IDS, "corrupt-byte:0-1:100:23", NULL,
                "--benchmark --size-mib 1 --samples 1 --figures "
                "device_to_device_memcpy_write_ce");
    expect_exit(&r, 1);
    g_assert_nonnull(strstr(str_member(pair(&r, 0, 1), "problem"),
                            "unidirectional_ce_gbps 0->1: first bad byte at "
                            "offset 100"));
    res_clear(&r);
}

/*
 * A copy reported done that moved nothing, between good copies, in the
 * validation run: data checks are copies 1 to 3, the figure's warm-up
 * copy 4, its timed copies 5 to 8. The slot is poisoned once a sample,
 * not once a copy, so only the alternating patterns show that copy 6
 * left copy 5's bytes behind; copy 4, a warm-up, is checked as well.
 */
static void test_dropped_copy(void)
{
    static const struct { const char *fault, *problem; } cases[] = {
        { "drop-copy:0-1:6", "(copy 2 of 4)" },
        { "drop-copy:0-1:4", "(warm-up copy 1 of 1)" },
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        Res r = { 0 };
        JsonObject *p;

        run_standin(&r, fixture(), H200_BUS_IDS, cases[i].fault, NULL,
                    "--size-mib 1 --samples 1 --figures "
                    "device_to_device_memcpy_write_ce");
        expect_exit(&r, 1);
        p = pair(&r, 0, 1);
        g_assert_cmpstr(str_member(p, "verified_ce"), ==, "failed");
        g_assert_nonnull(strstr(str_member(p, "problem"),
                                "unidirectional_ce_gbps 0->1: first bad "
                                "byte at offset"));
        g_assert_nonnull(strstr(str_member(p, "problem"), cases[i].problem));
        g_assert_true(json_object_get_null_member(p,
                                                  "unidirectional_ce_gbps"));
        res_clear(&r);
    }
}

/* A corrupt byte on copies out of GPU 0 blames 0 -> 1 only. */
static void test_corrupt_byte(void)
{
    Res r = { 0 };
    JsonObject *bad, *good;

    run_standin(&r, fixture(), H200_BUS_IDS, "corrupt-byte:0:4097", NULL,
                "--quick --size-mib 1");
    expect_exit(&r, 1);
    bad = pair(&r, 0, 1);
    good = pair(&r, 1, 0);
    g_assert_cmpstr(str_member(bad, "verified_ce"), ==, "failed");
    g_assert_nonnull(strstr(str_member(bad, "problem"),
                            "first bad byte at offset 4097"));
    g_assert_cmpstr(str_member(good, "verified_ce"), ==, "ok");
    g_assert_cmpstr(str_member(good, "verified_sm_write"), ==, "ok");
    g_assert_null(str_member(good, "problem"));
    res_clear(&r);
}

/*
 * Copy 6 of those from GPU 0 into 1 comes back bad: the data checks are
 * copies 1 to 3 (CE, SM write, SM read), the figure's warm-up copy 4,
 * its 4 timed ones 5 to 8. The second timed copy is bad, and later ones
 * overwrite it with good bytes: only a check of every copy sees it
 * (issue 21: before, only the last copy was checked, and this passed).
 */
static void test_corrupt_non_last_copy(void)
{
    Res r = { 0 };
    JsonObject *p;

    run_standin(&r, fixture(), H200_BUS_IDS, "corrupt-byte:0-1:100:6", NULL,
                "--size-mib 1 --samples 1 --figures "
                "device_to_device_memcpy_write_ce");
    expect_exit(&r, 1);
    p = pair(&r, 0, 1);
    g_assert_cmpstr(str_member(p, "verified_ce"), ==, "failed");
    g_assert_nonnull(strstr(str_member(p, "problem"),
                            "unidirectional_ce_gbps 0->1: first bad byte at "
                            "offset 100 (copy 2 of 4)"));
    g_assert_true(json_object_get_null_member(p, "unidirectional_ce_gbps"));
    g_assert_cmpstr(str_member(pair(&r, 1, 0), "verified_ce"), ==, "ok");
    res_clear(&r);
}

/*
 * The 100 copy-engine latency copies (copies 4 to 103 from GPU 0 into 1)
 * land 16 bytes apart and are all checked: byte 5 of the 47th (copy 50)
 * is bad, at offset 46 x 16 + 5 of the slot, word 185.
 */
static void test_ce_latency_checked(void)
{
    Res r = { 0 };
    JsonObject *p;

    run_standin(&r, fixture(), H200_BUS_IDS, "corrupt-byte:0-1:5:50", NULL,
                "--size-mib 1 --samples 1 --figures "
                "device_to_device_latency_ce");
    expect_exit(&r, 1);
    p = pair(&r, 0, 1);
    g_assert_cmpstr(str_member(p, "verified_ce"), ==, "failed");
    g_assert_nonnull(strstr(str_member(p, "problem"),
                            "latency_ce_us 0->1: first bad byte at offset "
                            "741"));
    g_assert_true(json_object_get_null_member(p, "latency_ce_us"));
    res_clear(&r);
}

/*
 * 48 MiB is one and a half staging chunks (32 MiB): the host-staged copy
 * moves all of it, and every path checks clean (issue 21, finding 2).
 */
static void test_staged_48mib(void)
{
    Res r = { 0 };

    /* The staged figure alone: the data checks run all the same. */
    run_standin(&r, fixture(), H200_BUS_IDS, NULL, NULL,
                "--size-mib 48 --samples 1 --figures host_staged_memcpy_ce");
    expect_exit(&r, 0);
    for (int a = 0; a < 2; a++) {
        JsonObject *p = pair(&r, a, 1 - a);

        g_assert_cmpstr(str_member(p, "verified_ce"), ==, "ok");
        g_assert_null(str_member(p, "problem"));
        g_assert_nonnull(json_object_get_object_member(p,
                                                       "host_staged_gbps"));
    }
    g_assert_cmpint(json_object_get_int_member(r.root, "size_bytes"), ==,
                    48 << 20);
    res_clear(&r);
}

/* CUDA denies peer access: nothing proven, exit 3; one GPU: no pair. */
static void test_untested(void)
{
    g_autofree char *ids = NULL;
    g_autoptr(SysfsBuilder) one = flat_capture(1, &ids);
    Res r = { 0 };

    run_standin(&r, fixture(), H200_BUS_IDS, NULL, "all",
                "--quick --size-mib 1");
    expect_exit(&r, 3);
    g_assert_cmpstr(str_member(pair(&r, 0, 1), "verified_ce"), ==,
                    "not testable");
    g_assert_false(json_object_get_boolean_member(pair(&r, 0, 1),
                                                  "peer_access"));
    res_clear(&r);

    run_standin(&r, sb_root(one), ids, NULL, NULL, "--quick --size-mib 1");
    expect_exit(&r, 3);
    g_assert_true(any_note(&r, "fewer than 2 GPUs"));
    res_clear(&r);
}

static void expect_only_bad(const Res *r, int n, int bad_a, int bad_b,
                            const char *problem)
{
    for (int a = 0; a < n; a++) {
        for (int b = 0; b < n; b++) {
            JsonObject *p;
            bool bad;

            if (a == b) {
                continue;
            }
            p = pair(r, a, b);
            bad = a == bad_a && (bad_b < 0 || b == bad_b);
            g_assert_cmpstr(str_member(p, "verified_ce"), ==,
                            bad ? "failed" : "ok");
            if (bad) {
                g_assert_nonnull(strstr(str_member(p, "problem"), problem));
            } else {
                g_assert_null(str_member(p, "problem"));
            }
        }
    }
}

/*
 * Four GPUs checked two pairs at a time: copies out of GPU 0 fail. The
 * failed batch is retried pair by pair, so only GPU 0's pairs are blamed
 * (before: the healthy pair of its batch too).
 */
static void test_fail_source_blame(void)
{
    g_autofree char *ids = NULL;
    g_autoptr(SysfsBuilder) sb = flat_capture(4, &ids);
    Res r = { 0 };

    run_standin(&r, sb_root(sb), ids, "fail-source:0", NULL,
                "--quick --size-mib 1");
    expect_exit(&r, 1);
    g_assert_cmpstr(json_object_get_string_member(r.root, "verdict"), ==,
                    "P2P broken");
    expect_only_bad(&r, 4, 0, -1, "invalid argument");
    res_clear(&r);
}

/* A corrupt byte on 1 -> 2 only: that pair alone is failed. */
static void test_corrupt_one_pair(void)
{
    g_autofree char *ids = NULL;
    g_autoptr(SysfsBuilder) sb = flat_capture(4, &ids);
    Res r = { 0 };

    run_standin(&r, sb_root(sb), ids, "corrupt-byte:1-2:100", NULL,
                "--size-mib 1 --samples 1 --concurrent");
    expect_exit(&r, 1);
    expect_only_bad(&r, 4, 1, 2, "first bad byte at offset 100");
    res_clear(&r);
}

/*
 * Copies out of GPU 1 take 4 times as long: bidirectional is nvbandwidth's
 * _total, the sum of the two directions' bandwidths (each over its own
 * time), so it equals the two unidirectional figures added; both bytes
 * over the longer time (the old figure) would be 2 x the slower one.
 */
static void test_bidirectional_total(void)
{
    Res r = { 0 };
    double uni01, uni10, bidir;

    run_standin(&r, fixture(), H200_BUS_IDS, "slow-copy:1:4", NULL,
                "--size-mib 1 --samples 1 --figures "
                "device_to_device_memcpy_write_ce,"
                "device_to_device_bidirectional_memcpy_write_ce");
    expect_exit(&r, 0);
    uni01 = median_or_none(pair(&r, 0, 1), "unidirectional_ce_gbps");
    uni10 = median_or_none(pair(&r, 1, 0), "unidirectional_ce_gbps");
    bidir = median_or_none(pair(&r, 0, 1), "bidirectional_ce_gbps");
    g_assert_cmpfloat(uni01, >, 2 * uni10);
    g_assert_cmpfloat(fabs(bidir - (uni01 + uni10)), <,
                      0.001 * (uni01 + uni10));
    g_assert_cmpfloat(median_or_none(pair(&r, 1, 0),
                                     "bidirectional_ce_gbps"), ==, bidir);
    res_clear(&r);
}

/*
 * On two GPUs all-to-one and one-to-all are one copy-engine write each:
 * the span must hold the 16 timed copies alone, so each equals the pair's
 * unidirectional figure (the stand-in's clock prices a copy the same
 * whoever queues it). A span that also held the 4 warm-up copies gave
 * 16/20 of it, as nvbandwidth's all-to-one on four H100s showed (0.80).
 */
static void test_aggregate_span(void)
{
    Res r = { 0 };
    double uni;

    run_standin(&r, fixture(), H200_BUS_IDS, NULL, NULL,
                "--size-mib 1 --samples 1 --figures "
                "device_to_device_memcpy_write_ce,all_to_one_write_ce,"
                "one_to_all_write_ce");
    expect_exit(&r, 0);
    uni = median_or_none(pair(&r, 0, 1), "unidirectional_ce_gbps");
    g_assert_cmpfloat(uni, >, 0);
    g_assert_cmpfloat(fabs(median_or_none(gpu_of(&r, 1),
                                          "all_to_one_ce_gbps") - uni), <,
                      0.01 * uni);
    g_assert_cmpfloat(fabs(median_or_none(gpu_of(&r, 0),
                                          "one_to_all_ce_gbps") - uni), <,
                      0.01 * uni);
    res_clear(&r);
}

/* A bad byte in an aggregate's third copy (the data checks are copies 1
 * to 3) fails the pair and leaves the aggregate without a figure (it was
 * kept, 226.9 GB/s, beside exit 1). */
static void test_aggregate_bad_bytes(void)
{
    Res r = { 0 };

    run_standin(&r, fixture(), H200_BUS_IDS, "corrupt-byte:0-1:100:6", NULL,
                "--size-mib 1 --samples 1 --figures all_to_one_write_ce");
    expect_exit(&r, 1);
    g_assert_cmpfloat(median_or_none(gpu_of(&r, 1), "all_to_one_ce_gbps"),
                      ==, -1);
    g_assert_cmpfloat(median_or_none(gpu_of(&r, 0), "all_to_one_ce_gbps"),
                      >, 0);
    res_clear(&r);
}

/*
 * Copies queued on GPU 1's streams take 4 times as long. The copy-engine
 * write a -> b is issued by a, the read a -> b by b (nvbandwidth's
 * PREFER_DST_CONTEXT): so 0 -> 1 writes fast and reads slowly, 1 -> 0 the
 * other way round.
 */
static void test_ce_read_issuer(void)
{
    Res r = { 0 };
    JsonObject *p01, *p10;

    run_standin(&r, fixture(), H200_BUS_IDS, "slow-issuer:1:4", NULL,
                "--size-mib 1 --samples 1 --figures "
                "device_to_device_memcpy_write_ce,"
                "device_to_device_memcpy_read_ce");
    expect_exit(&r, 0);
    p01 = pair(&r, 0, 1);
    p10 = pair(&r, 1, 0);
    g_assert_cmpfloat(median_or_none(p01, "unidirectional_ce_gbps"), >,
                      2 * median_or_none(p01, "unidirectional_ce_read_gbps"));
    g_assert_cmpfloat(median_or_none(p10, "unidirectional_ce_read_gbps"), >,
                      2 * median_or_none(p10, "unidirectional_ce_gbps"));
    res_clear(&r);
}

/*
 * Copies 0 -> 1 fail with CUDA error 220 (CUDA_ERROR_NVLINK_UNCORRECTABLE):
 * an NVLink fault of that pair, named, on its link both ways; P2P broken
 * (exit 1), but no GPU is lost and the other direction still verifies.
 */
static void test_nvlink_fault(void)
{
    Res r = { 0 };
    JsonObject *bad, *back;

    run_standin(&r, fixture(), H200_BUS_IDS, "fail-source:0-1:220", NULL,
                "--quick --size-mib 1");
    expect_exit(&r, 1);
    bad = pair(&r, 0, 1);
    back = pair(&r, 1, 0);
    g_assert_true(json_object_get_boolean_member(bad, "nvlink_fault"));
    g_assert_true(json_object_get_boolean_member(back, "nvlink_fault"));
    g_assert_cmpstr(str_member(bad, "verified_ce"), ==, "failed");
    g_assert_true(g_str_has_prefix(str_member(bad, "problem"),
                                   "NVLink fault between GPUs 0 and 1: "
                                   "copy engine 0->1"));
    g_assert_nonnull(strstr(str_member(bad, "problem"), "(220)"));
    g_assert_cmpstr(str_member(back, "verified_ce"), ==, "ok");
    g_assert_true(any_note(&r, "NVLink fault between GPUs 0 and 1 "
                           "(uncorrectable NVLink error, CUDA error 220"));
    for (int g = 0; g < 2; g++) {
        g_assert_false(json_object_get_boolean_member(gpu_of(&r, g),
                                                      "lost"));
    }
    res_clear(&r);
    /* Any other error of a copy is no NVLink fault. */
    run_standin(&r, fixture(), H200_BUS_IDS, "fail-source:0-1", NULL,
                "--quick --size-mib 1");
    expect_exit(&r, 1);
    g_assert_false(json_object_get_boolean_member(pair(&r, 0, 1),
                                                  "nvlink_fault"));
    g_assert_false(any_note(&r, "NVLink fault"));
    res_clear(&r);
}

/* A copy that never completes ends within the watchdog, naming its pair. */
static void test_hang_watchdog(void)
{
    Res r = { 0 };
    JsonObject *g0, *p;

    run_standin(&r, fixture(), H200_BUS_IDS, "hang-copy:0", NULL,
                "--quick --size-mib 1 --watchdog-s 1");
    expect_exit(&r, 1);
    g_assert_cmpfloat(r.seconds, <, 10);
    p = pair(&r, 0, 1);
    g_assert_cmpstr(str_member(p, "verified_ce"), ==, "failed");
    g_assert_nonnull(strstr(str_member(p, "problem"), "copy engine 0->1"));
    g_assert_nonnull(strstr(str_member(p, "problem"),
                            "not finished after 1 s (--watchdog-s): hung"));
    g0 = json_array_get_object_element(
        json_object_get_array_member(r.root, "gpus"), 0);
    g_assert_true(json_object_get_boolean_member(g0, "lost"));
    /* Only the GPU whose copy hung: its destination, whose checks waited
     * on that copy, is not (it was taken for hung too). */
    g_assert_false(json_object_get_boolean_member(
        json_array_get_object_element(
            json_object_get_array_member(r.root, "gpus"), 1), "lost"));
    /* GPU 0 is retired: its other pair is untested, not failed. */
    g_assert_cmpstr(str_member(pair(&r, 1, 0), "verified_ce"), ==,
                    "not testable");
    res_clear(&r);
}

/* A GPU that falls off (sticky error 719) is "GPU lost" (exit 4). */
static void test_lost_gpu(void)
{
    Res r = { 0 };
    JsonObject *g1;

    run_standin(&r, fixture(), H200_BUS_IDS, "lost-gpu:1", NULL,
                "--quick --size-mib 1");
    expect_exit(&r, 4);
    g_assert_cmpstr(json_object_get_string_member(r.root, "verdict"), ==,
                    "GPU lost");
    g1 = json_array_get_object_element(
        json_object_get_array_member(r.root, "gpus"), 1);
    g_assert_true(json_object_get_boolean_member(g1, "lost"));
    g_assert_nonnull(strstr(str_member(g1, "lost_reason"), "(719)"));
    g_assert_false(json_object_get_boolean_member(
        json_array_get_object_element(
            json_object_get_array_member(r.root, "gpus"), 0), "lost"));
    for (int a = 0; a < 2; a++) {
        g_assert_cmpstr(str_member(pair(&r, a, 1 - a), "verified_ce"), ==,
                        "not testable");
    }
    res_clear(&r);
    /* A default run goes on to the figures: the latency chains skip the
     * lost GPU (they had failed the whole run, exit 1 "P2P broken"), and
     * GPU 0's host figures are still measured. */
    run_standin(&r, fixture(), H200_BUS_IDS, "lost-gpu:1", NULL,
                "--size-mib 1 --samples 1");
    expect_exit(&r, 4);
    g_assert_false(any_note(&r, "latency chain"));
    g_assert_cmpfloat(median_or_none(gpu_of(&r, 0),
                                     "host_to_device_ce_gbps"), >, 0);
    res_clear(&r);
}

/*
 * The driver takes GPU 1's context down after an NVLink fault: every later
 * call returns 220. One NVLink fault is named (P2P broken, exit 1) and
 * GPU 1 is lost, not one NVLink fault per later call.
 */
static void test_nvlink_fault_sticky(void)
{
    Res r = { 0 };
    JsonArray *notes;
    guint faults = 0;

    run_standin(&r, fixture(), H200_BUS_IDS, "lost-gpu:1:220", NULL,
                "--quick --size-mib 1");
    g_assert_true(json_object_get_boolean_member(gpu_of(&r, 1), "lost"));
    notes = json_object_get_array_member(r.root, "notes");
    for (guint i = 0; i < json_array_get_length(notes); i++) {
        faults += g_str_has_prefix(json_array_get_string_element(notes, i),
                                   "NVLink fault");
    }
    g_assert_cmpuint(faults, ==, 1);
    g_assert_true(any_note(&r, "GPU 1 (0000:00:07.0) lost"));
    res_clear(&r);
}

/*
 * Four GPUs with 33 MiB each, 8 MiB transfers: the tool needs 3 x 8 MiB
 * (a source, its alternate pattern, one inbox) and the 8 MiB latency
 * chain per GPU, not (n+2) x 8 MiB (48 MiB). All figures, the
 * aggregates included, are measured and all is good.
 */
static void test_memory_bound(void)
{
    g_autofree char *ids = NULL;
    g_autoptr(SysfsBuilder) sb = flat_capture(4, &ids);
    JsonArray *gpus;
    Res r = { 0 };

    g_setenv("STANDIN_MEM_MIB", "33", TRUE);
    run_standin(&r, sb_root(sb), ids, NULL, NULL,
                "--size-mib 8 --samples 1");
    g_unsetenv("STANDIN_MEM_MIB");
    expect_exit(&r, 0);
    gpus = json_object_get_array_member(r.root, "gpus");
    for (guint i = 0; i < 4; i++) {
        JsonObject *g = json_array_get_object_element(gpus, i);

        g_assert_nonnull(json_object_get_object_member(g,
                                                       "all_to_one_ce_gbps"));
        g_assert_nonnull(json_object_get_object_member(g,
                                                       "one_to_all_ce_gbps"));
    }
    res_clear(&r);
}

/*
 * One GPU: no pair, so P2P is untested (exit 3), but host <-> device is
 * measurable with one GPU and is measured (nvbandwidth's
 * host_to_device_memcpy_ce and device_to_host_memcpy_ce).
 */
static void test_one_gpu_host_figures(void)
{
    g_autofree char *ids = NULL;
    g_autoptr(SysfsBuilder) one = flat_capture(1, &ids);
    Res r = { 0 };

    run_standin(&r, sb_root(one), ids, NULL, NULL,
                "--size-mib 2 --samples 1");
    expect_exit(&r, 3);
    g_assert_true(any_note(&r, "fewer than 2 GPUs"));
    g_assert_cmpint(json_array_get_length(
        json_object_get_array_member(r.root, "pairs")), ==, 0);
    g_assert_cmpfloat(median_or_none(gpu_of(&r, 0),
                                     "host_to_device_ce_gbps"), >, 0);
    g_assert_cmpfloat(median_or_none(gpu_of(&r, 0),
                                     "device_to_host_ce_gbps"), >, 0);
    res_clear(&r);
}

/*
 * The second copy from GPU 0 into host memory is said done and moves
 * nothing: host memory keeps the first copy's pattern (the alternate of
 * the second's), and the validation run sees it, once per sample
 * poisoned, not once per copy.
 */
static void test_host_dropped(void)
{
    Res r = { 0 };

    run_standin(&r, fixture(), H200_BUS_IDS, "drop-host:0:2", NULL,
                "--size-mib 1 --samples 1 --figures "
                "device_to_host_memcpy_ce");
    expect_exit(&r, 3);
    g_assert_cmpfloat(median_or_none(gpu_of(&r, 0),
                                     "device_to_host_ce_gbps"), ==, -1);
    g_assert_true(any_note(&r, "device to host copy, GPU 0: first bad byte "
                           "at offset 0 (host path, not P2P)"));
    g_assert_cmpfloat(median_or_none(gpu_of(&r, 1),
                                     "device_to_host_ce_gbps"), >, 0);
    res_clear(&r);
}

/*
 * The SM latency is the chase's own time over its hops: the stand-in
 * takes 1.5 us a hop to a peer, so 1.5 us it must be, in both modes (one
 * chase, or one per SM whose times add up).
 */
static void test_sm_latency_value(void)
{
    const char *modes[] = { "", "--benchmark " };

    for (guint i = 0; i < G_N_ELEMENTS(modes); i++) {
        g_autofree char *args = g_strdup_printf(
            "%s--size-mib 2 --samples 3 --figures "
            "device_to_device_latency_sm", modes[i]);
        Res r = { 0 };

        run_standin(&r, fixture(), H200_BUS_IDS, NULL, NULL, args);
        expect_exit(&r, 0);
        for (int a = 0; a < 2; a++) {
            g_assert_cmpfloat_with_epsilon(
                median_or_none(pair(&r, a, 1 - a), "latency_sm_us"), 1.5,
                1e-9);
        }
        res_clear(&r);
    }
}

/*
 * Copies from GPU 0 into host memory flip a byte: GPU 0's device -> host
 * figure comes back bad and is left out, the run is untested (a host
 * path, no P2P verdict). Host -> device does not rest on that path (the
 * CPU fills its buffer), so it is measured, as GPU 1's figures are; it
 * was failed too while the pattern came out of GPU 0.
 */
static void test_host_corrupt(void)
{
    Res r = { 0 };

    run_standin(&r, fixture(), H200_BUS_IDS, "corrupt-host:0:100", NULL,
                "--size-mib 1 --samples 1 --figures "
                "host_to_device_memcpy_ce,device_to_host_memcpy_ce");
    expect_exit(&r, 3);
    g_assert_cmpfloat(median_or_none(gpu_of(&r, 0),
                                     "host_to_device_ce_gbps"), >, 0);
    g_assert_cmpfloat(median_or_none(gpu_of(&r, 0),
                                     "device_to_host_ce_gbps"), ==, -1);
    g_assert_true(any_note(&r, "device to host copy, GPU 0: first bad byte "
                           "at offset 100 (host path, not P2P)"));
    g_assert_false(any_note(&r, "host to device copy, GPU 0"));
    g_assert_cmpfloat(median_or_none(gpu_of(&r, 1),
                                     "device_to_host_ce_gbps"), >, 0);
    /* P2P itself is fine: the data checks ran and passed. */
    g_assert_cmpstr(str_member(pair(&r, 0, 1), "verified_ce"), ==, "ok");
    res_clear(&r);
}

/* The names --list prints, in registry order. */
static GPtrArray *listed_names(void)
{
    g_autofree char *cmd = g_strdup_printf("%s --list",
                                           g_getenv("GPUP2P_VERIFY_CUDA"));
    g_autofree char *out = NULL;
    g_auto(GStrv) lines = NULL;
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    int ws;

    g_assert_true(g_spawn_command_line_sync(cmd, &out, NULL, &ws, NULL));
    g_assert_true(WIFEXITED(ws));
    g_assert_cmpint(WEXITSTATUS(ws), ==, 0);
    lines = g_strsplit(out, "\n", -1);
    g_assert_true(g_str_has_prefix(lines[0], "# name\tnvbandwidth\tunit"));
    for (guint i = 1; lines[i] && *lines[i]; i++) {
        g_auto(GStrv) f = g_strsplit(lines[i], "\t", -1);

        /* name, counterpart, unit, per pair or GPU, quick, method */
        g_assert_cmpuint(g_strv_length(f), ==, 6);
        g_assert_true(!strcmp(f[2], "GB/s") || !strcmp(f[2], "us"));
        g_assert_cmpuint(strlen(f[5]), >, 10);
        /* One name, one figure. */
        g_assert_false(g_ptr_array_find_with_equal_func(names, f[0],
                                                        g_str_equal, NULL));
        g_ptr_array_add(names, g_strdup(f[0]));
    }
    return names;
}

/*
 * --list: every figure with its nvbandwidth counterpart, and the names a
 * default run reports in "figures" are exactly the listed ones.
 */
static void test_list(void)
{
    g_autoptr(GPtrArray) names = listed_names();
    JsonArray *asked;
    Res r = { 0 };
    static const char *const expect[] = {
        "device_to_device_memcpy_write_ce", "device_to_device_memcpy_read_ce",
        "device_to_device_bidirectional_memcpy_write_ce",
        "host_to_device_memcpy_ce", "device_to_host_memcpy_ce",
        "all_to_one_write_ce", "one_to_all_write_ce",
        "device_to_device_memcpy_write_sm", "device_to_device_memcpy_read_sm",
        "device_to_device_latency_sm",
    };

    for (guint i = 0; i < G_N_ELEMENTS(expect); i++) {
        g_assert_true(g_ptr_array_find_with_equal_func(names, expect[i],
                                                       g_str_equal, NULL));
    }
    run_standin(&r, fixture(), H200_BUS_IDS, NULL, NULL,
                "--size-mib 1 --samples 1");
    expect_exit(&r, 0);
    asked = json_object_get_array_member(r.root, "figures");
    g_assert_cmpuint(json_array_get_length(asked), ==, names->len);
    for (guint i = 0; i < names->len; i++) {
        g_assert_cmpstr(json_array_get_string_element(asked, i), ==,
                        g_ptr_array_index(names, i));
    }
    res_clear(&r);
}

/*
 * --figures measures only what it names (CE read, issued by the reading
 * GPU, and host -> device here); the data checks run all the same.
 */
static void test_figures_select(void)
{
    Res r = { 0 };
    JsonObject *p;

    run_standin(&r, fixture(), H200_BUS_IDS, NULL, NULL,
                "--size-mib 1 --samples 1 --figures "
                "device_to_device_memcpy_read_ce,host_to_device_memcpy_ce");
    expect_exit(&r, 0);
    for (int a = 0; a < 2; a++) {
        p = pair(&r, a, 1 - a);
        g_assert_cmpfloat(median_or_none(p, "unidirectional_ce_read_gbps"),
                          >, 0);
        g_assert_cmpfloat(median_or_none(p, "unidirectional_ce_gbps"), ==,
                          -1);
        g_assert_cmpfloat(median_or_none(p, "latency_sm_us"), ==, -1);
        g_assert_cmpfloat(median_or_none(p, "bidirectional_ce_gbps"), ==,
                          -1);
        g_assert_cmpstr(str_member(p, "verified_ce"), ==, "ok");
        g_assert_cmpstr(str_member(p, "verified_sm_write"), ==, "ok");
        g_assert_cmpstr(str_member(p, "verified_sm_read"), ==, "ok");
        g_assert_cmpfloat(median_or_none(gpu_of(&r, a),
                                         "host_to_device_ce_gbps"), >, 0);
        g_assert_cmpfloat(median_or_none(gpu_of(&r, a),
                                         "device_to_host_ce_gbps"), ==, -1);
        g_assert_cmpfloat(median_or_none(gpu_of(&r, a),
                                         "all_to_one_ce_gbps"), ==, -1);
    }
    g_assert_cmpuint(json_array_get_length(
        json_object_get_array_member(r.root, "figures")), ==, 2);
    res_clear(&r);
    /* A threshold on a figure left out is untested, not passed. */
    run_standin(&r, fixture(), H200_BUS_IDS, NULL, NULL,
                "--size-mib 1 --samples 1 --min-bandwidth 1 --figures "
                "host_to_device_memcpy_ce");
    expect_exit(&r, 3);
    g_assert_true(any_note(&r, "--min-bandwidth was given, but no "
                           "bandwidth was measured"));
    res_clear(&r);
}

/* Bad values are usage errors (64) naming the option and its range. */
static void test_usage(void)
{
    const char *bad[][2] = {
        { "--watchdog-s 0", "--watchdog-s must be a number from 0.1 to "
          "3600" },
        { "--watchdog-s 4000", "--watchdog-s must be" },
        { "--figures device_to_device_memcpy_write_ce,nope",
          "--figures: no figure named \"nope\"" },
        { "--figures ,", "--figures: no figure named" },
    };

    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *cmd = g_strdup_printf("%s --sysfs-root %s "
                                               "--with-cuda %s",
                                               g_getenv("GPUP2P_VERIFY_CUDA"),
                                               fixture(), bad[i][0]);
        g_autofree char *err = NULL;
        int ws;

        g_assert_true(g_spawn_command_line_sync(cmd, NULL, &err, &ws, NULL));
        g_assert_true(WIFEXITED(ws));
        g_assert_cmpint(WEXITSTATUS(ws), ==, 64);
        g_assert_nonnull(strstr(err, bad[i][1]));
    }
}

/*
 * Four GPUs checked two pairs at a time: the first copy out of GPU 0
 * fails once (a one-shot fault) and both pairs of its batch pass when
 * each runs again alone. The error is not forgotten (it was: exit 0): with CUDA
 * error 220 it is an NVLink fault (exit 1), with any other code the
 * batch's pairs failed under concurrent load and are untested (exit 3).
 */
static void test_batch_transient(void)
{
    g_autofree char *ids = NULL;
    g_autoptr(SysfsBuilder) sb = flat_capture(4, &ids);
    Res r = { 0 };

    run_standin(&r, sb_root(sb), ids, "fail-source:0:1:1", NULL,
                "--quick --size-mib 1");
    expect_exit(&r, 3);
    /* The schedule's first batch: 0 -> 3 beside 1 -> 2. */
    for (int i = 0; i < 2; i++) {
        JsonObject *p = pair(&r, i, 3 - i);

        g_assert_cmpstr(str_member(p, "verified_ce"), ==, "not testable");
        g_assert_nonnull(strstr(str_member(p, "problem"),
                                "failed under concurrent load"));
    }
    g_assert_null(str_member(pair(&r, 0, 1), "problem"));
    res_clear(&r);
    run_standin(&r, sb_root(sb), ids, "fail-source:0:220:1", NULL,
                "--quick --size-mib 1");
    expect_exit(&r, 1);
    g_assert_true(any_note(&r, "CUDA error 220"));
    g_assert_true(json_object_get_boolean_member(pair(&r, 1, 2),
                                                 "nvlink_fault"));
    res_clear(&r);
}

/*
 * Three GPUs, all-to-one only: the first copy out of GPU 0 into the
 * aggregate at GPU 1 fails once; the transfers pass one by one. The
 * figure is missing, so the run is untested (it was "all good").
 * Copies out of GPU 0 before it: 6 data checks (CE, SM write, SM read to
 * each of 2 peers).
 */
static void test_aggregate_transient(void)
{
    g_autofree char *ids = NULL;
    g_autoptr(SysfsBuilder) sb = flat_capture(3, &ids);
    Res r = { 0 };

    run_standin(&r, sb_root(sb), ids, "fail-source:0:1:7", NULL,
                "--size-mib 1 --samples 1 --figures all_to_one_write_ce");
    expect_exit(&r, 3);
    g_assert_cmpfloat(median_or_none(gpu_of(&r, 1), "all_to_one_ce_gbps"),
                      ==, -1);
    g_assert_true(any_note(&r, "all_to_one_ce_gbps"));
    res_clear(&r);
}

/* cuDeviceCanAccessPeer fails for 0 -> 1: the pair is untested, with the
 * error named (it was "not testable" in a run that was "all good"). */
static void test_peer_query_error(void)
{
    Res r = { 0 };
    JsonObject *p;

    run_standin(&r, fixture(), H200_BUS_IDS, "peer-query:0-1", NULL,
                "--quick --size-mib 1");
    expect_exit(&r, 3);
    p = pair(&r, 0, 1);
    g_assert_true(json_object_get_null_member(p, "peer_access"));
    g_assert_nonnull(strstr(str_member(p, "problem"),
                            "cuDeviceCanAccessPeer 0->1: unknown error "
                            "(999)"));
    g_assert_cmpstr(str_member(pair(&r, 1, 0), "verified_ce"), ==, "ok");
    res_clear(&r);
}

/*
 * PCI shows three GPUs, CUDA two, CUDA_VISIBLE_DEVICES is set, and no
 * NVML sees the third (there is none here): it is missing, not hidden by
 * CUDA_VISIBLE_DEVICES, and the run is untested (it was "all good").
 */
static void test_missing_not_hidden(void)
{
    static const char *const visible[] = { "CUDA_VISIBLE_DEVICES", "0,1",
                                           NULL };
    g_autofree char *ids = NULL;
    g_autoptr(SysfsBuilder) sb = flat_capture(3, &ids);
    Res r = { 0 };

    *strrchr(ids, ',') = 0;         /* the stand-in has the first two */
    run_standin_env(&r, sb_root(sb), ids, NULL, NULL, "--quick --size-mib 1",
                    visible);
    expect_exit(&r, 3);
    g_assert_false(json_object_get_boolean_member(
        gpu_of(&r, 2), "hidden_by_cuda_visible_devices"));
    g_assert_true(any_note(&r, "GPU 2 (0000:00:03.0): on PCI but seen by "
                           "neither CUDA nor NVML"));
    res_clear(&r);
}

/* The stand-in's counter @what ("peer_copies_from", "ctx_set_current")
 * of each GPU after a healthy run with @args; @n the GPU count. */
static void count_calls(const char *root, const char *ids, const char *args,
                        const char *what, int n, unsigned *counts)
{
    g_autofree char *dir = g_dir_make_tmp("standin-count-XXXXXX", NULL);
    g_autofree char *file = g_build_filename(dir, "counts", NULL);
    const char *const env[] = { "GPUP2P_FAKE_CUDA_COUNT_FILE", file, NULL };
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    Res r = { 0 };

    run_standin_env(&r, root, ids, NULL, NULL, args, env);
    expect_exit(&r, 0);
    res_clear(&r);
    g_assert_true(g_file_get_contents(file, &text, NULL, NULL));
    lines = g_strsplit(text, "\n", -1);
    for (int g = 0; g < n; g++) {
        g_autofree char *want = g_strdup_printf("%s %d ", what, g);

        counts[g] = 0;
        for (int i = 0; lines[i]; i++) {
            if (g_str_has_prefix(lines[i], want)) {
                counts[g] = (unsigned)atoi(lines[i] + strlen(want));
            }
        }
        g_assert_cmpuint(counts[g], >, 0);
    }
    g_unlink(file);
    g_rmdir(dir);
}

/* The copies out of each GPU that a healthy run with @args makes. */
static void count_copies(const char *root, const char *ids, const char *args,
                         int n, unsigned *counts)
{
    count_calls(root, ids, args, "peer_copies_from", n, counts);
}

/*
 * The property: a fault at any one copy of a run, of any kind, never
 * gives exit 0. Each kind (a flipped byte, a one-shot error, a one-shot
 * NVLink error 220, a copy said done that moved nothing) is injected at
 * each copy out of each GPU of a --quick run, warm-up copies included (a
 * bad warm-up copy passed before: the first timed copy overwrote it
 * unchecked).
 */
static void test_fault_at_every_copy(void)
{
    /* fault kind, and its argument (with its colon) before the copy
     * number */
    static const char *const kinds[][2] = {
        { "corrupt-byte", ":100" }, { "fail-source", ":1" },
        { "fail-source", ":220" }, { "drop-copy", "" },
    };
    const char *args = "--quick --size-mib 1";
    unsigned counts[2];

    count_copies(fixture(), H200_BUS_IDS, args, 2, counts);
    for (int g = 0; g < 2; g++) {
        for (unsigned n = 1; n <= counts[g]; n++) {
            for (guint k = 0; k < G_N_ELEMENTS(kinds); k++) {
                g_autofree char *fault = g_strdup_printf(
                    "%s:%d%s:%u", kinds[k][0], g, kinds[k][1], n);
                Res r = { 0 };

                run_standin(&r, fixture(), H200_BUS_IDS, fault, NULL, args);
                if (r.status == 0) {
                    g_printerr("exit 0 with %s\n%s\n", fault, r.out);
                }
                g_assert_cmpint(r.status, !=, 0);
                res_clear(&r);
            }
        }
    }
}

/*
 * A cuCtxSetCurrent that fails, at any one call for either GPU of a
 * --quick run, never gives exit 0, and the report names the call and the
 * error (several results were not looked at: work then went to whichever
 * context was current before, or was left undone, with exit 0).
 */
static void test_ctx_set_failure(void)
{
    const char *args = "--quick --size-mib 1";
    unsigned counts[2];

    count_calls(fixture(), H200_BUS_IDS, args, "ctx_set_current", 2, counts);
    for (int g = 0; g < 2; g++) {
        for (unsigned n = 1; n <= counts[g]; n++) {
            g_autofree char *fault = g_strdup_printf("ctx-set:%d:999:%u", g,
                                                     n);
            Res r = { 0 };

            run_standin(&r, fixture(), H200_BUS_IDS, fault, NULL, args);
            if (r.status == 0 || !strstr(r.out, "cuCtxSetCurrent: unknown "
                                         "error (999)")) {
                g_printerr("exit %d with %s\n%s\n", r.status, fault, r.out);
            }
            g_assert_cmpint(r.status, !=, 0);
            g_assert_nonnull(strstr(r.out, "cuCtxSetCurrent: unknown error "
                                    "(999)"));
            res_clear(&r);
        }
    }
}

/* A report that cannot be written (stdout on a full disk) is exit 3,
 * never the verdict it could not tell (it was exit 0). */
static void test_stdout_write_failure(void)
{
    static const char *const modes[] = { "--json", "" };    /* and text */

    if (!g_file_test("/dev/full", G_FILE_TEST_EXISTS)) {
        g_test_skip("no /dev/full");
        return;
    }
    for (guint m = 0; m < G_N_ELEMENTS(modes); m++) {
        g_autofree char *cmd = g_strdup_printf(
            "sh -c 'GPUP2P_FAKE_CUDA_BUS_IDS=%s LD_LIBRARY_PATH=%s exec %s "
            "--sysfs-root %s --with-cuda --skip-rdma --quick --size-mib 1 "
            "%s >/dev/full'", H200_BUS_IDS, g_getenv("FAKE_LIBCUDA_DIR"),
            g_getenv("GPUP2P_VERIFY_CUDA"), fixture(), modes[m]);
        g_autofree char *err = NULL;
        int ws;

        g_assert_true(g_spawn_command_line_sync(cmd, NULL, &err, &ws, NULL));
        g_assert_true(WIFEXITED(ws));
        g_assert_cmpint(WEXITSTATUS(ws), ==, 3);
        g_assert_nonnull(strstr(err, "the report could not be written"));
    }
}

/* --sysfs-root alone (the PCI checks) on @sb: exit code, JSON in *o. */
static int run_pci_only(const SysfsBuilder *sb, JsonParser *p, JsonObject **o)
{
    g_autofree char *cmd = g_strdup_printf("%s --sysfs-root %s --json",
                                           g_getenv("GPUP2P_VERIFY_CUDA"),
                                           sb_root(sb));
    g_autofree char *out = NULL;
    int ws;

    g_assert_true(g_spawn_command_line_sync(cmd, &out, NULL, &ws, NULL));
    g_assert_true(WIFEXITED(ws));
    g_assert_true(json_parser_load_from_data(p, out, -1, NULL));
    *o = json_node_get_object(json_parser_get_root(p));
    return WEXITSTATUS(ws);
}

/* Two GPUs on a flat root bus in cliques @c0 and @c1 (-1: no capability). */
static SysfsBuilder *two_gpus_in_cliques(int c0, int c1)
{
    SysfsBuilder *sb = sb_new();
    const int clique[2] = { c0, c1 };

    sb_add(sb, NULL, "0000:00:00.0", SB_HOST_BRIDGE, 0x8086, 0x29c0,
           0x060000, 0, -1, NULL);
    for (int i = 0; i < 2; i++) {
        g_autofree char *bdf = g_strdup_printf("0000:00:%02x.0", i + 1);

        sb_add(sb, NULL, bdf, SB_ENDPOINT, 0x10de, 0x2335, 0x030200, 0,
               i + 1, NULL);
        if (clique[i] >= 0) {
            sb_set_p2pcap(sb, bdf, clique[i], 8);
        }
    }
    return sb;
}

/*
 * The PCI checks alone pass only where every GPU carries a valid
 * capability and shares its clique with another GPU; a pass says that no
 * data moved. Two GPUs in cliques 1 and 2, or one without a capability,
 * were "all good" before.
 */
static void test_pci_only_verdicts(void)
{
    static const struct { int c0, c1, code; } cases[] = {
        { 1, 1, 0 }, { 1, 2, 3 }, { 1, -1, 3 },
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(SysfsBuilder) sb = two_gpus_in_cliques(cases[i].c0,
                                                         cases[i].c1);
        g_autoptr(JsonParser) p = json_parser_new();
        JsonObject *o;

        g_assert_cmpint(run_pci_only(sb, p, &o), ==, cases[i].code);
        g_assert_cmpstr(json_object_get_string_member(o, "verdict"), ==,
                        cases[i].code ? "could not test" :
                        "PCI checks passed, no data moved");
        g_assert_false(json_object_get_boolean_member(o, "data_moved"));
    }
}

/*
 * Runs a --quick run on the H200 capture with the stand-in NVML
 * (tests/unit/fake-libnvml) beside the stand-in CUDA: two NVLinks per GPU
 * and the health counters @counters (GPUP2P_FAKE_NVML_COUNTERS) sets.
 */
static void run_with_nvml_env(Res *r, const char *links,
                              const char *counters, const char *lost,
                              const char *stray_xids, const char *args)
{
    g_autofree char *libs = g_strdup_printf("%s:%s",
                                            g_getenv("FAKE_LIBCUDA_DIR"),
                                            g_getenv("FAKE_LIBNVML_DIR"));
    const char *const env[] = {
        "LD_LIBRARY_PATH", libs,
        "GPUP2P_FAKE_NVML_NVLINKS", links,
        "GPUP2P_FAKE_NVML_COUNTERS", counters ? counters : "",
        "GPUP2P_FAKE_NVML_LOST", lost ? lost : "",
        "GPUP2P_FAKE_NVML_STRAY_XIDS", stray_xids ? stray_xids : "",
        NULL,
    };

    run_standin_env(r, fixture(), H200_BUS_IDS, NULL, NULL, args, env);
}

static void run_with_nvml_links(Res *r, const char *links,
                                const char *counters, const char *args)
{
    run_with_nvml_env(r, links, counters, NULL, NULL, args);
}

static void run_with_nvml(Res *r, const char *counters, const char *args)
{
    run_with_nvml_links(r, "2", counters, args);
}

/* GPU @g's "health" object, which every GPU has. */
static JsonObject *health_of(const Res *r, int g)
{
    g_assert_true(json_object_has_member(gpu_of(r, g), "health"));
    return json_object_get_object_member(gpu_of(r, g), "health");
}

/* GPU @g's health counter @name (on NVLink @link, -1: the GPU's own) in
 * the JSON, or NULL where it was not read. */
static JsonObject *health_counter(const Res *r, int g, int link,
                                  const char *name)
{
    JsonObject *health = health_of(r, g);
    JsonArray *list = json_object_get_array_member(health, "counters");

    if (link >= 0) {
        JsonArray *links = json_object_get_array_member(health, "links");

        list = NULL;
        for (guint i = 0; i < json_array_get_length(links); i++) {
            JsonObject *l = json_array_get_object_element(links, i);

            if (json_object_get_int_member(l, "link") == link) {
                list = json_object_get_array_member(l, "counters");
            }
        }
        if (!list) {
            return NULL;
        }
    }
    for (guint i = 0; i < json_array_get_length(list); i++) {
        JsonObject *c = json_array_get_object_element(list, i);

        if (!g_strcmp0(str_member(c, "counter"), name)) {
            return c;
        }
    }
    return NULL;
}

/*
 * Each row of the health policy (docs/guest-tool.md, "Health"): a counter
 * that rises between the reading before the data checks and the one
 * after the run fails the GPU or link (exit 1) or warns (exit 0), and the
 * note names the counter, the GPU and the link. A standing value that
 * does not rise is no finding. Before: no health was read at all (every
 * row was exit 0 and the JSON had no "health").
 */
static void test_health_policy(void)
{
    static const struct {
        const char *counters;       /* GPUP2P_FAKE_NVML_COUNTERS */
        int gpu, link;              /* where; link -1: the GPU's own */
        const char *name, *verdict;
        unsigned long long before, after;
        int code;
        const char *note;
    } rows[] = {
        { "ecc_uncorrected_volatile:1=0+1@1", 1, -1,
          "ecc_uncorrected_volatile", "failed", 0, 1, 1,
          "GPU 1 (0000:00:07.0): health: ecc_uncorrected_volatile rose "
          "from 0 to 1 during the run" },
        { "ecc_corrected_volatile:0=5+1@1", 0, -1, "ecc_corrected_volatile",
          "warning", 5, 6, 0, "warning: GPU 0 (0000:00:06.0): health: "
          "ecc_corrected_volatile rose from 5 to 6" },
        { "retired_pages_double_bit_ecc:0=0+2@1", 0, -1,
          "retired_pages_double_bit_ecc", "failed", 0, 2, 1,
          "retired_pages_double_bit_ecc rose from 0 to 2" },
        /* More pages than the tool's buffer: NVML's count still counts. */
        { "retired_pages_multiple_single_bit_ecc:1=70+1@1", 1, -1,
          "retired_pages_multiple_single_bit_ecc", "warning", 70, 71, 0,
          "warning: GPU 1 (0000:00:07.0): health: "
          "retired_pages_multiple_single_bit_ecc rose from 70 to 71" },
        { "remapped_rows_uncorrectable:1=0+1@1", 1, -1,
          "remapped_rows_uncorrectable", "failed", 0, 1, 1,
          "remapped_rows_uncorrectable rose from 0 to 1" },
        { "remapped_rows_correctable:0=2+1@1", 0, -1,
          "remapped_rows_correctable", "warning", 2, 3, 0,
          "warning: GPU 0 (0000:00:06.0): health: remapped_rows_correctable "
          "rose from 2 to 3" },
        { "row_remap_pending:0=0+1@1", 0, -1, "row_remap_pending", "failed",
          0, 1, 1, "row_remap_pending rose from 0 to 1" },
        { "row_remap_failure:1=0+1@1", 1, -1, "row_remap_failure", "failed",
          0, 1, 1, "row_remap_failure rose from 0 to 1" },
        /* Pending before the run and still: not this run's finding. */
        { "row_remap_pending:0=1", 0, -1, "row_remap_pending", "ok", 1, 1,
          0, NULL },
        { "xid_events:0=2", 0, -1, "xid_events", "failed", 0, 2, 1,
          "GPU 0 (0000:00:06.0): health: xid_events rose from 0 to 2 during "
          "the run (last Xid 79)" },
        { "nvlink_replay:0:1=0+4@1", 0, 1, "nvlink_replay", "failed", 0, 4,
          1, "GPU 0 (0000:00:06.0) NVLink 1: health: nvlink_replay "
          "rose from 0 to 4" },
        { "nvlink_recovery:1:0=0+1@1", 1, 0, "nvlink_recovery", "failed", 0,
          1, 1, "GPU 1 (0000:00:07.0) NVLink 0: health: nvlink_recovery "
          "rose from 0 to 1" },
        /* CRC errors by the link's rate (test-verify-health.c has the
         * boundary and the totals): a billion within one run of the tool
         * is far past 100 a second. */
        { "nvlink_crc_flit:1:0=7+1000000000@1", 1, 0, "nvlink_crc_flit",
          "failed", 7, 1000000007, 1, "GPU 1 (0000:00:07.0) NVLink 0: "
          "health: nvlink_crc_flit rose from 7 to 1000000007 during the "
          "run (" },
        { "nvlink_crc_data:0:1=0+1000000000@1", 0, 1, "nvlink_crc_data",
          "failed", 0, 1000000000, 1, "GPU 0 (0000:00:06.0) NVLink 1: "
          "health: nvlink_crc_data rose from 0 to 1000000000 during the "
          "run (" },
    };

    for (guint i = 0; i < G_N_ELEMENTS(rows); i++) {
        Res r = { 0 };
        JsonObject *c, *health;

        run_with_nvml(&r, rows[i].counters, "--quick --size-mib 1");
        g_test_message("row %s", rows[i].counters);
        expect_exit(&r, rows[i].code);
        c = health_counter(&r, rows[i].gpu, rows[i].link, rows[i].name);
        g_assert_nonnull(c);
        g_assert_cmpint(json_object_get_int_member(c, "before"), ==,
                        rows[i].before);
        g_assert_cmpint(json_object_get_int_member(c, "after"), ==,
                        rows[i].after);
        g_assert_cmpstr(str_member(c, "verdict"), ==, rows[i].verdict);
        health = health_of(&r, rows[i].gpu);
        g_assert_cmpstr(str_member(health, "verdict"), ==, rows[i].verdict);
        /* The other GPU is untouched. */
        g_assert_cmpstr(str_member(health_of(&r, 1 - rows[i].gpu),
                                   "verdict"), ==, "ok");
        if (rows[i].note) {
            g_assert_true(any_note(&r, rows[i].note));
        }
        res_clear(&r);
    }
}

/* How often @needle occurs in @hay. */
static unsigned occurrences(const char *hay, const char *needle)
{
    unsigned n = 0;

    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) {
        n++;
    }
    return n;
}

/*
 * A counter NVML does not support (NVML_ERROR_NOT_SUPPORTED), or cannot
 * read (another error), is "not read", named once per GPU in the text
 * and the JSON (an NVLink counter once, whatever its links), and is
 * neither a pass nor a fail: the GPU whose every counter is unreadable
 * reads "not read", and the run's verdict is that of its data checks.
 */
static void test_health_not_supported(void)
{
    static const char *const unsupported[] = {
        "ecc_uncorrected_volatile", "ecc_corrected_volatile",
        "retired_pages_double_bit_ecc",
        "retired_pages_multiple_single_bit_ecc",
        "remapped_rows_uncorrectable", "remapped_rows_correctable",
        "row_remap_pending", "row_remap_failure", "xid_events",
        "nvlink_replay", "nvlink_recovery", "nvlink_crc_flit",
        "nvlink_crc_data",
    };
    g_autoptr(GString) every = g_string_new(NULL);
    g_autofree char *counters = NULL;
    JsonObject *health;
    JsonArray *not_read;
    Res r = { 0 };

    /* GPU 0: every counter unsupported. GPU 1: one fails to read, and
     * one would have failed the run had it been read. */
    for (guint i = 0; i < G_N_ELEMENTS(unsupported); i++) {
        g_string_append_printf(every, "%s:0=unsupported,", unsupported[i]);
    }
    counters = g_strdup_printf("%secc_corrected_volatile:1=error:15,"
                               "nvlink_crc_data:1:0=unsupported", every->str);
    run_with_nvml(&r, counters, "--quick --size-mib 1");
    expect_exit(&r, 0);
    health = health_of(&r, 0);
    g_assert_cmpstr(str_member(health, "verdict"), ==, "not read");
    not_read = json_object_get_array_member(health, "not_read");
    g_assert_cmpuint(json_array_get_length(not_read), ==,
                     G_N_ELEMENTS(unsupported));
    for (guint i = 0; i < G_N_ELEMENTS(unsupported); i++) {
        g_autofree char *want = g_strdup_printf("%s: not supported",
                                                unsupported[i]);

        g_assert_cmpstr(json_array_get_string_element(not_read, i), ==,
                        want);
    }
    g_assert_cmpuint(json_array_get_length(json_object_get_array_member(
                         health, "counters")), ==, 0);
    g_assert_cmpuint(json_array_get_length(json_object_get_array_member(
                         health, "links")), ==, 0);

    health = health_of(&r, 1);
    g_assert_cmpstr(str_member(health, "verdict"), ==, "ok");
    not_read = json_object_get_array_member(health, "not_read");
    g_assert_cmpuint(json_array_get_length(not_read), ==, 2);
    g_assert_cmpstr(json_array_get_string_element(not_read, 0), ==,
                    "ecc_corrected_volatile: NVML error 15");
    g_assert_cmpstr(json_array_get_string_element(not_read, 1), ==,
                    "nvlink_crc_data: not supported");
    g_assert_null(health_counter(&r, 1, 0, "nvlink_crc_data"));
    g_assert_nonnull(health_counter(&r, 1, 1, "nvlink_crc_data"));
    res_clear(&r);

    /* The text: each name once per GPU, on that GPU's line. */
    {
        g_autofree char *libs = g_strdup_printf("%s:%s",
            g_getenv("FAKE_LIBCUDA_DIR"), g_getenv("FAKE_LIBNVML_DIR"));
        g_autofree char *cmd = g_strdup_printf(
            "env LD_LIBRARY_PATH=%s GPUP2P_FAKE_CUDA_BUS_IDS=%s "
            "GPUP2P_FAKE_NVML_NVLINKS=2 "
            "GPUP2P_FAKE_NVML_COUNTERS=nvlink_crc_data:0=unsupported "
            "%s --sysfs-root %s --with-cuda --skip-rdma --quick "
            "--size-mib 1", libs, H200_BUS_IDS,
            g_getenv("GPUP2P_VERIFY_CUDA"), fixture());
        g_autofree char *out = NULL;
        int ws;

        g_assert_true(g_spawn_command_line_sync(cmd, &out, NULL, &ws, NULL));
        g_assert_true(WIFEXITED(ws));
        g_assert_cmpint(WEXITSTATUS(ws), ==, 0);
        g_assert_nonnull(strstr(out, "\n  0 0000:00:06.0 ok; not read: "
                                "nvlink_crc_data (not supported)\n"));
        g_assert_nonnull(strstr(out, "\n  1 0000:00:07.0 ok\n"));
        g_assert_cmpuint(occurrences(out, "nvlink_crc_data"), ==, 1);
    }
}

/* The integers of @o's array member @name, as "0, 1, 2". */
static char *int_list(JsonObject *o, const char *name)
{
    JsonArray *a = json_object_get_array_member(o, name);
    GString *s = g_string_new(NULL);

    for (guint i = 0; i < json_array_get_length(a); i++) {
        g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? ", " : "",
                               json_array_get_int_element(a, i));
    }
    return g_string_free(s, FALSE);
}

/* How many notes hold @part. */
static unsigned notes_with(const Res *r, const char *part)
{
    JsonArray *notes = json_object_get_array_member(r->root, "notes");
    unsigned n = 0;

    for (guint i = 0; i < json_array_get_length(notes); i++) {
        n += strstr(json_array_get_string_element(notes, i), part) != NULL;
    }
    return n;
}

/*
 * The GPU's NVLink CRC totals, summed as DCGM's watch sums
 * DCGM_FI_DEV_NVLINK_CRC_*_ERROR_COUNT_TOTAL: 18 links that each rose
 * are one "nvlink_crc_data_total" in the GPU's counters (before, after,
 * rate, the links), a warning with one note naming the links; each link
 * is judged on its own rate (here far past 100 a second: each fails,
 * with a note of its own). A single error on one link: the total warns,
 * the link's verdict decides the exit code.
 */
static void test_health_crc_sum(void)
{
    JsonObject *c;
    g_autofree char *rose = NULL, *summed = NULL;
    Res r = { 0 };

    run_with_nvml_links(&r, "18", "nvlink_crc_data:0=0+1000000000@1",
                        "--quick --size-mib 1");
    expect_exit(&r, 1);
    c = health_counter(&r, 0, -1, "nvlink_crc_data_total");
    g_assert_nonnull(c);
    g_assert_cmpint(json_object_get_int_member(c, "before"), ==, 0);
    g_assert_cmpint(json_object_get_int_member(c, "after"), ==,
                    18000000000LL);
    g_assert_cmpstr(str_member(c, "verdict"), ==, "warning");
    g_assert_cmpfloat(json_object_get_double_member(c, "rate_per_second"),
                      >=, 100.0);
    rose = int_list(c, "links_rose");
    summed = int_list(c, "links_summed");
    g_assert_cmpstr(rose, ==, "0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, "
                    "13, 14, 15, 16, 17");
    g_assert_cmpstr(summed, ==, rose);
    for (int l = 0; l < 18; l++) {
        g_assert_cmpstr(str_member(health_counter(&r, 0, l,
                                                  "nvlink_crc_data"),
                                   "verdict"), ==, "failed");
    }
    g_assert_cmpstr(str_member(health_of(&r, 0), "verdict"), ==, "failed");
    /* Read, no rise: the total is "ok". */
    c = health_counter(&r, 0, -1, "nvlink_crc_flit_total");
    g_assert_nonnull(c);
    g_assert_cmpstr(str_member(c, "verdict"), ==, "ok");
    g_assert_cmpstr(str_member(health_of(&r, 1), "verdict"), ==, "ok");
    /* One note per failing link, one for the total. */
    g_assert_cmpuint(notes_with(&r, "nvlink_crc_data"), ==, 19);
    g_assert_true(any_note(&r, "warning: GPU 0 (0000:00:06.0): health: "
                           "nvlink_crc_data_total rose from 0 to "
                           "18000000000 during the run: 18000000000 over "
                           "its NVLinks, "));
    g_assert_true(any_note(&r, " per second (DCGM's watch fails a GPU's "
                           "total at 100 per second; this tool judges each "
                           "link at that rate); NVLinks that rose: 0, 1, 2, "
                           "3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, "
                           "17"));
    g_assert_true(any_note(&r, "GPU 0 (0000:00:06.0) NVLink 17: health: "
                           "nvlink_crc_data rose from 0 to 1000000000"));
    res_clear(&r);

    run_with_nvml_links(&r, "18", "nvlink_crc_flit:1:4=2+1@1",
                        "--quick --size-mib 1");
    c = health_counter(&r, 1, -1, "nvlink_crc_flit_total");
    g_assert_nonnull(c);
    g_assert_cmpint(json_object_get_int_member(c, "after") -
                    json_object_get_int_member(c, "before"), ==, 1);
    g_assert_cmpstr(str_member(c, "verdict"), ==, "warning");
    g_assert_true(any_note(&r, "warning: GPU 1 (0000:00:07.0): health: "
                           "nvlink_crc_flit_total rose from 2 to 3"));
    {
        /* The stand-in's run is milliseconds long: one error may be past
         * 100 a second; the link's verdict decides the exit code. */
        bool fails = !g_strcmp0(str_member(health_counter(
                                    &r, 1, 4, "nvlink_crc_flit"), "verdict"),
                                "failed");

        expect_exit(&r, fails ? 1 : 0);
    }
    g_assert_true(any_note(&r, "NVLinks that rose: 4"));
    res_clear(&r);
}

/* GPU @g's health not_read list holds @want. */
static bool health_not_read_has(const Res *r, int g, const char *want)
{
    JsonArray *list = json_object_get_array_member(health_of(r, g),
                                                   "not_read");

    for (guint i = 0; i < json_array_get_length(list); i++) {
        if (!g_strcmp0(json_array_get_string_element(list, i), want)) {
            return true;
        }
    }
    return false;
}

/*
 * A counter that went down between its readings (a volatile ECC count
 * resets with the GPU) is "not read", with why, and never a pass or a
 * fail: its values stay in the JSON with the verdict "not read". Before:
 * "ok", and nothing in not_read.
 */
static void test_health_went_down(void)
{
    static const char *const went_down =
        "the counter went down: reset during the run?";
    JsonObject *c;
    Res r = { 0 };

    run_with_nvml(&r, "ecc_uncorrected_volatile:0=3-3@1,"
                  "nvlink_replay:1:1=4-1@1", "--quick --size-mib 1");
    expect_exit(&r, 0);
    c = health_counter(&r, 0, -1, "ecc_uncorrected_volatile");
    g_assert_nonnull(c);
    g_assert_cmpint(json_object_get_int_member(c, "before"), ==, 3);
    g_assert_cmpint(json_object_get_int_member(c, "after"), ==, 0);
    g_assert_cmpstr(str_member(c, "verdict"), ==, "not read");
    c = health_counter(&r, 1, 1, "nvlink_replay");
    g_assert_nonnull(c);
    g_assert_cmpstr(str_member(c, "verdict"), ==, "not read");
    {
        g_autofree char *ecc = g_strdup_printf(
            "ecc_uncorrected_volatile: %s", went_down);
        g_autofree char *replay = g_strdup_printf("nvlink_replay: %s",
                                                  went_down);

        g_assert_true(health_not_read_has(&r, 0, ecc));
        g_assert_true(health_not_read_has(&r, 1, replay));
    }
    /* The GPUs' other counters were read and did not rise. */
    g_assert_cmpstr(str_member(health_of(&r, 0), "verdict"), ==, "ok");
    g_assert_cmpstr(str_member(health_of(&r, 1), "verdict"), ==, "ok");
    res_clear(&r);
}

/*
 * Each GPU's health reading before the run ends before the GPU gets any
 * work (its source fill), and the reading after the run begins after the
 * last work of any GPU, with RDMA checks or without: the stand-in NVML
 * logs each counter read, the stand-in CUDA each piece of work, in one
 * file. Seen failing with the reading before moved after cuda_allocate.
 */
static void health_reading_order(const char *args)
{
    g_autofree char *dir = g_dir_make_tmp("health-order-XXXXXX", NULL);
    g_autofree char *file = NULL, *text = NULL;
    g_autofree char *libs = g_strdup_printf("%s:%s",
                                            g_getenv("FAKE_LIBCUDA_DIR"),
                                            g_getenv("FAKE_LIBNVML_DIR"));
    g_auto(GStrv) lines = NULL;
    const char *env[] = {
        "LD_LIBRARY_PATH", libs,
        "GPUP2P_FAKE_NVML_NVLINKS", "2",
        "GPUP2P_FAKE_EVENT_FILE", NULL,
        NULL,
    };
    int first_work[2] = { -1, -1 }, last_work = -1;
    int reads[2][2] = { { 0 } };
    Res r = { 0 };

    g_assert_nonnull(dir);
    file = g_build_filename(dir, "events", NULL);
    env[5] = file;
    run_standin_env(&r, fixture(), H200_BUS_IDS, NULL, NULL, args, env);
    expect_exit(&r, 0);
    g_assert_true(g_file_get_contents(file, &text, NULL, NULL));
    lines = g_strsplit(text, "\n", -1);
    for (int i = 0; lines[i]; i++) {
        int g;

        if (sscanf(lines[i], "cuda work %d", &g) == 1) {
            g_assert_cmpint(g, >=, 0);
            g_assert_cmpint(g, <, 2);
            if (first_work[g] < 0) {
                first_work[g] = i;
            }
            last_work = i;
        }
    }
    for (int i = 0; lines[i]; i++) {
        unsigned n;
        int g;

        if (sscanf(lines[i], "nvml read %d %u", &g, &n) != 2) {
            continue;
        }
        g_assert_cmpint(g, >=, 0);
        g_assert_cmpint(g, <, 2);
        g_assert_cmpuint(n, <, 2);
        reads[g][n]++;
        if (n == 0) {
            /* Before the run: ahead of the GPU's first work. */
            g_assert_cmpint(first_work[g], >=, 0);
            g_assert_cmpint(i, <, first_work[g]);
        } else {
            /* After it: behind every GPU's last work. */
            g_assert_cmpint(i, >, last_work);
        }
    }
    for (int g = 0; g < 2; g++) {
        /* ECC 2, retired pages 2, remapped rows 4, two links of 4 each. */
        g_assert_cmpint(reads[g][0], ==, 16);
        g_assert_cmpint(reads[g][1], ==, 16);
    }
    g_assert_cmpstr(str_member(health_of(&r, 0), "verdict"), ==, "ok");
    g_assert_cmpstr(str_member(health_of(&r, 1), "verdict"), ==, "ok");
    res_clear(&r);
    g_unlink(file);
    g_rmdir(dir);
}

static void test_health_reading_order(void)
{
    health_reading_order("--quick --size-mib 1");
    health_reading_order("--quick --skip-rdma --size-mib 1");
}

/*
 * Xid events are never a pass where they cannot be attributed: a GPU
 * NVML cannot find after the run (it fell off the bus) has its counters
 * "not read" with why, and an Xid for a device that is none of the GPUs
 * NVML named makes every GPU's xid_events "not read", but for a GPU with
 * Xids of its own, which still fails. Before: the lost GPU's xid_events
 * read 0 and "ok", and the stray event was dropped.
 */
static void test_health_xid_unattributed(void)
{
    static const char *const lost_why =
        "NVML could not find the GPU after the run "
        "(nvmlDeviceGetHandleByPciBusId_v2: NVML error 15)";
    static const char *const stray_why =
        "an Xid event came for a device that is none of the GPUs NVML "
        "named after the run";
    g_autofree char *xid_lost = g_strdup_printf("xid_events: %s", lost_why);
    g_autofree char *ecc_lost = g_strdup_printf("ecc_uncorrected_volatile: "
                                                "%s", lost_why);
    g_autofree char *xid_stray = g_strdup_printf("xid_events: %s",
                                                 stray_why);
    Res r = { 0 };

    /* GPU 1 lost before its counters are read again: none is compared. */
    run_with_nvml_env(&r, "2", NULL, "1@1", NULL, "--quick --size-mib 1");
    expect_exit(&r, 0);
    g_assert_null(health_counter(&r, 1, -1, "xid_events"));
    g_assert_true(health_not_read_has(&r, 1, xid_lost));
    g_assert_true(health_not_read_has(&r, 1, ecc_lost));
    g_assert_cmpstr(str_member(health_of(&r, 1), "verdict"), ==, "not read");
    g_assert_cmpstr(str_member(health_of(&r, 0), "verdict"), ==, "ok");
    res_clear(&r);

    /* Lost only when its Xids are counted. */
    run_with_nvml_env(&r, "2", NULL, "1@2", NULL, "--quick --size-mib 1");
    expect_exit(&r, 0);
    g_assert_null(health_counter(&r, 1, -1, "xid_events"));
    g_assert_true(health_not_read_has(&r, 1, xid_lost));
    g_assert_false(health_not_read_has(&r, 1, ecc_lost));
    g_assert_nonnull(health_counter(&r, 0, -1, "xid_events"));
    res_clear(&r);

    /* ... and it raised Xids: they are nobody's we can name. */
    run_with_nvml_env(&r, "2", "xid_events:1=2", "1@2", NULL,
                      "--quick --size-mib 1");
    expect_exit(&r, 0);
    g_assert_null(health_counter(&r, 0, -1, "xid_events"));
    g_assert_true(health_not_read_has(&r, 0, xid_stray));
    g_assert_true(health_not_read_has(&r, 1, xid_lost));
    g_assert_true(any_note(&r, "NVML delivered 2 Xid event(s) (last Xid "
                           "79) for a device that is none of the GPUs"));
    res_clear(&r);

    /* A stray Xid: no GPU's xid_events is "ok"; GPU 0's own still fails. */
    run_with_nvml_env(&r, "2", NULL, NULL, "1", "--quick --size-mib 1");
    expect_exit(&r, 0);
    for (int g = 0; g < 2; g++) {
        g_assert_null(health_counter(&r, g, -1, "xid_events"));
        g_assert_true(health_not_read_has(&r, g, xid_stray));
    }
    res_clear(&r);
    run_with_nvml_env(&r, "2", "xid_events:0=1", NULL, "3",
                      "--quick --size-mib 1");
    expect_exit(&r, 1);
    g_assert_cmpstr(str_member(health_counter(&r, 0, -1, "xid_events"),
                               "verdict"), ==, "failed");
    g_assert_true(health_not_read_has(&r, 1, xid_stray));
    g_assert_true(any_note(&r, "NVML delivered 3 Xid event(s)"));
    res_clear(&r);
}

/* Without NVML the health section says why it was not read, in the text
 * and per GPU in the JSON; never a pass or a fail. */
static void test_health_without_nvml(void)
{
    g_autofree char *cmd = g_strdup_printf(
        "env LD_LIBRARY_PATH=%s GPUP2P_FAKE_CUDA_BUS_IDS=%s %s --sysfs-root "
        "%s --with-cuda --skip-rdma --quick --size-mib 1",
        g_getenv("FAKE_LIBCUDA_DIR"), H200_BUS_IDS,
        g_getenv("GPUP2P_VERIFY_CUDA"), fixture());
    g_autofree char *out = NULL;
    JsonObject *health;
    Res r = { 0 };
    int ws;

    run_standin(&r, fixture(), H200_BUS_IDS, NULL, NULL,
                "--quick --size-mib 1");
    expect_exit(&r, 0);
    if (!g_str_has_prefix(str_member(r.root, "nvml"), "NVML not loaded")) {
        g_test_skip("an NVML loads here: this checks a machine without it");
        res_clear(&r);
        return;
    }
    for (int g = 0; g < 2; g++) {
        health = health_of(&r, g);
        g_assert_cmpstr(str_member(health, "verdict"), ==, "not read");
        g_assert_true(g_str_has_prefix(json_array_get_string_element(
            json_object_get_array_member(health, "not_read"), 0),
            "NVML not loaded"));
    }
    res_clear(&r);
    g_assert_true(g_spawn_command_line_sync(cmd, &out, NULL, &ws, NULL));
    g_assert_cmpint(WEXITSTATUS(ws), ==, 0);
    g_assert_nonnull(strstr(out, "\nHealth: not read: NVML not loaded"));
}


/*
 * Two GPUs on a flat root bus, GPU i on NUMA node @node[i] (-1: none)
 * with local_cpulist @cpus[i]; @nodes node directories (nodeN/cpulist
 * "N"). Bus ids in @bus_ids.
 */
static SysfsBuilder *numa_capture(const int *node, const char *const *cpus,
                                  int nodes, char **bus_ids)
{
    SysfsBuilder *sb = sb_new();

    sb_add(sb, NULL, "0000:00:00.0", SB_HOST_BRIDGE, 0x8086, 0x29c0,
           0x060000, 0, -1, NULL);
    for (int i = 0; i < 2; i++) {
        g_autofree char *bdf = g_strdup_printf("0000:00:%02x.0", i + 1);
        g_autofree char *rel = g_strdup_printf("sys/bus/pci/devices/%s/"
                                               "local_cpulist", bdf);
        g_autofree char *text = g_strdup_printf("%s\n", cpus[i]);

        sb_add(sb, NULL, bdf, SB_ENDPOINT, 0x10de, 0x2335, 0x030200,
               node[i], i + 1, NULL);
        sb_set_p2pcap(sb, bdf, 1, 8);
        sb_write(sb, rel, text);
    }
    for (int n = 0; n < nodes; n++) {
        g_autofree char *rel = g_strdup_printf("sys/devices/system/node/"
                                               "node%d/cpulist", n);
        g_autofree char *text = g_strdup_printf("%d\n", n);

        sb_write(sb, rel, text);
    }
    *bus_ids = g_strdup("0000:00:01.0,0000:00:02.0");
    return sb;
}

/* The test's own affinity as the stand-in writes it ("0-1"), and
 * whether CPUs 0 and 1 are both in it. */
static char *own_cpus(bool *has_0_and_1)
{
    cpu_set_t set;
    GString *s = g_string_new(NULL);

    g_assert_cmpint(sched_getaffinity(0, sizeof(set), &set), ==, 0);
    *has_0_and_1 = CPU_ISSET(0, &set) && CPU_ISSET(1, &set);
    for (int c = 0; c < CPU_SETSIZE; c++) {
        int end = c;

        if (!CPU_ISSET(c, &set)) {
            continue;
        }
        while (end + 1 < CPU_SETSIZE && CPU_ISSET(end + 1, &set)) {
            end++;
        }
        g_string_append_printf(s, end > c ? "%s%d-%d" : "%s%d",
                               s->len ? "," : "", c, end);
        c = end;
    }
    return g_string_free(s, FALSE);
}

/* The lines of the stand-in's placement file that start with @what
 * (e.g. "h2d 1 "), each split on spaces. */
static GPtrArray *place_lines(const char *file, const char *what)
{
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);

    g_assert_true(g_file_get_contents(file, &text, NULL, NULL));
    lines = g_strsplit(text, "\n", -1);
    for (int i = 0; lines[i]; i++) {
        if (g_str_has_prefix(lines[i], what)) {
            g_ptr_array_add(out, g_strsplit(lines[i], " ", -1));
        }
    }
    return out;
}

/* Field "@key=" of a split line, or NULL. */
static const char *place_field(char **fields, const char *key)
{
    gsize n = strlen(key);

    for (int i = 0; fields[i]; i++) {
        if (!strncmp(fields[i], key, n) && fields[i][n] == '=') {
            return fields[i] + n + 1;
        }
    }
    return NULL;
}

/* Runs --benchmark (or the validation run) for the host figures and the
 * one-to-all aggregate on @root; the placement file's path in *file. */
static void run_placed(Res *r, const char *root, const char *bus_ids,
                       bool benchmark, char **file)
{
    g_autofree char *dir = g_dir_make_tmp("place-XXXXXX", NULL);
    const char *env[3] = { "GPUP2P_FAKE_CUDA_PLACEMENT_FILE", NULL, NULL };

    g_assert_nonnull(dir);
    *file = g_build_filename(dir, "placement", NULL);
    env[1] = *file;
    run_standin_env(r, root, bus_ids, NULL, NULL, benchmark ?
                    "--benchmark --size-mib 1 --samples 1 --figures "
                    "host_to_device_memcpy_ce,device_to_host_memcpy_ce,"
                    "one_to_all_write_ce" :
                    "--size-mib 1 --samples 1 --figures "
                    "host_to_device_memcpy_ce,device_to_host_memcpy_ce,"
                    "one_to_all_write_ce", env);
}

static void remove_placed(char *file)
{
    g_autofree char *dir = g_path_get_dirname(file);

    g_unlink(file);
    g_rmdir(dir);
    g_free(file);
}

/*
 * Every host copy of GPU @g ran on @cpus with memory pinned by a thread
 * on @cpus under @policy (NULL: no check of the policy); at least one
 * each way.
 */
static void expect_host_copies(const char *file, int g, const char *cpus,
                               const char *policy)
{
    for (int d = 0; d < 2; d++) {
        g_autofree char *what = g_strdup_printf("%s %d ", d ? "d2h" : "h2d",
                                                g);
        g_autoptr(GPtrArray) lines = place_lines(file, what);

        g_assert_cmpuint(lines->len, >, 0);
        for (guint i = 0; i < lines->len; i++) {
            char **f = g_ptr_array_index(lines, i);

            g_assert_cmpstr(place_field(f, "cpus"), ==, cpus);
            g_assert_cmpstr(place_field(f, "alloc_cpus"), ==, cpus);
            if (policy) {
                g_assert_cmpstr(place_field(f, "alloc_policy"), ==, policy);
            }
        }
    }
}

static JsonObject *host_placement(const Res *r, int g)
{
    return json_object_get_object_member(gpu_of(r, g), "host_placement");
}

/*
 * --benchmark places each GPU's host figures as nvbandwidth does: the
 * measuring thread on the GPU's node's CPUs (local_cpulist), its pinned
 * buffers allocated there with the node preferred; the thread's affinity
 * and policy put back afterwards. The stand-in records the thread's
 * affinity and memory policy at each copy and at each pinning, so a
 * thread left unpinned, or pinned to the wrong node, fails here.
 */
static void test_host_placement(void)
{
    static const int node[2] = { 0, 1 };
    static const char *const cpus[2] = { "0", "1" };
    g_autofree char *bus_ids = NULL;
    g_autoptr(SysfsBuilder) sb = numa_capture(node, cpus, 2, &bus_ids);
    bool both = false;
    g_autofree char *mine = own_cpus(&both);
    int mode = -1;
    unsigned long nodes[17] = { 0 };
    char *file = NULL;
    Res r = { 0 };

    if (!both) {
        g_test_skip("needs CPUs 0 and 1 in this process's affinity");
        return;
    }
    g_assert_cmpint(syscall(SYS_get_mempolicy, &mode, nodes, 1025UL, NULL,
                            0UL), ==, 0);
    if (mode != MPOL_DEFAULT) {
        g_test_skip("needs the default memory policy here");
        return;
    }
    run_placed(&r, sb_root(sb), bus_ids, true, &file);
    expect_exit(&r, 0);
    for (int g = 0; g < 2; g++) {
        JsonObject *p = host_placement(&r, g);
        g_autofree char *policy = NULL;

        g_assert_cmpint(json_object_get_int_member(p, "host_numa_node"), ==,
                        node[g]);
        g_assert_cmpstr(str_member(p, "cpus"), ==, cpus[g]);
        /* A node this machine lacks cannot be preferred: the reason says
         * so, and the memory comes from the pinned thread's own policy. */
        if (json_object_get_null_member(p, "memory_preferred_numa_node")) {
            g_assert_nonnull(strstr(str_member(p, "reason"),
                                    "set_mempolicy(MPOL_PREFERRED, node"));
            policy = g_strdup("default");
        } else {
            g_assert_cmpint(json_object_get_int_member(p, "memory_preferred_numa_node"),
                            ==, node[g]);
            g_assert_true(json_object_get_null_member(p, "reason"));
            policy = g_strdup_printf("preferred:%d", node[g]);
        }
        expect_host_copies(file, g, cpus[g], policy);
    }
    /* GPU 0's node exists everywhere: its memory was preferred there. */
    g_assert_cmpint(json_object_get_int_member(host_placement(&r, 0),
                                               "memory_preferred_numa_node"), ==, 0);
    /* Put back: GPU 1's aggregate runs after GPU 0's host figures. */
    {
        g_autoptr(GPtrArray) peer = place_lines(file, "peer 1-");

        g_assert_cmpuint(peer->len, >, 0);
        for (guint i = 0; i < peer->len; i++) {
            char **f = g_ptr_array_index(peer, i);

            g_assert_cmpstr(place_field(f, "cpus"), ==, mine);
            g_assert_cmpstr(place_field(f, "policy"), ==, "default");
        }
    }
    g_assert_nonnull(strstr(r.out, "\"host_numa_node\""));
    remove_placed(file);
    res_clear(&r);
}

/*
 * Nothing placed, and the reason given, where the node is unknown, where
 * there is one node, and in the validation run; the thread then keeps
 * its own affinity at every host copy.
 */
static void test_host_placement_none(void)
{
    static const int unknown[2] = { -1, -1 }, zero[2] = { 0, 0 };
    static const char *const cpus[2] = { "0", "1" };
    static const struct {
        const int *node;
        int nodes;
        bool benchmark;
        const char *reason;
    } cases[] = {
        { unknown, 2, true, "NUMA node is unknown (numa_node -1)" },
        { zero, 1, true, "one NUMA node" },
        { zero, 2, false, "the validation run shares one set of host "
          "buffers" },
    };
    bool both = false;
    g_autofree char *mine = own_cpus(&both);

    for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
        g_autofree char *bus_ids = NULL;
        g_autoptr(SysfsBuilder) sb = numa_capture(cases[c].node, cpus,
                                                  cases[c].nodes, &bus_ids);
        char *file = NULL;
        Res r = { 0 };

        run_placed(&r, sb_root(sb), bus_ids, cases[c].benchmark, &file);
        expect_exit(&r, 0);
        for (int g = 0; g < 2; g++) {
            JsonObject *p = host_placement(&r, g);

            g_assert_true(json_object_get_null_member(p, "host_numa_node"));
            g_assert_true(json_object_get_null_member(p, "cpus"));
            g_assert_true(json_object_get_null_member(p, "memory_preferred_numa_node"));
            g_assert_nonnull(strstr(str_member(p, "reason"),
                                    cases[c].reason));
            expect_host_copies(file, g, mine, NULL);
        }
        remove_placed(file);
        res_clear(&r);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/verify-cuda-standin/healthy-h200", test_healthy_h200);
    g_test_add_func("/verify-cuda-standin/corrupt-byte", test_corrupt_byte);
    g_test_add_func("/verify-cuda-standin/benchmark-mode",
                    test_benchmark_mode);
    g_test_add_func("/verify-cuda-standin/dropped-copy", test_dropped_copy);
    g_test_add_func("/verify-cuda-standin/host-dropped", test_host_dropped);
    g_test_add_func("/verify-cuda-standin/sm-latency-value",
                    test_sm_latency_value);
    g_test_add_func("/verify-cuda-standin/untested", test_untested);
    g_test_add_func("/verify-cuda-standin/staged-48mib", test_staged_48mib);
    g_test_add_func("/verify-cuda-standin/corrupt-non-last-copy",
                    test_corrupt_non_last_copy);
    g_test_add_func("/verify-cuda-standin/ce-latency-checked",
                    test_ce_latency_checked);
    g_test_add_func("/verify-cuda-standin/fail-source-blame",
                    test_fail_source_blame);
    g_test_add_func("/verify-cuda-standin/corrupt-one-pair",
                    test_corrupt_one_pair);
    g_test_add_func("/verify-cuda-standin/hang-watchdog", test_hang_watchdog);
    g_test_add_func("/verify-cuda-standin/lost-gpu", test_lost_gpu);
    g_test_add_func("/verify-cuda-standin/nvlink-fault", test_nvlink_fault);
    g_test_add_func("/verify-cuda-standin/bidirectional-total",
                    test_bidirectional_total);
    g_test_add_func("/verify-cuda-standin/ce-read-issuer",
                    test_ce_read_issuer);
    g_test_add_func("/verify-cuda-standin/usage", test_usage);
    g_test_add_func("/verify-cuda-standin/memory-bound", test_memory_bound);
    g_test_add_func("/verify-cuda-standin/one-gpu-host-figures",
                    test_one_gpu_host_figures);
    g_test_add_func("/verify-cuda-standin/host-corrupt", test_host_corrupt);
    g_test_add_func("/verify-cuda-standin/list", test_list);
    g_test_add_func("/verify-cuda-standin/aggregate-bad-bytes",
                    test_aggregate_bad_bytes);
    g_test_add_func("/verify-cuda-standin/nvlink-fault-sticky",
                    test_nvlink_fault_sticky);
    g_test_add_func("/verify-cuda-standin/aggregate-span",
                    test_aggregate_span);
    g_test_add_func("/verify-cuda-standin/figures-select",
                    test_figures_select);
    g_test_add_func("/verify-cuda-standin/batch-transient",
                    test_batch_transient);
    g_test_add_func("/verify-cuda-standin/aggregate-transient",
                    test_aggregate_transient);
    g_test_add_func("/verify-cuda-standin/peer-query-error",
                    test_peer_query_error);
    g_test_add_func("/verify-cuda-standin/missing-not-hidden",
                    test_missing_not_hidden);
    g_test_add_func("/verify-cuda-standin/fault-at-every-copy",
                    test_fault_at_every_copy);
    g_test_add_func("/verify-cuda-standin/ctx-set-failure",
                    test_ctx_set_failure);
    g_test_add_func("/verify-cuda-standin/stdout-write-failure",
                    test_stdout_write_failure);
    g_test_add_func("/verify-cuda-standin/health-policy",
                    test_health_policy);
    g_test_add_func("/verify-cuda-standin/health-not-supported",
                    test_health_not_supported);
    g_test_add_func("/verify-cuda-standin/health-crc-sum",
                    test_health_crc_sum);
    g_test_add_func("/verify-cuda-standin/health-went-down",
                    test_health_went_down);
    g_test_add_func("/verify-cuda-standin/health-reading-order",
                    test_health_reading_order);
    g_test_add_func("/verify-cuda-standin/health-xid-unattributed",
                    test_health_xid_unattributed);
    g_test_add_func("/verify-cuda-standin/health-without-nvml",
                    test_health_without_nvml);
    g_test_add_func("/verify-cuda-standin/pci-only-verdicts",
                    test_pci_only_verdicts);
    g_test_add_func("/verify-cuda-standin/host-placement",
                    test_host_placement);
    g_test_add_func("/verify-cuda-standin/host-placement-none",
                    test_host_placement_none);
    return g_test_run();
}
