/* SPDX-License-Identifier: GPL-2.0-or-later */
/* User side of the kernel helper and the VFIO group plumbing. */
#include <errno.h>
#include <fcntl.h>
#include <linux/vfio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "gpup2p/helper.h"
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
    *addr = GPUP2P_PCI_ADDR(d, b, (s << 3) | f);
    return true;
}

void gp_pci_addr_format(uint32_t addr, char out[16])
{
    g_snprintf(out, 16, "%04x:%02x:%02x.%x", addr >> 16, (addr >> 8) & 0xff,
               (addr >> 3) & 0x1f, addr & 7);
}

static int iommu_group_of(const char *bdf, GError **errp)
{
    g_autofree char *link = g_strdup_printf(
        "/sys/bus/pci/devices/%s/iommu_group", bdf);
    g_autofree char *target = g_file_read_link(link, NULL);

    if (!target) {
        g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND,
                    "%s: no IOMMU group (is the IOMMU on, the device there?)",
                    bdf);
        return -1;
    }
    return atoi(strrchr(target, '/') + 1);
}

bool gp_vfio_session_open(GpVfioSession *s, const char *const *bdfs,
                          unsigned n, GError **errp)
{
    unsigned i, j;

    memset(s, 0, sizeof(*s));
    s->container = open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
    if (s->container < 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "/dev/vfio/vfio: %s",
                    g_strerror(errno));
        return false;
    }
    for (i = 0; i < n; i++) {
        char norm[GP_BDF_LEN], path[64];
        struct vfio_group_status st = { .argsz = sizeof(st) };
        int id;

        if (!gp_bdf_normalize(bdfs[i], norm)) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                        "'%s' is not a PCI address", bdfs[i]);
            goto fail;
        }
        id = iommu_group_of(norm, errp);
        if (id < 0) {
            goto fail;
        }
        for (j = 0; j < s->ngroups && s->group_id[j] != id; j++) {
        }
        if (j < s->ngroups) {
            continue;
        }
        if (s->ngroups == G_N_ELEMENTS(s->group_fd)) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID, "too many groups");
            goto fail;
        }
        g_snprintf(path, sizeof(path), "/dev/vfio/%d", id);
        s->group_fd[s->ngroups] = open(path, O_RDWR | O_CLOEXEC);
        if (s->group_fd[s->ngroups] < 0) {
            g_set_error(errp, GP_ERROR, GP_ERROR_IO,
                        "%s (group of %s): %s%s", path, norm,
                        g_strerror(errno), errno == EBUSY ?
                        " (another process, e.g. the VMM, holds it)" : "");
            goto fail;
        }
        s->group_id[s->ngroups++] = id;
        if (ioctl(s->group_fd[s->ngroups - 1], VFIO_GROUP_GET_STATUS, &st) ||
            !(st.flags & VFIO_GROUP_FLAGS_VIABLE)) {
            g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                        "%s: group %d is not viable (bind every device in "
                        "it to vfio-pci)", norm, id);
            goto fail;
        }
        if (ioctl(s->group_fd[s->ngroups - 1], VFIO_GROUP_SET_CONTAINER,
                  &s->container)) {
            g_set_error(errp, GP_ERROR, GP_ERROR_IO,
                        "VFIO_GROUP_SET_CONTAINER (group %d): %s", id,
                        g_strerror(errno));
            goto fail;
        }
    }
    if (ioctl(s->container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU)) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "VFIO_SET_IOMMU type1v2: %s",
                    g_strerror(errno));
        goto fail;
    }
    return true;
fail:
    gp_vfio_session_close(s);
    return false;
}

void gp_vfio_session_close(GpVfioSession *s)
{
    unsigned i;

    for (i = 0; i < s->ngroups; i++) {
        close(s->group_fd[i]);
    }
    if (s->container > 0) {
        close(s->container);
    }
    memset(s, 0, sizeof(*s));
}

int gp_vfio_session_group_fd(const GpVfioSession *s, const char *bdf)
{
    char norm[GP_BDF_LEN];
    unsigned i;
    int id;

    if (!gp_bdf_normalize(bdf, norm) || (id = iommu_group_of(norm, NULL)) < 0) {
        return -1;
    }
    for (i = 0; i < s->ngroups; i++) {
        if (s->group_id[i] == id) {
            return s->group_fd[i];
        }
    }
    return -1;
}

