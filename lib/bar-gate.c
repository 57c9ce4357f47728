/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The BAR gate: will a GPU's BARs be mapped in the IOMMU for a VM's
 * peers? Host facts (kernel, config, container, IOMMU) against the VM's
 * (VMM, backend, x-no-mmap, vIOMMU, 64-bit window). The sysfs parts are
 * read by lib/sysfs.c, the only reader of sysfs.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gpup2p/bar-gate.h"

bool gp_release_version(const char *release, unsigned *major,
                        unsigned *minor)
{
    const char *p = release;
    char *end;
    guint64 a, b;

    if (!p || !g_ascii_isdigit(*p)) {
        return false;
    }
    a = g_ascii_strtoull(p, &end, 10);
    if (*end != '.' || !g_ascii_isdigit(end[1])) {
        return false;
    }
    b = g_ascii_strtoull(end + 1, &end, 10);
    if (a > 1000 || b > 1000) {
        return false;
    }
    *major = (unsigned)a;
    *minor = (unsigned)b;
    return true;
}

/* "y", "m" or another value of @sym in a kernel config; NULL unset. */
static char *config_value(const char *config, const char *sym)
{
    g_autofree char *key = g_strdup_printf("\n%s=", sym);
    g_autofree char *text = g_strconcat("\n", config, NULL);
    const char *p = strstr(text, key);
    const char *e;

    if (!p) {
        return NULL;
    }
    p += strlen(key);
    e = strchr(p, '\n');
    return g_strndup(p, e ? (gsize)(e - p) : strlen(p));
}

static bool config_on(const char *config, const char *sym)
{
    g_autofree char *v = config_value(config, sym);

    return v && (!strcmp(v, "y") || !strcmp(v, "m"));
}

/*
 * What /dev/vfio/vfio is: the running kernel proves it (a loaded module,
 * or a working container that vfio_iommu_type1 does not serve: sys/module
 * lists it whenever it is loaded or built in, as it has parameters), else
 * the config, which may not be the running kernel's (a rebuilt release).
 */
static void decide_container(GpBarGateHost *h)
{
    g_free(h->container_why);
    if (gp_sysfs_module_loaded(h->root, "vfio_iommu_type1")) {
        h->container = GP_VFIO_CONTAINER_TYPE1;
        h->container_why = g_strdup("sys/module/vfio_iommu_type1: VFIO's "
                                    "own type1 container is loaded");
    } else if (h->container_open &&
               gp_sysfs_module_loaded(h->root, "iommufd")) {
        h->container = GP_VFIO_CONTAINER_EMULATED;
        h->container_why = g_strdup("a VFIO container is open, and "
                                    "sys/module has iommufd but not "
                                    "vfio_iommu_type1");
    } else if (h->config && config_on(h->config,
                                      "CONFIG_IOMMUFD_VFIO_CONTAINER")) {
        h->container = GP_VFIO_CONTAINER_EMULATED;
        h->container_why = g_strdup_printf("CONFIG_IOMMUFD_VFIO_CONTAINER=y "
                                           "in %s", h->config_path);
    } else if (h->config && config_on(h->config, "CONFIG_VFIO_IOMMU_TYPE1")) {
        h->container = GP_VFIO_CONTAINER_TYPE1;
        h->container_why = g_strdup_printf("CONFIG_VFIO_IOMMU_TYPE1 in %s",
                                           h->config_path);
    } else if (h->config) {
        h->container = GP_VFIO_CONTAINER_NONE;
        h->container_why = g_strdup_printf("%s builds neither "
                                           "CONFIG_VFIO_IOMMU_TYPE1 nor "
                                           "CONFIG_IOMMUFD_VFIO_CONTAINER",
                                           h->config_path);
    } else if (gp_sysfs_module_loaded(h->root, "iommufd")) {
        h->container = GP_VFIO_CONTAINER_UNKNOWN;
        h->container_why = g_strdup("vfio_iommu_type1 is not under "
                                    "sys/module and iommufd is: /dev/vfio/"
                                    "vfio may be iommufd's emulated "
                                    "container, and no kernel config is "
                                    "readable to say");
    } else {
        h->container = GP_VFIO_CONTAINER_UNKNOWN;
        h->container_why = g_strdup("neither vfio_iommu_type1 nor iommufd "
                                    "is under sys/module (not loaded yet, "
                                    "or a capture, which records no "
                                    "modules) and no kernel config is "
                                    "readable (proc/config.gz, "
                                    "boot/config-RELEASE)");
    }
}

