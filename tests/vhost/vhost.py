#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The virtual GPU host: a real Linux kernel with an emulated IOMMU and PCIe
topology under QEMU (TCG), running a command inside as root.

  vhost.py prepare                  fetch Debian's kernel, build the initramfs
  vhost.py run TOPOLOGY [opts] -- CMD...
                                    boot, run CMD in the project directory,
                                    print its output, exit with its status
  vhost.py bdf NAME                 (inside) the guest BDF of a node

The running machine's root is shared read-only; /tmp, /run, /var/tmp are
tmpfs inside; the run's results directory is shared writable at
/run/vhost-out (also $VHOST_OUT). The topology file (JSON) describes root
ports, switches, extra host bridges on NUMA nodes and devices, and is the
ground truth tests compare against.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(os.path.dirname(HERE))
# Absolute: the guest resolves it under its own mount of the project.
CACHE = os.path.abspath(os.environ.get("VHOST_CACHE",
                                       os.path.join(PROJECT, "build", "vhost")))
# The outer CPU: TCG's "max" with AMD family 19h (Zen 3), so that the
# virtual host's root complex forwards P2P between root ports by Linux's
# rule (cpu_supports_p2pdma(): AMD family 17h and later), as an EPYC
# host's does; plain "max" reports family 6, which no rule lets forward.
VHOST_CPU = os.environ.get("VHOST_CPU", "max,family=25,model=1")
# TCG's threading for the virtual host's vCPUs (tcg,thread=...).
VHOST_TCG_THREAD = os.environ.get("VHOST_TCG_THREAD", "multi")
GUEST_OUT = "/run/vhost-out"
# The virtual host's emulator: Debian 13's QEMU 10.0.13 (outer-qemu.sh,
# run by "prepare"), not bookworm-backports' 10.0.2, whose TCG aborts or
# corrupts the virtual host at random (docs/testbed.md, "Reliability").
OUTER_QEMU = os.path.join(PROJECT, "build", "qemu-outer",
                          "qemu-system-x86_64")

# Modules the initramfs loads before it can mount the root share.
EARLY_MODULES = ["netfs", "9pnet", "9pnet_virtio", "9p"]
# Loaded from the share once it is mounted (kmod resolves dependencies).
LATE_MODULES = ["vfio-pci", "vfio_iommu_type1"]


def log(msg):
    print("vhost: " + msg, file=sys.stderr, flush=True)


def die(msg, code=2):
    log(msg)
    sys.exit(code)


# ---------------------------------------------------------------- prepare

def kernel_package():
    """The kernel the linux-image-amd64 metapackage of backports names."""
    out = subprocess.run(
        ["apt-cache", "depends", "-t", "bookworm-backports",
         "linux-image-amd64"], check=True, capture_output=True,
        text=True).stdout
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("Depends: linux-image-"):
            return line.split()[1]
    die("apt-cache names no kernel for linux-image-amd64 "
        "(is bookworm-backports configured? run scripts/setup-debian.sh)")


def kernel_paths(cache=CACHE):
    with open(os.path.join(cache, "kernel-version")) as f:
        version = f.read().strip()
    root = os.path.join(cache, "kernel")
    return (version, os.path.join(root, "boot", "vmlinuz-" + version), root,
            os.path.join(cache, "initrd.gz"))


def find_module(modroot, name):
    want = {name.replace("-", "_")}
    for dirpath, _, files in os.walk(modroot):
        for f in files:
            base = f.split(".ko")[0]
            if ".ko" in f and base.replace("-", "_") in want:
                return os.path.join(dirpath, f)
    die("module %s not found under %s" % (name, modroot))


INIT = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in %(early)s; do insmod /lib/modules/$m.ko || echo "vhost-init: insmod $m failed"; done
mkdir -p /root
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=1048576,cache=loose root /root || echo "vhost-init: root share failed"
for d in tmp run var/tmp; do mount -t tmpfs -o mode=1777 tmp /root/$d; done
mount -t proc proc /root/proc
mount -t sysfs sys /root/sys
mount -t devtmpfs dev /root/dev
mkdir -p /root/dev/pts /root/dev/shm /root%(out)s
mount -t devpts pts /root/dev/pts
mount -t tmpfs -o mode=1777 shm /root/dev/shm
mount -t 9p -o trans=virtio,version=9p2000.L,msize=1048576 out /root%(out)s || echo "vhost-init: out share failed"
# The project may live under a path the tmpfs mounts above hide (/tmp):
# it comes as a share of its own, mounted back at its path.
proj=$(sed -n 's/.*vhost\.project=\([^ ]*\).*/\1/p' /proc/cmdline)
if [ -n "$proj" ]; then
    mkdir -p /root$proj
    mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=1048576,cache=loose proj /root$proj || echo "vhost-init: project share failed"
fi
chroot /root /bin/sh %(out)s/.vhost-run
sync
umount /root%(out)s
echo "vhost-init: done"
poweroff -f
"""

RUNNER = r"""#!/bin/sh
# Written by vhost.py for one run.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp VHOST_OUT=%(out)s VHOST_KERNEL_DIR=%(kdir)s
export VHOST_KERNEL_VERSION=%(kver)s
date +%%s.%%N > %(out)s/.started
for m in %(late)s; do
    modprobe -d %(kdir)s -S %(kver)s "$m" || echo "vhost: modprobe $m failed"
