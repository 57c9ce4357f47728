#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Our QEMU against Debian's own: the same source package (Debian 13's
qemu 1:10.0.13+ds-0+deb13u1), so an operator who moves a domain to ours
keeps every feature. The judge is Debian's qemu-system-x86 binary of that
version, run from a trixie root of its own (tests/vhost/debian-qemu.sh),
with Debian's module packages. Both run with the same set of modules:
first those Debian ships in qemu-system-common (what gpup2p-qemu
installs), then all of them (gpup2p-qemu-modules; Debian's qemu-system-gui,
qemu-system-modules-opengl, qemu-system-modules-spice and
qemu-block-extra). Ours may differ only by the extension's own machine
types and vfio-pci properties, and by the blkio block driver, which
Debian 12 cannot build (no libblkio)."""

import os
import subprocess
import tempfile

from taplib import Tap, PROJECT

VERSION = "1:10.0.13+ds-0+deb13u1"
MODULE_PACKAGES = ["qemu-system-gui", "qemu-system-modules-opengl",
                   "qemu-system-modules-spice", "qemu-block-extra"]
QEMU_BUILD = os.path.join(PROJECT, "build", "qemu")
PREFIX = "/usr/lib/gpup2p/qemu"
OURS = os.path.join(QEMU_BUILD, "stage" + PREFIX, "bin",
                    "qemu-system-x86_64")
OUR_MODULES = os.path.join(QEMU_BUILD, "stage" + PREFIX, "lib", "qemu")
JUDGE = os.path.join(PROJECT, "build", "qemu-judge", "qemu-system-x86_64")
# The drivers of Debian's block-blkio module (virtio-blk-* and the
# io_uring pair), absent from a build without libblkio.
BLKIO_DRIVERS = {"io_uring", "nvme-io_uring", "virtio-blk-vfio-pci",
                 "virtio-blk-vhost-user", "virtio-blk-vhost-vdpa"}
# Help listings compared line by line.
LISTINGS = [
    # Every option and its defaults (the bridge helper's path among them),
    # less the version line.
    ("-help", ["-help"]),
    ("-netdev help", ["-netdev", "help"]),
    ("-display help", ["-display", "help"]),
    ("-audiodev help", ["-audiodev", "help"]),
    ("-chardev help", ["-chardev", "help"]),
    ("-accel help", ["-accel", "help"]),
    ("-cpu help", ["-cpu", "help"]),
    ("-device help", ["-device", "help"]),
    ("-object help", ["-object", "help"]),
]
# Guest ABI: the properties and defaults of the machine type a domain
# names and of the devices libvirt gives a GPU VM, as Debian's.
ABI_LISTINGS = [
    ("pc-q35-10.0's properties", ["-machine", "pc-q35-10.0,help"]),
] + [("%s's properties" % d, ["-machine", "pc-q35-10.0", "-device",
                               d + ",help"])
     for d in ("vfio-pci", "pcie-root-port", "virtio-net-pci",
               "virtio-blk-pci", "virtio-scsi-pci", "virtio-iommu-pci",
               "intel-iommu", "ich9-ahci", "qemu-xhci", "virtio-gpu-pci")]
# A start that reaches the monitor and quits: each needs a feature the
# old minimal build lacked (seccomp, NUMA binding, VNC, slirp).
STARTS = [
    ("-sandbox on", ["-sandbox", "on"]),
    ("a memory backend bound to host node 0",
     ["-m", "64M", "-object",
      "memory-backend-ram,id=m0,size=64M,host-nodes=0,policy=bind",
      "-numa", "node,memdev=m0"]),
    ("a VNC display on a UNIX socket", ["-vnc", "unix:{tmp}/vnc.sock"]),
    ("user-mode networking", ["-netdev", "user,id=n0", "-device",
                              "virtio-net-pci,netdev=n0"]),
]
# Extra block drivers: a blockdev each against a closed local port (rbd: a
# missing configuration file). With the module the driver itself fails to
# connect; without it QEMU names the package to install (Debian's patch)
# or does not know the driver. The error is compared.
BLOCKDEVS = [
    ("ssh", "driver=ssh,node-name=b,server.host=127.0.0.1,server.port=1,"
     "path=/x,user=u"),
    ("iscsi", "driver=iscsi,node-name=b,transport=tcp,portal=127.0.0.1:1,"
     "target=iqn.2026-01.invalid:x,lun=0"),
    ("https", "driver=https,node-name=b,url=https://127.0.0.1:1/x,"
     "read-only=on"),
    ("nfs", "driver=nfs,node-name=b,server.type=inet,server.host=127.0.0.1,"
     "path=/x"),
    ("rbd", "driver=rbd,node-name=b,pool=p,image=i,conf=/nonexistent"),
    ("gluster", "driver=gluster,node-name=b,volume=v,path=/x,"
     "server.0.type=inet,server.0.host=127.0.0.1,server.0.port=1"),
]


def run(qemu, args, modules, tmp, timeout=60):
    env = dict(os.environ, QEMU_MODULE_DIR=modules)
    try:
        p = subprocess.run([qemu] + args, env=env, capture_output=True,
                           text=True, timeout=timeout, cwd=tmp)
    except subprocess.TimeoutExpired:
        return 124, "", "timed out after %d s" % timeout
    return p.returncode, p.stdout, p.stderr


def module_set(folder, names, tmp, label):
    """A folder of links to the named modules of @folder."""
    d = os.path.join(tmp, label)
    os.makedirs(d)
    for n in names:
        os.symlink(os.path.join(folder, n), os.path.join(d, n))
    return d


def debian_common_modules(root):
    """The modules Debian's qemu-system-common installs (its dpkg list in
    the judge's root)."""
    path = os.path.join(root, "var", "lib", "dpkg", "info",
                        "qemu-system-common.list")
    with open(path) as f:
        return sorted(os.path.basename(l.strip()) for l in f
                      if l.strip().endswith(".so"))


