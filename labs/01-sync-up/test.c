/*
 * Lab 01 tests. Printing runs are captured (stdout sent to a temporary file
 * around the kernel) and compared line by line: only they show the order in
 * which turns were taken. Recording runs check record[n] == n % threads
 * exactly, with the record poisoned and guarded first: they show a turn
 * never taken, taken by the wrong thread, or taken past count. Every case
 * runs several times, because an ordering bug shows up only now and then,
 * and the one-block stages start from a stale counter (leave_counter_at_32).
 * A version that hangs is stopped by the suite's timeout and fails. Every
 * value read back goes through an observation (see wb_test.h).
 */
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

/* Shared memory is not cleared between launches: a thread that reads the
 * block's counter before thread 0 has set it reads what the last launch of
 * the kernel left there, the count of that launch. This run leaves 32 there,
 * a number that belongs to thread 32, in the block's second warp: where the
 * barrier after the counter is set is missing, that warp can take turn 32
 * before turn 0, and the printing check sees it. (Only when the block lands
 * where the last one ran and its warp reads first; racecheck sees the
 * missing barrier every time.) */
static void leave_counter_at_32(stage s, int threads)
{
    if (s == GRID || threads <= 32)
        return;
    int *scratch;
    CUDA_CHECK(cudaMalloc((void **)&scratch, 32 * sizeof(int)));
    launch(s, scratch, 32, 1, threads);
    CUDA_CHECK(cudaFree(scratch));
}

/* Runs one printing launch with stdout (file descriptor 1, where device
 * printf ends up) sent to a temporary file, and returns what was printed,
 * observed. (cr_redirect_stdout captures a whole test at once; this captures
 * each launch, however long its output.) */
static char *printed_by(stage s, int count, int blocks, int threads, const char *what)
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

    long own = lseek(fileno(capture), 0, SEEK_END);
    cr_assert(own >= 0, "cannot read the captured output");
    char label[160];
    snprintf(label, sizeof label, "%s: bytes printed", what);
    long long size = wb_observe_i64(label, own);
    char *text = malloc((size_t)(size > own ? size : own) + 1);
    cr_assert(text, "out of host memory");
    rewind(capture);
    size_t got = fread(text, 1, (size_t)own, capture);
    fclose(capture);
    cr_assert(got == (size_t)own, "cannot read the captured output");
    snprintf(label, sizeof label, "%s: printed", what);
    wb_observe(label, text, (size_t)size);
    text[size] = '\0';
    return text;
}

/* The lines expected: "t: n" for n = 0 .. count-1, t = n % (blocks x threads). */
static void check_printing(stage s, int count, int blocks, int threads)
{
    int everyone = blocks * threads;
    for (int run = 1; run <= RUNS; run++) {
        char what[128];
        snprintf(what, sizeof what, "%s(count = %d, blocks = %d, threads = %d), run %d of %d",
                 stage_name[s], count, blocks, threads, run, RUNS);
        leave_counter_at_32(s, threads);
        char *text = printed_by(s, count, blocks, threads, what);
        char *line = text;
        int n = 0;
        for (; *line && n < count; n++) {
            char *end = strchr(line, '\n');
            size_t len = end ? (size_t)(end - line) : strlen(line);
            char expected[32];
            int elen = snprintf(expected, sizeof expected, "%d: %d", n % everyone, n);
            cr_assert(len == (size_t)elen && memcmp(line, expected, len) == 0,
                      "%s: line %d is \"%.*s\", expected \"%s\": a turn taken out of order, "
                      "twice, or not at all (a missing __syncthreads, a counter that is not "
                      "volatile, a counter read before it was set, a plain increment of the "
                      "grid's counter, or an index without blockIdx) " WB_SEED_HINT,
                      what, n + 1, (int)len, line, expected, wb_seed());
            line = end ? end + 1 : line + len;
        }
        cr_assert(n == count, "%s: only %d lines printed, expected %d (the turn of number %d "
                  "never came) " WB_SEED_HINT, what, n, count, n, wb_seed());
        cr_assert(*line == '\0', "%s: extra output after the %d expected lines: \"%.40s\" (a "
                  "bound such as n <= count takes one turn too many) " WB_SEED_HINT,
                  what, count, line, wb_seed());
        free(text);
    }
}

