/* Criterion glue for lab tests (see wb_test.h): the error handler, the GPU
 * check, and the observations that let the grader judge a test outside the
 * process that ran the submission's code. */
#include "wb_test.h"
#include "wb_channel.h"

#include <cuda.h>   /* the types of the virtual memory calls (no link to libcuda) */
#include <criterion/hooks.h>
#include <criterion/internal/ordered-set.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- modes */

typedef enum { MODE_LOCAL, MODE_RECORD, MODE_JUDGE } test_mode;

static test_mode mode(void)
{
    static int cached = -1;
    if (cached < 0)
        cached = getenv("WB_JUDGE") ? MODE_JUDGE : wb_channel_wanted() ? MODE_RECORD : MODE_LOCAL;
    return (test_mode)cached;
}

/* ------------------------------------------------------- launch counting */

/* The lab test binaries are linked with --wrap for each kernel-launch entry
 * point of the CUDA runtime (meson.build, launch_wrap_args): every launch of
 * the process comes through here first. The count of a test case goes into
 * its recording, so the grader can tell whether the submission's code did
 * its work on the GPU at all. */
static unsigned long long launches;

/* The call log of wb_test.h: the launches and the prefetches. */
static wb_runtime_call call_log[WB_CALL_LOG_SIZE];
static size_t calls_logged, calls_past_log;

static void log_call(wb_runtime_call call)
{
    if (calls_logged < WB_CALL_LOG_SIZE)
        call_log[calls_logged++] = call;
    else
        calls_past_log++;
}

void wb_call_log_clear(void) { calls_logged = calls_past_log = 0; }

const wb_runtime_call *wb_call_log(size_t *count, size_t *more)
{
    *count = calls_logged;
    *more = calls_past_log;
    return call_log;
}

#define WB_WRAP_LAUNCH(name, params, args, launch_stream)                       \
    cudaError_t __real_##name params;                                           \
    cudaError_t __wrap_##name params;                                           \
    cudaError_t __wrap_##name params                                            \
    {                                                                           \
        launches++;                                                             \
        log_call((wb_runtime_call){.kind = WB_CALL_LAUNCH, .stream = launch_stream}); \
        return __real_##name args;                                              \
    }

#define WB_KERNEL_PARAMS \
    (cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t shared, cudaStream_t stream)
#define WB_FUNC_PARAMS \
    (const void *kernel, dim3 grid, dim3 block, void **args, size_t shared, cudaStream_t stream)
#define WB_LAUNCH_ARGS (kernel, grid, block, args, shared, stream)
#define WB_EX_PARAMS (const cudaLaunchConfig_t *config, const void *kernel, void **args)
#define WB_EX_ARGS (config, kernel, args)

WB_WRAP_LAUNCH(__cudaLaunchKernel, WB_KERNEL_PARAMS, WB_LAUNCH_ARGS, stream)
WB_WRAP_LAUNCH(__cudaLaunchKernel_ptsz, WB_KERNEL_PARAMS, WB_LAUNCH_ARGS, stream)
WB_WRAP_LAUNCH(cudaLaunchKernel, WB_FUNC_PARAMS, WB_LAUNCH_ARGS, stream)
WB_WRAP_LAUNCH(cudaLaunchKernel_ptsz, WB_FUNC_PARAMS, WB_LAUNCH_ARGS, stream)
WB_WRAP_LAUNCH(cudaLaunchCooperativeKernel, WB_FUNC_PARAMS, WB_LAUNCH_ARGS, stream)
WB_WRAP_LAUNCH(cudaLaunchCooperativeKernel_ptsz, WB_FUNC_PARAMS, WB_LAUNCH_ARGS, stream)
WB_WRAP_LAUNCH(cudaLaunchKernelExC, WB_EX_PARAMS, WB_EX_ARGS, config->stream)
WB_WRAP_LAUNCH(cudaLaunchKernelExC_ptsz, WB_EX_PARAMS, WB_EX_ARGS, config->stream)

