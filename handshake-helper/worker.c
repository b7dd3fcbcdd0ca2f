// SPDX-License-Identifier: GPL-2.0
/*
 * A process per handshake.
 *
 * Each accepted handshake socket is served by a process of its own, as
 * ktls-utils' tlshd does: the key material of one handshake is never in
 * the address space of another, and a handshake that crashes takes only
 * itself down.  The accept loop's process holds no key material at all;
 * what a handshake process starts with is what the accept loop had when
 * it forked: the configuration, GnuTLS's global state, the trust store
 * and the default priorities, loaded once at start-up.
 *
 * The accept loop's process is single-threaded, so fork() is safe.  A
 * handshake process asks for SIGKILL when the accept loop's process dies
 * (PR_SET_PDEATHSIG): killing the agent ends the handshakes it started,
 * at once, and the kernel fails them.  It keeps the accept loop's signal
 * mask: SIGTERM, SIGINT and SIGHUP (say, Ctrl-C to a foreground agent's
 * process group) are for the accept loop, which stops accepting and waits
 * for the handshakes in flight.
 */
#include "worker.h"
#include "log.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* Exit status of a handshake process whose parent died before it could ask
 * to die with it */
#define WORKER_ORPHANED	1

pid_t tlsh_worker_start(int fd, const int *close_fds, size_t nclose,
			tlsh_worker_fn fn, void *arg)
{
	pid_t parent = getpid(), pid;

	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	if (pid > 0) {
		close(fd);
		return pid;
	}
	/* the handshake's process */
	for (size_t i = 0; i < nclose; i++)
		if (close_fds[i] >= 0)
			close(close_fds[i]);
	/* The death signal is armed from here on; a parent that died
	 * before has made this process an orphan, reparented. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 ||
	    getppid() != parent)
		_exit(WORKER_ORPHANED);
	fn(fd, arg);
	/* not exit(): nothing of the parent's (stdio buffers, atexit
	 * handlers) is the handshake's to flush or run */
	_exit(0);
}

unsigned int tlsh_worker_reap(void)
{
	unsigned int n = 0;
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		n++;
		if (WIFSIGNALED(st))
			log_err("handshake process %d killed by signal %d (%s): its handshake failed, the others go on",
				(int)pid, WTERMSIG(st), strsignal(WTERMSIG(st)));
		else if (WIFEXITED(st) && WEXITSTATUS(st))
			log_err("handshake process %d exited with status %d: its handshake failed, the others go on",
				(int)pid, WEXITSTATUS(st));
	}
	return n;
}
