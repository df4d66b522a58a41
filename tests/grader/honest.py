"""Honest submissions for the grader's own tests: lab 00's reference
(solutions/00-vector-add/kernels.cu) rewritten in the styles real CUDA code
is written in, each of which must get full marks. The static check
(grading/grader/objcheck.py) refuses what changes how the grading behaves, never a
style: the error-check macros of the well-known tutorials (exit and abort
included), C++ host code, templates, helpers, __constant__ tables, the
occupancy API, cooperative groups, odd bytes in the file.

Each case: (name, whole text of kernels.cu). The CPU half (CI) checks that
each compiles with the lab's flags and passes the static check; the GPU half
grades them and expects full marks (tests/grader/test_grader.py).
"""

# Every case includes these: the lab's entry point and the workbook's header.
HEAD = '#include "lab.h"\n#include "workbook.h"\n'

# The reference's kernel and entry point, for the cases that change only
# what surrounds them.
KERNEL = """
__global__ void vector_add_kernel(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}
"""


def launch(check):
    """The reference's entry point with its launch checked by `check`."""
    return f"""
void vector_add(const float *a, const float *b, float *c, int n, int block_size)
{{
    if (n == 0)
        return;
    int blocks = (n + block_size - 1) / block_size;
    vector_add_kernel<<<blocks, block_size>>>(a, b, c, n);
    {check};
}}
"""


