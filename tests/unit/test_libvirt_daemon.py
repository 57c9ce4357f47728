#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`gpup2p libvirt --define` against a real libvirt daemon and its QEMU
driver (not the test driver of test_libvirt.py).

The daemon is libvirt's session daemon (qemu:///session), started here by
hand with a private HOME and XDG directories, as an unprivileged user: as
root, libvirt's session URI means the system daemon, whose paths are the
machine's. It runs Debian's QEMU only to probe its capabilities; no domain
is started. LIBVIRT_AUTOSTART=0: should that daemon die, virsh and
gpup2p fail instead of starting a detached one of their own and passing
against it; the first check, and each group of checks after it, asserts
that the daemon started here still runs and its socket is there.
Nothing is left behind when the test is stopped: SIGTERM (meson's
timeout) runs the clean-up, which kills the daemon and removes its
directory; each command gets 60 s; and libvirtd --timeout 30 makes the
daemon leave by itself should the test be killed outright. Three checks:
- define through the daemon: the read-back (the QEMU driver adds PCI
  addresses, controllers, a CPU model, and formats the XML its own way)
  keeps every clique override gpup2p wrote, and gpup2p says so (exit 0);
- large BARs (two H200s, OVMF): the driver accepts and keeps the
  <maxphysaddr>, X-PciMmio64Mb and <pcihole64> gpup2p writes;
- a driver that drops <qemu:override> (the stand-in libvirt.so.0 of
  libvirt-dropper/ leaves it out on the way to this same daemon): the
  read-back from the daemon lacks it, gpup2p exits 1 naming what is
  missing, and the daemon holds the previous definition again.
As root the daemon, virsh and gpup2p run as user nobody, or
GPUP2P_TEST_USER. Failed where libvirtd, its QEMU driver, QEMU, virsh,
readelf or setpriv is not installed (setup installs them); skipped, saying
why, where that user does not exist, or where it cannot reach gpup2p, the
fixtures or TMPDIR."""

import json
import os
import pwd
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
from taplib import Tap  # noqa: E402

from fixture_copy import cpu_kernel_host, nvidia_host  # noqa: E402
from pc_window import check_window, qemu_window  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# The virtual host's capture; the test reads a copy whose GPU stand-ins
# show NVIDIA's vendor id (stock QEMU takes clique ids for no other).
CAPTURE = os.path.normpath(os.path.join(HERE, "..", "fixtures",
                                       "vhost-two-numa"))
G = os.path.abspath(os.environ.get("GPUP2P", "gpup2p"))
# Absolute: the dropper run's LD_LIBRARY_PATH, read in the daemon's
# temporary directory (the commands' working directory).
DROPPER = os.environ.get("LIBVIRT_DROPPER_DIR", "")
DROPPER = os.path.abspath(DROPPER) if DROPPER else ""
LIBVIRTD = shutil.which("libvirtd") or "/usr/sbin/libvirtd"
QEMU = "/usr/bin/qemu-system-x86_64"
QEMU_DRIVER = "/usr/lib/x86_64-linux-gnu/libvirt/connection-driver/" \
              "libvirt_driver_qemu.so"
URI = "qemu:///session"
# The session daemon's user (and virsh's, gpup2p's) when this runs as root.
USER = os.environ.get("GPUP2P_TEST_USER") or "nobody"
RUN_TIMEOUT = 60    # s, for each virsh, gpup2p and readelf run
DAEMON_IDLE = 30    # s: libvirtd --timeout, should nothing stop it

# Two GPUs the capture's planner gives one clique (root ports of a host
# bridge that forwards P2P), on Debian's QEMU: upstream's
# x-nv-gpudirect-clique through <qemu:override>. type='qemu': KVM is not
# the daemon user's here, and nothing starts.
DOMAIN = """<domain type='qemu'>
  <name>gpu-vm</name>
  <uuid>6f1c0c0e-4a3b-4a8e-9a55-2b8c3e7d9a10</uuid>
  <memory unit='MiB'>512</memory>
  <os><type arch='x86_64' machine='q35'>hvm</type></os>
  <devices>
    <emulator>%s</emulator>
    <controller type='pci' index='0' model='pcie-root'/>
    <hostdev mode='subsystem' type='pci' managed='yes'>
      <source><address domain='0x0000' bus='0x05' slot='0x00'
        function='0x0'/></source>
    </hostdev>
    <hostdev mode='subsystem' type='pci' managed='yes'>
      <source><address domain='0x0000' bus='0x41' slot='0x00'
        function='0x0'/></source>
    </hostdev>
  </devices>
