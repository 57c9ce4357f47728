#!/bin/sh
# Build warning-free (-Werror) and run every test suite that runs here:
# unit tests plain and under ASan/UBSan, the libFuzzer targets, then the
# integration suite on the virtual GPU host. Ends with one line
# "N passed, N failed".
set -eu
cd "$(dirname "$0")/.."

passed=0
failed=0

count() {   # count BUILD_DIR SUITE: add meson's Ok/Fail figures
    log="$1/meson-logs/testlog.txt"
    ok=$(sed -n 's/^Ok:[[:space:]]*\([0-9]*\).*/\1/p' "$log" | tail -n 1)
    bad=$(sed -n 's/^Fail:[[:space:]]*\([0-9]*\).*/\1/p' "$log" | tail -n 1)
    to=$(sed -n 's/^Timeout:[[:space:]]*\([0-9]*\).*/\1/p' "$log" | tail -n 1)
    passed=$((passed + ${ok:-0}))
    failed=$((failed + ${bad:-0} + ${to:-0}))
}

suite() {   # suite BUILD_DIR SUITE [meson test args...]
    dir=$1; name=$2; shift 2
    if ! meson test -C "$dir" --suite "$name" --print-errorlogs "$@"; then
        status=1
        # The failed checks with their first lines of detail, here where
        # a log that keeps only its tail still has them (the whole: the
        # build's meson-logs/testlog.txt and build/vhost-runs/).
        echo "failed checks in $dir, suite $name:"
        grep -A 8 '^not ok' "$dir/meson-logs/testlog.txt" | head -n 80 || true
    fi
    count "$dir"
}

status=0
[ -d build ] || meson setup build -Dwerror=true
meson configure build -Dwerror=true
ninja -C build

[ -d build-asan ] || meson setup build-asan -Dwerror=true \
    -Db_sanitize=address,undefined -Db_lundef=false
ninja -C build-asan

suite build unit
suite build-asan unit
# libFuzzer targets (clang), a fixed time each: executions and crashes.
suite build fuzz
grep '^fuzz ' build/meson-logs/testlog.txt || true
if [ "${GPUP2P_SKIP_INTEGRATION:-0}" != 1 ]; then
    # Integration tests boot the virtual GPU host and run our QEMU in it.
    python3 tests/vhost/vhost.py prepare
    hw/vfio-gpu-p2p/build-qemu.sh
    kernel/build.sh
    # The Linux 7.x virtual host's kernel (cached per machine) and
    # Debian's QEMU 11.1, the judge of its iommufd path.
    tests/vhost/build-linux.sh 7.3 >/dev/null
    # Its variant with iommufd's emulated type1 container (from that build).
    tests/vhost/build-linux-emulated.sh 7.3 >/dev/null
    tests/vhost/stock-qemu-newer.sh >/dev/null
    suite build integration --num-processes 1
    # Each retry of a virtual host (a stalled boot, the outer emulator's
    # own crash) is counted and named, but those the runner's own test
    # injects; evidence: build/vhost-runs/.
    retries=$(grep -c '^# vhost retry \[counted\]' \
              build/meson-logs/testlog.txt || true)
    echo "virtual host retries: ${retries:-0}"
    grep '^# vhost retry \[counted\]' build/meson-logs/testlog.txt || true
    # A nested guest booted again after an early end (qemu_p2p_dma.sh).
    again=$(grep -c '^# nested guest booted again \[counted\]' \
            build/meson-logs/testlog.txt || true)
    echo "nested guests booted again: ${again:-0}"
    grep '^# nested guest booted again \[counted\]' \
        build/meson-logs/testlog.txt || true
    # A check that could not run is a TAP SKIP, which meson counts as
    # passed within its test: named here, so that it is never unseen.
    skips=$(grep -c '^ok [0-9]* - .* # SKIP ' build/meson-logs/testlog.txt ||
            true)
    echo "integration checks skipped: ${skips:-0}"
    grep '^ok [0-9]* - .* # SKIP ' build/meson-logs/testlog.txt || true
fi

# Builds the Debian packages and installs them in a throwaway overlay, and
# DKMS builds kernel/ alone (tests/kernel/dkms-build.sh).
suite build package

echo "$passed passed, $failed failed"
exit $status
