/*
 * Lab 07 tests. Ping-pong (stages 0-2): the numbers 0 .. n-1 come out in
 * order, each from the right side, nothing past n-1, nothing printed unless
 * asked, and the printed exercise in order. Tasks (stages 3-4): every output
 * right and every task done exactly once, inside guard zones; each case runs
 * twice in one process, so a queue that is not reset before a launch shows;
 * the largest launch that fits runs and one block more is refused. Every
 * host wait in the lab has a deadline, and every test a time limit, so a
 * hang fails.
 *
 * What no test here can see (handouts/07-persistent.md, "Classic
 * mistakes"): a release or acquire weakened to relaxed on the x86 host or
 * where a kernel's end orders everything anyway, and the worker pool's
 * trailing barrier (a race that needs a warp to fall a whole task behind;
 * racecheck reports it).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lab.h"
#include "wb_test.h"

WB_GPU_SUITE(persistent, .timeout = 30);

/* ------------------------------------------------------------ ping-pong */

/* One ping-pong's arrays: what the code under test writes, each with one
 * sentinel entry after its end, and what it must write. */
typedef struct {
    int n;
    int *producer, *expected;
    double *round_trip;
} pingpong_arrays;

static pingpong_arrays pingpong_arrays_new(int n)
{
    pingpong_arrays a = {n, malloc(sizeof(int) * (size_t)(n + 1)), malloc(sizeof(int) * (size_t)n),
                         malloc(sizeof(double) * (size_t)(n / 2 + 1))};
    cr_assert(a.producer && a.expected && a.round_trip, "out of host memory for n = %d", n);
    for (int k = 0; k < n; k++)
        a.expected[k] = k % 2 == 0 ? PRODUCER_CPU : PRODUCER_GPU;
    return a;
}

static void pingpong_arrays_free(pingpong_arrays *a)
{
    free(a->producer);
    free(a->expected);
    free(a->round_trip);
}

static void poison_pingpong(pingpong_arrays *a)
{
    for (int k = 0; k <= a->n; k++)
        a->producer[k] = WB_POISON_INT;
    for (int i = 0; i <= a->n / 2; i++)
        a->round_trip[i] = NAN;
}

/* Names the mistake that leaves these producers (they differ from the
 * expected ones): the GPU's numbers never logged, or logged at the number
 * the GPU received instead of the one it produced. */
static const char *producer_mistake(const int *producer, int n)
{
    /* n = 1 has no number of the GPU's: neither pattern can be told there. */
    bool odd_missing = n > 1, even_gpu = n > 1, even_cpu = true;
    for (int k = 0; k < n; k++) {
        if (k % 2 == 1)
            odd_missing = odd_missing && producer[k] == WB_POISON_INT;
        else {
            even_cpu = even_cpu && producer[k] == PRODUCER_CPU;
            if (k + 1 < n)   /* the CPU's last number is handed over to nobody */
                even_gpu = even_gpu && producer[k] == PRODUCER_GPU;
        }
    }
    if (odd_missing && even_gpu)
        return "the GPU logged the number it was handed, not the one it produced: "
               "log[number] = PRODUCER_GPU where number = *counter + 1";
    if (odd_missing && even_cpu)
        return "no odd number was logged: the GPU's turn writes log[number] = PRODUCER_GPU "
               "for the number it produces";
    return "numbers 0, 2, 4, ... are the CPU's (1) and 1, 3, 5, ... the GPU's (2), each "
           "logged once by the side that produced it";
}

/* Producer and round trips observed and checked; what names the run. */
static void verify_pingpong(pingpong_arrays *a, const char *what)
{
    int n = a->n, hand_offs = n / 2;
    char label[192];
    snprintf(label, sizeof label, "%s: producers", what);
    wb_observe(label, a->producer, sizeof(int) * (size_t)(n + 1));
    snprintf(label, sizeof label, "%s: round trips", what);
    wb_observe(label, a->round_trip, sizeof(double) * (size_t)(hand_offs + 1));
    snprintf(label, sizeof label, "%s: producer of each number (1 = CPU, 2 = GPU)", what);
    char report[1024];
    size_t bad = wb_compare_ints(a->producer, a->expected, (size_t)n, report, sizeof report);
    cr_assert(bad == 0, "%s: %s;\n  %s " WB_SEED_HINT, label, report,
              bad ? producer_mistake(a->producer, n) : "", wb_seed());
    cr_assert(a->producer[n] == WB_POISON_INT,
              "%s: producer[%d], past the end of the array, was written " WB_SEED_HINT, what, n,
              wb_seed());
    for (int i = 0; i < hand_offs; i++)
        cr_assert(a->round_trip[i] > 0.0 && isfinite(a->round_trip[i]),
                  "%s: hand-off %d has no time recorded " WB_SEED_HINT, what, i, wb_seed());
    cr_assert(isnan(a->round_trip[hand_offs]),
              "%s: a time was written for hand-off %d, past the last one " WB_SEED_HINT, what,
              hand_offs, wb_seed());
}

/* One ping-pong of n numbers, quiet; producer and round trips checked. */
static void check_pingpong(pingpong_fn run, int n, const char *name)
{
    pingpong_arrays a = pingpong_arrays_new(n);
    poison_pingpong(&a);
    run(n, a.producer, a.round_trip, false);
    char what[128];
    snprintf(what, sizeof what, "%s, n = %d", name, n);
    verify_pingpong(&a, what);
    pingpong_arrays_free(&a);
}

