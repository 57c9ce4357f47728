/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The text report and the JSON, both from the one result model. */
#include <stdio.h>

#include "gpup2p/json.h"
#include "gpup2p-version.h"

#include "topo-matrix.h"
#include "verify.h"

static const char *state_name(CheckState s)
{
    switch (s) {
    case CHECK_OK:
        return "ok";
    case CHECK_FAILED:
        return "failed";
    case CHECK_UNTESTABLE:
        return "not testable";
    case CHECK_NOT_RUN:
        break;
    }
    return "not run";
}

/* A PCI-only pass has its own words: it moved no data, so it cannot
 * say "all good" as a run that checked bytes does. */
static const char *verdict(const VerifyOptions *o, const VerifyReport *r)
{
    static const char *const names[] = {
        [VERIFY_EXIT_OK] = "all good",
        [VERIFY_EXIT_P2P_BROKEN] = "P2P broken",
        [VERIFY_EXIT_RDMA_BROKEN] = "RDMA broken",
        [VERIFY_EXIT_UNTESTED] = "could not test",
        [VERIFY_EXIT_GPU_LOST] = "GPU lost",
    };

    if (verify_exit_code(r) == VERIFY_EXIT_OK && verify_pci_checks_only(o)) {
        return "PCI checks passed, no data moved";
    }
    return names[verify_exit_code(r)];
}

static void matrix(const VerifyReport *r, int fig)
{
    guint a, b;
    bool any = false;

    for (a = 0; a < r->pairs->len; a++) {
        any |= g_array_index(r->pairs, VerifyPair, a).fig[fig].samples > 0;
    }
    if (!any) {
        return;
    }
    printf("\n%s\n%6s", verify_pair_figures[fig].title, "");
    for (b = 0; b < r->gpus->len; b++) {
        printf(" %9u", b);
    }
    printf("\n");
    for (a = 0; a < r->gpus->len; a++) {
        printf("%6u", a);
        for (b = 0; b < r->gpus->len; b++) {
            const VerifyPair *p = a == b ? NULL : verify_pair_find(r, a, b);

            if (p && p->fig[fig].samples) {
                printf(" %9.2f", p->fig[fig].median);
            } else {
                printf(" %9s", a == b ? "-" : "n/a");
            }
        }
        printf("\n");
    }
}

/* "node 1, CPUs 8-15, memory preferred on node 1", or why not; to be
 * freed. */
static char *host_place_text(const VerifyHostPlacement *p)
{
    if (!p->tried) {
        return g_strdup(VERIFY_HOST_PLACE_VALIDATION);
    }
    if (p->node < 0) {
        return g_strdup(p->why);
    }
    if (p->memory_node < 0) {
        return g_strdup_printf("node %d, CPUs %s; %s", p->node, p->cpus,
                               p->why);
    }
    return g_strdup_printf("node %d, CPUs %s, memory preferred on node %d",
                           p->node, p->cpus, p->memory_node);
}

static void aggregates(const VerifyReport *r)
{
    guint g;
    int k;

    for (k = 0; k < AGG_COUNT; k++) {
        bool any = false;

        for (g = 0; g < r->gpus->len; g++) {
            any |= g_array_index(r->gpus, VerifyGpu, g).agg[k].samples > 0;
        }
        if (!any) {
            continue;
        }
        printf("\n%s\n", verify_gpu_figures[k].title);
        for (g = 0; g < r->gpus->len; g++) {
            const Figure *f = &g_array_index(r->gpus, VerifyGpu, g).agg[k];

            if (f->samples && (k == AGG_H2D || k == AGG_D2H)) {
                g_autofree char *place = host_place_text(
                    &g_array_index(r->gpus, VerifyGpu, g).host_place);

                printf("  %u %9.2f  host: %s\n", g, f->median, place);
            } else if (f->samples) {
                printf("  %u %9.2f\n", g, f->median);
            }
        }
    }
}

static const char *access_name(int v)
{
    return v < 0 ? "unknown" : v ? "yes" : "no";
}

/* The GPU matrix, as nvidia-smi topo -m, where there are GPU pairs. */
static void print_topology(const VerifyReport *r)
{
    g_autofree char *title = NULL;
    g_autofree char *topo = NULL;

    if (r->gpus->len < 2) {
        return;
    }
    title = verify_topo_title(r);
    topo = verify_topo_matrix(r);
    printf("\n%s\n%s", title, topo);
}

