/* SPDX-License-Identifier: GPL-2.0 */
/* The AF_TLSH listener, the accept loop and the network namespace. */
#ifndef TLSH_LISTENER_H
#define TLSH_LISTENER_H

#include <stddef.h>
#include <stdint.h>
#include <linux/tls.h>	/* the series' UAPI: struct sockaddr_tlsh */

#include "worker.h"

/* The kernel's address family (include/linux/socket.h): C libraries do
 * not know it yet, and the kernel does not export it to user space. */
#ifndef AF_TLSH
#define AF_TLSH		46
#endif

#define LISTENER_MAX_INFLIGHT	128

/* socket(AF_TLSH), bind(tlsh_key = key, 0 = own namespace), listen().
 * Returns the listening fd or -errno with a message in err. */
int tlsh_listener_open(int32_t key, char *err, size_t errlen);

/*
 * Accept until idle: each accepted fd is handed to handler(fd, arg) in a
 * process of its own (tlsh_worker_start()), at most LISTENER_MAX_INFLIGHT
 * at once; the handler must close it.  Exits when no handshake is in
 * flight and none has finished for idle_s seconds (0 = never), or on
 * SIGTERM/SIGINT/SIGHUP (after the handshakes in flight are done).  The
 * caller must have no other thread and no other child.  Closes lfd.
 * Returns 0, or the -errno of a fatal error (accept(), poll(),
 * signalfd()).
 */
int tlsh_listener_run(int lfd, unsigned idle_s, tlsh_worker_fn handler,
		      void *arg);

/* Block the signals tlsh_listener_run() reads from its signalfd (SIGTERM,
 * SIGINT, SIGHUP, SIGCHLD); it does so itself, but a process with other
 * threads (a test) must before it starts them. */
void tlsh_listener_block_signals(void);

/* "netns:<inum>:<seq>" -> inum, seq.  0, -EINVAL (malformed) or -ERANGE
 * (a number too large). */
int tlsh_netns_parse_description(const char *desc, uint32_t *inum, uint64_t *seq);
/* Check that key is a "tlsh" key and get its namespace.  0 or -errno
 * (keyctl(2)'s; -EINVAL: not a tlsh key) with a message in err. */
int tlsh_netns_from_key(int32_t key, uint32_t *inum, uint64_t *seq, char *err,
			size_t errlen);
/* Inode number of the caller's network namespace, 0 if unknown. */
uint32_t tlsh_netns_self(void);

#endif
