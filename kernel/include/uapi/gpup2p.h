/* SPDX-License-Identifier: GPL-2.0-only WITH Linux-syscall-note OR MIT */
/*
 * gpup2p: the kernel module's interface. /dev/gpup2p answers read-only
 * questions about the host's PCI topology as the kernel sees it (P2P
 * verdicts, IOMMU groups); it keeps no state and changes nothing in any
 * IOMMU: peer BAR mappings are VFIO's, made at the VMM's request. Access is by file permission
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
/*
 * 4: a hop's ACS that cannot be read (a failed or all-ones read, a device
 * disconnected or in D3cold) gives GPUP2P_VERDICT_UNKNOWN,
 * GPUP2P_PATH_ACS_UNKNOWN and GPUP2P_VM_UNKNOWN instead of an answer.
 */
#define GPUP2P_API_VERSION	4

/*
 * A PCI address: segment << 16 | bus << 8 | devfn. Segments above
 * GPUP2P_PCI_DOMAIN_MAX (Intel VMD's domains, 10000 and up) cannot be
 * named; a path that reaches a device in one is answered ENODEV.
 */
#define GPUP2P_PCI_DOMAIN_MAX	0xffff
#define GPUP2P_PCI_ADDR(seg, bus, devfn) \
	(((__u32)(seg) << 16) | ((__u32)(bus) << 8) | (__u32)(devfn))

/*
 * Type 0xBB: no subsystem lists it in Linux 7.3's
 * Documentation/userspace-api/ioctl/ioctl-number.rst
 * (tests/unit/test_p2pdma_source.py checks that file).
 */
#define GPUP2P_TYPE	0xBB
#define GPUP2P_BASE	0x00

/* The largest argsz accepted (above: E2BIG), whatever the page size. */
#define GPUP2P_ARGSZ_MAX	4096

/*
 * GPUP2P_GET_INFO: the API version and what this module answers.
 *
 * Errors:
 *   EFAULT	the argument is not readable or writable
 *   EINVAL	argsz below 8, flags or a reserved field not zero
 *   E2BIG	argsz above the known size with non-zero extra bytes, or
 *		above 4096
 */
#define GPUP2P_CAP_VERDICT	(1ULL << 0)	/* p2pdma's verdict */
#define GPUP2P_CAP_VM_VERDICT	(1ULL << 1)	/* the VM rule's verdict */
#define GPUP2P_CAP_IOMMU_GROUP	(1ULL << 2)	/* each device's group */
/*
 * This kernel has CONFIG_PCI_P2PDMA: VERDICT asks p2pdma itself
 * (GPUP2P_VERDICT_FROM_P2PDMA). Without it the module answers by the
 * shared rule, with the rule's host bridge list, which may be longer than
 * an older kernel's.
 */
#define GPUP2P_CAP_P2PDMA	(1ULL << 3)

struct gpup2p_info {
	__u32	argsz;
	__u32	flags;		/* in: 0 */
	__u32	api_version;	/* out: GPUP2P_API_VERSION */
	__u32	__reserved;	/* in: 0 */
	__u64	caps;		/* out: GPUP2P_CAP_* */
};

#define GPUP2P_GET_INFO		_IO(GPUP2P_TYPE, GPUP2P_BASE + 0)

/*
 * GPUP2P_VERDICT: the P2P verdicts between PCI devices @a and @b as this
 * kernel's PCI device tree sees it: p2pdma's (calc_map_type_and_dist())
 * and the VM rule's (may a guest's request between them reach the IOMMU,
 * and does the root complex forward it). @a is the provider. ACS Control
 * is read from each device's config space at the time of the call. Each
 * device's IOMMU group comes with them.
 *
 * Where the answers come from:
 *   - on a kernel with CONFIG_PCI_P2PDMA (GPUP2P_CAP_P2PDMA), the verdict
 *     and distance are pci_p2pdma_distance_many()'s (@p2pdma holds its
 *     return; out_flags GPUP2P_VERDICT_FROM_P2PDMA), and the VM verdict's
 *     root complex half is p2pdma's answer for two devices that only the
 *     root complex joins, one on each device's root bus (@p2pdma_host;
 *     GPUP2P_VERDICT_VM_FROM_P2PDMA). p2pdma returns only a distance or
 *     -1, so direct or host-bridge, @path_reason, @common, @redirect and
 *     the ports a guest's request would bypass the IOMMU at are read from
 *     the same hops p2pdma walks (pci_upstream_bridge(), ACS Control);
 *   - otherwise, and for a pair where p2pdma cannot be asked without
 *     writing its cache (both devices publish p2pmem), everything is the
 *     shared rule's (kernel/include/gpup2p/p2p-rule.h) over those hops.
 * Where p2pdma's answer differs from the shared rule's over the same
 * hops, GPUP2P_VERDICT_RULE_DIFFERS is set, and @host_reason says
 * GPUP2P_HOST_KERNEL_FORWARDS or _KERNEL_REFUSES when the host bridge
 * half decided it (this kernel's list is not the rule's).
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
#define GPUP2P_VERDICT_UNKNOWN		3	/* a hop's ACS not readable (4) */

