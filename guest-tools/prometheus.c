/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The result model as node_exporter textfile-collector metrics (Prometheus
 * text exposition format 0.0.4). Base units (bytes per second, seconds);
 * a value the run did not learn is left out, never written as 0.
 */
#include <string.h>

#include "gpup2p-version.h"
#include "gpup2p/output.h"
#include "verify.h"

/* gpup2p_verify_check_status: documented in docs/guest-tool.md. */
static int check_code(CheckState s)
{
    switch (s) {
    case CHECK_OK:
        return 0;
    case CHECK_FAILED:
        return 1;
    case CHECK_UNTESTABLE:
        return 2;
    case CHECK_NOT_RUN:
        break;
    }
    return 3;
}

/* A label value: backslash, double quote and line feed escaped. */
static void add_label(GString *s, const char *name, const char *value)
{
    const char *c;

    g_string_append_printf(s, "%s%s=\"", s->str[s->len - 1] == '{' ? "" :
                           ",", name);
    for (c = value; *c; c++) {
        if (*c == '\\' || *c == '"') {
            g_string_append_c(s, '\\');
            g_string_append_c(s, *c);
        } else if (*c == '\n') {
            g_string_append(s, "\\n");
        } else {
            g_string_append_c(s, *c);
        }
    }
    g_string_append_c(s, '"');
}

static void family(GString *s, const char *name, const char *help)
{
    g_string_append_printf(s, "# HELP %s %s\n# TYPE %s gauge\n", name, help,
                           name);
}

static void value(GString *s, double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];

    g_string_append_printf(s, "%s\n", g_ascii_dtostr(buf, sizeof(buf), v));
}

static void gpu_labels(GString *s, const char *metric, const VerifyReport *r,
                       guint i)
{
    g_string_append_printf(s, "%s{", metric);
    g_string_append_printf(s, "gpu=\"%u\"", i);
    add_label(s, "bus_id", g_array_index(r->gpus, VerifyGpu, i).bdf);
}

static void pair_labels(GString *s, const char *metric, const VerifyReport *r,
                        const VerifyPair *p)
{
    g_string_append_printf(s, "%s{src=\"%u\",dst=\"%u\"", metric, p->a,
                           p->b);
    add_label(s, "src_bus_id", g_array_index(r->gpus, VerifyGpu, p->a).bdf);
    add_label(s, "dst_bus_id", g_array_index(r->gpus, VerifyGpu, p->b).bdf);
}

/* "unidirectional_ce_gbps" -> "unidirectional_ce": the unit is in the
 * metric's name. */
static char *figure_label(const char *key)
{
    return g_strndup(key, strrchr(key, '_') - key);
}

static void pair_figures(GString *s, const VerifyReport *r, bool latency)
{
    const char *name = latency ? "gpup2p_verify_pair_latency_seconds" :
                       "gpup2p_verify_pair_bandwidth_bytes_per_second";
    bool begun = false;
    guint i;
    int k;

    for (i = 0; i < r->pairs->len; i++) {
        const VerifyPair *p = &g_array_index(r->pairs, VerifyPair, i);

        for (k = 0; k < FIG_PAIR_COUNT; k++) {
            g_autofree char *fig = figure_label(verify_pair_figures[k].key);

            if (verify_pair_figures[k].latency != latency ||
                !p->fig[k].samples) {
                continue;
            }
            if (!begun) {
                family(s, name, latency ?
                       "Median latency from src to dst GPU, by figure" :
                       "Median bandwidth from src to dst GPU, by figure");
                begun = true;
            }
            pair_labels(s, name, r, p);
            add_label(s, "figure", fig);
            g_string_append(s, "} ");
            value(s, p->fig[k].median * (latency ? 1e-6 : 1e9));
        }
    }
}

/* 1 where a transfer met CUDA error 220 (an uncorrectable NVLink error);
 * 0 on NVLink pairs whose transfers ran without one. */
