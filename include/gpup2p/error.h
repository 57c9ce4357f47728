/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Error domain of the vfio-gpu-p2p core library. */
#ifndef GPUP2P_ERROR_H
#define GPUP2P_ERROR_H

#include <glib.h>

#define GP_ERROR (gp_error_quark())

typedef enum {
    GP_ERROR_INVALID,           /* malformed input: bad bytes, bad value */
    GP_ERROR_NOT_FOUND,         /* a named device, file or capability is absent */
    GP_ERROR_IO,                /* reading or writing a file failed */
    GP_ERROR_INCOMPLETE,        /* input lacks what is needed (e.g. non-root config read) */
    GP_ERROR_NO_ROOM,           /* no free slot for a capability */
    GP_ERROR_TOO_MANY_CLIQUES,  /* more than 16 P2P domains */
    GP_ERROR_UNSUPPORTED,       /* a device the operation does not apply to */
} GpErrorCode;

GQuark gp_error_quark(void);

#endif /* GPUP2P_ERROR_H */
