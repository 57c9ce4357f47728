#!/bin/sh
# Debian's stock QEMU of trixie-backports (11.1: BARs into an iommufd IOAS
# as dma-bufs), as the judge of the Linux 7.x virtual host's iommufd path
# where our QEMU (10.0) has no dma-buf path. It is trixie's binary, so it
# runs with trixie's libraries: a minimal trixie root (debootstrap) with
# qemu-system-x86 from trixie-backports, cached once per machine under
# $GPUP2P_CACHE (/var/cache/gpup2p), and a wrapper that starts it through
# that root's dynamic loader with its firmware first on the search path.
# Nothing is installed on this machine itself.
#
#   tests/vhost/stock-qemu-newer.sh     prints the wrapper's path
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cache=${GPUP2P_CACHE:-/var/cache/gpup2p}
version=1:11.1.3+ds-1~bpo13+1
root=$cache/trixie-qemu-$(echo "$version" | tr ':~+' '___')
wrapper=$top/build/qemu-stock-newer/qemu-system-x86_64

if [ ! -x "$root/usr/bin/qemu-system-x86_64" ]; then
    mirror=$(apt-get indextargets --no-release-info \
                 --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' \
                 'Identifier: Packages' 2>/dev/null |
             awk '$2 == "bookworm" && $3 == "main" { print $1; exit }')
    [ -n "$mirror" ] || { echo "stock-qemu-newer: no Debian mirror in" \
                               "this machine's apt sources" >&2; exit 1; }
    mkdir -p "$cache"
    work=$(mktemp -d "$cache/.trixie-qemu.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    debootstrap --variant=minbase trixie "$work/root" "$mirror" >&2
    echo "deb $mirror trixie-backports main" \
        > "$work/root/etc/apt/sources.list.d/trixie-backports.list"
    chroot "$work/root" apt-get update -q >&2
    # -t: its dependencies (qemu-system-common, -data, seabios) must come
    # from trixie-backports too; apt would take trixie's older ones.
    chroot "$work/root" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends -t trixie-backports \
        "qemu-system-x86=$version" >&2
    rm -rf "$root"
    mv "$work/root" "$root"
fi
mkdir -p "$(dirname "$wrapper")"
cat > "$wrapper.tmp" <<EOF
#!/bin/sh
# Debian's qemu-system-x86 $version from $root
exec $root/lib64/ld-linux-x86-64.so.2 \\
    --library-path $root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu \\
    $root/usr/bin/qemu-system-x86_64 \\
    -L $root/usr/share/qemu -L $root/usr/share/seabios "\$@"
EOF
chmod 0755 "$wrapper.tmp"
mv "$wrapper.tmp" "$wrapper"
echo "$wrapper"