static void nvlink_faults(GString *s, const VerifyReport *r)
{
    const char *name = "gpup2p_verify_pair_nvlink_fault";
    bool begun = false;

    for (guint i = 0; i < r->pairs->len; i++) {
        const VerifyPair *p = &g_array_index(r->pairs, VerifyPair, i);

        if (!p->nvlink_fault && !(p->peer_enabled && p->nvlinks > 0)) {
            continue;
        }
        if (!begun) {
            family(s, name, "1 when a transfer between src and dst met an "
                   "uncorrectable NVLink error (CUDA error 220)");
            begun = true;
        }
        pair_labels(s, name, r, p);
        g_string_append_printf(s, "} %d\n", p->nvlink_fault);
    }
}

/* gpup2p_verify_health_status: documented in docs/guest-tool.md. */
static int health_code(HealthVerdict v)
{
    switch (v) {
    case HEALTH_OK:
        return 0;
    case HEALTH_FAILED:
        return 1;
    case HEALTH_WARNING:
        return 2;
    case HEALTH_NOT_READ:
        break;
    }
    return 3;
}

/* One counter of GPU @i (of its NVLink @link, -1: the GPU's own): its
 * verdict, and what it rose by where it was read before and after. */
static void health_counter(GString *st, GString *rise, const VerifyReport *r,
                           guint i, int link,
                           const VerifyHealthCounterInfo *info,
                           const VerifyHealthValue *v)
{
    const char *sn = link < 0 ? "gpup2p_verify_gpu_health_status" :
                     "gpup2p_verify_nvlink_health_status";
    const char *rn = link < 0 ? "gpup2p_verify_gpu_health_rise" :
                     "gpup2p_verify_nvlink_health_rise";

    for (int k = 0; k < 2; k++) {
        GString *s = k ? rise : st;

        if (k && !verify_health_read_twice(v)) {
            continue;   /* unknown: absent, never 0 */
        }
        gpu_labels(s, k ? rn : sn, r, i);
        if (link >= 0) {
            g_string_append_printf(s, ",link=\"%d\"", link);
        }
        add_label(s, "counter", info->name);
        g_string_append(s, "} ");
        value(s, k ? (double)(v->after - v->before) :
              health_code(verify_health_verdict(v, info)));
    }
}

/*
 * NVML's health counters around the run (health.c), where NVML was read:
 * every GPU counter and every active NVLink's, with its verdict, and its
 * rise where it was read twice.
 */
static void health(GString *s, const VerifyReport *r)
{
    g_autoptr(GString) gst = g_string_new(NULL), grise = g_string_new(NULL);
    g_autoptr(GString) lst = g_string_new(NULL), lrise = g_string_new(NULL);

    if (!r->health_read) {
        return;
    }
    for (guint i = 0; i < r->gpus->len; i++) {
        const VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);

        for (int c = 0; c < HEALTH_GPU_COUNTERS; c++) {
            health_counter(gst, grise, r, i, -1,
                           &verify_health_gpu_counters[c], &g->health[c]);
        }
        for (int l = 0; l < VERIFY_MAX_NVLINKS; l++) {
            for (int c = 0; c < HEALTH_LINK_COUNTERS &&
                 (g->nvlinks_active >> l) & 1; c++) {
                health_counter(lst, lrise, r, i, l,
                               &verify_health_link_counters[c],
                               &g->link_health[l][c]);
            }
        }
    }
    const struct {
        GString *series;
        const char *name, *help;
    } families[] = {
        { gst, "gpup2p_verify_gpu_health_status", "An NVML health counter "
          "of the GPU over the run: 0 no rise, 1 a rise that fails the "
          "GPU, 2 a rise that warns, 3 not read" },
        { grise, "gpup2p_verify_gpu_health_rise", "What an NVML health "
          "counter of the GPU rose by during the run" },
        { lst, "gpup2p_verify_nvlink_health_status", "An NVML error counter "
          "of an active NVLink over the run: 0 no rise, 1 a rise that "
          "fails the link, 2 a rise that warns, 3 not read" },
        { lrise, "gpup2p_verify_nvlink_health_rise", "What an NVML error "
          "counter of an active NVLink rose by during the run" },
    };

    for (guint k = 0; k < G_N_ELEMENTS(families); k++) {
        if (families[k].series->len) {
            family(s, families[k].name, families[k].help);
            g_string_append(s, families[k].series->str);
        }
    }
}

