/* SPDX-License-Identifier: GPL-2.0-only WITH Linux-syscall-note OR MIT */
/*
 * gpup2p: the kernel module's interface. /dev/gpup2p answers read-only
 * questions about the host's PCI topology as the kernel sees it; it keeps
 * no state and changes nothing in any IOMMU. Access is by file permission
 * (the udev rule gives the device a group and mode 0660); no ioctl needs a
 * capability.
 *
 * Conventions (VFIO's): ioctl numbers are _IO(), so a struct can grow
 * without changing its number. Every struct starts with argsz and flags.
 * The caller sets argsz to the size of the struct it knows:
 *   - below the ioctl's minimum (the end of its last input field): EINVAL;
 *   - larger than the struct this module knows: the extra bytes must be
 *     zero (E2BIG otherwise), as copy_struct_from_user() checks; more than
 *     4096 bytes: E2BIG;
 *   - smaller (an older caller): the missing fields read as zero, and only
 *     argsz bytes are written back.
 * Unknown flags and non-zero reserved fields: EINVAL. Unknown ioctl: ENOTTY.
 */
#ifndef _UAPI_GPUP2P_H
#define _UAPI_GPUP2P_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define GPUP2P_DEVICE_NAME	"gpup2p"
#define GPUP2P_API_VERSION	2

/*
 * A PCI address: segment << 16 | bus << 8 | devfn. Segments above
 * GPUP2P_PCI_DOMAIN_MAX (Intel VMD's domains, 10000 and up) cannot be
 * named; a path that reaches a device in one is answered ENODEV.
 */
#define GPUP2P_PCI_DOMAIN_MAX	0xffff
#define GPUP2P_PCI_ADDR(seg, bus, devfn) \
	(((__u32)(seg) << 16) | ((__u32)(bus) << 8) | (__u32)(devfn))

/*
 * Type 0xB7 is also nsfs's (NSIO, numbers 0x01-0x0c in Linux 6.12) and
 * remoteproc's (RPROC_MAGIC, 0x01-0x02); this module's numbers start at
 * GPUP2P_BASE, clear of both. A command is only ever sent to /dev/gpup2p.
 */
#define GPUP2P_TYPE	0xB7
#define GPUP2P_BASE	0x20

/* The largest argsz accepted (above: E2BIG), whatever the page size. */
#define GPUP2P_ARGSZ_MAX	4096

/*
 * GPUP2P_GET_INFO: the API version and what this module can do.
 * GPUP2P_CAP_MAP and GPUP2P_CAP_AUDIT are never set by this module; the
 * refusal fields say why (GPUP2P_REFUSED_*, docs/kernel-helper.md).
 *
 * Errors:
 *   EFAULT	the argument is not readable or writable
 *   EINVAL	argsz below 8, flags or a reserved field not zero
 *   E2BIG	argsz above the known size with non-zero extra bytes, or
 *		above 4096
 */
#define GPUP2P_CAP_VERDICT	(1ULL << 0)
#define GPUP2P_CAP_MAP		(1ULL << 1)	/* peer BAR mappings */
#define GPUP2P_CAP_AUDIT	(1ULL << 2)	/* IOMMU page table walks */

#define GPUP2P_REFUSED_NONE		0	/* the capability is there */
/*
 * VFIO type1 owns the IOMMU domain: a mapping made beside it makes a later
 * VFIO_IOMMU_MAP_DMA over the range WARN in the IOMMU driver, is not
 * replayed into a new domain, and cannot be made to fail type1's map.
 */
#define GPUP2P_REFUSED_TYPE1_OWNS_DOMAIN	1
/*
 * Type1 unmaps under its private lock and the IOMMU driver frees page
 * table pages right after the IOTLB flush: a walk from outside can read
 * freed memory.
 */
#define GPUP2P_REFUSED_PGTABLE_UNLOCKED		2

struct gpup2p_info {
	__u32	argsz;
	__u32	flags;		/* in: 0 */
	__u32	api_version;	/* out: GPUP2P_API_VERSION */
	__u32	__reserved;	/* in: 0 */
	__u64	caps;		/* out: GPUP2P_CAP_* */
	__u32	map_refused;	/* out: GPUP2P_REFUSED_* */
	__u32	audit_refused;	/* out: GPUP2P_REFUSED_* */
};