/* n = 1 (the CPU's 0, nothing to hand over) and then n: every case fails
 * where the GPU's half is missing, none passes on doing nothing. Nothing may
 * be printed when print is false. */
static void check_pingpongs(pingpong_fn run, int n, const char *name)
{
    check_pingpong(run, 1, name);
    check_pingpong(run, n, name);
    CUDA_CHECK(cudaDeviceSynchronize());   /* device printf reaches stdout here */
    char label[128];
    snprintf(label, sizeof label, "%s, n = %d: what was printed", name, n);
    char *printed = wb_observe_stdout(label);
    cr_assert(printed[0] == '\0',
              "%s, n = %d, print = false: printed \"%.40s\"...: print only when asked "
              WB_SEED_HINT, name, n, printed, wb_seed());
    free(printed);
}

/* A test of one way, run (check_pingpongs) once for each size given after
 * its description, with stdout captured. */
#define PINGPONG_TEST(test_name, run, about, ...)                                         \
    ParameterizedTestParameters(persistent, test_name)                                    \
    {                                                                                     \
        static int sizes[] = {__VA_ARGS__};                                               \
        return cr_make_param_array(int, sizes, sizeof sizes / sizeof sizes[0]);           \
    }                                                                                     \
    ParameterizedTest(int *n, persistent, test_name, .init = cr_redirect_stdout,          \
                      .description = about)                                               \
    {                                                                                     \
        check_pingpongs(run, *n, #run);                                                   \
    }

PINGPONG_TEST(stage0_copy_and_relaunch, pingpong_copy,
              "1 and 0..n-1, a cudaMemcpy and a launch per GPU number", 2, 3, 11, 1000)
PINGPONG_TEST(stage1_mapped_and_relaunch, pingpong_mapped,
              "1 and 0..n-1, the counter in mapped pinned memory", 2, 3, 11, 1000)
PINGPONG_TEST(stage2_persistent_kernel, pingpong_persistent,
              "1 and 0..n-1, one kernel taking turns with the CPU", 2, 3, 11, 1000, 20001)

/* The course's exercise, 0..10 printed. With a launch per GPU number, a
 * blocking copy or a synchronise prints the GPU's line before the CPU goes
 * on, so the lines alternate exactly. The persistent kernel's lines reach
 * stdout only at the next synchronisation, so there only each side's lines
 * are checked, in order. */
static void check_printed(pingpong_fn run, const char *name, bool interleaved)
{
    int producer[11];
    run(11, producer, NULL, true);
    CUDA_CHECK(cudaDeviceSynchronize());
    char label[96];
    snprintf(label, sizeof label, "%s, n = 11: what was printed", name);
    char *printed = wb_observe_stdout(label);
    const char *course = "0\n\t1\n2\n\t3\n4\n\t5\n6\n\t7\n8\n\t9\n10\n";
    if (interleaved) {
        cr_assert_str_eq(printed, course,
                         "%s: the CPU prints k, the GPU a tab and k, in the order 0..10 "
                         WB_SEED_HINT, name, wb_seed());
    } else {
        char side[2][64] = {"", ""};   /* [0]: the CPU's lines, [1]: the GPU's */
        for (char *line = strtok(printed, "\n"); line; line = strtok(NULL, "\n")) {
            int gpu = line[0] == '\t';
            size_t used = strlen(side[gpu]);
            snprintf(side[gpu] + used, sizeof side[gpu] - used, "%s\n", line + gpu);
        }
        cr_assert_str_eq(side[0], "0\n2\n4\n6\n8\n10\n",
                         "%s: the CPU's lines (without a tab) must be the even numbers in "
                         "order " WB_SEED_HINT, name, wb_seed());
        cr_assert_str_eq(side[1], "1\n3\n5\n7\n9\n",
                         "%s: the GPU's lines (a tab and the number) must be the odd numbers in "
                         "order " WB_SEED_HINT, name, wb_seed());
    }
    free(printed);
}

Test(persistent, stage0_prints_in_order, .init = cr_redirect_stdout,
     .description = "the course's exercise with a copy and a launch per GPU number")
{
    check_printed(pingpong_copy, "pingpong_copy", true);
}

Test(persistent, stage1_prints_in_order, .init = cr_redirect_stdout,
     .description = "the course's exercise: 0..10, the CPU printing the even numbers")
{
    check_printed(pingpong_mapped, "pingpong_mapped", true);
}

Test(persistent, stage2_prints_every_number, .init = cr_redirect_stdout,
     .description = "the course's exercise with the persistent kernel")
{
    check_printed(pingpong_persistent, "pingpong_persistent", false);
}

/* ------------------------------------------------------------- tasks */

typedef struct {
    int tasks, task_size;
    size_t n;
    unsigned *in, *out;   /* device, guarded */
    int *visits;          /* device, guarded */
    unsigned *host_in;
} task_set;

static task_set make_tasks(int tasks, int task_size, const char *stream)
{
    task_set s = {tasks, task_size, (size_t)tasks * (size_t)task_size, NULL, NULL, NULL, NULL};
    s.host_in = malloc(sizeof(unsigned) * s.n);
    cr_assert(s.host_in, "out of host memory for %zu elements", s.n);
    wb_rng rng = wb_rng_for(stream);
    for (size_t i = 0; i < s.n; i++)
        s.host_in[i] = (unsigned)wb_rng_u64(&rng);
    /* Guard zones (all-ones bytes): a task element read past the end feeds
     * 0xFFFFFFFF into an output, a write past the end shows. */
    s.in = wb_guarded_malloc(sizeof(unsigned) * s.n);
    s.out = wb_guarded_malloc(sizeof(unsigned) * s.n);
    s.visits = wb_guarded_malloc(sizeof(int) * (size_t)tasks);
    CUDA_CHECK(cudaMemcpy(s.in, s.host_in, sizeof(unsigned) * s.n, cudaMemcpyHostToDevice));
    return s;
}

/* Before each run: outputs poisoned, visits zero. */
static void reset_tasks(task_set *s)
{
    wb_poison_ints((int *)s->out, s->n);
    CUDA_CHECK(cudaMemset(s->visits, 0, sizeof(int) * (size_t)s->tasks));
}

static void free_tasks(task_set *s)
{
    wb_guarded_free(s->in);
    wb_guarded_free(s->out);
    wb_guarded_free(s->visits);
    free(s->host_in);
}

/* Names the mistake that leaves these visits (once[t]: whether task t
 * must be done once, or not at all), where they differ from once: from
 * which tasks were done never, and which twice or more. */
static const char *visits_mistake(const int *visits, const int *once, int tasks)
{
    int done = 0, never = 0, again = 0;
    for (int t = 0; t < tasks; t++) {
        if (!once[t])
            continue;
        done += visits[t] != 0;
        never += visits[t] == 0;
        again += visits[t] > 1;
    }
    if (done == 0)
        return "no task was done: does thread 0 claim with atomicAdd(&next_task, 1), the "
               "block run run_task on the task claimed, and leave only when its claim is "
               ">= tasks?";
    if (again == 0)
        return "some tasks were never done, none twice: a block left (or stopped claiming) "
               "while tasks were left; each block claims again and again, and leaves only "
               "when its claim is >= tasks. Or more than thread 0 claimed: every claim takes "
               "a task off the counter, and the block runs only one of them";
    if (never == 0)
        return "some tasks were done twice, none missed: two blocks were given the same task, "
               "as a claim that is not one atomicAdd gives (a read, then a write of next_task)";
    return "tasks done twice and others never: a block ran a task number it had not claimed. "
           "Did it read task before thread 0's claim was written (a barrier after the claim), "
           "or thread 0 claim again before the whole block had read task (a barrier after "
           "the task), or more than thread 0 claim? Stage 4: or a slot read before the host's "
           "write of it was visible (the task written before head moves), or after the host "
           "refilled it (a slot is claimed % in_flight, refilled only once marked done)";
}

/* Every element right, every task visited exactly once, no guard zone
 * touched; the tasks before first_task (done already: the pool started
 * part-way) not visited, their outputs still poisoned. */
static void check_tasks(task_set *s, int first_task, const char *what)
{
    wb_wait_for_gpu(what, "a block of the pool never leaves its loop: thread 0 claims a task, "
                    "a barrier shares the claim, then every thread of the block tests it and "
                    "all leave together once it is past the last task (a block whose other "
                    "threads skip the exit claims on forever); a claim is one atomicAdd on "
                    "next_task");
    unsigned *got = malloc(sizeof(unsigned) * s->n);
    unsigned *expected = malloc(sizeof(unsigned) * s->n);
    int *visits = malloc(sizeof(int) * (size_t)s->tasks);
    int *once = malloc(sizeof(int) * (size_t)s->tasks);
    cr_assert(got && expected && visits && once, "out of host memory");
    char label[256];
    snprintf(label, sizeof label, "%s: times each task was done (must be 1)", what);
    wb_fetch(visits, s->visits, sizeof(int) * (size_t)s->tasks, label);
    int done_again = 0;
    for (int t = 0; t < s->tasks; t++) {
        once[t] = t >= first_task;
        done_again += t < first_task && visits[t] != 0;
    }
    cr_assert(done_again == 0,
              "%s: %d of the %d tasks before the counter's start were done: the host sets "
              "next_task before the launch (here to %d, as if those tasks were done already) "
              "and the blocks must only claim from it. Does the kernel reset next_task itself "
              "(say block 0's thread 0 at its start)? Then a block that starts late resets it "
              "after other blocks have claimed, and their tasks run twice " WB_SEED_HINT,
              what, done_again, first_task, first_task, wb_seed());
    char report[1024];
    size_t bad = wb_compare_ints(visits, once, (size_t)s->tasks, report, sizeof report);
    cr_assert(bad == 0, "%s: %s;\n  %s " WB_SEED_HINT, label, report,
              bad ? visits_mistake(visits, once, s->tasks) : "", wb_seed());
    snprintf(label, sizeof label, "%s: task outputs", what);
    wb_fetch(got, s->out, sizeof(unsigned) * s->n, label);
    size_t first_element = (size_t)first_task * (size_t)s->task_size;
    for (size_t i = 0; i < s->n; i++)
        expected[i] = i < first_element ? (unsigned)WB_POISON_INT : task_result(s->host_in[i]);
    wb_assert_ints_equal((int *)got, (int *)expected, s->n, label);
    snprintf(label, sizeof label, "%s: out", what);
    wb_guarded_check(s->out, label);
    snprintf(label, sizeof label, "%s: visits", what);
    wb_guarded_check(s->visits, label);
    free(got);
    free(expected);
    free(visits);
    free(once);
}

typedef struct {
    int tasks, task_size, blocks, block_size, in_flight;
} task_case;

static void describe_case(char *what, size_t len, const char *entry, const task_case *c, int run)
{
    snprintf(what, len, "%s(tasks = %d, task_size = %d, blocks = %d, block_size = %d, "
             "in_flight = %d), run %d", entry, c->tasks, c->task_size, c->blocks,
             c->block_size, c->in_flight, run + 1);
}

/* The pool's defining property, which right outputs do not show: the
 * tasks are claimed one at a time from the counter, each block's last claim
 * finding none left. */
static void check_claims(const task_case *c, const char *what)
{
    char label[256];
    int blocks;
    snprintf(label, sizeof label, "%s: claims on next_task", what);
    int claims = wb_observe_int(label, tasks_pool_claims(&blocks));
    snprintf(label, sizeof label, "%s: blocks launched", what);
    blocks = wb_observe_int(label, blocks);
    cr_assert(claims == c->tasks + blocks,
              "%s: the counter next_task ends at %d, but a pool whose %d blocks claim every task "
              "from it one at a time, each block's last claim finding none left, ends it at "
              "tasks + blocks = %d: %s " WB_SEED_HINT, what, claims, blocks, c->tasks + blocks,
              claims < c->tasks ? "the tasks were not claimed from the counter (a fixed share "
                                  "per block, such as blockIdx.x, blockIdx.x + gridDim.x, ..., "
                                  "is not a pool: a slow block keeps the others waiting)"
                                : "claims were made by more than thread 0 of each block, or "
                                  "more than once per task (one atomicAdd per task, shared "
                                  "with the block)",
              wb_seed());
}

/* Stage 3 once, checked. */
static void check_pool(task_set *s, const task_case *c, int run)
{
    char what[192], label[256];
    describe_case(what, sizeof what, "tasks_worker_pool", c, run);
    reset_tasks(s);
    int status = tasks_worker_pool(s->in, s->out, s->visits, c->tasks, c->task_size, c->blocks,
                                   c->block_size);
    snprintf(label, sizeof label, "%s: status", what);
    cr_assert(wb_observe_int(label, status) == 0,
              "%s refused to run (see the message above) " WB_SEED_HINT, what, wb_seed());
    check_tasks(s, 0, what);
    check_claims(c, what);
}

/* Stage 4 once, checked, with the latencies (one sentinel after them). */
static void check_feed(task_set *s, const task_case *c, int run)
{
    char what[192], label[256];
    describe_case(what, sizeof what, "tasks_host_fed", c, run);
    reset_tasks(s);
    double *latency = malloc(sizeof(double) * (size_t)(c->tasks + 1));
    cr_assert(latency, "out of host memory");
    for (int t = 0; t <= c->tasks; t++)
        latency[t] = NAN;
    int status = tasks_host_fed(s->in, s->out, s->visits, c->tasks, c->task_size, c->blocks,
                                c->block_size, c->in_flight, latency);
    snprintf(label, sizeof label, "%s: status", what);
    cr_assert(wb_observe_int(label, status) == 0,
              "%s refused to run (see the message above) " WB_SEED_HINT, what, wb_seed());
    snprintf(label, sizeof label, "%s: latencies", what);
    wb_observe(label, latency, sizeof(double) * (size_t)(c->tasks + 1));
    for (int t = 0; t < c->tasks; t++)
        cr_assert(latency[t] > 0.0 && isfinite(latency[t]),
                  "%s: task %d (in enqueue order) has no latency recorded " WB_SEED_HINT, what,
                  t, wb_seed());
    cr_assert(isnan(latency[c->tasks]),
              "%s: a latency was written past the last task " WB_SEED_HINT, what, wb_seed());
    free(latency);
    check_tasks(s, 0, what);
}

/* Each case twice in one process: the queue counters live in device memory
 * that keeps its value between launches, so a launch that does not reset
 * them finds the tasks already claimed the second time. */
static void check_twice(void (*check)(task_set *, const task_case *, int), const task_case *c,
                        const char *stream)
{
    task_set s = make_tasks(c->tasks, c->task_size, stream);
    for (int run = 0; run < 2; run++)
        check(&s, c, run);
    free_tasks(&s);
}

/* A test of check (check_pool or check_feed) on each task case given after
 * its description, each case twice (check_twice). */
#define TASK_CASES_TEST(test_name, check, about, ...)                                     \
    ParameterizedTestParameters(persistent, test_name)                                    \
    {                                                                                     \
        static task_case cases[] = {__VA_ARGS__};                                         \
        return cr_make_param_array(task_case, cases, sizeof cases / sizeof cases[0]);     \
    }                                                                                     \
    ParameterizedTest(task_case *c, persistent, test_name, .description = about)          \
    {                                                                                     \
        check_twice(check, c, #test_name);                                                \
    }

/* blocks 0: as many as can be resident. Few tasks leave blocks idle, many
 * tiny ones make the claims race, 300 and 1000 are no multiple of 256;
 * 96-thread blocks are no power of two, 1024 the largest. */
TASK_CASES_TEST(stage3_worker_pool, check_pool,
                "every task done once by a pool of resident blocks, twice",
                {1, 256, 0, 256, 0},     {1000, 300, 0, 256, 0}, {20000, 1, 0, 256, 0},
                {20000, 256, 0, 256, 0}, {777, 1000, 7, 96, 0},  {64, 5000, 1, 256, 0},
                {500, 3000, 0, 1024, 0})

/* The counter is the host's: it sets next_task before the launch, and the
 * blocks only claim from it. A kernel that also resets it (block 0's thread
 * 0 at its start, say) gives right outputs while block 0 starts first, as
 * it nearly always does; a block that starts late would reset the counter
 * after others had claimed, and their tasks would run twice. Started
 * part-way, such a kernel does the tasks before the start too. The last
 * case leaves nothing to do. */
Test(persistent, stage3_pool_counter_from_host,
     .description = "a pool whose counter the host starts part-way does only the tasks after it")
{
    static const struct {
        task_case c;
        int first_task;
    } cases[] = {{{20000, 1, 0, 256, 0}, 10000}, {{1000, 300, 0, 256, 0}, 999},
                 {{64, 256, 0, 256, 0}, 64}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const task_case *c = &cases[k].c;
        int first_task = cases[k].first_task;
        char what[224], label[256];
        describe_case(what, sizeof what, "tasks_worker_pool_from", c, 0);
        snprintf(what + strlen(what), sizeof what - strlen(what), ", first_task = %d",
                 first_task);
        task_set s = make_tasks(c->tasks, c->task_size, "stage3_pool_counter_from_host");
        reset_tasks(&s);
        int status = tasks_worker_pool_from(first_task, s.in, s.out, s.visits, c->tasks,
                                            c->task_size, c->blocks, c->block_size);
        snprintf(label, sizeof label, "%s: status", what);
        cr_assert(wb_observe_int(label, status) == 0,
                  "%s refused to run (see the message above) " WB_SEED_HINT, what, wb_seed());
        check_tasks(&s, first_task, what);
        check_claims(c, what);
        free_tasks(&s);
    }
}

/* coresident_blocks(part, block_size) must lie between one block and the
 * most an SM can hold (2048 threads on the H100) per SM. */
static int checked_coresident(int part, int block_size)
{
    wb_device dev = wb_device_info();
    int low = dev.sm_count, high = dev.max_threads_per_sm / block_size * dev.sm_count;
    char label[64];
    snprintf(label, sizeof label, "coresident_blocks(%d, %d)", part, block_size);
    int most = wb_observe_int(label, coresident_blocks(part, block_size));
    cr_assert(most >= low && most <= high,
              "coresident_blocks(%d, %d) = %d: with %d SMs and %d-thread blocks expected "
              "between %d and %d (blocks per SM from the occupancy API for the stage %d kernel, "
              "times the SMs; the API's answer depends on the kernel and on the block size "
              "asked about: ask it about this part's kernel with this block_size)", part,
              block_size, most, dev.sm_count, block_size, low, high, part + 1);
    return most;
}

/* A launch that must be refused: returns -1 and launches nothing. */
static void assert_refused(int status, const char *what)
{
    char label[192];
    snprintf(label, sizeof label, "%s: status", what);
    cr_assert(wb_observe_int(label, status) == -1, "%s was not refused " WB_SEED_HINT, what,
              wb_seed());
}

Test(persistent, stage3_pool_limits,
     .description = "the largest pool that fits runs; one block more, or none, is refused")
{
    int most = checked_coresident(2, 256);
    checked_coresident(2, 1024);
    task_case c = {3000, 64, most, 256, 0};
    check_twice(check_pool, &c, "stage3_pool_limits");
    task_set s = make_tasks(10, 256, "stage3 refused");
    assert_refused(tasks_worker_pool(s.in, s.out, s.visits, 10, 256, most + 1, 256),
                   "tasks_worker_pool with one block more than fit");
    assert_refused(tasks_worker_pool(s.in, s.out, s.visits, 10, 256, -1, 256),
                   "tasks_worker_pool with -1 blocks");
    free_tasks(&s);
}

/* The comparisons are given code; this checks that they still work. */
Test(persistent, stage3_comparisons,
     .description = "one launch per task, and one launch of a block per task")
{
    task_case c = {300, 1000, 0, 256, 0};
    task_set s = make_tasks(c.tasks, c.task_size, "stage3 comparisons");
    reset_tasks(&s);
    tasks_launch_per_task(s.in, s.out, s.visits, c.tasks, c.task_size, c.block_size);
    check_tasks(&s, 0, "tasks_launch_per_task(tasks = 300, task_size = 1000)");
    reset_tasks(&s);
    tasks_one_launch(s.in, s.out, s.visits, c.tasks, c.task_size, c.block_size);
    check_tasks(&s, 0, "tasks_one_launch(tasks = 300, task_size = 1000)");
    tasks_one_launch(s.in, s.out, s.visits, 0, c.task_size, c.block_size);
    CUDA_CHECK(cudaDeviceSynchronize());
    free_tasks(&s);
}

/* A ring of one slot is the latency case; 7 slots with 5 blocks make the
 * ring wrap while blocks wait on claims the host has not enqueued yet;
 * 8 blocks on 2 slots read the same slots lap after lap, where a slot
 * read without acquire could come from a stale cache line. */
TASK_CASES_TEST(stage4_host_fed, check_feed,
                "tasks fed through a ring in mapped memory, each done once, twice",
                {1, 256, 1, 256, 1},     {1000, 256, 0, 256, 64}, {3000, 100, 5, 256, 7},
                {500, 1024, 0, 256, 1},  {20000, 32, 0, 256, 4096}, {4000, 32, 8, 256, 2},
                {2000, 500, 3, 96, 3})

Test(persistent, stage4_feed_limits,
     .description = "the largest kernel and ring run; too many blocks or slots are refused")
{
    int most = checked_coresident(3, 256);
    task_case c = {6000, 16, most, 256, FEED_MAX_IN_FLIGHT};
    check_twice(check_feed, &c, "stage4_feed_limits");
    task_set s = make_tasks(10, 256, "stage4 refused");
    assert_refused(tasks_host_fed(s.in, s.out, s.visits, 10, 256, most + 1, 256, 8, NULL),
                   "tasks_host_fed with one block more than fit");
    assert_refused(tasks_host_fed(s.in, s.out, s.visits, 10, 256, 1, 256, 0, NULL),
                   "tasks_host_fed with in_flight = 0");
    assert_refused(tasks_host_fed(s.in, s.out, s.visits, 10, 256, 1, 256,
                                  FEED_MAX_IN_FLIGHT + 1, NULL),
                   "tasks_host_fed with in_flight = FEED_MAX_IN_FLIGHT + 1");
    free_tasks(&s);
}

/* A launch on the bounds: it must run (returns 0). */
static void assert_accepted(int status, const char *what)
{
    char label[192];
    snprintf(label, sizeof label, "%s: status", what);
    cr_assert(wb_observe_int(label, status) == 0, "%s was refused (see the message above), but "
              "it is on the bound and valid " WB_SEED_HINT, what, wb_seed());
}

/* Given code: the ping-pong needs n >= 1; the persistent stages refuse to
 * run under CUDA_LAUNCH_BLOCKING; the pool and the host-fed kernel refuse
 * (status -1, the reason on stderr, nothing launched) blocks outside
 * 1 .. coresident_blocks (0 asks for that many) and a ring outside
 * 1 .. FEED_MAX_IN_FLIGHT. Each bound is tried one step outside and on it;
 * the accepted calls have no hand-off (n = 1) or no task (tasks = 0). */
Test(persistent, given_refuses_bad_arguments,
     .description = "n, blocks and in_flight refused just outside their bounds, accepted on them")
{
    int producer[2] = {WB_POISON_INT, WB_POISON_INT};
    wb_expect_error("pingpong_copy(n = 0): n must be >= 1", "need at least one number",
                    pingpong_copy(0, producer, NULL, false));
    pingpong_copy(1, producer, NULL, false);   /* n = 1: the CPU's 0 alone */
    wb_observe("pingpong_copy(n = 1): producers, and one past the end", producer,
               sizeof producer);
    cr_assert(producer[0] == PRODUCER_CPU && producer[1] == WB_POISON_INT,
              "pingpong_copy(n = 1): producer = {%d, %d past the end}, expected {%d (the CPU), "
              "untouched} (given code: restore it) " WB_SEED_HINT, producer[0], producer[1],
              PRODUCER_CPU, wb_seed());

    /* CUDA_LAUNCH_BLOCKING is read by the given code at each call (CUDA itself
     * read it long ago): any value but 0 is refused. */
    const char *was = getenv("CUDA_LAUNCH_BLOCKING");
    char saved[64];
    snprintf(saved, sizeof saved, "%s", was ? was : "");
    setenv("CUDA_LAUNCH_BLOCKING", "1", 1);
    wb_expect_error("pingpong_persistent under CUDA_LAUNCH_BLOCKING=1", "CUDA_LAUNCH_BLOCKING",
                    pingpong_persistent(1, producer, NULL, false));
    setenv("CUDA_LAUNCH_BLOCKING", "0", 1);
    pingpong_persistent(1, producer, NULL, false);
    if (was)
        setenv("CUDA_LAUNCH_BLOCKING", saved, 1);
    else
        unsetenv("CUDA_LAUNCH_BLOCKING");

    task_set s = make_tasks(1, 32, "given refusals");
    int most = checked_coresident(2, 256);
    assert_refused(tasks_worker_pool(s.in, s.out, s.visits, 0, 32, -1, 256),
                   "tasks_worker_pool(blocks = -1): blocks must be >= 1 (or 0: as many as fit)");
    assert_refused(tasks_worker_pool(s.in, s.out, s.visits, 0, 32, most + 1, 256),
                   "tasks_worker_pool(blocks = coresident_blocks + 1): blocks must be <= "
                   "coresident_blocks");
    assert_accepted(tasks_worker_pool(s.in, s.out, s.visits, 0, 32, 1, 256),
                    "tasks_worker_pool(tasks = 0, blocks = 1)");
    assert_accepted(tasks_worker_pool(s.in, s.out, s.visits, 0, 32, most, 256),
                    "tasks_worker_pool(tasks = 0, blocks = coresident_blocks)");
    assert_accepted(tasks_worker_pool(s.in, s.out, s.visits, 0, 32, 0, 256),
                    "tasks_worker_pool(tasks = 0, blocks = 0: as many as fit)");
    CUDA_CHECK(cudaDeviceSynchronize());

    most = checked_coresident(3, 256);
    assert_refused(tasks_host_fed(s.in, s.out, s.visits, 0, 32, 1, 256, 0, NULL),
                   "tasks_host_fed(in_flight = 0): in_flight must be >= 1");
    assert_refused(tasks_host_fed(s.in, s.out, s.visits, 0, 32, 1, 256, FEED_MAX_IN_FLIGHT + 1,
                                  NULL),
                   "tasks_host_fed(in_flight = FEED_MAX_IN_FLIGHT + 1): in_flight must be <= "
                   "FEED_MAX_IN_FLIGHT");
    assert_refused(tasks_host_fed(s.in, s.out, s.visits, 0, 32, -1, 256, 1, NULL),
                   "tasks_host_fed(blocks = -1): blocks must be >= 1 (or 0: as many as fit)");
    assert_refused(tasks_host_fed(s.in, s.out, s.visits, 0, 32, most + 1, 256, 1, NULL),
                   "tasks_host_fed(blocks = coresident_blocks + 1): blocks must be <= "
                   "coresident_blocks");
    assert_accepted(tasks_host_fed(s.in, s.out, s.visits, 0, 32, 1, 256, 1, NULL),
                    "tasks_host_fed(tasks = 0, blocks = 1, in_flight = 1)");
    assert_accepted(tasks_host_fed(s.in, s.out, s.visits, 0, 32, most, 256, FEED_MAX_IN_FLIGHT,
                                   NULL),
                    "tasks_host_fed(tasks = 0, blocks = coresident_blocks, in_flight = "
                    "FEED_MAX_IN_FLIGHT)");
    free_tasks(&s);
}

/* --------------------------------------------------------- source rules */

/* What no run on the H100 shows reliably: a release or an acquire of the
 * hand-offs made relaxed (x86 and PCIe order most of it anyway), a
 * barrier of the pool left out (handouts/07-persistent.md, "Classic
 * mistakes"). These tests read kernels.cu (wb_test.h, "source rules") and
 * need no GPU. */
WB_SOURCE_SUITE(persistent_source);

#define KERNEL_SIDE_ATOMIC \
    "the kernel shares the counter and the stop flag with the host while both run: " \
    "its load and store of the counter and its load of the flag are all atomic " \
    "(cuda::atomic_ref), or the compiler may keep them in registers"
#define HOST_SIDE_ATOMIC \
    "the host shares the counter with the running kernel: its store of the number " \
    "and its load of the answer are both atomic"
#define HOST_SCOPE \
    "the other side is the host: system scope (system_int), not device_int, whose " \
    "atomics reach only the GPU's own threads"
WB_SOURCE_RULES_TEST(persistent_source, stage2_memory_order,
    {"gpu_turns_persistent", .fresh_accesses = 3, .why = KERNEL_SIDE_ATOMIC},
    {"gpu_turns_persistent", .scope = WB_SYSTEM_SCOPE, .why = HOST_SCOPE},
    {"hand_off_persistent", .fresh_accesses = 2, .why = HOST_SIDE_ATOMIC},
    {"hand_off_persistent", .scope = WB_SYSTEM_SCOPE, .why = HOST_SCOPE})

#define CLAIM_BARRIERS \
    "thread 0 claims with an atomicAdd, a barrier before everyone reads the claim, and " \
    "one after the task (everyone has read it before thread 0 claims again); the whole " \
    "block tests the claim after the first barrier and leaves together (a test inside " \
    "thread 0's branch reads the claim before that barrier, and only thread 0 leaves)"
WB_SOURCE_RULES_TEST(persistent_source, stage3_barriers,
    {"worker_pool", .fresh_accesses = 1, .barriers = 2, .shared = "__shared__",
     .protects = WB_READ_AFTER_WRITE | WB_WRITE_AFTER_READ, .why = CLAIM_BARRIERS})

#define HOST_FED_ORDER \
    "acquire when reading the host's head and when reading seen_head (the task written " \
    "before head moved must be visible), release when passing head on through " \
    "seen_head and when marking a task done (the slot's read is over before the host " \
    "refills it); a barrier after the claim and one after the task"
#define ENQUEUE_RELEASE "release when moving head (the task written before it is visible first)"
#define DONE_ACQUIRE \
    "acquire when reading done[] (the GPU's read of the slot is over before it is " \
    "refilled)"
WB_SOURCE_RULES_TEST(persistent_source, stage4_memory_order,
    {"host_fed", .orderings = 4, .fresh_accesses = 2, .barriers = 2,
     .shared = "__shared__", .protects = WB_READ_AFTER_WRITE | WB_WRITE_AFTER_READ, .why = HOST_FED_ORDER},
    {"enqueue_task", .orderings = 1, .why = ENQUEUE_RELEASE},
    {"enqueue_task", .fence_after = "task",
     .why = "the task first, then head (a release store): head moved before the task is "
            "written lets the GPU claim the slot and read the task it held before"},
    {"host_fed", .fence_after = "run_task", .scope = WB_SYSTEM_SCOPE,
     .why = "done is read by the host: " HOST_SCOPE},
    {"host_fed", .fence_after = "run_task", .after_barrier = true,
     .why = "the barrier after the task, then thread 0 marks it done (release): marked before "
            "the barrier, done says complete while the block's other threads still write "
            "their share of out, and the release orders thread 0's writes only"},
    {"enqueue_task", .scope = WB_SYSTEM_SCOPE, .why = HOST_SCOPE},
    {"oldest_done", .scope = WB_SYSTEM_SCOPE, .why = HOST_SCOPE},
    {"oldest_done", .orderings = 1, .why = DONE_ACQUIRE},
    {"oldest_done", .fence_after = "load", .why = DONE_ACQUIRE})

/* ------------------------------------------------------------- timing */

/* The round trips of one way, sorted and summarised in milliseconds. */
static wb_timing summarise(double *us, int count)
{
    double median = wb_median(us, count);   /* sorts us */
    return (wb_timing){us[0] * 1e-3, median * 1e-3, us[count - 1] * 1e-3, 0, count};
}

Test(persistent, given_empty_launch_timing,
     .description = "the given empty-launch timer fills exactly reps times, each positive")
{
    enum { REPS = 20 };
    double us[REPS + 1];
    us[REPS] = -12345.0;   /* a canary just past the array it is given */
    empty_launch_sync_us(REPS, us);
    /* Each time includes the wait for the kernel: the last one is done. */
    cudaError_t idle = cudaStreamQuery(0);
    cr_assert(idle == cudaSuccess,
              "empty_launch_sync_us returned while its last kernel was still queued (%s): each "
              "time must include cudaDeviceSynchronize (given code: restore it)",
              cudaGetErrorName(idle));
    for (int i = 0; i < REPS; i++)
        cr_assert(us[i] > 0.0 && us[i] < 1e7,
                  "empty_launch_sync_us: time %d is %g us, expected a positive time (given "
                  "code: restore it)", i, us[i]);
    cr_assert(us[REPS] == -12345.0,
              "empty_launch_sync_us(%d, us) wrote us[%d], past the end of the array (given "
              "code: restore it)", REPS, REPS);
}

/* The graded ping-pong: one run of stage 2, poisoned before and checked
 * after every timed run. A hand-off has no inputs: every run moves the same
 * numbers, so a run that skipped its round trips shows as unwritten. */
typedef struct {
    pingpong_arrays arrays;
    int runs;
} timed_pingpong;

static void run_timed_pingpong(void *context)
{
    pingpong_arrays *a = &((timed_pingpong *)context)->arrays;
    pingpong_persistent(a->n, a->producer, a->round_trip, false);
}

static void poison_timed_pingpong(void *context, int repetition, uint64_t seed)
{
    (void)repetition, (void)seed;
    poison_pingpong(&((timed_pingpong *)context)->arrays);
}

static void verify_timed_pingpong(void *context, int repetition)
{
    timed_pingpong *t = context;
    char what[96];
    snprintf(what, sizeof what, "stage 2, timed run %d of %d, n = %d", repetition + 1, t->runs,
             t->arrays.n);
    verify_pingpong(&t->arrays, what);
}

Test(persistent, timing_handoffs,
     .description = "round trip: stage 2 timed around the whole call (graded), each way's median")
{
    enum { HANDOFFS = 1000, GRADED_HANDOFFS = 10000, GRADED_RUNS = 5 };
    static double us[HANDOFFS];
    /* The graded time is taken here, around the whole call of stage 2 (the
     * kernel launched, GRADED_HANDOFFS round trips, the kernel stopped), by
     * wb_time_gpu_reps, which the grader times with its own clock: the round
     * trips in the table are timed by the ping-pong's own code, which is
     * given code inside kernels.cu, where the code under test can change it.
     * Every timed run is checked; its time is given per round trip (calls =
     * GRADED_HANDOFFS). With 10000 round trips a run lasts about 29 ms, and
     * the launch, the allocations and the stop add little to each (H100,
     * 2026-11-27: 2.87 us per round trip by the whole call, 2.66 us the given
     * timer's median). A hand-off moves one int each way; its cost is
     * latency, for which no sound floor follows from bytes or flops, so both
     * are 0. */
    timed_pingpong graded = {pingpong_arrays_new(2 * GRADED_HANDOFFS + 1), GRADED_RUNS};
    wb_timing whole = wb_observe_timing(
        "stage 2, whole call per round trip",
        wb_time_gpu_reps(run_timed_pingpong, &graded, 1, GRADED_RUNS, GRADED_HANDOFFS,
                         (wb_rep_checks){poison_timed_pingpong, verify_timed_pingpong}),
        0.0, 0.0);
    pingpong_arrays_free(&graded.arrays);

    /* Shown only: each way's own round trips (the given code's timer). */
    wb_timing t[PINGPONG_WAYS + 1];
    empty_launch_sync_us(HANDOFFS, us);
    t[0] = summarise(us, HANDOFFS);
    int *producer = malloc(sizeof(int) * (2 * HANDOFFS + 1));
    cr_assert(producer, "out of host memory");
    for (int w = 0; w < PINGPONG_WAYS; w++) {
        pingpong_ways[w].run(2 * HANDOFFS + 1, producer, us, false);
        t[w + 1] = summarise(us, HANDOFFS);
    }
    wb_observe("the round trips", t, sizeof t);
    wb_table *table = wb_table_new("persistent", "ping-pong round trip per hand-off (us)",
                                   "stage|method|median (us)|max (us)");
    wb_table_row(table, "-|empty launch + sync|%.2f|%.2f", t[0].median_ms * 1e3,
                 t[0].max_ms * 1e3);
    for (int w = 0; w < PINGPONG_WAYS; w++)
        wb_table_row(table, "%s|%s|%.2f|%.2f", pingpong_ways[w].stage, pingpong_ways[w].name,
                     t[w + 1].median_ms * 1e3, t[w + 1].max_ms * 1e3);
    wb_table_row(table, "2|whole call / round trips (graded)|%.2f|%.2f", whole.median_ms * 1e3,
                 whole.max_ms * 1e3);
    wb_table_print(table, stdout);
    wb_table_free(table);
    free(producer);
}
