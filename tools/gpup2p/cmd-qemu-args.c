/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `gpup2p qemu-args --mirror BDF...`: the QEMU arguments that give a guest
 * the host's PCIe hierarchy and NUMA nodes for the named devices, and,
 * with --nccl-topo, the host's NCCL topology for it through fw_cfg.
 */
#include <stdio.h>
#include <string.h>

#include "gpup2p/output.h"
#include "cli.h"
#include "gpup2p/mirror.h"

static void print_map(const GpMirror *m)
{
    guint i;

    printf("%-13s %-13s %-18s %-10s %s\n", "GUEST", "HOST", "KIND", "ID",
           "NUMA (guest<host)");
    for (i = 0; i < m->nodes->len; i++) {
        const GpMirrorNode *n = g_ptr_array_index(m->nodes, i);
        char node[32] = "";

        if (n->kind == GP_MIRROR_EXPANDER) {
            if (n->guest_node >= 0) {
                g_snprintf(node, sizeof(node), "%d<%d", n->guest_node,
                           n->host_node);
            } else {
                g_strlcpy(node, "-", sizeof(node));
            }
        }
        printf("%-13s %-13s %-18s %-10s %s\n", n->guest_bdf,
               n->host ? n->host->bdf : n->sort_key,
               gp_mirror_kind_name(n->kind), n->id, node);
    }
}

/* Where each assigned RDMA NIC went and why: under --map all of them, on
 * stdout; otherwise those without an assigned GPU partner, as warnings,
 * so the arguments on stdout stay clean. */
static void print_nic_places(const GpMirror *m, bool map)
{
    guint i;

    for (i = 0; i < m->nic_places->len; i++) {
        const GpMirrorNicPlace *np = g_ptr_array_index(m->nic_places, i);

        if (map) {
            printf("%s%s\n", i ? "" : "\nGPUDirect RDMA:\n", np->reason);
        } else if (!np->gpu) {
            fprintf(stderr, "gpup2p qemu-args: warning: %s\n", np->reason);
        }
    }
}

/* Single quotes for the shell where a word needs them. */
static void print_shell_word(const char *w, bool last)
{
    g_autofree char *q = NULL;
    const char *p;

    for (p = w; *p && (g_ascii_isalnum(*p) || strchr("@%+=:,./-_", *p));
         p++) {
    }
    if (*p || !*w) {
        q = g_shell_quote(w);
    }
    printf("%s%s", q ? q : w, last ? "\n" : " ");
}

/* One argument per line, or one shell line; the fw_cfg item last. */
static void print_args(char **args, const char *nccl, bool shell)
{
    guint i;

    for (i = 0; args[i]; i++) {
        if (shell) {
            print_shell_word(args[i], !args[i + 1] && !nccl);
        } else {
            printf("%s\n", args[i]);
        }
    }
    if (nccl) {
        g_autofree char *abs = g_canonicalize_filename(nccl, NULL);
        g_autofree char *v = g_strdup_printf("name=%s,file=%s",
                                             GP_FWCFG_NCCL_TOPO, abs);

        if (shell) {
            print_shell_word("-fw_cfg", false);
            print_shell_word(v, true);
        } else {
            printf("-fw_cfg\n%s\n", v);
        }
    }
}

/* Each rule of the command line, said on its own. */
static bool qemu_args_valid(gboolean mirror, int argc, char **argv,
                            const char *nccl, const char *cpus_text,
                            unsigned *cpus, gint memory)
{
    guint64 n;

    int i;

    if (!mirror) {
        return gp_cli_usage("qemu-args", "give --mirror (the only "
                            "mode): qemu-args --mirror BDF...");
    }
    if (argc < 2) {
        return gp_cli_usage("qemu-args", "--mirror needs the host "
                            "devices, BDFs like %s", GP_CLI_BDF_EXAMPLE);
    }
    for (i = 1; i < argc; i++) {
        char norm[GP_BDF_LEN];

        if (!gp_cli_bdf_arg("qemu-args", "each device", argv[i])) {
            return false;
        }
        if (gp_cli_bdf_repeated(argv + 1, (size_t)(i - 1))) {
            gp_bdf_normalize(argv[i], norm);
            return gp_cli_usage("qemu-args", "each device once: %s is "
                                "named twice ('%s')", norm, argv[i]);
        }
    }
    if (nccl && strchr(nccl, ',')) {
        return gp_cli_usage("qemu-args", "--nccl-topo '%s': a comma "
                            "in the path would split QEMU's option", nccl);
    }
    /* Read here, not by GOption: an explicit 0 must not pass for the
     * default (no --cpus: one per NUMA cell). */
    if (cpus_text && !g_ascii_string_to_unsigned(cpus_text, 10, 1,
                                                 G_MAXINT, &n, NULL)) {
        return gp_cli_usage("qemu-args", "--cpus must be 1 or more "
                            "(without it: one per NUMA cell), not '%s'",
                            cpus_text);
    }
    *cpus = cpus_text ? (unsigned)n : 0;
    if (memory <= 0) {
        return gp_cli_usage("qemu-args", "--memory must be a "
                            "positive number of MiB, not '%d'", memory);
    }
    return true;
}