#define GPUP2P_GET_INFO		_IO(GPUP2P_TYPE, GPUP2P_BASE + 0)

/*
 * GPUP2P_VERDICT: the P2P path verdict between PCI devices @a and @b as
 * this kernel's PCI device tree sees it, by the rules of p2pdma
 * (calc_map_type_and_dist(); the rule is kernel/include/gpup2p/p2p-rule.h,
 * shared with user space). @a is the provider. ACS Control is read from
 * each bridge's config space at the time of the call.
 *
 * Errors:
 *   EFAULT	the argument is not readable or writable
 *   EINVAL	argsz below the end of @b, flags or a reserved field not 0
 *   E2BIG	argsz above the known size with non-zero extra bytes, or
 *		above 4096
 *   ENODEV	no PCI device at @a or @b, or one of their paths is in a
 *		segment above GPUP2P_PCI_DOMAIN_MAX
 *   ELOOP	a path deeper than 32 bridges
 */
#define GPUP2P_VERDICT_DIRECT		0	/* below a common bridge */
#define GPUP2P_VERDICT_HOST_BRIDGE	1	/* through a host bridge */
#define GPUP2P_VERDICT_NONE		2	/* not supported */

/* path_reason */
#define GPUP2P_PATH_COMMON_BRIDGE	0	/* @common, nothing redirects */
#define GPUP2P_PATH_ACS_REDIRECT	1	/* @common, ACS at @redirect */
#define GPUP2P_PATH_NO_COMMON		2	/* only host bridges join */

/* host_reason: why the host bridge rule decided (not with DIRECT) */
#define GPUP2P_HOST_NOT_NEEDED		0
#define GPUP2P_HOST_AMD_ZEN		1	/* AMD family 17h+ forwards */
#define GPUP2P_HOST_SAME_LISTED		2	/* one host bridge, listed */
#define GPUP2P_HOST_BOTH_LISTED		3	/* two, both listed */
#define GPUP2P_HOST_CPU_UNKNOWN		4	/* user space only */
#define GPUP2P_HOST_A_NOT_LISTED	5	/* @a's host bridge: not listed */
#define GPUP2P_HOST_B_NOT_LISTED	6	/* @b's host bridge: not listed */
#define GPUP2P_HOST_SAME_ONLY		7	/* listed, within one only */

/* out_flags */
#define GPUP2P_VERDICT_HAS_COMMON	(1 << 0)	/* @common is valid */
#define GPUP2P_VERDICT_HAS_REDIRECT	(1 << 1)	/* @redirect is valid */

struct gpup2p_verdict {
	__u32	argsz;
	__u32	flags;		/* in: 0 */
	__u32	a;		/* in: GPUP2P_PCI_ADDR() of the provider */
	__u32	b;		/* in: of the client */
	__u32	verdict;	/* out: GPUP2P_VERDICT_* */
	__u32	distance;	/* out: bridge hops, as p2pdma counts them */
	__u32	path_reason;	/* out: GPUP2P_PATH_* */
	__u32	host_reason;	/* out: GPUP2P_HOST_* */
	__u32	out_flags;	/* out: GPUP2P_VERDICT_HAS_* */
	__u32	common;		/* out: the common upstream bridge */
	__u32	redirect;	/* out: the first hop whose ACS redirects */
	__u32	__reserved;	/* in: 0 */
};

#define GPUP2P_VERDICT		_IO(GPUP2P_TYPE, GPUP2P_BASE + 1)

/*
 * GPUP2P_MAP and GPUP2P_AUDIT are refused on every kernel this module
 * builds for, whatever the argument: EOPNOTSUPP, with the reason in
 * GPUP2P_GET_INFO's map_refused and audit_refused. The numbers stay so
 * that a caller gets that answer rather than ENOTTY.
 */
#define GPUP2P_MAP		_IO(GPUP2P_TYPE, GPUP2P_BASE + 2)
#define GPUP2P_AUDIT		_IO(GPUP2P_TYPE, GPUP2P_BASE + 3)

#endif /* _UAPI_GPUP2P_H */
