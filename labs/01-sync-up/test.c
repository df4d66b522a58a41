/*
 * Lab 01 tests. Stages 0-2: printing runs are captured (stdout sent to a
 * temporary file around the kernel) and compared line by line: only they
 * show the order in which turns were taken. Recording runs check record[n]
 * == n % threads exactly, with the record poisoned and guarded first: they
 * show a turn never taken, taken by the wrong thread, or taken past count.
 * Every case runs several times, because an ordering bug shows up only now
 * and then, and the one-block stages start from a stale counter
 * (leave_counter_at_32). Stage 3 checks the order of the chain's steps
 * through the tickets they draw, and the values they pass along; stage 4
 * the maximum against the CPU's on fresh inputs, over many grid sizes and
 * launches back to back; stage 5 the worklist as a multiset, its length and
 * what every element keeps, against a CPU model. A version that hangs is
 * stopped by the suite's timeout and fails. Every value read back goes
 * through an observation (see wb_test.h).
 */
#include <limits.h>
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

/* What the threads of a stage's kernel wait for, named when it never ends
 * (wb_wait_for_gpu). */
static const char *const stage_waits[] = {
    "its threads wait at a __syncthreads() that some threads of the block never reach: every "
    "thread runs the same turns of the loop, and each barrier stands outside any if",
    "its threads wait for their turn, which never comes: the spin reads the counter fresh "
    "each time (volatile, or a plain load is read once into a register), the thread whose "
    "turn it is moves the counter on after its write, and a thread's next turn is its last + "
    "blockDim.x",
    "its threads wait for their turn, which never comes: the spin reads the grid's counter "
    "fresh each time (volatile or an atomic load), the thread whose turn it is moves it on "
    "with an atomic after a __threadfence(), and a thread's next turn is its last + "
    "gridDim.x * blockDim.x (its first: blockIdx.x * blockDim.x + threadIdx.x)",
};

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
    char what[96];
    snprintf(what, sizeof what, "%s(count = 32, threads = %d)", stage_name[s], threads);
    wb_wait_for_gpu(what, stage_waits[s]);
    CUDA_CHECK(cudaFree(scratch));
}

/* Runs call(context), a launch, with stdout (file descriptor 1, where
 * device printf ends up) sent to a temporary file, waits for the GPU, and
 * returns what was printed, observed. (cr_redirect_stdout captures a whole
 * test at once; this captures each launch, however long its output.) */
