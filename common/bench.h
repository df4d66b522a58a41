/*
 * bench.h - the front every lab's benchmark program (labs/NN-name/bench.c)
 * shares: one option set, one usage text, the no-GPU exit and the target line.
 *
 * Every benchmark understands the common options
 *     --stage S   --n N (also --size N)   --block B   --reps R   --target F   --help
 * A lab gives each of them a meaning, or refuses it with a sentence that says
 * why and what it takes instead (a wb_option with no value). Its own options
 * (--sweep, --streams, ...) go in the same table:
 *
 *     int stage = WB_ALL_STAGES, n = 1 << 26, reps = 50;
 *     wb_option options[] = {
 *         {"stage", "S", WB_INT, &stage, 0, 0, "the lab's only stage, 0"},
 *         {"n", "N", WB_INT, &n, 1, INT_MAX, "elements"},
 *         WB_REFUSED_OPTION("block", "the block size is fixed: ..."),
 *         WB_REPS_OPTION(reps),
 *         ...
 *         {0}};
 *     wb_bench_options(argc, argv, "Times vector add ...", options);
 *     wb_bench_need_gpu();
 *     ...
 *     return wb_bench_target(met, "80%% of copy bandwidth|best %.1f%%", pct) ? 0 : 1;
 *
 * Exit status of every benchmark: 0 targets met (or not checked: a run
 * narrowed by --stage, --n or --block), 1 a target missed or a wrong result,
 * 2 bad options, 77 no usable GPU (meson's "skipped").
 */
#ifndef WB_BENCH_H
#define WB_BENCH_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --stage not given: every stage. */
#define WB_ALL_STAGES (-1)

typedef enum {
    WB_INT,   /* int *; decimal, or 2^K */
    WB_WARPS, /* int *; as WB_INT, and a multiple of 32 (threads per block in whole warps) */
    WB_REAL,  /* double * */
    WB_TEXT,  /* const char ** */
    WB_FLAG   /* bool *, set to true; takes no argument */
} wb_option_kind;

typedef struct {
    const char *name;   /* the long option without "--"; NULL ends the table */
    const char *arg;    /* its argument in the usage ("N"); NULL for a flag */
    wb_option_kind kind;
    void *value;        /* where the value goes; NULL: the lab refuses the option */
    double lo, hi;      /* the range a number must be in */
    const char *help;   /* what it does, or why it is refused; --help adds
                           "(default V)" from *value unless it says "default" */
} wb_option;

/* The common options as every lab means them, for the table:
 *   --reps R     timed runs after the warm-up, the median reported
 *   --target F   a target, as a share of the lab's yardstick (what: which one)
 * and a common option that the lab does not take, with the reason. */
#define WB_REPS_OPTION(variable) \
    {"reps", "R", WB_INT, &(variable), 1, 1e6, "timed runs after a warm-up, median reported"}
#define WB_TARGET_OPTION(variable, what) {"target", "F", WB_REAL, &(variable), 0, 10, what}
#define WB_REFUSED_OPTION(name, why) {name, NULL, WB_INT, NULL, 0, 0, why}

/* Parses argv against options (plus the common ones the lab left out, which
 * are refused). --help prints the usage and exits 0; an unknown option, a
 * refused one, a bad value or a stray argument prints one line naming what
 * this benchmark takes and exits 2. */
void wb_bench_options(int argc, char **argv, const char *about, const wb_option *options);

/* A lab's own check of its options failed: "error: PROGRAM: <message>", exit 2. */
void wb_bench_usage_error(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* Exits 77 with "skipped: <reason>" on stderr unless a usable GPU is here;
 * then prints what the tables were measured on, in two lines:
 *     GPU: NVIDIA H200 (sm_90), 132 SMs, L2 60.0 MiB, memory 140.4 GiB
 *     clocks: SM 1980 MHz measured now (peak 1980 MHz), memory 3201 MHz */
void wb_bench_need_gpu(void);

/* Prints "launch: SETTINGS (why: WHY)" from one format "SETTINGS|WHY", the
 * launch settings a benchmark chose and the reason: one line per choice,
 * after wb_bench_need_gpu, before its tables. */
void wb_bench_launch(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* Prints "working set: WHAT: 768 MiB = 12.8x L2 (60.0 MiB)" for a working
 * set of `bytes` on the GPU present (one that fits in the L2 is said so:
 * repeated runs over it find it in the cache, not in DRAM). */
void wb_bench_working_set(const char *what, double bytes);

/* The text after "WHAT: " above, for an L2 of l2_bytes. */
void wb_l2_share_text(char *out, size_t len, double bytes, double l2_bytes);

/* The default working set of a benchmark holds the L2 this many times at
 * least, so that repeated runs over it measure DRAM, not the cache. */
#define WB_L2_TIMES 4.0

/* The count of a default size: `usual` items (the size the lab's tables
 * were made at), where each item is `bytes_each` bytes of the working set,
 * raised where those are less than WB_L2_TIMES the L2 of the GPU present,
 * in whole `granule`s, but no further than half of its free memory holds,
 * at `device_bytes_each` bytes allocated per item. Prints what it chose and
 * why, e.g.
 *     size: stage 1's ints: 2^26, 256 MiB = 2.0x L2 (126.0 MiB): raised to
 *     132120576 (504 MiB = 4.0x L2) */
size_t wb_bench_default_size(const char *what, size_t usual, size_t granule, double bytes_each,
                             double device_bytes_each);

/* The count and the text after "size: " above, for an L2 of l2_bytes and
 * free_bytes of free device memory. */
size_t wb_default_size_text(char *out, size_t len, const char *what, size_t usual,
                            size_t granule, double bytes_each, double device_bytes_each,
                            double l2_bytes, double free_bytes);

/* The host CPU's name ("model name" in /proc/cpuinfo, else the "Hardware"
 * or "cpu model" line, else "an unnamed CPU"), for figures measured on it. */
void wb_host_cpu_name(char *out, size_t len);

/* Prints "target: WHAT: met (MEASURED)" or "target: WHAT: NOT met (MEASURED)"
 * from one format whose text is "WHAT|MEASURED" (or "WHAT": no brackets);
 * returns met. A target is for the full run: after --stage, --n or --block
 * it prints "target: WHAT: not checked (...)" and returns true. */
bool wb_bench_target(bool met, const char *format, ...) __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif

#endif /* WB_BENCH_H */
