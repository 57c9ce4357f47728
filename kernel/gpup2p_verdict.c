// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpup2p: the P2P verdicts as this kernel's PCI device tree sees it. This
 * file gathers each device's path (the device, then each
 * pci_upstream_bridge(), with its port type and ACS Control read from
 * config space), its host bridge and IOMMU group, and runs the rules of
 * gpup2p/p2p-rule.h over them, the same code the core library runs over
 * its sysfs model. On a kernel with CONFIG_PCI_P2PDMA, p2pdma's own
 * answers replace the rule's where p2pdma gives one: the verdict and
 * distance, and the root complex half of the VM rule (so the host bridge
 * list is the running kernel's); the rule's walk still names the bridges.
 */
#include <linux/build_bug.h>
#include <linux/iommu.h>
#include <linux/pci.h>
#include <linux/pci-p2pdma.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <asm/processor.h>

#include "gpup2p.h"
#include "gpup2p/p2p-rule.h"

static_assert(GPUP2P_VERDICT_DIRECT == GP_P2P_RULE_DIRECT);
static_assert(GPUP2P_VERDICT_HOST_BRIDGE == GP_P2P_RULE_HOST_BRIDGE);
static_assert(GPUP2P_VERDICT_NONE == GP_P2P_RULE_NONE);
static_assert(GPUP2P_VERDICT_UNKNOWN == GP_P2P_RULE_UNKNOWN);
static_assert(GPUP2P_PATH_COMMON_BRIDGE == GP_P2P_PATH_COMMON_BRIDGE);
static_assert(GPUP2P_PATH_ACS_REDIRECT == GP_P2P_PATH_ACS_REDIRECT);
static_assert(GPUP2P_PATH_NO_COMMON == GP_P2P_PATH_NO_COMMON);
static_assert(GPUP2P_PATH_ACS_UNKNOWN == GP_P2P_PATH_ACS_UNKNOWN);
static_assert(GPUP2P_HOST_NOT_NEEDED == GP_P2P_HOST_NOT_NEEDED);
static_assert(GPUP2P_HOST_AMD_ZEN == GP_P2P_HOST_AMD_ZEN);
static_assert(GPUP2P_HOST_SAME_LISTED == GP_P2P_HOST_SAME_LISTED);
static_assert(GPUP2P_HOST_BOTH_LISTED == GP_P2P_HOST_BOTH_LISTED);
static_assert(GPUP2P_HOST_CPU_UNKNOWN == GP_P2P_HOST_CPU_UNKNOWN);
static_assert(GPUP2P_HOST_A_NOT_LISTED == GP_P2P_HOST_A_NOT_LISTED);
static_assert(GPUP2P_HOST_B_NOT_LISTED == GP_P2P_HOST_B_NOT_LISTED);
static_assert(GPUP2P_HOST_SAME_ONLY == GP_P2P_HOST_SAME_ONLY);
static_assert(GPUP2P_HOST_KERNEL_FORWARDS > GP_P2P_HOST_SAME_ONLY);
static_assert(GPUP2P_VM_OK == GP_P2P_VM_OK);
static_assert(GPUP2P_VM_BYPASS == GP_P2P_VM_BYPASS);
static_assert(GPUP2P_VM_NONE == GP_P2P_VM_NONE);
static_assert(GPUP2P_VM_UNKNOWN == GP_P2P_VM_UNKNOWN);

/* Both paths and the references on their hops, kept off the stack. */
struct gpup2p_paths {
	struct gp_p2p_path a, b;
	struct pci_dev *held_a[GP_P2P_MAX_HOPS];
	struct pci_dev *held_b[GP_P2P_MAX_HOPS];
	struct gp_p2p_vm_outcome out;
};

static u32 gpup2p_pci_addr(const struct pci_dev *pdev)
{
	return GPUP2P_PCI_ADDR(pci_domain_nr(pdev->bus), pdev->bus->number,
			       pdev->devfn);
}

static struct pci_dev *gpup2p_pci_get(u32 addr)
{
	return pci_get_domain_bus_and_slot(addr >> 16, (addr >> 8) & 0xff,
					   addr & 0xff);
}

/**
 * gpup2p_host_dev() - the device p2pdma matches its host bridge list on
 * @bus: the root bus, whose host bridge a referenced device keeps alive
 *
 * pci_host_bridge_dev() takes the head of @bus->devices when it sits at
 * devfn 0 or is a root port. pci_bus_sem, which guards that list, is not
 * exported; pci_get_slot() takes it for each lookup instead. A bus lists
 * its devices in scan order, lowest devfn first, so the first devfn that
 * answers is the head of the list; only a device hot-added to a root bus
 * below the devfn of its first one (listed last by the kernel) would make
 * the two differ.
 *
 * Return: a referenced device, or NULL when p2pdma would find none.
 */
static struct pci_dev *gpup2p_host_dev(struct pci_bus *bus)
{
	struct pci_dev *first = NULL;
	unsigned int devfn;

	for (devfn = 0; devfn < 256 && !first; devfn++)
		first = pci_get_slot(bus, devfn);
	if (first && first->devfn != PCI_DEVFN(0, 0) &&
	    pci_pcie_type(first) != PCI_EXP_TYPE_ROOT_PORT) {
		pci_dev_put(first);
		first = NULL;
	}
	return first;
}

static void gpup2p_host_gather(struct pci_dev *pdev,
			       struct gp_p2p_host *host)
{
	struct pci_host_bridge *bridge = pci_find_host_bridge(pdev->bus);
	struct pci_dev *root;

	host->domain = pci_domain_nr(bridge->bus);
	host->bus = bridge->bus->number;
	root = gpup2p_host_dev(bridge->bus);
	host->has_root_dev = !!root;
	host->vendor = root ? root->vendor : 0;
	host->device = root ? root->device : 0;
	pci_dev_put(root);
}

/* What @hop is, by the types pci_acs_enabled() tells apart (hop 0: the
 * device itself). */
static unsigned char gpup2p_hop_port(struct pci_dev *hop, bool first)
{
	if (!pci_is_pcie(hop))
		return GP_P2P_PORT_CONVENTIONAL;
	if (first)
		return pci_pcie_type(hop) == PCI_EXP_TYPE_RC_END ?
		       GP_P2P_PORT_RC_ENDPOINT : GP_P2P_PORT_ENDPOINT;
	switch (pci_pcie_type(hop)) {
	case PCI_EXP_TYPE_ROOT_PORT:
		return GP_P2P_PORT_ROOT;
	case PCI_EXP_TYPE_UPSTREAM:
		return GP_P2P_PORT_SWITCH_UP;
	case PCI_EXP_TYPE_DOWNSTREAM:
		return GP_P2P_PORT_SWITCH_DOWN;
	case PCI_EXP_TYPE_PCI_BRIDGE:
		return GP_P2P_PORT_PCI_BRIDGE;
	default:
		return GP_P2P_PORT_OTHER_BRIDGE;
	}
}

/*
 * @hop's ACS Control and Capability registers, with what the reads say
 * (gp_p2p_acs_read_state()). A device gone or in D3cold is not touched:
 * its config space answers all-ones, or a read may wait on a link that is
 * down.
 */
static unsigned char gpup2p_acs_read(struct pci_dev *hop, u16 *ctrl,
				     u16 *cap)
{
	bool gone = pci_dev_is_disconnected(hop) ||
		    hop->current_state == PCI_D3cold;
	int ctrl_err = 0, cap_err = 0;

	*ctrl = 0;
	*cap = 0;
	if (!gone) {
		ctrl_err = pci_read_config_word(hop, hop->acs_cap + PCI_ACS_CTRL,
						ctrl);
		cap_err = pci_read_config_word(hop, hop->acs_cap + PCI_ACS_CAP,
					       cap);
	}
	return gp_p2p_acs_read_state(gone, ctrl_err, *ctrl, cap_err, *cap);
}

/**
 * gpup2p_path_gather() - read a device's path up to its host bridge
 * @pdev: the device, referenced by the caller
 * @path: out
 * @held: out: a reference on every hop, for gpup2p_path_put()
 *
 * Return: 0, -ELOOP for a path deeper than GP_P2P_MAX_HOPS, or -ENODEV
 * for a hop in a segment that GPUP2P_PCI_ADDR() cannot hold.
 */
static int gpup2p_path_gather(struct pci_dev *pdev, struct gp_p2p_path *path,
			      struct pci_dev **held)
{
	struct pci_dev *hop;

	path->nhops = 0;
	for (hop = pdev; hop; hop = pci_upstream_bridge(hop)) {
		struct gp_p2p_hop *h;
		u16 ctrl = 0, cap = 0, ctrl8 = 0;

		if (path->nhops == GP_P2P_MAX_HOPS)
			return -ELOOP;
		if (pci_domain_nr(hop->bus) > GPUP2P_PCI_DOMAIN_MAX)
			return -ENODEV;
		held[path->nhops] = pci_dev_get(hop);
		h = &path->hops[path->nhops++];
		h->addr = gpup2p_pci_addr(hop);
		h->acs_state = hop->acs_cap ?
			       gpup2p_acs_read(hop, &ctrl, &cap) :
			       GP_P2P_ACS_ABSENT;
		h->acs_ctrl = ctrl;
		h->acs_cap = cap;
		h->port = gpup2p_hop_port(hop, hop == pdev);
		h->multifunction = hop->multifunction;
		/* Linux's ACS quirks: ids, Sunrise Point's Control at ACS + 8,
		 * and the flag the Intel PCH quirk answers by. */
		h->vendor = hop->vendor;
		h->device = hop->device;
		h->acs_ctrl8_known = 0;
		if (h->acs_state == GP_P2P_ACS_PRESENT &&
		    gp_acs_quirk_ctrl8_wanted(hop->vendor, hop->device) &&
		    pci_read_config_word(hop, hop->acs_cap + 8, &ctrl8) ==
		    PCIBIOS_SUCCESSFUL && !PCI_POSSIBLE_ERROR(ctrl8))
			h->acs_ctrl8_known = 1;
		h->acs_ctrl8 = ctrl8;
		h->acs_enabled_quirk =
			hop->dev_flags & PCI_DEV_FLAGS_ACS_ENABLED_QUIRK ?
			GP_P2P_FLAG_SET : GP_P2P_FLAG_CLEAR;
	}
	gpup2p_host_gather(pdev, &path->host);
	return 0;
}

static void gpup2p_path_put(struct pci_dev **held)
{
	unsigned int i;

	for (i = 0; i < GP_P2P_MAX_HOPS && held[i]; i++)
		pci_dev_put(held[i]);
}

static void gpup2p_cpu_gather(struct gp_p2p_cpu *cpu)
{
	cpu->vendor = GP_P2P_CPU_OTHER;
	cpu->family = 0;
#ifdef CONFIG_X86
	if (boot_cpu_data.x86_vendor == X86_VENDOR_AMD)
		cpu->vendor = GP_P2P_CPU_AMD;
	else if (boot_cpu_data.x86_vendor == X86_VENDOR_INTEL)
		cpu->vendor = GP_P2P_CPU_INTEL;
	cpu->family = boot_cpu_data.x86;
#endif
}

/* The device's IOMMU group number, or GPUP2P_NO_IOMMU_GROUP. */
static s32 gpup2p_iommu_group(struct pci_dev *pdev)
{
	struct iommu_group *group = iommu_group_get(&pdev->dev);
	s32 id;

	if (!group)
		return GPUP2P_NO_IOMMU_GROUP;
	id = iommu_group_id(group);
	iommu_group_put(group);
	return id;
}

/* The first hop of @path in @mask, as an address; -1 with none. */
static int gpup2p_first_hop(const struct gp_p2p_path *path, unsigned int mask)
{
	unsigned int i;

	for (i = 0; i < path->nhops; i++)
		if (mask & (1u << i))
			return (int)i;
	return -1;
}

static void gpup2p_verdict_fill(struct gpup2p_verdict *v,
				const struct gpup2p_paths *p)
{
	const struct gp_p2p_outcome *out = &p->out.bare;
	int which, i;

	v->verdict = out->kind;
	v->distance = out->distance;
	v->path_reason = out->path_reason;
	v->host_reason = out->host_reason;
	v->out_flags = 0;
	v->common = 0;
	v->redirect = 0;
	if (out->common_a >= 0) {
		v->out_flags |= GPUP2P_VERDICT_HAS_COMMON;
		v->common = p->a.hops[out->common_a].addr;
	}
	i = gp_p2p_first_redirect(out, &which);
	if (i >= 0) {
		v->out_flags |= GPUP2P_VERDICT_HAS_REDIRECT;
		v->redirect = (which ? &p->b : &p->a)->hops[i].addr;
	}
	v->vm_verdict = p->out.kind;
	v->vm_port = 0;
	i = gpup2p_first_hop(&p->a, p->out.bypass_a);
	if (i >= 0) {
		v->out_flags |= GPUP2P_VERDICT_HAS_VM_PORT;
		v->vm_port = p->a.hops[i].addr;
	} else {
		i = gpup2p_first_hop(&p->b, p->out.bypass_b);
		if (i >= 0) {
			v->out_flags |= GPUP2P_VERDICT_HAS_VM_PORT;
			v->vm_port = p->b.hops[i].addr;
		}
	}
}

#if IS_ENABLED(CONFIG_PCI_P2PDMA)
/* Not asked: each candidate provider keeps p2pdma state. */
#define GPUP2P_P2PDMA_NOT_ASKED	(-2)

/*
 * calc_map_type_and_dist() caches its answer in the provider's p2pdma
 * state (map_types), which only a device that publishes p2pmem has; the
 * module asks with a provider that has none, so it writes nothing.
 */
static bool gpup2p_p2pdma_state(struct pci_dev *pdev)
{
	return rcu_access_pointer(pdev->p2pdma);
}

/**
 * gpup2p_p2pdma_ask() - pci_p2pdma_distance_many() for one pair
 * @a: a referenced device
 * @b: another, or the same
 *
 * p2pdma's answer is symmetric (ACS is read on @a's hops up to and
 * including the common bridge and on @b's below it, which is the same set
 * of hops either way; the distance and the host bridge rule are too), so
 * the pair is asked the other way round when only @a keeps p2pdma state.
 * verbose is false: p2pdma prints nothing.
 *
 * Return: the distance, GPUP2P_P2PDMA_NOT_SUPPORTED, or
 * GPUP2P_P2PDMA_NOT_ASKED.
 */
static int gpup2p_p2pdma_ask(struct pci_dev *a, struct pci_dev *b)
{
	struct device *client;

	if (gpup2p_p2pdma_state(a)) {
		if (gpup2p_p2pdma_state(b))
			return GPUP2P_P2PDMA_NOT_ASKED;
		swap(a, b);
	}
	client = &b->dev;
	return pci_p2pdma_distance_many(a, &client, 1, false);
}

/* The first device of @bus from @devfn on, skipping @skip; referenced. */
static struct pci_dev *gpup2p_bus_dev(struct pci_bus *bus,
				      const struct pci_dev *skip, bool stateless)
{
	struct pci_dev *pdev;
	unsigned int devfn;

	for (devfn = 0; devfn < 256; devfn++) {
		pdev = pci_get_slot(bus, devfn);
		if (!pdev)
			continue;
		if (pdev != skip && !(stateless && gpup2p_p2pdma_state(pdev)))
			return pdev;
		pci_dev_put(pdev);
	}
	return NULL;
}

/**
 * gpup2p_p2pdma_host() - p2pdma's answer for the root complex alone
 * @a: a referenced device
 * @b: another, or the same
 *
 * Asks p2pdma about a device on @a's root bus and another on @b's (two
 * different ones when the root buses are one): pci_upstream_bridge() of a
 * root bus device is NULL, so p2pdma's walk finds no common bridge and
 * answers by cpu_supports_p2pdma() and host_bridge_whitelist() of exactly
 * these two host bridges, which is what a guest's request needs once it
 * reaches the root complex.
 *
 * Return: as gpup2p_p2pdma_ask(); NOT_ASKED also when a root bus lacks
 * such a device (one root bus with a single device: no two devices on it
 * that only the root complex joins).
 */
static int gpup2p_p2pdma_host(struct pci_dev *a, struct pci_dev *b)
{
	struct pci_bus *bus_a = pci_find_host_bridge(a->bus)->bus;
	struct pci_bus *bus_b = pci_find_host_bridge(b->bus)->bus;
	struct pci_dev *pa, *pb = NULL;
	int ret = GPUP2P_P2PDMA_NOT_ASKED;

	pa = gpup2p_bus_dev(bus_a, NULL, true);
	if (pa)
		pb = gpup2p_bus_dev(bus_b, pa, false);
	if (pa && pb)
		ret = gpup2p_p2pdma_ask(pa, pb);
	pci_dev_put(pb);
	pci_dev_put(pa);
	return ret;
}

/**
 * gpup2p_p2pdma_fill() - p2pdma's answers in place of the rule's
 * @v: the rule's answer, filled in
 * @p: the paths and the rule's outcome
 * @a: the provider, referenced
 * @b: the client, referenced
 *
 * Direct or host-bridge follows from the walk (a common bridge and no
 * redirect on the way: p2pdma maps by bus address); whether, and how far,
 * from p2pdma. A guest's request that no port routes below the root
 * complex is then forwarded when p2pdma's root complex answer allows.
 */
static void gpup2p_p2pdma_fill(struct gpup2p_verdict *v,
			       const struct gpup2p_paths *p,
			       struct pci_dev *a, struct pci_dev *b)
{
	const struct gp_p2p_outcome *bare = &p->out.bare;
	bool via_host = bare->common_a < 0 ||
			bare->path_reason == GP_P2P_PATH_ACS_REDIRECT;
	int dist = gpup2p_p2pdma_ask(a, b);
	int host = gpup2p_p2pdma_host(a, b);
	bool differs = false;
	u32 kind;

	/*
	 * A root bus with one device only (a pxb-pcie's root port) offers no
	 * two devices that only the root complex joins; where p2pdma's walk
	 * for the pair itself went through the host bridge, that answer is
	 * the same one.
	 */
	if (host == GPUP2P_P2PDMA_NOT_ASKED && via_host)
		host = dist;

	/*
	 * A hop whose ACS could not be read stays UNKNOWN: p2pdma reads the
	 * same register unchecked, and all ones would say "redirects".
	 */
	if (dist != GPUP2P_P2PDMA_NOT_ASKED &&
	    v->verdict != GPUP2P_VERDICT_UNKNOWN) {
		v->out_flags |= GPUP2P_VERDICT_FROM_P2PDMA;
		v->p2pdma = dist;
		if (dist < 0)
			kind = GPUP2P_VERDICT_NONE;
		else
			kind = via_host ? GPUP2P_VERDICT_HOST_BRIDGE :
					  GPUP2P_VERDICT_DIRECT;
		if (kind != v->verdict) {
			differs = true;
			v->host_reason = dist < 0 ? GPUP2P_HOST_KERNEL_REFUSES :
						    GPUP2P_HOST_KERNEL_FORWARDS;
		}
		if (dist >= 0 && (u32)dist != v->distance)
			differs = true;
		v->verdict = kind;
		if (dist >= 0)
			v->distance = dist;
	}
	if (host != GPUP2P_P2PDMA_NOT_ASKED) {
		v->out_flags |= GPUP2P_VERDICT_VM_FROM_P2PDMA;
		v->p2pdma_host = host;
		/*
		 * Only where every hop isolates: p2pdma's answer never
		 * replaces a bypass, nor a hop that could not be read.
		 */
		if (v->vm_verdict == GPUP2P_VM_OK ||
		    v->vm_verdict == GPUP2P_VM_NONE) {
			kind = host < 0 ? GPUP2P_VM_NONE : GPUP2P_VM_OK;
			differs |= kind != v->vm_verdict;
			v->vm_verdict = kind;
		}
	}
	if (differs)
		v->out_flags |= GPUP2P_VERDICT_RULE_DIFFERS;
}
#endif

/*
 * One device where the paths do not show it, as the library decides:
 * a PF and its VFs or VFs of one PF, or functions of one slot on a root
 * bus (no link joins them). Below a root or downstream port the shared
 * link decides (gp_p2p_share_link()), whatever the slot numbers.
 */
static bool gpup2p_same_device(struct pci_dev *a, struct pci_dev *b)
{
	if (a == b)
		return false;
	return pci_physfn(a) == pci_physfn(b) ||
	       (!pci_upstream_bridge(a) && !pci_upstream_bridge(b) &&
		a->bus == b->bus && PCI_SLOT(a->devfn) == PCI_SLOT(b->devfn));
}

/**
 * gpup2p_verdict() - GPUP2P_VERDICT on a copied-in argument
 * @v: in: the two addresses; out: the verdict
 *
 * Holds a reference on each device of both paths while it reads them; no
 * lock of its own, nothing kept after it returns.
 *
 * Return: 0, -ENODEV, -ELOOP or -ENOMEM.
 */
long gpup2p_verdict(struct gpup2p_verdict *v)
{
	struct pci_dev *a, *b = NULL;
	struct gpup2p_paths *p;
	struct gp_p2p_cpu cpu;
	long ret = -ENODEV;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	a = gpup2p_pci_get(v->a);
	if (!a)
		goto out_free;
	b = gpup2p_pci_get(v->b);
	if (!b)
		goto out_put;
	ret = gpup2p_path_gather(a, &p->a, p->held_a);
	if (ret)
		goto out_put;
	ret = gpup2p_path_gather(b, &p->b, p->held_b);
	if (ret)
		goto out_put;
	gpup2p_cpu_gather(&cpu);
	gp_p2p_vm_rule(&p->a, &p->b, &cpu, gpup2p_same_device(a, b), &p->out);
	/*
	 * The CPU is known; a hop whose ACS could not be read makes the
	 * answers UNKNOWN, never "redirects".
	 */
	gpup2p_verdict_fill(v, p);
	v->p2pdma = 0;
	v->p2pdma_host = 0;
#if IS_ENABLED(CONFIG_PCI_P2PDMA)
	gpup2p_p2pdma_fill(v, p, a, b);
#endif
	v->iommu_group_a = gpup2p_iommu_group(a);
	v->iommu_group_b = gpup2p_iommu_group(b);
out_put:
	gpup2p_path_put(p->held_b);
	gpup2p_path_put(p->held_a);
	pci_dev_put(b);
	pci_dev_put(a);
out_free:
	kfree(p);
	return ret;
}
