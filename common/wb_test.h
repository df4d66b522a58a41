/*
 * wb_test.h - what a lab's Criterion test adds on top of workbook.h.
 *
 *   TestSuite(my_lab, .init = wb_test_require_gpu, .timeout = 60);
 *
 * makes every test of the suite skip with a one-line reason on a machine
 * without a usable GPU. Linking wb_test.c also routes every workbook failure
 * (CUDA_CHECK, wb_fail) into a failure of the running test.
 */
#ifndef WB_TEST_H
#define WB_TEST_H

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <criterion/redirect.h>
#include <inttypes.h>

#include "workbook.h"

/* A suite's .init: skips the test when there is no usable GPU. */
void wb_test_require_gpu(void);

#define WB_SEED_HINT "(replay with WB_SEED=%" PRIu64 ")"

/* Exact comparison of n ints: on failure the message names what was
 * compared, the first mismatches, a hint and the seed. */
#define wb_assert_ints_equal(got, expected, n, what)                                   \
    do {                                                                               \
        char wb_report_[1024];                                                         \
        size_t wb_bad_ = wb_compare_ints((got), (expected), (n), wb_report_,           \
                                         sizeof wb_report_);                           \
        cr_assert(wb_bad_ == 0, "%s: %s " WB_SEED_HINT, (what), wb_report_, wb_seed()); \
    } while (0)

/* Relative norm error of n floats against a double-precision reference. */
#define wb_assert_rel_error_below(got, expected, n, tolerance, what)                       \
    do {                                                                                   \
        double wb_err_ = wb_rel_error((got), (expected), (n));                             \
        if (!(wb_err_ < (tolerance))) {                                                    \
            char wb_report_[1024];                                                         \
            wb_describe_float_mismatch((got), (expected), (n), (tolerance), wb_report_,    \
                                       sizeof wb_report_);                                 \
            cr_assert_fail("%s: relative error %g, allowed %g; %s " WB_SEED_HINT, (what),  \
                           wb_err_, (double)(tolerance), wb_report_, wb_seed());          \
        }                                                                                  \
    } while (0)

#endif /* WB_TEST_H */