int gp_cmd_qemu_args(int argc, char **argv)
{
    g_autofree char *root = NULL, *nccl = NULL, *props = NULL;
    g_autofree char *cpus_text = NULL;
    gboolean mirror = FALSE, shell = FALSE, map = FALSE;
    gint memory = 1024;
    unsigned cpus = 0;
    GOptionEntry entries[] = {
        { "mirror", 0, 0, G_OPTION_ARG_NONE, &mirror,
          "Mirror the host's PCIe hierarchy and NUMA nodes", NULL },
        { "sysfs-root", 0, 0, G_OPTION_ARG_FILENAME, &root,
          "Read a captured host instead of /sys", "DIR" },
        { "cpus", 0, 0, G_OPTION_ARG_STRING, &cpus_text,
          "vCPUs, spread over the NUMA cells (default: one per cell)", "N" },
        { "memory", 0, 0, G_OPTION_ARG_INT, &memory,
          "Guest memory in MiB, spread over the cells (default 1024)",
          "MIB" },
        { "vfio-props", 0, 0, G_OPTION_ARG_STRING, &props,
          "Append these properties to every vfio-pci device", "K=V,..." },
        { "nccl-topo", 0, 0, G_OPTION_ARG_FILENAME, &nccl,
          "Write the guest's NCCL topology here and pass it by fw_cfg as "
          GP_FWCFG_NCCL_TOPO, "FILE" },
        { "shell", 0, 0, G_OPTION_ARG_NONE, &shell,
          "One shell-quoted line instead of one argument per line", NULL },
        { "map", 0, 0, G_OPTION_ARG_NONE, &map,
          "Print the guest layout (guest and host addresses) instead", NULL },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("--mirror BDF... - QEMU arguments that mirror "
                             "the host topology");
    g_autoptr(GError) err = NULL;
    g_autoptr(GpTopology) topo = NULL;
    g_autoptr(GpMirror) m = NULL;
    g_auto(GStrv) args = NULL;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!gp_cli_parse(ctx, &argc, &argv)) {
        return GP_EXIT_USAGE;
    }
    if (!qemu_args_valid(mirror, argc, argv, nccl, cpus_text, &cpus,
                         memory)) {
        return GP_EXIT_USAGE;
    }
    topo = gp_topo_read(root ? root : "/", &err);
    if (!topo) {
        return gp_cli_fail("qemu-args", GP_EXIT_FAILED, "%s", err->message);
    }
    m = gp_mirror_plan(topo, (const char *const *)argv + 1, NULL, NULL,
                       &err);
    if (!m) {
        return gp_cli_fail("qemu-args", GP_EXIT_FAILED, "%s", err->message);
    }
    if (map) {
        print_map(m);
        print_nic_places(m, true);
        return GP_EXIT_OK;
    }
    print_nic_places(m, false);
    args = gp_mirror_qemu_args(m, cpus ? cpus : MAX(gp_mirror_cells(m), 1),
                               memory, props, &err);
    if (!args) {
        return gp_cli_fail("qemu-args", GP_EXIT_FAILED, "%s", err->message);
    }
    if (nccl) {
        g_autofree char *xml = gp_mirror_nccl_topo(m);

        if (!gp_output_write(nccl, xml, -1, 0644, &err)) {
            return gp_cli_fail("qemu-args", GP_EXIT_FAILED, "--nccl-topo "
                               "%s: %s", nccl, err->message);
        }
    }
    print_args(args, nccl, shell);
    return GP_EXIT_OK;
}
