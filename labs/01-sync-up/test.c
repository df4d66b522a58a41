/*
 * Lab 01 tests. Printing runs are captured (stdout sent to a temporary file
 * around the kernel) and compared line by line; every case runs several
 * times, because an ordering bug shows up only now and then. Recording runs
 * check record[n] == n % threads exactly, with the record poisoned first.
 * A version that hangs is stopped by the suite's timeout and fails.
 */
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "handoff.h"
#include "lab.h"
#include "wb_test.h"

WB_GPU_SUITE(sync_up, .timeout = 30);

enum { RUNS = 3 };

typedef enum { BARRIER, SPIN, GRID } stage;

static const char *stage_name[] = {"ordered_barrier", "ordered_spin", "ordered_grid"};

static void launch(stage s, int *record, int count, int blocks, int threads)
{
    if (s == BARRIER)
        ordered_barrier(record, count, threads);
    else if (s == SPIN)
        ordered_spin(record, count, threads);
    else
        ordered_grid(record, count, blocks, threads);
}

/* Runs one printing launch with stdout (file descriptor 1, where device
 * printf ends up) sent to a temporary file, and returns what was printed. */
static char *printed_by(stage s, int count, int blocks, int threads)
{
    fflush(stdout);
    int saved = dup(1);
    FILE *capture = tmpfile();
    cr_assert(saved >= 0 && capture, "cannot capture stdout");
    dup2(fileno(capture), 1);
    launch(s, NULL, count, blocks, threads);
    cudaError_t status = cudaDeviceSynchronize();
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    CUDA_CHECK(status);

    long size = ftell(capture);
    if (size < 0)
        size = lseek(fileno(capture), 0, SEEK_END);
    char *text = malloc((size_t)size + 1);
    cr_assert(text, "out of host memory");
    rewind(capture);
    size_t got = fread(text, 1, (size_t)size, capture);
    text[got] = '\0';
    fclose(capture);
    return text;
}

/* The lines expected: "t: n" for n = 0 .. count-1, t = n % (blocks x threads). */
static void check_printing(stage s, int count, int blocks, int threads)
{
    int everyone = blocks * threads;
    for (int run = 1; run <= RUNS; run++) {
        char *text = printed_by(s, count, blocks, threads);
        char *line = text;
        int n = 0;
        for (; *line && n < count; n++) {
            char *end = strchr(line, '\n');
            size_t len = end ? (size_t)(end - line) : strlen(line);
            char expected[32];
            int elen = snprintf(expected, sizeof expected, "%d: %d", n % everyone, n);
            cr_assert(len == (size_t)elen && memcmp(line, expected, len) == 0,
                      "%s(count = %d, blocks = %d, threads = %d), run %d of %d: line %d "
                      "is \"%.*s\", expected \"%s\" (a turn taken out of order, twice, "
                      "or not at all)",
                      stage_name[s], count, blocks, threads, run, RUNS, n + 1, (int)len, line,
                      expected);
            line = end ? end + 1 : line + len;
        }
        cr_assert(n == count, "%s(count = %d, blocks = %d, threads = %d), run %d of %d: only "
                  "%d lines printed, expected %d (the turn of number %d never came)",
                  stage_name[s], count, blocks, threads, run, RUNS, n, count, n);
        cr_assert(*line == '\0', "%s(count = %d, blocks = %d, threads = %d), run %d of %d: "
                  "extra output after the %d expected lines: \"%.40s\"",
                  stage_name[s], count, blocks, threads, run, RUNS, count, line);
        free(text);
    }
}

static void check_recording(stage s, int count, int blocks, int threads)
{
    int everyone = blocks * threads;
    int *record, *got = malloc(sizeof(int) * (size_t)count + 1);
    int *expected = malloc(sizeof(int) * (size_t)count + 1);
    cr_assert(got && expected, "out of host memory");
    CUDA_CHECK(cudaMalloc((void **)&record, sizeof(int) * (size_t)count + 1));
    for (int n = 0; n < count; n++)
        expected[n] = n % everyone;
    char what[128];
    for (int run = 1; run <= RUNS; run++) {
        wb_poison_ints(record, (size_t)count);
        launch(s, record, count, blocks, threads);
        CUDA_CHECK(cudaMemcpy(got, record, sizeof(int) * (size_t)count,
                              cudaMemcpyDeviceToHost));
        snprintf(what, sizeof what, "%s(record, count = %d, blocks = %d, threads = %d), run %d",
                 stage_name[s], count, blocks, threads, run);
        wb_assert_ints_equal(got, expected, (size_t)count, what);
    }
    CUDA_CHECK(cudaFree(record));
    free(got);
    free(expected);
}

