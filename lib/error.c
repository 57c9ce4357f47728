/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "gpup2p/error.h"

G_DEFINE_QUARK(gpup2p-error-quark, gp_error)
