/* CPU-side unit tests of common/: everything that needs no GPU. */
#include <math.h>
#include <setjmp.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "wb_test.h"

Test(random, same_stream_same_numbers)
{
    wb_rng a = wb_rng_for("stream"), b = wb_rng_for("stream"), c = wb_rng_for("other");
    uint64_t first_a = wb_rng_u64(&a);
    cr_assert_eq(first_a, wb_rng_u64(&b));
    cr_assert_neq(first_a, wb_rng_u64(&c), "different streams must give different data");
}

Test(random, seed_from_environment)
{
    setenv("WB_SEED", "0x2a", 1);
    cr_assert_eq(wb_seed(), 42);
    setenv("WB_SEED", "12345", 1);
    cr_assert_eq(wb_seed(), 12345);
    unsetenv("WB_SEED");
}

Test(random, ints_cover_inclusive_range)
{
    wb_rng rng = wb_rng_from_seed(7);
    bool seen[7] = {false};
    for (int i = 0; i < 10000; i++) {
        int v = wb_rng_int(&rng, -3, 3);
        cr_assert(v >= -3 && v <= 3, "value %d outside [-3, 3]", v);
        seen[v + 3] = true;
    }
    for (int v = 0; v < 7; v++)
        cr_assert(seen[v], "value %d never drawn", v - 3);
    cr_assert_eq(wb_rng_int(&rng, INT32_MIN, INT32_MIN), INT32_MIN);
}

Test(random, floats_in_half_open_range_and_not_constant)
{
    wb_rng rng = wb_rng_from_seed(9);
    float values[1000];
    wb_fill_floats(values, 1000, -1.0f, 1.0f, &rng);
    double sum = 0.0;
    for (int i = 0; i < 1000; i++) {
        cr_assert(values[i] >= -1.0f && values[i] < 1.0f);
        sum += values[i];
    }
    cr_assert(fabs(sum / 1000) < 0.1, "mean %g is far from 0", sum / 1000);
    cr_assert_neq(values[0], values[1]);
}

/* The counter-based hash is the splitmix64 stream of wb_rng_from_seed, one
 * element per index, and its ranges are those of wb_rng_*. */
Test(random, hash_is_the_seeds_stream)
{
    wb_rng rng = wb_rng_from_seed(123);
    for (uint64_t i = 0; i < 100; i++)
        cr_assert_eq(wb_hash_u64(123, i), wb_rng_u64(&rng), "element %d of the stream",
                     (int)i);
    for (uint64_t i = 0; i < 10000; i++) {
        int v = wb_hash_int(5, i, -3, 3);
        float f = wb_hash_float(5, i, -1.0f, 1.0f);
        cr_assert(v >= -3 && v <= 3, "hash int %d outside [-3, 3]", v);
        cr_assert(f >= -1.0f && f < 1.0f, "hash float %g outside [-1, 1)", f);
    }
    /* The whole int range: the low 32 bits, shifted by INT32_MIN. */
    cr_assert_eq(wb_hash_int(5, 0, INT32_MIN, INT32_MAX),
                 (int)((uint32_t)wb_hash_u64(5, 0) ^ 0x80000000u));
}

Test(random, sample_positions)
{
    size_t positions[64];
    cr_assert_eq(wb_sample_positions(positions, 64, 10, 1), 10);
    for (size_t i = 0; i < 10; i++)
        cr_assert_eq(positions[i], i, "a small output is checked whole");
    cr_assert_eq(wb_sample_positions(positions, 64, 1000000, 1), 64);
    cr_assert(positions[0] == 0 && positions[63] == 999999, "the first and last are checked");
    for (size_t i = 1; i < 64; i++)
        cr_assert(positions[i - 1] <= positions[i], "positions in increasing order");
    cr_assert_eq(wb_sample_positions(positions, 1, 1000000, 1), 1);
    cr_assert_eq(positions[0], 0, "one position: the first");
    cr_assert_eq(wb_sample_positions(positions, 0, 1000000, 1), 0, "no position asked, none");
    wb_sample_positions(positions, 64, 1000000, 1);
    size_t others[64];
    wb_sample_positions(others, 64, 1000000, 2);
    cr_assert(memcmp(positions, others, sizeof others) != 0, "another seed, other positions");
}