done
cd %(cwd)s
sh %(out)s/.vhost-cmd > %(out)s/output.log 2>&1
echo $? > %(out)s/rc
"""


def cmd_prepare(args):
    os.makedirs(CACHE, exist_ok=True)
    # The virtual host's emulator (cached per machine once made).
    subprocess.run([os.path.join(HERE, "outer-qemu.sh")], check=True,
                   stdout=subprocess.DEVNULL)
    built = os.path.join(CACHE, "kernel-source")
    if os.path.exists(built):
        # A kernel built from source (tests/kernel/build-kasan-kernel.sh),
        # not Debian's package: left as it is.
        with open(os.path.join(CACHE, "kernel-version")) as f:
            log("kernel %s built from %s, in %s" % (
                f.read().strip(), open(built).read().strip(), CACHE))
        return
    pkg = kernel_package()
    version = pkg[len("linux-image-"):]
    root = os.path.join(CACHE, "kernel")
    stamp = os.path.join(CACHE, "kernel-version")
    init_stamp = os.path.join(CACHE, "initrd-init.sha256")
    init_hash = hashlib.sha256(INIT.encode()).hexdigest()
    if os.path.exists(stamp) and open(stamp).read().strip() == version and \
            (not os.path.exists(init_stamp) or
             open(init_stamp).read().strip() != init_hash):
        build_initrd(root, version)
    if not (os.path.exists(stamp) and open(stamp).read().strip() == version
            and os.path.exists(os.path.join(CACHE, "initrd.gz"))):
        dl = tempfile.mkdtemp(prefix="dl-", dir=CACHE)
        log("fetching %s" % pkg)
        subprocess.run(["apt-get", "download", "-q", "-t",
                        "bookworm-backports", pkg], cwd=dl, check=True,
                       stdout=subprocess.DEVNULL)
        deb = [f for f in os.listdir(dl) if f.endswith(".deb")][0]
        shutil.rmtree(root, ignore_errors=True)
        subprocess.run(["dpkg-deb", "-x", os.path.join(dl, deb), root],
                       check=True)
        shutil.rmtree(dl)
        subprocess.run(["depmod", "-b", root, version], check=True)
        build_initrd(root, version)
        with open(stamp, "w") as f:
            f.write(version + "\n")
    with open(init_stamp, "w") as f:
        f.write(init_hash + "\n")
    log("kernel %s ready in %s" % (version, CACHE))


def cmd_initrd(args):
    """The initramfs of a cache laid out by a kernel build of our own
    (tests/vhost/build-linux.sh), rebuilt when the init script changed."""
    version, _, root, initrd = kernel_paths()
    init_stamp = os.path.join(CACHE, "initrd-init.sha256")
    init_hash = hashlib.sha256(INIT.encode()).hexdigest()
    if os.path.exists(initrd) and os.path.exists(init_stamp) and \
            open(init_stamp).read().strip() == init_hash:
        return
    build_initrd(root, version)
    with open(init_stamp, "w") as f:
        f.write(init_hash + "\n")
    log("initramfs of %s built in %s" % (version, CACHE))


def build_initrd(root, version):
    modroot = os.path.join(root, "lib", "modules", version)
    work = tempfile.mkdtemp(prefix="initrd-", dir=CACHE)
    try:
        for d in ["bin", "proc", "sys", "dev", "root", "lib/modules"]:
            os.makedirs(os.path.join(work, d), exist_ok=True)
        shutil.copy("/bin/busybox", os.path.join(work, "bin", "busybox"))
        for m in EARLY_MODULES:
            src = find_module(modroot, m)
            dst = os.path.join(work, "lib", "modules", m + ".ko")
            if src.endswith(".xz"):
                with open(dst, "wb") as out:
                    subprocess.run(["xz", "-dc", src], stdout=out, check=True)
            elif src.endswith(".zst"):
                with open(dst, "wb") as out:
                    subprocess.run(["zstd", "-dc", src], stdout=out,
                                   check=True)
            else:
                shutil.copy(src, dst)
        with open(os.path.join(work, "init"), "w") as f:
            f.write(INIT % {"early": " ".join(EARLY_MODULES),
                            "out": GUEST_OUT})
        os.chmod(os.path.join(work, "init"), 0o755)
        tmp = os.path.join(CACHE, "initrd.gz.tmp")
        with open(tmp, "wb") as out:
            find = subprocess.Popen(["find", "."], cwd=work,
                                    stdout=subprocess.PIPE)
            cpio = subprocess.Popen(["cpio", "-o", "-H", "newc", "--quiet"],
                                    cwd=work, stdin=find.stdout,
                                    stdout=subprocess.PIPE)
            subprocess.run(["gzip", "-1"], stdin=cpio.stdout, stdout=out,
                           check=True)
            if find.wait() or cpio.wait():
                die("building the initramfs failed")
        os.rename(tmp, os.path.join(CACHE, "initrd.gz"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------- topology

class Topology:
    """Nodes of the description with QEMU arguments and guest paths.

    Each node gets a 'path': the host bridge directory and the slot.function
    of every hop, e.g. ["pci0000:00", "10.0", "00.0"]. That is how a test
    finds a node's BDF in the guest, whatever bus numbers firmware gave.
    """

    KINDS = {"root-port", "switch", "host-bridge", "pci-bridge", "gpu",
             "edu", "ivshmem", "nic"}

    def __init__(self, path):
        with open(path) as f:
            self.desc = json.load(f)
        self.file = path
        self.nodes = {}
        self.order = []
        self.buses = {"pcie.0": {"path": ["pci0000:00"], "next_slot": 0x10,
                                 "node": None}}
        self.numa_nodes = int(self.desc.get("numa_nodes", 1))
        self.chassis = 1
        for n in self.desc.get("nodes", []):
            self._add(n)

    def _bus(self, n):
        parent = n.get("parent", "pcie.0")
        if parent not in self.buses:
            die("%s: node %s: parent bus '%s' is not defined above it"
                % (self.file, n.get("id"), parent))
        return parent, self.buses[parent]

    def _slot(self, bus, n):
        if "addr" in n:
            slot, fn = n["addr"].split(".")
            return "%02x.%s" % (int(slot, 16), fn)
        slot = bus["next_slot"]
        bus["next_slot"] += 1
        return "%02x.0" % slot

    def _add(self, n):
        nid, kind = n.get("id"), n.get("kind")
        if not nid or kind not in self.KINDS:
            die("%s: node %r: needs an id and a kind among %s"
                % (self.file, n, sorted(self.KINDS)))
        if nid in self.nodes or nid in self.buses:
            die("%s: id %s used twice" % (self.file, nid))
        node = dict(n)
        self.nodes[nid] = node
        self.order.append(nid)
        if kind == "host-bridge":
            bus_nr = int(n["bus_nr"])
            numa = int(n.get("numa_node", 0))
            if numa >= self.numa_nodes:
                die("%s: %s: numa_node %d but numa_nodes is %d"
                    % (self.file, nid, numa, self.numa_nodes))
            node["args"] = ["-device", "pxb-pcie,id=%s,bus=pcie.0,bus_nr=%d,"
                            "numa_node=%d" % (nid, bus_nr, numa)]
            node["path"] = ["pci0000:%02x" % bus_nr]
            self.buses[nid] = {"path": node["path"], "next_slot": 0,
                               "node": numa}
            return
        parent, bus = self._bus(n)
        slot = self._slot(bus, n)
        node["path"] = bus["path"] + [slot]
        node["numa_node"] = bus["node"]
        node["host_bridge"] = bus["path"][0]
        at = "bus=%s,addr=%s" % (parent, slot)
        if n.get("multifunction"):
            at += ",multifunction=on"
        if kind == "root-port":
            node["args"] = ["-device", "pcie-root-port,id=%s,%s,chassis=%d,"
                            "slot=%d" % (nid, at, self.chassis, self.chassis)]
            self.chassis += 1
            self.buses[nid] = {"path": node["path"], "next_slot": 0,
                               "node": bus["node"]}
        elif kind == "pci-bridge":
            # A PCIe-to-PCI bridge: what is behind it is conventional PCI.
            # Slot 0 of its bus belongs to its hot-plug controller.
            node["args"] = ["-device", "pcie-pci-bridge,id=%s,%s" % (nid, at)]
            self.buses[nid] = {"path": node["path"], "next_slot": 1,
                               "node": bus["node"]}
        elif kind == "switch":
            args = ["-device", "x3130-upstream,id=%s,%s" % (nid, at)]
            up_path = node["path"]
            for i in range(int(n.get("ports", 2))):
                port = "%s.%d" % (nid, i)
                args += ["-device", "xio3130-downstream,id=%s,bus=%s,"
                         "addr=%02x.0,chassis=%d,slot=%d"
                         % (port, nid, i, self.chassis, self.chassis)]
                self.chassis += 1
                self.buses[port] = {"path": up_path + ["%02x.0" % i],
                                    "next_slot": 0, "node": bus["node"]}
            node["args"] = args
        elif kind == "gpu":
            # A display-class stand-in (class 0x0380) for a GPU.
            node["args"] = ["-device", "bochs-display,id=%s,%s" % (nid, at)]
        elif kind == "edu":
            node["args"] = ["-device", "edu,id=%s,%s,dma_mask=0x%x"
                            % (nid, at, (1 << 64) - 1)]
        elif kind == "ivshmem":
            node["size_mib"] = int(n.get("size_mib", 16))
            node["args"] = ["-device", "ivshmem-plain,id=%s,%s,memdev=%s-mem"
                            % (nid, at, nid)]
        elif kind == "nic":
            node["args"] = ["-device", self._nic_device(n, at),
                            "-netdev", "user,id=%s-net,restrict=on" % nid]

    def _nic_device(self, n, at):
        """e1000e by default; "model": "virtio" is virtio-net-pci, the one
        NIC of QEMU 10.0 with an ATS capability ("ats": true). Its DMA
        then goes through the emulated IOMMU (iommu_platform), whose
        device IOTLB ("device_iotlb" in the description) lets Linux
        enable ATS."""
        nid, model = n["id"], n.get("model", "e1000e")
        if model == "e1000e":
            if n.get("ats"):
                die("%s: %s: e1000e has no ATS capability in QEMU; use "
                    "\"model\": \"virtio\"" % (self.file, nid))
            return "e1000e,id=%s,%s,netdev=%s-net" % (nid, at, nid)
        if model != "virtio":
            die("%s: %s: NIC model %r: e1000e or virtio"
                % (self.file, nid, model))
        return ("virtio-net-pci,id=%s,%s,netdev=%s-net,disable-legacy=on,"
                "iommu_platform=on,ats=%s"
                % (nid, at, nid, "on" if n.get("ats") else "off"))

    def iommu_device(self):
        """The emulated IOMMU: interrupt remapping and caching mode always;
        a device IOTLB (ATS, and the DMAR table's ATSR for all root ports)
        where the description asks it."""
        return "intel-iommu,intremap=on,caching-mode=on%s" % (
            ",device-iotlb=on" if self.desc.get("device_iotlb") else "")

    def qemu_args(self, outdir):
        mem = int(self.desc.get("memory_mib", 3072))
        args = []
        if self.numa_nodes > 1:
            per = mem // self.numa_nodes
            args += ["-smp", "%d,sockets=%d" % (self.numa_nodes,
                                                self.numa_nodes)]
            for i in range(self.numa_nodes):
                args += ["-object", "memory-backend-ram,id=numa%d,size=%dM"
                         % (i, per),
                         "-numa", "node,nodeid=%d,cpus=%d,memdev=numa%d"
                         % (i, i, i)]
            mem = per * self.numa_nodes
        else:
            args += ["-smp", "2"]
        args = ["-m", "%dM" % mem] + args
        for nid in self.order:
            node = self.nodes[nid]
            if node["kind"] == "ivshmem":
                path = os.path.join(outdir, "%s.mem" % nid)
                with open(path, "wb") as f:
                    f.truncate(node["size_mib"] << 20)
                node["backing_file"] = path
                args += ["-object", "memory-backend-file,id=%s-mem,share=on,"
                         "mem-path=%s,size=%dM" % (nid, path,
                                                   node["size_mib"])]
            args += node["args"]
        return args

    def manifest(self):
        return {"file": os.path.abspath(self.file),
                "name": self.desc.get("name", ""),
                "kernel_args": self.desc.get("kernel_args", ""),
                "nodes": {k: {kk: vv for kk, vv in v.items() if kk != "args"}
                          for k, v in self.nodes.items()}}


# ---------------------------------------------------------------- run

def prepare_outdir(args, kdir, version, modules):
    outdir = os.path.abspath(args.out) if args.out else \
        tempfile.mkdtemp(prefix="vhost-")
    os.makedirs(outdir, exist_ok=True)
    args.out = outdir       # a retry's setup comes back to the same place
    # A reused directory: nothing of an earlier run may pass for this one.
    for f in ["rc", "output.log", ".started", "console.log", "retries.log",
              "timing.json", "qemu-output.log"]:
        try:
            os.unlink(os.path.join(outdir, f))
        except FileNotFoundError:
            pass
    with open(os.path.join(outdir, ".vhost-cmd"), "w") as f:
        f.write(" ".join(sh_quote(a) for a in args.command) + "\n")
    with open(os.path.join(outdir, ".vhost-run"), "w") as f:
        f.write(RUNNER % {"out": GUEST_OUT, "kdir": kdir, "kver": version,
                          "late": " ".join(modules),
                          "cwd": os.path.abspath(args.cwd)})
    return outdir


def base_qemu_args(vmlinuz, initrd, outdir, append):
    """What every virtual host boot shares: the kernel and initramfs, the
    console in the results directory, the root, results and project
    shares."""
    return ["-nodefaults", "-no-user-config", "-display", "none",
            "-kernel", vmlinuz, "-initrd", initrd,
            # no_timer_check: under TCG on a loaded host the IO-APIC timer
            # check can time out and panic the boot.
            # spec_rstack_overflow=off: on VHOST_CPU's Zen family the
            # kernel would print an SRSO "WARNING:" line (no microcode
            # here), which the tests' kernel log checks rightly reject.
            # 7.x prints it all the same (only mitigations=off stops it,
            # and with that nested guests die under TCG): the 7.x tests
            # set that one line aside by its text.
            "-append", ("console=ttyS0 panic=-1 quiet loglevel=4 "
                        "no_timer_check spec_rstack_overflow=off "
                        "rdinit=/init vhost.project=%s %s"
                        % (PROJECT, append)).strip(),
            "-serial", "file:" + os.path.join(outdir, "console.log"),
            "-no-reboot", "-monitor", "none",
            "-virtfs", "local,path=/,mount_tag=root,security_model=none,"
            "readonly=on",
            "-virtfs", "local,path=%s,mount_tag=out,security_model=none"
            % outdir,
            "-virtfs", "local,path=%s,mount_tag=proj,security_model=none,"
            "readonly=on" % PROJECT]


def write_cmdline(outdir, qemu):
    with open(os.path.join(outdir, "qemu-cmdline"), "w") as f:
        f.write(" ".join(sh_quote(a) for a in qemu) + "\n")


def cmd_inner(args):
    """Inside the virtual host: boot a nested guest with KVM, the given
    QEMU and devices, the same kernel and initramfs, and run a command."""
    if not args.command:
        die("inner: give the command after --")
    # The nested guest's kernel: VHOST_INNER_CACHE's, e.g. Debian's while
    # the virtual host runs a KASAN kernel (too slow nested under TCG).
    try:
        version, vmlinuz, kdir, initrd = kernel_paths(
            os.environ.get("VHOST_INNER_CACHE", CACHE))
    except FileNotFoundError:
        die("inner: no kernel prepared")
    outdir = prepare_outdir(args, kdir, version, [])
    # Port I/O, not MMIO, for the nested guest's config cycles (pci=conf1)
    # and its 9p shares' notifications (legacy virtio): TCG's SVM leaves
    # the last injected event in EXITINTINFO, and KVM from Linux 6.14 on
    # refuses to emulate an MMIO access it then takes for event vectoring
    # ("KVM internal error. Suberror: 3"). Port I/O needs no emulator.
    qemu = [args.qemu] + base_qemu_args(vmlinuz, initrd, outdir,
                                        "pci=conf1 " + args.append) + [
        "-global", "virtio-9p-pci.disable-modern=on",
        "-global", "virtio-9p-pci.disable-legacy=off",
        "-L", "/usr/share/seabios", "-L", "/usr/share/qemu",
        "-accel", "kvm", "-cpu", "host", "-m", "%dM" % args.memory,
        "-smp", "1", "-M", "q35"]
    if args.qmp:
        qemu += ["-qmp", "unix:%s,server=on,wait=off" % args.qmp]
    for i in range(args.root_ports):
        qemu += ["-device", "pcie-root-port,id=rp%d,chassis=%d,slot=%d,"
                 "addr=%x.0" % (i, i + 1, i + 1, 0x10 + i)]
    for dev in args.device:
        qemu += ["-device", dev]
    qemu += args.qemu_arg
    write_cmdline(outdir, qemu)
    # The emulator here is our QEMU: its death or hang is ours, never
    # retried.
    return boot(qemu, outdir, args, None, retry_emulator=False)


def cmd_run(args):
    if not args.command:
        die("run: give the command after --")
    try:
        version, vmlinuz, kdir, initrd = kernel_paths()
    except FileNotFoundError:
        die("run: no kernel prepared; run 'vhost.py prepare' first")
    if not shutil.which(args.qemu):
        die("run: the virtual host's emulator %s is missing; run "
            "'vhost.py prepare' (tests/vhost/outer-qemu.sh) first, or set "
            "VHOST_QEMU" % args.qemu)
    if args.retry_host_death and any("gpup2p" in m for m in args.modules):
        die("run: --retry-host-death says the command loads no module of "
            "ours, but --module loads %s" % ", ".join(
                m for m in args.modules if "gpup2p" in m))
    topo = Topology(args.topology)

    def setup():
        """A fresh results directory: the runner, the topology and new
        backing files (a retry must not see what an attempt left)."""
        out = prepare_outdir(args, kdir, version,
                             LATE_MODULES + args.modules)
        qargs = topo.qemu_args(out)
        with open(os.path.join(out, "topology.json"), "w") as f:
            json.dump(topo.manifest(), f, indent=2)
        if qemu:
            write_cmdline(out, qemu)
        return out, qargs

    qemu = []
    outdir, qargs = setup()
    qemu += [args.qemu] + base_qemu_args(
        vmlinuz, initrd, outdir,
        "intel_iommu=on %s %s" % (topo.desc.get("kernel_args", ""),
                                  args.append)) + [
        "-accel", "tcg,thread=%s" % VHOST_TCG_THREAD, "-cpu", VHOST_CPU,
        "-M", "q35,kernel-irqchip=split",
        "-device", topo.iommu_device()] + qargs + args.qemu_arg
    write_cmdline(outdir, qemu)
    return boot(qemu, outdir, args, lambda: setup()[0],
                retry_emulator=True)


# What a kernel prints when TCG on a busy host starves its timers: the
# boot may never reach the command.
STALL_SIGNS = ("rcu_preempt kthread timer wakeup didn't happen",
               "rcu: INFO: rcu_preempt detected stall",
               "rcu: INFO: rcu_sched detected stall",
               "watchdog: BUG: soft lockup")
# The kernel's own diagnosis that an idle vCPU's timer interrupt never
# came (RCU's grace-period kthread slept on a timer that expired long ago):
# the outer emulator did not deliver the virtual host's timer. Seen twice
# under load, both on vCPU 1 with the vCPU idle, once with no nested guest
# and none of our modules running. Nothing in a scenario's user space can
# cause it, so while the command runs this one sign (not RCU stalls in
# general, which a spinning module of ours could cause) is the emulator's
# fault and is retried once.
TIMER_FAULT_SIGN = "kthread timer wakeup didn't happen"
BOOT_HISTORY = 10


def boot_times_path(kind):
    return os.path.join(CACHE, "boot-times-%s.json" % kind)


def boot_limit(kind, timeout):
    """Seconds a boot may take before the command starts: 4 x the median
    of the last boots of this kind here (at least 90 s), 300 s with no
    history; never more than the run's own limit."""
    try:
        with open(boot_times_path(kind)) as f:
            times = sorted(json.load(f))
    except (OSError, ValueError):
        times = []
    limit = max(90.0, 4 * times[len(times) // 2]) if times else 300.0
    if os.environ.get("VHOST_BOOT_LIMIT"):      # tests of the retry
        limit = float(os.environ["VHOST_BOOT_LIMIT"])
    return min(limit, timeout)


def record_boot_time(kind, seconds):
    path = boot_times_path(kind)
    try:
        with open(path) as f:
            times = json.load(f)
    except (OSError, ValueError):
        times = []
    times = (times + [round(seconds, 1)])[-BOOT_HISTORY:]
    try:
        with open(path + ".tmp", "w") as f:
            json.dump(times, f)
        os.rename(path + ".tmp", path)
    except OSError:
        pass            # a read-only cache (inside the virtual host)


def stall_reason(console, waited):
    text = read(console)
    for sign in STALL_SIGNS:
        if sign in text:
            return "the kernel reported \"%s\"" % sign
    return "the command had not started after %.0f s" % waited


def timer_fault_seen(console, outdir):
    """The timer fault's reason once the console shows its sign and the
    command has left no status; else None."""
    if os.path.exists(os.path.join(outdir, "rc")):
        return None
    for line in read(console).splitlines():
        if TIMER_FAULT_SIGN in line:
            return ("the outer emulator did not deliver the virtual host's "
                    "timer: its kernel reported \"%s\"" %
                    line.split("]", 1)[-1].strip())
    return None


def set_aside(outdir, attempt):
    """Move everything an attempt left into a sibling OUTDIR.attempt-N,
    outside the results share, so that a retry starts from an empty
    directory and its guest can read nothing the failed attempt wrote;
    the evidence stays beside it."""
    dest = "%s.attempt-%d" % (outdir.rstrip("/"), attempt)
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    for name in os.listdir(outdir):
        os.rename(os.path.join(outdir, name), os.path.join(dest, name))
    return dest


# The signals an emulator dies of by its own fault: a failed assertion or
# abort(), a crash. Not SIGKILL (the OOM killer, or us), nor SIGBUS (a
# backing file), nor a request to stop.
CRASH_SIGNALS = (signal.SIGABRT, signal.SIGSEGV)


def kvm_internal_error(qemu_log):
    """QEMU's line saying KVM stopped the guest ("KVM internal error.
    Suberror: N"), or None. Not suberror 1, an emulation failure, after
    which QEMU may let the guest go on (where it ran in ring 3; else the
    time limit ends it). The log is read while QEMU writes it, over 9p
    inside the virtual host: an error reading it (said on stderr) is no
    answer yet."""
    try:
        with open(qemu_log, errors="replace") as f:
            text = f.read()
    except OSError as e:
        log("reading %s: %s; taken as no answer yet" % (qemu_log, e))
        return None
    stops = [m.group(0) for m in re.finditer(
        r"KVM internal error\. Suberror: (\d+)", text) if m.group(1) != "1"]
    return stops[0] if stops else None


def emulator_fault(returncode, qemu_out):
    """Why the outer emulator ended by its own fault (a crash signal we
    did not send, its assertion line if it printed one), or None."""
    if returncode >= 0 or -returncode not in CRASH_SIGNALS:
        return None
    said = [l.strip() for l in qemu_out.splitlines() if "Assertion" in l]
    return "the outer emulator died of %s%s" % (
        signal.Signals(-returncode).name, (": " + said[0]) if said else "")


def host_death_not_ours(args):
    """Whether the run's command was declared to load no kernel module of
    ours (--retry-host-death; cmd_run refuses it beside --module gpup2p)."""
    return getattr(args, "retry_host_death", False)


def not_retried(why):
    """Say why a death is not retried after all; pass @why on."""
    if why:
        log("the virtual host's end is not retried: %s" % why)
    return why


def ours_in_death(console):
    """Why the end the console shows may be ours after all, or None: the
    runner ended with the kernel alive (init went on to "vhost-init:
    done", so the status was lost in user space: an OOM kill, a killed
    runner), or the kernel's report lists an out-of-tree module ("O" in
    its taint flags, or gpup2p among the modules linked in)."""
    for line in read(console).splitlines():
        if "vhost-init: done" in line:
            return "the runner ended and init went on (vhost-init: done)"
        if "Modules linked in:" in line and "gpup2p" in line:
            return "gpup2p is among the modules linked in"
        m = re.search(r"Tainted: ([A-Z ]+)", line)
        if m and "O" in m.group(1):
            return "the kernel was tainted by an out-of-tree module (O)"
    return None


def vhost_end(console):
    """How the virtual host ended without its command's status, from its
    console: its kernel's panic line, or a reset with no panic printed."""
    for line in read(console).splitlines():
        if "Kernel panic - not syncing" in line:
            return "the virtual host's kernel panicked: %s" % \
                line.split("]", 1)[-1].strip()
    return "the virtual host reset or powered off with no kernel panic " \
           "on its console (a triple fault, or the command's runner killed)"


def boot(qemu, outdir, args, setup, retry_emulator, attempt=1):
    """Start QEMU, wait for it (killing it at the time limit), print the
    command's output; return the command's status.

    Only with @retry_emulator (the outer emulator, Debian's, runs the
    virtual host; never for our QEMU's nested guest) and only before the
    command has left its status, one retry, its reason logged, kept in
    retries.log and the failed attempt's files moved to OUTDIR.attempt-1
    (the retry starts empty): a boot that stalls before the command starts
    (a busy host starving TCG: RCU stall reports, or no start within
    boot_limit()), or an emulator that dies of a crash signal we did not
    send (an assertion aborts it), or, while the command runs, a timer the
    emulator did not deliver (TIMER_FAULT_SIGN). A status from the
    command is never retried; a panic or a reset of the virtual host
    only where the command was declared to load no kernel module of ours
    (--retry-host-death): elsewhere they may be ours."""
    console = os.path.join(outdir, "console.log")
    kind = "inner" if getattr(args, "cmd", "") == "inner" else "run"
    limit = boot_limit(kind, args.timeout)
    t0 = time.monotonic()
    started = None
    stalled = None
    # To a file, not a pipe: an emulator that says much must not block.
    qemu_log = os.path.join(outdir, "qemu-output.log")
    with open(qemu_log, "w") as out:
        proc = subprocess.Popen(qemu, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT,
                                start_new_session=True)
    timed_out = False
    timer_fault = None
    kvm_line = kvm_stop = None
    kvm_seen = last_look = last_kvm_look = 0.0
    while proc.poll() is None:
        now = time.monotonic() - t0
        if started is None and os.path.exists(os.path.join(outdir,
                                                           ".started")):
            started = now
            record_boot_time(kind, started)
        if started is None and now > limit and now < args.timeout:
            stalled = stall_reason(console, now)
        if retry_emulator and started is not None and \
                now - last_look >= 1.0:
            last_look = now
            timer_fault = timer_fault_seen(console, outdir)
        if kind == "inner" and not kvm_line and now - last_kvm_look >= 1.0:
            # QEMU leaves a guest KVM stopped paused for good; waiting for
            # the time limit would only cost the limit.
            last_kvm_look = now
            kvm_line = kvm_internal_error(qemu_log)
            kvm_seen = now
        # Killed a second after the line: its register dump is complete.
        kvm_stop = kvm_line if kvm_line and now - kvm_seen >= 1.0 else None
        if now > args.timeout or stalled or timer_fault or kvm_stop:
            timed_out = not stalled and not timer_fault and not kvm_stop
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            break
        time.sleep(0.05)
    total = time.monotonic() - t0
    qemu_out = read(qemu_log)
    has_rc = os.path.exists(os.path.join(outdir, "rc"))
    began = os.path.exists(os.path.join(outdir, ".started"))
    timing = {"boot_to_command_s": started, "total_s": total,
              "attempt": attempt}
    with open(os.path.join(outdir, "timing.json"), "w") as f:
        json.dump(timing, f)
    fault = timer_fault if not has_rc else None
    host_died = None
    if not fault and not stalled and not timed_out and not has_rc:
        fault = emulator_fault(proc.returncode, qemu_out)
        if not fault and not began and proc.returncode == 1 and \
                read(console) == "":
            # The emulator refused its command line: nothing to retry.
            refused = [l for l in qemu_out.splitlines() if l.strip()]
            log("the emulator refused to start: %s" %
                (refused[0] if refused else "exit 1, nothing said"))
            return evidence(outdir, console, qemu_out, 125)
        if not fault and not began:
            # Dead before the command (under nested TCG a guest may reset
            # in early boot): as much a stalled boot as one that hangs.
            stalled = "the guest ended before the command started " \
                      "(QEMU exit %d)" % proc.returncode
        elif not fault and host_death_not_ours(args) and \
                not not_retried(ours_in_death(console)):
            # The virtual host's kernel is Debian's (or ours from Debian's
            # source) and the command runs only user-space code of ours:
            # a panic or reset then is the emulator's or that kernel's
            # (seen under nested KVM on TCG: a silent reset, a stack
            # overflow in KVM's path), never a result of ours.
            host_died = "%s while the command ran; the command loads " \
                        "no module of ours (--retry-host-death)" % \
                        vhost_end(console)
    if (stalled or fault or host_died) and attempt == 1 and retry_emulator:
        why = ("boot stalled (%s, limit %.0f s)" % (stalled, limit)
               if stalled else fault or host_died)
        why += "; retrying once (retry 1 of 1)"
        log(why)
        if fault or host_died:
            tail(console, qemu_out)
        kept = set_aside(outdir, attempt)
        setup()
        with open(os.path.join(outdir, "retries.log"), "a") as f:
            f.write(why + "\n")
        log("the failed attempt's files are in %s" % kept)
        return boot(qemu, outdir, args, setup, retry_emulator, attempt=2)

    output = read(os.path.join(outdir, "output.log"))
    sys.stdout.write(output)
    sys.stdout.flush()
    rc_text = read(os.path.join(outdir, "rc")).strip()
    if kvm_stop:
        log("the guest stopped: %s; killed its emulator%s" % (
            kvm_stop, ", after the command's status" if has_rc else ""))
        if not has_rc:
            return evidence(outdir, console, qemu_out, 125)
    if stalled:
        log("boot stalled%s (%s); killed the virtual host" % (
            " again" if attempt > 1 else "", stalled))
        return evidence(outdir, console, qemu_out, 124)
    if timed_out:
        log("timed out after %.0f s; killed the virtual host" % args.timeout)
        return evidence(outdir, console, qemu_out, 124)
    if fault:
        log("%s%s: no status from the virtual host" % (
            fault, ", again" if attempt > 1 else ""))
        return evidence(outdir, console, qemu_out, 125)
    if not rc_text:
        log("the virtual host ended without the command's status "
            "(QEMU exit %d): %s%s" % (
                proc.returncode, vhost_end(console),
                "; on the retry, after the first attempt's %s" %
                read(os.path.join(outdir, "retries.log")).strip()
                .split("; retrying once")[0] if attempt > 1 else ""))
        return evidence(outdir, console, qemu_out, 125)
    rc = int(rc_text)
    crashed = emulator_fault(proc.returncode, qemu_out)
    if crashed or proc.returncode != 0:
        # The command finished, then the emulator failed: its status
        # stands (never retried), and the run fails.
        log("the command exited %d, then the emulator ended badly (%s)"
            % (rc, crashed or "QEMU exit %d" % proc.returncode))
        return evidence(outdir, console, qemu_out, rc or 125)
    if rc != 0 or args.verbose:
        log("command exited %d; boot to command %.1f s, whole run %.1f s"
            % (rc, started or -1, total))
        if rc != 0:
            return evidence(outdir, console, qemu_out, rc)
    return rc


def evidence(outdir, console, qemu_out, rc):
    """The failure's evidence on stderr, and where all of it is kept."""
    tail(console, qemu_out)
    log("evidence kept in %s (console.log: the virtual host's console; "
        "qemu-output.log: the emulator's stderr; qemu-cmdline; "
        "output.log)" % outdir)
    return rc


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def tail(console, qemu_out, lines=50):
    text = read(console).splitlines()[-lines:]
    log("console tail (last %d lines):\n" % lines + "\n".join(text))
    if qemu_out.strip():
        log("the emulator's stderr:\n" + qemu_out.strip()[-8000:])


def sh_quote(s):
    if s and all(c.isalnum() or c in "@%+=:,./-_" for c in s):
        return s
    return "'" + s.replace("'", "'\"'\"'") + "'"


# ---------------------------------------------------------------- inside

def guest_bdf(name, out=None):
    """Find a node's BDF by walking the guest's /sys/devices."""
    out = out or os.environ.get("VHOST_OUT", GUEST_OUT)
    with open(os.path.join(out, "topology.json")) as f:
        nodes = json.load(f)["nodes"]
    if name not in nodes:
        die("bdf: no node %s in the topology" % name)
    path = nodes[name]["path"]
    d = os.path.join("/sys/devices", path[0])
    for hop in path[1:]:
        match = [e for e in os.listdir(d)
                 if len(e) == 12 and e.endswith(":" + hop)]
        if len(match) != 1:
            die("bdf: %s: no unique device %s under %s" % (name, hop, d))
        d = os.path.join(d, match[0])
    return os.path.basename(d)


def cmd_bdf(args):
    print(guest_bdf(args.name))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("prepare", help="fetch the kernel, build the initramfs")
    sub.add_parser("initrd", help="build the initramfs of a kernel built "
                   "from source (tests/vhost/build-linux.sh)")
    r = sub.add_parser("run", help="boot a topology and run a command")
    r.add_argument("topology")
    r.add_argument("--timeout", type=float, default=300,
                   help="kill the virtual host after this many seconds")
    r.add_argument("--out", help="results directory (default: a new one)")
    r.add_argument("--cwd", default=PROJECT,
                   help="directory the command runs in (default: project)")
    r.add_argument("--append", default="", help="more kernel arguments")
    r.add_argument("--module", dest="modules", action="append", default=[],
                   help="another kernel module to load inside")
    r.add_argument("--qemu", default=os.environ.get("VHOST_QEMU", OUTER_QEMU),
                   help="outer QEMU binary (default: Debian 13's 10.0.13, "
                   "tests/vhost/outer-qemu.sh)")
    r.add_argument("--qemu-arg", action="append", default=[],
                   help="extra QEMU argument (repeat)")
    r.add_argument("--retry-host-death", action="store_true",
                   help="the command loads no kernel module of ours: a "
                   "panic or reset of the virtual host while it runs is "
                   "retried once (counted), as the emulator's own fault is")
    r.add_argument("-v", "--verbose", action="store_true")
    i = sub.add_parser("inner", help="(inside) boot a nested KVM guest")
    i.add_argument("--qemu", default=os.path.join(PROJECT, "build", "qemu",
                                                  "qemu-system-x86_64"))
    i.add_argument("--device", action="append", default=[],
                   help="a -device argument (repeat); rpN are root ports")
    i.add_argument("--root-ports", type=int, default=4)
    i.add_argument("--memory", type=int, default=512)
    i.add_argument("--qmp", help="QMP socket path")
    i.add_argument("--timeout", type=float, default=240)
    i.add_argument("--out", help="results directory")
    i.add_argument("--cwd", default=PROJECT)
    i.add_argument("--qemu-arg", action="append", default=[])
    i.add_argument("--append", default="",
                   help="more kernel arguments for the nested guest")
    i.add_argument("-v", "--verbose", action="store_true")
    b = sub.add_parser("bdf", help="(inside) print a node's guest BDF")
    b.add_argument("name")
    argv = sys.argv[1:]
    command = []
    if "--" in argv:
        i = argv.index("--")
        argv, command = argv[:i], argv[i + 1:]
    args = p.parse_args(argv)
    args.command = command
    return {"prepare": cmd_prepare, "initrd": cmd_initrd, "run": cmd_run, "inner": cmd_inner,
            "bdf": cmd_bdf}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