/* One line per GPU: address, CUDA's name, clique, P2P capability. */
static void print_gpus(const VerifyReport *r)
{
    guint i;

    printf("GPUs\n");
    for (i = 0; i < r->gpus->len; i++) {
        const VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);
        g_autofree char *cap = NULL;
        char clique[8] = "none";

        if (g->clique >= 0) {
            g_snprintf(clique, sizeof(clique), "%d", g->clique);
        }
        if (g->has_cap) {
            cap = g_strdup_printf("P2P capability at 0x%02x %s%s",
                                  g->cap_offset,
                                  g->cap_valid ? "valid" : "INVALID: ",
                                  g->cap_valid ? "" : g->cap_problem);
        } else {
            cap = g_strdup(g->cap_problem[0] ? g->cap_problem :
                           "no P2P capability");
        }
        printf("  %u %s %-20s clique %-4s %s\n", i, g->bdf,
               g->name[0] ? g->name : g->hidden ?
               "(left out by CUDA_VISIBLE_DEVICES)" : r->cuda_status ?
               "(no CUDA view)" : "(not seen by CUDA)",
               clique, cap);
        if (g->lost) {
            printf("    GPU LOST: %s\n", g->lost_why);
        }
    }
}

/* Each counter of @g that was not read, once per name (a link counter
 * once for all links), with why: @names and @reasons side by side. */
static void health_unread(const VerifyGpu *g, GPtrArray *names,
                          GPtrArray *reasons)
{
    for (int c = 0; c < HEALTH_GPU_COUNTERS; c++) {
        if (!verify_health_read_twice(&g->health[c])) {
            g_ptr_array_add(names,
                            (char *)verify_health_gpu_counters[c].name);
            g_ptr_array_add(reasons,
                            verify_health_unread_reason(&g->health[c]));
        }
    }
    for (int c = 0; c < HEALTH_LINK_COUNTERS; c++) {
        for (int l = 0; l < VERIFY_MAX_NVLINKS; l++) {
            const VerifyHealthValue *v = &g->link_health[l][c];

            /* An inactive link was not asked (HEALTH_UNREAD). */
            if (v->state != HEALTH_UNREAD && !verify_health_read_twice(v)) {
                g_ptr_array_add(names,
                                (char *)verify_health_link_counters[c].name);
                g_ptr_array_add(reasons, verify_health_unread_reason(v));
                break;
            }
        }
    }
}

/* Why none of @g's counters could be read at all, or NULL. */
static const char *health_gpu_not_read(const VerifyReport *r,
                                       const VerifyGpu *g)
{
    const char *run = verify_health_not_read(r);

    return run ? run : !g->nvml_seen ? "NVML does not see this GPU" : NULL;
}

/* "NVLink 3 nvlink_crc_data 0 -> 2: failed, ..." for @g. */
static void health_rises(const VerifyGpu *g, GString *out)
{
    for (int c = 0; c < HEALTH_GPU_COUNTERS; c++) {
        const VerifyHealthValue *v = &g->health[c];
        HealthVerdict h = verify_health_verdict(
            v, &verify_health_gpu_counters[c]);

        if (h == HEALTH_FAILED || h == HEALTH_WARNING) {
            g_string_append_printf(out, "%s%s %llu -> %llu: %s",
                                   out->len ? ", " : "",
                                   verify_health_gpu_counters[c].name,
                                   v->before, v->after,
                                   verify_health_verdict_name(h));
        }
    }
    for (int l = 0; l < VERIFY_MAX_NVLINKS; l++) {
        for (int c = 0; c < HEALTH_LINK_COUNTERS; c++) {
            const VerifyHealthValue *v = &g->link_health[l][c];
            HealthVerdict h = verify_health_verdict(
                v, &verify_health_link_counters[c]);

            /* A CRC rise shows in its GPU's total, with the links. */
            if ((h == HEALTH_FAILED || h == HEALTH_WARNING) &&
                !verify_health_link_summed(c)) {
                g_string_append_printf(out, "%sNVLink %d %s %llu -> %llu: "
                                       "%s", out->len ? ", " : "", l,
                                       verify_health_link_counters[c].name,
                                       v->before, v->after,
                                       verify_health_verdict_name(h));
            }
        }
    }
    for (int t = 0; t < HEALTH_LINK_TOTALS; t++) {
        VerifyHealthTotal sum;
        HealthVerdict h = verify_health_total_verdict(g, t, &sum);
        g_autofree char *links = verify_health_link_list(sum.links_rose);
        g_autofree char *rate = verify_health_rate_text(&sum.sum);

        if (h == HEALTH_FAILED || h == HEALTH_WARNING) {
            g_string_append_printf(out, "%s%s %llu -> %llu: %s (%s; NVLinks "
                                   "%s)", out->len ? ", " : "",
                                   verify_health_link_totals[t].info.name,
                                   sum.sum.before, sum.sum.after,
                                   verify_health_verdict_name(h), rate,
                                   links);
        }
    }
}