static void gpu_figures(GString *s, const VerifyReport *r)
{
    const char *name = "gpup2p_verify_gpu_bandwidth_bytes_per_second";
    bool begun = false;
    guint i;
    int k;

    for (i = 0; i < r->gpus->len; i++) {
        const VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);

        for (k = 0; k < AGG_COUNT; k++) {
            g_autofree char *fig = figure_label(verify_gpu_figures[k].key);

            if (!g->agg[k].samples) {
                continue;
            }
            if (!begun) {
                family(s, name, "Median bandwidth of one GPU: with all "
                       "others at once, or with host memory, by figure");
                begun = true;
            }
            gpu_labels(s, name, r, i);
            add_label(s, "figure", fig);
            g_string_append(s, "} ");
            value(s, g->agg[k].median * 1e9);
        }
    }
}

static void checks(GString *s, const VerifyReport *r)
{
    static const char *const pair_checks[] = {
        "data_ce", "data_sm_write", "data_sm_read",
    };
    static const char *const rdma_checks[] = {
        "rdma_host_mr", "rdma_host_write", "rdma_host_read",
        "rdma_gpu_dmabuf", "rdma_gpu_peermem", "rdma_gpu_write",
        "rdma_gpu_read",
    };
    const char *name = "gpup2p_verify_check_status";
    guint i, k;

    family(s, name, "0 ok, 1 failed, 2 not testable, 3 not run");
    for (i = 0; i < r->gpus->len; i++) {
        const VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);

        /* Judged only where a capability was found or should have been
         * readable; a GPU outside any clique has none to judge. */
        if (!g->has_cap && !g->cap_problem[0]) {
            continue;
        }
        gpu_labels(s, name, r, i);
        add_label(s, "check", "p2p_capability");
        g_string_append_printf(s, "} %d\n", !g->has_cap ? 2 :
                               g->cap_valid ? 0 : 1);
    }
    for (i = 0; i < r->pairs->len; i++) {
        const VerifyPair *p = &g_array_index(r->pairs, VerifyPair, i);
        const CheckState states[] = {
            p->verified_ce, p->verified_sm, p->verified_sm_read,
        };

        for (k = 0; k < G_N_ELEMENTS(pair_checks); k++) {
            pair_labels(s, name, r, p);
            add_label(s, "check", pair_checks[k]);
            g_string_append_printf(s, "} %d\n", check_code(states[k]));
        }
    }
    for (i = 0; i < r->rdma->len; i++) {
        const VerifyRdma *d = &g_array_index(r->rdma, VerifyRdma, i);
        const CheckState states[] = {
            d->host_mr, d->host_write, d->host_read, d->dmabuf, d->peermem,
            d->gpu_write, d->gpu_read,
        };

        for (k = 0; k < G_N_ELEMENTS(rdma_checks); k++) {
            g_string_append_printf(s, "%s{", name);
            add_label(s, "device", d->name);
            if (d->port) {
                g_autofree char *port = g_strdup_printf("%u", d->port);

                add_label(s, "port", port);
            }
            add_label(s, "check", rdma_checks[k]);
            g_string_append_printf(s, "} %d\n", check_code(states[k]));
        }
    }
}