/*
 * VFIO dma-buf export: Linux 6.19 with CONFIG_VFIO_PCI_DMABUF. A readable
 * config decides whatever the release says (a vendor kernel may backport
 * the export to an older one); the release alone proves nothing.
 */
static void decide_dmabuf(GpBarGateHost *h)
{
    unsigned major, minor;
    const char *rel = h->release ? h->release : "(release not known)";

    g_free(h->dmabuf_why);
    if (h->config && config_on(h->config, "CONFIG_VFIO_PCI_DMABUF")) {
        h->dmabuf = GP_TRI_YES;
        h->dmabuf_why = g_strdup_printf("Linux %s with "
                                        "CONFIG_VFIO_PCI_DMABUF=y in %s",
                                        rel, h->config_path);
    } else if (h->config) {
        h->dmabuf = GP_TRI_NO;
        h->dmabuf_why = g_strdup_printf("Linux %s is built without "
                                        "CONFIG_VFIO_PCI_DMABUF (%s; it "
                                        "needs PCI_P2PDMA, and kernels "
                                        "before 6.19 lack it), so it "
                                        "exports no BAR as a dma-buf", rel,
                                        h->config_path);
    } else if (!gp_release_version(h->release, &major, &minor)) {
        h->dmabuf = GP_TRI_UNKNOWN;
        h->dmabuf_why = g_strdup_printf("the kernel's release is %s and no "
                                        "kernel config is readable, so its "
                                        "VFIO dma-buf export (Linux 6.19+, "
                                        "CONFIG_VFIO_PCI_DMABUF) is not "
                                        "known", h->release ? h->release :
                                        "not known (no "
                                        "proc/sys/kernel/osrelease)");
    } else if (major < GP_LINUX_DMABUF_MAJOR ||
               (major == GP_LINUX_DMABUF_MAJOR &&
                minor < GP_LINUX_DMABUF_MINOR)) {
        h->dmabuf = GP_TRI_UNKNOWN;
        h->dmabuf_why = g_strdup_printf("Linux %s predates VFIO's dma-buf "
                                        "export (6.19), but a vendor kernel "
                                        "may backport it, and no kernel "
                                        "config is readable (proc/"
                                        "config.gz, boot/config-%s) to tell "
                                        "CONFIG_VFIO_PCI_DMABUF", h->release,
                                        h->release);
    } else {
        h->dmabuf = GP_TRI_UNKNOWN;
        h->dmabuf_why = g_strdup_printf("Linux %s may export BARs as "
                                        "dma-bufs, but no kernel config is "
                                        "readable (proc/config.gz, "
                                        "boot/config-%s) to tell "
                                        "CONFIG_VFIO_PCI_DMABUF",
                                        h->release, h->release);
    }
}

static void decide_cdev(GpBarGateHost *h)
{
    if (h->config) {
        h->iommufd_cdev = config_on(h->config, "CONFIG_VFIO_DEVICE_CDEV") ?
                          GP_TRI_YES : GP_TRI_NO;
    } else {
        h->iommufd_cdev = gp_sysfs_has_vfio_cdevs(h->root) ? GP_TRI_YES :
                          GP_TRI_UNKNOWN;
    }
}

static void host_decide(GpBarGateHost *h)
{
    decide_container(h);
    decide_dmabuf(h);
    decide_cdev(h);
}

GpBarGateHost *gp_bar_gate_host_read(const char *root)
{
    GpBarGateHost *h = g_new0(GpBarGateHost, 1);

    h->root = g_strdup(root);
    h->release = gp_sysfs_kernel_release(root);
    if (h->release) {
        g_autofree char *name = g_strdup_printf("config-%s", h->release);

        h->config_path = g_build_filename(root, "boot", name, NULL);
        if (!g_file_get_contents(h->config_path, &h->config, NULL, NULL)) {
            g_clear_pointer(&h->config_path, g_free);
        }
    }
    host_decide(h);
    return h;
}

