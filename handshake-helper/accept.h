/* SPDX-License-Identifier: GPL-2.0 */
/* --accept: one server handshake on a user-space TCP socket (test/debug). */
#ifndef TLSH_ACCEPT_H
#define TLSH_ACCEPT_H

#include "config.h"
#include "connect.h"

/* Listen on o->target ("[ADDR:]PORT"), accept one connection within
 * wait_s seconds (0: no limit) and serve it.  Returns the process exit
 * status: 0 ok, 1 failure, 2 usage, 3 no kTLS. */
int tlsh_accept_main(const struct connect_opts *o, const struct config *cfg,
		     unsigned wait_s);

#endif