static char *printed_during(void (*call)(void *), void *context, const char *what,
                            const char *waits_for)
{
    fflush(stdout);
    int saved = dup(1);
    FILE *capture = tmpfile();
    cr_assert(saved >= 0 && capture, "cannot capture stdout");
    dup2(fileno(capture), 1);
    call(context);
    bool ended = wb_gpu_done_in_time();
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    if (!ended)
        wb_fail_hung(what, waits_for);   // with stdout back

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

typedef struct {
    stage s;
    int count, blocks, threads;
} printing_launch;

static void launch_printing(void *context)
{
    printing_launch *p = context;
    launch(p->s, NULL, p->count, p->blocks, p->threads);
}

static char *printed_by(stage s, int count, int blocks, int threads, const char *what)
{
    printing_launch p = {s, count, blocks, threads};
    return printed_during(launch_printing, &p, what, stage_waits[s]);
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
        wb_wait_for_gpu(what, stage_waits[s]);
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

/* The student's answer, observed. It never sizes the grids that check the
 * kernels (a kernel right only for the grids its own answer allows would
 * pass them): those the test sizes itself (resident_for_sure). */
static int max_blocks(int threads)
{
    char what[64];
    snprintf(what, sizeof what, "ordered_grid_max_blocks(%d)", threads);
    return wb_observe_int(what, ordered_grid_max_blocks(threads));
}

/* The answer, checked as a claim of its own: an SM holds at least one block
 * of `threads` threads, and at most its resident-thread limit's worth
 * (2048 threads on the H100). */
static int checked_max_blocks(int threads)
{
    wb_device device = wb_device_info();
    int most = max_blocks(threads);
    int high = device.sm_count * (device.max_threads_per_sm / threads);
    cr_assert(most >= device.sm_count && most <= high,
              "ordered_grid_max_blocks(%d) = %d, but the %d SMs hold between %d and %d "
              "blocks of %d threads (blocks per SM from the occupancy API, times the SMs)",
              threads, most, device.sm_count, device.sm_count, high, threads);
    return most;
}

/* The most of `blocks` that the test knows are resident at once, whatever
 * the kernel: one per SM (a block that launches at all fits on every SM). */
static int resident_for_sure(int blocks)
{
    int sms = wb_device_info().sm_count;
    return blocks < sms ? blocks : sms;
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
    check_counts(GRID, resident_for_sure(shape->blocks), shape->threads);
    checked_max_blocks(shape->threads);
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
    /* The small grid first: an index without blockIdx fails it at once,
     * where the large one would hang. Then one block on every SM (the
     * test's own size), then as many blocks as the answer says fit: that
     * many must take their turns too. */
    check_recording(GRID, 5000, resident_for_sure(7), 1);
    int sure = resident_for_sure(INT_MAX);
    check_recording(GRID, turns(sure * 256 + 17, 4 * 256), sure, 256);
    int most = checked_max_blocks(256);
    check_recording(GRID, turns(most * 256 + 17, 4 * 256), most, 256);
}

Test(sync_up, stage2_refuses_too_many_blocks,
     .description = "more blocks than can be resident is a clear error, not a hang")
{
    int most = checked_max_blocks(128);
    wb_expect_error("ordered_grid(blocks = most + 1)", "resident",
                    ordered_grid(NULL, 10, most + 1, 128));
}

/* ---------------------------------------------------------------- stage 3 */

/* What a right chain leaves: down is the running sum from the left, up the
 * running sum from the right, and the tickets go 0 .. n-1 down the chain and
 * n .. 2n-1 back up it (lab.h). */
static void chain_model(const int *input, int n, int *down, int *up, int *order)
{
    for (int k = 0; k < n; k++)
        down[k] = (k > 0 ? down[k - 1] : 0) + input[k];
    for (int k = n - 1; k >= 0; k--)
        up[k] = (k + 1 < n ? up[k + 1] : 0) + input[k];
    for (int k = 0; k < n; k++) {
        order[k] = k;
        order[n + k] = 2 * n - 1 - k;
    }
}

static void assert_chain_part(const int *got, const int *expected, int n, const char *what,
                              const char *part, const char *hint)
{
    char report[1024];
    size_t bad = wb_compare_ints(got, expected, (size_t)n, report, sizeof report);
    cr_assert(bad == 0, "%s: %s: %s;\n  %s " WB_SEED_HINT, what, part, report, hint, wb_seed());
}

/* Whether the 2n tickets show each participant stepping up right after its
 * own step down (order[k] = 2k, order[n + k] = 2k + 1): what a chain leaves
 * whose participants step up before they ask the next one. */
static bool up_right_after_down(const int *order, int n)
{
    bool alternating = n > 1;
    for (int k = 0; k < n && alternating; k++)
        alternating = order[k] == 2 * k && order[n + k] == 2 * k + 1;
    return alternating;
}

/* Whether some participant k > 0 read down[k - 1] before anything was written
 * there: its down[k] is the poison plus its own input (summed in unsigned, as
 * the GPU's int addition wraps). The tickets cannot show it: a warp's lanes
 * read together, then draw their tickets in lane order, waiting or not. */
static bool read_before_written(const int *down, const int *input, int n)
{
    for (int k = 1; k < n; k++)
        if ((unsigned)down[k] == (unsigned)WB_POISON_INT + (unsigned)input[k])
            return true;
    return false;
}

/* A chain of blocks x threads participants, RUNS times on fresh inputs. The
 * tickets are checked first: they show the order of the steps exactly; the
 * values then show a step that ran in its turn but read its neighbour's
 * value before that was visible. */
static void check_chain(int blocks, int threads, wb_rng *rng)
{
    int n = blocks * threads;
    size_t bytes = sizeof(int) * (size_t)n;
    /* down, up and the 2n tickets, one after another */
    int *input = malloc(bytes), *expected = malloc(4 * bytes), *got = malloc(4 * bytes);
    cr_assert(input && expected && got, "out of host memory");
    int *d_input, *d_down = wb_guarded_malloc(bytes), *d_up = wb_guarded_malloc(bytes),
        *d_order = wb_guarded_malloc(2 * bytes);
    CUDA_CHECK(cudaMalloc((void **)&d_input, bytes));
    for (int run = 1; run <= RUNS; run++) {
        char what[160], label[200];
        snprintf(what, sizeof what, "handshake_chain(blocks = %d, threads = %d: %d participants), "
                 "run %d", blocks, threads, n, run);
        wb_fill_ints(input, (size_t)n, -1000, 1000, rng);
        chain_model(input, n, expected, expected + n, expected + 2 * n);
        CUDA_CHECK(cudaMemcpy(d_input, input, bytes, cudaMemcpyHostToDevice));
        wb_poison_ints(d_down, (size_t)n);
        wb_poison_ints(d_up, (size_t)n);
        wb_poison_ints(d_order, 2 * (size_t)n);
        handshake_chain(d_input, d_down, d_up, d_order, blocks, threads);
        wb_wait_for_gpu(what, "a participant spins forever: in handshake_wait for k - 1's "
                        "request (the flag at 1), or in handshake_ask for k + 1's answer (the "
                        "flag back at 0). The request is stored before the asker spins, k waits "
                        "for it before step_down and answers after step_up, and every spin "
                        "reads the flag fresh (an atomic load, or volatile)");
        snprintf(label, sizeof label, "%s: order", what);
        wb_fetch(got + 2 * n, d_order, 2 * bytes, label);
        snprintf(label, sizeof label, "%s: down", what);
        wb_fetch(got, d_down, bytes, label);
        snprintf(label, sizeof label, "%s: up", what);
        wb_fetch(got + n, d_up, bytes, label);
        assert_chain_part(got + 2 * n, expected + 2 * n, n, what,
            "order[k], the ticket of participant k's step down",
            up_right_after_down(got + 2 * n, n) ?
            "the tickets go down, up, down, up: each participant stepped up right after "
            "stepping down, before asking k + 1 or without waiting for its answer "
            "(handshake_ask comes between step_down and step_up, and spins until the flag "
            "is 0 again)" :
            "participant k steps down only after k - 1 has stepped down and asked: "
            "handshake_wait spins until the flag is 1 (a poisoned entry is a step never "
            "taken: does every participant run, with k from blockIdx and threadIdx?)");
        assert_chain_part(got + 3 * n, expected + 3 * n, n, what,
            "order[n + k], the ticket of participant k's step up",
            "participant k steps up only after k + 1 has stepped up and answered: "
            "handshake_ask spins until the flag is 0 again, and the answer (the flag set to "
            "0) comes after step_up, not before it");
        assert_chain_part(got, expected, n, what, "down",
            read_before_written(got, input, n) ?
            "the tickets came in order, yet participant k read down[k - 1] while it still "
            "held the poison put there before the launch: k stepped down before k - 1 had "
            "written it. Did k wait for the request at all (handshake_wait spins until the "
            "flag is 1, before step_down)? If it did, the request must be a release (or come "
            "after a __threadfence()) and the wait for it an acquire (or be followed by one)" :
            "the steps came in order, so participant k read down[k - 1] before k - 1's "
            "write of it was visible: the request must be a release (or come after a "
            "__threadfence()) and the wait for it an acquire (or be followed by one)");
        assert_chain_part(got + n, expected + n, n, what, "up",
            "the steps came in order, so participant k read up[k + 1] before k + 1's write "
            "of it was visible: the answer must be a release (or come after a "
            "__threadfence()) and the wait for it an acquire (or be followed by one)");
        wb_guarded_check(d_down, what);
        wb_guarded_check(d_up, what);
        wb_guarded_check(d_order, what);
    }
    CUDA_CHECK(cudaFree(d_input));
    wb_guarded_free(d_down);
    wb_guarded_free(d_up);
    wb_guarded_free(d_order);
    free(input);
    free(expected);
    free(got);
}

Test(sync_up, stage3_chain, .timeout = 30,
     .description = "the steps of a chain of hand-shakes come in order and pass their values on")
{
    int sms = wb_device_info().sm_count;
    /* Two lanes of one warp, two warps, two blocks, odd shapes, then a chain
     * through every SM, and one of a block of 1024 threads per SM (where one
     * hand-shake in 32 crosses warps and one in 1024 crosses SMs). */
    grid_shape shapes[] = {{1, 2}, {1, 64}, {2, 1}, {7, 33}, {sms, 1}, {sms, 32}, {sms, 1024}};
    size_t count = wb_under_sanitizer() ? 4 : sizeof shapes / sizeof shapes[0];
    wb_rng rng = wb_rng_for("stage3 chain");
    for (size_t i = 0; i < count; i++)
        check_chain(shapes[i].blocks, shapes[i].threads, &rng);
}

/* ---------------------------------------------------------------- stage 4 */

typedef struct {
    int blocks, threads, n;
} max_case;

static int cpu_maximum(const int *in, int n)
{
    int best = in[0];
    for (int i = 1; i < n; i++)
        best = in[i] > best ? in[i] : best;
    return best;
}

/* Fails unless the maximum is right; the hint names the mistake that
 * leaves what came back. after_a_launch: a launch of grid_maximum ran
 * before this one in the test. */
static void assert_maximum(int got, int expected, bool all_negative, bool after_a_launch,
                           const char *what)
{
    const char *hint;
    if (got == WB_POISON_INT && after_a_launch)
        hint = "no block wrote a result. The launch before this one ran: was the ticket "
               "counter back at 0 when this one started? The last block must set max_tickets "
               "to 0 after it has read the partial results (or count with "
               "atomicInc(&max_tickets, gridDim.x - 1), which wraps to 0 by itself). Or no "
               "block ever sees itself last: atomicAdd returns the count before the add, so "
               "the last block draws gridDim.x - 1";
    else if (got == WB_POISON_INT)
        hint = "no block wrote a result: the last block is the one whose atomicAdd on "
               "max_tickets returns gridDim.x - 1 (the count before its own add), and its "
               "thread 0 calls announce_maximum";
    else if (got == GRID_MAXIMUM_STALE)
        hint = "0x7F7F7F7F is what partial[] held when the kernel started: the last block "
               "read a partial result before the store of it was visible (a __threadfence() "
               "between storing the partial result and taking the ticket, and one between "
               "drawing the last ticket and reading partial[]), read one past the last "
               "block's (b < gridDim.x, not <=), or never stored by most blocks: each stores "
               "its own at partial[blockIdx.x] (not partial[threadIdx.x], which is 0 for "
               "thread 0 of every block)";
    else if (got == 0 && all_negative)
        hint = "the maximum is 0 but the inputs are all negative: did you start the maximum "
               "at 0 instead of INT_MIN (or the first partial result)?";
    else if (got < expected)
        hint = "smaller than the largest element: does the last block read every block's "
               "partial result (b < gridDim.x), and does every block store its own (at "
               "partial[blockIdx.x])?";
    else
        hint = "larger than every element: a partial result read where none was stored, or "
               "left from another launch?";
    cr_assert(got == expected, "%s: the maximum is %d, expected %d: %s " WB_SEED_HINT, what,
              got, expected, hint, wb_seed());
}

/* After a launch with the right maximum: the ticket counter must be back at
 * 0, set there by the block that drew the last ticket. A reset at the start
 * of the kernel leaves gridDim.x (and loses the tickets drawn before it),
 * which the next launch's result only sometimes shows. */
static void assert_tickets_reset(const char *what)
{
    char label[220];
    snprintf(label, sizeof label, "%s: max_tickets after the launch", what);
    unsigned tickets = (unsigned)wb_observe_int(label, (int)grid_maximum_tickets());
    cr_assert(tickets == 0,
              "%s: max_tickets is %u after the launch, not back at 0 for the next one: the "
              "block that draws the last ticket must set it to 0 once it has read the partial "
              "results (or count with atomicInc(&max_tickets, gridDim.x - 1)). A reset at the "
              "start of the kernel is too early: blocks may draw their tickets before it, and "
              "nothing resets the count they leave " WB_SEED_HINT,
              what, tickets, wb_seed());
}

/* One launch on in[0 .. n-1] (host), its result observed. */
static int launched_maximum(const int *in, int n, int blocks, int threads, const char *what)
{
    int *d_in, *d_result, got;
    CUDA_CHECK(cudaMalloc((void **)&d_in, sizeof(int) * (size_t)n));
    CUDA_CHECK(cudaMalloc((void **)&d_result, sizeof(int)));
    CUDA_CHECK(cudaMemcpy(d_in, in, sizeof(int) * (size_t)n, cudaMemcpyHostToDevice));
    wb_poison_ints(d_result, 1);
    grid_maximum(d_in, n, d_result, blocks, threads, 0);
    wb_fetch(&got, d_result, sizeof got, what);
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_result));
    return got;
}

