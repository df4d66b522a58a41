/* The benchmark programs' shared front: options, usage, no-GPU exit, target
 * line (see bench.h). */
#include "bench.h"

#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workbook.h"

/* Every benchmark understands these, whether or not it uses them. */
static const char *const common_names[] = {"stage", "n", "block", "reps", "target"};
enum { COMMON = sizeof common_names / sizeof common_names[0], MAX_OPTIONS = 40, FIRST_VAL = 1000 };

static const char *program = "bench";
static const wb_option *table;   /* the lab's options */
static char accepted[640];       /* "--stage, --n (--size), ..., --help" for errors */
static const char *narrowed_by;  /* "stage", "n" or "block": a run narrower than the targets' */

/* ------------------------------------------------------------- usage */

/* "--name ARG" (with "--size" beside --n). */
static void option_label(const wb_option *o, char *out, size_t len)
{
    const char *arg = o->arg ? o->arg : "", *space = o->arg ? " " : "";
    if (!strcmp(o->name, "n"))
        snprintf(out, len, "--n %s, --size %s", arg, arg);
    else
        snprintf(out, len, "--%s%s%s", o->name, space, arg);
}

/* Prints text from column 26, wrapped before column 80. */
static void print_wrapped(FILE *out, const char *label, const char *text)
{
    int column = fprintf(out, "  %-22s", label);
    if (column > 24) {
        fputc('\n', out);
        column = fprintf(out, "%24s", "");
    }
    while (*text) {
        size_t word = strcspn(text, " ");
        if (column > 24 && column + 1 + (int)word > 79) {
            fprintf(out, "\n%24s", "");
            column = 24;
        }
        column += fprintf(out, " %.*s", (int)word, text);
        text += word;
        text += strspn(text, " ");
    }
    fputc('\n', out);
}

/* The lab's entry for a name, or NULL. */
static const wb_option *lookup(const char *name)
{
    for (const wb_option *o = table; o->name; o++)
        if (!strcmp(o->name, name))
            return o;
    return NULL;
}

/* " (default V)" from the option's value before parsing, unless its help
 * already says its default; "" for flags and for "every stage". */
static void default_text(const wb_option *o, char *out, size_t len)
{
    *out = '\0';
    if (strstr(o->help, "default") || o->kind == WB_FLAG)
        return;
    if (o->kind == WB_INT || o->kind == WB_WARPS) {
        int v = *(const int *)o->value;
        if (!strcmp(o->name, "stage") && v == WB_ALL_STAGES)
            snprintf(out, len, " (default: all)");
        else if (v >= 1024 && (v & (v - 1)) == 0)
            snprintf(out, len, " (default 2^%d)", __builtin_ctz((unsigned)v));
        else
            snprintf(out, len, " (default %d)", v);
    } else if (o->kind == WB_REAL) {
        snprintf(out, len, " (default %g)", *(const double *)o->value);
    } else if (*(const char *const *)o->value) {
        snprintf(out, len, " (default %s)", *(const char *const *)o->value);
    }
}

static void usage(FILE *out, const char *about)
{
    char label[64];
    fprintf(out, "usage: %s [options]\n%s\n\nOptions:\n", program, about);
    for (const wb_option *o = table; o->name; o++)
        if (o->value) {
            char help[512], given[64];
            default_text(o, given, sizeof given);
            snprintf(help, sizeof help, "%s%s", o->help, given);
            if (!strcmp(o->name, "stage") && o->lo == o->hi)   /* the range, from the table */
                snprintf(help, sizeof help, "%s%s; it times one stage, %.0f", o->help, given,
                         o->lo);
            else if (!strcmp(o->name, "stage"))
                snprintf(help, sizeof help, "%s%s; it times stages %.0f to %.0f", o->help,
                         given, o->lo, o->hi);
            option_label(o, label, sizeof label);
            print_wrapped(out, label, help);
        }
    print_wrapped(out, "--help", "this text");
    bool header = false;
    for (int c = 0; c < COMMON; c++) {
        const wb_option *o = lookup(common_names[c]);
        if (o && o->value)
            continue;
        if (!header)
            fprintf(out, "Not taken by this benchmark:\n");
        header = true;
        snprintf(label, sizeof label, "--%s", common_names[c]);
        print_wrapped(out, label, o ? o->help : "not used by this lab");
    }
    fprintf(out, "Targets are for the full run: --stage, --n and --block leave them unchecked.\n"
                 "Exit status: 0 targets met, 1 a target missed or a wrong result,\n"
                 "2 bad options, 77 no usable GPU.\n");
}

