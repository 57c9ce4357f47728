#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Runs inside the virtual host (tests/vhost/topologies/vfio-gpus.json plus
a virtio-gpu-pci stand-in whose capabilities cover C8h and D4h): starts
Debian's stock QEMU and ours on the same vfio-pci devices, reads every
guest-visible config byte through qtest, and drives our QEMU over QMP
(cliques of mixed explicit and auto ids, hot plug, migration blockers).
Writes raw findings to $VHOST_OUT/qtest.json for the test outside."""

import json
import os
import re
import subprocess

from qemu_cfg import OURS, STOCK, Vm, cap_list, start_error
from vfio_helpers import OUT, PROJECT, bdf, bind_vfio

NV = "x-pci-vendor-id=0x10de"


def find_pci(vendor, device):
    for d in sorted(os.listdir("/sys/bus/pci/devices")):
        base = "/sys/bus/pci/devices/" + d
        with open(base + "/vendor") as f, open(base + "/device") as g:
            if int(f.read(), 16) == vendor and int(g.read(), 16) == device:
                return d
    raise RuntimeError("no PCI device %04x:%04x" % (vendor, device))


def dev(host, bus, extra=""):
    return "vfio-pci,host=%s,bus=%s,%s%s" % (host, bus, NV, extra)


def dev_json(host, bus, ident=None, **props):
    d = {"driver": "vfio-pci", "host": host, "bus": bus,
         "x-pci-vendor-id": 0x10de}
    if ident:
        d["id"] = ident
    d.update(props)
    return json.dumps(d)


def configs(qemu, devices, buses, extra=()):
    """Start, read the config space of the devices on @buses, stop."""
    vm = Vm(qemu, devices, extra)
    out = {}
    if vm.started:
        out = {str(b): vm.config(b).hex() for b in buses}
    rc, err, _ = vm.quit()
    return {"rc": rc, "stderr": err, "config": out}


def ids_against_stock(b):
    """All 16 ids: gpu0 gets k, gpu1 15 - k, in stock and in ours."""
    runs = []
    for k in range(8):
        stock = configs(STOCK, [
            dev(b["gpu0"], "rp0", ",x-nv-gpudirect-clique=%d" % k),
            dev(b["gpu1"], "rp1", ",x-nv-gpudirect-clique=%d" % (15 - k))],
            [1, 2])
        if k % 2:
            # JSON -device: the ids as strings, the property's one type.
            ours_devs = [dev_json(b["gpu0"], "rp0",
                                  **{"x-gpu-p2p-clique": str(k)}),
                         dev_json(b["gpu1"], "rp1",
                                  **{"x-gpu-p2p-clique": str(15 - k)})]
        else:
            ours_devs = [dev(b["gpu0"], "rp0", ",x-gpu-p2p-clique=%d" % k),
                         dev(b["gpu1"], "rp1",
                             ",x-gpu-p2p-clique=%d" % (15 - k))]
        ours = configs(OURS, ours_devs, [1, 2])
        runs.append({"ids": [k, 15 - k], "json": bool(k % 2),
                     "stock": stock, "ours": ours})
    return runs


def auto_against_stock(b):
    return {
        "stock": configs(STOCK, [
            dev(b["gpu0"], "rp0", ",x-nv-gpudirect-clique=0"),
            dev(b["gpu1"], "rp1", ",x-nv-gpudirect-clique=0")], [1, 2]),
        "ours": configs(OURS, [
            dev(b["gpu0"], "rp0", ",x-gpu-p2p-clique=auto"),
            dev(b["gpu1"], "rp1", ",x-gpu-p2p-clique=auto")], [1, 2]),
    }


def fleet_default(b):
    """-global ...=auto on devices that do not qualify: stock's bytes."""
    devs = ["vfio-pci,host=%s,bus=rp0" % b["edu0"],
            "vfio-pci,host=%s,bus=rp1" % b["gpu0"]]
    return {
        "stock": configs(STOCK, devs, [1, 2]),
        "ours": configs(OURS, devs, [1, 2],
                        ["-global", "vfio-pci.x-gpu-p2p-clique=auto"]),
    }


