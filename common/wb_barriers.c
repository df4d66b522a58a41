/*
 * wb_barriers.c - source rules of place: where a function's block-wide
 * barriers stand between the accesses to its shared memory.
 *
 * The function's body (preprocessed, wb_rules.c) is walked statement by
 * statement into a list of events: a read or a write of the shared memory
 * the rule names, or a barrier. Loops are walked twice (one iteration's end
 * meets the next one's start); both branches of an if are walked (different
 * threads may take different ones). A call of a function of the file is
 * walked in place, its parameters standing for the shared memory passed to
 * them. A barrier counts only where every thread of the block reaches it:
 * not inside an if, a loop or a switch whose condition depends on the thread
 * (threadIdx, or a variable computed from it), nor after an early return
 * that depends on it. Then:
 *   WB_READ_AFTER_WRITE  a barrier between every write and every later read
 *                        (other than in the same statement: s[i] += s[j]);
 *   WB_WRITE_AFTER_READ  a barrier between every read and every later write;
 *                        neither between two atomics (atomicAdd(&s[v], 1) in
 *                        a loop: atomics on one word lose nothing to each
 *                        other, they need a barrier only from plain accesses);
 *   WB_EACH_ITERATION    a barrier in every iteration of each loop of the
 *                        function that writes the shared memory;
 *   WB_READ_BACK         a read of the shared memory after a write of it: a
 *                        tile that is loaded and then not used (the values
 *                        taken from global memory again) is no tiling.
 * What counts as an access of a name: name[...] and *name (reads; writes
 * when assigned, or += ...), &name (both: an atomic's target), and, for a
 * scalar __shared__ variable, the bare name; a bare pointer counts where it
 * is handed to a call outside the file (both).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wb_rules.h"

enum { READ = 1, WRITE = 2, BARRIER = 4, ATOMIC = 8 };   // ATOMIC: only an atomic's target

typedef struct {
    int kind;
    int line;
} event;

#define MAX_NAMES 16
#define NAME_SIZE 64

typedef struct {
    char name[MAX_NAMES][NAME_SIZE];
    bool scalar[MAX_NAMES];
    int n;
} name_list;

typedef struct {
    const char *text;     /* kernels.cu's lines: callees are found here */
    event *events;
    int n, cap;
    const char *inlined[16];   /* the bodies being walked: no recursion */
    int depth;
    bool returned;        /* a return was walked (in the current branch) */
    int bad_loop_line;    /* a loop that writes without a barrier in each iteration */
} walk;

typedef struct {
    name_list *shared;    /* the names that stand for the rule's shared memory */
    name_list *thread;    /* variables whose value depends on the thread */
    bool divergent;       /* not every thread of the block gets here */
    bool own;             /* the rule's own function (not a callee) */
} scope;

static void add_event(walk *w, int kind, int line)
{
    if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 256;
        w->events = realloc(w->events, sizeof(event) * (size_t)w->cap);
        cr_assert(w->events, "out of host memory");
    }
    w->events[w->n++] = (event){kind, line};
}

static void add_name(name_list *l, const char *p, size_t n, bool scalar)
{
    if (l->n == MAX_NAMES || n >= NAME_SIZE)
        return;
    memcpy(l->name[l->n], p, n);
    l->name[l->n][n] = '\0';
    l->scalar[l->n++] = scalar;
}

/* The index of the word (n characters) in l, or -1. */
static int name_index(const name_list *l, const char *p, size_t n)
{
    for (int i = 0; i < l->n; i++)
        if (wb_word_is(p, n, l->name[i]))
            return i;
    return -1;
}

static const char *word_end(const char *p)
{
    while (wb_is_word_char(*p))
        p++;
    return p;
}

/* The word at p is a member's name (ring->task, v.x, Op::atomic), not a
 * variable's. */
static bool member_name(const char *p, const char *from)
{
    while (p > from && (p[-1] == ' ' || p[-1] == '\n'))
        p--;
    return p > from && (p[-1] == '.' || (p - 1 > from && ((p[-2] == '-' && p[-1] == '>') ||
                                                         (p[-2] == ':' && p[-1] == ':'))));
}