/* Under a sanitizer a million elements take minutes: fewer show the same. */
static int sanitizer_sized(int n)
{
    return wb_under_sanitizer() && n > 4096 ? 4096 : n;
}

Test(sync_up, stage4_maximum, .timeout = 60,
     .description = "the last block finds the maximum, for grids of 1 block to many per SM")
{
    int sms = wb_device_info().sm_count;
    /* One block; a few; one fewer, as many and one more than the SMs; many
     * per SM; more blocks than elements (most blocks have none). */
    max_case cases[] = {{1, 1, 1},       {1, 32, 1000},         {1, 1024, 100000},
                        {2, 64, 1},      {3, 33, 100},          {7, 256, 1 << 20},
                        {sms > 1 ? sms - 1 : 1, 128, 54321},    {sms, 256, 1 << 20},
                        {sms + 1, 128, 123457},                 {4 * sms + 3, 1024, 1 << 22},
                        {1000, 32, 999}, {4096, 64, 1 << 20}};
    wb_rng rng = wb_rng_for("stage4 maximum");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        max_case m = cases[c];
        m.n = sanitizer_sized(m.n);
        int *in = malloc(sizeof(int) * (size_t)m.n);
        cr_assert(in, "out of host memory");
        /* The maximum anywhere, then in block 0's share (index 0), in the
         * share of the block holding the last element, and in the last
         * block's (blockIdx.x = blocks - 1) where it has elements. Values
         * below 0x7F7F7F7F, so that a partial result read too early shows. */
        int last_block_first = (m.blocks - 1) * m.threads;
        int planted[] = {-1, 0, m.n - 1, last_block_first < m.n ? last_block_first : -1};
        for (size_t p = 0; p < sizeof planted / sizeof planted[0]; p++) {
            if (p > 0 && planted[p] < 0)
                continue;
            wb_fill_ints(in, (size_t)m.n, -1000000000, 1000000000, &rng);
            if (planted[p] >= 0)
                in[planted[p]] = 1000000001;
            char what[160];
            snprintf(what, sizeof what, "grid_maximum(n = %d, blocks = %d, threads = %d), "
                     "largest element at %s", m.n, m.blocks, m.threads,
                     p == 0 ? "random" : p == 1 ? "index 0" : p == 2 ? "index n - 1"
                     : "the last block's first element");
            int got = launched_maximum(in, m.n, m.blocks, m.threads, what);
            assert_maximum(got, cpu_maximum(in, m.n), false, c > 0 || p > 0, what);
            assert_tickets_reset(what);
        }
        free(in);
    }
}

