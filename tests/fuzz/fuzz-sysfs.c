/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer target: the sysfs and cpuinfo parsers, end to end through
 * gp_topo_read() on a small tree whose files take the input. Fields are
 * separated by 0x1e: numa_node, resource, current_link_width, class,
 * iommu_group link text, proc/cpuinfo, config, local_cpulist, physfn link
 * text, gpup2p/kernel-verdicts (a snapshot's record of the kernel
 * module's verdicts, which gp_p2p_verdict() prefers). An absent field leaves the file out. A read either gives a
 * topology or an error with a message.
 */
#include <errno.h>
#include <glib/gstdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpup2p/p2p.h"
#include "gpup2p/snapshot.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *root, *dev_dir, *cpuinfo, *kernel_dir;

static const char *const fields[] = {
    "numa_node", "resource", "current_link_width", "class", "iommu_group",
    "cpuinfo", "config", "local_cpulist", "physfn", "kernel-verdicts",
};

static void put(const char *dir, const char *name, const char *text)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);

    if (!g_file_set_contents(path, text, -1, NULL)) {
        abort();
    }
}

static void cleanup(void)
{
    gp_remove_tree(root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    g_autofree char *devs = NULL, *link = NULL, *host = NULL;

    (void)argc;
    (void)argv;
    /* Memory-backed when possible: each input rewrites several files. */
    root = g_strdup("/dev/shm/gpup2p-fuzz-XXXXXX");
    if (!g_mkdtemp(root)) {
        g_free(root);
        root = g_dir_make_tmp("gpup2p-fuzz-XXXXXX", NULL);
    }
    devs = g_build_filename(root, "sys/bus/pci/devices", NULL);
    host = g_build_filename(root, "sys/devices/pci0000:00/0000:00:00.0",
                            NULL);
    dev_dir = g_build_filename(root, "sys/devices/pci0000:00/0000:00:01.0",
                               NULL);
    cpuinfo = g_build_filename(root, "proc", NULL);
    kernel_dir = g_build_filename(root, "gpup2p", NULL);
    if (g_mkdir_with_parents(kernel_dir, 0755) ||
        g_mkdir_with_parents(devs, 0755) ||
        g_mkdir_with_parents(host, 0755) ||
        g_mkdir_with_parents(dev_dir, 0755) ||
        g_mkdir_with_parents(cpuinfo, 0755)) {
        abort();
    }
    link = g_build_filename(devs, "0000:00:00.0", NULL);
    if (symlink("../../../devices/pci0000:00/0000:00:00.0", link)) {
        abort();
    }
    g_free(link);
    link = g_build_filename(devs, "0000:00:01.0", NULL);
    if (symlink("../../../devices/pci0000:00/0000:00:01.0", link)) {
        abort();
    }
    put(host, "vendor", "0x8086\n");
    put(host, "device", "0x29c0\n");
    put(host, "class", "0x060000\n");
    put(dev_dir, "vendor", "0x10de\n");
    put(dev_dir, "device", "0x2335\n");
    atexit(cleanup);
    return 0;
}

static void set_field(const char *name, const uint8_t *bytes, size_t len)
{
    bool proc = !strcmp(name, "cpuinfo");
    bool kernel = !strcmp(name, "kernel-verdicts");
    g_autofree char *path = g_build_filename(proc ? cpuinfo : kernel ?
                                             kernel_dir : dev_dir, name,
                                             NULL);
    g_autofree char *text = g_strndup((const char *)bytes, len);

    g_unlink(path);
    if (!bytes) {
        return;
    }
    if (!strcmp(name, "iommu_group") || !strcmp(name, "physfn")) {
        if (symlink(text, path) && errno != ENOENT) {
            abort();
        }
        return;
    }
    if (!g_file_set_contents(path, (const char *)bytes, (gssize)len, NULL)) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    GError *err = NULL;
    GpTopology *topo;
    g_autofree char *line = g_strndup((const char *)data, size);
    char bdf[GP_BDF_LEN];
    GpBar bar;
    size_t i;

    /* The one-line parsers, straight. */
    if (gp_bar_parse_resource_line(line, 0, &bar)) {
        g_assert(!bar.size || bar.start + (bar.size - 1) >= bar.start);
    }
    if (gp_bdf_normalize(line, bdf)) {
        char again[GP_BDF_LEN];

        /* dddd:bb:dd.f, with up to 8 domain digits (Intel VMD). */
        g_assert(strlen(bdf) >= 12 && strlen(bdf) < GP_BDF_LEN);
        g_assert(gp_bdf_normalize(bdf, again) && !strcmp(again, bdf));
    }

    for (i = 0; i < G_N_ELEMENTS(fields); i++) {
        const uint8_t *sep = p < end ? memchr(p, 0x1e, end - p) : NULL;
        size_t len = sep ? (size_t)(sep - p) : (size_t)(end - p);

        set_field(fields[i], p < end || i == 0 ? p : NULL,
                  p < end ? len : 0);
        p = sep ? sep + 1 : end;
    }
    topo = gp_topo_read(root, &err);
    if (topo) {
        GpDevice *a = gp_topo_find(topo, "0000:00:00.0");
        GpDevice *b = gp_topo_find(topo, "0000:00:01.0");
        GpP2pVerdict v;

        g_assert(a && !err);
        if (b) {
            gp_p2p_verdict(topo, a, b, &v);
            gp_p2p_verdict_clear(&v);
        } else {
            /* Left out only as a device going away (its class file is
             * missing, as while sysfs removes it), and named so. */
            g_assert(gp_topo_device_gone(topo, "0000:00:01.0"));
        }
        gp_topo_free(topo);
    } else {
        g_assert(err && err->message[0]);
        g_clear_error(&err);
    }
    return 0;
}
