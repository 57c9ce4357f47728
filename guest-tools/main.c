/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gpup2p-verify: inside a VM, prove that GPUDirect P2P and GPUDirect RDMA
 * work (bytes checked at the destination), say why not where they don't,
 * and measure how fast. docs/guest-tool.md describes checks and exit codes.
 */
#include <errno.h>
#include <stdio.h>

#include "gpup2p/mirror.h"
#include "gpup2p-version.h"
#include "verify.h"

/* An integer option not given on the command line. */
#define UNSET G_MININT

/* Option values out of range: a usage error naming the option. */
static const char *bad_option(const VerifyOptions *o, int mib, int samples)
{
    if (mib != UNSET && (mib < 1 || mib > 16384)) {
        return "--size-mib must be 1 to 16384";
    }
    if (samples != UNSET && (samples < 1 || samples > 16)) {
        return "--samples must be 1 to 16";
    }
    if (o->quick && o->benchmark) {
        return "--quick and --benchmark: choose one";
    }
    if (!(o->min_bandwidth >= 0 && o->min_bandwidth < 1e6)) {
        return "--min-bandwidth must be a number from 0 to 1000000 (GB/s)";
    }
    if (!(o->watchdog_s >= 0.1 && o->watchdog_s <= 3600)) {
        return "--watchdog-s must be a number from 0.1 to 3600 (seconds)";
    }
    if (!(o->max_latency >= 0 && o->max_latency < 1e6)) {
        return "--max-latency must be a number from 0 to 1000000 (us)";
    }
    return NULL;
}

/* The command line as parsed; GOption writes into it. */
static struct {
    VerifyOptions o;
    int mib, samples;
    gboolean version, list;
    char *figures;
} cli = {
    .o = { .samples = 3, .watchdog_s = 60 },
    .mib = UNSET, .samples = UNSET,
};

static const GOptionEntry entries[] = {
    { "sysfs-root", 0, 0, G_OPTION_ARG_FILENAME, &cli.o.sysfs_root,
      "Run the PCI checks on a captured tree instead of /sys", "DIR" },
    { "with-cuda", 0, 0, G_OPTION_ARG_NONE, &cli.o.with_cuda,
      "With --sysfs-root: run the CUDA checks too, matching CUDA's "
      "GPUs to the capture by bus id (tests with a stand-in driver)",
      NULL },
    { "json", 0, 0, G_OPTION_ARG_NONE, &cli.o.json, "JSON output", NULL },
    { "concurrent", 0, 0, G_OPTION_ARG_NONE, &cli.o.concurrent,
      "Time pairs on independent links at once (faster; nvbandwidth, "
      "and the default, time one pair at a time)", NULL },
    { "watchdog-s", 0, 0, G_OPTION_ARG_DOUBLE, &cli.o.watchdog_s,
      "Longest wait for any GPU work, 0.1 to 3600 s (default 60): "
      "work still running then fails its pair as hung", "S" },
    { "quick", 0, 0, G_OPTION_ARG_NONE, &cli.o.quick,
      "Health check: data checks and the copy-engine bandwidth per pair",
      NULL },
    { "benchmark", 0, 0, G_OPTION_ARG_NONE, &cli.o.benchmark,
      "Figures by nvbandwidth's method (16 copies a sample between one "
      "pair of events, pairs one at a time unless --concurrent; the last "
      "copy's bytes checked) instead of the validation run (every copy "
      "checked)", NULL },
    { "pci-only", 0, 0, G_OPTION_ARG_NONE, &cli.o.pci_only,
      "Only the PCI checks (no CUDA, no RDMA)", NULL },
    { "skip-rdma", 0, 0, G_OPTION_ARG_NONE, &cli.o.skip_rdma,
      "Skip the RDMA checks (else untested RDMA is exit 3)", NULL },
    { "no-rdma", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_NONE,
      &cli.o.skip_rdma, "Same as --skip-rdma", NULL },
    { "size-mib", 0, 0, G_OPTION_ARG_INT, &cli.mib,
      "Transfer size, 1 to 16384 (default 256; 512 with --benchmark, "
      "64 with --quick). Each GPU holds 3 x size of GPU memory (a "
      "source, its alternate pattern, one inbox) and a latency chain of "
      "up to 64 MiB; with --benchmark 2 x size and 2 MiB; whatever the "
      "GPU count. The host <-> device figures pin 3 buffers of the size "
      "in host memory (2 with --benchmark)",
      "MIB" },
    { "samples", 0, 0, G_OPTION_ARG_INT, &cli.samples,
      "Samples per figure, 1 to 16; the median is kept (default 3, 1 "
      "with --quick)", "N" },
    { "min-bandwidth", 0, 0, G_OPTION_ARG_DOUBLE, &cli.o.min_bandwidth,
      "Fail a pair whose unidirectional bandwidth is lower (0 to "
      "1000000; untested if none is measured)", "GB/S" },
    { "max-latency", 0, 0, G_OPTION_ARG_DOUBLE, &cli.o.max_latency,
      "Fail a pair whose SM latency is higher (0 to 1000000; untested "
      "if none is measured)", "US" },
    { "nccl-topo", 0, 0, G_OPTION_ARG_FILENAME, &cli.o.nccl_topo,
      "Write an NCCL topology file (NCCL_TOPO_FILE) for this VM",
      "FILE" },
    { "prometheus", 0, 0, G_OPTION_ARG_FILENAME, &cli.o.prometheus,
      "Also write the results as Prometheus textfile-collector "
      "metrics", "FILE" },
    { "figures", 0, 0, G_OPTION_ARG_STRING, &cli.figures,
      "Measure only these figures (names from --list, comma-separated);"
      " the data checks always run", "NAME,..." },
    { "list", 0, 0, G_OPTION_ARG_NONE, &cli.list,
      "Print the figures (name, nvbandwidth's counterpart, unit, "
      "method) and exit", NULL },
    { "version", 0, 0, G_OPTION_ARG_NONE, &cli.version,
      "Print the version and exit", NULL },
    { NULL },
};