Test(sync_up, stage4_negative_inputs,
     .description = "inputs all negative, INT_MIN among them, and a lone INT_MIN")
{
    int sms = wb_device_info().sm_count;
    wb_rng rng = wb_rng_for("stage4 negative");
    int n = sanitizer_sized(1 << 16);
    int *in = malloc(sizeof(int) * (size_t)n);
    cr_assert(in, "out of host memory");
    /* Every element from INT_MIN to -1, with INT_MIN planted. */
    wb_fill_ints(in, (size_t)n, INT_MIN, -1, &rng);
    in[n / 2] = INT_MIN;
    char what[96];
    snprintf(what, sizeof what, "grid_maximum(n = %d negative numbers)", n);
    int got = launched_maximum(in, n, 2 * sms, 256, what);
    assert_maximum(got, cpu_maximum(in, n), true, false, what);
    /* Three negative numbers; one -1 in many blocks of which most have none;
     * INT_MIN alone, which is also what an empty block's maximum is. */
    static const int three[] = {-5, -7, -3}, minus_one[] = {-1}, lowest[] = {INT_MIN};
    got = launched_maximum(three, 3, 1, 32, "grid_maximum({-5, -7, -3})");
    assert_maximum(got, -3, true, true, "grid_maximum({-5, -7, -3})");
    got = launched_maximum(minus_one, 1, 3 * sms, 64, "grid_maximum({-1}, 3 blocks per SM)");
    assert_maximum(got, -1, true, true, "grid_maximum({-1}, 3 blocks per SM)");
    got = launched_maximum(lowest, 1, 5, 32, "grid_maximum({INT_MIN}, 5 blocks)");
    assert_maximum(got, INT_MIN, true, true, "grid_maximum({INT_MIN}, 5 blocks)");
    free(in);
}

Test(sync_up, stage4_back_to_back,
     .description = "three launches queued back to back: the ticket counter is ready for each")
{
    int sms = wb_device_info().sm_count;
    wb_rng rng = wb_rng_for("stage4 back to back");
    /* Different inputs and grids, queued with no wait in between: each
     * launch starts with the counter where the one before left it. (The
     * largest grid first: a grid larger than any before it makes the given
     * code grow its buffer of partial results, and cudaFree waits.) */
    max_case cases[] = {{700, 256, 1 << 20}, {sms + 5, 128, 1 << 16}, {3, 64, 1000}};
    enum { LAUNCHES = sizeof cases / sizeof cases[0] };
    int *in[LAUNCHES], *d_in[LAUNCHES], *d_result, got[LAUNCHES];
    d_result = wb_guarded_malloc(sizeof(int) * LAUNCHES);
    wb_poison_ints(d_result, LAUNCHES);
    for (int l = 0; l < LAUNCHES; l++) {
        int n = cases[l].n = sanitizer_sized(cases[l].n);
        in[l] = malloc(sizeof(int) * (size_t)n);
        cr_assert(in[l], "out of host memory");
        wb_fill_ints(in[l], (size_t)n, -1000000000, 1000000000, &rng);
        CUDA_CHECK(cudaMalloc((void **)&d_in[l], sizeof(int) * (size_t)n));
        CUDA_CHECK(cudaMemcpy(d_in[l], in[l], sizeof(int) * (size_t)n, cudaMemcpyHostToDevice));
    }
    for (int l = 0; l < LAUNCHES; l++)
        grid_maximum(d_in[l], cases[l].n, d_result + l, cases[l].blocks, cases[l].threads, 0);
    wb_fetch(got, d_result, sizeof got, "grid_maximum, three launches back to back: results");
    wb_guarded_check(d_result, "grid_maximum, three launches back to back");
    for (int l = 0; l < LAUNCHES; l++) {
        char what[160];
        snprintf(what, sizeof what, "launch %d of %d back to back (n = %d, blocks = %d, "
                 "threads = %d)", l + 1, LAUNCHES, cases[l].n, cases[l].blocks,
                 cases[l].threads);
        assert_maximum(got[l], cpu_maximum(in[l], cases[l].n), false, l > 0, what);
        CUDA_CHECK(cudaFree(d_in[l]));
        free(in[l]);
    }
}

typedef struct {
    const int *in;
    int n, blocks, threads;
    int *result;
} maximum_launch;

static void launch_printing_maximum(void *context)
{
    maximum_launch *m = context;
    grid_maximum(m->in, m->n, m->result, m->blocks, m->threads, 1);
}

Test(sync_up, stage4_prints,
     .description = "the last block's thread 0 prints the maximum, once, from the same kernel")
{
    int sms = wb_device_info().sm_count;
    wb_rng rng = wb_rng_for("stage4 prints");
    max_case cases[] = {{1, 32, 100}, {2 * sms + 1, 256, 1 << 18}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        max_case m = cases[c];
        m.n = sanitizer_sized(m.n);
        int *in = malloc(sizeof(int) * (size_t)m.n), *d_in, *d_result, got;
        cr_assert(in, "out of host memory");
        wb_fill_ints(in, (size_t)m.n, -1000000000, 1000000000, &rng);
        CUDA_CHECK(cudaMalloc((void **)&d_in, sizeof(int) * (size_t)m.n));
        CUDA_CHECK(cudaMalloc((void **)&d_result, sizeof(int)));
        CUDA_CHECK(cudaMemcpy(d_in, in, sizeof(int) * (size_t)m.n, cudaMemcpyHostToDevice));
        wb_poison_ints(d_result, 1);
        char what[160], expected[64];
        snprintf(what, sizeof what, "grid_maximum(n = %d, blocks = %d, threads = %d, print = 1)",
                 m.n, m.blocks, m.threads);
        int best = cpu_maximum(in, m.n);
        snprintf(expected, sizeof expected, "maximum: %d\n", best);
        maximum_launch launch_args = {d_in, m.n, m.blocks, m.threads, d_result};
        char *text = printed_during(launch_printing_maximum, &launch_args, what,
                                   "nothing in grid_maximum waits for another thread: a loop "
                                   "that never ends (over the block's share of in)");
        int lines = 0;
        for (const char *t = text; *t; t++)
            lines += *t == '\n';
        cr_assert(*text, "%s: nothing printed: thread 0 of the last block prints, through "
                  "announce_maximum(a, best) " WB_SEED_HINT, what, wb_seed());
        cr_assert(lines <= 1, "%s: %d lines printed (\"%.60s...\"), expected one: only the "
                  "block that draws the last ticket prints, and only its thread 0 "
                  WB_SEED_HINT, what, lines, text, wb_seed());
        cr_assert_str_eq(text, expected, "%s: printed \"%s\", expected \"%.*s\\n\" " WB_SEED_HINT,
                         what, text, (int)strlen(expected) - 1, expected, wb_seed());
        wb_fetch(&got, d_result, sizeof got, what);
        assert_maximum(got, best, false, c > 0, what);
        free(text);
        free(in);
        CUDA_CHECK(cudaFree(d_in));
        CUDA_CHECK(cudaFree(d_result));
    }
}

