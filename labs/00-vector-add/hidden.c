/*
 * Lab 00, hidden tests: part of test.c (which includes this file at its
 * end) in the instructor's repository; left out of the student copy, and
 * shown to students in Gradescope only after the deadline. Every test here
 * is listed under `hidden` in grading/rubric.toml (tests/test_release.py
 * checks both ways).
 */

Test(vector_add, stage0_n_zero_launches_nothing)
{
    /* An empty vector is valid input; the entry point must not launch a
     * grid of zero blocks. That is a launch error, which a launch without
     * its check would leave behind for cudaGetLastError. */
    vector_add(NULL, NULL, NULL, 0, 256);
    CUDA_CHECK(cudaDeviceSynchronize());
    int status = wb_observe_int("error left by vector_add(n = 0)", (int)cudaGetLastError());
    cr_assert(status == cudaSuccess,
              "vector_add(n = 0) left the error %s: it launched a grid of 0 blocks (return "
              "before the launch when n == 0) " WB_SEED_HINT,
              cudaGetErrorName((cudaError_t)status), wb_seed());
}
