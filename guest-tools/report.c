/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The text report and the JSON, both from the one result model. */
#include <stdio.h>

#include "gpup2p/json.h"

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

int verify_exit_code(const VerifyReport *r)
{
    if (r->p2p_broken) {
        return VERIFY_EXIT_P2P_BROKEN;
    }
    if (r->rdma_broken) {
        return VERIFY_EXIT_RDMA_BROKEN;
    }
    if (r->untested) {
        return VERIFY_EXIT_UNTESTED;
    }
    return VERIFY_EXIT_OK;
}

static const char *verdict(const VerifyReport *r)
{
    static const char *const names[] = {
        [VERIFY_EXIT_OK] = "all good",
        [VERIFY_EXIT_P2P_BROKEN] = "P2P broken",
        [VERIFY_EXIT_RDMA_BROKEN] = "RDMA broken",
        [VERIFY_EXIT_UNTESTED] = "could not test",
    };

    return names[verify_exit_code(r)];
}

static const VerifyPair *pair_of(const VerifyReport *r, guint a, guint b)
{
    guint i;

    for (i = 0; i < r->pairs->len; i++) {
        const VerifyPair *p = &g_array_index(r->pairs, VerifyPair, i);

        if (p->a == a && p->b == b) {
            return p;
        }
    }
    return NULL;
}

typedef double (*PairValue)(const VerifyPair *p);

static double v_uni_ce(const VerifyPair *p) { return p->uni_ce.median; }
static double v_uni_sm(const VerifyPair *p) { return p->uni_sm.median; }
static double v_bi_ce(const VerifyPair *p) { return p->bi_ce.median; }
static double v_uni_sm_read(const VerifyPair *p)
{
    return p->uni_sm_read.median;
}
static double v_staged(const VerifyPair *p) { return p->uni_staged.median; }
static double v_lat_ce(const VerifyPair *p) { return p->lat_ce_us.median; }
static double v_lat_sm(const VerifyPair *p) { return p->lat_sm_us.median; }

static void matrix(const VerifyReport *r, const char *title, PairValue fn)
{
    guint a, b;
    bool any = false;

    for (a = 0; a < r->pairs->len; a++) {
        any |= fn(&g_array_index(r->pairs, VerifyPair, a)) > 0;
    }
    if (!any) {
        return;
    }
    printf("\n%s\n%6s", title, "");
    for (b = 0; b < r->gpus->len; b++) {
        printf(" %9u", b);
    }
    printf("\n");
    for (a = 0; a < r->gpus->len; a++) {
        printf("%6u", a);
        for (b = 0; b < r->gpus->len; b++) {
            const VerifyPair *p = a == b ? NULL : pair_of(r, a, b);

            if (p && fn(p) > 0) {
                printf(" %9.2f", fn(p));
            } else {
                printf(" %9s", a == b ? "-" : "n/a");
            }
        }
        printf("\n");
    }
}

