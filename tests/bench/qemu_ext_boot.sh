#!/bin/sh
# Inside the virtual host: nested guests with three GPU stand-ins, the
# extension off and auto alternately; prints each run's timing.
set -eu
. tests/vhost/guest-lib.sh
load_module kvm_amd
G0=$(bdf gpu0); G1=$(bdf gpu1); G2=$(bdf gpu2)
bind_vfio $G0 $G1 $G2
i=0
for mode in off auto off auto off auto; do
    i=$((i + 1))
    dev="x-pci-vendor-id=0x10de,x-gpu-p2p-clique=$mode"
    python3 tests/vhost/vhost.py inner --out $VHOST_OUT/run$i --timeout 240 \
        --device vfio-pci,host=$G0,bus=rp0,$dev \
        --device vfio-pci,host=$G1,bus=rp1,$dev \
        --device vfio-pci,host=$G2,bus=rp2,$dev -- true
    echo "$mode $(cat $VHOST_OUT/run$i/timing.json)"
done
