/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * PCI checks: NVIDIA GPUs, their P2P capability and clique ids; RDMA NICs
 * by PCI class: every InfiniBand controller (0x0207), and an Ethernet
 * controller (0x0200) only where an RDMA device of /sys/class/infiniband
 * sits on it (RoCE, iWARP).
 */
#include <string.h>

#include "gpup2p/p2p.h"
#include "gpup2p/p2pcap.h"
#include "gpup2p/rdma.h"
#include "gpup2p/topo.h"
#include "verify.h"

/* BDFs of the PCI functions under /sys/class/infiniband/ *\/device. */
static GHashTable *rdma_functions(const char *root)
{
    GHashTable *set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                            NULL);
    g_autofree char *dir = g_build_filename(root, "sys/class/infiniband",
                                            NULL);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;

    while (d && (name = g_dir_read_name(d))) {
        g_autofree char *link = g_build_filename(dir, name, "device", NULL);
        g_autofree char *target = g_file_read_link(link, NULL);
        g_autofree char *base = target ? g_path_get_basename(target) : NULL;
        char bdf[GP_BDF_LEN];

        if (base && gp_bdf_normalize(base, bdf)) {
            g_hash_table_add(set, g_strdup(bdf));
        }
    }
    return set;
}

/* 0x0207 always; 0x0200 with a verbs device on it. */
bool verify_is_rdma_nic(unsigned class_code, bool has_rdma_device)
{
    return class_code >> 8 == 0x0207 ||
           (class_code >> 8 == 0x0200 && has_rdma_device);
}

static void add_nic(VerifyReport *r, const GpDevice *dev)
{
    VerifyNic nic = { .vendor = dev->vendor, .device = dev->device,
                      .class_code = dev->class_code,
                      .numa_node = dev->numa_node,
                      .link_width = MAX(dev->link_width, 0) };

    g_strlcpy(nic.bdf, dev->bdf, sizeof(nic.bdf));
    g_strlcpy(nic.link_speed, dev->link_speed ? dev->link_speed : "",
              sizeof(nic.link_speed));
    for (const GpDevice *up = dev; up && nic.n_uplinks < VERIFY_MAX_UPLINKS;
         up = up->parent) {
        g_strlcpy(nic.uplinks[nic.n_uplinks++], up->bdf,
                  sizeof(nic.uplinks[0]));
    }
    g_array_append_val(r->nics, nic);
}

/* The path class of every ordered pair of @gpus (the devices of r->gpus
 * from @first on, in order), by the core library's rule. */
static void add_paths(VerifyReport *r, guint first, const GPtrArray *gpus)
{
    guint i, j;

    for (i = 0; i < gpus->len; i++) {
        for (j = 0; j < gpus->len; j++) {
            VerifyPath p = { .a = first + i, .b = first + j };

            if (i == j) {
                continue;
            }
            g_strlcpy(p.cls, gp_path_type_name(gp_path_classify(
                          g_ptr_array_index(gpus, i),
                          g_ptr_array_index(gpus, j))), sizeof(p.cls));
            g_array_append_val(r->paths, p);
        }
    }
}

/* Each NIC of @nics (r->nics from @first_nic on) with each GPU of @gpus
 * (r->gpus from @first_gpu on): the class, and which NIC is each GPU's
 * pair, by the core library's rules. */
static void add_nic_paths(VerifyReport *r, guint first_nic,
                          const GPtrArray *nics, guint first_gpu,
                          const GPtrArray *gpus)
{
    guint i, j;

    for (j = 0; j < gpus->len; j++) {
        const GpDevice *gpu = g_ptr_array_index(gpus, j);
        const GpDevice *nearest = gp_rdma_nearest_nic(gpu, nics);

        for (i = 0; i < nics->len; i++) {
            const GpDevice *nic = g_ptr_array_index(nics, i);
            VerifyNicPath p = { .nic = first_nic + i, .gpu = first_gpu + j,
                                .pair = nic == nearest };

            g_strlcpy(p.cls, gp_path_type_name(gp_path_classify(nic, gpu)),
                      sizeof(p.cls));
            g_array_append_val(r->nic_paths, p);
        }
    }
}

bool verify_pci(const VerifyOptions *o, VerifyReport *r)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GpTopology) topo = gp_topo_read(o->sysfs_root ? o->sysfs_root
                                                            : "/", &err);
    g_autoptr(GHashTable) rdma_fns = NULL;
    g_autoptr(GPtrArray) gpu_devs = g_ptr_array_new();
    g_autoptr(GPtrArray) nic_devs = g_ptr_array_new();
    guint first = r->gpus->len, first_nic = r->nics->len;
    guint i;

    if (!topo) {
        verify_record_untested(r, "PCI: %s", err->message);
        return false;
    }
    rdma_fns = rdma_functions(o->sysfs_root ? o->sysfs_root : "/");
    for (i = 0; i < topo->devices->len; i++) {
        const GpDevice *dev = g_ptr_array_index(topo->devices, i);
        g_autoptr(GError) cerr = NULL;
        VerifyGpu g = { .clique = -1, .cuda_index = -1 };
        GpP2pCap cap;

        if (verify_is_rdma_nic(dev->class_code,
                               g_hash_table_contains(rdma_fns, dev->bdf))) {
            add_nic(r, dev);
            g_ptr_array_add(nic_devs, (gpointer)dev);
            continue;
        }
        if (!gp_device_is_nvidia_gpu(dev)) {
            continue;
        }
        g_strlcpy(g.bdf, dev->bdf, sizeof(g.bdf));
        g.vendor = dev->vendor;
        g.device = dev->device;
        g.class_code = dev->class_code;
        g.link_width = MAX(dev->link_width, 0);
        for (const GpDevice *up = dev; up && g.n_uplinks < VERIFY_MAX_UPLINKS;
             up = up->parent) {
            g_strlcpy(g.uplinks[g.n_uplinks++], up->bdf, sizeof(g.uplinks[0]));
        }
        g.pcie_gen = dev->pcie.link_speed;
        g.pcie_width = dev->pcie.link_width;
        g.numa_node = dev->numa_node;
        g.subsystem_vendor = dev->subsystem_vendor;
        g.subsystem_device = dev->subsystem_device;
        g_strlcpy(g.link_speed, dev->link_speed ? dev->link_speed : "",
                  sizeof(g.link_speed));
        if (gp_p2pcap_find(dev->config, &cap, &cerr)) {
            g.has_cap = true;
            g.cap_offset = cap.offset;
            g.cap_valid = cap.valid;
            g_strlcpy(g.cap_problem, cap.problem, sizeof(g.cap_problem));
            g.clique = cap.valid ? cap.clique : -1;
            if (!cap.valid) {
                r->p2p_broken = true;
            }
        } else if (g_error_matches(cerr, GP_ERROR, GP_ERROR_INCOMPLETE)) {
            verify_record_untested(r, "%s: P2P capability not visible: %s",
                                   dev->bdf, cerr->message);
        } else if (!g_error_matches(cerr, GP_ERROR, GP_ERROR_NOT_FOUND)) {
            /* A broken capability list is itself a finding. */
            g_snprintf(g.cap_problem, sizeof(g.cap_problem), "%s",
                       cerr->message);
            r->p2p_broken = true;
        }
        g_array_append_val(r->gpus, g);
        g_ptr_array_add(gpu_devs, (gpointer)dev);
    }
    add_paths(r, first, gpu_devs);
    add_nic_paths(r, first_nic, nic_devs, first, gpu_devs);
    if (!r->gpus->len) {
        verify_note(r, "PCI: no NVIDIA display-class device under %s",
                    topo->sys);
    }
    return true;
}
