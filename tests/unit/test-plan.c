/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The clique planner and its policies. */
#include <string.h>
#include <unistd.h>

#include "gpup2p/plan.h"
#include "sysfs-builder.h"
#include "synthetic.h"

static GpPlan *plan_ok(const GpTopology *t, const char *const *bdfs,
                       GpPlanPolicy policy)
{
    g_autoptr(GError) err = NULL;
    GpPlan *plan = gp_plan_compute(t, bdfs, policy, &err);

    g_assert_no_error(err);
    g_assert_nonnull(plan);
    return plan;
}

static int clique(const GpPlan *plan, const GpTopology *t, const char *bdf)
{
    return gp_plan_clique_of(plan, gp_topo_find(t, bdf));
}

/* Every pair that shares an id can do P2P under the plan's policy. */
static void assert_plan_sound(const GpPlan *plan, const GpTopology *t)
{
    guint i, j, k;

    g_assert_cmpuint(plan->cliques->len, <=, GP_PLAN_MAX_CLIQUES);
    for (i = 0; i < plan->cliques->len; i++) {
        const GpClique *c = g_ptr_array_index(plan->cliques, i);

        g_assert_cmpuint(c->id, ==, i);
        g_assert_cmpuint(c->devices->len, >=, 2);
        for (j = 0; j < c->devices->len; j++) {
            for (k = j + 1; k < c->devices->len; k++) {
                g_assert_true(gp_plan_pair_allowed(t,
                    g_ptr_array_index(c->devices, j),
                    g_ptr_array_index(c->devices, k), plan->policy, NULL));
            }
        }
    }
}

/*
 * The two-node host; @switch_acs: its switch's downstream ports redirect
 * peer requests (ACS RR CR), as Linux sets them with an IOMMU on.
 */
static GpTopology *two_node_acs(SysfsBuilder *sb, uint16_t hb,
                                const char *cpu, unsigned family,
                                bool switch_acs)
{
    const uint16_t rr_cr = GP_ACS_SV | GP_ACS_RR | GP_ACS_CR | GP_ACS_UF;
    g_autoptr(GError) err = NULL;
    GpTopology *t;

    sb_two_node_host(sb, hb);
    if (cpu) {
        sb_cpu(sb, cpu, family);
    }
    if (switch_acs) {
        sb_set_acs(sb, "0000:02:00.0", 0x5f, rr_cr);
        sb_set_acs(sb, "0000:02:01.0", 0x5f, rr_cr);
    }
    t = gp_topo_read(sb_root(sb), &err);
    g_assert_no_error(err);
    return t;
}

static GpTopology *two_node(SysfsBuilder *sb, uint16_t hb, const char *cpu,
                            unsigned family)
{
    return two_node_acs(sb, hb, cpu, family, true);
}

/*
 * Q35's unlisted host bridge on an Intel CPU: nothing forwards between
 * root ports, and the switch peers, whose ports do not redirect, would be
 * routed by the switch on host addresses: no clique at all (p2pdma would
 * call the switch peers "direct").
 */
static void test_no_clique_on_unlisted_host(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = two_node_acs(sb, 0x29c0, NULL, 0, false);
    g_autoptr(GpPlan) plan = plan_ok(t, NULL, GP_PLAN_POLICY_SYSTEM);
    guint i;

    /* Default set: the five NVIDIA GPUs, not the NIC. */
    g_assert_cmpuint(plan->devices->len, ==, 5);
    g_assert_cmpuint(plan->cliques->len, ==, 0);
    g_assert_cmpuint(plan->left_out->len, ==, 5);
    for (i = 0; i < plan->left_out->len; i++) {
        const GpPlanLeftOut *l = g_ptr_array_index(plan->left_out, i);
        bool switch_peer = !strcmp(l->device->bdf, SB_GPU_A) ||
                           !strcmp(l->device->bdf, SB_GPU_B);

        g_assert_nonnull(strstr(l->reason, l->device->bdf));
        if (switch_peer) {
            g_assert_nonnull(strstr(l->reason, "bypasses the IOMMU"));
        }
    }
    assert_plan_sound(plan, t);
}

/* With the switch's ACS redirect on, its peers go through the IOMMU and
 * the root complex; on the same unlisted host they still get no clique. */
