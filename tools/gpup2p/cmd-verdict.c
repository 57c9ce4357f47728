/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `gpup2p verdict`: the P2P verdicts (p2pdma's and a guest's) and IOMMU
 * groups the kernel module reads from its PCI device tree, compared with
 * the ones the core library reads from sysfs. On a kernel with
 * CONFIG_PCI_P2PDMA the module's verdict is p2pdma's own (and so is the
 * root complex half of its guest verdict), each pair says which; without
 * it the module runs the library's rule over struct pci_dev (one rule, two
 * readers).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gpup2p/module-client.h"
#include "gpup2p/p2p.h"


static uint32_t dev_addr(const GpDevice *dev)
{
    return GPUP2P_PCI_ADDR(dev->domain, dev->bus,
                           (dev->slot << 3) | dev->function);
}

/* One pair: the kernel's answer, the library's, and where they differ. */
typedef struct {
    const GpDevice *a, *b;
    struct gpup2p_verdict kernel;
    GpP2pVerdict lib;
    GString *differs;
} VerdictPair;

static void compare_u32(GString *out, const char *what, uint32_t kernel,
                        uint32_t lib)
{
    if (kernel != lib) {
        g_string_append_printf(out, "%s%s: kernel %u, library %u",
                               out->len ? "; " : "", what, kernel, lib);
    }
}

/* Addresses by name; ~0 stands for none. */
static void compare_addr(GString *out, const char *what, uint32_t kernel,
                         uint32_t lib)
{
    char k[16] = "none", l[16] = "none";

    if (kernel == lib) {
        return;
    }
    if (kernel != ~0u) {
        gp_pci_addr_format(kernel, k);
    }
    if (lib != ~0u) {
        gp_pci_addr_format(lib, l);
    }
    g_string_append_printf(out, "%s%s: kernel %s, library %s",
                           out->len ? "; " : "", what, k, l);
}

static void compare_pair(VerdictPair *p)
{
    const struct gpup2p_verdict *k = &p->kernel;
    const GpP2pVerdict *l = &p->lib;

    p->differs = g_string_new(NULL);
    if (l->kind == GP_P2P_UNKNOWN) {
        g_string_append_printf(p->differs, "the library cannot decide: %s",
                               l->reason);
        return;
    }
    compare_u32(p->differs, "verdict", k->verdict, l->rule.kind);
    compare_u32(p->differs, "distance", k->distance, l->rule.distance);
    compare_u32(p->differs, "path reason", k->path_reason,
                l->rule.path_reason);
    compare_u32(p->differs, "host reason", k->host_reason,
                l->rule.host_reason);
    compare_addr(p->differs, "common bridge",
                k->out_flags & GPUP2P_VERDICT_HAS_COMMON ? k->common : ~0u,
                l->common ? dev_addr(l->common) : ~0u);
    compare_addr(p->differs, "first ACS redirect",
                k->out_flags & GPUP2P_VERDICT_HAS_REDIRECT ? k->redirect :
                ~0u, l->redirect ? dev_addr(l->redirect) : ~0u);
    compare_u32(p->differs, "guest verdict", k->vm_verdict, l->vm_kind);
    compare_addr(p->differs, "first port that bypasses the IOMMU",
                k->out_flags & GPUP2P_VERDICT_HAS_VM_PORT ? k->vm_port : ~0u,
                l->bypass ? dev_addr(l->bypass) : ~0u);
    compare_u32(p->differs, "IOMMU group of a", (uint32_t)k->iommu_group_a,
                (uint32_t)p->a->iommu_group);
    compare_u32(p->differs, "IOMMU group of b", (uint32_t)k->iommu_group_b,
                (uint32_t)p->b->iommu_group);
    if (p->differs->len && (k->out_flags & GPUP2P_VERDICT_RULE_DIFFERS)) {
        /* Not a reader's difference: the kernel's own code answers
         * otherwise than the rule over the hops the module read. */
        g_string_prepend(p->differs, "the module marks its p2pdma answer "
                         "as differing from the shared rule over the hops "
                         "it read (this kernel's code, not a reader): ");
    }
}

