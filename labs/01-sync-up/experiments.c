/*
 * sync-up-experiments: runs the lecture's five versions (experiments.cu),
 * each run in a child process with a time limit, and classifies what it
 * printed: correct order, wrong order, missing/extra/duplicate lines, hung
 * (stopped), or error. `sync-up-experiments --help` for the options.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "workbook.h"

void sync_up_experiment(int version, int count, int threads);

static const char *version_summary[] = {
    "no synchronisation",
    "shared counter, __syncthreads() in the loop",
    "volatile global counter, spin",
    "volatile shared counter, spin",
    "atomicInc tickets, plain read in while",
};

enum outcome { CORRECT, WRONG_ORDER, MISSING_OR_EXTRA, HUNG, ERROR, OUTCOMES };
static const char *outcome_name[] = {"correct order", "wrong order",
                                     "missing, extra or duplicate lines", "hung, stopped",
                                     "error"};

typedef struct {
    char *text;
    size_t len;
    int status;    /* exit status of the child, -1 when it was stopped */
} capture;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* Runs one version in a child whose stdout is a pipe; kills it after
 * timeout_s seconds. */
static capture run_child(int version, int count, int threads, double timeout_s)
{
    int fds[2];
    if (pipe(fds) != 0)
        wb_fail("pipe: %s", strerror(errno));
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        wb_fail("fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        char reason[256];
        if (!wb_gpu_usable(reason, sizeof reason)) {
            fprintf(stderr, "skipped: %s\n", reason);
            _exit(77);
        }
        sync_up_experiment(version, count, threads);
        fflush(stdout);
        _exit(0);
    }
    close(fds[1]);
    capture c = {NULL, 0, 0};
    size_t cap = 0;
    double deadline = now_s() + timeout_s;
    for (;;) {
        double left = deadline - now_s();
        struct pollfd p = {fds[0], POLLIN, 0};
        if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) == 0) {
            kill(pid, SIGKILL);
            c.status = -1;
            break;
        }
        if (c.len + 4096 + 1 > cap) {
            cap = 2 * cap + 8192;
            c.text = realloc(c.text, cap);
            if (!c.text)
                wb_fail("out of host memory");
        }
        ssize_t got = read(fds[0], c.text + c.len, 4096);
        if (got <= 0)
            break;
        c.len += (size_t)got;
    }
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    if (c.status == 0)
        c.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (!c.text)
        c.text = malloc(1);
    c.text[c.len] = '\0';
    return c;
}

static int compare_lines(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Splits text into lines in place; returns how many. */
static int split_lines(char *text, char ***lines)
{
    int n = 0, cap = 16;
    *lines = malloc(sizeof(char *) * cap);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (n == cap)
            *lines = realloc(*lines, sizeof(char *) * (cap *= 2));
        (*lines)[n++] = line;
    }
    return n;
}

static enum outcome classify(capture *c, int count, int threads, int *printed)
{
    *printed = 0;
    if (c->status == -1)
        return HUNG;
    if (c->status != 0)
        return ERROR;
    char **got, **want;
    int n = split_lines(c->text, &got);
    *printed = n;
    char *expected = malloc((size_t)count * 24 + 1), *end = expected;
    for (int i = 0; i < count; i++)
        end += sprintf(end, "%d: %d\n", i % threads, i);
    int m = split_lines(expected, &want);
    enum outcome o = CORRECT;
    for (int i = 0; i < n && o == CORRECT; i++)
        if (n != m || strcmp(got[i], want[i]) != 0)
            o = WRONG_ORDER;
    if (n != m)
        o = MISSING_OR_EXTRA;
    else if (o == WRONG_ORDER) {
        qsort(got, n, sizeof *got, compare_lines);
        qsort(want, m, sizeof *want, compare_lines);
        for (int i = 0; i < n; i++)
            if (strcmp(got[i], want[i]) != 0)
                o = MISSING_OR_EXTRA;
    }
    free(got);
    free(want);
    free(expected);
    return o;
}

static void usage(FILE *out, const char *program)
{
    fprintf(out,
            "usage: %s [--version K] [--threads T] [--count N] [--runs R] [--timeout S]\n"
            "               [--show]\n"
            "Runs the lecture's versions 1..5 of \"Let's sync-up!\" (all, or only K) with\n"
            "one block of T threads (default 3) printing 0 .. N-1 (default 10), R times\n"
            "each (default 5), every run in its own process stopped after S seconds\n"
            "(default 5), and says for each run whether the lines came out in the\n"
            "correct order, in the wrong order, with lines missing, extra or\n"
            "duplicated, or whether it hung and was stopped. --show prints each run's\n"
            "output. Version 5 counts with atomicInc(&n, 100) as in the lecture, so\n"
            "it never ends for N > 100. Exits 77 without a GPU.\n",
            program);
}

int main(int argc, char **argv)
{
    int only = 0, threads = 3, count = 10, runs = 5, show = 0;
    double timeout_s = 5.0;
    static const struct option options[] = {
        {"version", required_argument, 0, 'v'}, {"threads", required_argument, 0, 't'},
        {"count", required_argument, 0, 'n'},   {"runs", required_argument, 0, 'r'},
        {"timeout", required_argument, 0, 's'}, {"show", no_argument, 0, 'w'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    for (int opt; (opt = getopt_long(argc, argv, "v:t:n:r:s:wh", options, NULL)) != -1;) {
        switch (opt) {
        case 'v': only = atoi(optarg); break;
        case 't': threads = atoi(optarg); break;
        case 'n': count = atoi(optarg); break;
        case 'r': runs = atoi(optarg); break;
        case 's': timeout_s = atof(optarg); break;
        case 'w': show = 1; break;
        case 'h': usage(stdout, argv[0]); return 0;
        default: usage(stderr, argv[0]); return 2;
        }
    }
    if (only < 0 || only > 5 || threads < 1 || threads > 1024 || count < 0 || count > 100000 ||
        runs < 1 || !(timeout_s > 0)) {
        fprintf(stderr, "error: need 1 <= K <= 5, 1 <= T <= 1024, 0 <= N <= 100000, R >= 1 "
                        "and S > 0 (see --help)\n");
        return 2;
    }

    char title[160];
    snprintf(title, sizeof title,
             "the lecture's versions, 1 block of %d threads printing 0..%d, %d runs each, "
             "stopped after %g s", threads, count - 1, runs, timeout_s);
    wb_table *table = wb_table_new("sync-up-experiments", title,
                                   "version|what it does|threads|count|correct|wrong order|"
                                   "missing/extra|hung|error");
    for (int v = only ? only : 1; v <= (only ? only : 5); v++) {
        int tally[OUTCOMES] = {0};
        for (int r = 1; r <= runs; r++) {
            capture c = run_child(v, count, threads, timeout_s);
            if (c.status == 77) {
                fprintf(stderr, "skipped: no usable GPU\n");
                return 77;
            }
            if (show)
                printf("--- version %d, run %d:\n%s", v, r, c.text);
            int printed;
            enum outcome o = classify(&c, count, threads, &printed);
            tally[o]++;
            printf("version %d, run %d: %s (%d lines, expected %d)\n", v, r, outcome_name[o],
                   printed, count);
            free(c.text);
        }
        wb_table_row(table, "%d|%s|%d|%d|%d|%d|%d|%d|%d", v, version_summary[v - 1], threads,
                     count, tally[CORRECT], tally[WRONG_ORDER], tally[MISSING_OR_EXTRA],
                     tally[HUNG], tally[ERROR]);
    }
    wb_table_print(table, stdout);
    wb_table_free(table);
    return 0;
}
