/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The kernel module's client: opens /dev/gpup2p and asks it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "gpup2p/module-client.h"
#include "gpup2p/topo.h"

bool gp_pci_addr_parse(const char *bdf, uint32_t *addr, GError **errp)
{
    char norm[GP_BDF_LEN];
    unsigned d, b, s, f;

    if (!gp_bdf_normalize(bdf, norm)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "'%s' is not a PCI address (dddd:bb:dd.f)", bdf);
        return false;
    }
    sscanf(norm, "%x:%x:%x.%x", &d, &b, &s, &f);
    if (d > GPUP2P_PCI_DOMAIN_MAX) {
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "%s: domain %x is above %x (an Intel VMD domain?): "
                    "the kernel module's addresses cannot name it", norm, d,
                    GPUP2P_PCI_DOMAIN_MAX);
        return false;
    }
    *addr = GPUP2P_PCI_ADDR(d, b, (s << 3) | f);
    return true;
}

void gp_pci_addr_format(uint32_t addr, char out[16])
{
    g_snprintf(out, 16, "%04x:%02x:%02x.%x", addr >> 16, (addr >> 8) & 0xff,
               (addr >> 3) & 0x1f, addr & 7);
}

int gp_module_open(GError **errp)
{
    int fd = open("/dev/" GPUP2P_DEVICE_NAME, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "/dev/%s: %s%s",
                    GPUP2P_DEVICE_NAME, g_strerror(errno),
                    errno == ENOENT ? " (is the gpup2p module loaded?)" : "");
    }
    return fd;
}

bool gp_module_info(int fd, struct gpup2p_info *info, GError **errp)
{
    memset(info, 0, sizeof(*info));
    info->argsz = sizeof(*info);
    if (ioctl(fd, GPUP2P_GET_INFO, info) < 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "/dev/%s: GPUP2P_GET_INFO: "
                    "%s%s", GPUP2P_DEVICE_NAME, g_strerror(errno),
                    errno == ENOTTY ? " (a module of another API version?)"
                    : "");
        return false;
    }
    return true;
}

bool gp_module_verdict(int fd, struct gpup2p_verdict *v, GError **errp)
{
    v->argsz = sizeof(*v);
    if (ioctl(fd, GPUP2P_VERDICT, v) < 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "/dev/%s: GPUP2P_VERDICT: "
                    "%s%s", GPUP2P_DEVICE_NAME, g_strerror(errno),
                    errno == ENODEV ? " (no such PCI device)" : "");
        return false;
    }
    return true;
}
