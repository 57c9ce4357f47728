/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The figure table: what is measured, in which mode, and how it is shown. */
#include "verify.h"

const VerifyFigureInfo verify_pair_figures[FIG_PAIR_COUNT] = {
    [FIG_UNI_CE] = { "unidirectional_ce_gbps",
                     "Unidirectional bandwidth, copy engine (GB/s)",
                     XFER_CE, true, false, false },
    [FIG_UNI_SM] = { "unidirectional_sm_gbps",
                     "Unidirectional bandwidth, SM copy kernel writing to "
                     "the peer (GB/s)", XFER_SM_WRITE, false, true, false },
    [FIG_UNI_SM_READ] = { "unidirectional_sm_read_gbps",
                          "Unidirectional bandwidth, SM copy kernel reading "
                          "from the peer (GB/s)", XFER_SM_READ, false, true,
                          false },
    [FIG_BI_CE] = { "bidirectional_ce_gbps",
                    "Bidirectional bandwidth, copy engine, each GPU's own "
                    "stream (GB/s, both ways)", XFER_CE_BIDIR, false, false,
                    false },
    [FIG_STAGED] = { "host_staged_gbps", "Host-staged, P2P off (GB/s)",
                     XFER_STAGED, false, false, false },
    [FIG_LAT_CE] = { "latency_ce_us",
                     "Latency, 16-byte copy-engine copy behind a spin "
                     "kernel (us)", XFER_CE_LATENCY, false, false, true },
    [FIG_LAT_SM] = { "latency_sm_us",
                     "Latency, SM pointer chase, loads bypass L1 (us)",
                     XFER_SM_LATENCY, false, true, true },
};

const VerifyFigureInfo verify_gpu_figures[AGG_COUNT] = {
    [AGG_ALL_TO_ONE] = { "all_to_one_ce_gbps",
                         "All other GPUs write into this one, copy engine "
                         "(GB/s)", XFER_CE, false, false, false },
    [AGG_ONE_TO_ALL] = { "one_to_all_ce_gbps",
                         "This GPU writes into all others, copy engine "
                         "(GB/s)", XFER_CE, false, false, false },
};