/* Where the kernel module's bare-metal and guest verdicts come from. */
static const char *kernel_source(const struct gpup2p_verdict *k)
{
    return k->out_flags & GPUP2P_VERDICT_FROM_P2PDMA ? "p2pdma" : "rule";
}

static const char *kernel_guest_source(const struct gpup2p_verdict *k)
{
    return k->out_flags & GPUP2P_VERDICT_VM_FROM_P2PDMA ? "p2pdma" : "rule";
}

static bool verdict_pair(int fd, const GpTopology *topo, VerdictPair *p,
                         GError **errp)
{
    memset(&p->kernel, 0, sizeof(p->kernel));
    if (p->a->domain > GPUP2P_PCI_DOMAIN_MAX ||
        p->b->domain > GPUP2P_PCI_DOMAIN_MAX) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s %s: a domain "
                    "above %x (Intel VMD) cannot be named to the kernel "
                    "module", p->a->bdf, p->b->bdf, GPUP2P_PCI_DOMAIN_MAX);
        return false;
    }
    p->kernel.a = dev_addr(p->a);
    p->kernel.b = dev_addr(p->b);
    if (!gp_module_verdict(fd, &p->kernel, errp)) {
        g_prefix_error(errp, "%s %s: ", p->a->bdf, p->b->bdf);
        return false;
    }
    if (!gp_kernel_kind_name(p->kernel.verdict) ||
        !gp_kernel_vm_kind_name(p->kernel.vm_verdict)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "%s %s: the kernel "
                    "answered verdict %u / guest verdict %u, which this "
                    "program does not know", p->a->bdf, p->b->bdf,
                    p->kernel.verdict, p->kernel.vm_verdict);
        return false;
    }
    gp_p2p_verdict(topo, p->a, p->b, &p->lib);
    compare_pair(p);
    return true;
}

static void verdict_pair_clear(VerdictPair *p)
{
    gp_p2p_verdict_clear(&p->lib);
    if (p->differs) {
        g_string_free(p->differs, TRUE);
    }
}

static JsonNode *pair_json(const VerdictPair *p)
{
    g_autoptr(JsonBuilder) b = json_builder_new();

    json_builder_begin_object(b);
    json_builder_set_member_name(b, "a");
    json_builder_add_string_value(b, p->a->bdf);
    json_builder_set_member_name(b, "b");
    json_builder_add_string_value(b, p->b->bdf);
    json_builder_set_member_name(b, "kernel");
    json_builder_add_string_value(b, gp_kernel_kind_name(p->kernel.verdict));
    json_builder_set_member_name(b, "library");
    json_builder_add_string_value(b, gp_p2p_kind_name(p->lib.kind));
    json_builder_set_member_name(b, "distance");
    json_builder_add_int_value(b, p->kernel.distance);
    json_builder_set_member_name(b, "path_reason");
    json_builder_add_int_value(b, p->kernel.path_reason);
    json_builder_set_member_name(b, "host_reason");
    json_builder_add_int_value(b, p->kernel.host_reason);
    json_builder_set_member_name(b, "reason");
    json_builder_add_string_value(b, p->lib.reason);
    json_builder_set_member_name(b, "kernel_guest");
    json_builder_add_string_value(b,
                                  gp_kernel_vm_kind_name(p->kernel.vm_verdict));
    json_builder_set_member_name(b, "kernel_source");
    json_builder_add_string_value(b, kernel_source(&p->kernel));
    json_builder_set_member_name(b, "kernel_guest_source");
    json_builder_add_string_value(b, kernel_guest_source(&p->kernel));
    if (p->kernel.out_flags & GPUP2P_VERDICT_FROM_P2PDMA) {
        json_builder_set_member_name(b, "p2pdma");
        json_builder_add_int_value(b, p->kernel.p2pdma);
    }
    if (p->kernel.out_flags & GPUP2P_VERDICT_VM_FROM_P2PDMA) {
        json_builder_set_member_name(b, "p2pdma_host");
        json_builder_add_int_value(b, p->kernel.p2pdma_host);
    }
    json_builder_set_member_name(b, "kernel_rule_differs");
    json_builder_add_boolean_value(b, (p->kernel.out_flags &
                                       GPUP2P_VERDICT_RULE_DIFFERS) != 0);
    json_builder_set_member_name(b, "library_guest");
    json_builder_add_string_value(b, gp_vm_p2p_kind_name(p->lib.vm_kind));
    json_builder_set_member_name(b, "iommu_group_a");
    json_builder_add_int_value(b, p->kernel.iommu_group_a);
    json_builder_set_member_name(b, "iommu_group_b");
    json_builder_add_int_value(b, p->kernel.iommu_group_b);
    json_builder_set_member_name(b, "agree");
    json_builder_add_boolean_value(b, p->differs->len == 0);
    if (p->differs->len) {
        json_builder_set_member_name(b, "differs");
        json_builder_add_string_value(b, p->differs->str);
    }
    json_builder_end_object(b);
    return json_builder_get_root(b);
}

