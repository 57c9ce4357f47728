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

#include "guest-edu.h"

static uint64_t phys_of(void *p)
{
    uint64_t entry = 0;
    int fd = open("/proc/self/pagemap", O_RDONLY);

    pread(fd, &entry, 8, ((uintptr_t)p / 4096) * 8);
    close(fd);
    return (entry & ((1ULL << 55) - 1)) * 4096;
}

int main(int argc, char **argv)
{
    char edu[64], shm[64], path[300];
    volatile uint8_t *regs;
    uint64_t peer, src;
    uint16_t cmd;
    uint8_t *buf;
    int fd, i, a, b;

    if (argc != 4 || find_pci("0x1234", "0x11e8", edu, sizeof(edu)) ||
        find_pci("0x1af4", "0x1110", shm, sizeof(shm))) {
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
    a = edu_dma(regs, src, EDU_BUFFER, 0);
    b = edu_dma(regs, EDU_BUFFER, peer, EDU_TO_MEMORY);
    printf("{\"edu\": \"%s\", \"ivshmem\": \"%s\", \"buffer_gpa\": "
           "\"0x%llx\", \"peer_gpa\": \"0x%llx\", \"to_edu\": %d, "
           "\"to_peer\": %d}\n", edu, shm, (unsigned long long)src,
           (unsigned long long)peer, a, b);
    return 0;
}
