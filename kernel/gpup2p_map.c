// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpup2p: the mappings. Each maps a window of a peer's BAR into the IOMMU
 * domain VFIO attached to an initiator, and lives until its owner fd
 * closes, it is unmapped, or either device goes away.
 */
#include <linux/file.h>
#include <linux/iommu.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vfio.h>

#include "gpup2p.h"

static LIST_HEAD(gpup2p_mappings);
static DEFINE_MUTEX(gpup2p_lock);
static u64 gpup2p_next_id = 1;

/* Above this, translation checks step by 2 MiB, not by the smallest page. */
#define GPUP2P_FULL_CHECK_LIMIT	(1ULL << 30)

u32 gpup2p_pci_addr(const struct pci_dev *pdev)
{
	return GPUP2P_PCI_ADDR(pci_domain_nr(pdev->bus), pdev->bus->number,
			       pdev->devfn);
}

struct pci_dev *gpup2p_pci_get(u32 addr)
{
	return pci_get_domain_bus_and_slot(addr >> 16, (addr >> 8) & 0xff,
					   addr & 0xff);
}

/*
 * Whether @pdev is bound to vfio-pci and is a device of the VFIO group
 * @file. vfio-pci's driver data is its vfio_pci_core_device, whose first
 * member is the vfio_device; the device lock keeps it from unbinding
 * while we look.
 */
static int check_owner(struct pci_dev *pdev, struct file *file)
{
	struct vfio_device *vdev;
	int ret = 0;

	device_lock(&pdev->dev);
	if (!pdev->dev.driver || strcmp(pdev->dev.driver->name, "vfio-pci")) {
		ret = -EBUSY;
	} else {
		vdev = dev_get_drvdata(&pdev->dev);
		if (!vdev || !vfio_file_has_dev(file, vdev))
			ret = -ENODEV;
	}
	device_unlock(&pdev->dev);
	return ret;
}

/*
 * The device a ref names, proven owned through its VFIO group fd. On
 * success the caller holds a reference to the device and to the file.
 */
static int resolve_ref(const struct gpup2p_device_ref *ref,
		       struct pci_dev **pdevp, struct file **filep)
{
	struct pci_dev *pdev;
	struct file *file;
	int ret;

	file = fget(ref->vfio_group_fd);
	if (!file)
		return -EBADF;
	if (!vfio_file_is_group(file)) {
		fput(file);
		return -EBADFD;
	}
	pdev = gpup2p_pci_get(ref->pci_addr);
	if (!pdev) {
		fput(file);
		return -ENODEV;
	}
	ret = check_owner(pdev, file);
	if (ret) {
		pci_dev_put(pdev);
		fput(file);
		return ret;
	}
	*pdevp = pdev;
	*filep = file;
	return 0;
}

static struct iommu_domain *vfio_domain(struct pci_dev *pdev)
{
	struct iommu_domain *d = iommu_get_domain_for_dev(&pdev->dev);

	/* VFIO attaches unmanaged domains; anything else is the kernel's. */
	return d && d->type == IOMMU_DOMAIN_UNMANAGED ? d : NULL;
}

/* Check a memory BAR window; the host-physical start in *phys. */
static int check_bar(struct pci_dev *pdev, u32 bar, u64 offset, u64 size,
		     u64 *phys)
{
	u64 len;

	if (bar >= PCI_STD_NUM_BARS)
		return -ENXIO;
	len = pci_resource_len(pdev, bar);
	if (!len)
		return -ENXIO;
	if (pci_resource_flags(pdev, bar) & IORESOURCE_IO)
		return -EOPNOTSUPP;
	if (offset >= len || size > len - offset)
		return -ERANGE;
	*phys = pci_resource_start(pdev, bar) + offset;
	return 0;
}

static u64 check_step(struct iommu_domain *d, u64 size)
{
	u64 step = 1ULL << __ffs(d->pgsize_bitmap);

	return size > GPUP2P_FULL_CHECK_LIMIT ? max_t(u64, step, SZ_2M) : step;
}

/* Is any page of [iova, iova + size) already mapped in @d? */
static bool range_in_use(struct iommu_domain *d, u64 iova, u64 size)
{
	struct gpup2p_mapping *m;
	u64 step = check_step(d, size), off;

	list_for_each_entry(m, &gpup2p_mappings, node)
		if (m->domain == d && iova < m->iova + m->size &&
		    m->iova < iova + size)
			return true;
	/* The VMM's own mappings: mapping over them would corrupt its map. */
	for (off = 0; off < size; off += step) {
		if (iommu_iova_to_phys(d, iova + off))
			return true;
		cond_resched();
	}
	return iommu_iova_to_phys(d, iova + size - 1) != 0;
}

