/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `gpup2p topo`: by default a matrix of GPUs and NICs with path classes,
 * CPU and NUMA affinity and P2P verdicts, as `nvidia-smi topo -m` shows
 * them; --all lists every device and every endpoint pair.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* Endpoints: not bridges, not the host bridge device itself. */
static bool is_endpoint(const GpDevice *dev)
{
    return !dev->is_bridge && (dev->class_code >> 8) != 0x0600;
}

static bool is_gpu_or_nic(const GpDevice *dev)
{
    return gp_device_is_gpu(dev) || gp_device_is_nic(dev);
}

/* Short bare-metal P2P codes for the matrix, in GpP2pKind order. */
static const char *p2p_code(GpP2pKind kind)
{
    static const char *const codes[] = { "OK", "HB", "NS", "?" };

    return kind < G_N_ELEMENTS(codes) ? codes[kind] : "?";
}

/* Short guest P2P codes, in GpVmP2pKind order. */
static const char *vm_p2p_code(GpVmP2pKind kind)
{
    static const char *const codes[] = { "OK", "BY", "NS", "?" };

    return kind < G_N_ELEMENTS(codes) ? codes[kind] : "?";
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
    printf("\n");
}

static void print_path_matrix(const GPtrArray *devs, char **names)
{
    guint i, j;

    printf("%-7s", "");
    for (j = 0; j < devs->len; j++) {
        printf(" %-6s", names[j]);
    }
    printf(" %-14s %s\n", "CPU Affinity", "NUMA Affinity");
    for (i = 0; i < devs->len; i++) {
        const GpDevice *a = g_ptr_array_index(devs, i);
        char numa[16] = "N/A";

        printf("%-7s", names[i]);
        for (j = 0; j < devs->len; j++) {
            printf(" %-6s", gp_path_type_name(
                gp_path_classify(a, g_ptr_array_index(devs, j))));
        }
        if (a->numa_node >= 0) {
            g_snprintf(numa, sizeof(numa), "%d", a->numa_node);
        }
        printf(" %-14s %s\n", a->cpu_affinity ? a->cpu_affinity : "N/A",
               numa);
    }
}

typedef struct {
    const char *code;
    char *reason;
    GString *pairs;             /* "GPU0-GPU1, GPU0-GPU2" */
} ReasonLine;

static void reason_line_free(gpointer p)
{
    ReasonLine *l = p;

    g_free(l->reason);
    g_string_free(l->pairs, TRUE);
    g_free(l);
}

/* Add the pair @na-@nb under its code and reason, keeping first-seen order. */
static void add_reason(GHashTable *index, GPtrArray *lines, const char *code,
                       const char *reason, const char *na, const char *nb)
{
    g_autofree char *key = g_strdup_printf("%s %s", code, reason);
    ReasonLine *l = g_hash_table_lookup(index, key);

    if (!l) {
        l = g_new0(ReasonLine, 1);
        l->code = code;
        l->reason = g_strdup(reason);
        l->pairs = g_string_new(NULL);
        g_ptr_array_add(lines, l);
        g_hash_table_insert(index, g_steal_pointer(&key), l);
    }
    g_string_append_printf(l->pairs, "%s%s-%s", l->pairs->len ? ", " : "",
                           na, nb);
}

/*
 * A P2P matrix in short codes (@guest: the VM rule's, else bare metal's),
 * then each distinct reason once with the pairs it holds for: n devices
 * give far fewer lines than n^2 / 2.
 */
