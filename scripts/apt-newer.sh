#!/bin/sh
# apt-get on the project's own configuration for newer Debian suites
# (trixie-backports: Linux 7.x and QEMU 11.x sources), which
# scripts/setup-debian.sh writes. The host's /etc/apt is never changed by
# it, so nothing from a newer suite is installed on this machine:
#
#   scripts/apt-newer.sh update
#   scripts/apt-newer.sh apt-cache policy linux-source-7.3
#   scripts/apt-newer.sh download linux-source-7.3
#   scripts/apt-newer.sh source --download-only qemu=1:11.1.3+ds-1~bpo13+1
set -eu
newer=${GPUP2P_APT_NEWER:-/var/lib/gpup2p/apt-newer}
if [ ! -f "$newer/etc/sources.list.d/trixie-backports.sources" ]; then
    echo "apt-newer.sh: $newer holds no apt configuration;" \
         "run scripts/setup-debian.sh first" >&2
    exit 1
fi
tool=apt-get
case "${1:-}" in apt-get|apt-cache) tool=$1; shift ;; esac
exec "$tool" -o Dir::Etc="$newer/etc" -o Dir::State="$newer/state" \
     -o Dir::Cache="$newer/cache" "$@"