long gpup2p_map(struct gpup2p_ctx *ctx, struct gpup2p_map *req)
{
	struct pci_dev *init = NULL, *peer = NULL;
	struct file *init_file = NULL, *peer_file = NULL;
	struct gpup2p_mapping *m = NULL;
	struct iommu_domain *d;
	u64 phys, align;
	int prot = IOMMU_MMIO, ret;

	if (req->flags & ~(GPUP2P_MAP_READ | GPUP2P_MAP_WRITE) ||
	    !(req->flags & (GPUP2P_MAP_READ | GPUP2P_MAP_WRITE)) || !req->size)
		return -EINVAL;
	if (req->flags & GPUP2P_MAP_READ)
		prot |= IOMMU_READ;
	if (req->flags & GPUP2P_MAP_WRITE)
		prot |= IOMMU_WRITE;

	ret = resolve_ref(&req->initiator, &init, &init_file);
	if (ret)
		return ret;
	ret = resolve_ref(&req->peer, &peer, &peer_file);
	if (ret)
		goto out_init;
	d = vfio_domain(init);
	if (!d) {
		ret = -ENOLINK;
		goto out_peer;
	}
	ret = check_bar(peer, req->bar, req->offset, req->size, &phys);
	if (ret)
		goto out_peer;
	align = (1ULL << __ffs(d->pgsize_bitmap)) - 1;
	if ((req->iova | req->offset | req->size | phys) & align) {
		ret = -EINVAL;
		goto out_peer;
	}
	if (req->iova + req->size - 1 < req->iova) {
		ret = -EOVERFLOW;
		goto out_peer;
	}
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m) {
		ret = -ENOMEM;
		goto out_peer;
	}

	mutex_lock(&gpup2p_lock);
	if (range_in_use(d, req->iova, req->size)) {
		ret = -EEXIST;
		goto out_unlock;
	}
	/* iommu_map() picks the largest page sizes alignment allows. */
	ret = iommu_map(d, req->iova, phys, req->size, prot, GFP_KERNEL);
	if (ret)
		goto out_unlock;
	m->id = gpup2p_next_id++;
	m->owner = ctx;
	m->initiator = init;
	m->peer = peer;
	m->group_file = init_file;
	m->domain = d;
	m->iova = req->iova;
	m->size = req->size;
	m->phys = phys;
	m->offset = req->offset;
	m->bar = req->bar;
	m->flags = req->flags;
	m->pid = ctx->pid;
	list_add_tail(&m->node, &gpup2p_mappings);
	mutex_unlock(&gpup2p_lock);

	req->id = m->id;
	req->phys = phys;
	req->page_sizes = d->pgsize_bitmap;
	fput(peer_file);
	return 0;

out_unlock:
	mutex_unlock(&gpup2p_lock);
	kfree(m);
out_peer:
	pci_dev_put(peer);
	fput(peer_file);
out_init:
	pci_dev_put(init);
	fput(init_file);
	return ret;
}

/* Unmap and free; called with gpup2p_lock held. */
static void mapping_destroy(struct gpup2p_mapping *m)
{
	size_t done = iommu_unmap(m->domain, m->iova, m->size);

	if (done != m->size)
		pr_err("gpup2p: mapping %llu: unmapped %zu of %llu bytes\n",
		       m->id, done, m->size);
	list_del(&m->node);
	pci_dev_put(m->initiator);
	pci_dev_put(m->peer);
	fput(m->group_file);
	kfree(m);
}

long gpup2p_unmap(struct gpup2p_ctx *ctx, const struct gpup2p_unmap *u)
{
	struct gpup2p_mapping *m, *tmp;
	long ret = -ENOENT;

	if (u->flags & ~GPUP2P_UNMAP_ANY_OWNER)
		return -EINVAL;
	mutex_lock(&gpup2p_lock);
	list_for_each_entry_safe(m, tmp, &gpup2p_mappings, node) {
		if (m->id == u->id && (m->owner == ctx ||
				       (u->flags & GPUP2P_UNMAP_ANY_OWNER))) {
			mapping_destroy(m);
			ret = 0;
			break;
		}
	}
	mutex_unlock(&gpup2p_lock);
	return ret;
}

