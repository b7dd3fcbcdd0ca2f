// SPDX-License-Identifier: GPL-2.0
/*
 * tlsh-helper.conf parser.  Strict by design: an unknown section or key, a
 * bad value, a duplicate key or a line that is not "key = value" makes the
 * whole file invalid, and the helper refuses to run with "FILE:LINE: why".
 */
#include "config.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gnutls/gnutls.h>

#define CONFIG_MAX_SIZE	(1024 * 1024)
#define CONFIG_MAX_LINE	4096

enum cfg_key {
	K_TRUST_STORE,
	K_CRL,
	K_PRIORITIES,
	K_TLS12,
	K_IDLE_TIMEOUT,
	K_HS_TIMEOUT,
	K_LOG_LEVEL,
	K_ENCRYPTION_ONLY,
	K_SERVER_CERT,
	K_SERVER_KEY,
	K_CLIENT_TRUST_STORE,
	K_SERVER_PSK_KEYRING,
	K_COUNT
};

static const char *const key_names[K_COUNT] = {
	[K_TRUST_STORE] = "trust-store",
	[K_CRL] = "crl",
	[K_PRIORITIES] = "priorities",
	[K_TLS12] = "tls12",
	[K_IDLE_TIMEOUT] = "idle-timeout",
	[K_HS_TIMEOUT] = "handshake-timeout",
	[K_LOG_LEVEL] = "log-level",
	[K_ENCRYPTION_ONLY] = "encryption-only",
	[K_SERVER_CERT] = "server-certificate",
	[K_SERVER_KEY] = "server-private-key",
	[K_CLIENT_TRUST_STORE] = "client-trust-store",
	[K_SERVER_PSK_KEYRING] = "server-psk-keyring",
};

void tlsh_config_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->tls12 = 0;
	cfg->idle_timeout = TLSH_DEFAULT_IDLE;
	cfg->handshake_timeout = TLSH_DEFAULT_HS_TIMEOUT;
	cfg->log_level = TLSH_LOG_INFO;
	cfg->encryption_only = 0;
	tlsh_copy_string(cfg->server_psk_keyring, sizeof(cfg->server_psk_keyring),
			 TLSH_DEFAULT_SERVER_PSK_KEYRING);
}

const char *tlsh_config_file(const struct config *cfg)
{
	return cfg->file[0] ? cfg->file : TLSH_CONFIG_FILE;
}

