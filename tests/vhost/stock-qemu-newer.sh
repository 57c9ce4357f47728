#!/bin/sh
# Debian's stock QEMU of trixie-backports (11.1: BARs into an iommufd IOAS
# as dma-bufs), as the judge of the Linux 7.x virtual host's iommufd path
# where our QEMU (10.0) has no dma-buf path; trixie's binary in a trixie
# root of its own (debian-qemu.sh). Prints the wrapper's path.
#
#   tests/vhost/stock-qemu-newer.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
exec "$here/debian-qemu.sh" trixie-backports 1:11.1.3+ds-1~bpo13+1 \
    "$top/build/qemu-stock-newer/qemu-system-x86_64"
