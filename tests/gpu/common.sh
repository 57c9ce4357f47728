# shellcheck shell=bash
# What the GPU scripts share (sourced by run-gpu-tests.sh and
# modes-bench.sh).

# Run and time one command: timed NAME CMD... -> $dir/NAME.out (and
# NAME.err where not empty), exit and wall time appended to $dir/runs.tsv;
# the caller sets dir, and may set timed_limit (seconds, default 600).
# shellcheck disable=SC2154
timed() {
    local name=$1
    shift
    local t0 t1 rc
    t0=$(date +%s.%N)
    # 600: long enough for a default run that checks every copy on 8 GPUs.
    timeout "${timed_limit:-600}" "$@" > "$dir/$name.out" 2> "$dir/$name.err"
    rc=$?
    t1=$(date +%s.%N)
    awk -v n="$name" -v rc="$rc" -v a="$t0" -v b="$t1" \
        'BEGIN { printf "%s\t%s\t%.2f\n", n, rc, b - a }' >> "$dir/runs.tsv"
    [ -s "$dir/$name.err" ] || rm -f "$dir/$name.err"
}

# nvbandwidth's test cases that have a counterpart in the tool.
# shellcheck disable=SC2034
nvb_tests="device_to_device_memcpy_write_ce device_to_device_memcpy_read_ce
device_to_device_bidirectional_memcpy_write_ce device_to_device_memcpy_write_sm
device_to_device_memcpy_read_sm device_to_device_latency_sm
all_to_one_write_ce one_to_all_write_ce
host_to_device_memcpy_ce device_to_host_memcpy_ce"
