/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `gpup2p`: the host command-line front of vfio-gpu-p2p. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gpup2p-version.h"

#ifndef GP_HAVE_LIBVIRT
/* The command stays named, so that its refusal says why. */
static int libvirt_not_built(int argc, char **argv)
{
    int i;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("Usage:\n  gpup2p libvirt\n\nNot in this build: any "
                   "invocation exits 1. %s.\n", GP_WITHOUT_LIBVIRT);
            return GP_EXIT_OK;
        }
    }
    return gp_cli_fail("libvirt", GP_EXIT_FAILED, "%s", GP_WITHOUT_LIBVIRT);
}
#endif

static const struct {
    const char *name;
    GpCommandFn fn;
    const char *summary;
} commands[] = {
    { "topo", gp_cmd_topo, "devices, path classes and P2P verdicts" },
    { "plan", gp_cmd_plan, "P2P clique ids for GPUs or named devices" },
    { "snapshot", gp_cmd_snapshot, "capture the PCI part of sysfs" },
    { "verdict", gp_cmd_verdict, "P2P verdict as the kernel sees it" },
#ifdef GP_HAVE_LIBVIRT
    { "libvirt", gp_cmd_libvirt, "P2P settings for a libvirt domain" },
#else
    { "libvirt", libvirt_not_built, "not in this build (-Dlibvirt=disabled)" },
#endif
    { "check", gp_cmd_check, "is this host ready for GPU P2P in VMs?" },
    { "qemu-args", gp_cmd_qemu_args, "QEMU arguments that mirror the host "
      "topology" },
};

static void usage(FILE *out)
{
    size_t i;

    fprintf(out, "Usage: gpup2p COMMAND [OPTIONS]\n"
            "       gpup2p --version\n\nCommands:\n");
    for (i = 0; i < G_N_ELEMENTS(commands); i++) {
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    }
    fprintf(out, "\n'gpup2p COMMAND --help' describes a command's options.\n"
            "\nExit codes: 0 success, 1 bad input or failed operation (also "
            "a command\nthis build lacks), 3 no clique plan (plan: more than "
            "16 P2P domains or no GPU\nto plan), 5 host not ready (check: an "
            "item failed), 6 not fully checked (check:\nno item failed, some "
            "could not be checked from the input), 2 refused domain\n"
            "(libvirt --check: the host proves its clique ids wrong: an IOMMU "
            "bypass, one\nIOMMU group, a device not there; what it cannot "
            "confirm is a warning), 64 bad\ncommand line (as gpup2p-verify); "
            "4 is not used.\n");
}

/* GLib names the option and value ("Missing argument for --devices"). */
bool gp_cli_parse(GOptionContext *ctx, int *argc, char ***argv)
{
    g_autoptr(GError) err = NULL;

    if (!g_option_context_parse(ctx, argc, argv, &err)) {
        fprintf(stderr, "%s: %s\n", g_get_prgname(), err->message);
        return false;
    }
    return true;
}

bool gp_cli_bdf_arg(const char *cmd, const char *what, const char *arg)
{
    char norm[GP_BDF_LEN];

    if (!gp_bdf_normalize(arg, norm)) {
        return gp_cli_usage(cmd, "%s needs a BDF like %s, not '%s'",
                            what, GP_CLI_BDF_EXAMPLE, arg);
    }
    return true;
}

bool gp_cli_bdf_list(const char *cmd, const char *option, const char *text,
                     char ***bdfs)
{
    g_auto(GStrv) list = gp_cli_split_list(text);
    char norm[GP_BDF_LEN];
    size_t i;

    *bdfs = NULL;
    if (!text) {
        return true;
    }
    if (!list[0]) {
        return gp_cli_usage(cmd, "%s needs at least one BDF, like "
                            "%s, not '%s'", option, GP_CLI_BDF_EXAMPLE, text);
    }
    for (i = 0; list[i]; i++) {
        if (!gp_bdf_normalize(list[i], norm)) {
            return gp_cli_usage(cmd, "%s needs BDFs like %s, not "
                                "'%s'", option, GP_CLI_BDF_EXAMPLE, list[i]);
        }
        if (gp_cli_bdf_repeated(list, i)) {
            return gp_cli_usage(cmd, "%s names %s twice ('%s')", option,
                                norm, list[i]);
        }
    }
    *bdfs = g_steal_pointer(&list);
    return true;
}

