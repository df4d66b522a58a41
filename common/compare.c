/* Poisoning and comparison of results (see workbook.h). */
#include "workbook.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#define SHOWN_MISMATCHES 5

void wb_poison_ints(int *device_ptr, size_t n)
{
    CUDA_CHECK(cudaMemset(device_ptr, WB_POISON_INT_BYTE, n * sizeof(int)));
}

void wb_poison_floats(float *device_ptr, size_t n)
{
    CUDA_CHECK(cudaMemset(device_ptr, 0xFF, n * sizeof(float)));
}

/* Appends to a report buffer without overflowing it. */
static void append(char *report, size_t report_len, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
static void append(char *report, size_t report_len, const char *format, ...)
{
    size_t used = strlen(report);
    if (used + 1 >= report_len)
        return;
    va_list args;
    va_start(args, format);
    vsnprintf(report + used, report_len - used, format, args);
    va_end(args);
}

/* The classic mistakes, named from the pattern of bad elements:
 * first_bad/last_bad bound the mismatches, unwritten counts poisoned ones. */
static void append_hint(char *report, size_t report_len, size_t n, size_t mismatches,
                        size_t first_bad, size_t last_bad, size_t unwritten)
{
    if (unwritten == mismatches && first_bad == 1 && mismatches == n - 1)
        append(report, report_len,
               "\n  hint: only element 0 was written: does every thread compute its own "
               "index (blockIdx, blockDim, threadIdx)?");
    else if (unwritten == mismatches && last_bad == n - 1 && mismatches == n - first_bad)
        append(report, report_len,
               "\n  hint: every element from index %zu on was never written: "
               "is your grid large enough (ceiling division)?",
               first_bad);
    else if (unwritten == mismatches)
        append(report, report_len,
               "\n  hint: %zu elements were never written (they still hold the poison "
               "value): check the index formula and the bounds check",
               unwritten);
    else if (unwritten == 0 && 2 * mismatches > n)
        append(report, report_len,
               "\n  hint: most elements hold wrong values (none was left unwritten): check "
               "the formula and the indices you read");
}

/* Puts "K of N elements <verb>: " before the listed mismatches and a hint after. */
static void summarise(char *report, size_t report_len, const char *verb, size_t n,
                      size_t mismatches, size_t first_bad, size_t last_bad, size_t unwritten)
{
    char head[96];
    snprintf(head, sizeof head, "%zu of %zu elements %s: ", mismatches, n, verb);
    size_t head_len = strlen(head), body_len = strlen(report);
    if (head_len + body_len + 1 < report_len) {
        memmove(report + head_len, report, body_len + 1);
        memcpy(report, head, head_len);
    }
    append_hint(report, report_len, n, mismatches, first_bad, last_bad, unwritten);
}

size_t wb_compare_ints(const int *got, const int *expected, size_t n, char *report,
                       size_t report_len)
{
    size_t mismatches = 0, unwritten = 0, first_bad = 0, last_bad = 0;
    if (report && report_len)
        report[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (got[i] == expected[i])
            continue;
        if (mismatches == 0)
            first_bad = i;
        last_bad = i;
        if (got[i] == WB_POISON_INT)
            unwritten++;
        if (report && mismatches < SHOWN_MISMATCHES)
            append(report, report_len, "%zu: got %d, expected %d%s; ", i, got[i], expected[i],
                   got[i] == WB_POISON_INT ? " (never written)" : "");
        mismatches++;
    }
    if (report && mismatches)
        summarise(report, report_len, "differ", n, mismatches, first_bad, last_bad, unwritten);
    return mismatches;
}

double wb_rel_error(const float *got, const double *expected, size_t n)
{
    double diff2 = 0.0, ref2 = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(got[i]))
            return INFINITY;
        double d = (double)got[i] - expected[i];
        diff2 += d * d;
        ref2 += expected[i] * expected[i];
    }
    return ref2 > 0.0 ? sqrt(diff2 / ref2) : sqrt(diff2);
}

void wb_describe_float_mismatch(const float *got, const double *expected, size_t n,
                                double tolerance, char *report, size_t report_len)
{
    size_t bad = 0, unwritten = 0, first_bad = 0, last_bad = 0;
    report[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        double scale = fabs(expected[i]) > 1.0 ? fabs(expected[i]) : 1.0;
        bool wrong = !isfinite(got[i]) || fabs((double)got[i] - expected[i]) > tolerance * scale;
        if (!wrong)
            continue;
        if (bad == 0)
            first_bad = i;
        last_bad = i;
        if (isnan(got[i]))
            unwritten++;
        if (bad < SHOWN_MISMATCHES)
            append(report, report_len, "%zu: got %g, expected %g%s; ", i, got[i], expected[i],
                   isnan(got[i]) ? " (NaN: never written?)" : "");
        bad++;
    }
    if (bad)
        summarise(report, report_len, "are off", n, bad, first_bad, last_bad, unwritten);
}
