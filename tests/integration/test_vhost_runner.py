#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The virtual host runner itself: a failing command fails with its output,
a hung guest is killed and reported, bad topology files are named."""

import json
import os
import subprocess
import sys
import tempfile

from taplib import Tap, prepare, vhost_run, VHOST


def test(t):
    prepare()
    rc, out, err, _ = vhost_run("two-numa.json",
                                "echo about-to-fail; exit 3")
    t.eq(rc, 3, "a failing command's status comes back")
    t.ok("about-to-fail" in out, "its output comes back", out + err)

    rc, out, err, _ = vhost_run("two-numa.json", "echo hanging; sleep 600",
                                timeout=25)
    t.eq(rc, 124, "a hung guest is killed at the time limit")
    t.ok("timed out" in err and "console tail" in err,
         "the time-out is reported with the console tail", err)

    with tempfile.TemporaryDirectory() as d:
        bad = os.path.join(d, "bad.json")
        with open(bad, "w") as f:
            json.dump({"nodes": [{"id": "g", "kind": "gpu",
                                  "parent": "nowhere"}]}, f)
        p = subprocess.run([sys.executable, VHOST, "run", bad, "--", "true"],
                           capture_output=True, text=True)
        t.ok(p.returncode == 2 and "nowhere" in p.stderr and bad in p.stderr,
             "a topology naming an unknown bus is refused, naming both",
             p.stderr)


if __name__ == "__main__":
    Tap().run(test)
