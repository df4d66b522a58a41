/* Criterion glue for lab tests (see wb_test.h). */
#include "wb_test.h"

#include <criterion/hooks.h>

static void fail_running_test(const char *message)
{
    cr_assert_fail("%s " WB_SEED_HINT, message, wb_seed());
}

/* Runs before Criterion's main, in every test process. */
__attribute__((constructor)) static void install_criterion_handler(void)
{
    wb_set_error_handler(fail_running_test);
}

void wb_test_require_gpu(void)
{
    char reason[256];
    if (!wb_gpu_usable(reason, sizeof reason))
        cr_skip_test("GPU test skipped: %s", reason);
}

/* Criterion's own main, plus one thing: when every test was skipped (no GPU),
 * exit with 77, which meson reports as SKIP instead of a misleading OK. */
static bool everything_skipped;

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    everything_skipped = stats->nb_tests > 0 && stats->tests_skipped == stats->nb_tests;
}

int main(int argc, char *argv[])
{
    struct criterion_test_set *tests = criterion_initialize();
    int status = 0;
    if (criterion_handle_args(argc, argv, true))
        status = criterion_run_all_tests(tests) ? 0 : 1;
    criterion_finalize(tests);
    if (status == 0 && everything_skipped)
        status = 77;
    return status;
}
