#!/bin/bash
# `gpup2p-verify --quick` against the driver's floor on the same machine
# (not in CI): ROUNDS rounds of the default run, --quick, then driver-floor
# (driver-floor.c: only the driver calls a P2P check cannot do without)
# ending each of its three ways, then the tool's process start alone
# (--version), so that --quick's wall time reads as a ratio to the
# floor's. The first command is the default run: on a machine just
# started, it is the cold one; later rounds rotate the order of the
# others, so that none always follows the same run.
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
    sed -n '11p' "$0" >&2
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
one() {
    case $1 in
    quick) timed "quick-$2" "$verify" --quick --skip-rdma --json ;;
    release | exit | _exit) timed "floor-$1-$2" "$floor" "$1" ;;
    version) timed "version-$2" "$verify" --version ;;
    esac
}
kinds="quick release exit _exit version"
for r in $(seq 1 "$rounds"); do
    timed "validate-$r" "$verify" --skip-rdma --json
    for k in $kinds; do
        one "$k" "$r"
    done
    # The next round starts one later.
    kinds="${kinds#* } ${kinds%% *}"
done
python3 - "$out" > "$out/floor.md" <<'EOF'
import csv, json, os, re, statistics, sys
d = sys.argv[1]
walls, phases, gpus, left_out = {}, {}, {}, 0
with open(os.path.join(d, "runs.tsv")) as f:
    for row in csv.DictReader(f, delimiter="\t"):
        m = re.match(r"^(.*)-(\d+)$", row["run"])
        kind = m.group(1) if m else row["run"]
        if row["exit"] != "0":
            print("- %s exited %s: left out" % (row["run"], row["exit"]))
            left_out += 1
            continue
        walls.setdefault(kind, []).append(float(row["wall_s"]))
        try:
            doc = json.load(open(os.path.join(d, row["run"] + ".out")))
        except (OSError, ValueError):
            continue
        # The tool's JSON: its GPUs and phases; the floor's: flat.
        ph = doc.get("phase_seconds") if "phase_seconds" in doc else \
            (doc if "end" in doc else {})
        count = len(doc["gpus"]) if isinstance(doc.get("gpus"), list) \
            else doc.get("gpus")
        if count is not None:
            gpus.setdefault(kind, set()).add(count)
        for k, v in ph.items():
            if isinstance(v, (int, float)) and k != "gpus":
                phases.setdefault(kind, {}).setdefault(k, []).append(v)
print("| run | runs | GPUs | wall s, median | phases, median s |")
print("| --- | --- | --- | --- | --- |")
for kind, w in walls.items():
    ph = ", ".join("%s %.3f" % (k, statistics.median(v))
                   for k, v in phases.get(kind, {}).items())
    print("| %s | %d | %s | %.3f | %s |" % (
        kind, len(w), ",".join(map(str, sorted(gpus.get(kind, [])))) or "-",
        statistics.median(w), ph))
q = walls.get("quick")
for kind in ("floor-release", "floor-exit", "floor-_exit"):
    if not (q and walls.get(kind) and statistics.median(walls[kind]) > 0):
        print("\n--quick / %s: not measured" % kind)
    elif gpus.get("quick") != gpus.get(kind) or len(gpus.get(kind, [])) != 1:
        print("\n--quick / %s: no ratio, GPU counts differ (%s against %s)"
              % (kind, sorted(gpus.get("quick", [])),
                 sorted(gpus.get(kind, []))))
    else:
        print("\n--quick / %s: %.2f (medians of %d and %d runs)" % (
            kind, statistics.median(q) / statistics.median(walls[kind]),
            len(q), len(walls[kind])))
if left_out:
    print("\n%d run(s) failed and are left out of the medians" % left_out)
EOF
cat "$out/runs.tsv" "$out/floor.md"
# The device tool brings back few files: the raw outputs in one archive.
(cd "$out" && tar czf raw.tar.gz ./*.out ./*.err 2>/dev/null
 rm -f ./*.out ./*.err)
