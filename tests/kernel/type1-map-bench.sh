#!/bin/sh
# The cost of the supported path for peer BARs, in the virtual GPU host:
# VFIO type1's own VFIO_IOMMU_MAP_DMA / UNMAP_DMA of ivshmem BAR mmaps of
# 1, 16 and 64 GiB (tests/kernel/type1-map-bench.json), mean of REPEAT
# (default 3). Not part of CI (minutes under TCG). Prints one JSON line
# per BAR. Run from the project directory with VHOST_CACHE set:
#   tests/kernel/type1-map-bench.sh [REPEAT]
# Each BAR is mapped from a size-aligned mmap (as QEMU places them) and
# from a plain one.
set -eu
cd "$(dirname "$0")/../.."
repeat=${1:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# A 64 GiB BAR needs a 64-bit PCI window larger than q35's default.
python3 tests/vhost/vhost.py run tests/kernel/type1-map-bench.json \
    --timeout 900 --out "$out" \
    --qemu-arg=-global --qemu-arg=q35-pcihost.pci-hole64-size=256G -- \
    sh -c ". tests/vhost/guest-lib.sh
          a=\$(bdf shm1g); b=\$(bdf shm16g); c=\$(bdf shm64g)
          bind_vfio \$a \$b \$c
          build/tests/kernel/type1-map-bench $repeat \$a 2 \$b 2 \$c 2"
