/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The shared P2P rule (kernel/include/gpup2p/p2p-rule.h) on plain paths,
 * case by case against p2pdma's calc_map_type_and_dist() and
 * host_bridge_whitelist(): what neither reader's cross-check can catch,
 * since both run this one rule.
 */
#include <glib.h>
#include <string.h>

#include "gpup2p/p2p-rule.h"

#define ROOT_PORT_A     GP_P2P_ADDR(0, 0, 0x10 << 3)
#define ROOT_PORT_B     GP_P2P_ADDR(0, 0, 0x11 << 3)
#define SWITCH_UP       GP_P2P_ADDR(0, 1, 0)
#define SWITCH_DOWN_0   GP_P2P_ADDR(0, 2, 0)
#define SWITCH_DOWN_1   GP_P2P_ADDR(0, 2, 1 << 3)
#define GPU_0           GP_P2P_ADDR(0, 3, 0)
#define GPU_1           GP_P2P_ADDR(0, 4, 0)
#define GPU_2           GP_P2P_ADDR(0, 5, 0)

static const struct gp_p2p_cpu intel = { GP_P2P_CPU_INTEL, 6 };

/* A path from @n hop addresses, device first; no ACS anywhere. */
static void path_set(struct gp_p2p_path *p, const unsigned *addrs,
                     unsigned n, unsigned short host_device)
{
    unsigned i;

    memset(p, 0, sizeof(*p));
    for (i = 0; i < n; i++) {
        p->hops[i].addr = addrs[i];
        p->hops[i].acs_state = GP_P2P_ACS_ABSENT;
    }
    p->nhops = n;
    p->host.has_root_dev = 1;
    p->host.vendor = 0x8086;
    p->host.device = host_device;
}

/* GPU_0 and GPU_1 under one switch below ROOT_PORT_A; GPU_2 under B. */
static void switch_paths(struct gp_p2p_path *a, struct gp_p2p_path *b,
                         struct gp_p2p_path *c, unsigned short host)
{
    const unsigned pa[] = { GPU_0, SWITCH_DOWN_0, SWITCH_UP, ROOT_PORT_A };
    const unsigned pb[] = { GPU_1, SWITCH_DOWN_1, SWITCH_UP, ROOT_PORT_A };
    const unsigned pc[] = { GPU_2, ROOT_PORT_B };

    path_set(a, pa, 4, host);
    path_set(b, pb, 4, host);
    path_set(c, pc, 2, host);
}

static void test_switch_direct(void)
{
    struct gp_p2p_path a, b, c;
    struct gp_p2p_outcome out;

    switch_paths(&a, &b, &c, 0x29c0);
    gp_p2p_rule(&a, &b, &intel, &out);
    g_assert_cmpuint(out.kind, ==, GP_P2P_RULE_DIRECT);
    g_assert_cmpuint(out.path_reason, ==, GP_P2P_PATH_COMMON_BRIDGE);
    g_assert_cmpint(out.common_a, ==, 2);
    g_assert_cmpint(out.common_b, ==, 2);
    /* p2pdma's distance: hops to the common bridge from each side. */
    g_assert_cmpuint(out.distance, ==, 4);
    gp_p2p_rule(&a, &a, &intel, &out);
    g_assert_cmpuint(out.kind, ==, GP_P2P_RULE_DIRECT);
    g_assert_cmpuint(out.distance, ==, 0);
}

static void test_redirect_on_either_side(void)
{
    struct gp_p2p_path a, b, c;
    struct gp_p2p_outcome out;
    int which = -1;

    switch_paths(&a, &b, &c, 0x29c0);
    /* The client's downstream port redirects: seen on b's side. */
    b.hops[1].acs_state = GP_P2P_ACS_PRESENT;
    b.hops[1].acs_ctrl = GP_P2P_ACS_RR | GP_P2P_ACS_CR;
    gp_p2p_rule(&a, &b, &intel, &out);
    g_assert_cmpuint(out.kind, ==, GP_P2P_RULE_NONE);
    g_assert_cmpuint(out.path_reason, ==, GP_P2P_PATH_ACS_REDIRECT);
    g_assert_cmpuint(out.host_reason, ==, GP_P2P_HOST_A_NOT_LISTED);
    g_assert_cmpint(gp_p2p_first_redirect(&out, &which), ==, 1);
    g_assert_cmpint(which, ==, 1);
    /* ACS present without a redirect bit changes nothing. */
    b.hops[1].acs_ctrl = 0x0011;        /* SV UF */
    gp_p2p_rule(&a, &b, &intel, &out);
    g_assert_cmpuint(out.kind, ==, GP_P2P_RULE_DIRECT);
    /* Above the common bridge ACS is not looked at on b's side. */
    b.hops[3].acs_state = GP_P2P_ACS_PRESENT;
    b.hops[3].acs_ctrl = GP_P2P_ACS_EC;
    gp_p2p_rule(&a, &b, &intel, &out);
    g_assert_cmpuint(out.kind, ==, GP_P2P_RULE_DIRECT);
    /* The common bridge itself counts on a's side, as in p2pdma. */
    a.hops[2].acs_state = GP_P2P_ACS_PRESENT;
    a.hops[2].acs_ctrl = GP_P2P_ACS_EC;
    gp_p2p_rule(&a, &b, &intel, &out);
    g_assert_cmpuint(out.path_reason, ==, GP_P2P_PATH_ACS_REDIRECT);
    g_assert_cmpuint(out.redirect_a, ==, 1u << 2);
}

