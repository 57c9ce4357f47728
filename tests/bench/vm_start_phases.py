#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Inside the Linux 7.x virtual host (tests/bench/vm-start-bench.sh
phases): where a passed-through device's share of a VM's start goes. The
same start as vm_start_bars.py (launch, qtest handshake, the BAR's
programming, quit), with QEMU's own VFIO trace events, each stamped by
QEMU (-msg timestamp=on): the time from launch to the first VFIO event,
then the gaps between consecutive events (the time a gap ends in is
spent in the step before its second event), then from the last one to
the handshake. Per variant, one start per round, alternating with the
same QEMU's start with no device; our QEMU also with four times the
guest RAM, with its RAM populated first (-mem-prealloc), and on 2 MiB
huge pages (where the virtual host reserves them). The start is
timed to the handshake's end (qtest and QMP connected); the trace files
are kept in $VHOST_OUT/traces.

Prints one JSON line per start and a summary line per BAR size: the
medians of the start, of the VFIO span, and of the largest gaps, each
named by its two events; each ratio to the no-device start judged
against the 1.05x goal (start_goal.py)."""

import datetime
import json
import os
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from qemu_cfg import Vm  # noqa: E402
from vfio_helpers import OUT  # noqa: E402
from inner_backends import enable_bar  # noqa: E402
from vm_start_bars import (BAR_ADDR, stand_ins,  # noqa: E402
                           start_variants)
from start_goal import judge_runs  # noqa: E402

TRACES = os.path.join(OUT, "traces")
# Even, so that each order runs as often (start_goal.py).
ROUNDS = int(os.environ.get("ROUNDS", "10"))
SIZES = {"shm1g": 1 << 30, "shm64g": 64 << 30}
# A trace line, as QEMU 10.0's log backend stamps it ("1234@1700000000.
# 123456:vfio_get_device ...") and as 11.1's qemu_log does
# ("2026-11-27T23:55:42.041872Z vfio_get_device ...").
EVENT = re.compile(r"^(?:\d+@(\d+\.\d+):|"
                   r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z )(\w+)")


def stamp(m):
    """A trace line's wall-clock seconds."""
    if m.group(1):
        return float(m.group(1))
    return datetime.datetime.strptime(m.group(2), "%Y-%m-%dT%H:%M:%S.%f") \
        .replace(tzinfo=datetime.timezone.utc).timestamp()


def one(qemu, device, size, extra, log):
    """The start's seconds, the BAR programming's, and QEMU's VFIO events
    as (seconds since launch, name)."""
    if os.path.exists(log):
        os.unlink(log)
    launched = time.time()
    vm = Vm(qemu, [device + ",bus=rp0"] if device else [],
            list(extra) + ["-msg", "timestamp=on", "-D", log,
                           "-trace", "vfio_*"], qmp=True)
    if not vm.started:
        rc, err, _ = vm.quit()
        return None, None, [], err
    ready = time.time() - launched
    t_bar = time.monotonic()
    enable_bar(vm, 1, 2, BAR_ADDR, is64=True, size=size)
    bar = time.monotonic() - t_bar
    rc, err, _ = vm.quit()
    events = []
    try:
        with open(log) as f:
            for line in f:
                m = EVENT.match(line)
                if m:
                    events.append((stamp(m) - launched, m.group(3)))
    except OSError:
        pass
    return ready, bar, events, err


def before_ready(ready, events):
    """The events up to the handshake (not the BAR programming's)."""
    return [e for e in events if e[0] <= ready]


def vfio_span(ready, events):
    """Seconds from the first VFIO event to the last before the
    handshake; None without any."""
    e = before_ready(ready, events) if ready is not None else []
    return e[-1][0] - e[0][0] if e else None


def phases(ready, events):
    """Launch to the first VFIO event, the gaps between events, and the
    last event to the handshake: seconds per "FROM..TO" (a pair that
    recurs, summed). Events after the handshake (the BAR programming's)
    are left out."""
    events = before_ready(ready, events)
    if not events:
        return {"launch..ready": ready}
    steps = [("launch..%s" % events[0][1], events[0][0])]
    steps += [("%s..%s" % (a, b), t1 - t0)
              for (t0, a), (t1, b) in zip(events, events[1:])]
    steps.append(("%s..ready" % events[-1][1], ready - events[-1][0]))
    out = {}
    for n, x in steps:
        out[n] = out.get(n, 0.0) + x
    return out


