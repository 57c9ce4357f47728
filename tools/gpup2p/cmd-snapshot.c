/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `gpup2p snapshot`: capture the PCI part of sysfs into a directory. */
#include <stdio.h>
#include <unistd.h>

#include "cli.h"
#include "gpup2p/snapshot.h"

int gp_cmd_snapshot(int argc, char **argv)
{
    g_autofree char *root = NULL;
    GOptionEntry entries[] = {
        { "sysfs-root", 0, 0, G_OPTION_ARG_FILENAME, &root,
          "Capture from this tree instead of the live system", "DIR" },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("DIR - capture the PCI part of sysfs into DIR");
    g_autoptr(GError) err = NULL;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!gp_cli_parse(ctx, &argc, &argv)) {
        return GP_EXIT_USAGE;
    }
    if (argc < 2) {
        return gp_cli_fail("snapshot", GP_EXIT_USAGE, "give the new "
                           "directory to capture into (NEWDIR)");
    }
    if (argc > 2) {
        return gp_cli_fail("snapshot", GP_EXIT_USAGE, "one directory only, "
                           "not also '%s'", argv[2]);
    }
    if (!root && geteuid() != 0) {
        fprintf(stderr, "gpup2p snapshot: warning: not root, so config space "
                "is cut to 64 bytes (no capabilities, no ACS)\n");
    }
    if (!gp_snapshot_write(root ? root : "/", argv[1], &err)) {
        return gp_cli_fail("snapshot", GP_EXIT_FAILED, "%s", err->message);
    }
    return GP_EXIT_OK;
}
