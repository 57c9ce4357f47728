// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpup2p: read-only questions about the host's PCI topology for VMs with
 * passed-through GPUs.
 *
 * This file: the character device and the ioctl dispatch. The module keeps
 * no state between calls and holds nothing across them: an open file has
 * no private data, so closing it, a killed caller or an unbind has nothing
 * to undo.
 */
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/uaccess.h>

#include "gpup2p.h"

/**
 * gpup2p_copy_arg() - copy an argsz-prefixed ioctl argument in
 * @dst: the kernel's struct
 * @size: its size
 * @min: the end of its last input field
 * @src: the user's struct
 * @argsz: out: the caller's argsz
 *
 * copy_struct_from_user() semantics: a shorter struct reads as zero-filled,
 * a longer one must have a zero tail.
 *
 * Return: 0, -EFAULT, -EINVAL (argsz below @min) or -E2BIG.
 */
static int gpup2p_copy_arg(void *dst, size_t size, size_t min,
			   const void __user *src, u32 *argsz)
{
	if (get_user(*argsz, (const u32 __user *)src))
		return -EFAULT;
	if (*argsz < min)
		return -EINVAL;
	if (*argsz > GPUP2P_ARGSZ_MAX)
		return -E2BIG;
	return copy_struct_from_user(dst, size, src, *argsz);
}

/* Writes back no more than the caller's argsz. */
static int gpup2p_copy_out(void __user *dst, const void *src, size_t size,
			   u32 argsz)
{
	return copy_to_user(dst, src, min_t(size_t, argsz, size)) ?
	       -EFAULT : 0;
}

static long gpup2p_get_info(void __user *uarg)
{
	struct gpup2p_info info;
	u32 argsz;
	int ret;

	ret = gpup2p_copy_arg(&info, sizeof(info),
			      offsetofend(struct gpup2p_info, flags), uarg,
			      &argsz);
	if (ret)
		return ret;
	if (info.flags || info.__reserved)
		return -EINVAL;
	info.api_version = GPUP2P_API_VERSION;
	info.caps = GPUP2P_CAP_VERDICT | GPUP2P_CAP_VM_VERDICT |
		    GPUP2P_CAP_IOMMU_GROUP;
	if (IS_ENABLED(CONFIG_PCI_P2PDMA))
		info.caps |= GPUP2P_CAP_P2PDMA;
	return gpup2p_copy_out(uarg, &info, sizeof(info), argsz);
}

static long gpup2p_ioctl_verdict(void __user *uarg)
{
	struct gpup2p_verdict v;
	u32 argsz;
	long ret;

	ret = gpup2p_copy_arg(&v, sizeof(v),
			      offsetofend(struct gpup2p_verdict, b), uarg,
			      &argsz);
	if (ret)
		return ret;
	if (v.flags || v.__reserved)
		return -EINVAL;
	ret = gpup2p_verdict(&v);
	if (ret)
		return ret;
	return gpup2p_copy_out(uarg, &v, sizeof(v), argsz);
}

static long gpup2p_ioctl(struct file *file, unsigned int cmd,
			 unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case GPUP2P_GET_INFO:
		return gpup2p_get_info(uarg);
	case GPUP2P_VERDICT:
		return gpup2p_ioctl_verdict(uarg);
	}
	return -ENOTTY;
}

static const struct file_operations gpup2p_fops = {
	.owner = THIS_MODULE,
	.open = nonseekable_open,
	.unlocked_ioctl = gpup2p_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

/* Root only until the udev rule (60-gpup2p.rules) sets group and mode. */
static struct miscdevice gpup2p_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = GPUP2P_DEVICE_NAME,
	.fops = &gpup2p_fops,
	.mode = 0600,
};

static int __init gpup2p_init(void)
{
	int ret;

	ret = misc_register(&gpup2p_misc);
	if (ret)
		return ret;
	pr_info("gpup2p: /dev/%s ready (API %d, read-only)\n",
		GPUP2P_DEVICE_NAME, GPUP2P_API_VERSION);
	return 0;
}

static void __exit gpup2p_exit(void)
{
	misc_deregister(&gpup2p_misc);
}

module_init(gpup2p_init);
module_exit(gpup2p_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("P2P verdicts (bare metal and a guest's) and IOMMU groups from the kernel's PCI device tree");
