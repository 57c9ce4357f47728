/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `gpup2p check`: is this host ready for P2P in its GPU VMs? One line per
 * item with a verdict and, where it fails, the fix.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

typedef enum { ITEM_OK, ITEM_WARN, ITEM_FAIL } ItemState;

typedef struct {
    JsonBuilder *json;
    gboolean as_json;
    unsigned fails, warns;
} Report;

static void item(Report *r, ItemState st, const char *what,
                 const char *detail, const char *fix)
{
    static const char *const names[] = { "ok", "warn", "fail" };

    r->fails += st == ITEM_FAIL;
    r->warns += st == ITEM_WARN;
    if (r->as_json) {
        json_builder_begin_object(r->json);
        json_builder_set_member_name(r->json, "item");
        json_builder_add_string_value(r->json, what);
        json_builder_set_member_name(r->json, "verdict");
        json_builder_add_string_value(r->json, names[st]);
        json_builder_set_member_name(r->json, "detail");
        json_builder_add_string_value(r->json, detail);
        if (fix && st != ITEM_OK) {
            json_builder_set_member_name(r->json, "fix");
            json_builder_add_string_value(r->json, fix);
        }
        json_builder_end_object(r->json);
        return;
    }
    printf("%-4s %-28s %s\n", names[st], what, detail);
    if (fix && st != ITEM_OK) {
        printf("     fix: %s\n", fix);
    }
}

static char *path_in(const GpTopology *t, const char *rel)
{
    return g_build_filename(t->sys, rel, NULL);
}

static bool qemu_knows_extension(const char *qemu, char **why)
{
    const char *argv[] = { qemu, "-device", "vfio-pci,help", NULL };
    g_autofree char *out = NULL;
    g_autoptr(GError) err = NULL;
    int status;

    if (!g_spawn_sync(NULL, (char **)argv, NULL,
                      G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL,
                      NULL, NULL, &out, NULL, &status, &err)) {
        *why = g_strdup_printf("%s: %s", qemu, err->message);
        return false;
    }
    if (!strstr(out ? out : "", "x-gpu-p2p-clique")) {
        *why = g_strdup_printf("%s has no x-gpu-p2p-clique on vfio-pci",
                               qemu);
        return false;
    }
    *why = g_strdup_printf("%s has x-gpu-p2p-clique", qemu);
    return true;
}