/* Health: one line per GPU, or why none was read. */
static void print_health(const VerifyReport *r)
{
    const char *not_read = verify_health_not_read(r);

    if (not_read) {
        printf("\nHealth: not read: %s\n", not_read);
        return;
    }
    printf("\nHealth (NVML counters before and after the run)\n");
    for (guint i = 0; i < r->gpus->len; i++) {
        const VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);
        g_autoptr(GString) line = g_string_new(NULL);
        g_autoptr(GString) rises = g_string_new(NULL);
        g_autoptr(GPtrArray) names = g_ptr_array_new();
        g_autoptr(GPtrArray) reasons = g_ptr_array_new_with_free_func(g_free);
        const char *gpu_not_read = health_gpu_not_read(r, g);

        if (gpu_not_read) {
            printf("  %u %s not read: %s\n", i, g->bdf, gpu_not_read);
            continue;
        }
        health_rises(g, rises);
        g_string_append(line, verify_health_verdict_name(
                                  verify_health_gpu_verdict(g)));
        if (rises->len) {
            g_string_append_printf(line, " (%s)", rises->str);
        }
        health_unread(g, names, reasons);
        for (guint k = 0; k < names->len; k++) {
            g_string_append_printf(line, "%s%s (%s)", k ? ", " :
                                   "; not read: ",
                                   (char *)g_ptr_array_index(names, k),
                                   (char *)g_ptr_array_index(reasons, k));
        }
        printf("  %u %s %s\n", i, g->bdf, line->str);
    }
}

void verify_print_text(const VerifyOptions *o, const VerifyReport *r)
{
    guint i;
    int fig;

    print_gpus(r);
    if (r->cuda_status) {
        printf("CUDA: %s\n", r->cuda_status);
    }
    if (r->nvml_status) {
        printf("NVML: %s\n", r->nvml_status);
    }
    print_topology(r);
    if (r->pairs->len) {
        printf("\nPairs (a -> b)\n");
        for (i = 0; i < r->pairs->len; i++) {
            const VerifyPair *p = &g_array_index(r->pairs, VerifyPair, i);
            g_autofree char *rank = p->perf_rank >= 0 ?
                g_strdup_printf("%d", p->perf_rank) : g_strdup("unknown");
            g_autofree char *limit = p->link_limit_gbps > 0 ?
                g_strdup_printf("%.0f GB/s", p->link_limit_gbps) :
                g_strdup("unknown");

            printf("  %u -> %u peer access %s, rank %s, atomics %s, link %s"
                   " (limit %s); data CE %s, SM write %s, SM read %s%s%s\n",
                   p->a, p->b, access_name(p->peer_access), rank,
                   access_name(p->native_atomics), p->link, limit,
                   state_name(p->verified_ce), state_name(p->verified_sm),
                   state_name(p->verified_sm_read),
                   p->verify_problem[0] ? ": " : "", p->verify_problem);
        }
    }
    for (fig = 0; fig < FIG_PAIR_COUNT; fig++) {
        matrix(r, fig);
    }
    aggregates(r);
    printf("\nRDMA%s%s\n", r->rdma_status ? ": " : "",
           r->rdma_status ? r->rdma_status : "");
    for (i = 0; i < r->rdma->len; i++) {
        const VerifyRdma *d = &g_array_index(r->rdma, VerifyRdma, i);

        printf("  %s port %u of %u active; host MR %s, host RDMA write %s, "
               "read %s; GPU dma-buf %s, peer memory %s, RDMA write into "
               "and out of GPU %s, RDMA read %s (%u GPU(s) both ways)%s%s\n",
               d->name, d->port, d->ports_active, state_name(d->host_mr),
               state_name(d->host_write), state_name(d->host_read),
               state_name(d->dmabuf), state_name(d->peermem),
               state_name(d->gpu_write), state_name(d->gpu_read),
               d->gpus_tested, d->why[0] ? ": " : "", d->why);
        for (guint k = 0; k < d->n_gpus; k++) {
            const VerifyRdmaGpu *g = &d->gpus[k];

            printf("    #%u GPU %u (%s)%s, path %s: dma-buf %s, peer memory "
                   "%s, RDMA write %s, read %s\n", g->order, g->gpu,
                   g_array_index(r->gpus, VerifyGpu, g->gpu).bdf,
                   g->pair ? " paired with this NIC" : "",
                   g->path[0] ? g->path : "unknown", state_name(g->dmabuf),
                   state_name(g->peermem), state_name(g->write),
                   state_name(g->read));
        }
    }
    print_health(r);
    for (i = 0; i < r->notes->len; i++) {
        printf("note: %s\n", (char *)g_ptr_array_index(r->notes, i));
    }
    if (r->loops) {
        printf("\n%" G_GSIZE_FORMAT " MiB x %u loops, %u sample(s), %s%s\n",
               o->bytes >> 20, r->loops, o->samples,
               o->benchmark ? "nvbandwidth's method (--benchmark)" :
               "every copy checked (validation)", r->concurrent ?
               "; pairs on independent links measured together" : "");
    }
    if (!verify_data_moved(r)) {
        printf("no data moved: %s\n", verify_pci_checks_only(o) ?
               "PCI checks only" : "no transfer was checked");
    }
    printf("verdict: %s%s (%.1f s)\n", verdict(o, r),
           verify_pci_checks_only(o) && verify_exit_code(r) ?
           ", PCI checks only" : "", r->seconds);
}

