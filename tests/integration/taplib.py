# SPDX-License-Identifier: GPL-2.0-or-later
"""A small TAP producer for the integration tests, and the virtual host
runner as a function."""

import glob
import json
import os
import shutil
import subprocess
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(os.path.dirname(HERE))
VHOST = os.path.join(PROJECT, "tests", "vhost", "vhost.py")
TOPOLOGIES = os.path.join(PROJECT, "tests", "vhost", "topologies")


# Lines of a failure's detail copied to stderr (meson's error log, which
# CI keeps); the whole of it stays in the TAP output and build/vhost-runs/.
ERRLOG_LINES = 40


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, name, detail=""):
        self.n += 1
        if cond:
            print("ok %d - %s" % (self.n, name), flush=True)
        else:
            self.failed += 1
            print("not ok %d - %s" % (self.n, name), flush=True)
            for line in str(detail).splitlines():
                print("# " + line)
            # Meson's error log (--print-errorlogs) shows a TAP test's
            # stderr, not its stdout: the failure and its detail go there
            # too, so that a CI log that outlives the build has them.
            sys.stdout.flush()
            sys.stderr.write("not ok %d - %s\n" % (self.n, name))
            for line in str(detail).splitlines()[-ERRLOG_LINES:]:
                sys.stderr.write("# " + line + "\n")
            sys.stderr.flush()
        return cond

    def skip(self, name, reason):
        """A check not made: TAP's SKIP directive, so that meson counts it
        as skipped, never as passed, and says why."""
        self.n += 1
        print("ok %d - %s # SKIP %s" % (self.n, name, reason), flush=True)

    def skip_all(self, reason):
        """No check can be made here: an empty plan with the reason (meson
        reports the test as SKIP). Only before the first check."""
        assert self.n == 0
        print("1..0 # SKIP %s" % reason, flush=True)
        sys.exit(0)

    def eq(self, got, want, name):
        return self.ok(got == want, name, "got %r, want %r" % (got, want))

    def diag(self, text):
        for line in str(text).splitlines():
            print("# " + line, flush=True)

    def done(self):
        print("1..%d" % self.n, flush=True)
        sys.exit(1 if self.failed else 0)

    def run(self, fn):
        try:
            fn(self)
        except Exception:
            self.ok(False, "test raised", traceback.format_exc())
        self.done()


def prepare():
    subprocess.run([sys.executable, VHOST, "prepare"], check=True)


RUNS = os.path.join(PROJECT, "build", "vhost-runs")
_scenarios = {}


def scenario_dir(topology):
    """build/vhost-runs/TEST-TOPOLOGY[-N]: each scenario of a test keeps
    its latest run's evidence (console, emulator stderr, results) there."""
    test = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    if test.startswith("test_"):
        test = test[len("test_"):]
    test = test.strip("-") or "run"
    name = "%s-%s" % (test, os.path.splitext(os.path.basename(topology))[0])
    _scenarios[name] = _scenarios.get(name, 0) + 1
    if _scenarios[name] > 1:
        name += "-%d" % _scenarios[name]
    path = os.path.join(RUNS, name)
    for old in (path, path + ".attempt-1"):
        shutil.rmtree(old, ignore_errors=True)
    os.makedirs(path)
    return path


def vhost_run(topology, script, timeout=240, append="", out=None,
              extra=None, retry_host_death=False):
    """Boot @topology, run @script (shell text) inside. Returns
    (rc, stdout, stderr, outdir). A retry of the virtual host (a stalled
    boot, the outer emulator's own crash) and, on failure, the runner's
    evidence are printed as TAP diagnostics, so the test's log has them.
    @retry_host_death: the script loads no kernel module of ours, so a
    panic or reset of the virtual host while it runs is retried once
    (vhost.py --retry-host-death), counted like the others."""
    out = out or scenario_dir(topology)
    cmd = [sys.executable, VHOST, "run",
           os.path.join(TOPOLOGIES, topology) if "/" not in topology
           else topology, "--timeout", str(timeout), "--out", out, "-v"]
    if append:
        cmd += ["--append", append]
    if retry_host_death:
        cmd += ["--retry-host-death"]
    cmd += extra or []
    cmd += ["--", "sh", "-ec", script]
    p = subprocess.run(cmd, capture_output=True, text=True)
    try:
        with open(os.path.join(out, "retries.log")) as f:
            # A fault a test injects on purpose is not counted.
            kind = "injected" if os.environ.get("VHOST_FAULT_INJECTED") \
                else "counted"
            for line in f:
                print("# vhost retry [%s] (%s): %s" % (
                    kind, os.path.basename(out), line.strip()), flush=True)
    except FileNotFoundError:
        pass
    # A nested guest booted again after an early end (qemu_p2p_dma.sh's
    # guest()): counted, as the virtual host's own retries are.
    for f in sorted(glob.glob(os.path.join(out, "*.early[0-9].err"))):
        print("# nested guest booted again [counted] (%s): %s ended before "
              "its command started" % (os.path.basename(out),
                                        os.path.basename(f)[:-len(".err")]),
              flush=True)
    if p.returncode != 0:
        print("# vhost run %s ended %d; its stderr:" % (out, p.returncode))
        for line in p.stderr.splitlines():
            print("#   " + line)
        sys.stdout.flush()
        # The runner's evidence (console tail, the emulator's stderr) on
        # this test's stderr too: meson's error log keeps only that.
        sys.stderr.write("vhost run %s ended %d; the end of its stderr:\n"
                         "%s\n" % (out, p.returncode, "\n".join(
                             p.stderr.splitlines()[-ERRLOG_LINES:])))
        sys.stderr.flush()
    return p.returncode, p.stdout, p.stderr, out


