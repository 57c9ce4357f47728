#!/bin/sh
# Pack a built gpup2p-verify with the shared libraries it links (GLib,
# json-glib, ...) and this machine's dynamic loader into one folder, for a
# GPU machine that lacks them. The folder's `gpup2p-verify` wrapper runs
# the tool through the packed loader, so the GPU machine's own libc does
# not matter; libcuda, NVML and libibverbs stay the GPU machine's (the tool
# dlopens them by name from the system's paths).
#
#   tests/gpu/pack-verify.sh BUILT_VERIFY OUTDIR
set -eu
bin=$1
out=$2
mkdir -p "$out/lib"
cp "$bin" "$out/lib/gpup2p-verify.bin"
loader=
for lib in $(ldd "$bin" | awk '/=> \// { print $3 } /^\t\/.*ld-linux/ { print $1 }'); do
    case $lib in
    */ld-linux*) loader=$(basename "$lib") ;;
    esac
    cp -L "$lib" "$out/lib/"
done
[ -n "$loader" ] || { echo "pack-verify.sh: no dynamic loader in ldd $bin" >&2; exit 1; }
cat > "$out/gpup2p-verify" <<WRAP
#!/bin/sh
# The packed tool (tests/gpu/pack-verify.sh): its own loader and libraries,
# the machine's CUDA driver, NVML and verbs found as usual.
here=\$(cd "\$(dirname "\$0")" && pwd)
exec "\$here/lib/$loader" --library-path \
    "\$here/lib:/usr/lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu:/usr/lib64" \
    "\$here/lib/gpup2p-verify.bin" "\$@"
WRAP
chmod +x "$out/gpup2p-verify"
