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
	GP_P2P_PORT_RC_ENDPOINT,	/* a root complex integrated endpoint */
};

/* A flag of Linux's struct pci_dev that a filler may or may not see. */
enum gp_p2p_flag {
	GP_P2P_FLAG_UNKNOWN,	/* not visible (sysfs does not show it) */
	GP_P2P_FLAG_CLEAR,
	GP_P2P_FLAG_SET,
};

/* One device of a path: the device itself, then each upstream bridge. */
struct gp_p2p_hop {
	unsigned int addr;		/* GP_P2P_ADDR() */
	unsigned short vendor;		/* PCI ids, for Linux's ACS quirks */
	unsigned short device;
	unsigned short acs_ctrl;	/* ACS Control register */
	unsigned short acs_cap;		/* ACS Capability register */
	/*
	 * The word at ACS + 8, where Intel's Sunrise Point PCH root ports
	 * keep ACS Control (pci_quirk_intel_spt_pch_acs()); read only where
	 * gp_acs_quirk_ctrl8_wanted() says, else acs_ctrl8_known is 0.
	 */
	unsigned short acs_ctrl8;
	unsigned char acs_ctrl8_known;
	unsigned char acs_state;	/* enum gp_p2p_acs_state */
	unsigned char port;		/* enum gp_p2p_port */
	unsigned char multifunction;	/* Linux's pci_dev.multifunction */
	/* PCI_DEV_FLAGS_ACS_ENABLED_QUIRK: enum gp_p2p_flag */
	unsigned char acs_enabled_quirk;
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
 * Linux's ACS quirks: pci_dev_specific_acs_enabled() and its table
 * pci_dev_acs_enabled[] (drivers/pci/quirks.c, Linux 7.3), which
 * pci_acs_enabled() asks before reading any ACS register. Each kind names
 * the quirk function it stands for; the table below holds every entry of
 * Linux's, in its order (the first entry whose function answers decides),
 * and tests/unit/test_acs_quirks_source.py compares both, with the device
 * id lists the functions hold, against Debian's linux-source.
 *
 * One kind is not modelled: pci_quirk_amd_sb_acs (AMD/ATI southbridge
 * functions: SMBus, IDE, HDA, LPC, USB OHCI and two conventional PCI
 * bridges, on a root bus, where the ACPI IVRS table is present). Its
 * entries stay in the table, so the comparison still covers them, and the
 * walk goes on past them as past a function answering -ENOTTY: none of
 * those devices is a GPU or a NIC, a conventional PCI bus is never a
 * clique here whatever Linux groups, and the IVRS table is not in sysfs.
 *
 * Intel's PCH root ports (pci_quirk_intel_pch_acs) answer by
 * PCI_DEV_FLAGS_ACS_ENABLED_QUIRK, which Linux sets at boot where it could
 * turn the ports' isolation on; sysfs does not show it, so read from sysfs
 * they are unknown (the kernel module fills in the flag).
 */
#define GP_P2P_ACS_TB		0x0002
#define GP_P2P_ACS_DT		0x0040

enum gp_acs_quirk_kind {
	GP_ACS_QUIRK_AMD_SB,		/* pci_quirk_amd_sb_acs: not modelled */
	GP_ACS_QUIRK_MF_ENDPOINT,	/* pci_quirk_mf_endpoint_acs */
	GP_ACS_QUIRK_RCIEP,		/* pci_quirk_rciep_acs */
	GP_ACS_QUIRK_QCOM_RP,		/* pci_quirk_qcom_rp_acs */
	GP_ACS_QUIRK_INTEL_PCH,		/* pci_quirk_intel_pch_acs */
	GP_ACS_QUIRK_INTEL_SPT_PCH,	/* pci_quirk_intel_spt_pch_acs */
	GP_ACS_QUIRK_CAVIUM,		/* pci_quirk_cavium_acs */
	GP_ACS_QUIRK_XGENE,		/* pci_quirk_xgene_acs */
	GP_ACS_QUIRK_BRCM,		/* pci_quirk_brcm_acs */
	GP_ACS_QUIRK_LOONGSON,		/* pci_quirk_loongson_acs */
	GP_ACS_QUIRK_AL,		/* pci_quirk_al_acs */
	GP_ACS_QUIRK_NXP_RP,		/* pci_quirk_nxp_rp_acs */
	GP_ACS_QUIRK_ZHAOXIN_PORTS,	/* pci_quirk_zhaoxin_pcie_ports_acs */
	GP_ACS_QUIRK_WANGXUN_NIC,	/* pci_quirk_wangxun_nic_acs */
	GP_ACS_QUIRK_KINDS
};

/* The Linux function a kind stands for, by name (reasons, the test). */
static inline const char *gp_acs_quirk_name(unsigned int kind)
{
	static const char *const names[GP_ACS_QUIRK_KINDS] = {
		[GP_ACS_QUIRK_AMD_SB] = "pci_quirk_amd_sb_acs",
		[GP_ACS_QUIRK_MF_ENDPOINT] = "pci_quirk_mf_endpoint_acs",
		[GP_ACS_QUIRK_RCIEP] = "pci_quirk_rciep_acs",
		[GP_ACS_QUIRK_QCOM_RP] = "pci_quirk_qcom_rp_acs",
		[GP_ACS_QUIRK_INTEL_PCH] = "pci_quirk_intel_pch_acs",
		[GP_ACS_QUIRK_INTEL_SPT_PCH] = "pci_quirk_intel_spt_pch_acs",
		[GP_ACS_QUIRK_CAVIUM] = "pci_quirk_cavium_acs",
		[GP_ACS_QUIRK_XGENE] = "pci_quirk_xgene_acs",
		[GP_ACS_QUIRK_BRCM] = "pci_quirk_brcm_acs",
		[GP_ACS_QUIRK_LOONGSON] = "pci_quirk_loongson_acs",
		[GP_ACS_QUIRK_AL] = "pci_quirk_al_acs",
		[GP_ACS_QUIRK_NXP_RP] = "pci_quirk_nxp_rp_acs",
		[GP_ACS_QUIRK_ZHAOXIN_PORTS] =
			"pci_quirk_zhaoxin_pcie_ports_acs",
		[GP_ACS_QUIRK_WANGXUN_NIC] = "pci_quirk_wangxun_nic_acs",
	};

	return kind < GP_ACS_QUIRK_KINDS ? names[kind] : "?";
}

struct gp_acs_quirk_entry {
	unsigned short vendor;
	unsigned short device;
	unsigned char any_device;	/* PCI_ANY_ID */
	unsigned char kind;		/* enum gp_acs_quirk_kind */
};

#define GP_ACS_Q(v, d, k)	{ (v), (d), 0, GP_ACS_QUIRK_##k }
#define GP_ACS_Q_ANY(v, k)	{ (v), 0, 1, GP_ACS_QUIRK_##k }

/* pci_dev_acs_enabled[] of Linux 7.3, entry for entry and in order. */
static const struct gp_acs_quirk_entry gp_acs_quirk_list[] = {
	/* AMD/ATI southbridge functions */
	GP_ACS_Q(0x1002, 0x4385, AMD_SB), GP_ACS_Q(0x1002, 0x439c, AMD_SB),
	GP_ACS_Q(0x1002, 0x4383, AMD_SB), GP_ACS_Q(0x1002, 0x439d, AMD_SB),
	GP_ACS_Q(0x1002, 0x4384, AMD_SB), GP_ACS_Q(0x1002, 0x4399, AMD_SB),
	GP_ACS_Q(0x1022, 0x780f, AMD_SB), GP_ACS_Q(0x1022, 0x7809, AMD_SB),
	/* Solarflare multifunction NICs */
	GP_ACS_Q(0x1924, 0x0903, MF_ENDPOINT),
	GP_ACS_Q(0x1924, 0x0923, MF_ENDPOINT),
	GP_ACS_Q(0x1924, 0x0a03, MF_ENDPOINT),
	/* Intel multifunction NICs (82598, 82599, X540, X550, 82580, 82576,
	 * 82575, I350, 82571, I219) */
	GP_ACS_Q(0x8086, 0x10c6, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x10db, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x10dd, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x10e1, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x10f1, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x10f7, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x10f8, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x10f9, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x10fa, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x10fb, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x10fc, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x1507, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x1514, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x151c, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x1529, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x152a, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x154d, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x154f, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x1551, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x1558, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x1509, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x150e, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x150f, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x1510, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x1511, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x1516, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x1527, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x10c9, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x10e6, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x10e7, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x10e8, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x150a, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x150d, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x1518, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x1526, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x10a7, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x10a9, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x10d6, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x1521, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x1522, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x1523, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x1524, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x105e, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x105f, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x1060, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x10d9, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x15b7, MF_ENDPOINT),
	GP_ACS_Q(0x8086, 0x15b8, MF_ENDPOINT),
	/* Intel root complex integrated endpoints */
	GP_ACS_Q_ANY(0x8086, RCIEP),
	/* Qualcomm root ports (QDF2xxx, SA8775P, Hamoa, Glymur), HXT SD4800 */
	GP_ACS_Q(0x17cb, 0x0400, QCOM_RP),
	GP_ACS_Q(0x17cb, 0x0401, QCOM_RP),
	GP_ACS_Q(0x17cb, 0x0115, QCOM_RP),
	GP_ACS_Q(0x17cb, 0x0111, QCOM_RP),
	GP_ACS_Q(0x17cb, 0x0120, QCOM_RP),
	GP_ACS_Q(0x1dbf, 0x0401, QCOM_RP),
	/* Intel PCH root ports */
	GP_ACS_Q_ANY(0x8086, INTEL_PCH),
	GP_ACS_Q_ANY(0x8086, INTEL_SPT_PCH),
	/* Emulex BE3-R, Skyhawk-R */
	GP_ACS_Q(0x19a2, 0x0710, MF_ENDPOINT),
	GP_ACS_Q(0x10df, 0x0720, MF_ENDPOINT),
	/* Cavium ThunderX root ports, multifunction devices */
	GP_ACS_Q_ANY(0x177d, CAVIUM),
	GP_ACS_Q(0x177d, 0xa026, MF_ENDPOINT),
	GP_ACS_Q(0x177d, 0xa059, MF_ENDPOINT),
	GP_ACS_Q(0x177d, 0xa060, MF_ENDPOINT),
	/* APM X-Gene, Ampere root ports */
	GP_ACS_Q(0x10e8, 0xe004, XGENE),
	GP_ACS_Q(0x1def, 0xe005, XGENE), GP_ACS_Q(0x1def, 0xe006, XGENE),
	GP_ACS_Q(0x1def, 0xe007, XGENE), GP_ACS_Q(0x1def, 0xe008, XGENE),
	GP_ACS_Q(0x1def, 0xe009, XGENE), GP_ACS_Q(0x1def, 0xe00a, XGENE),
	GP_ACS_Q(0x1def, 0xe00b, XGENE), GP_ACS_Q(0x1def, 0xe00c, XGENE),
	/* Broadcom multifunction devices, iProc PAXB root port */
	GP_ACS_Q(0x14e4, 0x16d7, MF_ENDPOINT),
	GP_ACS_Q(0x14e4, 0x1750, MF_ENDPOINT),
	GP_ACS_Q(0x14e4, 0x1751, MF_ENDPOINT),
	GP_ACS_Q(0x14e4, 0x1752, MF_ENDPOINT),
	GP_ACS_Q(0x14e4, 0x1760, MF_ENDPOINT),
	GP_ACS_Q(0x14e4, 0x1761, MF_ENDPOINT),
	GP_ACS_Q(0x14e4, 0x1762, MF_ENDPOINT),
	GP_ACS_Q(0x14e4, 0x1763, MF_ENDPOINT),
	GP_ACS_Q(0x14e4, 0xd714, BRCM),
	/* Loongson root ports */
	GP_ACS_Q(0x0014, 0x3c09, LOONGSON), GP_ACS_Q(0x0014, 0x3c19, LOONGSON),
	GP_ACS_Q(0x0014, 0x3c29, LOONGSON), GP_ACS_Q(0x0014, 0x7a09, LOONGSON),
	GP_ACS_Q(0x0014, 0x7a19, LOONGSON), GP_ACS_Q(0x0014, 0x7a29, LOONGSON),
	GP_ACS_Q(0x0014, 0x7a39, LOONGSON), GP_ACS_Q(0x0014, 0x7a49, LOONGSON),
	GP_ACS_Q(0x0014, 0x7a59, LOONGSON), GP_ACS_Q(0x0014, 0x7a69, LOONGSON),
	/* Amazon Annapurna Labs root port */
	GP_ACS_Q(0x1c36, 0x0031, AL),
	/* Zhaoxin multifunction devices */
	GP_ACS_Q(0x1d17, 0x3038, MF_ENDPOINT),
	GP_ACS_Q(0x1d17, 0x3104, MF_ENDPOINT),
	GP_ACS_Q(0x1d17, 0x9083, MF_ENDPOINT),
	/* NXP LX2xx0/LX2xx2 root ports */
	GP_ACS_Q(0x1957, 0x8d81, NXP_RP), GP_ACS_Q(0x1957, 0x8da1, NXP_RP),
	GP_ACS_Q(0x1957, 0x8d83, NXP_RP), GP_ACS_Q(0x1957, 0x8d80, NXP_RP),
	GP_ACS_Q(0x1957, 0x8da0, NXP_RP), GP_ACS_Q(0x1957, 0x8d82, NXP_RP),
	GP_ACS_Q(0x1957, 0x8d90, NXP_RP), GP_ACS_Q(0x1957, 0x8db0, NXP_RP),
	GP_ACS_Q(0x1957, 0x8d92, NXP_RP), GP_ACS_Q(0x1957, 0x8d91, NXP_RP),
	GP_ACS_Q(0x1957, 0x8db1, NXP_RP), GP_ACS_Q(0x1957, 0x8d93, NXP_RP),
	GP_ACS_Q(0x1957, 0x8d89, NXP_RP), GP_ACS_Q(0x1957, 0x8da9, NXP_RP),
	GP_ACS_Q(0x1957, 0x8d8b, NXP_RP), GP_ACS_Q(0x1957, 0x8d88, NXP_RP),
	GP_ACS_Q(0x1957, 0x8da8, NXP_RP), GP_ACS_Q(0x1957, 0x8d8a, NXP_RP),
	GP_ACS_Q(0x1957, 0x8d98, NXP_RP), GP_ACS_Q(0x1957, 0x8db8, NXP_RP),
	GP_ACS_Q(0x1957, 0x8d9a, NXP_RP), GP_ACS_Q(0x1957, 0x8d99, NXP_RP),
	GP_ACS_Q(0x1957, 0x8db9, NXP_RP), GP_ACS_Q(0x1957, 0x8d9b, NXP_RP),
	/* Zhaoxin root and downstream ports; Wangxun NICs */
	GP_ACS_Q_ANY(0x1d17, ZHAOXIN_PORTS),
	GP_ACS_Q_ANY(0x8088, WANGXUN_NIC),
};

/* An inclusive range of device ids a quirk function matches. */
struct gp_acs_id_range {
	unsigned short first, last;
};

/* pci_quirk_cavium_acs_match(): ThunderX1, ThunderX2, ThunderX3. */
static const struct gp_acs_id_range gp_acs_quirk_cavium_ids[] = {
	{ 0xa000, 0xa7ff }, { 0xaf84, 0xaf84 }, { 0xb884, 0xb884 },
};

/* pci_quirk_zhaoxin_pcie_ports_acs(): the ports that isolate. */
static const struct gp_acs_id_range gp_acs_quirk_zhaoxin_ids[] = {
	{ 0x0710, 0x071e }, { 0x0721, 0x0721 }, { 0x0723, 0x0752 },
};

/* pci_quirk_intel_spt_pch_acs_match(): Sunrise Point, Union Point, 7th
 * and 8th generation mobile. */
static const struct gp_acs_id_range gp_acs_quirk_intel_spt_ids[] = {
	{ 0xa110, 0xa11f }, { 0xa167, 0xa16a }, { 0xa290, 0xa29f },
	{ 0xa2e7, 0xa2ee }, { 0x9d10, 0x9d1b },
};

/* pci_quirk_wangxun_nic_acs(): the NICs that isolate their functions. */
static const struct gp_acs_id_range gp_acs_quirk_wangxun_ids[] = {
	{ 0x0100, 0x010f }, { 0x1001, 0x1001 }, { 0x2001, 0x2001 },
	{ 0x5010, 0x5010 }, { 0x5025, 0x5025 }, { 0x5040, 0x5040 },
	{ 0x5110, 0x5110 }, { 0x5125, 0x5125 }, { 0x5140, 0x5140 },
};

/* pci_quirk_intel_pch_acs_ids[]: PCH root ports with ACS-like controls
 * but no ACS capability (Ibex Peak to Wellsburg and 9 series). */
static const unsigned short gp_acs_quirk_intel_pch_ids[] = {
	0x3b42, 0x3b43, 0x3b44, 0x3b45, 0x3b46, 0x3b47, 0x3b48, 0x3b49,
	0x3b4a, 0x3b4b, 0x3b4c, 0x3b4d, 0x3b4e, 0x3b4f, 0x3b50, 0x3b51,
	0x1c10, 0x1c11, 0x1c12, 0x1c13, 0x1c14, 0x1c15, 0x1c16, 0x1c17,
	0x1c18, 0x1c19, 0x1c1a, 0x1c1b, 0x1c1c, 0x1c1d, 0x1c1e, 0x1c1f,
	0x1e10, 0x1e11, 0x1e12, 0x1e13, 0x1e14, 0x1e15, 0x1e16, 0x1e17,
	0x1e18, 0x1e19, 0x1e1a, 0x1e1b, 0x1e1c, 0x1e1d, 0x1e1e, 0x1e1f,
	0x8c10, 0x8c11, 0x8c12, 0x8c13, 0x8c14, 0x8c15, 0x8c16, 0x8c17,
	0x8c18, 0x8c19, 0x8c1a, 0x8c1b, 0x8c1c, 0x8c1d, 0x8c1e, 0x8c1f,
	0x9c10, 0x9c11, 0x9c12, 0x9c13, 0x9c14, 0x9c15, 0x9c16, 0x9c17,
	0x9c18, 0x9c19, 0x9c1a, 0x9c1b,
	0x9c90, 0x9c91, 0x9c92, 0x9c93, 0x9c94, 0x9c95, 0x9c96, 0x9c97,
	0x9c98, 0x9c99, 0x9c9a, 0x9c9b,
	0x1d10, 0x1d12, 0x1d14, 0x1d16, 0x1d18, 0x1d1a, 0x1d1c, 0x1d1e,
	0x8d10, 0x8d11, 0x8d12, 0x8d13, 0x8d14, 0x8d15, 0x8d16, 0x8d17,
	0x8d18, 0x8d19, 0x8d1a, 0x8d1b, 0x8d1c, 0x8d1d, 0x8d1e,
	0x8c90, 0x8c92, 0x8c94, 0x8c96, 0x8c98, 0x8c9a, 0x8c9c, 0x8c9e,
};

#define GP_ACS_N(a)	(sizeof(a) / sizeof((a)[0]))

static inline int gp_acs_id_in(const struct gp_acs_id_range *r,
			       unsigned int n, unsigned short device)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (device >= r[i].first && device <= r[i].last)
			return 1;
	return 0;
}