#define WB_WRAP_PREFETCH(name)                                                          \
    cudaError_t __real_##name(const void *ptr, size_t bytes, struct cudaMemLocation where, \
                              unsigned flags, cudaStream_t stream);                     \
    cudaError_t __wrap_##name(const void *ptr, size_t bytes, struct cudaMemLocation where, \
                              unsigned flags, cudaStream_t stream);                     \
    cudaError_t __wrap_##name(const void *ptr, size_t bytes, struct cudaMemLocation where, \
                              unsigned flags, cudaStream_t stream)                      \
    {                                                                                   \
        log_call((wb_runtime_call){WB_CALL_PREFETCH, ptr, bytes, (int)where.type, stream}); \
        return __real_##name(ptr, bytes, where, flags, stream);                         \
    }

WB_WRAP_PREFETCH(cudaMemPrefetchAsync)
WB_WRAP_PREFETCH(cudaMemPrefetchAsync_ptsz)

/* ------------------------------------------------------------ recording */

/* In a recording, each entry goes to the grader's channel (wb_channel.h)
 * while the test case is open, between wb_case_begin and wb_test_end: the
 * grader writes the case's recording in its own folder and seals it at the
 * case's 'F' entry. Kinds: 'O' an observation, 'E' an error that ended the
 * case (label: the message), 'F' the case finished (data: the launch count,
 * u64). The judge reads the same entries back (next_entry). */
static bool case_open;

/* The judge's copy of the submission's recording of this case. */
static struct {
    unsigned char *data;
    size_t size, at;
    int observations;
    bool loaded;
} replay;

static char case_name[512];

/* The judge's own output folder (WB_JUDGE_OUT). */
static const char *judge_out(void)
{
    const char *out = getenv("WB_JUDGE_OUT");
    return out ? out : ".";
}

static void channel_failed(const char *what)
{
    cr_assert_fail("grading: the channel to the grader failed (%s) in %s", what, case_name);
}

static void record_entry(char kind, const char *label, const void *data, size_t bytes)
{
    if (case_open && !wb_channel_send(kind, label, data, bytes))
        channel_failed("a recorded entry");
}

/* The grader's clock (workbook.h, wb_timing_clock), over the channel. */
static uint64_t grader_ready(int repetition, int calls)
{
    int32_t numbers[2] = {repetition, calls};
    uint64_t seed;
    if (!wb_channel_ask(WB_ENTRY_READY, "", numbers, sizeof numbers, &seed, sizeof seed))
        channel_failed("the seed of a timed repetition");
    return seed;
}

static void grader_set(void)
{
    char go;
    if (!wb_channel_ask(WB_ENTRY_SET, "", NULL, 0, &go, 1))
        channel_failed("the go of a timed repetition");
}

static void grader_done(void)
{
    if (!wb_channel_send(WB_ENTRY_DONE, "", NULL, 0))
        channel_failed("the end of a timed repetition");
}

static const wb_timing_clock grader_clock = {grader_ready, grader_set, grader_done};

/* The k-th case of a test (parameterized tests have several, run one after
 * another): the first k for which DIR/<suite>.<test>.<k> can be created.
 * The grader names its recordings the same way (grading/grader/recordings.py). */
