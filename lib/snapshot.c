/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Capture the PCI part of sysfs in the shape gp_topo_read() reads. */
/* syncfs(); QEMU's build already defines it on the command line */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "gpup2p/module-client.h"
#include "gpup2p/snapshot.h"
#include "gpup2p/topo.h"
#include "sysfs-internal.h"

static const char *const device_attrs[] = {
    "vendor", "device", "class", "revision", "subsystem_vendor",
    "subsystem_device", "numa_node", "local_cpulist", "local_cpus",
    "resource", "current_link_speed", "current_link_width",
    "max_link_speed", "max_link_width", "secondary_bus_number",
    "subordinate_bus_number", "config", "enable", "ari_enabled",
    "power_state",
};

static const char *const device_links[] = {
    "driver", "iommu_group", "physfn",
};

/*
 * Files go into the snapshot's private directory without a flush each
 * (hundreds of fsyncs took minutes on a busy disk or a 9p share); the
 * whole directory is flushed once before it is renamed into place.
 */
#define SNAPSHOT_WRITE G_FILE_SET_CONTENTS_NONE

static gboolean flush_tree(const char *dir, const char *dest, GError **errp)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int saved;

    if (fd < 0 || syncfs(fd) < 0) {
        saved = errno;
        if (fd >= 0) {
            close(fd);
        }
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: cannot flush %s: %s",
                    dest, dir, g_strerror(saved));
        return FALSE;
    }
    close(fd);
    return TRUE;
}

static gboolean copy_file(const char *src, const char *dst, GError **errp)
{
    g_autofree gchar *data = NULL;
    gsize len;

    if (!g_file_get_contents(src, &data, &len, NULL)) {
        return TRUE;    /* absent or unreadable attributes are skipped */
    }
    return g_file_set_contents_full(dst, data, (gssize)len,
                                    SNAPSHOT_WRITE, 0644,
                                    errp);
}

/*
 * Of config space, only what the reader's walks use (header, capability
 * chains, ACS registers), zero elsewhere: the snapshot never holds, and
 * the capture never reads, the rest of a device's 4 KiB.
 */
static gboolean copy_config(const char *src, const char *dst, GError **errp)
{
    g_autofree GpPciConfig *cfg = g_new0(GpPciConfig, 1);

    if (!gp_sysfs_read_config(src, cfg, NULL)) {
        return TRUE;    /* as other unreadable attributes: skipped */
    }
    return g_file_set_contents_full(dst, (const gchar *)cfg->bytes,
                                    (gssize)cfg->len,
                                    SNAPSHOT_WRITE, 0644,
                                    errp);
}

static gboolean make_link(const char *src, const char *dst, GError **errp)
{
    g_autofree char *text = gp_sysfs_read_link_text(src);

    if (!text) {
        return TRUE;
    }
    if (symlink(text, dst) < 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: cannot create link: %s",
                    dst, g_strerror(errno));
        return FALSE;
    }
    return TRUE;
}

static gboolean mkdirs(const char *path, GError **errp)
{
    if (g_mkdir_with_parents(path, 0755) < 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: cannot create: %s",
                    path, g_strerror(errno));
        return FALSE;
    }
    return TRUE;
}

static gboolean copy_device(const char *sys, const char *out_sys,
                            const char *rel, GError **errp)
{
    g_autofree char *src = g_build_filename(sys, rel, NULL);
    g_autofree char *dst = g_build_filename(out_sys, rel, NULL);
    size_t i;

    if (!mkdirs(dst, errp)) {
        return FALSE;
    }

    for (i = 0; i < G_N_ELEMENTS(device_attrs); i++) {
        g_autofree char *s = g_build_filename(src, device_attrs[i], NULL);
        g_autofree char *d = g_build_filename(dst, device_attrs[i], NULL);

        if (!strcmp(device_attrs[i], "config")) {
            continue;           /* copy_configs(), once all is known */
        }
        if (!copy_file(s, d, errp)) {
            return FALSE;
        }
    }
    for (i = 0; i < G_N_ELEMENTS(device_links); i++) {
        g_autofree char *s = g_build_filename(src, device_links[i], NULL);
        g_autofree char *d = g_build_filename(dst, device_links[i], NULL);

        if (!make_link(s, d, errp)) {
            return FALSE;
        }
    }
    return TRUE;
}

