#!/bin/sh
# The main job on the virtual GPU host: the host's view (topology, the
# guest's and bare metal's P2P verdicts, clique plan), our QEMU giving two
# GPU stand-ins on root ports and one under another host bridge to a nested
# KVM guest with x-gpu-p2p-clique=auto, and the guest tool reading the
# cliques back. The two stand-ins behind the switch without ACS are shown
# kept apart, with the reason.
set -eu
G=build/tools/gpup2p/gpup2p
. tests/vhost/guest-lib.sh
load_module kvm_amd
G0=$(bdf gpu0); G1=$(bdf gpu1); G2=$(bdf gpu2); G3=$(bdf gpu3); G4=$(bdf gpu4)
bind_vfio $G0 $G1 $G2 $G3 $G4
echo "== host: gpup2p topo"
$G topo --devices $G0,$G1,$G2,$G3,$G4
echo
echo "== host: gpup2p plan"
$G plan --devices $G0,$G1,$G2,$G3,$G4
echo
echo "== guest (nested, KVM): gpup2p-verify --pci-only"
dev="x-pci-vendor-id=0x10de,x-gpu-p2p-clique=auto"
python3 tests/vhost/vhost.py inner --out $VHOST_OUT/guest --timeout 240 \
    --device vfio-pci,host=$G0,bus=rp0,$dev \
    --device vfio-pci,host=$G1,bus=rp1,$dev \
    --device vfio-pci,host=$G2,bus=rp2,$dev \
    -- build/guest-tools/gpup2p-verify --pci-only