static int open_case_file(const char *dir, char *path, size_t path_len)
{
    for (int k = 0; k < 100000; k++) {
        snprintf(path, path_len, "%s/%s.%d", dir, case_name, k);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

static void load_replay(void)
{
    char marker[4096], path[4096];
    int fd = open_case_file(judge_out(), marker, sizeof marker);
    cr_assert(fd >= 0, "judge: cannot create %s: %s", marker, strerror(errno));
    close(fd);
    /* The marker's suffix is this case's number k; the submission's k-th
     * recording of the same test is the one to judge. */
    snprintf(path, sizeof path, "%s/%s", getenv("WB_JUDGE"), strrchr(marker, '/') + 1);
    replay.loaded = true;
    FILE *f = fopen(path, "rb");
    if (!f)
        return; /* nothing recorded: judged as "did not start" at the first need */
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    replay.data = size > 0 ? malloc((size_t)size) : NULL;
    if (size > 0 && (!replay.data || fread(replay.data, 1, (size_t)size, f) != (size_t)size))
        cr_assert_fail("judge: cannot read the submission's recording %s", path);
    replay.size = size > 0 ? (size_t)size : 0;
    fclose(f);
}

typedef struct {
    char kind;
    const char *label;
    uint32_t label_len;
    const unsigned char *data;
    uint64_t data_len;
} entry;

/* The next entry of the recording; false at its end or where it is cut. */
static bool next_entry(entry *e)
{
    size_t at = replay.at;
    uint32_t label_len;
    uint64_t data_len;
    if (!replay.data || replay.size - at < 1 + sizeof label_len)
        return false;
    e->kind = (char)replay.data[at++];
    memcpy(&label_len, replay.data + at, sizeof label_len);
    at += sizeof label_len;
    if (replay.size - at < (size_t)label_len + sizeof data_len)
        return false;
    e->label = (const char *)replay.data + at;
    e->label_len = label_len;
    at += label_len;
    memcpy(&data_len, replay.data + at, sizeof data_len);
    at += sizeof data_len;
    if (replay.size - at < data_len)
        return false;
    e->data = replay.data + at;
    e->data_len = data_len;
    replay.at = at + data_len;
    return true;
}

#define judge_fail(...) cr_assert_fail(__VA_ARGS__)

/* The submission's value for the next observation, which must be `what`. */
static entry expect_observation(const char *what)
{
    entry e;
    if (!next_entry(&e) || e.kind == WB_ENTRY_FINISH)
        judge_fail("your code's run of this case ended before it produced '%s' (%d result(s) "
                   "before that): it crashed, exited, hung or ran out of time there; the grader's "
                   "note on the process says which " WB_SEED_HINT,
                   what, replay.observations, wb_seed());
    if (e.kind == WB_ENTRY_ERROR)
        judge_fail("your code's run of this case failed before '%s': %.*s", what,
                   (int)e.label_len, e.label);
    if (e.kind != WB_ENTRY_OBSERVATION || e.label_len != strlen(what) ||
        memcmp(e.label, what, e.label_len) != 0)
        judge_fail("your code's run of this case went another way: expected the result '%s', "
                   "its recording has '%.*s' there " WB_SEED_HINT,
                   what, (int)e.label_len, e.label, wb_seed());
    replay.observations++;
    return e;
}

void wb_observe(const char *what, void *host, size_t bytes)
{
    if (mode() == MODE_RECORD) {
        record_entry(WB_ENTRY_OBSERVATION, what, host, bytes);
    } else if (mode() == MODE_JUDGE) {
        entry e = expect_observation(what);
        if (e.data_len != bytes)
            judge_fail("'%s': your code's run recorded %llu bytes, the test reads %zu", what,
                       (unsigned long long)e.data_len, bytes);
        memcpy(host, e.data, bytes);
    }
}

void wb_fetch(void *host, const void *device, size_t bytes, const char *what)
{
    if (bytes)
        CUDA_CHECK(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost));
    wb_observe(what, host, bytes);
}

int wb_observe_int(const char *what, int value)
{
    wb_observe(what, &value, sizeof value);
    return value;
}

long long wb_observe_i64(const char *what, long long value)
{
    wb_observe(what, &value, sizeof value);
    return value;
}

double wb_observe_double(const char *what, double value)
{
    wb_observe(what, &value, sizeof value);
    return value;
}

void wb_observe_str(const char *what, char *text, size_t capacity)
{
    if (mode() == MODE_RECORD) {
        record_entry(WB_ENTRY_OBSERVATION, what, text, strnlen(text, capacity - 1) + 1);
    } else if (mode() == MODE_JUDGE) {
        entry e = expect_observation(what);
        size_t n = e.data_len < capacity ? (size_t)e.data_len : capacity - 1;
        memcpy(text, e.data, n);
        text[n] = '\0';
    }
}

char *wb_observe_stdout(const char *what)
{
    fflush(stdout);
    FILE *f = cr_get_redirected_stdout();
    size_t size = 0, capacity = 4096;
    char *text = malloc(capacity);
    cr_assert(text, "out of host memory");
    for (size_t n; (n = fread(text + size, 1, capacity - size - 1, f)) > 0;) {
        size += n;
        if (capacity - size < 2) {
            capacity *= 2;
            text = realloc(text, capacity);
            cr_assert(text, "out of host memory");
        }
    }
    text[size] = '\0';
    if (mode() == MODE_JUDGE) {
        entry e = expect_observation(what);
        free(text);
        text = malloc(e.data_len + 1);
        cr_assert(text, "out of host memory");
        memcpy(text, e.data, e.data_len);
        text[e.data_len] = '\0';
    } else if (mode() == MODE_RECORD) {
        record_entry(WB_ENTRY_OBSERVATION, what, text, size);
    }
    return text;
}

wb_timing wb_observe_timing(const char *what, wb_timing t, double bytes, double flops)
{
    wb_timing own = t;
    /* The grader's own measurement of the series that just ended gets this
     * name; t (this process's events) is shown, never scored. */
    if (wb_channel_wanted() && !wb_channel_send(WB_ENTRY_LABEL, what, NULL, 0))
        channel_failed("a timing's label");
    wb_observe(what, &t, sizeof t);
    if (mode() == MODE_JUDGE) {
        /* The least time the work can take here: its bytes at the copy
         * bandwidth, or its flops at the FP32 peak, both of this GPU. */
        double floor_ms = 0.0;
        if (bytes > 0)
            floor_ms = bytes / (wb_copy_bandwidth_gbps() * 1e6);
        if (flops > 0)
            floor_ms = fmax(floor_ms, flops / (wb_fp32_peak_gflops() * 1e6));
        char path[4096];
        snprintf(path, sizeof path, "%s/timings.csv", judge_out());
        FILE *f = fopen(path, "a");
        cr_assert(f, "judge: cannot write %s", path);
        /* The submission's numbers are printed with %.17g: NaN and Inf
         * stay visible as such, and the grader refuses them. */
        fprintf(f, "%s,\"%s\",%.17g,%.17g,%d,%d,%.17g\n", case_name, what, own.median_ms,
                t.median_ms, t.warmup, t.repetitions, floor_ms);
        fclose(f);
    }
    return t;
}

/* ----------------------------------------------------------- guard zones */

/* Each guarded buffer sits at the END of its own mapped device memory,
 * followed by an address range that is reserved but never mapped. Before
 * the buffer: WB_GUARD_BYTES of 0xFF bytes. After it: the bytes up to the
 * next multiple of 16 (0xFF too), then nothing: a read or write past the
 * end faults (an illegal address) however far it goes, even where the value
 * read only feeds outputs that are never stored. The reservation uses
 * CUDA's virtual memory management, reached through the runtime
 * (cudaGetDriverEntryPointByVersion), so that test binaries need no link
 * to the driver library; where it is missing, the buffer is an ordinary
 * cudaMalloc with a WB_GUARD_BYTES zone of 0xFF after it as well. */
#define WB_GUARD_SLOTS 64
static struct {
    unsigned char *user;        /* what the caller got */
    size_t bytes, after;        /* the caller's bytes; guard bytes after them */
    CUdeviceptr reserved;       /* the reservation (0: an ordinary cudaMalloc) */
    size_t reserved_bytes, mapped_bytes;
    CUmemGenericAllocationHandle handle;
} guarded[WB_GUARD_SLOTS];

typedef CUresult (*granularity_fn)(size_t *, const CUmemAllocationProp *,
                                   CUmemAllocationGranularity_flags);
typedef CUresult (*reserve_fn)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                              unsigned long long);
typedef CUresult (*map_fn)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                           unsigned long long);
typedef CUresult (*access_fn)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
typedef CUresult (*unmap_fn)(CUdeviceptr, size_t);
typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);
typedef CUresult (*address_free_fn)(CUdeviceptr, size_t);
typedef CUresult (*attribute_fn)(int *, CUdevice_attribute, CUdevice);
static struct {
    bool tried, ok;
    granularity_fn granularity;
    reserve_fn reserve;
    create_fn create;
    map_fn map;
    access_fn access;
    unmap_fn unmap;
    release_fn release;
    address_free_fn address_free;
} vmm;

