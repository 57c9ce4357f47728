#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The host topology service and the libvirt hook, as installed: the
snapshot script keeps /run/gpup2p/host atomically and readable by an
unprivileged user, systemd-analyze accepts the unit, apparmor_parser the
AppArmor snippet within libvirt's QEMU template, and the hook refuses a
domain whose explicit clique ids the host contradicts."""

import grp
import json
import os
import re
import shlex
import shutil
import stat
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
from taplib import Tap  # noqa: E402

from fixture_copy import gate_host  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
FIX = os.path.join(HERE, "..", "fixtures")
HOST = os.path.join(FIX, "vhost-two-numa")
G = os.environ.get("GPUP2P", "gpup2p")
DATA = os.environ.get("GPUP2P_DATA", os.path.join(SRC, "build", "data"))

QEMU_NS = "http://libvirt.org/schemas/domain/qemu/1.0"


def executable_copy(src, dst, replace=()):
    with open(src) as f:
        text = f.read()
    for a, b in replace:
        text = text.replace(a, b)
    with open(dst, "w") as f:
        f.write(text)
    os.chmod(dst, 0o755)
    return dst


def snapshot(script, run_dir, root=HOST, group="no-such-group-here"):
    env = dict(os.environ, GPUP2P=G, GPUP2P_RUN_DIR=run_dir,
               GPUP2P_SYSFS_ROOT=root, GPUP2P_SNAPSHOT_GROUP=group)
    return subprocess.run([script], env=env, capture_output=True, text=True)


def topo_json(root):
    """The model gpup2p reads from @root, less the root's own name."""
    out = subprocess.run([G, "topo", "--sysfs-root", root, "--json"],
                         capture_output=True, text=True).stdout
    model = json.loads(out)
    model.pop("root", None)
    return model


def as_nobody(*argv, text=True):
    return subprocess.run(["setpriv", "--reuid=65534", "--regid=65534",
                           "--clear-groups"] + list(argv),
                          capture_output=True, text=text)


def test_snapshot_group(t, d):
    """With the group (nogroup stands in for gpup2p): 0750/0640, readable
    by members only."""
    script = executable_copy(os.path.join(DATA, "gpup2p-host-snapshot"),
                             os.path.join(d, "snap-group"))
    run_dir = os.path.join(d, "run-group")
    os.chmod(d, 0o755)
    p = snapshot(script, run_dir, group="nogroup")
    link = os.path.join(run_dir, "host")
    cfg = os.path.join(link, "sys", "bus", "pci", "devices", "0000:03:00.0",
                       "config")
    gid = grp.getgrnam("nogroup").gr_gid
    st_dir, st_cfg = os.stat(run_dir), os.stat(cfg)
    t.ok(p.returncode == 0 and stat.S_IMODE(st_dir.st_mode) == 0o750 and
         stat.S_IMODE(st_cfg.st_mode) == 0o640 and
         st_dir.st_gid == gid and st_cfg.st_gid == gid,
         "with the group: run dir 0750, files 0640, both of the group",
         "%s %o/%o %d/%d" % (p.stderr, st_dir.st_mode, st_cfg.st_mode,
                             st_dir.st_gid, st_cfg.st_gid))
    member = as_nobody("cat", cfg, text=False)
    other = subprocess.run(["setpriv", "--reuid=65534", "--regid=4321",
                            "--clear-groups", "cat", cfg],
                           capture_output=True)
    t.ok(member.returncode == 0 and other.returncode != 0,
         "a member of the group reads it; another user cannot",
         member.stderr + other.stderr)


