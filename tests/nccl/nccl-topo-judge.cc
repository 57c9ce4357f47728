// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * NCCL's own topology reader as a judge. It runs what ncclTopoGetSystem()
 * runs before it knows any GPU: load NCCL_TOPO_FILE (ncclTopoGetXmlFromFile),
 * or start from an empty <system> where there is none; then place each
 * network device at the PCI path its net plugin reports
 * (ncclTopoFillNet, from sysfs); then write NCCL's dump
 * (ncclTopoDumpXmlToFile, as NCCL_TOPO_DUMP_FILE does). The functions are
 * NCCL's, compiled from its source (tests/nccl/build-judge.sh); only
 * this driver and the stand-ins in outside-reader.cc are ours.
 *
 *   nccl-topo-judge FILE|none DUMP [NAME=PCI_SYSFS_PATH ...]
 *
 * NCCL's Socket plugin reports realpath(/sys/class/net/NAME/device) and its
 * IB plugin realpath(/sys/class/infiniband/NAME/device): the caller passes
 * those. Exit 0 when every step succeeded, 1 otherwise, naming the step.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "graph/xml.h"

/* NCCL_TOPO_XML_MAX_NODES of NCCL's src/graph/topo.h, whose includes need
 * all of CUDA's C++ library: the reader's capacity, as NCCL allocates it. */
#define TOPO_XML_MAX_NODES 256

static int failed(const char *step, const char *what, ncclResult_t rc)
{
    fprintf(stderr, "nccl-topo-judge: %s %s: NCCL returned %d\n", step, what,
            (int)rc);
    return 1;
}

int main(int argc, char **argv)
{
    struct ncclXml *xml;
    ncclResult_t rc;

    if (argc < 3) {
        fprintf(stderr, "usage: nccl-topo-judge FILE|none DUMP "
                "[NAME=PCI_SYSFS_PATH ...]\n");
        return 2;
    }
    if ((rc = xmlAlloc(&xml, TOPO_XML_MAX_NODES)) != ncclSuccess) {
        return failed("allocating", "the XML", rc);
    }
    if (strcmp(argv[1], "none") != 0) {
        /* NCCL only logs a file it cannot open; a judge must not. */
        if (access(argv[1], R_OK) != 0) {
            perror(argv[1]);
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
    for (int i = 3; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        struct ncclXmlNode *net = NULL;

        if (!eq || eq == argv[i] || !eq[1]) {
            fprintf(stderr, "nccl-topo-judge: '%s' is not NAME=PATH\n",
                    argv[i]);
            return 2;
        }
        *eq = '\0';
        rc = ncclTopoFillNet(xml, "net", eq + 1, argv[i], &net, NULL);
        if (rc != ncclSuccess || !net) {
            return failed("placing net", argv[i], rc);
        }
    }
    if ((rc = ncclTopoDumpXmlToFile(argv[2], xml)) != ncclSuccess) {
        return failed("dumping to", argv[2], rc);
    }
    free(xml);
    return 0;
}
