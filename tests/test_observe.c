/*
 * The observations' own test (driven by tests/test_observe.py, CPU only):
 * each test reads a value "from the code under test", which here is an
 * environment variable that the driver sets for the recorded run and leaves
 * unset for the judge, exactly as a submission's results differ from the
 * reference's. The judge must then decide on the recorded values.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wb_channel.h"
#include "wb_test.h"

TestSuite(observe, .init = wb_case_begin, .fini = wb_test_end, .timeout = 20);

/* What "the code under test" produced: $name as an int, else fallback. */
static int produced(const char *name, int fallback)
{
    const char *text = getenv(name);
    return text ? atoi(text) : fallback;
}

Test(observe, an_int)
{
    int answer = wb_observe_int("the answer", produced("WB_TEST_ANSWER", 42));
    cr_assert_eq(answer, 42, "the answer: got %d, expected 42", answer);
}

Test(observe, a_buffer)
{
    float values[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    values[2] += (float)produced("WB_TEST_NUDGE", 0);
    wb_observe("four floats", values, sizeof values);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(values[i], (float)(i + 1), "element %d: got %g, expected %d", i, values[i], i + 1);
}

Test(observe, a_message)
{
    char message[64];
    snprintf(message, sizeof message, "%s", getenv("WB_TEST_MESSAGE") ? getenv("WB_TEST_MESSAGE")
                                                                        : "not all blocks are resident");
    wb_observe_str("the message", message, sizeof message);
    cr_assert(strstr(message, "resident"), "the message does not say 'resident': %s", message);
}

Test(observe, ends_early)
{
    wb_observe_int("first", 1);
    if (produced("WB_TEST_CRASH", 0))
        abort();
    wb_observe_int("second", 2);
}

Test(observe, ends_late)
{
    wb_observe_int("the only result", 1);
    if (produced("WB_TEST_CRASH_LATE", 0))
        abort();
}

Test(observe, takes_another_path)
{
    if (produced("WB_TEST_OTHER_PATH", 0))
        wb_observe_int("another result", 1);
    else
        wb_observe_int("this result", 1);
}

Test(observe, fails_after_its_results)
{
    wb_observe_int("a result", 1);
    if (produced("WB_TEST_LATE_ERROR", 0))
        wb_fail("a CUDA call failed after the results");
}

ParameterizedTestParameters(observe, cases_in_order)
{
    static int cases[] = {10, 20, 30};
    return cr_make_param_array(int, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(int *expected, observe, cases_in_order)
{
    /* Each case is its own recording: the judge must pair case k with case k. */
    int got = wb_observe_int("this case's value", *expected + produced("WB_TEST_CASE_OFFSET", 0));
    cr_assert_eq(got, *expected, "got %d, expected %d", got, *expected);
}

/* What a submission could try once its case has ended: the right answer
 * sent again, with a finish, on its own connection and on a new one. */
static void send_the_right_answer(void)
{
    int right = 42;
    uint64_t launches = 1;
    wb_channel_send(WB_ENTRY_BEGIN, "observe.sealed", NULL, 0);
    wb_channel_send(WB_ENTRY_OBSERVATION, "the sealed answer", &right, sizeof right);
    wb_channel_send(WB_ENTRY_FINISH, "", &launches, sizeof launches);
}

static void rewrite_at_exit(void)
{
    send_the_right_answer();
}

Test(observe, sealed)
{
    int answer = wb_observe_int("the sealed answer", produced("WB_TEST_SEALED_ANSWER", 42));
    if (produced("WB_TEST_REWRITE", 0)) {
        atexit(rewrite_at_exit);
        pid_t child = fork();
        if (child == 0) {
            usleep(300000);               /* after the case's end */
            send_the_right_answer();      /* on the inherited connection */
            _exit(0);
        }
        answer = 42;                      /* what the process itself believes */
    }
    cr_assert_eq(answer, 42, "got %d, expected 42", answer);
}