def test_snapshot_script(t, d):
    script = executable_copy(os.path.join(DATA, "gpup2p-host-snapshot"),
                             os.path.join(d, "gpup2p-host-snapshot"))
    run_dir = os.path.join(d, "run")
    link = os.path.join(run_dir, "host")

    p = snapshot(script, run_dir)
    t.ok(p.returncode == 0 and "world-readable" in p.stderr,
         "snapshot script: first run succeeds; without the group it says "
         "the snapshot is world-readable", p.stderr)
    t.ok(os.path.islink(link) and
         os.path.isdir(os.path.join(link, "sys", "bus", "pci", "devices")),
         "host is a link to a captured sysfs tree", p.stdout + p.stderr)
    t.ok(topo_json(link) == topo_json(HOST),
         "the snapshot reads back as the host it was taken from")
    first = os.readlink(link)

    # What QEMU does as libvirt-qemu: read through the link, unprivileged.
    os.chmod(d, 0o755)
    cfg = os.path.join(link, "sys", "bus", "pci", "devices", "0000:03:00.0",
                       "config")
    p = as_nobody("cat", cfg, text=False)
    t.ok(p.returncode == 0 and len(p.stdout) > 64,
         "an unprivileged user reads the full config space through it",
         p.stderr)
    # The capture's GPUs are QEMU's VGA (1234:1111), no NVIDIA device:
    # named, as with nothing to plan plan exits 3.
    p = as_nobody(G, "plan", "--sysfs-root", link, "--json", "--devices",
                  "0000:03:00.0,0000:04:00.0")
    t.eq(p.returncode, 0, "an unprivileged gpup2p plans from the snapshot")
    t.ok('"0000:04:00.0"' in p.stdout, "the plan holds the named GPUs",
         p.stdout + p.stderr)
    t.eq(stat.S_IMODE(os.stat(run_dir).st_mode), 0o755,
         "/run/gpup2p is 0755")

    p = snapshot(script, run_dir)
    second = os.readlink(link)
    t.ok(p.returncode == 0 and second != first,
         "second run: the link moves to a new generation")
    t.ok(os.path.isdir(os.path.join(run_dir, first)),
         "the previous generation stays for readers still in it")
    snapshot(script, run_dir)
    t.ok(not os.path.exists(os.path.join(run_dir, first)) and
         os.path.isdir(os.path.join(run_dir, second)),
         "third run: the oldest generation is removed, the previous kept")
    t.eq(sorted(n for n in os.listdir(run_dir) if n.startswith(".")), [],
         "no temporary entry is left behind")

    # A capture made by hand at the well-known path is taken over.
    hand_dir = os.path.join(d, "hand")
    os.makedirs(hand_dir)
    subprocess.run([G, "snapshot", "--sysfs-root", HOST,
                    os.path.join(hand_dir, "host")], check=True)
    p = snapshot(script, hand_dir)
    t.ok(p.returncode == 0 and
         os.path.islink(os.path.join(hand_dir, "host")),
         "a directory captured by hand at host is replaced by the link",
         p.stderr)

    # A capture stopped half-way (udev's restart stops a running one) leaves
    # a partial generation that the next run removes.
    killer = os.path.join(d, "gpup2p-killed")
    with open(killer, "w") as f:
        f.write('#!/bin/sh\nfor a; do out=$a; done\nmkdir -p "$out/sys"\n'
                'kill -TERM $PPID\nexec sleep 1 > /dev/null 2>&1\n')
    os.chmod(killer, 0o755)
    before = os.readlink(link)
    env = dict(os.environ, GPUP2P=killer, GPUP2P_RUN_DIR=run_dir,
               GPUP2P_SYSFS_ROOT=HOST)
    p = subprocess.run([script], env=env, capture_output=True, text=True)
    partial = [n for n in os.listdir(run_dir)
               if n.startswith("host.") and n not in (before, second)]
    t.ok(p.returncode != 0 and os.readlink(link) == before and
         len(partial) == 1,
         "a stopped capture leaves the link alone and one partial "
         "generation", str(partial) + p.stderr)
    p = snapshot(script, run_dir)
    t.ok(p.returncode == 0 and partial and
         not os.path.exists(os.path.join(run_dir, partial[0])),
         "the next run removes the partial generation", p.stderr)

    # A failed capture leaves the current snapshot in place.
    before = os.readlink(link)
    p = snapshot(script, run_dir, root=os.path.join(d, "no-such-root"))
    t.ok(p.returncode != 0 and os.readlink(link) == before and
         "no PCI devices" in p.stderr,
         "a failed capture fails and keeps the current snapshot", p.stderr)


def snapshot_modes(script, run_dir, group):
    """The modes the script gives the run directory, a directory of the
    snapshot and a file of it, with @group."""
    p = snapshot(script, run_dir, group=group)
    snap = os.path.join(run_dir, "host", "sys", "bus", "pci")
    return p, tuple(stat.S_IMODE(os.stat(x).st_mode) for x in
                    (run_dir, snap, os.path.join(snap, "devices",
                                                 "0000:03:00.0", "vendor")))