static void test_switch_acs_needs_root_complex(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = two_node_acs(sb, 0x29c0, NULL, 0, true);
    g_autoptr(GpPlan) plan = plan_ok(t, NULL, GP_PLAN_POLICY_SYSTEM);

    g_assert_cmpuint(plan->cliques->len, ==, 0);
    g_clear_pointer(&plan, gp_plan_free);
    g_clear_pointer(&t, gp_topo_free);
    sb_cpu(sb, "AuthenticAMD", 0x19);
    t = gp_topo_read(sb_root(sb), NULL);
    plan = plan_ok(t, NULL, GP_PLAN_POLICY_SYSTEM);
    g_assert_cmpuint(plan->cliques->len, ==, 1);
    g_assert_cmpint(clique(plan, t, SB_GPU_A), ==, 0);
    g_assert_cmpint(clique(plan, t, SB_GPU_B), ==, 0);
    assert_plan_sound(plan, t);
}

static void test_policies(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = two_node(sb, 0x2020, NULL, 0);
    g_autoptr(GpPlan) sys = plan_ok(t, NULL, GP_PLAN_POLICY_SYSTEM);
    g_autoptr(GpPlan) hb = plan_ok(t, NULL, GP_PLAN_POLICY_HOST_BRIDGE);
    g_autoptr(GpPlan) sw = plan_ok(t, NULL, GP_PLAN_POLICY_SWITCH);

    /* Skylake-SP host bridges forward between each other; pci0000:80 has
     * only an unlisted root port (1b36:000c) first on its bus, so D stays
     * out. */
    g_assert_cmpint(clique(sys, t, SB_GPU_A), ==, 0);
    g_assert_cmpint(clique(sys, t, SB_GPU_C), ==, 0);
    g_assert_cmpint(clique(sys, t, SB_GPU_F), ==, 0);
    g_assert_cmpint(clique(sys, t, SB_GPU_D), ==, -1);
    assert_plan_sound(sys, t);

    g_assert_cmpint(clique(hb, t, SB_GPU_A), ==, 0);
    g_assert_cmpint(clique(hb, t, SB_GPU_B), ==, 0);
    g_assert_cmpint(clique(hb, t, SB_GPU_C), ==, 0);
    g_assert_cmpint(clique(hb, t, SB_GPU_F), ==, -1);
    assert_plan_sound(hb, t);

    g_assert_cmpuint(sw->cliques->len, ==, 1);
    g_assert_cmpint(clique(sw, t, SB_GPU_A), ==, 0);
    g_assert_cmpint(clique(sw, t, SB_GPU_C), ==, -1);
    assert_plan_sound(sw, t);
}

static void test_amd_zen_one_clique(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = two_node(sb, 0x29c0, "AuthenticAMD", 0x19);
    g_autoptr(GpPlan) plan = plan_ok(t, NULL, GP_PLAN_POLICY_SYSTEM);
    g_autoptr(SysfsBuilder) sb2 = sb_new();
    g_autoptr(GpTopology) t2 = two_node_acs(sb2, 0x29c0, "AuthenticAMD", 0x19,
                                            false);
    g_autoptr(GpPlan) plan2 = plan_ok(t2, NULL, GP_PLAN_POLICY_SYSTEM);

    g_assert_cmpuint(plan->cliques->len, ==, 1);
    g_assert_cmpuint(((GpClique *)g_ptr_array_index(plan->cliques, 0))
                     ->devices->len, ==, 5);
    assert_plan_sound(plan, t);
    /* Without the switch's redirect its two GPUs stay out. */
    g_assert_cmpuint(plan2->cliques->len, ==, 1);
    g_assert_cmpint(clique(plan2, t2, SB_GPU_A), ==, -1);
    g_assert_cmpint(clique(plan2, t2, SB_GPU_B), ==, -1);
    g_assert_cmpint(clique(plan2, t2, SB_GPU_C), ==, 0);
    assert_plan_sound(plan2, t2);
}

static void test_named_devices(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = two_node(sb, 0x29c0, "AuthenticAMD", 0x19);
    const char *const bdfs[] = { SB_NIC, "81:00.0", NULL };
    g_autoptr(GpPlan) plan = plan_ok(t, bdfs, GP_PLAN_POLICY_SYSTEM);

    g_assert_cmpuint(plan->devices->len, ==, 2);
    g_assert_cmpint(clique(plan, t, SB_NIC), ==, 0);
    g_assert_cmpint(clique(plan, t, SB_GPU_D), ==, 0);
}

