#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The Debian packages: dpkg-buildpackage builds them from the tree, dpkg
installs them (in a throwaway overlay of /usr, /etc and /var), and the
installed tools, DKMS module, unit, udev rule, hook and AppArmor snippet
are where Debian's tools expect them; purging removes them."""

import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
from taplib import Tap, read_text  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
FIXTURE = os.path.join(SRC, "tests", "fixtures", "vhost-two-numa")
# Our QEMU's build tree for the package (argument 1: the tree the
# integration suite builds, so CI builds QEMU once).
QEMU_BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else \
    os.path.join(SRC, "build", "qemu")
PACKAGED_QEMU = "/usr/lib/gpup2p/qemu/bin/qemu-system-x86_64"
NEEDED = ["dpkg-buildpackage", "dh", "dh_dkms", "dkms", "unshare", "git",
          "modinfo", "meson"]


def copy_tree(dest):
    """The tracked and untracked (not ignored) files, as a checkout has."""
    files = subprocess.run(["git", "-C", SRC, "ls-files", "-co",
                            "--exclude-standard", "-z"], check=True,
                           capture_output=True).stdout
    pack = subprocess.Popen(["tar", "-C", SRC, "--null", "-T", "-", "-cf",
                             "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    unpack = subprocess.Popen(["tar", "-C", dest, "-xf", "-"],
                              stdin=pack.stdout)
    pack.stdin.write(files)
    pack.stdin.close()
    pack.stdout.close()
    return pack.wait() == 0 and unpack.wait() == 0


def test(t):
    missing = [p for p in NEEDED if not shutil.which(p)]
    if not t.eq(missing, [], "the programs the test needs are installed"):
        return
    if not t.eq(os.geteuid(), 0, "runs as root (mount namespace, dpkg)"):
        return
    with tempfile.TemporaryDirectory(prefix="gpup2p-deb-") as d:
        src = os.path.join(d, "vfio-gpu-p2p")
        os.makedirs(src)
        t.ok(copy_tree(src), "the tree is copied for the build")
        # With our QEMU (build profile pkg.vfio-gpu-p2p.qemu), built in a tree
        # kept under the build directory: a later run rebuilds only what
        # changed.
        env = dict(os.environ, GPUP2P_QEMU_BUILD=QEMU_BUILD)
        p = subprocess.run(["nice", "dpkg-buildpackage", "-us", "-uc", "-b",
                            "-Ppkg.vfio-gpu-p2p.qemu"], cwd=src, env=env,
                           capture_output=True, text=True)
        if not t.eq(p.returncode, 0, "dpkg-buildpackage builds the packages"):
            t.diag((p.stdout + p.stderr)[-4000:])
            return
        debs = {os.path.basename(f).split("_")[0]: f
                for f in glob.glob(os.path.join(d, "*.deb"))}
        t.ok({"gpup2p", "gpup2p-dkms", "gpup2p-verify", "gpup2p-qemu",
              "gpup2p-qemu-modules"} <= set(debs),
             "gpup2p, gpup2p-dkms, gpup2p-verify, gpup2p-qemu and "
             "gpup2p-qemu-modules are built", sorted(debs))
        qemu_deps = subprocess.run(["dpkg-deb", "-f", debs["gpup2p-qemu"],
                                    "Depends"], capture_output=True,
                                   text=True).stdout
        t.ok("libseccomp" in qemu_deps and "libnuma" in qemu_deps and
             "libgtk" not in qemu_deps and "librbd" not in qemu_deps,
             "gpup2p-qemu depends on seccomp and NUMA libraries, not on "
             "GTK or Ceph (those are gpup2p-qemu-modules')", qemu_deps)
        contents = subprocess.run(["dpkg-deb", "-c", debs["gpup2p"]],
                                  capture_output=True, text=True).stdout
        t.ok("libvirt" not in subprocess.run(
                ["dpkg-deb", "-f", debs["gpup2p"], "Depends"],
                capture_output=True, text=True).stdout,
             "gpup2p does not depend on libvirt (it opens it when needed)")
        t.ok("./usr/src/gpup2p-" not in contents,
             "the module source is only in gpup2p-dkms")

        out = os.path.join(d, "out")
        os.makedirs(out)
        p = subprocess.run(["unshare", "-m", "--propagation", "private",
                            os.path.join(HERE, "install_in_overlay.sh"), d,
                            out, FIXTURE], capture_output=True, text=True)
        if not t.eq(p.returncode, 0, "the overlay for installing is set up"):
            t.diag(p.stdout + p.stderr)
            return
        check_installed(t, out)
    p = subprocess.run(["dpkg", "-s", "gpup2p"], capture_output=True)
    t.ok(p.returncode != 0, "the machine itself stays without the packages")


# What kernel/ holds for the tree's own build and install only.
KERNEL_BUILD_FILES = {"build.sh", "dkms.conf", "60-gpup2p.rules",
                      "gpup2p.conf"}


def kernel_listing():
    """`sha256sum` lines (sorted by path) of kernel/ as the package test's
    copy of the tree has it, less KERNEL_BUILD_FILES."""
    files = subprocess.run(["git", "-C", SRC, "ls-files", "-co",
                            "--exclude-standard", "-z", "--", "kernel"],
                           check=True, capture_output=True).stdout
    lines = []
    for rel in sorted(f.decode() for f in files.split(b"\0") if f):
        sub = rel[len("kernel/"):]
        if sub in KERNEL_BUILD_FILES:
            continue
        with open(os.path.join(SRC, rel), "rb") as f:
            lines.append("%s  ./%s" % (hashlib.sha256(f.read()).hexdigest(),
                                       sub))
    return "".join(l + "\n" for l in lines)


def rc(out, name):
    return read_text(out, name + ".rc")


def check_installed(t, out):
    t.eq(rc(out, "install"), "0", "dpkg -i installs the packages")
    t.diag(read_text(out, "install.txt")[-1500:])
    calls = read_text(out, "deb-systemd-invoke.log").splitlines()
    t.ok("try-restart virtqemud.service libvirtd.service" in calls,
         "the install restarts a running libvirt daemon, which finds hooks "
         "only when it starts", calls)
    again = read_text(out, "deb-systemd-invoke-reconfigure.log")
    t.ok(rc(out, "reconfigure") == "0" and
         "libvirtd.service" not in again,
         "configured again with the hook and snippet unchanged: libvirt is "
         "not restarted", again)
    t.eq(rc(out, "version"), "0", "gpup2p --version runs")
    status = read_text(out, "dkms-status.txt")
    t.ok(rc(out, "dkms-status") == "0" and "gpup2p/" in status,
         "dkms status lists gpup2p", status)
    if glob.glob("/lib/modules/*/build"):
        t.ok(": installed" in status, "DKMS built and installed the module "
             "for the kernel whose headers are here", status)
        info = read_text(out, "modinfo.txt")
        t.ok(rc(out, "modinfo") == "0" and "name:           gpup2p" in info,
             "modinfo reads the built module", info)
    files = read_text(out, "files.txt")
    t.eq(rc(out, "files"), "0", "unit, udev rule, AppArmor snippet, hook "
         "and snapshot script are installed")
    t.ok("-rwxr-xr-x" in [l.split()[0] for l in files.splitlines()
                          if "hooks/qemu.d/gpup2p" in l],
         "the libvirt hook is executable", files)
    t.eq(rc(out, "module-files"), "0", "gpup2p-dkms installs the "
         "module's udev rule and an example modules-load file")
    t.eq(rc(out, "no-autoload"), "0", "nothing loads the optional module "
         "at boot unless the operator asks")
    t.eq(read_text(out, "dkms-source.txt"), kernel_listing().strip(),
         "the DKMS source is kernel/ as it is, less the tree's build files")
    t.eq(rc(out, "module-group"), "0", "gpup2p-dkms creates the gpup2p "
         "group (sysusers)")
    t.eq(rc(out, "man"), "0", "gpup2p installs its manual page")
    check_qemu(t, out)
    t.ok(read_text(out, "enabled.txt").endswith(
         "gpup2p-host-topology.service"),
         "the package enables the topology service")
    t.eq(rc(out, "verify-help"), "0", "gpup2p-verify --help runs")
    t.eq(rc(out, "hook"), "0", "the installed hook passes a domain without "
         "clique ids")
    t.ok(rc(out, "snapshot") == "0" and rc(out, "snapshot-topo") == "0",
         "the installed snapshot script fills /run/gpup2p/host",
         read_text(out, "snapshot.txt"))
    if os.path.exists(os.path.join(out, "nolibvirt-topo.rc")):
        t.eq(rc(out, "nolibvirt-topo"), "0",
             "without libvirt0, gpup2p topo runs")
        t.ok(rc(out, "nolibvirt-connect") == "1" and
             "libvirt's client library" in
             read_text(out, "nolibvirt-connect.txt"),
             "without libvirt0, --connect says what is missing",
             read_text(out, "nolibvirt-connect.txt"))
    t.eq(rc(out, "purge"), "0", "dpkg --purge removes the packages")
    t.ok("gpup2p/" not in read_text(out, "dkms-after.txt"),
         "... and DKMS forgets the module")
    t.eq((rc(out, "files-after"), read_text(out, "files-after.txt")),
         ("0", ""), "... and their files")


def check_qemu(t, out):
    """gpup2p-qemu: QEMU with the extension in its own prefix."""
    t.ok(rc(out, "qemu-version") == "0" and re.search(
         r"version 10\.0\.13 \(vfio-gpu-p2p [0-9.]+, "
         r"Debian 1:10\.0\.13\+ds-0\+deb13u1\)",
         read_text(out, "qemu-version.txt")),
         "the packaged QEMU runs (%s): Debian 13's 10.0.13 with ours" %
         PACKAGED_QEMU, read_text(out, "qemu-version.txt"))
    displays = read_text(out, "qemu-display.txt").split()
    t.ok(rc(out, "qemu-display") == "0" and "curses" in displays and
         "gtk" not in displays,
         "gpup2p-qemu loads its own modules (curses), not the others' "
         "(gtk)", displays)
    t.eq(rc(out, "qemu-modules-install"), "0",
         "gpup2p-qemu-modules installs beside it")
    displays = read_text(out, "qemu-display-all.txt").split()
    t.ok(rc(out, "qemu-display-all") == "0" and
         {"curses", "gtk", "sdl", "egl-headless", "spice-app"} <=
         set(displays), "... and then GTK, SDL, OpenGL and SPICE displays "
         "load", displays)
    before = read_text(out, "qemu-ssh.txt")
    after = read_text(out, "qemu-ssh-all.txt")
    t.ok("Unable to load module ssh" in before and
         "Failed to connect to '127.0.0.1:1'" in after,
         "... and the block drivers Debian ships in qemu-block-extra (a "
         "-blockdev driver=ssh: module missing before, the driver's own "
         "error after)", "before: %s\nafter: %s" % (before, after))
    props = read_text(out, "qemu-vfio-help.txt")
    line = [l for l in props.splitlines() if "x-gpu-p2p-clique=" in l]
    t.ok(rc(out, "qemu-vfio-help") == "0" and len(line) == 1 and
         '(default: off)' in line[0],
         "its vfio-pci has x-gpu-p2p-clique, default off (stock's guest "
         "ABI)", line or props)
    machines = read_text(out, "qemu-machines.txt")
    t.ok(rc(out, "qemu-machines") == "0" and re.search(
        r"^q35-gpup2p .*alias of pc-q35-[0-9.]+-gpup2p\)$", machines, re.M),
        "and the machine type q35-gpup2p makes auto the default", machines)
    t.ok(rc(out, "qemu-start") == "0", "a q35 machine starts from the "
         "package's prefix (firmware found) and quits",
         read_text(out, "qemu-start.txt"))
    t.eq(read_text(out, "qemu-emulator.txt").strip(),
         "<emulator>%s</emulator>" % PACKAGED_QEMU,
         "gpup2p libvirt makes the packaged QEMU the domain's <emulator>")


if __name__ == "__main__":
    Tap().run(test)