/* path_reason */
#define GPUP2P_PATH_COMMON_BRIDGE	0	/* @common, nothing redirects */
#define GPUP2P_PATH_ACS_REDIRECT	1	/* @common, ACS at @redirect */
#define GPUP2P_PATH_NO_COMMON		2	/* only host bridges join */
#define GPUP2P_PATH_ACS_UNKNOWN		3	/* @common, ACS not readable (4) */

/* host_reason: why the host bridge rule decided (not with DIRECT) */
#define GPUP2P_HOST_NOT_NEEDED		0
#define GPUP2P_HOST_AMD_ZEN		1	/* AMD family 17h+ forwards */
#define GPUP2P_HOST_SAME_LISTED		2	/* one host bridge, listed */
#define GPUP2P_HOST_BOTH_LISTED		3	/* two, both listed */
#define GPUP2P_HOST_CPU_UNKNOWN		4	/* user space only */
#define GPUP2P_HOST_A_NOT_LISTED	5	/* @a's host bridge: not listed */
#define GPUP2P_HOST_B_NOT_LISTED	6	/* @b's host bridge: not listed */
#define GPUP2P_HOST_SAME_ONLY		7	/* listed, within one only */
#define GPUP2P_HOST_KERNEL_FORWARDS	8	/* p2pdma forwards, the rule not */
#define GPUP2P_HOST_KERNEL_REFUSES	9	/* p2pdma refuses, the rule not */

/* vm_verdict: what a guest's request between them does */
#define GPUP2P_VM_OK			0	/* reaches the IOMMU, forwarded */
#define GPUP2P_VM_BYPASS		1	/* a port routes it: @vm_port */
#define GPUP2P_VM_NONE			2	/* root complex does not forward */
#define GPUP2P_VM_UNKNOWN		3	/* a hop's ACS not readable (4) */

/* out_flags */
#define GPUP2P_VERDICT_HAS_COMMON	(1 << 0)	/* @common is valid */
#define GPUP2P_VERDICT_HAS_REDIRECT	(1 << 1)	/* @redirect is valid */
#define GPUP2P_VERDICT_HAS_VM_PORT	(1 << 2)	/* @vm_port is valid */
#define GPUP2P_VERDICT_FROM_P2PDMA	(1 << 3)	/* @p2pdma is valid */
#define GPUP2P_VERDICT_VM_FROM_P2PDMA	(1 << 4)	/* @p2pdma_host too */
#define GPUP2P_VERDICT_RULE_DIFFERS	(1 << 5)	/* p2pdma != the rule */

/*
 * @p2pdma, @p2pdma_host: p2pdma's -1 is "not supported"; each is 0 unless
 * its flag is set.
 */
#define GPUP2P_P2PDMA_NOT_SUPPORTED	(-1)

/* No IOMMU group (the IOMMU is off for the device). */
#define GPUP2P_NO_IOMMU_GROUP		(-1)

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
	__u32	vm_verdict;	/* out: GPUP2P_VM_* */
	__u32	vm_port;	/* out: the first port that routes it itself */
	__s32	iommu_group_a;	/* out: or GPUP2P_NO_IOMMU_GROUP */
	__s32	iommu_group_b;	/* out: likewise */
	__u32	__reserved;	/* in: 0 */
	/* Since the module asks p2pdma (an older caller's argsz ends above). */
	__s32	p2pdma;		/* out: pci_p2pdma_distance_many(a, b) */
	__s32	p2pdma_host;	/* out: the same, root complex alone */
};

#define GPUP2P_VERDICT		_IO(GPUP2P_TYPE, GPUP2P_BASE + 1)

#endif /* _UAPI_GPUP2P_H */