static gboolean copy_links_dir(const char *sys, const char *out_sys,
                               const char *rel, gboolean devices,
                               GError **errp)
{
    g_autofree char *src = g_build_filename(sys, rel, NULL);
    g_autofree char *dst = g_build_filename(out_sys, rel, NULL);
    g_autoptr(GDir) dir = g_dir_open(src, 0, NULL);
    const char *name;

    if (!dir) {
        return TRUE;
    }
    if (!mkdirs(dst, errp)) {
        return FALSE;
    }
    while ((name = g_dir_read_name(dir))) {
        g_autofree char *s = g_build_filename(src, name, NULL);
        g_autofree char *d = g_build_filename(dst, name, NULL);
        g_autofree char *text = gp_sysfs_read_link_text(s);
        g_autofree char *target = NULL;

        if (!text) {
            continue;
        }
        if (symlink(text, d) < 0) {
            g_set_error(errp, GP_ERROR, GP_ERROR_IO,
                        "%s: cannot create link: %s", d, g_strerror(errno));
            return FALSE;
        }
        target = gp_sysfs_resolve(rel, text);
        if (devices && target && g_str_has_prefix(target, "devices/pci") &&
            !copy_device(sys, out_sys, target, errp)) {
            return FALSE;
        }
    }
    return TRUE;
}

/* @rel's config (sparse: copy_config), unless the device is in D3cold. */
static gboolean copy_device_config(const char *sys, const char *out_sys,
                                   const char *rel, GError **errp)
{
    g_autofree char *src = g_build_filename(sys, rel, NULL);
    g_autofree char *dst = g_build_filename(out_sys, rel, "config", NULL);
    g_autofree char *power = g_build_filename(src, "power_state", NULL);
    g_autofree char *cfg = g_build_filename(src, "config", NULL);
    g_autofree gchar *state = NULL;

    /* A device in D3cold keeps its sleep: its config space is not read
     * (the reader then marks it unreadable, and says why). */
    if (g_file_get_contents(power, &state, NULL, NULL) &&
        g_str_has_prefix(state, "D3cold")) {
        return TRUE;
    }
    return copy_config(cfg, dst, errp);
}

/*
 * The capture in @tmp as its readers will read it, or NULL and why: a
 * capture the reader refuses is no snapshot. Sysfs is read piece by piece
 * (bus/pci/devices, then kernel/iommu_groups...); a device that comes or
 * goes meanwhile (gone, or an iommu_group link to a group the capture
 * lacks) marks only itself there, as it would live.
 */
static GpTopology *read_capture(const char *tmp, GError **errp)
{
    GpTopology *topo = gp_topo_read(tmp, errp);

    if (!topo) {
        g_prefix_error(errp, "the capture is not one gpup2p can read (did "
                       "a device come or go while it was taken? take it "
                       "again); nothing was written: ");
    }
    return topo;
}

/*
 * Config space of every PCI function of the capture (gp_topo_read() run
 * over it so far), bridges included, not only of those on GPU and NIC
 * paths: a reader of named devices (`topo --devices`, `plan --devices`)
 * or of all (`--all`) reads the config of others too, and must find in
 * the snapshot what it finds on the host. lspci -xxxx reads all of them,
 * and more of each. As for a GPU or NIC, a device in D3cold is not woken
 * and one whose config cannot be read is skipped (its reader then says
 * so): neither fails the snapshot. A capture the reader refuses fails
 * here.
 */
static gboolean copy_configs(const char *sys, const char *tmp, GError **errp)
{
    g_autoptr(GpTopology) topo = read_capture(tmp, errp);
    g_autofree char *out_sys = g_build_filename(tmp, "sys", NULL);
    guint i;

    if (!topo) {
        return FALSE;
    }
    for (i = 0; i < topo->devices->len; i++) {
        const GpDevice *dev = g_ptr_array_index(topo->devices, i);

        if (!copy_device_config(sys, out_sys, dev->sysfs_path, errp)) {
            return FALSE;
        }
    }
    return TRUE;
}

/* The whole capture, config space and verdicts too, read once more before
 * it takes its place. */