static inline int gp_acs_quirk_intel_pch_match(const struct gp_p2p_hop *hop)
{
	unsigned int i;

	if (hop->vendor != 0x8086 || hop->port != GP_P2P_PORT_ROOT)
		return 0;
	for (i = 0; i < GP_ACS_N(gp_acs_quirk_intel_pch_ids); i++)
		if (gp_acs_quirk_intel_pch_ids[i] == hop->device)
			return 1;
	return 0;
}

/*
 * Whether a filler must read the word at ACS + 8 of a device with these
 * ids (acs_ctrl8): pci_quirk_intel_spt_pch_acs() reads Control there.
 * The port type is the rule's to check; these ids are all root ports.
 */
static inline int gp_acs_quirk_ctrl8_wanted(unsigned short vendor,
					    unsigned short device)
{
	return vendor == 0x8086 &&
	       gp_acs_id_in(gp_acs_quirk_intel_spt_ids,
			    GP_ACS_N(gp_acs_quirk_intel_spt_ids), device);
}

/* What one quirk function answers, as pci_dev_specific_acs_enabled(). */
enum gp_acs_quirk_answer {
	GP_ACS_QUIRK_NO_ANSWER,	/* -ENOTTY/-ENODEV: ask the next entry */
	GP_ACS_QUIRK_FAILS,	/* 0: does not provide @flags */
	GP_ACS_QUIRK_PASSES,	/* 1: provides them */
	GP_ACS_QUIRK_UNKNOWN,	/* its answer rests on what was not read */
};

