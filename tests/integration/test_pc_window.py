#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Where the guest's 64-bit PCI window lies, as `gpup2p check --domain`
reads it from a domain (the window the BAR gate and the address-bits plan
rest on), against QEMU's own answer: the host bridge's pci-hole64-start
and pci-hole64-end properties (QMP qom-get), before any firmware runs
(-S), from the same machine on the command line libvirt gives it. The
judges: Debian's QEMU 10.0.13 (tests/vhost/outer-qemu.sh) and 11.1.3
(tests/vhost/stock-qemu-newer.sh), under TCG, and our QEMU for its own
machine type. Each case moves the window by one thing: the RAM split
below 4 GiB (q35 and i440fx), a hot-plug region, the hole's size, an AMD
vCPU's RAM moved above 1 TiB (and a machine type before that move)."""

import os
import tempfile

from pc_window import check_window, qemu_window
from taplib import PROJECT, Tap, built, gpup2p, our_qemu

HOST = os.path.join(PROJECT, "tests", "fixtures", "vhost-two-numa")
DOMAIN = os.path.join(PROJECT, "tests", "fixtures", "libvirt", "gpu-vm.xml")
OUTER = os.path.join(PROJECT, "tests", "vhost", "outer-qemu.sh")
NEWER = os.path.join(PROJECT, "tests", "vhost", "stock-qemu-newer.sh")
GIB = 1 << 30
# The guest's address width on both sides: room for every case's window.
PHYS_BITS = 48

# (what, machine type, RAM MiB, hot-plug (maxmem MiB, slots) or None,
#  CPU model, pcihole64 MiB or None). TCG gives each model its own vendor
# (KVM would give the host's), so the domains are type='qemu'.
CASES = [
    ("q35, 512 MiB: all RAM below 4 GiB", "pc-q35-10.0", 512, None,
     "Skylake-Server", None),
    ("q35, 2815 MiB: still all below", "pc-q35-10.0", 2815, None,
     "Skylake-Server", None),
    ("q35, 2816 MiB: split at 2 GiB", "pc-q35-10.0", 2816, None,
     "Skylake-Server", None),
    ("q35, 8 GiB and a 64 GiB hole", "pc-q35-10.0", 8192, None,
     "Skylake-Server", 65536),
    ("q35, 4 GiB, hot-plug up to 64 GiB in 4 slots", "pc-q35-10.0", 4096,
     (65536, 4), "Skylake-Server", None),
    ("q35, 1000 GiB, an Intel vCPU: the window crosses AMD's hole",
     "pc-q35-10.0", 1000 << 10, None, "Skylake-Server", None),
    ("q35, 1000 GiB, an AMD vCPU: RAM moved above 1 TiB", "pc-q35-10.0",
     1000 << 10, None, "EPYC", None),
    ("q35 7.0, 1000 GiB, an AMD vCPU: not moved before 7.1", "pc-q35-7.0",
     1000 << 10, None, "EPYC", None),
    ("q35, 16 GiB, a 1 TiB hole, qemu64 (AMD's vendor): moved",
     "pc-q35-10.0", 16384, None, "qemu64", 1 << 20),
    ("q35 alias, 8 GiB, hot-plug and an AMD vCPU", "q35", 8192, (16384, 2),
     "EPYC", None),
    ("i440fx, 4 GiB: split at 3 GiB, its 2 GiB default hole",
     "pc-i440fx-10.0", 4096, None, "Skylake-Server", None),
    ("i440fx, 3583 MiB: all below", "pc-i440fx-10.0", 3583, None,
     "Skylake-Server", None),
    ("i440fx, 8 GiB, hot-plug up to 16 GiB in 2 slots, a 3000 MiB hole",
     "pc-i440fx-10.0", 8192, (16384, 2), "EPYC", 3000),
    ("q35, 8 GiB, a 40000 MiB hole: its end rounded up", "pc-q35-10.0",
     8192, None, "Skylake-Server", 40000),
    ("q35, 8 GiB, <pcihole64> of 0: an empty window", "pc-q35-10.0", 8192,
     None, "Skylake-Server", 0),
    ("q35, 16 GiB, a 1 TiB hole, athlon (AMD's, no long mode): not moved",
     "pc-q35-10.0", 16384, None, "athlon", 1 << 20),
    ("q35 8.1, 16 GiB, a 1 TiB hole, athlon: not moved (by its phys-bits)",
     "pc-q35-8.1", 16384, None, "athlon", 1 << 20),
]
# 32-bit models, whose phys-bits QEMU does not let be set.
NO_LONG_MODE = {"athlon"}
# Left open by the domain, so the tool gives bounds: QEMU's window must
# lie inside them.
BOUNDED = [
    ("a distribution's q35 type, run as pc-q35-9.2", "pc-q35-9.2-distro",
     8192, None, "Skylake-Server", None),
    ("a distribution's i440fx type, 1000 GiB on EPYC, run as "
     "pc-i440fx-7.0 (not moved)", "pc-i440fx-7.0-distro", 1000 << 10, None,
     "EPYC", None),
]


def domain_xml(machine, ram, hotplug, cpu, hole):
    """The fixture's GPU domain with these settings, as libvirt takes
    them."""
    with open(DOMAIN) as f:
        xml = f.read()
    xml = xml.replace("<domain type='kvm'>", "<domain type='qemu'>")
    xml = xml.replace("<memory unit='GiB'>8</memory>",
                      "<memory unit='MiB'>%d</memory>" % ram +
                      ("<maxMemory slots='%d' unit='MiB'>%d</maxMemory>"
                       % (hotplug[1], hotplug[0]) if hotplug else ""))
    xml = xml.replace("machine='q35'", "machine='%s'" % machine)
    xml = xml.replace("</features>", "</features>\n  <cpu mode='custom'>"
                      "<model>%s</model>%s</cpu>" % (
                          cpu, "" if cpu in NO_LONG_MODE else
                          "<maxphysaddr mode='emulate' bits='%d'/>"
                          % PHYS_BITS))
    root = "<controller type='pci' index='0' model='%s'" % (
        "pcie-root" if "q35" in machine else "pci-root")
    root += ("><pcihole64 unit='MiB'>%d</pcihole64></controller>" % hole
             if hole is not None else "/>")
    xml = xml.replace("<controller type='pci' index='0' model='pcie-root'/>",
                      root)
    return xml


