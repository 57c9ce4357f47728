#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The QEMU extension end to end, judged by Debian's stock QEMU 10.0.2 and
by QEMU's own checkpatch: our QEMU in the virtual host, GPU stand-ins on
vfio-pci, every guest-visible config byte against stock's
x-nv-gpudirect-clique for all 16 ids, cliques for mixed, hot-plugged and
unknown devices, migration blockers, then a nested KVM guest reading the
capability back."""

import json
import os
import subprocess
import sys

from taplib import (Tap, prepare, vhost_run, load_json, run_failure,
                    PROJECT)

# A display-class stand-in whose capabilities cover both C8h and D4h.
VIRTIO_GPU = ["--qemu-arg=-device",
              "--qemu-arg=pcie-root-port,id=rpv,chassis=99,slot=99",
              "--qemu-arg=-device", "--qemu-arg=virtio-gpu-pci,bus=rpv"]
SIG = "090008503250"        # id 09h, next 0, length 8, "P2P"


def our_qemu():
    return os.environ.get("GPUP2P_QEMU", os.path.join(
        PROJECT, "build", "qemu", "qemu-system-x86_64"))


def vhost_cache():
    """The kernel the nested guest boots: the virtual host's own."""
    return os.environ.get("VHOST_CACHE", os.path.join(PROJECT, "build",
                                                      "vhost"))


def checkpatch(t, qemu):
    tree = os.path.join(os.path.dirname(os.path.realpath(qemu)), "..")
    script = os.path.join(tree, "scripts", "checkpatch.pl")
    ext = os.path.join(PROJECT, "hw", "vfio-gpu-p2p")
    p = subprocess.run([script, "--no-tree", "-f",
                        os.path.join(ext, "vfio-gpu-p2p.c"),
                        os.path.join(ext, "vfio-gpu-p2p.h"),
                        os.path.join(ext, "machine.c")],
                       capture_output=True, text=True)
    t.ok(p.returncode == 0, "QEMU's checkpatch passes the extension",
         p.stdout[-3000:] + p.stderr[-500:])
    p = subprocess.run([script, "--no-tree",
                        os.path.join(ext, "qemu-10.0.13-hooks.patch")],
                       capture_output=True, text=True)
    t.ok(p.returncode == 0, "QEMU's checkpatch passes the hook patch",
         p.stdout[-3000:] + p.stderr[-500:])


def differing(a, b):
    """Offsets where two hex dumps differ, as text for a diagnosis."""
    x, y = bytes.fromhex(a), bytes.fromhex(b)
    bad = [i for i in range(min(len(x), len(y))) if x[i] != y[i]]
    return "%d bytes differ%s: %s" % (
        len(bad), "" if len(x) == len(y) else " (lengths differ)",
        ", ".join("%03x: stock %02x ours %02x" % (i, x[i], y[i])
                  for i in bad[:16]))


def same_bytes(t, stock, ours, what):
    ok = (stock.get("rc") == 0 and ours.get("rc") == 0 and
          stock.get("config") and stock["config"] == ours["config"])
    detail = json.dumps({k: v for k, v in ours.items() if k != "config"})
    if stock.get("config") and ours.get("config"):
        detail += "\n" + "\n".join(
            "bus %s: %s" % (bus, differing(stock["config"][bus],
                                           ours["config"].get(bus, "")))
            for bus in stock["config"])
    return t.ok(ok, what, detail)


def cap_at(cfg_hex, off):
    return cfg_hex[off * 2:off * 2 + 16]


def ids_checks(t, q):
    runs = q["ids"]
    if not t.ok(isinstance(runs, list) and len(runs) == 8,
                "stock and ours ran for 8 pairs of ids", json.dumps(runs)):
        return
    seen = set()
    for run in runs:
        k, j = run["ids"]
        same_bytes(t, run["stock"], run["ours"],
                   "ids %d and %d%s: all 4096 config bytes of both devices "
                   "equal stock's x-nv-gpudirect-clique" %
                   (k, j, " (JSON -device)" if run["json"] else ""))
        for bus, want in (("1", k), ("2", j)):
            cap = cap_at(run["stock"]["config"].get(bus, ""), 0xc8)
            seen.add(cap)
            t.eq(cap, SIG + "%02x00" % (want << 3),
                 "stock shows id %d at C8h (the judge sees the id)" % want)
    t.eq(len(seen), 16, "the 16 runs showed 16 different capabilities")


