/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * An ioctl fuzzer for /dev/gpup2p: PROCS processes of THREADS threads each
 * run OPS random operations: ioctls with the module's numbers, old and
 * unknown numbers, boundary argsz, flags and reserved values, real and
 * made-up PCI addresses, NULL, wild, kernel and half-unmapped pointers,
 * on file descriptors that other threads close and reopen at random.
 * With REMOVE (a BDF), one more thread removes that device and rescans
 * the bus while the others ask about it. Prints the figures as JSON:
 * operations run and a histogram of the errno values seen.
 *
 *   fuzz PROCS THREADS OPS SEED [REMOVE]
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpup2p/module-client.h"

#define NFDS        4
#define MAX_ERRNO   256
#define MAX_ADDRS   256

/* Shared by every process (MAP_SHARED): the figures. */
typedef struct {
    atomic_ulong ops;
    atomic_ulong by_errno[MAX_ERRNO];   /* [0]: success */
    atomic_ulong removes;
} Figures;

static Figures *figures;
static atomic_int fds[NFDS];
static uint32_t addrs[MAX_ADDRS];
static unsigned naddrs;
static char *guard;             /* a page, the next one unmapped */
static unsigned long ops_per_thread;
static const char *remove_bdf;
static atomic_int stop_remove;

static const uint32_t argsz_edges[] = {
    0, 1, 4, 7, 8, 11, 12, 15, 16, 23, 24, 31, 32, 47, 48, 49, 56,
    63, 64, 4095, 4096, 4097, 65536, 0x7fffffff, 0x80000000, 0xffffffff,
};

static const uint32_t word_edges[] = {
    0, 1, 2, 4, 0x80, 0x8000, 0x80000000, 0xffffffff, 0x7fffffff,
};

static uint32_t pick(unsigned *seed, const uint32_t *v, size_t n)
{
    return v[rand_r(seed) % n];
}

static uint32_t rand_word(unsigned *seed)
{
    switch (rand_r(seed) % 4) {
    case 0:
        return 0;
    case 1:
        return pick(seed, word_edges, G_N_ELEMENTS(word_edges));
    case 2:
        return 1u << (rand_r(seed) % 32);
    }
    return (uint32_t)rand_r(seed) ^ ((uint32_t)rand_r(seed) << 16);
}

static uint32_t rand_addr(unsigned *seed)
{
    if (naddrs && rand_r(seed) % 4) {
        return addrs[rand_r(seed) % naddrs];
    }
    return rand_word(seed);
}

static unsigned long rand_cmd(unsigned *seed)
{
    static const unsigned long known[] = {
        /* Ours, and API 2's MAP and AUDIT (type 0xB7), now unknown. */
        GPUP2P_GET_INFO, GPUP2P_VERDICT, _IO(0xB7, 0x22), _IO(0xB7, 0x23),
    };

    switch (rand_r(seed) % 8) {
    case 0:
        /* A neighbour's number, or the first API's. */
        return _IOC(rand_r(seed) % 4, GPUP2P_TYPE, rand_r(seed) % 64,
                    rand_r(seed) % 512);
    case 1:
        return (unsigned long)rand_word(seed);
    }
    return known[rand_r(seed) % G_N_ELEMENTS(known)];
}

/* The argument: a filled buffer, or a pointer that is no buffer. */
static void *rand_arg(unsigned *seed, unsigned char *buf, size_t len)
{
    uint32_t *w = (uint32_t *)buf;
    size_t i, tail;

    memset(buf, 0, len);
    w[0] = rand_r(seed) % 3 ? pick(seed, argsz_edges,
                                   G_N_ELEMENTS(argsz_edges))
                            : (uint32_t)rand_r(seed);
    w[1] = rand_r(seed) % 2 ? 0 : rand_word(seed);
    w[2] = rand_addr(seed);
    w[3] = rand_addr(seed);
    for (i = 4; i < len / 4; i++) {
        w[i] = rand_r(seed) % 3 ? 0 : rand_word(seed);
    }
    switch (rand_r(seed) % 16) {
    case 0:
        return NULL;
    case 1:
        return (void *)(uintptr_t)(rand_r(seed) % 8192);
    case 2:
        return (void *)0xffffffff81000000UL;   /* kernel text */
    case 3:
        return (void *)0x00007ffffffff000UL;
    case 4:
        /* The struct ends where the unmapped page begins. */
        tail = 8 + rand_r(seed) % 64;
        memcpy(guard + 4096 - tail, buf, tail);
        return guard + 4096 - tail;
    }
    return buf;
}

static void count(int rc, int err)
{
    atomic_fetch_add(&figures->ops, 1);
    atomic_fetch_add(&figures->by_errno[rc == 0 ? 0 :
                                        err < MAX_ERRNO ? err : 0], 1);
}

