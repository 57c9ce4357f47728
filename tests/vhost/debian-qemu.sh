#!/bin/sh
# A Debian 13 (trixie) QEMU binary, run with its own libraries: a minimal
# trixie root (debootstrap) with qemu-system-x86=VERSION from SUITE,
# cached once per machine under $GPUP2P_CACHE (/var/cache/gpup2p), and a
# wrapper at WRAPPER that starts it through that root's dynamic loader with
# its firmware first on the search path. Nothing is installed on this
# machine itself. Prints the wrapper's path.
#
#   tests/vhost/debian-qemu.sh SUITE VERSION WRAPPER
#
# Callers: stock-qemu-newer.sh (QEMU 11.1, the iommufd judge) and
# outer-qemu.sh (QEMU 10.0.13, the virtual host's emulator).
set -eu
[ $# -eq 3 ] || { echo "usage: debian-qemu.sh SUITE VERSION WRAPPER" >&2
                  exit 64; }
suite=$1 version=$2 wrapper=$3
cache=${GPUP2P_CACHE:-/var/cache/gpup2p}
root=$cache/trixie-qemu-$(echo "$version" | tr ':~+' '___')

if [ ! -x "$root/usr/bin/qemu-system-x86_64" ]; then
    mirror=$(apt-get indextargets --no-release-info \
                 --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' \
                 'Identifier: Packages' 2>/dev/null |
             awk '$2 == "bookworm" && $3 == "main" { print $1; exit }')
    [ -n "$mirror" ] || { echo "debian-qemu: no Debian mirror in" \
                               "this machine's apt sources" >&2; exit 1; }
    mkdir -p "$cache"
    work=$(mktemp -d "$cache/.trixie-qemu.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    debootstrap --variant=minbase trixie "$work/root" "$mirror" >&2
    if [ "$suite" != trixie ]; then
        echo "deb $mirror $suite main" \
            > "$work/root/etc/apt/sources.list.d/$suite.list"
    fi
    chroot "$work/root" apt-get update -q >&2
    # -t: its dependencies (qemu-system-common, -data, seabios) must come
    # from the same suite; apt would take older ones.
    chroot "$work/root" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends -t "$suite" \
        "qemu-system-x86=$version" >&2
    rm -rf "$root"
    mv "$work/root" "$root"
fi
mkdir -p "$(dirname "$wrapper")"
cat > "$wrapper.tmp" <<WRAP
#!/bin/sh
# Debian's qemu-system-x86 $version from $root
# Its modules (virtio-gpu among them) from that root, not this machine's.
QEMU_MODULE_DIR=$root/usr/lib/x86_64-linux-gnu/qemu
export QEMU_MODULE_DIR
exec $root/lib64/ld-linux-x86-64.so.2 \\
    --library-path $root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu \\
    $root/usr/bin/qemu-system-x86_64 \\
    -L $root/usr/share/qemu -L $root/usr/share/seabios "\$@"
WRAP
chmod 0755 "$wrapper.tmp"
mv "$wrapper.tmp" "$wrapper"
echo "$wrapper"
