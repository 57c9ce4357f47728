#!/bin/sh
# What a passed-through BAR adds to a VM's start on Linux 7.x, BAR mapping
# included (tests/bench/vm_start_bars.py): our QEMU on type1 and Debian's
# QEMU 11.1 on iommufd (dma-buf), each against its own start with no
# device, for ivshmem BAR stand-ins of 1, 16 and 64 GiB in the Linux 7.x
# virtual host. Not part of CI (minutes under TCG); prints JSON lines and
# keeps them in build/vm-start-bench-TIME.jsonl; then judges each ratio
# against the 1.05x goal (tests/bench/start_goal.py).
#
#   tests/bench/vm-start-bench.sh [ROUNDS] [phases]
#
# "phases": where a passed-through device's share goes, from QEMU's own
# VFIO trace events (tests/bench/vm_start_phases.py); its lines are kept
# in build/vm-start-phases-TIME.jsonl, its traces in the folder of that
# name.
set -eu
cd "$(dirname "$0")/../.."
rounds=${1:-10}
when=$(date -u +%Y%m%dT%H%M%SZ)
script=vm_start_bars.py keep=build/vm-start-bench-$when
if [ "${2:-}" = phases ]; then
    script=vm_start_phases.py keep=build/vm-start-phases-$when
fi
cache=${VHOST_CACHE_7X:-$(sh tests/vhost/build-linux.sh | tail -n 1)}
newer=$(sh tests/vhost/stock-qemu-newer.sh | tail -n 1)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# A 64 GiB BAR needs a 64-bit PCI window larger than q35's default.
VHOST_CACHE=$cache python3 tests/vhost/vhost.py run \
    tests/kernel/type1-map-bench.json --timeout 1500 --out "$out" \
    --qemu-arg=-global --qemu-arg=q35-pcihost.pci-hole64-size=256G -- \
    sh -c "ROUNDS=$rounds GPUP2P_QEMU_DMABUF=$newer \
           python3 tests/bench/$script"
# The raw lines (and traces) stay, so that the figures can be derived
# again.
cp "$out/output.log" "$keep.jsonl"
if [ -d "$out/traces" ]; then
    cp -r "$out/traces" "$keep"
fi
cat "$keep.jsonl"
# Each ratio against the 1.05x goal, with its interval (start_goal.py).
python3 tests/bench/start_goal.py "$keep.jsonl"