/* pci_acs_ctrl_enabled(): every control of @req among @ena. */
static inline unsigned int gp_acs_ctrl_enabled(unsigned int req,
					       unsigned int ena)
{
	return (req & ena) == req ? GP_ACS_QUIRK_PASSES : GP_ACS_QUIRK_FAILS;
}

/* One quirk function of kind @kind on @hop, for the controls @flags. */
static inline unsigned int gp_acs_quirk_answer(unsigned int kind,
					       const struct gp_p2p_hop *hop,
					       unsigned int flags)
{
	const unsigned int isolate = GP_P2P_ACS_ISOLATE;
	int root = hop->port == GP_P2P_PORT_ROOT;

	switch (kind) {
	case GP_ACS_QUIRK_MF_ENDPOINT:
		return gp_acs_ctrl_enabled(flags, isolate | GP_P2P_ACS_TB |
					   GP_P2P_ACS_DT);
	case GP_ACS_QUIRK_RCIEP:
		return hop->port != GP_P2P_PORT_RC_ENDPOINT ?
		       GP_ACS_QUIRK_NO_ANSWER :
		       gp_acs_ctrl_enabled(flags, isolate);
	case GP_ACS_QUIRK_QCOM_RP:
	case GP_ACS_QUIRK_XGENE:
	case GP_ACS_QUIRK_BRCM:
	case GP_ACS_QUIRK_LOONGSON:
	case GP_ACS_QUIRK_NXP_RP:
		return gp_acs_ctrl_enabled(flags, isolate);
	case GP_ACS_QUIRK_INTEL_PCH:
		if (!gp_acs_quirk_intel_pch_match(hop))
			return GP_ACS_QUIRK_NO_ANSWER;
		if (hop->acs_enabled_quirk == GP_P2P_FLAG_UNKNOWN)
			return GP_ACS_QUIRK_UNKNOWN;
		return gp_acs_ctrl_enabled(flags,
			hop->acs_enabled_quirk == GP_P2P_FLAG_SET ? isolate : 0);
	case GP_ACS_QUIRK_INTEL_SPT_PCH:
		if (!root || !gp_acs_quirk_ctrl8_wanted(hop->vendor,
							hop->device) ||
		    hop->acs_state == GP_P2P_ACS_ABSENT)
			return GP_ACS_QUIRK_NO_ANSWER;
		if (hop->acs_state != GP_P2P_ACS_PRESENT ||
		    !hop->acs_ctrl8_known)
			return GP_ACS_QUIRK_UNKNOWN;
		/* pci_acs_flags_enabled()'s mask, Control read at ACS + 8 */
		flags &= (unsigned int)hop->acs_cap | GP_P2P_ACS_EC;
		return gp_acs_ctrl_enabled(flags, hop->acs_ctrl8);
	case GP_ACS_QUIRK_CAVIUM:
		return root && gp_acs_id_in(gp_acs_quirk_cavium_ids,
					    GP_ACS_N(gp_acs_quirk_cavium_ids),
					    hop->device) ?
		       gp_acs_ctrl_enabled(flags, isolate) :
		       GP_ACS_QUIRK_NO_ANSWER;
	case GP_ACS_QUIRK_AL:
		return !root ? GP_ACS_QUIRK_NO_ANSWER :
		       flags & ~isolate ? GP_ACS_QUIRK_FAILS :
		       GP_ACS_QUIRK_PASSES;
	case GP_ACS_QUIRK_ZHAOXIN_PORTS:
		if (!root && hop->port != GP_P2P_PORT_SWITCH_DOWN)
			return GP_ACS_QUIRK_NO_ANSWER;
		/* Other Zhaoxin ports: Linux answers "no", ACS or not. */
		return gp_acs_id_in(gp_acs_quirk_zhaoxin_ids,
				    GP_ACS_N(gp_acs_quirk_zhaoxin_ids),
				    hop->device) ?
		       gp_acs_ctrl_enabled(flags, isolate) :
		       GP_ACS_QUIRK_FAILS;
	case GP_ACS_QUIRK_WANGXUN_NIC:
		return gp_acs_id_in(gp_acs_quirk_wangxun_ids,
				    GP_ACS_N(gp_acs_quirk_wangxun_ids),
				    hop->device) ?
		       gp_acs_ctrl_enabled(flags, isolate) :
		       GP_ACS_QUIRK_FAILS;
	default:	/* GP_ACS_QUIRK_AMD_SB: not modelled */
		return GP_ACS_QUIRK_NO_ANSWER;
	}
}