void verify_print_text(const VerifyOptions *o, const VerifyReport *r)
{
    guint i;

    (void)o;
    printf("GPUs\n");
    for (i = 0; i < r->gpus->len; i++) {
        const VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);
        g_autofree char *cap = NULL;
        char clique[8] = "none";

        if (g->clique >= 0) {
            g_snprintf(clique, sizeof(clique), "%d", g->clique);
        }
        if (g->has_cap) {
            cap = g_strdup_printf("P2P capability at 0x%02x %s%s", g->cap_offset,
                                  g->cap_valid ? "valid" : "INVALID: ",
                                  g->cap_valid ? "" : g->cap_problem);
        } else {
            cap = g_strdup(g->cap_problem[0] ? g->cap_problem :
                           "no P2P capability");
        }
        printf("  %u %s %-20s clique %-4s %s\n", i, g->bdf,
               g->name[0] ? g->name : "(not seen by CUDA)",
               clique, cap);
    }
    if (r->cuda_status) {
        printf("CUDA: %s\n", r->cuda_status);
    }
    if (r->nvml_status) {
        printf("NVML: %s\n", r->nvml_status);
    }
    if (r->pairs->len) {
        printf("\nPairs (a -> b)\n");
        for (i = 0; i < r->pairs->len; i++) {
            const VerifyPair *p = &g_array_index(r->pairs, VerifyPair, i);

            printf("  %u -> %u peer access %s, rank %d, atomics %d, link %s"
                   " (limit %.0f GB/s); data CE %s, SM %s%s%s\n", p->a, p->b,
                   p->peer_access < 0 ? "unknown" :
                   p->peer_access ? "yes" : "no", p->perf_rank,
                   p->native_atomics, p->link, p->link_limit_gbps,
                   state_name(p->verified_ce), state_name(p->verified_sm),
                   p->verify_problem[0] ? ": " : "", p->verify_problem);
        }
    }
    matrix(r, "Unidirectional bandwidth, copy engine (GB/s)", v_uni_ce);
    matrix(r, "Unidirectional bandwidth, SM copy kernel writing to the peer "
           "(GB/s)", v_uni_sm);
    matrix(r, "Unidirectional bandwidth, SM copy kernel reading from the "
           "peer (GB/s)", v_uni_sm_read);
    matrix(r, "Bidirectional bandwidth, copy engine (GB/s, both ways)",
           v_bi_ce);
    matrix(r, "Host-staged, P2P off (GB/s)", v_staged);
    matrix(r, "Latency, 16-byte copy-engine copy (us)", v_lat_ce);
    matrix(r, "Latency, SM pointer chase, loads bypass L1 (us)", v_lat_sm);
    printf("\nRDMA%s%s\n", r->rdma_status ? ": " : "",
           r->rdma_status ? r->rdma_status : "");
    for (i = 0; i < r->rdma->len; i++) {
        const VerifyRdma *d = &g_array_index(r->rdma, VerifyRdma, i);

        printf("  %s: %u active port(s); host MR %s, host RDMA write %s; "
               "GPU dma-buf %s, peer memory %s, GPU RDMA write %s%s%s\n",
               d->name, d->ports_active, state_name(d->host_mr),
               state_name(d->host_write), state_name(d->dmabuf),
               state_name(d->peermem), state_name(d->gpu_write),
               d->why[0] ? ": " : "", d->why);
    }
    for (i = 0; i < r->notes->len; i++) {
        printf("note: %s\n", (char *)g_ptr_array_index(r->notes, i));
    }
    printf("\nverdict: %s (%.1f s)\n", verdict(r), r->seconds);
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