Test(compare, equal_ints_report_nothing)
{
    int a[4] = {1, -2, 3, 4};
    char report[256] = "untouched";
    cr_assert_eq(wb_compare_ints(a, a, 4, report, sizeof report), 0);
    cr_assert_str_empty(report);
}

Test(compare, mismatches_listed_with_index_got_expected)
{
    int got[6] = {0, 9, 2, 3, 7, 5}, want[6] = {0, 1, 2, 3, 4, 5};
    char report[512];
    cr_assert_eq(wb_compare_ints(got, want, 6, report, sizeof report), 2);
    cr_assert(strstr(report, "2 of 6 elements differ"), "report: %s", report);
    cr_assert(strstr(report, "1: got 9, expected 1"), "report: %s", report);
    cr_assert(strstr(report, "4: got 7, expected 4"), "report: %s", report);
}

Test(compare, unwritten_tail_hints_at_grid_size)
{
    int got[8], want[8];
    for (int i = 0; i < 8; i++) {
        want[i] = i;
        got[i] = i < 5 ? i : WB_POISON_INT;
    }
    char report[512];
    cr_assert_eq(wb_compare_ints(got, want, 8, report, sizeof report), 3);
    cr_assert(strstr(report, "never written"), "report: %s", report);
    cr_assert(strstr(report, "from index 5 on"), "report: %s", report);
    cr_assert(strstr(report, "grid large enough"), "report: %s", report);
}

Test(compare, report_never_overflows)
{
    enum { N = 1000 };
    int got[N], want[N];
    for (int i = 0; i < N; i++)
        got[i] = -(want[i] = i + 1000000);
    char report[40];
    cr_assert_eq(wb_compare_ints(got, want, N, report, sizeof report), N);
    cr_assert_lt(strlen(report), sizeof report);
}

Test(compare, relative_error)
{
    float got[3] = {1.0f, 2.0f, 2.0f};
    double want[3] = {1.0, 2.0, 2.0};
    cr_assert_eq(wb_rel_error(got, want, 3), 0.0);
    got[2] = 2.0f + 3.0f;
    cr_assert_float_eq(wb_rel_error(got, want, 3), 1.0, 1e-12);
}

Test(compare, nan_and_inf_never_pass)
{
    float got[2] = {NAN, 1.0f};
    double want[2] = {1.0, 1.0};
    cr_assert(isinf(wb_rel_error(got, want, 2)));
    got[0] = INFINITY;
    cr_assert(isinf(wb_rel_error(got, want, 2)));
    char report[256];
    got[0] = NAN;
    wb_describe_float_mismatch(got, want, 2, 1e-6, report, sizeof report);
    cr_assert(strstr(report, "0: got nan"), "report: %s", report);
}

Test(timing, median_and_rates)
{
    double odd[5] = {5, 1, 4, 2, 3}, even[4] = {4, 1, 3, 2};
    cr_assert_eq(wb_median(odd, 5), 3.0);
    cr_assert_eq(wb_median(even, 4), 2.5);
    cr_assert_float_eq(wb_gbps(2e9, 1000.0), 2.0, 1e-12);
    cr_assert_float_eq(wb_gflops(5e9, 500.0), 10.0, 1e-12);
    cr_assert_float_eq(wb_items_per_s(10.0, 1.0), 1e4, 1e-9);
}

/* ------------------------------------------------ timing on the GPU */

WB_GPU_SUITE(timing_gpu, .timeout = 60);

/* A device-to-device copy of 512 MiB (about 0.4 ms on an H100), on
 * `stream`, not waited for. */
typedef struct {
    void *dst, *src;
    size_t bytes;
    cudaStream_t stream;
    int before, after, last_after;
} copy_job;

static copy_job copy_job_new(cudaStream_t stream)
{
    copy_job c = {NULL, NULL, (size_t)512 << 20, stream, 0, 0, -1};
    CUDA_CHECK(cudaMalloc(&c.dst, c.bytes));
    CUDA_CHECK(cudaMalloc(&c.src, c.bytes));
    CUDA_CHECK(cudaMemset(c.src, 0x5A, c.bytes));
    return c;
}

