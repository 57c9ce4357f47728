/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Clique planning over P2P verdicts. */
#include <string.h>

#include "gpup2p/plan.h"

static const char *const policy_names[] = {
    [GP_PLAN_POLICY_SYSTEM] = "system",
    [GP_PLAN_POLICY_HOST_BRIDGE] = "host-bridge",
    [GP_PLAN_POLICY_SWITCH] = "switch",
};

bool gp_plan_policy_parse(const char *text, GpPlanPolicy *policy,
                          GError **errp)
{
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(policy_names); i++) {
        if (!g_strcmp0(text, policy_names[i])) {
            *policy = (GpPlanPolicy)i;
            return true;
        }
    }
    g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                "unknown policy '%s' (expected system, host-bridge or "
                "switch)", text ? text : "");
    return false;
}

const char *gp_plan_policy_name(GpPlanPolicy policy)
{
    return policy_names[policy];
}

bool gp_plan_pair_allowed(const GpTopology *topo, const GpDevice *a,
                          const GpDevice *b, GpPlanPolicy policy, char **why)
{
    GpP2pVerdict v;
    bool ok;

    gp_p2p_verdict(topo, a, b, &v);
    ok = gp_p2p_possible(v.kind);
    if (ok && policy == GP_PLAN_POLICY_HOST_BRIDGE && a->host != b->host) {
        ok = false;
        if (why) {
            *why = g_strdup_printf("%s and %s are under different host "
                                   "bridges (policy host-bridge)", a->bdf,
                                   b->bdf);
        }
    } else if (ok && policy == GP_PLAN_POLICY_SWITCH &&
               v.kind != GP_P2P_DIRECT) {
        ok = false;
        if (why) {
            *why = g_strdup_printf("%s and %s share no upstream switch "
                                   "(policy switch): %s", a->bdf, b->bdf,
                                   v.reason);
        }
    } else if (!ok && why) {
        *why = g_strdup_printf("%s and %s: P2P %s: %s", a->bdf, b->bdf,
                               gp_p2p_kind_name(v.kind), v.reason);
    }
    gp_p2p_verdict_clear(&v);
    return ok;
}

static void clique_free(gpointer p)
{
    GpClique *c = p;

    g_ptr_array_free(c->devices, TRUE);
    g_free(c);
}

static void left_out_free(gpointer p)
{
    GpPlanLeftOut *l = p;

    g_free(l->reason);
    g_free(l);
}

void gp_plan_free(GpPlan *plan)
{
    if (!plan) {
        return;
    }
    g_ptr_array_free(plan->devices, TRUE);
    g_ptr_array_free(plan->cliques, TRUE);
    g_ptr_array_free(plan->left_out, TRUE);
    g_free(plan);
}

static bool select_devices(const GpTopology *topo, const char *const *bdfs,
                           GPtrArray *out, GError **errp)
{
    guint i;

    if (!bdfs) {
        for (i = 0; i < topo->devices->len; i++) {
            GpDevice *dev = g_ptr_array_index(topo->devices, i);

            if (gp_device_is_nvidia_gpu(dev)) {
                g_ptr_array_add(out, dev);
            }
        }
        return true;
    }
    for (i = 0; bdfs[i]; i++) {
        GpDevice *dev = gp_topo_find(topo, bdfs[i]);

        if (!dev) {
            g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND,
                        "device '%s' %s", bdfs[i],
                        gp_bdf_normalize(bdfs[i], (char[GP_BDF_LEN]){ 0 }) ?
                        "is not in the topology" : "is not a PCI address");
            return false;
        }
        if (g_ptr_array_find(out, dev, NULL)) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                        "device %s is named twice", dev->bdf);
            return false;
        }
        g_ptr_array_add(out, dev);
    }
    return true;
}

