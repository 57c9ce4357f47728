#!/bin/sh
# A stand-in for our QEMU build (hw/vfio-gpu-p2p, not built by the unit
# suite): it answers only '-device vfio-pci,help', with the properties a
# QEMU with the extension lists, so that `gpup2p check` and `gpup2p
# libvirt` can be tested against "a QEMU that has x-gpu-p2p-clique".
# Debian's own qemu-system-x86_64 stands for stock QEMU in the same tests;
# the integration suite runs the real build.
if [ "$1" = -device ] && [ "$2" = vfio-pci,help ]; then
    echo "vfio-pci options:"
    echo "  x-gpu-p2p-clique=<str> - P2P clique: off, auto or 0-15"
    echo "  x-nv-gpudirect-clique=<uint32> - NVIDIA GPUDirect Clique ID (0 - 15)"
    exit 0
fi
echo "qemu-standin.sh: a stand-in; it only answers -device vfio-pci,help" >&2
exit 1
