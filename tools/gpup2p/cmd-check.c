/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `gpup2p check`: is this host (and, with --domain, this VM) ready for P2P
 * between the GPUs it passes through? One line per item with a verdict and,
 * where it is not ok, the fix. What cannot be checked from the input (a
 * capture has no loaded modules) is "untested", never "ok".
 */
#include <stdio.h>

#include "check.h"
#include "gpup2p/bar-gate.h"

/*
 * Every check, in report order. Each family lives in a file of its own
 * (check-host.c, check-gpus.c, check-vm.c); the VM items run only with
 * --domain.
 */
static const struct {
    void (*run)(Check *c);
    bool needs_domain;
} checks[] = {
    { check_iommu, false },
    { check_interrupt_remapping, false },
    { check_gpus_found, false },
    { check_gpu_bindings, false },
    { check_pairs, false },
    { check_rdma_pairs, false },
    { check_helper, false },
    { check_qemu, false },
    { check_mmio64, false },
    { check_domain_ids, true },
    { check_domain_clique, true },
    { check_domain_bar_gate, true },
    { check_domain_kvm, true },
    { check_domain_address_bits, true },
    { check_domain_firmware, true },
    { check_domain_start_cost, true },
};

static GPtrArray *select_gpus(const GpTopology *topo, char **bdfs,
                              const Domain *dom, GError **errp)
{
    g_autoptr(GPtrArray) named = NULL;

    if (!bdfs && dom) {
        GPtrArray *out = g_ptr_array_new();
        guint i;

        for (i = 0; i < dom->hostdevs->len; i++) {
            const char *bdf = g_ptr_array_index(dom->hostdevs, i);
            GpDevice *dev = gp_topo_find(topo, bdf);

            if (!dev) {
                g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND,
                            "%s: hostdev %s is not on this host",
                            dom->path, bdf);
                g_ptr_array_free(out, TRUE);
                return NULL;
            }
            if (gp_device_is_gpu(dev)) {
                g_ptr_array_add(out, dev);
            }
        }
        return out;
    }
    return gp_cli_select(topo, bdfs, gp_device_is_nvidia_gpu, errp);
}

static int report_end(Report *r, bool with_domain)
{
    int status = r->fails ? GP_EXIT_NOT_READY :
                 r->untested ? GP_EXIT_UNTESTED : GP_EXIT_OK;

    json_builder_end_array(r->json);
    if (r->as_json) {
        g_autoptr(JsonNode) node = NULL;

        json_builder_set_member_name(r->json, "failed");
        json_builder_add_int_value(r->json, r->fails);
        json_builder_set_member_name(r->json, "warnings");
        json_builder_add_int_value(r->json, r->warns);
        json_builder_set_member_name(r->json, "untested");
        json_builder_add_int_value(r->json, r->untested);
        json_builder_set_member_name(r->json, "ready");
        json_builder_add_string_value(r->json, status == GP_EXIT_OK ? "yes" :
                                      status == GP_EXIT_NOT_READY ? "no" :
                                      "not fully checked");
        json_builder_end_object(r->json);
        node = json_builder_get_root(r->json);
        gp_cli_print_json(node);
    } else {
        if (!with_domain) {
            printf("(the VM's settings -- its clique, hidden KVM, address "
                   "bits, firmware aperture -- are checked with --domain)\n");
        }
        printf("%u failed, %u warnings, %u untested\n", r->fails, r->warns,
               r->untested);
    }
    return status;
}

int gp_cmd_check(int argc, char **argv)
{
    g_autofree char *root = NULL, *devices = NULL, *qemu = NULL;
    g_autofree char *domain = NULL, *kernel = NULL;
    gboolean json = FALSE;
    GOptionEntry entries[] = {
        { "sysfs-root", 0, 0, G_OPTION_ARG_FILENAME, &root,
          "Read a captured host instead of /sys", "DIR" },
        { "devices", 0, 0, G_OPTION_ARG_STRING, &devices,
          "The GPUs to check (default: the domain's, else NVIDIA "
          "display-class devices)", "BDF,..." },
        { "domain", 0, 0, G_OPTION_ARG_FILENAME, &domain,
          "Also check this libvirt domain XML (its GPUs, whether they get "
          "a clique, <emulator>, firmware, address bits)", "FILE" },
        { "qemu", 0, 0, G_OPTION_ARG_FILENAME, &qemu,
          "The QEMU binary VMs use (default: the domain's <emulator>, "
          "else qemu-system-x86_64; none for a capture)", "PATH" },
        { "json", 0, 0, G_OPTION_ARG_NONE, &json, "JSON output", NULL },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("- is this host ready for GPU P2P in VMs?");
    g_autoptr(GError) err = NULL;
    g_autoptr(GpTopology) topo = NULL;
    g_autoptr(GPtrArray) gpus = NULL;
    g_autoptr(Domain) dom = NULL;
    g_auto(GStrv) bdfs = NULL;
    g_autoptr(JsonBuilder) jb = json_builder_new();
    Report r = { .json = jb, .as_json = json };
    Check c = { .r = &r };
    size_t i;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!gp_cli_parse(ctx, &argc, &argv)) {
        return GP_EXIT_USAGE;
    }
    if (!gp_cli_no_args("check", argc, argv) ||
        !gp_cli_bdf_list("check", "--devices", devices, &bdfs)) {
        return GP_EXIT_USAGE;
    }
    r.as_json = json;
    topo = gp_topo_read(root ? root : "/", &err);
    if (!topo || (domain && !(dom = check_domain_read(domain, &err)))) {
        return gp_cli_fail("check", GP_EXIT_FAILED, "%s", err->message);
    }
    gpus = select_gpus(topo, bdfs, dom, &err);
    if (!gpus) {
        return gp_cli_fail("check", GP_EXIT_FAILED, "%s", err->message);
    }
    c.topo = topo;
    c.gpus = gpus;
    c.captured = root != NULL;
    c.dom = dom;
    kernel = gp_sysfs_kernel_release(topo->root);
    c.kernel = kernel;
    c.qemu = qemu ? qemu : dom && dom->emulator ? dom->emulator :
             root ? NULL : "qemu-system-x86_64";
    json_builder_begin_object(jb);
    json_builder_set_member_name(jb, "schema_version");
    json_builder_add_int_value(jb, GP_JSON_SCHEMA_VERSION);
    json_builder_set_member_name(jb, "items");
    json_builder_begin_array(jb);
    c.need = gp_devices_mmio64_size(gpus);
    for (i = 0; i < G_N_ELEMENTS(checks); i++) {
        if (!checks[i].needs_domain || dom) {
            checks[i].run(&c);
        }
    }
    return report_end(&r, dom != NULL);
}

