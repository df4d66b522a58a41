/*
 * Lab 01: the code both sides share, given (the skeleton and the reference
 * both include it at their top): take_turn, the argument checks, the grid's
 * counter grid_next, and the entry points ordered_barrier, ordered_spin and
 * ordered_grid that check their arguments and launch the kernels. It comes
 * before the kernels, which call take_turn and use grid_next, so it declares
 * the kernels it launches; kernels.cu defines them, and
 * ordered_grid_max_blocks (lab.h), which ordered_grid asks.
 */

/* What a thread does when its turn comes. */
__device__ void take_turn(int *record, int thread, int n)
{
    if (record)
        record[n] = thread;
    else
        printf("%d: %d\n", thread, n);
}

static void check_arguments(const char *who, int count, int blocks, int threads)
{
    if (count < 0 || blocks < 1 || threads < 1 || threads > 1024)
        wb_fail("%s: need count >= 0, blocks >= 1 and 1 <= threads <= 1024 "
                "(got count = %d, blocks = %d, threads = %d)",
                who, count, blocks, threads);
}

/* Stage 2's counter lives in global memory, the only memory all blocks
 * share. The host sets it to 0 before every launch (ordered_grid, below; a
 * kernel cannot: there is no barrier across blocks to wait for the reset). */
__device__ int grid_next;

__global__ void ordered_stage0(int *record, int count);
__global__ void ordered_stage1(int *record, int count);
__global__ void ordered_stage2(int *record, int count);

void ordered_barrier(int *record, int count, int threads)
{
    check_arguments("ordered_barrier", count, 1, threads);
    ordered_stage0<<<1, threads>>>(record, count);
    CUDA_CHECK_LAUNCH();
}

void ordered_spin(int *record, int count, int threads)
{
    check_arguments("ordered_spin", count, 1, threads);
    ordered_stage1<<<1, threads>>>(record, count);
    CUDA_CHECK_LAUNCH();
}

void ordered_grid(int *record, int count, int blocks, int threads)
{
    check_arguments("ordered_grid", count, blocks, threads);
    /* A block that is not resident waits for a block to finish, while the
     * resident ones spin waiting for it: the grid would hang. */
    int most = ordered_grid_max_blocks(threads);
    if (blocks > most)
        wb_fail("ordered_grid: %d blocks of %d threads cannot all be resident at once "
                "(at most %d on this GPU), and waiting blocks would hang the grid",
                blocks, threads, most);
    static const int zero = 0;
    CUDA_CHECK(cudaMemcpyToSymbolAsync(grid_next, &zero, sizeof zero));
    /* Blocks wait for one another, so all of them must be resident at
     * once. The occupancy limit above says how many can be; only a
     * cooperative launch guarantees that they are (another process on the
     * GPU, MPS or a partition can take SMs): it fails with
     * cudaErrorCooperativeLaunchTooLarge rather than hang. */
    void *arguments[] = {&record, &count};
    CUDA_CHECK(cudaLaunchCooperativeKernel((const void *)ordered_stage2, blocks, threads,
                                           arguments, 0, 0));
    CUDA_CHECK_LAUNCH();
}