static gboolean check_capture(const char *tmp, GError **errp)
{
    g_autoptr(GpTopology) topo = read_capture(tmp, errp);

    return topo != NULL;
}

static gboolean copy_numa(const char *sys, const char *out_sys, GError **errp)
{
    g_autofree char *src = g_build_filename(sys, "devices/system/node", NULL);
    g_autoptr(GDir) dir = g_dir_open(src, 0, NULL);
    const char *name;

    if (!dir) {
        return TRUE;
    }
    while ((name = g_dir_read_name(dir))) {
        g_autofree char *rel = NULL;
        g_autofree char *dst = NULL;
        const char *files[] = { "cpulist", "distance" };
        size_t i;

        if (!g_str_has_prefix(name, "node") || !g_ascii_isdigit(name[4])) {
            continue;
        }
        rel = g_build_filename("devices/system/node", name, NULL);
        dst = g_build_filename(out_sys, rel, NULL);
        if (!mkdirs(dst, errp)) {
            return FALSE;
        }
        for (i = 0; i < G_N_ELEMENTS(files); i++) {
            g_autofree char *s = g_build_filename(sys, rel, files[i], NULL);
            g_autofree char *d = g_build_filename(dst, files[i], NULL);

            if (!copy_file(s, d, errp)) {
                return FALSE;
            }
        }
    }
    return TRUE;
}

/*
 * kernel/iommu_groups: each group's directory and its devices links (kept
 * relative, as sysfs has them), so that a reader of the snapshot refuses
 * an iommu_group link to a group the host did not have, as on the host.
 * A host without an IOMMU has the directory empty, and so has the copy.
 */
static gboolean copy_iommu_groups(const char *sys, const char *out_sys,
                                  GError **errp)
{
    g_autofree char *src = g_build_filename(sys, "kernel/iommu_groups", NULL);
    g_autofree char *dst = g_build_filename(out_sys, "kernel/iommu_groups",
                                            NULL);
    g_autoptr(GDir) dir = g_dir_open(src, 0, NULL);
    const char *name;

    if (!dir) {
        return TRUE;
    }
    if (!mkdirs(dst, errp)) {
        return FALSE;
    }
    while ((name = g_dir_read_name(dir))) {
        g_autofree char *group = g_build_filename(dst, name, NULL);
        g_autofree char *rel = NULL;
        guint64 n;

        if (!g_ascii_string_to_unsigned(name, 10, 0, G_MAXINT, &n, NULL)) {
            continue;   /* not a group: the reader reads numbers only */
        }
        rel = g_build_filename("kernel/iommu_groups", name, "devices", NULL);
        if (!mkdirs(group, errp) ||
            !copy_links_dir(sys, out_sys, rel, FALSE, errp)) {
            return FALSE;
        }
    }
    return TRUE;
}

/* The first processor's block: vendor and family decide P2P forwarding. */
static gboolean copy_cpuinfo(const char *root, const char *out, GError **errp)
{
    g_autofree char *src = g_build_filename(root, "proc", "cpuinfo", NULL);
    g_autofree char *dir = g_build_filename(out, "proc", NULL);
    g_autofree char *dst = g_build_filename(dir, "cpuinfo", NULL);
    g_autofree gchar *text = NULL;
    char *end;

    if (!g_file_get_contents(src, &text, NULL, NULL)) {
        return TRUE;
    }
    end = strstr(text, "\n\n");
    if (end) {
        end[1] = '\0';
    }
    return mkdirs(dir, errp) &&
           g_file_set_contents_full(dst, text, -1,
                                    SNAPSHOT_WRITE, 0644,
                                    errp);
}

/* The kernel's release: `check --domain` predicts a VM's start from it. */
static gboolean copy_osrelease(const char *root, const char *out,
                               GError **errp)
{
    g_autofree char *src = g_build_filename(root, "proc", "sys", "kernel",
                                            "osrelease", NULL);
    g_autofree char *dir = g_build_filename(out, "proc", "sys", "kernel",
                                            NULL);
    g_autofree char *dst = g_build_filename(dir, "osrelease", NULL);
    g_autofree gchar *text = NULL;

    if (!g_file_get_contents(src, &text, NULL, NULL)) {
        return TRUE;
    }
    return mkdirs(dir, errp) &&
           g_file_set_contents_full(dst, text, -1, SNAPSHOT_WRITE, 0644,
                                    errp);
}