/* ------------------------------------------------------------ errors */

void wb_bench_usage_error(const char *format, ...)
{
    char message[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    fprintf(stderr, "error: %s: %s\nIt takes %s (--help says what each does).\n", program,
            message, accepted);
    exit(2);
}

/* ------------------------------------------------------------ values */

/* A whole number, decimal or 2^K, in [lo, hi]. */
static void parse_int(const wb_option *o, const char *text)
{
    char *end;
    double v;
    if (!strncmp(text, "2^", 2)) {
        long k = strtol(text + 2, &end, 10);
        v = k >= 0 && k < 63 ? ldexp(1.0, (int)k) : INFINITY;
    } else {
        v = (double)strtoll(text, &end, 10);
    }
    if (*text == '\0' || *end != '\0' || v < o->lo || v > o->hi) {
        if (!strcmp(o->name, "stage") && o->lo == o->hi)
            wb_bench_usage_error("--stage %s: this benchmark times one stage, %.0f", text, o->lo);
        if (!strcmp(o->name, "stage"))
            wb_bench_usage_error("--stage %s: this benchmark times stages %.0f to %.0f (leave --stage "
                                 "out for all of them)", text, o->lo, o->hi);
        wb_bench_usage_error("--%s: expected a whole number from %.0f to %.0f, got \"%s\"",
                             o->name, o->lo, o->hi, text);
    }
    *(int *)o->value = (int)v;
}

static void parse_value(const wb_option *o, const char *text)
{
    char *end;
    switch (o->kind) {
    case WB_INT:
    case WB_WARPS: parse_int(o, text); break;
    case WB_TEXT: *(const char **)o->value = text; break;
    case WB_FLAG: *(bool *)o->value = true; break;
    case WB_REAL: {
        double v = strtod(text, &end);
        if (*text == '\0' || *end != '\0' || !(v >= o->lo && v <= o->hi))
            wb_bench_usage_error("--%s: expected a number from %g to %g, got \"%s\"", o->name,
                                 o->lo, o->hi, text);
        *(double *)o->value = v;
        break;
    }
    }
}

/* ------------------------------------------------------------ parser */

void wb_bench_options(int argc, char **argv, const char *about, const wb_option *options)
{
    static const wb_option not_used = {NULL, NULL, WB_INT, NULL, 0, 0, "not used by this lab"};
    struct option longopts[MAX_OPTIONS + 1];
    const wb_option *entry[MAX_OPTIONS];
    const char *name[MAX_OPTIONS];
    int count = 0;
    const char *slash = strrchr(argv[0], '/');
    program = slash ? slash + 1 : argv[0];
    table = options;

    /* The lab's options (--size beside --n), then the common ones it left
     * out, which are refused. */
    size_t used = 0;
    for (const wb_option *o = options; o->name && count < MAX_OPTIONS - COMMON - 3; o++) {
        for (int alias = 0; alias < (strcmp(o->name, "n") ? 1 : 2); alias++) {
            name[count] = alias ? "size" : o->name;
            entry[count] = o;
            longopts[count] = (struct option){name[count], o->kind == WB_FLAG ? no_argument
                                                                               : required_argument,
                                              NULL, FIRST_VAL + count};
            count++;
        }
        if (o->value)
            used += (size_t)snprintf(accepted + used, sizeof accepted - used, "--%s%s, ",
                                     o->name, strcmp(o->name, "n") ? "" : " (--size)");
    }
    for (int c = 0; c < COMMON; c++) {
        if (lookup(common_names[c]))
            continue;
        name[count] = common_names[c];
        entry[count] = &not_used;
        longopts[count] = (struct option){common_names[c], required_argument, NULL,
                                          FIRST_VAL + count};
        count++;
    }
    snprintf(accepted + used, sizeof accepted - used, "--help");
    longopts[count++] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[count] = (struct option){NULL, 0, NULL, 0};

    opterr = 0;   /* the messages below say more */
    for (int opt; (opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1;) {
        if (opt == 'h') {
            usage(stdout, about);
            exit(0);
        }
        if (opt == ':')
            wb_bench_usage_error("%s needs a value", argv[optind - 1]);
        if (opt == '?')
            wb_bench_usage_error("unknown or ambiguous option %s", argv[optind - 1]);
        const wb_option *o = entry[opt - FIRST_VAL];
        if (!o->value)
            wb_bench_usage_error("--%s is not taken here: %s", name[opt - FIRST_VAL], o->help);
        parse_value(o, optarg);
        if (!strcmp(o->name, "stage") || !strcmp(o->name, "n") || !strcmp(o->name, "block"))
            narrowed_by = o->name;
    }
    if (optind < argc)
        wb_bench_usage_error("unexpected argument \"%s\"", argv[optind]);
    /* Whole warps, once every value is in (a bad value of another option
     * is reported first). */
    for (const wb_option *o = options; o->name; o++)
        if (o->kind == WB_WARPS && o->value && *(const int *)o->value % 32 != 0)
            wb_bench_usage_error("--%s %d: the block size must be a multiple of 32", o->name,
                                 *(const int *)o->value);
}

/* ------------------------------------------------- GPU and the target */

void wb_bench_need_gpu(void)
{
    char reason[512];
    if (!wb_gpu_usable(reason, sizeof reason)) {
        fprintf(stderr, "skipped: %s\n", reason);
        exit(77);   /* meson's "skipped" */
    }
    /* Every table that follows was measured on this card at these clocks. */
    wb_device device = wb_device_info();
    printf("GPU: %s (sm_%d%d), %d SMs, L2 %.1f MiB, memory %.1f GiB\n", device.name,
           device.major, device.minor, device.sm_count, device.l2_bytes / 1048576.0,
           device.global_mem_bytes / 1073741824.0);
    printf("clocks: SM %.0f MHz measured now (peak %d MHz), memory %d MHz\n", wb_sm_clock_mhz(),
           device.clock_khz / 1000, device.memory_clock_khz / 1000);
}

/* Formats "FIRST|SECOND" into text; cuts it at the last '|' and returns
 * SECOND (NULL when there is no '|'). */
static char *format_two_parts(char *text, size_t len, const char *format, va_list args)
{
    vsnprintf(text, len, format, args);
    char *second = strrchr(text, '|');
    if (second)
        *second++ = '\0';
    return second;
}

void wb_bench_launch(const char *format, ...)
{
    char text[768];
    va_list args;
    va_start(args, format);
    char *why = format_two_parts(text, sizeof text, format, args);
    va_end(args);
    printf("launch: %s", text);
    if (why && *why)
        printf(" (why: %s)", why);
    printf("\n");
}

void wb_l2_share_text(char *out, size_t len, double bytes, double l2_bytes)
{
    double ratio = l2_bytes > 0.0 ? bytes / l2_bytes : 0.0;
    int written = snprintf(out, len, "%.0f MiB = %.1fx L2 (%.1f MiB)", bytes / 1048576.0, ratio,
                           l2_bytes / 1048576.0);
    /* A set that fits stays in the cache between runs: its time is the L2's. */
    if (ratio <= 1.0 && written >= 0 && (size_t)written < len)
        snprintf(out + written, len - (size_t)written, ", fits in the L2: repeated runs find "
                 "it there, not in DRAM");
}

void wb_bench_working_set(const char *what, double bytes)
{
    char share[160];
    wb_l2_share_text(share, sizeof share, bytes, (double)wb_device_info().l2_bytes);
    printf("working set: %s: %s\n", what, share);
}

/* "2^26" for a power of two, else the decimal count. */
static void count_text(char *out, size_t len, size_t count)
{
    if (count >= 1024 && (count & (count - 1)) == 0)
        snprintf(out, len, "2^%d", __builtin_ctzll((unsigned long long)count));
    else
        snprintf(out, len, "%zu", count);
}

size_t wb_default_size_text(char *out, size_t len, const char *what, size_t usual,
                            size_t granule, double bytes_each, double device_bytes_each,
                            double l2_bytes, double free_bytes)
{
    double wanted = WB_L2_TIMES * l2_bytes / bytes_each;
    double room = 0.5 * free_bytes / device_bytes_each;   /* half: the rest is the lab's */
    size_t count = usual;
    if ((double)usual < wanted) {
        double raised = ceil(fmin(wanted, room) / (double)granule) * (double)granule;
        count = raised > (double)usual ? (size_t)raised : usual;
    }
    char usual_text[32], count_now[32], share[160];
    count_text(usual_text, sizeof usual_text, usual);
    count_text(count_now, sizeof count_now, count);
    wb_l2_share_text(share, sizeof share, bytes_each * (double)usual, l2_bytes);
    if (count == usual && (double)usual >= wanted)
        snprintf(out, len, "%s: %s, %s: kept, %.0fx L2 or more", what, usual_text, share,
                 WB_L2_TIMES);
    else if (count == usual)
        snprintf(out, len, "%s: %s, %s: kept, as half of the free device memory (%.1f GiB) "
                 "holds no more", what, usual_text, share, free_bytes / 1073741824.0);
    else
        snprintf(out, len, "%s: %s, %s: raised to %s (%.0f MiB = %.1fx L2)%s", what, usual_text,
                 share, count_now, bytes_each * (double)count / 1048576.0,
                 bytes_each * (double)count / l2_bytes,
                 (double)count < wanted ? ", as far as half of the free device memory holds" : "");
    return count;
}

size_t wb_bench_default_size(const char *what, size_t usual, size_t granule, double bytes_each,
                             double device_bytes_each)
{
    size_t free_bytes, total_bytes;
    CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    char line[512];
    size_t count = wb_default_size_text(line, sizeof line, what, usual, granule, bytes_each,
                                        device_bytes_each, (double)wb_device_info().l2_bytes,
                                        (double)free_bytes);
    printf("size: %s\n", line);
    return count;
}

void wb_host_cpu_name(char *out, size_t len)
{
    /* x86 names the CPU in "model name"; some ARM kernels say "Hardware"
     * or (MIPS, POWER) "cpu model"/"cpu". The first one found wins. */
    static const char *const keys[] = {"model name", "Hardware", "cpu model", "cpu"};
    char line[512], found[sizeof keys / sizeof keys[0]][256] = {{0}};
    FILE *cpuinfo = fopen("/proc/cpuinfo", "r");
    while (cpuinfo && fgets(line, sizeof line, cpuinfo)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        size_t key_len = (size_t)(colon - line);
        while (key_len && (line[key_len - 1] == ' ' || line[key_len - 1] == '\t'))
            key_len--;
        char *value = colon + 1 + strspn(colon + 1, " \t");
        value[strcspn(value, "\n")] = '\0';
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            if (!found[k][0] && *value && strlen(keys[k]) == key_len &&
                !strncmp(line, keys[k], key_len))
                snprintf(found[k], sizeof found[k], "%s", value);
    }
    if (cpuinfo)
        fclose(cpuinfo);
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        if (found[k][0]) {
            snprintf(out, len, "%s", found[k]);
            return;
        }
    snprintf(out, len, "an unnamed CPU");
}

bool wb_bench_target(bool met, const char *format, ...)
{
    char text[512];
    va_list args;
    va_start(args, format);
    char *measured = format_two_parts(text, sizeof text, format, args);
    va_end(args);
    if (narrowed_by) {
        printf("target: %s: not checked (it is for the full run, which --%s narrowed)\n", text,
               narrowed_by);
        fflush(stdout);
        return true;
    }
    printf("target: %s: %s", text, met ? "met" : "NOT met");
    if (measured && *measured)
        printf(" (%s)", measured);
    printf("\n");
    fflush(stdout);
    return met;
}