/* Whether [from, to) holds a word of l, or threadIdx (the thread's own). */
static bool mentions(const name_list *l, const char *from, const char *to, bool thread)
{
    for (const char *p = from; p < to; p++) {
        if (!wb_is_word_char(*p) || (p > from && wb_is_word_char(p[-1])))
            continue;
        const char *e = word_end(p);
        if ((name_index(l, p, (size_t)(e - p)) >= 0 && !member_name(p, from)) ||
            (thread && wb_word_is(p, (size_t)(e - p), "threadIdx")))
            return true;
        p = e - 1;
    }
    return false;
}

/* The end of the statement at p: the ';' outside any bracket, or end. */
static const char *statement_end(const char *p, const char *end)
{
    int depth = 0;
    for (; p < end; p++) {
        depth += (*p == '(' || *p == '[' || *p == '{') - (*p == ')' || *p == ']' || *p == '}');
        if (depth <= 0 && *p == ';')
            return p;
    }
    return end;
}

/* The top-level pieces of a bracketed list at open ('('), separated by
 * commas: starts[i] .. ends[i]. Returns how many (0 for "()"). */
static int split_list(const char *open, const char **starts, const char **ends, int most)
{
    const char *close = wb_after_closing(open);
    if (!close)
        return 0;
    close--;
    int n = 0, depth = 0;
    const char *start = open + 1;
    if (wb_skip_space(start) >= close)
        return 0;
    for (const char *p = open + 1; p <= close; p++) {
        if (p < close && (*p == '(' || *p == '[' || *p == '{' || *p == '<'))
            depth++;
        else if (p < close && (*p == ')' || *p == ']' || *p == '}' || *p == '>'))
            depth--;
        else if ((p == close || (*p == ',' && depth == 0)) && n < most) {
            starts[n] = start;
            ends[n++] = p;
            start = p + 1;
        }
    }
    return n;
}

/* The name a parameter declaration gives: its last word before a default
 * value or an array's brackets. */
static void parameter_name(const char *from, const char *to, const char **name, size_t *n)
{
    const char *stop = to;
    for (const char *p = from; p < to; p++)
        if (*p == '=' || *p == '[') {
            stop = p;
            break;
        }
    *name = NULL;
    *n = 0;
    for (const char *p = from; p < stop; p++)
        if (wb_is_word_char(*p) && (p == from || !wb_is_word_char(p[-1]))) {
            *name = p;
            *n = (size_t)(word_end(p) - p);
        }
    // float (*As)[N]: the name is the word after "(*"
    const char *star = strstr(from, "(*");
    if (star && star < stop) {
        const char *q = wb_skip_space(star + 2);
        *name = q;
        *n = (size_t)(word_end(q) - q);
    }
}

static const char *statement(walk *w, scope *s, const char *p, const char *end);

/* The kind of access at the shared name at p (n characters). */
static int access_kind(const scope *s, int index, const char *p, size_t n, const char *from)
{
    const char *before = p;
    while (before > from && (before[-1] == ' ' || before[-1] == '\t' || before[-1] == '\n'))
        before--;
    char b1 = before > from ? before[-1] : ' ', b2 = before - 1 > from ? before[-2] : ' ';
    // The character before b1, spaces skipped: a word there makes b1 a
    // declarator or an operator (unsigned *p, a * b), not a unary one.
    const char *earlier = before - 1;
    while (earlier > from && (earlier[-1] == ' ' || earlier[-1] == '\n'))
        earlier--;
    char b0 = earlier > from ? earlier[-1] : ' ';
    bool unary = !wb_is_word_char(b0) && b0 != ')' && b0 != ']';
    bool address = b1 == '&' && unary;
    bool deref = b1 == '*' && unary;
    bool counted_before = (b1 == '+' && b2 == '+') || (b1 == '-' && b2 == '-');
    bool subscripted = false;
    const char *q = p + n;
    for (;;) {
        q = wb_skip_space(q);
        if (*q == '[') {
            const char *close = wb_after_closing(q);
            if (!close)
                break;
            q = close;
            subscripted = true;
        } else if (*q == '.' && wb_is_word_char(q[1])) {
            q = word_end(q + 1);
        } else if (q[0] == '-' && q[1] == '>') {
            q = word_end(wb_skip_space(q + 2));
            subscripted = true;
        } else {
            break;
        }
    }
    bool assigned = q[0] == '=' && q[1] != '=';
    bool updated = counted_before || (q[0] == '+' && q[1] == '+') || (q[0] == '-' && q[1] == '-') ||
                   (q[1] == '=' && strchr("+-*/%&|^", q[0]) && q[0]) ||
                   ((q[0] == '<' || q[0] == '>') && q[1] == q[0] && q[2] == '=');
    if (!subscripted && !deref && !address && !s->shared->scalar[index])
        // A pointer's own value (from = to): no access, unless handed to
        // a call outside the file (atomicAdd(s, 1)), which may do anything.
        return (b1 == '(' || b1 == ',') && !assigned ? READ | WRITE : 0;
    if (address || updated)
        return READ | WRITE;
    return assigned ? WRITE : READ;
}

