/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Host placement for a GPU's host figures (--benchmark), as nvbandwidth
 * v0.8 does it: before it allocates a GPU's pinned host buffer it pins
 * its thread to the CPUs NVML calls ideal for that GPU (the GPU's NUMA
 * node: nvmlDeviceSetCpuAffinity in setOptimalCpuAffinity(),
 * inline_common.h, called from HostBuffer::HostBuffer(), memcpy.cpp), so
 * that the pages come from that node. Here: the measuring thread's CPU
 * affinity set to the GPU's local_cpulist from sysfs, and the thread's
 * memory policy set to prefer the GPU's node while its buffers are
 * pinned; both put back afterwards. libnuma is not used (GPU machines
 * lack it): sched_setaffinity(2) and set_mempolicy(2) directly.
 */
#ifndef GPUP2P_HOST_PLACE_H
#define GPUP2P_HOST_PLACE_H

#include <stdbool.h>

#include "verify.h"

/* What host_place_enter() changed, for host_place_leave(). */
typedef struct {
    void *saved_cpus;           /* cpu_set_t *, NULL: affinity untouched */
    bool policy_set;
    int saved_mode;
    unsigned long saved_nodes[17];      /* 1024 nodes, and the bit the
                                         * kernel drops from maxnode */
} HostPlaceSaved;

/*
 * The calling thread placed near @g's NUMA node as read under @root
 * ("/" for the live system): what was done, or why nothing was, in @p.
 * Never fails: a GPU whose node is unknown, a system of one node, a
 * refused call leave the thread as it was and say so in p->why.
 */
void host_place_enter(const char *root, const VerifyGpu *g,
                      HostPlaceSaved *s, VerifyHostPlacement *p);
/* The thread's affinity and memory policy as before host_place_enter();
 * where that cannot be done, a note in @r. */
void host_place_leave(HostPlaceSaved *s, VerifyReport *r);

/* "0-3,8" into a CPU set of @setsize bytes (CPU_ALLOC_SIZE); false on a
 * malformed list or a CPU past the set. */
bool host_place_parse_cpulist(const char *text, void *set, size_t setsize);
/* A CPU set as a list ("0-3,8"), to be freed. */
char *host_place_format_cpulist(const void *set, size_t setsize);

#endif