def run_failure(rc, out, err, lines=20):
    """A failed virtual-host run told short enough for meson's error log:
    its status, the runner's own verdict lines (its "vhost: " lines: why
    the run ended, where the evidence is) and the end of the command's
    output (a scenario's traceback). The rest: the diagnostics vhost_run
    printed and the scenario's directory."""
    said = [l for l in err.splitlines() if l.startswith("vhost: ")]
    return "exit %d\n%s\nthe command's output, last %d lines:\n%s" % (
        rc, "\n".join(said), lines, "\n".join(out.splitlines()[-lines:]))


def built(t, script, what, env=None, clean_stderr=False):
    """Run a script of ours that builds or fetches something and prints its
    path last (sh SCRIPT): that path, or None with the check @what failed
    and the end of its stderr. @clean_stderr: any warning there fails it
    too."""
    p = subprocess.run(["sh", script], capture_output=True, text=True,
                       env=env)
    ok = p.returncode == 0 and p.stdout.strip() and not (
        clean_stderr and "warning:" in p.stderr.lower())
    if not t.ok(ok, what, p.stderr[-3000:]):
        return None
    return p.stdout.strip().splitlines()[-1]


def our_qemu():
    return os.environ.get("GPUP2P_QEMU", os.path.join(
        PROJECT, "build", "qemu", "qemu-system-x86_64"))


def qemu_vhost_env(cache, qemu, dmabuf=None):
    """The environment, as shell words, of the scenarios that run QEMUs in
    the Linux 7.x virtual host @cache; its nested guests run Debian's
    6.12 (VHOST_INNER_CACHE: 7.3 as the nested guest trips an MMIO
    emulation error of nested KVM under TCG with x-no-mmap). Sets
    VHOST_CACHE here too, for vhost_run."""
    inner = os.environ.get("VHOST_INNER_CACHE", os.path.join(
        PROJECT, "build", "vhost"))
    os.environ["VHOST_CACHE"] = cache
    env = "VHOST_CACHE=%s VHOST_INNER_CACHE=%s GPUP2P_QEMU=%s" % (
        cache, inner, qemu)
    return env + (" GPUP2P_QEMU_DMABUF=%s" % dmabuf if dmabuf else "")


def config_at_boot(config):
    """Shell text that puts the kernel config @config where a Debian
    kernel package puts it, /boot/config-RELEASE, on a tmpfs over the
    virtual host's read-only /boot: where the host tool and the facts
    read a kernel's config."""
    return "mount -t tmpfs tmpfs /boot; cp %s /boot/config-$(uname -r); " \
        % config


def read_text(outdir, name):
    """A result file's text, stripped; the error text if it is missing."""
    try:
        with open(os.path.join(outdir, name)) as f:
            return f.read().strip()
    except OSError as e:
        return str(e)


def load_json(path):
    with open(path) as f:
        return json.load(f)


def load_result(outdir, name):
    """A JSON file the scenario wrote, or {"error": why} when it is missing
    or broken, so that the checks reading it fail and say why."""
    try:
        return load_json(os.path.join(outdir, name))
    except (OSError, ValueError) as e:
        return {"error": str(e)}


def gpup2p():
    return os.environ.get("GPUP2P",
                          os.path.join(PROJECT, "build", "tools", "gpup2p",
                                       "gpup2p"))
