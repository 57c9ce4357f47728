#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Inside the Linux 7.x virtual host (tests/bench/vm-start-bench.sh): what
a passed-through BAR adds to a VM's start, BAR mapping included. One QEMU
start is: launch, qtest handshake, then the guest's BAR programming as
firmware does it (root port windows, the 64-bit BAR, memory decode on) by
config writes, which is when the VMM maps the BAR into the IOMMU; then
quit. Timed to the moment the decode write returns. Per BAR size (the
ivshmem stand-ins of 1, 16 and 64 GiB), alternating:

  none           our QEMU, the same writes to an empty root port
  type1          our QEMU, vfio-pci on VFIO's type1 container
  none-11        Debian's QEMU 11.1 (tests/vhost/stock-qemu-newer.sh),
                 empty root port
  iommufd-11     Debian's QEMU 11.1, vfio-pci on iommufd: the BAR as a
                 dma-buf in the IOAS

Prints one JSON line per start and a summary line per size with the
medians, the ratios to the no-device start of the same QEMU, and each
ratio judged against the 1.05x goal (start_goal.py)."""

import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from qemu_cfg import OURS, Vm  # noqa: E402
from vfio_helpers import bdf, bind_vfio, modprobe  # noqa: E402
from inner_backends import enable_bar  # noqa: E402
from start_goal import judge_runs  # noqa: E402

NEWER = os.environ.get("GPUP2P_QEMU_DMABUF", "")
# Even, so that each order runs as often (start_goal.py).
ROUNDS = int(os.environ.get("ROUNDS", "10"))
# 64 GiB aligned, below a 40-bit guest's top: where firmware might put it.
BAR_ADDR = 0x8000000000
SIZES = {"shm1g": 1 << 30, "shm16g": 16 << 30, "shm64g": 64 << 30}


def one(qemu, device, size, extra=()):
    """Seconds from launch to the BAR's decode on (mapped), seconds of the
    BAR programming alone (the mapping is made in it), and QEMU's stderr;
    None where QEMU did not start."""
    # QMP for every variant, so that each start pays for the same setup.
    vm = Vm(qemu, [device + ",bus=rp0"] if device else [], extra, qmp=True)
    if not vm.started:
        rc, err, _ = vm.quit()
        return None, None, err
    t_bar = time.monotonic()
    enable_bar(vm, 1, 2, BAR_ADDR, is64=True, size=size)
    now = time.monotonic()
    secs, bar_secs = now - vm.t0, now - t_bar
    maps = vm.qom("g0", "x-gpu-p2p-bar-maps") if device and \
        qemu == OURS else None
    rc, err, _ = vm.quit()
    return secs, bar_secs, (err or "") + (
        "" if maps is None else "\nbar-maps: " + str(maps))


def stand_ins(names):
    """The BAR stand-ins @names, bound to vfio-pci, iommufd loaded:
    {name: BDF}."""
    modprobe("iommufd")
    devs = {n: bdf(n) for n in names}
    for d in devs.values():
        bind_vfio(d)
    return devs


def start_variants(host):
    """{name: (QEMU, device or None, more arguments)}: each QEMU's start
    with no device and with @host passed through."""
    v = {"none": (OURS, None, ()),
         "type1": (OURS, "vfio-pci,host=%s,id=g0" % host, ())}
    if NEWER:
        v["none-11"] = (NEWER, None, ())
        v["iommufd-11"] = (NEWER, "vfio-pci,host=%s,id=g0,iommufd=iommufd0"
                           % host, ("-object", "iommufd,id=iommufd0"))
    return v


def main():
    devs = stand_ins(SIZES)
    for name, size in SIZES.items():
        variants = start_variants(devs[name])
        times = {v: [] for v in variants}
        bars = {v: [] for v in variants}
        starts = {v: {} for v in variants}
        for r in range(ROUNDS):
            # Reversed every other round: neither side of a pair always
            # goes first (start_goal.py).
            order = list(variants.items())[::-1 if r % 2 else 1]
            for position, (v, (qemu, device, extra)) in enumerate(order):
                secs, bar_secs, err = one(qemu, device, size, extra)
                print(json.dumps({"bar": name, "variant": v, "round": r,
                                  "position": position,
                                  "seconds": secs, "bar_seconds": bar_secs,
                                  "stderr": err.strip()[-400:]}),
                      flush=True)
                starts[v][r] = secs
                if secs is not None:
                    times[v].append(secs)
                    bars[v].append(bar_secs)

        def medians(d):
            return {v: round(statistics.median(t), 5) if t else None
                    for v, t in d.items()}
        med, bar_med = medians(times), medians(bars)
        ratio = {}
        for v, base in (("type1", "none"), ("iommufd-11", "none-11")):
            if med.get(v) and med.get(base):
                ratio[v] = round(med[v] / med[base], 3)
        print(json.dumps({"bar": name, "bytes": size, "rounds": ROUNDS,
                          "median_s": med, "bar_programming_median_s":
                          bar_med, "ratio_to_no_device": ratio,
                          "against_goal": judge_runs(starts)}),
              flush=True)


if __name__ == "__main__":
    main()
