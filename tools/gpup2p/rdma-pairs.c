/* SPDX-License-Identifier: GPL-2.0-or-later */
/* GPUDirect RDMA pairs as `topo` and `plan` print them. */
#include <stdio.h>

#include "cli.h"

static void print_ports(const GpRdmaPair *pair)
{
    const GpDevice *nic = pair->nic;
    g_autofree char *config_acs = gp_rdma_config_acs(pair);
    guint i;

    for (i = 0; i < pair->ports->len; i++) {
        const GpRdmaPort *p = &g_array_index(pair->ports, GpRdmaPort, i);
        g_autofree char *need = gp_acs_bits_string(p->need);
        g_autofree char *missing = gp_acs_bits_string(p->missing);

        printf("      %s %-22s ACS %-17s %s%s%s\n", p->port->bdf,
               gp_rdma_port_role_name(p->role), need,
               p->met ? "ok" : "lacks ", p->met ? "" : missing,
               p->met || p->settable ? "" : " (not settable)");
    }
    printf("      %s %-22s ATS %-17s %s\n", nic->bdf, "NIC",
           pair->ats_wanted ? "on" : "off",
           !nic->ats_known ? "unknown (needs root)" :
           pair->ats_met ? "ok" :
           !nic->ats.present ? "no ATS capability" :
           !nic->ats.enabled ? "implemented, not enabled" :
           "present");
    if (config_acs) {
        printf("      kernel argument: %s\n", config_acs);
    }
}

void gp_cli_print_rdma_pairs(const GpTopology *topo, const GPtrArray *devs,
                             bool ports)
{
    g_autoptr(GPtrArray) gpus = g_ptr_array_new();
    g_autoptr(GPtrArray) nics = gp_rdma_nics(topo);
    g_autoptr(GPtrArray) pairs = NULL;
    guint i;

    for (i = 0; i < devs->len; i++) {
        if (gp_device_is_gpu(g_ptr_array_index(devs, i))) {
            g_ptr_array_add(gpus, g_ptr_array_index(devs, i));
        }
    }
    if (!nics->len || !gpus->len) {
        return;
    }
    pairs = gp_rdma_pairs(topo, nics, gpus);
    printf("\nGPUDirect RDMA pairs (each RDMA NIC with its nearest GPUs; the "
           "path for a guest):\n");
    for (i = 0; i < pairs->len; i++) {
        const GpRdmaPair *pair = g_ptr_array_index(pairs, i);

        printf("  NIC %s - GPU %s  %-4s %s: %s\n", pair->nic->bdf,
               pair->gpu->bdf, gp_path_type_name(pair->path),
               gp_rdma_path_kind_name(pair->kind), pair->reason);
        if (ports) {
            print_ports(pair);
        }
    }
}