static void copy_job_free(copy_job *c)
{
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaFree(c->dst));
    CUDA_CHECK(cudaFree(c->src));
    if (c->stream)
        CUDA_CHECK(cudaStreamDestroy(c->stream));
}

static void start_copy(void *context)
{
    copy_job *c = context;
    CUDA_CHECK(cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, c->stream));
}

static void count_before(void *context, int repetition, uint64_t seed)
{
    (void)repetition, (void)seed;
    ((copy_job *)context)->before++;
}

static void count_after(void *context, int repetition)
{
    copy_job *c = context;
    cr_assert_eq(repetition, c->last_after + 1, "after() got repetition %d after %d", repetition,
                 c->last_after);
    cr_assert_eq(c->before, repetition + 1, "before() did not run before repetition %d",
                 repetition);
    c->last_after = repetition;
    c->after++;
}

Test(timing_gpu, work_on_the_timed_stream_is_timed)
{
    copy_job c = copy_job_new(0);
    wb_timing t = wb_time_gpu(start_copy, &c, 1, 5);
    cr_assert(t.median_ms > 0.0 && t.repetitions == 5, "median %g ms", t.median_ms);
    copy_job_free(&c);
}

/* As the grader runs timings (WB_STRICT_TIMING): the timing fails. */
Test(timing_gpu, work_left_running_on_another_stream_fails_when_strict)
{
    setenv("WB_STRICT_TIMING", "1", 1);
    cudaStream_t side;
    CUDA_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    copy_job c = copy_job_new(side);
    wb_expect_error("a copy left running on a non-blocking stream", "ran past the timed stream",
                    wb_time_gpu(start_copy, &c, 1, 5));
    copy_job_free(&c);
}

/* Elsewhere (a GPU that others share): a warning on stderr, and a time. */
Test(timing_gpu, work_left_running_on_another_stream_warns_elsewhere, .init = cr_redirect_stderr)
{
    unsetenv("WB_STRICT_TIMING");
    cudaStream_t side;
    CUDA_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    copy_job c = copy_job_new(side);
    wb_timing t = wb_time_gpu(start_copy, &c, 1, 5);
    copy_job_free(&c);
    fflush(stderr);
    char said[2048] = "";
    size_t got = fread(said, 1, sizeof said - 1, cr_get_redirected_stderr());
    said[got] = '\0';
    cr_assert(t.repetitions == 5 && strstr(said, "warning: wb_time_gpu: the work ran past"),
              "expected a timing and a warning, got %d repetitions and stderr \"%s\"",
              t.repetitions, said);
}

Test(timing_gpu, checks_run_around_every_timed_repetition_only)
{
    copy_job c = copy_job_new(0);
    wb_time_gpu_checked(start_copy, &c, 3, 4, (wb_rep_checks){count_before, count_after});
    cr_assert(c.before == 4 && c.after == 4,
              "before() ran %d times and after() %d times for 4 timed repetitions after 3 "
              "warm-up runs", c.before, c.after);
    copy_job_free(&c);
}

/* A clear of 1 MiB takes microseconds: wb_calls_for_ms makes a run of many
 * of them last the time asked; a copy of 512 MiB lasts 0.1 ms or more on
 * any GPU: alone, it outlasts 0.01 ms. */
typedef struct {
    void *bytes;
} clear_job;

static void clear_mib(void *context)
{
    CUDA_CHECK(cudaMemsetAsync(((clear_job *)context)->bytes, 0, (size_t)1 << 20, 0));
}

Test(timing_gpu, calls_per_run_last_the_time_asked)
{
    clear_job clear;
    CUDA_CHECK(cudaMalloc(&clear.bytes, (size_t)1 << 20));
    int calls = 0;
    wb_timing t = wb_time_gpu_for_ms(clear_mib, &clear, 5, 1.0, &calls);
    double run_ms = t.median_ms * calls;
    cr_assert(calls > 1 && calls <= WB_MAX_CALLS_PER_RUN, "%d calls of a 1 MiB clear", calls);
    /* The calls come from one probe run: allow its noise, a quarter. */
    cr_assert(run_ms >= 0.75 && (run_ms <= 4.0 || calls == 1),
              "runs of %d clears lasted %g ms, asked for 1 ms", calls, run_ms);
    CUDA_CHECK(cudaFree(clear.bytes));

    copy_job c = copy_job_new(0);
    cr_assert_eq(wb_calls_for_ms(start_copy, &c, 0.01), 1, "a 512 MiB copy is not 0.01 ms");
    copy_job_free(&c);
}

