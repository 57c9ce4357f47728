/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpup2p-verify: inside a VM, prove that GPUDirect P2P and GPUDirect RDMA
 * work (bytes checked at the destination), say why not where they don't,
 * and measure how fast. docs/guest-tool.md describes checks and exit codes.
 */
#include <stdarg.h>
#include <stdio.h>

#include "gpup2p/mirror.h"
#include "gpup2p-version.h"
#include "verify.h"

void verify_note(VerifyReport *r, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    g_ptr_array_add(r->notes, g_strdup_vprintf(fmt, ap));
    va_end(ap);
}

/* What the measurements mean for the verdict. */
static void judge(const VerifyOptions *o, VerifyReport *r)
{
    guint i, j;

    for (i = 0; i < r->pairs->len; i++) {
        VerifyPair *p = &g_array_index(r->pairs, VerifyPair, i);
        const VerifyGpu *a = &g_array_index(r->gpus, VerifyGpu, p->a);
        const VerifyGpu *b = &g_array_index(r->gpus, VerifyGpu, p->b);

        const Figure *uni = &p->fig[FIG_UNI_CE];
        const Figure *lat = &p->fig[FIG_LAT_SM];

        if (p->verified_ce == CHECK_FAILED || p->verified_sm == CHECK_FAILED ||
            p->verified_sm_read == CHECK_FAILED) {
            r->p2p_broken = true;
        }
        if (a->clique >= 0 && a->clique == b->clique && p->peer_access == 0) {
            r->p2p_broken = true;
            verify_note(r, "%s and %s share clique %d but CUDA grants no "
                        "peer access", a->bdf, b->bdf, a->clique);
        }
        if (o->min_bandwidth > 0 && p->peer_access == 1 && uni->samples &&
            uni->median < o->min_bandwidth) {
            r->p2p_broken = true;
            verify_note(r, "%s -> %s: %.1f GB/s is below the minimum %.1f",
                        a->bdf, b->bdf, uni->median, o->min_bandwidth);
        }
        if (o->max_latency > 0 && lat->samples &&
            lat->median > o->max_latency) {
            r->p2p_broken = true;
            verify_note(r, "%s -> %s: latency %.2f us is above the maximum "
                        "%.2f", a->bdf, b->bdf, lat->median, o->max_latency);
        }
    }
    /* GPUs that share no clique with any other. */
    for (i = 0; i < r->gpus->len; i++) {
        const VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);
        bool shared = false;

        for (j = 0; j < r->gpus->len && g->clique >= 0; j++) {
            shared |= j != i &&
                      g_array_index(r->gpus, VerifyGpu, j).clique == g->clique;
        }
        if (g->clique >= 0 && !shared) {
            verify_note(r, "%s is alone in clique %d", g->bdf, g->clique);
        }
    }
}

