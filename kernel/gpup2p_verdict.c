// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpup2p: the P2P path verdict as the kernel sees it, by the rules of
 * drivers/pci/p2pdma.c (which Debian's kernel does not build): a common
 * upstream bridge with no ACS redirect on the path is direct; otherwise
 * only a host bridge known to forward P2P (the list shared with user
 * space) or an AMD Zen CPU makes it possible.
 */
#include <linux/pci.h>
#include <asm/processor.h>

#include "gpup2p.h"
#include "gpup2p/p2p-hostbridge.h"

static bool redirects(struct pci_dev *pdev)
{
	u16 ctrl;

	if (!pdev->acs_cap)
		return false;
	pci_read_config_word(pdev, pdev->acs_cap + PCI_ACS_CTRL, &ctrl);
	return ctrl & (PCI_ACS_RR | PCI_ACS_CR | PCI_ACS_EC);
}

/* The device at devfn 0 of the root bus, as p2pdma matches host bridges. */
static const struct gp_hostbridge_entry *host_entry(struct pci_dev *pdev,
						    struct pci_bus **rootp)
{
	struct pci_host_bridge *host = pci_find_host_bridge(pdev->bus);
	const struct gp_hostbridge_entry *e = NULL;
	struct pci_dev *root;

	*rootp = host->bus;
	root = pci_get_slot(host->bus, PCI_DEVFN(0, 0));
	if (root) {
		e = gp_hostbridge_lookup(root->vendor, root->device);
		pci_dev_put(root);
	}
	return e;
}

static u32 host_bridge_rule(struct pci_dev *a, struct pci_dev *b,
			    char *why, size_t len, size_t used)
{
	const struct gp_hostbridge_entry *ea, *eb;
	struct pci_bus *ra, *rb;

#ifdef CONFIG_X86
	if (boot_cpu_data.x86_vendor == X86_VENDOR_AMD &&
	    boot_cpu_data.x86 >= GP_AMD_P2P_MIN_FAMILY) {
		scnprintf(why + used, len - used,
			  "AMD CPU family %xh forwards P2P", boot_cpu_data.x86);
		return GPUP2P_VERDICT_HOST_BRIDGE;
	}
#endif
	ea = host_entry(a, &ra);
	eb = host_entry(b, &rb);
	if (ra == rb && ea) {
		scnprintf(why + used, len - used, "host bridge %04x:%02x (%s) "
			  "forwards P2P", pci_domain_nr(ra), ra->number, ea->name);
		return GPUP2P_VERDICT_HOST_BRIDGE;
	}
	if (ra != rb && ea && eb &&
	    !(ea->flags & GP_HOSTBRIDGE_REQ_SAME_HOST_BRIDGE) &&
	    !(eb->flags & GP_HOSTBRIDGE_REQ_SAME_HOST_BRIDGE)) {
		scnprintf(why + used, len - used, "host bridges forward P2P "
			  "between each other");
		return GPUP2P_VERDICT_HOST_BRIDGE;
	}
	scnprintf(why + used, len - used, "host bridge %04x:%02x is not known "
		  "to forward P2P", pci_domain_nr(ea || ra == rb ? ra : rb),
		  (ea || ra == rb ? ra : rb)->number);
	return GPUP2P_VERDICT_NONE;
}

long gpup2p_verdict(struct gpup2p_verdict *v)
{
	struct pci_dev *a = gpup2p_pci_get(v->a), *b = gpup2p_pci_get(v->b);
	struct pci_dev *pa, *pb, *common = NULL, *redir = NULL;
	int dist_a = 0, dist_b = 0;
	size_t used = 0;

	if (!a || !b) {
		pci_dev_put(a);
		pci_dev_put(b);
		return -ENODEV;
	}
	memset(v->reason, 0, sizeof(v->reason));
	/* The walk of calc_map_type_and_dist(), provider = a. */
	for (pa = a; pa && !common; pa = pci_upstream_bridge(pa), dist_a++) {
		if (redirects(pa) && !redir)
			redir = pa;
		for (pb = b, dist_b = 0; pb; pb = pci_upstream_bridge(pb),
		     dist_b++) {
			if (pa == pb) {
				common = pa;
				break;
			}
		}
		if (common)
			break;
	}
	if (common) {
		for (pb = b; pb && pb != common; pb = pci_upstream_bridge(pb))
			if (redirects(pb) && !redir)
				redir = pb;
	}
	v->distance = dist_a + dist_b;
	if (common && !redir) {
		v->verdict = GPUP2P_VERDICT_DIRECT;
		scnprintf(v->reason, sizeof(v->reason), "common upstream bridge "
			  "%s, no ACS redirect on the path", pci_name(common));
	} else {
		if (common)
			used = scnprintf(v->reason, sizeof(v->reason),
					 "ACS redirect (RR/CR/EC) at %s; ",
					 pci_name(redir));
		else
			used = scnprintf(v->reason, sizeof(v->reason),
					 "no common upstream bridge; ");
		v->verdict = host_bridge_rule(a, b, v->reason, sizeof(v->reason),
					      used);
	}
	pci_dev_put(a);
	pci_dev_put(b);
	return 0;
}
