# SPDX-License-Identifier: GPL-2.0-or-later
"""Helpers for scripts that run inside the virtual host: bind devices to
vfio-pci, load modules, talk QMP."""

import json
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(os.path.dirname(HERE))
VHOST = os.path.join(PROJECT, "tests", "vhost", "vhost.py")
OUT = os.environ.get("VHOST_OUT", "/run/vhost-out")


def modprobe(*mods):
    for m in mods:
        subprocess.run(["modprobe", "-d", os.environ["VHOST_KERNEL_DIR"],
                        "-S", os.environ["VHOST_KERNEL_VERSION"], m],
                       check=True)


def bdf(name):
    return subprocess.run([sys.executable, VHOST, "bdf", name], check=True,
                          capture_output=True, text=True).stdout.strip()


def bind_vfio(dev, driver="vfio-pci"):
    base = "/sys/bus/pci/devices/" + dev
    with open(base + "/driver_override", "w") as f:
        f.write(driver)
    if os.path.exists(base + "/driver"):
        with open(base + "/driver/unbind", "w") as f:
            f.write(dev)
    with open("/sys/bus/pci/drivers_probe", "w") as f:
        f.write(dev)
    drv = os.path.basename(os.readlink(base + "/driver"))
    if drv != driver:
        raise RuntimeError("%s bound to %s, not %s" % (dev, drv, driver))


class Qmp:
    def __init__(self, path, timeout=60, proc=None):
        """Connect to QEMU's QMP socket at @path once it appears: within
        @timeout seconds, and, given the @proc that starts that QEMU, for
        as long as it lives (under TCG a loaded machine may take a minute
        to get there); its end first is an error that says so."""
        t0 = time.monotonic()
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX)
                self.sock.connect(path)
                break
            except OSError as e:
                self.sock.close()
                waited = time.monotonic() - t0
                if proc is not None and proc.poll() is not None:
                    raise RuntimeError(
                        "QMP %s: the QEMU process ended (exit %d) before "
                        "its socket took a connection" %
                        (path, proc.returncode)) from e
                if waited > timeout:
                    raise RuntimeError("QMP %s: no connection after %.0f s"
                                       % (path, waited)) from e
                time.sleep(0.2)
        self.connect_s = time.monotonic() - t0
        self.file = self.sock.makefile("rw")
        json.loads(self.file.readline())
        self.cmd("qmp_capabilities")

    def cmd(self, name, **args):
        self.file.write(json.dumps({"execute": name, "arguments": args}) +
                        "\n")
        self.file.flush()
        while True:
            msg = json.loads(self.file.readline())
            if "event" in msg:
                continue
            return msg

    def close(self):
        self.sock.close()