long gpup2p_list(struct gpup2p_ctx *ctx, struct gpup2p_list *l)
{
	struct gpup2p_mapping_info __user *out = u64_to_user_ptr(l->entries);
	struct gpup2p_mapping *m;
	u32 n = 0;
	long ret = 0;

	if (l->flags & ~GPUP2P_LIST_ALL)
		return -EINVAL;
	mutex_lock(&gpup2p_lock);
	list_for_each_entry(m, &gpup2p_mappings, node) {
		struct gpup2p_mapping_info info = {
			.id = m->id, .iova = m->iova, .size = m->size,
			.phys = m->phys, .initiator = gpup2p_pci_addr(m->initiator),
			.peer = gpup2p_pci_addr(m->peer), .bar = m->bar,
			.flags = m->flags, .offset = m->offset,
			.owner_pid = m->pid,
		};

		if (!(l->flags & GPUP2P_LIST_ALL) && m->owner != ctx)
			continue;
		if (n < l->count && copy_to_user(&out[n], &info, sizeof(info))) {
			ret = -EFAULT;
			break;
		}
		n++;
	}
	mutex_unlock(&gpup2p_lock);
	l->total = n;
	return ret;
}

static void audit_one(struct iommu_domain *d, struct gpup2p_audit_entry *e)
{
	struct pci_dev *peer = gpup2p_pci_get(e->peer);
	u64 step, off, got;

	e->status = GPUP2P_AUDIT_MISSING;
	if (!peer || check_bar(peer, e->bar, e->offset, e->size,
			       &e->expected_phys) || !e->size) {
		e->status = GPUP2P_AUDIT_WRONG;
		e->first_bad_iova = e->iova;
		pci_dev_put(peer);
		return;
	}
	pci_dev_put(peer);
	step = check_step(d, e->size);
	for (off = 0; off < e->size; off += step) {
		got = iommu_iova_to_phys(d, e->iova + off);
		if (got != e->expected_phys + off) {
			e->status = got ? GPUP2P_AUDIT_WRONG : GPUP2P_AUDIT_MISSING;
			e->first_bad_iova = e->iova + off;
			e->found_phys = got;
			return;
		}
		cond_resched();
	}
	e->status = GPUP2P_AUDIT_OK;
}

long gpup2p_audit(struct gpup2p_audit *a)
{
	struct gpup2p_audit_entry __user *uent = u64_to_user_ptr(a->entries);
	struct pci_dev *init = NULL;
	struct file *file = NULL;
	struct iommu_domain *d;
	u32 i;
	long ret;

	if (a->flags & ~GPUP2P_AUDIT_BY_ADDRESS || a->count > 4096)
		return -EINVAL;
	if (a->flags & GPUP2P_AUDIT_BY_ADDRESS) {
		init = gpup2p_pci_get(a->initiator.pci_addr);
		if (!init)
			return -ENODEV;
	} else {
		ret = resolve_ref(&a->initiator, &init, &file);
		if (ret)
			return ret;
	}
	a->mismatches = 0;
	mutex_lock(&gpup2p_lock);
	d = vfio_domain(init);
	ret = d ? 0 : -ENOLINK;
	for (i = 0; !ret && i < a->count; i++) {
		struct gpup2p_audit_entry e;

		if (copy_from_user(&e, &uent[i], sizeof(e))) {
			ret = -EFAULT;
			break;
		}
		audit_one(d, &e);
		if (e.status != GPUP2P_AUDIT_OK)
			a->mismatches++;
		if (copy_to_user(&uent[i], &e, sizeof(e)))
			ret = -EFAULT;
	}
	mutex_unlock(&gpup2p_lock);
	pci_dev_put(init);
	if (file)
		fput(file);
	return ret;
}

void gpup2p_release_owner(struct gpup2p_ctx *ctx)
{
	struct gpup2p_mapping *m, *tmp;

	mutex_lock(&gpup2p_lock);
	list_for_each_entry_safe(m, tmp, &gpup2p_mappings, node)
		if (m->owner == ctx)
			mapping_destroy(m);
	mutex_unlock(&gpup2p_lock);
}

void gpup2p_release_device(struct pci_dev *pdev)
{
	struct gpup2p_mapping *m, *tmp;

	mutex_lock(&gpup2p_lock);
	list_for_each_entry_safe(m, tmp, &gpup2p_mappings, node) {
		if (m->initiator == pdev || m->peer == pdev) {
			pr_info("gpup2p: %s is going away: removing mapping %llu\n",
				pci_name(pdev), m->id);
			mapping_destroy(m);
		}
	}
	mutex_unlock(&gpup2p_lock);
}

void gpup2p_release_all(void)
{
	struct gpup2p_mapping *m, *tmp;

	mutex_lock(&gpup2p_lock);
	list_for_each_entry_safe(m, tmp, &gpup2p_mappings, node)
		mapping_destroy(m);
	mutex_unlock(&gpup2p_lock);
}
