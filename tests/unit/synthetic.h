/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Topologies built in memory, for planner tests and benchmarks. */
#ifndef SYNTHETIC_H
#define SYNTHETIC_H

#include "gpup2p/topo.h"

/*
 * @hosts host bridges (two NUMA nodes, alternating), each with root ports
 * holding one switch of @per_switch NVIDIA GPUs, until @gpus GPUs exist.
 * Switch ports have ACS with nothing redirected; the CPU is Intel.
 */
GpTopology *synthetic_host(unsigned hosts, unsigned gpus,
                           unsigned per_switch);

#endif
