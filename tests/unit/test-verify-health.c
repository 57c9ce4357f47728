/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The health table's rule for one counter's two readings, with the time
 * between them: DCGM's rule for NVLink CRC errors (fail at 100 per second
 * or more, warn below), any replay or recovery fails, a counter read once
 * is neither a pass nor a fail. The tool-level rows (a counter rising
 * inside a run of the tool against the stand-in NVML) are in
 * test-verify-cuda-standin.c; the run's length there is not ours to set,
 * so the rate's boundary is tested here.
 */
#include <glib.h>

#include "verify.h"

static VerifyHealthValue read_twice(unsigned long long before,
                                    unsigned long long after, double seconds)
{
    VerifyHealthValue v = {
        .state = HEALTH_READ_BOTH, .before = before, .after = after,
        .before_us = 1000000, .after_us = 1000000 + (gint64)(seconds * 1e6),
    };
    return v;
}

static HealthVerdict link_verdict(int counter, VerifyHealthValue v)
{
    return verify_health_verdict(&v, &verify_health_link_counters[counter]);
}

static void test_crc_rate(void)
{
    static const int crc[] = { HEALTH_NVLINK_CRC_FLIT,
                               HEALTH_NVLINK_CRC_DATA };

    for (guint i = 0; i < G_N_ELEMENTS(crc); i++) {
        /* What healthy H100s count in a default run: tens per second. */
        g_assert_cmpint(link_verdict(crc[i], read_twice(58, 256, 8.0)), ==,
                        HEALTH_WARNING);
        g_assert_cmpint(link_verdict(crc[i], read_twice(0, 99, 1.0)), ==,
                        HEALTH_WARNING);
        g_assert_cmpint(link_verdict(crc[i], read_twice(0, 100, 1.0)), ==,
                        HEALTH_FAILED);
        g_assert_cmpint(link_verdict(crc[i], read_twice(0, 2000, 10.0)), ==,
                        HEALTH_FAILED);
        /* Both readings in one microsecond: no time to spread it over. */
        g_assert_cmpint(link_verdict(crc[i], read_twice(3, 4, 0)), ==,
                        HEALTH_FAILED);
        g_assert_cmpint(link_verdict(crc[i], read_twice(7, 7, 8.0)), ==,
                        HEALTH_OK);
    }
    g_assert_cmpfloat_with_epsilon(
        verify_health_rise_per_second(&(VerifyHealthValue){
            .state = HEALTH_READ_BOTH, .before = 10, .after = 60,
            .before_us = 0, .after_us = 2000000 }), 25.0, 1e-9);
}

static void test_replay_recovery_any_rise(void)
{
    static const int any[] = { HEALTH_NVLINK_REPLAY, HEALTH_NVLINK_RECOVERY };

    for (guint i = 0; i < G_N_ELEMENTS(any); i++) {
        /* One in a minute still fails: the link retrained or replayed. */
        g_assert_cmpint(link_verdict(any[i], read_twice(0, 1, 60.0)), ==,
                        HEALTH_FAILED);
        g_assert_cmpint(link_verdict(any[i], read_twice(4, 4, 60.0)), ==,
                        HEALTH_OK);
    }
}

static void test_read_once_is_neither(void)
{
    VerifyHealthValue v = read_twice(0, 500, 1.0);

    v.state = HEALTH_READ_BEFORE;
    g_assert_cmpint(link_verdict(HEALTH_NVLINK_CRC_DATA, v), ==,
                    HEALTH_NOT_READ);
    v.state = HEALTH_UNSUPPORTED;
    g_assert_cmpint(link_verdict(HEALTH_NVLINK_REPLAY, v), ==,
                    HEALTH_NOT_READ);
}

/* A volatile ECC counter resets with the GPU: a reading that went down
 * says nothing of what the run did, so it is neither a pass nor a fail.
 * Before: "ok". */
static void test_went_down_is_neither(void)
{
    VerifyHealthValue v = read_twice(5, 3, 1.0);
    g_autofree char *why = verify_health_unread_reason(&v);

    g_assert_cmpint(verify_health_verdict(
                        &v, &verify_health_gpu_counters[HEALTH_ECC_CORRECTED]),
                    ==, HEALTH_NOT_READ);
    g_assert_cmpint(verify_health_verdict(
                        &v, &verify_health_gpu_counters[
                            HEALTH_ECC_UNCORRECTED]), ==, HEALTH_NOT_READ);
    g_assert_cmpint(link_verdict(HEALTH_NVLINK_REPLAY, v), ==,
                    HEALTH_NOT_READ);
    g_assert_cmpstr(why, ==, "the counter went down: reset during the run?");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/verify-health/nvlink-crc-rate", test_crc_rate);
    g_test_add_func("/verify-health/nvlink-replay-recovery-any-rise",
                    test_replay_recovery_any_rise);
    g_test_add_func("/verify-health/read-once-is-neither",
                    test_read_once_is_neither);
    g_test_add_func("/verify-health/went-down-is-neither",
                    test_went_down_is_neither);
    return g_test_run();
}