static void options_free(VerifyOptions *o)
{
    g_free(o->sysfs_root);
    g_free(o->nccl_topo);
    g_free(o->prometheus);
}

/* What the options say, or why they make no sense (to be freed). */
static char *settle_options(VerifyOptions *o, int argc)
{
    g_autofree char *unknown = NULL;
    const char *bad = argc > 1 ? "unexpected argument" :
                      bad_option(o, cli.mib, cli.samples);

    if (bad) {
        return g_strdup(bad);
    }
    o->figures = verify_figures_default(o->quick);
    if (cli.figures && !verify_figures_parse(cli.figures, &o->figures,
                                             &unknown)) {
        return g_strdup_printf("--figures: no figure named \"%s\" (--list "
                               "names them)", unknown);
    }
    if (o->with_cuda && (!o->sysfs_root || o->pci_only)) {
        return g_strdup("--with-cuda goes with --sysfs-root, not "
                        "--pci-only");
    }
    /* --quick takes one sample unless told otherwise. */
    o->samples = cli.samples != UNSET ? cli.samples : o->quick ? 1 : 3;
    /* --benchmark moves nvbandwidth's 512 MiB; validation 256 MiB (on
     * NVLink the same bandwidth, in half the time). */
    o->bytes = (gsize)(cli.mib != UNSET ? cli.mib : o->quick ? 64 :
                       o->benchmark ? 512 : 256) << 20;
    return NULL;
}

/*
 * Parses the command line into cli.o: -1 to go on, else the exit code
 * (--version, --list, a usage error named on stderr).
 */
