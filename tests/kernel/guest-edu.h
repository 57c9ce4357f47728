/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the nested guests' DMA programs share (guest-dma.c,
 * guest-viommu-dma.c): finding a PCI device by id, a BAR's guest-physical
 * address, and edu's DMA engine (registers 80h source, 88h destination,
 * 90h count, 98h command: bit 0 starts and stays set while it runs, bit
 * 1 set is edu to memory).
 */
#ifndef GUEST_EDU_H
#define GUEST_EDU_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CHUNK 4096
#define EDU_BUFFER 0x40000      /* edu's own buffer, in its DMA space */
#define EDU_TO_MEMORY 2

/* The first device with @vendor and @device ("0x1234"), its BDF in @bdf
 * of @size bytes; 0, or -1 if none. */
static int find_pci(const char *vendor, const char *device, char *bdf,
                    size_t size)
{
    DIR *d = opendir("/sys/bus/pci/devices");
    struct dirent *e;
    int found = -1;

    while (d && found && (e = readdir(d))) {
        char path[300], v[16] = "", dv[16] = "";
        FILE *f;

        snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor",
                 e->d_name);
        if ((f = fopen(path, "r"))) {
            if (fscanf(f, "%15s", v) != 1) {
                v[0] = 0;
            }
            fclose(f);
        }
        snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/device",
                 e->d_name);
        if ((f = fopen(path, "r"))) {
            if (fscanf(f, "%15s", dv) != 1) {
                dv[0] = 0;
            }
            fclose(f);
        }
        if (!strcmp(v, vendor) && !strcmp(dv, device) &&
            strlen(e->d_name) < size) {
            memcpy(bdf, e->d_name, strlen(e->d_name) + 1);
            found = 0;
        }
    }
    if (d) {
        closedir(d);
    }
    return found;
}

/* BAR @bar's start in the guest's physical space, 0 if unknown. */
static uint64_t bar_start(const char *bdf, int bar)
{
    char path[300];
    unsigned long long s = 0, e, fl;
    FILE *f;
    int i;

    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource", bdf);
    f = fopen(path, "r");
    for (i = 0; f && i <= bar; i++) {
        if (fscanf(f, "%llx %llx %llx", &s, &e, &fl) != 3) {
            s = 0;
        }
    }
    if (f) {
        fclose(f);
    }
    return s;
}

/* One CHUNK-byte transfer; 1 once it completed, 0 if it never did. */
static int edu_dma(volatile uint8_t *regs, uint64_t src, uint64_t dst,
               uint64_t cmd)
{
    int i;

    *(volatile uint64_t *)(regs + 0x80) = src;
    *(volatile uint64_t *)(regs + 0x88) = dst;
    *(volatile uint64_t *)(regs + 0x90) = CHUNK;
    *(volatile uint64_t *)(regs + 0x98) = cmd | 1;
    for (i = 0; i < 5000; i++) {
        if (!(*(volatile uint64_t *)(regs + 0x98) & 1)) {
            return 1;
        }
        usleep(1000);
    }
    return 0;
}

#endif
