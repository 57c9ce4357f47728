/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The health table's rule for one counter's two readings, with the time
 * between them: NVLink CRC errors judged on the GPU's total of each kind
 * over its links, as DCGM's health watch does (fail at 100 per second or
 * more, warn below; a link's own rise only warns), any replay or
 * recovery fails, a counter read once or gone down is neither a pass
 * nor a fail. The tool-level rows (a counter rising inside a run of the
 * tool against the stand-in NVML) are in test-verify-cuda-standin.c; the
 * run's length there is not ours to set, so the rate's boundary is
 * tested here.
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

/* A GPU with @links active NVLinks, each counting @per_link of CRC kind
 * @counter over @seconds between its two readings. */
static VerifyGpu *gpu_with_crc(int links, int counter,
                               unsigned long long per_link, double seconds)
{
    VerifyGpu *g = g_new0(VerifyGpu, 1);

    for (int l = 0; l < links; l++) {
        g->nvlinks_active |= 1u << l;
        g->nvlinks_total++;
        for (int c = 0; c < HEALTH_LINK_COUNTERS; c++) {
            g->link_health[l][c] = read_twice(0, c == counter ? per_link : 0,
                                              seconds);
        }
    }
    return g;
}

/* The verdict of @g's total of CRC kind @counter, into @sum. */
static HealthVerdict total_verdict(const VerifyGpu *g, int counter,
                                   VerifyHealthTotal *sum)
{
    int t = counter == HEALTH_NVLINK_CRC_FLIT ? HEALTH_NVLINK_CRC_FLIT_TOTAL :
            HEALTH_NVLINK_CRC_DATA_TOTAL;

    g_assert_cmpint(verify_health_link_totals[t].link_counter, ==, counter);
    return verify_health_total_verdict(g, t, sum);
}

/* The rate's boundary, on one link: the link decides; the GPU's total
 * (its own count here) warns on any rise. */