int gp_helper_open(GError **errp)
{
    int fd = open("/dev/" GPUP2P_DEVICE_NAME, O_RDWR | O_CLOEXEC);

    if (fd < 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "/dev/%s: %s%s",
                    GPUP2P_DEVICE_NAME, g_strerror(errno),
                    errno == ENOENT ? " (is the gpup2p module loaded?)" : "");
    }
    return fd;
}

const char *gp_helper_map_errno_text(int err)
{
    switch (err) {
    case EPERM:
        return "needs CAP_SYS_ADMIN";
    case EBADF:
        return "a VFIO group fd is not open";
    case EBADFD:
        return "an fd is not a VFIO group";
    case ENODEV:
        return "no such device, or it is not in the VFIO group given";
    case EBUSY:
        return "a device is not bound to vfio-pci";
    case ENOLINK:
        return "the initiator is not attached to a VFIO IOMMU domain "
               "(no container or IOAS)";
    case ENXIO:
        return "no such BAR";
    case EOPNOTSUPP:
        return "the BAR is an I/O-port BAR, not memory";
    case EINVAL:
        return "IOVA, offset or size not aligned to the domain's page size, "
               "size 0, or bad flags";
    case EOVERFLOW:
        return "IOVA + size wraps around";
    case ERANGE:
        return "the window runs past the end of the BAR";
    case EEXIST:
        return "the IOVA range overlaps an existing mapping";
    case ENOENT:
        return "no such mapping";
    }
    return g_strerror(err);
}

bool gp_helper_map(int fd, struct gpup2p_map *m, GError **errp)
{
    m->argsz = sizeof(*m);
    if (ioctl(fd, GPUP2P_MAP, m) < 0) {
        int e = errno;
        char a[16], b[16];

        gp_pci_addr_format(m->initiator.pci_addr, a);
        gp_pci_addr_format(m->peer.pci_addr, b);
        g_set_error(errp, GP_ERROR, GP_ERROR_INVALID,
                    "mapping BAR %u of %s [+0x%" G_GINT64_MODIFIER "x, "
                    "0x%" G_GINT64_MODIFIER "x bytes] at IOVA 0x%"
                    G_GINT64_MODIFIER "x for %s: %s (%s)", m->bar, b,
                    (guint64)m->offset, (guint64)m->size, (guint64)m->iova,
                    a, gp_helper_map_errno_text(e), g_strerror(e));
        errno = e;
        return false;
    }
    return true;
}

bool gp_helper_unmap(int fd, uint64_t id, bool any_owner, GError **errp)
{
    struct gpup2p_unmap u = {
        .argsz = sizeof(u), .flags = any_owner ? GPUP2P_UNMAP_ANY_OWNER : 0,
        .id = id,
    };

    if (ioctl(fd, GPUP2P_UNMAP, &u) < 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_NOT_FOUND,
                    "unmapping %" G_GUINT64_FORMAT ": %s", (guint64)id,
                    gp_helper_map_errno_text(errno));
        return false;
    }
    return true;
}

struct gpup2p_mapping_info *gp_helper_list(int fd, bool all, unsigned *count,
                                           GError **errp)
{
    struct gpup2p_list l = { .argsz = sizeof(l),
                             .flags = all ? GPUP2P_LIST_ALL : 0 };
    struct gpup2p_mapping_info *v = NULL;

    /* Ask for the total, then fetch; retry if it grew in between. */
    for (;;) {
        if (ioctl(fd, GPUP2P_LIST, &l) < 0) {
            g_set_error(errp, GP_ERROR, GP_ERROR_IO, "listing mappings: %s",
                        g_strerror(errno));
            g_free(v);
            return NULL;
        }
        if (l.total <= l.count && v) {
            *count = l.total;
            return v;
        }
        g_free(v);
        l.count = l.total;
        v = g_new0(struct gpup2p_mapping_info, l.count ? l.count : 1);
        l.entries = (uintptr_t)v;
    }
}

bool gp_helper_audit(int fd, struct gpup2p_audit *a, GError **errp)
{
    a->argsz = sizeof(*a);
    if (ioctl(fd, GPUP2P_AUDIT, a) < 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "audit: %s",
                    gp_helper_map_errno_text(errno));
        return false;
    }
    return true;
}

bool gp_helper_verdict(int fd, struct gpup2p_verdict *v, GError **errp)
{
    v->argsz = sizeof(*v);
    if (ioctl(fd, GPUP2P_VERDICT, v) < 0) {
        g_set_error(errp, GP_ERROR, GP_ERROR_IO, "verdict: %s",
                    g_strerror(errno));
        return false;
    }
    return true;
}