static void test_bad_devices(void)
{
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(GpTopology) t = two_node(sb, 0x29c0, NULL, 0);
    const char *const unknown[] = { SB_GPU_A, "0000:09:00.0", NULL };
    const char *const garbage[] = { "gpu0", NULL };
    const char *const twice[] = { SB_GPU_A, "03:00.0", NULL };
    /* A switch's downstream port: a bridge routes, it takes no clique. */
    const char *const port[] = { SB_GPU_A, "0000:02:00.0", NULL };
    g_autoptr(GError) err = NULL;

    g_assert_null(gp_plan_compute(t, unknown, GP_PLAN_POLICY_SYSTEM, &err));
    g_assert_error(err, GP_ERROR, GP_ERROR_NOT_FOUND);
    g_assert_nonnull(strstr(err->message, "0000:09:00.0"));
    g_clear_error(&err);
    g_assert_null(gp_plan_compute(t, garbage, GP_PLAN_POLICY_SYSTEM, &err));
    g_assert_nonnull(strstr(err->message, "'gpu0' is not a PCI address"));
    g_clear_error(&err);
    g_assert_null(gp_plan_compute(t, twice, GP_PLAN_POLICY_SYSTEM, &err));
    g_assert_error(err, GP_ERROR, GP_ERROR_INVALID);
    g_assert_nonnull(strstr(err->message, "named twice"));
    g_clear_error(&err);
    g_assert_null(gp_plan_compute(t, port, GP_PLAN_POLICY_SYSTEM, &err));
    g_assert_error(err, GP_ERROR, GP_ERROR_INVALID);
    g_assert_nonnull(strstr(err->message, "0000:02:00.0 is a PCI bridge"));
}

static void test_too_many_cliques(void)
{
    /* 17 host bridges of two GPUs each, no forwarding between them. */
    g_autoptr(GpTopology) t = synthetic_host(17, 34, 2);
    g_autoptr(GpTopology) t16 = synthetic_host(16, 32, 2);
    g_autoptr(GError) err = NULL;
    g_autoptr(GpPlan) ok = NULL;

    g_assert_null(gp_plan_compute(t, NULL, GP_PLAN_POLICY_SYSTEM, &err));
    g_assert_error(err, GP_ERROR, GP_ERROR_TOO_MANY_CLIQUES);
    g_assert_nonnull(strstr(err->message, "17 P2P cliques"));
    /* The 17th host bridge's GPUs are named. */
    g_assert_nonnull(strstr(err->message, "0010:03:00.0"));
    g_assert_nonnull(strstr(err->message, "0010:04:00.0"));

    ok = plan_ok(t16, NULL, GP_PLAN_POLICY_SYSTEM);
    g_assert_cmpuint(ok->cliques->len, ==, 16);
    assert_plan_sound(ok, t16);
}

static void test_policy_parse(void)
{
    GpPlanPolicy p;
    g_autoptr(GError) err = NULL;

    g_assert_true(gp_plan_policy_parse("switch", &p, NULL));
    g_assert_cmpint(p, ==, GP_PLAN_POLICY_SWITCH);
    g_assert_true(gp_plan_policy_parse("host-bridge", &p, NULL));
    g_assert_cmpint(p, ==, GP_PLAN_POLICY_HOST_BRIDGE);
    g_assert_false(gp_plan_policy_parse("numa", &p, &err));
    g_assert_nonnull(strstr(err->message, "'numa'"));
}

/* Items are P2P peers when they carry the same domain letter. */
static bool same_domain(unsigned i, unsigned j, void *ctx)
{
    const char *domains = ctx;

    return domains[i] == domains[j];
}

static void assert_ids(const int *got, const int *want, unsigned n)
{
    unsigned i;

    for (i = 0; i < n; i++) {
        g_assert_cmpint(got[i], ==, want[i]);
    }
}

static void test_assign_explicit_is_a_constraint(void)
{
    /* One explicit 0 in domain A, two to choose in domain B: they must not
     * get 0 (the guest would try P2P the host cannot do). */
    const int fixed[] = { 0, -1, -1 };
    const int want[] = { 0, 1, 1 };
    int ids[3], n = 3;
    unsigned bi, bj;

    g_assert_cmpuint(gp_plan_assign(n, same_domain, (char *)"ABB", fixed,
                                    ids), ==, 0);
    assert_ids(ids, want, n);
    g_assert_true(gp_plan_check(n, same_domain, (char *)"ABB", ids, &bi,
                                &bj));
}

