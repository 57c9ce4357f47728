#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Runs inside the virtual host after inner_backends.py and
qemu_p2p_dma.sh: the host tool's BAR gate (`gpup2p check --domain`, the
"peer BAR maps" item) on domains that say what those scenarios ran (our
QEMU on type1, with x-no-mmap, on iommufd; Debian's QEMU 11.1 on
iommufd), read from this kernel's own sysfs. The test outside holds each
verdict against what QEMU and the DMA did. Writes $VHOST_OUT/gate.json."""

import json
import os
import subprocess
import sys

from vfio_helpers import OUT, PROJECT, bdf

GPUP2P = os.path.join(PROJECT, "build", "tools", "gpup2p", "gpup2p")
QEMU_NS = "http://libvirt.org/schemas/domain/qemu/1.0"


def hostdev(addr, driver="", alias=""):
    dom, bus, rest = addr.split(":")
    slot, fn = rest.split(".")
    return ("<hostdev mode='subsystem' type='pci' managed='yes'>%s"
            "<source><address domain='0x%s' bus='0x%s' slot='0x%s' "
            "function='0x%s'/></source>%s</hostdev>" % (
                driver, dom, bus, slot, fn,
                "<alias name='%s'/>" % alias if alias else ""))


def domain(path, qemu, gpus, iommufd=False, nommap=None):
    """A domain assigning @gpus on @qemu; @nommap: the one hostdev (by
    address) that gets x-no-mmap=on."""
    driver = "<driver iommufd='yes'/>" if iommufd else ""
    devs = "".join(hostdev(g, driver, "ua-nommap" if g == nommap else "")
                   for g in gpus)
    override = ""
    if nommap:
        override = ("<qemu:override><qemu:device alias='ua-nommap'>"
                    "<qemu:frontend><qemu:property name='x-no-mmap' "
                    "type='bool' value='true'/></qemu:frontend>"
                    "</qemu:device></qemu:override>")
    xml = ("<domain type='kvm' xmlns:qemu='%s'><name>gate</name>"
           "<memory unit='MiB'>512</memory><vcpu>1</vcpu>"
           "<os><type arch='x86_64' machine='q35'>hvm</type></os>"
           "<devices><emulator>%s</emulator>"
           "<controller type='pci' index='0' model='pcie-root'/>%s"
           "</devices>%s</domain>" % (QEMU_NS, qemu, devs, override))
    with open(path, "w") as f:
        f.write(xml)


def check(path, qemu):
    p = subprocess.run([GPUP2P, "check", "--domain", path, "--qemu", qemu,
                        "--json"], capture_output=True, text=True)
    try:
        items = {i["item"]: i for i in json.loads(p.stdout)["items"]}
    except (ValueError, KeyError) as e:
        return {"rc": p.returncode, "error": repr(e),
                "stderr": p.stderr[-2000:]}
    item = items.get("peer BAR maps", {})
    return {"rc": p.returncode, "verdict": item.get("verdict"),
            "detail": item.get("detail"),
            "gpus": {g["bdf"]: g["verdict"]
                     for g in item.get("bar_gate", [])},
            "stderr": p.stderr[-2000:]}


def main():
    ours, stock = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""
    gpus = [bdf("gpu0"), bdf("gpu1")]
    cases = {"type1": (ours, {}),
             "nommap": (ours, {"nommap": gpus[1]}),
             "iommufd-ours": (ours, {"iommufd": True})}
    if stock:
        cases["iommufd-stock"] = (stock, {"iommufd": True})
    res = {"gpus": gpus}
    for name, (qemu, opts) in cases.items():
        path = "/run/gate-%s.xml" % name
        domain(path, qemu, gpus, **opts)
        res[name] = check(path, qemu)
    with open(os.path.join(OUT, "gate.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
