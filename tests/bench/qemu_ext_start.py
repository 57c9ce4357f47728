#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Inside the virtual host: QEMU start to QMP quit with four vfio-pci GPU
stand-ins, for Debian's stock QEMU, ours with the extension off, ours with
auto from a host snapshot and ours with auto from sysfs, alternating, one
line of JSON per start."""

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
from vfio_helpers import PROJECT, bdf, bind_vfio, modprobe  # noqa: E402

OURS = os.environ.get("GPUP2P_QEMU", os.path.join(
    PROJECT, "build", "qemu", "qemu-system-x86_64"))
STOCK = "/usr/bin/qemu-system-x86_64"
# Debian's QEMU 11.1 (tests/vhost/stock-qemu-newer.sh), when built here.
STOCK_NEWER = os.path.join(PROJECT, "build", "qemu-stock-newer",
                           "qemu-system-x86_64")
SNAPSHOT = "/run/gpup2p/host"
ROUNDS = int(os.environ.get("ROUNDS", "7"))


def start(qemu, devices):
    cmd = [qemu, "-L", "/usr/share/seabios", "-L", "/usr/share/qemu",
           "-nodefaults", "-display", "none", "-M", "q35", "-accel", "kvm",
           "-cpu", "host", "-m", "256M", "-S", "-qmp", "stdio"]
    for i, d in enumerate(devices):
        cmd += ["-device", "pcie-root-port,id=rp%d,chassis=%d,addr=%x.0"
                % (i, i + 1, 0x10 + i), "-device", d + ",bus=rp%d" % i]
    t0 = time.monotonic()
    p = subprocess.run(cmd, input='{"execute":"qmp_capabilities"}\n'
                       '{"execute":"quit"}\n', capture_output=True,
                       text=True, timeout=120)
    secs = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit("qemu_ext_start: %s failed: %s" % (qemu, p.stderr))
    return secs


def main():
    modprobe("kvm_amd")
    gpus = [bdf(n) for n in ("gpu0", "gpu1", "gpu3", "gpu2")]
    for g in gpus:
        bind_vfio(g)
    os.makedirs(os.path.dirname(SNAPSHOT), exist_ok=True)
    subprocess.run([os.path.join(PROJECT, "build", "tools", "gpup2p",
                                 "gpup2p"), "snapshot", SNAPSHOT], check=True)
    base = ["vfio-pci,host=%s,x-pci-vendor-id=0x10de" % g for g in gpus]
    variants = {
        "stock": (STOCK, base),
        "off": (OURS, [d + ",x-gpu-p2p-clique=off" for d in base]),
        "auto-snapshot": (OURS, [d + ",x-gpu-p2p-clique=auto,"
                                 "x-gpu-p2p-host-snapshot=" + SNAPSHOT
                                 for d in base]),
        "auto-sysfs": (OURS, [d + ",x-gpu-p2p-clique=auto" for d in base]),
    }
    if os.path.exists(STOCK_NEWER):
        variants["stock-11.1"] = (STOCK_NEWER, base)
    start(STOCK, base)                  # warm the page cache first
    for _ in range(ROUNDS):
        for name, (qemu, devs) in variants.items():
            print(json.dumps({"variant": name, "seconds": start(qemu, devs)}),
                  flush=True)


if __name__ == "__main__":
    main()
