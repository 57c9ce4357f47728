/* SPDX-License-Identifier: GPL-2.0-only WITH Linux-syscall-note OR MIT */
/*
 * gpup2p: the kernel helper's interface. /dev/gpup2p maps windows of a peer
 * device's BAR into the IOMMU domain of an initiator device, lists and
 * audits such mappings, and reports the P2P path verdict the kernel sees.
 *
 * Both devices are named by an open VFIO group fd plus the device's PCI
 * address, which proves the caller owns them; the caller also needs
 * CAP_SYS_ADMIN. Mappings belong to the /dev/gpup2p file descriptor:
 * closing it removes them; unbinding or removing either device removes
 * them first.
 *
 * Every struct starts with argsz and flags (the VFIO convention), so an
 * ioctl can grow without breaking old callers.
 */
#ifndef _UAPI_GPUP2P_H
#define _UAPI_GPUP2P_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define GPUP2P_DEVICE_NAME	"gpup2p"
#define GPUP2P_API_VERSION	1

/* A PCI address: segment << 16 | bus << 8 | devfn. */
#define GPUP2P_PCI_ADDR(seg, bus, devfn) \
	(((__u32)(seg) << 16) | ((__u32)(bus) << 8) | (__u32)(devfn))

struct gpup2p_device_ref {
	__s32	vfio_group_fd;	/* -1 with GPUP2P_AUDIT_BY_ADDRESS */
	__u32	pci_addr;	/* GPUP2P_PCI_ADDR() */
};

/*
 * GPUP2P_MAP: map [offset, offset + size) of the peer's BAR @bar at @iova
 * in the initiator's IOMMU domain (the domain VFIO attached), with the
 * largest page sizes the domain supports.
 *
 * Errors, each its own:
 *   EPERM	no CAP_SYS_ADMIN
 *   EBADF	an fd that is not open
 *   EBADFD	an fd that is not a VFIO group
 *   ENODEV	no device at the PCI address, or not in that group
 *   EBUSY	a device not bound to vfio-pci
 *   ENOLINK	the initiator is not attached to a VFIO-managed domain
 *   ENXIO	no such BAR (index > 5 or unimplemented)
 *   EOPNOTSUPP	an I/O-port BAR
 *   EINVAL	iova, offset or size not aligned to the domain's page size,
 *		size 0, or unknown flags
 *   EOVERFLOW	iova + size wraps around
 *   ERANGE	the window runs past the end of the BAR
 *   EEXIST	the IOVA range overlaps a mapping (ours or the VMM's)
 */
#define GPUP2P_MAP_READ		(1 << 0)
#define GPUP2P_MAP_WRITE	(1 << 1)

struct gpup2p_map {
	__u32	argsz;
	__u32	flags;		/* GPUP2P_MAP_READ | GPUP2P_MAP_WRITE */
	struct gpup2p_device_ref initiator;
	struct gpup2p_device_ref peer;
	__u32	bar;
	__u32	__reserved;
	__u64	offset;		/* into the BAR */
	__u64	size;
	__u64	iova;
	__u64	id;		/* out: the mapping's id */
	__u64	phys;		/* out: host-physical start */
	__u64	page_sizes;	/* out: the domain's page size bitmap */
};

/* GPUP2P_UNMAP: remove a mapping of this fd (ENOENT if it has none). */
#define GPUP2P_UNMAP_ANY_OWNER	(1 << 0)	/* any fd's (CAP_SYS_ADMIN) */

struct gpup2p_unmap {
	__u32	argsz;
	__u32	flags;
	__u64	id;
};

struct gpup2p_mapping_info {
	__u64	id;
	__u64	iova;
	__u64	size;
	__u64	phys;
	__u32	initiator;	/* PCI address */
	__u32	peer;
	__u32	bar;
	__u32	flags;		/* GPUP2P_MAP_* */
	__u64	offset;
	__s32	owner_pid;
	__u32	__reserved;
};

/*
 * GPUP2P_LIST: copy up to @count entries to @entries; @total says how many
 * exist. With GPUP2P_LIST_ALL every fd's mappings, else this fd's.
 */
#define GPUP2P_LIST_ALL		(1 << 0)

struct gpup2p_list {
	__u32	argsz;
	__u32	flags;
	__u32	count;
	__u32	total;		/* out */
	__u64	entries;	/* user pointer to gpup2p_mapping_info[count] */
};

/*
 * GPUP2P_AUDIT: for each entry, check that every page of
 * [iova, iova + size) in the initiator's domain translates to the peer
 * BAR's host-physical address + offset. Works for mappings the VMM made
 * too. With GPUP2P_AUDIT_BY_ADDRESS the initiator is named by its PCI
 * address alone (read-only, CAP_SYS_ADMIN), so an operator can audit a
 * running VM whose VMM holds the VFIO fds.
 */
#define GPUP2P_AUDIT_BY_ADDRESS	(1 << 0)

#define GPUP2P_AUDIT_OK		0
#define GPUP2P_AUDIT_MISSING	1	/* some page translates to nothing */
#define GPUP2P_AUDIT_WRONG	2	/* some page translates elsewhere */

struct gpup2p_audit_entry {
	__u32	peer;		/* PCI address of the peer */
	__u32	bar;
	__u64	offset;
	__u64	size;
	__u64	iova;
	__u64	expected_phys;	/* out */
	__u64	first_bad_iova;	/* out, when status != OK */
	__u64	found_phys;	/* out: what first_bad_iova translates to */
	__u32	status;		/* out: GPUP2P_AUDIT_* */
	__u32	__reserved;
};

struct gpup2p_audit {
	__u32	argsz;
	__u32	flags;
	struct gpup2p_device_ref initiator;
	__u32	count;
	__u32	mismatches;	/* out */
	__u64	entries;	/* user pointer to gpup2p_audit_entry[count] */
};

/* GPUP2P_VERDICT: the P2P path as the kernel sees it (p2pdma's rules). */
#define GPUP2P_VERDICT_DIRECT		0
#define GPUP2P_VERDICT_HOST_BRIDGE	1
#define GPUP2P_VERDICT_NONE		2

struct gpup2p_verdict {
	__u32	argsz;
	__u32	flags;
	__u32	a;		/* PCI addresses */
	__u32	b;
	__u32	verdict;	/* out */
	__u32	distance;	/* out */
	char	reason[192];	/* out */
};

#define GPUP2P_TYPE	0xB7
#define GPUP2P_MAP	_IOWR(GPUP2P_TYPE, 0, struct gpup2p_map)
#define GPUP2P_UNMAP	_IOW(GPUP2P_TYPE, 1, struct gpup2p_unmap)
#define GPUP2P_LIST	_IOWR(GPUP2P_TYPE, 2, struct gpup2p_list)
#define GPUP2P_AUDIT	_IOWR(GPUP2P_TYPE, 3, struct gpup2p_audit)
#define GPUP2P_VERDICT	_IOWR(GPUP2P_TYPE, 4, struct gpup2p_verdict)

#endif /* _UAPI_GPUP2P_H */
