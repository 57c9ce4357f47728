#!/bin/sh
# What a passed-through BAR adds to a VM's start on Linux 7.x, BAR mapping
# included (tests/bench/vm_start_bars.py): our QEMU on type1 and Debian's
# QEMU 11.1 on iommufd (dma-buf), each against its own start with no
# device, for ivshmem BAR stand-ins of 1, 16 and 64 GiB in the Linux 7.x
# virtual host. Not part of CI (minutes under TCG); prints JSON lines and
# keeps them in build/vm-start-bench.jsonl.
#
#   tests/bench/vm-start-bench.sh [ROUNDS] [phases]
#
# "phases": where a passed-through device's share goes, each start under
# strace (tests/bench/vm_start_phases.py); its lines are kept in
# build/vm-start-phases.jsonl.
set -eu
cd "$(dirname "$0")/../.."
rounds=${1:-5}
script=vm_start_bars.py jsonl=build/vm-start-bench.jsonl
if [ "${2:-}" = phases ]; then
    script=vm_start_phases.py jsonl=build/vm-start-phases.jsonl
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
# The raw lines stay, so that the figures can be derived again.
cp "$out/output.log" $jsonl
cat $jsonl