def fleet_checks(t, q):
    same_bytes(t, q["auto"]["stock"], q["auto"]["ours"],
               "auto on two GPUs on root ports: the bytes of stock's "
               "clique 0")
    f = q["fleet_default"]
    same_bytes(t, f["stock"], f["ours"],
               "-global vfio-pci.x-gpu-p2p-clique=auto on a non-NVIDIA and "
               "a non-display device: stock's bytes, no capability")
    t.ok("warning" not in f["ours"].get("stderr", ""),
         "and nothing is said about them", f["ours"].get("stderr"))


def c8_checks(t, q):
    c = q["occupied_c8"]
    none = c["stock-none"]
    t.ok(none["rc"] == 0 and (0xc8, 0x09) in
         [tuple(x) for x in caps(none["config"]["1"])],
         "the virtio-gpu stand-in has a capability at C8h",
         json.dumps(caps(none["config"].get("1", ""))))
    s1 = c["stock-1"]
    t.ok(s1["rc"] == 0 and cap_at(s1["config"]["1"], 0xd4).startswith(SIG)
         and [0xc8, 0x09] in caps(s1["config"]["1"]),
         "stock puts its capability at D4h, inside the 20 bytes of the "
         "capability at C8h", json.dumps(caps(s1["config"].get("1", ""))))
    t.ok(c["ours-1"]["rc"] != 0 and
         "neither C8h nor D4h is free" in c["ours-1"]["stderr"] and
         "x-gpu-p2p-cap-anywhere" in c["ours-1"]["stderr"],
         "ours refuses an explicit id, naming both slots and the opt-in",
         c["ours-1"]["stderr"])
    same_bytes(t, none, c["ours-auto"],
               "auto there: starts with stock's bytes, no capability")
    t.ok("no capability" in c["ours-auto"]["stderr"],
         "and warns why", c["ours-auto"]["stderr"])
    a = c["ours-1-anywhere"]
    if not t.ok(a["rc"] == 0 and "x-gpu-p2p-cap-anywhere" in a["stderr"],
                "opted in: starts with a warning", json.dumps(a)):
        return
    mine = caps(a["config"]["1"])
    off = mine[-1][0]
    t.ok(off not in (0xc8, 0xd4) and mine[:-1] == caps(none["config"]["1"]),
         "the capability goes last, after the device's own list",
         json.dumps(mine))
    t.eq(cap_at(a["config"]["1"], off), "0900085032500800",
         "with id 1 at %02xh" % off)
    x, y = bytearray.fromhex(none["config"]["1"]), \
        bytearray.fromhex(a["config"]["1"])
    prev = mine[-2][0]
    y[off:off + 8] = x[off:off + 8]
    y[prev + 1] = x[prev + 1]
    t.ok(x == y, "every other byte is stock's", differing(x.hex(), y.hex()))


def caps(cfg_hex):
    cfg = bytes.fromhex(cfg_hex)
    out, ptr, seen = [], cfg[0x34] if len(cfg) > 0x34 else 0, set()
    while ptr and ptr not in seen and ptr < 0x100:
        seen.add(ptr)
        out.append([ptr, cfg[ptr]])
        ptr = cfg[ptr + 1]
    return out


def mix_checks(t, q):
    m = q["mix"]
    t.eq(m.get("in_effect"), {"g0": 1, "g1": 1, "g2": 0},
         "explicit 0 on the GPU behind the switch without ACS: the auto "
         "GPUs get 1, not 0")
    for dev, want in (("g0", 1), ("g1", 1), ("g2", 0)):
        t.eq(m.get("caps", {}).get(dev, {}).get("last"),
             SIG + "%02x00" % (want << 3),
             "%s: the guest reads clique %d" % (dev, want))


def order_checks(t, q):
    o = q.get("order", {})
    fwd = o.get("forward", {}).get("in_effect")
    rev = o.get("reversed", {}).get("in_effect")
    t.ok(fwd and fwd.get("g0") == fwd.get("g1") and fwd.get("g0", -1) >= 0,
         "auto: the two GPUs on one root complex share an id", o)
    t.eq(rev, fwd, "auto ids follow host addresses: reversing the -device "
         "order gives every GPU the same id")


