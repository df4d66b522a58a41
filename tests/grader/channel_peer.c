/*
 * A test process without a GPU or Criterion that speaks the grader's
 * channel (common/wb_channel.h), for tests/grader/test_channel.py. Like a
 * Criterion runner it says hello, then runs one case in a worker (a child)
 * that begins the case, sends its entries and finishes; what the worker does
 * next is the behaviour under test.
 *
 *   channel_peer honest REPS CALLS WORK_US  timed repetitions of WORK_US us of
 *                                            busy work, then the seeds it got
 *   channel_peer late                       a wrong value, then the right one
 *                                            after the finish: from atexit, a
 *                                            child, and a worker begun anew
 *   channel_peer flood                      observations without end
 *   channel_peer silent                     begins the case, then waits for ever
 *   channel_peer early REPS WORK_US         as honest, but each 'done' is sent at
 *                                            once after 'go' (as code under test
 *                                            could), the test's own after the work
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wb_channel.h"

#define CASE "peer.case"

static void need(bool ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "channel_peer: %s failed\n", what);
        exit(2);
    }
}

static void begin(void)
{
    char heard;
    need(wb_channel_ask(WB_ENTRY_BEGIN, CASE, NULL, 0, &heard, 1), "begin");
}

static void finish(void)
{
    uint64_t launches = 1;
    need(wb_channel_send(WB_ENTRY_FINISH, "", &launches, sizeof launches), "finish");
}

static void observe_int(const char *what, int value)
{
    need(wb_channel_send(WB_ENTRY_OBSERVATION, what, &value, sizeof value), "observation");
}

static void busy_us(long us)
{
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do
        clock_gettime(CLOCK_MONOTONIC, &now);
    while ((now.tv_sec - start.tv_sec) * 1000000L + (now.tv_nsec - start.tv_nsec) / 1000 < us);
}

/* early: a 'done' of the code under test's at once after 'go', then the
 * test's own after the work. */
static void honest(int repetitions, int calls, long work_us, bool early)
{
    uint64_t *seeds = calloc((size_t)repetitions, sizeof *seeds);
    need(seeds != NULL, "memory");
    begin();
    for (int i = 0; i < repetitions; i++) {
        int32_t numbers[2] = {i, calls};
        char go;
        need(wb_channel_ask(WB_ENTRY_READY, "", numbers, sizeof numbers, &seeds[i], sizeof seeds[i]),
             "ready");
        need(wb_channel_ask(WB_ENTRY_SET, "", NULL, 0, &go, 1), "set");
        if (early)
            need(wb_channel_send(WB_ENTRY_DONE, "", NULL, 0), "early done");
        busy_us(work_us);
        need(wb_channel_send(WB_ENTRY_DONE, "", NULL, 0), "done");
    }
    need(wb_channel_send(WB_ENTRY_LABEL, "peer series", NULL, 0), "label");
    need(wb_channel_send(WB_ENTRY_OBSERVATION, "seeds", seeds, sizeof *seeds * (size_t)repetitions),
         "seeds");
    finish();
    free(seeds);
}

static void rewrite(void)
{
    begin();
    observe_int("value", 42);
    finish();
}

static void late(void)
{
    begin();
    observe_int("value", 41);
    finish();
    observe_int("value", 42);             /* after the finish, same connection */
    atexit(rewrite);                      /* begun anew by the same worker */
    if (fork() == 0) {                    /* a child: its own connection */
        rewrite();
        _exit(0);
    }
    wait(NULL);
}

static void flood(void)
{
    static char block[1 << 20];
    begin();
    for (;;)
        need(wb_channel_send(WB_ENTRY_OBSERVATION, "flood", block, sizeof block), "flood");
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0) {
        fprintf(stderr, "usage: channel_peer honest REPS CALLS WORK_US | early REPS WORK_US | late | flood | silent "
                        "(with WB_CHANNEL set)\n");
        return argc < 2 ? 2 : 0;
    }
    need(wb_channel_send(WB_ENTRY_HELLO, "", NULL, 0), "hello");
    pid_t worker = fork();
    if (worker == 0) {
        if (strcmp(argv[1], "honest") == 0 && argc == 5)
            honest(atoi(argv[2]), atoi(argv[3]), atol(argv[4]), false);
        else if (strcmp(argv[1], "early") == 0 && argc == 4)
            honest(atoi(argv[2]), 1, atol(argv[3]), true);
        else if (strcmp(argv[1], "late") == 0)
            late();
        else if (strcmp(argv[1], "flood") == 0)
            flood();
        else if (strcmp(argv[1], "silent") == 0) {
            begin();
            for (;;)
                pause();
        } else {
            fprintf(stderr, "channel_peer: unknown mode %s\n", argv[1]);
            return 2;
        }
        exit(0);
    }
    int status = 0;
    waitpid(worker, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
