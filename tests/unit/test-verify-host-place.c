/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * --benchmark's host placement (host-place.c): the sysfs cpulist parser on
 * what the kernel writes and on what it never writes, and a memory policy
 * the process chose itself (numactl --membind) kept through a placement
 * and put back exactly. The tool-level rows (where each host copy ran)
 * are in test-verify-cuda-standin.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/mempolicy.h>
#include <glib.h>
#include <glib/gstdio.h>

#include "host-place.h"

#define SET_CPUS 8192

static char *parsed(const char *text)
{
    size_t size = CPU_ALLOC_SIZE(SET_CPUS);
    cpu_set_t *set = CPU_ALLOC(SET_CPUS);
    char *out = NULL;

    if (host_place_parse_cpulist(text, set, size)) {
        out = host_place_format_cpulist(set, size);
    }
    CPU_FREE(set);
    return out;
}

static void test_cpulist_kernel(void)
{
    static const char *const cases[][2] = {
        { "0-7\n", "0-7" }, { "0\n", "0" }, { "0-3,8-11\n", "0-3,8-11" },
        { "1,3,5,7\n", "1,3,5,7" }, { "8191\n", "8191" },
        { "0-1,2-3\n", "0-3" },
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *got = parsed(cases[i][0]);

        g_assert_cmpstr(got, ==, cases[i][1]);
    }
}

static void test_cpulist_rejects(void)
{
    /* Empty (a CPU-less node), reversed, past the set, not a list. */
    static const char *const bad[] = {
        "", "\n", "3-1", "8192", "0-8192", "99999999999999999999", "-1",
        "1-2-3", "0-7:2", "a", "0;1",
    };

    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *got = parsed(bad[i]);

        if (got) {
            g_test_message("\"%s\" read as %s", bad[i], got);
        }
        g_assert_null(got);
    }
}

/* A two-node sysfs under @root with the GPU 0000:01:00.0 on node 1: its
 * local_cpulist @local, node 1's cpulist @node1_cpus. */
static void two_nodes_local(const char *root, const char *local,
                            const char *node1_cpus);

static void two_nodes(const char *root, const char *node1_cpus)
{
    two_nodes_local(root, node1_cpus, node1_cpus);
}

static void two_nodes_local(const char *root, const char *local,
                            const char *node1_cpus)
{
    g_autofree char *n0 = g_build_filename(root, "sys/devices/system/node/"
                                           "node0", NULL);
    g_autofree char *n1 = g_build_filename(root, "sys/devices/system/node/"
                                           "node1", NULL);
    g_autofree char *dev = g_build_filename(root, "sys/bus/pci/devices/"
                                            "0000:01:00.0", NULL);
    g_autofree char *list = g_build_filename(dev, "local_cpulist", NULL);
    g_autofree char *n1list = g_build_filename(n1, "cpulist", NULL);

    g_assert_cmpint(g_mkdir_with_parents(n0, 0755), ==, 0);
    g_assert_cmpint(g_mkdir_with_parents(n1, 0755), ==, 0);
    g_assert_cmpint(g_mkdir_with_parents(dev, 0755), ==, 0);
    g_assert_true(g_file_set_contents(list, local, -1, NULL));
    g_assert_true(g_file_set_contents(n1list, node1_cpus, -1, NULL));
}

static void test_own_policy_kept(void)
{
    g_autofree char *root = g_dir_make_tmp("host-place-XXXXXX", NULL);
    cpu_set_t before, after;
    unsigned long mask[17] = { 1 }, got_mask[17] = { 0 };
    int mode = -1;
    VerifyGpu g = { .numa_node = 1 };
    VerifyHostPlacement p;
    HostPlaceSaved s;
    VerifyReport r = { 0 };
    g_autofree char *cpus = NULL;

    g_assert_nonnull(root);
    g_assert_cmpint(sched_getaffinity(0, sizeof(before), &before), ==, 0);
    /* Node 1's CPUs: the first this thread may use. */
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, &before)) {
            cpus = g_strdup_printf("%d\n", c);
            break;
        }
    }
    two_nodes(root, cpus);
    g_strlcpy(g.bdf, "0000:01:00.0", sizeof(g.bdf));
    /* The process's own policy: bound to node 0. */
    if (syscall(SYS_set_mempolicy, MPOL_BIND, mask, 1025UL)) {
        g_test_skip("set_mempolicy(MPOL_BIND, node 0) refused here");
        return;
    }
    host_place_enter(root, &g, &s, &p);
    g_assert_cmpint(p.node, ==, 1);
    g_assert_cmpint(p.memory_node, ==, -1);
    g_assert_nonnull(strstr(p.why, "own memory policy"));
    g_assert_cmpint(syscall(SYS_get_mempolicy, &mode, got_mask, 1025UL,
                            NULL, 0UL), ==, 0);
    g_assert_cmpint(mode, ==, MPOL_BIND);
    host_place_leave(&s, &r);
    g_assert_cmpint(syscall(SYS_get_mempolicy, &mode, got_mask, 1025UL,
                            NULL, 0UL), ==, 0);
    g_assert_cmpint(mode, ==, MPOL_BIND);
    g_assert_cmpuint(got_mask[0], ==, 1);
    g_assert_cmpint(sched_getaffinity(0, sizeof(after), &after), ==, 0);
    g_assert_true(CPU_EQUAL(&before, &after));
    g_assert_cmpint(syscall(SYS_set_mempolicy, MPOL_DEFAULT, NULL, 0UL), ==,
                    0);
}

/* The first CPU this thread may use, as a cpulist line; to be freed. */
static char *first_own_cpu(void)
{
    cpu_set_t own;

    g_assert_cmpint(sched_getaffinity(0, sizeof(own), &own), ==, 0);
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, &own)) {
            return g_strdup_printf("%d\n", c);
        }
    }
    g_assert_not_reached();
}

/* A GPU whose local_cpulist is empty (its node has no CPUs listed there):
 * the node's own cpulist, not "not a CPU list". */
static void test_empty_local_cpulist(void)
{
    g_autofree char *root = g_dir_make_tmp("host-place-XXXXXX", NULL);
    g_autofree char *cpu = first_own_cpu();
    VerifyGpu g = { .numa_node = 1 };
    VerifyHostPlacement p;
    HostPlaceSaved s;
    VerifyReport r = { 0 };

    two_nodes_local(root, "\n", cpu);
    g_strlcpy(g.bdf, "0000:01:00.0", sizeof(g.bdf));
    host_place_enter(root, &g, &s, &p);
    /* (The memory policy may be refused: node 1 need not exist here.) */
    g_assert_null(strstr(p.why, "CPU list"));
    g_assert_cmpint(p.node, ==, 1);
    g_assert_cmpint(atoi(p.cpus), ==, atoi(cpu));
    host_place_leave(&s, &r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/verify-host-place/cpulist-kernel", test_cpulist_kernel);
    g_test_add_func("/verify-host-place/cpulist-rejects",
                    test_cpulist_rejects);
    g_test_add_func("/verify-host-place/own-policy-kept",
                    test_own_policy_kept);
    g_test_add_func("/verify-host-place/empty-local-cpulist",
                    test_empty_local_cpulist);
    return g_test_run();
}
