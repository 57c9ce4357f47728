/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `gpup2p plan`: P2P clique ids for a set of devices. */
#include <stdio.h>

#include "cli.h"

static void print_plan(const GpPlan *plan)
{
    guint i, j;

    printf("policy: %s\n", gp_plan_policy_name(plan->policy));
    for (i = 0; i < plan->cliques->len; i++) {
        const GpClique *c = g_ptr_array_index(plan->cliques, i);

        printf("clique %u:", c->id);
        for (j = 0; j < c->devices->len; j++) {
            const GpDevice *d = g_ptr_array_index(c->devices, j);

            printf(" %s", d->bdf);
        }
        printf("\n");
    }
    for (i = 0; i < plan->left_out->len; i++) {
        const GpPlanLeftOut *l = g_ptr_array_index(plan->left_out, i);

        printf("no clique: %s: %s\n", l->device->bdf, l->reason);
    }
}

int gp_cmd_plan(int argc, char **argv)
{
    g_autofree char *root = NULL;
    g_autofree char *devices = NULL;
    g_autofree char *policy_text = NULL;
    gboolean json = FALSE;
    GOptionEntry entries[] = {
        { "sysfs-root", 0, 0, G_OPTION_ARG_FILENAME, &root,
          "Read a captured tree instead of the live /sys", "DIR" },
        { "devices", 0, 0, G_OPTION_ARG_STRING, &devices,
          "Plan these devices (default: NVIDIA display-class devices)",
          "BDF,..." },
        { "policy", 0, 0, G_OPTION_ARG_STRING, &policy_text,
          "How wide a clique may be: system (default), host-bridge, switch",
          "POLICY" },
        { "json", 0, 0, G_OPTION_ARG_NONE, &json, "JSON output", NULL },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("- P2P clique ids for GPUs or named devices");
    g_autoptr(GError) err = NULL;
    g_autoptr(GpTopology) topo = NULL;
    g_autoptr(GpPlan) plan = NULL;
    g_auto(GStrv) bdfs = NULL;
    GpPlanPolicy policy = GP_PLAN_POLICY_SYSTEM;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!gp_cli_parse(ctx, &argc, &argv)) {
        return GP_EXIT_USAGE;
    }
    if (!gp_cli_no_args("plan", argc, argv) ||
        !gp_cli_bdf_list("plan", "--devices", devices, &bdfs) ||
        !gp_cli_policy("plan", policy_text, &policy)) {
        return GP_EXIT_USAGE;
    }
    topo = gp_topo_read_devices(root ? root : "/",
                                (const char *const *)bdfs, &err);
    if (!topo) {
        return gp_cli_fail("plan", GP_EXIT_FAILED, "%s", err->message);
    }
    plan = gp_plan_compute(topo, (const char *const *)bdfs, policy, &err);
    if (!plan) {
        return gp_cli_fail("plan",
                           g_error_matches(err, GP_ERROR,
                                           GP_ERROR_TOO_MANY_CLIQUES) ?
                           GP_EXIT_NO_PLAN : GP_EXIT_FAILED,
                           "%s", err->message);
    }
    /* An empty plan is no answer: a script taking exit 0 as "ids planned"
     * would go on with none. --devices names at least one device, so only
     * the default selection can come back empty. */
    if (!plan->devices->len) {
        return gp_cli_fail("plan", GP_EXIT_NO_PLAN, "nothing to plan: %s "
                           "has no NVIDIA display-class device; name the "
                           "devices with --devices",
                           root ? root : "this host");
    }
    if (json) {
        g_autoptr(JsonNode) node = gp_json_plan(topo, plan);

        gp_cli_print_json(node);
    } else {
        print_plan(plan);
        gp_cli_print_rdma_pairs(topo, plan->devices, false);
    }
    return GP_EXIT_OK;
}
