#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The VM start benchmarks' judge (tests/bench/start_goal.py): its
verdicts on runs whose answer is known by construction, its interval
against the exact bootstrap distribution (every resample of six rounds
enumerated, no random draws), and its reading of kept runs."""

import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
from taplib import Tap  # noqa: E402
import start_goal  # noqa: E402

JUDGE = os.path.join(HERE, "..", "bench", "start_goal.py")


def rounds(xs):
    return dict(enumerate(xs))


def exact_ratios(device, base):
    """The ratio of medians over all n**n resamples of the paired rounds,
    each counted once, sorted: the bootstrap's own distribution, with no
    random draws."""
    pairs = list(zip(device, base))
    return sorted(statistics.median(pairs[i][0] for i in pick) /
                  statistics.median(pairs[i][1] for i in pick)
                  for pick in itertools.product(range(len(pairs)),
                                                repeat=len(pairs)))


def verdicts(t):
    base = [0.50, 0.52, 0.48, 0.55, 0.47, 0.51, 0.53, 0.49, 0.50]
    slow = [b * 1.5 for b in base]
    j = start_goal.judge(rounds(slow), rounds(base))
    t.eq(j["verdict"], "not met", "a start 1.5x in every round: not met")
    t.eq(j["ratio"], 1.5, "its ratio of medians is 1.5")

    j = start_goal.judge(rounds(base), rounds(base))
    t.eq((j["verdict"], j["low"], j["high"]), ("met", 1.0, 1.0),
         "the same start in every round: met, interval 1.00-1.00")

    # The device's start 1.02x its round's, while both drift 2x over the
    # run: met only because the rounds are paired.
    drift = [0.4 + 0.05 * r for r in range(9)]
    j = start_goal.judge(rounds([d * 1.02 for d in drift]), rounds(drift))
    t.eq(j["verdict"], "met", "a shared drift does not hide a 1.02x start")

    # Round-to-round noise as large as the ratio: no verdict either way.
    noisy_base = [0.4, 0.8, 0.4, 0.8, 0.4, 0.8, 0.4, 0.8, 0.6]
    noisy_dev = [0.8, 0.4, 0.84, 0.42, 0.8, 0.42, 0.84, 0.4, 0.63]
    j = start_goal.judge(rounds(noisy_dev), rounds(noisy_base))
    t.eq(j["verdict"], "not resolved",
         "noise as large as the effect: not resolved")
    t.ok(j["low"] <= start_goal.GOAL < j["high"],
         "its interval holds the goal", json.dumps(j))

    j = start_goal.judge(rounds(slow[:7]), rounds(base[:7]))
    t.eq((j["verdict"], j["rounds"]), ("not judged", 7),
         "seven rounds: not judged")

    # A failed start without the device, or a missing round, leaves the
    # pairing; a failed start with it leaves no verdict.
    b = rounds(base + base)
    b[3] = None
    del b[5]
    j = start_goal.judge(rounds(slow + slow), b)
    t.eq((j["rounds"], j["base_starts_failed"], j["verdict"]),
         (16, 1, "not met"),
         "a failed start without the device and a missing round drop "
         "their pairs")
    dev = rounds(base + base)
    dev[3] = None
    j = start_goal.judge(dev, rounds(base + base))
    t.eq((j["verdict"], j["device_starts_failed"]), ("not judged", 1),
         "a failed start with the device: not judged, though the rest "
         "would meet the goal")

    j = start_goal.judge(rounds(base), rounds(base), goal=0.9)
    t.eq(j["verdict"], "not met", "the goal is the caller's (0.9x)")


def interval(t):
    """Each end of the interval is a 2.5% tail of the exact distribution:
    no more than 2.5% (and the draws' slack) lies beyond it, and with
    it, at least that much."""
    slack = 0.004
    cases = (([0.61, 0.83, 0.52, 0.97, 0.70, 0.66],
              [0.50, 0.47, 0.66, 0.58, 0.41, 0.55]),
             ([0.55, 0.67, 0.54, 0.96, 0.56, 0.71],
              [0.56, 0.74, 0.63, 1.11, 0.51, 0.69]))
    for dev, base in cases:
        exact = exact_ratios(dev, base)
        n = float(len(exact))
        j = start_goal.judge(rounds(dev), rounds(base), resamples=20000,
                             min_rounds=6)
        # The judge rounds to 3 places; compare on the same grid.
        below = sum(round(r, 3) < j["low"] for r in exact) / n
        upto = sum(round(r, 3) <= j["low"] for r in exact) / n
        above = sum(round(r, 3) > j["high"] for r in exact) / n
        from_ = sum(round(r, 3) >= j["high"] for r in exact) / n
        t.ok(below <= 0.025 + slack and upto >= 0.025 - slack and
             above <= 0.025 + slack and from_ >= 0.025 - slack,
             "the interval's ends are the exact bootstrap's 2.5% tails",
             "%s; below %.4f, up to %.4f, above %.4f, from %.4f"
             % (json.dumps(j), below, upto, above, from_))


def kept_runs(t):
    with tempfile.TemporaryDirectory() as d:
        run = os.path.join(d, "run.jsonl")
        with open(run, "w") as f:
            f.write("booting the virtual host\n")
            for r in range(8):
                # The phases bench's line and the bars bench's line.
                f.write(json.dumps({"bar": "shm1g", "variant": "none",
                                    "round": r, "ready_s": 0.5}) + "\n")
                f.write(json.dumps({"bar": "shm1g", "variant": "type1",
                                    "round": r, "ready_s": 1.0}) + "\n")
                f.write(json.dumps({"bar": "shm64g", "variant": "none-11",
                                    "round": r, "seconds": 0.5}) + "\n")
                f.write(json.dumps({"bar": "shm64g", "variant": "iommufd-11",
                                    "round": r, "seconds": 0.51}) + "\n")
            f.write(json.dumps({"bar": "shm1g", "rounds": 8}) + "\n")
        p = subprocess.run([sys.executable, JUDGE, run],
                           capture_output=True, text=True)
        t.eq(p.returncode, 0, "a kept run is judged")
        got = [json.loads(x) for x in p.stdout.splitlines()
               if x.startswith("{")]
        t.eq([(g["bar"], g["variant"], g["verdict"]) for g in got],
             [("shm1g", "type1", "not met"), ("shm64g", "iommufd-11", "met")],
             "one judgement per pair present, from either bench's lines")
        t.ok("| shm1g | type1 | 8 | 2.00 | 2.00-2.00 | not met |"
             in p.stdout, "and a table row", p.stdout)

        with open(run, "w") as f:
            f.write('{"bar": "shm1g", "variant": "none", "round": 0,\n')
        p = subprocess.run([sys.executable, JUDGE, run],
                           capture_output=True, text=True)
        t.ok(p.returncode == 2 and run in p.stderr and "line 1" in p.stderr,
             "a broken line: exit 2, naming the file and the line",
             p.stderr)

        with open(run, "w") as f:
            f.write('{"variant": "none", "round": 0, "ready_s": 0.5}\n')
        p = subprocess.run([sys.executable, JUDGE, run],
                           capture_output=True, text=True)
        t.ok(p.returncode == 2 and "line 1" in p.stderr and "no bar" in
             p.stderr, "a start line without its BAR: exit 2, said so",
             p.stderr)

        with open(run, "w") as f:
            f.write("nothing measured\n")
        p = subprocess.run([sys.executable, JUDGE, run],
                           capture_output=True, text=True)
        t.ok(p.returncode == 2 and "no per-start lines" in p.stderr,
             "a run with no starts: exit 2, said so", p.stderr)


def main(t):
    verdicts(t)
    interval(t)
    kept_runs(t)


if __name__ == "__main__":
    Tap().run(main)
