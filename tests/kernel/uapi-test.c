/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Checks every rule of /dev/gpup2p's interface (kernel/include/uapi/
 * gpup2p.h) inside the virtual GPU host and prints one JSON object:
 * {"case": "ok" | "EINVAL" | ...}. tests/integration/test_kernel_helper.py
 * holds what each case must give.
 *
 *   uapi-test rules BDF_A BDF_B      every argsz/flags/reserved/number rule
 *   uapi-test access UID GID         open and query as UID:GID
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpup2p/module-client.h"

/* The numbers of the first API, which put struct sizes into them, and of
 * the second (type 0xB7, nsfs's), whose MAP and AUDIT are gone. */
#define OLD_MAP         _IOWR(0xB7, 0, char[96])
#define OLD_VERDICT     _IOWR(0xB7, 4, char[224])
#define API2_VERDICT    _IO(0xB7, 0x21)
#define API2_MAP        _IO(0xB7, 0x22)
#define API2_AUDIT      _IO(0xB7, 0x23)

static bool first = true;

static void result(const char *name, int rc)
{
    const char *text = rc == 0 ? "ok" : NULL;
    char buf[32];

    if (!text) {
        const char *e = strerrorname_np(errno);

        g_snprintf(buf, sizeof(buf), "%s", e ? e : "?");
        text = buf;
    }
    printf("%s\"%s\": \"%s\"", first ? "{" : ", ", name, text);
    first = false;
}

/* One ioctl on @arg, its outcome recorded under @name. */
static int call(int fd, const char *name, unsigned long cmd, void *arg)
{
    int rc = ioctl(fd, cmd, arg);

    result(name, rc < 0 ? -1 : 0);
    return rc;
}

/* A struct followed by a tail, in one page, for the long-argsz cases. */
typedef struct {
    union {
        struct gpup2p_info info;
        struct gpup2p_verdict verdict;
    };
    unsigned char tail[64];
} LongArg;

static void check_info(int fd)
{
    struct gpup2p_info info = { .argsz = sizeof(info) };
    LongArg la;
    unsigned bit;
    char name[48];
    char *page;

    if (call(fd, "info", GPUP2P_GET_INFO, &info) == 0) {
        printf(", \"info_api\": %u, \"info_caps\": %llu",
               info.api_version, (unsigned long long)info.caps);
    }
    for (bit = 0; bit < 32; bit++) {
        info = (struct gpup2p_info){ .argsz = sizeof(info), .flags = 1u << bit };
        g_snprintf(name, sizeof(name), "info-flag-%u", bit);
        call(fd, name, GPUP2P_GET_INFO, &info);
    }
    info = (struct gpup2p_info){ .argsz = sizeof(info), .__reserved = 1 };
    call(fd, "info-reserved", GPUP2P_GET_INFO, &info);
    info = (struct gpup2p_info){ .argsz = 0 };
    call(fd, "info-argsz-0", GPUP2P_GET_INFO, &info);
    info = (struct gpup2p_info){ .argsz = 7 };
    call(fd, "info-argsz-short", GPUP2P_GET_INFO, &info);
    /* An older caller that knows only argsz and flags: nothing more is
     * written back than it asked for. */
    memset(&la, 0xa5, sizeof(la));
    la.info.argsz = 8;
    la.info.flags = 0;
    if (call(fd, "info-argsz-min", GPUP2P_GET_INFO, &la) == 0) {
        printf(", \"info-argsz-min-untouched\": %s",
               ((unsigned char *)&la)[8] == 0xa5 ? "true" : "false");
    }
    memset(&la, 0, sizeof(la));
    la.info.argsz = sizeof(la);
    call(fd, "info-long-zero-tail", GPUP2P_GET_INFO, &la);
    la.tail[63] = 1;
    call(fd, "info-long-tail", GPUP2P_GET_INFO, &la);
    la.tail[63] = 0;
    la.info.argsz = 4097;
    call(fd, "info-argsz-huge", GPUP2P_GET_INFO, &la);
    call(fd, "info-null", GPUP2P_GET_INFO, NULL);
    call(fd, "info-bad-pointer", GPUP2P_GET_INFO, (void *)16);
    /* A struct whose zero tail runs into an unmapped page. */
    page = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(page + 4096, 4096);
    info = (struct gpup2p_info){ .argsz = sizeof(info) + 64 };
    memcpy(page + 4096 - sizeof(info), &info, sizeof(info));
    call(fd, "info-tail-unmapped", GPUP2P_GET_INFO,
         page + 4096 - sizeof(info));
    munmap(page, 4096);
}

