/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A process per handshake: forked by the accept loop on an accepted
 * socket, it serves that one handshake and exits; the accept loop reaps
 * it.  See README.md, "Processes".
 */
#ifndef TLSH_WORKER_H
#define TLSH_WORKER_H

#include <stddef.h>
#include <sys/types.h>

/* Serves one handshake on fd and closes it */
typedef void (*tlsh_worker_fn)(int fd, void *arg);

/*
 * Fork a process that closes the descriptors in close_fds (the caller's
 * that it has no use for: the listener, the signalfd), asks for SIGKILL
 * when its parent dies, runs fn(fd, arg) and _exit()s 0.  In the caller,
 * fd is closed in any case.  Returns the process's pid, or the -errno of
 * fork().  The caller must reap it (tlsh_worker_reap()).
 */
pid_t tlsh_worker_start(int fd, const int *close_fds, size_t nclose,
			tlsh_worker_fn fn, void *arg);

/*
 * Reap every handshake process that has ended, without waiting, and log
 * one line for each that was killed by a signal or exited non-zero (the
 * kernel has failed its handshake already: its socket closed with it).
 * Returns how many were reaped.
 */
unsigned int tlsh_worker_reap(void);

#endif
