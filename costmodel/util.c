/* util.c: error context and allocation wrappers. */
#include "util.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int err_set(struct err *e, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return -1;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	return -1;
}

void err_prefix(struct err *e, const char *fmt, ...)
{
	char head[sizeof e->msg];
	size_t n, len, cap = sizeof e->msg - 1;
	va_list ap;
	int w;

	if (!e)
		return;
	va_start(ap, fmt);
	w = vsnprintf(head, sizeof head - 2, fmt, ap);
	va_end(ap);
	n = w < 0 ? 0 : strlen(head);
	memcpy(head + n, ": ", 3);
	n += 2;
	len = strlen(e->msg);
	if (len > cap - n)
		len = cap - n;
	memmove(e->msg + n, e->msg, len);
	memcpy(e->msg, head, n);
	e->msg[n + len] = '\0';
}

_Noreturn void fatal_oom(void)
{
	fflush(stdout);
	fputs("ampplan: fatal: out of memory\n", stderr);
	exit(1);
}

void *must_alloc(void *p)
{
	if (!p)
		fatal_oom();
	return p;
}

void *xmalloc(size_t size)
{
	return must_alloc(malloc(size ? size : 1));
}

void *xcalloc(size_t n, size_t size)
{
	if (!n || !size)
		n = size = 1;
	return must_alloc(calloc(n, size));
}

void *xreallocarray(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		return must_alloc(NULL);
	return must_alloc(realloc(p, n && size ? n * size : 1));
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(xmalloc(n), s, n);
}

int gcd(int a, int b)
{
	while (b) {
		int t = a % b;

		a = b;
		b = t;
	}
	return a;
}
