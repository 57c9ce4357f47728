# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by scripts that run inside the virtual host (from the project
# directory): find described devices, bind them to vfio-pci, load modules.

# The guest BDF of a node of the topology description.
bdf() {
    python3 tests/vhost/vhost.py bdf "$1"
}

# Bind each BDF to vfio-pci, whatever holds it now.
bind_vfio() {
    for d in "$@"; do
        echo vfio-pci > /sys/bus/pci/devices/$d/driver_override
        if [ -e /sys/bus/pci/devices/$d/driver ]; then
            echo $d > /sys/bus/pci/devices/$d/driver/unbind
        fi
        echo $d > /sys/bus/pci/drivers_probe
    done
}

# Load modules of the kernel the virtual host booted.
load_module() {
    for m in "$@"; do
        modprobe -d "$VHOST_KERNEL_DIR" -S "$VHOST_KERNEL_VERSION" "$m"
    done
}

# libvirt needs writable state, and the root is shared read-only: tmpfs
# over libvirt's directories, with /etc/libvirt's files copied in.
libvirt_writable_state() {
    cp -a /etc/libvirt /tmp/etc-libvirt
    for d in /etc/libvirt /var/lib/libvirt /var/cache/libvirt \
             /var/log/libvirt; do
        mount -t tmpfs tmpfs $d
    done
    cp -a /tmp/etc-libvirt/. /etc/libvirt/
}