static void add_figure(JsonBuilder *b, const char *name, const Figure *f)
{
    json_builder_set_member_name(b, name);
    if (!f->samples) {
        json_builder_add_null_value(b);
        return;
    }
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "median");
    json_builder_add_double_value(b, f->median);
    json_builder_set_member_name(b, "min");
    json_builder_add_double_value(b, f->min);
    json_builder_set_member_name(b, "max");
    json_builder_add_double_value(b, f->max);
    json_builder_set_member_name(b, "samples");
    json_builder_add_int_value(b, f->samples);
    json_builder_end_object(b);
}

static void add_int_or_null(JsonBuilder *b, const char *name, gint64 v,
                            bool known)
{
    json_builder_set_member_name(b, name);
    if (known) {
        json_builder_add_int_value(b, v);
    } else {
        json_builder_add_null_value(b);
    }
}

static void add_bool_or_null(JsonBuilder *b, const char *name, int v)
{
    json_builder_set_member_name(b, name);
    if (v < 0) {
        json_builder_add_null_value(b);
    } else {
        json_builder_add_boolean_value(b, v);
    }
}

static void add_double_or_null(JsonBuilder *b, const char *name, double v,
                               bool known)
{
    json_builder_set_member_name(b, name);
    if (known) {
        json_builder_add_double_value(b, v);
    } else {
        json_builder_add_null_value(b);
    }
}

static void json_health_counter(JsonBuilder *b, const char *name,
                                const VerifyHealthValue *v, HealthVerdict h)
{
    json_builder_begin_object(b);
    gp_json_add_string_or_null(b, "counter", name);
    json_builder_set_member_name(b, "before");
    json_builder_add_int_value(b, (gint64)v->before);
    json_builder_set_member_name(b, "after");
    json_builder_add_int_value(b, (gint64)v->after);
    gp_json_add_string_or_null(b, "verdict", verify_health_verdict_name(h));
    json_builder_end_object(b);
}

/* Total @t of @g (a CRC kind over its links) as a per-GPU counter, with
 * its rate and the links that rose; nothing where no link was read. */
