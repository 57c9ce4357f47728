#!/bin/bash
# `gpup2p-verify --quick` against the driver's floor on the same machine
# (not in CI): ROUNDS rounds of the default run, --quick, then driver-floor
# (driver-floor.c: only the driver calls a P2P check cannot do without)
# ending each of its three ways, then the tool's process start alone
# (--version), so that --quick's wall time reads as a ratio to the
# floor's. The first command is the default run: on a machine just
# started, it is the cold one.
#
#   tests/gpu/floor-bench.sh VERIFY FLOOR OUTDIR [ROUNDS]
#
# VERIFY is a gpup2p-verify (pack-verify.sh's), FLOOR a built
# driver-floor (build-references.sh builds it). OUTDIR gets machine.txt,
# runs.tsv (run, exit, wall seconds), floor.md (per run kind the median
# wall time and the medians of the phases each reports, and --quick's
# ratio to each floor) and raw.tar.gz, every run's output.
set -u
if [ $# -lt 3 ]; then
    sed -n '7p' "$0" >&2
    exit 64
fi
verify=$1
floor=$2
out=$3
rounds=${4:-5}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out" || exit 1
printf 'run\texit\twall_s\n' > "$out/runs.tsv"
# shellcheck disable=SC2034
dir=$out
# shellcheck source=tests/gpu/common.sh
. "$here/common.sh"

{
    nvidia-smi -L 2>&1
    nvidia-smi -q 2>&1 | grep -E 'Driver Version|CUDA Version|Persistence Mode' |
        sort | uniq -c
} > "$out/machine.txt"
for r in $(seq 1 "$rounds"); do
    timed "validate-$r" "$verify" --skip-rdma --json
    timed "quick-$r" "$verify" --quick --skip-rdma --json
    timed "floor-release-$r" "$floor" release
    timed "floor-exit-$r" "$floor" exit
    timed "floor-_exit-$r" "$floor" _exit
    timed "version-$r" "$verify" --version
done
python3 - "$out" > "$out/floor.md" <<'EOF'
import csv, json, os, statistics, sys
d = sys.argv[1]
walls, phases = {}, {}
with open(os.path.join(d, "runs.tsv")) as f:
    for row in csv.DictReader(f, delimiter="\t"):
        kind = row["run"].rsplit("-", 1)[0]
        if row["exit"] != "0":
            print("- %s exited %s: left out" % (row["run"], row["exit"]))
            continue
        walls.setdefault(kind, []).append(float(row["wall_s"]))
        try:
            doc = json.load(open(os.path.join(d, row["run"] + ".out")))
        except (OSError, ValueError):
            continue
        ph = doc.get("phase_seconds", doc)
        for k, v in ph.items():
            if isinstance(v, (int, float)) and k != "gpus":
                phases.setdefault(kind, {}).setdefault(k, []).append(v)
print("| run | runs | wall s, median | phases, median s |")
print("| --- | --- | --- | --- |")
for kind, w in walls.items():
    ph = ", ".join("%s %.3f" % (k, statistics.median(v))
                   for k, v in phases.get(kind, {}).items())
    print("| %s | %d | %.3f | %s |" % (kind, len(w), statistics.median(w), ph))
q = walls.get("quick")
for kind in ("floor-release", "floor-exit", "floor-_exit"):
    if q and walls.get(kind):
        print("\n--quick / %s: %.2f" % (kind, statistics.median(q) /
                                         statistics.median(walls[kind])))
EOF
cat "$out/runs.tsv" "$out/floor.md"
# The device tool brings back few files: the raw outputs in one archive.
(cd "$out" && tar czf raw.tar.gz ./*.out ./*.err 2>/dev/null
 rm -f ./*.out ./*.err)