def occupied_c8(vgpu):
    """A stand-in whose capabilities cover C8h and D4h."""
    return {
        "stock-none": configs(STOCK, [dev(vgpu, "rp0")], [1]),
        "stock-1": configs(STOCK, [dev(vgpu, "rp0",
                                       ",x-nv-gpudirect-clique=1")], [1]),
        "ours-1": configs(OURS, [dev(vgpu, "rp0", ",x-gpu-p2p-clique=1")],
                          [1]),
        "ours-auto": configs(OURS, [dev(vgpu, "rp0",
                                        ",x-gpu-p2p-clique=auto")], [1]),
        "ours-1-anywhere": configs(OURS, [dev(
            vgpu, "rp0", ",x-gpu-p2p-clique=1,x-gpu-p2p-cap-anywhere=on")],
            [1]),
    }


def in_effect(vm, ids):
    return {i: vm.qom(i, "x-gpu-p2p-clique-in-effect") for i in ids}


def cap_bytes(vm, bus):
    cfg = vm.config(bus, 256)
    caps = cap_list(cfg)
    off = caps[-1][0] if caps else 0
    return {"caps": caps, "last": cfg[off:off + 8].hex() if off else None}


def mix(b):
    """An explicit 0 on the GPU behind the switch without ACS (no auto
    device may join it), two auto GPUs on root ports."""
    vm = Vm(OURS, [dev(b["gpu3"], "rp2", ",id=g2,x-gpu-p2p-clique=0"),
                   dev(b["gpu0"], "rp0", ",id=g0,x-gpu-p2p-clique=auto"),
                   dev(b["gpu1"], "rp1", ",id=g1,x-gpu-p2p-clique=auto")],
            qmp=True)
    r = {"started": vm.started}
    if vm.started:
        r["in_effect"] = in_effect(vm, ["g0", "g1", "g2"])
        r["caps"] = {"g0": cap_bytes(vm, 1), "g1": cap_bytes(vm, 2),
                     "g2": cap_bytes(vm, 3)}
    r["rc"], r["stderr"], _ = vm.quit()
    return r


def order(b):
    """Three auto GPUs (two that share a root complex, one under another
    host bridge), given in -device order and reversed: the ids follow the
    host addresses, so the same GPU gets the same id both times."""
    devs = [(b["gpu0"], "rp0", "g0"), (b["gpu1"], "rp1", "g1"),
            (b["gpu2"], "rp2", "g2")]
    out = {}
    for name, seq in (("forward", devs), ("reversed", devs[::-1])):
        vm = Vm(OURS, [dev(h, rp, ",id=%s,x-gpu-p2p-clique=auto" % i)
                       for h, rp, i in seq], qmp=True)
        r = {"started": vm.started}
        if vm.started:
            r["in_effect"] = in_effect(vm, ["g0", "g1", "g2"])
        r["rc"], r["stderr"], _ = vm.quit()
        out[name] = r
    return out


def hotplug(b):
    """A VM whose GPUs all come by device_add."""
    vm = Vm(OURS, [], qmp=True)
    r = {"started": vm.started, "device_add": {}}
    if not vm.started:
        r["rc"], r["stderr"], _ = vm.quit()
        return r
    # g2: the GPU behind the switch without ACS, which cannot join g0's
    # clique; g3: the one under the other host bridge, given 9.
    plugs = [("g0", "gpu0", "rp0", "auto"), ("g1", "gpu1", "rp1", "auto"),
             ("g2", "gpu3", "rp2", "auto"), ("g3", "gpu2", "rp3", "9")]
    for port, (ident, node, bus, clique) in enumerate(plugs):
        r["device_add"][ident] = vm.qmp.cmd(
            "device_add", driver="vfio-pci", host=b[node], bus=bus, id=ident,
            **{"x-pci-vendor-id": 0x10de, "x-gpu-p2p-clique": clique})
        vm.power_slot(port)
    # A JSON integer: the property is a string in every syntax.
    r["bad_int"] = vm.qmp.cmd(
        "device_add", driver="vfio-pci", host=b["edu0"], bus="rp3", id="bad",
        **{"x-pci-vendor-id": 0x10de, "x-gpu-p2p-clique": 9})
    r["bad_id"] = vm.qmp.cmd(
        "device_add", driver="vfio-pci", host=b["edu0"], bus="rp3", id="bad",
        **{"x-pci-vendor-id": 0x10de, "x-gpu-p2p-clique": "16"})
    r["in_effect"] = in_effect(vm, ["g0", "g1", "g2", "g3"])
    r["clique_prop"] = {i: vm.qom(i, "x-gpu-p2p-clique")
                        for i in ("g0", "g3")}
    r["caps"] = {i: cap_bytes(vm, n + 1)
                 for n, i in enumerate(["g0", "g1", "g2", "g3"])}
    # Guest writes of non-zero values into every byte of the capability.
    writes = {}
    for n, ident in enumerate(["g0", "g2"]):
        caps = r["caps"][ident]["caps"]
        if not caps:
            continue
        off = caps[-1][0]
        before = vm.config(n * 2 + 1, 256)[off:off + 8]
        vm.write(n * 2 + 1, off, b"\x5a\xa5\x11\x22")
        vm.write(n * 2 + 1, off + 4, b"\xff\xff\xff\xff")
        vm.write(n * 2 + 1, off + 6, b"\x81")
        vm.write(n * 2 + 1, off + 1, b"\x40")
        after = vm.config(n * 2 + 1, 256)[off:off + 8]
        writes[ident] = {"offset": off, "before": before.hex(),
                         "after": after.hex()}
    r["writes"] = writes
    r["set_after_realize"] = vm.qmp.cmd(
        "qom-set", path="/machine/peripheral/g0",
        property="x-gpu-p2p-clique", value="5")
    r["rc"], r["stderr"], _ = vm.quit()
    return r


