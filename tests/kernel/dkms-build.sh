#!/bin/sh
# DKMS builds the module from kernel/ alone, as a package ships it: copy
# kernel/ (and nothing else) into a private DKMS tree, `dkms add` and
# `dkms build` it against installed kernel headers (KVER, else the
# virtual GPU host's kernel, else the newest headers installed).
# A missing dkms or missing headers fail the test.
set -eu
top=$1
command -v dkms >/dev/null || { echo "dkms-build: dkms is not installed" >&2; exit 1; }
kver=${KVER:-$(cat "${VHOST_CACHE:-$top/build/vhost}/kernel-version" 2>/dev/null ||
               ls -d /lib/modules/*/build 2>/dev/null | sort -V | tail -n 1 |
               cut -d/ -f4)}
[ -n "$kver" ] && [ -d "/lib/modules/$kver/build" ] ||
    { echo "dkms-build: no kernel headers for '${kver}' in /lib/modules" >&2; exit 1; }
name=$(sed -n 's/^PACKAGE_NAME="\(.*\)"/\1/p' "$top/kernel/dkms.conf")
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$top/kernel/dkms.conf")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src" "$tmp/tree"
cp -r "$top/kernel" "$tmp/src/$name-$ver"
(cd "$tmp/src/$name-$ver" && rm -f ./*.o ./*.ko ./*.mod* ./.*.cmd Module.symvers modules.order)
dkms add -m "$name" -v "$ver" --sourcetree "$tmp/src" --dkmstree "$tmp/tree"
if ! dkms build -m "$name" -v "$ver" -k "$kver" --sourcetree "$tmp/src" \
        --dkmstree "$tmp/tree"; then
    cat "$tmp/tree/$name/$ver/build/make.log" >&2 2>/dev/null || true
    exit 1
fi
ko=$(find "$tmp/tree/$name/$ver/$kver" -name "$name.ko*" | head -n 1)
[ -n "$ko" ] || { echo "dkms-build: dkms built no $name.ko for $kver" >&2; exit 1; }
echo "dkms-build: $name $ver built for $kver: $(basename "$ko")"
