#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Nested guest start time with the QEMU extension (x-gpu-p2p-clique=auto
on three GPU stand-ins) and without it (off), alternating, three of each,
in one virtual host run: medians and the ratio."""

import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
from taplib import prepare, vhost_run  # noqa: E402


def main():
    prepare()
    rc, out, err, _ = vhost_run("vfio-gpus.json",
                                "sh tests/bench/qemu_ext_boot.sh",
                                timeout=900)
    if rc != 0:
        sys.exit("bench-qemu-ext: run failed:\n" + out + err)
    runs = {"off": [], "auto": []}
    for line in out.splitlines():
        mode, _, js = line.partition(" ")
        if mode in runs:
            runs[mode].append(json.loads(js))
    for key in ("boot_to_command_s", "total_s"):
        off = statistics.median(r[key] for r in runs["off"])
        auto = statistics.median(r[key] for r in runs["auto"])
        print("nested guest %-17s off %5.1f s, auto %5.1f s, auto/off %.2f"
              % (key, off, auto, auto / off))


if __name__ == "__main__":
    main()
