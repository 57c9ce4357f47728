/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The module's UAPI beside the kernel's own headers: its ioctl type is none
 * of the subsystems' whose headers the system has (nsfs and remoteproc took
 * the old 0xB7); Linux's ioctl-number.rst is checked by
 * tests/unit/test_p2pdma_source.py. The argsz ceiling is the 4096 bytes
 * the header documents, not the page size.
 */
#include <glib.h>
#include <linux/nsfs.h>
#include <linux/remoteproc_cdev.h>

#include "uapi/gpup2p.h"

static void test_type_of_its_own(void)
{
    const unsigned long ours[] = { GPUP2P_GET_INFO, GPUP2P_VERDICT };
    size_t i;

    g_assert_cmphex(NSIO, !=, GPUP2P_TYPE);
    g_assert_cmphex(RPROC_MAGIC, !=, GPUP2P_TYPE);
    for (i = 0; i < G_N_ELEMENTS(ours); i++) {
        g_assert_cmphex(_IOC_TYPE(ours[i]), ==, GPUP2P_TYPE);
        g_assert_cmphex(_IOC_TYPE(ours[i]), !=, NSIO);
    }
}

static void test_argsz_max(void)
{
    g_assert_cmpuint(GPUP2P_ARGSZ_MAX, ==, 4096);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/uapi/type-of-its-own", test_type_of_its_own);
    g_test_add_func("/uapi/argsz-max", test_argsz_max);
    return g_test_run();
}