static void check_verdict(int fd, uint32_t a, uint32_t b)
{
    struct gpup2p_verdict v = { .argsz = sizeof(v), .a = a, .b = b };
    size_t min = offsetof(struct gpup2p_verdict, b) + sizeof(v.b);
    LongArg la;
    unsigned bit;
    char name[48];

    if (call(fd, "verdict", GPUP2P_VERDICT, &v) == 0) {
        printf(", \"verdict_value\": %u", v.verdict);
    }
    for (bit = 0; bit < 32; bit++) {
        v = (struct gpup2p_verdict){ .argsz = sizeof(v), .a = a, .b = b,
                                     .flags = 1u << bit };
        g_snprintf(name, sizeof(name), "verdict-flag-%u", bit);
        call(fd, name, GPUP2P_VERDICT, &v);
    }
    v = (struct gpup2p_verdict){ .argsz = sizeof(v), .a = a, .b = b,
                                 .__reserved = 1 };
    call(fd, "verdict-reserved", GPUP2P_VERDICT, &v);
    v = (struct gpup2p_verdict){ .argsz = min - 1, .a = a, .b = b };
    call(fd, "verdict-argsz-short", GPUP2P_VERDICT, &v);
    memset(&la, 0xa5, sizeof(la));
    la.verdict = (struct gpup2p_verdict){ .argsz = min, .a = a, .b = b };
    memset((char *)&la + min, 0xa5, sizeof(la) - min);
    if (call(fd, "verdict-argsz-min", GPUP2P_VERDICT, &la) == 0) {
        printf(", \"verdict-argsz-min-untouched\": %s",
               ((unsigned char *)&la)[min] == 0xa5 ? "true" : "false");
    }
    memset(&la, 0, sizeof(la));
    la.verdict = (struct gpup2p_verdict){ .argsz = sizeof(la), .a = a,
                                          .b = b };
    call(fd, "verdict-long-zero-tail", GPUP2P_VERDICT, &la);
    la.tail[0] = 0x80;
    call(fd, "verdict-long-tail", GPUP2P_VERDICT, &la);
    v = (struct gpup2p_verdict){ .argsz = sizeof(v), .a = a,
                                 .b = GPUP2P_PCI_ADDR(0xfffe, 0xfe, 0xff) };
    call(fd, "verdict-no-device", GPUP2P_VERDICT, &v);
    call(fd, "verdict-bad-pointer", GPUP2P_VERDICT, (void *)4096);
}

static void check_numbers(int fd)
{
    char buf[256] = { 0 };

    call(fd, "api2-map", API2_MAP, buf);
    call(fd, "api2-audit", API2_AUDIT, buf);
    call(fd, "api2-verdict", API2_VERDICT, buf);
    call(fd, "unknown-next", _IO(GPUP2P_TYPE, GPUP2P_BASE + 2), buf);
    call(fd, "unknown-last", _IO(GPUP2P_TYPE, 0xff), buf);
    call(fd, "unknown-type", _IO(';', GPUP2P_BASE), buf);
    call(fd, "info-as-iowr", _IOWR(GPUP2P_TYPE, GPUP2P_BASE,
                                   struct gpup2p_info), buf);
    call(fd, "old-map", OLD_MAP, buf);
    call(fd, "old-verdict", OLD_VERDICT, buf);
}

static int cmd_rules(const char *bdf_a, const char *bdf_b)
{
    g_autoptr(GError) err = NULL;
    uint32_t a, b;
    int fd;

    if (!gp_pci_addr_parse(bdf_a, &a, &err) ||
        !gp_pci_addr_parse(bdf_b, &b, &err) ||
        (fd = gp_module_open(&err)) < 0) {
        printf("{\"error\": \"%s\"}\n", err->message);
        return 1;
    }
    check_info(fd);
    check_verdict(fd, a, b);
    check_numbers(fd);
    printf("}\n");
    close(fd);
    return 0;
}

/* Open and query as another user: what a VMM without root gets. */
static int cmd_access(const char *uid_text, const char *gid_text)
{
    uid_t uid = (uid_t)atoi(uid_text);
    gid_t gid = (gid_t)atoi(gid_text);
    struct gpup2p_info info = { .argsz = sizeof(info) };
    int fd;

    if (setgroups(1, &gid) || setgid(gid) || setuid(uid)) {
        printf("{\"error\": \"dropping to %u:%u: %s\"}\n", uid, gid,
               g_strerror(errno));
        return 1;
    }
    fd = open("/dev/" GPUP2P_DEVICE_NAME, O_RDONLY | O_CLOEXEC);
    result("open", fd < 0 ? -1 : 0);
    if (fd >= 0) {
        call(fd, "info", GPUP2P_GET_INFO, &info);
        close(fd);
    }
    printf(", \"uid\": %u, \"gid\": %u}\n", getuid(), getgid());
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "rules")) {
        return cmd_rules(argv[2], argv[3]);
    }
    if (argc == 4 && !strcmp(argv[1], "access")) {
        return cmd_access(argv[2], argv[3]);
    }
    fprintf(stderr, "usage: uapi-test rules BDF_A BDF_B | "
            "access UID GID\n");
    return 2;
}