static void check_recording(stage s, int count, int blocks, int threads)
{
    int everyone = blocks * threads;
    size_t bytes = sizeof(int) * (size_t)count;
    int *got = malloc(bytes), *expected = malloc(bytes);
    cr_assert(got && expected, "out of host memory");
    /* Guard zones: a turn taken past count writes where the check sees it. */
    int *record = wb_guarded_malloc(bytes);
    for (int n = 0; n < count; n++)
        expected[n] = n % everyone;
    for (int run = 1; run <= RUNS; run++) {
        char what[128];
        snprintf(what, sizeof what, "%s(record, count = %d, blocks = %d, threads = %d), run %d",
                 stage_name[s], count, blocks, threads, run);
        leave_counter_at_32(s, threads);
        wb_poison_ints(record, (size_t)count);
        launch(s, record, count, blocks, threads);
        wb_fetch(got, record, bytes, what);
        char report[1024];
        size_t bad = wb_compare_ints(got, expected, (size_t)count, report, sizeof report);
        cr_assert(bad == 0, "%s: %s; a poisoned entry is a turn never taken (a thread that "
                  "left the loop early or never saw its number come), a wrong thread is a "
                  "turn taken by another thread (an index without blockIdx, or a stride other "
                  "than all the threads of the grid) " WB_SEED_HINT,
                  what, report, wb_seed());
        wb_guarded_check(record, what);
    }
    wb_guarded_free(record);
    free(got);
    free(expected);
}

/* The student's answer, observed: it decides the grids that stage 2 runs. */
static int max_blocks(int threads)
{
    char what[64];
    snprintf(what, sizeof what, "ordered_grid_max_blocks(%d)", threads);
    return wb_observe_int(what, ordered_grid_max_blocks(threads));
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
    int most = max_blocks(shape->threads);
    check_counts(GRID, shape->blocks < most ? shape->blocks : most, shape->threads);
}

/* The recording tests take well under a second: a short timeout ends a
 * version that hangs sooner. Under compute-sanitizer each turn costs a
 * hundred times more (racecheck most): two rounds of every thread's turn,
 * and a few more, show the tool every hand-off the long run repeats. */
static int turns(int count, int everyone)
{
    int enough = 2 * everyone + 5;
    return wb_under_sanitizer() && count > enough ? enough : count;
}

Test(sync_up, stage0_recording, .timeout = 10, .description = "record[n] == n % threads")
{
    check_recording(BARRIER, turns(100000, 1024), 1, 1024);
    check_recording(BARRIER, turns(4099, 33), 1, 33);
}

Test(sync_up, stage1_recording, .timeout = 10, .description = "record[n] == n % threads")
{
    check_recording(SPIN, turns(100000, 1024), 1, 1024);
    check_recording(SPIN, turns(4099, 33), 1, 33);
}

Test(sync_up, stage2_recording, .timeout = 10,
     .description = "every resident block takes its turns")
{
    wb_device device = wb_device_info();
    int most = max_blocks(256);
    /* An SM holds at least one block of 256 threads, and at most its
     * resident-thread limit's worth (2048 threads on the H100). */
    int high = device.sm_count * (device.max_threads_per_sm / 256);
    cr_assert(most >= device.sm_count && most <= high,
              "ordered_grid_max_blocks(256) = %d, but the %d SMs hold between %d and %d "
              "blocks of 256 threads (blocks per SM from the occupancy API, times the SMs)",
              most, device.sm_count, device.sm_count, high);
    /* The small grid first: an index without blockIdx fails it at once,
     * where the large one would hang. */
    check_recording(GRID, 5000, 7, 1);
    check_recording(GRID, turns(most * 256 + 17, 4 * 256), most, 256);
}

Test(sync_up, stage2_refuses_too_many_blocks,
     .description = "more blocks than can be resident is a clear error, not a hang")
{
    int most = max_blocks(128);
    cr_assert(most >= 1, "ordered_grid_max_blocks(128) = %d: at least one block fits", most);
    wb_expect_error("ordered_grid(blocks = most + 1)", "resident",
                    ordered_grid(NULL, 10, most + 1, 128));
}

/* Given code (check_arguments): it passes on the skeleton and scores
 * nothing; it stays as a check that the given code was left alone. */