GpPlan *gp_plan_compute(const GpTopology *topo, const char *const *bdfs,
                        GpPlanPolicy policy, GError **errp)
{
    g_autoptr(GpPlan) plan = g_new0(GpPlan, 1);
    g_autofree bool *allowed = NULL;
    g_autoptr(GPtrArray) groups = g_ptr_array_new();
    guint n, i, j;

    plan->policy = policy;
    plan->devices = g_ptr_array_new();
    plan->cliques = g_ptr_array_new_with_free_func(clique_free);
    plan->left_out = g_ptr_array_new_with_free_func(left_out_free);
    if (!select_devices(topo, bdfs, plan->devices, errp)) {
        return NULL;
    }
    n = plan->devices->len;
    allowed = g_new0(bool, (gsize)n * n);
    for (i = 0; i < n; i++) {
        for (j = i + 1; j < n; j++) {
            bool ok = gp_plan_pair_allowed(topo,
                                           g_ptr_array_index(plan->devices, i),
                                           g_ptr_array_index(plan->devices, j),
                                           policy, NULL);

            allowed[i * n + j] = allowed[j * n + i] = ok;
        }
    }

    /*
     * Greedy in BDF order: a device joins the first group all of whose
     * members it can reach. P2P reachability is nearly always transitive
     * (it follows the tree), so this finds the natural domains.
     */
    for (i = 0; i < n; i++) {
        GArray *members;
        guint g;

        for (g = 0; g < groups->len; g++) {
            members = g_ptr_array_index(groups, g);
            for (j = 0; j < members->len; j++) {
                if (!allowed[i * n + g_array_index(members, guint, j)]) {
                    break;
                }
            }
            if (j == members->len) {
                break;
            }
        }
        if (g == groups->len) {
            g_ptr_array_add(groups, g_array_new(FALSE, FALSE, sizeof(guint)));
        }
        members = g_ptr_array_index(groups, g);
        g_array_append_val(members, i);
    }

    for (i = 0; i < groups->len; i++) {
        GArray *members = g_ptr_array_index(groups, i);

        if (members->len >= 2) {
            GpClique *c = g_new0(GpClique, 1);

            c->id = plan->cliques->len;
            c->devices = g_ptr_array_new();
            for (j = 0; j < members->len; j++) {
                g_ptr_array_add(c->devices,
                                g_ptr_array_index(plan->devices,
                                    g_array_index(members, guint, j)));
            }
            g_ptr_array_add(plan->cliques, c);
        } else {
            guint d = g_array_index(members, guint, 0);
            GpPlanLeftOut *l = g_new0(GpPlanLeftOut, 1);

            l->device = g_ptr_array_index(plan->devices, d);
            for (j = 0; j < n && !l->reason; j++) {
                if (j != d) {
                    gp_plan_pair_allowed(topo, l->device,
                                         g_ptr_array_index(plan->devices, j),
                                         policy, &l->reason);
                }
            }
            if (!l->reason) {
                l->reason = g_strdup(n == 1 ? "the only device planned" :
                                     "no peer reachable from all members");
            }
            g_ptr_array_add(plan->left_out, l);
        }
    }
    for (i = 0; i < groups->len; i++) {
        g_array_free(g_ptr_array_index(groups, i), TRUE);
    }

    if (plan->cliques->len > GP_PLAN_MAX_CLIQUES) {
        g_autoptr(GString) names = g_string_new(NULL);

        for (i = GP_PLAN_MAX_CLIQUES; i < plan->cliques->len; i++) {
            GpClique *c = g_ptr_array_index(plan->cliques, i);

            for (j = 0; j < c->devices->len; j++) {
                const GpDevice *d = g_ptr_array_index(c->devices, j);

                g_string_append_printf(names, "%s%s", names->len ? ", " : "",
                                       d->bdf);
            }
        }
        g_set_error(errp, GP_ERROR, GP_ERROR_TOO_MANY_CLIQUES,
                    "%u P2P cliques but ids go only to %d: %s would need ids "
                    "past %d", plan->cliques->len, GP_PLAN_MAX_CLIQUES - 1,
                    names->str, GP_PLAN_MAX_CLIQUES - 1);
        return NULL;
    }
    return g_steal_pointer(&plan);
}

int gp_plan_clique_of(const GpPlan *plan, const GpDevice *dev)
{
    guint i;

    for (i = 0; i < plan->cliques->len; i++) {
        GpClique *c = g_ptr_array_index(plan->cliques, i);

        if (g_ptr_array_find(c->devices, dev, NULL)) {
            return (int)c->id;
        }
    }
    return -1;
}