void verify_print_json(const VerifyOptions *o, const VerifyReport *r)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autoptr(JsonNode) root = NULL;
    g_autofree char *text = NULL;
    guint i;

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "gpus");
    json_builder_begin_array(b);
    for (i = 0; i < r->gpus->len; i++) {
        const VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);

        json_builder_begin_object(b);
        gp_json_add_string_or_null(b, "bdf", g->bdf);
        gp_json_add_string_or_null(b, "name", g->name[0] ? g->name : NULL);
        json_builder_set_member_name(b, "cuda_index");
        json_builder_add_int_value(b, g->cuda_index);
        json_builder_set_member_name(b, "clique");
        if (g->clique < 0) {
            json_builder_add_null_value(b);
        } else {
            json_builder_add_int_value(b, g->clique);
        }
        json_builder_set_member_name(b, "capability");
        if (!g->has_cap && !g->cap_problem[0]) {
            json_builder_add_null_value(b);
        } else {
            json_builder_begin_object(b);
            json_builder_set_member_name(b, "offset");
            if (g->has_cap) {
                json_builder_add_int_value(b, g->cap_offset);
            } else {
                json_builder_add_null_value(b);
            }
            json_builder_set_member_name(b, "valid");
            json_builder_add_boolean_value(b, g->has_cap && g->cap_valid);
            if (!g->cap_valid) {
                gp_json_add_string_or_null(b, "problem", g->cap_problem);
            }
            json_builder_end_object(b);
        }
        json_builder_set_member_name(b, "nvlinks");
        json_builder_add_int_value(b, g->nvlinks_total);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);

    json_builder_set_member_name(b, "pairs");
    json_builder_begin_array(b);
    for (i = 0; i < r->pairs->len; i++) {
        const VerifyPair *p = &g_array_index(r->pairs, VerifyPair, i);

        json_builder_begin_object(b);
        gp_json_add_string_or_null(b, "a", g_array_index(r->gpus, VerifyGpu, p->a).bdf);
        gp_json_add_string_or_null(b, "b", g_array_index(r->gpus, VerifyGpu, p->b).bdf);
        json_builder_set_member_name(b, "peer_access");
        if (p->peer_access < 0) {
            json_builder_add_null_value(b);
        } else {
            json_builder_add_boolean_value(b, p->peer_access);
        }
        json_builder_set_member_name(b, "performance_rank");
        json_builder_add_int_value(b, p->perf_rank);
        json_builder_set_member_name(b, "native_atomics");
        json_builder_add_boolean_value(b, p->native_atomics);
        gp_json_add_string_or_null(b, "link", p->link);
        json_builder_set_member_name(b, "link_limit_gbps");
        json_builder_add_double_value(b, p->link_limit_gbps);
        json_builder_set_member_name(b, "verified");
        json_builder_add_boolean_value(b, p->verified_ce == CHECK_OK &&
                                       p->verified_sm != CHECK_FAILED);
        gp_json_add_string_or_null(b, "verified_ce", state_name(p->verified_ce));
        gp_json_add_string_or_null(b, "verified_sm", state_name(p->verified_sm));
        if (p->verify_problem[0]) {
            gp_json_add_string_or_null(b, "problem", p->verify_problem);
        }
        add_figure(b, "unidirectional_ce_gbps", &p->uni_ce);
        add_figure(b, "unidirectional_sm_gbps", &p->uni_sm);
        add_figure(b, "unidirectional_sm_read_gbps", &p->uni_sm_read);
        add_figure(b, "bidirectional_ce_gbps", &p->bi_ce);
        add_figure(b, "host_staged_gbps", &p->uni_staged);
        add_figure(b, "latency_ce_us", &p->lat_ce_us);
        add_figure(b, "latency_sm_us", &p->lat_sm_us);
        json_builder_set_member_name(b, "unidirectional_ce_of_limit");
        json_builder_add_double_value(b, p->link_limit_gbps > 0 ?
                                      p->uni_ce.median / p->link_limit_gbps :
                                      0);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);

    json_builder_set_member_name(b, "rdma");
    json_builder_begin_array(b);
    for (i = 0; i < r->rdma->len; i++) {
        const VerifyRdma *d = &g_array_index(r->rdma, VerifyRdma, i);

        json_builder_begin_object(b);
        gp_json_add_string_or_null(b, "device", d->name);
        json_builder_set_member_name(b, "active_ports");
        json_builder_add_int_value(b, d->ports_active);
        gp_json_add_string_or_null(b, "host_mr", state_name(d->host_mr));
        gp_json_add_string_or_null(b, "host_rdma_write", state_name(d->host_write));
        gp_json_add_string_or_null(b, "gpu_dmabuf", state_name(d->dmabuf));
        gp_json_add_string_or_null(b, "gpu_peermem", state_name(d->peermem));
        gp_json_add_string_or_null(b, "gpu_rdma_write", state_name(d->gpu_write));
        gp_json_add_string_or_null(b, "reason", d->why[0] ? d->why : NULL);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);

    gp_json_add_string_or_null(b, "cuda", r->cuda_status ? r->cuda_status : "ok");
    gp_json_add_string_or_null(b, "nvml", r->nvml_status ? r->nvml_status :
            r->cuda_status ? "not used (CUDA unavailable)" : "ok");
    gp_json_add_string_or_null(b, "rdma_status", r->rdma_status);
    json_builder_set_member_name(b, "notes");
    json_builder_begin_array(b);
    for (i = 0; i < r->notes->len; i++) {
        json_builder_add_string_value(b, g_ptr_array_index(r->notes, i));
    }
    json_builder_end_array(b);
    gp_json_add_string_or_null(b, "verdict", verdict(r));
    json_builder_set_member_name(b, "exit_code");
    json_builder_add_int_value(b, verify_exit_code(r));
    json_builder_set_member_name(b, "quick");
    json_builder_add_boolean_value(b, o->quick);
    json_builder_set_member_name(b, "seconds");
    json_builder_add_double_value(b, r->seconds);
    json_builder_end_object(b);

    root = json_builder_get_root(b);
    json_generator_set_pretty(gen, TRUE);
    json_generator_set_root(gen, root);
    text = json_generator_to_data(gen, NULL);
    printf("%s\n", text);
}
