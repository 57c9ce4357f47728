#!/bin/sh
# The guest tool on a machine with NVIDIA GPUs (not in CI): the whole tool,
# its --quick mode, and beside it in the same run the reference
# measurements (cudaMemcpyPeer loop, PyTorch copy) so results are ratios.
#
#   tests/gpu/run-gpu-tests.sh GPUP2P_VERIFY OUTDIR
#
# GPUP2P_VERIFY is a built gpup2p-verify; OUTDIR receives the JSON and logs.
set -u
verify=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

nvidia-smi topo -m > "$out/nvidia-smi-topo.txt" 2>&1
nvcc -O2 -arch=sm_90 -o "$out/ref_memcpy_peer" "$here/ref_memcpy_peer.cu" ||
    echo "nvcc failed" >&2

t0=$(date +%s.%N)
"$verify" --json --nccl-topo "$out/nccl-topo.xml" > "$out/verify.json"
echo "verify exit $?" > "$out/exit-codes.txt"
t1=$(date +%s.%N)
"$verify" > "$out/verify.txt"
t2=$(date +%s.%N)
"$verify" --quick --json > "$out/verify-quick.json"
echo "quick exit $?" >> "$out/exit-codes.txt"
t3=$(date +%s.%N)
"$out/ref_memcpy_peer" 512 > "$out/ref-memcpy-peer.jsonl"
python3 "$here/ref_torch_copy.py" 512 > "$out/ref-torch.jsonl"
# A broken threshold must fail with exit 1 (P2P broken).
"$verify" --quick --min-bandwidth 100000 --json > "$out/verify-threshold.json"
echo "threshold exit $?" >> "$out/exit-codes.txt"
python3 - "$t0" "$t1" "$t2" "$t3" > "$out/wall.json" <<'PY'
import json, sys
t = [float(x) for x in sys.argv[1:]]
print(json.dumps({"default_json_s": t[1] - t[0], "default_text_s": t[2] - t[1],
                  "quick_s": t[3] - t[2]}))
PY
cat "$out/verify.txt" "$out/exit-codes.txt" "$out/wall.json" \
    "$out/ref-memcpy-peer.jsonl" "$out/ref-torch.jsonl"
rm -f "$out/ref_memcpy_peer"
# The device tool brings back few files: pack them.
tar czf /tmp/gpu-results.tar.gz -C "$out" . &&
    find "$out" -mindepth 1 -delete && mv /tmp/gpu-results.tar.gz "$out/"
