#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The README's setup on a Debian 12 root that has never seen the project:
# debootstrap (minbase) makes the root, the tree goes in as a fresh clone
# has it, and inside it (chroot) scripts/setup-debian.sh installs what is
# needed; then the build (-Werror) and the suites given as arguments run
# there (default: unit). Nothing of this machine's installed packages
# reaches the root, so a program setup forgets fails there.
#
#   tests/package/clean-root.sh [SUITE...]     (as root; needs the network
#                                                to this machine's Debian
#                                                mirror)
#
# GPUP2P_DEBIAN_MIRROR overrides the mirror, GPUP2P_CLEAN_ROOT the root's
# directory (kept afterwards when given; a temporary one is removed).
# Ends with "clean-root: N passed, N failed" and exits non-zero on any
# failure.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
# The Debian mirror this machine's own apt sources use for bookworm main
# (as scripts/setup-debian.sh finds it), so an operator's mirror works.
mirror=${GPUP2P_DEBIAN_MIRROR:-$(apt-get indextargets --no-release-info \
    --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' 'Identifier: Packages' \
    2>/dev/null | awk '$2 == "bookworm" && $3 == "main" { print $1; exit }')}
if [ -z "$mirror" ]; then
    echo "clean-root: no apt source of this machine serves Debian bookworm" \
         "main; set GPUP2P_DEBIAN_MIRROR" >&2
    exit 1
fi
suites=${*:-unit}
if [ "$(id -u)" -ne 0 ]; then
    echo "clean-root: run as root (debootstrap, chroot, mount)" >&2
    exit 1
fi
# The root's mounts live in a mount namespace of their own: nothing
# propagates to the machine's, and they go with the namespace however this
# script ends.
if [ -z "${GPUP2P_CLEAN_ROOT_NS:-}" ]; then
    exec unshare -m --propagation private \
        env GPUP2P_CLEAN_ROOT_NS=1 sh "$0" "$@"
fi
keep=${GPUP2P_CLEAN_ROOT:+1}
root=${GPUP2P_CLEAN_ROOT:-$(mktemp -d /var/tmp/gpup2p-clean-root.XXXXXX)}
case $root in
*[[:space:]]*)
    echo "clean-root: GPUP2P_CLEAN_ROOT '$root': a path with blanks" >&2
    exit 1 ;;
esac

mounted=""
cleanup() {
    for m in $mounted; do
        umount "$m" || echo "clean-root: $m stays mounted" >&2
    done
    # Never into a file system mounted below the root (/dev, /proc).
    [ -n "$keep" ] || rm -rf --one-file-system "$root"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start=$(date +%s)
if [ ! -x "$root/usr/bin/apt-get" ]; then
    debootstrap --variant=minbase bookworm "$root" "$mirror" \
        > "$root.debootstrap.log" 2>&1 || {
        tail -20 "$root.debootstrap.log" >&2
        echo "clean-root: debootstrap failed" >&2
        exit 1
    }
    rm -f "$root.debootstrap.log"
fi
echo "clean-root: bookworm root in $root ($(($(date +%s) - start)) s)"

# The tree as a clone has it: tracked files only.
rm -rf "$root/src"
mkdir -p "$root/src"
git -C "$top" ls-files -z | tar -C "$top" --null -T - -cf - |
    tar -C "$root/src" -xf -
if [ ! -f "$root/src/scripts/setup-debian.sh" ]; then
    echo "clean-root: copying the tree from $top failed (git ls-files)" >&2
    exit 1
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount_in_root() {     # mount_in_root DIR MOUNT-ARGS...
    dir=$root/$1; shift
    mount "$@" "$dir"
    mounted="$dir $mounted"
}
mount_in_root proc -t proc proc
mount_in_root sys -t sysfs sys
mount_in_root dev --bind /dev
mount_in_root dev/pts -t devpts pts
mount_in_root run -t tmpfs -o mode=1777 tmp
mount_in_root tmp -t tmpfs -o mode=1777 tmp

# Only the system's paths and a plain environment: nothing of this
# machine's (pyenv, CUDA, cargo) goes in.
in_root() {
    chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        DEBIAN_FRONTEND=noninteractive /bin/sh -c "cd /src && $1"
}
t=$(date +%s)
in_root "scripts/setup-debian.sh > /var/log/gpup2p-setup.log 2>&1" || {
    tail -30 "$root/var/log/gpup2p-setup.log" >&2
    echo "clean-root: scripts/setup-debian.sh failed" >&2
    exit 1
}
echo "clean-root: scripts/setup-debian.sh ($(($(date +%s) - t)) s)"
t=$(date +%s)
in_root "meson setup build -Dwerror=true > /var/log/gpup2p-build.log 2>&1 &&
         ninja -C build >> /var/log/gpup2p-build.log 2>&1" || {
    tail -30 "$root/var/log/gpup2p-build.log" >&2
    echo "clean-root: the build failed" >&2
    exit 1
}
echo "clean-root: build ($(($(date +%s) - t)) s)"

passed=0
failed=0
status=0
for s in $suites; do
    t=$(date +%s)
    log=$root/src/build/meson-logs/testlog.txt
    rm -f "$log"
    in_root "meson test -C build --suite $s --print-errorlogs" || status=1
    ok=$(sed -n 's/^Ok:[[:space:]]*\([0-9]*\).*/\1/p' "$log" | tail -n 1)
    bad=$(sed -n 's/^Fail:[[:space:]]*\([0-9]*\).*/\1/p' "$log" | tail -n 1)
    to=$(sed -n 's/^Timeout:[[:space:]]*\([0-9]*\).*/\1/p' "$log" |
         tail -n 1)
    if [ $((${ok:-0} + ${bad:-0} + ${to:-0})) -eq 0 ]; then
        # meson exits 0 for a suite with no tests: that is not a pass.
        echo "clean-root: suite $s ran no test" >&2
        status=1
        bad=1
    fi
    passed=$((passed + ${ok:-0}))
    failed=$((failed + ${bad:-0} + ${to:-0}))
    echo "clean-root: suite $s ($(($(date +%s) - t)) s)"
done
echo "clean-root: $passed passed, $failed failed"
[ "$failed" -eq 0 ] || status=1
exit $status
