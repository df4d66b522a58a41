/*
 * wb_channel.h - a test process's side of the grader's channel
 * (grading/grader/recordings.py says what the grader does with each entry).
 *
 * When the grader runs a test binary it sets WB_CHANNEL to the path of a
 * Unix socket of its own. Every process that speaks opens one connection;
 * each message is an entry
 *     kind (1 byte) | label length (u32) | label | data length (u64) | data
 * (the data may continue over the following messages). The grader knows the
 * sender of every message from the kernel (not from the entry), writes the
 * recordings the judge reads into its own folder and seals each test case
 * when it ends: what a process writes anywhere else, or later, decides
 * nothing.
 *
 * Plain C with no CUDA and no Criterion, so that a small peer program
 * (tests/grader/channel_peer.c) can speak it without a GPU. Every function
 * returns false when the channel failed (the grader is gone); the caller
 * says so as a failure of its own.
 */
#ifndef WB_CHANNEL_H
#define WB_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The entry kinds. */
#define WB_ENTRY_HELLO 'H'        /* from the test runner's main(), before any test */
#define WB_ENTRY_BEGIN 'B'        /* label: suite.test; the grader answers 1 byte */
#define WB_ENTRY_OBSERVATION 'O'  /* label: what; data: the value */
#define WB_ENTRY_ERROR 'E'        /* label: the message of the error that ended the case */
#define WB_ENTRY_FINISH 'F'       /* data: the launch count (u64); seals the case */
#define WB_ENTRY_READY 'R'        /* data: repetition, calls (2 x i32); answer: a u64 seed */
#define WB_ENTRY_SET 'S'          /* inputs ready; answer: 1 byte "go" */
#define WB_ENTRY_DONE 'D'         /* the repetition's work is finished */
#define WB_ENTRY_LABEL 'L'        /* label: names the timing series that just ended */

/* True when WB_CHANNEL is set (the process runs under the grader). */
bool wb_channel_wanted(void);

/* Sends one entry (connecting first if needed). */
bool wb_channel_send(char kind, const char *label, const void *data, size_t bytes);

/* Sends one entry, then waits for the grader's answer of exactly `bytes`. */
bool wb_channel_ask(char kind, const char *label, const void *data, size_t data_bytes,
                    void *answer, size_t bytes);

#endif /* WB_CHANNEL_H */
