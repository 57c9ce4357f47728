/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Plan a synthetic host of 1024 GPUs (16 host bridges, switches of 8) and
 * print the time, beside a reference in the same run: one pass of P2P
 * verdicts over every pair, which the plan cannot do without.
 */
#include <stdio.h>

#include "gpup2p/plan.h"
#include "synthetic.h"

static double now(void)
{
    return (double)g_get_monotonic_time() / 1e6;
}

static double verdict_pass(const GpTopology *t, const GPtrArray *gpus)
{
    double t0 = now();
    guint i, j;

    for (i = 0; i < gpus->len; i++) {
        for (j = i + 1; j < gpus->len; j++) {
            GpP2pVerdict v;

            gp_p2p_verdict(t, g_ptr_array_index(gpus, i),
                           g_ptr_array_index(gpus, j), &v);
            gp_p2p_verdict_clear(&v);
        }
    }
    return now() - t0;
}

int main(void)
{
    static const struct {
        GpPlanPolicy policy;
        GpCpuVendor cpu;
        const char *what;
    } cases[] = {
        { GP_PLAN_POLICY_SYSTEM, GP_CPU_VENDOR_AMD, "system, AMD Zen" },
        { GP_PLAN_POLICY_HOST_BRIDGE, GP_CPU_VENDOR_AMD, "host-bridge" },
    };
    g_autoptr(GpTopology) t = synthetic_host(16, 1024, 8);
    g_autoptr(GPtrArray) gpus = g_ptr_array_new();
    double ref;
    size_t c;
    guint i;

    for (i = 0; i < t->devices->len; i++) {
        GpDevice *d = g_ptr_array_index(t->devices, i);

        if (gp_device_is_nvidia_gpu(d)) {
            g_ptr_array_add(gpus, d);
        }
    }
    t->cpu_family = 0x19;
    printf("synthetic host: %u PCI devices, %u GPUs, %u pairs\n",
           t->devices->len, gpus->len, gpus->len * (gpus->len - 1) / 2);
    for (c = 0; c < G_N_ELEMENTS(cases); c++) {
        g_autoptr(GError) err = NULL;
        g_autoptr(GpPlan) plan = NULL;
        double t0, took;

        t->cpu_vendor = cases[c].cpu;
        ref = verdict_pass(t, gpus);
        t0 = now();
        plan = gp_plan_compute(t, NULL, cases[c].policy, &err);
        took = now() - t0;
        if (!plan) {
            fprintf(stderr, "bench-plan: %s\n", err->message);
            return 1;
        }
        printf("plan (%s): %u cliques in %.3f s; verdict pass %.3f s; "
               "plan/verdict-pass %.2f\n", cases[c].what, plan->cliques->len,
               took, ref, took / ref);
    }
    return 0;
}
