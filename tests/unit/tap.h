/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal TAP for the C unit tests: each CHECK prints "ok - name" or
 * "not ok - name"; run.sh numbers the lines.  main() returns tap_done().
 */
#ifndef TLSH_TAP_H
#define TLSH_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tap_failures;

static void tap_check(int ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void tap_check(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s - ", ok ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		tap_failures++;
}

#define CHECK(cond, ...) tap_check(!!(cond), __VA_ARGS__)

/* Diagnostic line, ignored by the TAP relay. */
#define DIAG(...) do { printf("# " __VA_ARGS__); printf("\n"); } while (0)

static inline int tap_done(void)
{
	return tap_failures ? 1 : 0;
}

#endif
