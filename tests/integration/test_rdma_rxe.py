#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""gpup2p-verify's RDMA checks on real verbs: soft-RoCE (rdma_rxe from
Debian's kernel, rdma-core's provider) on an e1000e in the virtual host.
Host memory must pass; GPU memory is "not testable" there, with the
reason, never "failed"; untested RDMA is never "all good"."""

import json
import os

from taplib import Tap, prepare, vhost_run, run_failure

INSIDE = r"""
for m in e1000e crc32_generic rdma_rxe ib_uverbs; do
    modprobe -d $VHOST_KERNEL_DIR -S $VHOST_KERNEL_VERSION $m
done
ip link set eth0 up
# rxe brings its port up once the netdev has carrier.
i=0; while ! ip link show eth0 | grep -q LOWER_UP && [ $i -lt 100 ]; do
    sleep 0.1; i=$((i + 1)); done
rdma link add rxe0 type rxe netdev eth0
sleep 1
set +e
build/guest-tools/gpup2p-verify --json > $VHOST_OUT/up.json
echo $? > $VHOST_OUT/up.rc
ip link set eth0 down
sleep 1
build/guest-tools/gpup2p-verify --json > $VHOST_OUT/down.json
echo $? > $VHOST_OUT/down.rc
"""


def load(outdir, name):
    with open(os.path.join(outdir, name)) as f:
        return json.load(f) if name.endswith(".json") else int(f.read())


def test(t):
    prepare()
    rc, out, err, outdir = vhost_run("rdma-nic.json", INSIDE)
    if not t.ok(rc == 0, "soft-RoCE set up in the virtual host",
                run_failure(rc, out, err)):
        return
    up = load(outdir, "up.json")
    rdma = {d["device"]: d for d in up["rdma"]}
    d = rdma.get("rxe0")
    if not t.ok(d is not None, "rxe0 found through libibverbs",
                json.dumps(up)):
        return
    t.eq(d["active_ports"], 1, "rxe0 has one active port")
    t.eq(d["host_mr"], "ok", "host memory registers")
    t.eq(d["host_rdma_write"], "ok",
         "an RDMA write loopback lands in host memory, bytes checked")
    t.eq(d["bdf"], None, "rxe0 sits on no PCI function")
    for k in ("gpu_dmabuf", "gpu_peermem", "gpu_rdma_write",
              "gpu_rdma_read"):
        t.eq(d[k], "not testable", "%s: not testable, not failed" % k)
    t.ok("CUDA" in (d["reason"] or ""), "the reason names what is missing",
         d["reason"])
    t.eq(load(outdir, "up.rc"), 3, "exit code 3: could not test (no GPU)")

    down = load(outdir, "down.json")
    d = {x["device"]: x for x in down["rdma"]}.get("rxe0", {})
    t.eq(d.get("host_rdma_write"), "not testable",
         "with the link down the port is inactive: not testable")
    t.eq(d.get("reason"), "no active port", "and says why")


if __name__ == "__main__":
    Tap().run(test)
