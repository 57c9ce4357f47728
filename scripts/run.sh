#!/bin/sh
# The main job: build, then show P2P for GPU VMs end to end. On a host with
# NVIDIA GPUs it reports this host's readiness and plan. Elsewhere it runs
# on the embedded default, the virtual GPU host (Debian's kernel with an
# emulated IOMMU, PCIe switches and two NUMA nodes under QEMU): the host's
# topology and plan, our QEMU with x-gpu-p2p-clique=auto giving GPU
# stand-ins to a nested KVM guest, and the guest tool reading the cliques.
set -eu
cd "$(dirname "$0")/.."

[ -d build ] || meson setup build
ninja -C build

gpup2p=build/tools/gpup2p/gpup2p
if grep -qs '^0x10de$' /sys/bus/pci/devices/*/vendor; then
    $gpup2p check || true
    echo
    $gpup2p topo
    echo
    $gpup2p plan
    exit 0
fi

echo "no NVIDIA GPU on this host: running on the virtual GPU host"
python3 tests/vhost/vhost.py prepare
hw/vfio-gpu-p2p/build-qemu.sh
python3 tests/vhost/vhost.py run tests/vhost/topologies/vfio-gpus.json \
    --timeout 600 -- sh tests/vhost/demo.sh