/**
 * gp_acs_quirk() - pci_dev_specific_acs_enabled()
 * @hop: the device
 * @flags: the ACS controls asked for
 * @entry: out: the entry that answered, or 0
 *
 * The first entry of gp_acs_quirk_list[] matching @hop's ids whose
 * function answers decides. Return: enum gp_acs_quirk_answer.
 */
static inline unsigned int gp_acs_quirk(const struct gp_p2p_hop *hop,
					unsigned int flags,
					const struct gp_acs_quirk_entry **entry)
{
	unsigned int i, ans;

	*entry = 0;
	if (hop->port == GP_P2P_PORT_UNKNOWN)
		return GP_ACS_QUIRK_NO_ANSWER;
	for (i = 0; i < GP_ACS_N(gp_acs_quirk_list); i++) {
		const struct gp_acs_quirk_entry *e = &gp_acs_quirk_list[i];

		if (e->vendor != hop->vendor ||
		    (!e->any_device && e->device != hop->device))
			continue;
		ans = gp_acs_quirk_answer(e->kind, hop, flags);
		if (ans != GP_ACS_QUIRK_NO_ANSWER) {
			*entry = e;
			return ans;
		}
	}
	return GP_ACS_QUIRK_NO_ANSWER;
}

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

/* A quirk's answer as gp_p2p_acs_enabled() returns it; -2: no answer. */
static inline int gp_acs_quirk_result(const struct gp_p2p_hop *hop,
				      unsigned int flags)
{
	const struct gp_acs_quirk_entry *e;

	switch (gp_acs_quirk(hop, flags, &e)) {
	case GP_ACS_QUIRK_PASSES:
		return 1;
	case GP_ACS_QUIRK_FAILS:
		return 0;
	case GP_ACS_QUIRK_UNKNOWN:
		return -1;
	default:
		return -2;
	}
}

