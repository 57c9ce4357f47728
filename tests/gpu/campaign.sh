#!/bin/bash
# Issue 34's record for one machine kind (not in CI): the guest tool's three
# modes alternating with nvbandwidth and cuda-samples'
# p2pBandwidthLatencyTest, what persistence mode changes, NCCL's own
# topology dump with and without the tool's topology file, the
# CUDA_VISIBLE_DEVICES cases and the first two GPUs as a subset.
#
#   tests/gpu/campaign.sh VERIFY REFDIR OUTDIR [PART]
#
# VERIFY is a gpup2p-verify (build/gpu-pack/gpup2p-verify of
# pack-verify.sh); REFDIR the references of build-references.sh. PART:
#   modes  ROUNDS (3) rounds of: default (validation) run, --quick,
#          nvbandwidth, --benchmark, p2pBandwidthLatencyTest; then the
#          default run as text (about 210 s on four H100s, 200 on H200s)
#   rest   CUDA_VISIBLE_DEVICES=0 (must exit 3, the others "hidden"); the
#          first two GPUs (default, --quick, nvbandwidth, --benchmark,
#          p2pBandwidthLatencyTest); NCCL's dump without and with the
#          tool's file and their diff; persistence mode (about 110 s)
#   all    both, modes first (about 320 s)
#
# OUTDIR receives runs-PART.tsv (every command: exit code, wall seconds;
# "skipped" where the time budget ran out), machine-PART.txt,
# ratios-PART.md (compare-references.py on the modes' runs), summary-PART.md
# (campaign-summary.py) and raw-PART.tar.gz: every run's output, made from
# inside OUTDIR. campaign-summary.py OUTDIR reads all of them, one part or
# both.
#
# Environment: CAMPAIGN_BUDGET_S (540): seconds from the start after which
# no run begins, each run's timeout cut to what is left, so the archive is
# made inside a 600 s device command; CAMPAIGN_RUN_LIMIT_S (180): the
# longest any one run may take; CAMPAIGN_ROUNDS (3); CAMPAIGN_PM_OFF=1:
# where persistence mode is already on everywhere, also turn it off for
# three default runs and turn it back on (off by default: it changes the
# lent machine's settings for a minute).
set -u
if [ $# -lt 3 ]; then
    sed -n '8p' "$0" >&2
    exit 64
fi
verify=$1
ref=$2
part=${4:-all}
case $part in
modes | rest | all) ;;
*)
    echo "campaign.sh: PART is modes, rest or all, not '$part'" >&2
    exit 64
    ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$3" || exit 1
out=$(cd "$3" && pwd)
rounds=${CAMPAIGN_ROUNDS:-3}
budget=${CAMPAIGN_BUDGET_S:-540}
run_limit=${CAMPAIGN_RUN_LIMIT_S:-180}
start=$(date +%s)
# Multicast stays off on shared machines (also in NCCL's child processes).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
    NVSHMEM_DISABLE_NVLS=1

# timed (into $dir, within $timed_limit), nvb_tests
dir=$out/raw-$part
rm -rf "$dir"
mkdir -p "$dir"
printf 'run\texit\twall_s\n' > "$dir/runs.tsv"
# shellcheck source=tests/gpu/common.sh
. "$here/common.sh"

# run NAME CMD...: timed, unless the budget is spent ("skipped", no
# output); no run may end later than the budget.
run() {
    local left=$((budget - ($(date +%s) - start)))
    if [ "$left" -lt 15 ]; then
        printf '%s\tskipped\t0\n' "$1" >> "$dir/runs.tsv"
        return
    fi
    timed_limit=$((left < run_limit ? left : run_limit))
    timed "$@"
}

# The last run's exit code.
last_rc() {
    tail -n 1 "$dir/runs.tsv" | cut -f 2
}

nvb() {
    LD_LIBRARY_PATH=$ref${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} run "$@"
}

pm_state() {
    nvidia-smi --query-gpu=index,persistence_mode --format=csv,noheader \
        2>&1
}

{
    echo "== nvidia-smi -L"
    nvidia-smi -L 2>&1
    echo "== nvidia-smi topo -m"
    nvidia-smi topo -m 2>&1
    echo "== driver, CUDA, persistence mode"
    nvidia-smi -q 2>&1 | grep -E 'Driver Version|CUDA Version|Persistence Mode' |
        sort | uniq -c
    echo "== gpup2p-verify --version"
    "$verify" --version 2>&1
    echo "== PyTorch, its NCCL"
    python3 -c 'import torch; print(torch.__version__,
        ".".join(map(str, torch.cuda.nccl.version())))' 2>&1
    echo "== part $part, CAMPAIGN_ROUNDS=$rounds CAMPAIGN_BUDGET_S=$budget"
} > "$out/machine-$part.txt"

modes() {
    local r s
    for r in $(seq 1 "$rounds"); do
        # The first references keep the names compare-references.py reads.
        s=-$r
        [ "$r" = 1 ] && s=
        run "validate-$r" "$verify" --skip-rdma --json
        run "quick-$r" "$verify" --quick --skip-rdma --json
        # shellcheck disable=SC2086
        nvb "nvbandwidth$s" "$ref/nvbandwidth" -j -t $nvb_tests
        run "verify-$r" "$verify" --benchmark --skip-rdma --json
        run "p2pBandwidthLatencyTest$s" "$ref/p2pBandwidthLatencyTest"
    done
    run validate-text "$verify" --skip-rdma
}

