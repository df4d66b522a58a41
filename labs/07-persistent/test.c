/*
 * Lab 07 tests. Ping-pong (stages 1-3): the numbers 0 .. n-1 come out in
 * order, each from the right side, and nothing past n-1. Tasks (stages 4-5):
 * every output right and every task done exactly once. Every host wait in
 * the lab has a deadline, and every test a time limit, so a hang fails.
 */
#include <math.h>
#include <stdlib.h>

#include "lab.h"
#include "wb_test.h"

WB_GPU_SUITE(persistent, .timeout = 30);

typedef void (*pingpong_fn)(int n, int *producer, double *round_trip_us, bool print);

static void check_pingpong(pingpong_fn run, int n, const char *what)
{
    int *producer = malloc(sizeof(int) * (size_t)n), *expected = malloc(sizeof(int) * (size_t)n);
    double *round_trip = malloc(sizeof(double) * (size_t)(n / 2 + 1));
    cr_assert(producer && expected && round_trip, "out of host memory for n = %d", n);
    for (int k = 0; k < n; k++) {
        producer[k] = WB_POISON_INT;
        expected[k] = k % 2 == 0 ? PRODUCER_CPU : PRODUCER_GPU;
    }
    for (int i = 0; i < n / 2; i++)
        round_trip[i] = NAN;
    run(n, producer, round_trip, false);
    char message[128];
    snprintf(message, sizeof message, "%s, n = %d: producer of each number (1 = CPU, 2 = GPU)",
             what, n);
    wb_assert_ints_equal(producer, expected, (size_t)n, message);
    for (int i = 0; i < n / 2; i++)
        cr_assert(round_trip[i] > 0.0, "%s, n = %d: hand-off %d has no time recorded", what, n,
                  i);
    free(producer);
    free(expected);
    free(round_trip);
}

ParameterizedTestParameters(persistent, stage1_copy_and_relaunch)
{
    static int sizes[] = {1, 2, 11, 1000};
    return cr_make_param_array(int, sizes, sizeof sizes / sizeof sizes[0]);
}

ParameterizedTest(int *n, persistent, stage1_copy_and_relaunch,
                  .description = "0..n-1, a cudaMemcpy and a launch per GPU number")
{
    check_pingpong(pingpong_copy, *n, "pingpong_copy");
}

ParameterizedTestParameters(persistent, stage2_mapped_and_relaunch)
{
    static int sizes[] = {1, 2, 11, 1000};
    return cr_make_param_array(int, sizes, sizeof sizes / sizeof sizes[0]);
}

ParameterizedTest(int *n, persistent, stage2_mapped_and_relaunch,
                  .description = "0..n-1, the counter in mapped pinned memory")
{
    check_pingpong(pingpong_mapped, *n, "pingpong_mapped");
}

Test(persistent, stage2_prints_in_order, .init = cr_redirect_stdout,
     .description = "the course's exercise: 0..10, the CPU printing the even numbers")
{
    int producer[11];
    pingpong_mapped(11, producer, NULL, true);
    fflush(stdout);
    cr_assert_stdout_eq_str("0\n\t1\n2\n\t3\n4\n\t5\n6\n\t7\n8\n\t9\n10\n",
                            "the CPU prints k, the GPU a tab and k, in the order 0..10");
}

ParameterizedTestParameters(persistent, stage3_persistent_kernel)
{
    static int sizes[] = {1, 2, 11, 1000, 20001};
    return cr_make_param_array(int, sizes, sizeof sizes / sizeof sizes[0]);
}

ParameterizedTest(int *n, persistent, stage3_persistent_kernel,
                  .description = "0..n-1, one kernel taking turns with the CPU")
{
    check_pingpong(pingpong_persistent, *n, "pingpong_persistent");
}

/* ------------------------------------------------------------- tasks */