/* ---------------------------------------------------------------- stage 5 */

typedef struct {
    int element, amount;
} donation;

static int by_element(const void *a, const void *b)
{
    const donation *x = a, *y = b;
    return x->element != y->element ? (x->element > y->element) - (x->element < y->element)
                                    : (x->amount > y->amount) - (x->amount < y->amount);
}

/* The sum of the n elements' work, which the average divides. */
static unsigned long long work_total(const int *work, int n)
{
    unsigned long long total = 0;
    for (int i = 0; i < n; i++)
        total += (unsigned long long)work[i];
    return total;
}

/* How the threshold is found: right (lab.h), or as a classic mistake does
 * it, so that the message can name the mistake whose results came back. */
typedef enum { RIGHT, ROUNDED_UP, ROUNDED_TO_NEAREST } donation_rule;

/* kept[] and the pairs (sorted by element) that work_donation must leave;
 * returns the number of pairs. */
static int donation_model(const int *work, int n, int k, donation_rule rule, int *kept,
                          donation *pairs)
{
    unsigned long long total = work_total(work, n);
    unsigned long long rounding = rule == ROUNDED_UP ? n - 1 : rule == ROUNDED_TO_NEAREST ? n / 2 : 0;
    int keep = (int)((total + rounding) / (unsigned long long)n) + k, length = 0;
    for (int i = 0; i < n; i++) {
        kept[i] = work[i] > keep ? keep : work[i];
        if (work[i] > keep)
            pairs[length++] = (donation){i, work[i] - keep};
    }
    return length;
}

/* Names the threshold mistake whose kept[] came back, or NULL. */
static const char *rounding_mistake(const int *work, int n, int k, const int *got_kept)
{
    static const donation_rule rules[] = {ROUNDED_UP, ROUNDED_TO_NEAREST};
    static const char *names[] = {"rounded up", "rounded to the nearest integer"};
    int *kept = malloc(sizeof(int) * (size_t)n);
    donation *pairs = malloc(sizeof(donation) * (size_t)n);
    cr_assert(kept && pairs, "out of host memory");
    const char *found = NULL;
    for (size_t r = 0; r < 2 && !found; r++) {
        donation_model(work, n, k, rules[r], kept, pairs);
        if (memcmp(kept, got_kept, sizeof(int) * (size_t)n) == 0)
            found = names[r];
    }
    free(kept);
    free(pairs);
    return found;
}

/* The one threshold t with got_kept[i] == min(work[i], t) for every i, or
 * -1 when no single threshold gives what came back (or nothing was capped). */
static long long threshold_kept(const int *work, int n, const int *got_kept)
{
    long long t = -1;
    for (int i = 0; i < n && t < 0; i++)
        if (got_kept[i] < work[i])
            t = got_kept[i];
    for (int i = 0; i < n && t >= 0; i++)
        if (got_kept[i] != (work[i] < t ? work[i] : t))
            t = -1;
    return t;
}

/* Names the mistake whose kept[] came back (got_kept differs from kept, the
 * right one), in message[]: the threshold rounded the wrong way, built from
 * a wrong sum or a wrong count, k forgotten, kept[] written on one side of
 * the test only or not for every element, or not the smaller of the two. */
static const char *kept_mistake(const int *work, int n, int k, int blocks, int threads,
                                const int *kept, const int *got_kept, char *message,
                                size_t size)
{
    const char *rounded = rounding_mistake(work, n, k, got_kept);
    if (rounded) {
        snprintf(message, size, "these are the results of an average rounded the wrong way "
                 "(%s): the average is the integer division donation_total / n, which rounds "
                 "down", rounded);
        return message;
    }
    unsigned long long total = work_total(work, n);
    long long keep = (long long)(total / (unsigned long long)n) + k;
    /* Which elements came back poisoned: those past the grid's threads, the
     * givers (work above keep) or the others. */
    long long everyone = (long long)blocks * threads;
    bool poison_only = true, past_grid = true, givers = true, others = true;
    for (int i = 0; i < n; i++) {
        bool poisoned = got_kept[i] == WB_POISON_INT;
        if (got_kept[i] != kept[i] && !poisoned)
            poison_only = false;
        if (poisoned != (i >= everyone))
            past_grid = false;
        if (poisoned != (work[i] > keep))
            givers = false;
        if (poisoned != (work[i] <= keep))
            others = false;
    }
    if (poison_only && past_grid)
        return "kept[i] was never written for i >= blocks x threads: each thread handled one "
               "element; a grid-stride loop (i += gridDim.x * blockDim.x) handles them all";
    if (poison_only && givers)
        return "kept[i] was never written for the elements that give: an element above "
               "average + k keeps average + k (kept[i] = min(work[i], keep) for every element)";
    if (poison_only && others)
        return "kept[i] was never written for the elements that give nothing: they keep all "
               "their work (kept[i] = min(work[i], keep) for every element, outside the if)";
    bool all_keep = true, all_work = true, larger = true;
    for (int i = 0; i < n; i++) {
        all_keep = all_keep && got_kept[i] == keep;
        all_work = all_work && got_kept[i] == work[i];
        larger = larger && got_kept[i] == (work[i] > keep ? work[i] : keep);
    }
    if (larger && !all_keep)
        return "every element kept the larger of work[i] and average + k: kept[i] = "
               "min(work[i], keep), not max";
    if (all_keep)
        return "every element kept average + k, even those with less work: kept[i] is the "
               "smaller of work[i] and average + k";
    if (all_work)
        return "every element kept all its work: the threshold came out above every "
               "element's work (a total too large: did every thread of a block add the "
               "block's share to donation_total? block_sum returns it to every thread, and "
               "one per block adds), or nothing was taken from those above average + k "
               "(kept[i] = min(work[i], keep))";
    long long t = threshold_kept(work, n, got_kept);
    if (t < 0)
        return "kept[i] is the smaller of work[i] and average + k; a threshold that differs "
               "from element to element is an average read too early (read donation_total "
               "only after the grid's barrier, cg::this_grid().sync(), when every block has "
               "added its share) or each block's own average in place of the grid's "
               "(donation_total / n)";
    long long average = keep - k, got_average = t - k;
    bool over_threads =
        everyone != n && got_average == (long long)(total / (unsigned long long)everyone);
    if (k > 0 && t == average)
        snprintf(message, size, "one threshold for every element, %lld: the average alone, "
                 "k forgotten (keep = average + k = %lld)", t, keep);
    else if (got_average == 0)
        snprintf(message, size, "one threshold for every element, %lld = k (expected %lld): "
                 "the average came out 0, the total read before any block had added its "
                 "share: read donation_total only after the grid's barrier "
                 "(cg::this_grid().sync()), and add the shares before it%s", t, keep,
                 over_threads ? "; or the total divided by the grid's threads, not by the n "
                                "elements" : "");
    else if (threads > 1 &&
             got_average == (long long)(total * (unsigned long long)threads / (unsigned long long)n))
        snprintf(message, size, "one threshold for every element, %lld (expected %lld): the "
                 "average of a total %d times too large: every thread of a block added the "
                 "block's share to donation_total (block_sum returns it to every thread); "
                 "only one thread per block adds", t, keep, threads);
    else if (over_threads)
        snprintf(message, size, "one threshold for every element, %lld (expected %lld): the "
                 "total divided by the grid's %lld threads, not by the n = %d elements", t,
                 keep, everyone, n);
    else
        snprintf(message, size, "one threshold for every element, %lld, expected %lld "
                 "(average %lld + k %d): a wrong average (read donation_total only after the "
                 "grid's barrier, cg::this_grid().sync(), when every block has added its "
                 "share), or a wrong k", t, keep, average, k);
    return message;
}