def hugepages(pages):
    """Reserve @pages 2 MiB huge pages: True where the kernel gave them
    all (read back), else False, said on stderr."""
    try:
        with open("/proc/sys/vm/nr_hugepages", "w") as f:
            f.write("%d\n" % pages)
        with open("/proc/sys/vm/nr_hugepages") as f:
            got = int(f.read())
    except OSError as e:
        print("vm_start_phases: no huge pages: %s" % e, file=sys.stderr)
        return False
    if got < pages:
        print("vm_start_phases: %d of %d huge pages" % (got, pages),
              file=sys.stderr)
    return got >= pages


# The guest's 64 MiB of RAM on 2 MiB huge pages (a memfd backend), as GPU
# VMs are usually run: VFIO pins 32 pages, not 16384.
HUGE = ()


def main():
    global HUGE
    os.makedirs(TRACES, exist_ok=True)
    if hugepages(64):
        HUGE = (("huge", ("-object", "memory-backend-memfd,id=huge,"
                          "size=64M,hugetlb=on,hugetlbsize=2M",
                          "-machine", "memory-backend=huge")),)
    devs = stand_ins(SIZES)
    for name, size in SIZES.items():
        variants = start_variants(devs[name])
        # Our QEMU's again with four times the guest RAM (the last -m
        # wins): what grows with it is VFIO's pinning of the guest's RAM;
        # and with the RAM populated before the device is realized
        # (-mem-prealloc): what then remains is pinning and mapping.
        for tag, more in (("256m", ("-m", "256M")),
                          ("prealloc", ("-mem-prealloc",))) + HUGE:
            for v in ("none", "type1"):
                qemu, device, extra = variants[v]
                variants["%s-%s" % (v, tag)] = (qemu, device, extra + more)
        runs = {v: [] for v in variants}
        starts = {v: {} for v in variants}
        for r in range(ROUNDS):
            # Reversed every other round: neither side of a pair always
            # goes first (start_goal.py).
            order = list(variants.items())[::-1 if r % 2 else 1]
            for position, (v, (qemu, device, extra)) in enumerate(order):
                log = os.path.join(TRACES, "trace-%s-%s-%d.txt" % (name, v,
                                                                   r))
                ready, bar, events, err = one(qemu, device, size, extra, log)
                ph = phases(ready, events) if ready is not None else {}
                top = sorted(ph.items(), key=lambda p: -p[1])[:6]
                span = vfio_span(ready, events)
                print(json.dumps({
                    "bar": name, "variant": v, "round": r,
                    "position": position,
                    "ready_s": ready, "bar_s": bar, "events": len(events),
                    "vfio_span_s": round(span, 4) if span else 0.0,
                    "largest": [[n, round(x, 4)] for n, x in top],
                    "gaps": {n: round(x, 5) for n, x in ph.items()},
                    "stderr": (err or "").strip()[-300:]}), flush=True)
                starts[v][r] = ready
                if ready is not None:
                    runs[v].append((ready, bar, span, ph))

        def median(xs):
            return round(statistics.median(xs), 4) if xs else None
        summary = {"bar": name, "rounds": ROUNDS, "ready_median_s": {},
                   "excess_over_no_device_s": {},
                   "bar_median_s": {}, "vfio_span_median_s": {},
                   "largest_gaps_median_s": {}}
        for v, rs in runs.items():
            summary["ready_median_s"][v] = median([x[0] for x in rs])
            summary["bar_median_s"][v] = median([x[1] for x in rs])
            summary["vfio_span_median_s"][v] = median(
                [x[2] for x in rs if x[2] is not None])
            names = set()
            for x in rs:
                names |= set(x[3])
            gaps = {n: median([x[3].get(n, 0.0) for x in rs]) for n in names}
            summary["largest_gaps_median_s"][v] = [
                [n, g] for n, g in sorted(gaps.items(),
                                          key=lambda kv: -kv[1])[:6]]
        summary["ready_range_s"] = {
            v: [round(min(x[0] for x in rs), 4),
                round(max(x[0] for x in rs), 4)] if rs else None
            for v, rs in runs.items()}
        summary["ratio_to_no_device"] = {}
        for v, base in (("type1", "none"), ("type1-256m", "none-256m"),
                        ("type1-prealloc", "none-prealloc"),
                        ("type1-huge", "none-huge"),
                        ("iommufd-11", "none-11")):
            r = summary["ready_median_s"]
            if r.get(v) is not None and r.get(base) is not None:
                summary["excess_over_no_device_s"][v] = round(
                    r[v] - r[base], 4)
                summary["ratio_to_no_device"][v] = round(r[v] / r[base], 3)
        summary["against_goal"] = judge_runs(starts)
        print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
