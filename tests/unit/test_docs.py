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
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
from taplib import Tap  # noqa: E402

G = os.environ["GPUP2P"]
VERSION = os.environ["GPUP2P_VERSION"]
# The optional parts as meson configured them: "+libvirt -guest-tool ...".
FEATURES = os.environ["GPUP2P_FEATURES"]
MAN_DIR = os.environ["GPUP2P_MAN_DIR"]
COMPLETION = os.environ["GPUP2P_COMPLETION"]

TAP = Tap()
ok = TAP.ok


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True,
                          env=dict(os.environ, LC_ALL="C"), **kw)


def commands():
    out = run([G, "--help"]).stdout
    block = out.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in block.splitlines()]


# Refused on this kernel (docs/kernel-helper.md): --help answers with the
# refusal, anything else exits 1.
# Commands of the kernel module's old MAP/AUDIT, removed with them.
REMOVED = ["map", "unmap", "mappings", "audit"]
# Named but not in a build without libvirt (meson -Dlibvirt=disabled).
NOT_BUILT = ["libvirt"] if "-libvirt" in FEATURES.split() else []
SOURCE_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           "..", "..")


def options(cmd):
    p = run([G, cmd, "--help"])
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
    ok(p.returncode == 0 and
       p.stdout == "gpup2p %s\nfeatures: %s\n" % (VERSION, FEATURES),
       "gpup2p --version prints the project's version and the optional "
       "parts built (%s)" % FEATURES, p.stdout + p.stderr)

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

    for cmd in cmds:
        p = run([G, cmd, "--help"])
        ok(p.returncode == 0 and p.stdout.startswith("Usage:"),
           "gpup2p %s --help exits 0 with its usage" % cmd,
           "exit %d: %s" % (p.returncode, p.stdout + p.stderr))
    ok(not set(REMOVED) & set(cmds), "--help lists none of the removed "
       "MAP/AUDIT commands", cmds)
    for cmd in REMOVED:
        p = run([G, cmd])
        ok(p.returncode == 64 and "unknown command '%s'" % cmd in p.stderr,
           "gpup2p %s: an unknown command (exit 64)" % cmd,
           "exit %d: %s" % (p.returncode, p.stderr))
    for cmd in NOT_BUILT:
        h = run([G, cmd, "--help"]).stdout
        p = run([G, cmd, "--check", "-"], input="<domain/>")
        ok("Not in this build" in h and p.returncode == 1 and
           "built without libvirt support (meson -Dlibvirt=disabled)"
           in p.stderr,
           "gpup2p %s: --help says it is not built, a run exits 1" % cmd,
           "exit %d: %s" % (p.returncode, h + p.stderr))
    runs = [c for c in cmds if c not in NOT_BUILT]
    ok(len(runs) >= 5, "most commands run here", runs)

    # Every exit code that each document gives a meaning is one cli.h
    # defines, and the other way round.
    cli_h = open(os.path.join(SOURCE_ROOT, "tools", "gpup2p",
                              "cli.h")).read()
    defined = {int(v) for v in
               re.findall(r"^\s*GP_EXIT_\w+ = (\d+),", cli_h, re.M)}
    readme = open(os.path.join(SOURCE_ROOT, "README.md")).read()
    guide = open(os.path.join(SOURCE_ROOT, "docs",
                              "operator-guide.md")).read()
    usage = run([G, "--help"]).stdout
    said = {
        "gpup2p.1": re.findall(r"^- (\d+): (.*)$", open(os.path.join(
            SOURCE_ROOT, "docs", "man", "gpup2p.1.md")).read(), re.M),
        "operator-guide.md": re.findall(r"^\| (\d+) \| (.*) \|$", guide,
                                        re.M),
        "README.md": re.findall(
            r"(\d+) ([^;.]*)", readme.split("Exit codes:", 1)[1]
            .split("\n\n", 1)[0]),
        "gpup2p --help": re.findall(
            r"(\d+) ([^,;.]*)", usage.split("Exit codes:", 1)[1]),
    }
    for doc, pairs in said.items():
        meant = {int(c) for c, text in pairs if "not used" not in text}
        ok(meant == defined, "%s gives meanings to exactly the exit codes "
           "cli.h defines" % doc, "documented %s, defined %s"
           % (sorted(meant), sorted(defined)))

    # Prose that gives the usage code (outside the tables) gives 64.
    for doc, text in (("README.md", readme), ("operator-guide.md", guide)):
        codes = re.findall(r"(\d+)\s+bad\s+command\s+line", text)
        ok(codes and all(int(c) == 64 for c in codes), "%s: every 'N bad "
           "command line' says 64" % doc, codes)

    # README's synopsis names every command --help lists, as it says.
    synopsis = readme.split("## The `gpup2p` command", 1)[1].split(
        "Exit codes:", 1)[0]
    missing = [c for c in cmds if "    gpup2p %s " % c not in synopsis]
    ok(not missing, "README's synopsis shows every command", missing)
    # check's advice names packages and modprobe, never source-tree steps.
    tool_dir = os.path.join(SOURCE_ROOT, "tools", "gpup2p")
    check_c = "".join(open(os.path.join(tool_dir, f)).read()
                      for f in sorted(os.listdir(tool_dir))
                      if f == "cmd-check.c" or (f.startswith("check")
                                                and f.endswith(".c")))
    steps = [s for s in ("build-qemu.sh", "kernel/build.sh", "insmod build")
             if s in check_c]
    ok(not steps, "check's advice names no source-tree step", steps)

    # One version: meson's, the Debian changelog's and DKMS's.
    meson_v = re.search(r"version: '([^']+)'", open(os.path.join(
        SOURCE_ROOT, "meson.build")).read()).group(1)
    deb_v = re.match(r"\S+ \(([^)]+)\)", open(os.path.join(
        SOURCE_ROOT, "debian", "changelog")).read()).group(1)
    dkms_v = re.search(r'PACKAGE_VERSION="([^"]+)"', open(os.path.join(
        SOURCE_ROOT, "kernel", "dkms.conf")).read()).group(1)
    ok(meson_v == deb_v == dkms_v, "one version across meson, the Debian "
       "packages and the DKMS module", (meson_v, deb_v, dkms_v))

    # One usage code across both tools: a bad command line is EX_USAGE
    # (64, sysexits.h) in every gpup2p command that runs and in
    # gpup2p-verify (where the guest tool is built).
    for cmd in runs:
        p = run([G, cmd, "--no-such-option"])
        ok(p.returncode == 64, "gpup2p %s --no-such-option exits 64" % cmd,
           "exit %d: %s" % (p.returncode, p.stderr))
    p = run([G, "no-such-command"])
    ok(p.returncode == 64, "gpup2p no-such-command exits 64",
       "exit %d: %s" % (p.returncode, p.stderr))
    if "GPUP2P_VERIFY" in os.environ:
        p = run([os.environ["GPUP2P_VERIFY"], "--no-such-option"])
        ok(p.returncode == 64, "gpup2p-verify --no-such-option exits 64",
           "exit %d: %s" % (p.returncode, p.stderr))

    # `plan` with nothing to plan (a capture without a GPU) exits with the
    # code each document gives "nothing to plan", never 0 in silence.
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "sys", "bus", "pci", "devices"))
        p = run([G, "plan", "--sysfs-root", tmp])
    for doc, pairs in said.items():
        codes = [int(c) for c, text in pairs
                 if "nothing to plan" in text or "no GPU" in text]
        ok(codes == [p.returncode] and p.returncode != 0,
           "%s: the code for nothing to plan is the one plan exits with"
           % doc, "documented %s, exit %d: %s"
           % (codes, p.returncode, p.stderr))
    ok("nothing to plan" in p.stderr and tmp in p.stderr,
       "plan with nothing to plan says so, naming the input", p.stderr)

    print("1..%d" % TAP.n)
    return 1 if TAP.failed else 0


if __name__ == "__main__":
    sys.exit(main())