</domain>
""" % QEMU


def user_prefix(pw):
    return ["setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid,
            "--clear-groups"]


def unreachable(pw, needs):
    """What of @needs ((test(1) flag, path) pairs) USER cannot use, as
    "path (-flag)" strings: tried as USER, as the daemon, virsh and gpup2p
    will run."""
    bad = []
    for flag, path in needs:
        p = subprocess.run(user_prefix(pw) + ["test", flag, path],
                           capture_output=True, timeout=RUN_TIMEOUT)
        if p.returncode != 0:
            bad.append("%s (test %s)" % (path, flag))
    return bad


def preflight(t):
    """Fail where a program it needs is missing (scripts/setup-debian.sh
    installs every one, so that is a broken setup, never a pass); skip,
    saying why, where (as root) USER is missing or cannot reach what it
    needs. Returns USER's passwd entry as root, else None."""
    missing = [f for f in (LIBVIRTD, QEMU, QEMU_DRIVER)
               if not os.path.exists(f)]
    tools = ["virsh", "readelf"] + (["setpriv"] if os.geteuid() == 0 else [])
    missing += [x for x in tools if not shutil.which(x)]
    if missing:
        t.ok(False, "the programs this test runs are installed",
             "not installed: %s (scripts/setup-debian.sh installs them)" %
             ", ".join(missing))
        t.done()
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        t.skip_all("as root the daemon runs as user %s (GPUP2P_TEST_USER), "
                   "and there is no such user" % USER)


