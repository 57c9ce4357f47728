#!/bin/sh
# Build one libFuzzer target with clang (ASan and UBSan on) from the core
# library's sources, run it for a fixed time on a copy of its committed
# corpus, and report executions and crashes. Fails when clang is missing,
# the build fails, or the fuzzer finds a crash.
#
#   run-fuzz.sh TARGET SECONDS OUTDIR SOURCE...
set -u
target=$1 seconds=$2 out=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

if ! command -v clang > /dev/null; then
    echo "run-fuzz: clang is missing (scripts/setup-debian.sh installs it)" >&2
    exit 1
fi
mkdir -p "$out"
# The include directories of the top meson.build's 'inc', where present.
incs=
for d in include kernel/include lib; do
    [ -d "$top/$d" ] && incs="$incs -I$top/$d"
done
# libxml2 for the libvirt target only: a build without libvirt may lack it.
pkgs="glib-2.0 json-glib-1.0"
[ "$target" != fuzz-libvirt ] || pkgs="$pkgs libxml-2.0"
# shellcheck disable=SC2046,SC2086
if ! clang -g -O1 -fsanitize=fuzzer,address,undefined \
        -fno-sanitize-recover=undefined $incs \
        -DGP_SOURCE_ROOT="\"$top\"" \
        $(pkg-config --cflags $pkgs) \
        "$here/$target.c" "$@" \
        $(pkg-config --libs $pkgs) \
        -o "$out/$target"; then
    echo "run-fuzz: building $target failed" >&2
    exit 1
fi
corpus=$out/$target-corpus
rm -rf "$corpus"
cp -r "$here/corpus/$target" "$corpus"
log=$out/$target.log
"$out/$target" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$out/$target-" -close_fd_mask=1 "$corpus" > "$log" 2>&1
rc=$?
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
crashes=$(ls "$out/$target-"crash-* "$out/$target-"leak-* \
          "$out/$target-"timeout-* "$out/$target-"oom-* 2>/dev/null | wc -l)
echo "fuzz $target: ${execs:-0} executions in $seconds s, $crashes crashes," \
     "corpus $(ls "$corpus" | wc -l) inputs"
if [ $rc -ne 0 ] || [ "$crashes" -ne 0 ] || [ -z "$execs" ]; then
    tail -n 40 "$log"
    exit 1
fi
