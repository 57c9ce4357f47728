/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The measuring thread and its pinned host memory near a GPU's NUMA node
 * for the GPU's host figures (host-place.h says what nvbandwidth does).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/mempolicy.h>

#include "host-place.h"

/* CPUs a set holds: as many as a kernel with CONFIG_NR_CPUS=8192. */
#define PLACE_MAX_CPUS 8192
#define PLACE_MAX_NODES 1024

bool host_place_parse_cpulist(const char *text, void *set, size_t setsize)
{
    const char *at = text;

    CPU_ZERO_S(setsize, (cpu_set_t *)set);
    while (*at && *at != '\n') {
        char *end;
        unsigned long lo = strtoul(at, &end, 10), hi = lo;

        if (end == at) {
            return false;
        }
        if (*end == '-') {
            at = end + 1;
            hi = strtoul(at, &end, 10);
            if (end == at || hi < lo) {
                return false;
            }
        }
        if (hi >= setsize * 8) {
            return false;
        }
        for (unsigned long c = lo; c <= hi; c++) {
            CPU_SET_S(c, setsize, (cpu_set_t *)set);
        }
        at = end;
        if (*at == ',') {
            at++;
        } else if (*at && *at != '\n') {
            return false;
        }
    }
    return CPU_COUNT_S(setsize, (cpu_set_t *)set) > 0;
}

char *host_place_format_cpulist(const void *set, size_t setsize)
{
    GString *s = g_string_new(NULL);
    size_t n = setsize * 8;

    for (size_t c = 0; c < n; c++) {
        size_t end = c;

        if (!CPU_ISSET_S(c, setsize, (const cpu_set_t *)set)) {
            continue;
        }
        while (end + 1 < n &&
               CPU_ISSET_S(end + 1, setsize, (const cpu_set_t *)set)) {
            end++;
        }
        g_string_append_printf(s, "%s%zu", s->len ? "," : "", c);
        if (end > c) {
            g_string_append_printf(s, "-%zu", end);
        }
        c = end;
    }
    return g_string_free(s, FALSE);
}

/* NUMA nodes under @root: the nodeN directories of sysfs. */
static int count_nodes(const char *root)
{
    g_autofree char *dir = g_build_filename(root, "sys/devices/system/node",
                                            NULL);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;
    int n = 0;

    while (d && (name = g_dir_read_name(d))) {
        n += g_str_has_prefix(name, "node") && g_ascii_isdigit(name[4]);
    }
    return n;
}

/* The CPUs near GPU @bdf: its local_cpulist, else its node's cpulist. */
static bool node_cpus(const char *root, const char *bdf, int node,
                      cpu_set_t *set, size_t setsize, char *why, size_t n)
{
    g_autofree char *dev = g_build_filename(root, "sys/bus/pci/devices", bdf,
                                            "local_cpulist", NULL);
    g_autofree char *name = g_strdup_printf("node%d", node);
    g_autofree char *of_node = g_build_filename(root, "sys/devices/system/"
                                                "node", name, "cpulist",
                                                NULL);
    const char *paths[] = { dev, of_node };

    for (guint i = 0; i < G_N_ELEMENTS(paths); i++) {
        g_autofree char *text = NULL;

        /* Unreadable, or empty (a node without CPUs of its own): the
         * next path. */
        if (!g_file_get_contents(paths[i], &text, NULL, NULL) ||
            !*g_strstrip(text)) {
            continue;
        }
        if (host_place_parse_cpulist(text, set, setsize)) {
            return true;
        }
        g_snprintf(why, n, "%s: not a CPU list: \"%s\"", paths[i], text);
        return false;
    }
    g_snprintf(why, n, "neither %s nor %s names a CPU", dev, of_node);
    return false;
}

/* The thread pinned to @want's CPUs that it may use; false, with why. */
static bool pin_thread(HostPlaceSaved *s, cpu_set_t *want, size_t setsize,
                       VerifyHostPlacement *p)
{
    cpu_set_t *old = CPU_ALLOC(PLACE_MAX_CPUS);
    g_autofree char *wanted = host_place_format_cpulist(want, setsize);

    if (sched_getaffinity(0, setsize, old)) {
        g_snprintf(p->why, sizeof(p->why), "thread not pinned: "
                   "sched_getaffinity: %s", g_strerror(errno));
        CPU_FREE(old);
        return false;
    }
    CPU_AND_S(setsize, want, want, old);
    if (!CPU_COUNT_S(setsize, want)) {
        g_autofree char *allowed = host_place_format_cpulist(old, setsize);

        g_snprintf(p->why, sizeof(p->why), "thread not pinned: none of the "
                   "node's CPUs (%s) is allowed to it (%s)", wanted, allowed);
        CPU_FREE(old);
        return false;
    }
    if (sched_setaffinity(0, setsize, want)) {
        g_snprintf(p->why, sizeof(p->why), "thread not pinned: "
                   "sched_setaffinity: %s", g_strerror(errno));
        CPU_FREE(old);
        return false;
    }
    s->saved_cpus = old;
    return true;
}