void gp_bar_gate_host_set_config(GpBarGateHost *host, const char *text,
                                 const char *path)
{
    g_free(host->config);
    g_free(host->config_path);
    host->config = g_strdup(text);
    host->config_path = g_strdup(path);
    host_decide(host);
}

void gp_bar_gate_host_container_open(GpBarGateHost *host)
{
    if (!host->container_open) {
        host->container_open = true;
        decide_container(host);
    }
}

void gp_bar_gate_host_free(GpBarGateHost *host)
{
    if (!host) {
        return;
    }
    g_free(host->root);
    g_free(host->container_why);
    g_free(host->release);
    g_free(host->config);
    g_free(host->config_path);
    g_free(host->dmabuf_why);
    g_free(host);
}

const char *gp_bar_gate_verdict_name(GpBarGateVerdict v)
{
    switch (v) {
    case GP_BAR_GATE_MAPPED:
        return "mapped";
    case GP_BAR_GATE_NOT_MAPPED:
        return "not mapped";
    default:
        return "unknown";
    }
}

/* What the whole container shares: one IOVA space for every GPU. */
typedef struct {
    unsigned iommu_bits;        /* the narrowest; 0: unknown */
    char *iommu_why;
    bool window_known;
    uint64_t win_start, win_end;    /* inclusive */
    uint64_t fw_end;            /* where firmware may move it; 0: nowhere */
    char *window_why;
    char *window_how;           /* how the window is known, for texts */
    char *window_note;          /* why it is still no proof */
    char *estimate_why;         /* the window is an estimate: why */
    GArray *reserved;           /* GpRange, of every GPU's group */
    GPtrArray *reserved_groups; /* the group of each, as int */
    char *reserved_why;
} Space;

static void space_clear(Space *s)
{
    g_free(s->iommu_why);
    g_free(s->window_why);
    g_free(s->window_how);
    g_free(s->window_note);
    g_free(s->estimate_why);
    g_free(s->reserved_why);
    if (s->reserved) {
        g_array_unref(s->reserved);
    }
    if (s->reserved_groups) {
        g_ptr_array_unref(s->reserved_groups);
    }
}

/*
 * Where the guest may place 64-bit BARs: the machine's pci-hole64 as QEMU
 * places it before firmware runs (gp_pc_window(): exact for q35 and
 * i440fx, bounds where only the machine type or the vendor leaves it
 * open, all from 4 GiB up for a distribution's type, else an estimate,
 * itself an unknown), up to the top of the guest's address space,
 * and, as our QEMU judges its declared window, that top (at most 46
 * bits) to which either firmware may move it. Firmware places the BARs,
 * so nothing is proven from it.
 */
