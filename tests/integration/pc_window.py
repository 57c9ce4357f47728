# SPDX-License-Identifier: GPL-2.0-or-later
"""The guest's 64-bit PCI window two ways: QEMU's own (the host bridge's
pci-hole64-start and -end by QMP, before firmware runs) and `gpup2p check
--domain`'s (the `guest address bits` item's declared_window). Shared by
test_pc_window.py and the libvirt daemon test."""

import json
import os
import subprocess


def qemu_window(qemu, machine, args):
    """QEMU's pci-hole64-start and -end (exclusive) before firmware, or
    (None, why)."""
    path = "/machine/i440fx" if "i440fx" in machine else "/machine/q35"
    cmds = [{"execute": "qmp_capabilities"}] + [
        {"execute": "qom-get", "arguments": {"path": path, "property": p}}
        for p in ("pci-hole64-start", "pci-hole64-end")] + [
        {"execute": "quit"}]
    try:
        p = subprocess.run([qemu, "-S", "-nodefaults", "-display", "none",
                            "-accel", "tcg", "-qmp", "stdio"] + args,
                           input="\n".join(json.dumps(c) for c in cmds),
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return None, "QEMU did not answer in 120 s"
    got = [json.loads(l)["return"] for l in p.stdout.splitlines()
           if l.startswith('{"return"')]
    if len(got) < 3 or not all(isinstance(x, int) for x in got[1:3]):
        return None, "QEMU's answer: %s %s" % (p.stdout[-600:],
                                               p.stderr[-600:])
    return (got[1], got[2]), None


def _run(argv):
    return subprocess.run(argv, capture_output=True, text=True)


def check_window(gpup2p, host, tmp, name, xml, run=_run):
    """@gpup2p check --domain's declared window for @xml on the captured
    @host: its JSON, or None with the output. @run(argv): how to run it,
    giving its text output."""
    path = os.path.join(tmp, name + ".xml")
    with open(path, "w") as f:
        f.write(xml)
    os.chmod(path, 0o644)
    p = run([gpup2p, "check", "--sysfs-root", host, "--domain", path,
             "--json"])
    try:
        items = json.loads(p.stdout)["items"]
    except (ValueError, KeyError):
        return None, p.stdout[-600:] + p.stderr[-600:]
    for it in items:
        if it.get("item") == "guest address bits":
            return it.get("declared_window"), json.dumps(it)
    return None, p.stdout[-1000:]
