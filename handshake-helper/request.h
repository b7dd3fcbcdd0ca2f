/* SPDX-License-Identifier: GPL-2.0 */
/* One accepted AF_TLSH handshake socket, from getsockopt() to close(). */
#ifndef TLSH_REQUEST_H
#define TLSH_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include <linux/tls.h>	/* the series' UAPI: TLSH_*, TLSH_MAX_PEERNAME */

#include "config.h"

/* The kernel's option level (include/linux/socket.h): C libraries do not
 * know it yet, and the kernel does not export it to user space. */
#ifndef SOL_TLSH
#define SOL_TLSH	288
#endif

struct tlsh_request {
	int type;
	char priorities[TLSH_MAX_PRIORITIES + 1];
	char peername[TLSH_MAX_PEERNAME + 1];
	int32_t peerid;
	int32_t cert;
	int32_t keyring;		/* to link before reading the keys */
	int auth_optional;		/* an unverifiable server is accepted */
	unsigned timeout_ms;		/* min(config, kernel - margin) */
	uint64_t read_ms;		/* tlsh_now_ms() when timeout_ms was */
	char peer[80];			/* "192.0.2.1:2049", for messages */
	unsigned char peer_ip[16];
	size_t peer_ip_len;
};

/* Read and validate the SOL_TLSH options of fd.  0 or -errno (getsockopt()'s,
 * or -EINVAL for a malformed request) with a message in err. */
int tlsh_request_read(int fd, const struct config *cfg, struct tlsh_request *r,
		      char *err, size_t errlen);

/* Serve one handshake on fd and close it; cfg is a const struct config *.
 * Runs in the handshake's own process (worker.c), whose thread keyring
 * gets the request's keys. */
void tlsh_request_serve(int fd, void *cfg);

#endif
