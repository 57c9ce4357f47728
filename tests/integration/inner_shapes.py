#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Runs inside the virtual host booted from
tests/vhost/topologies/acs-shapes.json: binds the GPU stand-ins to
vfio-pci, starts our QEMU with x-gpu-p2p-clique=auto on each and writes
the ids in effect to $VHOST_OUT/shapes.json for test_qemu_ext.py."""

import json
import os

from qemu_cfg import OURS, Vm
from vfio_helpers import OUT, bdf, bind_vfio

GPUS = ["gpu%d" % i for i in range(8)]


def auto_ids(b, names):
    """Our QEMU with every device of @names on auto: the id each got."""
    devs = ["vfio-pci,host=%s,bus=pcie.0,addr=0x%x,id=%s,"
            "x-pci-vendor-id=0x10de,x-gpu-p2p-clique=auto"
            % (b[n], 0x08 + i, n) for i, n in enumerate(names)]
    vm = Vm(OURS, devs, qmp=True, root_ports=False)
    r = {"started": vm.started}
    if vm.started:
        r["ids"] = {n: vm.qom(n, "x-gpu-p2p-clique-in-effect")
                    for n in names}
    r["rc"], r["stderr"], _ = vm.quit()
    return r


def main():
    b = {n: bdf(n) for n in GPUS}
    res = {"bdfs": b, "bound": {}}
    for n in GPUS:
        try:
            bind_vfio(b[n])
            res["bound"][n] = "vfio-pci"
        except Exception as e:      # recorded; the test outside judges it
            res["bound"][n] = repr(e)
    usable = [n for n in GPUS if res["bound"][n] == "vfio-pci"]
    try:
        res["auto"] = auto_ids(b, usable)
    except Exception as e:
        res["auto"] = {"exception": repr(e)}
    with open(os.path.join(OUT, "shapes.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