def qemu_args(machine, ram, hotplug, cpu, hole):
    """What libvirt gives QEMU for the same: -m with slots and maxmem,
    -cpu with phys-bits, -global for the hole. The RAM is a backend that
    reserves nothing, so that 1000 GiB start on this machine."""
    host = "q35-pcihost" if "q35" in machine else "i440FX-pcihost"
    m = "%dM" % ram + (",slots=%d,maxmem=%dM" % (hotplug[1], hotplug[0])
                       if hotplug else "")
    args = ["-M", machine + ",memory-backend=ram0", "-m", m,
            "-object", "memory-backend-ram,id=ram0,size=%dM,reserve=off"
            % ram, "-cpu", cpu if cpu in NO_LONG_MODE else
            "%s,phys-bits=%d" % (cpu, PHYS_BITS)]
    if hole is not None:
        args += ["-global", "%s.pci-hole64-size=%dM" % (host, hole)]
    return args


def both(tmp, qemu, name, case):
    """QEMU's window for @case, (start, end) or None with why, and check
    --domain's, its JSON or None with its output."""
    what, machine, ram, hotplug, cpu, hole = case
    # QEMU knows no "-distro" type: it runs the type before the dash.
    real = machine[:-len("-distro")] if machine.endswith("-distro") \
        else machine
    want, why = qemu_window(qemu, real,
                            qemu_args(real, ram, hotplug, cpu, hole))
    got, text = check_window(gpup2p(), HOST, tmp, name,
                             domain_xml(machine, ram, hotplug, cpu, hole))
    return want, why, got, text


def judge_bounds(t, tmp, qemu_name, qemu, cases):
    for i, case in enumerate(cases):
        want, why, got, text = both(tmp, qemu, "bounds%d" % i, case)
        if not t.ok(want is not None, "%s: %s answers" % (qemu_name,
                                                          case[0]), why):
            continue
        t.ok(got is not None and got.get("bounds") and
             got["start"] <= want[0] and want[1] <= got["end"] + 1,
             "... check --domain gives bounds, 0x%x-0x%x, around QEMU's "
             "0x%x-0x%x" % (got["start"] if got else 0,
                            got["end"] if got else 0, want[0], want[1] - 1),
             text)
        # Upstream's layout, which a distribution need not keep.
        t.eq((got or {}).get("layout_assumed"), True,
             "... and says they assume upstream's layout")


def judge(t, tmp, qemu_name, qemu, cases):
    for i, case in enumerate(cases):
        want, why, got, text = both(tmp, qemu, "case%d" % i, case)
        if not t.ok(want is not None, "%s: %s answers" % (qemu_name,
                                                          case[0]), why):
            continue
        if not t.ok(got is not None and got.get("exact"),
                    "... check --domain knows the window exactly", text):
            continue
        t.ok((got["start"], got["end"] + 1) == want,
             "... and its window, 0x%x-0x%x, is QEMU's" %
             (got["start"], got["end"]),
             "%s says 0x%x-0x%x; ours: %s" % (qemu_name, want[0],
                                              want[1] - 1, text))


def test(t):
    outer = built(t, OUTER, "Debian's QEMU 10.0.13 is at hand")
    newer = built(t, NEWER, "Debian's QEMU 11.1.3 is at hand")
    with tempfile.TemporaryDirectory(prefix="gpup2p-pc-window-") as tmp:
        if outer:
            judge(t, tmp, "Debian's QEMU 10.0.13", outer, CASES)
        if newer:
            # 11.1 keeps machine types back to 5.x: the 7.0 case still runs.
            judge(t, tmp, "Debian's QEMU 11.1.3", newer,
                  [c for c in CASES if c[1] != "q35"])
        if outer:
            judge_bounds(t, tmp, "Debian's QEMU 10.0.13", outer, BOUNDED)
        # Our machine type: pc-q35-10.0's memory map, our QEMU the judge.
        judge(t, tmp, "our QEMU", our_qemu(),
              [("pc-q35-10.0-gpup2p, 8 GiB, hot-plug", "pc-q35-10.0-gpup2p",
                8192, (16384, 2), "Skylake-Server", None)])
        # Machine types before 2.11 declare no window before firmware
        # (x-pci-hole64-fix off): QEMU says 0, and the tool gives bounds
        # (where firmware may put the BARs), saying why.
        if outer:
            want, why = qemu_window(outer, "pc-q35-2.10", qemu_args(
                "pc-q35-2.10", 8192, None, "Skylake-Server", None))
            t.ok(want is not None and want[0] == 0,
                 "pc-q35-2.10: Debian's QEMU 10.0.13 declares no window "
                 "before firmware", why or str(want))
            got, text = check_window(gpup2p(), HOST, tmp, "old", domain_xml(
                "pc-q35-2.10", 8192, None, "Skylake-Server", None))
            t.ok(got is not None and got.get("exact") is False and
                 got.get("bounds") and got.get("layout_assumed") is False
                 and "older than 2.11" in got.get("why", ""),
                 "... and check --domain gives bounds, saying why", text)


if __name__ == "__main__":
    Tap().run(test)