def hotplug_checks(t, q):
    h = q["hotplug"]
    t.ok(all("return" in r for r in h.get("device_add", {}).values()) and
         len(h.get("device_add", {})) == 4,
         "device_add of four GPUs into a VM that had none",
         json.dumps(h.get("device_add")))
    t.eq(h.get("in_effect"), {"g0": 0, "g1": 0, "g2": 1, "g3": 9},
         "hot plug: a lone GPU gets 0, its switch peer joins it, one under "
         "another host bridge gets 1, an integer 9 is kept")
    t.eq(h.get("clique_prop"), {"g0": "auto", "g3": "9"},
         "qom-get gives auto and the id back, as the string type says")
    t.ok("error" in h.get("bad_int", {}) and
         "x-gpu-p2p-clique', expected: string" in json.dumps(h["bad_int"]),
         "device_add with a JSON integer is refused by QEMU's visitor, "
         "naming the property", json.dumps(h.get("bad_int")))
    t.ok("error" in h.get("bad_id", {}) and
         "'16' is not off, auto or a clique id" in json.dumps(h["bad_id"]),
         "device_add with id \"16\" is refused", json.dumps(h.get("bad_id")))
    for dev, want in (("g0", 0), ("g1", 0), ("g2", 1), ("g3", 9)):
        t.eq(h.get("caps", {}).get(dev, {}).get("last"),
             SIG + "%02x00" % (want << 3),
             "%s: the guest reads clique %d after hot plug" % (dev, want))
    w = h.get("writes", {})
    t.ok(len(w) == 2 and all(v["before"] == v["after"] and
                             v["before"].startswith(SIG)
                             for v in w.values()),
         "non-zero guest writes over every capability byte change nothing",
         json.dumps(w))
    t.ok("after it was realized" in json.dumps(h.get("set_after_realize")),
         "the clique cannot be changed after realize",
         json.dumps(h.get("set_after_realize")))


def hotplug_explicit_checks(t, q):
    """gp_plan_check's fallback and remove_cap(), through the hot-plug
    explicit path: the newcomer loses its capability, never g0."""
    h = q.get("hotplug_explicit", {})
    ref = h.get("refuse", {})
    t.ok("error" in ref.get("device_add", {}) and
         "cannot do P2P on the host" in json.dumps(ref.get("device_add")),
         "hot plug, explicit 0 that auto g0 holds, verify=refuse: refused",
         json.dumps(ref))
    for verify in ("warn", "trust"):
        r = h.get(verify, {})
        t.ok("return" in r.get("device_add", {}),
             "hot plug, verify=%s: device_add succeeds" % verify,
             json.dumps(r))
        t.eq(r.get("in_effect"), {"g0": 0, "g1": -1},
             "hot plug, verify=%s: the final check drops the newcomer's "
             "capability; auto g0 keeps clique 0" % verify)
        caps = r.get("caps", {})
        t.ok(caps.get("g0", {}).get("last") == SIG + "0000" and
             "g1" in caps and
             not (caps["g1"].get("last") or "").startswith(SIG),
             "hot plug, verify=%s: the guest reads g0's capability and "
             "none on g1 (taken out of the list again)" % verify,
             json.dumps(caps))
        t.ok("clique 0 would hold" in r.get("stderr", ""),
             "hot plug, verify=%s: QEMU says why on stderr" % verify,
             r.get("stderr", "")[-600:])


def migration_checks(t, q):
    m = q["migration"]
    a = json.dumps(m.get("auto", {}).get("query-migrate"))
    e = json.dumps(m.get("explicit", {}).get("query-migrate"))
    t.ok("x-gpu-p2p-clique=auto computes the clique" in a,
         "auto devices block migration, saying why", a)
    t.ok("x-gpu-p2p-clique" not in e,
         "explicit ids add no blocker of ours", e)
    # The stand-ins have no VFIO migration support: VFIO blocks both.
    t.ok("migration" in e.lower() and "error" in
         json.dumps(m.get("explicit", {}).get("migrate")),
         "(VFIO's own blocker still stops the explicit VM)",
         json.dumps(m.get("explicit")))