static void test_crc_rate(void)
{
    static const int crc[] = { HEALTH_NVLINK_CRC_FLIT,
                               HEALTH_NVLINK_CRC_DATA };
    static const struct {
        unsigned long long rise;
        double seconds;
        HealthVerdict verdict;
    } rows[] = {
        { 198, 8.0, HEALTH_WARNING },   /* healthy H100s: tens a second */
        { 99, 1.0, HEALTH_WARNING },
        { 100, 1.0, HEALTH_FAILED },
        { 2000, 10.0, HEALTH_FAILED },
        /* Both readings in one microsecond: no time to spread it over. */
        { 1, 0, HEALTH_FAILED },
        { 0, 8.0, HEALTH_OK },
    };

    for (guint i = 0; i < G_N_ELEMENTS(crc); i++) {
        for (guint k = 0; k < G_N_ELEMENTS(rows); k++) {
            g_autofree VerifyGpu *g = gpu_with_crc(1, crc[i], rows[k].rise,
                                                   rows[k].seconds);
            VerifyHealthTotal sum;

            g_assert_cmpint(link_verdict(crc[i], g->link_health[0][crc[i]]),
                            ==, rows[k].verdict);
            g_assert_cmpint(verify_health_gpu_verdict(g), ==,
                            rows[k].verdict);
            g_assert_cmpint(total_verdict(g, crc[i], &sum), ==,
                            rows[k].rise ? HEALTH_WARNING : HEALTH_OK);
        }
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

/*
 * The GPU's total of each CRC kind is summed as DCGM's watch sums it
 * (DCGM_FI_DEV_NVLINK_CRC_*_ERROR_COUNT_TOTAL) and reported with its
 * rate, as a warning: this tool applies DCGM's 100-per-second limit to
 * each link (health.c says why), so 18 links at 60 a second warn, and
 * one link at 100 a second fails.
 */
static void test_crc_sum_across_links(void)
{
    static const int crc[] = { HEALTH_NVLINK_CRC_FLIT,
                               HEALTH_NVLINK_CRC_DATA };

    for (guint i = 0; i < G_N_ELEMENTS(crc); i++) {
        g_autofree VerifyGpu *all = gpu_with_crc(18, crc[i], 60, 1.0);
        g_autofree VerifyGpu *one = gpu_with_crc(1, crc[i], 99, 1.0);
        g_autofree VerifyGpu *two = gpu_with_crc(2, crc[i], 50, 1.0);
        g_autofree VerifyGpu *still = gpu_with_crc(18, crc[i], 0, 1.0);

        VerifyHealthTotal sum;

        g_autofree VerifyGpu *hot = gpu_with_crc(18, crc[i], 0, 1.0);

        hot->link_health[5][crc[i]] = read_twice(0, 100, 1.0);
        g_assert_cmpint(verify_health_gpu_verdict(all), ==, HEALTH_WARNING);
        g_assert_cmpint(verify_health_gpu_verdict(one), ==, HEALTH_WARNING);
        /* 100 a second summed over two links: each link is at 50. */
        g_assert_cmpint(verify_health_gpu_verdict(two), ==, HEALTH_WARNING);
        g_assert_cmpint(verify_health_gpu_verdict(still), ==, HEALTH_OK);
        g_assert_cmpint(verify_health_gpu_verdict(hot), ==, HEALTH_FAILED);

        g_assert_cmpint(total_verdict(all, crc[i], &sum), ==, HEALTH_WARNING);
        g_assert_cmpuint(sum.sum.before, ==, 0);
        g_assert_cmpuint(sum.sum.after, ==, 1080);
        g_assert_cmpfloat_with_epsilon(verify_health_rise_per_second(
                                           &sum.sum), 1080.0, 1e-9);
        g_assert_cmphex(sum.links_rose, ==, 0x3ffff);
        g_assert_cmphex(sum.links_summed, ==, 0x3ffff);
        g_assert_cmpint(link_verdict(crc[i], all->link_health[17][crc[i]]),
                        ==, HEALTH_WARNING);
        g_assert_cmpint(link_verdict(crc[i], hot->link_health[5][crc[i]]),
                        ==, HEALTH_FAILED);
        g_assert_cmpint(total_verdict(one, crc[i], &sum), ==, HEALTH_WARNING);
        g_assert_cmpfloat_with_epsilon(verify_health_rise_per_second(
                                           &sum.sum), 99.0, 1e-9);
    }
}

/* Only links read twice are summed: one read once, one reset, and an
 * inactive one add nothing; their time does not stretch the rate. */
static void test_crc_sum_read_twice_only(void)
{
    g_autofree VerifyGpu *g = gpu_with_crc(4, HEALTH_NVLINK_CRC_DATA, 30,
                                           1.0);
    g_autofree char *list = NULL;
    VerifyHealthTotal sum;

    g->link_health[1][HEALTH_NVLINK_CRC_DATA].state = HEALTH_READ_BEFORE;
    g->link_health[1][HEALTH_NVLINK_CRC_DATA].after_us = 99000000;
    g->link_health[2][HEALTH_NVLINK_CRC_DATA] = read_twice(500, 0, 50.0);
    /* Link 5: counted once, but not active (never asked). */
    g->link_health[5][HEALTH_NVLINK_CRC_DATA] = read_twice(0, 900, 1.0);
    g_assert_cmpint(total_verdict(g, HEALTH_NVLINK_CRC_DATA, &sum), ==,
                    HEALTH_WARNING);
    g_assert_cmpuint(sum.sum.after - sum.sum.before, ==, 60);
    g_assert_cmpfloat_with_epsilon(verify_health_rise_per_second(&sum.sum),
                                   60.0, 1e-9);
    g_assert_cmphex(sum.links_summed, ==, 0x9);
    g_assert_cmphex(sum.links_rose, ==, 0x9);
    list = verify_health_link_list(sum.links_rose);
    g_assert_cmpstr(list, ==, "0, 3");
    {
        g_autofree char *rate = verify_health_rate_text(&sum.sum);
        VerifyHealthValue same = read_twice(3, 4, 0);
        g_autofree char *none = verify_health_rate_text(&same);

        g_assert_cmpstr(rate, ==, "60.0 per second");
        g_assert_cmpstr(none, ==, "both readings in one microsecond");
    }

    /* No link read twice: no total, and no verdict from it. */
    for (int l = 0; l < 4; l++) {
        g->link_health[l][HEALTH_NVLINK_CRC_DATA].state = HEALTH_UNSUPPORTED;
    }
    g_assert_cmpint(total_verdict(g, HEALTH_NVLINK_CRC_DATA, &sum), ==,
                    HEALTH_NOT_READ);
    g_assert_cmpint(sum.sum.state, ==, HEALTH_UNREAD);
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

/* A GPU NVML lost after the run, and an Xid of no GPU: "not read", with
 * why (test-verify-cuda-standin.c has the tool-level rows). */
static void test_lost_and_unattributed_are_neither(void)
{
    VerifyHealthValue lost = read_twice(0, 0, 1.0);
    VerifyHealthValue stray = read_twice(0, 0, 1.0);
    g_autofree char *lost_why = NULL, *stray_why = NULL;

    lost.state = HEALTH_LOST_AFTER;
    lost.nvml_error = 15;
    stray.state = HEALTH_UNATTRIBUTED;
    lost_why = verify_health_unread_reason(&lost);
    stray_why = verify_health_unread_reason(&stray);
    g_assert_cmpint(verify_health_verdict(
                        &lost, &verify_health_gpu_counters[HEALTH_XID_EVENTS]),
                    ==, HEALTH_NOT_READ);
    g_assert_cmpint(verify_health_verdict(
                        &stray, &verify_health_gpu_counters[HEALTH_XID_EVENTS]),
                    ==, HEALTH_NOT_READ);
    g_assert_cmpstr(lost_why, ==, "NVML could not find the GPU after the run "
                    "(nvmlDeviceGetHandleByPciBusId_v2: NVML error 15)");
    g_assert_cmpstr(stray_why, ==, "an Xid event came for a device that is "
                    "none of the GPUs NVML named after the run");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/verify-health/nvlink-crc-rate", test_crc_rate);
    g_test_add_func("/verify-health/nvlink-replay-recovery-any-rise",
                    test_replay_recovery_any_rise);
    g_test_add_func("/verify-health/read-once-is-neither",
                    test_read_once_is_neither);
    g_test_add_func("/verify-health/nvlink-crc-sum-across-links",
                    test_crc_sum_across_links);
    g_test_add_func("/verify-health/nvlink-crc-sum-read-twice-only",
                    test_crc_sum_read_twice_only);
    g_test_add_func("/verify-health/went-down-is-neither",
                    test_went_down_is_neither);
    g_test_add_func("/verify-health/lost-and-unattributed-are-neither",
                    test_lost_and_unattributed_are_neither);
    return g_test_run();
}
