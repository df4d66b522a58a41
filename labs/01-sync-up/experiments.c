/*
 * sync-up-experiments: runs the lecture's five versions (experiments.cu),
 * each run in a child process with a time limit, and classifies what it
 * printed: correct order, wrong order, missing/extra/duplicate lines, hung
 * (stopped), or error. With --litmus it runs the message-passing litmus
 * test across SMs instead, in four versions, and counts how often the
 * reader found stale data. `sync-up-experiments --help` for the options.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "experiments.h"
#include "workbook.h"

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
    double deadline = 1e-3 * wb_host_ms() + timeout_s;
    for (;;) {
        double left = deadline - 1e-3 * wb_host_ms();
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
            "       %s --litmus [--variant V] [--read-first yes|no|both] [--rounds K]\n"
            "               [--runs R] [--timeout S]\n"
            "Runs the lecture's versions 1..5 of \"Let's sync-up!\" (all, or only K) with\n"
            "one block of T threads (default 3) printing 0 .. N-1 (default 10), R times\n"
            "each (default 5), every run in its own process stopped after S seconds\n"
            "(default 5), and says for each run whether the lines came out in the\n"
            "correct order, in the wrong order, with lines missing, extra or\n"
            "duplicated, or whether it hung and was stopped. --show prints each run's\n"
            "output. Version 5 counts with atomicInc(&n, 100) as in the lecture, so\n"
            "it never ends for N > 100.\n"
            "\n"
            "--litmus runs the message-passing litmus test instead: a writer block on\n"
            "one SM stores data, then a flag; a reader block on another SM waits for\n"
            "the flag, then loads the data, and counts the rounds in which it still\n"
            "found the old value (stale). K rounds per run (default 100000, at most\n"
            "1000000), R runs (default 5), in the versions V (all, or only V):\n"
            "  1  plain: a volatile flag, no fence\n"
            "  2  a __threadfence() between the writer's two stores\n"
            "  3  and one between the reader's two loads\n"
            "  4  the flag a cuda::atomic_ref: release store, acquire load\n"
            "each with and without the reader loading the data once before it waits\n"
            "(--read-first, default both). Every wait gives up after S seconds (default\n"
            "5), so that no run can hang; the rounds not finished are counted as given\n"
            "up. A count of 0 stale rounds does not prove a version right: the memory\n"
            "model says which versions may see stale data.\n"
            "\n"
            "Exits 77 without a GPU, 2 for bad options.\n",
            program, program);
}

static void run_versions(int only, int threads, int count, int runs, double timeout_s, int show)
{
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
                exit(77);
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
}

static const char *litmus_writer[] = {"data; flag (volatile)", "data; fence; flag (volatile)",
                                      "data; fence; flag (volatile)", "data; flag (release)"};
static const char *litmus_reader[] = {"flag (volatile); data", "flag (volatile); data",
                                      "flag (volatile); fence; data", "flag (acquire); data"};

/* read_first: 0 no, 1 yes, 2 both. */
static void run_litmus(int only, int read_first, int rounds, int runs, double timeout_s)
{
    char reason[256];
    if (!wb_gpu_usable(reason, sizeof reason)) {
        fprintf(stderr, "skipped: %s\n", reason);
        exit(77);
    }
    char title[512];
    snprintf(title, sizeof title,
             "message passing across SMs, %s, %d runs of %d rounds, waits given up after %g s",
             wb_device_info().name, runs, rounds, timeout_s);
    wb_table *table = wb_table_new("sync-up-litmus", title,
                                   "version|writer|reader|reader reads data first|rounds|"
                                   "fresh|stale|given up|SMs (writer, reader)");
    for (int v = only ? only : 1; v <= (only ? only : LITMUS_VARIANTS); v++)
        for (int first = read_first == 1; first <= (read_first != 0); first++) {
            litmus_counts total = {0, 0, 0, 0, 0};
            int same_sm = 0;
            for (int r = 1; r <= runs; r++) {
                litmus_counts c = sync_up_litmus(v, first, rounds, timeout_s);
                total.fresh += c.fresh;
                total.stale += c.stale;
                total.gave_up += c.gave_up;
                total.writer_sm = c.writer_sm;
                total.reader_sm = c.reader_sm;
                same_sm += c.writer_sm == c.reader_sm;
                printf("version %d, %s, run %d: %lld fresh, %lld stale, %lld given up "
                       "(SMs %d and %d)\n", v, first ? "reads first" : "no early read", r,
                       c.fresh, c.stale, c.gave_up, c.writer_sm, c.reader_sm);
            }
            char sms[64];
            if (same_sm)
                snprintf(sms, sizeof sms, "the same SM in %d runs", same_sm);
            else
                snprintf(sms, sizeof sms, "%d, %d (last run)", total.writer_sm, total.reader_sm);
            wb_table_row(table, "%d|%s|%s|%s|%lld|%lld|%lld|%lld|%s", v, litmus_writer[v - 1],
                         litmus_reader[v - 1], first ? "yes" : "no", (long long)runs * rounds,
                         total.fresh, total.stale, total.gave_up, sms);
        }
    wb_table_print(table, stdout);
    wb_table_free(table);
}