static void space_window(Space *s, const GpBarGateVm *vm)
{
    g_auto(GpPcWindow) w = { 0 };
    GpPcMachine machine;
    uint64_t top;

    if (!vm->guest_phys_bits || vm->guest_phys_bits > 63) {
        s->window_why = g_strdup("the guest's address width is not known, "
                                 "so neither is where its 64-bit BAR "
                                 "window ends");
        return;
    }
    machine = vm->machine;
    if (!machine.qemu_major) {
        /* What "q35" and "pc" alias is the running QEMU's latest. */
        machine.qemu_major = vm->vmm == GP_VMM_OURS ? 10 :
                             vm->vmm == GP_VMM_STOCK ? vm->qemu_major : 0;
        machine.qemu_minor = vm->vmm == GP_VMM_OURS ? 0 :
                             vm->vmm == GP_VMM_STOCK ? vm->qemu_minor : 0;
    }
    gp_pc_window(&machine, &w);
    top = (1ULL << vm->guest_phys_bits) - 1;
    if (w.end >= w.start && w.exact && !machine.no_long_mode &&
        w.last_used > top) {
        s->estimate_why = g_strdup_printf("the guest's 64-bit BAR window "
                                          "%s, 0x%" PRIx64 "-0x%" PRIx64
                                          ", reaches past the guest's "
                                          "%u-bit address space: QEMU "
                                          "refuses to start the VM "
                                          "(\"phys-bits too low\")",
                                          w.how, w.start, w.end,
                                          vm->guest_phys_bits);
        return;
    }
    if (w.end >= w.start && w.start > top) {
        s->estimate_why = g_strdup_printf("the guest's 64-bit BAR window "
                                          "%s, 0x%" PRIx64 "-0x%" PRIx64
                                          ", starts past the guest's "
                                          "%u-bit address space",
                                          w.exact ? w.how : w.bounds ?
                                          "as bounded" : "as estimated",
                                          w.start, w.end,
                                          vm->guest_phys_bits);
        return;
    }
    if (w.end < w.start) {
        s->estimate_why = g_strdup("the domain's <pcihole64> is 0: QEMU "
                                   "declares no 64-bit window, so where "
                                   "firmware puts 64-bit BARs is not known");
        return;
    }
    s->window_known = true;
    s->win_start = w.start;
    s->win_end = MIN(top, w.end);
    s->fw_end = gp_bar_gate_firmware_top(vm->guest_phys_bits);
    s->window_note = g_strdup(GP_FIRMWARE_PLACES_NOTE);
    if (w.exact) {
        s->window_how = g_steal_pointer(&w.how);
    } else if (w.layout_assumed) {
        /*
         * Upstream's layout bounds nothing a distribution may change: a
         * "mapped" rests on all the guest may address above 4 GiB.
         */
        s->win_end = top;
        s->window_how = g_strdup_printf("as bounded (anywhere from 4 GiB "
                                        "to the top of the %u-bit address "
                                        "space the guest may have: machine "
                                        "type '%s' is a distribution's, "
                                        "whose memory layout and CPU "
                                        "defaults are not read here)",
                                        vm->guest_phys_bits, machine.type);
    } else if (w.bounds) {
        /* Every window QEMU could declare lies inside: judged as one. */
        s->window_how = g_strdup_printf("as bounded (every window QEMU "
                                        "could declare, as %s)", w.why);
    } else {
        s->window_how = g_strdup("as estimated");
        s->estimate_why = g_strdup_printf("where QEMU places the guest's "
                                          "64-bit BAR window is estimated "
                                          "(0x%" PRIx64 "-0x%" PRIx64 "), "
                                          "as %s", s->win_start, s->win_end,
                                          w.why);
    }
}

static void space_read(Space *s, const GpBarGateHost *host,
                       const GpBarGateVm *vm, const GpBarGateGpu *gpus,
                       unsigned n)
{
    unsigned i, j;

    space_window(s, vm);
    s->reserved = g_array_new(FALSE, FALSE, sizeof(GpRange));
    s->reserved_groups = g_ptr_array_new();
    for (i = 0; i < n; i++) {
        g_autofree char *why = NULL, *rwhy = NULL;
        unsigned bits = gp_iommu_address_bits(host->root, gpus[i].dev, &why);
        g_autoptr(GArray) r = NULL;

        if (!bits && !s->iommu_why) {
            s->iommu_why = g_steal_pointer(&why);
        }
        if (bits && (!s->iommu_bits || bits < s->iommu_bits)) {
            s->iommu_bits = bits;
        }
        if (gpus[i].dev->iommu_group < 0) {
            continue;
        }
        r = gp_iommu_group_reserved(host->root, gpus[i].dev->iommu_group,
                                    &rwhy);
        if (!r) {
            if (!s->reserved_why) {
                s->reserved_why = g_steal_pointer(&rwhy);
            }
            continue;
        }
        for (j = 0; j < r->len; j++) {
            g_array_append_val(s->reserved, g_array_index(r, GpRange, j));
            g_ptr_array_add(s->reserved_groups,
                            GINT_TO_POINTER(gpus[i].dev->iommu_group));
        }
    }
    if (s->iommu_why) {
        s->iommu_bits = 0;      /* the container's width is the narrowest */
    }
}

