# SPDX-License-Identifier: GPL-2.0-or-later
"""Our QEMU on this host, under TCG and paused (-S): nothing boots and no
device is assigned.
- Our machine type keeps its parent's guest ABI: every property of the
  machine and of a set of devices, read over QMP (qom-get), is the same on
  pc-q35-X.Y-gpup2p as on pc-q35-X.Y of the same binary. The one intended
  difference, vfio-pci's x-gpu-p2p-clique default, needs a host device and
  is checked in qemu_ext inside the virtual host.
- x-gpu-p2p-clique takes off, auto or a decimal id 0-15 and nothing else:
  the property's setter runs before vfio-pci looks for its host device, so
  a refused value is told apart by the setter's own message."""

import os
import subprocess
import tempfile

from taplib import Tap
from qemu_cfg import OURS
from vfio_helpers import Qmp

# Devices whose defaults QEMU's compat tables have changed between q35
# versions, and that start without a backend.
DEVICES = [
    "virtio-iommu-pci,id=viommu",
    "virtio-net-pci,id=vnet",
    "e1000e,id=e1000e",
    "virtio-rng-pci,id=vrng",
    "virtio-balloon-pci,id=vballoon",
    "virtio-scsi-pci,id=vscsi",
    "virtio-serial-pci,id=vserial",
    "qemu-xhci,id=xhci",
    "pcie-root-port,id=rp,chassis=9,slot=9",
]
# Properties that name the machine type itself, or read the clock.
MACHINE_OWN = {"type", "rtc-time"}


def props(qmp, path):
    """{name: value} of every readable, non-child, non-link property."""
    out = {}
    listed = qmp.cmd("qom-list", path=path)
    for p in listed.get("return", []):
        if p["type"].startswith(("child<", "link<")):
            continue
        r = qmp.cmd("qom-get", path=path, property=p["name"])
        if "return" in r:
            out[p["name"]] = r["return"]
    return out


def snapshot(machine):
    """Properties of /machine and of each device, on MACHINE."""
    tmp = tempfile.mkdtemp(prefix="qcompat-")
    sock = os.path.join(tmp, "qmp.sock")
    cmd = [OURS, "-L", "/usr/share/seabios", "-L", "/usr/share/qemu",
           "-nodefaults", "-display", "none", "-M", machine, "-accel", "tcg",
           "-m", "64M", "-S", "-qmp", "unix:%s,server=on,wait=off" % sock]
    for d in DEVICES:
        cmd += ["-device", d]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        qmp = Qmp(sock, timeout=60)
    except OSError:
        proc.kill()
        _, err = proc.communicate()
        raise RuntimeError("%s did not start: %s" % (machine, err.strip()))
    try:
        result = {"/machine": props(qmp, "/machine")}
        for d in DEVICES:
            dev = d.split("id=")[1].split(",")[0]
            result[dev] = props(qmp, "/machine/peripheral/" + dev)
    finally:
        qmp.close()
        proc.terminate()
        proc.communicate(timeout=60)
    return result


def main(t):
    # scripts/test.sh builds it before this suite: missing is a failure.
    if not t.ok(os.access(OURS, os.X_OK), "our QEMU is built (%s)" % OURS,
                "run hw/vfio-gpu-p2p/build-qemu.sh"):
        return
    out = subprocess.run([OURS, "-machine", "help"], capture_output=True,
                         text=True, check=True).stdout
    ours, aliases = [], {}
    for line in out.splitlines():
        words = line.split()
        if not words or not words[0].endswith("-gpup2p"):
            continue
        if "(alias of" in line:
            aliases[words[0]] = line.split("(alias of")[1].strip(" )")
        else:
            ours.append(words[0])
    t.ok(ours, "our QEMU lists a versioned -gpup2p machine type", out)
    newest = max(ours, key=lambda m: [int(x) for x in
                                      m.split("-")[2].split(".")])
    t.eq(aliases.get("q35-gpup2p"), newest,
         "q35-gpup2p is an alias of the newest, %s" % newest)
    for machine in ours:
        parent = machine[:-len("-gpup2p")]
        want = snapshot(parent)
        got = snapshot(machine)
        for obj in want:
            a, b = want[obj], got.get(obj, {})
            if obj == "/machine":
                a = {k: v for k, v in a.items() if k not in MACHINE_OWN}
                b = {k: v for k, v in b.items() if k not in MACHINE_OWN}
            diff = sorted("%s: %s %r, %s %r" % (k, parent, a.get(k),
                                                machine, b.get(k))
                          for k in set(a) | set(b) if a.get(k) != b.get(k))
            t.ok(a and not diff, "%s %s: %d properties as on %s"
                 % (machine, obj, len(a), parent), "\n".join(diff))

    clique_values(t)
    verify_values(t)
    property_types(t)


CLIQUE_REFUSED = "is not off, auto or a clique id"
CLIQUE_GOOD = ["off", "auto", "0", "15"]
CLIQUE_BAD = ["16", "-1", "-18446744073709551613", " 3", "3 ", "+3", "3x",
              "0x3", "", "AUTO"]


def clique_values(t):
    for value in CLIQUE_GOOD + CLIQUE_BAD:
        r = subprocess.run(
            [OURS, "-nodefaults", "-display", "none", "-M", "q35",
             "-accel", "tcg", "-S", "-device",
             "vfio-pci,host=0000:ff:1f.7,x-gpu-p2p-clique=" + value],
            capture_output=True, text=True, timeout=60)
        refused = CLIQUE_REFUSED in r.stderr
        t.ok(r.returncode != 0 and refused == (value in CLIQUE_BAD),
             "x-gpu-p2p-clique=%r is %s" % (
                 value, "refused" if value in CLIQUE_BAD else "taken"),
             "exit %d: %s" % (r.returncode, r.stderr.strip()))


def verify_values(t):
    for value in ("refuse", "warn", "trust", "maybe", "", "WARN"):
        r = subprocess.run(
            [OURS, "-nodefaults", "-display", "none", "-M", "q35",
             "-accel", "tcg", "-S", "-device",
             "vfio-pci,host=0000:ff:1f.7,x-gpu-p2p-verify=" + value],
            capture_output=True, text=True, timeout=60)
        good = value in ("refuse", "warn", "trust")
        refused = "does not accept value" in r.stderr
        t.ok(r.returncode != 0 and refused != good,
             "x-gpu-p2p-verify=%r is %s" % (value,
                                          "taken" if good else "refused"),
             "exit %d: %s" % (r.returncode, r.stderr.strip()))


def property_types(t):
    """Management reads the verify values and the map status by type."""
    tmp = tempfile.mkdtemp(prefix="qprops-")
    sock = os.path.join(tmp, "qmp.sock")
    proc = subprocess.Popen(
        [OURS, "-nodefaults", "-display", "none", "-M", "q35", "-accel",
         "tcg", "-S", "-qmp", "unix:%s,server=on,wait=off" % sock],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        qmp = Qmp(sock, timeout=60)
        listed = qmp.cmd("qom-list-properties", typename="vfio-pci")
        qmp.close()
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
    types = {p["name"]: p["type"] for p in listed.get("return", [])}
    t.eq(types.get("x-gpu-p2p-verify"), "VfioGpuP2pVerify",
         "x-gpu-p2p-verify is the QAPI enum VfioGpuP2pVerify")
    t.eq(types.get("x-gpu-p2p-bar-map-status"), "VfioGpuP2pBarMaps",
         "x-gpu-p2p-bar-map-status is the QAPI struct VfioGpuP2pBarMaps")


Tap().run(main)
