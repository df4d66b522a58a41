/*
 * Lab 04: the code given for every stage (the skeleton and the reference
 * both include it at their top): load_or_zero and add4, every stage's
 * kernel around the functions of kernels.cu (the loads into shared memory,
 * the barrier after them, thread 0's store of the block's sum; stage 7's
 * warp_sums and its atomicAdd), and the host side: stage names, the scratch
 * size, the grids, the passes that launch a stage again on its partial
 * sums, and the template switch on the block size. The kernels call the
 * functions of kernels.cu, which come after this file, so it declares each
 * of them, "written in kernels.cu".
 */

/* Out-of-range threads contribute the identity of +, so that every block
 * can run the full tree whatever n is. */
__device__ __forceinline__ int load_or_zero(const int *in, unsigned n, unsigned i)
{
    return i < n ? in[i] : 0;
}

__device__ __forceinline__ int add4(int4 v) { return (v.x + v.y) + (v.z + v.w); }

/* ------------------------------------------------------------ kernels */

// Written in kernels.cu: the trees of stages 0, 1 and 2 (fold_halves also
// serves stages 3 and 4, stopping at `stop` words), stage 3's loads, stage
// 4's last warp and stage 5's unrolled tree.
__device__ __forceinline__ void tree_interleaved(int *sdata, unsigned tid);
__device__ __forceinline__ void tree_strided(int *sdata, unsigned tid);
__device__ __forceinline__ void fold_halves(int *sdata, unsigned tid, unsigned stop);
__device__ __forceinline__ int load_pair(const int *in, unsigned n);
__device__ __forceinline__ void warp_fold(int *sdata, unsigned tid, unsigned block_size);
template <unsigned B> __device__ __forceinline__ void fold_unrolled(int *sdata, unsigned tid);

/* Stages 0-6: each thread stores its share in shared memory; once every
 * thread has (the barrier), the tree leaves the block's sum in sdata[0],
 * and thread 0 writes it out as the block's partial sum. */
__global__ void reduce_stage0(const int *in, int *out, unsigned n)
{
    extern __shared__ int sdata[];
    unsigned tid = threadIdx.x;
    sdata[tid] = load_or_zero(in, n, blockIdx.x * blockDim.x + tid);
    __syncthreads();
    tree_interleaved(sdata, tid);
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}

__global__ void reduce_stage1(const int *in, int *out, unsigned n)
{
    extern __shared__ int sdata[];
    unsigned tid = threadIdx.x;
    sdata[tid] = load_or_zero(in, n, blockIdx.x * blockDim.x + tid);
    __syncthreads();
    tree_strided(sdata, tid);
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}

__global__ void reduce_stage2(const int *in, int *out, unsigned n)
{
    extern __shared__ int sdata[];
    unsigned tid = threadIdx.x;
    sdata[tid] = load_or_zero(in, n, blockIdx.x * blockDim.x + tid);
    __syncthreads();
    fold_halves(sdata, tid, 0);
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}

// Stage 3: stage 2's tree over two elements per thread.
__global__ void reduce_stage3(const int *in, int *out, unsigned n)
{
    extern __shared__ int sdata[];
    unsigned tid = threadIdx.x;
    sdata[tid] = load_pair(in, n);
    __syncthreads();
    fold_halves(sdata, tid, 0);
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}

// Stage 4: stop the block-wide loop at 32 words; the last warp finishes.
__global__ void reduce_stage4(const int *in, int *out, unsigned n)
{
    extern __shared__ int sdata[];
    unsigned tid = threadIdx.x;
    sdata[tid] = load_pair(in, n);
    __syncthreads();
    fold_halves(sdata, tid, 32);
    if (tid < 32)
        warp_fold(sdata, tid, blockDim.x);
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}

// Stage 5: the tree of a block of B threads, known at compile time.
template <unsigned B>
__global__ void reduce_stage5(const int *in, int *out, unsigned n)
{
    extern __shared__ int sdata[];
    unsigned tid = threadIdx.x;
    sdata[tid] = load_pair(in, n);
    __syncthreads();
    fold_unrolled<B>(sdata, tid);
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}

// Written in kernels.cu: a thread's sum of its pairs, over the whole grid.
template <unsigned B> __device__ __forceinline__ int thread_pair_sum(const int *in, unsigned n);

// Stage 6: stage 5's tree, once per block, over the threads' sums.
template <unsigned B>
__global__ void reduce_stage6(const int *in, int *out, unsigned n)
{
    extern __shared__ int sdata[];
    unsigned tid = threadIdx.x;
    sdata[tid] = thread_pair_sum<B>(in, n);
    __syncthreads();
    fold_unrolled<B>(sdata, tid);
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}

// Written in kernels.cu: a warp's sum in lane 0, and a thread's sum of its
// int4 vectors (and of the n % 4 ints after them) over the whole grid.
__device__ __forceinline__ int warp_sum(int value);
__device__ __forceinline__ int thread_vector_sum(const int *__restrict__ in, unsigned n);

// Stage 7: shuffles instead of shared memory except for one word per warp,
// and one atomicAdd per block into the result (the host sets it to 0
// first), so one launch is enough.
__global__ void reduce_stage7(const int *__restrict__ in, int *out, unsigned n)
{
    __shared__ int warp_sums[REDUCE_MAX_BLOCK / 32];
    int sum = thread_vector_sum(in, n);
    unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    sum = warp_sum(sum);
    if (lane == 0)
        warp_sums[warp] = sum;
    __syncthreads();
    if (warp == 0) {
        sum = warp_sum(lane < blockDim.x / 32 ? warp_sums[lane] : 0);
        if (lane == 0)
            atomicAdd(out, sum);
    }
}