static void json_health_total(JsonBuilder *b, const VerifyGpu *g, int t)
{
    VerifyHealthTotal sum;
    HealthVerdict h = verify_health_total_verdict(g, t, &sum);

    if (sum.sum.state != HEALTH_READ_BOTH) {
        return;
    }
    json_builder_begin_object(b);
    gp_json_add_string_or_null(b, "counter",
                               verify_health_link_totals[t].info.name);
    json_builder_set_member_name(b, "before");
    json_builder_add_int_value(b, (gint64)sum.sum.before);
    json_builder_set_member_name(b, "after");
    json_builder_add_int_value(b, (gint64)sum.sum.after);
    /* Readings in one microsecond have no rate to give. */
    add_double_or_null(b, "rate_per_second",
                       verify_health_rise_per_second(&sum.sum),
                       sum.sum.after_us > sum.sum.before_us);
    gp_json_add_string_or_null(b, "verdict", verify_health_verdict_name(h));
    json_builder_set_member_name(b, "links_summed");
    json_builder_begin_array(b);
    for (int l = 0; l < VERIFY_MAX_NVLINKS; l++) {
        if (sum.links_summed & (1u << l)) {
            json_builder_add_int_value(b, l);
        }
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "links_rose");
    json_builder_begin_array(b);
    for (int l = 0; l < VERIFY_MAX_NVLINKS; l++) {
        if (sum.links_rose & (1u << l)) {
            json_builder_add_int_value(b, l);
        }
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
}

/* The links of @g with a counter read twice, each with those counters. */
static void json_health_links(JsonBuilder *b, const VerifyGpu *g)
{
    json_builder_set_member_name(b, "links");
    json_builder_begin_array(b);
    for (int l = 0; l < VERIFY_MAX_NVLINKS; l++) {
        bool begun = false;

        for (int c = 0; c < HEALTH_LINK_COUNTERS; c++) {
            const VerifyHealthValue *v = &g->link_health[l][c];

            if (v->state != HEALTH_READ_BOTH) {
                continue;
            }
            if (!begun) {
                json_builder_begin_object(b);
                json_builder_set_member_name(b, "link");
                json_builder_add_int_value(b, l);
                json_builder_set_member_name(b, "counters");
                json_builder_begin_array(b);
                begun = true;
            }
            json_health_counter(b, verify_health_link_counters[c].name, v,
                                verify_health_verdict(
                                    v, &verify_health_link_counters[c]));
        }
        if (begun) {
            json_builder_end_array(b);
            json_builder_end_object(b);
        }
    }
    json_builder_end_array(b);
}

/* "health": the verdict, what was not read and why (each name once),
 * the counters read twice, per GPU and per NVLink. */
static void json_health(JsonBuilder *b, const VerifyReport *r,
                        const VerifyGpu *g)
{
    const char *gpu_not_read = health_gpu_not_read(r, g);
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    g_autoptr(GPtrArray) reasons = g_ptr_array_new_with_free_func(g_free);

    json_builder_set_member_name(b, "health");
    json_builder_begin_object(b);
    gp_json_add_string_or_null(b, "verdict", verify_health_verdict_name(
        gpu_not_read ? HEALTH_NOT_READ : verify_health_gpu_verdict(g)));
    json_builder_set_member_name(b, "not_read");
    json_builder_begin_array(b);
    if (gpu_not_read) {
        json_builder_add_string_value(b, gpu_not_read);
    } else {
        health_unread(g, names, reasons);
    }
    for (guint k = 0; k < names->len; k++) {
        g_autofree char *s = g_strdup_printf("%s: %s",
            (char *)g_ptr_array_index(names, k),
            (char *)g_ptr_array_index(reasons, k));

        json_builder_add_string_value(b, s);
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "counters");
    json_builder_begin_array(b);
    for (int c = 0; c < HEALTH_GPU_COUNTERS && !gpu_not_read; c++) {
        const VerifyHealthValue *v = &g->health[c];

        if (v->state == HEALTH_READ_BOTH) {
            json_health_counter(b, verify_health_gpu_counters[c].name, v,
                                verify_health_verdict(
                                    v, &verify_health_gpu_counters[c]));
        }
    }
    for (int t = 0; t < HEALTH_LINK_TOTALS && !gpu_not_read; t++) {
        json_health_total(b, g, t);
    }
    json_builder_end_array(b);
    json_health_links(b, g);
    json_builder_end_object(b);
}

/* Where the GPU's host figures ran; null where none was measured or
 * tried. */
static void json_host_place(JsonBuilder *b, const VerifyGpu *g)
{
    const VerifyHostPlacement *p = &g->host_place;
    bool placed = p->tried && p->node >= 0;

    json_builder_set_member_name(b, "host_placement");
    if (!p->tried && !g->agg[AGG_H2D].samples && !g->agg[AGG_D2H].samples) {
        json_builder_add_null_value(b);
        return;
    }
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "figures");
    json_builder_begin_array(b);
    for (int k = AGG_H2D; k <= AGG_D2H; k++) {
        json_builder_add_string_value(b, verify_gpu_figures[k].key);
    }
    json_builder_end_array(b);
    add_int_or_null(b, "host_numa_node", p->node, placed);
    gp_json_add_string_or_null(b, "cpus", placed ? p->cpus : NULL);
    add_int_or_null(b, "memory_preferred_numa_node", p->memory_node,
                    p->tried && p->memory_node >= 0);
    gp_json_add_string_or_null(b, "reason", p->tried ?
                               (p->why[0] ? p->why : NULL) :
                               VERIFY_HOST_PLACE_VALIDATION);
    json_builder_end_object(b);
}

