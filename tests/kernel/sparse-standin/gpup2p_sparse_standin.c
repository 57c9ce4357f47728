// SPDX-License-Identifier: GPL-2.0-only
/*
 * A test stand-in, not a driver for any real device: vfio-pci, except that
 * each prefetchable memory BAR offers only its first half for mmap, as a
 * sparse mmap capability (VFIO_REGION_INFO_CAP_SPARSE_MMAP) says, the way
 * a device with a trapped register page inside its BAR reports it. No
 * device this project's virtual host emulates has such a BAR, and the
 * capability gate of vfio-gpu-p2p must be judged against a kernel that
 * gives one. Named as vfio-pci's variant drivers are. Binds only through
 * driver_override: echo gpup2p_sparse_standin_vfio_pci >
 * /sys/bus/pci/devices/BDF/driver_override.
 *
 * Built against Linux >= 6.19 (the get_region_info_caps op) by
 * tests/integration/test_qemu_sparse.py.
 */
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <linux/vfio.h>
#include <linux/vfio_pci_core.h>

static bool sparse_bar(struct pci_dev *pdev, unsigned int index)
{
	return index <= VFIO_PCI_BAR5_REGION_INDEX &&
	       (pci_resource_flags(pdev, index) & IORESOURCE_MEM) &&
	       (pci_resource_flags(pdev, index) & IORESOURCE_PREFETCH) &&
	       pci_resource_len(pdev, index) >= 2 * PAGE_SIZE;
}

/* The part of a sparse BAR that may be mmapped: its first half. */
static u64 mmappable(struct pci_dev *pdev, unsigned int index)
{
	return pci_resource_len(pdev, index) / 2;
}

static struct vfio_pci_core_device *core(struct vfio_device *vdev)
{
	return container_of(vdev, struct vfio_pci_core_device, vdev);
}

static int standin_region_info(struct vfio_device *vdev,
			       struct vfio_region_info *info,
			       struct vfio_info_cap *caps)
{
	struct pci_dev *pdev = core(vdev)->pdev;
	struct vfio_region_info_cap_sparse_mmap *sparse;
	size_t size = struct_size(sparse, areas, 1);
	int ret;

	ret = vfio_pci_ioctl_get_region_info(vdev, info, caps);
	if (ret || !(info->flags & VFIO_REGION_INFO_FLAG_MMAP) ||
	    !sparse_bar(pdev, info->index))
		return ret;

	sparse = kzalloc(size, GFP_KERNEL);
	if (!sparse)
		return -ENOMEM;
	sparse->header.id = VFIO_REGION_INFO_CAP_SPARSE_MMAP;
	sparse->header.version = 1;
	sparse->nr_areas = 1;
	sparse->areas[0].offset = 0;
	sparse->areas[0].size = mmappable(pdev, info->index);
	ret = vfio_info_add_capability(caps, &sparse->header, size);
	kfree(sparse);
	return ret;
}

/* What the capability leaves out cannot be mapped either. */
static int standin_mmap(struct vfio_device *vdev, struct vm_area_struct *vma)
{
	struct pci_dev *pdev = core(vdev)->pdev;
	u64 pos = (u64)vma->vm_pgoff << PAGE_SHIFT;
	unsigned int index = VFIO_PCI_OFFSET_TO_INDEX(pos);
	u64 off = pos & VFIO_PCI_OFFSET_MASK;

	if (sparse_bar(pdev, index) &&
	    off + (vma->vm_end - vma->vm_start) > mmappable(pdev, index))
		return -EINVAL;
	return vfio_pci_core_mmap(vdev, vma);
}

static int standin_open(struct vfio_device *vdev)
{
	int ret = vfio_pci_core_enable(core(vdev));

	if (ret)
		return ret;
	vfio_pci_core_finish_enable(core(vdev));
	return 0;
}

static const struct vfio_device_ops standin_ops = {
	.name			= "gpup2p_sparse_standin_vfio_pci",
	.init			= vfio_pci_core_init_dev,
	.release		= vfio_pci_core_release_dev,
	.open_device		= standin_open,
	.close_device		= vfio_pci_core_close_device,
	.ioctl			= vfio_pci_core_ioctl,
	.get_region_info_caps	= standin_region_info,
	.device_feature		= vfio_pci_core_ioctl_feature,
	.read			= vfio_pci_core_read,
	.write			= vfio_pci_core_write,
	.mmap			= standin_mmap,
	.request		= vfio_pci_core_request,
	.match			= vfio_pci_core_match,
	.match_token_uuid	= vfio_pci_core_match_token_uuid,
	.bind_iommufd		= vfio_iommufd_physical_bind,
	.unbind_iommufd		= vfio_iommufd_physical_unbind,
	.attach_ioas		= vfio_iommufd_physical_attach_ioas,
	.detach_ioas		= vfio_iommufd_physical_detach_ioas,
	.pasid_attach_ioas	= vfio_iommufd_physical_pasid_attach_ioas,
	.pasid_detach_ioas	= vfio_iommufd_physical_pasid_detach_ioas,
};

static int standin_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct vfio_pci_core_device *vdev;
	int ret;

	vdev = vfio_alloc_device(vfio_pci_core_device, vdev, &pdev->dev,
				 &standin_ops);
	if (IS_ERR(vdev))
		return PTR_ERR(vdev);
	dev_set_drvdata(&pdev->dev, vdev);
	/*
	 * No vdev->pci_ops: without get_dmabuf_phys the device offers no
	 * dma-buf (VFIO_DEVICE_FEATURE_DMA_BUF), which could export the half
	 * the sparse capability leaves out.
	 */
	ret = vfio_pci_core_register_device(vdev);
	if (ret)
		vfio_put_device(&vdev->vdev);
	return ret;
}

static void standin_remove(struct pci_dev *pdev)
{
	struct vfio_pci_core_device *vdev = dev_get_drvdata(&pdev->dev);

	vfio_pci_core_unregister_device(vdev);
	vfio_put_device(&vdev->vdev);
}

static const struct pci_device_id standin_ids[] = {
	{ PCI_DRIVER_OVERRIDE_DEVICE_VFIO(PCI_ANY_ID, PCI_ANY_ID) },
	{}
};
MODULE_DEVICE_TABLE(pci, standin_ids);

static struct pci_driver standin_driver = {
	.name			= "gpup2p_sparse_standin_vfio_pci",
	.id_table		= standin_ids,
	.probe			= standin_probe,
	.remove			= standin_remove,
	.err_handler		= &vfio_pci_core_err_handlers,
	.driver_managed_dma	= true,
};
module_pci_driver(standin_driver);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("vfio-gpu-p2p test stand-in: vfio-pci with sparse mmaps");