static void *driver_entry(const char *name)
{
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult found;
    if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found) !=
            cudaSuccess || found != cudaDriverEntryPointSuccess)
        return NULL;
    return fn;
}

static bool vmm_available(void)
{
    if (!vmm.tried) {
        vmm.tried = true;
        int supported = 0, device = 0;
        attribute_fn attribute = (attribute_fn)driver_entry("cuDeviceGetAttribute");
        if (!attribute || cudaGetDevice(&device) != cudaSuccess ||
            attribute(&supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                      (CUdevice)device) != CUDA_SUCCESS)
            supported = 0;
        vmm.granularity = (granularity_fn)driver_entry("cuMemGetAllocationGranularity");
        vmm.reserve = (reserve_fn)driver_entry("cuMemAddressReserve");
        vmm.create = (create_fn)driver_entry("cuMemCreate");
        vmm.map = (map_fn)driver_entry("cuMemMap");
        vmm.access = (access_fn)driver_entry("cuMemSetAccess");
        vmm.unmap = (unmap_fn)driver_entry("cuMemUnmap");
        vmm.release = (release_fn)driver_entry("cuMemRelease");
        vmm.address_free = (address_free_fn)driver_entry("cuMemAddressFree");
        vmm.ok = supported && vmm.granularity && vmm.reserve && vmm.create && vmm.map &&
                 vmm.access && vmm.unmap && vmm.release && vmm.address_free;
        cudaGetLastError();   /* a failed lookup leaves nothing behind */
    }
    return vmm.ok;
}

