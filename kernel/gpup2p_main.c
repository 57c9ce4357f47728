// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpup2p: set and audit IOMMU mappings of peer BARs for VMs with
 * passed-through GPUs, whatever the VMM's IOMMU backend.
 *
 * This file: the character device, ioctl dispatch, the PCI bus notifier
 * that drops mappings before a device goes away, and module init/exit.
 */
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "gpup2p.h"

/*
 * Copy an argsz-prefixed struct from user space: @min bytes at least, the
 * rest of @size zero-filled, so older callers of a grown struct still work.
 */
static int copy_arg(void *dst, size_t size, size_t min, void __user *src)
{
	u32 argsz;

	if (get_user(argsz, (u32 __user *)src))
		return -EFAULT;
	if (argsz < min)
		return -EINVAL;
	memset(dst, 0, size);
	if (copy_from_user(dst, src, min_t(size_t, argsz, size)))
		return -EFAULT;
	return 0;
}

static int copy_back(void __user *dst, const void *src, size_t size)
{
	u32 argsz;

	if (get_user(argsz, (u32 __user *)dst))
		return -EFAULT;
	return copy_to_user(dst, src, min_t(size_t, argsz, size)) ?
	       -EFAULT : 0;
}

#define ARG_MIN(type, last) offsetofend(type, last)

static long gpup2p_ioctl(struct file *file, unsigned int cmd,
			 unsigned long arg)
{
	struct gpup2p_ctx *ctx = file->private_data;
	void __user *uarg = (void __user *)arg;
	long ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;

	switch (cmd) {
	case GPUP2P_MAP: {
		struct gpup2p_map m;

		ret = copy_arg(&m, sizeof(m), ARG_MIN(struct gpup2p_map, iova),
			       uarg);
		if (ret)
			return ret;
		ret = gpup2p_map(ctx, &m);
		if (!ret)
			ret = copy_back(uarg, &m, sizeof(m));
		return ret;
	}
	case GPUP2P_UNMAP: {
		struct gpup2p_unmap u;

		ret = copy_arg(&u, sizeof(u), sizeof(u), uarg);
		return ret ? ret : gpup2p_unmap(ctx, &u);
	}
	case GPUP2P_LIST: {
		struct gpup2p_list l;

		ret = copy_arg(&l, sizeof(l), sizeof(l), uarg);
		if (ret)
			return ret;
		ret = gpup2p_list(ctx, &l);
		if (!ret)
			ret = copy_back(uarg, &l, sizeof(l));
		return ret;
	}
	case GPUP2P_AUDIT: {
		struct gpup2p_audit a;

		ret = copy_arg(&a, sizeof(a), sizeof(a), uarg);
		if (ret)
			return ret;
		ret = gpup2p_audit(&a);
		if (!ret)
			ret = copy_back(uarg, &a, sizeof(a));
		return ret;
	}
	case GPUP2P_VERDICT: {
		struct gpup2p_verdict v;

		ret = copy_arg(&v, sizeof(v), ARG_MIN(struct gpup2p_verdict, b),
			       uarg);
		if (ret)
			return ret;
		ret = gpup2p_verdict(&v);
		if (!ret)
			ret = copy_back(uarg, &v, sizeof(v));
		return ret;
	}
	}
	return -ENOTTY;
}

static int gpup2p_open(struct inode *inode, struct file *file)
{
	struct gpup2p_ctx *ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);

	if (!ctx)
		return -ENOMEM;
	ctx->pid = task_tgid_vnr(current);
	file->private_data = ctx;
	return 0;
}

/* Closing the fd (or the process dying) removes its mappings. */
static int gpup2p_release(struct inode *inode, struct file *file)
{
	struct gpup2p_ctx *ctx = file->private_data;

	gpup2p_release_owner(ctx);
	kfree(ctx);
	return 0;
}

static const struct file_operations gpup2p_fops = {
	.owner = THIS_MODULE,
	.open = gpup2p_open,
	.release = gpup2p_release,
	.unlocked_ioctl = gpup2p_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static struct miscdevice gpup2p_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = GPUP2P_DEVICE_NAME,
	.fops = &gpup2p_fops,
	.mode = 0600,
};

/* Before a device loses its driver or goes away, its mappings go. */
static int gpup2p_bus_notify(struct notifier_block *nb, unsigned long action,
			     void *data)
{
	struct device *dev = data;

	if (action == BUS_NOTIFY_UNBIND_DRIVER ||
	    action == BUS_NOTIFY_DEL_DEVICE)
		gpup2p_release_device(to_pci_dev(dev));
	return NOTIFY_OK;
}

static struct notifier_block gpup2p_nb = {
	.notifier_call = gpup2p_bus_notify,
};

static int __init gpup2p_init(void)
{
	int ret;

	ret = bus_register_notifier(&pci_bus_type, &gpup2p_nb);
	if (ret)
		return ret;
	ret = misc_register(&gpup2p_misc);
	if (ret) {
		bus_unregister_notifier(&pci_bus_type, &gpup2p_nb);
		return ret;
	}
	pr_info("gpup2p: /dev/%s ready (API %d)\n", GPUP2P_DEVICE_NAME,
		GPUP2P_API_VERSION);
	return 0;
}

static void __exit gpup2p_exit(void)
{
	misc_deregister(&gpup2p_misc);
	bus_unregister_notifier(&pci_bus_type, &gpup2p_nb);
	/* Open fds pin the module, so none should be left; be sure. */
	gpup2p_release_all();
}

module_init(gpup2p_init);
module_exit(gpup2p_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Set and audit IOMMU mappings of peer BARs for GPU P2P in VMs");