def test_guide_modes(t, d):
    """The operator guide states the modes the script makes, with the
    group gpup2p (nogroup stands in) and without it."""
    script = executable_copy(os.path.join(DATA, "gpup2p-host-snapshot"),
                             os.path.join(d, "snap-modes"))
    _, grouped = snapshot_modes(script, os.path.join(d, "g"), "nogroup")
    _, plain = snapshot_modes(script, os.path.join(d, "p"),
                              "no-such-group-here")
    with open(os.path.join(SRC, "docs", "operator-guide.md")) as f:
        guide = f.read()
    item = guide.split("**The host topology service.**", 1)[-1]
    item = " ".join(item.split("2. **", 1)[0].split())
    with_group = re.search(r"where the group `gpup2p` exists.*?"
                           r"directories are (\d{4}) and its files (\d{4})",
                           item)
    without = re.search(r"where it does not.*?directories are (\d{4}) and "
                        r"files (\d{4})", item)
    said = [tuple(int(x, 8) for x in m.groups()) if m else None
            for m in (with_group, without)]
    t.ok(grouped[0] == grouped[1] and plain[0] == plain[1] and
         said == [grouped[1:], plain[1:]],
         "the operator guide states the snapshot's modes with the group "
         "gpup2p and without it, as the script makes them",
         "script: with the group %s, without %s; guide says %s" %
         (["%04o" % m for m in grouped], ["%04o" % m for m in plain],
          said))


def test_unit(t, d):
    # systemd's own parser judges the unit; the script path is made an
    # executable copy, since the build tree's is not installed.
    unit = os.path.join(d, "gpup2p-host-topology.service")
    script = executable_copy(os.path.join(DATA, "gpup2p-host-snapshot"),
                             os.path.join(d, "snap"))
    with open(os.path.join(DATA, "gpup2p-host-topology.service")) as f:
        text = f.read()
    lines = [("ExecStart=" + script) if l.startswith("ExecStart=") else l
             for l in text.splitlines()]
    with open(unit, "w") as f:
        f.write("\n".join(lines) + "\n")
    p = subprocess.run(["systemd-analyze", "verify", "--man=no", unit],
                       capture_output=True, text=True)
    ours = [l for l in p.stderr.splitlines() if "gpup2p" in l]
    t.ok(p.returncode == 0 and not ours,
         "systemd-analyze verify accepts the unit", p.stderr)
    t.ok("Type=oneshot" in text and "RuntimeDirectoryPreserve=yes" in text,
         "the unit is a oneshot that keeps /run/gpup2p")
    t.ok(re.search(r"^StartLimitIntervalSec=0$", text, re.M) is not None,
         "no start rate limit: a burst of restarts never fails the unit")
    # The debounce: timer and refresh unit, judged by systemd too.
    units = [os.path.join(SRC, "data", n) for n in
             ("gpup2p-host-topology-refresh.timer",
              "gpup2p-host-topology-refresh.service")]
    p = subprocess.run(["systemd-analyze", "verify", "--man=no"] + units,
                       capture_output=True, text=True)
    ours = [l for l in p.stderr.splitlines() if "gpup2p" in l and
            "gpup2p-host-topology.service" not in l]
    t.ok(p.returncode == 0 and not ours,
         "systemd-analyze verify accepts the refresh timer and unit",
         p.stderr)
    timer = open(units[0]).read()
    refresh = open(units[1]).read()
    t.ok(re.search(r"^OnActiveSec=\d", timer, re.M) and
         "Unit=gpup2p-host-topology-refresh.service" in timer,
         "the timer fires once, a while after it was last (re)started")
    t.ok("systemctl --no-block restart gpup2p-host-topology.service" in
         refresh, "when it fires, the capture is restarted, never merged")
    test_udev_rule(t)


UDEV_KEY = (r'\s*([A-Z_]+(?:\{[^}]*\})?)\s*(==|!=|\+=|-=|:=|=)\s*'
            r'"((?:[^"\\]|\\.)*)"\s*,?')


def udev_rule_keys(line):
    """A udev rule line as (key, operator, value) triples, and whether the
    line is nothing but such pairs."""
    whole = re.fullmatch("(?:%s)+" % UDEV_KEY, line) is not None
    return re.findall(UDEV_KEY, line), whole