Test(sync_up, stage0_rejects_bad_threads, .description = "1025 threads is a clear error")
{
    wb_expect_error("ordered_barrier(threads = 1025)", "threads <= 1024",
                    ordered_barrier(NULL, 10, 1025));
}

/* Given code (check_arguments, and ordered_grid's residency check): each
 * bound refused one step outside it, and accepted on it. The accepted calls
 * have count = 0 (no turn to take, nothing printed); a refusal names the
 * argument and its bound. */
Test(sync_up, given_refuses_bad_arguments,
     .description = "count, blocks and threads refused just outside their bounds, accepted on them")
{
    wb_expect_error("ordered_barrier(count = -1): count must be >= 0", "count >= 0",
                    ordered_barrier(NULL, -1, 32));
    wb_expect_error("ordered_grid(blocks = 0): blocks must be >= 1", "blocks >= 1",
                    ordered_grid(NULL, 0, 0, 32));
    wb_expect_error("ordered_barrier(threads = 0): threads must be >= 1", "1 <= threads",
                    ordered_barrier(NULL, 0, 0));
    wb_expect_error("ordered_spin(threads = 1025): threads must be <= 1024", "threads <= 1024",
                    ordered_spin(NULL, 0, 1025));
    wb_expect_error("ordered_grid_max_blocks(threads = 0): threads must be >= 1", "1 <= threads",
                    (void)ordered_grid_max_blocks(0));
    wb_expect_error("ordered_grid_max_blocks(threads = 1025): threads must be <= 1024",
                    "threads <= 1024", (void)ordered_grid_max_blocks(1025));
    /* On the bounds: count = 0, blocks = 1, threads = 1 and 1024, and as many
     * blocks as can be resident; these must run (an error fails the test). */
    ordered_barrier(NULL, 0, 1);
    ordered_spin(NULL, 0, 1024);
    ordered_grid(NULL, 0, 1, 1);
    int most = max_blocks(1024);
    cr_assert(most >= 1, "ordered_grid_max_blocks(1024) = %d: at least one block fits", most);
    ordered_grid(NULL, 0, most, 1024);
    CUDA_CHECK(cudaDeviceSynchronize());
    wb_expect_error("ordered_grid(blocks = most + 1, threads = 1024): blocks must be <= most",
                    "resident", ordered_grid(NULL, 0, most + 1, 1024));
}

/* What no run on one GPU shows reliably: a barrier of stage 0 left out (the
 * race is real, the wrong value rarely read), a fence, volatile or atomic
 * of the hand-off dropped or made block-wide (handouts/01-sync-up.md,
 * "Classic mistakes"). These tests read kernels.cu (wb_test.h, "source
 * rules") and need no GPU. */
WB_SOURCE_SUITE(sync_up_source);

WB_SOURCE_RULES_TEST(sync_up_source, stage0_barriers,
    {"ordered_stage0", .barriers = 3,
     .why = "three barriers: after thread 0 sets the counter, after every thread has read it "
            "(before the owner writes the next value), and after the owner's write (before the "
            "next read)"})

WB_SOURCE_RULES_TEST(sync_up_source, stage1_memory_order,
    {"ordered_stage1", .orderings = 1, .fresh_accesses = 1, .barriers = 1, .scope = WB_BLOCK_SCOPE,
     .why = "a volatile counter (or the compiler may spin on a register copy), a barrier after "
            "thread 0 sets it, and a fence (__threadfence_block or a release store) between the "
            "turn's output and the counter's next value"})

WB_SOURCE_RULES_TEST(sync_up_source, stage2_memory_order,
    {"ordered_stage2", .orderings = 1, .fresh_accesses = 2,
     .why = "every SM must see a turn's output before the counter moves: a device-wide fence "
            "(__threadfence, not _block) or a release; the spin reads the counter fresh "
            "(volatile or an atomic load) and the owner moves it with an atomic"})

/* The lab's performance test: the graded time is every shape of the
 * hand-off table run once (handoff.c). */
Test(sync_up, timing_handoff, .description = "time per hand-off (short run)", .timeout = 60)
{
    static const handoff_observers observers = {wb_observe, wb_observe_timing};
    sync_up_handoff_observed(10000, 3, &observers);
}
