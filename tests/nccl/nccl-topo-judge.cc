// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * NCCL's own topology reader as a judge. It runs the steps of
 * ncclTopoGetSystem() that place devices: load NCCL_TOPO_FILE
 * (ncclTopoGetXmlFromFile), or start from an empty <system> where there is
 * none; place each GPU by its bus id (the PCI half of ncclTopoFillGpu:
 * ncclTopoGetPciNode, class 0x03 where unset, ncclTopoGetXmlFromSys; its
 * NVML half needs a GPU); place each network device at its PCI path
 * (ncclTopoFillNet); write the XML as ncclTopoDumpXmlToFile does. NCCL's
 * trimming of unused nodes and its fusion of several ranks' XML are left
 * out: they move nothing. The functions are NCCL's, compiled unchanged from
 * its source (tests/nccl/build-judge.sh); this driver and the stand-ins in
 * outside-reader.cc are ours.
 *
 *   nccl-topo-judge FILE|none DUMP [gpu:BUSID ...] [NAME=PCI_SYSFS_PATH ...]
 *
 * PCI_SYSFS_PATH is the device's directory under /sys/devices, as NCCL's
 * Socket plugin takes it for an interface (realpath of
 * /sys/class/net/NAME/device); which interfaces NCCL would pick (up, with
 * an address) is the caller's choice, not judged here. Exit 0 when every
 * step succeeded, 1 when one failed, 2 for bad arguments; each names the
 * step or the argument.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/xml.h"

#ifndef TOPO_XML_MAX_NODES
#error "build-judge.sh passes NCCL's NCCL_TOPO_XML_MAX_NODES"
#endif

/* Public in xml.cc, not declared in xml.h. */
ncclResult_t ncclTopoGetPciNode(struct ncclXml *xml, const char *busId,
                                struct ncclXmlNode **pciNode);
ncclResult_t ncclTopoGetXmlFromSys(struct ncclXmlNode *pciNode,
                                   struct ncclXml *xml);

static int failed(const char *step, const char *what, ncclResult_t rc)
{
    fprintf(stderr, "nccl-topo-judge: %s %s: NCCL returned %d\n", step, what,
            (int)rc);
    return 1;
}

/* "DDDD:BB:DD.F", lower-case hex, as sysfs names a PCI function. */
static bool is_bus_id(const char *s)
{
    static const char form[] = "xxxx:xx:xx.x";
    size_t i;

    if (strlen(s) != sizeof(form) - 1) {
        return false;
    }
    for (i = 0; form[i]; i++) {
        if (form[i] == 'x' ? !strchr("0123456789abcdef", s[i]) :
            s[i] != form[i]) {
            return false;
        }
    }
    return true;
}

/* @path is a PCI function's sysfs directory: its subsystem is "pci" and
 * its name a bus id. NCCL would otherwise hang the net on a CPU, or crash
 * where the XML has none. */
static bool is_pci_function(const char *path)
{
    char link[PATH_MAX], *target;
    const char *base = strrchr(path, '/');
    bool ok;

    snprintf(link, sizeof(link), "%s/subsystem", path);
    target = realpath(link, NULL);
    ok = target && strlen(target) >= 4 &&
         strcmp(target + strlen(target) - 4, "/pci") == 0 &&
         base && is_bus_id(base + 1);
    free(target);
    return ok;
}

int main(int argc, char **argv)
{
    struct ncclXml *xml;
    ncclResult_t rc;
    char tmp[PATH_MAX];
    struct stat st;

    if (argc < 3) {
        fprintf(stderr, "usage: nccl-topo-judge FILE|none DUMP "
                "[gpu:BUSID ...] [NAME=PCI_SYSFS_PATH ...]\n");
        return 2;
    }
    if ((rc = xmlAlloc(&xml, TOPO_XML_MAX_NODES)) != ncclSuccess) {
        return failed("allocating", "the XML", rc);
    }
    if (strcmp(argv[1], "none") != 0) {
        /* NCCL only logs a file it cannot open; a judge must not. */
        if (access(argv[1], R_OK) != 0) {
            fprintf(stderr, "nccl-topo-judge: %s: %s\n", argv[1],
                    strerror(errno));
            return 1;
        }
        rc = ncclTopoGetXmlFromFile(argv[1], xml, 1);
        if (rc != ncclSuccess) {
            return failed("loading", argv[1], rc);
        }
        if (xml->maxIndex == 0) {
            fprintf(stderr, "nccl-topo-judge: %s: NCCL loaded no element\n",
                    argv[1]);
            return 1;
        }
    } else {
        struct ncclXmlNode *top;

        if ((rc = xmlAddNode(xml, NULL, "system", &top)) != ncclSuccess ||
            (rc = xmlSetAttrInt(top, "version", NCCL_TOPO_XML_VERSION)) !=
                ncclSuccess) {
            return failed("creating", "<system>", rc);
        }
    }
    /* GPUs first, as ncclTopoGetSystem fills its GPU before the nets. */
    for (int i = 3; i < argc; i++) {
        struct ncclXmlNode *node = NULL;
        const char *bdf = argv[i] + 4;

        if (strncmp(argv[i], "gpu:", 4) != 0) {
            continue;
        }
        if (!is_bus_id(bdf)) {
            fprintf(stderr, "nccl-topo-judge: '%s': not gpu:DDDD:BB:DD.F\n",
                    argv[i]);
            return 2;
        }
        if ((rc = ncclTopoGetPciNode(xml, bdf, &node)) != ncclSuccess ||
            (rc = xmlSetAttrIfUnset(node, "class", "0x03")) != ncclSuccess ||
            (rc = ncclTopoGetXmlFromSys(node, xml)) != ncclSuccess) {
            return failed("placing GPU", bdf, rc);
        }
    }
    for (int i = 3; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        struct ncclXmlNode *net = NULL;

        if (strncmp(argv[i], "gpu:", 4) == 0) {
            continue;
        }
        if (!eq || eq == argv[i] || !eq[1]) {
            fprintf(stderr, "nccl-topo-judge: '%s' is not NAME=PATH or "
                    "gpu:BUSID\n", argv[i]);
            return 2;
        }
        *eq = '\0';
        if (!is_pci_function(eq + 1)) {
            fprintf(stderr, "nccl-topo-judge: %s=%s: not a PCI function's "
                    "sysfs directory\n", argv[i], eq + 1);
            return 2;
        }
        rc = ncclTopoFillNet(xml, "net", eq + 1, argv[i], &net, NULL);
        if (rc != ncclSuccess || !net) {
            return failed("placing net", argv[i], rc);
        }
    }
    /* NCCL's dump logs a file it cannot open and succeeds; write beside
     * and check, so that DUMP is whole or absent. */
    snprintf(tmp, sizeof(tmp), "%s.tmp", argv[2]);
    unlink(tmp);
    if ((rc = ncclTopoDumpXmlToFile(tmp, xml)) != ncclSuccess) {
        return failed("dumping to", tmp, rc);
    }
    if (stat(tmp, &st) != 0 || st.st_size == 0) {
        fprintf(stderr, "nccl-topo-judge: %s: NCCL wrote no dump\n", tmp);
        unlink(tmp);
        return 1;
    }
    if (rename(tmp, argv[2]) != 0) {
        fprintf(stderr, "nccl-topo-judge: %s: %s\n", argv[2],
                strerror(errno));
        unlink(tmp);
        return 1;
    }
    free(xml);
    return 0;
}
