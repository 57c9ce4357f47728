/* SPDX-License-Identifier: GPL-2.0-only */
/* gpup2p: declarations shared by the module's files. */
#ifndef GPUP2P_INTERNAL_H
#define GPUP2P_INTERNAL_H

#include "uapi/gpup2p.h"

long gpup2p_verdict(struct gpup2p_verdict *v);

#endif