static void test_assign_joins_explicit_domain(void)
{
    /* Items to choose for in the domain of an explicit 5 take 5; the other
     * domain takes the lowest id nobody uses. */
    const int fixed[] = { -1, 5, -1, -1, 0 };
    const int want[] = { 5, 5, 1, 5, 0 };
    int ids[5];

    g_assert_cmpuint(gp_plan_assign(5, same_domain, (char *)"AACAB", fixed,
                                    ids), ==, 0);
    assert_ids(ids, want, 5);
}

static void test_assign_hotplug_sequence(void)
{
    /* Devices plugged one at a time, each seeing the earlier ones as
     * fixed: a lone device gets an id a later peer joins; one in another
     * domain takes a fresh id. */
    const char *domains = "AAB";
    int fixed[3] = { -1, -1, -1 }, ids[3];

    g_assert_cmpuint(gp_plan_assign(1, same_domain, (char *)domains, fixed,
                                    ids), ==, 0);
    g_assert_cmpint(ids[0], ==, 0);
    fixed[0] = ids[0];
    gp_plan_assign(2, same_domain, (char *)domains, fixed, ids);
    g_assert_cmpint(ids[1], ==, 0);
    fixed[1] = ids[1];
    gp_plan_assign(3, same_domain, (char *)domains, fixed, ids);
    g_assert_cmpint(ids[2], ==, 1);
}

static void test_assign_out_of_ids(void)
{
    /* Sixteen domains hold ids 0..15; a seventeenth gets none. */
    const char *domains = "ABCDEFGHIJKLMNOPQ";
    int fixed[17], ids[17], i;

    for (i = 0; i < 16; i++) {
        fixed[i] = 15 - i;
    }
    fixed[16] = -1;
    g_assert_cmpuint(gp_plan_assign(17, same_domain, (char *)domains, fixed,
                                    ids), ==, 1);
    g_assert_cmpint(ids[16], ==, -1);
    g_assert_cmpint(ids[0], ==, 15);
}

static void test_check_names_contradiction(void)
{
    const int ids[] = { 3, -1, 3, -1 };
    unsigned bi = 0, bj = 0;

    g_assert_false(gp_plan_check(4, same_domain, (char *)"AABB", ids, &bi,
                                 &bj));
    g_assert_cmpuint(bi, ==, 0);
    g_assert_cmpuint(bj, ==, 2);
    /* Items without an id never contradict. */
    g_assert_true(gp_plan_check(4, same_domain, (char *)"ABCD",
                                (const int[]){ -1, -1, 0, 1 }, &bi, &bj));
}

/*
 * A left-out GPU is blamed on what kept it out, not on the first refused
 * pair in BDF order (here always A, whose switch port has no ACS): the
 * policy where the VM rule alone would pair it, or the member of a clique
 * it cannot reach.
 */
