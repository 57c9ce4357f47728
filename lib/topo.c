/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The topology model: construction, lookup and device helpers. */
#include <stdio.h>
#include <string.h>

#include "gpup2p/topo.h"

static void device_free(gpointer p)
{
    GpDevice *dev = p;

    g_free(dev->driver);
    g_free(dev->cpu_affinity);
    g_free(dev->sysfs_path);
    g_free(dev->config);
    g_free(dev->config_unreadable);
    g_free(dev->attr_invalid);
    g_free(dev->link_speed);
    g_free(dev->max_link_speed);
    if (dev->verbs_devices) {
        g_ptr_array_free(dev->verbs_devices, TRUE);
    }
    if (dev->bars) {
        g_array_free(dev->bars, TRUE);
    }
    g_free(dev);
}

GpTopology *gp_topo_new(const char *root)
{
    GpTopology *topo = g_new0(GpTopology, 1);

    topo->devices = g_ptr_array_new_with_free_func(device_free);
    topo->host_bridges = g_ptr_array_new_with_free_func(g_free);
    topo->by_bdf = g_hash_table_new(g_str_hash, g_str_equal);
    topo->devices_gone = g_ptr_array_new_with_free_func(g_free);
    topo->root = g_strdup(root ? root : "");
    topo->sys = g_build_filename(topo->root, "sys", NULL);
    return topo;
}

GpHostBridge *gp_topo_add_host_bridge(GpTopology *topo, unsigned domain,
                                      unsigned bus)
{
    GpHostBridge *hb;
    guint i;

    for (i = 0; i < topo->host_bridges->len; i++) {
        hb = g_ptr_array_index(topo->host_bridges, i);
        if (hb->domain == domain && hb->bus == bus) {
            return hb;
        }
    }
    hb = g_new0(GpHostBridge, 1);
    hb->domain = domain;
    hb->bus = bus;
    g_snprintf(hb->name, sizeof(hb->name), "pci%04x:%02x", domain, bus);
    g_ptr_array_add(topo->host_bridges, hb);
    return hb;
}

GpDevice *gp_topo_add_device(GpTopology *topo, GpHostBridge *host,
                             GpDevice *parent, const char *bdf, GError **errp)
{
    GpDevice *dev;
    char norm[GP_BDF_LEN];

    if (!gp_bdf_normalize(bdf, norm)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "'%s' is not a PCI address (dddd:bb:dd.f)", bdf);
        return NULL;
    }
    if (g_hash_table_contains(topo->by_bdf, norm)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "device %s is listed twice", norm);
        return NULL;
    }
    dev = g_new0(GpDevice, 1);
    memcpy(dev->bdf, norm, sizeof(norm));
    sscanf(norm, "%x:%x:%x.%x", &dev->domain, &dev->bus, &dev->slot,
           &dev->function);
    dev->model_index = topo->devices->len;
    dev->host = host;
    dev->parent = parent;
    dev->numa_node = -1;
    dev->iommu_group = -1;
    dev->pcie.type = GP_PCIE_TYPE_NONE;
    dev->config = g_new0(GpPciConfig, 1);
    dev->bars = g_array_new(FALSE, TRUE, sizeof(GpBar));
    g_ptr_array_add(topo->devices, dev);
    g_hash_table_insert(topo->by_bdf, dev->bdf, dev);
    return dev;
}

/* By domain, bus, slot, function: text order breaks with 5-digit domains. */
static gint device_cmp(gconstpointer a, gconstpointer b)
{
    const GpDevice *da = *(GpDevice *const *)a;
    const GpDevice *db = *(GpDevice *const *)b;
    unsigned ka[] = { da->domain, da->bus, da->slot, da->function };
    unsigned kb[] = { db->domain, db->bus, db->slot, db->function };
    size_t i;

    for (i = 0; i < G_N_ELEMENTS(ka); i++) {
        if (ka[i] != kb[i]) {
            return ka[i] < kb[i] ? -1 : 1;
        }
    }
    return 0;
}

