// SPDX-License-Identifier: GPL-2.0
/*
 * The validated parsers and helpers of util.c: key serials, numbers,
 * booleans, peer names, IP literals, tokens, bounded copies and whole-file
 * reads, with the -errno of each kind of refusal (-EINVAL malformed,
 * -ERANGE out of range, -ENAMETOOLONG / -E2BIG does not fit, the -errno of
 * the failed system call).
 */
#include "log.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The parsers under test, with what tlsh_parse_*() store thrown away */
static int serial(const char *s)
{
	int32_t v;

	return tlsh_parse_serial(s, &v);
}

static int uint100(const char *s)
{
	unsigned long v;

	return tlsh_parse_uint(s, 100, &v);
}

static int peername(const char *s)
{
	char n[256];

	return tlsh_normalize_peername(s, n, sizeof(n));
}

#define N(list) (sizeof(list) / sizeof(*(list)))

/* Whether parse refuses every string of list with code */
static bool all_refused(const char *const *list, size_t n, int code,
			int (*parse)(const char *))
{
	bool all = true;

	for (size_t i = 0; i < n; i++) {
		int r = parse(list[i]);

		if (r != code) {
			DIAG("'%s': %d", list[i], r);
			all = false;
		}
	}
	return all;
}

static void test_numbers(void)
{
	static const char *const malformed_serials[] = {
		"-5", "012", "12a", "", " 1", "+1", "0x10" };
	static const char *const large_serials[] = {
		"0", "2147483648", "99999999999", "4294967296" };
	static const char *const malformed_uints[] = { "", "-1", "1.5", "12a", " 1" };
	int32_t s;
	unsigned long v;

	CHECK(tlsh_parse_serial("1", &s) == 0 && s == 1 &&
	      tlsh_parse_serial("2147483647", &s) == 0 && s == 2147483647,
	      "key serials 1 and INT32_MAX are accepted");
	CHECK(all_refused(malformed_serials, N(malformed_serials), -EINVAL, serial),
	      "signed, padded, zero-led and non-decimal serials: -EINVAL");
	CHECK(all_refused(large_serials, N(large_serials), -ERANGE, serial),
	      "serial 0 and serials above INT32_MAX: -ERANGE");
	CHECK(tlsh_parse_serial(NULL, &s) == -EINVAL, "no serial: -EINVAL");

	CHECK(tlsh_parse_uint("0", 10, &v) == 0 && v == 0 &&
	      tlsh_parse_uint("10", 10, &v) == 0 && v == 10 &&
	      tlsh_parse_uint("4294967295", 4294967295ul, &v) == 0 && v == 4294967295ul,
	      "numbers within [0, max] are accepted");
	CHECK(all_refused(malformed_uints, N(malformed_uints), -EINVAL, uint100),
	      "empty, signed and non-decimal numbers: -EINVAL");
	CHECK(tlsh_parse_uint("11", 10, &v) == -ERANGE &&
	      tlsh_parse_uint("12345678901", ~0ul, &v) == -ERANGE &&
	      tlsh_parse_uint("00000000001", 10, &v) == -ERANGE,
	      "numbers above max or of more than 10 digits: -ERANGE");

	CHECK(tlsh_parse_bool("yes") == 1 && tlsh_parse_bool("TRUE") == 1 &&
	      tlsh_parse_bool("on") == 1 && tlsh_parse_bool("1") == 1 &&
	      tlsh_parse_bool("no") == 0 && tlsh_parse_bool("Off") == 0 &&
	      tlsh_parse_bool("false") == 0 && tlsh_parse_bool("0") == 0,
	      "booleans: yes/true/on/1 and no/false/off/0");
	CHECK(tlsh_parse_bool("maybe") == -EINVAL && tlsh_parse_bool("") == -EINVAL &&
	      tlsh_parse_bool("2") == -EINVAL,
	      "anything else is not a boolean: -EINVAL");
}

