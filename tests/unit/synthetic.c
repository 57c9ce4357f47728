/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "synthetic.h"

static GpDevice *add(GpTopology *t, GpHostBridge *hb, GpDevice *parent,
                     unsigned bus, unsigned slot, GpPcieType type,
                     uint16_t vendor, uint32_t class_code, int node)
{
    char bdf[GP_BDF_LEN];
    GpDevice *d;

    g_snprintf(bdf, sizeof(bdf), "%04x:%02x:%02x.0", hb->domain, bus, slot);
    d = gp_topo_add_device(t, hb, parent, bdf, NULL);
    g_assert_nonnull(d);
    d->vendor = vendor;
    d->device = 0x1234;
    d->class_code = class_code;
    d->numa_node = node;
    /* Isolated everywhere, as Linux groups such a host: one group each. */
    d->iommu_group = (int)t->devices->len;
    d->pcie.type = type;
    d->is_bridge = type == GP_PCIE_TYPE_ROOT_PORT ||
                   type == GP_PCIE_TYPE_UPSTREAM_PORT ||
                   type == GP_PCIE_TYPE_DOWNSTREAM_PORT;
    d->acs_known = true;
    d->acs.present = d->is_bridge;
    d->acs.cap = d->is_bridge ? 0x5f : 0;
    /* As Linux sets them with an IOMMU on: SV RR CR UF. */
    d->acs.ctrl = d->is_bridge ? 0x1d : 0;
    return d;
}

GpTopology *synthetic_host(unsigned hosts, unsigned gpus,
                           unsigned per_switch)
{
    GpTopology *t = gp_topo_new("synthetic");
    unsigned made = 0, h, sw = 0;

    t->cpu_vendor = GP_CPU_VENDOR_INTEL;
    t->cpu_family = 6;
    for (h = 0; made < gpus; h = (h + 1) % hosts, sw++) {
        /* Each host bridge gets its own PCI domain, so buses never clash. */
        GpHostBridge *hb = gp_topo_add_host_bridge(t, h, 0);
        unsigned base = 1 + (sw / hosts) * (per_switch + 2);
        GpDevice *rp, *up;
        unsigned i;

        g_assert_cmpuint(base + per_switch + 1, <, 256);
        rp = add(t, hb, NULL, 0, 1 + sw / hosts, GP_PCIE_TYPE_ROOT_PORT,
                 0x8086, 0x060400, (int)(h % 2));
        /* The root bus's first device, which p2pdma matches its list on:
         * Xeon E5's 3c00 forwards P2P only within one host bridge. */
        rp->device = 0x3c00;
        up = add(t, hb, rp, base, 0, GP_PCIE_TYPE_UPSTREAM_PORT, 0x1000,
                 0x060400, (int)(h % 2));
        for (i = 0; i < per_switch && made < gpus; i++, made++) {
            GpDevice *down = add(t, hb, up, base + 1, i,
                                 GP_PCIE_TYPE_DOWNSTREAM_PORT, 0x1000,
                                 0x060400, (int)(h % 2));

            add(t, hb, down, base + 2 + i, 0, GP_PCIE_TYPE_ENDPOINT, 0x10de,
                0x030200, (int)(h % 2));
        }
    }
    gp_topo_finish(t);
    return t;
}
