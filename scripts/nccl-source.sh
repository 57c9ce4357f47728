#!/bin/sh
# NCCL's source as Debian sid packages it (nvidia-nccl, contrib), unpacked
# into $GPUP2P_CACHE/nccl-source once per version; prints the tree's path.
# Only its upstream tarball is fetched, checked against the SHA-256 that
# apt's signed Sources index gives, and unpacked: nothing is built or
# installed here. tests/integration/test_mirror.py compiles NCCL's own
# topology reader (src/graph/xml.cc) from it to judge the NCCL file the
# host writes for a mirrored guest.
#
#   scripts/nccl-source.sh   ->  /var/cache/gpup2p/nccl-source
#
# GPUP2P_NCCL_SOURCE=DIR names an unpacked tree instead (offline).
set -eu
if [ -n "${GPUP2P_NCCL_SOURCE:-}" ]; then
    if [ ! -f "$GPUP2P_NCCL_SOURCE/src/graph/xml.cc" ]; then
        echo "nccl-source.sh: GPUP2P_NCCL_SOURCE=$GPUP2P_NCCL_SOURCE has no" \
             "src/graph/xml.cc" >&2
        exit 1
    fi
    printf '%s\n' "$GPUP2P_NCCL_SOURCE"
    exit 0
fi
here=$(cd "$(dirname "$0")" && pwd)
cache=${GPUP2P_CACHE:-/var/cache/gpup2p}
tree=$cache/nccl-source
mkdir -p "$cache"
# One run at a time per cache: the swap below is not atomic.
exec 9> "$cache/.nccl-source.lock"
flock 9
work=$(mktemp -d "$cache/.nccl-source.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP
# apt fetches as its own user (_apt), which must be able to write here.
if [ "$(id -u)" -eq 0 ] && id _apt > /dev/null 2>&1; then
    chown _apt "$work"
fi
# In an empty directory: apt skips files it finds in the current one.
# One line: 'URI' NAME SIZE SHA256:HEX, for the upstream tarball.
rc=0
(cd "$work" && "$here/apt-newer.sh" source --print-uris -q nvidia-nccl) \
    > "$work/uris" 2> "$work/apt.err" || rc=$?
orig=$(awk '$2 ~ /\.orig\.tar\./ { print; exit }' "$work/uris")
if [ "$rc" -ne 0 ] || [ -z "$orig" ]; then
    cat "$work/apt.err" >&2
    echo "nccl-source.sh: no nvidia-nccl source in sid contrib (apt exit" \
         "$rc); scripts/setup-debian.sh adds it, then scripts/apt-newer.sh" \
         "update" >&2
    exit 1
fi
uri=$(printf '%s\n' "$orig" | awk '{ gsub(/\047/, "", $1); print $1 }')
name=$(printf '%s\n' "$orig" | awk '{ print $2 }')
hash=$(printf '%s\n' "$orig" | awk '{ print $4 }')
case "$hash" in
SHA256:????????????????????????????????????????????????????????????????) ;;
*)
    echo "nccl-source.sh: apt gives no SHA-256 for $name ($hash)" >&2
    exit 1
    ;;
esac
if [ -f "$tree/.gpup2p-orig" ] &&
   [ "$(cat "$tree/.gpup2p-orig")" = "$name $hash" ]; then
    printf '%s\n' "$tree"
    exit 0
fi
# apt-helper checks the hash; a mismatch leaves no file.
if ! /usr/lib/apt/apt-helper -q download-file "$uri" "$work/$name" \
        "$hash" >&2; then
    echo "nccl-source.sh: $name could not be fetched; scripts/apt-newer.sh" \
         "update, if sid has moved on" >&2
    exit 1
fi
mkdir "$work/tree"
tar -C "$work/tree" --strip-components=1 -xf "$work/$name"
if [ ! -f "$work/tree/src/graph/xml.cc" ]; then
    echo "nccl-source.sh: $name has no src/graph/xml.cc" >&2
    exit 1
fi
printf '%s\n' "$name $hash" > "$work/tree/.gpup2p-orig"
rm -rf "$tree.old"
[ ! -e "$tree" ] || mv "$tree" "$tree.old"
mv "$work/tree" "$tree"
rm -rf "$tree.old"
printf '%s\n' "$tree"
