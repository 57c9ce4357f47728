#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Runs inside the virtual host after inner_backends.py and
qemu_p2p_dma.sh: the host tool's BAR gate (`gpup2p check --domain`, the
"peer BAR maps" item) on domains that say what those scenarios ran (our
QEMU on type1, with x-no-mmap, on iommufd; Debian's QEMU 11.1 on
iommufd), each GPU given a clique (a proven-unmapped GPU without one is
ok), read from this kernel's own sysfs. The test outside holds each
verdict against what QEMU and the DMA did. Writes $VHOST_OUT/gate.json.

    inner_gate.py OUR-QEMU [STOCK-QEMU] [emulated]

"emulated": the same domains without iommufd (QEMU's legacy container) on
the kernel of tests/vhost/build-linux-emulated.sh, where that container
is iommufd's emulation; writes $VHOST_OUT/gate-emulated.json. "sparse":
our QEMU's domain with gpu1 bound to the sparse-mmap stand-in, a vfio-pci
variant driver; writes $VHOST_OUT/gate-sparse.json. "viommu": domains
with an Intel vIOMMU, on our QEMU and on Debian's QEMU 11.1, each alone
and with x-no-mmap; writes $VHOST_OUT/gate-viommu.json. "viommu-iommufd":
the same on iommufd (Linux 7.x, the kernel's config at /boot); writes
$VHOST_OUT/gate-viommu-iommufd.json."""

import json
import os
import subprocess
import sys

from vfio_helpers import OUT, PROJECT, bdf

GPUP2P = os.path.join(PROJECT, "build", "tools", "gpup2p", "gpup2p")
QEMU_NS = "http://libvirt.org/schemas/domain/qemu/1.0"


def hostdev(addr, driver, alias):
    dom, bus, rest = addr.split(":")
    slot, fn = rest.split(".")
    return ("<hostdev mode='subsystem' type='pci' managed='yes'>%s"
            "<source><address domain='0x%s' bus='0x%s' slot='0x%s' "
            "function='0x%s'/></source><alias name='%s'/></hostdev>" % (
                driver, dom, bus, slot, fn, alias))


def prop(name, typ, value):
    return ("<qemu:property name='%s' type='%s' value='%s'/>"
            % (name, typ, value))


def domain(path, qemu, gpus, clique, iommufd=False, nommap=None,
           viommu=False):
    """A domain assigning @gpus on @qemu, each given a clique as a real
    domain would, so that the gate's failure is what is judged: @clique
    "auto" (our QEMU: x-gpu-p2p-clique=auto per hostdev alias, as `gpup2p
    libvirt` writes it) or "id" (stock: x-nv-gpudirect-clique 0, the
    stand-ins being one clique under the VM rule). Each also shows the
    guest NVIDIA's vendor id (x-pci-vendor-id, as inner_backends.py runs
    the bochs-display stand-ins), without which no QEMU gives a clique.
    @nommap: the one hostdev (by address) that gets x-no-mmap=on.
    @viommu: an Intel vIOMMU in caching mode, as VFIO needs it."""
    driver = "<driver iommufd='yes'/>" if iommufd else ""
    devs, fronts = "", ""
    for i, g in enumerate(gpus):
        alias = "ua-gpu%d" % i
        devs += hostdev(g, driver, alias)
        props = prop("x-pci-vendor-id", "unsigned", 0x10de)
        props += (prop("x-gpu-p2p-clique", "string", "auto")
                  if clique == "auto" else
                  prop("x-nv-gpudirect-clique", "unsigned", 0))
        if g == nommap:
            props += prop("x-no-mmap", "bool", "true")
        fronts += ("<qemu:device alias='%s'><qemu:frontend>%s"
                   "</qemu:frontend></qemu:device>" % (alias, props))
    if viommu:
        devs += ("<iommu model='intel'><driver caching_mode='on'/>"
                 "</iommu>")
    xml = ("<domain type='kvm' xmlns:qemu='%s'><name>gate</name>"
           "<memory unit='MiB'>512</memory><vcpu>1</vcpu>"
           "<os><type arch='x86_64' machine='q35'>hvm</type></os>"
           "<devices><emulator>%s</emulator>"
           "<controller type='pci' index='0' model='pcie-root'/>%s"
           "</devices><qemu:override>%s</qemu:override></domain>"
           % (QEMU_NS, qemu, devs, fronts))
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
    args = sys.argv[1:]
    mode = args[-1] if args[-1:] in (["emulated"], ["sparse"], ["viommu"],
                                     ["viommu-iommufd"]) else ""
    if mode:
        args = args[:-1]
    ours, stock = args[0], args[1] if len(args) > 1 else ""
    gpus = [bdf("gpu0"), bdf("gpu1")]
    if mode == "sparse":
        cases = {"sparse-ours": (ours, {"clique": "auto"})}
    elif mode == "viommu":
        cases = {"viommu-ours": (ours, {"clique": "auto", "viommu": True}),
                 "viommu-nommap": (ours, {"clique": "auto", "viommu": True,
                                          "nommap": gpus[1]})}
        if stock:
            cases["viommu-stock"] = (stock, {"clique": "id", "viommu": True})
            cases["viommu-stock-nommap"] = (stock, {
                "clique": "id", "viommu": True, "nommap": gpus[1]})
    elif mode == "viommu-iommufd":
        both = {"viommu": True, "iommufd": True}
        cases = {"viommu-iommufd-ours": (ours, dict(both, clique="auto"))}
        if stock:
            cases["viommu-iommufd-stock"] = (stock, dict(both, clique="id"))
            cases["viommu-iommufd-stock-nommap"] = (stock, dict(
                both, clique="id", nommap=gpus[1]))
    elif mode == "emulated":
        cases = {"emulated-ours": (ours, {"clique": "auto"})}
        if stock:
            cases["emulated-stock"] = (stock, {"clique": "id"})
    else:
        cases = {"type1": (ours, {"clique": "auto"}),
                 "nommap": (ours, {"clique": "auto", "nommap": gpus[1]}),
                 "iommufd-ours": (ours, {"clique": "auto", "iommufd": True})}
        if stock:
            cases["iommufd-stock"] = (stock, {"clique": "id",
                                              "iommufd": True})
    res = {"gpus": gpus}
    for name, (qemu, opts) in cases.items():
        path = "/run/gate-%s.xml" % name
        domain(path, qemu, gpus, **opts)
        res[name] = check(path, qemu)
    name = "gate-%s.json" % mode if mode else "gate.json"
    with open(os.path.join(OUT, name), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