/* The largest memory BAR of @dev, its index in @index. */
static uint64_t largest_bar(const GpDevice *dev, unsigned *index)
{
    uint64_t size = 0;
    guint i;

    for (i = 0; dev->bars && i < dev->bars->len; i++) {
        const GpBar *b = &g_array_index(dev->bars, GpBar, i);

        if (!b->io && b->size > size) {
            size = b->size;
            *index = b->index;
        }
    }
    return size;
}

void gp_bar_gate_add_unknown(GString *unknown, const char *why)
{
    g_string_append_printf(unknown, "%s%s", unknown->len ? "; " : "", why);
}

/* An unknown of the gate, and where it could be settled. */
typedef struct {
    GString *text;
    unsigned from;              /* GP_BAR_GATE_UNKNOWN_* */
} Unknowns;

static void add_unknown(Unknowns *u, unsigned from, const char *why)
{
    gp_bar_gate_add_unknown(u->text, why);
    u->from |= from;
}

char *gp_bar_gate_container_why(const GpBarGateHost *host, bool *proven)
{
    *proven = true;
    switch (host->container) {
    case GP_VFIO_CONTAINER_TYPE1:
        return NULL;
    case GP_VFIO_CONTAINER_EMULATED:
        return g_strdup_printf("/dev/vfio/vfio is iommufd's emulated type1 "
                               "container (%s), which lacks peer-to-peer "
                               "DMA mapping: no BAR is mapped",
                               host->container_why);
    case GP_VFIO_CONTAINER_NONE:
        return g_strdup_printf("the VM uses the VFIO container, which this "
                               "kernel lacks (%s)", host->container_why);
    default:
        *proven = false;
        return g_strdup_printf("the VFIO container is not known to be "
                               "VFIO's own: %s", host->container_why);
    }
}

char *gp_bar_gate_viommu_why(const char *viommu)
{
    return g_strdup_printf("a vIOMMU in the VM (%s): a peer BAR is mapped "
                           "only where the guest maps it through the "
                           "vIOMMU, which the host cannot see beforehand",
                           viommu);
}

char *gp_bar_gate_iommufd_ours_why(void)
{
    return g_strdup("the iommufd backend on our QEMU (10.0), which maps a "
                    "BAR into an IOAS from its mmap, which the kernel "
                    "refuses (EFAULT); BARs reach an IOAS as dma-bufs from "
                    "QEMU 11.0");
}

char *gp_bar_gate_nommap_why(void)
{
    return g_strdup("x-no-mmap=on: its BARs are not mmapped, so the IOMMU "
                    "cannot map them for peers");
}