static void check_driver(CUresult status, const char *call)
{
    cr_assert(status == CUDA_SUCCESS, "wb_guarded_malloc: %s failed (CUresult %d)", call,
              (int)status);
}

/* Maps granules for the leading guard and the buffer, and reserves one
 * more granule after them that stays unmapped. */
static void map_with_hole_after(int slot, size_t needed)
{
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    size_t granule = 0;
    check_driver(vmm.granularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                 "cuMemGetAllocationGranularity");
    size_t mapped = (needed + granule - 1) / granule * granule;
    guarded[slot].mapped_bytes = mapped;
    guarded[slot].reserved_bytes = mapped + granule;
    check_driver(vmm.reserve(&guarded[slot].reserved, mapped + granule, 0, 0, 0),
                 "cuMemAddressReserve");
    check_driver(vmm.create(&guarded[slot].handle, mapped, &prop, 0), "cuMemCreate");
    check_driver(vmm.map(guarded[slot].reserved, mapped, 0, guarded[slot].handle, 0), "cuMemMap");
    CUmemAccessDesc access = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    check_driver(vmm.access(guarded[slot].reserved, mapped, &access, 1), "cuMemSetAccess");
}

void *wb_guarded_malloc(size_t bytes)
{
    int slot = 0;
    while (slot < WB_GUARD_SLOTS && guarded[slot].user)
        slot++;
    cr_assert(slot < WB_GUARD_SLOTS, "wb_guarded_malloc: more than %d buffers at once", WB_GUARD_SLOTS);
    unsigned char *start;
    if (vmm_available()) {
        /* 16-byte aligned, so that vector loads of the buffer are legal. */
        guarded[slot].after = (16 - bytes % 16) % 16;
        map_with_hole_after(slot, WB_GUARD_BYTES + bytes + guarded[slot].after);
        start = (unsigned char *)(uintptr_t)guarded[slot].reserved;
        guarded[slot].user = start + guarded[slot].mapped_bytes - guarded[slot].after - bytes;
    } else {
        guarded[slot].reserved = 0;
        guarded[slot].after = WB_GUARD_BYTES;
        CUDA_CHECK(cudaMalloc((void **)&start, bytes + 2 * WB_GUARD_BYTES));
        guarded[slot].user = start + WB_GUARD_BYTES;
    }
    guarded[slot].bytes = bytes;
    CUDA_CHECK(cudaMemset(guarded[slot].user - WB_GUARD_BYTES, 0xFF,
                          WB_GUARD_BYTES + bytes + guarded[slot].after));
    return guarded[slot].user;
}