/* The thread's memory policy: prefer @node (the pages of a full node
 * come from another, as with the local policy nvbandwidth relies on). */
static bool prefer_node(HostPlaceSaved *s, int node, char *why, size_t n)
{
    unsigned long mask[G_N_ELEMENTS(s->saved_nodes)] = { 0 };
    const unsigned long bits = 8 * sizeof(long);
    const unsigned long maxnode = PLACE_MAX_NODES + 1;

    if (syscall(SYS_get_mempolicy, &s->saved_mode, s->saved_nodes, maxnode,
                NULL, 0UL)) {
        g_snprintf(why, n, "get_mempolicy: %s", g_strerror(errno));
        return false;
    }
    /* A policy the user chose (numactl --membind, --interleave) stays:
     * nvbandwidth sets none, so it would honour it too. */
    if ((s->saved_mode & ~MPOL_MODE_FLAGS) != MPOL_DEFAULT &&
        (s->saved_mode & ~MPOL_MODE_FLAGS) != MPOL_LOCAL) {
        g_snprintf(why, n, "the process's own memory policy (mode %d) "
                   "kept", s->saved_mode & ~MPOL_MODE_FLAGS);
        return false;
    }
    mask[node / bits] = 1UL << (node % bits);
    if (syscall(SYS_set_mempolicy, MPOL_PREFERRED, mask, maxnode)) {
        g_snprintf(why, n, "set_mempolicy(MPOL_PREFERRED, node %d): %s",
                   node, g_strerror(errno));
        return false;
    }
    s->policy_set = true;
    return true;
}

void host_place_enter(const char *root, const VerifyGpu *g,
                      HostPlaceSaved *s, VerifyHostPlacement *p)
{
    size_t setsize = CPU_ALLOC_SIZE(PLACE_MAX_CPUS);
    cpu_set_t *want = NULL;
    char policy_why[160];
    int nodes;

    memset(s, 0, sizeof(*s));
    memset(p, 0, sizeof(*p));
    p->tried = true;
    p->node = p->memory_node = -1;
    if (g->numa_node < 0) {
        g_strlcpy(p->why, "not placed: the GPU's NUMA node is unknown "
                  "(numa_node -1)", sizeof(p->why));
        return;
    }
    nodes = count_nodes(root);
    if (nodes < 2) {
        g_snprintf(p->why, sizeof(p->why), "not placed: %s NUMA node%s in "
                   "sys/devices/system/node", nodes ? "one" : "no",
                   nodes ? "" : "s");
        return;
    }
    if (g->numa_node >= PLACE_MAX_NODES) {
        g_snprintf(p->why, sizeof(p->why), "not placed: node %d is past "
                   "the %d this tool handles", g->numa_node, PLACE_MAX_NODES);
        return;
    }
    want = CPU_ALLOC(PLACE_MAX_CPUS);
    if (!node_cpus(root, g->bdf, g->numa_node, want, setsize, p->why,
                   sizeof(p->why)) ||
        !pin_thread(s, want, setsize, p)) {
        /* Memory follows the thread in nvbandwidth: neither, then. */
        CPU_FREE(want);
        return;
    }
    {
        g_autofree char *cpus = host_place_format_cpulist(want, setsize);

        /* A list longer than the field (CPUs numbered across nodes)
         * ends in "...", never in a cut number. */
        if (g_strlcpy(p->cpus, cpus, sizeof(p->cpus)) >= sizeof(p->cpus)) {
            char *cut = strrchr(p->cpus, ',');

            g_strlcpy(cut && cut - p->cpus < (ptrdiff_t)sizeof(p->cpus) - 4 ?
                      cut + 1 : p->cpus + sizeof(p->cpus) - 4, "...", 4);
        }
    }
    CPU_FREE(want);
    p->node = g->numa_node;
    if (prefer_node(s, g->numa_node, policy_why, sizeof(policy_why))) {
        p->memory_node = g->numa_node;
    } else {
        /* The pinned thread's local policy still takes the node's pages
         * first: nvbandwidth's own method. */
        g_snprintf(p->why, sizeof(p->why), "memory policy not set (%s): "
                   "pinned memory from the thread's own policy",
                   policy_why);
    }
}

void host_place_leave(HostPlaceSaved *s, VerifyReport *r)
{
    const unsigned long maxnode = PLACE_MAX_NODES + 1;

    if (s->policy_set &&
        syscall(SYS_set_mempolicy, s->saved_mode, s->saved_nodes, maxnode)) {
        verify_note(r, "the thread's memory policy could not be put back "
                    "after a host figure: set_mempolicy: %s",
                    g_strerror(errno));
    }
    s->policy_set = false;
    if (s->saved_cpus &&
        sched_setaffinity(0, CPU_ALLOC_SIZE(PLACE_MAX_CPUS), s->saved_cpus)) {
        verify_note(r, "the thread's CPU affinity could not be put back "
                    "after a host figure: sched_setaffinity: %s",
                    g_strerror(errno));
    }
    if (s->saved_cpus) {
        CPU_FREE(s->saved_cpus);
        s->saved_cpus = NULL;
    }
}
