/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Runs in a (nested) guest whose IOMMU translates (a vIOMMU): the guest
 * maps a peer's BAR in its own IOMMU, as a guest driver does before P2P,
 * and a passed-through edu DMAs to that IOVA. Only the guest's map can
 * make it arrive: the IOVAs are not guest-physical addresses, and the
 * host IOMMU holds what the VMM shadows from the vIOMMU.
 *
 *   guest-viommu-dma [--keep-map] OFFSET SEED
 *
 * edu (1234:11e8) and ivshmem (1af4:1110), found by id, must be bound to
 * this guest's vfio-pci. One VFIO type1 container holds both, with a
 * RAM buffer at IOVA_SRC. edu then writes the pattern three times:
 *  - to the guest-physical address of ivshmem's BAR2 + OFFSET + 4096,
 *    which without a vIOMMU reaches the peer (guest-dma.c): the guest's
 *    IOMMU has no map there, so nothing may arrive;
 *  - to IOVA_PEER + OFFSET once that page of the BAR2 mmap is mapped
 *    there: must arrive;
 *  - the pattern inverted, to the same IOVA after the guest unmapped it:
 *    nothing may arrive (the page keeps the first pattern). Not with
 *    --keep-map, where the second write is to fault on its own.
 * Prints JSON; the judges are outside: ivshmem's backing file and the
 * host kernel's IOMMU faults. The BAR mmap is never read here: with
 * x-no-mmap it traps, and KVM cannot emulate the vector loads of a libc
 * memcmp (the guest would take #UD).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/vfio.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "guest-edu.h"

/* Guest IOVAs that are no guest-physical address: above the nested
 * guest's RAM (512 MiB), below the 32-bit window its firmware places
 * BARs in (ivshmem's BAR2 lands at 0xfc000000) and the MSI range the
 * IOMMU reserves. */
#define IOVA_SRC  0x30000000ULL
#define IOVA_PEER 0x40000000ULL

struct vdev {
    char bdf[sizeof(((struct dirent *)0)->d_name)];
    int group;
    int fd;
};

static int group_of(const char *bdf)
{
    char path[300], link[300];
    ssize_t n;

    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/iommu_group", bdf);
    n = readlink(path, link, sizeof(link) - 1);
    if (n <= 0) {
        return -1;
    }
    link[n] = 0;
    return atoi(basename(link));
}

static void fail(const char *what)
{
    printf("{\"error\": \"%s: %s\"}\n", what, strerror(errno));
    exit(1);
}

/* The group's fd, added to @container. */
static int add_group(int container, int group)
{
    struct vfio_group_status st = { .argsz = sizeof(st) };
    char path[64];
    int fd;

    snprintf(path, sizeof(path), "/dev/vfio/%d", group);
    fd = open(path, O_RDWR);
    if (fd < 0) {
        fail("open group");
    }
    if (ioctl(fd, VFIO_GROUP_GET_STATUS, &st)) {
        fail("VFIO_GROUP_GET_STATUS");
    }
    if (!(st.flags & VFIO_GROUP_FLAGS_VIABLE)) {
        errno = EBUSY;
        fail("group not viable (every device bound to vfio-pci?)");
    }
    if (ioctl(fd, VFIO_GROUP_SET_CONTAINER, &container)) {
        fail("VFIO_GROUP_SET_CONTAINER");
    }
    return fd;
}

static void region(int fd, unsigned index, struct vfio_region_info *ri)
{
    memset(ri, 0, sizeof(*ri));
    ri->argsz = sizeof(*ri);
    ri->index = index;
    if (ioctl(fd, VFIO_DEVICE_GET_REGION_INFO, ri)) {
        fail("VFIO_DEVICE_GET_REGION_INFO");
    }
}

static void *map_bar(int fd, unsigned index, uint64_t *size)
{
    struct vfio_region_info ri;
    void *p;

    region(fd, index, &ri);
    if (!(ri.flags & VFIO_REGION_INFO_FLAG_MMAP)) {
        errno = ENOTSUP;
        fail("BAR not mmappable");
    }
    p = mmap(NULL, ri.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
             ri.offset);
    if (p == MAP_FAILED) {
        fail("mmap BAR");
    }
    *size = ri.size;
    return p;
}

/* Memory decode and bus mastering, as a driver's enable does. */
static void enable(int fd)
{
    struct vfio_region_info ri;
    uint16_t cmd;

    region(fd, VFIO_PCI_CONFIG_REGION_INDEX, &ri);
    if (pread(fd, &cmd, 2, ri.offset + 4) != 2) {
        fail("read command register");
    }
    cmd |= 0x6;
    if (pwrite(fd, &cmd, 2, ri.offset + 4) != 2) {
        fail("write command register");
    }
}

static int map_dma(int container, void *vaddr, uint64_t iova, uint64_t size)
{
    struct vfio_iommu_type1_dma_map m = {
        .argsz = sizeof(m),
        .flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
        .vaddr = (uintptr_t)vaddr,
        .iova = iova,
        .size = size,
    };

    return ioctl(container, VFIO_IOMMU_MAP_DMA, &m) ? -errno : 0;
}

/* The bytes type1 unmapped (0 where nothing was mapped), or -errno. */
static int64_t unmap_dma(int container, uint64_t iova, uint64_t size)
{
    struct vfio_iommu_type1_dma_unmap u = {
        .argsz = sizeof(u),
        .iova = iova,
        .size = size,
    };

    return ioctl(container, VFIO_IOMMU_UNMAP_DMA, &u) ? -errno :
           (int64_t)u.size;
}

int main(int argc, char **argv)
{
    struct vdev edu = { .fd = -1 }, shm = { .fd = -1 };
    int container, edu_gfd, shm_gfd, to_edu, before, after;
    int map_src, map_peer, seed, to_edu_again = 0, revoked = 0;
    int64_t unmapped = 0;
    bool revoke = true;
    volatile uint8_t *regs;
    uint64_t off, regs_size, bar_size, peer_gpa;
    uint8_t *buf, *peer;
    int i;

    if (argc == 4 && !strcmp(argv[1], "--keep-map")) {
        revoke = false;
        argv++;
        argc--;
    }
    if (argc != 3 || find_pci("0x1234", "0x11e8", edu.bdf, sizeof(edu.bdf)) ||
        find_pci("0x1af4", "0x1110", shm.bdf, sizeof(shm.bdf))) {
        printf("{\"error\": \"usage: guest-viommu-dma [--keep-map] OFFSET "
               "SEED, with edu and ivshmem present\"}\n");
        return 2;
    }
    off = strtoull(argv[1], NULL, 0);
    seed = atoi(argv[2]);
    edu.group = group_of(edu.bdf);
    shm.group = group_of(shm.bdf);
    if (edu.group < 0 || shm.group < 0) {
        errno = ENODEV;
        fail("no IOMMU group (is the guest's IOMMU on?)");
    }
    container = open("/dev/vfio/vfio", O_RDWR);
    if (container < 0) {
        fail("open /dev/vfio/vfio");
    }
    if (ioctl(container, VFIO_GET_API_VERSION) != VFIO_API_VERSION ||
        ioctl(container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) != 1) {
        errno = ENOTSUP;
        fail("no VFIO type1v2 container");
    }
    edu_gfd = add_group(container, edu.group);
    shm_gfd = shm.group == edu.group ? edu_gfd :
              add_group(container, shm.group);
    if (ioctl(container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU)) {
        fail("VFIO_SET_IOMMU");
    }
    edu.fd = ioctl(edu_gfd, VFIO_GROUP_GET_DEVICE_FD, edu.bdf);
    shm.fd = ioctl(shm_gfd, VFIO_GROUP_GET_DEVICE_FD, shm.bdf);
    if (edu.fd < 0 || shm.fd < 0) {
        fail("VFIO_GROUP_GET_DEVICE_FD");
    }
    enable(edu.fd);
    enable(shm.fd);
    regs = map_bar(edu.fd, VFIO_PCI_BAR0_REGION_INDEX, &regs_size);
    peer = map_bar(shm.fd, VFIO_PCI_BAR2_REGION_INDEX, &bar_size);
    if (off + 2 * CHUNK > bar_size) {
        errno = EINVAL;
        fail("OFFSET beyond ivshmem's BAR2");
    }

    buf = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        fail("mmap buffer");
    }
    for (i = 0; i < CHUNK; i++) {
        buf[i] = (uint8_t)(i * 7 + seed);
    }
    peer_gpa = bar_start(shm.bdf, 2);
    map_src = map_dma(container, buf, IOVA_SRC, CHUNK);
    to_edu = map_src == 0 && edu_dma(regs, IOVA_SRC, EDU_BUFFER, 0);
    /* The peer's GPA, which the guest's IOMMU does not map. */
    before = edu_dma(regs, EDU_BUFFER, peer_gpa + off + CHUNK,
                     EDU_TO_MEMORY);
    /* One page, as few vIOMMU invalidations as can be (each one an
     * MMIO exit of the nested guest). */
    map_peer = map_dma(container, peer + off, IOVA_PEER + off, CHUNK);
    after = map_peer == 0 &&
            edu_dma(regs, EDU_BUFFER, IOVA_PEER + off, EDU_TO_MEMORY);
    /* Revoked: the inverted pattern must not reach the page. */
    if (revoke) {
        unmapped = unmap_dma(container, IOVA_PEER + off, CHUNK);
        for (i = 0; i < CHUNK; i++) {
            buf[i] = (uint8_t)~buf[i];
        }
        to_edu_again = edu_dma(regs, IOVA_SRC, EDU_BUFFER, 0);
        revoked = unmapped == CHUNK &&
                  edu_dma(regs, EDU_BUFFER, IOVA_PEER + off, EDU_TO_MEMORY);
    }
    printf("{\"edu\": \"%s\", \"ivshmem\": \"%s\", \"edu_group\": %d, "
           "\"ivshmem_group\": %d, \"offset\": \"0x%llx\", \"seed\": %d, "
           "\"iova_src\": \"0x%llx\", \"iova_peer\": \"0x%llx\", "
           "\"peer_gpa\": \"0x%llx\", \"map_src\": %d, \"map_peer\": %d, "
           "\"revoke\": %s, \"unmapped_bytes\": %lld, \"to_edu\": %d, "
           "\"to_peer_gpa\": %d, "
           "\"to_peer\": %d, \"to_edu_again\": %d, "
           "\"to_peer_unmapped\": %d}\n",
           edu.bdf, shm.bdf, edu.group, shm.group, (unsigned long long)off,
           seed, (unsigned long long)IOVA_SRC, (unsigned long long)IOVA_PEER,
           (unsigned long long)peer_gpa, map_src, map_peer,
           revoke ? "true" : "false", (long long)unmapped,
           to_edu, before, after, to_edu_again, revoked);
    return 0;
}
