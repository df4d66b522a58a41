/*
 * Lab 04: the host side of every stage, given (the skeleton and the
 * reference both include it at their end): stage names, the scratch size,
 * the grids, the passes that launch a stage again on its partial sums, and
 * the template switch on the block size. It comes after the kernels it
 * launches.
 */

const char *reduce_stage_name(int stage)
{
    static const char *names[REDUCE_STAGES] = {
        "interleaved, divergent", "interleaved, strided index", "sequential addressing",
        "first add during load", "unroll last warp", "complete unroll",
        "many elements per thread", "shuffles, int4, one launch"};
    return stage >= 0 && stage < REDUCE_STAGES ? names[stage] : "no such stage";
}

size_t reduce_scratch_ints(int n)
{
    // Ping-pong between the first pass's partial sums (at most one per 32
    // inputs) and the second pass's (at most one per 32 of those).
    size_t first = ((size_t)n + 31) / 32;
    return first + (first + 31) / 32;
}

/* Enough blocks to keep every SM full (as many threads as an SM holds at
 * once: 2048 on the H100, fewer on some GPUs), and no more: the rest of the
 * work goes into each thread's loop. */
static unsigned resident_blocks(int block_size)
{
    static wb_device device;
    if (device.sm_count == 0)
        device = wb_device_info();
    return (unsigned)device.sm_count * (unsigned)(device.max_threads_per_sm / block_size);
}

static unsigned min_u(unsigned a, unsigned b) { return a < b ? a : b; }

/* Blocks for one pass of `stage` over n elements. */
static unsigned pass_blocks(int stage, unsigned n, int block_size)
{
    unsigned per_block = (stage >= 3 ? 2u : 1u) * (unsigned)block_size;
    unsigned blocks = (n + per_block - 1) / per_block;
    return stage >= 6 ? min_u(blocks, resident_blocks(block_size)) : blocks;
}

template <unsigned B>
static void launch_unrolled(int stage, const int *in, int *out, unsigned n, unsigned blocks)
{
    if (stage == 5)
        reduce_stage5<B><<<blocks, B, B * sizeof(int)>>>(in, out, n);
    else
        reduce_stage6<B><<<blocks, B, B * sizeof(int)>>>(in, out, n);
}

/* One pass: blocks partial sums of in[0 .. n) into out[0 .. blocks). */
static void launch_pass(int stage, const int *in, int *out, unsigned n, unsigned blocks,
                        int block_size)
{
    size_t smem = block_size * sizeof(int);
    switch (stage) {
    case 0: reduce_stage0<<<blocks, block_size, smem>>>(in, out, n); break;
    case 1: reduce_stage1<<<blocks, block_size, smem>>>(in, out, n); break;
    case 2: reduce_stage2<<<blocks, block_size, smem>>>(in, out, n); break;
    case 3: reduce_stage3<<<blocks, block_size, smem>>>(in, out, n); break;
    case 4: reduce_stage4<<<blocks, block_size, smem>>>(in, out, n); break;
    default:
        // Templates need the block size at compile time: one instance each.
        switch (block_size) {
        case 1024: launch_unrolled<1024>(stage, in, out, n, blocks); break;
        case 512: launch_unrolled<512>(stage, in, out, n, blocks); break;
        case 256: launch_unrolled<256>(stage, in, out, n, blocks); break;
        case 128: launch_unrolled<128>(stage, in, out, n, blocks); break;
        case 64: launch_unrolled<64>(stage, in, out, n, blocks); break;
        case 32: launch_unrolled<32>(stage, in, out, n, blocks); break;
        }
    }
    CUDA_CHECK_LAUNCH();
}

void reduce_sum(int stage, const int *d_in, int n, int block_size, int *d_scratch, int *d_out)
{
    if (stage < 0 || stage >= REDUCE_STAGES)
        wb_fail("reduce_sum: stage %d does not exist (0 to %d)", stage, REDUCE_STAGES - 1);
    if (block_size < REDUCE_MIN_BLOCK || block_size > REDUCE_MAX_BLOCK ||
        (block_size & (block_size - 1)) != 0)
        wb_fail("reduce_sum: block size %d is not a power of two from %d to %d", block_size,
                REDUCE_MIN_BLOCK, REDUCE_MAX_BLOCK);
    if (n < 0)
        wb_fail("reduce_sum: n = %d is negative", n);
    if (n == 0) {   // the empty sum; a grid of 0 blocks would be a launch error
        CUDA_CHECK(cudaMemsetAsync(d_out, 0, sizeof(int)));
        return;
    }
    if (stage == 7) {
        if ((uintptr_t)d_in % 16 != 0)
            wb_fail("reduce_sum: stage 7 reads 16-byte vectors and needs a 16-byte aligned "
                    "input (cudaMalloc gives one)");
        CUDA_CHECK(cudaMemsetAsync(d_out, 0, sizeof(int)));
        unsigned vectors = ((unsigned)n + 3) / 4;
        unsigned blocks = min_u((vectors + block_size - 1) / block_size, resident_blocks(block_size));
        reduce_stage7<<<blocks, block_size>>>(d_in, d_out, (unsigned)n);
        CUDA_CHECK_LAUNCH();
        return;
    }
    // Partial sums alternate between the two halves of the scratch memory.
    unsigned blocks = pass_blocks(stage, (unsigned)n, block_size);
    int *halves[2] = {d_scratch, d_scratch + blocks};
    const int *in = d_in;
    for (int pass = 0;; pass++) {
        int *out = blocks == 1 ? d_out : halves[pass % 2];
        launch_pass(stage, in, out, (unsigned)n, blocks, block_size);
        if (blocks == 1)
            return;
        in = out;
        n = (int)blocks;
        blocks = pass_blocks(stage, blocks, block_size);
    }
}