/*
 * Whether @dev, the first device of its root bus, identifies its host
 * bridge as p2pdma's pci_host_bridge_dev() (Linux 5.19 and later) takes
 * it: at devfn 00.0, or a root port at any devfn. A config space too short
 * to hold the PCIe capability (an unprivileged read) leaves the port type
 * unknown; then a bridge-class device stands for a root port, as on a
 * root bus nothing else bridges to PCIe.
 */
static bool host_bridge_dev_ok(const GpDevice *dev)
{
    if (dev->slot == 0 && dev->function == 0) {
        return true;
    }
    if (dev->pcie.type != GP_PCIE_TYPE_NONE) {
        return dev->pcie.type == GP_PCIE_TYPE_ROOT_PORT;
    }
    return dev->config->len < GP_PCICFG_STD_SIZE &&
           (dev->class_code >> 8) == 0x0604;
}

void gp_topo_finish(GpTopology *topo)
{
    guint i, j;

    g_ptr_array_sort(topo->devices, device_cmp);
    for (i = 0; i < topo->devices->len; i++) {
        ((GpDevice *)g_ptr_array_index(topo->devices, i))->model_index = i;
    }
    for (i = 0; i < topo->host_bridges->len; i++) {
        GpHostBridge *hb = g_ptr_array_index(topo->host_bridges, i);

        /* Linux lists a bus's devices in scan order, lowest devfn first;
         * devices are sorted by BDF, so the first one on the root bus is
         * the head of that list. */
        for (j = 0; j < topo->devices->len; j++) {
            GpDevice *root = g_ptr_array_index(topo->devices, j);

            if (root->host != hb || root->parent || root->bus != hb->bus ||
                root->domain != hb->domain) {
                continue;
            }
            if (host_bridge_dev_ok(root)) {
                memcpy(hb->root_bdf, root->bdf, sizeof(root->bdf));
                hb->vendor = root->vendor;
                hb->device = root->device;
            }
            break;
        }
    }
}

void gp_topo_free(GpTopology *topo)
{
    if (!topo) {
        return;
    }
    g_hash_table_destroy(topo->by_bdf);
    g_ptr_array_free(topo->devices, TRUE);
    g_ptr_array_free(topo->host_bridges, TRUE);
    g_free(topo->root);
    g_free(topo->sys);
    g_free(topo->cpu_model_name);
    if (topo->kernel_verdicts) {
        g_hash_table_destroy(topo->kernel_verdicts);
    }
    g_free(topo->kernel_verdicts_note);
    g_ptr_array_free(topo->devices_gone, TRUE);
    g_free(topo);
}

GpDevice *gp_topo_find(const GpTopology *topo, const char *bdf)
{
    char norm[GP_BDF_LEN];

    if (!gp_bdf_normalize(bdf, norm)) {
        return NULL;
    }
    return g_hash_table_lookup(topo->by_bdf, norm);
}

/* A hex field of 1..@maxdigits digits ending at @sep; advances *p past it. */
static bool parse_hex_field(const char **p, int maxdigits, char sep,
                            unsigned *val)
{
    const char *s = *p;
    int n = 0;

    *val = 0;
    while (g_ascii_isxdigit(s[n]) && n < maxdigits) {
        *val = *val * 16 + (unsigned)g_ascii_xdigit_value(s[n]);
        n++;
    }
    if (n == 0 || s[n] != sep) {
        return false;
    }
    *p = s + n + (sep ? 1 : 0);
    return true;
}

bool gp_bdf_normalize(const char *text, char out[GP_BDF_LEN])
{
    unsigned domain = 0, bus, slot, fn;
    const char *p = text;

    if (!text) {
        return false;
    }
    /* Three colons-or-dot separated fields, or four with the domain. */
    if (strchr(text, ':') != strrchr(text, ':') &&
        !parse_hex_field(&p, 8, ':', &domain)) {
        return false;
    }
    if (!parse_hex_field(&p, 2, ':', &bus) ||
        !parse_hex_field(&p, 2, '.', &slot) ||
        !parse_hex_field(&p, 1, '\0', &fn)) {
        return false;
    }
    if (slot > 0x1f || fn > 7) {
        return false;
    }
    g_snprintf(out, GP_BDF_LEN, "%04x:%02x:%02x.%x", domain, bus, slot, fn);
    return true;
}