def ours_only(line):
    return "gpup2p" in line or "x-gpu-p2p-" in line


def version_line(line):
    """-help's first line: each binary's own version string."""
    return line.startswith("QEMU emulator version ")


def compare_listing(t, label, name, args, ours, judge, tmp):
    o = run(OURS, args, ours, tmp)
    j = run(JUDGE, args, judge, tmp)
    ol = [l for l in o[1].splitlines()
          if not ours_only(l) and not version_line(l)]
    jl = [l for l in j[1].splitlines() if not version_line(l)]
    missing = [l for l in jl if l not in ol]
    extra = [l for l in ol if l not in jl]
    t.ok(o[0] == 0 and j[0] == 0 and ol == jl,
         "%s: %s lists what Debian's lists" % (label, name),
         "ours rc %d, Debian's rc %d\nonly Debian's: %s\nonly ours: %s\n"
         "stderr: %s | %s" % (o[0], j[0], missing[:20], extra[:20],
                              o[2][-300:], j[2][-300:]))


def only_added(t, args, mark, name, ours, judge, tmp):
    """Ours lists Debian's lines, and more only where they carry @mark."""
    o = run(OURS, args, ours, tmp)[1].splitlines()
    j = run(JUDGE, args, judge, tmp)[1].splitlines()
    added = sorted(set(o) - set(j))
    gone = sorted(set(j) - set(o))
    t.ok(not gone and added and all(mark in l for l in added), name,
         "only ours: %s\nonly Debian's: %s" % (added, gone))


def start_and_quit(qemu, args, modules, tmp):
    env = dict(os.environ, QEMU_MODULE_DIR=modules)
    cmd = [qemu, "-machine", "q35", "-accel", "tcg", "-nodefaults",
           "-display", "none", "-S", "-monitor", "stdio"] + \
        [a.replace("{tmp}", tmp) for a in args]
    try:
        p = subprocess.run(cmd, env=env, input="quit\n", capture_output=True,
                           text=True, timeout=120, cwd=tmp)
    except subprocess.TimeoutExpired:
        return 124, "timed out"
    return p.returncode, p.stderr.strip()


def blockdev_error(qemu, spec, modules, tmp):
    env = dict(os.environ, QEMU_MODULE_DIR=modules)
    cmd = [qemu, "-machine", "none", "-nodefaults", "-display", "none",
           "-S", "-blockdev", spec]
    try:
        p = subprocess.run(cmd, env=env, input="", capture_output=True,
                           text=True, timeout=60, cwd=tmp)
    except subprocess.TimeoutExpired:
        return "timed out"
    lines = p.stderr.strip().splitlines()
    if not lines:
        return "rc %d" % p.returncode
    # "qemu-system-x86_64: -blockdev ...: <driver's words>[: <library's>]":
    # the last error (after any deprecation warning), without the
    # program's path and without what the library adds (libcurl's words
    # differ between Debian 12 and 13).
    return ": ".join(lines[-1].split(": ")[1:4])


