// SPDX-License-Identifier: GPL-2.0
/*
 * Logging.  One call = one line.  Messages are formatted into a buffer
 * first, control characters (which could come from a peer's certificate
 * or a kernel-supplied name: C0 and C1, also UTF-8-encoded, bidi
 * controls, bytes that are not UTF-8) are replaced (tlsh_log_sanitize()),
 * and the line goes to syslog and, in foreground mode, to stderr in a
 * single write().
 */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

static int log_to_syslog;
static int log_to_stderr;
static enum tlsh_log_level log_level = TLSH_LOG_INFO;
static const char *log_ident = "tlsh-helper";

static const char *const level_names[] = {
	[TLSH_LOG_ERROR] = "error",
	[TLSH_LOG_WARNING] = "warning",
	[TLSH_LOG_INFO] = "info",
	[TLSH_LOG_DEBUG] = "debug",
};

static const int level_prio[] = {
	[TLSH_LOG_ERROR] = LOG_ERR,
	[TLSH_LOG_WARNING] = LOG_WARNING,
	[TLSH_LOG_INFO] = LOG_INFO,
	[TLSH_LOG_DEBUG] = LOG_DEBUG,
};

void tlsh_log_init(const char *ident, int to_syslog, int to_stderr)
{
	log_ident = ident;
	log_to_syslog = to_syslog;
	log_to_stderr = to_stderr;
	if (to_syslog)
		openlog(ident, LOG_PID, LOG_DAEMON);
}

void tlsh_log_set_level(enum tlsh_log_level level)
{
	if (level > TLSH_LOG_DEBUG)
		level = TLSH_LOG_DEBUG;
	log_level = level;
}

enum tlsh_log_level tlsh_log_get_level(void)
{
	return log_level;
}

int tlsh_log_level_from_name(const char *name)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (strcmp(name, level_names[i]) == 0)
			return (int)i;
	return -EINVAL;
}

const char *tlsh_log_level_name(enum tlsh_log_level level)
{
	return level <= TLSH_LOG_DEBUG ? level_names[level] : "?";
}

/* The length of the well-formed UTF-8 sequence at s (2-4) and its code
 * point, or 0 */
static int utf8_seq(const unsigned char *s, unsigned int *cp)
{
	unsigned int c = s[0], min;
	int n;

	if (c >= 0xc2 && c <= 0xdf) {
		n = 2, c &= 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3, c &= 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4, c &= 0x07, min = 0x10000;
	} else {
		return 0;
	}
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;	/* also the terminating NUL */
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

static int unsafe_cp(unsigned int c)
{
	return (c >= 0x80 && c <= 0x9f) || c == 0x61c || c == 0x200e ||
	       c == 0x200f || (c >= 0x202a && c <= 0x202e) ||
	       (c >= 0x2066 && c <= 0x2069);
}

void tlsh_log_sanitize(char *s)
{
	unsigned char *p = (unsigned char *)s;

	while (*p) {
		unsigned int cp;
		int n;

		if (*p < 0x80) {
			if (*p < 0x20 || *p == 0x7f)
				*p = '?';
			p++;
			continue;
		}
		n = utf8_seq(p, &cp);
		if (!n) {
			*p++ = '?';
			continue;
		}
		if (unsafe_cp(cp))
			memset(p, '?', (size_t)n);
		p += n;
	}
}

void tlsh_log_msg(enum tlsh_log_level level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	tlsh_log_sanitize(line);
	if (log_to_syslog)
		syslog(level_prio[level], "%s", line);
	if (log_to_stderr) {
		char out[1100];
		int len = snprintf(out, sizeof(out), "%s: %s%s\n", log_ident,
				   level == TLSH_LOG_WARNING ? "warning: " : "",
				   line);

		if (len > 0) {
			size_t l = (size_t)len < sizeof(out) ? (size_t)len
							     : sizeof(out) - 1;
			if (write(STDERR_FILENO, out, l) < 0) {
				/* nothing sensible left to do */
			}
		}
	}
}
