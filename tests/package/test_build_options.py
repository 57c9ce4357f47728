#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The meson options for the optional parts, each in a build of its own.

Without libvirt, the guest tool and the kernel module (-Dwerror=true): the
build succeeds, gpup2p needs neither libvirt nor libxml2 (readelf, ldd),
`gpup2p libvirt` and `check --domain` are refused with exit 1 saying why,
`topo` reads a capture as the full build does, nothing of the left-out
parts is built, installed or tested, and its unit tests pass.

With the kernel module, against installed kernel headers (KVER, else the
virtual GPU host's kernel, else the newest headers installed): kbuild
builds gpup2p.ko, which modinfo reads as a module for that kernel; meson
installs neither the module nor its udev rule and modules-load file (the
DKMS package does, with the group the rule names).
No headers at all fail that part."""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
from taplib import Tap  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
FIXTURE = os.path.join(SRC, "tests", "fixtures", "vhost-two-numa")
FULL_GPUP2P = os.environ.get("GPUP2P")
NEEDED = ["meson", "ninja", "readelf", "ldd", "modinfo", "make", "nice"]
WITHOUT_LIBVIRT = ("gpup2p was built without libvirt support "
                   "(meson -Dlibvirt=disabled)")
# What only a build with libvirt (or the guest tool) defines.
LIBVIRT_TESTS = {"libvirt", "libvirt-hook", "mirror-libvirt", "fuzz-libvirt",
                 "libvirt_qemu", "mirror_libvirt"}
GUEST_TOOL_TESTS = {"verify", "nccl-topo", "verify-schedule",
                    "verify-prometheus"}


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True,
                          env=dict(os.environ, LC_ALL="C"), **kw)


def tail(p, n=3000):
    return (p.stdout + p.stderr)[-n:]


def setup(t, builddir, options, what):
    p = run(["nice", "meson", "setup", builddir, SRC] + options)
    if not t.eq(p.returncode, 0, "%s: meson setup %s" % (what,
                                                        " ".join(options))):
        t.diag(tail(p))
        return False
    return True


def introspect(builddir, what):
    p = run(["meson", "introspect", builddir, "--" + what])
    return json.loads(p.stdout) if p.returncode == 0 else None


def installed_names(builddir):
    """The install plan (no build needed): destination paths."""
    plan = introspect(builddir, "installed") or {}
    return sorted(plan.values())


def needed_libraries(binary):
    p = run(["readelf", "-d", binary])
    return [line.split("[", 1)[1].split("]", 1)[0]
            for line in p.stdout.splitlines()
            if "(NEEDED)" in line and "[" in line]


def test_reduced(t, d):
    what = "without libvirt, guest tool, kernel module"
    b = os.path.join(d, "reduced")
    if not setup(t, b, ["-Dlibvirt=disabled", "-Dguest_tool=disabled",
                        "-Dkernel_module=disabled", "-Dwerror=true"], what):
        return
    p = run(["nice", "ninja", "-C", b])
    if not t.eq(p.returncode, 0, "%s: the build succeeds with -Werror"
                % what):
        t.diag(tail(p))
        return
    g = os.path.join(b, "tools", "gpup2p", "gpup2p")

    needed = needed_libraries(g)
    t.ok(any(n.startswith("libglib-2.0") for n in needed) and
         not [n for n in needed if "virt" in n or "xml" in n],
         "readelf: gpup2p needs glib but neither libvirt nor libxml2",
         needed)
    p = run(["ldd", g])
    t.ok(p.returncode == 0 and "libglib-2.0" in p.stdout and
         "libvirt" not in p.stdout and "libxml2" not in p.stdout,
         "ldd: no libvirt or libxml2 is loaded with gpup2p", p.stdout)

    p = run([g, "--version"])
    t.eq(p.stdout.splitlines()[1:],
         ["features: -libvirt -guest-tool -kernel-module"],
         "gpup2p --version lists the parts as not built")

    p = run([g, "libvirt", "--check", "-"], input="<domain/>")
    t.ok(p.returncode == 1 and
         p.stderr == "gpup2p libvirt: %s\n" % WITHOUT_LIBVIRT,
         "gpup2p libvirt exits 1 (failed operation) saying why",
         "exit %d: %s" % (p.returncode, p.stderr))
    p = run([g, "libvirt", "--help"])
    t.ok(p.returncode == 0 and WITHOUT_LIBVIRT in p.stdout,
         "gpup2p libvirt --help says it is not in this build", p.stdout)
    xml = os.path.join(d, "vm.xml")
    with open(xml, "w") as f:
        f.write("<domain type='kvm'><name>vm</name></domain>\n")
    p = run([g, "check", "--sysfs-root", FIXTURE, "--domain", xml])
    t.ok(p.returncode == 1 and WITHOUT_LIBVIRT in p.stderr and
         xml in p.stderr,
         "gpup2p check --domain exits 1 naming the file and why",
         "exit %d: %s" % (p.returncode, p.stderr))

    p = run([g, "topo", "--sysfs-root", FIXTURE, "--json"])
    t.ok(p.returncode == 0 and json.loads(p.stdout).get("devices"),
         "gpup2p topo reads the captured host", tail(p))
    if t.ok(FULL_GPUP2P and os.access(FULL_GPUP2P, os.X_OK),
            "the full build's gpup2p is there to compare with",
            FULL_GPUP2P):
        full = run([FULL_GPUP2P, "topo", "--sysfs-root", FIXTURE, "--json"])
        t.ok(full.returncode == 0 and full.stdout == p.stdout,
             "topo: the same output as the full build's gpup2p")

    t.ok(not os.path.exists(os.path.join(b, "guest-tools",
                                         "gpup2p-verify")),
         "no gpup2p-verify is built")
    t.ok(not glob.glob(os.path.join(b, "**", "*.ko"), recursive=True),
         "no kernel module is built")

    tests = {x["name"] for x in introspect(b, "tests") or []}
    t.ok({"cli", "docs", "host-service"} <= tests and
         not tests & (LIBVIRT_TESTS | GUEST_TOOL_TESTS),
         "tests of the left-out parts are not defined (not skipped)",
         sorted(tests & (LIBVIRT_TESTS | GUEST_TOOL_TESTS)) or sorted(tests))
    plan = installed_names(b)
    t.ok(any(x.endswith("/gpup2p-host-topology.service") for x in plan) and
         not [x for x in plan if "libvirt" in x or "apparmor" in x or
              x.endswith("60-gpup2p.rules") or "modules-load" in x or
              x.endswith("gpup2p-verify")],
         "install: the host service, no hook, AppArmor snippet, module "
         "files or guest tool", plan)

    # The unit tests this configuration defines (the CLI's refusal cases
    # among them).
    p = run(["nice", "meson", "test", "-C", b, "--print-errorlogs",
             "--suite", "unit"])
    t.ok(p.returncode == 0 and "Ok:" in p.stdout,
         "meson test --suite unit passes in this build", tail(p))


def kernel_release():
    """KVER, the virtual GPU host's kernel, else the newest headers."""
    if os.environ.get("KVER"):
        return os.environ["KVER"]
    for f in (os.path.join(os.environ.get("VHOST_CACHE", "/nonexistent"),
                           "kernel-version"),
              os.path.join(SRC, "build", "vhost", "kernel-version")):
        try:
            with open(f) as fh:
                kver = fh.read().strip()
            if os.path.isdir("/lib/modules/%s/build" % kver):
                return kver
        except OSError:
            pass
    found = sorted(glob.glob("/lib/modules/*/build"))
    return found[-1].split("/")[3] if found else None


def test_kernel_module(t, d):
    kver = kernel_release()
    if not t.ok(kver and os.path.isdir("/lib/modules/%s/build" % kver),
                "kernel headers to build the module against are installed",
                "none in /lib/modules/*/build (%s)" % kver):
        return
    what = "with the kernel module for %s" % kver
    bad = os.path.join(d, "no-headers")
    p = run(["meson", "setup", bad, SRC, "-Dkernel_module=enabled",
             "-Dkernel_release=0.0-none"])
    t.ok(p.returncode != 0 and "/lib/modules/0.0-none/build" in p.stdout,
         "-Dkernel_module=enabled without headers: setup fails naming them",
         tail(p))

    b = os.path.join(d, "kmod")
    if not setup(t, b, ["-Dkernel_module=enabled",
                        "-Dkernel_release=" + kver, "-Dlibvirt=disabled",
                        "-Dguest_tool=disabled", "-Dwerror=true"], what):
        return
    p = run(["nice", "ninja", "-C", b, "gpup2p.ko", "tools/gpup2p/gpup2p"])
    if not t.eq(p.returncode, 0, "%s: kbuild builds gpup2p.ko" % what):
        t.diag(tail(p))
        return
    ko = os.path.join(b, "gpup2p.ko")
    p = run(["modinfo", "-F", "vermagic", ko])
    t.ok(p.returncode == 0 and p.stdout.startswith(kver + " "),
         "modinfo reads gpup2p.ko as a module for %s" % kver, tail(p))
    p = run(["modinfo", "-F", "name", ko])
    t.eq(p.stdout.strip(), "gpup2p", "modinfo: the module is named gpup2p")
    p = run(["modinfo", "-F", "license", ko])
    t.ok(p.returncode == 0 and p.stdout.strip(),
         "modinfo: the module states its license", tail(p))

    mtime = os.stat(ko).st_mtime_ns
    p = run(["nice", "ninja", "-C", b, "gpup2p.ko"])
    t.ok(p.returncode == 0 and os.stat(ko).st_mtime_ns == mtime,
         "a second build runs kbuild and leaves the unchanged module as is",
         tail(p))
    p = run([os.path.join(b, "tools", "gpup2p", "gpup2p"), "--version"])
    t.eq(p.stdout.splitlines()[1:],
         ["features: -libvirt -guest-tool +kernel-module"],
         "gpup2p --version lists the kernel module as built")
    plan = installed_names(b)
    t.ok(not [x for x in plan if x.endswith(".ko") or
              x.endswith("60-gpup2p.rules") or "modules-load" in x],
         "install: neither the module nor its udev rule and modules-load "
         "file (DKMS's package installs them, with the group)", plan)


def test(t):
    missing = [p for p in NEEDED if not shutil.which(p)]
    if not t.eq(missing, [], "the programs the test needs are installed"):
        return
    with tempfile.TemporaryDirectory(prefix="gpup2p-options-") as d:
        test_reduced(t, d)
        test_kernel_module(t, d)


if __name__ == "__main__":
    Tap().run(test)