class Session:
    """A libvirt session daemon of its own, as USER (or as this user).
    start() starts it; stop() ends it, and may be called whatever start()
    got to."""

    def __init__(self, top, pw, host):
        """@pw: USER's passwd entry when running as root, else None;
        @host: the captured host gpup2p reads."""
        self.top = top
        self.host = host
        self.daemon = None
        self.log = None
        self.env = dict(os.environ, HOME=os.path.join(top, "home"),
                        XDG_CONFIG_HOME=os.path.join(top, "config"),
                        XDG_RUNTIME_DIR=os.path.join(top, "run"),
                        XDG_CACHE_HOME=os.path.join(top, "cache"),
                        XDG_DATA_HOME=os.path.join(top, "data"), LC_ALL="C",
                        # Never let virsh or gpup2p start a daemon of their
                        # own (libvirtd --timeout=120, detached, as USER)
                        # when this one is gone: they would talk to it.
                        LIBVIRT_AUTOSTART="0")
        # meson points LD_LIBRARY_PATH at the build's libraries, the
        # stand-in libvirt.so.0 among them: only the dropper run gets it.
        self.env.pop("LD_LIBRARY_PATH", None)
        self.prefix = []
        self.ids = None
        if pw is not None:
            self.ids = (pw.pw_uid, pw.pw_gid)
            self.prefix = user_prefix(pw)
        self.sock = os.path.join(self.env["XDG_RUNTIME_DIR"], "libvirt",
                                 "libvirt-sock")

    def start(self):
        ids = self.ids
        for k in ("HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR",
                  "XDG_CACHE_HOME", "XDG_DATA_HOME"):
            os.makedirs(self.env[k], mode=0o700)
            if ids:
                os.chown(self.env[k], *ids)
        self.log = open(os.path.join(self.top, "libvirtd.log"), "w")
        # --timeout: a backstop; should this test be killed before it
        # stops the daemon, the daemon leaves once idle that long.
        self.daemon = subprocess.Popen(self.prefix + [
                                       LIBVIRTD, "--timeout",
                                       str(DAEMON_IDLE)],
                                       env=self.env, stdout=self.log,
                                       stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while not os.path.exists(self.sock) and time.time() < deadline and \
                self.daemon.poll() is None:
            time.sleep(0.1)

    def alive(self):
        """Whether the daemon started here still runs and its socket is
        there (with autostart off, nothing else answers on it)."""
        return self.daemon.poll() is None and os.path.exists(self.sock)

    def check_alive(self, t, before):
        return t.ok(self.alive(), "the test's own libvirtd still runs "
                    "(pid %d) before %s" % (self.daemon.pid, before),
                    "exit status %r, socket %s %s" %
                    (self.daemon.poll(), self.sock,
                     "present" if os.path.exists(self.sock) else "missing"))

    def run(self, argv, env=None, **kw):
        return subprocess.run(self.prefix + argv, capture_output=True,
                              text=True, env=dict(self.env, **(env or {})),
                              cwd=self.top, timeout=RUN_TIMEOUT, **kw)

    def virsh(self, *args):
        return self.run(["virsh", "-c", URI] + list(args))

    def gpup2p(self, *args, env=None):
        return self.run([G, "libvirt", "--sysfs-root", self.host,
                         "--connect", URI, "--domain", "gpu-vm"] +
                        list(args), env=dict(asan_env(), **(env or {})))

    def stop(self, hurry=False):
        """End the daemon: SIGTERM and 10 s to leave, then SIGKILL; with
        @hurry (this test is being terminated: meson's SIGTERM to the
        process group reached the daemon too, and SIGKILL follows in
        0.5 s) SIGKILL at once so that the temporary directory can go."""
        if self.daemon is not None and self.daemon.poll() is None:
            if hurry:
                self.daemon.kill()
            else:
                self.daemon.terminate()
            try:
                self.daemon.wait(10)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()
        if self.log is not None:
            self.log.close()


def asan_env():
    """For a gpup2p built with AddressSanitizer: its runtime intercepts the
    XDR functions (xdrmem_create...) to forward them to glibc's SunRPC,
    which Debian 12's glibc no longer has, so libvirt's RPC (libtirpc)
    calls a null pointer. libtirpc preloaded comes before the runtime.

    Leak checking is off here: at exit LeakSanitizer (Debian 12's GCC 12
    runtime) stops the threads libvirt's client started and reads their
    dynamic TLS, and it crashes there ("Tracer caught signal 11", a
    garbage DTLS range) in some builds and not others, whatever our code
    does; with use_tls=0 it reports what only TLS holds as leaks. Address
    errors are still checked, and the same commands' leaks without the
    daemon are checked by test_libvirt.py under ASan."""
    p = subprocess.run(["readelf", "-d", G], capture_output=True, text=True,
                       timeout=RUN_TIMEOUT)
    if "libasan" not in p.stdout:
        return {}
    opts = os.environ.get("ASAN_OPTIONS", "")
    return {"LD_PRELOAD": "libtirpc.so.3",
            "ASAN_OPTIONS": opts + (":" if opts else "") +
            "verify_asan_link_order=0:detect_leaks=0"}


OVERRIDE = ("<qemu:device alias='%s'>\n      <qemu:frontend>\n        "
            "<qemu:property name='x-nv-gpudirect-clique' type='unsigned' "
            "value='0'/>")
ALIASES = ("ua-gpup2p-0000-05-00-0", "ua-gpup2p-0000-41-00-0")


def test_define(t, s):
    with open(os.path.join(s.top, "gpu-vm.xml"), "w") as f:
        f.write(DOMAIN)
    os.chmod(os.path.join(s.top, "gpu-vm.xml"), 0o644)
    p = s.virsh("define", os.path.join(s.top, "gpu-vm.xml"))
    t.ok(p.returncode == 0, "the QEMU driver of a real libvirtd defines the "
         "domain", p.stdout + p.stderr)
    p = s.gpup2p("--define")
    t.ok(p.returncode == 0 and "<domain type='qemu'" in p.stdout,
         "gpup2p libvirt --define through the real daemon: exit 0, the "
         "read-back printed", p.stderr)
    dump = s.virsh("dumpxml", "--inactive", "gpu-vm").stdout
    t.ok(all(OVERRIDE % a in dump for a in ALIASES) and
         all("<alias name='%s'/>" % a in dump for a in ALIASES) and
         "<address type='pci'" in dump,
         "libvirt kept both clique overrides and aliases, and added its "
         "own PCI addresses", dump)
    t.eq(p.stdout.strip(), dump.strip(),
         "what gpup2p printed is the daemon's definition")
    again = s.gpup2p("--define")
    t.ok(again.returncode == 0 and
         s.virsh("dumpxml", "--inactive", "gpu-vm").stdout == dump,
         "a second --define changes nothing", again.stderr)


def test_dropped(t, s):
    # Back to the plain domain, then define through the dropper.
    p = s.virsh("define", os.path.join(s.top, "gpu-vm.xml"))
    before = s.virsh("dumpxml", "--inactive", "gpu-vm").stdout
    t.ok(p.returncode == 0 and "qemu:override" not in before,
         "the plain domain is defined again", p.stderr)
    p = s.gpup2p("--define", env={"LD_LIBRARY_PATH": DROPPER})
    after = s.virsh("dumpxml", "--inactive", "gpu-vm").stdout
    t.eq(p.returncode, 1, "a define whose <qemu:override> the daemon never "
         "got: exit 1")
    t.ok("did not keep what gpup2p wrote" in p.stderr and
         all(("<qemu:device alias='%s'> <qemu:frontend> <qemu:property "
              "name='x-nv-gpudirect-clique' type='unsigned' value='0'>" % a)
             in p.stderr for a in ALIASES) and
         "previous definition is back" in p.stderr and p.stdout == "",
         "... naming each override the read-back lacks", p.stderr)
    t.ok(after == before and "qemu:override" not in after,
         "... and the daemon holds the previous definition again",
         after)


# Two H200s (256 GiB BAR1 each, the h200x2-vm capture) in a domain that
# boots OVMF (by its loader: no firmware descriptors are needed to define
# it): what gpup2p writes for their BARs, libvirt must keep.
H200_CAPTURE = os.path.normpath(os.path.join(HERE, "..", "fixtures",
                                             "h200x2-vm"))
H200_DOMAIN = """<domain type='qemu'>
  <name>h200-vm</name>
  <memory unit='GiB'>64</memory>
  <os>
    <type arch='x86_64' machine='q35'>hvm</type>
    <loader readonly='yes' type='pflash'>/usr/share/OVMF/OVMF_CODE_4M.fd</loader>
  </os>
  <features><acpi/></features>
  <devices>
    <emulator>%s</emulator>
    <hostdev mode='subsystem' type='pci' managed='yes'>
      <source><address domain='0x0000' bus='0x00' slot='0x06'
        function='0x0'/></source>
    </hostdev>
    <hostdev mode='subsystem' type='pci' managed='yes'>
      <source><address domain='0x0000' bus='0x00' slot='0x07'
        function='0x0'/></source>
    </hostdev>
  </devices>
</domain>
""" % QEMU


def test_large_bars(t, s):
    """The hole, the guest's address width and OVMF's aperture gpup2p
    writes for large BARs: the QEMU driver defines and keeps them."""
    host = cpu_kernel_host(H200_CAPTURE, os.path.join(s.top, "h200"),
                           phys_bits=46)
    path = os.path.join(s.top, "h200-vm.xml")
    with open(path, "w") as f:
        f.write(H200_DOMAIN)
    os.chmod(path, 0o644)
    p = s.virsh("define", path)
    t.ok(p.returncode == 0, "the daemon defines the two-H200 OVMF domain",
         p.stdout + p.stderr)
    p = s.run([G, "libvirt", "--sysfs-root", host, "--connect", URI,
               "--domain", "h200-vm", "--define"], env=asan_env())
    dump = s.virsh("dumpxml", "--inactive", "h200-vm").stdout
    t.ok(p.returncode == 0 and
         "<maxphysaddr mode='emulate' bits='43'/>" in dump and
         "<qemu:arg value='name=opt/ovmf/X-PciMmio64Mb,string=1048576'/>"
         in dump and "<pcihole64 unit='KiB'>1073741824</pcihole64>" in dump,
         "gpup2p libvirt --define: libvirt keeps <maxphysaddr>, "
         "X-PciMmio64Mb and <pcihole64>", p.stderr + dump)
    again = s.run([G, "libvirt", "--sysfs-root", host, "--connect", URI,
                   "--domain", "h200-vm", "--define"], env=asan_env())
    t.ok(again.returncode == 0 and
         s.virsh("dumpxml", "--inactive", "h200-vm").stdout == dump,
         "a second --define changes nothing", again.stderr)


# The 64-bit window: domains whose QEMU command line libvirt itself
# writes (domxml-to-native), each moving the window by what libvirt
# turns into -m, -numa and -global: NUMA cells (libvirt's -m is their
# sum), a hot-plug region with a DIMM, <pcihole64> on i440fx, 1000 GiB
# of RAM on an AMD vCPU (moved above 1 TiB).
WINDOW_DOMAIN = """<domain type='qemu'>
  <name>%(name)s</name>
  %(memory_xml)s%(max)s
  <vcpu>2</vcpu>
  <os><type arch='x86_64' machine='%(machine)s'>hvm</type></os>
  <cpu mode='custom'><model>%(model)s</model>%(features)s
    <maxphysaddr mode='emulate' bits='48'/>%(numa)s</cpu>
  <devices>
    <emulator>%(qemu)s</emulator>
    <controller type='pci' index='0' model='%(root)s'>%(hole)s</controller>
    %(hostdev)s%(devices)s
  </devices>
</domain>
"""
# check --domain reads a GPU; libvirt's command line is written without
# it (domxml-to-native refuses host PCI devices where VFIO is not), which
# the window does not depend on.
WINDOW_GPU = ("<hostdev mode='subsystem' type='pci' managed='yes'><source>"
              "<address domain='0x0000' bus='0x05' slot='0x00' "
              "function='0x0'/></source></hostdev>")
CELLS = ("<numa><cell id='0' cpus='0' memory='%d' unit='MiB'/>"
         "<cell id='1' cpus='1' memory='%d' unit='MiB'/></numa>")
WINDOW_CASES = [
    ("two NUMA cells of 3 GiB, <memory> of 12 GiB", dict(
        memory=12288, max="", machine="pc-q35-10.0", model="Skylake-Server",
        numa=CELLS % (3072, 3072), root="pcie-root", hole="", devices="")),
    ("a hot-plug region of 56 GiB in 4 slots and a 1 GiB DIMM", dict(
        memory=9216, max="<maxMemory slots='4' unit='MiB'>65536</maxMemory>",
        machine="pc-q35-10.0", model="Skylake-Server",
        numa=CELLS % (4096, 4096), root="pcie-root", hole="",
        devices="<memory model='dimm'><target><size unit='MiB'>1024</size>"
        "<node>0</node></target></memory>")),
    ("i440fx, 6 GiB, <pcihole64> of 40000 MiB", dict(
        memory=6144, max="", machine="pc-i440fx-10.0", model="Skylake-Server",
        numa="", root="pci-root",
        hole="<pcihole64 unit='MiB'>40000</pcihole64>", devices="")),
    ("q35, 2816 MiB less 1 KiB, which libvirt rounds up to the split",
     dict(memory=0, max="", machine="pc-q35-10.0", model="Skylake-Server",
          numa="", root="pcie-root", hole="", devices="",
          memory_xml="<memory unit='KiB'>2883583</memory>")),
    ("athlon (32-bit) given long mode, 16 GiB, a 1 TiB hole: moved",
     dict(memory=16384, max="", machine="pc-q35-10.0",
          model="athlon", features="<feature policy='require' name='lm'/>",
          numa="", root="pcie-root",
          hole="<pcihole64 unit='GiB'>1024</pcihole64>", devices="")),
    ("q35, 1000 GiB, an AMD vCPU", dict(
        memory=1000 << 10, max="", machine="q35", model="EPYC", numa="",
        root="pcie-root", hole="", devices="")),
]
# What of libvirt's command line places the window; the rest (devices,
# chardevs, the monitor) is left out so that QEMU starts without them.
WINDOW_OPTIONS = {"-machine", "-accel", "-cpu", "-m", "-smp", "-numa",
                  "-object", "-global"}


def window_args(argv):
    """libvirt's QEMU command line (domxml-to-native) cut to what places
    the window, every RAM backend reserving nothing (1000 GiB of RAM
    starts here); None where it is not one."""
    words = shlex.split(argv)
    while words and "=" in words[0] and not words[0].startswith("-"):
        words.pop(0)            # the environment libvirt sets
    if not words or not words[0].startswith("/"):
        return None
    out = []
    for opt, val in zip(words[1:], words[2:] + [""]):
        if opt not in WINDOW_OPTIONS:
            continue
        if opt == "-object":
            if "memory-backend" not in val:
                continue
            if val.startswith("{"):
                obj = json.loads(val)
                obj["reserve"] = False
                val = json.dumps(obj)
            else:
                val += ",reserve=off"
        out += [opt, val]
    return out


def test_window(t, s):
    """check --domain's 64-bit window against QEMU's own, on the command
    line libvirt's QEMU driver writes for the same domain."""
    for i, (what, kw) in enumerate(WINDOW_CASES):
        kw = dict({"memory_xml": "<memory unit='MiB'>%d</memory>"
                   % kw["memory"], "features": ""}, **kw)
        xml = WINDOW_DOMAIN % dict(kw, name="window%d" % i, qemu=QEMU,
                                   hostdev=WINDOW_GPU)
        path = os.path.join(s.top, "window%d-native.xml" % i)
        with open(path, "w") as f:
            f.write(WINDOW_DOMAIN % dict(kw, name="window%d" % i, qemu=QEMU,
                                         hostdev=""))
        os.chmod(path, 0o644)
        p = s.virsh("domxml-to-native", "qemu-argv", path)
        args = window_args(p.stdout) if p.returncode == 0 else None
        if not t.ok(args is not None, "%s: libvirt writes its QEMU command "
                    "line" % what, p.stdout[-800:] + p.stderr[-800:]):
            continue
        machine = kw["machine"]
        want, why = qemu_window(QEMU, machine, args)
        if not t.ok(want is not None, "... and QEMU starts from it",
                    (why or "") + "\n" + " ".join(args)):
            continue
        got, text = check_window(G, s.host, s.top, "window%d" % i, xml,
                                 run=s.run)
        t.ok(got is not None and got.get("exact") and
             (got["start"], got["end"] + 1) == want,
             "... and check --domain's window is QEMU's, 0x%x-0x%x" %
             (want[0], want[1] - 1), text + "\n" + " ".join(args))


class Terminated(SystemExit):
    """SIGTERM (meson's timeout, timeout(1), a CI runner giving up): raised
    so that main's finally stops the daemon and removes its directory."""


def on_sigterm(signum, frame):
    # Once: timeout(1) signals the command and then its process group, and
    # a second SIGTERM in the finally would cut the clean-up short.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Terminated(128 + signum)


def main(t):
    pw = preflight(t)
    signal.signal(signal.SIGTERM, on_sigterm)
    top = s = None
    hurry = False
    try:
        top = tempfile.mkdtemp(prefix="gpup2p-libvirtd-")
        os.chmod(top, 0o755)
        host = nvidia_host(CAPTURE, os.path.join(top, "host"))
        if pw is not None:
            devices = os.path.join(host, "sys", "bus", "pci", "devices")
            bad = unreachable(pw, [("-x", top), ("-x", G), ("-r", G),
                                   ("-r", devices), ("-x", devices)] +
                              ([("-r", os.path.join(DROPPER,
                                                    "libvirt.so.0"))]
                               if DROPPER else []))
            if bad:
                t.skip_all("user %s (GPUP2P_TEST_USER), which the daemon, "
                           "virsh and gpup2p run as, cannot reach: %s" %
                           (USER, ", ".join(bad)))
        s = Session(top, pw, host)
        s.start()
        ver = s.virsh("version")
        up = s.alive()
        t.ok(up and ver.returncode == 0 and
             "Running hypervisor: QEMU" in ver.stdout,
             "the libvirt session daemon started here (pid %d) runs, its "
             "socket is there, and its QEMU driver answers" % s.daemon.pid,
             "daemon %s, socket %s\n" % (
                 "running" if s.daemon.poll() is None else
                 "exited %r" % s.daemon.poll(),
                 "present" if os.path.exists(s.sock) else "missing") +
             ver.stdout + ver.stderr + open(s.log.name).read())
        if up and ver.returncode == 0:
            if s.check_alive(t, "the define checks"):
                test_define(t, s)
            if s.check_alive(t, "the large-BAR checks"):
                test_large_bars(t, s)
            if s.check_alive(t, "the window checks"):
                test_window(t, s)
            if not DROPPER:
                t.skip("a driver that drops <qemu:override>",
                       "LIBVIRT_DROPPER_DIR is not set (meson sets it)")
            elif s.check_alive(t, "the dropper checks"):
                test_dropped(t, s)
    except Terminated:
        hurry = True
        raise
    finally:
        if s is not None:
            s.stop(hurry)
        if top is not None:
            shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    Tap().run(main)
