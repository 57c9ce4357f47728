/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * User side of the kernel helper (/dev/gpup2p) and the VFIO plumbing that
 * proves ownership of devices: open a container with the devices' groups,
 * then map, unmap, list and audit peer BAR windows.
 */
#ifndef GPUP2P_HELPER_H
#define GPUP2P_HELPER_H

#include <stdbool.h>
#include <stdint.h>

#include "gpup2p/error.h"
#include "uapi/gpup2p.h"

/* Groups of a set of devices, attached to one VFIO type1 container. */
typedef struct GpVfioSession {
    int container;
    unsigned ngroups;
    int group_fd[8];
    int group_id[8];
} GpVfioSession;

bool gp_vfio_session_open(GpVfioSession *s, const char *const *bdfs,
                          unsigned n, GError **errp);
void gp_vfio_session_close(GpVfioSession *s);
/* The open group fd holding @bdf, -1 if none. */
int gp_vfio_session_group_fd(const GpVfioSession *s, const char *bdf);

bool gp_pci_addr_parse(const char *bdf, uint32_t *addr, GError **errp);
void gp_pci_addr_format(uint32_t addr, char out[16]);

int gp_helper_open(GError **errp);
/* Fills m->id and m->phys. The message names the rule broken. */
bool gp_helper_map(int fd, struct gpup2p_map *m, GError **errp);
bool gp_helper_unmap(int fd, uint64_t id, bool any_owner, GError **errp);
/* Returns a newly allocated array of *count entries. */
struct gpup2p_mapping_info *gp_helper_list(int fd, bool all, unsigned *count,
                                           GError **errp);
bool gp_helper_audit(int fd, struct gpup2p_audit *a, GError **errp);
bool gp_helper_verdict(int fd, struct gpup2p_verdict *v, GError **errp);

/* What GPUP2P_MAP's errno means (the UAPI header's table). */
const char *gp_helper_map_errno_text(int err);

#endif /* GPUP2P_HELPER_H */
