#!/bin/sh
# Runs in the nested guest, its IOMMU on (intel_iommu=on behind QEMU's
# intel-iommu): binds edu and ivshmem to this guest's vfio-pci and runs
# tests/kernel/guest-viommu-dma.c, which maps ivshmem's BAR in the
# guest's own IOMMU and has edu DMA to that IOVA.
#   guest_viommu.sh OFFSET SEED
set -u
. tests/vhost/guest-lib.sh
# allow_unsafe_interrupts comes on the kernel command line
# (qemu_p2p_dma.sh): this vIOMMU remaps no interrupts.
load_module vfio_iommu_type1 vfio-pci || exit 1
for d in /sys/bus/pci/devices/*; do
    case "$(cat "$d/vendor"):$(cat "$d/device")" in
    0x1234:0x11e8|0x1af4:0x1110) bind_vfio "${d##*/}" ;;
    esac
done
exec build/tests/kernel/guest-viommu-dma "$@"