static void json_gpu(JsonBuilder *b, const VerifyReport *r, guint i)
{
    const VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);
    int k;

    json_builder_begin_object(b);
    add_int_or_null(b, "index", i, true);
    gp_json_add_string_or_null(b, "bdf", g->bdf);
    gp_json_add_string_or_null(b, "name", g->name[0] ? g->name : NULL);
    add_int_or_null(b, "cuda_index", g->cuda_index, g->cuda_index >= 0);
    json_builder_set_member_name(b, "hidden_by_cuda_visible_devices");
    json_builder_add_boolean_value(b, g->hidden);
    add_int_or_null(b, "clique", g->clique, g->clique >= 0);
    json_builder_set_member_name(b, "capability");
    if (!g->has_cap && !g->cap_problem[0]) {
        json_builder_add_null_value(b);
    } else {
        json_builder_begin_object(b);
        add_int_or_null(b, "offset", g->cap_offset, g->has_cap);
        json_builder_set_member_name(b, "valid");
        json_builder_add_boolean_value(b, g->has_cap && g->cap_valid);
        if (!g->cap_valid) {
            gp_json_add_string_or_null(b, "problem", g->cap_problem);
        }
        json_builder_end_object(b);
    }
    /* NVML's count, known only when NVML answered. */
    add_int_or_null(b, "nvlinks", g->nvlinks_total,
                    !r->nvml_status && g->cuda_index >= 0);
    add_int_or_null(b, "pcie_gen", g->pcie_gen, g->pcie_gen > 0);
    add_int_or_null(b, "pcie_width", g->pcie_width, g->pcie_width > 0);
    add_int_or_null(b, "numa_node", g->numa_node, g->numa_node >= 0);
    /* A sticky CUDA error or hung work: not a P2P verdict. */
    json_builder_set_member_name(b, "lost");
    json_builder_add_boolean_value(b, g->lost);
    gp_json_add_string_or_null(b, "lost_reason",
                               g->lost ? g->lost_why : NULL);
    for (k = 0; k < AGG_COUNT; k++) {
        add_figure(b, verify_gpu_figures[k].key, &g->agg[k]);
    }
    json_host_place(b, g);
    json_health(b, r, g);
    json_builder_end_object(b);
}

static void json_pair(JsonBuilder *b, const VerifyReport *r,
                      const VerifyPair *p)
{
    const Figure *uni = &p->fig[FIG_UNI_CE];
    int k;

    json_builder_begin_object(b);
    add_int_or_null(b, "a", p->a, true);
    add_int_or_null(b, "b", p->b, true);
    add_bool_or_null(b, "peer_access", p->peer_access);
    json_builder_set_member_name(b, "peer_access_enabled");
    json_builder_add_boolean_value(b, p->peer_enabled);
    add_int_or_null(b, "performance_rank", p->perf_rank, p->perf_rank >= 0);
    add_bool_or_null(b, "native_atomics", p->native_atomics);
    gp_json_add_string_or_null(b, "link", p->link);
    add_double_or_null(b, "link_limit_gbps", p->link_limit_gbps,
                       p->link_limit_gbps > 0);
    /* Verified means P2P moved the bytes on every path: never without
     * peer access, where a copy would be staged through the host. */
    json_builder_set_member_name(b, "verified");
    json_builder_add_boolean_value(b, p->peer_enabled &&
                                   p->verified_ce == CHECK_OK &&
                                   p->verified_sm == CHECK_OK &&
                                   p->verified_sm_read == CHECK_OK);
    gp_json_add_string_or_null(b, "verified_ce", state_name(p->verified_ce));
    gp_json_add_string_or_null(b, "verified_sm_write",
                               state_name(p->verified_sm));
    gp_json_add_string_or_null(b, "verified_sm_read",
                               state_name(p->verified_sm_read));
    gp_json_add_string_or_null(b, "problem",
                               p->verify_problem[0] ? p->verify_problem :
                               NULL);
    json_builder_set_member_name(b, "nvlink_fault");
    json_builder_add_boolean_value(b, p->nvlink_fault);
    for (k = 0; k < FIG_PAIR_COUNT; k++) {
        add_figure(b, verify_pair_figures[k].key, &p->fig[k]);
    }
    add_double_or_null(b, "unidirectional_ce_of_limit",
                       uni->samples && p->link_limit_gbps > 0 ?
                       uni->median / p->link_limit_gbps : 0,
                       uni->samples && p->link_limit_gbps > 0);
    json_builder_end_object(b);
    (void)r;
}