static const int counts[] = {0, 1, 10, 1000};

/* Around a warp, around a block's limit, and the lecture's 3. */
static int block_threads[] = {1, 2, 3, 31, 32, 33, 64, 1000, 1024};

static void check_counts(stage s, int blocks, int threads)
{
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        check_printing(s, counts[i], blocks, threads);
}

ParameterizedTestParameters(sync_up, stage0_printing)
{
    return cr_make_param_array(int, block_threads, sizeof block_threads / sizeof(int));
}

ParameterizedTest(int *threads, sync_up, stage0_printing,
                  .description = "one block prints 0 .. count-1 in order (barrier)")
{
    check_counts(BARRIER, 1, *threads);
}

ParameterizedTestParameters(sync_up, stage1_printing)
{
    return cr_make_param_array(int, block_threads, sizeof block_threads / sizeof(int));
}

ParameterizedTest(int *threads, sync_up, stage1_printing,
                  .description = "one block prints 0 .. count-1 in order (spin)")
{
    check_counts(SPIN, 1, *threads);
}

typedef struct {
    int blocks, threads;
} grid_shape;

ParameterizedTestParameters(sync_up, stage2_printing)
{
    /* One thread per block (every turn crosses blocks), warps split across
     * blocks, threads with several turns (4 x 3 < 1000), and many blocks. */
    static grid_shape shapes[] = {{2, 1}, {4, 3}, {5, 32}, {16, 33}, {132, 64}, {264, 1024}};
    return cr_make_param_array(grid_shape, shapes, sizeof shapes / sizeof shapes[0]);
}

ParameterizedTest(grid_shape *shape, sync_up, stage2_printing,
                  .description = "blocks x threads print 0 .. count-1 in grid order")
{
    int most = ordered_grid_max_blocks(shape->threads);
    check_counts(GRID, shape->blocks < most ? shape->blocks : most, shape->threads);
}

Test(sync_up, stage0_recording, .description = "record[n] == n % threads")
{
    check_recording(BARRIER, 100000, 1, 1024);
    check_recording(BARRIER, 4099, 1, 33);
}

Test(sync_up, stage1_recording, .description = "record[n] == n % threads")
{
    check_recording(SPIN, 100000, 1, 1024);
    check_recording(SPIN, 4099, 1, 33);
}

Test(sync_up, stage2_recording, .description = "every resident block takes its turns")
{
    int most = ordered_grid_max_blocks(256);
    cr_assert(most >= wb_device_info().sm_count,
              "ordered_grid_max_blocks(256) = %d, but every one of the %d SMs holds at "
              "least one block of 256 threads", most, wb_device_info().sm_count);
    check_recording(GRID, most * 256 + 17, most, 256);
    check_recording(GRID, 5000, 7, 1);
}

/* Argument errors go through wb_fail. expect_error() calls an entry point
 * with this handler in place, which jumps back with the message, and fails
 * the test when no error came or it does not mention `about`. */
static jmp_buf caught;
static char error_message[512];

static void catch_error(const char *message)
{
    snprintf(error_message, sizeof error_message, "%s", message);
    longjmp(caught, 1);
}

static void fail_test(const char *message)
{
    cr_assert_fail("%s", message);
}

#define expect_error(call, about)                                                        \
    do {                                                                                 \
        error_message[0] = '\0';                                                        \
        wb_set_error_handler(catch_error);                                              \
        if (setjmp(caught) == 0) {                                                       \
            call;                                                                        \
            CUDA_CHECK(cudaDeviceSynchronize());                                         \
        }                                                                                \
        wb_set_error_handler(fail_test);                                                 \
        cr_assert(strstr(error_message, (about)),                                        \
                  "%s should fail with a message about %s; got %s%s%s", #call, (about),  \
                  error_message[0] ? "\"" : "no error", error_message,                  \
                  error_message[0] ? "\"" : "");                                        \
    } while (0)

Test(sync_up, stage2_refuses_too_many_blocks,
     .description = "more blocks than can be resident is a clear error, not a hang")
{
    int most = ordered_grid_max_blocks(128);
    cr_assert(most >= 1, "ordered_grid_max_blocks(128) = %d: at least one block fits", most);
    expect_error(ordered_grid(NULL, 10, most + 1, 128), "resident");
}

Test(sync_up, stage0_rejects_bad_threads, .description = "1025 threads is a clear error")
{
    expect_error(ordered_barrier(NULL, 10, 1025), "threads <= 1024");
}

Test(sync_up, timing_handoff, .description = "time per hand-off (short run)", .timeout = 60)
{
    sync_up_handoff_table(10000, 3);
}