static void test_names(void)
{
	static const char *const good_names[] = {
		"server.test", "server.test.", "a", "x-1.example.org", "_nfs.srv", "a-b" };
	static const char *const bad_names[] = {
		"", ".", "a..b", ".a", "a b", "a/b", "sérvér", "-", "a\nb", "-a.b", "a-.b", "a.b-" };
	static const char *const bad_peers[] = {
		"", "[192.0.2.1]", "[server.test]", "a b", "a..b", "[]", "[" };
	unsigned char ip[16];
	size_t iplen;
	char norm[256], longname[300];
	bool all = true;

	for (size_t i = 0; i < N(good_names); i++)
		if (!tlsh_valid_dns_name(good_names[i]))
			all = false;
	for (size_t i = 0; i < N(bad_names); i++)
		if (tlsh_valid_dns_name(bad_names[i]))
			all = false;
	memset(longname, 'a', 299);
	longname[299] = '\0';
	if (tlsh_valid_dns_name(longname))
		all = false;
	memset(longname, 'a', 64);
	longname[64] = '\0';
	if (tlsh_valid_dns_name(longname))
		all = false;
	CHECK(all, "peer names: DNS names accepted, malformed and over-long ones refused");

	CHECK(tlsh_normalize_peername("server.test.", norm, sizeof(norm)) == 0 &&
	      strcmp(norm, "server.test") == 0 &&
	      tlsh_normalize_peername("[2001:db8::1]", norm, sizeof(norm)) == 0 &&
	      strcmp(norm, "2001:db8::1") == 0 &&
	      tlsh_normalize_peername("192.0.2.1", norm, sizeof(norm)) == 0 &&
	      strcmp(norm, "192.0.2.1") == 0,
	      "peer names are normalised: trailing dot, [IPv6] brackets");
	CHECK(all_refused(bad_peers, N(bad_peers), -EINVAL, peername),
	      "neither a DNS name nor an IP address: -EINVAL");
	CHECK(tlsh_normalize_peername("server.test", norm, 5) == -ENAMETOOLONG &&
	      tlsh_normalize_peername("server.test", norm, 11) == -ENAMETOOLONG &&
	      tlsh_normalize_peername("server.test", norm, 12) == 0,
	      "a peer name that does not fit: -ENAMETOOLONG");

	CHECK(tlsh_ip_literal("127.0.0.1", ip, &iplen) && iplen == 4 &&
	      tlsh_ip_literal("2001:db8::1", ip, &iplen) && iplen == 16 &&
	      !tlsh_ip_literal("server.test", ip, &iplen) && !tlsh_ip_literal("127.1", ip, &iplen),
	      "IP literals are told apart from DNS names");
	CHECK(tlsh_valid_token("NORMAL:-VERS-ALL", 16) && !tlsh_valid_token("", 16) &&
	      !tlsh_valid_token("a b", 16) && !tlsh_valid_token("abc", 2) &&
	      !tlsh_valid_token("a\x7f", 16),
	      "tokens: printable ASCII without spaces, 1..max bytes");
}

static void test_copy_and_read(void)
{
	char small[4], path[] = "/tmp/tlsh-test-util.XXXXXX";
	unsigned char *buf = NULL;
	size_t len = 0;
	int fd, r;

	CHECK(tlsh_copy_string(small, sizeof(small), "abc") == 0 &&
	      strcmp(small, "abc") == 0 &&
	      tlsh_copy_string(small, sizeof(small), "abcd") == -E2BIG,
	      "a bounded copy that does not fit: -E2BIG");

	CHECK(tlsh_read_file("/nonexistent/file", 100, &buf, &len) == -ENOENT,
	      "reading a file that does not exist: -ENOENT");
	fd = mkstemp(path);
	if (fd < 0 || write(fd, "0123456789", 10) != 10) {
		CHECK(0, "a temporary file: %s", strerror(errno));
		return;
	}
	close(fd);
	r = tlsh_read_file(path, 10, &buf, &len);
	CHECK(r == 0 && len == 10 && memcmp(buf, "0123456789", 10) == 0,
	      "a file of max bytes is read whole");
	free(buf);
	buf = NULL;
	CHECK(tlsh_read_file(path, 9, &buf, &len) == -EFBIG && !buf,
	      "a file larger than max: -EFBIG");
	unlink(path);
}

/* What a certificate's name can put in a log line */
static void test_log_sanitize(void)
{
	static const struct {
		const char *in, *out, *what;
	} cases[] = {
		{ "CN=client,O=Example", "CN=client,O=Example", "ASCII kept" },
		{ "a\nb\rc\x1b[2Jd\x7f", "a?b?c?[2Jd?", "C0 controls and DEL" },
		{ "CN=J\xc3\xbcrgen \xc4\x81 \xe2\x82\xac \xf0\x9f\x94\x92",
		  "CN=J\xc3\xbcrgen \xc4\x81 \xe2\x82\xac \xf0\x9f\x94\x92",
		  "UTF-8 kept (continuation bytes 0x80-0xbf included)" },
		{ "x\xc2\x9b" "31my", "x??31my", "UTF-8-encoded C1 (U+009B CSI)" },
		{ "x\x9b" "31my", "x?31my", "a raw C1 byte (8-bit CSI)" },
		{ "evil\xe2\x80\xaetxt.exe", "evil???txt.exe", "bidi override U+202E" },
		{ "\xe2\x81\xa6" "a\xe2\x81\xa9", "???a???", "bidi isolates U+2066, U+2069" },
		{ "\xc0\xafx\xed\xa0\x80y\xe2\x82", "??x???y??",
		  "overlong, surrogate and truncated sequences" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[64];

		snprintf(buf, sizeof(buf), "%s", cases[i].in);
		tlsh_log_sanitize(buf);
		CHECK(strcmp(buf, cases[i].out) == 0, "log lines: %s", cases[i].what);
	}
}

int main(void)
{
	test_log_sanitize();
	test_numbers();
	test_names();
	test_copy_and_read();
	return tap_done();
}