static void test_host_bridge_rule(void)
{
    struct gp_p2p_path a, b, c;
    struct gp_p2p_outcome out;
    struct gp_p2p_cpu zen = { GP_P2P_CPU_AMD, 0x19 };
    struct gp_p2p_cpu old_amd = { GP_P2P_CPU_AMD, 0x15 };
    struct gp_p2p_cpu unknown = { GP_P2P_CPU_UNKNOWN, 0 };

    switch_paths(&a, &b, &c, 0x29c0);
    gp_p2p_rule(&a, &c, &intel, &out);
    g_assert_cmpuint(out.kind, ==, GP_P2P_RULE_NONE);
    g_assert_cmpuint(out.path_reason, ==, GP_P2P_PATH_NO_COMMON);
    g_assert_cmpuint(out.distance, ==, 6);
    gp_p2p_rule(&a, &c, &zen, &out);
    g_assert_cmpuint(out.kind, ==, GP_P2P_RULE_HOST_BRIDGE);
    g_assert_cmpuint(out.host_reason, ==, GP_P2P_HOST_AMD_ZEN);
    gp_p2p_rule(&a, &c, &old_amd, &out);
    g_assert_cmpuint(out.kind, ==, GP_P2P_RULE_NONE);
    gp_p2p_rule(&a, &c, &unknown, &out);
    g_assert_cmpuint(out.kind, ==, GP_P2P_RULE_UNKNOWN);
    g_assert_cmpuint(out.host_reason, ==, GP_P2P_HOST_CPU_UNKNOWN);

    /* Skylake-SP forwards within one host bridge and between two. */
    switch_paths(&a, &b, &c, 0x2020);
    gp_p2p_rule(&a, &c, &intel, &out);
    g_assert_cmpuint(out.kind, ==, GP_P2P_RULE_HOST_BRIDGE);
    g_assert_cmpuint(out.host_reason, ==, GP_P2P_HOST_SAME_LISTED);
    g_assert_cmpstr(out.host_a_name, ==, "Intel Skylake-SP");
    c.host.bus = 0x80;
    gp_p2p_rule(&a, &c, &intel, &out);
    g_assert_cmpuint(out.host_reason, ==, GP_P2P_HOST_BOTH_LISTED);
    /* Xeon E5 (3c00) only within one host bridge. */
    c.host.device = 0x3c00;
    gp_p2p_rule(&a, &c, &intel, &out);
    g_assert_cmpuint(out.kind, ==, GP_P2P_RULE_NONE);
    g_assert_cmpuint(out.host_reason, ==, GP_P2P_HOST_SAME_ONLY);
    /* The other side's host bridge unlisted; none at devfn 0. */
    c.host.device = 0x29c0;
    gp_p2p_rule(&a, &c, &intel, &out);
    g_assert_cmpuint(out.host_reason, ==, GP_P2P_HOST_B_NOT_LISTED);
    a.host.has_root_dev = 0;
    gp_p2p_rule(&a, &c, &intel, &out);
    g_assert_cmpuint(out.host_reason, ==, GP_P2P_HOST_A_NOT_LISTED);
}

