/* Lab 02, atomics, locks and worklists: the entry points that the skeleton
 * (labs/) and the reference (solutions/) both define, and that test.c and
 * bench.c call. All pointers are device pointers. Every entry point is
 * asynchronous (it returns after checking its launches) and stops with a
 * clear message on bad arguments. Block sizes are 1 .. 1024; where a version
 * works per warp, a multiple of 32. */
#ifndef LAB_ATOMICS_H
#define LAB_ATOMICS_H

#ifdef __cplusplus
extern "C" {
#endif

/* ---- stage 0: a counter. Thread g of a grid of blocks x block_size threads
 * adds 1 to x[g % slots] (slots = 1: every thread on one word). Both clear
 * x[0 .. slots) first. counter_racy is the lecture's ++x[0] (given code);
 * counter_atomic is exact. */
void counter_racy(int *x, int slots, int blocks, int block_size);
void counter_atomic(int *x, int slots, int blocks, int block_size);

/* ---- stage 1: sum and maximum with atomics. Block b folds its elements of
 * in[0 .. n) into out[b % slots], which the call first sets to 0 (sum) or
 * INT_MIN (max). Each block covers REDUCE_ITEMS * block_size consecutive
 * elements. Sums wrap around like any int addition. Sixteen a thread: its
 * sixteen loads are in flight at once, 64 bytes a thread, which is what a
 * GPU of HBM3e needs to stream at its copy bandwidth (handouts/02-atomics.md,
 * "Bytes in flight"); four a thread gave 56-78% of the copy on an H200. */
#define REDUCE_ITEMS 16
typedef enum { REDUCE_SUM, REDUCE_MAX } reduce_op;
typedef enum {
    REDUCE_PER_ELEMENT,   /* one atomic per element */
    REDUCE_PER_BLOCK,     /* a shared-memory partial, one global atomic per block */
    REDUCE_PER_WARP,      /* a shuffle reduction, one global atomic per warp */
    REDUCE_VERSIONS
} reduce_version;
extern const char *const reduce_version_names[REDUCE_VERSIONS];
void reduce_atomic(const int *in, int n, int *out, int slots, reduce_op op,
                   reduce_version version, int block_size);

/* ---- stage 2: a lock around an update no single atomic does. Thread i
 * adds values[i] into tallies[i % slots] (count + 1, sum + value, max) under
 * locks[i % slots]. The call clears tallies, and sets max to INT_MIN and
 * the locks to 0, first. Only LOCK_SPIN is a working lock; the others are
 * the lecture's wrong ones, kept as experiments. */
typedef struct {
    long long sum;
    int count;
    int max;
} tally;
typedef enum {
    LOCK_NONE,            /* no lock at all */
    LOCK_TEST_THEN_SET,   /* wait until free, then take it: two steps, not atomic */
    LOCK_CAS_ONCE,        /* one atomicCAS, whether it won or not */
    LOCK_SPIN,            /* atomicCAS until it wins; the one that works */
    LOCK_KINDS
} lock_kind;
extern const char *const lock_kind_names[LOCK_KINDS];
void locked_tally(const int *values, int n, tally *tallies, int *locks, int slots,
                  lock_kind kind, int block_size);

/* ---- stage 3: "single". Exactly one thread of the grid (single_per_grid)
 * or of each block (single_per_block) runs the section, which adds 1 to
 * hits[s] and writes its global thread number into who[s], where s is 0 for
 * the grid and blockIdx.x per block. The call clears hits[0 .. 1 or blocks)
 * first. flag is one device int of scratch space for the grid version. */
void single_per_grid(int *flag, int *hits, int *who, int blocks, int block_size);
void single_per_block(int *hits, int *who, int blocks, int block_size);

/* ---- stage 4: worklist push. Thread t (0 <= t < threads) pushes counts[t]
 * items (0 <= counts[t] <= WORKLIST_MAX_PUSH), the items worklist_item(t, k)
 * for k = 0 .. counts[t] - 1, into list (t / block_size) % lists. List L
 * holds its items at items[L * capacity ...] and its length at sizes[L]; the
 * call clears sizes first. capacity must hold every item pushed to a list. */
#define WORKLIST_MAX_PUSH 16
#define worklist_item(t, k) ((t) * WORKLIST_MAX_PUSH + (k))
typedef enum {
    PUSH_PER_ITEM,        /* one atomic per item */
    PUSH_PER_THREAD,      /* one atomic per thread reserves its range */
    PUSH_PER_WARP,        /* one atomic per warp, written round by round */
    PUSH_PREFIX_SUM,      /* offsets from a block prefix sum; one atomic per block */
    PUSH_VERSIONS
} push_version;
extern const char *const push_version_names[PUSH_VERSIONS];
void worklist_push(const int *counts, int threads, int *items, int *sizes, int lists,
                   int capacity, push_version version, int block_size);

/* ---- stage 5: a lock-free linked list of node numbers; next[v] is the node
 * after v, -1 ends the list. The call first links the anchors 0 -> 1 -> ...
 * -> anchors - 1, then thread t inserts the new node anchors + t right after
 * anchor t % anchors, all at once. next holds anchors + inserts ints. */
void list_insert(int *next, int anchors, int inserts, int block_size);

/* ---- stage 6: the same list with a lock per node; locks[v] is node v's
 * lock (0 free, 1 taken). The call first links the anchors as in stage 5
 * and frees every lock; then, all at once, thread t (0 <= t < threads)
 * inserts the new node anchors + t right after anchor t % anchors and,
 * where keep[t] is 0, removes it again, wherever it then is among the
 * anchor's nodes. next and locks hold anchors + threads ints each, keep
 * threads. At the end the list holds the anchors in order, each followed by
 * the kept nodes of its threads (in an order the timing decides), and every
 * lock is free. */
void locked_list(int *next, int *locks, const int *keep, int anchors, int threads,
                 int block_size);

#ifdef __cplusplus
}
#endif

#endif