static void test_left_out_reason(void)
{
    const char *const by_policy[] = { SB_GPU_A, SB_GPU_C, SB_GPU_F, NULL };
    const char *const by_member[] = { SB_GPU_A, SB_GPU_C, SB_GPU_F,
                                      SB_GPU_D, NULL };
    g_autoptr(SysfsBuilder) sb = sb_new();
    g_autoptr(SysfsBuilder) zen = sb_new();
    g_autoptr(GpTopology) t = NULL;
    g_autoptr(GpTopology) z = NULL;
    g_autofree char *dir = NULL, *link = NULL;
    GpPlan *plan;
    guint i;

    /* Skylake-SP forwards across host bridges: only the policy parts
     * C (pci0000:00) and F (pci0000:40). */
    t = two_node_acs(sb, 0x2020, "GenuineIntel", 6, false);
    plan = plan_ok(t, by_policy, GP_PLAN_POLICY_HOST_BRIDGE);
    g_assert_cmpuint(plan->left_out->len, ==, 3);
    for (i = 0; i < plan->left_out->len; i++) {
        const GpPlanLeftOut *l = g_ptr_array_index(plan->left_out, i);

        if (!strcmp(l->device->bdf, SB_GPU_A)) {
            continue;
        }
        if (!strstr(l->reason, "under different host bridges (policy "
                    "host-bridge)") || strstr(l->reason, SB_GPU_A)) {
            g_error("%s: %s", l->device->bdf, l->reason);
        }
    }
    gp_plan_free(plan);

    /* AMD Zen forwards everywhere, but D shares F's IOMMU group: D
     * reaches C, of C and F's clique, and not F. */
    sb_two_node_host(zen, 0x29c0);
    sb_cpu(zen, "AuthenticAMD", 0x19);
    dir = sb_device_dir(zen, SB_GPU_D);
    link = g_build_filename(dir, "iommu_group", NULL);
    g_assert_cmpint(unlink(link), ==, 0);
    g_assert_cmpint(symlink("../../../kernel/iommu_groups/14", link), ==, 0);
    z = gp_topo_read(sb_root(zen), NULL);
    g_assert_nonnull(z);
    plan = plan_ok(z, by_member, GP_PLAN_POLICY_SYSTEM);
    g_assert_cmpint(clique(plan, z, SB_GPU_C), ==, 0);
    g_assert_cmpint(clique(plan, z, SB_GPU_F), ==, 0);
    g_assert_cmpuint(plan->left_out->len, ==, 2);
    for (i = 0; i < plan->left_out->len; i++) {
        const GpPlanLeftOut *l = g_ptr_array_index(plan->left_out, i);

        if (!strcmp(l->device->bdf, SB_GPU_D) &&
            (!strstr(l->reason, "reaches " SB_GPU_C " of clique 0 but not "
                     "its member " SB_GPU_F) ||
             !strstr(l->reason, "one IOMMU group (14)"))) {
            g_error("%s: %s", l->device->bdf, l->reason);
        }
    }
    gp_plan_free(plan);

    /*
     * A device refused by every peer: blamed on a pair whose peer others
     * share a clique with (its own side decided), not on a peer that is
     * itself refused by all. On Skylake-SP, A (its switch port has no ACS)
     * is refused by all; C and F share a clique; D's host bridge
     * (pci0000:80, its first device a root port of an unlisted id) does
     * not forward. D was blamed on A's switch port, the first in order.
     */
    g_clear_pointer(&t, gp_topo_free);
    {
        g_autoptr(SysfsBuilder) own = sb_new();
        const char *const all[] = { SB_GPU_A, SB_GPU_C, SB_GPU_F, SB_GPU_D,
                                    NULL };

        t = two_node_acs(own, 0x2020, "GenuineIntel", 6, false);
        plan = plan_ok(t, all, GP_PLAN_POLICY_SYSTEM);
        g_assert_cmpint(clique(plan, t, SB_GPU_C), ==, 0);
        g_assert_cmpint(clique(plan, t, SB_GPU_F), ==, 0);
        for (i = 0; i < plan->left_out->len; i++) {
            const GpPlanLeftOut *l = g_ptr_array_index(plan->left_out, i);

            if (!strcmp(l->device->bdf, SB_GPU_D) &&
                (strstr(l->reason, SB_GPU_A) ||
                 !strstr(l->reason, "pci0000:80") ||
                 !strstr(l->reason, "is not known to forward P2P"))) {
                g_error("%s: %s", l->device->bdf, l->reason);
            }
        }
        gp_plan_free(plan);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/plan/no-clique-on-unlisted-host",
                    test_no_clique_on_unlisted_host);
    g_test_add_func("/plan/switch-acs-needs-root-complex",
                    test_switch_acs_needs_root_complex);
    g_test_add_func("/plan/policies", test_policies);
    g_test_add_func("/plan/amd-zen", test_amd_zen_one_clique);
    g_test_add_func("/plan/named-devices", test_named_devices);
    g_test_add_func("/plan/bad-devices", test_bad_devices);
    g_test_add_func("/plan/too-many-cliques", test_too_many_cliques);
    g_test_add_func("/plan/policy-parse", test_policy_parse);
    g_test_add_func("/plan/assign/explicit-constraint",
                    test_assign_explicit_is_a_constraint);
    g_test_add_func("/plan/assign/explicit-domain",
                    test_assign_joins_explicit_domain);
    g_test_add_func("/plan/assign/hotplug", test_assign_hotplug_sequence);
    g_test_add_func("/plan/assign/out-of-ids", test_assign_out_of_ids);
    g_test_add_func("/plan/check", test_check_names_contradiction);
    g_test_add_func("/plan/left-out-reason", test_left_out_reason);
    return g_test_run();
}