static void test_unknown_acs(void)
{
    struct gp_p2p_path a, b, c;
    struct gp_p2p_outcome out;

    switch_paths(&a, &b, &c, 0x29c0);
    a.hops[1].acs_state = GP_P2P_ACS_UNKNOWN;
    gp_p2p_rule(&a, &b, &intel, &out);
    g_assert_cmpuint(out.kind, ==, GP_P2P_RULE_UNKNOWN);
    g_assert_cmpuint(out.path_reason, ==, GP_P2P_PATH_ACS_UNKNOWN);
    g_assert_cmpuint(out.unknown_a, ==, 1u << 1);
    /* Without a common bridge ACS cannot change the answer. */
    gp_p2p_rule(&a, &c, &intel, &out);
    g_assert_cmpuint(out.kind, ==, GP_P2P_RULE_NONE);
    g_assert_cmpuint(out.unknown_a, ==, 0);
}

/*
 * The module's reading of a hop (gpup2p_acs_read()): what its two config
 * reads gave decides the state, and all ones or a failed read is never
 * "redirects".
 */
static void test_acs_read_state(void)
{
    static const struct {
        int gone, ctrl_err;
        unsigned short ctrl;
        int cap_err;
        unsigned short cap;
        unsigned char want;
    } cases[] = {
        { 0, 0, 0x001d, 0, 0x005f, GP_P2P_ACS_PRESENT },
        { 0, 0, 0x0000, 0, 0x0000, GP_P2P_ACS_PRESENT },
        { 0, 0, 0xffff, 0, 0x005f, GP_P2P_ACS_UNKNOWN },
        { 0, 0, 0x001d, 0, 0xffff, GP_P2P_ACS_UNKNOWN },
        { 0, 0x87, 0x001d, 0, 0x005f, GP_P2P_ACS_UNKNOWN },
        { 0, 0, 0x001d, 0x87, 0x005f, GP_P2P_ACS_UNKNOWN },
        { 1, 0, 0x001d, 0, 0x005f, GP_P2P_ACS_UNKNOWN },
    };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_assert_cmpuint(gp_p2p_acs_read_state(cases[i].gone,
                                               cases[i].ctrl_err,
                                               cases[i].ctrl,
                                               cases[i].cap_err,
                                               cases[i].cap),
                         ==, cases[i].want);
    }
}

/*
 * A guest's request between two GPUs under one switch whose ports all
 * isolate, but one downstream port's ACS Control read all ones: the VM
 * verdict is unknown, where taking the bits as read would say "reaches
 * the IOMMU".
 */
static void test_all_ones_hop_is_unknown(void)
{
    static const unsigned char ports[] = {
        GP_P2P_PORT_ENDPOINT, GP_P2P_PORT_SWITCH_DOWN,
        GP_P2P_PORT_SWITCH_UP, GP_P2P_PORT_ROOT,
    };
    struct gp_p2p_path a, b, c;
    struct gp_p2p_vm_outcome out;
    unsigned i;

    switch_paths(&a, &b, &c, 0x2020);       /* Skylake-SP forwards */
    for (i = 0; i < 4; i++) {
        a.hops[i].port = b.hops[i].port = ports[i];
        a.hops[i].acs_state = b.hops[i].acs_state = GP_P2P_ACS_PRESENT;
        a.hops[i].acs_ctrl = b.hops[i].acs_ctrl = GP_P2P_ACS_ISOLATE;
        a.hops[i].acs_cap = b.hops[i].acs_cap = GP_P2P_ACS_ISOLATE;
    }
    gp_p2p_vm_rule(&a, &b, &intel, 0, &out);
    g_assert_cmpuint(out.kind, ==, GP_P2P_VM_OK);

    a.hops[1].acs_ctrl = 0xffff;
    gp_p2p_vm_rule(&a, &b, &intel, 0, &out);
    g_assert_cmpuint(out.kind, ==, GP_P2P_VM_OK);    /* taken as read */
    a.hops[1].acs_state = gp_p2p_acs_read_state(0, 0, a.hops[1].acs_ctrl, 0,
                                                a.hops[1].acs_cap);
    gp_p2p_vm_rule(&a, &b, &intel, 0, &out);
    g_assert_cmpuint(out.kind, ==, GP_P2P_VM_UNKNOWN);
    g_assert_cmpuint(out.unknown_a, ==, 1u << 1);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/p2p-rule/switch-direct", test_switch_direct);
    g_test_add_func("/p2p-rule/redirect", test_redirect_on_either_side);
    g_test_add_func("/p2p-rule/host-bridge", test_host_bridge_rule);
    g_test_add_func("/p2p-rule/unknown-acs", test_unknown_acs);
    g_test_add_func("/p2p-rule/acs-read-state", test_acs_read_state);
    g_test_add_func("/p2p-rule/all-ones-hop-is-unknown",
                    test_all_ones_hop_is_unknown);
    return g_test_run();
}
