#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""QEMU start to QMP quit with four GPU stand-ins on vfio-pci, in one
virtual host run, alternating: Debian's stock QEMU 10.0.2, ours with the
extension off, ours with x-gpu-p2p-clique=auto from a host snapshot and
from sysfs, and Debian's QEMU 11.1 where tests/vhost/stock-qemu-newer.sh
has unpacked it. Prints medians and ratios to stock and to ours off (goal:
<= 1.02)."""

import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
from taplib import PROJECT, prepare, vhost_run  # noqa: E402


def main():
    prepare()
    qemu = os.environ.get("GPUP2P_QEMU", os.path.join(
        PROJECT, "build", "qemu", "qemu-system-x86_64"))
    rc, out, err, _ = vhost_run(
        "vfio-gpus.json",
        "GPUP2P_QEMU=%s python3 tests/bench/qemu_ext_start.py" % qemu,
        timeout=900)
    if rc != 0:
        sys.exit("bench-qemu-ext: run failed:\n" + out + err)
    runs = {}
    for line in out.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            runs.setdefault(r["variant"], []).append(r["seconds"])
    stock = statistics.median(runs["stock"])
    off = statistics.median(runs["off"])
    newer = statistics.median(runs["stock-11.1"]) \
        if "stock-11.1" in runs else None
    for name, secs in runs.items():
        med = statistics.median(secs)
        # Stock is Debian's full build; "off" is ours, same build, so the
        # ratio to off is the extension's own share.
        print("QEMU start to quit, 4 devices, %-13s median %.3f s of %d, "
              "ratio to stock %.3f, to off %.3f"
              % (name, med, len(secs), med / stock, med / off) +
              (", to stock 11.1 %.3f" % (med / newer) if newer else ""))


if __name__ == "__main__":
    main()
