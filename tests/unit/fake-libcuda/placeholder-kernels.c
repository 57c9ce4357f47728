/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Not a fatbin: the kernel image of the tests' build of gpup2p-verify
 * where nvcc is missing. Only the stand-in libcuda.so.1 accepts it (it
 * runs the tool's kernels on the CPU, by name); a real driver refuses it.
 */
extern const unsigned char verify_kernels_fatbin[];
const unsigned char verify_kernels_fatbin[] =
    "gpup2p-verify placeholder kernels for the stand-in libcuda.so.1";
