/*
 * wb_rules.c - source rules: the check behind wb_check_source_rules.
 *
 * The rules read the kernels.cu under test as the compiler saw it: the
 * output of nvcc's preprocessor (-E) with the lab's own compile flags
 * (meson.build makes it for a build, for its first architecture; the grader
 * makes one per architecture it builds, in the sandbox of the student's
 * compile, grading/grader/studentcompile.py). So a #define, an #undef or a macro cannot
 * change what a rule sees without changing what is compiled, and code kept
 * for one architecture only is judged on that architecture. Of that text
 * only the lines that come from kernels.cu itself count (not the headers).
 *
 * Each function a rule names is found (every definition of it must pass),
 * and its body is read together with the bodies of the functions it calls
 * that are defined in kernels.cu (at each call, recursion aside): a fence
 * or a barrier in a helper counts where the helper is called.
 *
 * Counting rules (orderings, fresh accesses, barriers) count words:
 *   orderings  __threadfence(), __threadfence_system(), memory_order_acquire,
 *              _release, _acq_rel, _seq_cst, and an atomic_ref load, store,
 *              exchange or fetch_ call without a memory order (seq_cst);
 *              a read-modify-write (exchange, fetch_, compare_exchange_)
 *              that is acq_rel or seq_cst counts twice: it is a release
 *              and an acquire in one operation;
 *              __threadfence_block() only in a rule of block scope, and
 *              __threadfence() not in a rule of system scope;
 *   fresh      volatile, atomicXxx(...), __ldcv / __ldcg / __stcg / __stwt,
 *              atomic_ref loads, stores, exchanges and fetch_ calls, and
 *              the host compiler's __atomic_xxx and __sync_xxx builtins
 *              (whose __ATOMIC_ orders count as orderings, and __sync_
 *              ones, full barriers, twice; __sync_synchronize() a fence),
 *              the GPU's __nv_atomic_xxx builtins (__NV_ATOMIC_ orders
 *              count as orderings; __nv_atomic_thread_fence is a fence
 *              only), a plain use of a variable of an atomic type
 *              (f = 1, while (f == 0), ++f: seq_cst), and inline PTX
 *              (asm strings: ld/st .acquire/.release/.relaxed/.volatile,
 *              atom, red; fence.sc, fence.acq_rel and membar as fences);
 *   barriers   __syncthreads*(), __syncwarp(), and cooperative groups' sync();
 *   uses       calls of the rule's `uses` words.
 * A scope narrower than the rule's is a problem of its own (a rule that
 * counts only barriers or calls does not judge scopes): in a rule of
 * device scope cuda::thread_scope_block (or _cluster, _thread), the
 * __NV_THREAD_SCOPE_ equivalents, atomicXxx_block() and PTX's .cta, which
 * order nothing for other SMs; in one of system scope (a hand-off with the
 * host) device scope too. A type alias of a scoped atomic_ref
 * (`using device_int = cuda::atomic_ref<int, cuda::thread_scope_device>`,
 * in the given header or the file) has its scope.
 *
 * Placement rules (.shared) check where the block's barriers stand, not how
 * many there are: wb_barriers.c.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wb_rules.h"

/* ------------------------------------------------------------ the text */

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "source rules: cannot read %s: %s (the preprocessed kernels.cu: rebuild with "
              "ninja, which makes it)", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    cr_assert(text, "out of host memory");
    size_t got = fread(text, 1, (size_t)size, f);
    fclose(f);
    text[got] = '\0';
    return text;
}

/* Comments, string and character literals turned into spaces (newlines
 * kept), so that a fence in a string counts for nothing. */
static void blank_literals(char *text)
{
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
}

/* Appends to *out (of *used bytes) n bytes of line, then a newline. */
static void append_line(char **out, size_t *used, size_t *cap, const char *line, size_t n)
{
    if (*used + n + 2 > *cap) {
        *cap = (*used + n + 2) * 2;
        *out = realloc(*out, *cap);
        cr_assert(*out, "out of host memory");
    }
    memcpy(*out + *used, line, n);
    *used += n;
    (*out)[(*used)++] = '\n';
    (*out)[*used] = '\0';
}

/* The lines of one preprocessor output (`# N "file"` line markers) that come
 * from the main file (the first marker's), each on its own source line so
 * that a position gives its line number; every other line blank, and so
 * are the directives left (#pragma). *main_name gets the file's name. */
static char *main_file_lines(const char *pre, char *main_name, size_t name_size)
{
    size_t used = 0, cap = 4096;
    char *out = calloc(cap, 1);
    cr_assert(out, "out of host memory");
    int line = 1, lines_out = 0;
    bool in_main = false;
    main_name[0] = '\0';
    for (const char *p = pre; *p;) {
        const char *end = strchr(p, '\n');
        end = end ? end : p + strlen(p);
        const char *q = p;
        while (q < end && (*q == ' ' || *q == '\t'))
            q++;
        int number;
        char name[512], marker[600];
        /* sscanf on the file itself would measure the rest of it at every
         * line marker: the marker alone, copied. */
        if (*q == '#')
            snprintf(marker, sizeof marker, "%.*s", (int)(end - q < 599 ? end - q : 599), q);
        if (*q == '#' && sscanf(marker, "# %d \"%511[^\"]\"", &number, name) == 2) {
            if (!main_name[0])
                snprintf(main_name, name_size, "%s", name);
            in_main = !strcmp(name, main_name);
            line = number;
        } else {
            if (in_main && *q != '#') {
                // Blank lines up to this one keep its number.
                for (; lines_out < line - 1; lines_out++)
                    append_line(&out, &used, &cap, "", 0);
                append_line(&out, &used, &cap, p, (size_t)(end - p));
                lines_out++;
            }
            line++;
        }
        p = *end ? end + 1 : end;
    }
    return out;
}