/* The GPU's fills are the host's hash, element for element, and a sample
 * fetched from them holds the elements at its positions. */
Test(timing_gpu, fills_on_the_gpu_match_the_host_and_samples_fetch_them)
{
    const size_t n = (1 << 20) + 3;
    float *floats;
    int *ints;
    CUDA_CHECK(cudaMalloc((void **)&floats, sizeof(float) * n));
    CUDA_CHECK(cudaMalloc((void **)&ints, sizeof(int) * n));
    wb_fill_floats_on_gpu(floats, n, -2.0f, 3.0f, 77);
    wb_fill_ints_on_gpu(ints, n, -1000, 1000, 78);
    size_t positions[256];
    float got_floats[256], own_floats[256];
    int got_ints[256];
    size_t count = wb_sample_positions(positions, 256, n, 79);
    wb_fetch_sample(got_floats, own_floats, floats, sizeof(float), positions, count, "floats");
    wb_fetch_sample(got_ints, NULL, ints, sizeof(int), positions, count, "ints");
    for (size_t j = 0; j < count; j++) {
        size_t i = positions[j];
        cr_assert(got_floats[j] == wb_hash_float(77, i, -2.0f, 3.0f) &&
                      own_floats[j] == got_floats[j],
                  "floats[%zu] = %g on the GPU, %g on the host", i, got_floats[j],
                  wb_hash_float(77, i, -2.0f, 3.0f));
        cr_assert_eq(got_ints[j], wb_hash_int(78, i, -1000, 1000), "ints[%zu]", i);
    }
    CUDA_CHECK(cudaFree(floats));
    CUDA_CHECK(cudaFree(ints));
}

Test(table, aligned_columns_and_csv, .init = cr_redirect_stdout)
{
    char dir[512];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/wb-table-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cr_assert_not_null(mkdtemp(dir));
    setenv("WB_RESULTS_DIR", dir, 1);
    wb_table *t = wb_table_new("demo", "Demo table", "stage|time (ms)");
    wb_table_row(t, "%d|%.2f", 0, 12.5);
    wb_table_row(t, "%s|%.2f", "ten", 1.25);
    wb_table_print(t, stdout);
    wb_table_free(t);
    unsetenv("WB_RESULTS_DIR");
    char path[600], csv[256] = {0};
    snprintf(path, sizeof path, "%s/demo.csv", dir);
    FILE *f = fopen(path, "r");
    size_t len = f ? fread(csv, 1, sizeof csv - 1, f) : 0;
    if (f)
        fclose(f);
    csv[len] = '\0';
    remove(path);   /* before any check: a failure leaves nothing behind */
    rmdir(dir);
    cr_assert_stdout_eq_str("\nDemo table\n"
                            "stage | time (ms)\n"
                            "------+----------\n"
                            "0     |     12.50\n"
                            "ten   |      1.25\n");
    cr_assert_not_null(f, "no %s", path);
    cr_assert_str_eq(csv, "\"stage\",\"time (ms)\"\n\"0\",\"12.50\"\n\"ten\",\"1.25\"\n");
}

static jmp_buf after_failure;
static char last_message[512];

static void capture_message(const char *message)
{
    snprintf(last_message, sizeof last_message, "%s", message);
    longjmp(after_failure, 1);
}

Test(errors, cuda_check_names_file_line_call_and_error)
{
    wb_set_error_handler(capture_message);
    if (!setjmp(after_failure)) {
        CUDA_CHECK(cudaMemcpy(NULL, NULL, 1, (enum cudaMemcpyKind)99));
        cr_assert_fail("CUDA_CHECK returned after a failing call");
    }
    wb_set_error_handler(NULL);
    cr_assert(strstr(last_message, "test_common.c:"), "message: %s", last_message);
    cr_assert(strstr(last_message, "cudaMemcpy(NULL, NULL, 1"), "message: %s", last_message);
    cr_assert(strstr(last_message, "failed: cuda"), "message: %s", last_message);
}