def source_checks(t, q):
    s = q["sources"]
    t.eq(s["snapshot"].get("source"), "snapshot /run/gpup2p/host",
         "a host snapshot is a source")
    t.eq(s["snapshot"].get("in_effect"), {"g0": 0, "g1": 0},
         "and gives the GPUs on root ports one clique")
    t.eq(s["missing"].get("in_effect"), {"g0": -1, "g1": -1},
         "no readable topology: the VM starts without a capability")
    t.ok("no capability" in s["missing"].get("stderr", ""),
         "and says why", s["missing"].get("stderr"))


def startup_checks(t, s, bdfs):
    def refused(name, *words):
        r = s[name]
        t.ok(r["rc"] != 0 and all(w in r["stderr"] for w in words),
             "start-up refused: %s" % name, json.dumps(r))

    refused("bad-value", "'17' is not off, auto or a clique id")
    refused("bad-json-int", "x-gpu-p2p-clique', expected: string")
    refused("bad-json-id", "'16' is not off, auto or a clique id 0-15")
    refused("bad-verify", "x-gpu-p2p-verify", "does not accept value 'maybe'")
    refused("not-nvidia", "not an NVIDIA device", "vendor 1234")
    refused("not-display", "not a display-class device")
    refused("both-properties", "cannot be used together")
    refused("verify-refuse", "x-gpu-p2p-clique=3", "cannot do P2P on the host",
            "bypasses the IOMMU")
    for name, node in (("not-nvidia", "gpu0"), ("not-display", "edu0"),
                       ("verify-refuse", "gpu0")):
        # QEMU itself first quotes the -device option.
        msg = s[name]["stderr"].partition(": vfio ")[2]
        t.eq(msg.count(bdfs[node]), 1,
             "%s: the message names the device once" % name)
    r = s["verify-warn"]
    t.ok(r["rc"] == 0 and "warning" in r["stderr"] and
         "cannot do P2P on the host" in r["stderr"],
         "verify=warn starts with a warning", json.dumps(r))
    r = s["unknown-explicit"]
    t.ok(r["rc"] == 0 and "kept without a check" in r["stderr"],
         "unknown topology keeps an explicit id with a warning",
         json.dumps(r))
    t.eq(s["verify-ok"]["rc"], 0,
         "GPUs on root ports with one explicit id start")


def stock_vendor_checks(t, q, bdfs):
    """Debian's QEMU as the judge of the stock output for display devices
    of another vendor."""
    s = q["stock_vendor"]
    w = s["with-property"]
    t.ok(w["rc"] != 0 and "invalid device vendor" in w["stderr"],
         "stock QEMU refuses x-nv-gpudirect-clique on a display device of "
         "vendor 1234", json.dumps(w))
    tr = s["transform"]
    t.ok(tr["rc"] == 0 and "x-nv-gpudirect-clique" not in tr["xml"] and
         "<hostdev" in tr["xml"] and
         all(bdfs[g] in tr["stderr"] for g in ("gpu0", "gpu1")),
         "gpup2p libvirt --qemu-stock writes no clique for them and names "
         "both", json.dumps(tr))
    a = s["as-written"]
    t.ok(a["rc"] == 0 and a["started"],
         "and stock QEMU starts the devices as the transform left them",
         json.dumps(a))


def nested_guest(t, r):
    t.eq(r["inner_rc"], 0, "the nested guest ran its checks")
    cold = {g["bdf"]: g for g in r["cold"].get("gpus", [])}
    t.eq(sorted(g["clique"] for g in cold.values()), [0, 0],
         "nested guest: GPUs on root ports share clique 0 (auto)")
    hot = {g["bdf"]: g for g in r["hot"].get("gpus", [])}
    t.eq(sorted(g["clique"] for g in hot.values()), [0, 0, 0, 1],
         "after hot plug: the GPU under the other host bridge joins 0 "
         "(AMD Zen forwards), the one behind the switch without ACS gets 1")
    w = r.get("writes", {})
    t.ok(len(w) == 4 and all(v["before"] == v["after"] for v in w.values()),
         "the guest's non-zero writes through sysfs change nothing",
         json.dumps(w))


