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
                "must be system, host-bridge or switch, not '%s'",
                text ? text : "");
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

    /* A clique is a promise about a guest's requests: the VM rule. */
    gp_p2p_verdict(topo, a, b, &v);
    ok = gp_vm_p2p_ok(v.vm_kind);
    if (ok && policy == GP_PLAN_POLICY_HOST_BRIDGE && a->host != b->host) {
        ok = false;
        if (why) {
            *why = g_strdup_printf("%s and %s are under different host "
                                   "bridges (policy host-bridge)", a->bdf,
                                   b->bdf);
        }
    } else if (ok && policy == GP_PLAN_POLICY_SWITCH &&
               !(v.common && gp_device_switch(v.common))) {
        ok = false;
        if (why) {
            *why = g_strdup_printf("%s and %s share no upstream switch "
                                   "(policy switch): %s", a->bdf, b->bdf,
                                   v.vm_reason);
        }
    } else if (!ok && why) {
        *why = g_strdup_printf("%s and %s: guest P2P %s: %s", a->bdf, b->bdf,
                               gp_vm_p2p_kind_name(v.vm_kind), v.vm_reason);
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
        /* A bridge routes peer traffic; only an endpoint has a clique. */
        if (dev->is_bridge) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                        "device %s is a PCI bridge (a switch or root port), "
                        "not a GPU or other endpoint: it takes no clique",
                        dev->bdf);
            return false;
        }
        g_ptr_array_add(out, dev);
    }
    return true;
}

int gp_plan_group(unsigned n, GpPairAllowedFn allowed, void *ctx, int *ids,
                  GError **errp)
{
    g_autofree unsigned *group = g_new(unsigned, n ? n : 1);
    g_autofree unsigned *size = g_new0(unsigned, n ? n : 1);
    g_autoptr(GPtrArray) members = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_array_unref);
    unsigned ngroups = 0, i, j, g;
    int next_id = 0;

    /*
     * Greedy in item order: an item joins the first group all of whose
     * members it can reach. P2P reachability nearly always follows the tree
     * and is transitive, so this finds the natural domains.
     */
    for (i = 0; i < n; i++) {
        GArray *m = NULL;

        for (g = 0; g < ngroups; g++) {
            m = g_ptr_array_index(members, g);
            for (j = 0; j < m->len; j++) {
                if (!allowed(i, g_array_index(m, unsigned, j), ctx)) {
                    break;
                }
            }
            if (j == m->len) {
                break;
            }
        }
        if (g == ngroups) {
            m = g_array_new(FALSE, FALSE, sizeof(unsigned));
            g_ptr_array_add(members, m);
            ngroups++;
        }
        g_array_append_val(m, i);
        group[i] = g;
        size[g]++;
    }
    /* Ids in order of each group's first item; singletons get none. */
    {
        g_autofree int *gid = g_new(int, ngroups ? ngroups : 1);

        for (g = 0; g < ngroups; g++) {
            gid[g] = -1;
        }
        for (i = 0; i < n; i++) {
            g = group[i];
            if (size[g] >= 2 && gid[g] < 0) {
                gid[g] = next_id++;
            }
            ids[i] = size[g] >= 2 ? gid[g] : -1;
        }
    }
    if (next_id > GP_PLAN_MAX_CLIQUES) {
        g_set_error(errp, GP_ERROR, GP_ERROR_TOO_MANY_CLIQUES,
                    "%d P2P cliques but ids go only to %d", next_id,
                    GP_PLAN_MAX_CLIQUES - 1);
        return -1;
    }
    return next_id;
}

/* Whether item @i may join every item of @ids holding @id (none: true). */
static bool may_join(unsigned n, GpPairAllowedFn allowed, void *ctx,
                     const int *ids, unsigned i, int id, bool *members)
{
    unsigned j;

    *members = false;
    for (j = 0; j < n; j++) {
        if (j == i || ids[j] != id) {
            continue;
        }
        *members = true;
        if (!allowed(i, j, ctx)) {
            return false;
        }
    }
    return true;
}

unsigned gp_plan_assign(unsigned n, GpPairAllowedFn allowed, void *ctx,
                        const int *fixed, int *ids)
{
    unsigned i, none = 0;
    int id;

    for (i = 0; i < n; i++) {
        ids[i] = fixed[i];
    }
    for (i = 0; i < n; i++) {
        int fresh = -1, joined = -1;

        if (fixed[i] >= 0) {
            continue;
        }
        for (id = 0; id < GP_PLAN_MAX_CLIQUES && joined < 0; id++) {
            bool members;

            if (may_join(n, allowed, ctx, ids, i, id, &members) && members) {
                joined = id;
            } else if (!members && fresh < 0) {
                fresh = id;
            }
        }
        ids[i] = joined >= 0 ? joined : fresh;
        none += ids[i] < 0;
    }
    return none;
}