static int parse_command_line(int argc, char **argv)
{
    g_autoptr(GOptionContext) ctx = NULL;
    g_autoptr(GError) err = NULL;
    g_autofree char *bad = NULL;

    ctx = g_option_context_new("- prove GPUDirect P2P and RDMA in this VM");
    g_option_context_set_summary(ctx,
        "Exit codes: 0 all good, 1 P2P broken, 2 RDMA broken, "
        "3 could not test, 4 GPU lost (a sticky CUDA error), "
        "64 bad command line.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
        fprintf(stderr, "gpup2p-verify: %s\n", err->message);
        return VERIFY_EXIT_USAGE;
    }
    if (cli.version) {
        printf("gpup2p-verify %s\n", GP_VERSION);
        return VERIFY_EXIT_OK;
    }
    if (cli.list) {
        g_autofree char *text = verify_figures_list_text();

        fputs(text, stdout);
        return VERIFY_EXIT_OK;
    }
    if ((bad = settle_options(&cli.o, argc))) {
        fprintf(stderr, "gpup2p-verify: %s\n", bad);
        return VERIFY_EXIT_USAGE;
    }
    return -1;
}

/* PCI, then CUDA and RDMA unless only the PCI checks were asked for. */
static void run_checks(const VerifyOptions *o, VerifyReport *r)
{
    verify_pci(o, r);
    if (!verify_pci_checks_only(o)) {
        verify_cuda(o, r);
        if (!o->skip_rdma) {
            verify_rdma(o, r);
        } else {
            r->rdma_status = g_strdup("not run (--skip-rdma)");
        }
        /* After the last check that touched a GPU: what the run added. */
        verify_nvml_health_after(r);
    } else {
        /* Only the PCI checks were asked for: say what was not run. */
        const char *why = o->sysfs_root ? "not run (--sysfs-root)" :
                          "not run (--pci-only)";

        r->cuda_status = g_strdup(why);
        r->nvml_status = g_strdup(why);
        r->rdma_status = g_strdup(why);
    }
}

static void write_nccl_topo(const VerifyOptions *o, VerifyReport *r)
{
    g_autoptr(GError) err = NULL;
    bool from_host = false;

    /* The host's file (gpup2p --mirror --nccl-topo) knows the host's
     * switches and links; the guest's own view is what it sees. */
    if (!gp_fwcfg_copy(o->sysfs_root ? o->sysfs_root : "/",
                       GP_FWCFG_NCCL_TOPO, o->nccl_topo, &from_host, &err) ||
        (!from_host && !verify_nccl_topo(o, r, &err))) {
        /* On stderr too: a report that only says so in a note may be the
         * one that cannot be written either. */
        fprintf(stderr, "gpup2p-verify: NCCL topology: %s\n", err->message);
        verify_note(r, "NCCL topology: %s", err->message);
        r->untested = true;
    } else {
        verify_note(r, "NCCL topology: %s", from_host ?
                    "the host's, from fw_cfg " GP_FWCFG_NCCL_TOPO :
                    "the guest's own view");
    }
}

/* Before the report, so that a file that could not be written is in it;
 * the metrics then carry the exit code the run ends with. */
static void write_metrics(const VerifyOptions *o, VerifyReport *r)
{
    g_autoptr(GError) err = NULL;

    if (!verify_write_prometheus(o, r, &err)) {
        fprintf(stderr, "gpup2p-verify: %s\n", err->message);
        verify_note(r, "%s", err->message);
        r->untested = true;
    }
}

int main(int argc, char **argv)
{
    VerifyOptions *o = &cli.o;
    VerifyReport r = { 0 };
    gint64 t0 = g_get_monotonic_time();
    int code = parse_command_line(argc, argv);

    if (code >= 0) {
        options_free(o);
        g_free(cli.figures);
        return code;
    }
    verify_report_init(&r);
    run_checks(o, &r);
    verify_judge(o, &r);
    if (o->nccl_topo) {
        write_nccl_topo(o, &r);
    }
    r.seconds = (g_get_monotonic_time() - t0) / 1e6;
    if (o->prometheus) {
        write_metrics(o, &r);
    }
    if (o->json) {
        verify_print_json(o, &r);
    } else {
        verify_print_text(o, &r);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        /* A verdict nobody can read is no verdict (a full disk). */
        fprintf(stderr, "gpup2p-verify: the report could not be written to "
                "standard output: %s\n", g_strerror(errno));
        r.untested = true;
    }
    code = verify_exit_code(&r);
    verify_report_clear(&r);
    options_free(o);
    g_free(cli.figures);
    return code;
}