/* "FILE:LINE: message" (or "FILE: message") in err; returns ret */
static int fail(int ret, char *err, size_t errlen, const char *name,
		unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

static int fail(int ret, char *err, size_t errlen, const char *name,
		unsigned line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (line)
		snprintf(err, errlen, "%s:%u: %s", name, line, msg);
	else
		snprintf(err, errlen, "%s: %s", name, msg);
	return ret;
}

bool tlsh_config_priority_appends(const char *prio)
{
	return prio[0] && strchr("+-%!", prio[0]);
}

int tlsh_config_priority_init(void *cache, const char *prio, const char **errpos,
			      int *gnutls_err)
{
	unsigned int flags = 0;
	int ret;

	if (tlsh_config_priority_appends(prio))
		flags = GNUTLS_PRIORITY_INIT_DEF_APPEND;
	ret = gnutls_priority_init2(cache, prio, errpos, flags);
	*gnutls_err = ret < 0 ? ret : 0;
	if (ret == GNUTLS_E_MEMORY_ERROR)
		return -ENOMEM;
	return ret < 0 ? -EINVAL : 0;
}

int tlsh_config_check_priorities(const char *prio, char *err, size_t errlen)
{
	gnutls_priority_t p;
	const char *errpos = NULL;
	int ret, gerr;

	ret = tlsh_config_priority_init(&p, prio, &errpos, &gerr);
	if (ret < 0) {
		if (gerr == GNUTLS_E_INVALID_REQUEST && errpos)
			snprintf(err, errlen, "invalid priority string at '%.40s'",
				 errpos);
		else
			snprintf(err, errlen, "invalid priority string: %s",
				 gnutls_strerror(gerr));
		return ret;
	}
	gnutls_priority_deinit(p);
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

static int set_path(char *dst, size_t dstlen, const char *val, char *why,
		    size_t whylen)
{
	if (val[0] != '/') {
		snprintf(why, whylen, "must be an absolute path");
		return -EINVAL;
	}
	if (tlsh_copy_string(dst, dstlen, val) < 0) {
		snprintf(why, whylen, "path too long");
		return -ENAMETOOLONG;
	}
	if (access(val, R_OK) < 0) {
		int e = errno;

		snprintf(why, whylen, "%s", strerror(e));
		return -e;
	}
	return 0;
}

/* Returns 0, or -errno with a reason in why (the caller adds FILE:LINE). */
static int set_value(struct config *cfg, enum cfg_key k, const char *val,
		     unsigned line, char *why, size_t whylen)
{
	unsigned long n;
	int b, ret;

	switch (k) {
	case K_TRUST_STORE:
		if (strcmp(val, "system") == 0) {
			cfg->trust_store[0] = '\0';
		} else {
			ret = set_path(cfg->trust_store,
				       sizeof(cfg->trust_store), val, why,
				       whylen);
			if (ret < 0)
				return ret;
		}
		cfg->trust_store_line = line;
		return 0;
	case K_CRL:
		ret = set_path(cfg->crl, sizeof(cfg->crl), val, why, whylen);
		if (ret < 0)
			return ret;
		cfg->crl_line = line;
		return 0;
	case K_PRIORITIES:
		if (!tlsh_valid_token(val, TLSH_MAX_PRIORITIES)) {
			snprintf(why, whylen,
				 "must be 1..%d printable characters without spaces",
				 TLSH_MAX_PRIORITIES);
			return -EINVAL;
		}
		ret = tlsh_config_check_priorities(val, why, whylen);
		if (ret < 0)
			return ret;
		tlsh_copy_string(cfg->priorities, sizeof(cfg->priorities), val);
		return 0;
	case K_TLS12:
	case K_ENCRYPTION_ONLY:
		b = tlsh_parse_bool(val);
		if (b < 0) {
			snprintf(why, whylen, "expected yes or no");
			return b;
		}
		if (k == K_TLS12)
			cfg->tls12 = b;
		else
			cfg->encryption_only = b;
		return 0;
	case K_IDLE_TIMEOUT:
		ret = tlsh_parse_uint(val, TLSH_MAX_IDLE, &n);
		if (ret < 0) {
			snprintf(why, whylen, "expected seconds, 0..%d",
				 TLSH_MAX_IDLE);
			return ret;
		}
		cfg->idle_timeout = (unsigned)n;
		return 0;
	case K_HS_TIMEOUT:
		ret = tlsh_parse_uint(val, TLSH_MAX_HS_TIMEOUT, &n);
		if (ret == 0 && n == 0)
			ret = -ERANGE;
		if (ret < 0) {
			snprintf(why, whylen, "expected seconds, 1..%d",
				 TLSH_MAX_HS_TIMEOUT);
			return ret;
		}
		cfg->handshake_timeout = (unsigned)n;
		return 0;
	case K_SERVER_CERT:
		ret = set_path(cfg->server_cert, sizeof(cfg->server_cert), val,
			       why, whylen);
		if (ret < 0)
			return ret;
		cfg->server_cert_line = line;
		return 0;
	case K_SERVER_KEY:
		ret = set_path(cfg->server_key, sizeof(cfg->server_key), val,
			       why, whylen);
		if (ret < 0)
			return ret;
		cfg->server_key_line = line;
		return 0;
	case K_CLIENT_TRUST_STORE:
		ret = set_path(cfg->client_trust_store,
			       sizeof(cfg->client_trust_store), val, why, whylen);
		if (ret < 0)
			return ret;
		cfg->client_trust_store_line = line;
		return 0;
	case K_SERVER_PSK_KEYRING:
		if (!tlsh_valid_token(val, TLSH_MAX_KEYRING_NAME)) {
			snprintf(why, whylen,
				 "must be 1..%d printable characters without spaces",
				 TLSH_MAX_KEYRING_NAME);
			return -EINVAL;
		}
		tlsh_copy_string(cfg->server_psk_keyring,
				 sizeof(cfg->server_psk_keyring), val);
		return 0;
	case K_LOG_LEVEL:
		b = tlsh_log_level_from_name(val);
		if (b < 0) {
			snprintf(why, whylen,
				 "expected error, warning, info or debug");
			return b;
		}
		cfg->log_level = b;
		return 0;
	case K_COUNT:
		break;
	}
	snprintf(why, whylen, "internal error");
	return -EINVAL;
}

int tlsh_config_parse(struct config *cfg, const char *name, const char *buf,
		      size_t len, char *err, size_t errlen)
{
	unsigned seen[K_COUNT] = { 0 };
	char line[CONFIG_MAX_LINE + 2];
	size_t pos = 0;
	unsigned lineno = 0;

	if (memchr(buf, '\0', len))
		return fail(-EINVAL, err, errlen, name, 0, "contains a NUL byte");
	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - (buf + pos)) : len - pos;
		char *s, *eq, *key, *val, why[256];
		int k, ret;

		lineno++;
		if (l > CONFIG_MAX_LINE)
			return fail(-EINVAL, err, errlen, name, lineno, "line too long");
		memcpy(line, buf + pos, l);
		line[l] = '\0';
		pos += l + (nl ? 1 : 0);

		s = trim(line);
		if (*s == '\0' || *s == '#' || *s == ';')
			continue;
		for (const char *p = s; *p; p++)
			if ((unsigned char)*p < 0x20 && *p != '\t')
				return fail(-EINVAL, err, errlen, name, lineno,
					    "control character in line");
		if (*s == '[') {
			char *end = strchr(s, ']');

			if (!end || *trim(end + 1) != '\0')
				return fail(-EINVAL, err, errlen, name, lineno,
					    "syntax error: expected '[section]'");
			*end = '\0';
			if (strcmp(trim(s + 1), "global") != 0)
				return fail(-EINVAL, err, errlen, name, lineno,
					    "unknown section '[%.64s]' (only [global] is allowed)",
					    trim(s + 1));
			continue;
		}
		eq = strchr(s, '=');
		if (!eq)
			return fail(-EINVAL, err, errlen, name, lineno,
				    "syntax error: expected 'key = value'");
		*eq = '\0';
		key = trim(s);
		val = trim(eq + 1);
		if (*key == '\0')
			return fail(-EINVAL, err, errlen, name, lineno,
				    "syntax error: missing key before '='");
		for (k = 0; k < K_COUNT; k++)
			if (strcmp(key, key_names[k]) == 0)
				break;
		if (k == K_COUNT)
			return fail(-EINVAL, err, errlen, name, lineno,
				    "unknown key '%.64s'", key);
		if (seen[k])
			return fail(-EINVAL, err, errlen, name, lineno,
				    "duplicate key '%s' (already set on line %u)",
				    key_names[k], seen[k]);
		seen[k] = lineno;
		if (*val == '\0')
			return fail(-EINVAL, err, errlen, name, lineno,
				    "missing value for '%s'", key_names[k]);
		ret = set_value(cfg, (enum cfg_key)k, val, lineno, why,
				sizeof(why));
		if (ret < 0)
			return fail(ret, err, errlen, name, lineno,
				    "bad value for %s: '%.64s': %s",
				    key_names[k], val, why);
	}
	/* one without the other is a mistake, not half a server */
	if (!seen[K_SERVER_CERT] != !seen[K_SERVER_KEY]) {
		enum cfg_key have = seen[K_SERVER_CERT] ? K_SERVER_CERT : K_SERVER_KEY;
		enum cfg_key need = have == K_SERVER_CERT ? K_SERVER_KEY : K_SERVER_CERT;

		return fail(-EINVAL, err, errlen, name, seen[have],
			    "%s without %s", key_names[have], key_names[need]);
	}
	tlsh_copy_string(cfg->file, sizeof(cfg->file), name);
	return 0;
}

int tlsh_config_load(struct config *cfg, const char *path, int must_exist,
		     char *err, size_t errlen)
{
	unsigned char *buf;
	size_t len;
	int ret;

	ret = tlsh_read_file(path, CONFIG_MAX_SIZE, &buf, &len);
	if (ret == -ENOENT && !must_exist)
		return 0;
	if (ret == -EFBIG)
		return fail(ret, err, errlen, path, 0, "file too large");
	if (ret)
		return fail(ret, err, errlen, path, 0, "cannot read: %s",
			    strerror(-ret));
	ret = tlsh_config_parse(cfg, path, (const char *)buf, len, err, errlen);
	free(buf);
	return ret;
}