static gint area_by_offset(gconstpointer a, gconstpointer b)
{
    const GpMmapArea *x = a, *y = b;

    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

uint64_t gp_bar_mmap_uncovered(uint64_t size, const GpMmapArea *areas,
                               unsigned n)
{
    g_autoptr(GArray) a = g_array_sized_new(FALSE, FALSE, sizeof(GpMmapArea),
                                            n);
    uint64_t covered = 0, end = 0;
    unsigned i;

    /* The union of the areas within the region: they may be unsorted. */
    g_array_append_vals(a, areas, n);
    g_array_sort(a, area_by_offset);
    for (i = 0; i < n; i++) {
        const GpMmapArea *m = &g_array_index(a, GpMmapArea, i);
        uint64_t lo = MAX(m->offset, end);
        uint64_t hi = m->size > size - MIN(m->offset, size) ?
                      size : m->offset + m->size;

        if (hi > lo) {
            covered += hi - lo;
            end = hi;
        }
    }
    return size - covered;
}

char *gp_bar_gate_sparse_why(unsigned index, uint64_t size,
                             uint64_t uncovered)
{
    if (!uncovered) {
        return NULL;
    }
    return g_strdup_printf("BAR%u: its mmaps leave %" PRIu64 " of its %"
                           PRIu64 " bytes uncovered (a sparse mmap), and the "
                           "IOMMU maps only what is mmapped, so peers' "
                           "writes there fault", index, uncovered, size);
}

/* The backend's answer: NULL mapped, else why not (@proven) or unknown. */
static char *backend_why(const GpBarGateHost *host, const GpBarGateVm *vm,
                         const GpBarGateGpu *g, bool *proven)
{
    if (!g->iommufd) {
        return gp_bar_gate_container_why(host, proven);
    }
    *proven = true;
    if (vm->vmm == GP_VMM_OURS) {
        return gp_bar_gate_iommufd_ours_why();
    }
    if (vm->vmm == GP_VMM_STOCK && vm->qemu_major &&
        vm->qemu_major < GP_QEMU_DMABUF_MAJOR) {
        return g_strdup_printf("the iommufd backend on QEMU %u.%u, which "
                               "maps a BAR into an IOAS from its mmap, which "
                               "the kernel refuses (EFAULT); BARs reach an "
                               "IOAS as dma-bufs from QEMU 11.0",
                               vm->qemu_major, vm->qemu_minor);
    }
    if (host->dmabuf == GP_TRI_NO) {
        return g_strdup_printf("the iommufd backend needs the BARs as "
                               "dma-bufs: %s", host->dmabuf_why);
    }
    *proven = false;
    if (vm->vmm != GP_VMM_STOCK || !vm->qemu_major) {
        return g_strdup("the iommufd backend maps BARs only on a QEMU of "
                        "11.0 or later (dma-bufs), and this QEMU's version "
                        "is not known");
    }
    if (host->dmabuf == GP_TRI_UNKNOWN) {
        return g_strdup_printf("the iommufd backend needs the BARs as "
                               "dma-bufs: %s", host->dmabuf_why);
    }
    return NULL;
}

void gp_bar_gate_window_unknowns(GString *unknown, const char *window,
                                 uint64_t start, uint64_t end,
                                 const char *space, uint64_t top,
                                 const GpWindowHole *holes, unsigned n,
                                 const char *note)
{
    unsigned i;

    for (i = 0; i < n; i++) {
        const GpWindowHole *h = &holes[i];
        g_autofree char *why = NULL;

        if (h->end < start || h->start > end) {
            continue;
        }
        if (h->start <= start && h->end >= end) {
            why = g_strdup_printf("the guest's 64-bit BAR window %s, 0x%"
                                  PRIx64 "-0x%" PRIx64 ", lies inside %s, "
                                  "where nothing is mapped%s%s", window,
                                  start, end, h->name, note ? "; " : "",
                                  note ? note : "");
        } else {
            why = g_strdup_printf("the guest's 64-bit BAR window %s, 0x%"
                                  PRIx64 "-0x%" PRIx64 ", overlaps %s, where "
                                  "nothing is mapped: a BAR the firmware "
                                  "places there is not", window, start, end,
                                  h->name);
        }
        gp_bar_gate_add_unknown(unknown, why);
    }
    if (!space) {
        return;
    }
    if (start > top) {
        g_autofree char *why = g_strdup_printf(
            "the guest's 64-bit BAR window %s, 0x%" PRIx64 "-0x%" PRIx64
            ", starts past %s (up to 0x%" PRIx64 "): a BAR placed there is "
            "not mapped%s%s", window, start, end, space, top,
            note ? "; " : "", note ? note : "");

        gp_bar_gate_add_unknown(unknown, why);
    } else if (end > top) {
        g_autofree char *why = g_strdup_printf(
            "the guest's 64-bit BAR window %s, 0x%" PRIx64 "-0x%" PRIx64
            ", reaches past %s (up to 0x%" PRIx64 "): a BAR the firmware "
            "places above it is not mapped", window, start, end, space, top);

        gp_bar_gate_add_unknown(unknown, why);
    }
}

static gint range_by_start(gconstpointer a, gconstpointer b)
{
    const GpRange *x = a, *y = b;

    return x->start < y->start ? -1 : x->start > y->start;
}

static void hole_clear(gpointer p)
{
    g_free((char *)((GpWindowHole *)p)->name);
}

GArray *gp_iova_holes(const GpRange *ranges, unsigned n, const char *whose,
                      uint64_t *top)
{
    GArray *holes = g_array_new(FALSE, FALSE, sizeof(GpWindowHole));
    g_autofree GpRange *sorted = g_memdup2(ranges, sizeof(*ranges) * n);
    uint64_t next = 0;          /* the first address not yet covered */
    bool covered_all = false;   /* a range ended at 2^64 - 1 */
    unsigned i;

    g_array_set_clear_func(holes, hole_clear);
    *top = 0;
    if (n) {
        qsort(sorted, n, sizeof(*sorted), range_by_start);
    }
    for (i = 0; i < n && !covered_all; i++) {
        const GpRange *r = &sorted[i];

        if (r->end < r->start) {
            continue;
        }
        if (r->start > next) {
            GpWindowHole h = { next, r->start - 1, NULL };

            h.name = g_strdup_printf("a hole in %s, 0x%" PRIx64 "-0x%"
                                     PRIx64, whose, h.start, h.end);
            g_array_append_val(holes, h);
        }
        if (r->end >= next) {
            *top = r->end;
            covered_all = r->end == UINT64_MAX;
            next = r->end + 1;
        }
    }
    return holes;
}

uint64_t gp_bar_gate_firmware_top(unsigned phys_bits)
{
    unsigned bits = MIN(phys_bits, GP_FIRMWARE_TOP_BITS);

    return bits > 32 ? (1ULL << bits) - 1 : 0;
}

void gp_bar_gate_firmware_unknowns(GString *unknown, uint64_t start,
                                   uint64_t end, uint64_t fw_end,
                                   const char *space, uint64_t top,
                                   const char *note)
{
    g_autofree char *how = NULL;

    if (!space || end > top || fw_end <= top) {
        return;
    }
    how = g_strdup_printf("as firmware may move it (anywhere up to the "
                          "top of the guest's address space, at most %d "
                          "bits)", GP_FIRMWARE_TOP_BITS);
    gp_bar_gate_window_unknowns(unknown, how, start, fw_end, space, top,
                                NULL, 0, note);
}

/*
 * The IOVA space: width, the BAR, the window, reserved regions. Only a
 * BAR larger than the IOMMU's whole address space is proven; what rests
 * on the modelled window is unknown.
 */
static char *space_why(const Space *s, const GpBarGateGpu *g, Unknowns *u)
{
    unsigned index = 0;
    uint64_t bar = largest_bar(g->dev, &index);
    g_autoptr(GArray) holes = g_array_new(FALSE, FALSE, sizeof(GpWindowHole));
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GString) w = g_string_new(NULL);
    g_autofree char *space = NULL;
    uint64_t top;
    guint i;

    if (s->reserved_why) {
        add_unknown(u, GP_BAR_GATE_UNKNOWN_HOST, s->reserved_why);
    }
    for (i = 0; s->reserved && i < s->reserved->len; i++) {
        const GpRange *r = &g_array_index(s->reserved, GpRange, i);
        int group = GPOINTER_TO_INT(g_ptr_array_index(s->reserved_groups, i));
        GpWindowHole h = { r->start, r->end, NULL };

        h.name = g_strdup_printf("IOMMU group %d's reserved region 0x%"
                                 PRIx64 "-0x%" PRIx64 " (%s)", group,
                                 r->start, r->end, r->type);
        g_ptr_array_add(names, (char *)h.name);
        g_array_append_val(holes, h);
    }
    top = !s->iommu_bits ? G_MAXUINT64 : s->iommu_bits >= 64 ? G_MAXUINT64 :
          (1ULL << s->iommu_bits) - 1;
    if (s->iommu_bits && bar && bar - 1 > top) {
        return g_strdup_printf("BAR%u (%" PRIu64 " MiB) is larger than the "
                               "IOMMU's %u-bit address space", index,
                               bar >> 20, s->iommu_bits);
    }
    if (s->window_known) {
        space = s->iommu_bits ?
                g_strdup_printf("the IOMMU's %u-bit address space",
                                s->iommu_bits) : NULL;
        gp_bar_gate_window_unknowns(w, s->window_how, s->win_start,
                                    s->win_end, space, top,
                                    (const GpWindowHole *)holes->data,
                                    holes->len, s->window_note);
        gp_bar_gate_firmware_unknowns(w, s->win_start, s->win_end,
                                      s->fw_end, space, top,
                                      s->window_note);
        if (w->len) {
            add_unknown(u, GP_BAR_GATE_UNKNOWN_VM, w->str);
        }
    }
    if (s->estimate_why) {
        add_unknown(u, GP_BAR_GATE_UNKNOWN_VM, s->estimate_why);
    }
    if (!s->iommu_bits) {
        add_unknown(u, GP_BAR_GATE_UNKNOWN_HOST, s->iommu_why);
    } else if (!s->window_known && s->window_why) {
        add_unknown(u, GP_BAR_GATE_UNKNOWN_HOST, s->window_why);
    }
    return NULL;
}

