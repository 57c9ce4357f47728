#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""--version, the man pages and bash completion of gpup2p.

groff judges the pages (-ww: every warning); the pages must name every
command and option the program's --help lists; bash runs the completion
function as it would on a Tab."""

import os
import re
import subprocess
import sys

G = os.environ["GPUP2P"]
VERSION = os.environ["GPUP2P_VERSION"]
MAN_DIR = os.environ["GPUP2P_MAN_DIR"]
COMPLETION = os.environ["GPUP2P_COMPLETION"]

n = 0
failed = 0


def ok(cond, what, detail=""):
    global n, failed
    n += 1
    print("%sok %d - %s" % ("" if cond else "not ", n, what))
    if not cond:
        failed += 1
        for line in str(detail).splitlines()[-30:]:
            print("# " + line)


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True,
                          env=dict(os.environ, LC_ALL="C"), **kw)


def commands():
    out = run([G, "--help"]).stdout
    block = out.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in block.splitlines()]


def options(cmd):
    p = run([G, cmd, "--help"])
    if p.returncode != 0:
        return []           # a command that refuses to run has no options
    out = p.stdout
    return [o for o in re.findall(r"^  (?:-\w, )?(--[\w-]+)", out, re.M)
            if o != "--help" and not o.startswith("--help-")]


def complete(words):
    """COMPREPLY for the command line @words, the last being completed."""
    script = ('source "%s"; COMP_WORDS=(%s); COMP_CWORD=%d; _gpup2p; '
              'printf "%%s\\n" "${COMPREPLY[@]}"'
              % (COMPLETION, " ".join("'%s'" % w for w in words),
                 len(words) - 1))
    env = dict(os.environ, PATH=os.path.dirname(G) + ":" +
               os.environ["PATH"])
    p = subprocess.run(["bash", "-c", script], capture_output=True,
                       text=True, env=env)
    return p.stdout.split()


def main():
    p = run([G, "--version"])
    ok(p.returncode == 0 and p.stdout == "gpup2p %s\n" % VERSION,
       "gpup2p --version prints the project's version", p.stdout + p.stderr)

    cmds = commands()
    ok(len(cmds) >= 5 and "topo" in cmds and "check" in cmds,
       "gpup2p --help lists its commands", cmds)
    for page in sorted(os.listdir(MAN_DIR)):
        if not page.endswith(".1"):
            continue
        path = os.path.join(MAN_DIR, page)
        p = run(["groff", "-man", "-ww", "-Tutf8", "-z", path])
        ok(p.returncode == 0 and not p.stderr.strip(),
           "groff -ww reads %s without a warning" % page, p.stderr)
    text = open(os.path.join(MAN_DIR, "gpup2p.1")).read()
    for cmd in cmds:
        ok(".SS %s\n" % cmd.replace("-", "\\-") in text,
           "gpup2p.1 has a section for %s" % cmd)
        missing = [o for o in options(cmd)
                   if "\\fB%s\\fR" % o.replace("-", "\\-") not in text]
        ok(not missing, "gpup2p.1 lists every option of %s" % cmd, missing)
    ok("5: `check`" not in text and "\\fBcheck\\fR: not ready" in text,
       "gpup2p.1 states the exit codes of check")

    got = complete(["gpup2p", "to"])
    ok(got == ["topo"], "Tab after 'gpup2p to' gives topo", got)
    got = complete(["gpup2p", "check", "--d"])
    ok(sorted(got) == ["--devices", "--domain"],
       "Tab after 'gpup2p check --d' gives check's options", got)
    got = complete(["gpup2p", "plan", "--policy", "h"])
    ok(got == ["host-bridge"], "Tab completes --policy values", got)

    # One usage code: a bad command line is 2 in every command that runs
    # (one that refuses on this kernel exits 1 whatever it is given).
    runs = [c for c in cmds if run([G, c, "--help"]).returncode == 0]
    ok(len(runs) >= 5, "most commands run here", runs)
    for cmd in runs:
        p = run([G, cmd, "--no-such-option"])
        ok(p.returncode == 2, "gpup2p %s --no-such-option exits 2" % cmd,
           "exit %d: %s" % (p.returncode, p.stderr))
    print("1..%d" % n)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