char *verify_prometheus_text(const VerifyOptions *o, const VerifyReport *r,
                             gint64 end_real_time)
{
    GString *s = g_string_new(NULL);
    bool begun = false;
    guint i;

    family(s, "gpup2p_verify_info", "The tool's version and, where known, "
           "the NVIDIA driver's");
    g_string_append(s, "gpup2p_verify_info{");
    add_label(s, "version", GP_VERSION);
    if (r->driver_version[0]) {
        add_label(s, "driver", r->driver_version);
    }
    if (r->cuda_driver_version > 0) {
        g_autofree char *cuda = g_strdup_printf(
            "%d.%d", r->cuda_driver_version / 1000,
            r->cuda_driver_version % 1000 / 10);

        add_label(s, "cuda_driver_api", cuda);
    }
    add_label(s, "mode", verify_pci_checks_only(o) ? "pci-only" :
              o->quick ? "quick" : "full");
    g_string_append(s, "} 1\n");

    family(s, "gpup2p_verify_exit_code", "0 all good, 1 P2P broken, "
           "2 RDMA broken, 3 could not test");
    g_string_append_printf(s, "gpup2p_verify_exit_code %d\n",
                           verify_exit_code(r));
    family(s, "gpup2p_verify_last_run_timestamp_seconds",
           "When the run ended, seconds since the Unix epoch");
    g_string_append(s, "gpup2p_verify_last_run_timestamp_seconds ");
    value(s, end_real_time / 1e6);
    family(s, "gpup2p_verify_duration_seconds", "Wall time of the run");
    g_string_append(s, "gpup2p_verify_duration_seconds ");
    value(s, r->seconds);
    family(s, "gpup2p_verify_gpus", "NVIDIA GPUs found on PCI");
    g_string_append_printf(s, "gpup2p_verify_gpus %u\n", r->gpus->len);

    for (i = 0; i < r->gpus->len; i++) {
        const VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);

        if (g->clique < 0) {
            continue;
        }
        if (!begun) {
            family(s, "gpup2p_verify_gpu_clique",
                   "P2P clique of the GPU from its PCI capability");
            begun = true;
        }
        gpu_labels(s, "gpup2p_verify_gpu_clique", r, i);
        g_string_append_printf(s, "} %d\n", g->clique);
    }
    checks(s, r);
    begun = false;
    for (i = 0; i < r->pairs->len; i++) {
        const VerifyPair *p = &g_array_index(r->pairs, VerifyPair, i);

        if (p->peer_access < 0) {
            continue;
        }
        if (!begun) {
            family(s, "gpup2p_verify_pair_peer_access",
                   "1 when CUDA grants src access to dst's memory");
            begun = true;
        }
        pair_labels(s, "gpup2p_verify_pair_peer_access", r, p);
        g_string_append_printf(s, "} %d\n", p->peer_access);
    }
    begun = false;
    for (i = 0; i < r->pairs->len; i++) {
        const VerifyPair *p = &g_array_index(r->pairs, VerifyPair, i);

        if (p->link_limit_gbps <= 0) {
            continue;
        }
        if (!begun) {
            family(s, "gpup2p_verify_pair_link_limit_bytes_per_second",
                   "What the link between src and dst carries one way");
            begun = true;
        }
        pair_labels(s, "gpup2p_verify_pair_link_limit_bytes_per_second", r,
                    p);
        g_string_append(s, "} ");
        value(s, p->link_limit_gbps * 1e9);
    }
    nvlink_faults(s, r);
    pair_figures(s, r, false);
    pair_figures(s, r, true);
    gpu_figures(s, r);
    health(s, r);
    return g_string_free(s, FALSE);
}

bool verify_write_prometheus(const VerifyOptions *o, const VerifyReport *r,
                             GError **errp)
{
    g_autofree char *text = verify_prometheus_text(o, r, g_get_real_time());
    g_autoptr(GError) err = NULL;

    /* A temporary file in the same directory renamed over the old one:
     * the collector never reads half a file. The core's writer refuses a
     * device node or FIFO, which a rename would replace (run as root). */
    if (!gp_output_write(o->prometheus, text, -1, 0644, &err)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO,
                    "cannot write the metrics file %s: %s", o->prometheus,
                    err->message);
        return false;
    }
    return true;
}
