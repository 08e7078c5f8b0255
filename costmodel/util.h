/* util.h: error context and allocation wrappers shared by every module. */
#ifndef AMPPLAN_UTIL_H
#define AMPPLAN_UTIL_H

#include <stddef.h>

/* An error context: the first failing function fills msg, callers up the chain
 * may prefix it (file name, field), and main prints it once (STYLE.md 7). */
struct err {
	char msg[512];
};

/* Formats the message into e->msg (e may be NULL). Always returns -1, so a
 * failing function can end with `return err_set(e, ...)`. */
int err_set(struct err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Prepends "<formatted>: " to e->msg (e may be NULL). */
void err_prefix(struct err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Stops the program: flushes stdout, prints "ampplan: fatal: out of memory"
 * on stderr and exits 1. The one place a failed allocation (ours, cJSON's,
 * open_memstream's) ends. */
_Noreturn void fatal_oom(void);

/* Returns p, or stops with fatal_oom() where p is NULL. */
void *must_alloc(void *p);

/* Allocation wrappers: they print "ampplan: fatal: out of memory" and exit(1)
 * instead of returning NULL; xcalloc and xreallocarray check n*size for
 * overflow (kissat allocate.c). xmalloc(0) returns a valid pointer. */
void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xreallocarray(void *p, size_t n, size_t size);
char *xstrdup(const char *s);

/* Greatest common divisor of two non-negative integers; gcd(0, b) = b. */
int gcd(int a, int b);

#endif
