#!/bin/sh
# Runs inside the virtual host (topologies/kernel-helper.json): edu and
# ivshmem-plain passed through by our QEMU to a nested KVM guest, where edu
# DMAs to ivshmem's BAR at its guest-physical address. QEMU's own type1
# listener maps the peer BAR (its mmap) into the container; with
# x-no-mmap=on there is no mmap to map, so the same DMA must fault in the
# virtual host's IOMMU and nothing may arrive (the control).
#
#   qemu_p2p_dma.sh              type1, then iommufd where the kernel has it
#   qemu_p2p_dma.sh emulated     iommufd's emulated type1 container
#                                (tests/vhost/build-linux-emulated.sh)
#   qemu_p2p_dma.sh sparse       ivshmem on the sparse-mmap stand-in
#   qemu_p2p_dma.sh viommu       a vIOMMU in the nested guest, which maps
#                                the peer in its own IOMMU
#   qemu_p2p_dma.sh viommu-iommufd [TRIES]
#                                the same on iommufd, Debian's QEMU 11.1
#                                (its BARs as dma-bufs), Linux 7.x
set -u
O=$VHOST_OUT
QEMU=${GPUP2P_QEMU:-$PWD/build/qemu/qemu-system-x86_64}
. tests/vhost/guest-lib.sh
load_module kvm_amd
EDU=$(bdf edu0); SHM=$(bdf shm0)
bind_vfio $EDU $SHM

# guest NAME OFFSET SEED SHM-OPTIONS [QEMU-ARGS...], with GUEST_CMD (the
# nested guest's program), GUEST_APPEND (its kernel's arguments) and
# VIOMMU (a vIOMMU device, created before the others); none is taken
# from the environment.
GUEST_CMD="build/tests/kernel/guest-dma 2" GUEST_APPEND="" VIOMMU=""
GUEST_QEMU=""
EARLY_END="the guest ended before the command started (QEMU exit 0)"
# early_end NAME: whether the guest NAME's boot ended before its command
# started, with no panic on its console: nested KVM under TCG resets a
# guest in early boot now and then, and such a boot wrote nothing.
early_end() {
    [ ! -e $O/$1/rc ] && grep -qF "$EARLY_END" $O/$1.err 2>/dev/null &&
        ! grep -qE "Kernel panic|BUG:|Oops|Call Trace" $O/$1/console.log \
            2>/dev/null
}
# guest: guest_once, booted again at the same place after an early end
# (above), 3 boots at most; each discarded boot's files are kept as
# NAME.earlyN*, which the test's runner reports (taplib.vhost_run).
guest() {
    gboot=1
    while :; do
        guest_once "$@"
        if [ $gboot -ge 3 ] || ! early_end $1; then
            break
        fi
        for f in "" .json .err .rc .dmesg; do
            mv $O/$1$f $O/$1.early$gboot$f
        done
        gboot=$((gboot + 1))
    done
}
guest_once() {
    name=$1 off=$2 seed=$3 shm=$4; shift 4
    qarg=""
    for a in "$@"; do qarg="$qarg --qemu-arg=$a"; done
    # The kernel's lines while this guest ran: its own DMAR faults.
    before=$(dmesg | wc -l)
    # shellcheck disable=SC2086 # $qarg: words
    python3 tests/vhost/vhost.py inner --qemu "${GUEST_QEMU:-$QEMU}" \
        --out $O/$name --timeout 240 $qarg --append="${GUEST_APPEND:-}" \
        ${VIOMMU:+--device $VIOMMU} \
        --device vfio-pci,host=$EDU,bus=rp0$DEV_EXTRA \
        --device vfio-pci,host=$SHM,bus=rp1$DEV_EXTRA$shm \
        -- $GUEST_CMD $off $seed \
        > $O/$name.json 2> $O/$name.err
    echo $? > $O/$name.rc
    dmesg | tail -n +$((before + 1)) > $O/$name.dmesg
}

DEV_EXTRA=""
if [ "${1:-}" = emulated ]; then
    # /dev/vfio/vfio is iommufd's: QEMU's legacy container path, ours and
    # Debian's QEMU 11.1, maps the peer BAR from its mmap, which the
    # emulation cannot pin. The guest's DMA from RAM (to_edu) is the control.
    load_module iommufd
    guest emulated-ours 0x9000 16 ""
    if [ -n "${GPUP2P_QEMU_DMABUF:-}" ]; then
        GUEST_QEMU=$GPUP2P_QEMU_DMABUF guest emulated-stock 0xa000 17 ""
    fi
    dmesg > $O/dmesg.txt
    exit 0
fi
if [ "${1:-}" = sparse ]; then
    # ivshmem bound to the sparse-mmap stand-in (tests/kernel/
    # sparse-standin, loaded first): its BAR2's first half is mmapped and
    # mapped by QEMU's listener, the rest is trapped and never mapped.
    echo gpup2p_sparse_standin_vfio_pci \
        > /sys/bus/pci/devices/$SHM/driver_override
    echo $SHM > /sys/bus/pci/devices/$SHM/driver/unbind
    echo $SHM > /sys/bus/pci/drivers_probe
    basename "$(readlink /sys/bus/pci/devices/$SHM/driver)" \
        > $O/sparse-driver
    guest sparse-covered 0x4000 21 ""
    guest sparse-uncovered 0x900000 22 ""
    dmesg > $O/dmesg.txt
    exit 0