visible_devices() {
    # One GPU visible: nothing to pair, exit 3; the others NVML sees are
    # "hidden", not failed.
    CUDA_VISIBLE_DEVICES=0 run cvd0-validate "$verify" --skip-rdma --json
    CUDA_VISIBLE_DEVICES=0 run cvd0-quick "$verify" --quick --skip-rdma \
        --json
    # The first two GPUs as a machine of two (the tool has no option of
    # its own to pick GPUs).
    CUDA_VISIBLE_DEVICES=0,1 run sub2-validate "$verify" --skip-rdma --json
    CUDA_VISIBLE_DEVICES=0,1 run sub2-quick "$verify" --quick --skip-rdma \
        --json
    # shellcheck disable=SC2086
    CUDA_VISIBLE_DEVICES=0,1 nvb sub2-nvbandwidth "$ref/nvbandwidth" -j \
        -t $nvb_tests
    CUDA_VISIBLE_DEVICES=0,1 run sub2-verify "$verify" --benchmark \
        --skip-rdma --json
    CUDA_VISIBLE_DEVICES=0,1 run sub2-p2pBandwidthLatencyTest \
        "$ref/p2pBandwidthLatencyTest"
}

nccl() {
    # The file from a default run, then NCCL's dump without it, with it
    # and with a control copy (nccl_topo_used.py), each an all-reduce over
    # every GPU whose result is in nccl-topo-used/nccl-*.log.
    run nccl-validate "$verify" --skip-rdma --json \
        --nccl-topo "$dir/nccl-topo.xml"
    run nccl-topo-used python3 "$here/nccl_topo_used.py" \
        "$dir/nccl-topo.xml" "$dir/nccl-topo-used"
    local d=$dir/nccl-topo-used
    if [ -f "$d/dump-without.xml" ] && [ -f "$d/dump-with.xml" ]; then
        diff -u "$d/dump-without.xml" "$d/dump-with.xml" > "$dir/nccl-dump.diff"
        echo "diff exit $?" >> "$dir/nccl-dump.diff.rc"
    fi
}

# Persistence mode: ask for TARGET (1 on, 0 off) on every GPU; where that
# worked, three default runs (LABEL-N), then every GPU put back as it was
# before. pm-*.txt hold the states; runs.tsv the nvidia-smi exit codes.
pm_before=
pm_restore() {
    [ -n "$pm_before" ] || return 0
    local idx state now
    for idx in $(printf '%s\n' "$pm_before" | cut -d, -f1); do
        state=$(printf '%s\n' "$pm_before" | awk -F', ' -v i="$idx" \
            '$1 == i { print $2 }')
        now=$(nvidia-smi -i "$idx" --query-gpu=persistence_mode \
            --format=csv,noheader 2>&1)
        [ "$now" = "$state" ] && continue
        case $state in
        Enabled) timed_limit=30 timed "pm-restore-$1-$idx" nvidia-smi -i "$idx" -pm 1 ;;
        Disabled) timed_limit=30 timed "pm-restore-$1-$idx" nvidia-smi -i "$idx" -pm 0 ;;
        esac
    done
    pm_state > "$dir/pm-restored-$1.txt"
    pm_before=
}

pm_try() {
    local target=$1 label=$2 want r
    want=Enabled
    [ "$target" = 0 ] && want=Disabled
    pm_before=$(pm_state)
    printf '%s\n' "$pm_before" > "$dir/pm-before-$label.txt"
    # Put back as it was also when the command is stopped.
    # shellcheck disable=SC2064
    trap "pm_restore $label" EXIT
    # shellcheck disable=SC2064
    trap "pm_restore $label; exit 143" TERM INT
    run "pm-set-$label" nvidia-smi -pm "$target"
    pm_state > "$dir/pm-after-$label.txt"
    if [ "$(last_rc)" = 0 ] && [ -s "$dir/pm-after-$label.txt" ] &&
        ! grep -qv ", $want\$" "$dir/pm-after-$label.txt"; then
        for r in 1 2 3; do
            run "validate-$label-$r" "$verify" --skip-rdma --json
        done
    fi
    pm_restore "$label"
    trap - EXIT TERM INT
}

persistence() {
    pm_state > "$dir/pm-start.txt"
    # On: what the issue asks (a no-op where it is on already).
    pm_try 1 pm
    # Off as well, only when asked and only where it was on everywhere
    # (else the default runs of the modes part already ran without it).
    if [ "${CAMPAIGN_PM_OFF:-0}" = 1 ] &&
        ! grep -qv ', Enabled$' "$dir/pm-start.txt"; then
        pm_try 0 pmoff
    fi
}

case $part in
modes) modes ;;
rest) visible_devices; nccl; persistence ;;
all) modes; visible_devices; nccl; persistence ;;
esac

cp "$dir/runs.tsv" "$out/runs-$part.tsv"
python3 "$here/compare-references.py" "$dir" > "$out/ratios-$part.md" 2>&1
python3 "$here/campaign-summary.py" "$out" > "$out/summary-$part.md" 2>&1
cat "$out/runs-$part.tsv" "$out/summary-$part.md"
# The device brings back few files: the raw outputs in one archive, made
# from inside OUTDIR so that nothing lands anywhere else.
(cd "$out" && tar czf "raw-$part.tar.gz" "raw-$part" && rm -rf "raw-$part")