/* A call of a function of the file, walked in place. Returns the kind of
 * access its arguments make at the call (a shared value passed by value is
 * read there). */
static int walk_call(walk *w, scope *s, const char *args, const char *params, const char *body,
                     const char *body_end)
{
    const char *arg_from[24], *arg_to[24], *par_from[24], *par_to[24];
    int nargs = split_list(args, arg_from, arg_to, 24);
    int npars = split_list(params, par_from, par_to, 24);
    name_list shared = {.n = 0}, thread = {.n = 0};
    int kind = 0;
    for (int i = 0; i < nargs && i < npars; i++) {
        const char *name;
        size_t n;
        parameter_name(par_from[i], par_to[i], &name, &n);
        if (!name)
            continue;
        if (mentions(s->thread, arg_from[i], arg_to[i], true))
            add_name(&thread, name, n, false);
        if (!mentions(s->shared, arg_from[i], arg_to[i], false))
            continue;
        bool pointer = false, reference = false;
        for (const char *p = par_from[i]; p < par_to[i]; p++) {
            pointer |= *p == '*' || *p == '[';
            reference |= *p == '&';
        }
        if (pointer || reference)
            add_name(&shared, name, n, reference && !pointer);
        else
            kind |= READ;
    }
    if (w->depth >= (int)(sizeof w->inlined / sizeof w->inlined[0]))
        return kind;
    for (int i = 0; i < w->depth; i++)
        if (w->inlined[i] == body)
            return kind;
    w->inlined[w->depth++] = body;
    scope inner = {&shared, &thread, s->divergent, false};
    bool returned = w->returned;
    for (const char *p = body + 1; (p = wb_skip_space(p)) < body_end - 1;)
        p = statement(w, &inner, p, body_end - 1);
    w->returned = returned;
    w->depth--;
    return kind;
}

bool wb_is_block_barrier(const char *p, size_t n, const char *from)
{
    // block.sync(), cg::sync(block)
    return (n >= 13 && !strncmp(p, "__syncthreads", 13)) || wb_word_is(p, n, "__barrier_sync") ||
           (member_name(p, from) && wb_word_is(p, n, "sync"));
}

/* Whether [from, to) hands out a pointer into the shared memory: a shared
 * array's or pointer's bare name (buffers + blockDim.x), or &name[...]. */
static bool points_into_shared(const scope *s, const char *from, const char *to)
{
    for (const char *q = from; q < to; q++) {
        if (!wb_is_word_char(*q) || (q > from && wb_is_word_char(q[-1])))
            continue;
        const char *e = word_end(q);
        int index = member_name(q, from) ? -1 : name_index(s->shared, q, (size_t)(e - q));
        const char *before = q;
        while (before > from && before[-1] == ' ')
            before--;
        if (index >= 0 && !s->shared->scalar[index] &&
            (*wb_skip_space(e) != '[' || (before > from && before[-1] == '&')))
            return true;
        q = e - 1;
    }
    return false;
}

/* What the statement's assignments (int lane = threadIdx.x % 32, x = ...;
 * from = to;) teach: a variable given a value that depends on the thread
 * joins s->thread; a pointer into the shared memory joins s->shared. */
