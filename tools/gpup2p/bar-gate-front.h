/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The BAR gate for a libvirt domain: one call for check and libvirt. */
#ifndef GPUP2P_BAR_GATE_FRONT_H
#define GPUP2P_BAR_GATE_FRONT_H

#include "cli.h"
#include "libvirt-domain.h"

/* gp_bar_gate_host_read(@root), its config from proc/config.gz (the
 * running kernel's own) where readable, else boot/config-RELEASE. */
GpBarGateHost *gp_front_gate_host(const char *root);

/* The VMM @qemu is: ours where its vfio-pci has x-gpu-p2p-clique, else
 * stock; unknown where it cannot be asked (or is NULL). */
GpVmmKind gp_front_vmm_of(const char *qemu);

/*
 * The gate for @d's GPUs (after gp_domain_find_gpus()) on @topo's host,
 * the VMM being @vmm; for GP_VMM_STOCK its version is asked of @qemu
 * (NULL, or no answer: not known), and for a known @vmm what machine
 * type an alias names. GpBarGate *, in d->gpus' order.
 */
GPtrArray *gp_front_domain_gate(const GpDomain *d, const GpTopology *topo,
                                GpVmmKind vmm, const char *qemu);

/* One line per distinct reason of verdict @v: "BDF, BDF: reason". */
GPtrArray *gp_front_gate_lines(const GPtrArray *gates, GpBarGateVerdict v);

/* @dev's verdict in @gates, NULL when it has none. */
const GpBarGate *gp_front_gate_of(const GPtrArray *gates,
                                  const GpDevice *dev);

#endif /* GPUP2P_BAR_GATE_FRONT_H */