/* Interrupt chips: "IR-" ones tell that interrupt remapping is on. */
static gboolean copy_interrupts(const char *root, const char *out,
                                GError **errp)
{
    g_autofree char *src = g_build_filename(root, "proc", "interrupts", NULL);
    g_autofree char *dir = g_build_filename(out, "proc", NULL);
    g_autofree char *dst = g_build_filename(dir, "interrupts", NULL);

    return mkdirs(dir, errp) && copy_file(src, dst, errp);
}

/* The devices cliques are planned for: their pairs' verdicts are kept. */
static bool kernel_verdict_device(const GpDevice *dev)
{
    return dev->domain <= GPUP2P_PCI_DOMAIN_MAX &&
           (gp_device_is_gpu(dev) || gp_device_is_nic(dev));
}

/*
 * The GP_KERNEL_VERDICTS_FILE text for every ordered pair of @topo's GPUs
 * and NICs, each asked of @ask. A pair the module cannot answer (ENODEV
 * for a device it no longer finds, or any other error) is recorded as
 * that pair's unknown with the error, and the others are still asked: one
 * odd device never fails the snapshot.
 */
char *gp_kernel_verdicts_format(const GpTopology *topo, bool from_p2pdma,
                                GpKernelAsk ask, void *ctx)
{
    g_autoptr(GString) out = NULL;
    guint i, j;

    out = g_string_new("# gpup2p kernel verdicts: A B bare-metal distance "
                       "guest out_flags (kernel/include/uapi/gpup2p.h); "
                       "a pair the module could not answer: A B unknown 0 "
                       "unknown 0x0 ERROR\n");
    g_string_append_printf(out, "source %s\n", from_p2pdma ? "p2pdma" :
                           "rule");
    for (i = 0; i < topo->devices->len; i++) {
        const GpDevice *a = g_ptr_array_index(topo->devices, i);

        for (j = 0; kernel_verdict_device(a) && j < topo->devices->len;
             j++) {
            const GpDevice *b = g_ptr_array_index(topo->devices, j);
            struct gpup2p_verdict v = { 0 };
            g_autoptr(GError) err = NULL;

            if (a == b || !kernel_verdict_device(b)) {
                continue;
            }
            v.a = GPUP2P_PCI_ADDR(a->domain, a->bus,
                                  (a->slot << 3) | a->function);
            v.b = GPUP2P_PCI_ADDR(b->domain, b->bus,
                                  (b->slot << 3) | b->function);
            if (!ask(ctx, &v, &err)) {
                /* This pair alone is unknown: readers say why. */
                g_strdelimit(err->message, "\r\n", ' ');
                g_string_append_printf(out, "%s %s unknown 0 unknown 0x0 "
                                       "%s\n", a->bdf, b->bdf,
                                       err->message);
                g_clear_error(&err);
                continue;
            }
            if (!gp_kernel_kind_name(v.verdict) ||
                !gp_kernel_vm_kind_name(v.vm_verdict)) {
                continue;       /* a newer module's code: the rule decides */
            }
            g_string_append_printf(out, "%s %s %s %u %s 0x%x\n", a->bdf,
                                   b->bdf, gp_kernel_kind_name(v.verdict),
                                   v.distance,
                                   gp_kernel_vm_kind_name(v.vm_verdict),
                                   v.out_flags);
        }
    }
    return g_string_free(g_steal_pointer(&out), FALSE);
}

static bool ask_module(void *ctx, struct gpup2p_verdict *v, GError **errp)
{
    return gp_module_verdict(*(int *)ctx, v, errp);
}

/*
 * With the kernel module loaded (/dev/gpup2p), its verdicts on every
 * ordered pair of GPUs and NICs, into GP_KERNEL_VERDICTS_FILE; readers of
 * the capture prefer them (lib/p2p.c), since on a kernel with p2pdma they
 * are the running kernel's own answer. Only of the live system, and only
 * where the module can be opened: without it the capture has no such
 * file and the library's rule decides, as always.
 */