static int guarded_slot(const void *p)
{
    for (int slot = 0; slot < WB_GUARD_SLOTS; slot++)
        if (guarded[slot].user && guarded[slot].user == p)
            return slot;
    cr_assert_fail("wb_guarded: %p was not allocated with wb_guarded_malloc", p);
    return -1;
}

void wb_guarded_check(const void *p, const char *what)
{
    int slot = guarded_slot(p);
    static unsigned char zone[2 * WB_GUARD_BYTES];
    size_t after = guarded[slot].after;
    char label[600];
    snprintf(label, sizeof label, "%s: guard zones", what);
    CUDA_CHECK(cudaMemcpy(zone, guarded[slot].user - WB_GUARD_BYTES, WB_GUARD_BYTES,
                          cudaMemcpyDeviceToHost));
    if (after)
        CUDA_CHECK(cudaMemcpy(zone + WB_GUARD_BYTES, guarded[slot].user + guarded[slot].bytes,
                              after, cudaMemcpyDeviceToHost));
    wb_observe(label, zone, WB_GUARD_BYTES + after);
    for (size_t i = 0; i < WB_GUARD_BYTES + after; i++) {
        if (zone[i] != 0xFF) {
            /* The first changed byte before the start is the farthest one;
             * past the end it is the nearest. */
            bool past = i >= WB_GUARD_BYTES;
            size_t distance = past ? i - WB_GUARD_BYTES + 1 : WB_GUARD_BYTES - i;
            cr_assert_fail("%s: a byte %zu byte(s) %s the buffer was written: an index out of "
                           "range (a bound such as i <= n instead of i < n, a missing bounds "
                           "check, or an index off by one) " WB_SEED_HINT,
                           what, distance, past ? "past the end of" : "before the start of",
                           wb_seed());
        }
    }
}

void wb_guarded_free(void *p)
{
    int slot = guarded_slot(p);
    if (guarded[slot].reserved) {
        CUDA_CHECK(cudaDeviceSynchronize());
        check_driver(vmm.unmap(guarded[slot].reserved, guarded[slot].mapped_bytes), "cuMemUnmap");
        check_driver(vmm.release(guarded[slot].handle), "cuMemRelease");
        check_driver(vmm.address_free(guarded[slot].reserved, guarded[slot].reserved_bytes),
                     "cuMemAddressFree");
    } else {
        CUDA_CHECK(cudaFree(guarded[slot].user - WB_GUARD_BYTES));
    }
    guarded[slot].user = NULL;
}

/* ------------------------------------------------------- test lifecycle */

static void fail_running_test(const char *message)
{
    /* In a recording, the error goes first into the record, so that the
     * judge reports it as the reason this case failed. */
    record_entry(WB_ENTRY_ERROR, message, NULL, 0);
    cr_assert_fail("%s " WB_SEED_HINT, message, wb_seed());
}