CASES = [
    # --- the error-check macros of the well-known tutorials
    # StackOverflow's gpuErrchk / gpuAssert: fprintf, then exit(code).
    ("gpu-errchk", "#include <cstdio>\n#include <cstdlib>\n" + HEAD + """
#define gpuErrchk(ans) { gpuAssert((ans), __FILE__, __LINE__); }
inline void gpuAssert(cudaError_t code, const char *file, int line, bool abort = true)
{
    if (code != cudaSuccess) {
        fprintf(stderr, "GPUassert: %s %s %d\\n", cudaGetErrorString(code), file, line);
        if (abort) exit(code);
    }
}
""" + KERNEL + launch("gpuErrchk(cudaPeekAtLastError())")),
    # The CUDA samples' helper_cuda.h: checkCudaErrors and getLastCudaError.
    ("check-cuda-errors", "#include <cstdio>\n#include <cstdlib>\n" + HEAD + """
template <typename T>
void check(T result, char const *const func, const char *const file, int const line)
{
    if (result) {
        fprintf(stderr, "CUDA error at %s:%d code=%d(%s) \\"%s\\"\\n", file, line,
                static_cast<unsigned int>(result), cudaGetErrorName(result), func);
        exit(EXIT_FAILURE);
    }
}
#define checkCudaErrors(val) check((val), #val, __FILE__, __LINE__)
#define getLastCudaError(msg) getLastCudaErrorAt(msg, __FILE__, __LINE__)
inline void getLastCudaErrorAt(const char *message, const char *file, const int line)
{
    cudaError_t err = cudaGetLastError();
    if (cudaSuccess != err) {
        fprintf(stderr, "%s(%i) : getLastCudaError() CUDA error : %s : (%d) %s.\\n", file, line,
                message, static_cast<int>(err), cudaGetErrorString(err));
        exit(EXIT_FAILURE);
    }
}
""" + KERNEL + launch('getLastCudaError("vector_add_kernel"); checkCudaErrors(cudaPeekAtLastError())')),
    # A throwing check with a typed catch: std::runtime_error, std::string.
    ("throw-runtime-error", "#include <cstdio>\n#include <cstdlib>\n#include <stdexcept>\n#include <string>\n"
     + HEAD + """
#define CUDA_CHECK_THROW(call)                                                        \\
    do {                                                                              \\
        cudaError_t status_ = (call);                                                 \\
        if (status_ != cudaSuccess)                                                   \\
            throw std::runtime_error(std::string(#call) + ": " + cudaGetErrorString(status_)); \\
    } while (0)
""" + KERNEL + """
void vector_add(const float *a, const float *b, float *c, int n, int block_size)
{
    if (n == 0)
        return;
    try {
        vector_add_kernel<<<(n + block_size - 1) / block_size, block_size>>>(a, b, c, n);
        CUDA_CHECK_THROW(cudaGetLastError());
    } catch (const std::runtime_error &e) {
        fprintf(stderr, "vector_add: %s\\n", e.what());
        abort();
    }
}
"""),
    # llm.c's cudaCheck: a function and a macro of the same name.
    ("llm-c-cuda-check", "#include <cstdio>\n#include <cstdlib>\n" + HEAD + """
void cudaCheck(cudaError_t error, const char *file, int line)
{
    if (error != cudaSuccess) {
        printf("[CUDA ERROR] at file %s:%d:\\n%s\\n", file, line, cudaGetErrorString(error));
        exit(EXIT_FAILURE);
    }
}
#define cudaCheck(err) (cudaCheck(err, __FILE__, __LINE__))
""" + KERNEL + launch("cudaCheck(cudaGetLastError())")),
    # The NVIDIA developer blog's checkCuda: assert in a debug build.
    ("nvidia-blog-check-cuda", "#include <cassert>\n#include <cstdio>\n" + HEAD + """
inline cudaError_t checkCuda(cudaError_t result)
{
#if defined(DEBUG) || defined(_DEBUG)
    if (result != cudaSuccess) {
        fprintf(stderr, "CUDA Runtime Error: %s\\n", cudaGetErrorString(result));
        assert(result == cudaSuccess);
    }
#endif
    return result;
}
""" + KERNEL + launch("CUDA_CHECK(checkCuda(cudaGetLastError()))")),
    # The workbook's own check, with std::cerr and std::abort.
    ("iostream-abort", "#include <cstdlib>\n#include <iostream>\n" + HEAD + KERNEL + launch(
        "cudaError_t err = cudaGetLastError();\n    if (err != cudaSuccess) {\n"
        "        std::cerr << \"launch failed: \" << cudaGetErrorString(err) << std::endl;\n"
        "        std::abort();\n    }")),
    # --- C++ host code
    # A message built with std::ostringstream.
    ("ostringstream-message", "#include <sstream>\n#include <string>\n" + HEAD + KERNEL + launch(
        "cudaError_t err = cudaGetLastError();\n    if (err != cudaSuccess) {\n"
        "        std::ostringstream message;\n"
        "        message << \"vector_add of \" << n << \" elements in blocks of \" << block_size\n"
        "                << \": \" << cudaGetErrorString(err);\n"
        "        wb_fail(\"%s\", message.str().c_str());\n    }")),
    # The first call timed with std::chrono and printed once.
    ("chrono-first-call", "#include <chrono>\n#include <cstdio>\n" + HEAD + KERNEL + """
void vector_add(const float *a, const float *b, float *c, int n, int block_size)
{
    if (n == 0)
        return;
    static bool timed = false;
    auto start = std::chrono::steady_clock::now();
    vector_add_kernel<<<(n + block_size - 1) / block_size, block_size>>>(a, b, c, n);
    CUDA_CHECK_LAUNCH();
    if (!timed) {
        timed = true;
        CUDA_CHECK(cudaDeviceSynchronize());
        auto took = std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::steady_clock::now() - start);
        fprintf(stderr, "first vector_add: %lld us\\n", static_cast<long long>(took.count()));
    }
}
"""),
    # A debug peek at the result through a std::vector staging buffer, with
    # a typed catch of std::bad_alloc; the flag read once from the
    # environment (a static function-local variable).
    ("vector-staging-bad-alloc", "#include <cstdio>\n#include <cstdlib>\n#include <new>\n#include <vector>\n"
     + HEAD + KERNEL + """
static void peek(const float *c, int n)
{
    try {
        std::vector<float> host(n < 4 ? n : 4);
        CUDA_CHECK(cudaMemcpy(host.data(), c, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
        for (float x : host)
            fprintf(stderr, "%g ", x);
        fprintf(stderr, "\\n");
    } catch (const std::bad_alloc &) {
        fprintf(stderr, "vector_add: no host memory for the debug peek\\n");
    }
}
""" + launch('static const bool debug = getenv("VECTOR_ADD_DEBUG") != nullptr;\n'
             "    if (debug)\n        peek(c, n)")),
    # The grid chosen with std::min and std::max from <algorithm>, a host lambda.
    ("algorithm-lambda", "#include <algorithm>\n" + HEAD + KERNEL + """
void vector_add(const float *a, const float *b, float *c, int n, int block_size)
{
    auto blocks_for = [block_size](int elements) {
        return std::max(1, (elements + block_size - 1) / block_size);
    };
    if (n == 0)
        return;
    vector_add_kernel<<<blocks_for(n), std::min(block_size, 1024)>>>(a, b, c, n);
    CUDA_CHECK_LAUNCH();
}
"""),
    # Kernels templated on the element type and on the block size, with a
    # generic fallback for the sizes that are not instantiated.
    ("templates-block-size", HEAD + """
template <typename T>
__global__ void add_any(const T *a, const T *b, T *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

template <int BLOCK, typename T>
__global__ void __launch_bounds__(BLOCK) add_fixed(const T *a, const T *b, T *c, int n)
{
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

template <int BLOCK>
static void launch_fixed(const float *a, const float *b, float *c, int n)
{
    add_fixed<BLOCK><<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(a, b, c, n);
}

void vector_add(const float *a, const float *b, float *c, int n, int block_size)
{
    if (n == 0)
        return;
    switch (block_size) {
    case 128: launch_fixed<128>(a, b, c, n); break;
    case 256: launch_fixed<256>(a, b, c, n); break;
    default: add_any<float><<<(n + block_size - 1) / block_size, block_size>>>(a, b, c, n);
    }
    CUDA_CHECK_LAUNCH();
}
"""),
    # A functor applied by a generic kernel, all in a namespace.
    ("functor-namespace", HEAD + """
namespace va {
namespace detail {
struct Plus {
    __device__ float operator()(float x, float y) const { return x + y; }
};

template <typename Op>
__global__ void zip_with(const float *a, const float *b, float *c, int n, Op op)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = op(a[i], b[i]);
}
}  // namespace detail

void run(const float *a, const float *b, float *c, int n, int block_size)
{
    detail::zip_with<<<(n + block_size - 1) / block_size, block_size>>>(a, b, c, n, detail::Plus{});
    CUDA_CHECK_LAUNCH();
}
}  // namespace va

void vector_add(const float *a, const float *b, float *c, int n, int block_size)
{
    if (n != 0)
        va::run(a, b, c, n, block_size);
}
"""),
    # A namespace-scope std::string and a RAII class: constructors the
    # compiler runs before main for namespace-scope objects.
    ("global-objects", "#include <cstdio>\n#include <string>\n" + HEAD + """
static const std::string kernel_name = "vector_add_kernel";

class LaunchCounter {
public:
    LaunchCounter() : launches_(0) {}
    void count() { ++launches_; }
    long launches() const { return launches_; }
private:
    long launches_;
};
static LaunchCounter counter;
""" + KERNEL + launch('counter.count();\n    if (cudaPeekAtLastError() != cudaSuccess)\n'
                      '        fprintf(stderr, "%s failed after %ld launches\\n", kernel_name.c_str(), '
                      'counter.launches());\n    CUDA_CHECK_LAUNCH()')),
    # --- helpers
    ("forceinline-helpers", HEAD + """
__device__ __forceinline__ int global_index() { return blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ float add(float x, float y) { return x + y; }

__global__ void vector_add_kernel(const float *a, const float *b, float *c, int n)
{
    int i = global_index();
    if (i < n)
        c[i] = add(a[i], b[i]);
}
""" + launch("CUDA_CHECK_LAUNCH()")),
    ("host-device-function", HEAD + """
__host__ __device__ inline int ceil_div(int x, int y) { return (x + y - 1) / y; }
__host__ __device__ float add_pair(float x, float y) { return x + y; }

__global__ void vector_add_kernel(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = add_pair(a[i], b[i]);
}

void vector_add(const float *a, const float *b, float *c, int n, int block_size)
{
    if (n == 0)
        return;
    vector_add_kernel<<<ceil_div(n, block_size), block_size>>>(a, b, c, n);
    CUDA_CHECK_LAUNCH();
}
"""),
    # A __constant__ table set with cudaMemcpyToSymbol once, read back with
    # cudaMemcpyFromSymbol.
    ("constant-table", "#include <cstdio>\n" + HEAD + """
__constant__ float weights[2];

__global__ void vector_add_kernel(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = weights[0] * a[i] + weights[1] * b[i];
}

static void set_weights(void)
{
    static bool done = false;
    if (done)
        return;
    const float ones[2] = {1.0f, 1.0f};
    CUDA_CHECK(cudaMemcpyToSymbol(weights, ones, sizeof ones));
    float back[2];
    CUDA_CHECK(cudaMemcpyFromSymbol(back, weights, sizeof back));
    if (back[0] != 1.0f || back[1] != 1.0f)
        fprintf(stderr, "vector_add: the weights did not arrive\\n");
    done = true;
}

void vector_add(const float *a, const float *b, float *c, int n, int block_size)
{
    if (n == 0)
        return;
    set_weights();
    vector_add_kernel<<<(n + block_size - 1) / block_size, block_size>>>(a, b, c, n);
    CUDA_CHECK_LAUNCH();
}
"""),
    # The kernel's cache and shared memory preferences set before it runs.
    ("func-attributes", HEAD + KERNEL + launch(
        "static bool configured = false;\n    if (!configured) {\n"
        "        CUDA_CHECK(cudaFuncSetCacheConfig(vector_add_kernel, cudaFuncCachePreferL1));\n"
        "        CUDA_CHECK(cudaFuncSetAttribute(vector_add_kernel,\n"
        "                                        cudaFuncAttributePreferredSharedMemoryCarveout, 0));\n"
        "        configured = true;\n    }\n    CUDA_CHECK_LAUNCH()")),
    # The occupancy API chooses a grid of resident blocks; a grid-stride loop
    # covers the rest.
    ("occupancy-grid-stride", "#include <algorithm>\n" + HEAD + """
__global__ void vector_add_kernel(const float *__restrict__ a, const float *__restrict__ b,
                                  float *__restrict__ c, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        c[i] = a[i] + b[i];
}

void vector_add(const float *a, const float *b, float *c, int n, int block_size)
{
    if (n == 0)
        return;
    int device = 0, sms = 0, per_sm = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, vector_add_kernel, block_size, 0));
    int blocks = std::min((n + block_size - 1) / block_size, std::max(1, sms * per_sm));
    vector_add_kernel<<<blocks, block_size>>>(a, b, c, n);
    CUDA_CHECK_LAUNCH();
}
"""),
    # Cooperative groups: the block's own indices and its barrier.
    ("cooperative-groups", "#include <cooperative_groups.h>\n" + HEAD + """
namespace cg = cooperative_groups;

__global__ void vector_add_kernel(const float *a, const float *b, float *c, int n)
{
    cg::thread_block block = cg::this_thread_block();
    int i = block.group_index().x * block.group_dim().x + block.thread_index().x;
    block.sync();
    if (i < n)
        c[i] = a[i] + b[i];
}
""" + launch("CUDA_CHECK_LAUNCH()")),
    # Four elements a thread, unrolled, through restrict pointers.
    ("unroll-restrict", HEAD + """
#define ITEMS 4

__global__ void vector_add_kernel(const float *__restrict__ a, const float *__restrict__ b,
                                  float *__restrict__ c, int n)
{
    int first = blockIdx.x * blockDim.x * ITEMS + threadIdx.x;
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
        int i = first + k * blockDim.x;
        if (i < n)
            c[i] = a[i] + b[i];
    }
}

void vector_add(const float *a, const float *b, float *c, int n, int block_size)
{
    if (n == 0)
        return;
    int per_block = block_size * ITEMS;
    vector_add_kernel<<<(n + per_block - 1) / per_block, block_size>>>(a, b, c, n);
    CUDA_CHECK_LAUNCH();
}
"""),
    # Device printf and assert behind a debug flag, cuda::atomic_ref on a
    # __device__ counter.
    ("device-printf-assert", "#include <cassert>\n#include <cstdio>\n#include <cuda/atomic>\n" + HEAD + """
__device__ unsigned int blocks_done;

__global__ void vector_add_kernel(const float *a, const float *b, float *c, int n, bool debug)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    assert(blockDim.x > 0);
    if (i < n)
        c[i] = a[i] + b[i];
    if (threadIdx.x == 0) {
        cuda::atomic_ref<unsigned int, cuda::thread_scope_device> done(blocks_done);
        done.fetch_add(1, cuda::std::memory_order_relaxed);
    }
    if (debug && i == 0)
        printf("block %d: c[0] = %f\\n", blockIdx.x, c[0]);
}

void vector_add(const float *a, const float *b, float *c, int n, int block_size)
{
#ifdef VECTOR_ADD_DEBUG
    const bool debug = true;
#else
    const bool debug = false;
#endif
    if (n == 0)
        return;
    vector_add_kernel<<<(n + block_size - 1) / block_size, block_size>>>(a, b, c, n, debug);
    CUDA_CHECK_LAUNCH();
}
"""),
    # --- styles of writing C
    # The entry point in an extern "C" block, as C programmers write headers,
    # with a helper and a global variable of C linkage and names of their own.
    ("extern-c-block", HEAD + KERNEL + """
extern "C" {
long vector_add_launches = 0;

int vector_add_blocks(int n, int block_size)
{
    return (n + block_size - 1) / block_size;
}

void vector_add(const float *a, const float *b, float *c, int n, int block_size)
{
    if (n == 0)
        return;
    vector_add_launches++;
    vector_add_kernel<<<vector_add_blocks(n, block_size), block_size>>>(a, b, c, n);
    CUDA_CHECK_LAUNCH();
}
}
"""),
    # K&R-ish C: braces on their own lines, unsigned ints, pointer-to-const
    # spelled out, a static helper, only C's stdio.
    ("k-and-r-c", "#include <stdio.h>\n#include <stdlib.h>\n" + HEAD + """
__global__ void
vector_add_kernel(const float * const a, const float * const b, float * const c, int n)
{
    unsigned int i;

    i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (unsigned int) n)
    {
        c[i] = a[i] + b[i];
    }
}

static int
grid_for(int n, int block_size)
{
    return (n + block_size - 1) / block_size;
}

void
vector_add(const float *a, const float *b, float *c, int n, int block_size)
{
    cudaError_t err;

    if (n == 0)
    {
        return;
    }
    vector_add_kernel<<<grid_for(n, block_size), block_size>>>(a, b, c, n);
    err = cudaGetLastError();
    if (err != cudaSuccess)
    {
        fprintf(stderr, "vector_add: %s\\n", cudaGetErrorString(err));
        exit(1);
    }
}
"""),
    # Tabs for indentation.
    ("tabs", (HEAD + KERNEL + launch("CUDA_CHECK_LAUNCH()")).replace("    ", "\t")),
    # A static function-local count of launches, printed every millionth call.
    ("static-local-count", "#include <cstdio>\n" + HEAD + KERNEL + launch(
        "static unsigned long launches = 0;\n    if (++launches % 1000000 == 0)\n"
        "        printf(\"vector_add: %lu launches\\n\", launches);\n    CUDA_CHECK_LAUNCH()")),
]

# The reference itself saved by editors that add bytes: a UTF-8 byte-order
# mark, CRLF line ends, both. Made from the reference's text (make()).
REFERENCE_VARIANTS = [
    ("byte-order-mark", lambda text: "\ufeff" + text),
    ("crlf-line-ends", lambda text: text.replace("\n", "\r\n")),
    ("bom-and-crlf", lambda text: "\ufeff" + text.replace("\n", "\r\n")),
]


# Graded alone with the real rubric in the GPU half: full marks include the
# performance points (the styles that change the host's path around the launch).
TIMED = ["chrono-first-call", "occupancy-grid-stride", "throw-runtime-error", "templates-block-size"]


def submissions(reference_text):
    """{name: text of kernels.cu} for every honest case."""
    found = dict(CASES)
    found.update((name, change(reference_text)) for name, change in REFERENCE_VARIANTS)
    return found
