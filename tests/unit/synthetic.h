/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Topologies built in memory, for planner tests and benchmarks. */
#ifndef SYNTHETIC_H
#define SYNTHETIC_H

#include "gpup2p/topo.h"

/*
 * @hosts host bridges (two NUMA nodes, alternating), each with root ports
 * holding one switch of @per_switch NVIDIA GPUs, until @gpus GPUs exist.
 * Ports redirect peer requests (ACS SV RR CR UF); the CPU is Intel and each
 * host bridge a Xeon E5 (8086:3c00), which forwards P2P only within itself:
 * one P2P domain per host bridge.
 */
GpTopology *synthetic_host(unsigned hosts, unsigned gpus,
                           unsigned per_switch);

#endif