/* wb_expect_error: while the call runs, an error jumps back here with its
 * message instead of failing the test. */
static jmp_buf error_jump;
static char caught_message[512];

static void catch_error(const char *message)
{
    snprintf(caught_message, sizeof caught_message, "%s", message);
    longjmp(error_jump, 1);
}

jmp_buf *wb_catch_errors(void)
{
    caught_message[0] = '\0';
    wb_set_error_handler(catch_error);
    return &error_jump;
}

void wb_check_error_message(const char *what, const char *about)
{
    char label[600];
    wb_set_error_handler(fail_running_test);
    snprintf(label, sizeof label, "%s: error message", what);
    wb_observe_str(label, caught_message, sizeof caught_message);
    cr_assert(strstr(caught_message, about),
              "%s should fail with a message about '%s'; %s%s%s " WB_SEED_HINT, what, about,
              caught_message[0] ? "it said '" : "it did not fail", caught_message,
              caught_message[0] ? "'" : "", wb_seed());
}

/* WB_TIMEOUT_SCALE=K multiplies every suite's and test's .timeout by K
 * before the runner starts them: under compute-sanitizer a spin loop runs
 * ten to a hundred times slower, and a test that times out there has not
 * been checked (tests/sanitize_references.py, grade --sanitize). */
static double timeout_scale(void)
{
    const char *text = getenv("WB_TIMEOUT_SCALE");
    double scale = text ? atof(text) : 1.0;
    return scale > 1.0 ? scale : 1.0;
}

bool wb_under_sanitizer(void)
{
    return timeout_scale() > 1.0;
}

/* When this test process began its test (wb_test_begin), for the waits
 * below: Criterion's timeout counts from about then. */
static struct timespec test_started;

static double seconds_since(struct timespec t)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t.tv_sec) + 1e-9 * (double)(now.tv_nsec - t.tv_nsec);
}

/* The running test's limit in seconds (scaled above): its own .timeout,
 * else its suite's; 0 for none. */
static double test_limit(void)
{
    const struct criterion_test *t = criterion_current_test;
    const struct criterion_suite *s = criterion_current_suite;
    if (t && t->data && t->data->timeout > 0)
        return t->data->timeout;
    return s && s->data && s->data->timeout > 0 ? s->data->timeout : 0.0;
}

bool wb_gpu_done_in_time(void)
{
    double limit = test_limit();
    /* A second (a tenth of a long limit) before Criterion's own timeout. */
    double give_up = limit > 0 ? limit - fmax(1.0, 0.1 * limit) : INFINITY;
    cudaEvent_t done;
    CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(done, cudaStreamLegacy));
    cudaError_t status;
    while ((status = cudaEventQuery(done)) == cudaErrorNotReady) {
        if (seconds_since(test_started) > give_up)
            return false;   // the event stays: destroying it would wait for the GPU
        struct timespec pause = {0, 200000};   // 0.2 ms: a poll costs the GPU nothing
        nanosleep(&pause, NULL);
    }
    CUDA_CHECK(status);   // a fault inside a kernel shows here
    /* Polling never flushes the kernels' printf buffer; a synchronize does, and the work is
       done, so it returns at once. */
    CUDA_CHECK(cudaEventSynchronize(done));
    CUDA_CHECK(cudaEventDestroy(done));
    return true;
}

void wb_fail_hung(const char *what, const char *waits_for)
{
    cr_assert_fail("%s has not finished after %.1f s (this test's limit is %.0f s): %s", what,
                   seconds_since(test_started), test_limit(), waits_for);
}