def test_udev_rule(t):
    with open(os.path.join(SRC, "data", "90-gpup2p-host-topology.rules")) as f:
        rules = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    if not t.eq(len(rules), 1, "the udev rules file holds one rule"):
        return
    keys, whole = udev_rule_keys(rules[0])
    t.ok(whole, "the rule parses as udev KEY OP \"VALUE\" pairs", rules[0])
    match = {(k, op): v for k, op, v in keys if op in ("==", "!=")}
    t.eq(sorted(match.get(("ACTION", "=="), "").split("|")),
         ["add", "bind", "remove", "unbind"],
         "it matches PCI add, remove, bind and unbind")
    t.eq(match.get(("SUBSYSTEM", "==")), "pci", "... of the pci subsystem")
    runs = [v for k, op, v in keys if k == "RUN" and op == "+="]
    if not t.eq(len(runs), 1, "it runs one program"):
        return
    argv = shlex.split(runs[0])
    options = [a for a in argv[1:] if a.startswith("-")]
    words = [a for a in argv[1:] if not a.startswith("-")]
    t.ok(os.path.isabs(argv[0]) and os.access(argv[0], os.X_OK) and
         os.path.basename(argv[0]) == "systemctl",
         "the program is systemctl by an absolute path that exists",
         argv[0])
    t.ok("--no-block" in options,
         "--no-block: udev does not wait for the capture", runs[0])
    # restart re-arms the timer: events in a burst push the capture back
    # until they settle (a start of an active timer would not).
    t.eq(words[:1], ["restart"],
         "the verb is restart, which re-arms the debounce timer")
    t.eq(words[1:], ["gpup2p-host-topology-refresh.timer"],
         "... of the refresh timer the package installs")
    # The operator guide names what the rule restarts: the timer.
    with open(os.path.join(SRC, "docs", "operator-guide.md")) as f:
        guide = " ".join(f.read().split())
    said = re.search(r"The udev rule `90-gpup2p-host-topology\.rules` "
                     r"restarts\s+(?:the\s+)?(?:[a-z ]*?)`([^`]+)`", guide)
    t.ok(said is not None and [said.group(1)] == words[1:],
         "the operator guide says the rule restarts %s" %
         " ".join(words[1:]), said.group(0) if said else
         "no 'The udev rule `90-gpup2p-host-topology.rules` restarts ...'")


def test_apparmor(t, d):
    # apparmor_parser judges the snippet inside libvirt's own per-VM
    # template, with the abstractions libvirt ships.
    base = os.path.join(d, "apparmor.d")
    template = os.path.join(base, "libvirt", "TEMPLATE.qemu")
    if not t.ok(os.path.exists("/etc/apparmor.d/abstractions/libvirt-qemu")
                and shutil.which("apparmor_parser"),
                "apparmor_parser and libvirt's AppArmor abstractions are "
                "installed"):
        return
    shutil.copytree("/etc/apparmor.d", base, symlinks=True)
    snippet_dir = os.path.join(base, "abstractions", "libvirt-qemu.d")
    os.makedirs(snippet_dir, exist_ok=True)
    snippet = os.path.join(snippet_dir, "gpup2p")
    shutil.copy(os.path.join(SRC, "data", "apparmor-libvirt-qemu-gpup2p"),
                snippet)
    parse = ["apparmor_parser", "--skip-kernel-load", "--skip-cache",
             "--base", base]
    p = subprocess.run(parse + [template], capture_output=True, text=True)
    t.eq(p.returncode, 0, "apparmor_parser compiles libvirt's QEMU template "
         "with the snippet")
    p = subprocess.run(parse + ["--preprocess", template],
                       capture_output=True, text=True)
    t.ok("/{,var/}run/gpup2p/** r," in p.stdout,
         "libvirt's libvirt-qemu abstraction includes the snippet",
         p.stderr)
    t.ok("/usr/lib/gpup2p/qemu/bin/qemu-system-x86_64 rmix," in p.stdout,
         "... which lets a domain's QEMU be the packaged one (gpup2p-qemu)")
    with open(snippet, "a") as f:
        f.write("  /run/gpup2p/** rx broken\n")
    p = subprocess.run(parse + [template], capture_output=True, text=True)
    t.ok(p.returncode != 0 and "gpup2p" in p.stderr,
         "... and would reject a broken snippet", p.stderr)


DOMAIN = """<domain type='kvm' xmlns:qemu='%s'>
  <name>ids-vm</name>
  <devices>
    <hostdev mode='subsystem' type='pci'>
      <source><address domain='0x0000' bus='0x03' slot='0x00' function='0x0'/></source>
      <alias name='ua-a'/>
    </hostdev>
    <hostdev mode='subsystem' type='pci'>
      <source><address domain='0x0000' bus='0x%s' slot='0x00' function='0x0'/></source>
      <alias name='ua-b'/>
    </hostdev>
  </devices>
%s
</domain>
"""


