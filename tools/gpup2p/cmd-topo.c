/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `gpup2p topo`: devices, the pairwise path matrix and P2P verdicts. */
#include <stdio.h>

#include "cli.h"

/* Endpoints: not bridges, not the host bridge device itself. */
static bool is_endpoint(const GpDevice *dev)
{
    return !dev->is_bridge && (dev->class_code >> 8) != 0x0600;
}

static void print_devices(const GpTopology *topo)
{
    guint i;

    printf("%-13s %-9s %-6s %4s %5s %-10s %-11s %s\n", "DEVICE", "ID",
           "CLASS", "NUMA", "IOMMU", "DRIVER", "HOSTBRIDGE", "UPSTREAM");
    for (i = 0; i < topo->devices->len; i++) {
        const GpDevice *dev = g_ptr_array_index(topo->devices, i);
        g_autoptr(GString) up = g_string_new(NULL);
        char group[16] = "-";
        const GpDevice *d;

        for (d = dev->parent; d; d = d->parent) {
            g_string_append_printf(up, "%s%s", up->len ? " < " : "",
                                   d->bdf);
        }
        if (dev->iommu_group >= 0) {
            g_snprintf(group, sizeof(group), "%d", dev->iommu_group);
        }
        printf("%-13s %04x:%04x %06x %4d %5s %-10s %-11s %s\n", dev->bdf,
               dev->vendor, dev->device, dev->class_code, dev->numa_node,
               group, dev->driver ? dev->driver : "-", dev->host->name,
               up->len ? up->str : "-");
    }
    if (topo->config_truncated) {
        printf("\nnote: config space of %u device(s) was cut short (read as "
               "non-root?): ACS state and extended capabilities unknown\n",
               topo->config_truncated);
    }
}

static void print_matrix(const GpTopology *topo, const GPtrArray *devs)
{
    guint i, j;

    printf("\n%-13s", "");
    for (j = 0; j < devs->len; j++) {
        const GpDevice *d = g_ptr_array_index(devs, j);

        printf(" %-7.7s", d->bdf + 5);
    }
    printf("\n");
    for (i = 0; i < devs->len; i++) {
        const GpDevice *a = g_ptr_array_index(devs, i);

        printf("%-13s", a->bdf);
        for (j = 0; j < devs->len; j++) {
            printf(" %-7s", gp_path_type_name(
                gp_path_classify(a, g_ptr_array_index(devs, j))));
        }
        printf("\n");
    }
    printf("\nLegend: X self, PIX at most one PCIe switch, PXB several "
           "switches, PHB through\na host bridge, NODE between host bridges "
           "of one NUMA node, SYS across NUMA nodes.\n\nP2P verdicts:\n");
    for (i = 0; i < devs->len; i++) {
        for (j = i + 1; j < devs->len; j++) {
            const GpDevice *a = g_ptr_array_index(devs, i);
            const GpDevice *b = g_ptr_array_index(devs, j);
            GpP2pVerdict v;

            gp_p2p_verdict(topo, a, b, &v);
            printf("  %s %s %-11s %s\n", a->bdf, b->bdf,
                   gp_p2p_kind_name(v.kind), v.reason);
            gp_p2p_verdict_clear(&v);
        }
    }
}

int gp_cmd_topo(int argc, char **argv)
{
    g_autofree char *root = NULL;
    g_autofree char *devices = NULL;
    gboolean json = FALSE;
    GOptionEntry entries[] = {
        { "sysfs-root", 0, 0, G_OPTION_ARG_FILENAME, &root,
          "Read a captured tree instead of the live /sys", "DIR" },
        { "devices", 0, 0, G_OPTION_ARG_STRING, &devices,
          "Pairs among these devices only (default: all endpoints)",
          "BDF,..." },
        { "json", 0, 0, G_OPTION_ARG_NONE, &json, "JSON output", NULL },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("- devices, path classes and P2P verdicts");
    g_autoptr(GError) err = NULL;
    g_autoptr(GpTopology) topo = NULL;
    g_autoptr(GPtrArray) pairs = NULL;
    g_auto(GStrv) bdfs = NULL;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!gp_cli_parse(ctx, &argc, &argv)) {
        return GP_EXIT_USAGE;
    }
    if (argc > 1) {
        return gp_cli_fail("topo", GP_EXIT_USAGE, "unexpected argument '%s'",
                           argv[1]);
    }
    topo = gp_topo_read(root ? root : "/", &err);
    if (!topo) {
        return gp_cli_fail("topo", GP_EXIT_FAILED, "%s", err->message);
    }
    bdfs = gp_cli_split_list(devices);
    pairs = gp_cli_select(topo, bdfs, is_endpoint, &err);
    if (!pairs) {
        return gp_cli_fail("topo", GP_EXIT_FAILED, "%s", err->message);
    }
    if (json) {
        g_autoptr(JsonNode) node = gp_json_topology(topo, pairs);

        gp_cli_print_json(node);
    } else {
        print_devices(topo);
        print_matrix(topo, pairs);
    }
    return GP_EXIT_OK;
}