static GpBarGate *decide_one(const GpBarGateHost *host, const GpBarGateVm *vm,
                             const Space *s, const GpBarGateGpu *g)
{
    GpBarGate *out = g_new0(GpBarGate, 1);
    Unknowns u = { g_string_new(NULL), 0 };
    g_autofree char *no = NULL, *backend = NULL;
    bool proven;

    out->dev = g->dev;
    if (g->no_mmap) {
        no = gp_bar_gate_nommap_why();
    }
    backend = no ? NULL : backend_why(host, vm, g, &proven);
    if (backend && proven) {
        no = g_steal_pointer(&backend);
    } else if (backend) {
        add_unknown(&u, GP_BAR_GATE_UNKNOWN_HOST, backend);
    }
    if (!no && g->no_mmap_why) {
        add_unknown(&u, GP_BAR_GATE_UNKNOWN_VM, g->no_mmap_why);
    }
    if (!no && g->dev->iommu_group < 0) {
        add_unknown(&u, GP_BAR_GATE_UNKNOWN_HOST,
                    "it is in no IOMMU group");
    }
    if (!no && vm->viommu) {
        g_autofree char *why = gp_bar_gate_viommu_why(vm->viommu);

        add_unknown(&u, GP_BAR_GATE_UNKNOWN_VM, why);
    }
    if (!no && g->dev->driver && strstr(g->dev->driver, "vfio") &&
        strcmp(g->dev->driver, "vfio-pci") != 0) {
        g_autofree char *why = g_strdup_printf(
            "bound to %s, a vfio-pci variant driver, whose regions may "
            "offer only part of a BAR to mmap (sparse mmap): what is "
            "covered is known only to the VMM at realize", g->dev->driver);

        add_unknown(&u, GP_BAR_GATE_UNKNOWN_VM, why);
    }
    if (!no) {
        no = space_why(s, g, &u);
    }
    if (no) {
        out->verdict = GP_BAR_GATE_NOT_MAPPED;
        out->reason = g_steal_pointer(&no);
    } else if (u.text->len) {
        out->verdict = GP_BAR_GATE_UNKNOWN;
        out->unknown_from = u.from;
        out->reason = g_string_free(g_steal_pointer(&u.text), FALSE);
    } else {
        out->verdict = GP_BAR_GATE_MAPPED;
        g_autofree char *fw = s->fw_end > s->win_end ?
            g_strdup_printf(", and the top firmware may move it to, 0x%"
                            PRIx64 ", is inside that address space too",
                            s->fw_end) : g_strdup("");

        out->reason = g_strdup_printf(
            "%s; the guest's 64-bit BAR window %s, 0x%" PRIx64 "-0x%"
            PRIx64 ", is inside the IOMMU's %u-bit address space and clear "
            "of its reserved regions%s", g->iommufd ? host->dmabuf_why :
            host->container_why, s->window_how, s->win_start, s->win_end,
            s->iommu_bits, fw);
    }
    if (u.text) {
        g_string_free(u.text, TRUE);
    }
    return out;
}

static void gate_free(gpointer p)
{
    GpBarGate *g = p;

    g_free(g->reason);
    g_free(g);
}

GPtrArray *gp_bar_gate_decide(const GpBarGateHost *host,
                              const GpBarGateVm *vm,
                              const GpBarGateGpu *gpus, unsigned n)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(gate_free);
    Space s = { 0 };
    unsigned i;

    space_read(&s, host, vm, gpus, n);
    for (i = 0; i < n; i++) {
        g_ptr_array_add(out, decide_one(host, vm, &s, &gpus[i]));
    }
    space_clear(&s);
    return out;
}