def override(prop, a, b, extra=""):
    dev = ("<qemu:device alias='%s'><qemu:frontend>"
           "<qemu:property name='%s' type='string' value='%s'/>%s"
           "</qemu:frontend></qemu:device>")
    return ("<qemu:override>" + dev % ("ua-a", prop, a, extra) +
            dev % ("ua-b", prop, b, extra) + "</qemu:override>")


def syslog_lines(t, d, run_hook, gone, bad):
    """The hook's lines reach the system log through util-linux's logger,
    read back from a syslog socket of the test's own."""
    path = os.path.join(d, "syslog.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(5)
    os.environ["GPUP2P_HOOK_LOG_SOCKET"] = path
    try:
        cases = [(gone, bad, "is not installed"),
                 (None, "<domain><devices>", "could not check domain"),
                 (None, bad, "refusing domain 'ids-vm'")]
        for script, xml, words in cases:
            p = run_hook(xml, script=script)
            got = []
            sock.settimeout(5)
            while True:             # every line of this case
                try:
                    got.append(sock.recv(65536).decode(errors="replace"))
                except OSError:
                    break
                sock.settimeout(0.5)
            t.ok(any("gpup2p-hook" in g and words in g and "ids-vm" in g
                     for g in got) and
                 len(got) == len(p.stderr.splitlines()),
                 "hook: '%s' also reaches the system log, tagged "
                 "gpup2p-hook, as every line it says" % words,
                 "\n".join(got) + "\n" + p.stderr)
    finally:
        del os.environ["GPUP2P_HOOK_LOG_SOCKET"]
        sock.close()


def test_hook(t, d):
    # The hook as installed, with gpup2p pointed at the captured host
    # (the hook reads the live /sys, which has no GPUs here).
    wrapper = os.path.join(d, "gpup2p-on-fixture")
    with open(wrapper, "w") as f:
        f.write('#!/bin/sh\ncmd=$1; shift\nexec "%s" "$cmd" --sysfs-root '
                '"%s" "$@"\n' % (G, HOST))
    os.chmod(wrapper, 0o755)
    etc = os.path.join(d, "etc")
    os.makedirs(os.path.join(etc, "gpup2p"))
    hook = executable_copy(os.path.join(SRC, "data", "libvirt-hook-qemu.in"),
                           os.path.join(d, "hook"),
                           [("@GPUP2P@", wrapper), ("@SYSCONFDIR@", etc)])
    gone = executable_copy(os.path.join(SRC, "data", "libvirt-hook-qemu.in"),
                           os.path.join(d, "hook-gone"),
                           [("@GPUP2P@", os.path.join(d, "no-gpup2p")),
                            ("@SYSCONFDIR@", etc)])

    def run_hook(xml, op=("prepare", "begin", "-"), script=None):
        return subprocess.run([script or hook, "ids-vm"] + list(op),
                              input=xml, capture_output=True, text=True)

    # It fails open: only a contradiction the host proves keeps a VM off.
    bad = DOMAIN % (QEMU_NS, "41", override("x-gpu-p2p-clique", "3", "3"))
    syslog_lines(t, d, run_hook, gone, bad)
    p = run_hook(bad, script=gone)
    t.ok(p.returncode == 0 and "is not installed" in p.stderr and
         "ids-vm" in p.stderr,
         "hook: gpup2p removed (conffile kept): the domain starts, one line "
         "says it was not checked", p.stderr)
    p = run_hook("<domain><devices>")
    t.ok(p.returncode == 0 and "could not check domain 'ids-vm'" in
         p.stderr, "hook: XML it cannot read: the domain starts, saying so",
         p.stderr)
    off = os.path.join(etc, "gpup2p", "libvirt-hook-off")
    open(off, "w").close()
    p = run_hook(bad)
    t.ok(p.returncode == 0 and not p.stderr,
         "hook: /etc/gpup2p/libvirt-hook-off turns it off", p.stderr)
    os.unlink(off)

    # 03:00.0 and 04:00.0 share a switch whose ports have no ACS; so a
    # guest's request from 03:00.0 is routed by the switch, whatever the
    # peer (41:00.0 is under a root port of another host bridge).
    p = run_hook(bad)
    t.ok(p.returncode != 0 and "refusing domain 'ids-vm'" in p.stderr and
         "0000:03:00.0 and 0000:41:00.0 share clique 3" in p.stderr,
         "hook: refuses one clique across GPUs the host cannot connect, "
         "naming both", p.stderr)
    p = run_hook(bad, ("start", "begin", "-"))
    t.eq(p.returncode, 0, "hook: other operations pass untouched")
    # A clique for switch peers whose ports lack ACS: the host proves a
    # guest's request would bypass the IOMMU, so the hook refuses it.
    p = run_hook(DOMAIN % (QEMU_NS, "04",
                           override("x-gpu-p2p-clique", "3", "3")))
    t.ok(p.returncode != 0 and "bypasses the IOMMU" in p.stderr and
         "0000:02:00.0" in p.stderr and "0000:02:01.0" in p.stderr,
         "hook: refuses a clique for switch peers without ACS, naming the "
         "ports", p.stderr)
    # 05:00.0 and 41:00.0 sit on root ports of the AMD Zen virtual host,
    # whose root complex forwards P2P: one clique passes.
    # The BAR gate is consulted and never stops the VM: the capture
    # records no modules or kernel config, so whether the BARs will be
    # mapped is unknown, and the hook says so.
    root_ports = (DOMAIN % (QEMU_NS, "41",
                            override("x-gpu-p2p-clique", "3", "3"))
                  ).replace("bus='0x03'", "bus='0x05'")
    p = run_hook(root_ports)
    # Our QEMU's own ids under its default verify: its gate, which sees
    # its container, may still refuse them at start-up, as the hook says.
    t.ok(p.returncode == 0 and "refusing" not in p.stderr and
         "domain 'ids-vm' starts unless our QEMU's own gate, which sees its "
         "container and each BAR's mmaps, proves the BARs unmapped and "
         "refuses the explicit x-gpu-p2p-clique id; whether the BARs of GPUs "
         "with a clique id will be mapped in the IOMMU for peers is unknown: "
         "0000:05:00.0, 0000:41:00.0: the VFIO container is not known"
         in p.stderr,
         "hook: one clique for GPUs under root ports passes, the BAR "
         "gate's unknown said", p.stderr)
    # Proven unmapped (iommufd's emulated container): said, and it starts.
    emul = gate_host(HOST, os.path.join(d, "emulated"), "7.3.4+bpo-amd64",
                     "CONFIG_VFIO=m\nCONFIG_IOMMUFD=m\n# CONFIG_VFIO_CONTAINER "
                     "is not set\nCONFIG_IOMMUFD_VFIO_CONTAINER=y\n")
    on_emul = executable_copy(wrapper, os.path.join(d, "gpup2p-on-emul"),
                              [(HOST, emul)])
    emul_hook = executable_copy(hook, os.path.join(d, "hook-emul"),
                                [(wrapper, on_emul)])
    p = run_hook(root_ports, script=emul_hook)
    # The hook stops nothing; our QEMU refuses its own explicit ids there
    # (x-gpu-p2p-verify=refuse by default), which the hook says.
    t.ok(p.returncode == 0 and "domain 'ids-vm' will not start: our QEMU "
         "refuses an explicit x-gpu-p2p-clique id under "
         "x-gpu-p2p-verify=refuse (the default) where the BARs will not be "
         "mapped in the IOMMU: 0000:05:00.0, 0000:41:00.0: /dev/vfio/vfio "
         "is iommufd's emulated type1 container" in p.stderr,
         "hook: GPUs whose BARs will not be mapped: the hook passes (exit "
         "0) and says our QEMU will refuse their explicit ids, with the "
         "gate's reason", p.stderr)
    p = run_hook(DOMAIN % (QEMU_NS, "41",
                           override("x-gpu-p2p-clique", "3", "4")))
    t.eq(p.returncode, 0, "hook: different ids make no claim and pass")
    p = run_hook(DOMAIN % (QEMU_NS, "41",
                           override("x-nv-gpudirect-clique", "7", "7")))
    t.ok(p.returncode != 0 and "x-nv-gpudirect-clique" in p.stderr,
         "hook: upstream's x-nv-gpudirect-clique is checked too", p.stderr)
    glob = ("<qemu:commandline><qemu:arg value='-global'/>"
            "<qemu:arg value='vfio-pci.x-gpu-p2p-clique=2'/>"
            "</qemu:commandline>")
    p = run_hook(DOMAIN % (QEMU_NS, "41", glob))
    t.ok(p.returncode != 0 and "share clique 2" in p.stderr,
         "hook: an id given to every vfio-pci device by -global is checked",
         p.stderr)
    p = run_hook(DOMAIN % (QEMU_NS, "41", override(
        "x-gpu-p2p-clique", "3", "3",
        "<qemu:property name='x-gpu-p2p-verify' type='string' "
        "value='warn'/>")))
    t.ok(p.returncode == 0 and "warning" in p.stderr,
         "hook: x-gpu-p2p-verify=warn on both only warns, as QEMU does",
         p.stderr)
    p = run_hook(DOMAIN % (QEMU_NS, "41",
                           override("x-gpu-p2p-clique", "16", "3")))
    # Bad input is no proof: the hook lets QEMU refuse it at start-up.
    t.ok(p.returncode == 0 and "'16' is not auto, off or a clique id 0-15"
         in p.stderr and "could not check" in p.stderr,
         "hook: an id out of range is named, and left to QEMU to refuse",
         p.stderr)
    p = run_hook(DOMAIN % (QEMU_NS, "41",
                           override("x-gpu-p2p-clique", "auto", "auto")))
    t.eq(p.returncode, 0, "hook: auto passes (QEMU plans it)")
    # Without explicit ids the topology is not even read.
    p = subprocess.run([G, "libvirt", "--check", "--sysfs-root",
                        os.path.join(d, "no-such-root"), "-"],
                       input=DOMAIN % (QEMU_NS, "41", ""),
                       capture_output=True, text=True)
    t.eq(p.returncode, 0, "--check: a domain without ids needs no topology")
    # What the host cannot judge keeps its id with a warning, as in QEMU.
    p = subprocess.run([G, "libvirt", "--check", "--sysfs-root",
                        os.path.join(d, "no-such-root"), "-"], input=bad,
                       capture_output=True, text=True)
    t.ok(p.returncode == 0 and "cannot judge" in p.stderr,
         "--check: ids on an unreadable host pass with a warning", p.stderr)
    # A device that is not there is proof: libvirt could not start it.
    p = run_hook(DOMAIN % (QEMU_NS, "99",
                           override("x-gpu-p2p-clique", "3", "3")))
    t.ok(p.returncode != 0 and "refusing domain 'ids-vm'" in p.stderr and
         "0000:99:00.0 is given clique 3 (x-gpu-p2p-clique), but it is not "
         "a PCI device of this host" in p.stderr,
         "hook: refuses an id for a device not on the host, naming it",
         p.stderr)


def test_hook_opt_out(t, d, hook, xml):
    """<metadata><hook xmlns='urn:vfio-gpu-p2p:libvirt:1' check='off'/>:
    the hook lets this VM start whatever it finds, saying what, on any
    QEMU; another value is named, and the hook fails open."""
    meta = ("<metadata><gp:hook xmlns:gp='urn:vfio-gpu-p2p:libvirt:1' "
            "check='%s'/></metadata>")
    off = xml.replace("</name>", "</name>" + meta % "off")
    p = subprocess.run(["virt-xml-validate", "-", "domain"], input=off,
                       capture_output=True, text=True)
    t.ok(p.returncode == 0, "the opt-out validates against libvirt's "
         "schema", p.stdout + p.stderr)
    hk = subprocess.run([hook, "ids-vm", "prepare", "begin", "-"],
                        input=off, capture_output=True, text=True)
    t.ok(hk.returncode == 0 and "is not refused" in hk.stderr and
         "check='off'" in hk.stderr and "IOMMU group" in hk.stderr,
         "opt-out: the hook lets a domain the host proves wrong start, "
         "naming why it would have refused", hk.stderr)
    bad = xml.replace("</name>", "</name>" + meta % "maybe")
    ck = subprocess.run([G, "libvirt", "--check", "-"], input=bad,
                        capture_output=True, text=True)
    t.ok(ck.returncode == 1 and "check='maybe'" in ck.stderr and
         "check is on or off" in ck.stderr,
         "opt-out: another value than on or off is named (exit 1)",
         ck.stderr)


def test_hook_proof(t, d):
    """The hook, libvirt --check and check --domain refuse only what the
    host proves wrong (a guest's request bypassing the IOMMU, one IOMMU
    group, a device not there); a root complex not known to forward P2P
    is no proof, and only warned about."""
    sys.path.insert(0, HERE)
    from fixture_copy import intel_host, same_group_host

    intel = intel_host(HOST, os.path.join(d, "intel"))
    group = same_group_host(HOST, os.path.join(d, "group"), "0000:05:00.0",
                            "0000:41:00.0")
    # 05:00.0 and 41:00.0: root ports of two host bridges.
    xml = (DOMAIN % (QEMU_NS, "41", override("x-gpu-p2p-clique", "3", "3"))
           ).replace("bus='0x03'", "bus='0x05'").replace(
        "</name>", "</name><memory unit='GiB'>4</memory>").replace(
        "type='pci'>", "type='pci' managed='yes'>")
    path = os.path.join(d, "ids-vm.xml")
    with open(path, "w") as f:
        f.write(xml)
    for host, name, refused in ((intel, "an unlisted Intel root complex",
                                 False),
                                (group, "one IOMMU group", True)):
        wrapper = executable_copy(
            "/dev/null", os.path.join(d, "gpup2p-" + os.path.basename(host)))
        with open(wrapper, "w") as f:
            f.write('#!/bin/sh\ncmd=$1; shift\nexec "%s" "$cmd" '
                    '--sysfs-root "%s" "$@"\n' % (G, host))
        hook = executable_copy(
            os.path.join(SRC, "data", "libvirt-hook-qemu.in"),
            os.path.join(d, "hook-" + os.path.basename(host)),
            [("@GPUP2P@", wrapper), ("@SYSCONFDIR@", d)])
        hk = subprocess.run([hook, "ids-vm", "prepare", "begin", "-"],
                            input=xml, capture_output=True, text=True)
        ck = subprocess.run([G, "libvirt", "--check", "--sysfs-root", host,
                             path], capture_output=True, text=True)
        dom = subprocess.run([G, "check", "--sysfs-root", host, "--domain",
                              path, "--json"], capture_output=True,
                             text=True)
        report = json.loads(dom.stdout) if dom.stdout.startswith("{") \
            else {}
        items = {i["item"]: i for i in report.get("items", [])}
        item = items.get("clique ids", {})
        if refused:
            test_hook_opt_out(t, d, hook, xml)
            t.ok(hk.returncode != 0 and ck.returncode == 2 and
                 "IOMMU group 18" in ck.stderr and
                 item.get("verdict") == "fail" and
                 report.get("failed") == 1 and dom.returncode == 5,
                 "%s: the hook refuses, --check exits 2, check --domain "
                 "fails the clique ids (exit 5)" % name,
                 hk.stderr + ck.stderr + dom.stdout)
        else:
            t.ok(hk.returncode == 0 and ck.returncode == 0 and
                 "warning" in ck.stderr and "cannot confirm" in ck.stderr and
                 "not known to forward P2P" in ck.stderr and
                 "cannot confirm" in hk.stderr,
                 "%s: the hook lets the VM start and --check exits 0, with "
                 "a warning that names the reason" % name,
                 hk.stderr + ck.stderr)
            t.ok(item.get("verdict") == "warn" and
                 "not known to forward P2P" in item.get("detail", "") and
                 report.get("failed") == 0 and dom.returncode != 5,
                 "%s: check --domain warns about the clique ids, not a "
                 "failure" % name, dom.stdout + dom.stderr)


# The parts: "service" (the snapshot script and the unit) and "libvirt"
# (the hook and the AppArmor snippet, built only with libvirt). The
# arguments name the parts to run; none runs both.
PARTS = {
    "service": ([test_snapshot_script, test_snapshot_group,
                 test_guide_modes, test_unit],
                ["setpriv", "systemd-analyze"]),
    "libvirt": ([test_hook, test_hook_proof, test_apparmor],
                ["apparmor_parser"]),
}


def test(t, parts):
    for part in parts:
        for fn in PARTS[part][0]:
            with tempfile.TemporaryDirectory() as d:
                fn(t, d)
    for part in parts:
        for prog in PARTS[part][1]:
            t.ok(shutil.which(prog),
                 "%s is installed (the test needs it)" % prog)


if __name__ == "__main__":
    chosen = sys.argv[1:] or sorted(PARTS)
    unknown = [p for p in chosen if p not in PARTS]
    if unknown:
        sys.exit("test_host_service.py: unknown part %s (parts: %s)"
                 % (", ".join(unknown), ", ".join(sorted(PARTS))))
    Tap().run(lambda t: test(t, chosen))
