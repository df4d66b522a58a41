/*
 * wb_rules.h - what the two halves of the source rules share: wb_rules.c
 * (the text, the counting rules) and wb_barriers.c (where barriers stand).
 * Not for labs: they use wb_test.h's WB_SOURCE_RULES_TEST.
 */
#ifndef WB_RULES_H
#define WB_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "wb_test.h"

bool wb_is_word_char(char c);
const char *wb_skip_space(const char *p);
/* The character after the bracket ((, [, <, {) that closes the one at open,
 * or NULL. */
const char *wb_after_closing(const char *open);
/* Next occurrence of the whole word `word` in [from, to), or NULL. */
const char *wb_find_word(const char *from, const char *to, const char *word);
bool wb_word_is(const char *p, size_t n, const char *word);
/* The body ({ ... }) of a definition of the name (n characters) in
 * [from, to): the name, a parameter list, qualifiers, then a brace. *params
 * gets the parameter list's '(' (when params is not NULL), *end the body's
 * end. NULL where there is none, or for if/for/while... */
const char *wb_find_definition(const char *from, const char *to, const char *name, size_t n,
                               const char **params, const char **end);
/* The word at p follows a type (T name(args), atomic_ref<int> lock(*w)):
 * it names a variable declared there, not a function called. */
bool wb_declared_here(const char *p, const char *from);
/* The source line of position p in text (text keeps kernels.cu's lines). */
int wb_line_of(const char *text, const char *p);
/* Calls f for every definition of rule->function in text; returns how many. */
int wb_each_definition(const char *text, const wb_source_rule *rule,
                       void (*f)(const char *text, const char *params, const char *body,
                                 const char *end, void *arg),
                       void *arg);
/* Whether the word at p (n characters; from: the start of the text around
 * it) names a block-wide barrier: __syncthreads and its _count/_and/_or
 * forms, __barrier_sync, a cooperative group's sync (block.sync(),
 * cg::sync(block)). */
bool wb_is_block_barrier(const char *p, size_t n, const char *from);
/* Whether a definition of r->function leaves its shared memory r->shared
 * unprotected (wb_barriers.c); the problem, in words, in problem. */
bool wb_barrier_problem(const char *text, const wb_source_rule *r, char *problem, size_t size);

/* The problems of the rules in the preprocessed files (paths separated by
 * ':'), one line each, in problems; returns their length (0: none). name
 * gets kernels.cu's name, as the line markers give it. */
size_t wb_source_rule_problems(const char *preprocessed, const wb_source_rule *rules, size_t n,
                               char *problems, size_t size, char *name, size_t name_size);

#endif /* WB_RULES_H */