def phases(t, outdir):
    """Where the run's time went, as a diagnostic: boot, the qtest
    scenarios, the nested guest."""
    try:
        at = {p: float(open(os.path.join(outdir, "phase-" + p)).read())
              for p in ("qtest", "nested", "end")}
        timing = load_json(os.path.join(outdir, "timing.json"))
        t.diag("timing: boot to command %.0f s, qtest scenarios %.0f s, "
               "nested guest %.0f s, whole virtual host %.0f s" % (
                   timing["boot_to_command_s"] or -1,
                   at["nested"] - at["qtest"], at["end"] - at["nested"],
                   timing["total_s"]))
    except (OSError, ValueError, KeyError, TypeError) as e:
        t.diag("timing: not all phases recorded (%s)" % e)
    try:
        r = load_json(os.path.join(outdir, "results.json"))
        t.diag("timing: the nested guest's QMP took a connection after "
               "%.1f s" % r["qmp_connect_s"])
    except (OSError, ValueError, KeyError, TypeError):
        pass


def shapes(t, qemu):
    """Linux's special shapes (acs-shapes.json): QEMU's auto shares an id
    only among the stand-ins Linux isolates on a forwarding root complex,
    as plan, topo, check and the libvirt transform do (test_libvirt.py,
    on this topology's capture)."""
    rc, out, err, outdir = vhost_run(
        "acs-shapes.json", "export GPUP2P_QEMU=%s; "
        "python3 tests/integration/inner_shapes.py" % qemu, timeout=400,
        retry_host_death=True)
    if not t.ok(rc == 0, "shapes: the scenario ran inside the virtual host",
                run_failure(rc, out, err)):
        return
    r = load_json(os.path.join(outdir, "shapes.json"))
    auto = r.get("auto", {})
    if not t.ok(auto.get("started"), "shapes: our QEMU started with the "
                "eight stand-ins on auto", json.dumps(r)):
        return
    shared = {}
    for name, ident in auto["ids"].items():
        if isinstance(ident, int) and ident >= 0:
            shared.setdefault(ident, []).append(name)
    t.eq(sorted(sorted(v) for v in shared.values() if len(v) > 1),
         [["gpu3", "gpu4", "gpu7"]], "shapes: auto shares one id, among "
         "the root port functions' stand-ins and the plain root port's")
    t.eq([auto["ids"]["gpu5"], auto["ids"]["gpu6"]], [-1, -1],
         "shapes: the stand-ins behind the PCIe-to-PCI bridge get no "
         "capability")


def test(t):
    prepare()
    qemu = our_qemu()
    if not t.ok(os.path.exists(qemu), "our QEMU is built (build-qemu.sh)",
                qemu):
        return
    checkpatch(t, qemu)
    rc, out, err, outdir = vhost_run(
        "vfio-gpus.json",
        "export GPUP2P_QEMU=%s VHOST_CACHE=%s; "
        "date +%%s.%%N > $VHOST_OUT/phase-qtest; "
        "python3 tests/integration/inner_qtest.py; "
        "date +%%s.%%N > $VHOST_OUT/phase-nested; "
        "python3 tests/integration/inner_qemu.py; "
        "date +%%s.%%N > $VHOST_OUT/phase-end" % (qemu, vhost_cache()),
        timeout=800, extra=VIRTIO_GPU,     # below meson's 900 s
        retry_host_death=True)
    phases(t, outdir)
    if not t.ok(rc == 0, "the scenarios ran inside the virtual host",
                run_failure(rc, out, err)):
        return
    q = load_json(os.path.join(outdir, "qtest.json"))
    t.ok(q["ours_exists"], "the virtual host runs our QEMU", q["ours"])
    for fn in (ids_checks, fleet_checks, c8_checks, mix_checks, order_checks,
               hotplug_checks, hotplug_explicit_checks, migration_checks,
               source_checks):
        try:
            fn(t, q)
        except (KeyError, TypeError, IndexError) as e:
            t.ok(False, "%s has its findings" % fn.__name__, repr(e))
    startup_checks(t, q["startup"], q["bdfs"])
    try:
        stock_vendor_checks(t, q, q["bdfs"])
    except (KeyError, TypeError) as e:
        t.ok(False, "stock_vendor_checks has its findings", repr(e))
    nested_guest(t, load_json(os.path.join(outdir, "results.json")))


def test_shapes(t):
    prepare()
    qemu = our_qemu()
    if t.ok(os.path.exists(qemu), "our QEMU is built (build-qemu.sh)",
            qemu):
        shapes(t, qemu)


if __name__ == "__main__":
    # `shapes`: meson's qemu_shapes, a virtual host of its own.
    Tap().run(test_shapes if sys.argv[1:] == ["shapes"] else test)
