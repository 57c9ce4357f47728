#!/bin/sh
# The virtual GPU host's emulator: Debian 13's QEMU 10.0.13 (trixie), the
# series of bookworm-backports' 10.0.2 with the stable fixes to TCG's I/O
# and translation-block paths that bookworm-backports' 10.0.2 lacks
# (docs/testbed.md, "Reliability"). trixie's binary in a trixie root of
# its own (debian-qemu.sh); vhost.py runs the virtual host on the wrapper
# this prints.
#
#   tests/vhost/outer-qemu.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
exec "$here/debian-qemu.sh" trixie 1:10.0.13+ds-0+deb13u1 \
    "$top/build/qemu-outer/qemu-system-x86_64"
