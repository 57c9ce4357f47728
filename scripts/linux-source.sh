#!/bin/sh
# Unpack Debian's linux-source-SERIES (from the newer suites of
# scripts/apt-newer.sh) into $GPUP2P_CACHE/linux-source-SERIES, once per
# version, and print that directory:
#
#   scripts/linux-source.sh 7.3      ->  /var/cache/gpup2p/linux-source-7.3
#
# A stamp file records the package version; a newer version replaces the
# tree. The tree is unpacked beside and renamed into place, so a reader
# never sees half of one.
set -eu
series=${1:?usage: linux-source.sh SERIES (e.g. 7.3)}
here=$(cd "$(dirname "$0")" && pwd)
cache=${GPUP2P_CACHE:-/var/cache/gpup2p}
pkg=linux-source-$series
tree=$cache/$pkg
version=$("$here/apt-newer.sh" apt-cache policy "$pkg" 2>/dev/null |
          sed -n 's/^  Candidate: //p')
if [ -z "$version" ] || [ "$version" = "(none)" ]; then
    echo "linux-source.sh: no package $pkg in the newer suites" \
         "(scripts/apt-newer.sh update first)" >&2
    exit 1
fi
if [ -f "$tree/.gpup2p-version" ] &&
   [ "$(cat "$tree/.gpup2p-version")" = "$version" ]; then
    echo "$tree"
    exit 0
fi
mkdir -p "$cache"
work=$(mktemp -d "$cache/.$pkg.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$work" && "$here/apt-newer.sh" download -q "$pkg=$version" >&2)
deb=$(ls "$work"/*.deb)
dpkg-deb --fsys-tarfile "$deb" |
    tar -xOf - "./usr/src/$pkg.tar.xz" | tar -xJf - -C "$work"
rm -f "$deb"
echo "$version" > "$work/$pkg/.gpup2p-version"
rm -rf "$tree.old"
[ ! -e "$tree" ] || mv "$tree" "$tree.old"
mv "$work/$pkg" "$tree"
rm -rf "$tree.old"
echo "$tree"