static void learn_from_assignments(scope *s, const char *from, const char *to)
{
    int depth = 0;
    for (const char *p = from; p < to; p++) {
        depth += (*p == '(' || *p == '[' || *p == '{') - (*p == ')' || *p == ']' || *p == '}');
        if (depth != 0 || *p != '=' || p[1] == '=' || strchr("=!<>+-*/%&|^", p[-1]))
            continue;
        const char *value_end = p + 1;
        for (int d = 0; value_end < to && (d > 0 || *value_end != ','); value_end++)
            d += (*value_end == '(' || *value_end == '[' || *value_end == '{') -
                 (*value_end == ')' || *value_end == ']' || *value_end == '}');
        const char *name_end = p;
        while (name_end > from && (name_end[-1] == ' ' || name_end[-1] == '\n'))
            name_end--;
        const char *name = name_end;
        while (name > from && wb_is_word_char(name[-1]))
            name--;
        size_t n = (size_t)(name_end - name);
        if (!n)
            continue;
        if (name_index(s->thread, name, n) < 0 && mentions(s->thread, p + 1, value_end, true))
            add_name(s->thread, name, n, false);
        if (name_index(s->shared, name, n) < 0 && points_into_shared(s, p + 1, value_end))
            add_name(s->shared, name, n, false);
    }
}

/* Of the definitions of the function named at p (n characters), the one
 * with the fewest barriers, so that a decoy cannot stand in for the one
 * called; NULL when the file defines none. */
static const char *fewest_barriers(const char *text, const char *p, size_t n,
                                   const char **params, const char **body_end)
{
    const char *to = text + strlen(text), *best = NULL, *body, *end, *open;
    int fewest = 0;
    for (const char *from = text; (body = wb_find_definition(from, to, p, n, &open, &end));
         from = end) {
        int barriers = 0;
        for (const char *q = body; (q = wb_find_word(q, end, "__syncthreads")); q++)
            barriers++;
        if (!best || barriers < fewest) {
            best = body;
            fewest = barriers;
            *params = open;
            *body_end = end;
        }
    }
    return best;
}

/* A statement without control flow: its calls, barriers and accesses. */
static void simple_statement(walk *w, scope *s, const char *from, const char *to)
{
    int kind = 0, atomic = 0, line = wb_line_of(w->text, from);
    const char *atomic_arguments_end = from;   // of the last atomicXxx( call seen
    // The declaration of shared memory is no access of it.
    bool declaration = wb_find_word(from, to, "shared") || wb_find_word(from, to, "__shared__");
    for (const char *p = from; p < to;) {
        if (!wb_is_word_char(*p) || (p > from && wb_is_word_char(p[-1]))) {
            p++;
            continue;
        }
        const char *e = word_end(p);
        size_t n = (size_t)(e - p);
        const char *next = wb_skip_space(e);
        if (*next == '<') {   // helper<T>(...)
            const char *closing = wb_after_closing(next);
            if (closing && closing < to && *wb_skip_space(closing) == '(')
                next = wb_skip_space(closing);
        }
        int index = member_name(p, from) ? -1 : name_index(s->shared, p, n);
        if (*next == '(' && index < 0) {
            const char *params, *body_end, *body;
            if (wb_is_block_barrier(p, n, from)) {
                if (!s->divergent)
                    add_event(w, BARRIER, line);
                p = wb_after_closing(next);
                continue;
            }
            body = wb_declared_here(p, from) ? NULL
                                             : fewest_barriers(w->text, p, n, &params, &body_end);
            if (body) {
                kind |= walk_call(w, s, next, params, body, body_end);
                p = wb_after_closing(next);
                continue;
            }
            const char *close = wb_after_closing(next);
            if (n >= 6 && !strncmp(p, "atomic", 6) && close && close > atomic_arguments_end)
                atomic_arguments_end = close;
        } else if (index >= 0 && !declaration) {
            int access = access_kind(s, index, p, n, from);
            // An atomic's target (&s[v], s + v) is read and written; a value
            // it is given (s[b]) is a plain read.
            if (p < atomic_arguments_end && access == (READ | WRITE))
                atomic |= access;
            else
                kind |= access;
        }
        p = e;
    }
    if (kind || atomic)
        add_event(w, kind ? kind | atomic : atomic | ATOMIC, line);
    learn_from_assignments(s, from, to);
}

