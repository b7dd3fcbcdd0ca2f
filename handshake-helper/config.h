/* SPDX-License-Identifier: GPL-2.0 */
/* The ini-style configuration file, see tlsh-helper.conf(5). */
#ifndef TLSH_CONFIG_H
#define TLSH_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <linux/tls.h>	/* the series' UAPI: TLSH_MAX_PRIORITIES */

#include "priorities.h"	/* TLSH_DEFAULT_PRIORITIES */

#ifndef TLSH_CONFIG_FILE
#define TLSH_CONFIG_FILE "/etc/tlsh/tlsh-helper.conf"
#endif

#define TLSH_DEFAULT_IDLE	5	/* seconds */
#define TLSH_DEFAULT_HS_TIMEOUT	15	/* seconds */
#define TLSH_MAX_IDLE		86400
#define TLSH_MAX_HS_TIMEOUT	600
/* the keyring of the clients' PSKs a server looks up by default */
#define TLSH_DEFAULT_SERVER_PSK_KEYRING	"tlsh-server-psk"
#define TLSH_MAX_KEYRING_NAME	255

struct config {
	char file[PATH_MAX];		/* "" if defaults only */
	char trust_store[PATH_MAX];	/* "" = system trust */
	unsigned trust_store_line;
	char crl[PATH_MAX];		/* "" = none */
	unsigned crl_line;
	char priorities[TLSH_MAX_PRIORITIES + 1];	/* "" = built-in */
	int tls12;			/* allow TLS 1.2 */
	unsigned idle_timeout;		/* seconds, 0 = never */
	unsigned handshake_timeout;	/* seconds */
	int log_level;			/* enum tlsh_log_level */
	int encryption_only;		/* no server authentication */
	/* The server role (server.c): its certificate chain and key, the CAs
	 * client certificates are verified against, the keyring of the
	 * clients' PSKs.  "" = not configured; a line of 0 = not set. */
	char server_cert[PATH_MAX];
	unsigned server_cert_line;
	char server_key[PATH_MAX];
	unsigned server_key_line;
	char client_trust_store[PATH_MAX];
	unsigned client_trust_store_line;
	char server_psk_keyring[TLSH_MAX_KEYRING_NAME + 1];
};

/* The file to name in messages: the one read, or the default */
const char *tlsh_config_file(const struct config *cfg);

void tlsh_config_defaults(struct config *cfg);

/*
 * Load PATH.  If must_exist is 0 a missing file means defaults.  Returns 0,
 * or -errno with "FILE:LINE: message" (or "FILE: message") in err: the
 * error of reading the file (-ENOENT, -EACCES, -EFBIG: too large...), or
 * tlsh_config_parse()'s.
 */
int tlsh_config_load(struct config *cfg, const char *path, int must_exist,
		     char *err, size_t errlen);

/* Parse an in-memory file; name is used in messages.  Returns 0, or -errno
 * with "FILE:LINE: message" in err: -EINVAL for a malformed line or value,
 * -ERANGE for a number out of range, -ENAMETOOLONG for a path too long, the
 * error of access() for a file that cannot be read. */
int tlsh_config_parse(struct config *cfg, const char *name, const char *buf,
		      size_t len, char *err, size_t errlen);

/* Parse a priority string into *(gnutls_priority_t *)cache: one that
 * begins with a keyword (NORMAL, SECURE256, @SYSTEM, ...) as written, one
 * made of modifiers only ("+...", "-...", "%...", "!...") appended to the
 * system's default, as the built-in one is. Returns 0, -EINVAL or -ENOMEM,
 * with GnuTLS's own error code in *gnutls_err (for gnutls_strerror(); 0 on
 * success) and the position of a syntax error in *errpos.
 */
int tlsh_config_priority_init(void *cache, const char *prio, const char **errpos,
			      int *gnutls_err);

/* Whether tlsh_config_priority_init() appends PRIO to the system's default */
bool tlsh_config_priority_appends(const char *prio);

/* Check a priority string with tlsh_config_priority_init(); returns 0 or
 * -EINVAL (-ENOMEM) with a message in err. */
int tlsh_config_check_priorities(const char *prio, char *err, size_t errlen);

#endif
