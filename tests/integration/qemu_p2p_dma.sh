#!/bin/sh
# Runs inside the virtual host (topologies/kernel-helper.json): edu and
# ivshmem-plain passed through by our QEMU to a nested KVM guest, where edu
# DMAs to ivshmem's BAR at its guest-physical address. QEMU's own type1
# listener maps the peer BAR (its mmap) into the container; with
# x-no-mmap=on there is no mmap to map, so the same DMA must fault in the
# virtual host's IOMMU and nothing may arrive (the control).
set -u
O=$VHOST_OUT
QEMU=${GPUP2P_QEMU:-$PWD/build/qemu/qemu-system-x86_64}
. tests/vhost/guest-lib.sh
load_module kvm_amd
EDU=$(bdf edu0); SHM=$(bdf shm0)
bind_vfio $EDU $SHM

guest() {   # guest NAME OFFSET SEED SHM-OPTIONS [QEMU-ARGS...]
    name=$1 off=$2 seed=$3 shm=$4; shift 4
    qarg=""
    for a in "$@"; do qarg="$qarg --qemu-arg=$a"; done
    # shellcheck disable=SC2086 # $qarg: words
    python3 tests/vhost/vhost.py inner --qemu "${GUEST_QEMU:-$QEMU}" \
        --out $O/$name --timeout 240 $qarg \
        --device vfio-pci,host=$EDU,bus=rp0$DEV_EXTRA \
        --device vfio-pci,host=$SHM,bus=rp1$DEV_EXTRA$shm \
        -- build/tests/kernel/guest-dma 2 $off $seed > $O/$name.json \
        2> $O/$name.err
    echo $? > $O/$name.rc
}

DEV_EXTRA=""
guest vmm 0x4000 11 ""
guest nommap 0x5000 12 ,x-no-mmap=on
# The iommufd backend (vfio cdev, -object iommufd) where the kernel has
# it (Linux 7.x virtual host): our QEMU, and where given a QEMU with the
# dma-buf path (GPUP2P_QEMU_DMABUF), that one.
if load_module iommufd && [ -c /dev/iommu ]; then
    echo yes > $O/iommufd-available
    DEV_EXTRA=,iommufd=iommufd0
    guest iommufd 0x6000 13 "" -object iommufd,id=iommufd0
    guest iommufd-nommap 0x7000 14 ,x-no-mmap=on -object iommufd,id=iommufd0
    if [ -n "${GPUP2P_QEMU_DMABUF:-}" ]; then
        GUEST_QEMU=$GPUP2P_QEMU_DMABUF guest iommufd-dmabuf 0x8000 15 "" \
            -object iommufd,id=iommufd0
    fi
else
    echo no > $O/iommufd-available
fi
dmesg > $O/dmesg.txt
exit 0