/* What a pair stored at list[at] and list[at + 1] leaves: `length` pairs
 * (two or more) that fill exactly the first length + 1 ints (pairs with
 * their amounts forgotten leave holes among those instead). */
static bool pairs_overlap(const int *got_list, int length)
{
    bool overlapping = length >= 2;
    for (int i = 0; i < 2 * length && overlapping; i++)
        overlapping = (got_list[i] == WB_POISON_INT) == (i > length);
    return overlapping;
}

static const char *const pairs_overlap_message =
    "the pairs fill only the first length + 1 ints of the list: the tail counts pairs, not "
    "ints, so pair p goes to list[2p] and list[2p + 1], not list[p] and list[p + 1]";

/* Names the mistake that leaves the pairs that came back, where their
 * number is right but `got`, the first that differs (sorted by element),
 * is not `expected`. */
static const char *pairs_mistake(const int *work, int n, const int *got_list, int length,
                                 donation got, donation expected)
{
    if (pairs_overlap(got_list, length))
        return pairs_overlap_message;
    if (got.element == expected.element && got.element >= 0 && got.element < n &&
        got.amount == work[got.element])
        return "the amount pushed is the element's whole work: it gives only what is above "
               "the threshold, work[i] - (average + k)";
    if (got.element == expected.element && got.element >= 0 && got.element < n &&
        got.amount == work[got.element] - expected.amount)
        return "the amount pushed is what the element keeps (average + k): it gives what is "
               "above it, work[i] - (average + k)";
    return "A slot written twice and another never (two threads given the same position by "
           "a tail that is not atomic), or a pair written in the wrong order (list[2p] = "
           "element, list[2p + 1] = amount)";
}

/* One launch of work_donation on work[0 .. n-1] (host), RUNS times, each
 * checked against the model: kept[] exactly, the pairs as a multiset, the
 * length exactly, nothing written past the length (poison) or past the
 * list (guard zone). */
static void check_donation(const int *work, int n, int k, int blocks, int threads,
                           const char *what_case)
{
    size_t bytes = sizeof(int) * (size_t)n;
    int *kept = malloc(bytes), *got_kept = malloc(bytes), *got_list = malloc(2 * bytes);
    donation *pairs = malloc(sizeof(donation) * (size_t)n), *got_pairs = malloc(sizeof(donation) * (size_t)n);
    cr_assert(kept && got_kept && got_list && pairs && got_pairs, "out of host memory");
    int length = donation_model(work, n, k, RIGHT, kept, pairs);
    int *d_work, *d_length, *d_kept = wb_guarded_malloc(bytes), *d_list = wb_guarded_malloc(2 * bytes);
    CUDA_CHECK(cudaMalloc((void **)&d_work, bytes));
    CUDA_CHECK(cudaMalloc((void **)&d_length, sizeof(int)));
    CUDA_CHECK(cudaMemcpy(d_work, work, bytes, cudaMemcpyHostToDevice));
    for (int run = 1; run <= RUNS; run++) {
        char what[256], label[300];
        snprintf(what, sizeof what, "work_donation(%s, n = %d, k = %d, blocks = %d, "
                 "threads = %d), run %d", what_case, n, k, blocks, threads, run);
        wb_poison_ints(d_kept, (size_t)n);
        wb_poison_ints(d_list, 2 * (size_t)n);
        wb_poison_ints(d_length, 1);
        work_donation(d_work, n, k, d_kept, d_list, d_length, blocks, threads);
        int got_length;
        snprintf(label, sizeof label, "%s: length", what);
        wb_fetch(&got_length, d_length, sizeof got_length, label);
        snprintf(label, sizeof label, "%s: kept", what);
        wb_fetch(got_kept, d_kept, bytes, label);
        snprintf(label, sizeof label, "%s: list", what);
        wb_fetch(got_list, d_list, 2 * bytes, label);

        char report[1024], mistake[400];
        size_t bad = wb_compare_ints(got_kept, kept, (size_t)n, report, sizeof report);
        cr_assert(bad == 0, "%s: kept: %s;\n  %s " WB_SEED_HINT, what, report,
                  bad ? kept_mistake(work, n, k, blocks, threads, kept, got_kept, mistake,
                                     sizeof mistake) : "",
                  wb_seed());
        cr_assert(got_length >= 0 && got_length <= n, "%s: the length is %d, outside 0 .. n "
                  "(expected %d): the tail is *a.length, 0 at launch, one more per pair pushed "
                  WB_SEED_HINT, what, got_length, length, wb_seed());
        for (int p = 0; p < got_length; p++)
            got_pairs[p] = (donation){got_list[2 * p], got_list[2 * p + 1]};
        qsort(got_pairs, (size_t)got_length, sizeof *got_pairs, by_element);
        int zero = -1;
        for (int p = 0; p < got_length && zero < 0; p++)
            if (got_pairs[p].amount == 0)
                zero = p;
        cr_assert(zero < 0, "%s: element %d pushed a pair with amount 0: %s " WB_SEED_HINT,
                  what, got_pairs[zero < 0 ? 0 : zero].element,
                  pairs_overlap(got_list, got_length) ? pairs_overlap_message :
                  "an element whose work is exactly average + k has nothing to give (work > "
                  "keep, not >=)", wb_seed());
        cr_assert(got_length == length, "%s: the worklist holds %d pairs, expected %d: %s "
                  WB_SEED_HINT, what, got_length, length,
                  got_length < length ?
                  "pushes were lost: a tail moved with a plain ++ (or a read, then a write) "
                  "lets two threads take the same slot; move it with atomicAdd(a.length, 1), "
                  "which returns the slot" :
                  "more pairs than elements above average + k: is every element handled once "
                  "(a grid-stride loop from the thread's index in the grid)?",
                  wb_seed());
        int first = -1;
        for (int p = 0; p < length && first < 0; p++)
            if (by_element(&got_pairs[p], &pairs[p]) != 0)
                first = p;
        donation got_first = {0, 0}, expected_first = {0, 0};
        if (first >= 0) {
            got_first = got_pairs[first];
            expected_first = pairs[first];
        }
        cr_assert(first < 0, "%s: the worklist, sorted by element, differs from the expected "
                  "pairs from the %d-th on: got (%d, %d), expected (%d, %d). %s " WB_SEED_HINT,
                  what, first + 1, got_first.element, got_first.amount, expected_first.element,
                  expected_first.amount,
                  first < 0 ? "" : pairs_mistake(work, n, got_list, length, got_first,
                                                  expected_first),
                  wb_seed());
        for (int i = 2 * length; i < 2 * n; i++)
            cr_assert(got_list[i] == WB_POISON_INT, "%s: list[%d] was written, past the %d "
                      "pairs pushed (%d ints): a pair written at a position the tail never "
                      "reached " WB_SEED_HINT, what, i, length, 2 * length, wb_seed());
        wb_guarded_check(d_kept, what);
        wb_guarded_check(d_list, what);
    }
    CUDA_CHECK(cudaFree(d_work));
    CUDA_CHECK(cudaFree(d_length));
    wb_guarded_free(d_kept);
    wb_guarded_free(d_list);
    free(kept);
    free(got_kept);
    free(got_list);
    free(pairs);
    free(got_pairs);
}