bool gp_device_is_gpu(const GpDevice *dev)
{
    return (dev->class_code >> 16) == 0x03;
}

bool gp_device_is_nvidia_gpu(const GpDevice *dev)
{
    return dev->vendor == GP_PCI_VENDOR_NVIDIA && gp_device_is_gpu(dev);
}

bool gp_device_is_nic(const GpDevice *dev)
{
    unsigned cls = dev->class_code >> 8;

    return (cls >> 8) == 0x02 && dev->vendor != 0x1af4 &&
           (cls == 0x0200 || cls == 0x0207 || cls == 0x0280);
}

bool gp_device_is_rdma_nic(const GpDevice *dev)
{
    unsigned cls = dev->class_code >> 8;

    return cls == 0x0207 || (dev->verbs_devices && dev->verbs_devices->len) ||
           (dev->vendor == GP_PCI_VENDOR_MELLANOX && (cls >> 8) == 0x02);
}

void gp_devices_sort(GPtrArray *devices)
{
    g_ptr_array_sort(devices, device_cmp);
}

char **gp_device_names(const GPtrArray *devices)
{
    char **names = g_new0(char *, devices->len + 1);
    unsigned gpus = 0, nics = 0, others = 0;
    guint i;

    for (i = 0; i < devices->len; i++) {
        const GpDevice *dev = g_ptr_array_index(devices, i);

        names[i] = gp_device_is_gpu(dev) ? g_strdup_printf("GPU%u", gpus++) :
                   gp_device_is_nic(dev) ? g_strdup_printf("NIC%u", nics++) :
                   g_strdup_printf("DEV%u", others++);
    }
    return names;
}

const GpDevice *gp_device_switch(const GpDevice *dev)
{
    if (dev->pcie.type == GP_PCIE_TYPE_UPSTREAM_PORT) {
        return dev;
    }
    if (dev->pcie.type == GP_PCIE_TYPE_DOWNSTREAM_PORT && dev->parent &&
        dev->parent->pcie.type == GP_PCIE_TYPE_UPSTREAM_PORT) {
        return dev->parent;
    }
    return NULL;
}

const GpDevice *gp_device_root_port(const GpDevice *dev)
{
    const GpDevice *d;

    for (d = dev->parent; d; d = d->parent) {
        if (!d->parent) {
            return d;
        }
    }
    return NULL;
}

const GpBar *gp_device_bar(const GpDevice *dev, unsigned index)
{
    guint i;

    for (i = 0; i < dev->bars->len; i++) {
        const GpBar *bar = &g_array_index(dev->bars, GpBar, i);

        if (bar->index == index) {
            return bar;
        }
    }
    return NULL;
}

static gint size_desc_cmp(gconstpointer a, gconstpointer b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? 1 : x > y ? -1 : 0;
}

uint64_t gp_devices_mmio64_size(const GPtrArray *devices)
{
    g_autoptr(GArray) sizes = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    uint64_t end = 0;
    guint i, j;

    for (i = 0; i < devices->len; i++) {
        const GpDevice *dev = g_ptr_array_index(devices, i);

        for (j = 0; j < dev->bars->len; j++) {
            const GpBar *bar = &g_array_index(dev->bars, GpBar, j);

            if (bar->is64 && !bar->io && bar->size) {
                g_array_append_val(sizes, bar->size);
            }
        }
    }
    /* Largest first: each BAR then starts aligned without a gap. */
    g_array_sort(sizes, size_desc_cmp);
    for (i = 0; i < sizes->len; i++) {
        uint64_t size = g_array_index(sizes, uint64_t, i);
        uint64_t align = 1;

        while (align < size) {
            align <<= 1;
        }
        end = (end + align - 1) & ~(align - 1);
        end += size;
    }
    return end;
}
