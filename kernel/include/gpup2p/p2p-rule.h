/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * Two P2P rules, as static inline code over plain data:
 *
 * - gp_p2p_rule(): the bare-metal rule of Linux's drivers/pci/p2pdma.c
 *   (calc_map_type_and_dist(), cpu_supports_p2pdma(),
 *   host_bridge_whitelist()), as Linux 7.3 has it;
 * - gp_p2p_vm_rule(): the rule for a guest's P2P request, which every
 *   clique decision follows. A guest addresses its peer's BAR by
 *   guest-physical address; only a request that reaches the root complex
 *   is translated by the IOMMU (through the VMM's mapping of the peer BAR)
 *   and forwarded. So each device must be isolated as Linux isolates it
 *   for its IOMMU groups: every bridge from the device up to and including
 *   its root port passes pci_acs_enabled() (drivers/pci/pci.c) with
 *   REQ_ACS_FLAGS (drivers/iommu/iommu.c: SV RR CR UF), the walk of
 *   pci_acs_path_enabled(); and the root complex must forward P2P between
 *   the root ports (p2pdma's host bridge rule). A pair p2pdma calls
 *   "direct" is, for a guest, routed by a switch on host addresses: it
 *   bypasses the IOMMU.
 *
 * It is the one copy of both: the kernel module fills the paths from
 * struct pci_dev, the core library from its sysfs model.
 *
 * No library calls and no kernel or libc types, so it compiles unchanged in
 * the kernel and in user space.
 */
#ifndef GPUP2P_P2P_RULE_H
#define GPUP2P_P2P_RULE_H

/* Deeper paths are refused by the fronts (the masks below are 32 bits). */
#define GP_P2P_MAX_HOPS		32

/* A PCI address: segment << 16 | bus << 8 | devfn (as GPUP2P_PCI_ADDR). */
#define GP_P2P_ADDR(seg, bus, devfn) \
	(((unsigned int)(seg) << 16) | ((unsigned int)(bus) << 8) | \
	 (unsigned int)(devfn))

/* ACS Control bits that send P2P requests upstream (PCIe r6.0, 7.7.8). */
#define GP_P2P_ACS_SV		0x0001
#define GP_P2P_ACS_RR		0x0004
#define GP_P2P_ACS_CR		0x0008
#define GP_P2P_ACS_UF		0x0010
#define GP_P2P_ACS_EC		0x0020
#define GP_P2P_ACS_REDIRECT	(GP_P2P_ACS_RR | GP_P2P_ACS_CR | GP_P2P_ACS_EC)
/* Linux's REQ_ACS_FLAGS (drivers/iommu/iommu.c): what isolation needs. */
#define GP_P2P_ACS_ISOLATE	(GP_P2P_ACS_SV | GP_P2P_ACS_RR | \
				 GP_P2P_ACS_CR | GP_P2P_ACS_UF)

enum gp_p2p_acs_state {
	GP_P2P_ACS_ABSENT,	/* no ACS capability: nothing redirects */
	GP_P2P_ACS_PRESENT,	/* acs_ctrl holds the ACS Control register */
	GP_P2P_ACS_UNKNOWN,	/* not readable: an unprivileged sysfs
				 * reader, a failed or all-ones read, a
				 * device gone or in D3cold */
};

/*
 * What a hop's two ACS register reads say: @ctrl_err and @cap_err are the
 * config accessor's results (0: read), @gone that the device is
 * disconnected or in D3cold, where config space answers all-ones or not
 * at all and nothing was read. A failed read, or a register of all ones
 * (what a vanished device returns, and no port implements every ACS
 * control), is never taken for "redirects": the state is unknown.
 */
static inline unsigned char gp_p2p_acs_read_state(int gone, int ctrl_err,
						  unsigned short ctrl,
						  int cap_err,
						  unsigned short cap)
{
	if (gone || ctrl_err || cap_err || ctrl == 0xffff || cap == 0xffff)
		return GP_P2P_ACS_UNKNOWN;
	return GP_P2P_ACS_PRESENT;
}

/* What a hop is, by the PCIe types pci_acs_enabled() tells apart. */
enum gp_p2p_port {
	GP_P2P_PORT_UNKNOWN,	/* config space not walked: undecided */
	GP_P2P_PORT_ENDPOINT,	/* a PCIe endpoint (legacy, RC-integrated) */
	GP_P2P_PORT_ROOT,	/* a root port */
	GP_P2P_PORT_SWITCH_UP,	/* a switch upstream port */
	GP_P2P_PORT_SWITCH_DOWN,	/* a switch downstream port */
	GP_P2P_PORT_OTHER_BRIDGE,	/* PCI/PCI-X-to-PCIe bridge, RC event
					 * collector: never isolates */
	GP_P2P_PORT_PCI_BRIDGE,	/* PCIe-to-PCI/PCI-X bridge: a conventional
				 * bus below it */
	GP_P2P_PORT_CONVENTIONAL,	/* no PCIe capability: conventional PCI */
};

/* One device of a path: the device itself, then each upstream bridge. */
struct gp_p2p_hop {
	unsigned int addr;		/* GP_P2P_ADDR() */
	unsigned short acs_ctrl;	/* ACS Control register */
	unsigned short acs_cap;		/* ACS Capability register */
	unsigned char acs_state;	/* enum gp_p2p_acs_state */
	unsigned char port;		/* enum gp_p2p_port */
	unsigned char multifunction;	/* Linux's pci_dev.multifunction */
};

/*
 * The host bridge above a path: its root bus, and the identity of the
 * device p2pdma's pci_host_bridge_dev() matches its list on: the first
 * device of that bus, when it is at devfn 0 or is a root port (Linux 5.19
 * and later; the listed Skylake-E root ports sit at other devfns).
 */
struct gp_p2p_host {
	unsigned int domain;
	unsigned int bus;
	unsigned int has_root_dev;	/* 0: no such device */
	unsigned short vendor;
	unsigned short device;
};

struct gp_p2p_path {
	struct gp_p2p_hop hops[GP_P2P_MAX_HOPS];
	unsigned int nhops;		/* at least 1: the device itself */
	struct gp_p2p_host host;
};

enum gp_p2p_cpu_vendor {
	GP_P2P_CPU_UNKNOWN,		/* not known: AMD cannot be ruled out */
	GP_P2P_CPU_INTEL,
	GP_P2P_CPU_AMD,
	GP_P2P_CPU_OTHER,
};

struct gp_p2p_cpu {
	unsigned int vendor;		/* enum gp_p2p_cpu_vendor */
	unsigned int family;
};

enum gp_p2p_verdict_kind {
	GP_P2P_RULE_DIRECT,		/* bus addresses below a common bridge */
	GP_P2P_RULE_HOST_BRIDGE,	/* through a host bridge that forwards */
	GP_P2P_RULE_NONE,		/* not supported */
	GP_P2P_RULE_UNKNOWN,		/* the input lacks what the rule needs */
};

/* Why the path below the host bridge does or does not carry P2P. */
enum gp_p2p_path_reason {
	GP_P2P_PATH_COMMON_BRIDGE,	/* common upstream, nothing redirects */
	GP_P2P_PATH_ACS_REDIRECT,	/* common upstream, ACS redirects */
	GP_P2P_PATH_NO_COMMON,		/* only a host bridge joins them */
	GP_P2P_PATH_ACS_UNKNOWN,	/* common upstream, ACS not readable */
};

/*
 * Why the host bridge rule decided as it did (with a redirect or no
 * common upstream bridge; GP_P2P_HOST_NOT_NEEDED otherwise).
 */
enum gp_p2p_host_reason {
	GP_P2P_HOST_NOT_NEEDED,
	GP_P2P_HOST_AMD_ZEN,		/* AMD family 17h or later forwards */
	GP_P2P_HOST_SAME_LISTED,	/* one host bridge, on the list */
	GP_P2P_HOST_BOTH_LISTED,	/* two host bridges, both on the list */
	GP_P2P_HOST_CPU_UNKNOWN,	/* not listed, and the CPU is unknown */
	GP_P2P_HOST_A_NOT_LISTED,	/* a's host bridge is not on the list */
	GP_P2P_HOST_B_NOT_LISTED,	/* b's host bridge is not on the list */
	GP_P2P_HOST_SAME_ONLY,		/* both listed, but only within one */
};

struct gp_p2p_outcome {
	unsigned int kind;		/* enum gp_p2p_verdict_kind */
	unsigned int path_reason;	/* enum gp_p2p_path_reason */
	unsigned int host_reason;	/* enum gp_p2p_host_reason */
	unsigned int distance;		/* hops to the common bridge, summed */
	int common_a;			/* index of the common hop in a, or -1 */
	int common_b;			/* the same hop's index in b, or -1 */
	/* Bit i: hop i was looked at and redirects / could not be read. */
	unsigned int redirect_a, redirect_b;
	unsigned int unknown_a, unknown_b;
	const char *host_a_name;	/* list entry of a's host bridge, or 0 */
	const char *host_b_name;
};

#define GP_HOSTBRIDGE_REQ_SAME_HOST_BRIDGE	0x1
/* The entry matches every device of its vendor (PCI_ANY_ID). */
#define GP_HOSTBRIDGE_ANY_DEVICE		0x2

struct gp_hostbridge_entry {
	unsigned short vendor;
	unsigned short device;
	unsigned int flags;
	const char *name;
};

/*
 * p2pdma's pci_p2pdma_whitelist[] as of Linux 7.3, in its order (the first
 * entry of a vendor/device decides). tests/unit/test_p2pdma_source.py
 * compares it with the list in Debian's linux-source and fails on any
 * difference. The module on an older kernel (6.12) still answers with this
 * list, and says so: an older kernel lists fewer bridges.
 */
static const struct gp_hostbridge_entry gp_hostbridge_p2p_list[] = {
	{ 0x8086, 0x3c00, GP_HOSTBRIDGE_REQ_SAME_HOST_BRIDGE,
	  "Intel Xeon E5/Core i7" },
	{ 0x8086, 0x3c01, GP_HOSTBRIDGE_REQ_SAME_HOST_BRIDGE,
	  "Intel Xeon E5/Core i7" },
	{ 0x8086, 0x2f00, GP_HOSTBRIDGE_REQ_SAME_HOST_BRIDGE,
	  "Intel Xeon E7 v3/E5 v3" },
	{ 0x8086, 0x2f01, GP_HOSTBRIDGE_REQ_SAME_HOST_BRIDGE,
	  "Intel Xeon E7 v3/E5 v3" },
	{ 0x8086, 0x2030, 0, "Intel Skylake-E" },
	{ 0x8086, 0x2031, 0, "Intel Skylake-E" },
	{ 0x8086, 0x2032, 0, "Intel Skylake-E" },
	{ 0x8086, 0x2033, 0, "Intel Skylake-E" },
	{ 0x8086, 0x2020, 0, "Intel Skylake-SP" },
	{ 0x8086, 0x09a2, 0, "Intel Ice Lake-SP" },
	{ 0x8086, 0x0b25, 0, "Intel Sapphire Rapids DSA" },
	{ 0x8086, 0x0cfe, 0, "Intel Sapphire Rapids IAX" },
	{ 0x8086, 0x11fb, 0, "Intel Granite Rapids-D DSA" },
	{ 0x8086, 0x1212, 0, "Intel Diamond Rapids DSA" },
	{ 0x8086, 0x1216, 0, "Intel Diamond Rapids IAA" },
	{ 0x8086, 0x4940, 0, "Intel QAT 4xxx" },
	{ 0x8086, 0x4942, 0, "Intel QAT 401xx" },
	{ 0x8086, 0x4944, 0, "Intel QAT 402xx" },
	{ 0x8086, 0x4946, 0, "Intel QAT 420xx" },
	{ 0x8086, 0x4948, 0, "Intel QAT 6xxx" },
	{ 0x1ae0, 0, GP_HOSTBRIDGE_ANY_DEVICE, "Google SoC" },
	{ 0x10de, 0x2f95, 0, "NVIDIA CPU" },
	{ 0x10de, 0x2f96, 0, "NVIDIA CPU" },
	{ 0x10de, 0x2f97, 0, "NVIDIA CPU" },
	{ 0x10de, 0x2f98, 0, "NVIDIA CPU" },
};

/*
 * AMD CPUs of family 17h (Zen) and later route P2P between root ports
 * (cpu_supports_p2pdma() tests X86_VENDOR_AMD only: Hygon is not AMD).
 */
#define GP_AMD_P2P_MIN_FAMILY	0x17

static inline const struct gp_hostbridge_entry *
gp_hostbridge_lookup(const struct gp_p2p_host *host)
{
	unsigned int i;

	if (!host->has_root_dev)
		return 0;
	for (i = 0; i < sizeof(gp_hostbridge_p2p_list) /
			sizeof(gp_hostbridge_p2p_list[0]); i++) {
		const struct gp_hostbridge_entry *e =
			&gp_hostbridge_p2p_list[i];

		if (e->vendor == host->vendor &&
		    ((e->flags & GP_HOSTBRIDGE_ANY_DEVICE) ||
		     e->device == host->device))
			return e;
	}
	return 0;
}

static inline int gp_p2p_same_host(const struct gp_p2p_host *a,
				   const struct gp_p2p_host *b)
{
	return a->domain == b->domain && a->bus == b->bus;
}

/* Marks @hop's bit in @redirect or @unknown. */
static inline void gp_p2p_acs_scan(const struct gp_p2p_hop *hop,
				   unsigned int bit, unsigned int *redirect,
				   unsigned int *unknown)
{
	if (hop->acs_state == GP_P2P_ACS_UNKNOWN)
		*unknown |= 1u << bit;
	else if (hop->acs_state == GP_P2P_ACS_PRESENT &&
		 (hop->acs_ctrl & GP_P2P_ACS_REDIRECT))
		*redirect |= 1u << bit;
}

/* cpu_supports_p2pdma() and host_bridge_whitelist(). */
static inline unsigned int gp_p2p_host_rule(const struct gp_p2p_path *a,
					    const struct gp_p2p_path *b,
					    const struct gp_p2p_cpu *cpu,
					    struct gp_p2p_outcome *out)
{
	const struct gp_hostbridge_entry *ea = gp_hostbridge_lookup(&a->host);
	const struct gp_hostbridge_entry *eb = gp_hostbridge_lookup(&b->host);
	int same = gp_p2p_same_host(&a->host, &b->host);

	out->host_a_name = ea ? ea->name : 0;
	out->host_b_name = eb ? eb->name : 0;
	if (cpu->vendor == GP_P2P_CPU_AMD &&
	    cpu->family >= GP_AMD_P2P_MIN_FAMILY) {
		out->host_reason = GP_P2P_HOST_AMD_ZEN;
		return GP_P2P_RULE_HOST_BRIDGE;
	}
	if (same && ea) {
		out->host_reason = GP_P2P_HOST_SAME_LISTED;
		return GP_P2P_RULE_HOST_BRIDGE;
	}
	if (!same && ea && eb &&
	    !(ea->flags & GP_HOSTBRIDGE_REQ_SAME_HOST_BRIDGE) &&
	    !(eb->flags & GP_HOSTBRIDGE_REQ_SAME_HOST_BRIDGE)) {
		out->host_reason = GP_P2P_HOST_BOTH_LISTED;
		return GP_P2P_RULE_HOST_BRIDGE;
	}
	if (cpu->vendor == GP_P2P_CPU_UNKNOWN) {
		out->host_reason = GP_P2P_HOST_CPU_UNKNOWN;
		return GP_P2P_RULE_UNKNOWN;
	}
	if (same || !ea)
		out->host_reason = GP_P2P_HOST_A_NOT_LISTED;
	else if (!eb)
		out->host_reason = GP_P2P_HOST_B_NOT_LISTED;
	else
		out->host_reason = GP_P2P_HOST_SAME_ONLY;
	return GP_P2P_RULE_NONE;
}

/**
 * gp_p2p_rule() - the P2P verdict between two devices
 * @a: the provider's path (the device, then each upstream bridge)
 * @b: the client's path
 * @cpu: the host CPU
 * @out: the verdict, its distance and its reasons
 *
 * The walk of calc_map_type_and_dist(): the first hop of @a that is also on
 * @b's path is the common upstream bridge; ACS is looked at on @a's hops up
 * to and including it and on @b's hops below it. Without a common bridge,
 * or with a redirect on the way, only the host bridge rule can allow P2P.
 */
static inline void gp_p2p_rule(const struct gp_p2p_path *a,
			       const struct gp_p2p_path *b,
			       const struct gp_p2p_cpu *cpu,
			       struct gp_p2p_outcome *out)
{
	unsigned int i, j;

	out->kind = GP_P2P_RULE_NONE;
	out->path_reason = GP_P2P_PATH_NO_COMMON;
	out->host_reason = GP_P2P_HOST_NOT_NEEDED;
	out->common_a = -1;
	out->common_b = -1;
	out->redirect_a = out->redirect_b = 0;
	out->unknown_a = out->unknown_b = 0;
	out->host_a_name = out->host_b_name = 0;
	for (i = 0; i < a->nhops && out->common_a < 0; i++) {
		gp_p2p_acs_scan(&a->hops[i], i, &out->redirect_a,
				&out->unknown_a);
		for (j = 0; j < b->nhops; j++) {
			if (a->hops[i].addr == b->hops[j].addr) {
				out->common_a = (int)i;
				out->common_b = (int)j;
				break;
			}
		}
	}
	if (out->common_a < 0) {
		/* Without a common bridge ACS changes nothing. */
		out->redirect_a = out->unknown_a = 0;
		out->distance = a->nhops + b->nhops;
		out->kind = gp_p2p_host_rule(a, b, cpu, out);
		return;
	}
	for (j = 0; j < (unsigned int)out->common_b; j++)
		gp_p2p_acs_scan(&b->hops[j], j, &out->redirect_b,
				&out->unknown_b);
	out->distance = (unsigned int)(out->common_a + out->common_b);
	if (out->unknown_a || out->unknown_b) {
		out->path_reason = GP_P2P_PATH_ACS_UNKNOWN;
		out->kind = GP_P2P_RULE_UNKNOWN;
	} else if (!out->redirect_a && !out->redirect_b) {
		out->path_reason = GP_P2P_PATH_COMMON_BRIDGE;
		out->kind = GP_P2P_RULE_DIRECT;
	} else {
		out->path_reason = GP_P2P_PATH_ACS_REDIRECT;
		out->kind = gp_p2p_host_rule(a, b, cpu, out);
	}
}

/* The first redirecting hop: its index, or -1; @which: 0 on a, 1 on b. */
static inline int gp_p2p_first_redirect(const struct gp_p2p_outcome *out,
					int *which)
{
	unsigned int i;

	*which = -1;
	for (i = 0; i < GP_P2P_MAX_HOPS; i++) {
		if (out->redirect_a & (1u << i)) {
			*which = 0;
			return (int)i;
		}
	}
	for (i = 0; i < GP_P2P_MAX_HOPS; i++) {
		if (out->redirect_b & (1u << i)) {
			*which = 1;
			return (int)i;
		}
	}
	return -1;
}

enum gp_p2p_vm_kind {
	GP_P2P_VM_OK,		/* reaches the IOMMU; the root complex forwards */
	GP_P2P_VM_BYPASS,	/* a hop on the way does not isolate */
	GP_P2P_VM_NONE,		/* reaches the IOMMU; the root complex does not
				 * forward P2P between these root ports */
	GP_P2P_VM_UNKNOWN,	/* a hop's ACS or the CPU could not be read */
};

struct gp_p2p_vm_outcome {
	unsigned int kind;		/* enum gp_p2p_vm_kind */
	/* Bit i: hop i fails pci_acs_enabled(hop, REQ_ACS_FLAGS). */
	unsigned int bypass_a, bypass_b;
	/* Bit i: hop i could not be judged (ACS or type not read). */
	unsigned int unknown_a, unknown_b;
	int same_device;		/* one device: a shared link or PF */
	struct gp_p2p_outcome bare;	/* gp_p2p_rule()'s verdict */
	struct gp_p2p_outcome host;	/* the host bridge half, for reasons */
};

/*
 * pci_acs_flags_enabled(): the controls of @flags that the Capability
 * register implements (one it lacks is hard-wired, so Linux does not
 * require it; Egress Control stays required) must all be on.
 * Return: 1 yes, 0 no, -1 not known.
 */
static inline int gp_p2p_acs_flags_enabled(const struct gp_p2p_hop *hop,
					   unsigned int flags)
{
	if (hop->acs_state == GP_P2P_ACS_UNKNOWN)
		return -1;
	if (hop->acs_state != GP_P2P_ACS_PRESENT)
		return 0;
	flags &= (unsigned int)hop->acs_cap | GP_P2P_ACS_EC;
	return (hop->acs_ctrl & flags) == flags;
}

/*
 * pci_acs_enabled() without device quirks: root and downstream ports are
 * always checked; endpoints and upstream ports only when multifunction
 * (a single function has no peer inside it); conventional PCI, PCIe-to-PCI
 * and PCI-to-PCIe bridges and RC event collectors never pass.
 * Return: 1 yes, 0 no, -1 not known.
 */
static inline int gp_p2p_acs_enabled(const struct gp_p2p_hop *hop,
				     unsigned int flags)
{
	switch (hop->port) {
	case GP_P2P_PORT_UNKNOWN:
		return -1;
	case GP_P2P_PORT_ROOT:
	case GP_P2P_PORT_SWITCH_DOWN:
		return gp_p2p_acs_flags_enabled(hop, flags);
	case GP_P2P_PORT_ENDPOINT:
	case GP_P2P_PORT_SWITCH_UP:
		return hop->multifunction ?
		       gp_p2p_acs_flags_enabled(hop, flags) : 1;
	default:
		return 0;
	}
}

/*
 * Two devices below one root or downstream port share its link: they are
 * functions of one device (ARI numbers them across slots, and a VF's
 * upstream bridge is its PF's), whatever their slot numbers.
 */
static inline int gp_p2p_share_link(const struct gp_p2p_path *a,
				    const struct gp_p2p_path *b)
{
	return a->nhops >= 2 && b->nhops >= 2 &&
	       a->hops[0].addr != b->hops[0].addr &&
	       a->hops[1].addr == b->hops[1].addr &&
	       (a->hops[1].port == GP_P2P_PORT_ROOT ||
		a->hops[1].port == GP_P2P_PORT_SWITCH_DOWN);
}

/*
 * Marks the hops of @p that do not isolate in @bypass, those that cannot
 * be judged in @unknown: pci_acs_path_enabled() from the device's
 * upstream bridge to the root bus (a conventional bus on the way fails at
 * its bridge); the device itself only when it is one device with its
 * peer (then its own ACS must isolate its functions from each other, as
 * for a multifunction device). A conventional device on a root bus is
 * behind no shared bus: Linux checks nothing for it either.
 */
static inline void gp_p2p_vm_scan_path(const struct gp_p2p_path *p,
				       int one_device, unsigned int *bypass,
				       unsigned int *unknown)
{
	unsigned int i;
	int ok;

	for (i = 0; i < p->nhops; i++) {
		const struct gp_p2p_hop *hop = &p->hops[i];

		if (i > 0)
			ok = gp_p2p_acs_enabled(hop, GP_P2P_ACS_ISOLATE);
		else if (hop->port == GP_P2P_PORT_UNKNOWN)
			ok = -1;
		else if (one_device)
			ok = gp_p2p_acs_flags_enabled(hop, GP_P2P_ACS_ISOLATE);
		else
			ok = 1;
		if (ok < 0)
			*unknown |= 1u << i;
		else if (!ok)
			*bypass |= 1u << i;
	}
}

/**
 * gp_p2p_vm_rule() - may a guest's P2P request between @a and @b arrive?
 * @a: one device's path (the device, then each upstream bridge)
 * @b: the other's
 * @cpu: the host CPU
 * @same_device: @a and @b are one device by what the paths do not show
 *	(functions of one slot on a root bus, VFs of one PF there)
 * @out: the verdict, with the bare-metal verdict and the hops to blame
 *
 * Each device must be isolated as Linux's IOMMU grouping requires: every
 * bridge up to and including its root port passes pci_acs_enabled() with
 * SV RR CR UF (a PCIe-to-PCI bridge, with its conventional bus, never
 * does), and two functions of one device both isolate. Then every peer request reaches
 * the IOMMU, and the root complex must forward it: p2pdma's host bridge
 * rule. A hop that cannot be judged makes the pair unknown, which is
 * never a clique either, and names what to read.
 */
static inline void gp_p2p_vm_rule(const struct gp_p2p_path *a,
				  const struct gp_p2p_path *b,
				  const struct gp_p2p_cpu *cpu, int same_device,
				  struct gp_p2p_vm_outcome *out)
{
	gp_p2p_rule(a, b, cpu, &out->bare);
	out->bypass_a = out->bypass_b = 0;
	out->unknown_a = out->unknown_b = 0;
	out->same_device = same_device || gp_p2p_share_link(a, b);
	gp_p2p_vm_scan_path(a, out->same_device, &out->bypass_a,
			    &out->unknown_a);
	gp_p2p_vm_scan_path(b, out->same_device, &out->bypass_b,
			    &out->unknown_b);
	out->host.host_reason = GP_P2P_HOST_NOT_NEEDED;
	out->host.host_a_name = out->host.host_b_name = 0;
	if (out->unknown_a || out->unknown_b) {
		out->kind = GP_P2P_VM_UNKNOWN;
		return;
	}
	if (out->bypass_a || out->bypass_b) {
		out->kind = GP_P2P_VM_BYPASS;
		return;
	}
	switch (gp_p2p_host_rule(a, b, cpu, &out->host)) {
	case GP_P2P_RULE_HOST_BRIDGE:
		out->kind = GP_P2P_VM_OK;
		break;
	case GP_P2P_RULE_NONE:
		out->kind = GP_P2P_VM_NONE;
		break;
	default:
		out->kind = GP_P2P_VM_UNKNOWN;
		break;
	}
}

#endif /* GPUP2P_P2P_RULE_H */