/* The pairs asked for: A B, or with --all every ordered pair. */
static GPtrArray *select_pairs(const GpTopology *topo, gboolean all,
                               char **argv, GError **errp)
{
    GPtrArray *pairs = g_ptr_array_new_with_free_func(g_free);
    guint i, j;

    if (!all) {
        const GpDevice *a = gp_topo_find(topo, argv[1]);
        const GpDevice *b = gp_topo_find(topo, argv[2]);
        VerdictPair *p;

        if (!a || !b) {
            g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND, "%s: no such PCI "
                        "device in sysfs", a ? argv[2] : argv[1]);
            g_ptr_array_free(pairs, TRUE);
            return NULL;
        }
        p = g_new0(VerdictPair, 1);
        p->a = a;
        p->b = b;
        g_ptr_array_add(pairs, p);
        return pairs;
    }
    for (i = 0; i < topo->devices->len; i++) {
        for (j = 0; j < topo->devices->len; j++) {
            VerdictPair *p = g_new0(VerdictPair, 1);

            p->a = g_ptr_array_index(topo->devices, i);
            p->b = g_ptr_array_index(topo->devices, j);
            g_ptr_array_add(pairs, p);
        }
    }
    return pairs;
}

/* How the module answers: p2pdma's own code, or the shared rule. */
static const char *info_source(const struct gpup2p_info *info)
{
    return info->caps & GPUP2P_CAP_P2PDMA ? "p2pdma" : "rule";
}

static void print_pairs(GPtrArray *pairs, guint agree,
                        const struct gpup2p_info *info, gboolean json)
{
    guint i;

    if (json) {
        g_autoptr(JsonBuilder) b = json_builder_new();
        g_autoptr(JsonNode) node = NULL;

        json_builder_begin_object(b);
        json_builder_set_member_name(b, "kernel_source");
        json_builder_add_string_value(b, info_source(info));
        json_builder_set_member_name(b, "kernel_caps");
        json_builder_add_int_value(b, (gint64)info->caps);
        json_builder_set_member_name(b, "pairs");
        json_builder_add_int_value(b, pairs->len);
        json_builder_set_member_name(b, "agree");
        json_builder_add_int_value(b, agree);
        json_builder_set_member_name(b, "results");
        json_builder_begin_array(b);
        for (i = 0; i < pairs->len; i++) {
            json_builder_add_value(b, pair_json(pairs->pdata[i]));
        }
        json_builder_end_array(b);
        json_builder_end_object(b);
        node = json_builder_get_root(b);
        gp_cli_print_json(node);
        return;
    }
    printf("kernel: %s\n", info->caps & GPUP2P_CAP_P2PDMA ?
           "answers from p2pdma (CONFIG_PCI_P2PDMA): "
           "pci_p2pdma_distance_many() and its root complex answer" :
           "no CONFIG_PCI_P2PDMA: answers by the shared rule over "
           "struct pci_dev");
    for (i = 0; i < pairs->len; i++) {
        const VerdictPair *p = pairs->pdata[i];

        printf("%s %s: kernel %s/%s (%s/%s), library %s/%s%s%s: %s\n",
               p->a->bdf, p->b->bdf, gp_kernel_kind_name(p->kernel.verdict),
               gp_kernel_vm_kind_name(p->kernel.vm_verdict),
               kernel_source(&p->kernel), kernel_guest_source(&p->kernel),
               gp_p2p_kind_name(p->lib.kind),
               gp_vm_p2p_kind_name(p->lib.vm_kind),
               p->differs->len ? "; DIFFER: " : "", p->differs->str,
               p->lib.vm_reason);
    }
    printf("%u of %u pairs agree\n", agree, pairs->len);
}