static void *fuzz_thread(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    unsigned char buf[4200];
    unsigned long i;

    for (i = 0; i < ops_per_thread; i++) {
        int slot = rand_r(&seed) % NFDS;
        int fd, rc;

        if (rand_r(&seed) % 32 == 0) {
            /* Close an fd others may be using, and open a new one. */
            fd = atomic_exchange(&fds[slot], -1);
            if (fd >= 0) {
                close(fd);
            }
            fd = open("/dev/" GPUP2P_DEVICE_NAME,
                      rand_r(&seed) % 2 ? O_RDONLY : O_RDWR);
            count(fd < 0 ? -1 : 0, errno);
            if (fd >= 0) {
                fd = atomic_exchange(&fds[slot], fd);
                if (fd >= 0) {
                    close(fd);
                }
            }
            continue;
        }
        fd = atomic_load(&fds[slot]);
        rc = ioctl(fd, rand_cmd(&seed), rand_arg(&seed, buf, sizeof(buf)));
        count(rc < 0 ? -1 : 0, errno);
    }
    return NULL;
}

static void write_sysfs(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY);

    if (fd >= 0) {
        if (write(fd, text, strlen(text)) < 0) {
            /* The device may be gone already: that is the race. */
        }
        close(fd);
    }
}

/* Removes the device and brings it back, while others ask about it. */
static void *remove_thread(void *arg)
{
    char path[128];

    (void)arg;
    g_snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/remove",
               remove_bdf);
    do {
        write_sysfs(path, "1");
        write_sysfs("/sys/bus/pci/rescan", "1");
        atomic_fetch_add(&figures->removes, 1);
    } while (!atomic_load(&stop_remove));
    return NULL;
}

static void run_process(unsigned threads, unsigned seed)
{
    pthread_t tid[64], remover;
    unsigned i;

    for (i = 0; i < NFDS; i++) {
        atomic_store(&fds[i], open("/dev/" GPUP2P_DEVICE_NAME, O_RDONLY));
    }
    for (i = 0; i < threads; i++) {
        pthread_create(&tid[i], NULL, fuzz_thread,
                       (void *)(uintptr_t)(seed * 7919 + i));
    }
    if (remove_bdf) {
        pthread_create(&remover, NULL, remove_thread, NULL);
    }
    for (i = 0; i < threads; i++) {
        pthread_join(tid[i], NULL);
    }
    if (remove_bdf) {
        atomic_store(&stop_remove, 1);
        pthread_join(remover, NULL);
    }
    /* Some fds stay open: exit closes them. */
}

static void read_addrs(void)
{
    DIR *d = opendir("/sys/bus/pci/devices");
    struct dirent *e;

    while (d && (e = readdir(d)) && naddrs < MAX_ADDRS) {
        if (e->d_name[0] != '.' &&
            gp_pci_addr_parse(e->d_name, &addrs[naddrs], NULL)) {
            naddrs++;
        }
    }
    if (d) {
        closedir(d);
    }
}

static void print_figures(unsigned procs, unsigned threads, int failed)
{
    unsigned i;
    bool first = true;

    printf("{\"processes\": %u, \"threads_per_process\": %u, "
           "\"operations\": %lu, \"removes\": %lu, "
           "\"children_failed\": %d, \"errno\": {",
           procs, threads, atomic_load(&figures->ops),
           atomic_load(&figures->removes), failed);
    for (i = 0; i < MAX_ERRNO; i++) {
        unsigned long n = atomic_load(&figures->by_errno[i]);
        const char *name = i ? strerrorname_np((int)i) : "ok";

        if (n) {
            printf("%s\"%s\": %lu", first ? "" : ", ", name ? name : "?", n);
            first = false;
        }
    }
    printf("}}\n");
}

int main(int argc, char **argv)
{
    unsigned procs, threads, seed, i;
    int failed = 0, status;

    if (argc < 5 || argc > 6) {
        fprintf(stderr, "usage: fuzz PROCS THREADS OPS SEED [REMOVE]\n");
        return 2;
    }
    procs = (unsigned)atoi(argv[1]);
    threads = MIN((unsigned)atoi(argv[2]), 64u);
    ops_per_thread = strtoul(argv[3], NULL, 0);
    seed = (unsigned)atoi(argv[4]);
    remove_bdf = argc == 6 ? argv[5] : NULL;
    figures = mmap(NULL, sizeof(*figures), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    guard = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (figures == MAP_FAILED || guard == MAP_FAILED) {
        perror("fuzz: mmap");
        return 1;
    }
    munmap(guard + 4096, 4096);
    memset(figures, 0, sizeof(*figures));
    read_addrs();
    for (i = 0; i < procs; i++) {
        pid_t pid = fork();

        if (pid == 0) {
            /* Only the first process races device removal. */
            if (i) {
                remove_bdf = NULL;
            }
            run_process(threads, seed + i);
            _exit(0);
        }
        if (pid < 0) {
            failed++;
        }
    }
    while (wait(&status) > 0) {
        failed += !WIFEXITED(status) || WEXITSTATUS(status);
    }
    print_figures(procs, threads, failed);
    return failed ? 1 : 0;
}
