#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The virtual host runner itself: a failing command fails with its output,
a hung guest is killed and reported, a stalled boot is retried once and
logged, bad topology files are named."""

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

    # A boot that does not reach the command in time (here: a limit of
    # 2 s, as a starved TCG boot would overrun its measured one) is
    # retried once with the reason in the log, then reported.
    os.environ["VHOST_BOOT_LIMIT"] = "2"
    try:
        rc, out, err, outdir = vhost_run("two-numa.json", "echo ran",
                                         timeout=120)
    finally:
        del os.environ["VHOST_BOOT_LIMIT"]
    t.eq(rc, 124, "a boot that stalls twice ends as a time-out")
    t.ok(err.count("retrying once") == 1 and "boot stalled again" in err
         and "the command had not started after" in err,
         "the stall and the one retry are logged with the reason", err)
    retries = open(os.path.join(outdir, "retries.log")).read() \
        if os.path.exists(os.path.join(outdir, "retries.log")) else ""
    t.ok(len(retries.splitlines()) == 1, "retries.log keeps the one retry",
         retries)
    t.ok(os.path.exists(os.path.join(outdir, "console.log.stalled")),
         "and the stalled boot's console")

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