def hotplug_explicit(b):
    """A hot-plugged explicit id that an auto device already holds, on a GPU
    that cannot share it (behind the switch without ACS): refused with
    verify=refuse; with verify=warn and trust it is plugged, and the final
    check takes the newcomer's capability away (remove_cap), never the
    running auto device's."""
    out = {}
    for verify in ("refuse", "warn", "trust"):
        vm = Vm(OURS, [dev(b["gpu0"], "rp0", ",id=g0,x-gpu-p2p-clique=auto")],
                qmp=True)
        r = {"started": vm.started}
        if vm.started:
            r["before"] = in_effect(vm, ["g0"])
            r["device_add"] = vm.qmp.cmd(
                "device_add", driver="vfio-pci", host=b["gpu3"], bus="rp1",
                id="g1", **{"x-pci-vendor-id": 0x10de,
                            "x-gpu-p2p-clique": "0",
                            "x-gpu-p2p-verify": verify})
            vm.power_slot(1)
            ids = ["g0", "g1"] if "return" in r["device_add"] else ["g0"]
            r["in_effect"] = in_effect(vm, ids)
            r["caps"] = {i: cap_bytes(vm, n + 1) for n, i in enumerate(ids)}
        r["rc"], r["stderr"], _ = vm.quit()
        out[verify] = r
    return out


def migration(b):
    out = {}
    for name, clique in (("auto", "auto"), ("explicit", "4")):
        vm = Vm(OURS, [dev(b["gpu0"], "rp0", ",x-gpu-p2p-clique=" + clique),
                       dev(b["gpu1"], "rp1", ",x-gpu-p2p-clique=" + clique)],
                qmp=True)
        r = {"started": vm.started}
        if vm.started:
            r["query-migrate"] = vm.qmp.cmd("query-migrate")
            r["migrate"] = vm.qmp.cmd("migrate", uri="unix:%s/dst.sock"
                                      % vm.tmp)
        r["rc"], r["stderr"], _ = vm.quit()
        out[name] = r
    return out


def sources(b):
    snap = "/run/gpup2p/host"
    os.makedirs(os.path.dirname(snap), exist_ok=True)
    subprocess.run([os.path.join(PROJECT, "build", "tools", "gpup2p",
                                 "gpup2p"), "snapshot", snap], check=True)
    out = {}
    for name, prop in (("snapshot", snap), ("missing", "/nonexistent")):
        vm = Vm(OURS, [dev(b["gpu0"], "rp0", ",id=g0,x-gpu-p2p-clique=auto,"
                           "x-gpu-p2p-host-snapshot=" + prop),
                       dev(b["gpu1"], "rp1", ",id=g1,x-gpu-p2p-clique=auto")],
                qmp=True)
        r = {"started": vm.started}
        if vm.started:
            r["in_effect"] = in_effect(vm, ["g0", "g1"])
            r["source"] = vm.qom("g0", "x-gpu-p2p-source")
        r["rc"], r["stderr"], _ = vm.quit()
        out[name] = r
    return out


