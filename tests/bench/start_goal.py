#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Judges the VM start benchmarks against issue 32's goal: a start with a
passed-through device within 1.05x of the same QEMU's start with none.

A ratio of two medians from a few noisy starts cannot say that alone, so
each pair of variants also gets a 95% interval for that ratio: the
rounds are resampled with replacement (a paired bootstrap: one round's
two starts ran back to back and share the machine's drift) and the
ratio of medians is taken each time. The verdict follows from the
interval only:

  met           the whole interval lies at or below the goal
  not met       the whole interval lies above it
  not resolved  the interval holds the goal: this run cannot tell
  not judged    fewer than MIN_ROUNDS paired rounds, or a start with the
                device failed (a failed start is no fast one)

The goal compares typical starts: the ratio of the two medians, the
figure the benches' summaries give (not the median of each round's
ratio). Each verdict is one-sided: "met" or "not met" is wrong by
chance at most about 2.5% of the time, but over the ten pairs of a
phases run a false "met" somewhere is far likelier (up to about one in
five), so a claim about all of them needs each to hold by a margin.
Within a round the benches run their variants in one order and the
next round in the reverse (each start's position is kept), so that
neither side of a pair always goes first.

Used by vm_start_bars.py and vm_start_phases.py for their summary
lines, and on its own for a kept run:

  tests/bench/start_goal.py build/vm-start-phases-TIME.jsonl [--goal 1.05]

which prints one JSON line per pair and BAR, then a table."""

import argparse
import json
import random
import statistics
import sys

GOAL = 1.05
# With five pairs no distribution-free 95% interval for a median exists
# (a sign test's widest is 93.75%); the bootstrap's, a little narrower
# than its nominal width with few rounds, is taken from eight.
MIN_ROUNDS = 8
RESAMPLES = 4000
# The pairs each bench writes: (with a device, its start with none).
PAIRS = (("type1", "none"), ("type1-256m", "none-256m"),
         ("type1-prealloc", "none-prealloc"), ("type1-huge", "none-huge"),
         ("iommufd-11", "none-11"))


def judge(device, base, goal=GOAL, resamples=RESAMPLES, seed=32,
          min_rounds=MIN_ROUNDS):
    """@device and @base: {round: seconds} of two variants. The ratio of
    their medians over the rounds both have, its 95% interval and the
    verdict against @goal, as a dict."""
    rounds = sorted(set(device) & set(base))
    pairs = [(device[r], base[r]) for r in rounds
             if device[r] is not None and base[r] is not None]
    failed = sum(1 for r in device if device[r] is None)
    out = {"goal": goal, "rounds": len(pairs), "device_starts_failed": failed,
           "base_starts_failed": sum(1 for r in base if base[r] is None)}
    if failed:
        out.update(verdict="not judged",
                   why="%d of the starts with the device failed" % failed)
        return out
    if len(pairs) < min_rounds:
        out.update(verdict="not judged",
                   why="%d paired rounds, at least %d needed"
                   % (len(pairs), min_rounds))
        return out

    def ratio(sample):
        return (statistics.median(d for d, _ in sample) /
                statistics.median(b for _, b in sample))
    rng = random.Random(seed)
    dist = sorted(ratio(rng.choices(pairs, k=len(pairs)))
                  for _ in range(resamples))
    low = dist[int(0.025 * resamples)]
    high = dist[int(0.975 * resamples) - 1]
    out.update(ratio=round(ratio(pairs), 3), low=round(low, 3),
               high=round(high, 3))
    if high <= goal:
        out.update(verdict="met",
                   why="the 95%% interval lies at or below %.2fx" % goal)
    elif low > goal:
        out.update(verdict="not met",
                   why="the 95%% interval lies above %.2fx" % goal)
    else:
        out.update(verdict="not resolved",
                   why="the 95%% interval holds %.2fx: this run cannot "
                   "tell" % goal)
    return out


def judge_runs(runs, goal=GOAL):
    """@runs: {variant: {round: seconds}}. {device variant: judgement}
    for each of PAIRS present in @runs."""
    return {d: judge(runs[d], runs[b], goal) for d, b in PAIRS
            if d in runs and b in runs}


def read_starts(lines):
    """The per-start lines of a kept run (either bench's):
    {bar: {variant: {round: seconds or None}}}."""
    out = {}
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            d = json.loads(line)
        except ValueError as e:
            raise ValueError("line %d is not JSON: %s" % (n, e))
        if "variant" not in d or "round" not in d:
            continue
        if "bar" not in d:
            raise ValueError("line %d names a variant and a round but no "
                             "bar" % n)
        secs = d.get("ready_s", d.get("seconds"))
        out.setdefault(d["bar"], {}).setdefault(d["variant"], {})[
            d["round"]] = secs
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", help="a kept run: build/vm-start-*.jsonl")
    ap.add_argument("--goal", type=float, default=GOAL)
    a = ap.parse_args(argv)
    try:
        with open(a.run) as f:
            starts = read_starts(f)
    except (OSError, ValueError) as e:
        print("start_goal: %s: %s" % (a.run, e), file=sys.stderr)
        return 2
    if not starts:
        print("start_goal: %s: no per-start lines (bar, variant, round)"
              % a.run, file=sys.stderr)
        return 2
    rows = []
    for bar, runs in starts.items():
        for v, j in judge_runs(runs, a.goal).items():
            print(json.dumps(dict(bar=bar, variant=v, **j)))
            rows.append((bar, v, j))
    print("| BAR | variant | rounds | ratio | 95% interval | verdict |")
    print("| --- | --- | --- | --- | --- | --- |")
    for bar, v, j in rows:
        span = ("%.2f-%.2f" % (j["low"], j["high"])) if "low" in j else "-"
        ratio = ("%.2f" % j["ratio"]) if "ratio" in j else "-"
        print("| %s | %s | %d | %s | %s | %s |"
              % (bar, v, j["rounds"], ratio, span, j["verdict"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
