#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A failed integration check must be readable in meson's error log, the
part of a CI run's output that outlives its build directory. Meson itself
is the judge: a throwaway project runs a TAP test built on taplib whose one
check fails, and `meson test --print-errorlogs` must show the check's name,
the runner's verdict lines and the end of the command's output (meson shows
a TAP test's stderr there, never its stdout)."""

import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
INTEGRATION = os.path.join(HERE, "..", "integration")
sys.path.insert(0, INTEGRATION)
from taplib import Tap  # noqa: E402

FAILING_TEST = """
import sys
sys.path.insert(0, %r)
from taplib import Tap, run_failure
out = "booting\\n" + "".join("step %%d\\n" %% i for i in range(30)) + \\
      "Traceback: the scenario's own error\\n"
err = ("vhost: the virtual host ended without the command's status\\n"
       "a console line the short form leaves out\\n"
       "vhost: evidence kept in /runs/example\\n")
Tap().run(lambda t: t.ok(False, "the scenario ran in the virtual host",
                         run_failure(125, out, err)))
"""


def test(t):
    meson = shutil.which("meson")
    if not t.ok(meson is not None, "meson is installed", "not on PATH"):
        return
    tmp = tempfile.mkdtemp(prefix="taplib-errlog-")
    try:
        with open(os.path.join(tmp, "failing.py"), "w") as f:
            f.write(FAILING_TEST % os.path.abspath(INTEGRATION))
        with open(os.path.join(tmp, "meson.build"), "w") as f:
            f.write("project('errlog', meson_version: '>=0.63')\n"
                    "test('failing', find_program('python3'), "
                    "args: [files('failing.py')], protocol: 'tap')\n")
        b = os.path.join(tmp, "b")
        s = subprocess.run([meson, "setup", b, tmp], capture_output=True,
                           text=True)
        if not t.ok(s.returncode == 0, "the throwaway project configures",
                    s.stdout + s.stderr):
            return
        r = subprocess.run([meson, "test", "-C", b, "--print-errorlogs"],
                           capture_output=True, text=True)
        log = r.stdout + r.stderr
        t.ok(r.returncode != 0, "meson reports the failing test", log)
        for want, what in (
                ("not ok 1 - the scenario ran in the virtual host",
                 "the failed check's name"),
                ("exit 125", "the run's status"),
                ("vhost: the virtual host ended without the command's "
                 "status", "the runner's verdict"),
                ("vhost: evidence kept in /runs/example",
                 "where the evidence is"),
                ("Traceback: the scenario's own error",
                 "the end of the command's output")):
            t.ok(want in log, "meson's error log has %s" % what, log[-3000:])
        t.ok("a console line the short form leaves out" not in log,
             "the short form leaves the console tail to the evidence "
             "directory", log[-3000:])
        t.ok("step 5\n" not in log,
             "and keeps only the end of the command's output", log[-3000:])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    Tap().run(test)
