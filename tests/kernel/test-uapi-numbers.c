/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The module's UAPI beside the kernel's own: its ioctl numbers share type
 * 0xB7 with nsfs and remoteproc (Documentation/userspace-api/ioctl/
 * ioctl-number.rst) and must not equal theirs; the argsz ceiling is the
 * 4096 bytes the header documents, not the page size.
 */
#include <glib.h>
#include <linux/nsfs.h>
#include <linux/remoteproc_cdev.h>

#include "uapi/gpup2p.h"

static void test_numbers_clear(void)
{
    const unsigned long ours[] = {
        GPUP2P_GET_INFO, GPUP2P_VERDICT, GPUP2P_MAP, GPUP2P_AUDIT,
    };
    /* The system's headers, as installed (linux-libc-dev). */
    const unsigned long theirs[] = {
        NS_GET_USERNS, NS_GET_PARENT, NS_GET_NSTYPE, NS_GET_OWNER_UID,
#ifdef NS_GET_MNTNS_ID
        NS_GET_MNTNS_ID,
#endif
#ifdef NS_GET_PID_FROM_PIDNS
        NS_GET_PID_FROM_PIDNS, NS_GET_TGID_FROM_PIDNS, NS_GET_PID_IN_PIDNS,
        NS_GET_TGID_IN_PIDNS,
#endif
#ifdef NS_MNT_GET_INFO
        NS_MNT_GET_INFO, NS_MNT_GET_NEXT, NS_MNT_GET_PREV,
#endif
        RPROC_SET_SHUTDOWN_ON_RELEASE, RPROC_GET_SHUTDOWN_ON_RELEASE,
    };
    size_t i, j;

    g_assert_cmphex(NSIO, ==, GPUP2P_TYPE);
    g_assert_cmphex(RPROC_MAGIC, ==, GPUP2P_TYPE);
    for (i = 0; i < G_N_ELEMENTS(ours); i++) {
        for (j = 0; j < G_N_ELEMENTS(theirs); j++) {
            g_assert_cmphex(ours[i], !=, theirs[j]);
            g_assert_cmpuint(_IOC_NR(ours[i]), !=, _IOC_NR(theirs[j]));
        }
    }
}

static void test_argsz_max(void)
{
    g_assert_cmpuint(GPUP2P_ARGSZ_MAX, ==, 4096);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/uapi/numbers-clear-of-nsfs-remoteproc",
                    test_numbers_clear);
    g_test_add_func("/uapi/argsz-max", test_argsz_max);
    return g_test_run();
}