/*
 * pci_acs_enabled(): a device quirk answers first
 * (pci_dev_specific_acs_enabled()); else root and downstream ports are
 * always checked; endpoints and upstream ports only when multifunction
 * (a single function has no peer inside it); conventional PCI, PCIe-to-PCI
 * and PCI-to-PCIe bridges and RC event collectors never pass.
 * Return: 1 yes, 0 no, -1 not known.
 */
static inline int gp_p2p_acs_enabled(const struct gp_p2p_hop *hop,
				     unsigned int flags)
{
	int q;

	if (hop->port == GP_P2P_PORT_UNKNOWN)
		return -1;
	q = gp_acs_quirk_result(hop, flags);
	if (q != -2)
		return q;
	switch (hop->port) {
	case GP_P2P_PORT_ROOT:
	case GP_P2P_PORT_SWITCH_DOWN:
		return gp_p2p_acs_flags_enabled(hop, flags);
	case GP_P2P_PORT_ENDPOINT:
	case GP_P2P_PORT_RC_ENDPOINT:
	case GP_P2P_PORT_SWITCH_UP:
		return hop->multifunction ?
		       gp_p2p_acs_flags_enabled(hop, flags) : 1;
	default:
		return 0;
	}
}

/*
 * A device that is one device with its peer: its functions must isolate
 * from each other, as pci_acs_enabled() asks of a multifunction device
 * (a quirk first, then its own ACS). Return: 1 yes, 0 no, -1 not known.
 */
static inline int gp_p2p_acs_functions(const struct gp_p2p_hop *hop)
{
	int q = gp_acs_quirk_result(hop, GP_P2P_ACS_ISOLATE);

	return q != -2 ? q : gp_p2p_acs_flags_enabled(hop, GP_P2P_ACS_ISOLATE);
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
			ok = gp_p2p_acs_functions(hop);
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