/* ------------------------------------------------------------ host side */

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

/* Stage 6's kernel for each block size, 32 << k at index k. */
static const void *const stage6_kernels[] = {
    (const void *)reduce_stage6<32>,  (const void *)reduce_stage6<64>,
    (const void *)reduce_stage6<128>, (const void *)reduce_stage6<256>,
    (const void *)reduce_stage6<512>, (const void *)reduce_stage6<1024>};

/* Enough blocks of stage 6 or 7 to keep every SM full, and no more: the
 * rest of the work goes into each thread's loop. How many blocks an SM
 * holds at once depends on the kernel's registers and shared memory as
 * well as on the threads per SM (2048 on the H100, fewer on some GPUs):
 * the occupancy API knows all three. */
unsigned reduce_resident_blocks(int stage, int block_size)
{
    static wb_device device;
    if (device.sm_count == 0)
        device = wb_device_info();
    int per_sm = 0;
    if (stage == 7) {
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reduce_stage7,
                                                                 block_size, 0));
    } else {
        int k = 0;
        while ((REDUCE_MIN_BLOCK << k) < block_size)
            k++;
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, stage6_kernels[k], block_size, block_size * sizeof(int)));
    }
    return (unsigned)device.sm_count * (unsigned)per_sm;
}

static unsigned min_u(unsigned a, unsigned b) { return a < b ? a : b; }

/* Blocks for one pass of `stage` over n elements. */
static unsigned pass_blocks(int stage, unsigned n, int block_size)
{
    unsigned per_block = (stage >= 3 ? 2u : 1u) * (unsigned)block_size;
    unsigned blocks = (n + per_block - 1) / per_block;
    return stage >= 6 ? min_u(blocks, reduce_resident_blocks(stage, block_size)) : blocks;
}

template <unsigned B>
static void launch_unrolled(int stage, const int *in, int *out, unsigned n, unsigned blocks,
                            cudaStream_t stream)
{
    if (stage == 5)
        reduce_stage5<B><<<blocks, B, B * sizeof(int), stream>>>(in, out, n);
    else
        reduce_stage6<B><<<blocks, B, B * sizeof(int), stream>>>(in, out, n);
}

/* One pass: blocks partial sums of in[0 .. n) into out[0 .. blocks). */
static void launch_pass(int stage, const int *in, int *out, unsigned n, unsigned blocks,
                        int block_size, cudaStream_t stream)
{
    size_t smem = block_size * sizeof(int);
    switch (stage) {
    case 0: reduce_stage0<<<blocks, block_size, smem, stream>>>(in, out, n); break;
    case 1: reduce_stage1<<<blocks, block_size, smem, stream>>>(in, out, n); break;
    case 2: reduce_stage2<<<blocks, block_size, smem, stream>>>(in, out, n); break;
    case 3: reduce_stage3<<<blocks, block_size, smem, stream>>>(in, out, n); break;
    case 4: reduce_stage4<<<blocks, block_size, smem, stream>>>(in, out, n); break;
    default:
        // Templates need the block size at compile time: one instance each.
        switch (block_size) {
        case 1024: launch_unrolled<1024>(stage, in, out, n, blocks, stream); break;
        case 512: launch_unrolled<512>(stage, in, out, n, blocks, stream); break;
        case 256: launch_unrolled<256>(stage, in, out, n, blocks, stream); break;
        case 128: launch_unrolled<128>(stage, in, out, n, blocks, stream); break;
        case 64: launch_unrolled<64>(stage, in, out, n, blocks, stream); break;
        case 32: launch_unrolled<32>(stage, in, out, n, blocks, stream); break;
        }
    }
    CUDA_CHECK_LAUNCH();
}

void reduce_sum_async(int stage, const int *d_in, int n, int block_size, int *d_scratch,
                      int *d_out, cudaStream_t stream)
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
        CUDA_CHECK(cudaMemsetAsync(d_out, 0, sizeof(int), stream));
        return;
    }
    if (stage == 7) {
        if ((uintptr_t)d_in % 16 != 0)
            wb_fail("reduce_sum: stage 7 reads 16-byte vectors and needs a 16-byte aligned "
                    "input (cudaMalloc gives one)");
        CUDA_CHECK(cudaMemsetAsync(d_out, 0, sizeof(int), stream));
        unsigned vectors = ((unsigned)n + 3) / 4;
        unsigned blocks = min_u((vectors + block_size - 1) / block_size,
                                reduce_resident_blocks(7, block_size));
        reduce_stage7<<<blocks, block_size, 0, stream>>>(d_in, d_out, (unsigned)n);
        CUDA_CHECK_LAUNCH();
        return;
    }
    // Partial sums alternate between the two halves of the scratch memory.
    unsigned blocks = pass_blocks(stage, (unsigned)n, block_size);
    int *halves[2] = {d_scratch, d_scratch + blocks};
    const int *in = d_in;
    for (int pass = 0;; pass++) {
        int *out = blocks == 1 ? d_out : halves[pass % 2];
        launch_pass(stage, in, out, (unsigned)n, blocks, block_size, stream);
        if (blocks == 1)
            return;
        in = out;
        n = (int)blocks;
        blocks = pass_blocks(stage, blocks, block_size);
    }
}

void reduce_sum(int stage, const int *d_in, int n, int block_size, int *d_scratch, int *d_out)
{
    reduce_sum_async(stage, d_in, n, block_size, d_scratch, d_out, 0);
}