void wb_wait_for_gpu(const char *what, const char *waits_for)
{
    if (!wb_gpu_done_in_time())
        wb_fail_hung(what, waits_for);
}

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
    double scale = timeout_scale();
    if (scale == 1.0)
        return;
    FOREACH_SET(struct criterion_suite_set *suite, set->suites) {
        if (suite->suite.data)
            suite->suite.data->timeout *= scale;
        FOREACH_SET(struct criterion_test *test, suite->tests) {
            if (test->data)
                test->data->timeout *= scale;
        }
    }
}

/* Runs before Criterion's main, in every test process. */
__attribute__((constructor)) static void install_criterion_handler(void)
{
    wb_set_error_handler(fail_running_test);
}

void wb_case_begin(void)
{
    snprintf(case_name, sizeof case_name, "%s.%s", criterion_current_suite->name,
             criterion_current_test->name);
    launches = 0;
    if (wb_channel_wanted()) {
        /* The record run and the judge's run both say which case begins:
         * the grader sends the judge's k-th case the seeds it sent the
         * submission's k-th case. The answer only says it was heard. */
        char heard;
        if (!wb_channel_ask(WB_ENTRY_BEGIN, case_name, NULL, 0, &heard, 1))
            channel_failed("the case's beginning");
        wb_set_timing_clock(&grader_clock);
        case_open = mode() == MODE_RECORD;
    }
    if (mode() == MODE_JUDGE)
        load_replay();
}

void wb_test_begin(void)
{
    clock_gettime(CLOCK_MONOTONIC, &test_started);
    wb_case_begin();
    char reason[256];
    if (!wb_gpu_usable(reason, sizeof reason))
        cr_skip_test("GPU test skipped: %s", reason);
}

void wb_test_end(void)
{
    if (mode() == MODE_RECORD && case_open) {
        uint64_t count = launches;
        record_entry(WB_ENTRY_FINISH, "", &count, sizeof count);
        case_open = false;
    } else if (mode() == MODE_JUDGE && replay.loaded) {
        /* Whether the submission's run got to its end, and the error that
         * ended it, if any, after the results this judge consumed. A .fini
         * can no longer fail the test (Criterion has reported it by now), so
         * this goes to cases.csv, which the grader reads (judge.py). */
        entry e;
        bool finished = false;
        unsigned long long student_launches = 0;
        char error[400] = "";
        while (next_entry(&e)) {
            if (e.kind == WB_ENTRY_ERROR && !error[0])
                snprintf(error, sizeof error, "%.*s", (int)e.label_len, e.label);
            if (e.kind == WB_ENTRY_FINISH && e.data_len == sizeof student_launches) {
                memcpy(&student_launches, e.data, sizeof student_launches);
                finished = true;
            }
        }
        for (char *c = error; *c; c++)
            if (*c == '\n' || *c == '\r')
                *c = ' ';
        char path[4096];
        snprintf(path, sizeof path, "%s/cases.csv", judge_out());
        FILE *f = fopen(path, "a");
        if (f) {
            fprintf(f, "%s,%d,%d,%llu,%s\n", case_name, replay.observations, finished,
                    student_launches, error);
            fclose(f);
        }
        free(replay.data);
    }
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
    /* Under the grader, the runner says who it is before any test: the
     * grader takes a test case only from a worker process that this runner
     * started (grading/grader/recordings.py). Criterion's workers run main
     * too; the grader keeps the first hello only. */
    if (wb_channel_wanted())
        wb_channel_send(WB_ENTRY_HELLO, "", NULL, 0);
    struct criterion_test_set *tests = criterion_initialize();
    int status = 0;
    if (criterion_handle_args(argc, argv, true))
        status = criterion_run_all_tests(tests) ? 0 : 1;
    criterion_finalize(tests);
    if (status == 0 && everything_skipped) {
        /* Criterion does not print why without --verbose: say it once, so
         * that meson's log and the summary of tests/run show the reason. */
        char reason[256];
        if (!wb_gpu_usable(reason, sizeof reason))
            fprintf(stderr, "skipped: %s\n", reason);
        status = 77;
    }
    return status;
}
