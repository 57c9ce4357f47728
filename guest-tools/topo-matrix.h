/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The GPU topology matrix of the text report, as `nvidia-smi topo -m`. */
#ifndef GPUP2P_VERIFY_TOPO_MATRIX_H
#define GPUP2P_VERIFY_TOPO_MATRIX_H

#include "verify.h"

/*
 * The cell of GPUs @a and @b (indices into r->gpus): "X" for a GPU with
 * itself; "NV<n>" where n NVLinks join them (NVML's count, the pair's or,
 * without a pair, the links whose far end is the other GPU); else the PCIe
 * path class verify_pci() recorded (PIX, PXB, PHB, NODE, SYS), "?" where
 * it recorded none.
 */
char *verify_topo_cell(const VerifyReport *r, guint a, guint b);
/*
 * The matrix's heading: nvidia-smi's legend where NVML was read (NVML's
 * counts decide NV#), else that NVLinks were not read and why (@r's
 * nvml_status: --pci-only, --sysfs-root, NVML not loaded...), since GPUs
 * joined by NVLinks then show their PCIe class.
 */
char *verify_topo_title(const VerifyReport *r);
/* The matrix, one row per GPU, as text. */
char *verify_topo_matrix(const VerifyReport *r);

#endif
