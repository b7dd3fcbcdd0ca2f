/* SPDX-License-Identifier: GPL-2.0 */
/* --connect: the same handshake on a user-space TCP socket (test/debug);
 * its options and I/O are --accept's too (accept.c). */
#ifndef TLSH_CONNECT_H
#define TLSH_CONNECT_H

#include <stddef.h>

#include <gnutls/gnutls.h>

#include "config.h"
#include "keyring.h"

struct connect_opts {
	const char *target;		/* HOST:PORT or [V6]:PORT */
	const char *peername;		/* default: HOST */
	const char *priorities;
	const char *cert_file;
	const char *key_file;
	const char *psk_file;
	const char *psk_identity;
	const char *send;
	int ktls;
	int server_psk;			/* --accept --psk: the configured keyring */
	int server_x509;		/* --accept --x509: an x509 request */
};

/* Returns the process exit status: 0 ok, 1 failure, 2 usage, 3 no kTLS. */
int tlsh_connect_main(const struct connect_opts *o, const struct config *cfg);

/* tlsh_read_file() of at most TLSH_PAYLOAD_MAX, with the error logged; 0
 * or -errno */
int tlsh_connect_load_file(const char *path, unsigned char **buf, size_t *len);
/* A certificate (chain) and its key from files into x; 0 or -errno, logged */
int tlsh_connect_load_x509(const char *cert_file, const char *key_file,
			   struct tlsh_x509 *x);
/* After a --connect or --accept handshake: with --ktls, hand the session
 * to kTLS ("ktls installed"); with --send, send the string plus a newline,
 * read back one line (gnutls-serv --echo, or the other test mode) and
 * print it ("received: ...").  0 or -errno (-EPROTO for a GnuTLS error),
 * logged. */
int tlsh_connect_io(int fd, gnutls_session_t s, const struct connect_opts *o);

#endif
