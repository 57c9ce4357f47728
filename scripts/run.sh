#!/bin/sh
# The main job: build, then show the host's PCI topology, P2P verdicts and
# clique plan. On a host with NVIDIA GPUs it reads this host; elsewhere it
# runs on the embedded default, the virtual GPU host (a real Linux kernel
# with an emulated IOMMU, PCIe switches and two NUMA nodes under QEMU).
set -eu
cd "$(dirname "$0")/.."

[ -d build ] || meson setup build
ninja -C build

gpup2p=build/tools/gpup2p/gpup2p
if grep -qs '^0x10de$' /sys/bus/pci/devices/*/vendor; then
    $gpup2p topo
    echo
    $gpup2p plan
    exit 0
fi

echo "no NVIDIA GPU on this host: running on the virtual GPU host"
python3 tests/vhost/vhost.py prepare
python3 tests/vhost/vhost.py run tests/vhost/topologies/two-numa.json \
    --timeout 300 -- sh -ec "
        gpus=\$(for n in gpu0 gpu1 gpu2 gpu3 gpu4 gpu5 gpu6; do
                    python3 tests/vhost/vhost.py bdf \$n; done | paste -sd,)
        $gpup2p topo --devices \$gpus
        echo
        $gpup2p plan --devices \$gpus"