bool gp_plan_check(unsigned n, GpPairAllowedFn allowed, void *ctx,
                   const int *ids, unsigned *bad_i, unsigned *bad_j)
{
    unsigned i, j;

    for (i = 0; i < n; i++) {
        for (j = i + 1; j < n; j++) {
            if (ids[i] >= 0 && ids[i] == ids[j] && !allowed(i, j, ctx)) {
                *bad_i = i;
                *bad_j = j;
                return false;
            }
        }
    }
    return true;
}

typedef struct {
    unsigned n;
    const bool *allowed;        /* n x n verdicts, computed once */
} TopoPairs;

static bool topo_pair_allowed(unsigned i, unsigned j, void *ctx)
{
    const TopoPairs *p = ctx;

    return p->allowed[i * p->n + j];
}

/*
 * What kept device @i of @devices out of every clique, where a pair says
 * more than the first refused pair in order: a peer the VM rule allows
 * but the policy refuses (the policy excluded it), or a clique it reaches
 * one member of but not another (that member excluded it). NULL when
 * every pair is refused by the VM rule itself; the caller names the first.
 */
static char *left_out_reason(const GpTopology *topo, const GPtrArray *devices,
                             const int *ids, const bool *allowed, unsigned i,
                             GpPlanPolicy policy)
{
    const GpDevice *dev = g_ptr_array_index(devices, i);
    unsigned n = devices->len, j, m;
    char *why = NULL, *out;

    for (j = 0; j < n && policy != GP_PLAN_POLICY_SYSTEM; j++) {
        const GpDevice *peer = g_ptr_array_index(devices, j);

        if (j != i && !allowed[i * n + j] &&
            gp_plan_pair_allowed(topo, dev, peer, GP_PLAN_POLICY_SYSTEM,
                                 NULL)) {
            gp_plan_pair_allowed(topo, dev, peer, policy, &why);
            return why;
        }
    }
    for (j = 0; j < n; j++) {
        if (j == i || !allowed[i * n + j] || ids[j] < 0) {
            continue;
        }
        for (m = 0; m < n; m++) {
            const GpDevice *peer = g_ptr_array_index(devices, j);
            const GpDevice *other = g_ptr_array_index(devices, m);

            if (m == i || ids[m] != ids[j] || allowed[i * n + m]) {
                continue;
            }
            gp_plan_pair_allowed(topo, dev, other, policy, &why);
            out = g_strdup_printf("reaches %s of clique %d but not its "
                                  "member %s: %s", peer->bdf, ids[j],
                                  other->bdf, why);
            g_free(why);
            return out;
        }
    }
    return NULL;
}

GpPlan *gp_plan_compute(const GpTopology *topo, const char *const *bdfs,
                        GpPlanPolicy policy, GError **errp)
{
    g_autoptr(GpPlan) plan = g_new0(GpPlan, 1);
    g_autoptr(GError) err = NULL;
    g_autofree bool *allowed = NULL;
    g_autofree int *ids = NULL;
    TopoPairs pairs;
    int count;
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
    pairs = (TopoPairs){ n, allowed };
    ids = g_new(int, n ? n : 1);
    count = gp_plan_group(n, topo_pair_allowed, &pairs, ids, &err);
    if (count < 0) {
        g_autoptr(GString) names = g_string_new(NULL);

        for (i = 0; i < n; i++) {
            if (ids[i] >= GP_PLAN_MAX_CLIQUES) {
                const GpDevice *d = g_ptr_array_index(plan->devices, i);

                g_string_append_printf(names, "%s%s", names->len ? ", " : "",
                                       d->bdf);
            }
        }
        g_set_error(errp, GP_ERROR, GP_ERROR_TOO_MANY_CLIQUES,
                    "%s: %s would need ids past %d", err->message,
                    names->str, GP_PLAN_MAX_CLIQUES - 1);
        return NULL;
    }
    for (i = 0; i < (guint)count; i++) {
        GpClique *c = g_new0(GpClique, 1);

        c->id = i;
        c->devices = g_ptr_array_new();
        g_ptr_array_add(plan->cliques, c);
    }
    for (i = 0; i < n; i++) {
        GpDevice *dev = g_ptr_array_index(plan->devices, i);
        GpPlanLeftOut *l;

        if (ids[i] >= 0) {
            GpClique *c = g_ptr_array_index(plan->cliques, ids[i]);

            g_ptr_array_add(c->devices, dev);
            continue;
        }
        l = g_new0(GpPlanLeftOut, 1);
        l->device = dev;
        l->reason = left_out_reason(topo, plan->devices, ids, allowed, i,
                                    policy);
        /* Refused by all: first a peer that shares a clique with others
         * (the refusal is on this device's side), then any, in order. */
        for (j = 0; j < n && !l->reason; j++) {
            if (j != i && ids[j] >= 0) {
                gp_plan_pair_allowed(topo, dev,
                                     g_ptr_array_index(plan->devices, j),
                                     policy, &l->reason);
            }
        }
        for (j = 0; j < n && !l->reason; j++) {
            if (j != i) {
                gp_plan_pair_allowed(topo, dev,
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