def startup_errors(b):
    # gpu3 sits behind the switch without ACS: its pairs bypass the IOMMU.
    g0, g2 = b["gpu0"], b["gpu3"]
    cases = {
        "bad-value": [dev(g0, "rp0", ",x-gpu-p2p-clique=17")],
        "bad-json-int": [dev_json(g0, "rp0", **{"x-gpu-p2p-clique": 3})],
        "bad-json-id": [dev_json(g0, "rp0", **{"x-gpu-p2p-clique": "16"})],
        "bad-verify": [dev(g0, "rp0", ",x-gpu-p2p-clique=1,"
                           "x-gpu-p2p-verify=maybe")],
        "not-nvidia": ["vfio-pci,host=%s,bus=rp0,x-gpu-p2p-clique=2" % g0],
        "not-display": [dev(b["edu0"], "rp0", ",x-gpu-p2p-clique=2")],
        "both-properties": [dev(g0, "rp0", ",x-gpu-p2p-clique=2,"
                                "x-nv-gpudirect-clique=2")],
        "verify-refuse": [dev(g0, "rp0", ",x-gpu-p2p-clique=3"),
                          dev(g2, "rp1", ",x-gpu-p2p-clique=3")],
        "verify-warn": [dev(g0, "rp0", ",x-gpu-p2p-clique=3,"
                            "x-gpu-p2p-verify=warn"),
                        dev(g2, "rp1", ",x-gpu-p2p-clique=3,"
                            "x-gpu-p2p-verify=warn")],
        "unknown-explicit": [dev(g0, "rp0", ",x-gpu-p2p-clique=3"),
                             dev(g2, "rp1", ",x-gpu-p2p-clique=3")],
        "verify-ok": [dev(g0, "rp0", ",x-gpu-p2p-clique=4"),
                      dev(b["gpu1"], "rp1", ",x-gpu-p2p-clique=4")],
    }
    extra = {"unknown-explicit": ["-global", "vfio-pci.x-gpu-p2p-host-"
                                  "snapshot=/nonexistent"]}
    return {name: start_error(OURS, devs, extra.get(name, ()))
            for name, devs in cases.items()}


DOMAIN = """<domain type='kvm'><name>stock-vendor</name><memory>65536</memory>
<os><type arch='x86_64' machine='q35'>hvm</type></os><devices>%s</devices>
</domain>"""
HOSTDEV = ("<hostdev mode='subsystem' type='pci' managed='yes'><source>"
           "<address domain='0x%s' bus='0x%s' slot='0x%s' function='0x%s'/>"
           "</source></hostdev>")


def stock_vendor(b):
    """Debian's QEMU judges the stock output for display devices that are
    not NVIDIA's (the stand-ins are vendor 1234): the property is refused
    at start, and the domain gpup2p libvirt --qemu-stock writes for them
    (no property) starts."""
    g0, g1 = b["gpu0"], b["gpu1"]
    xml = DOMAIN % "".join(
        HOSTDEV % tuple(re.split("[:.]", d)) for d in (g0, g1))
    gpup2p = os.path.join(PROJECT, "build", "tools", "gpup2p", "gpup2p")
    p = subprocess.run([gpup2p, "libvirt", "--qemu-stock", "-"], input=xml,
                       capture_output=True, text=True)
    return {
        "transform": {"rc": p.returncode, "xml": p.stdout,
                      "stderr": p.stderr},
        "with-property": start_error(STOCK, [
            "vfio-pci,host=%s,bus=rp0,x-nv-gpudirect-clique=0" % g0]),
        # What the transform wrote: the devices without the property.
        "as-written": start_error(STOCK, [
            "vfio-pci,host=%s,bus=rp0" % g0,
            "vfio-pci,host=%s,bus=rp1" % g1]),
    }


def main():
    names = ["gpu0", "gpu1", "gpu2", "gpu3", "edu0"]
    b = {n: bdf(n) for n in names}
    vgpu = find_pci(0x1af4, 0x1050)
    for d in list(b.values()) + [vgpu]:
        bind_vfio(d)
    res = {"bdfs": b, "vgpu": vgpu, "ours": OURS,
           "ours_exists": os.path.exists(OURS)}
    for key, fn in (("ids", lambda: ids_against_stock(b)),
                    ("auto", lambda: auto_against_stock(b)),
                    ("fleet_default", lambda: fleet_default(b)),
                    ("occupied_c8", lambda: occupied_c8(vgpu)),
                    ("mix", lambda: mix(b)),
                    ("order", lambda: order(b)),
                    ("hotplug", lambda: hotplug(b)),
                    ("hotplug_explicit", lambda: hotplug_explicit(b)),
                    ("migration", lambda: migration(b)),
                    ("sources", lambda: sources(b)),
                    ("startup", lambda: startup_errors(b)),
                    ("stock_vendor", lambda: stock_vendor(b))):
        try:
            res[key] = fn()
        except Exception as e:      # recorded; the test outside fails it
            res[key] = {"exception": repr(e)}
    with open(os.path.join(OUT, "qtest.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
