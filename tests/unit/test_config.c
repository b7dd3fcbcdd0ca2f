// SPDX-License-Identifier: GPL-2.0
/*
 * tlsh-helper.conf parsing: defaults, a complete good file, and the exact
 * "FILE:LINE: message" and -errno of each kind of malformed file.  Also
 * the effective priority strings GnuTLS must accept.
 *
 *   test_config CA_PEM EXAMPLE_CONF
 */
#include "config.h"
#include "handshake.h"
#include "log.h"
#include "tap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse(struct config *c, const char *text, char *err, size_t errlen)
{
	tlsh_config_defaults(c);
	err[0] = '\0';
	return tlsh_config_parse(c, "t.conf", text, strlen(text), err, errlen);
}

static const char *errno_name(int e)
{
	switch (e) {
	case -EINVAL: return "-EINVAL";
	case -ERANGE: return "-ERANGE";
	case -ENOENT: return "-ENOENT";
	case -EFBIG: return "-EFBIG";
	default: return "?";
	}
}

static void expect_error(const char *text, int code, const char *want)
{
	struct config c;
	char err[1024];
	int r = parse(&c, text, err, sizeof(err));

	CHECK(r == code && strcmp(err, want) == 0, "malformed config gives %s, '%s'",
	      errno_name(code), want);
	if (r != code || strcmp(err, want) != 0)
		DIAG("got r=%d '%s'", r, err);
}

/* A file one byte larger than the configuration's limit (1 MiB): -EFBIG */
static void too_large(void)
{
	char path[] = "/tmp/tlsh-test-config.XXXXXX", err[1024] = "", line[4096];
	struct config c;
	size_t left = 1024 * 1024 + 1;
	int fd = mkstemp(path), r = 0;

	memset(line, '#', sizeof(line));
	line[sizeof(line) - 1] = '\n';
	while (fd >= 0 && left) {
		size_t n = left < sizeof(line) ? left : sizeof(line);

		if (write(fd, line, n) != (ssize_t)n)
			break;
		left -= n;
	}
	if (fd >= 0) {
		close(fd);
		tlsh_config_defaults(&c);
		r = tlsh_config_load(&c, path, 1, err, sizeof(err));
		unlink(path);
	}
	CHECK(fd >= 0 && left == 0 && r == -EFBIG && strstr(err, ": file too large"),
	      "a configuration file over 1 MiB: -EFBIG, 'file too large'");
}

