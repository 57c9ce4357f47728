/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * An NCCL topology file (NCCL_TOPO_FILE) for this VM: one CPU per NUMA node;
 * under it, GPUs that share a P2P clique sit together behind one virtual
 * switch (as Azure's NDv5 file does), with the RDMA NICs of that node, so
 * NCCL sees PIX between them instead of a flat bus.
 */
#include <errno.h>
#include <glib/gstdio.h>
#include <unistd.h>
#include <libxml/xmlwriter.h>

#include "verify.h"

static void attr(xmlTextWriterPtr w, const char *name, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

static void attr(xmlTextWriterPtr w, const char *name, const char *fmt, ...)
{
    g_autofree char *v = NULL;
    va_list ap;

    va_start(ap, fmt);
    v = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    xmlTextWriterWriteAttribute(w, BAD_CAST name, BAD_CAST v);
}

static void pci_node(xmlTextWriterPtr w, const char *bdf, unsigned cls,
                     unsigned vendor, unsigned device, unsigned sv,
                     unsigned sd, const char *speed, unsigned width)
{
    xmlTextWriterStartElement(w, BAD_CAST "pci");
    attr(w, "busid", "%s", bdf);
    attr(w, "class", "0x%06x", cls);
    attr(w, "vendor", "0x%04x", vendor);
    attr(w, "device", "0x%04x", device);
    attr(w, "subsystem_vendor", "0x%04x", sv);
    attr(w, "subsystem_device", "0x%04x", sd);
    attr(w, "link_speed", "%s", speed && *speed ? speed : "16.0 GT/s PCIe");
    attr(w, "link_width", "%u", width ? width : 16);
    xmlTextWriterEndElement(w);
}

static int node_of(int numa)
{
    return numa < 0 ? 0 : numa;
}

bool verify_nccl_topo(const VerifyOptions *o, const VerifyReport *r,
                      GError **errp)
{
    g_autofree char *tmp = g_strdup_printf("%s.XXXXXX", o->nccl_topo);
    xmlTextWriterPtr w;
    int fd, max_node = 0, node, bridge = 0;
    guint i, j;

    for (i = 0; i < r->gpus->len; i++) {
        max_node = MAX(max_node,
                       node_of(g_array_index(r->gpus, VerifyGpu, i).numa_node));
    }
    fd = g_mkstemp(tmp);
    if (fd < 0) {
        g_set_error(errp, G_FILE_ERROR, g_file_error_from_errno(errno),
                    "%s: cannot create a file beside it: %s", o->nccl_topo,
                    g_strerror(errno));
        return false;
    }
    close(fd);
    w = xmlNewTextWriterFilename(tmp, 0);
    if (!w) {
        g_unlink(tmp);
        g_set_error(errp, G_FILE_ERROR, G_FILE_ERROR_FAILED,
                    "%s: cannot write", tmp);
        return false;
    }
    xmlTextWriterSetIndent(w, 1);
    xmlTextWriterStartDocument(w, NULL, NULL, NULL);
    xmlTextWriterStartElement(w, BAD_CAST "system");
    attr(w, "version", "1");
    for (node = 0; node <= max_node; node++) {
        bool nics_done = false;
        int clique;

        xmlTextWriterStartElement(w, BAD_CAST "cpu");
        attr(w, "numaid", "%d", node);
        attr(w, "arch", "x86_64");
        for (clique = -1; clique <= 15; clique++) {
            bool any = false;

            for (i = 0; i < r->gpus->len; i++) {
                const VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);

                any |= g->clique == clique && node_of(g->numa_node) == node;
            }
            if (!any) {
                continue;
            }
            if (clique >= 0) {
                /* A virtual switch for the clique, and this node's NICs. */
                xmlTextWriterStartElement(w, BAD_CAST "pci");
                attr(w, "busid", "ffff:ff:%02x.0", bridge++);
                attr(w, "class", "0x060400");
                attr(w, "link_speed", "32.0 GT/s PCIe");
                attr(w, "link_width", "16");
            }
            for (i = 0; i < r->gpus->len; i++) {
                const VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);

                if (g->clique == clique && node_of(g->numa_node) == node) {
                    pci_node(w, g->bdf, 0x030200, g->vendor, g->device,
                             g->subsystem_vendor, g->subsystem_device,
                             g->link_speed, g->pcie_width);
                }
            }
            if (clique >= 0 && !nics_done) {
                nics_done = true;
                for (j = 0; j < r->nics->len; j++) {
                    const VerifyNic *n = &g_array_index(r->nics, VerifyNic, j);

                    if (node_of(n->numa_node) == node) {
                        pci_node(w, n->bdf, n->class_code, n->vendor,
                                 n->device, 0, 0, NULL, 0);
                    }
                }
            }
            if (clique >= 0) {
                xmlTextWriterEndElement(w);
            }
        }
        for (j = 0; j < r->nics->len && !nics_done; j++) {
            const VerifyNic *n = &g_array_index(r->nics, VerifyNic, j);

            if (node_of(n->numa_node) == node) {
                pci_node(w, n->bdf, n->class_code, n->vendor, n->device, 0, 0,
                         NULL, 0);
            }
        }
        xmlTextWriterEndElement(w);
    }
    xmlTextWriterEndElement(w);
    if (xmlTextWriterEndDocument(w) < 0) {
        xmlFreeTextWriter(w);
        g_unlink(tmp);
        g_set_error(errp, G_FILE_ERROR, G_FILE_ERROR_FAILED,
                    "%s: writing failed", tmp);
        return false;
    }
    xmlFreeTextWriter(w);
    if (g_rename(tmp, o->nccl_topo) < 0) {
        g_unlink(tmp);
        g_set_error(errp, G_FILE_ERROR, g_file_error_from_errno(errno),
                    "%s: %s", o->nccl_topo, g_strerror(errno));
        return false;
    }
    return true;
}
