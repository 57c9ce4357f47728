#!/bin/sh
# Unpack rdma-core from Debian sid (the newer suites of scripts/apt-newer.sh)
# into $GPUP2P_CACHE/rdma-core-sid, once per version, and print the path of
# its rdma_topo: NVIDIA's GPU-NIC ACS policy, which the GPUDirect RDMA pair
# test (tests/unit/test_rdma_topo.py) takes as its judge. The package is
# only unpacked (dpkg-deb -x), never installed:
#
#   scripts/rdma-topo.sh   ->  /var/cache/gpup2p/rdma-core-sid/usr/sbin/rdma_topo
#
# A stamp file records the version; the tree is unpacked beside and renamed
# into place, so a reader never sees half of one.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache=${GPUP2P_CACHE:-/var/cache/gpup2p}
tree=$cache/rdma-core-sid
version=$("$here/apt-newer.sh" apt-cache madison rdma-core 2>/dev/null |
          awk -F'|' '$3 ~ / sid\// { gsub(/ /, "", $2); print $2; exit }')
if [ -z "$version" ]; then
    echo "rdma-topo.sh: no rdma-core in sid (scripts/apt-newer.sh update" \
         "first; scripts/setup-debian.sh adds sid to its configuration)" >&2
    exit 1
fi
if [ -f "$tree/.gpup2p-version" ] &&
   [ "$(cat "$tree/.gpup2p-version")" = "$version" ]; then
    echo "$tree/usr/sbin/rdma_topo"
    exit 0
fi
mkdir -p "$cache"
work=$(mktemp -d "$cache/.rdma-core-sid.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$work" && "$here/apt-newer.sh" download -q "rdma-core=$version" >&2)
dpkg-deb -x "$work"/rdma-core_*.deb "$work/tree"
if [ ! -f "$work/tree/usr/sbin/rdma_topo" ]; then
    echo "rdma-topo.sh: rdma-core $version has no usr/sbin/rdma_topo" >&2
    exit 1
fi
echo "$version" > "$work/tree/.gpup2p-version"
rm -rf "$tree.old"
[ ! -e "$tree" ] || mv "$tree" "$tree.old"
mv "$work/tree" "$tree"
rm -rf "$tree.old"
echo "$tree/usr/sbin/rdma_topo"
