#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Time the virtual GPU host: start to the command running inside, and a
whole run of `true`, for the two-numa topology and, as the reference in the
same run, a host with no added devices. Medians of --runs boots."""

import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
from taplib import prepare, vhost_run  # noqa: E402


def measure(topology, runs):
    boot, total = [], []
    for _ in range(runs):
        rc, out, err, outdir = vhost_run(topology, "true", timeout=120)
        if rc != 0:
            sys.exit("bench-vhost: run failed:\n" + err)
        with open(os.path.join(outdir, "timing.json")) as f:
            t = json.load(f)
        boot.append(t["boot_to_command_s"])
        total.append(t["total_s"])
    return statistics.median(boot), statistics.median(total), \
        max(total) - min(total)


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    prepare()
    with tempfile.TemporaryDirectory() as d:
        empty = os.path.join(d, "empty.json")
        with open(empty, "w") as f:
            json.dump({"name": "empty", "nodes": []}, f)
        ref = measure(empty, runs)
    full = measure("two-numa.json", runs)
    print("virtual host, median of %d runs (TCG, 2 vCPUs):" % runs)
    for name, (boot, total, spread) in [("empty", ref), ("two-numa", full)]:
        print("  %-9s start->command %5.1f s, whole run %5.1f s "
              "(spread %.1f s)" % (name, boot, total, spread))
    print("  two-numa/empty: start->command %.2f, whole run %.2f"
          % (full[0] / ref[0], full[1] / ref[1]))


if __name__ == "__main__":
    main()