static void print_p2p(const GpTopology *topo, const GPtrArray *devs,
                      char **names, bool guest)
{
    g_autoptr(GHashTable) index = g_hash_table_new_full(
        g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr(GPtrArray) lines =
        g_ptr_array_new_with_free_func(reason_line_free);
    guint i, j;

    printf("\n%s\n%-7s", guest ? "P2P for a guest (the verdict cliques "
           "follow):" : "P2P on bare metal (Linux p2pdma):",
           guest ? "GUEST" : "HOST");
    for (j = 0; j < devs->len; j++) {
        printf(" %-6s", names[j]);
    }
    printf("\n");
    for (i = 0; i < devs->len; i++) {
        printf("%-7s", names[i]);
        for (j = 0; j < devs->len; j++) {
            GpP2pVerdict v;

            if (i == j) {
                printf(" %-6s", "X");
                continue;
            }
            gp_p2p_verdict(topo, g_ptr_array_index(devs, MIN(i, j)),
                           g_ptr_array_index(devs, MAX(i, j)), &v);
            printf(" %-6s", guest ? vm_p2p_code(v.vm_kind) :
                   p2p_code(v.kind));
            if (i < j) {
                add_reason(index, lines,
                           guest ? vm_p2p_code(v.vm_kind) : p2p_code(v.kind),
                           guest ? v.vm_reason : v.reason, names[i],
                           names[j]);
            }
            gp_p2p_verdict_clear(&v);
        }
        printf("\n");
    }
    if (lines->len) {
        printf("%s reasons:\n", guest ? "Guest P2P" : "Bare-metal P2P");
    }
    for (i = 0; i < lines->len; i++) {
        const ReasonLine *l = g_ptr_array_index(lines, i);

        printf("  %-2s %s: %s\n", l->code, l->pairs->str, l->reason);
    }
}

static void print_names(const GPtrArray *devs, char **names)
{
    guint i;

    printf("\n");
    for (i = 0; i < devs->len; i++) {
        const GpDevice *d = g_ptr_array_index(devs, i);

        printf("%-7s %s  %04x:%04x  %s\n", names[i], d->bdf, d->vendor,
               d->device, d->driver ? d->driver : "no driver");
    }
}

/*
 * NVLink is not in sysfs: the matrices speak of PCIe alone. Say so where
 * NVIDIA GPUs are listed, and where to look instead.
 */
static void print_nvlink_note(const GPtrArray *devs)
{
    bool nvidia = false, vfio = false;
    guint i;

    for (i = 0; i < devs->len; i++) {
        const GpDevice *d = g_ptr_array_index(devs, i);

        nvidia |= gp_device_is_nvidia_gpu(d);
        vfio |= gp_device_is_nvidia_gpu(d) && !g_strcmp0(d->driver,
                                                         "vfio-pci");
    }
    if (!nvidia) {
        return;
    }
    printf("\nNVLink: not visible here (sysfs shows PCIe only), so the "
           "matrices above\nsay nothing of it; NVLink P2P needs no clique. "
           "%s\n", vfio ?
           "These GPUs are bound to vfio-pci:\nin the guest, 'nvidia-smi "
           "topo -m' or 'gpup2p-verify' shows their NV# links." :
           "With the NVIDIA driver\nloaded, 'nvidia-smi topo -m' shows "
           "them.");
}

static void print_legend(const GpTopology *topo)
{
    bool printed = false;
    guint i;

    printf("\nLegend:\n"
           "  X    = Self\n"
           "  SYS  = through PCIe and the interconnect between NUMA nodes\n"
           "  NODE = through PCIe and between host bridges of one NUMA "
           "node\n"
           "  PHB  = through PCIe and a host bridge (typically the CPU)\n"
           "  PXB  = through several PCIe switches, no host bridge\n"
           "  PIX  = through at most one PCIe switch\n"
           "  Guest P2P: OK through the IOMMU and forwarded by the root "
           "complex,\n"
           "       BY bypasses the IOMMU (a switch port without ACS redirect "
           "routes the\n"
           "       guest-physical address), NS the root complex does not "
           "forward, ? unknown\n"
           "  Bare-metal P2P: OK direct under a common bridge, HB "
           "forwarded by the host\n"
           "       bridge, NS not supported, ? unknown (the input lacks what "
           "the rules need)\n");
    if (topo->config_truncated) {
        printf("\nnote: config space of %u device(s) was cut short (read as "
               "non-root?): ACS state and extended capabilities unknown\n",
               topo->config_truncated);
    }
    if (topo->config_not_read) {
        printf("\nnote: config space of %u device(s) off every GPU and NIC "
               "path was not read (JSON: config_read false)\n",
               topo->config_not_read);
    }
    for (i = 0; i < topo->devices_gone->len; i++) {
        printf("%swarning: %s\n", printed ? "" : "\n",
               (const char *)g_ptr_array_index(topo->devices_gone, i));
        printed = true;
    }
    for (i = 0; i < topo->devices->len; i++) {
        const GpDevice *dev = g_ptr_array_index(topo->devices, i);

        if (dev->config_unreadable) {
            printf("%swarning: %s: config space unusable: %s\n",
                   printed ? "" : "\n", dev->bdf, dev->config_unreadable);
            printed = true;
        }
        if (dev->attr_invalid) {
            printf("%swarning: %s: not judged: %s\n", printed ? "" : "\n",
                   dev->bdf, dev->attr_invalid);
            printed = true;
        }
    }
}

static void print_view(const GpTopology *topo, GPtrArray *devs, bool all)
{
    g_auto(GStrv) names = NULL;

    gp_devices_sort(devs);
    names = gp_device_names(devs);
    if (all) {
        print_devices(topo);
    }
    if (!devs->len) {
        printf("no GPU or NIC found (--all lists every device; --devices "
               "names some)\n");
        return;
    }
    print_path_matrix(devs, names);
    print_p2p(topo, devs, names, true);
    print_p2p(topo, devs, names, false);
    print_names(devs, names);
    gp_cli_print_rdma_pairs(topo, devs, true);
    print_nvlink_note(devs);
    print_legend(topo);
}

int gp_cmd_topo(int argc, char **argv)
{
    g_autofree char *root = NULL;
    g_autofree char *devices = NULL;
    gboolean json = FALSE, all = FALSE;
    GOptionEntry entries[] = {
        { "sysfs-root", 0, 0, G_OPTION_ARG_FILENAME, &root,
          "Read a captured tree instead of the live /sys", "DIR" },
        { "devices", 0, 0, G_OPTION_ARG_STRING, &devices,
          "The matrix of these devices (default: GPUs and NICs)",
          "BDF,..." },
        { "all", 0, 0, G_OPTION_ARG_NONE, &all,
          "List every device, and the matrix of every endpoint", NULL },
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
    if (!gp_cli_no_args("topo", argc, argv) ||
        !gp_cli_bdf_list("topo", "--devices", devices, &bdfs)) {
        return GP_EXIT_USAGE;
    }
    if (all && devices) {
        return gp_cli_fail("topo", GP_EXIT_USAGE,
                           "--all and --devices exclude each other");
    }
    /* --all shows every endpoint pair: every device's config is read;
     * --devices: also the config on the named devices' paths. */
    topo = all ? gp_topo_read_all(root ? root : "/", &err) :
                 gp_topo_read_devices(root ? root : "/",
                                      (const char *const *)bdfs, &err);
    if (!topo) {
        return gp_cli_fail("topo", GP_EXIT_FAILED, "%s", err->message);
    }
    pairs = gp_cli_select(topo, bdfs, all ? is_endpoint : is_gpu_or_nic,
                          &err);
    if (!pairs) {
        return gp_cli_fail("topo", GP_EXIT_FAILED, "%s", err->message);
    }
    if (json) {
        g_autoptr(JsonNode) node = gp_json_topology(topo, pairs);

        gp_cli_print_json(node);
    } else {
        print_view(topo, pairs, all);
    }
    return GP_EXIT_OK;
}
