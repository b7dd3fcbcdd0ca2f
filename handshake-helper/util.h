/* SPDX-License-Identifier: GPL-2.0 */
/* Small validated parsers and helpers shared by the other files. */
#ifndef TLSH_UTIL_H
#define TLSH_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A key serial as given by request-key or the kernel: 1..INT32_MAX, plain
 * decimal, nothing else.  Returns 0, -EINVAL (not plain decimal, or a
 * leading zero) or -ERANGE (0, or above INT32_MAX). */
int tlsh_parse_serial(const char *s, int32_t *out);
/* Unsigned decimal in [0, max]; returns 0, -EINVAL (empty, or not only
 * digits) or -ERANGE (more than 10 digits, or above max). */
int tlsh_parse_uint(const char *s, unsigned long max, unsigned long *out);
/* "yes"/"no" and friends; returns 1 or 0, or -EINVAL. */
int tlsh_parse_bool(const char *s);

/* Monotonic clock in milliseconds, and in microseconds. */
uint64_t tlsh_now_ms(void);
uint64_t tlsh_now_us(void);

/* Whether s is an IPv4 or IPv6 literal; if so, the raw address (4 or 16
 * bytes) is stored in addr and its length in *len. */
bool tlsh_ip_literal(const char *s, unsigned char addr[16], size_t *len);
/* Whether s is a DNS host name: labels of [A-Za-z0-9_-], 1..63 each,
 * total <= 253, optional trailing dot. */
bool tlsh_valid_dns_name(const char *s);
/*
 * A peer name as used for SNI and verification: a DNS name without its
 * trailing dot, or an IP literal ("[v6]" loses its brackets).  Returns 0,
 * -EINVAL if in is neither, or -ENAMETOOLONG if it does not fit out.
 */
int tlsh_normalize_peername(const char *in, char *out, size_t outlen);
/* Whether s is printable ASCII without spaces, 1..max bytes. */
bool tlsh_valid_token(const char *s, size_t max);

/* snprintf-based bounded copy; returns 0, or -E2BIG if truncated. */
int tlsh_copy_string(char *dst, size_t dstlen, const char *src);

/* Read a whole file (up to max bytes) into a malloc'ed buffer.  Returns 0
 * or -errno (-EFBIG if larger than max). */
int tlsh_read_file(const char *path, size_t max, unsigned char **buf, size_t *len);

#endif