bool gp_cli_bdf_repeated(char *const *bdfs, size_t i)
{
    char a[GP_BDF_LEN], b[GP_BDF_LEN];
    size_t j;

    if (!gp_bdf_normalize(bdfs[i], a)) {
        return false;
    }
    for (j = 0; j < i; j++) {
        if (gp_bdf_normalize(bdfs[j], b) && !strcmp(a, b)) {
            return true;
        }
    }
    return false;
}

bool gp_cli_policy(const char *cmd, const char *text, GpPlanPolicy *policy)
{
    g_autoptr(GError) err = NULL;

    if (text && !gp_plan_policy_parse(text, policy, &err)) {
        return gp_cli_usage(cmd, "--policy %s", err->message);
    }
    return true;
}

bool gp_cli_no_args(const char *cmd, int argc, char **argv)
{
    if (argc > 1) {
        return gp_cli_usage(cmd, "unexpected argument '%s' (%s "
                            "takes options only)", argv[1], cmd);
    }
    return true;
}

static G_GNUC_PRINTF(2, 0) void vsay(const char *cmd, const char *fmt,
                                     va_list ap)
{
    fprintf(stderr, "gpup2p %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

bool gp_cli_usage(const char *cmd, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsay(cmd, fmt, ap);
    va_end(ap);
    return false;
}

int gp_cli_fail(const char *cmd, int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsay(cmd, fmt, ap);
    va_end(ap);
    return code;
}

char **gp_cli_split_list(const char *text)
{
    char **parts;
    size_t i, n = 0;

    if (!text) {
        return NULL;
    }
    parts = g_strsplit(text, ",", -1);
    for (i = 0; parts[i]; i++) {
        g_strstrip(parts[i]);
        if (parts[i][0]) {
            parts[n++] = parts[i];
        } else {
            g_free(parts[i]);
        }
    }
    parts[n] = NULL;
    return parts;
}

GPtrArray *gp_cli_select(const GpTopology *topo, char **bdfs,
                         bool (*filter)(const GpDevice *), GError **errp)
{
    GPtrArray *out = g_ptr_array_new();
    guint i;

    if (!bdfs) {
        for (i = 0; i < topo->devices->len; i++) {
            GpDevice *dev = g_ptr_array_index(topo->devices, i);

            if (filter(dev)) {
                g_ptr_array_add(out, dev);
            }
        }
        return out;
    }
    for (i = 0; bdfs[i]; i++) {
        GpDevice *dev = gp_topo_find(topo, bdfs[i]);

        if (!dev) {
            g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND,
                        "device '%s' is not in the topology", bdfs[i]);
            g_ptr_array_free(out, TRUE);
            return NULL;
        }
        g_ptr_array_add(out, dev);
    }
    return out;
}

void gp_cli_print_json(JsonNode *node)
{
    g_autofree char *text = gp_json_to_string(node);

    fputs(text, stdout);
}

/*
 * Output that did not reach its file (a full disk) is a failure, exit 1
 * whatever the command's own status: a `check` whose report was lost
 * must not read as "not ready" (5) or "not fully checked" (6).
 */
static int finish_output(int status)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "gpup2p: writing the output failed: %s\n",
                g_strerror(errno));
        return GP_EXIT_FAILED;
    }
    return status;
}

int main(int argc, char **argv)
{
    size_t i;

    if (argc < 2) {
        fprintf(stderr, "gpup2p: no command given\n");
        usage(stderr);
        return GP_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        usage(stdout);
        return finish_output(GP_EXIT_OK);
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
        /* The optional parts of this build (meson_options.txt). */
        printf("gpup2p %s\nfeatures: %s\n", GP_VERSION, GP_FEATURES);
        return finish_output(GP_EXIT_OK);
    }
    for (i = 0; i < G_N_ELEMENTS(commands); i++) {
        if (!strcmp(argv[1], commands[i].name)) {
            g_autofree char *prgname = g_strdup_printf("gpup2p %s", argv[1]);

            /* "Usage: gpup2p topo [OPTION...]" in each command's --help. */
            g_set_prgname(prgname);
            return finish_output(commands[i].fn(argc - 1, argv + 1));
        }
    }
    fprintf(stderr, "gpup2p: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return GP_EXIT_USAGE;
}
