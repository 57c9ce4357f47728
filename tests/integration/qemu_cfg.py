# SPDX-License-Identifier: GPL-2.0-or-later
"""Inside the virtual host: start a QEMU (ours or Debian's stock one) paused
with vfio-pci devices behind root ports, and read or write guest-visible
config space the way a guest CPU does, through qtest: 0xCF8/0xCFC for the
root ports' bus numbers, the q35 MMCONFIG window for every device byte
(standard and extended). QMP rides along on a unix socket."""

import json
import os
import signal
import subprocess
import tempfile
import time

from vfio_helpers import PROJECT, Qmp

OURS = os.environ.get("GPUP2P_QEMU",
                      os.path.join(PROJECT, "build", "qemu",
                                   "qemu-system-x86_64"))
STOCK = "/usr/bin/qemu-system-x86_64"
MMCFG = 0xb0000000
ROOT_PORTS = 4


class Vm:
    """One QEMU, -S, qtest on stdio. Root port i is 00:(10+i).0 with
    secondary bus i+1; a device put on rpI sits at bus i+1, 00.0."""

    def __init__(self, qemu, devices, extra=(), qmp=False, root_ports=True):
        self.tmp = tempfile.mkdtemp(prefix="qcfg-")
        self.qmp_path = os.path.join(self.tmp, "qmp.sock")
        cmd = [qemu, "-L", "/usr/share/seabios", "-L", "/usr/share/qemu",
               "-nodefaults", "-display", "none", "-M", "q35",
               "-accel", "tcg", "-m", "64M", "-S", "-qtest", "stdio",
               "-qtest-log", "/dev/null"]
        for i in range(ROOT_PORTS if root_ports else 0):
            cmd += ["-device", "pcie-root-port,id=rp%d,chassis=%d,slot=%d,"
                    "addr=%x.0" % (i, i + 1, i + 1, 0x10 + i)]
        for d in devices:
            cmd += ["-device", d]
        if qmp:
            cmd += ["-qmp", "unix:%s,server=on,wait=off" % self.qmp_path]
        cmd += list(extra)
        self.cmd = cmd
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.qmp = None
        self.started = self._handshake()
        if self.started and qmp:
            self.qmp = Qmp(self.qmp_path)

    def _handshake(self):
        try:
            self.q("outl 0xcf8 0x80000000")
        except EOFError:
            return False
        # Bus numbers, as firmware would give them, and MMCONFIG on.
        for i in range(ROOT_PORTS):
            self.cfg_write_legacy(0, 0x10 + i, 0x18,
                                  (i + 1) << 16 | (i + 1) << 8)
        self.cfg_write_legacy(0, 0, 0x64, 0)
        self.cfg_write_legacy(0, 0, 0x60, MMCFG | 1)
        return True

    def q(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        while True:
            reply = self.proc.stdout.readline()
            if not reply:
                raise EOFError(line)
            if reply.startswith(("OK", "FAIL", "ERR")):
                if not reply.startswith("OK"):
                    raise RuntimeError("qtest %s: %s" % (line, reply))
                return reply.split()

    def cfg_write_legacy(self, bus, slot, off, val):
        self.q("outl 0xcf8 0x%x" % (0x80000000 | bus << 16 | slot << 11 |
                                     (off & 0xfc)))
        self.q("outl 0xcfc 0x%x" % val)

    def cfg_read_legacy(self, bus, slot, off):
        self.q("outl 0xcf8 0x%x" % (0x80000000 | bus << 16 | slot << 11 |
                                     (off & 0xfc)))
        return int(self.q("inl 0xcfc")[1], 16) >> 8 * (off & 3)

    def power_slot(self, port):
        """Power on root port @port's slot, as a guest's pciehp does after
        a hot plug: until then the device answers config reads with ~0."""
        slot, ptr = 0x10 + port, self.cfg_read_legacy(0, 0x10 + port,
                                                      0x34) & 0xff
        while ptr and self.cfg_read_legacy(0, slot, ptr) & 0xff != 0x10:
            ptr = self.cfg_read_legacy(0, slot, ptr + 1) & 0xff
        ctl = self.cfg_read_legacy(0, slot, ptr + 0x18) & 0xffff
        ctl &= ~0x400                           # Power Controller Control
        # Bits 31:16 of this dword are Slot Status (write 1 to clear): 0.
        self.cfg_write_legacy(0, slot, ptr + 0x18, ctl)

    def addr(self, bus, off):
        return MMCFG | bus << 20 | off

    def config(self, bus, size=4096):
        """All guest-visible config bytes of device bus:00.0."""
        out = bytearray()
        for off in range(0, size, 4):
            v = int(self.q("readl 0x%x" % self.addr(bus, off))[1], 16)
            out += v.to_bytes(4, "little")
        return bytes(out)

    def write(self, bus, off, data):
        """A guest's config write of 1, 2 or 4 bytes."""
        op = {1: "writeb", 2: "writew", 4: "writel"}[len(data)]
        self.q("%s 0x%x 0x%x" % (op, self.addr(bus, off),
                                 int.from_bytes(data, "little")))

    def qom(self, dev, prop):
        r = self.qmp.cmd("qom-get", path="/machine/peripheral/" + dev,
                         property=prop)
        return r.get("return", r.get("error"))

    def quit(self):
        """Stop QEMU; (exit code, stderr, seconds since start). A QEMU
        that started and was stopped here counts as exit code 0."""
        started = self.proc.poll() is None
        if self.qmp:
            self.qmp.close()
        if started:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        err = self.proc.stderr.read()
        rc = self.proc.returncode
        if started and rc == -signal.SIGTERM:
            rc = 0
        return rc, err.strip(), time.monotonic() - self.t0


def start_error(qemu, devices, extra=()):
    """Start and stop at once: {"rc", "stderr", "started"}."""
    vm = Vm(qemu, devices, extra)
    started = vm.started
    rc, err, _ = vm.quit()
    return {"rc": rc, "stderr": err, "started": started}


def cap_list(cfg):
    """[(offset, id)] of the standard capability list in @cfg."""
    caps, ptr, seen = [], cfg[0x34] if cfg[0x06] & 0x10 else 0, set()
    while ptr and ptr not in seen and ptr < 0x100:
        seen.add(ptr)
        caps.append((ptr, cfg[ptr]))
        ptr = cfg[ptr + 1]
    return caps


def dump(obj):
    return json.dumps(obj, indent=1)