int main(int argc, char **argv)
{
    int only = 0, threads = 3, count = 10, runs = 5, show = 0;
    int litmus = 0, variant = 0, read_first = 2, rounds = 100000, versions_only = 0;
    double timeout_s = 5.0;
    enum { LITMUS = 256, VARIANT, READ_FIRST, ROUNDS };
    static const struct option options[] = {
        {"version", required_argument, 0, 'v'}, {"threads", required_argument, 0, 't'},
        {"count", required_argument, 0, 'n'},   {"runs", required_argument, 0, 'r'},
        {"timeout", required_argument, 0, 's'}, {"show", no_argument, 0, 'w'},
        {"litmus", no_argument, 0, LITMUS},     {"variant", required_argument, 0, VARIANT},
        {"read-first", required_argument, 0, READ_FIRST},
        {"rounds", required_argument, 0, ROUNDS},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    for (int opt; (opt = getopt_long(argc, argv, "v:t:n:r:s:wh", options, NULL)) != -1;) {
        switch (opt) {
        case 'v': only = atoi(optarg); versions_only = 1; break;
        case 't': threads = atoi(optarg); versions_only = 1; break;
        case 'n': count = atoi(optarg); versions_only = 1; break;
        case 'r': runs = atoi(optarg); break;
        case 's': timeout_s = atof(optarg); break;
        case 'w': show = 1; versions_only = 1; break;
        case LITMUS: litmus = 1; break;
        case VARIANT: variant = atoi(optarg); litmus = litmus ? litmus : -1; break;
        case READ_FIRST:
            read_first = !strcmp(optarg, "no") ? 0 : !strcmp(optarg, "yes") ? 1
                       : !strcmp(optarg, "both") ? 2 : -1;
            litmus = litmus ? litmus : -1;
            break;
        case ROUNDS: rounds = atoi(optarg); litmus = litmus ? litmus : -1; break;
        case 'h': usage(stdout, argv[0]); return 0;
        default: usage(stderr, argv[0]); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "error: unexpected argument \"%s\" (see --help)\n", argv[optind]);
        return 2;
    }
    if (litmus == -1 || (litmus && versions_only)) {
        fprintf(stderr, "error: --variant, --read-first and --rounds go with --litmus, and "
                        "--version, --threads, --count and --show without it (see --help)\n");
        return 2;
    }
    if (runs < 1 || !(timeout_s > 0)) {
        fprintf(stderr, "error: need R >= 1 and S > 0 (see --help)\n");
        return 2;
    }
    if (litmus) {
        if (variant < 0 || variant > LITMUS_VARIANTS || read_first < 0 || rounds < 1 ||
            rounds > 1000000) {
            fprintf(stderr, "error: need 1 <= V <= %d, --read-first yes, no or both, and "
                            "1 <= K <= 1000000 (see --help)\n", LITMUS_VARIANTS);
            return 2;
        }
        run_litmus(variant, read_first, rounds, runs, timeout_s);
        return 0;
    }
    if (only < 0 || only > 5 || threads < 1 || threads > 1024 || count < 0 || count > 100000) {
        fprintf(stderr, "error: need 1 <= K <= 5, 1 <= T <= 1024 and 0 <= N <= 100000 "
                        "(see --help)\n");
        return 2;
    }
    run_versions(only, threads, count, runs, timeout_s, show);
    return 0;
}
