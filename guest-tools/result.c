/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The result model: what every check (PCI, CUDA, NVML, RDMA) writes to and
 * what the text, JSON and Prometheus reports read. It depends on no check,
 * so no check depends on main.c or on another check to report.
 */
#include <stdarg.h>

#include "verify.h"

void verify_report_init(VerifyReport *r)
{
    *r = (VerifyReport){ 0 };
    r->gpus = g_array_new(FALSE, TRUE, sizeof(VerifyGpu));
    r->pairs = g_array_new(FALSE, TRUE, sizeof(VerifyPair));
    r->paths = g_array_new(FALSE, TRUE, sizeof(VerifyPath));
    r->rdma = g_array_new(FALSE, TRUE, sizeof(VerifyRdma));
    r->nics = g_array_new(FALSE, TRUE, sizeof(VerifyNic));
    r->nic_paths = g_array_new(FALSE, TRUE, sizeof(VerifyNicPath));
    r->notes = g_ptr_array_new_with_free_func(g_free);
}

void verify_report_clear(VerifyReport *r)
{
    g_array_free(r->gpus, TRUE);
    g_array_free(r->pairs, TRUE);
    g_array_free(r->paths, TRUE);
    g_array_free(r->rdma, TRUE);
    g_array_free(r->nics, TRUE);
    g_array_free(r->nic_paths, TRUE);
    g_ptr_array_free(r->notes, TRUE);
    g_free(r->cuda_status);
    g_free(r->nvml_status);
    g_free(r->rdma_status);
    *r = (VerifyReport){ 0 };
}

void verify_note(VerifyReport *r, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    g_ptr_array_add(r->notes, g_strdup_vprintf(fmt, ap));
    va_end(ap);
}

/* A note starting with @prefix. */
static void note_prefixed(VerifyReport *r, const char *prefix,
                          const char *fmt, va_list ap) G_GNUC_PRINTF(3, 0);

static void note_prefixed(VerifyReport *r, const char *prefix,
                          const char *fmt, va_list ap)
{
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);

    g_ptr_array_add(r->notes, g_strconcat(prefix, msg, NULL));
}

void verify_record_untested(VerifyReport *r, const char *fmt, ...)
{
    va_list ap;

    r->untested = true;
    va_start(ap, fmt);
    note_prefixed(r, "untested: ", fmt, ap);
    va_end(ap);
}

void verify_record_broken(VerifyReport *r, const char *fmt, ...)
{
    va_list ap;

    r->p2p_broken = true;
    va_start(ap, fmt);
    note_prefixed(r, "", fmt, ap);
    va_end(ap);
}

bool verify_data_moved(const VerifyReport *r)
{
    for (guint i = 0; i < r->pairs->len; i++) {
        const VerifyPair *p = &g_array_index(r->pairs, VerifyPair, i);

        if (p->verified_ce == CHECK_OK || p->verified_ce == CHECK_FAILED ||
            p->verified_sm == CHECK_OK || p->verified_sm == CHECK_FAILED ||
            p->verified_sm_read == CHECK_OK ||
            p->verified_sm_read == CHECK_FAILED) {
            return true;
        }
    }
    for (guint i = 0; i < r->gpus->len; i++) {
        const VerifyGpu *g = &g_array_index(r->gpus, VerifyGpu, i);

        for (int f = 0; f < AGG_COUNT; f++) {
            if (g->agg[f].samples) {
                return true;
            }
        }
    }
    return false;
}

VerifyPair *verify_pair_find(const VerifyReport *r, guint a, guint b)
{
    guint i;

    for (i = 0; i < r->pairs->len; i++) {
        VerifyPair *p = &g_array_index(r->pairs, VerifyPair, i);

        if (p->a == a && p->b == b) {
            return p;
        }
    }
    return NULL;
}

const char *verify_path_class(const VerifyReport *r, guint a, guint b)
{
    guint i;

    for (i = 0; r->paths && i < r->paths->len; i++) {
        const VerifyPath *p = &g_array_index(r->paths, VerifyPath, i);

        if (p->a == a && p->b == b) {
            return p->cls;
        }
    }
    return NULL;
}

bool verify_pci_checks_only(const VerifyOptions *o)
{
    return o->pci_only || (o->sysfs_root && !o->with_cuda);
}

int verify_exit_code(const VerifyReport *r)
{
    if (r->p2p_broken) {
        return VERIFY_EXIT_P2P_BROKEN;
    }
    if (r->rdma_broken) {
        return VERIFY_EXIT_RDMA_BROKEN;
    }
    if (r->gpu_lost) {
        return VERIFY_EXIT_GPU_LOST;
    }
    if (r->untested) {
        return VERIFY_EXIT_UNTESTED;
    }
    return VERIFY_EXIT_OK;
}


int verify_nic_find(const VerifyReport *r, const char *bdf)
{
    for (guint i = 0; bdf[0] && i < r->nics->len; i++) {
        if (!g_ascii_strcasecmp(g_array_index(r->nics, VerifyNic, i).bdf,
                                bdf)) {
            return (int)i;
        }
    }
    return -1;
}

const VerifyNicPath *verify_nic_path(const VerifyReport *r, guint nic,
                                     guint gpu)
{
    for (guint i = 0; i < r->nic_paths->len; i++) {
        const VerifyNicPath *p = &g_array_index(r->nic_paths, VerifyNicPath,
                                                i);

        if (p->nic == nic && p->gpu == gpu) {
            return p;
        }
    }
    return NULL;
}
