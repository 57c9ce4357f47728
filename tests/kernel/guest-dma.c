/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Runs in a (nested) guest without an IOMMU: has a passed-through edu DMA
 * a pattern to the guest-physical address of a passed-through ivshmem BAR,
 * which the host IOMMU must translate to the real BAR (peer-to-peer).
 *
 *   guest-dma BAR OFFSET SEED
 *
 * Finds edu (1234:11e8) and ivshmem (1af4:1110) by id; prints JSON.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CHUNK 4096

static int find(const char *vendor, const char *device, char *bdf)
{
    DIR *d = opendir("/sys/bus/pci/devices");
    struct dirent *e;

    while (d && (e = readdir(d))) {
        char path[300], v[16] = "", dv[16] = "";
        FILE *f;

        snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor",
                 e->d_name);
        if ((f = fopen(path, "r"))) {
            fscanf(f, "%15s", v);
            fclose(f);
        }
        snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/device",
                 e->d_name);
        if ((f = fopen(path, "r"))) {
            fscanf(f, "%15s", dv);
            fclose(f);
        }
        if (!strcmp(v, vendor) && !strcmp(dv, device)) {
            strcpy(bdf, e->d_name);
            closedir(d);
            return 0;
        }
    }
    if (d) {
        closedir(d);
    }
    return -1;
}

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

static uint64_t phys_of(void *p)
{
    uint64_t entry = 0;
    int fd = open("/proc/self/pagemap", O_RDONLY);

    pread(fd, &entry, 8, ((uintptr_t)p / 4096) * 8);
    close(fd);
    return (entry & ((1ULL << 55) - 1)) * 4096;
}

static int dma(volatile uint8_t *regs, uint64_t src, uint64_t dst,
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

int main(int argc, char **argv)
{
    char edu[64], shm[64], path[300];
    volatile uint8_t *regs;
    uint64_t peer, src;
    uint16_t cmd;
    uint8_t *buf;
    int fd, i, a, b;

    if (argc != 4 || find("0x1234", "0x11e8", edu) ||
        find("0x1af4", "0x1110", shm)) {
        printf("{\"error\": \"usage, or edu/ivshmem not found\"}\n");
        return 2;
    }
    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config", edu);
    fd = open(path, O_RDWR);
    pread(fd, &cmd, 2, 4);
    cmd |= 0x6;
    pwrite(fd, &cmd, 2, 4);
    close(fd);
    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource0", edu);
    fd = open(path, O_RDWR | O_SYNC);
    regs = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    buf = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED, -1, 0);
    for (i = 0; i < CHUNK; i++) {
        buf[i] = (uint8_t)(i * 7 + atoi(argv[3]));
    }
    src = phys_of(buf);
    peer = bar_start(shm, atoi(argv[1])) + strtoull(argv[2], NULL, 0);
    a = dma(regs, src, 0x40000, 0);
    b = dma(regs, 0x40000, peer, 2);
    printf("{\"edu\": \"%s\", \"ivshmem\": \"%s\", \"buffer_gpa\": "
           "\"0x%llx\", \"peer_gpa\": \"0x%llx\", \"to_edu\": %d, "
           "\"to_peer\": %d}\n", edu, shm, (unsigned long long)src,
           (unsigned long long)peer, a, b);
    return 0;
}