typedef struct {
    int n, k, blocks, threads, most_work;
} donation_case;

Test(sync_up, stage5_donation, .timeout = 60,
     .description = "kept work, worklist (as a multiset) and its length match the CPU's")
{
    int sms = wb_device_info().sm_count;
    /* From one element to a million and more, small and large k, totals
     * past 2^32 (the last two), grids from one warp to two blocks per SM. */
    donation_case cases[] = {{1, 0, 1, 32, 100},          {2, 0, 1, 32, 1000},
                             {3, 5, 1, 1, 1000},          {1000, 17, 2, 64, 2000},
                             {65536, 0, sms, 256, 5000},  {(1 << 20) + 3, 100, 2 * sms, 256, 8191},
                             {1 << 20, 1000, sms, 1024, 1000000000}};
    wb_rng rng = wb_rng_for("stage5 donation");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        donation_case d = cases[c];
        d.n = sanitizer_sized(d.n);
        int *work = malloc(sizeof(int) * (size_t)d.n);
        cr_assert(work, "out of host memory");
        wb_fill_ints(work, (size_t)d.n, 0, d.most_work, &rng);
        char what[64];
        snprintf(what, sizeof what, "random work in 0 .. %d", d.most_work);
        check_donation(work, d.n, d.k, d.blocks, d.threads, what);
        free(work);
    }
}

/* n elements whose average is as far from a whole number as can be (the
 * sum is average x n + n - 1), with many elements exactly at average + k,
 * one above and one below it: where rounding and > against >= decide. */
static void boundary_work(int *work, int n, int k, wb_rng *rng)
{
    wb_fill_ints(work, (size_t)n, 0, 2000, rng);
    unsigned long long total = work_total(work, n);
    int keep = (int)(total / (unsigned long long)n) + k;
    /* Every fourth element moved onto keep - 1, keep or keep + 1; the
     * difference is taken from (or given to) its neighbour, so that the
     * total, and so the average, stay the same. */
    for (int i = 0; i + 1 < n; i += 4) {
        int target = keep - 1 + wb_rng_int(rng, 0, 2), change = target - work[i];
        if (work[i + 1] - change >= 0) {
            work[i] = target;
            work[i + 1] -= change;
        }
    }
    /* Then the sum up to average x n + n - 1: the ones missing go to the
     * elements left alone (the average does not move). */
    unsigned long long missing = (unsigned long long)n - 1 - total % (unsigned long long)n;
    for (int i = 1; missing > 0; i = (i + 1) % n)
        if (i % 4 != 0) {
            work[i]++;
            missing--;
        }
}

Test(sync_up, stage5_boundaries,
     .description = "integer average rounded down, and > rather than >=, on chosen work")
{
    int sms = wb_device_info().sm_count;
    /* Sum 7 over 4 elements: the average is 1, not 1.75 or 2, and with
     * k = 1 the 7 gives 5. All equal: nobody gives (not a pair of 0 each).
     * Sum 1 over 2: average 0, the 1 gives 1. */
    static const int seven[] = {0, 0, 0, 7}, equal[] = {5, 5, 5}, one[] = {0, 1},
                     mixed[] = {10, 12, 13, 9, 11, 14, 8};
    check_donation(seven, 4, 1, 1, 32, "{0, 0, 0, 7}");
    check_donation(equal, 3, 0, 1, 32, "{5, 5, 5}");
    check_donation(one, 2, 0, 2, 1, "{0, 1}");
    check_donation(mixed, 7, 1, 3, 64, "{10, 12, 13, 9, 11, 14, 8}");
    wb_rng rng = wb_rng_for("stage5 boundaries");
    int n = sanitizer_sized(100003);
    int *work = malloc(sizeof(int) * (size_t)n);
    cr_assert(work, "out of host memory");
    boundary_work(work, n, 7, &rng);
    check_donation(work, n, 7, sms, 128, "many elements at average + k and next to it");
    free(work);
}