int main(int argc, char **argv)
{
    VerifyOptions o = { .samples = 3 };
    VerifyReport r = { 0 };
    g_autoptr(GOptionContext) ctx = NULL;
    g_autoptr(GError) err = NULL;
    gint64 t0 = g_get_monotonic_time();
    int mib = 0, code;
    gboolean version = FALSE;
    GOptionEntry entries[] = {
        { "sysfs-root", 0, 0, G_OPTION_ARG_FILENAME, &o.sysfs_root,
          "Run the PCI checks on a captured tree instead of /sys", "DIR" },
        { "json", 0, 0, G_OPTION_ARG_NONE, &o.json, "JSON output", NULL },
        { "quick", 0, 0, G_OPTION_ARG_NONE, &o.quick,
          "Health check: data checks and the copy-engine bandwidth per pair",
          NULL },
        { "pci-only", 0, 0, G_OPTION_ARG_NONE, &o.pci_only,
          "Only the PCI checks (no CUDA, no RDMA)", NULL },
        { "skip-rdma", 0, 0, G_OPTION_ARG_NONE, &o.skip_rdma,
          "Skip the RDMA checks (else untested RDMA is exit 3)", NULL },
        { "no-rdma", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_NONE,
          &o.skip_rdma, "Same as --skip-rdma", NULL },
        { "size-mib", 0, 0, G_OPTION_ARG_INT, &mib,
          "Transfer size (default 512, 64 with --quick)", "MIB" },
        { "samples", 0, 0, G_OPTION_ARG_INT, &o.samples,
          "Samples per figure; the median is kept (default 3)", "N" },
        { "min-bandwidth", 0, 0, G_OPTION_ARG_DOUBLE, &o.min_bandwidth,
          "Fail a pair whose unidirectional bandwidth is lower", "GB/S" },
        { "max-latency", 0, 0, G_OPTION_ARG_DOUBLE, &o.max_latency,
          "Fail a pair whose SM latency is higher", "US" },
        { "nccl-topo", 0, 0, G_OPTION_ARG_FILENAME, &o.nccl_topo,
          "Write an NCCL topology file (NCCL_TOPO_FILE) for this VM",
          "FILE" },
        { "prometheus", 0, 0, G_OPTION_ARG_FILENAME, &o.prometheus,
          "Also write the results as Prometheus textfile-collector "
          "metrics", "FILE" },
        { "version", 0, 0, G_OPTION_ARG_NONE, &version,
          "Print the version and exit", NULL },
        { NULL },
    };

    ctx = g_option_context_new("- prove GPUDirect P2P and RDMA in this VM");
    g_option_context_set_summary(ctx,
        "Exit codes: 0 all good, 1 P2P broken, 2 RDMA broken, "
        "3 could not test, 64 bad command line.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
        fprintf(stderr, "gpup2p-verify: %s\n", err->message);
        return VERIFY_EXIT_USAGE;
    }
    if (version) {
        printf("gpup2p-verify %s\n", GP_VERSION);
        return VERIFY_EXIT_OK;
    }
    if (argc > 1 || mib < 0 || mib > 16384 || o.samples < 1 ||
        o.samples > 16) {
        fprintf(stderr, "gpup2p-verify: %s\n", argc > 1 ?
                "unexpected argument" : "--size-mib must be 1 to 16384 and "
                "--samples 1 to 16");
        return VERIFY_EXIT_USAGE;
    }
    if (o.quick && !mib) {
        o.samples = 1;
    }
    o.bytes = (gsize)(mib ? mib : o.quick ? 64 : 512) << 20;

    r.gpus = g_array_new(FALSE, TRUE, sizeof(VerifyGpu));
    r.pairs = g_array_new(FALSE, TRUE, sizeof(VerifyPair));
    r.rdma = g_array_new(FALSE, TRUE, sizeof(VerifyRdma));
    r.nics = g_array_new(FALSE, TRUE, sizeof(VerifyNic));
    r.notes = g_ptr_array_new_with_free_func(g_free);

    verify_pci(&o, &r);
    if (!o.pci_only && !o.sysfs_root) {
        verify_cuda(&o, &r);
        if (!o.skip_rdma) {
            verify_rdma(&o, &r);
        } else {
            r.rdma_status = g_strdup("not run (--skip-rdma)");
        }
    } else {
        /* Only the PCI checks were asked for: say what was not run. */
        const char *why = o.sysfs_root ? "not run (--sysfs-root)" :
                          "not run (--pci-only)";

        r.cuda_status = g_strdup(why);
        r.nvml_status = g_strdup(why);
        r.rdma_status = g_strdup(why);
    }
    judge(&o, &r);
    if (o.nccl_topo) {
        bool from_host = false;

        /* The host's file (gpup2p --mirror --nccl-topo) knows the host's
         * switches and links; the guest's own view is what it sees. */
        if (!gp_fwcfg_copy(o.sysfs_root ? o.sysfs_root : "/",
                           GP_FWCFG_NCCL_TOPO, o.nccl_topo, &from_host,
                           &err) ||
            (!from_host && !verify_nccl_topo(&o, &r, &err))) {
            verify_note(&r, "NCCL topology: %s", err->message);
            r.untested = true;
        } else {
            verify_note(&r, "NCCL topology: %s", from_host ?
                        "the host's, from fw_cfg " GP_FWCFG_NCCL_TOPO :
                        "the guest's own view");
        }
    }
    r.seconds = (g_get_monotonic_time() - t0) / 1e6;
    /* Before the report, so that a file that could not be written is in
     * it; the metrics then carry the exit code the run ends with. */
    if (o.prometheus) {
        g_autoptr(GError) write_err = NULL;

        if (!verify_write_prometheus(&o, &r, &write_err)) {
            fprintf(stderr, "gpup2p-verify: %s\n", write_err->message);
            verify_note(&r, "%s", write_err->message);
            r.untested = true;
        }
    }
    if (o.json) {
        verify_print_json(&o, &r);
    } else {
        verify_print_text(&o, &r);
    }
    code = verify_exit_code(&r);
    g_array_free(r.gpus, TRUE);
    g_array_free(r.pairs, TRUE);
    g_array_free(r.rdma, TRUE);
    g_array_free(r.nics, TRUE);
    g_ptr_array_free(r.notes, TRUE);
    g_free(r.cuda_status);
    g_free(r.nvml_status);
    g_free(r.rdma_status);
    g_free(o.sysfs_root);
    g_free(o.nccl_topo);
    g_free(o.prometheus);
    return code;
}