/* The word at p is `word`. */
static bool keyword(const char *p, const char *word)
{
    size_t n = strlen(word);
    return !strncmp(p, word, n) && !wb_is_word_char(p[n]);
}

/* Walks the statement at p (before end); returns where it ends. */
static const char *statement(walk *w, scope *s, const char *p, const char *end)
{
    p = wb_skip_space(p);
    if (p >= end)
        return end;
    if (*p == ';')
        return p + 1;
    if (*p == '{') {
        const char *close = wb_after_closing(p);
        close = close && close <= end ? close : end;
        for (const char *q = p + 1; (q = wb_skip_space(q)) < close - 1;)
            q = statement(w, s, q, close - 1);
        return close;
    }
    bool is_if = keyword(p, "if"), is_for = keyword(p, "for"), is_while = keyword(p, "while"),
         is_switch = keyword(p, "switch"), is_do = keyword(p, "do");
    if (is_if || is_for || is_while || is_switch) {
        const char *open = wb_skip_space(word_end(p));
        if (*open != '(')
            return statement_end(p, end) + 1;
        const char *close = wb_after_closing(open);
        if (!close || close > end)
            return end;
        bool depends = mentions(s->thread, open, close, true);
        scope inner = *s;
        inner.divergent |= depends;
        simple_statement(w, s, open + 1, close - 1);   // the condition's own accesses
        if (is_for || is_while) {
            int start = w->n;
            bool returned = w->returned;
            const char *after = statement(w, &inner, close, end);
            int middle = w->n;
            statement(w, &inner, close, end);   // the next iteration
            bool writes = false, barrier = false;
            for (int i = start; i < middle; i++) {
                writes |= (w->events[i].kind & WRITE) != 0;
                barrier |= w->events[i].kind == BARRIER;
            }
            if (s->own && writes && !barrier && !w->bad_loop_line)
                w->bad_loop_line = wb_line_of(w->text, p);
            w->returned = returned;
            return after;
        }
        bool returned = w->returned;
        w->returned = false;
        const char *after = statement(w, &inner, close, end);
        const char *other = wb_skip_space(after);
        if (is_if && other < end && keyword(other, "else"))
            after = statement(w, &inner, other + 4, end);
        if (depends && w->returned)
            s->divergent = true;   // some threads left: a later barrier is not reached by all
        w->returned |= returned;
        return after;
    }
    if (is_do) {
        const char *after = statement(w, s, p + 2, end);
        statement(w, s, p + 2, end);
        return statement_end(after, end) + 1;   // while (...);
    }
    if (keyword(p, "return"))
        w->returned = true;
    const char *semi = statement_end(p, end);
    simple_statement(w, s, p, semi);
    return semi < end ? semi + 1 : end;
}

/* The first declaration of the name (n characters) in the body is a
 * __shared__ variable that is no array (whose bare name is its value). */
static bool shared_scalar(const char *body, const char *end, const char *word, size_t n)
{
    char name[NAME_SIZE];
    snprintf(name, sizeof name, "%.*s", (int)n, word);
    const char *p = wb_find_word(body, end, name);
    if (!p || *wb_skip_space(p + n) == '[')
        return false;
    const char *start = p;
    while (start > body && !strchr(";{}", start[-1]))
        start--;
    return wb_find_word(start, p, "__shared__") || wb_find_word(start, p, "shared");
}

/* Every variable the body declares __shared__ (after the preprocessor,
 * __attribute__((shared))) joins l. */
static void declared_shared(const char *body, const char *end, name_list *l)
{
    for (const char *p = body; p < end; p++) {
        const char *q = wb_find_word(p, end, "shared");
        const char *r = wb_find_word(p, end, "__shared__");
        q = !q || (r && r < q) ? r : q;
        if (!q)
            return;
        const char *semi = statement_end(q, end);
        // The declarators after the attribute: float As[T][T], Bs[T][T];
        const char *from = q;
        while (from < semi && *from != ')' && wb_is_word_char(*from))
            from++;
        while (from < semi && *from == ')')
            from++;
        int depth = 0;
        const char *start = from;
        for (const char *c = from; c <= semi; c++) {
            depth += (*c == '(' || *c == '[' || *c == '{') - (*c == ')' || *c == ']' || *c == '}');
            if (c == semi || (*c == ',' && depth == 0)) {
                const char *name;
                size_t n;
                parameter_name(start, c, &name, &n);
                if (name) {
                    const char *after = wb_skip_space(name + n);
                    add_name(l, name, n, *after != '[');
                }
                start = c + 1;
            }
        }
        p = semi;
    }
}

