// SPDX-License-Identifier: GPL-2.0
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int tlsh_parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	unsigned long v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (const char *p = s; *p; p++)
		if (*p < '0' || *p > '9')
			return -EINVAL;
	if (strlen(s) > 10)
		return -ERANGE;
	for (const char *p = s; *p; p++) {
		unsigned long d = (unsigned long)(*p - '0');

		if (v > (ULONG_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int tlsh_parse_serial(const char *s, int32_t *out)
{
	unsigned long v;
	int ret;

	if (!s || (s[0] == '0' && s[1] != '\0'))
		return -EINVAL;		/* a leading zero */
	ret = tlsh_parse_uint(s, INT32_MAX, &v);
	if (ret < 0)
		return ret;
	if (v == 0)
		return -ERANGE;
	*out = (int32_t)v;
	return 0;
}

int tlsh_parse_bool(const char *s)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };

	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return 1;
		if (strcasecmp(s, no[i]) == 0)
			return 0;
	}
	return -EINVAL;
}

uint64_t tlsh_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t tlsh_now_ms(void)
{
	return tlsh_now_us() / 1000u;
}

bool tlsh_ip_literal(const char *s, unsigned char addr[16], size_t *len)
{
	if (inet_pton(AF_INET, s, addr) == 1) {
		*len = 4;
		return true;
	}
	if (inet_pton(AF_INET6, s, addr) == 1) {
		*len = 16;
		return true;
	}
	return false;
}

bool tlsh_valid_dns_name(const char *s)
{
	size_t total = strlen(s), label = 0;

	if (total == 0 || total > 253 || s[0] == '.')
		return false;
	for (const char *p = s; *p; p++) {
		if (*p == '.') {
			if (label == 0)
				return false;
			label = 0;
			continue;
		}
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
			return false;
		/* no label starts or ends with a hyphen */
		if (*p == '-' && (label == 0 || p[1] == '.' || p[1] == '\0'))
			return false;
		if (++label > 63)
			return false;
	}
	return true;
}

int tlsh_normalize_peername(const char *in, char *out, size_t outlen)
{
	unsigned char addr[16];
	size_t len = strlen(in), alen;

	if (len == 0)
		return -EINVAL;
	if (len >= outlen)
		return -ENAMETOOLONG;
	if (in[0] == '[' && in[len - 1] == ']') {
		memcpy(out, in + 1, len - 2);
		out[len - 2] = '\0';
		if (inet_pton(AF_INET6, out, addr) == 1)
			return 0;
		return -EINVAL;
	}
	if (tlsh_ip_literal(in, addr, &alen) || tlsh_valid_dns_name(in)) {
		memcpy(out, in, len + 1);
		if (len > 1 && out[len - 1] == '.')
			out[len - 1] = '\0';
		return 0;
	}
	return -EINVAL;
}

bool tlsh_valid_token(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n == 0 || n > max)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

int tlsh_copy_string(char *dst, size_t dstlen, const char *src)
{
	int n = snprintf(dst, dstlen, "%s", src);

	return (n < 0 || (size_t)n >= dstlen) ? -E2BIG : 0;
}

int tlsh_read_file(const char *path, size_t max, unsigned char **buf, size_t *len)
{
	unsigned char *b;
	size_t used = 0;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	b = malloc(max + 1);
	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t r = read(fd, b + used, max + 1 - used);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (r == 0)
			break;
		used += (size_t)r;
		if (used > max) {
			err = -EFBIG;
			break;
		}
	}
	close(fd);
	if (err) {
		explicit_bzero(b, used < max + 1 ? used : max + 1);
		free(b);
		return err;
	}
	*buf = b;
	*len = used;
	return 0;
}