Test(sync_up, stage5_contention, .timeout = 60,
     .description = "half a million pushes on one tail: none lost")
{
    int sms = wb_device_info().sm_count;
    wb_rng rng = wb_rng_for("stage5 contention");
    int n = sanitizer_sized(1 << 20);
    int *work = malloc(sizeof(int) * (size_t)n);
    cr_assert(work, "out of host memory");
    /* 0 or 2000, at random: the average is about 1000, and with k = 0 every
     * element of 2000 pushes, half the grid's threads at once. */
    for (int i = 0; i < n; i++)
        work[i] = 2000 * wb_rng_int(&rng, 0, 1);
    check_donation(work, n, 0, sms, 1024, "work 0 or 2000");
    free(work);
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

/* Given code of stages 3-5 (their entry points' checks): each argument
 * refused with a message that names it, and the smallest calls accepted. */
Test(sync_up, given_refuses_bad_arguments_3_to_5,
     .description = "the entry points of stages 3-5 refuse bad arguments, naming them")
{
    wb_device device = wb_device_info();
    int too_many = device.sm_count * (device.max_threads_per_sm / 1024) + 1;
    int *d;
    CUDA_CHECK(cudaMalloc((void **)&d, 2 * sizeof(int)));
    CUDA_CHECK(cudaMemset(d, 0, 2 * sizeof(int)));
    wb_expect_error("handshake_chain(threads = 0): threads must be >= 1", "1 <= threads",
                    handshake_chain(d, d, d, d, 1, 0));
    wb_expect_error("handshake_chain(blocks = 0): blocks must be >= 1", "blocks >= 1",
                    handshake_chain(d, d, d, d, 0, 1));
    wb_expect_error("handshake_chain(input = NULL)", "NULL", handshake_chain(NULL, d, d, d, 1, 1));
    wb_expect_error("handshake_chain(more blocks of 1024 than the GPU holds)", "resident",
                    handshake_chain(d, d, d, d, too_many, 1024));
    wb_expect_error("grid_maximum(n = 0): n must be >= 1", "n >= 1",
                    grid_maximum(d, 0, d, 1, 32, 0));
    wb_expect_error("grid_maximum(threads = 1025): threads must be <= 1024", "threads <= 1024",
                    grid_maximum(d, 1, d, 1, 1025, 0));
    wb_expect_error("grid_maximum(blocks = GRID_MAXIMUM_MAX_BLOCKS + 1)", "blocks <=",
                    grid_maximum(d, 1, d, GRID_MAXIMUM_MAX_BLOCKS + 1, 32, 0));
    wb_expect_error("grid_maximum(result = NULL)", "NULL", grid_maximum(d, 1, NULL, 1, 32, 0));
    wb_expect_error("work_donation(n = 0): n must be >= 1", "n >= 1",
                    work_donation(d, 0, 0, d, d, d, 1, 32));
    wb_expect_error("work_donation(k = -1): k must be >= 0", "0 <= k",
                    work_donation(d, 1, -1, d, d, d, 1, 32));
    wb_expect_error("work_donation(k = DONATION_MAX_K + 1)", "k <=",
                    work_donation(d, 1, DONATION_MAX_K + 1, d, d, d, 1, 32));
    wb_expect_error("work_donation(list = NULL)", "NULL", work_donation(d, 1, 0, d, NULL, d, 1, 32));
    wb_expect_error("work_donation(more blocks of 1024 than the GPU holds)", "resident",
                    work_donation(d, 1, 0, d, d, d, too_many, 1024));
    /* The smallest calls, and k on its bound: these must run. */
    handshake_chain(d, d, d, d, 1, 1);
    grid_maximum(d, 1, d, 1, 1, 0);
    work_donation(d, 1, DONATION_MAX_K, d, d, d, 1, 1);
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaFree(d));
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
     .fence_after = "take_turn", .fence_before = "next", .why = "a volatile counter (or the compiler may spin on a register copy), a barrier after "
            "thread 0 sets it, and a fence (__threadfence_block or a release store) between the "
            "turn's output and the counter's next value"})

WB_SOURCE_RULES_TEST(sync_up_source, stage2_memory_order,
    {"ordered_stage2", .orderings = 1, .fresh_accesses = 2, .fence_after = "take_turn",
     .fence_before = "grid_next", .why = "every SM must see a turn's output before the counter moves: a device-wide fence "
            "(__threadfence, not _block) or a release; the spin reads the counter fresh "
            "(volatile or an atomic load) and the owner moves it with an atomic"})

/* Stage 3: each half of the hand-shake orders what it hands over. */
#define ASK_WHY \
    "the request is a release (what this side wrote before, its step down, is visible before " \
    "the flag is up) and the wait for the answer an acquire (what the other side wrote before " \
    "lowering the flag is visible after): a device_flag with memory_order_release and " \
    "memory_order_acquire, or volatile with a __threadfence() before the store and after the " \
    "wait"
#define WAIT_WHY \
    "the wait for the request is an acquire (a device_flag load with memory_order_acquire, " \
    "or a volatile spin followed by __threadfence()): the step down reads what the asker wrote"
#define ANSWER_WHY \
    "the answer is a release (a device_flag store with memory_order_release, or " \
    "__threadfence() before a volatile store): the asker's step up reads what this side wrote"

#define ANSWER_PLACE_WHY \
    "the answer (the flag back to 0, a release) comes after step_up, not before it: k - 1 " \
    "steps up as soon as it sees the answer, and reads up[k], which k writes in its own step " \
    "up. On most runs k is quicker and the values come out right, so the test reads the order " \
    "in your code"

WB_SOURCE_RULES_TEST(sync_up_source, stage3_memory_order,
    {"handshake_ask", .orderings = 2, .fresh_accesses = 1, .why = ASK_WHY},
    {"handshake_ask", .fence_before = "store", .why = ASK_WHY},
    {"handshake_ask", .fence_after = "load", .why = ASK_WHY},
    {"handshake_wait", .orderings = 1, .fresh_accesses = 1, .fence_after = "load",
     .why = WAIT_WHY},
    {"handshake_answer", .orderings = 1, .fresh_accesses = 1, .fence_before = "store",
     .why = ANSWER_WHY},
    {"handshake_stage3", .fence_after = "step_up", .why = ANSWER_PLACE_WHY})

/* Stage 4: the one place in the lab where the fence decides the result. */
#define MAXIMUM_ORDER                                                                           \
    "a device-wide fence (__threadfence(), or a release) between storing the block's partial " \
    "result and taking the ticket, or the last block may read the partial before it is "       \
    "visible; another (or an acquire) between drawing the last ticket and reading partial[]; " \
    "and the ticket an atomic"
WB_SOURCE_RULES_TEST(sync_up_source, stage4_memory_order,
    {"maximum_stage4", .orderings = 2, .fresh_accesses = 1, .fence_after = "partial",
     .fence_before = "max_tickets", .why = MAXIMUM_ORDER},
    {"maximum_stage4", .fence_after = "max_tickets", .fence_before = "partial",
     .why = MAXIMUM_ORDER})

/* Stage 5: the grid's barrier and the two atomics. */
WB_SOURCE_RULES_TEST(sync_up_source, stage5_atomics,
    {"donate_stage5", .fresh_accesses = 2, .barriers = 1,
     .why = "the blocks' sums added with an atomic, the grid's barrier "
            "(cg::this_grid().sync()) before anyone reads the total, and the worklist's tail "
            "moved with an atomic (a plain ++ hands two threads the same slot)"})

/* The lab's performance test: the graded time is every shape of the
 * hand-off table run once (handoff.c). */
Test(sync_up, timing_handoff, .description = "time per hand-off (short run)", .timeout = 60)
{
    static const handoff_observers observers = {wb_observe, wb_observe_timing};
    sync_up_handoff_observed(10000, 3, &observers);
}
