#!/bin/sh
# Runs inside the virtual host (topologies/kernel-helper.json): edu and
# ivshmem-plain passed through by our QEMU to a nested KVM guest, where edu
# DMAs to ivshmem's BAR at its guest-physical address. Once with the VMM's
# own BAR mapping (type1), once with x-gpu-p2p-bar-mapper=helper: the VMM
# withholds its mapping and the kernel helper makes it.
set -u
O=$VHOST_OUT
G=$PWD/build/tools/gpup2p/gpup2p
. tests/vhost/guest-lib.sh
load_module kvm_amd
EDU=$(bdf edu0); SHM=$(bdf shm0)
bind_vfio $EDU $SHM

guest() {   # guest NAME OFFSET SEED SHM-OPTIONS [QEMU-TRACE]
    python3 tests/vhost/vhost.py inner --out $O/$1 --timeout 240 \
        ${5:+--qemu-arg=-trace --qemu-arg=$5} \
        --device vfio-pci,host=$EDU,bus=rp0 \
        --device vfio-pci,host=$SHM,bus=rp1$4 \
        -- build/tests/kernel/guest-dma 2 $2 $3 > $O/$1.json 2> $O/$1.err &
    pid=$!
    max=0
    while kill -0 $pid 2>/dev/null; do
        n=$($G mappings --json 2>/dev/null | grep -c '"id"')
        [ "${n:-0}" -gt $max ] && max=$n
        sleep 0.5
    done
    wait $pid; echo $? > $O/$1.rc
    echo $max > $O/$1.helper-mappings
}

# Starting with the helper but without its module is refused.
guest helper-missing 0x6000 13 ,x-gpu-p2p-bar-mapper=helper
insmod build/kernel/gpup2p.ko
guest vmm 0x4000 11 ""
guest helper 0x5000 12 ,x-gpu-p2p-bar-mapper=helper
# The VMM maps, and the helper's audit checks what it mapped.
guest audit 0x7000 14 ,x-gpu-p2p-audit=on vfio_gpu_p2p_audit
$G mappings --json > $O/mappings-after.json
rmmod gpup2p; echo $? > $O/rmmod.rc
dmesg > $O/dmesg.txt
exit 0
