/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Exercises the kernel helper inside the virtual GPU host, with real VFIO
 * and a real DMA engine (QEMU's edu). Prints one JSON object of findings;
 * tests/integration/test_kernel_helper.py judges them.
 *
 *   helper-test dma    EDU PEER BAR IOVA OFFSET SEED helper|vfio|none
 *   helper-test validate EDU PEER IOPEER LONELY
 *   helper-test stress EDU PEER THREADS ROUNDS
 *   helper-test killed EDU PEER
 *   helper-test unbind EDU PEER
 *   helper-test bench  EDU PEER BAR
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/vfio.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpup2p/helper.h"
#include "gpup2p/topo.h"

#define EDU_DMA_SRC     0x80
#define EDU_DMA_DST     0x88
#define EDU_DMA_COUNT   0x90
#define EDU_DMA_CMD     0x98
#define EDU_BUFFER      0x40000
#define EDU_CMD_START   1
#define EDU_CMD_TO_RAM  2
#define HOST_IOVA       0x100000ULL
#define CHUNK           4096

static void die(const char *what, GError *err)
{
    printf("{\"error\": \"%s: %s\"}\n", what, err ? err->message :
           g_strerror(errno));
    exit(1);
}

static int device_fd(GpVfioSession *s, const char *bdf)
{
    char norm[16];
    uint32_t addr;
    int fd;

    gp_pci_addr_parse(bdf, &addr, NULL);
    gp_pci_addr_format(addr, norm);
    fd = ioctl(gp_vfio_session_group_fd(s, bdf), VFIO_GROUP_GET_DEVICE_FD,
               norm);
    if (fd < 0) {
        die("VFIO_GROUP_GET_DEVICE_FD", NULL);
    }
    return fd;
}

static void *map_region(int dev, unsigned index, uint64_t *size)
{
    struct vfio_region_info ri = { .argsz = sizeof(ri), .index = index };
    void *p;

    if (ioctl(dev, VFIO_DEVICE_GET_REGION_INFO, &ri)) {
        die("VFIO_DEVICE_GET_REGION_INFO", NULL);
    }
    p = mmap(NULL, ri.size, PROT_READ | PROT_WRITE, MAP_SHARED, dev,
             ri.offset);
    if (p == MAP_FAILED) {
        die("mmap of a BAR", NULL);
    }
    *size = ri.size;
    return p;
}

static void bus_master(int dev)
{
    struct vfio_region_info ri = { .argsz = sizeof(ri),
                                   .index = VFIO_PCI_CONFIG_REGION_INDEX };
    uint16_t cmd;

    ioctl(dev, VFIO_DEVICE_GET_REGION_INFO, &ri);
    pread(dev, &cmd, 2, ri.offset + 4);
    cmd |= 0x6;                         /* memory space, bus master */
    pwrite(dev, &cmd, 2, ri.offset + 4);
}

static bool edu_dma(volatile uint8_t *regs, uint64_t src, uint64_t dst,
                    uint64_t cmd)
{
    int i;

    *(volatile uint64_t *)(regs + EDU_DMA_SRC) = src;
    *(volatile uint64_t *)(regs + EDU_DMA_DST) = dst;
    *(volatile uint64_t *)(regs + EDU_DMA_COUNT) = CHUNK;
    *(volatile uint64_t *)(regs + EDU_DMA_CMD) = cmd | EDU_CMD_START;
    for (i = 0; i < 5000; i++) {        /* edu starts ~100 ms later */
        if (!(*(volatile uint64_t *)(regs + EDU_DMA_CMD) & EDU_CMD_START)) {
            return true;
        }
        usleep(1000);
    }
    return false;
}

static struct gpup2p_map map_req(GpVfioSession *s, const char *init,
                                 const char *peer, unsigned bar,
                                 uint64_t off, uint64_t size, uint64_t iova)
{
    struct gpup2p_map m = {
        .flags = GPUP2P_MAP_READ | GPUP2P_MAP_WRITE, .bar = bar,
        .offset = off, .size = size, .iova = iova,
    };

    gp_pci_addr_parse(init, &m.initiator.pci_addr, NULL);
    gp_pci_addr_parse(peer, &m.peer.pci_addr, NULL);
    m.initiator.vfio_group_fd = gp_vfio_session_group_fd(s, init);
    m.peer.vfio_group_fd = gp_vfio_session_group_fd(s, peer);
    return m;
}

static int cmd_dma(char **argv)
{
    const char *edu = argv[0], *peer = argv[1], *mode = argv[6];
    const char *bdfs[] = { edu, peer };
    unsigned bar = atoi(argv[2]);
    uint64_t iova = strtoull(argv[3], NULL, 0);
    uint64_t off = strtoull(argv[4], NULL, 0);
    unsigned seed = atoi(argv[5]), i;
    struct gpup2p_audit_entry ae = { .bar = bar, .offset = 0, .iova = iova };
    struct gpup2p_audit a = { .count = 1 };
    g_autoptr(GError) err = NULL;
    GpVfioSession s;
    uint64_t regs_size, peer_size;
    volatile uint8_t *regs;
    uint8_t *buf;
    int edu_fd, hfd, done1, done2;

    if (!gp_vfio_session_open(&s, bdfs, 2, &err)) {
        die("session", err);
    }
    edu_fd = device_fd(&s, edu);
    regs = map_region(edu_fd, 0, &regs_size);
    bus_master(edu_fd);
    buf = aligned_alloc(CHUNK, CHUNK);
    for (i = 0; i < CHUNK; i++) {
        buf[i] = (uint8_t)(i * 7 + seed);
    }
    {
        struct vfio_iommu_type1_dma_map dm = {
            .argsz = sizeof(dm), .flags = VFIO_DMA_MAP_FLAG_READ,
            .vaddr = (uintptr_t)buf, .iova = HOST_IOVA, .size = CHUNK,
        };

        if (ioctl(s.container, VFIO_IOMMU_MAP_DMA, &dm)) {
            die("VFIO_IOMMU_MAP_DMA (host buffer)", NULL);
        }
    }
    hfd = gp_helper_open(&err);
    if (hfd < 0) {
        die("helper", err);
    }
    peer_size = 1 << 20;
    if (!strcmp(mode, "helper")) {
        struct gpup2p_map m = map_req(&s, edu, peer, bar, 0, peer_size, iova);

        if (!gp_helper_map(hfd, &m, &err)) {
            die("helper map", err);
        }
    } else if (!strcmp(mode, "vfio")) {
        /* What QEMU's type1 backend does: map the BAR's mmap. */
        int pfd = device_fd(&s, peer);
        uint64_t bar_size;
        void *p = map_region(pfd, bar, &bar_size);
        struct vfio_iommu_type1_dma_map dm = {
            .argsz = sizeof(dm),
            .flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
            .vaddr = (uintptr_t)p, .iova = iova, .size = peer_size,
        };

        if (ioctl(s.container, VFIO_IOMMU_MAP_DMA, &dm)) {
            die("VFIO_IOMMU_MAP_DMA (peer BAR)", NULL);
        }
    }
    done1 = edu_dma(regs, HOST_IOVA, EDU_BUFFER, 0);
    done2 = edu_dma(regs, EDU_BUFFER, iova + off, EDU_CMD_TO_RAM);
    /* The audit sees the helper's mapping and the VMM's alike. */
    gp_pci_addr_parse(edu, &a.initiator.pci_addr, NULL);
    a.initiator.vfio_group_fd = gp_vfio_session_group_fd(&s, edu);
    gp_pci_addr_parse(peer, &ae.peer, NULL);
    ae.size = peer_size;
    a.entries = (uintptr_t)&ae;
    if (!gp_helper_audit(hfd, &a, &err)) {
        die("audit", err);
    }
    printf("{\"mode\": \"%s\", \"dma_to_edu\": %s, \"dma_to_peer\": %s, "
           "\"audit\": %u, \"audit_first_bad\": \"0x%llx\"}\n", mode,
           done1 ? "true" : "false", done2 ? "true" : "false", ae.status,
           (unsigned long long)ae.first_bad_iova);
    close(hfd);
    gp_vfio_session_close(&s);
    return 0;
}

static uint64_t bar_size(const char *bdf, unsigned bar)
{
    g_autofree char *path = g_strdup_printf(
        "/sys/bus/pci/devices/%s/resource", bdf);
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    GpBar b = { 0 };

    if (g_file_get_contents(path, &text, NULL, NULL)) {
        lines = g_strsplit(text, "\n", -1);
        if (g_strv_length(lines) > bar) {
            gp_bar_parse_resource_line(lines[bar], bar, &b);
        }
    }
    return b.size;
}

static void report_errno(const char *name, bool ok, int err, bool *first)
{
    printf("%s\"%s\": \"%s\"", *first ? "" : ", ", name,
           ok ? "ok" : strerrorname_np(err) ? strerrorname_np(err) : "?");
    *first = false;
}

static void try_map(int hfd, struct gpup2p_map m, const char *name,
                    bool *first, uint64_t *id)
{
    bool ok = gp_helper_map(hfd, &m, NULL);

    report_errno(name, ok, errno, first);
    if (ok && id) {
        *id = m.id;
    }
}

static int cmd_validate(char **argv)
{
    const char *edu = argv[0], *peer = argv[1], *io = argv[2];
    const char *lonely = argv[3];
    const char *bdfs[] = { edu, peer, io };
    g_autoptr(GError) err = NULL;
    GpVfioSession s;
    struct gpup2p_map m;
    uint64_t id = 0;
    bool first = true;
    char path[64];
    int hfd, nul, lonely_fd;
    pid_t child;

    if (!gp_vfio_session_open(&s, bdfs, 3, &err)) {
        die("session", err);
    }
    hfd = gp_helper_open(&err);
    if (hfd < 0) {
        die("helper", err);
    }
    printf("{");
    m = map_req(&s, edu, peer, 2, 0, 0x10000, 0x40000000);
    try_map(hfd, m, "valid", &first, &id);
    try_map(hfd, m, "overlap-own", &first, NULL);
    m = map_req(&s, edu, peer, 2, 0, 0x10000, 0x40008000);
    try_map(hfd, m, "overlap-partial", &first, NULL);
    {
        /* A VMM mapping at the same IOVA range. */
        void *buf = aligned_alloc(4096, 4096);
        struct vfio_iommu_type1_dma_map dm = {
            .argsz = sizeof(dm), .flags = VFIO_DMA_MAP_FLAG_READ,
            .vaddr = (uintptr_t)buf, .iova = 0x50000000, .size = 4096,
        };

        ioctl(s.container, VFIO_IOMMU_MAP_DMA, &dm);
        m = map_req(&s, edu, peer, 2, 0, 0x10000, 0x50000000);
        try_map(hfd, m, "overlap-vmm", &first, NULL);
    }
    m = map_req(&s, edu, peer, 2, 0, 0x10000, 0x60000800);
    try_map(hfd, m, "unaligned-iova", &first, NULL);
    m = map_req(&s, edu, peer, 2, 0x800, 0x1000, 0x60000000);
    try_map(hfd, m, "unaligned-offset", &first, NULL);
    m = map_req(&s, edu, peer, 2, 0, 0, 0x60000000);
    try_map(hfd, m, "size-zero", &first, NULL);
    m = map_req(&s, edu, peer, 2, 0, 0x2000, 0xfffffffffffff000ULL);
    try_map(hfd, m, "wrap-around", &first, NULL);
    m = map_req(&s, edu, peer, 2, bar_size(peer, 2) - 0x1000, 0x2000,
                0x60000000);
    try_map(hfd, m, "past-bar-end", &first, NULL);
    m = map_req(&s, edu, peer, 7, 0, 0x1000, 0x60000000);
    try_map(hfd, m, "bar-index", &first, NULL);
    m = map_req(&s, edu, peer, 1, 0, 0x1000, 0x60000000);
    try_map(hfd, m, "bar-absent", &first, NULL);
    m = map_req(&s, edu, io, 2, 0, 0x1000, 0x60000000);
    try_map(hfd, m, "bar-io", &first, NULL);
    m = map_req(&s, edu, peer, 2, 0, 0x1000, 0x60000000);
    m.flags = 0;
    try_map(hfd, m, "no-access-flags", &first, NULL);
    m = map_req(&s, edu, peer, 2, 0, 0x1000, 0x60000000);
    m.initiator.vfio_group_fd = 999;
    try_map(hfd, m, "closed-fd", &first, NULL);
    nul = open("/dev/null", O_RDWR);
    m.initiator.vfio_group_fd = nul;
    try_map(hfd, m, "not-vfio-fd", &first, NULL);
    m = map_req(&s, edu, peer, 2, 0, 0x1000, 0x60000000);
    m.initiator.vfio_group_fd = gp_vfio_session_group_fd(&s, peer);
    try_map(hfd, m, "wrong-group", &first, NULL);
    m = map_req(&s, edu, peer, 2, 0, 0x1000, 0x60000000);
    gp_pci_addr_parse("0000:fe:1f.7", &m.peer.pci_addr, NULL);
    try_map(hfd, m, "no-such-device", &first, NULL);
    /* A group opened without a container has no VFIO domain. */
    {
        char norm[16];
        uint32_t addr;
        g_autofree char *link = NULL, *target = NULL;

        gp_pci_addr_parse(lonely, &addr, NULL);
        gp_pci_addr_format(addr, norm);
        link = g_strdup_printf("/sys/bus/pci/devices/%s/iommu_group", norm);
        target = g_file_read_link(link, NULL);
        g_snprintf(path, sizeof(path), "/dev/vfio/%s",
                   strrchr(target, '/') + 1);
        lonely_fd = open(path, O_RDWR);
        m = map_req(&s, edu, peer, 2, 0, 0x1000, 0x60000000);
        m.initiator.pci_addr = addr;
        m.initiator.vfio_group_fd = lonely_fd;
        try_map(hfd, m, "no-vfio-domain", &first, NULL);
    }
    /* Without CAP_SYS_ADMIN the ioctl itself is refused. */
    child = fork();
    if (child == 0) {
        m = map_req(&s, edu, peer, 2, 0, 0x1000, 0x60000000);
        if (setuid(65534) < 0) {
            _exit(2);
        }
        _exit(gp_helper_map(hfd, &m, NULL) ? 0 : errno == EPERM ? 1 : 3);
    } else {
        int st;

        waitpid(child, &st, 0);
        report_errno("no-cap-sys-admin", false,
                     WEXITSTATUS(st) == 1 ? EPERM : EIO, &first);
    }
    {
        /* errno is read after each call, not as a sibling argument. */
        bool ok = gp_helper_unmap(hfd, 12345, false, NULL);

        report_errno("unmap-unknown", ok, errno, &first);
        ok = gp_helper_unmap(hfd, id, false, NULL);
        report_errno("unmap-valid", ok, errno, &first);
    }
    {
        unsigned n = 99;
        g_autofree struct gpup2p_mapping_info *v =
            gp_helper_list(hfd, true, &n, NULL);

        printf(", \"left\": %u}\n", v ? n : 999);
    }
    close(hfd);
    gp_vfio_session_close(&s);
    return 0;
}

typedef struct {
    GpVfioSession *s;
    const char *edu, *peer;
    int hfd, rounds, index, failures;
} StressArgs;

static void *stress_thread(void *p)
{
    StressArgs *a = p;
    int i;

    for (i = 0; i < a->rounds; i++) {
        struct gpup2p_map m = map_req(a->s, a->edu, a->peer, 2,
                                      (uint64_t)a->index * 0x10000, 0x10000,
                                      0x70000000ULL + a->index * 0x100000ULL);
        unsigned n;
        g_autofree struct gpup2p_mapping_info *v = NULL;

        if (!gp_helper_map(a->hfd, &m, NULL) ||
            !gp_helper_unmap(a->hfd, m.id, false, NULL)) {
            a->failures++;
        }
        v = gp_helper_list(a->hfd, false, &n, NULL);
    }
    return NULL;
}

static int cmd_stress(char **argv)
{
    const char *bdfs[] = { argv[0], argv[1] };
    int threads = atoi(argv[2]), rounds = atoi(argv[3]), i, failures = 0;
    g_autoptr(GError) err = NULL;
    pthread_t tid[16];
    StressArgs args[16];
    GpVfioSession s;
    unsigned n = 99;
    g_autofree struct gpup2p_mapping_info *v = NULL;
    int hfd;

    if (!gp_vfio_session_open(&s, bdfs, 2, &err)) {
        die("session", err);
    }
    hfd = gp_helper_open(&err);
    for (i = 0; i < threads && i < 16; i++) {
        args[i] = (StressArgs){ &s, argv[0], argv[1], hfd, rounds, i, 0 };
        pthread_create(&tid[i], NULL, stress_thread, &args[i]);
    }
    for (i = 0; i < threads && i < 16; i++) {
        pthread_join(tid[i], NULL);
        failures += args[i].failures;
    }
    v = gp_helper_list(hfd, true, &n, NULL);
    printf("{\"threads\": %d, \"rounds\": %d, \"failures\": %d, "
           "\"left\": %u}\n", threads, rounds, failures, v ? n : 999);
    close(hfd);
    gp_vfio_session_close(&s);
    return 0;
}

/* A process holding mappings is killed: they go with it. */
static int cmd_killed(char **argv)
{
    int pipefd[2], hfd, st;
    char c;
    pid_t child;
    unsigned before = 0, after = 99;
    g_autofree struct gpup2p_mapping_info *v1 = NULL, *v2 = NULL;

    if (pipe(pipefd)) {
        die("pipe", NULL);
    }
    child = fork();
    if (child == 0) {
        const char *bdfs[] = { argv[0], argv[1] };
        GpVfioSession s;
        struct gpup2p_map m;
        int fd, i;

        if (!gp_vfio_session_open(&s, bdfs, 2, NULL)) {
            _exit(1);
        }
        fd = gp_helper_open(NULL);
        for (i = 0; i < 4; i++) {
            m = map_req(&s, argv[0], argv[1], 2, 0, 0x10000,
                        0x80000000ULL + i * 0x100000ULL);
            gp_helper_map(fd, &m, NULL);
        }
        write(pipefd[1], "x", 1);
        pause();
        _exit(0);
    }
    read(pipefd[0], &c, 1);
    hfd = gp_helper_open(NULL);
    v1 = gp_helper_list(hfd, true, &before, NULL);
    kill(child, SIGKILL);
    waitpid(child, &st, 0);
    v2 = gp_helper_list(hfd, true, &after, NULL);
    printf("{\"before_kill\": %u, \"after_kill\": %u}\n", before, after);
    close(hfd);
    return 0;
}

/* The peer is unbound from vfio-pci while mapped: the mapping goes first. */
static int cmd_unbind(char **argv)
{
    const char *bdfs[] = { argv[0], argv[1] };
    g_autoptr(GError) err = NULL;
    GpVfioSession s;
    struct gpup2p_map m;
    unsigned before = 0, after = 99;
    g_autofree struct gpup2p_mapping_info *v1 = NULL, *v2 = NULL;
    char norm[16];
    uint32_t addr;
    FILE *f;
    int hfd, ok;

    if (!gp_vfio_session_open(&s, bdfs, 2, &err)) {
        die("session", err);
    }
    hfd = gp_helper_open(&err);
    m = map_req(&s, argv[0], argv[1], 2, 0, 0x10000, 0x90000000ULL);
    ok = gp_helper_map(hfd, &m, &err);
    v1 = gp_helper_list(hfd, false, &before, NULL);
    gp_pci_addr_parse(argv[1], &addr, NULL);
    gp_pci_addr_format(addr, norm);
    f = fopen("/sys/bus/pci/drivers/vfio-pci/unbind", "w");
    fputs(norm, f);
    fclose(f);
    v2 = gp_helper_list(hfd, false, &after, NULL);
    /* Mapping an unbound device is refused. */
    m = map_req(&s, argv[0], argv[1], 2, 0, 0x10000, 0x90000000ULL);
    printf("{\"mapped\": %s, \"before_unbind\": %u, \"after_unbind\": %u, ",
           ok ? "true" : "false", before, after);
    ok = gp_helper_map(hfd, &m, NULL);
    printf("\"map_unbound\": \"%s\"}\n",
           ok ? "ok" : strerrorname_np(errno));
    close(hfd);
    gp_vfio_session_close(&s);
    f = fopen("/sys/bus/pci/drivers_probe", "w");
    fputs(norm, f);
    fclose(f);
    return 0;
}

static double now_us(void)
{
    return (double)g_get_monotonic_time();
}

/*
 * Map and unmap windows of growing size with the helper, beside VFIO's own
 * VFIO_IOMMU_MAP_DMA of the same BAR's mmap (what a type1 VMM does).
 */
static int cmd_bench(char **argv)
{
    const char *bdfs[] = { argv[0], argv[1] };
    unsigned bar = atoi(argv[2]), i;
    const int iters = 20;
    g_autoptr(GError) err = NULL;
    uint64_t sizes[] = { 0x10000, 0x100000, 0x1000000 }, bar_size;
    GpVfioSession s;
    void *p;
    int hfd, pfd;
    bool first = true;

    if (!gp_vfio_session_open(&s, bdfs, 2, &err)) {
        die("session", err);
    }
    hfd = gp_helper_open(&err);
    pfd = device_fd(&s, argv[1]);
    p = map_region(pfd, bar, &bar_size);
    printf("[");
    for (i = 0; i < G_N_ELEMENTS(sizes) && sizes[i] <= bar_size; i++) {
        double t0, helper_us, vfio_us;
        int k;

        t0 = now_us();
        for (k = 0; k < iters; k++) {
            struct gpup2p_map m = map_req(&s, argv[0], argv[1], bar, 0,
                                          sizes[i], 0xb0000000ULL);

            if (!gp_helper_map(hfd, &m, &err) ||
                !gp_helper_unmap(hfd, m.id, false, &err)) {
                die("bench helper", err);
            }
        }
        helper_us = (now_us() - t0) / iters;
        t0 = now_us();
        for (k = 0; k < iters; k++) {
            struct vfio_iommu_type1_dma_map dm = {
                .argsz = sizeof(dm),
                .flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
                .vaddr = (uintptr_t)p, .iova = 0xb0000000ULL,
                .size = sizes[i],
            };
            struct vfio_iommu_type1_dma_unmap du = {
                .argsz = sizeof(du), .iova = 0xb0000000ULL, .size = sizes[i],
            };

            if (ioctl(s.container, VFIO_IOMMU_MAP_DMA, &dm) ||
                ioctl(s.container, VFIO_IOMMU_UNMAP_DMA, &du)) {
                die("bench vfio", NULL);
            }
        }
        vfio_us = (now_us() - t0) / iters;
        printf("%s{\"size\": %llu, \"helper_us\": %.1f, \"vfio_us\": %.1f, "
               "\"helper_over_vfio\": %.2f}", first ? "" : ", ",
               (unsigned long long)sizes[i], helper_us, vfio_us,
               helper_us / vfio_us);
        first = false;
    }
    printf("]\n");
    close(hfd);
    gp_vfio_session_close(&s);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 9 && !strcmp(argv[1], "dma")) {
        return cmd_dma(argv + 2);
    }
    if (argc >= 6 && !strcmp(argv[1], "validate")) {
        return cmd_validate(argv + 2);
    }
    if (argc >= 6 && !strcmp(argv[1], "stress")) {
        return cmd_stress(argv + 2);
    }
    if (argc >= 4 && !strcmp(argv[1], "killed")) {
        return cmd_killed(argv + 2);
    }
    if (argc >= 4 && !strcmp(argv[1], "unbind")) {
        return cmd_unbind(argv + 2);
    }
    if (argc >= 5 && !strcmp(argv[1], "bench")) {
        return cmd_bench(argv + 2);
    }
    fprintf(stderr, "usage: see the comment at the top of helper-test.c\n");
    return 2;
}
