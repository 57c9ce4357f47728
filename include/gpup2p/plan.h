/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The clique planner: assign P2P clique ids 0..15 to a set of devices so
 * that devices share an id only if every pair of them can do P2P.
 */
#ifndef GPUP2P_PLAN_H
#define GPUP2P_PLAN_H

#include "gpup2p/p2p.h"

#define GP_PLAN_MAX_CLIQUES 16

typedef enum {
    GP_PLAN_POLICY_SYSTEM,      /* whatever the P2P rules allow */
    GP_PLAN_POLICY_HOST_BRIDGE, /* never wider than one host bridge */
    GP_PLAN_POLICY_SWITCH,      /* only under a common upstream switch */
} GpPlanPolicy;

typedef struct GpClique {
    unsigned id;
    GPtrArray *devices;         /* const GpDevice * */
} GpClique;

typedef struct GpPlanLeftOut {
    const GpDevice *device;
    char *reason;               /* why it shares no clique */
} GpPlanLeftOut;

typedef struct GpPlan {
    GpPlanPolicy policy;
    GPtrArray *devices;         /* the planned set, const GpDevice * */
    GPtrArray *cliques;         /* GpClique * */
    GPtrArray *left_out;        /* GpPlanLeftOut * */
} GpPlan;

/*
 * Plan for @bdfs (NULL: every NVIDIA display-class device). Fails on an
 * unknown or duplicate BDF, or with GP_ERROR_TOO_MANY_CLIQUES naming the
 * devices that would need ids past 15.
 */
GpPlan *gp_plan_compute(const GpTopology *topo, const char *const *bdfs,
                        GpPlanPolicy policy, GError **errp);
void gp_plan_free(GpPlan *plan);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(GpPlan, gp_plan_free)

/*
 * The grouping at the heart of the planner, over any pair source: @n items,
 * @allowed(i, j, ctx) says whether items i and j may share a clique.
 * Greedy in item order; groups of one get -1. Fills @ids (n entries) and
 * returns the number of cliques, or -1 with GP_ERROR_TOO_MANY_CLIQUES
 * when more than 16 would be needed (@ids then holds the would-be ids).
 */
typedef bool (*GpPairAllowedFn)(unsigned i, unsigned j, void *ctx);
int gp_plan_group(unsigned n, GpPairAllowedFn allowed, void *ctx, int *ids,
                  GError **errp);

/*
 * Clique ids for the devices of one VM, some of them fixed by the operator
 * (the planner behind QEMU's x-gpu-p2p-clique). @fixed[i] is item i's
 * explicit id (0..15), or -1 for one to choose. Fixed items keep their id.
 * Every other item, in order, joins the lowest id in use all of whose
 * members it may share a clique with; else takes the lowest id no item
 * uses (alone too, so that a later item can join it); else, with all 16
 * ids in use, gets -1. Fills @ids (n entries); returns how many items to
 * choose for got -1. Whether fixed ids contradict the pairs is
 * gp_plan_check()'s to say.
 */
unsigned gp_plan_assign(unsigned n, GpPairAllowedFn allowed, void *ctx,
                        const int *fixed, int *ids);

/*
 * Whether every two items sharing an id (>= 0) in @ids may share a clique.
 * On the first pair that may not, sets @bad_i < @bad_j and returns false.
 */
bool gp_plan_check(unsigned n, GpPairAllowedFn allowed, void *ctx,
                   const int *ids, unsigned *bad_i, unsigned *bad_j);

/* The clique id of @dev in @plan, or -1 when it has none. */
int gp_plan_clique_of(const GpPlan *plan, const GpDevice *dev);

bool gp_plan_policy_parse(const char *text, GpPlanPolicy *policy,
                          GError **errp);
const char *gp_plan_policy_name(GpPlanPolicy policy);

/* Whether a pair may share a clique under @policy; @why explains a no. */
bool gp_plan_pair_allowed(const GpTopology *topo, const GpDevice *a,
                          const GpDevice *b, GpPlanPolicy policy,
                          char **why);

#endif /* GPUP2P_PLAN_H */
