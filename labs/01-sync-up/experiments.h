/* Lab 01: the experiments (experiments.cu), run by sync-up-experiments
 * (experiments.c). */
#ifndef LAB_SYNC_UP_EXPERIMENTS_H
#define LAB_SYNC_UP_EXPERIMENTS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Runs the lecture's version 1..5 with one block of `threads` threads
 * printing 0 .. count-1, and waits for it; a CUDA error ends the process
 * through the workbook's error handler. */
void sync_up_experiment(int version, int count, int threads);

/* The message-passing litmus test's versions: what orders the writer's
 * data before its flag, and the reader's flag before its data. */
enum {
    LITMUS_PLAIN = 1,          /* nothing: a volatile flag, no fence */
    LITMUS_WRITER_FENCE,       /* __threadfence() between the writer's stores */
    LITMUS_BOTH_FENCES,        /* and one between the reader's loads */
    LITMUS_RELEASE_ACQUIRE,    /* the flag a cuda::atomic_ref: release store, acquire load */
    LITMUS_VARIANTS = LITMUS_RELEASE_ACQUIRE
};

/* What one run of `rounds` rounds saw. */
typedef struct {
    long long fresh;     /* rounds whose data read after the flag was the new value */
    long long stale;     /* rounds whose data read after the flag was still 0 */
    long long gave_up;   /* rounds not finished: a wait ran past the time limit */
    int writer_sm, reader_sm;
} litmus_counts;

/* One run of the message-passing litmus test: a writer block and a reader
 * block of one thread each, on two different SMs, `rounds` rounds of
 * data-then-flag with fresh words each round. read_first: the reader reads
 * the round's data word once before it waits for the flag. Every wait
 * gives up after timeout_s seconds (and then both sides stop), so that the
 * kernel always ends. */
litmus_counts sync_up_litmus(int variant, int read_first, int rounds, double timeout_s);

#ifdef __cplusplus
}
#endif

#endif
