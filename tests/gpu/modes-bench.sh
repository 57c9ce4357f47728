#!/bin/bash
# The guest tool's two modes on a machine with NVIDIA GPUs (not in CI):
# the default validation run, --quick and --benchmark, each ROUNDS times,
# alternating with nvbandwidth, so that --benchmark's figures are ratios
# to nvbandwidth's in the same session and every run's wall time and
# phases are on record.
#
#   tests/gpu/modes-bench.sh VERIFY REFDIR OUTDIR [ROUNDS]
#
# OUTDIR gets runs.tsv (run, exit, wall seconds), each run's output,
# phases.tsv (the tool's own phase seconds per run) and ratios.md
# (compare-references.py: the --benchmark runs, verify-N, against the
# first nvbandwidth run).
set -u
verify=$1
ref=$2
out=$3
rounds=${4:-3}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
nvidia-smi topo -m > "$out/nvidia-smi-topo.txt" 2>&1
nvidia-smi -q | grep -E 'Driver Version|CUDA Version|Persistence Mode' |
    sort | uniq -c >> "$out/nvidia-smi-topo.txt"
printf 'run\texit\twall_s\n' > "$out/runs.tsv"

# timed (into $dir), nvb_tests
# shellcheck disable=SC2034
dir=$out
# shellcheck source=tests/gpu/common.sh
. "$here/common.sh"

for r in $(seq 1 "$rounds"); do
    timed "validate-$r" "$verify" --skip-rdma --json
    timed "quick-$r" "$verify" --quick --skip-rdma --json
    nvb=nvbandwidth-$r
    [ "$r" = 1 ] && nvb=nvbandwidth
    # shellcheck disable=SC2086
    LD_LIBRARY_PATH=$ref${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        timed "$nvb" "$ref/nvbandwidth" -j -t $nvb_tests
    timed "verify-$r" "$verify" --benchmark --skip-rdma --json
done
timed validate-text "$verify" --skip-rdma
python3 - "$out" > "$out/phases.tsv" <<'EOF'
import glob, json, os, sys
d = sys.argv[1]
print("run\tmode\tverdict\tseconds\t" + "\t".join(
    ["cuda_init", "discover", "allocate", "peer_access", "pair_checks",
     "figures", "teardown"]))
for path in sorted(glob.glob(os.path.join(d, "*.out"))):
    name = os.path.basename(path)[:-4]
    if not name.split("-")[0] in ("validate", "quick", "verify"):
        continue
    try:
        doc = json.load(open(path))
    except ValueError:
        continue
    ph = doc.get("phase_seconds") or {}
    print("\t".join([name, str(doc.get("mode")), str(doc.get("verdict")),
                     "%.2f" % doc.get("seconds", 0)] +
                    ["%.3f" % ph.get(k, 0) for k in
                     ("cuda_init", "discover", "allocate", "peer_access",
                      "pair_checks", "figures", "teardown")]))
EOF
python3 "$here/compare-references.py" "$out" > "$out/ratios.md"
# Where a run's figures phase goes: seconds per figure, per run.
python3 - "$out" > "$out/figure-seconds.tsv" <<'PY'
import glob, json, os, sys
d = sys.argv[1]
rows = {}
for path in sorted(glob.glob(os.path.join(d, "*.out"))):
    try:
        doc = json.load(open(path))
    except ValueError:
        continue
    if "figure_seconds" in doc:
        rows[os.path.basename(path)[:-4]] = doc["figure_seconds"]
names = sorted({k for v in rows.values() for k in v})
print("figure\t" + "\t".join(rows))
for n in names:
    print(n + "\t" + "\t".join("%.3f" % rows[r].get(n, 0) for r in rows))
PY
cat "$out/runs.tsv" "$out/phases.tsv" "$out/ratios.md" \
    "$out/figure-seconds.tsv"
# The device tool brings back few files: the raw outputs in one archive.
(cd "$out" && tar czf raw.tar.gz ./*.out ./*.err 2>/dev/null
 rm -f ./*.out ./*.err)