static gboolean copy_kernel_verdicts(const char *root, const char *tmp,
                                     GError **errp)
{
    g_autofree char *dst = g_build_filename(tmp, GP_KERNEL_VERDICTS_FILE,
                                            NULL);
    g_autofree char *dir = g_path_get_dirname(dst);
    g_autoptr(GpTopology) topo = NULL;
    g_autofree char *text = NULL;
    struct gpup2p_info info;
    int fd;

    if (strcmp(root, "/") != 0 ||
        !g_file_test("/dev/" GPUP2P_DEVICE_NAME, G_FILE_TEST_EXISTS)) {
        return TRUE;
    }
    fd = gp_module_open(NULL);
    if (fd < 0) {
        return TRUE;
    }
    topo = gp_topo_read(tmp, errp);
    if (topo && gp_module_info(fd, &info, errp)) {
        text = gp_kernel_verdicts_format(topo,
                                         info.caps & GPUP2P_CAP_P2PDMA,
                                         ask_module, &fd);
    }
    close(fd);
    return text && mkdirs(dir, errp) &&
           g_file_set_contents_full(dst, text, -1, SNAPSHOT_WRITE, 0644,
                                    errp);
}

void gp_remove_tree(const char *path)
{
    g_autoptr(GDir) dir = g_dir_open(path, 0, NULL);
    const char *name;

    if (dir) {
        while ((name = g_dir_read_name(dir))) {
            g_autofree char *child = g_build_filename(path, name, NULL);

            if (g_file_test(child, G_FILE_TEST_IS_DIR) &&
                !g_file_test(child, G_FILE_TEST_IS_SYMLINK)) {
                gp_remove_tree(child);
            } else {
                g_unlink(child);
            }
        }
    }
    g_rmdir(path);
}

gboolean gp_snapshot_write(const char *root, const char *dest, GError **errp)
{
    g_autofree char *sys = g_build_filename(root, "sys", NULL);
    g_autofree char *parent = g_path_get_dirname(dest);
    g_autofree char *base = g_path_get_basename(dest);
    g_autofree char *tmpl = NULL;
    g_autofree char *tmp = NULL;
    g_autofree char *out_sys = NULL;
    g_autofree char *probe = g_build_filename(sys, "bus/pci/devices", NULL);

    if (g_file_test(dest, G_FILE_TEST_EXISTS)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "%s already exists; a snapshot goes into a new directory",
                    dest);
        return FALSE;
    }
    if (!g_file_test(probe, G_FILE_TEST_IS_DIR)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND,
                    "%s: no PCI devices to capture", probe);
        return FALSE;
    }
    tmpl = g_strdup_printf(".%s.XXXXXX", base);
    tmp = g_build_filename(parent, tmpl, NULL);
    if (!g_mkdtemp(tmp)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO,
                    "%s: cannot create a directory beside it: %s", dest,
                    g_strerror(errno));
        return FALSE;
    }
    out_sys = g_build_filename(tmp, "sys", NULL);
    if (!copy_links_dir(sys, out_sys, "bus/pci/devices", TRUE, errp) ||
        !copy_links_dir(sys, out_sys, "class/pci_bus", FALSE, errp) ||
        /* RDMA devices: which NICs GPUDirect RDMA pairs (lib/rdma.c). */
        !copy_links_dir(sys, out_sys, "class/infiniband", FALSE, errp) ||
        !copy_numa(sys, out_sys, errp) ||
        !copy_iommu_groups(sys, out_sys, errp) ||
        !copy_cpuinfo(root, tmp, errp) ||
        !copy_osrelease(root, tmp, errp) ||
        !copy_interrupts(root, tmp, errp) ||
        !copy_configs(sys, tmp, errp) ||
        !copy_kernel_verdicts(root, tmp, errp) ||
        !check_capture(tmp, errp) ||
        !flush_tree(tmp, dest, errp)) {
        gp_remove_tree(tmp);
        return FALSE;
    }
    if (g_chmod(tmp, 0755) < 0 || g_rename(tmp, dest) < 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "%s: cannot move into "
                    "place: %s", dest, g_strerror(errno));
        gp_remove_tree(tmp);
        return FALSE;
    }
    return TRUE;
}