typedef struct {
    int tasks, task_size;
    size_t n;
    unsigned *in, *out;   /* device */
    int *visits;          /* device */
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
    CUDA_CHECK(cudaMalloc((void **)&s.in, sizeof(unsigned) * s.n));
    CUDA_CHECK(cudaMalloc((void **)&s.out, sizeof(unsigned) * s.n));
    CUDA_CHECK(cudaMalloc((void **)&s.visits, sizeof(int) * (size_t)tasks));
    CUDA_CHECK(cudaMemcpy(s.in, s.host_in, sizeof(unsigned) * s.n, cudaMemcpyHostToDevice));
    wb_poison_ints((int *)s.out, s.n);
    CUDA_CHECK(cudaMemset(s.visits, 0, sizeof(int) * (size_t)tasks));
    return s;
}

static void free_tasks(task_set *s)
{
    CUDA_CHECK(cudaFree(s->in));
    CUDA_CHECK(cudaFree(s->out));
    CUDA_CHECK(cudaFree(s->visits));
    free(s->host_in);
}

/* Every element right, every task visited exactly once; frees the set. */
static void check_tasks(task_set *s, const char *what)
{
    CUDA_CHECK(cudaDeviceSynchronize());
    unsigned *got = malloc(sizeof(unsigned) * s->n), *expected = malloc(sizeof(unsigned) * s->n);
    int *visits = malloc(sizeof(int) * (size_t)s->tasks), *once = malloc(sizeof(int) * (size_t)s->tasks);
    cr_assert(got && expected && visits && once, "out of host memory");
    CUDA_CHECK(cudaMemcpy(got, s->out, sizeof(unsigned) * s->n, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(visits, s->visits, sizeof(int) * (size_t)s->tasks,
                          cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < s->n; i++)
        expected[i] = task_result(s->host_in[i]);
    for (int t = 0; t < s->tasks; t++)
        once[t] = 1;
    char message[192];
    snprintf(message, sizeof message, "%s: times each task was done (must be 1)", what);
    wb_assert_ints_equal(visits, once, (size_t)s->tasks, message);
    snprintf(message, sizeof message, "%s: task outputs", what);
    wb_assert_ints_equal((int *)got, (int *)expected, s->n, message);
    free(got);
    free(expected);
    free(visits);
    free(once);
    free_tasks(s);
}

typedef struct {
    int tasks, task_size, blocks, in_flight;
} task_case;

ParameterizedTestParameters(persistent, stage4_worker_pool)
{
    /* blocks 0: as many as can be resident. Few tasks leave blocks idle, many
     * tiny ones make the claims race, 300 and 1000 are no multiple of 256. */
    static task_case cases[] = {
        {1, 256, 0, 0}, {1000, 300, 0, 0}, {20000, 1, 0, 0}, {777, 1000, 7, 0}, {64, 5000, 1, 0},
    };
    return cr_make_param_array(task_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(task_case *c, persistent, stage4_worker_pool,
                  .description = "every task done once by a pool of resident blocks")
{
    char what[128];
    snprintf(what, sizeof what, "tasks_worker_pool(tasks = %d, task_size = %d, blocks = %d)",
             c->tasks, c->task_size, c->blocks);
    task_set s = make_tasks(c->tasks, c->task_size, what);
    int status = tasks_worker_pool(s.in, s.out, s.visits, c->tasks, c->task_size, c->blocks, 256);
    cr_assert(status == 0, "%s refused to run (see the message above)", what);
    check_tasks(&s, what);
}

Test(persistent, stage4_refuses_too_many_blocks,
     .description = "a pool larger than can be resident is refused, not launched")
{
    wb_device dev = wb_device_info();
    int most = coresident_blocks(2, 256);
    cr_assert(most >= dev.sm_count && most <= 2048 / 256 * dev.sm_count,
              "coresident_blocks(2, 256) = %d: with %d SMs and 256-thread blocks expected "
              "between %d and %d (blocks per SM from the occupancy API, times the SMs)",
              most, dev.sm_count, dev.sm_count, 2048 / 256 * dev.sm_count);
    task_set s = make_tasks(10, 256, "refused pool");
    cr_assert(tasks_worker_pool(s.in, s.out, s.visits, 10, 256, most + 1, 256) == -1,
              "tasks_worker_pool with %d blocks (1 more than fit) was not refused", most + 1);
    free_tasks(&s);
}

ParameterizedTestParameters(persistent, stage5_host_fed)
{
    /* A ring of one slot is the latency case; 7 slots with 5 blocks make the
     * ring wrap while blocks wait on claims the host has not enqueued yet. */
    static task_case cases[] = {
        {1, 256, 1, 1}, {1000, 256, 0, 64}, {3000, 100, 5, 7}, {500, 1024, 0, 1}, {20000, 32, 0, 4096},
    };
    return cr_make_param_array(task_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(task_case *c, persistent, stage5_host_fed,
                  .description = "tasks fed through a ring in mapped memory, each done once")
{
    char what[160];
    snprintf(what, sizeof what,
             "tasks_host_fed(tasks = %d, task_size = %d, blocks = %d, in_flight = %d)", c->tasks,
             c->task_size, c->blocks, c->in_flight);
    task_set s = make_tasks(c->tasks, c->task_size, what);
    double *latency = malloc(sizeof(double) * (size_t)c->tasks);
    cr_assert(latency, "out of host memory");
    for (int t = 0; t < c->tasks; t++)
        latency[t] = NAN;
    int status = tasks_host_fed(s.in, s.out, s.visits, c->tasks, c->task_size, c->blocks, 256,
                                c->in_flight, latency);
    cr_assert(status == 0, "%s refused to run (see the message above)", what);
    for (int t = 0; t < c->tasks; t++)
        cr_assert(latency[t] > 0.0, "%s: task %d has no latency recorded", what, t);
    free(latency);
    check_tasks(&s, what);
}

Test(persistent, stage5_refuses_bad_launches,
     .description = "too many blocks or a ring of 0 slots is refused")
{
    int most = coresident_blocks(3, 256);
    cr_assert(most >= 1, "coresident_blocks(3, 256) = %d", most);
    task_set s = make_tasks(10, 256, "refused feed");
    cr_assert(tasks_host_fed(s.in, s.out, s.visits, 10, 256, most + 1, 256, 8, NULL) == -1,
              "tasks_host_fed with %d blocks (1 more than fit) was not refused", most + 1);
    cr_assert(tasks_host_fed(s.in, s.out, s.visits, 10, 256, 1, 256, 0, NULL) == -1,
              "tasks_host_fed with in_flight = 0 was not refused");
    free_tasks(&s);
}

/* ------------------------------------------------------------- timing */

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

Test(persistent, timing_handoffs, .description = "median round trip of 1000 hand-offs each way")
{
    enum { HANDOFFS = 1000 };
    static double us[HANDOFFS];
    static const struct {
        const char *stage, *name;
        pingpong_fn run;
    } ways[] = {{"1", "copy + relaunch", pingpong_copy},
                {"2", "mapped + relaunch + sync", pingpong_mapped},
                {"3", "persistent kernel", pingpong_persistent}};
    wb_table *table = wb_table_new("persistent", "ping-pong round trip per hand-off (us)",
                                   "stage|method|median (us)|max (us)");
    empty_launch_sync_us(HANDOFFS, us);
    qsort(us, HANDOFFS, sizeof us[0], compare_doubles);
    wb_table_row(table, "-|empty launch + sync|%.2f|%.2f", us[HANDOFFS / 2], us[HANDOFFS - 1]);
    int *producer = malloc(sizeof(int) * (2 * HANDOFFS + 1));
    cr_assert(producer, "out of host memory");
    for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++) {
        ways[w].run(2 * HANDOFFS + 1, producer, us, false);
        qsort(us, HANDOFFS, sizeof us[0], compare_doubles);
        wb_table_row(table, "%s|%s|%.2f|%.2f", ways[w].stage, ways[w].name, us[HANDOFFS / 2],
                     us[HANDOFFS - 1]);
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
    free(producer);
}