fi
if [ "${1:-}" = viommu ]; then
    # QEMU shadows the guest's IOMMU maps into the container (caching
    # mode): a peer BAR reaches the host IOMMU only once the guest maps
    # it, at the guest's IOVA. With x-no-mmap QEMU has no RAM to shadow
    # the guest's map with, whatever the guest does. On Linux 6.12: from
    # 6.14 on, KVM here refuses to emulate the nested guest's MMIO to the
    # vIOMMU when it follows an injected event, which the outer TCG
    # leaves in EXITINTINFO (docs/testbed.md). The vIOMMU has no
    # interrupt remapping (the nested irqchip is KVM's), which type1
    # refuses unless told; edu raises no interrupt here.
    GUEST_CMD="sh tests/integration/guest_viommu.sh"
    GUEST_APPEND="intel_iommu=on vfio_iommu_type1.allow_unsafe_interrupts=1"
    VIOMMU=intel-iommu,caching-mode=on
    echo "$EDU" > $O/edu-bdf
    guest viommu 0x4000 31 ""
    # No unmap here: the write to the mapped IOVA must fault on its own.
    GUEST_CMD="$GUEST_CMD --keep-map" guest viommu-nommap 0x6000 32 \
        ,x-no-mmap=on
    # Debian's QEMU 11.1 on the same container (type1).
    if [ -n "${GPUP2P_QEMU_DMABUF:-}" ]; then
        GUEST_QEMU=$GPUP2P_QEMU_DMABUF guest viommu-stock 0x8000 33 ""
    fi
    dmesg > $O/dmesg.txt
    exit 0
fi
if [ "${1:-}" = viommu-iommufd ]; then
    # As viommu, on iommufd (Linux 7.x): Debian's QEMU 11.1 shadows the
    # guest's map of the peer BAR from the BAR's dma-buf (its trace
    # names each such map); our QEMU 10.0 has only the BAR's mmap, which
    # iommufd cannot pin. From 6.14 on, nested KVM here may refuse to
    # emulate a write to the vIOMMU's registers (docs/testbed.md): the
    # guest's own DMA maps go to identity domains (iommu=pt), for fewer
    # such writes. A guest that died so before its command finished, or
    # that ended before its command started with no panic on its
    # console (a reset in early boot, as nested guests here sometimes
    # do), is booted again, up to TRIES boots in all, each with a new
    # seed so that no byte an earlier boot wrote can pass for a later
    # one's; each boot's files are kept.
    : "${GPUP2P_QEMU_DMABUF:?viommu-iommufd needs Debian's QEMU 11.1}"
    load_module iommufd
    GUEST_CMD="sh tests/integration/guest_viommu.sh"
    GUEST_APPEND="intel_iommu=on iommu=pt"
    GUEST_APPEND="$GUEST_APPEND vfio_iommu_type1.allow_unsafe_interrupts=1"
    VIOMMU=intel-iommu,caching-mode=on
    DEV_EXTRA=,iommufd=iommufd0
    echo "$EDU" > $O/edu-bdf
    # infrastructure_death NAME: whether the guest NAME's boot ended
    # before its command's status for a reason of nested KVM's, not ours
    KVM_STOP="the guest stopped: KVM internal error. Suberror: 3"
    infrastructure_death() {
        [ ! -e $O/$1/rc ] && {
            grep -q "$KVM_STOP; killed its emulator\$" $O/$1.err ||
                early_end $1
        } 2>/dev/null
    }
    # guest_tries NAME OFFSET SEED-BASE SHM-OPTIONS [QEMU-ARGS...], with
    # GUEST_QEMU and GUEST_CMD. Boot N writes at OFFSET + (N - 1) MiB
    # with seed SEED-BASE + N, so that whatever an earlier boot wrote
    # stays where the test can read it.
    guest_tries() {
        gname=$1 goff=$2 gseed=$3 gshm=$4; shift 4
        try=1
        while :; do
            off=$(printf 0x%x $((goff + (try - 1) * 0x100000)))
            guest $gname $off $((gseed + try)) "$gshm" \
                -object iommufd,id=iommufd0 -trace iommufd_backend_map_dma "$@"
            echo $((gseed + try)) > $O/$gname.seed
            echo $off > $O/$gname.offset
            if [ $try -ge "$TRIES" ] || ! infrastructure_death $gname; then
                break
            fi
            mv $O/$gname $O/$gname.died$try
            for f in json err rc dmesg seed offset; do
                mv $O/$gname.$f $O/$gname.died$try.$f
            done
            try=$((try + 1))
        done
        echo $try > $O/$gname.boots
    }
    TRIES=${2:-5}
    case $TRIES in
    ''|*[!0-9]*|0) echo "TRIES: not a count: $TRIES" >&2; exit 2 ;;
    esac
    KEEP="$GUEST_CMD --keep-map"
    # Each in a subshell: what it sets is for that guest only.
    (GUEST_QEMU=$GPUP2P_QEMU_DMABUF
     guest_tries viommu-iommufd 0xa000 40 "" \
        -trace iommufd_backend_map_file_dma -trace vfio_region_dmabuf)
    # Nothing to map, so the guest keeps its map: the mapped write must
    # fault on its own.
    (GUEST_CMD=$KEEP; guest_tries viommu-iommufd-ours 0xc000 50 "")
    (GUEST_CMD=$KEEP GUEST_QEMU=$GPUP2P_QEMU_DMABUF
     guest_tries viommu-iommufd-nommap 0xe000 60 ,x-no-mmap=on \
        -trace iommufd_backend_map_file_dma -trace vfio_region_dmabuf)
    dmesg > $O/dmesg.txt
    exit 0
fi
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