def formats(qemu, modules, tmp):
    rc, out, _ = run(qemu, ["-drive", "format=help"], modules, tmp)
    first = out.splitlines()[0] if out else ""
    return rc, set(first.split(":", 1)[-1].split())


def compare_set(t, label, ours, judge, tmp):
    for name, args in LISTINGS:
        compare_listing(t, label, name, args, ours, judge, tmp)
    (orc, of), (jrc, jf) = formats(OURS, ours, tmp), formats(JUDGE, judge,
                                                              tmp)
    t.ok(orc == 0 and jrc == 0 and of == jf - BLKIO_DRIVERS,
         "%s: -drive format=help lists Debian's formats, less blkio's" %
         label, "only Debian's: %s\nonly ours: %s" %
         (sorted(jf - of - BLKIO_DRIVERS), sorted(of - jf)))
    for drv, spec in BLOCKDEVS:
        o = blockdev_error(OURS, spec, ours, tmp)
        j = blockdev_error(JUDGE, spec, judge, tmp)
        t.ok(o == j and o != "timed out",
             "%s: -blockdev driver=%s ends as Debian's does" % (label, drv),
             "ours: %s\nDebian's: %s" % (o, j))


def test(t):
    for path, what in ((OURS, "our QEMU's install tree (build-qemu.sh)"),
                       (os.path.join(QEMU_BUILD, "modules-common.txt"),
                        "build-qemu.sh's module split")):
        if not t.ok(os.path.exists(path), "%s is there" % what, path):
            return
    p = subprocess.run([os.path.join(PROJECT, "tests", "vhost",
                                     "debian-qemu.sh"), "trixie", VERSION,
                        JUDGE] + MODULE_PACKAGES, capture_output=True,
                       text=True)
    if not t.ok(p.returncode == 0, "Debian's qemu-system-x86 %s with its "
                "module packages is set up as the judge" % VERSION,
                p.stderr[-2000:]):
        return
    root = os.path.join(os.environ.get("GPUP2P_CACHE", "/var/cache/gpup2p"),
                        "trixie-qemu-%s-modules" %
                        VERSION.replace(":", "_").replace("+", "_")
                        .replace("~", "_"))
    judge_all = os.path.join(root, "usr", "lib", "x86_64-linux-gnu", "qemu")
    debian_common = debian_common_modules(root)
    with open(os.path.join(QEMU_BUILD, "modules-common.txt")) as f:
        our_common = f.read().split()
    t.eq(our_common, debian_common, "gpup2p-qemu's modules are those "
         "Debian's qemu-system-common ships")
    our_all = sorted(n for n in os.listdir(OUR_MODULES) if n.endswith(".so"))
    judge_names = sorted(n for n in os.listdir(judge_all)
                         if n.endswith(".so"))
    t.eq(our_all, [n for n in judge_names if n != "block-blkio.so"],
         "ours builds every module Debian's packages hold, blkio's aside")

    with tempfile.TemporaryDirectory(prefix="gpup2p-parity-") as tmp:
        common_ours = module_set(OUR_MODULES, our_common, tmp, "ours-common")
        common_judge = module_set(judge_all, debian_common, tmp,
                                  "debian-common")
        compare_set(t, "qemu-system-common's modules", common_ours,
                    common_judge, tmp)
        for name, args in ABI_LISTINGS:
            compare_listing(t, "guest ABI", name, args, common_ours,
                            common_judge, tmp)
        for name, args in STARTS:
            o = start_and_quit(OURS, args, common_ours, tmp)
            j = start_and_quit(JUDGE, args, common_judge, tmp)
            t.ok(o[0] == 0 and j[0] == 0,
                 "%s: ours starts and quits, as Debian's does" % name,
                 "ours: rc %d %s\nDebian's: rc %d %s" % (o[0], o[1][-500:],
                                                         j[0], j[1][-500:]))
        compare_set(t, "every module", OUR_MODULES, judge_all, tmp)

        # Ours adds only the extension's vfio-pci properties and machine
        # types.
        only_added(t, ["-device", "vfio-pci,help"], "x-gpu-p2p-",
                   "vfio-pci: Debian's properties and the x-gpu-p2p-* ones",
                   common_ours, common_judge, tmp)
        only_added(t, ["-machine", "help"], "gpup2p",
                   "-machine help: Debian's machine types and the -gpup2p "
                   "ones", common_ours, common_judge, tmp)

if __name__ == "__main__":
    Tap().run(test)
