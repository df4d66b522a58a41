/*
 * wb_rules.c - source rules: the check behind wb_check_source_rules.
 *
 * Reads the kernels.cu under test, blanks its comments and literals, finds
 * each function a rule names and counts three kinds of words in its body:
 *   orderings  __threadfence(), __threadfence_system(), memory_order_acquire,
 *              _release, _acq_rel, _seq_cst, and an atomic_ref load, store,
 *              exchange or fetch_ call without a memory order (seq_cst);
 *              a read-modify-write (exchange, fetch_, compare_exchange_)
 *              that is acq_rel or seq_cst counts twice: it is a release
 *              and an acquire in one operation;
 *              __threadfence_block() too, for a rule of block scope;
 *   fresh      volatile, atomicXxx(...), __ldcv / __ldcg / __stcg / __stwt,
 *              and atomic_ref loads, stores, exchanges and fetch_ calls;
 *   barriers   __syncthreads*(), __syncwarp(), and cooperative groups' sync().
 * In a rule of device scope, cuda::thread_scope_block (or _thread) in the
 * body is a problem of its own: such an atomic orders nothing for other SMs.
 * Only the function's own body counts, not the functions it calls.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wb_test.h"

typedef struct {
    int orderings, fresh, barriers;
    int narrow;   /* block- or thread-scope atomics */
} counts;

/* The text with comments, string and character literals turned into spaces
 * (newlines kept), so that a fence in a comment counts for nothing. */
static char *read_blanked(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "source rules: cannot read %s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    cr_assert(text, "out of host memory");
    size_t got = fread(text, 1, (size_t)size, f);
    fclose(f);
    text[got] = '\0';
    for (char *p = text; *p;) {
        char *end;
        if (p[0] == '/' && p[1] == '/') {
            end = strchr(p, '\n');
            end = end ? end : p + strlen(p);
        } else if (p[0] == '/' && p[1] == '*') {
            end = strstr(p + 2, "*/");
            end = end ? end + 2 : p + strlen(p);
        } else if (*p == '"' || *p == '\'') {
            end = p + 1;
            while (*end && *end != *p && *end != '\n')
                end += end[0] == '\\' && end[1] ? 2 : 1;
            end += *end == *p;
        } else {
            p++;
            continue;
        }
        for (; p < end; p++)
            if (*p != '\n')
                *p = ' ';
    }
    return text;
}

static bool is_word_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

static const char *skip_space(const char *p)
{
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

/* The character after the bracket that closes the one at open, or NULL. */
static const char *after_closing(const char *open)
{
    char o = *open, c = o == '(' ? ')' : '}';
    int depth = 0;
    for (const char *p = open; *p; p++) {
        depth += (*p == o) - (*p == c);
        if (depth == 0)
            return p + 1;
    }
    return NULL;
}

/* Next occurrence of the whole word `word` in [from, to), or NULL. */
static const char *find_word(const char *from, const char *to, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = from; p + n <= to && (p = strstr(p, word)) && p + n <= to; p += n)
        if ((p == from || !is_word_char(p[-1])) && !is_word_char(p[n]))
            return p;
    return NULL;
}

/* The body ({ ... }) of a definition of `name` found in [from, to): a name
 * followed by a parameter list, qualifiers, then a brace. *end gets the end. */
static const char *find_definition(const char *from, const char *to, const char *name,
                                   const char **end)
{
    for (const char *p = from; (p = find_word(p, to, name)); p++) {
        const char *q = skip_space(p + strlen(name));
        if (*q != '(' || !(q = after_closing(q)))
            continue;
        for (q = skip_space(q); is_word_char(*q); q = skip_space(q))   // const, noexcept
            while (is_word_char(*q))
                q++;
        if (*q == '{' && (*end = after_closing(q)) && *end <= to)
            return q;
    }
    return NULL;
}

/* The body of `struct Name { ... }` (or class) in [from, to). */
static const char *find_struct(const char *from, const char *to, const char *name, const char **end)
{
    for (const char *p = from; (p = find_word(p, to, name)); p++) {
        const char *before = p;
        while (before > from && isspace((unsigned char)before[-1]))
            before--;
        bool tagged = (before - from >= 6 && !strncmp(before - 6, "struct", 6)) ||
                      (before - from >= 5 && !strncmp(before - 5, "class", 5));
        const char *q = p + strlen(name);
        while (*q && *q != '{' && *q != ';')   // a base class list
            q++;
        if (tagged && *q == '{' && (*end = after_closing(q)) && *end <= to)
            return q;
    }
    return NULL;
}

static bool word_is(const char *p, size_t n, const char *word)
{
    return strlen(word) == n && !strncmp(p, word, n);
}

static bool starts_with(const char *p, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && !strncmp(p, prefix, k);
}

/* An atomic_ref (or cuda::atomic) operation: .load( .store( .exchange(
 * .fetch_xxx( .compare_exchange_xxx( */
static bool atomic_member(const char *word, size_t n)
{
    return word_is(word, n, "load") || word_is(word, n, "store") || word_is(word, n, "exchange") ||
           starts_with(word, n, "fetch_") || starts_with(word, n, "compare_exchange_");
}

