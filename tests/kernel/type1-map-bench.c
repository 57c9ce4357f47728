/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The cost of the supported mapping path for peer BARs: VFIO type1's own
 * VFIO_IOMMU_MAP_DMA of a BAR's mmap (what QEMU's VFIO listener does for
 * every assigned device's BARs), and its UNMAP_DMA, timed for one device
 * bound to vfio-pci. Each BAR is mmapped twice: at an address aligned to
 * its size up to 1 GiB, as QEMU places BAR mmaps so that the kernel can use
 * PMD/PUD mappings (and type1 from Linux 6.15 map whole huge pfnmap
 * pages), and wherever mmap puts it ("plain"). Prints one JSON object per
 * device and placement.
 *
 *   type1-map-bench REPEAT BDF BAR [BDF BAR ...]
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/vfio.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define IOVA    (1ULL << 40)

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int fail(const char *bdf, const char *what)
{
    printf("{\"device\": \"%s\", \"error\": \"%s: %s\"}\n", bdf, what,
           strerror(errno));
    return 1;
}

static int group_of(const char *bdf)
{
    char link[128], target[256];
    ssize_t n;

    snprintf(link, sizeof(link), "/sys/bus/pci/devices/%s/iommu_group", bdf);
    n = readlink(link, target, sizeof(target) - 1);
    if (n < 0) {
        return -1;
    }
    target[n] = 0;
    return atoi(strrchr(target, '/') + 1);
}

/* mmap @size of @fd at @offset, the address a multiple of @align. */
static void *mmap_aligned(int fd, uint64_t offset, size_t size, size_t align)
{
    uint8_t *base, *at;
    void *p;

    base = mmap(NULL, size + align, PROT_NONE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
        return MAP_FAILED;
    }
    at = (uint8_t *)(((uintptr_t)base + align - 1) & ~(uintptr_t)(align - 1));
    p = mmap(at, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
             offset);
    if (p == MAP_FAILED) {
        munmap(base, size + align);
        return MAP_FAILED;
    }
    if (at > base) {
        munmap(base, at - base);
    }
    if (at + size < base + size + align) {
        munmap(at + size, base + size + align - (at + size));
    }
    return p;
}

/* Largest power of two dividing @size, at most 1 GiB. */
static size_t bar_alignment(uint64_t size)
{
    size_t align = (size_t)1 << __builtin_ctzll(size);

    return align < (1UL << 30) ? align : (1UL << 30);
}

static int bench_mapping(int container, const char *bdf, unsigned bar,
                         const struct vfio_region_info *ri, void *p,
                         const char *placement, int repeat)
{
    double map_s = 0, unmap_s = 0, t0;
    int i;

    for (i = 0; i < repeat; i++) {
        struct vfio_iommu_type1_dma_map m = {
            .argsz = sizeof(m),
            .flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
            .vaddr = (uintptr_t)p, .iova = IOVA, .size = ri->size,
        };
        struct vfio_iommu_type1_dma_unmap u = {
            .argsz = sizeof(u), .iova = IOVA, .size = ri->size,
        };

        t0 = now_s();
        if (ioctl(container, VFIO_IOMMU_MAP_DMA, &m)) {
            return fail(bdf, "VFIO_IOMMU_MAP_DMA");
        }
        map_s += now_s() - t0;
        t0 = now_s();
        if (ioctl(container, VFIO_IOMMU_UNMAP_DMA, &u)) {
            return fail(bdf, "VFIO_IOMMU_UNMAP_DMA");
        }
        unmap_s += now_s() - t0;
    }
    printf("{\"device\": \"%s\", \"bar\": %u, \"bytes\": %llu, "
           "\"mmap\": \"%s\", \"address\": \"%p\", \"repeat\": %d, "
           "\"map_s\": %.4f, \"unmap_s\": %.4f}\n", bdf, bar,
           (unsigned long long)ri->size, placement, p, repeat,
           map_s / repeat, unmap_s / repeat);
    return 0;
}

static int bench_device(const char *bdf, unsigned bar, int repeat)
{
    struct vfio_group_status st = { .argsz = sizeof(st) };
    struct vfio_region_info ri = { .argsz = sizeof(ri), .index = bar };
    int container, group, dev, id = group_of(bdf), rc;
    char path[64];
    void *p;

    if (id < 0) {
        return fail(bdf, "iommu_group");
    }
    snprintf(path, sizeof(path), "/dev/vfio/%d", id);
    container = open("/dev/vfio/vfio", O_RDWR);
    group = open(path, O_RDWR);
    if (container < 0 || group < 0) {
        return fail(bdf, "open /dev/vfio");
    }
    if (ioctl(group, VFIO_GROUP_GET_STATUS, &st) ||
        ioctl(group, VFIO_GROUP_SET_CONTAINER, &container) ||
        ioctl(container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU)) {
        return fail(bdf, "attaching the group to a type1 container");
    }
    dev = ioctl(group, VFIO_GROUP_GET_DEVICE_FD, bdf);
    if (dev < 0 || ioctl(dev, VFIO_DEVICE_GET_REGION_INFO, &ri)) {
        return fail(bdf, "VFIO_DEVICE_GET_REGION_INFO");
    }
    p = mmap_aligned(dev, ri.offset, ri.size, bar_alignment(ri.size));
    if (p == MAP_FAILED) {
        return fail(bdf, "aligned mmap of the BAR");
    }
    rc = bench_mapping(container, bdf, bar, &ri, p, "aligned", repeat);
    munmap(p, ri.size);
    p = mmap(NULL, ri.size, PROT_READ | PROT_WRITE, MAP_SHARED, dev,
             ri.offset);
    if (p == MAP_FAILED) {
        return fail(bdf, "mmap of the BAR");
    }
    rc |= bench_mapping(container, bdf, bar, &ri, p, "plain", repeat);
    munmap(p, ri.size);
    close(dev);
    close(group);
    close(container);
    return rc;
}

int main(int argc, char **argv)
{
    int repeat, i, rc = 0;

    if (argc < 4 || argc % 2) {
        fprintf(stderr, "usage: type1-map-bench REPEAT BDF BAR [BDF BAR...]\n");
        return 2;
    }
    repeat = atoi(argv[1]);
    for (i = 2; i + 1 < argc; i += 2) {
        rc |= bench_device(argv[i], (unsigned)atoi(argv[i + 1]), repeat);
    }
    return rc;
}