/* Two devices A B, or --all and none. */
static bool verdict_args_valid(gboolean all, int argc, char **argv)
{
    if (all && argc > 1) {
        return gp_cli_usage("verdict", "--all compares every pair: "
                            "it takes no device, not '%s'", argv[1]);
    }
    if (all) {
        return true;
    }
    if (argc < 3) {
        return gp_cli_usage("verdict", "give two devices A B, or "
                            "--all (%s)",
                            argc < 2 ? "none given" : "B missing");
    }
    if (argc > 3) {
        return gp_cli_usage("verdict", "two devices only, not also "
                            "'%s'", argv[3]);
    }
    return gp_cli_bdf_arg("verdict", "device A", argv[1]) &&
           gp_cli_bdf_arg("verdict", "device B", argv[2]);
}

int gp_cmd_verdict(int argc, char **argv)
{
    gboolean json = FALSE, all = FALSE;
    GOptionEntry entries[] = {
        { "all", 0, 0, G_OPTION_ARG_NONE, &all,
          "Every ordered pair of PCI devices", NULL },
        { "json", 0, 0, G_OPTION_ARG_NONE, &json, "JSON output", NULL },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("[A B] - the P2P verdicts (bare metal/guest) "
                             "and IOMMU groups as the kernel sees them, "
                             "compared with the library's");
    g_autoptr(GError) err = NULL;
    g_autoptr(GpTopology) topo = NULL;
    g_autoptr(GPtrArray) pairs = NULL;
    struct gpup2p_info info;
    guint i, agree = 0;
    bool ok = true;
    int fd;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!gp_cli_parse(ctx, &argc, &argv)) {
        return GP_EXIT_USAGE;
    }
    if (!verdict_args_valid(all, argc, argv)) {
        return GP_EXIT_USAGE;
    }
    /* Every ordered pair of devices is compared: all of them read. */
    topo = gp_topo_read_all("/", &err);
    if (!topo || !(pairs = select_pairs(topo, all, argv, &err))) {
        return gp_cli_fail("verdict", GP_EXIT_FAILED, "%s", err->message);
    }
    fd = gp_module_open(&err);
    if (fd < 0) {
        return gp_cli_fail("verdict", GP_EXIT_FAILED, "%s", err->message);
    }
    if (!gp_module_info(fd, &info, &err)) {
        close(fd);
        return gp_cli_fail("verdict", GP_EXIT_FAILED, "%s", err->message);
    }
    for (i = 0; i < pairs->len && ok; i++) {
        VerdictPair *p = pairs->pdata[i];

        ok = verdict_pair(fd, topo, p, &err);
        agree += ok && p->differs->len == 0;
    }
    close(fd);
    if (ok) {
        print_pairs(pairs, agree, &info, json);
    }
    for (i = 0; i < pairs->len; i++) {
        verdict_pair_clear(pairs->pdata[i]);
    }
    if (!ok) {
        return gp_cli_fail("verdict", GP_EXIT_FAILED, "%s", err->message);
    }
    if (agree != pairs->len) {
        return gp_cli_fail("verdict", GP_EXIT_FAILED, "the kernel and the "
                           "library disagree on %u of %u pairs",
                           pairs->len - agree, pairs->len);
    }
    return GP_EXIT_OK;
}