static counts count_body(const char *body, const char *end, wb_scope scope)
{
    counts c = {0, 0, 0, 0};
    for (const char *p = body; p < end;) {
        if (!is_word_char(*p) || (p > body && is_word_char(p[-1]))) {
            p++;
            continue;
        }
        const char *w = p;
        while (p < end && is_word_char(*p))
            p++;
        size_t n = (size_t)(p - w);
        const char *next = skip_space(p);
        bool call = *next == '(';
        const char *before = w;
        while (before > body && isspace((unsigned char)before[-1]))
            before--;
        bool member = before > body && (before[-1] == '.' || (before[-1] == '>' && before[-2] == '-'));
        if (word_is(w, n, "__threadfence") || word_is(w, n, "__threadfence_system") ||
            (scope == WB_BLOCK_SCOPE && word_is(w, n, "__threadfence_block")) ||
            word_is(w, n, "memory_order_acquire") || word_is(w, n, "memory_order_release") ||
            word_is(w, n, "memory_order_acq_rel") || word_is(w, n, "memory_order_seq_cst"))
            c.orderings++;
        else if (word_is(w, n, "volatile") || word_is(w, n, "__ldcv") || word_is(w, n, "__ldcg") ||
                 word_is(w, n, "__stcg") || word_is(w, n, "__stwt") ||
                 (call && n > 6 && !strncmp(w, "atomic", 6) && isupper((unsigned char)w[6])))
            c.fresh++;
        else if (call && (starts_with(w, n, "__syncthreads") || word_is(w, n, "__syncwarp") ||
                          word_is(w, n, "sync")))
            c.barriers++;
        else if (word_is(w, n, "thread_scope_block") || word_is(w, n, "thread_scope_thread"))
            c.narrow++;
        else if (call && member && atomic_member(w, n)) {
            c.fresh++;
            const char *args_end = after_closing(next);
            if (!args_end)
                continue;
            bool rmw = !word_is(w, n, "load") && !word_is(w, n, "store");
            bool both = find_word(next, args_end, "memory_order_acq_rel") ||
                        find_word(next, args_end, "memory_order_seq_cst");
            // Without a memory_order argument an atomic_ref operation is
            // seq_cst: a load acquires, a store releases, a read-modify-write
            // does both. An explicit order counts as its word (above); an
            // acq_rel or seq_cst read-modify-write counts once more.
            if (!both && !find_word(next, args_end, "memory_order_relaxed") &&
                !find_word(next, args_end, "memory_order_acquire") &&
                !find_word(next, args_end, "memory_order_release"))
                c.orderings += rmw ? 2 : 1;
            else if (both && rmw)
                c.orderings++;
        }
    }
    return c;
}

/* The counts over every definition of rule->function ("name" or
 * "Struct::name"); false when there is none. */
static bool count_function(const char *text, const wb_source_rule *rule, counts *total)
{
    const char *from = text, *to = text + strlen(text);
    char scope_name[128];
    const char *name = rule->function, *colons = strstr(name, "::");
    if (colons) {
        snprintf(scope_name, sizeof scope_name, "%.*s", (int)(colons - name), name);
        name = colons + 2;
        const char *struct_end;
        if (!(from = find_struct(text, to, scope_name, &struct_end)))
            return false;
        to = struct_end;
    }
    bool found = false;
    const char *end;
    for (const char *body; (body = find_definition(from, to, name, &end)); from = end) {
        counts c = count_body(body, end, rule->scope);
        total->orderings += c.orderings;
        total->fresh += c.fresh;
        total->barriers += c.barriers;
        total->narrow += c.narrow;
        found = true;
    }
    return found;
}

void wb_check_source_rules_in(const char *compiled_path, const wb_source_rule *rules, size_t n)
{
    /* A grading run's record step is the submission's own process: nothing
     * it decides counts. The judge gets the submission's file through
     * WB_KERNELS_SOURCE (grading/judge.py). */
    if (getenv("WB_RECORD"))
        return;
    const char *path = getenv("WB_KERNELS_SOURCE") ? getenv("WB_KERNELS_SOURCE") : compiled_path;
    char *text = read_blanked(path);
    char problems[4096] = "";
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        const wb_source_rule *r = &rules[i];
        counts c = {0, 0, 0, 0};
        const char *problem = NULL;
        char detail[200];
        if (!count_function(text, r, &c)) {
            problem = "is not in the file (keep the skeleton's function names)";
        } else if (r->scope == WB_DEVICE_SCOPE && c.narrow) {
            problem = "uses cuda::thread_scope_block (or _thread), whose atomics order nothing "
                      "for the threads of other blocks: use cuda::thread_scope_device";
        } else if (c.orderings < r->orderings) {
            snprintf(detail, sizeof detail, "has %d fence(s) or acquire/release operation(s)%s, "
                     "it needs %d", c.orderings, r->scope == WB_BLOCK_SCOPE ? "" : " of device scope",
                     r->orderings);
            problem = detail;
        } else if (c.fresh < r->fresh_accesses) {
            snprintf(detail, sizeof detail, "has %d atomic or volatile access(es), it needs %d",
                     c.fresh, r->fresh_accesses);
            problem = detail;
        } else if (c.barriers < r->barriers) {
            snprintf(detail, sizeof detail, "has %d barrier(s) (__syncthreads, __syncwarp), "
                     "it needs %d", c.barriers, r->barriers);
            problem = detail;
        }
        if (problem && used < sizeof problems)
            used += (size_t)snprintf(problems + used, sizeof problems - used, "\n  %s %s: %s",
                                     r->function, problem, r->why);
    }
    free(text);
    cr_assert(!used, "%s:%s\n(These mistakes give right answers on almost every run, so the "
              "test reads your code. It counts in each function's own body, not in the functions "
              "it calls.)", path, problems);
}