typedef struct {
    const wb_source_rule *rule;
    char *problem;
    size_t size;
    bool found;
} judging;

static void judge_definition(const char *text, const char *params, const char *body,
                             const char *end, void *arg)
{
    judging *j = arg;
    if (j->found)
        return;
    name_list shared = {.n = 0}, thread = {.n = 0};
    const char *names = j->rule->shared;
    for (const char *p = names; *p;) {
        p = wb_skip_space(p);
        const char *e = word_end(p);
        if (e == p)
            break;
        if (wb_word_is(p, (size_t)(e - p), "__shared__"))
            declared_shared(body, end, &shared);
        else
            add_name(&shared, p, (size_t)(e - p), shared_scalar(body, end, p, (size_t)(e - p)));
        p = e;
    }
    if (j->rule->thread_parameter > 0) {   // the callers pass the thread's own value there
        const char *from[24], *to[24], *name;
        size_t n;
        int count = split_list(params, from, to, 24);
        if (j->rule->thread_parameter <= count) {
            parameter_name(from[j->rule->thread_parameter - 1], to[j->rule->thread_parameter - 1],
                           &name, &n);
            if (name)
                add_name(&thread, name, n, false);
        }
    }
    walk w = {.text = text};
    w.inlined[w.depth++] = body;
    scope s = {&shared, &thread, false, true};
    for (const char *p = body + 1; (p = wb_skip_space(p)) < end - 1;)
        p = statement(&w, &s, p, end - 1);
    int protects = j->rule->protects;
    if (!strcmp(names, "__shared__"))
        names = "its __shared__ memory";
    for (int b = 0; b < w.n && !j->found; b++) {
        if (w.events[b].kind == BARRIER)
            continue;
        for (int a = b - 1; a >= 0 && w.events[a].kind != BARRIER; a--) {
            if (w.events[a].kind & w.events[b].kind & ATOMIC)
                continue;
            bool raw = (protects & WB_READ_AFTER_WRITE) && (w.events[a].kind & WRITE) &&
                       (w.events[b].kind & READ);
            bool war = (protects & WB_WRITE_AFTER_READ) && (w.events[a].kind & READ) &&
                       (w.events[b].kind & WRITE);
            if (!raw && !war)
                continue;
            snprintf(j->problem, j->size,
                     "has no barrier (__syncthreads() that every thread of the block reaches) "
                     "between the %s of %s at line %d and the %s at line %d%s",
                     raw ? "write" : "read", names, w.events[a].line, raw ? "read" : "write",
                     w.events[b].line,
                     w.events[b].line <= w.events[a].line ? " (in the loop's next iteration)" : "");
            j->found = true;
            break;
        }
    }
    if (!j->found && (protects & WB_READ_BACK)) {
        bool written = false, read_back = false;
        for (int e = 0; e < w.n && !read_back; e++) {
            read_back = written && w.events[e].kind == READ;
            written |= (w.events[e].kind & WRITE) != 0;
        }
        if (!read_back) {
            snprintf(j->problem, j->size,
                     "stores %s but never reads it back: the values are taken from global "
                     "memory again, so the shared copy saves nothing",
                     names);
            j->found = true;
        }
    }
    if (!j->found && (protects & WB_EACH_ITERATION) && w.bad_loop_line) {
        snprintf(j->problem, j->size,
                 "has no barrier (__syncthreads() that every thread of the block reaches) in "
                 "each iteration of the loop at line %d, which writes %s",
                 w.bad_loop_line, names);
        j->found = true;
    }
    free(w.events);
}

bool wb_barrier_problem(const char *text, const wb_source_rule *r, char *problem, size_t size)
{
    judging j = {r, problem, size, false};
    wb_each_definition(text, r, judge_definition, &j);
    return j.found;
}
