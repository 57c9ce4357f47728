/* SPDX-License-Identifier: GPL-2.0-only */
/* gpup2p kernel helper: shared declarations. */
#ifndef GPUP2P_INTERNAL_H
#define GPUP2P_INTERNAL_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/types.h>

#include "uapi/gpup2p.h"

/* One open /dev/gpup2p: the owner of its mappings. */
struct gpup2p_ctx {
	pid_t pid;
};

struct gpup2p_mapping {
	struct list_head node;
	u64 id;
	struct gpup2p_ctx *owner;
	struct pci_dev *initiator;	/* referenced */
	struct pci_dev *peer;		/* referenced */
	struct file *group_file;	/* keeps the VFIO domain alive */
	struct iommu_domain *domain;
	u64 iova, size, phys, offset;
	u32 bar, flags;
	pid_t pid;
};

long gpup2p_map(struct gpup2p_ctx *ctx, struct gpup2p_map *m);
long gpup2p_unmap(struct gpup2p_ctx *ctx, const struct gpup2p_unmap *u);
long gpup2p_list(struct gpup2p_ctx *ctx, struct gpup2p_list *l);
long gpup2p_audit(struct gpup2p_audit *a);
long gpup2p_verdict(struct gpup2p_verdict *v);

void gpup2p_release_owner(struct gpup2p_ctx *ctx);
void gpup2p_release_device(struct pci_dev *pdev);
void gpup2p_release_all(void);

u32 gpup2p_pci_addr(const struct pci_dev *pdev);
struct pci_dev *gpup2p_pci_get(u32 addr);

#endif