/* ------------------------------------------------------------ the words */

bool wb_is_word_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

const char *wb_skip_space(const char *p)
{
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

const char *wb_after_closing(const char *open)
{
    char o = *open, c = o == '(' ? ')' : o == '[' ? ']' : o == '<' ? '>' : '}';
    int depth = 0;
    for (const char *p = open; *p; p++) {
        depth += (*p == o) - (*p == c);
        if (depth == 0)
            return p + 1;
    }
    return NULL;
}

const char *wb_find_word(const char *from, const char *to, const char *word)
{
    /* Bounded by to: a strstr would read on to the end of the file at every
     * miss (the headers' thousands of aliases are read this way). */
    size_t n = strlen(word);
    for (const char *p = from; n && p + n <= to; p++) {
        if (!(p = memchr(p, word[0], (size_t)(to - p) - n + 1)))
            return NULL;
        if (!memcmp(p, word, n) && (p == from || !wb_is_word_char(p[-1])) &&
            !wb_is_word_char(p[n]))
            return p;
    }
    return NULL;
}

bool wb_word_is(const char *p, size_t n, const char *word)
{
    return strlen(word) == n && !strncmp(p, word, n);
}

static bool starts_with(const char *p, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && !strncmp(p, prefix, k);
}

bool wb_declared_here(const char *p, const char *from)
{
    const char *q = p;
    while (q > from && isspace((unsigned char)q[-1]))
        q--;
    if (q == from)
        return false;
    if (q[-1] == '>')   // atomic_ref<int> flag(*word), but not p->call()
        return !(q - 1 > from && q[-2] == '-');
    if (!wb_is_word_char(q[-1]))
        return false;
    const char *word = q;
    while (word > from && wb_is_word_char(word[-1]))
        word--;
    static const char *const before_calls[] = {"return", "else", "do", "case", "throw"};
    for (size_t i = 0; i < sizeof before_calls / sizeof before_calls[0]; i++)
        if (wb_word_is(word, (size_t)(q - word), before_calls[i]))
            return false;
    return true;
}

/* Words that take parentheses and a brace without being functions. */
static bool control_word(const char *w, size_t n)
{
    static const char *const words[] = {"if", "for", "while", "switch", "do", "return", "sizeof",
                                        "catch", "__attribute__", "decltype", "alignof",
                                        "__align__", "static_assert", "defined"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (wb_word_is(w, n, words[i]))
            return true;
    return false;
}

const char *wb_find_definition(const char *from, const char *to, const char *name, size_t n,
                               const char **params, const char **end)
{
    char word[128];
    if (n >= sizeof word || control_word(name, n))
        return NULL;
    memcpy(word, name, n);
    word[n] = '\0';
    for (const char *p = from; (p = wb_find_word(p, to, word)); p++) {
        const char *open = wb_skip_space(p + n), *q;
        if (*open != '(' || !(q = wb_after_closing(open)))
            continue;
        for (q = wb_skip_space(q); wb_is_word_char(*q); q = wb_skip_space(q))   // const, noexcept
            while (wb_is_word_char(*q))
                q++;
        if (*q == '{' && (*end = wb_after_closing(q)) && *end <= to) {
            if (params)
                *params = open;
            return q;
        }
    }
    return NULL;
}

/* The body of `struct Name { ... }` (or class) in [from, to). */
static const char *find_struct(const char *from, const char *to, const char *name, const char **end)
{
    for (const char *p = from; (p = wb_find_word(p, to, name)); p++) {
        const char *before = p;
        while (before > from && isspace((unsigned char)before[-1]))
            before--;
        bool tagged = (before - from >= 6 && !strncmp(before - 6, "struct", 6)) ||
                      (before - from >= 5 && !strncmp(before - 5, "class", 5));
        const char *q = p + strlen(name);
        while (*q && *q != '{' && *q != ';')   // a base class list
            q++;
        if (tagged && *q == '{' && (*end = wb_after_closing(q)) && *end <= to)
            return q;
    }
    return NULL;
}

int wb_line_of(const char *text, const char *p)
{
    int line = 1;
    for (const char *q = text; q < p; q++)
        line += *q == '\n';
    return line;
}

/* ------------------------------------------------------------ scopes */

/* How far an atomic or a fence reaches: thread < block < cluster < device <
 * system. */
enum { SCOPE_THREAD, SCOPE_BLOCK, SCOPE_CLUSTER, SCOPE_DEVICE, SCOPE_SYSTEM, SCOPE_NONE };

static int required_scope(wb_scope s)
{
    return s == WB_BLOCK_SCOPE ? SCOPE_BLOCK : s == WB_SYSTEM_SCOPE ? SCOPE_SYSTEM : SCOPE_DEVICE;
}

/* Type aliases of a scoped atomic ("using device_int =
 * cuda::atomic_ref<int, cuda::thread_scope_device>;", or a typedef), read
 * from the whole preprocessed file, the given headers included: a
 * submission that uses the given alias uses its scope. */
typedef struct {
    char name[64];
    int scope;
} scope_alias;
static scope_alias aliases[32];
static int alias_count;

/* libcu++'s scopes (cuda::thread_scope_xxx) and those of the compiler's
 * __nv_atomic_xxx builtins (an enum of device_functions.h, whose names stay
 * in nvcc -E's output). */
static const struct {
    const char *word;
    int scope;
} scope_words[] = {
    {"thread_scope_thread", SCOPE_THREAD},        {"__NV_THREAD_SCOPE_THREAD", SCOPE_THREAD},
    {"thread_scope_block", SCOPE_BLOCK},          {"__NV_THREAD_SCOPE_BLOCK", SCOPE_BLOCK},
    {"thread_scope_cluster", SCOPE_CLUSTER},      {"__NV_THREAD_SCOPE_CLUSTER", SCOPE_CLUSTER},
    {"thread_scope_device", SCOPE_DEVICE},        {"__NV_THREAD_SCOPE_DEVICE", SCOPE_DEVICE},
    {"thread_scope_system", SCOPE_SYSTEM},        {"__NV_THREAD_SCOPE_SYSTEM", SCOPE_SYSTEM},
};
#define SCOPE_WORDS (sizeof scope_words / sizeof scope_words[0])

static int scope_named(const char *w, size_t n)
{
    for (size_t i = 0; i < SCOPE_WORDS; i++)
        if (wb_word_is(w, n, scope_words[i].word))
            return scope_words[i].scope;
    for (int i = 0; i < alias_count; i++)
        if (wb_word_is(w, n, aliases[i].name))
            return aliases[i].scope;
    return SCOPE_NONE;
}

/* The scope a declaration [from, to) names first, or SCOPE_NONE. */
static int scope_in(const char *from, const char *to)
{
    int scope = SCOPE_NONE;
    for (size_t i = 0; i < SCOPE_WORDS; i++) {
        const char *at = wb_find_word(from, to, scope_words[i].word);
        if (at) {
            scope = scope_words[i].scope;
            to = at;   // a later word cannot come first
        }
    }
    return scope;
}

static void add_alias(const char *name, size_t n, int scope)
{
    /* A name with a leading underscore is the library's own, never the
     * submission's or the lab's. */
    if (scope == SCOPE_NONE || n == 0 || name[0] == '_' || n >= sizeof aliases[0].name ||
        alias_count == (int)(sizeof aliases / sizeof aliases[0]))
        return;
    memcpy(aliases[alias_count].name, name, n);
    aliases[alias_count].name[n] = '\0';
    aliases[alias_count++].scope = scope;
}

static void read_scope_aliases(const char *pre)
{
    alias_count = 0;
    const char *end = pre + strlen(pre);
    for (const char *p = pre; (p = wb_find_word(p, end, "using")); p += 5) {
        const char *name = wb_skip_space(p + 5), *e = name;
        while (wb_is_word_char(*e))
            e++;
        const char *eq = wb_skip_space(e), *semi = strchr(eq, ';');
        if (e > name && *eq == '=' && eq[1] != '=' && semi)
            add_alias(name, (size_t)(e - name), scope_in(eq, semi));
    }
    for (const char *p = pre; (p = wb_find_word(p, end, "typedef")); p += 7) {
        const char *semi = strchr(p, ';'), *e = semi;
        if (!semi)
            break;
        while (e > p && isspace((unsigned char)e[-1]))
            e--;
        const char *name = e;
        while (name > p && wb_is_word_char(name[-1]))
            name--;
        add_alias(name, (size_t)(e - name), scope_in(p, name));
    }
}

/* ------------------------------------------------------------ counting */

typedef struct {
    int orderings, fresh, barriers;
    int narrow;   /* atomics of a narrower scope than the rule's */
    int uses;     /* calls of a word of the rule's `uses` */
} counts;

/* An atomic_ref (or cuda::atomic) operation: .load( .store( .exchange(
 * .fetch_xxx( .compare_exchange_xxx( */
static bool atomic_member(const char *word, size_t n)
{
    return wb_word_is(word, n, "load") || wb_word_is(word, n, "store") ||
           wb_word_is(word, n, "exchange") || starts_with(word, n, "fetch_") ||
           starts_with(word, n, "compare_exchange_");
}

/* The functions being counted, callers first: a call of one of them (a
 * recursion) counts nothing more. Each other call counts its callee's body
 * again (a helper called twice is two barriers), up to a budget of bodies
 * that a call tree cannot blow up. */
typedef struct {
    const char *stack[16];
    int depth;
    int budget;
} visited;

static bool enter(visited *v, const char *body)
{
    if (v->depth == (int)(sizeof v->stack / sizeof v->stack[0]) || v->budget <= 0)
        return false;
    for (int i = 0; i < v->depth; i++)
        if (v->stack[i] == body)
            return false;
    v->stack[v->depth++] = body;
    v->budget--;
    return true;
}

static void count_body(const char *text, const char *body, const char *from, const char *end,
                       const wb_source_rule *r, visited *v, counts *c);

static counts least_of(counts a, counts b)
{
    return (counts){a.orderings < b.orderings ? a.orderings : b.orderings,
                    a.fresh < b.fresh ? a.fresh : b.fresh,
                    a.barriers < b.barriers ? a.barriers : b.barriers,
                    a.narrow > b.narrow ? a.narrow : b.narrow,
                    a.uses < b.uses ? a.uses : b.uses};
}

/* A call of a function defined in the file: its body counts here (of
 * several definitions of the name, the one with the least, so that a decoy
 * cannot stand in for the one called). Returns whether name is such a
 * function. */
static bool count_callee(const char *text, const char *w, size_t n, const wb_source_rule *r,
                         visited *v, counts *c)
{
    const char *to = text + strlen(text), *end, *body;
    counts least = {0, 0, 0, 0, 0};
    bool any = false, counted = false;
    for (const char *from = text; (body = wb_find_definition(from, to, w, n, NULL, &end));
         from = end) {
        any = true;
        if (!enter(v, body))
            continue;
        counts one = {0, 0, 0, 0, 0};
        count_body(text, body, body, end, r, v, &one);
        v->depth--;
        least = counted ? least_of(least, one) : one;
        counted = true;
    }
    c->orderings += least.orderings;
    c->fresh += least.fresh;
    c->barriers += least.barriers;
    c->narrow += least.narrow;
    c->uses += least.uses;
    return any;
}

/* Whether the word w (n characters) is one of the space-separated words. */
static bool one_of(const char *words, const char *w, size_t n, bool member)
{
    for (const char *p = words; p && *p;) {
        p = wb_skip_space(p);
        const char *e = p;
        while (*e && !isspace((unsigned char)*e))
            e++;
        // ".name" is a member call only: tile.shfl_up(...), not a helper of that name
        const char *word = *p == '.' ? p + 1 : p;
        if ((size_t)(e - word) == n && !strncmp(word, w, n) && (member || *p != '.'))
            return true;
        p = e;
    }
    return false;
}

/* The variables of an atomic type that a function declares
 * ("cuda::atomic_ref<int, cuda::thread_scope_device> f(*flag);",
 * "device_int f(*flag);", "cuda::atomic<int> a;"): a plain use of one
 * (f = 1, while (f == 0), ++f) is a seq_cst operation. */
#define MAX_ATOMIC_VARIABLES 16
typedef struct {
    const char *name[MAX_ATOMIC_VARIABLES];
    size_t n[MAX_ATOMIC_VARIABLES];
    int count;
} atomic_variables;

static bool atomic_type(const char *w, size_t n)
{
    if (wb_word_is(w, n, "atomic_ref") || wb_word_is(w, n, "atomic"))
        return true;
    for (int i = 0; i < alias_count; i++)
        if (wb_word_is(w, n, aliases[i].name))
            return true;
    return false;
}

/* Every variable that [body, end) declares of an atomic type. */
static atomic_variables atomic_variables_of(const char *body, const char *end)
{
    atomic_variables vars = {.count = 0};
    for (const char *p = body; p < end && vars.count < MAX_ATOMIC_VARIABLES; p++) {
        if (!wb_is_word_char(*p) || (p > body && wb_is_word_char(p[-1])))
            continue;
        const char *e = p;
        while (e < end && wb_is_word_char(*e))
            e++;
        bool type = atomic_type(p, (size_t)(e - p));
        p = e - 1;
        if (!type)
            continue;
        const char *name = wb_skip_space(e);
        if (*name == '<') {   // its template arguments
            const char *closing = wb_after_closing(name);
            if (!closing || closing >= end)
                continue;
            name = wb_skip_space(closing);
        }
        for (e = name; e < end && wb_is_word_char(*e); e++)
            ;
        const char *follow = wb_skip_space(e);
        if (e > name && *follow && strchr("({=;", *follow) && follow[1] != '=') {
            vars.name[vars.count] = name;
            vars.n[vars.count++] = (size_t)(e - name);
        }
    }
    return vars;
}

/* What the word w (n characters; before: the end of what precedes it,
 * spaces skipped; member: w follows a . or ->; next: the first character
 * after it) is worth as a plain use of an atomic variable: 2 orderings for a
 * read-modify-write (++f, f += 2), 1 for a load or a store, 0 when w is no
 * such variable, comes before or at its declaration, is the object of a
 * member call (f.store(): counted as a member) or of &, or is a member of
 * something else (ring->f, s.f, ns::f). */
static int atomic_use(const atomic_variables *vars, const char *body, const char *w, size_t n,
                      const char *before, bool member, const char *next)
{
    for (int i = 0; i < vars->count; i++) {
        if (vars->n[i] != n || strncmp(vars->name[i], w, n) || w <= vars->name[i])
            continue;   // another word, or the name before or at its declaration
        char b1 = before > body ? before[-1] : ' ', b2 = before - 1 > body ? before[-2] : ' ';
        if (member || *next == '.' || *next == '(' || (next[0] == '-' && next[1] == '>') ||
            (b1 == '&' && b2 != '&') || (b1 == ':' && b2 == ':'))
            return 0;   // f.store(), &f, or another's member of the same name (ring->f)
        bool rmw = (next[0] == '+' && next[1] == '+') || (next[0] == '-' && next[1] == '-') ||
                   (next[0] && strchr("+-*/&|^", next[0]) && next[1] == '=') ||
                   (b1 == '+' && b2 == '+') || (b1 == '-' && b2 == '-');
        return rmw ? 2 : 1;
    }
    return 0;
}

/* The text as it was before blank_literals, at the same offsets: inline
 * PTX is read from the strings of an asm statement. */
static struct {
    const char *blanked, *original;
} literals;

/* A PTX qualifier's scope (.cta .cluster .gpu .sys, membar's .gl), or
 * SCOPE_NONE. */
static int ptx_scope(const char *q, size_t n)
{
    return wb_word_is(q, n, "cta")                               ? SCOPE_BLOCK
           : wb_word_is(q, n, "cluster")                         ? SCOPE_CLUSTER
           : wb_word_is(q, n, "gpu") || wb_word_is(q, n, "gl")   ? SCOPE_DEVICE
           : wb_word_is(q, n, "sys")                             ? SCOPE_SYSTEM
                                                                 : SCOPE_NONE;
}

/* One PTX instruction (its opcode and dotted qualifiers, [ins, end)) of an
 * asm statement, counted like the C++ it stands for: ld/st with .acquire or
 * .release (or .relaxed, .volatile), atom and red (an access; .acq_rel
 * orders both ways), fence.sc or fence.acq_rel and membar (an ordering,
 * when it reaches the rule's scope). */
static void count_ptx_instruction(const char *ins, const char *end, wb_scope rule_scope,
                                  counts *c)
{
    const char *dot = ins;
    while (dot < end && *dot != '.' && !isspace((unsigned char)*dot))
        dot++;
    size_t op = (size_t)(dot - ins);
    bool access = wb_word_is(ins, op, "ld") || wb_word_is(ins, op, "st"),
         rmw = wb_word_is(ins, op, "atom") || wb_word_is(ins, op, "red"),
         fence = wb_word_is(ins, op, "fence") || wb_word_is(ins, op, "membar");
    if (!access && !rmw && !fence)
        return;
    int orders = 0, scope = SCOPE_NONE;
    bool fresh = rmw, proxy = false;
    for (const char *q = dot; q < end && *q == '.';) {
        const char *e = ++q;
        while (e < end && wb_is_word_char(*e))
            e++;
        size_t n = (size_t)(e - q);
        if (wb_word_is(q, n, "acquire") || wb_word_is(q, n, "release"))
            orders = 1;
        else if (wb_word_is(q, n, "acq_rel") || wb_word_is(q, n, "sc"))
            orders = rmw || fence ? 2 : 1;
        else if (wb_word_is(q, n, "relaxed") || wb_word_is(q, n, "volatile"))
            fresh = true;
        else if (wb_word_is(q, n, "proxy"))
            proxy = true;
        if (ptx_scope(q, n) != SCOPE_NONE)
            scope = ptx_scope(q, n);
        q = e;
    }
    if (wb_word_is(ins, op, "membar"))
        orders = 2;
    if (fence) {
        if (!proxy && orders && scope >= required_scope(rule_scope))
            c->orderings++;
        return;
    }
    if (orders || fresh) {
        c->fresh++;
        c->orderings += orders;
        if (scope != SCOPE_NONE && scope < required_scope(rule_scope))
            c->narrow++;
    }
}

/* asm [volatile] ("...": ...) at the word w (n characters): the
 * instructions of its strings counted; returns the end of its parentheses,
 * or NULL when w starts no asm statement. */
static const char *count_inline_ptx(const char *text, const char *w, size_t n, const char *end,
                                    wb_scope rule_scope, counts *c)
{
    if (!literals.original || text != literals.blanked ||
        !(wb_word_is(w, n, "asm") || wb_word_is(w, n, "__asm__") || wb_word_is(w, n, "__asm")))
        return NULL;
    const char *open = wb_skip_space(w + n), *q = open;
    while (wb_is_word_char(*q))
        q++;
    if (q > open)   // volatile, __volatile__, goto
        open = wb_skip_space(q);
    const char *close = *open == '(' ? wb_after_closing(open) : NULL;
    if (!close || close > end)
        return NULL;
    /* The strings' contents, one instruction per line (an escape such as
     * \n or \t, a ';' or a brace ends one); of each, its first word is
     * read (the opcode and its qualifiers; the operands follow). */
    const char *from = literals.original + (open - text), *to = literals.original + (close - text);
    char *code = malloc((size_t)(to - from) + 2), *out = code;
    cr_assert(code, "out of host memory");
    bool in_string = false;
    for (const char *p = from; p < to; p++) {
        if (*p == '"')
            in_string = !in_string;
        else if (in_string && *p == '\\' && p + 1 < to)
            *out++ = '\n', p++;
        else if (in_string)
            *out++ = *p == ';' || *p == '{' || *p == '}' ? '\n' : *p;
        else if (*p == ':')
            break;   // the operands: no more code
    }
    *out = '\0';
    char *save;
    for (char *line = strtok_r(code, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        const char *ins = wb_skip_space(line);
        if (*ins == '@')   // a predicate: @p, @!p
            while (*ins && !isspace((unsigned char)*ins))
                ins++;
        ins = wb_skip_space(ins);
        const char *e = ins;
        while (*e && !isspace((unsigned char)*e))
            e++;
        count_ptx_instruction(ins, e, rule_scope, c);
    }
    free(code);
    return close;
}

/* Counts in [from, end) of the function whose body starts at body. */
static void count_body(const char *text, const char *body, const char *from, const char *end,
                       const wb_source_rule *r, visited *v, counts *c)
{
    wb_scope scope = r->scope;
    atomic_variables vars = atomic_variables_of(body, end);
    for (const char *p = from; p < end;) {
        if (!wb_is_word_char(*p) || (p > from && wb_is_word_char(p[-1]))) {
            p++;
            continue;
        }
        const char *w = p;
        while (p < end && wb_is_word_char(*p))
            p++;
        size_t n = (size_t)(p - w);
        const char *asm_end = count_inline_ptx(text, w, n, end, scope, c);
        if (asm_end) {
            p = asm_end;
            continue;
        }
        const char *next = wb_skip_space(p);
        if (*next == '<') {   // a template's arguments: helper<T>(...)
            const char *closing = wb_after_closing(next);
            if (closing && closing < end && *wb_skip_space(closing) == '(')
                next = wb_skip_space(closing);
        }
        bool call = *next == '(';
        const char *before = w;
        while (before > body && isspace((unsigned char)before[-1]))
            before--;
        bool member = before > body && (before[-1] == '.' || (before[-1] == '>' && before[-2] == '-'));
        if (call && r->uses && one_of(r->uses, w, n, member))   // besides what else it counts as
            c->uses++;
        /* The host's side of a hand-off may use the compiler's builtins:
         * __sync_synchronize() is a full fence, __atomic_xxx(..., order) an
         * atomic whose order counts as its word, __sync_xxx an atomic that is
         * a full barrier. The GPU's own builtins, __nv_atomic_xxx(...,
         * order, scope), count the same way, their scope as its word; their
         * fences are no access. */
        int fence = wb_word_is(w, n, "__threadfence_block")    ? SCOPE_BLOCK
                    : wb_word_is(w, n, "__threadfence")        ? SCOPE_DEVICE
                    : wb_word_is(w, n, "__threadfence_system") ? SCOPE_SYSTEM
                    : wb_word_is(w, n, "__sync_synchronize")   ? SCOPE_SYSTEM
                                                               : SCOPE_NONE;
        bool builtin_atomic =
            call && (starts_with(w, n, "__atomic_") || starts_with(w, n, "__sync_") ||
                     (starts_with(w, n, "__nv_atomic_") &&
                      !wb_word_is(w, n, "__nv_atomic_thread_fence") &&
                      !wb_word_is(w, n, "__nv_atomic_signal_fence")));
        /* atomicAdd_block() and its kin are atomics of block scope (plain
         * atomicAdd() is of device scope, atomicAdd_system() of system). */
        bool atomic_call =
            call && n > 6 && !strncmp(w, "atomic", 6) && isupper((unsigned char)w[6]);
        bool block_atomic = atomic_call && n > 12 && !strncmp(w + n - 6, "_block", 6);
        int named = scope_named(w, n), use;
        if (fence != SCOPE_NONE) {
            if (fence >= required_scope(scope))   // a narrower fence orders too little
                c->orderings++;
        } else if (wb_word_is(w, n, "memory_order_acquire") ||
                   wb_word_is(w, n, "memory_order_release") ||
                   wb_word_is(w, n, "memory_order_acq_rel") ||
                   wb_word_is(w, n, "memory_order_seq_cst") ||
                   wb_word_is(w, n, "__ATOMIC_ACQUIRE") || wb_word_is(w, n, "__ATOMIC_RELEASE") ||
                   wb_word_is(w, n, "__ATOMIC_ACQ_REL") || wb_word_is(w, n, "__ATOMIC_SEQ_CST") ||
                   wb_word_is(w, n, "__NV_ATOMIC_ACQUIRE") ||
                   wb_word_is(w, n, "__NV_ATOMIC_RELEASE") ||
                   wb_word_is(w, n, "__NV_ATOMIC_ACQ_REL") ||
                   wb_word_is(w, n, "__NV_ATOMIC_SEQ_CST"))
            c->orderings++;
        else if (builtin_atomic) {
            c->fresh++;
            if (starts_with(w, n, "__sync_"))   // a full barrier: a release and an acquire
                c->orderings += 2;
        } else if (wb_word_is(w, n, "volatile") || wb_word_is(w, n, "__ldcv") ||
                 wb_word_is(w, n, "__ldcg") || wb_word_is(w, n, "__stcg") ||
                 wb_word_is(w, n, "__stwt") || atomic_call) {
            c->fresh++;
            if (block_atomic && SCOPE_BLOCK < required_scope(scope))
                c->narrow++;
        } else if (call && (starts_with(w, n, "__syncthreads") || wb_word_is(w, n, "__syncwarp") ||
                          wb_word_is(w, n, "sync")))
            c->barriers++;
        else if ((use = atomic_use(&vars, body, w, n, before, member, next))) {
            c->fresh++;
            c->orderings += use;
        } else if (named != SCOPE_NONE) {
            if (named < required_scope(scope))
                c->narrow++;
        } else if (call && !wb_declared_here(w, body) && count_callee(text, w, n, r, v, c))
            ;   // a helper of the file (a member one too: a wrapper's store())
        else if (call && member && atomic_member(w, n)) {
            c->fresh++;
            const char *args_end = wb_after_closing(next);
            if (!args_end)
                continue;
            bool rmw = !wb_word_is(w, n, "load") && !wb_word_is(w, n, "store");
            bool both = wb_find_word(next, args_end, "memory_order_acq_rel") ||
                        wb_find_word(next, args_end, "memory_order_seq_cst");
            // Without a memory_order argument an atomic_ref operation is
            // seq_cst: a load acquires, a store releases, a read-modify-write
            // does both. An explicit order counts as its word (above); an
            // acq_rel or seq_cst read-modify-write counts once more.
            if (!both && !wb_find_word(next, args_end, "memory_order_relaxed") &&
                !wb_find_word(next, args_end, "memory_order_acquire") &&
                !wb_find_word(next, args_end, "memory_order_release"))
                c->orderings += rmw ? 2 : 1;
            else if (both && rmw)
                c->orderings++;
        }
    }
}

/* Calls f(text, body, end, rule, ...) for every definition of
 * rule->function ("name" or "Struct::name") in text; returns how many. */
int wb_each_definition(const char *text, const wb_source_rule *rule,
                       void (*f)(const char *text, const char *params, const char *body,
                                 const char *end, void *arg),
                       void *arg)
{
    const char *from = text, *to = text + strlen(text);
    char scope_name[128];
    const char *name = rule->function, *colons = strstr(name, "::");
    if (colons) {
        snprintf(scope_name, sizeof scope_name, "%.*s", (int)(colons - name), name);
        name = colons + 2;
        const char *struct_end;
        if (!(from = find_struct(text, to, scope_name, &struct_end)))
            return 0;
        to = struct_end;
    }
    int found = 0;
    const char *end, *params;
    for (const char *body; (body = wb_find_definition(from, to, name, strlen(name), &params, &end));
         from = end, found++)
        f(text, params, body, end, arg);
    return found;
}

typedef struct {
    const wb_source_rule *rule;
    counts least;   /* the smallest of each count over the definitions */
    int definitions;
} counting;

static void count_definition(const char *text, const char *params, const char *body,
                             const char *end, void *arg)
{
    (void)params;
    counting *k = arg;
    counts c = {0, 0, 0, 0, 0};
    visited v = {{body}, 1, 4096};
    count_body(text, body, body, end, k->rule, &v, &c);
    k->least = k->definitions++ ? least_of(k->least, c) : c;
}

/* The end of the first call of a block-wide barrier in [from, to)
 * (wb_is_block_barrier, as the placement rules see them); NULL if none. */
static const char *first_block_barrier(const char *from, const char *to)
{
    for (const char *p = from; p < to; p++) {
        if (!wb_is_word_char(*p) || (p > from && wb_is_word_char(p[-1])))
            continue;
        const char *e = p;
        while (e < to && wb_is_word_char(*e))
            e++;
        // a call, not a name that looks like one
        if (*wb_skip_space(e) == '(' && wb_is_block_barrier(p, (size_t)(e - p), from))
            return e;
        p = e;
    }
    return NULL;
}

/* Where an ordering must stand (rule->fence_after, rule->fence_before):
 * whether some definition has none there. */
typedef struct {
    const wb_source_rule *rule;
    bool misplaced;
    bool narrow;   /* an atomic there of a narrower scope than the rule's */
} placing;

static void place_definition(const char *text, const char *params, const char *body,
                             const char *end, void *arg)
{
    (void)params;
    placing *k = arg;
    const wb_source_rule *r = k->rule;
    const char *from = body, *to = end;
    if (r->fence_after) {
        const char *after = wb_find_word(body, end, r->fence_after);
        if (!after)
            return;   // written another way: not judged here
        from = after + strlen(r->fence_after);
    }
    if (r->fence_before) {
        const char *before = wb_find_word(from, end, r->fence_before);
        if (!before)
            return;
        for (to = before; to < end && *to != ';'; to++)   // the end of its statement
            ;
    }
    counts c = {0, 0, 0, 0, 0};
    visited v = {{body}, 1, 4096};
    if (r->after_barrier) {
        /* Misplaced: the hand-off (an ordering, an atomic or volatile
         * access) before the barrier and nothing of it past (the flag
         * raised while other threads still work). Nothing on either side is
         * another way of writing it (the flag at the next claim); a fence
         * before the barrier and the flag's store past it is the classic
         * idiom, and passes. */
        const char *barrier = first_block_barrier(from, to);
        if (!barrier)
            return;
        counts past = {0, 0, 0, 0, 0};
        visited w = {{body}, 1, 4096};
        count_body(text, body, from, barrier, r, &v, &c);
        count_body(text, body, barrier, to, r, &w, &past);
        if ((c.orderings || c.fresh) && !past.orderings && !past.fresh)
            k->misplaced = true;
        if (c.narrow || past.narrow)
            k->narrow = true;
        return;
    }
    count_body(text, body, from, to, r, &v, &c);
    if (c.orderings == 0)
        k->misplaced = true;
    if (c.narrow)
        k->narrow = true;
}

/* "between take_turn and atomicAdd", "after atomicCAS", "before atomicExch". */
static void describe_place(const wb_source_rule *r, char *place, size_t size)
{
    if (r->fence_after && r->fence_before)
        snprintf(place, size, "between %s and %s", r->fence_after, r->fence_before);
    else if (r->fence_after)
        snprintf(place, size, "after %s", r->fence_after);
    else if (r->fence_before)
        snprintf(place, size, "before %s (or in its statement)", r->fence_before);
    else
        snprintf(place, size, "in the function");
    if (r->after_barrier)
        snprintf(place + strlen(place), size - strlen(place),
                 " and past the first barrier (__syncthreads) there");
}

/* The first problem of rule r in text (one architecture's), or false. */
static bool rule_problem(const char *text, const wb_source_rule *r, char *problem, size_t size)
{
    counting k = {r, {0, 0, 0, 0, 0}, 0};
    wb_each_definition(text, r, count_definition, &k);
    counts c = k.least;
    placing place = {r, false, false};
    bool placed = r->fence_after || r->fence_before || r->after_barrier;
    if (placed)
        wb_each_definition(text, r, place_definition, &place);
    /* A rule on barriers or calls alone says nothing of scopes: the block's
     * own atomics on shared memory (a histogram's bins) are block-scoped by
     * right. A hand-off with the host may sit beside the GPU's own (device
     * scope) in one function: a system rule with a place checks the scope
     * there. */
    bool judges_scope = r->orderings || r->fresh_accesses || placed || r->scope != WB_DEVICE_SCOPE;
    bool narrow = judges_scope &&
                  (r->scope == WB_SYSTEM_SCOPE && placed ? place.narrow : c.narrow > 0);
    const char *of_scope = r->scope == WB_BLOCK_SCOPE    ? ""
                           : r->scope == WB_SYSTEM_SCOPE ? " of system scope"
                                                         : " of device scope";
    char where[160];
    describe_place(r, where, sizeof where);
    if (!k.definitions)
        snprintf(problem, size, "is not in the file (keep the skeleton's function names)");
    else if (narrow && r->scope == WB_SYSTEM_SCOPE)
        snprintf(problem, size, "uses a scope narrower than the system%s%s (cuda::thread_scope_device "
                 "or narrower, __NV_THREAD_SCOPE_DEVICE or narrower, an atomicXxx_block() call, "
                 "PTX's .gpu or narrower, a __threadfence() that is not __threadfence_system(), "
                 "or a type alias of such an atomic_ref), which orders nothing for the host: use "
                 "cuda::thread_scope_system", placed ? " " : "", placed ? where : "");
    else if (narrow && r->scope == WB_BLOCK_SCOPE)
        snprintf(problem, size, "uses cuda::thread_scope_thread, whose atomics order nothing for "
                 "the other threads: use cuda::thread_scope_block");
    else if (narrow)
        snprintf(problem, size, "uses cuda::thread_scope_block (or _cluster or _thread, "
                 "__NV_THREAD_SCOPE_BLOCK, an atomicXxx_block() call, PTX's .cta, or a type alias "
                 "of such an atomic_ref), whose atomics order nothing for the threads of other blocks: use "
                 "cuda::thread_scope_device (a plain atomicXxx() call is of device scope)");
    else if (c.orderings < r->orderings)
        snprintf(problem, size, "has %d fence(s) or acquire/release operation(s)%s, it needs %d",
                 c.orderings, of_scope, r->orderings);
    else if (c.fresh < r->fresh_accesses)
        snprintf(problem, size, "has %d atomic or volatile access(es), it needs %d", c.fresh,
                 r->fresh_accesses);
    else if (c.barriers < r->barriers)
        snprintf(problem, size, "has %d barrier(s) (__syncthreads, __syncwarp), it needs %d",
                 c.barriers, r->barriers);
    else if (r->uses && !c.uses)
        snprintf(problem, size, "calls none of %s", r->uses);
    else if (place.misplaced && r->after_barrier)
        snprintf(problem, size, "hands off (a fence, an acquire/release, an atomic or volatile "
                 "access) before the barrier, in the wrong place: nothing of it stands %s", where);
    else if (place.misplaced)
        snprintf(problem, size, "has its fence(s) or acquire/release operation(s)%s in the "
                 "wrong place: none stands %s", of_scope, where);
    else if (r->shared && wb_barrier_problem(text, r, problem, size))
        ;
    else
        return false;
    return true;
}

/* ------------------------------------------------------------ the check */

size_t wb_source_rule_problems(const char *preprocessed, const wb_source_rule *rules, size_t n,
                               char *problems, size_t size, char *name, size_t name_size)
{
    char *list = strdup(preprocessed);
    cr_assert(list, "out of host memory");
    size_t used = 0;
    bool reported[64] = {false};
    problems[0] = '\0';
    for (char *save, *path = strtok_r(list, ":", &save); path; path = strtok_r(NULL, ":", &save)) {
        char *pre = read_file(path), main_name[512];
        char *text = main_file_lines(pre, main_name, sizeof main_name);
        read_scope_aliases(pre);
        free(pre);
        cr_assert(text[strspn(text, " \t\n")], "source rules: %s holds no line of kernels.cu "
                  "(is it nvcc -E output?)", path);
        snprintf(name, name_size, "%s", main_name);
        char *original = strdup(text);
        cr_assert(original, "out of host memory");
        blank_literals(text);
        literals.blanked = text;
        literals.original = original;
        for (size_t i = 0; i < n; i++) {
            char problem[600];
            if (i < 64 && reported[i])
                continue;   // one architecture's report is enough
            if (!rule_problem(text, &rules[i], problem, sizeof problem))
                continue;
            if (i < 64)
                reported[i] = true;
            if (used < size)
                used += (size_t)snprintf(problems + used, size - used, "\n  %s %s: %s",
                                         rules[i].function, problem, rules[i].why);
        }
        literals.blanked = literals.original = NULL;
        free(original);
        free(text);
    }
    free(list);
    return used;
}

void wb_check_source_rules_in(const char *preprocessed, const wb_source_rule *rules, size_t n)
{
    /* A grading run's record step is the submission's own process: nothing
     * it decides counts. The judge gets the submission's preprocessed text
     * through WB_KERNELS_PREPROCESSED (grading/grader/tworuns.py). */
    if (getenv("WB_RECORD"))
        return;
    const char *given = getenv("WB_KERNELS_PREPROCESSED");
    char problems[4096], name[512];
    size_t found = wb_source_rule_problems(given && *given ? given : preprocessed, rules, n,
                                           problems, sizeof problems, name, sizeof name);
    cr_assert(!found, "%s:%s\n(These mistakes give right answers on almost every run, so the "
              "test reads your code as the compiler sees it, macros expanded. A function's "
              "body counts with the bodies of the functions it calls from your file.)",
              name, problems);
}
