#!/bin/sh
# The main job: build, then show the host's topology and clique plan. On a
# host with no NVIDIA GPU it runs on the embedded default instead: a
# captured two-H200 cloud VM (tests/fixtures/h200x2-vm).
set -eu
cd "$(dirname "$0")/.."

[ -d build ] || meson setup build
ninja -C build

gpup2p=build/tools/gpup2p/gpup2p
if grep -qs '^0x10de$' /sys/bus/pci/devices/*/vendor; then
    root=/
else
    root=tests/fixtures/h200x2-vm
    echo "no NVIDIA GPU on this host: using the captured default $root"
fi
$gpup2p topo --sysfs-root "$root"
echo
$gpup2p plan --sysfs-root "$root"