Test(errors, default_handler_exits_non_zero, .exit_code = 1)
{
    wb_set_error_handler(NULL);
    wb_fail("planned failure");
}

Test(device, usable_gives_a_reason_either_way)
{
    char reason[256] = "";
    bool usable = wb_gpu_usable(reason, sizeof reason);
    cr_assert_str_neq(reason, "", "wb_gpu_usable(%d) gave no reason", usable);
}

/* What every benchmark prints beside its tables (common/bench.c). */
Test(bench, working_set_against_l2)
{
    char text[160];
    wb_l2_share_text(text, sizeof text, 768.0 * 1048576, 60.0 * 1048576);
    cr_assert_str_eq(text, "768 MiB = 12.8x L2 (60.0 MiB)");
    wb_l2_share_text(text, sizeof text, 16.0 * 1048576, 50.0 * 1048576);
    cr_assert_str_eq(text, "16 MiB = 0.3x L2 (50.0 MiB), fits in the L2: repeated runs find "
                           "it there, not in DRAM");
    wb_l2_share_text(text, 12, 16.0 * 1048576, 50.0 * 1048576);   /* cut, never overrun */
    cr_assert_eq(strlen(text), 11);
}

/* Default sizes hold the L2 WB_L2_TIMES times, in whole granules, within
 * half of the free memory, and never fall below the usual size. */
Test(bench, default_size_against_l2_and_memory)
{
    const double MiB = 1048576.0, GiB = 1024.0 * MiB;
    char text[512];
    size_t usual = (size_t)1 << 26, granule = (size_t)1 << 20;
    /* An H200: 2^26 ints are 4.3x its 60 MiB L2. */
    cr_assert_eq(wb_default_size_text(text, sizeof text, "ints", usual, granule, 4.0, 4.0,
                                      60.0 * MiB, 100.0 * GiB), usual);
    cr_assert_str_eq(text, "ints: 2^26, 256 MiB = 4.3x L2 (60.0 MiB): kept, 4x L2 or more");
    /* An L2 of 126 MiB (a B200): raised to 504 MiB, 126 granules. */
    cr_assert_eq(wb_default_size_text(text, sizeof text, "ints", usual, granule, 4.0, 4.0,
                                      126.0 * MiB, 100.0 * GiB), 126 * granule);
    cr_assert_str_eq(text, "ints: 2^26, 256 MiB = 2.0x L2 (126.0 MiB): raised to 132120576 "
                           "(504 MiB = 4.0x L2)");
    /* 800 MiB free: raised only to the 400 MiB that half of it holds. */
    cr_assert_eq(wb_default_size_text(text, sizeof text, "ints", usual, granule, 4.0, 4.0,
                                      126.0 * MiB, 800.0 * MiB), 100 * granule);
    cr_assert(strstr(text, "raised to 104857600 (400 MiB = 3.2x L2), as far as half of the "
                           "free device memory holds"), "%s", text);
    /* 200 MiB free: kept (the lab's own size), said why. */
    cr_assert_eq(wb_default_size_text(text, sizeof text, "ints", usual, granule, 4.0, 4.0,
                                      126.0 * MiB, 200.0 * MiB), usual);
    cr_assert(strstr(text, "kept, as half of the free device memory (0.2 GiB) holds no more"),
              "%s", text);
}

Test(bench, launch_line_with_and_without_a_reason, .init = cr_redirect_stdout)
{
    wb_bench_launch("blocks of %d threads|best of the sweep on the %s", 256, "H200");
    wb_bench_launch("one block per SM");
    fflush(stdout);
    cr_assert_stdout_eq_str("launch: blocks of 256 threads (why: best of the sweep on the H200)\n"
                            "launch: one block per SM\n");
}

Test(bench, host_cpu_has_a_name)
{
    char name[256] = "";
    wb_host_cpu_name(name, sizeof name);
    cr_assert_str_neq(name, "", "wb_host_cpu_name gave nothing");
    cr_assert_eq(strchr(name, '\n'), NULL, "the name keeps its line's newline: \"%s\"", name);
}
