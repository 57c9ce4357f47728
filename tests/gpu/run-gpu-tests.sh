#!/bin/bash
# The guest tool on a machine with NVIDIA GPUs (not in CI), on all GPUs and
# on the first 4 and 2 (CUDA_VISIBLE_DEVICES), --quick and default, with
# wall times; runs alternating with the independent references
# (nvbandwidth, cuda-samples' p2pBandwidthLatencyTest, built by
# build-references.sh) so results are ratios; NCCL (PyTorch's) loading the
# topology file the tool wrote; exit codes.
#
#   tests/gpu/run-gpu-tests.sh VERIFY REFDIR OUTDIR [SETS]
#
# VERIFY is a built gpup2p-verify; REFDIR holds the reference binaries;
# SETS is a list of GPU counts (default "8 4 2", counts above the machine's
# are left out; "1" on a one-GPU machine: P2P must come out untested, exit
# 3, and the host <-> device figures are compared with nvbandwidth's).
# OUTDIR receives, per count N, a folder gpusN/.
set -u
verify=$1
ref=$2
out=$3
sets=${4:-"8 4 2"}
here=$(cd "$(dirname "$0")" && pwd)
# Multicast stays off on shared machines.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
    NVSHMEM_DISABLE_NVLS=1
mkdir -p "$out"
total=$(nvidia-smi -L | grep -c '^GPU')
nvidia-smi topo -m > "$out/nvidia-smi-topo.txt" 2>&1
nvidia-smi -q | grep -E 'Driver Version|CUDA Version' | sort -u \
    >> "$out/nvidia-smi-topo.txt"

# timed, nvb_tests
# shellcheck source=tests/gpu/common.sh
. "$here/common.sh"

for n in $sets; do
    [ "$n" -le "$total" ] || continue
    dir=$out/gpus$n
    mkdir -p "$dir"
    printf 'run\texit\twall_s\n' > "$dir/runs.tsv"
    CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((n - 1)))
    export CUDA_VISIBLE_DEVICES
    timed verify-quick "$verify" --quick --skip-rdma --json
    # verify-N: --benchmark, nvbandwidth's method, for the ratios;
    # verify-validate: the default validation run.
    timed verify-validate "$verify" --skip-rdma --json
    timed verify-1 "$verify" --benchmark --skip-rdma --json \
        --nccl-topo "$dir/nccl-topo.xml"
    # shellcheck disable=SC2086
    # build-references.sh puts the boost library it links beside it.
    LD_LIBRARY_PATH=$ref${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        timed nvbandwidth "$ref/nvbandwidth" -j -t $nvb_tests
    timed verify-2 "$verify" --benchmark --skip-rdma --json
    if [ "$n" = "$total" ]; then
        timed p2pBandwidthLatencyTest "$ref/p2pBandwidthLatencyTest"
        timed verify-3 "$verify" --benchmark --skip-rdma --json
        timed torch-copy python3 "$here/ref_torch_copy.py" 512
    fi
    timed verify-text "$verify" --skip-rdma
    # Exit codes: untested RDMA is 3 unless skipped; a threshold no link
    # meets is 1.
    timed verify-rdma-untested "$verify" --quick --json
    timed verify-threshold "$verify" --quick --skip-rdma --json \
        --min-bandwidth 100000
    # NCCL with the tool's file: loaded (its log says so) and used.
    NCCL_TOPO_FILE=$dir/nccl-topo.xml NCCL_DEBUG=INFO \
        NCCL_DEBUG_SUBSYS=INIT,GRAPH,ENV \
        timed nccl-allreduce python3 "$here/nccl_allreduce.py"
    {
        echo "file: $dir/nccl-topo.xml"
        # NCCL logs to stdout unless told otherwise.
        cat "$dir/nccl-allreduce.out" "$dir/nccl-allreduce.err" 2>/dev/null |
            grep -c "Loading topology file $dir/nccl-topo.xml" |
            sed 's/^/loaded lines (one per rank): /'
        cat "$dir/nccl-allreduce.out" "$dir/nccl-allreduce.err" 2>/dev/null |
            grep -E "XML|Parse|opology|NVLS|WARN|via P2P|Connected all" |
            sed 's/^[^ ]* [^ ]* //' | sort | uniq -c | head -30
    } > "$dir/nccl-check.txt"
    # NCCL's topology dump without the file, with it, and with a control
    # copy: the dump must follow the file (nccl_topo_used.py says how).
    timed nccl-topo-used python3 "$here/nccl_topo_used.py" \
        "$dir/nccl-topo.xml" "$dir/nccl-topo-used"
    unset CUDA_VISIBLE_DEVICES
    if [ "$n" = 1 ]; then
        # No pair: the default run must say untested (3), never all good.
        awk -F'\t' '$1 == "verify-1" || $1 == "verify-2" {
            if ($2 == 3) verdict = " (untested, as it must)"
            else verdict = " WRONG: a one-GPU run must exit 3"
            print $1 ": exit " $2 verdict }' \
            "$dir/runs.tsv" > "$dir/one-gpu-check.txt"
    fi
    python3 "$here/compare-references.py" "$dir" > "$dir/ratios.md"
done
for d in "$out"/gpus*; do
    echo "== $d"
    cat "$d/runs.tsv" "$d/ratios.md"
    [ -f "$d/one-gpu-check.txt" ] && cat "$d/one-gpu-check.txt"
    head -3 "$d/nccl-check.txt"
    tail -1 "$d/nccl-allreduce.out"
done
# The device tool brings back few files: pack them.
tar czf /tmp/gpu-results.tar.gz -C "$out" . &&
    find "$out" -mindepth 1 -delete && mv /tmp/gpu-results.tar.gz "$out/"
