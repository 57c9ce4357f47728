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

guest() {   # guest NAME OFFSET SEED SHM-OPTIONS
    python3 tests/vhost/vhost.py inner --qemu "$QEMU" --out $O/$1 \
        --timeout 240 \
        --device vfio-pci,host=$EDU,bus=rp0 \
        --device vfio-pci,host=$SHM,bus=rp1$4 \
        -- build/tests/kernel/guest-dma 2 $2 $3 > $O/$1.json 2> $O/$1.err
    echo $? > $O/$1.rc
}

guest vmm 0x4000 11 ""
guest nommap 0x5000 12 ,x-no-mmap=on
dmesg > $O/dmesg.txt
exit 0
