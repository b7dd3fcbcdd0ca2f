/* SPDX-License-Identifier: GPL-2.0 */
/* --connect: the same handshake on a user-space TCP socket (test/debug). */
#ifndef TLSH_CONNECT_H
#define TLSH_CONNECT_H

#include "config.h"

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
};

/* Returns the process exit status: 0 ok, 1 failure, 2 usage, 3 no kTLS. */
int tlsh_connect_main(const struct connect_opts *o, const struct config *cfg);

#endif