/* A port's GPUs in the order checked: which is paired with its NIC, the
 * path class between them, and each GPU's own states. */
static void json_rdma_gpus(JsonBuilder *b, const VerifyReport *r,
                           const VerifyRdma *d)
{
    json_builder_set_member_name(b, "gpus");
    json_builder_begin_array(b);
    for (guint k = 0; k < d->n_gpus; k++) {
        const VerifyRdmaGpu *g = &d->gpus[k];

        json_builder_begin_object(b);
        json_builder_set_member_name(b, "gpu");
        json_builder_add_int_value(b, g->gpu);
        gp_json_add_string_or_null(b, "bdf", g_array_index(
            r->gpus, VerifyGpu, g->gpu).bdf);
        json_builder_set_member_name(b, "pair");
        json_builder_add_boolean_value(b, g->pair);
        gp_json_add_string_or_null(b, "path", g->path[0] ? g->path : NULL);
        json_builder_set_member_name(b, "order");
        json_builder_add_int_value(b, g->order);
        gp_json_add_string_or_null(b, "gpu_dmabuf", state_name(g->dmabuf));
        gp_json_add_string_or_null(b, "gpu_peermem", state_name(g->peermem));
        gp_json_add_string_or_null(b, "gpu_rdma_write",
                                   state_name(g->write));
        gp_json_add_string_or_null(b, "gpu_rdma_read", state_name(g->read));
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
}

void verify_print_json(const VerifyOptions *o, const VerifyReport *r)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = NULL;
    g_autofree char *text = NULL;
    g_autofree char *cuda = NULL;
    guint i;

    json_builder_begin_object(b);
    add_int_or_null(b, "schema_version", VERIFY_JSON_SCHEMA, true);
    gp_json_add_string_or_null(b, "tool", "gpup2p-verify");
    gp_json_add_string_or_null(b, "tool_version", GP_VERSION);
    gp_json_add_string_or_null(b, "driver_version",
                               r->driver_version[0] ? r->driver_version :
                               NULL);
    if (r->cuda_driver_version > 0) {
        cuda = g_strdup_printf("%d.%d", r->cuda_driver_version / 1000,
                               r->cuda_driver_version % 1000 / 10);
    }
    gp_json_add_string_or_null(b, "cuda_driver_api_version", cuda);
    json_builder_set_member_name(b, "built_with_kernels");
    json_builder_add_boolean_value(b, r->kernels);
    add_int_or_null(b, "size_bytes", o->bytes, true);
    add_int_or_null(b, "loops", r->loops, r->loops > 0);
    add_int_or_null(b, "samples", o->samples, true);
    json_builder_set_member_name(b, "quick");
    json_builder_add_boolean_value(b, o->quick);
    /* "benchmark": the figures follow nvbandwidth's method, under the
     * names of its tests; "validation": every copy checked, fewer. */
    gp_json_add_string_or_null(b, "mode", o->benchmark ? "benchmark" :
                               "validation");
    json_builder_set_member_name(b, "concurrent_pairs");
    json_builder_add_boolean_value(b, r->concurrent);
    /* Registry names (figures.c) asked for: --figures, else the mode's;
     * none with the PCI checks alone. */
    json_builder_set_member_name(b, "figures");
    json_builder_begin_array(b);
    for (i = 0; i < VERIFY_FIGURE_COUNT && !verify_pci_checks_only(o); i++) {
        if (verify_figure_wanted(o, i)) {
            json_builder_add_string_value(b, verify_figures[i].name);
        }
    }
    json_builder_end_array(b);

    json_builder_set_member_name(b, "gpus");
    json_builder_begin_array(b);
    for (i = 0; i < r->gpus->len; i++) {
        json_gpu(b, r, i);
    }
    json_builder_end_array(b);

    json_builder_set_member_name(b, "pairs");
    json_builder_begin_array(b);
    for (i = 0; i < r->pairs->len; i++) {
        json_pair(b, r, &g_array_index(r->pairs, VerifyPair, i));
    }
    json_builder_end_array(b);

    json_builder_set_member_name(b, "rdma");
    json_builder_begin_array(b);
    for (i = 0; i < r->rdma->len; i++) {
        const VerifyRdma *d = &g_array_index(r->rdma, VerifyRdma, i);

        json_builder_begin_object(b);
        gp_json_add_string_or_null(b, "device", d->name);
        gp_json_add_string_or_null(b, "bdf", d->bdf[0] ? d->bdf : NULL);
        add_int_or_null(b, "port", d->port, d->port > 0);
        json_builder_set_member_name(b, "active_ports");
        json_builder_add_int_value(b, d->ports_active);
        gp_json_add_string_or_null(b, "host_mr", state_name(d->host_mr));
        gp_json_add_string_or_null(b, "host_rdma_write",
                                   state_name(d->host_write));
        gp_json_add_string_or_null(b, "host_rdma_read",
                                   state_name(d->host_read));
        gp_json_add_string_or_null(b, "gpu_dmabuf", state_name(d->dmabuf));
        gp_json_add_string_or_null(b, "gpu_peermem", state_name(d->peermem));
        gp_json_add_string_or_null(b, "gpu_rdma_write",
                                   state_name(d->gpu_write));
        gp_json_add_string_or_null(b, "gpu_rdma_read",
                                   state_name(d->gpu_read));
        json_builder_set_member_name(b, "gpus_both_ways");
        json_builder_add_int_value(b, d->gpus_tested);
        gp_json_add_string_or_null(b, "reason", d->why[0] ? d->why : NULL);
        json_rdma_gpus(b, r, d);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);

    gp_json_add_string_or_null(b, "cuda",
                               r->cuda_status ? r->cuda_status : "ok");
    gp_json_add_string_or_null(b, "nvml", r->nvml_status ? r->nvml_status :
            r->cuda_status ? "not used (CUDA unavailable)" : "ok");
    gp_json_add_string_or_null(b, "rdma_status", r->rdma_status);
    json_builder_set_member_name(b, "notes");
    json_builder_begin_array(b);
    for (i = 0; i < r->notes->len; i++) {
        json_builder_add_string_value(b, g_ptr_array_index(r->notes, i));
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "data_moved");
    json_builder_add_boolean_value(b, verify_data_moved(r));
    gp_json_add_string_or_null(b, "verdict", verdict(o, r));
    json_builder_set_member_name(b, "exit_code");
    json_builder_add_int_value(b, verify_exit_code(r));
    json_builder_set_member_name(b, "seconds");
    json_builder_add_double_value(b, r->seconds);
    json_builder_set_member_name(b, "figure_seconds");
    json_builder_begin_object(b);
    for (i = 0; i < VERIFY_FIGURE_COUNT; i++) {
        if (r->figure_s[i] > 0) {
            json_builder_set_member_name(b, verify_figures[i].name);
            json_builder_add_double_value(b, r->figure_s[i]);
        }
    }
    json_builder_end_object(b);
    json_builder_set_member_name(b, "phase_seconds");
    if (r->loops && r->phase_s[0] > 0) {
        static const char *const phases[] = VERIFY_PHASES;

        json_builder_begin_object(b);
        for (i = 0; i < G_N_ELEMENTS(phases); i++) {
            json_builder_set_member_name(b, phases[i]);
            json_builder_add_double_value(b, r->phase_s[i]);
        }
        json_builder_end_object(b);
    } else {
        json_builder_add_null_value(b);
    }
    json_builder_end_object(b);

    root = json_builder_get_root(b);
    json_generator_set_pretty(gen, TRUE);
    json_generator_set_root(gen, root);
    text = json_generator_to_data(gen, NULL);
    printf("%s\n", text);
}