int main(int argc, char **argv)
{
	const char *ca = argc > 1 ? argv[1] : "/etc/hostname";
	const char *example = argc > 2 ? argv[2] : NULL;
	struct config c;
	char err[1024], text[2048], want[2048], prio[2048];
	int r;

	/* defaults */
	tlsh_config_defaults(&c);
	r = tlsh_config_load(&c, "/nonexistent/tlsh-helper.conf", 0, err, sizeof(err));
	CHECK(r == 0 && c.idle_timeout == 5 && c.handshake_timeout == 15 &&
	      c.tls12 == 0 && c.encryption_only == 0 &&
	      c.log_level == TLSH_LOG_INFO && c.trust_store[0] == '\0' &&
	      c.priorities[0] == '\0' && c.server_cert[0] == '\0' &&
	      c.server_key[0] == '\0' && c.client_trust_store[0] == '\0' &&
	      strcmp(c.server_psk_keyring, "tlsh-server-psk") == 0,
	      "a missing default config file means defaults (no server certificate, PSK keyring tlsh-server-psk)");
	r = tlsh_config_load(&c, "/nonexistent/tlsh-helper.conf", 1, err, sizeof(err));
	CHECK(r == -ENOENT && strcmp(err, "/nonexistent/tlsh-helper.conf: cannot read: No such file or directory") == 0,
	      "a missing explicit config file is an error: -ENOENT");
	too_large();

	/* a complete good file */
	snprintf(text, sizeof(text),
		 "# comment\n"
		 "; another comment\n"
		 "\n"
		 "[ global ]\n"
		 "  trust-store   =   %s  \n"
		 "crl=%s\n"
		 "priorities = NORMAL:-VERS-ALL:+VERS-TLS1.3\n"
		 "tls12 = yes\r\n"
		 "idle-timeout = 0\n"
		 "handshake-timeout = 600\n"
		 "log-level = debug\n"
		 "encryption-only = no\n", ca, ca);
	r = parse(&c, text, err, sizeof(err));
	CHECK(r == 0 && strcmp(c.trust_store, ca) == 0 && c.trust_store_line == 5 &&
	      strcmp(c.crl, ca) == 0 && c.crl_line == 6 &&
	      strcmp(c.priorities, "NORMAL:-VERS-ALL:+VERS-TLS1.3") == 0 &&
	      c.tls12 == 1 && c.idle_timeout == 0 && c.handshake_timeout == 600 &&
	      c.log_level == TLSH_LOG_DEBUG && c.encryption_only == 0 &&
	      strcmp(c.file, "t.conf") == 0,
	      "a complete config file sets every key");
	if (r)
		DIAG("%s", err);
	r = parse(&c, "trust-store = system\nencryption-only = yes\nidle-timeout=7\n",
		  err, sizeof(err));
	CHECK(r == 0 && c.trust_store[0] == '\0' && c.encryption_only == 1 &&
	      c.idle_timeout == 7,
	      "keys without a section header, trust-store = system");
	r = parse(&c, "", err, sizeof(err));
	CHECK(r == 0 && c.idle_timeout == 5, "an empty file means defaults");

	/* the server role */
	snprintf(text, sizeof(text),
		 "server-certificate = %s\n"
		 "\n"
		 "server-private-key = %s\n"
		 "client-trust-store = %s\n"
		 "server-psk-keyring = nfsd-clients\n", ca, ca, ca);
	r = parse(&c, text, err, sizeof(err));
	CHECK(r == 0 && strcmp(c.server_cert, ca) == 0 && c.server_cert_line == 1 &&
	      strcmp(c.server_key, ca) == 0 && c.server_key_line == 3 &&
	      strcmp(c.client_trust_store, ca) == 0 && c.client_trust_store_line == 4 &&
	      strcmp(c.server_psk_keyring, "nfsd-clients") == 0,
	      "the server keys: certificate, key, client trust store, PSK keyring");
	if (r)
		DIAG("%s", err);
	CHECK(strcmp(tlsh_config_file(&c), "t.conf") == 0,
	      "messages name the file read");
	tlsh_config_defaults(&c);
	CHECK(strcmp(tlsh_config_file(&c), TLSH_CONFIG_FILE) == 0,
	      "... or the default file");

	/* malformed files: exact FILE:LINE: message */
	expect_error("[global]\nfoo = 1\n", -EINVAL, "t.conf:2: unknown key 'foo'");
	expect_error("idle-timeout = abc\n", -EINVAL,
		     "t.conf:1: bad value for idle-timeout: 'abc': expected seconds, 0..86400");
	expect_error("idle-timeout = -1\n", -EINVAL,
		     "t.conf:1: bad value for idle-timeout: '-1': expected seconds, 0..86400");
	expect_error("idle-timeout = 86401\n", -ERANGE,
		     "t.conf:1: bad value for idle-timeout: '86401': expected seconds, 0..86400");
	expect_error("\n\nhandshake-timeout = 0\n", -ERANGE,
		     "t.conf:3: bad value for handshake-timeout: '0': expected seconds, 1..600");
	expect_error("tls12 = maybe\n", -EINVAL,
		     "t.conf:1: bad value for tls12: 'maybe': expected yes or no");
	expect_error("encryption-only = 2\n", -EINVAL,
		     "t.conf:1: bad value for encryption-only: '2': expected yes or no");
	expect_error("log-level = loud\n", -EINVAL,
		     "t.conf:1: bad value for log-level: 'loud': expected error, warning, info or debug");
	expect_error("[server]\n", -EINVAL,
		     "t.conf:1: unknown section '[server]' (only [global] is allowed)");
	expect_error("[global\n", -EINVAL, "t.conf:1: syntax error: expected '[section]'");
	expect_error("# c\n\nthis is not valid\n", -EINVAL,
		     "t.conf:3: syntax error: expected 'key = value'");
	expect_error("= 5\n", -EINVAL, "t.conf:1: syntax error: missing key before '='");
	expect_error("tls12 = yes\ntls12 = no\n", -EINVAL,
		     "t.conf:2: duplicate key 'tls12' (already set on line 1)");
	expect_error("crl =\n", -EINVAL, "t.conf:1: missing value for 'crl'");
	expect_error("trust-store = ca.pem\n", -EINVAL,
		     "t.conf:1: bad value for trust-store: 'ca.pem': must be an absolute path");
	expect_error("trust-store = /nonexistent/ca.pem\n", -ENOENT,
		     "t.conf:1: bad value for trust-store: '/nonexistent/ca.pem': No such file or directory");
	expect_error("priorities = NORMAL:+FOO-BAR\n", -EINVAL,
		     "t.conf:1: bad value for priorities: 'NORMAL:+FOO-BAR': invalid priority string at '+FOO-BAR'");
	snprintf(text, sizeof(text), "tls12 = no\nserver-certificate = %s\n", ca);
	expect_error(text, -EINVAL,
		     "t.conf:2: server-certificate without server-private-key");
	snprintf(text, sizeof(text), "server-private-key = %s\n", ca);
	expect_error(text, -EINVAL,
		     "t.conf:1: server-private-key without server-certificate");
	expect_error("client-trust-store = ca.pem\n", -EINVAL,
		     "t.conf:1: bad value for client-trust-store: 'ca.pem': must be an absolute path");
	expect_error("server-certificate = /nonexistent/srv.pem\n", -ENOENT,
		     "t.conf:1: bad value for server-certificate: '/nonexistent/srv.pem': No such file or directory");
	expect_error("server-psk-keyring = my ring\n", -EINVAL,
		     "t.conf:1: bad value for server-psk-keyring: 'my ring': must be 1..255 printable characters without spaces");
	expect_error("priorities = NORMAL SECURE\n", -EINVAL,
		     "t.conf:1: bad value for priorities: 'NORMAL SECURE': must be 1..1024 printable characters without spaces");
	{
		static const char nul[] = "tls12 = yes\n\0\n";

		tlsh_config_defaults(&c);
		r = tlsh_config_parse(&c, "t.conf", nul, sizeof(nul) - 1, err, sizeof(err));
		CHECK(r == -EINVAL && strcmp(err, "t.conf: contains a NUL byte") == 0,
		      "a NUL byte makes the file invalid: -EINVAL");
	}
	{
		char *big = malloc(5000);

		memset(big, 'a', 4999);
		big[4999] = '\0';
		expect_error(big, -EINVAL, "t.conf:1: line too long");
		free(big);
	}

	/* effective priorities: all must be accepted by gnutls_priority_init */
	r = tlsh_config_check_priorities(TLSH_DEFAULT_PRIORITIES, err, sizeof(err));
	CHECK(r == 0, "the built-in default priority string is valid for GnuTLS");
	r = tlsh_config_check_priorities("NORMAL:+FOO-BAR", err, sizeof(err));
	CHECK(r == -EINVAL && strcmp(err, "invalid priority string at '+FOO-BAR'") == 0,
	      "a priority string GnuTLS refuses: -EINVAL");
	CHECK(tlsh_config_priority_appends("-VERS-ALL") &&
	      !tlsh_config_priority_appends("NORMAL") && !tlsh_config_priority_appends(""),
	      "modifiers-only priority strings are appended to the system's default");
	CHECK(tlsh_log_level_from_name("debug") == TLSH_LOG_DEBUG &&
	      tlsh_log_level_from_name("loud") == -EINVAL,
	      "log level names: the level, or -EINVAL");
	tlsh_config_defaults(&c);
	CHECK(tlsh_hs_priorities(&c, NULL, TLSH_TYPE_CLIENTHELLO_X509, prio, 16) == -E2BIG,
	      "an effective priority string that does not fit: -E2BIG");
	tlsh_hs_priorities(&c, NULL, TLSH_TYPE_CLIENTHELLO_X509, prio, sizeof(prio));
	snprintf(want, sizeof(want), "%s:-VERS-TLS1.2", TLSH_DEFAULT_PRIORITIES);
	CHECK(strcmp(prio, want) == 0 && tlsh_config_check_priorities(prio, err, sizeof(err)) == 0,
	      "tls12 = no (default) removes TLS1.2 from the default priorities");
	c.tls12 = 1;
	tlsh_hs_priorities(&c, NULL, TLSH_TYPE_CLIENTHELLO_X509, prio, sizeof(prio));
	CHECK(strcmp(prio, TLSH_DEFAULT_PRIORITIES) == 0,
	      "tls12 = yes keeps the default priorities");
	tlsh_hs_priorities(&c, NULL, TLSH_TYPE_CLIENTHELLO_PSK, prio, sizeof(prio));
	CHECK(strstr(prio, "+ECDHE-PSK") && strstr(prio, "+DHE-PSK") &&
	      tlsh_config_check_priorities(prio, err, sizeof(err)) == 0,
	      "PSK handshakes add the PSK key exchanges to the default");
	tlsh_hs_priorities(&c, NULL, TLSH_TYPE_SERVERHELLO_PSK, prio, sizeof(prio));
	CHECK(strstr(prio, "+ECDHE-PSK") && strstr(prio, "+DHE-PSK") &&
	      tlsh_config_check_priorities(prio, err, sizeof(err)) == 0,
	      "a PSK server's too");
	tlsh_hs_priorities(&c, "NORMAL", TLSH_TYPE_CLIENTHELLO_PSK, prio, sizeof(prio));
	CHECK(strcmp(prio, "NORMAL") == 0, "a kernel-supplied priority string is used as given");
	c.tls12 = 0;
	tlsh_hs_priorities(&c, "NORMAL", TLSH_TYPE_CLIENTHELLO_X509, prio, sizeof(prio));
	CHECK(strcmp(prio, "NORMAL:-VERS-TLS1.2") == 0,
	      "tls12 = no also applies to a kernel-supplied priority string");
	snprintf(text, sizeof(text), "priorities = %s\n", TLSH_DEFAULT_PRIORITIES);
	r = parse(&c, text, err, sizeof(err));
	tlsh_hs_priorities(&c, NULL, TLSH_TYPE_CLIENTHELLO_X509, prio, sizeof(prio));
	snprintf(want, sizeof(want), "%s:-VERS-TLS1.2", TLSH_DEFAULT_PRIORITIES);
	CHECK(r == 0 && strcmp(prio, want) == 0, "a configured priority string replaces the default");

	if (example) {
		tlsh_config_defaults(&c);
		r = tlsh_config_load(&c, example, 1, err, sizeof(err));
		CHECK(r == 0, "the shipped example tlsh-helper.conf is valid");
		if (r)
			DIAG("%s", err);
	}
	return tap_done();
}