int gp_cmd_check(int argc, char **argv)
{
    g_autofree char *root = NULL, *devices = NULL, *qemu = NULL;
    gboolean json = FALSE;
    GOptionEntry entries[] = {
        { "sysfs-root", 0, 0, G_OPTION_ARG_FILENAME, &root,
          "Read a captured host instead of /sys", "DIR" },
        { "devices", 0, 0, G_OPTION_ARG_STRING, &devices,
          "The GPUs to check (default: NVIDIA display-class devices)",
          "BDF,..." },
        { "qemu", 0, 0, G_OPTION_ARG_FILENAME, &qemu,
          "The QEMU binary VMs use (default qemu-system-x86_64)", "PATH" },
        { "json", 0, 0, G_OPTION_ARG_NONE, &json, "JSON output", NULL },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("- is this host ready for GPU P2P in VMs?");
    g_autoptr(GError) err = NULL;
    g_autoptr(GpTopology) topo = NULL;
    g_autoptr(GPtrArray) gpus = NULL;
    g_auto(GStrv) bdfs = NULL;
    g_autoptr(JsonBuilder) jb = json_builder_new();
    g_autofree char *groups = NULL, *helper = NULL, *why = NULL;
    Report r = { .json = jb, .as_json = FALSE };
    guint i, j;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!gp_cli_parse(ctx, &argc, &argv)) {
        return GP_EXIT_USAGE;
    }
    r.as_json = json;
    topo = gp_topo_read(root ? root : "/", &err);
    if (!topo) {
        return gp_cli_fail("check", GP_EXIT_FAILED, "%s", err->message);
    }
    bdfs = gp_cli_split_list(devices);
    gpus = gp_cli_select(topo, bdfs, gp_device_is_nvidia_gpu, &err);
    if (!gpus) {
        return gp_cli_fail("check", GP_EXIT_FAILED, "%s", err->message);
    }
    json_builder_begin_array(jb);

    groups = path_in(topo, "kernel/iommu_groups");
    {
        /* IOMMU groups exist (live), or devices carry one (a capture). */
        g_autoptr(GDir) d = g_dir_open(groups, 0, NULL);
        bool on = d && g_dir_read_name(d);

        for (i = 0; i < topo->devices->len && !on; i++) {
            on = ((GpDevice *)g_ptr_array_index(topo->devices, i))
                     ->iommu_group >= 0;
        }

        item(&r, on ? ITEM_OK : ITEM_FAIL, "IOMMU",
             on ? "IOMMU groups exist" : "no IOMMU groups: the IOMMU is off",
             "boot with intel_iommu=on (Intel) or amd_iommu=on, and enable "
             "VT-d/AMD-Vi in firmware");
    }
    item(&r, gpus->len ? ITEM_OK : ITEM_WARN, "GPUs",
         gpus->len ? "NVIDIA GPUs found" : "no NVIDIA display-class device",
         "name the devices with --devices");
    for (i = 0; i < gpus->len; i++) {
        const GpDevice *g = g_ptr_array_index(gpus, i);
        g_autofree char *what = g_strdup_printf("%s driver", g->bdf);
        g_autofree char *detail = g_strdup_printf("bound to %s",
                                                  g->driver ? g->driver :
                                                  "nothing");
        g_autofree char *fix = g_strdup_printf(
            "echo vfio-pci > /sys/bus/pci/devices/%s/driver_override; "
            "echo %s > /sys/bus/pci/drivers_probe", g->bdf, g->bdf);
        g_autoptr(GString) others = g_string_new(NULL);

        item(&r, !g_strcmp0(g->driver, "vfio-pci") ? ITEM_OK : ITEM_FAIL,
             what, detail, fix);
        for (j = 0; j < topo->devices->len; j++) {
            const GpDevice *o = g_ptr_array_index(topo->devices, j);

            if (o != g && o->iommu_group == g->iommu_group &&
                g->iommu_group >= 0 && !o->is_bridge &&
                g_strcmp0(o->driver, "vfio-pci")) {
                g_string_append_printf(others, " %s(%s)", o->bdf,
                                       o->driver ? o->driver : "no driver");
            }
        }
        g_free(what);
        what = g_strdup_printf("%s IOMMU group", g->bdf);
        g_free(detail);
        detail = others->len ?
            g_strdup_printf("group %d also holds%s", g->iommu_group,
                            others->str) :
            g_strdup_printf("group %d is viable", g->iommu_group);
        item(&r, g->iommu_group < 0 ? ITEM_FAIL :
             others->len ? ITEM_FAIL : ITEM_OK, what, detail,
             "bind every device of the group to vfio-pci, or separate them "
             "(ACS on the path)");
    }
    for (i = 0; i < gpus->len; i++) {
        for (j = i + 1; j < gpus->len; j++) {
            const GpDevice *a = g_ptr_array_index(gpus, i);
            const GpDevice *b = g_ptr_array_index(gpus, j);
            g_autofree char *what = g_strdup_printf("P2P %s-%s", a->bdf + 5,
                                                    b->bdf + 5);
            g_autofree char *detail = NULL;
            GpP2pVerdict v;

            gp_p2p_verdict(topo, a, b, &v);
            detail = g_strdup_printf("%s (%s): %s", gp_p2p_kind_name(v.kind),
                gp_path_type_name(gp_path_classify(a, b)), v.reason);
            item(&r, gp_p2p_possible(v.kind) ? ITEM_OK : ITEM_WARN, what,
                 detail, v.kind == GP_P2P_UNKNOWN ? "run as root" :
                 "ACS redirect on the path: pci=disable_acs_redir=<ports> "
                 "(merges IOMMU groups), or use GPUs under one switch");
            gp_p2p_verdict_clear(&v);
        }
    }
    helper = path_in(topo, "module/gpup2p");
    item(&r, g_file_test(helper, G_FILE_TEST_IS_DIR) ? ITEM_OK : ITEM_WARN,
         "kernel helper", g_file_test(helper, G_FILE_TEST_IS_DIR) ?
         "gpup2p module loaded" : "gpup2p module not loaded (needed when "
         "the VMM's backend cannot map BARs, e.g. iommufd before 6.19)",
         "kernel/build.sh && insmod build/kernel/gpup2p.ko");
    {
        bool knows = qemu_knows_extension(qemu ? qemu : "qemu-system-x86_64",
                                          &why);

        item(&r, knows ? ITEM_OK : ITEM_WARN, "QEMU extension", why,
             "build it: hw/vfio-gpu-p2p/build-qemu.sh; or use "
             "'gpup2p libvirt --qemu-stock'");
    }
    for (i = 0; i < gpus->len; i++) {
        const GpDevice *g = g_ptr_array_index(gpus, i);
        guint64 total = 0;
        g_autofree char *what = g_strdup_printf("%s BARs", g->bdf);
        g_autofree char *detail = NULL;

        for (j = 0; j < g->bars->len; j++) {
            const GpBar *b = &g_array_index(g->bars, GpBar, j);

            total += b->is64 ? b->size : 0;
        }
        detail = g_strdup_printf("%" G_GUINT64_FORMAT " MiB of 64-bit BARs "
                                 "to fit in the guest's 64-bit PCI hole",
                                 total >> 20);
        item(&r, ITEM_OK, what, detail, NULL);
    }
    json_builder_end_array(jb);
    if (json) {
        g_autoptr(JsonNode) node = json_builder_get_root(jb);

        gp_cli_print_json(node);
    } else {
        printf("%u failed, %u warnings\n", r.fails, r.warns);
    }
    return r.fails ? GP_EXIT_FAILED : GP_EXIT_OK;
}
