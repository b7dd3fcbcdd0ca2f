// SPDX-License-Identifier: GPL-2.0
/*
 * AF_TLSH listener and accept loop.
 *
 * A process per accepted handshake (worker.c): each runs its handshake
 * against its own deadline, so one stalled peer never delays the others,
 * and one that crashes takes no other handshake, and no other's keys, with
 * it.  The accept loop, the process's only thread, polls the listener and
 * a signalfd (SIGTERM, SIGINT, SIGHUP; SIGCHLD when a handshake process
 * ends, which it reaps), and keeps the idle clock: it counts from the
 * last finished handshake (or from the start), and only while none is in
 * flight.  It never reads a request or a key.
 */
#include "listener.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <keyutils.h>

int tlsh_listener_open(int32_t key, char *err, size_t errlen)
{
	struct sockaddr_tlsh sa;
	int fd, e;

	fd = socket(AF_TLSH, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		e = errno;
		snprintf(err, errlen, "socket(AF_TLSH): %s%s", strerror(e),
			 e == EAFNOSUPPORT ? " (kernel without AF_TLSH support)" : "");
		return -e;
	}
	memset(&sa, 0, sizeof(sa));
	sa.tlsh_family = AF_TLSH;
	sa.tlsh_key = key;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		e = errno;
		snprintf(err, errlen, "bind(AF_TLSH, key %d): %s%s", key,
			 strerror(e),
			 e == EADDRINUSE ? " (another agent serves this network namespace)" :
			 e == EPERM ? (key ? " (needs authority over the key and CAP_NET_ADMIN)"
					   : " (needs CAP_NET_ADMIN)") : "");
		close(fd);
		return -e;
	}
	if (listen(fd, SOMAXCONN) < 0) {
		e = errno;
		snprintf(err, errlen, "listen(AF_TLSH): %s", strerror(e));
		close(fd);
		return -e;
	}
	return fd;
}

struct lstate {
	unsigned inflight;		/* handshake processes not reaped yet */
	uint64_t last_done;		/* tlsh_now_ms() when one last ended */
	tlsh_worker_fn handler;
	void *arg;
	int fds[2];			/* listener, signalfd: the loop's only */
};

/* SIGTERM, SIGINT, SIGHUP: stop; SIGCHLD: a handshake process ended */
static void loop_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGCHLD);
}

void tlsh_listener_block_signals(void)
{
	sigset_t set;

	loop_signals(&set);
	sigprocmask(SIG_BLOCK, &set, NULL);
}

/* What accept_some() leaves the accept loop with */
enum accept_state {
	ACCEPT_DRAINED,		/* nothing more queued, or the cap reached */
	ACCEPT_BACKOFF,		/* short of a resource: retry shortly */
	ACCEPT_NETNS_GONE,	/* the network namespace served is gone */
};

/*
 * Accept what is queued, a handshake process for each.  Returns an enum
 * accept_state, or the -errno of a fatal accept() error.
 */
static int accept_some(int lfd, struct lstate *ls)
{
	for (;;) {
		pid_t pid;
		int fd;

		if (ls->inflight >= LISTENER_MAX_INFLIGHT)
			return ACCEPT_DRAINED;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			int e = errno;

			switch (e) {
			case EAGAIN:
				return ACCEPT_DRAINED;
			case EINTR:
			case ECONNABORTED:
			case EPROTO:
				continue;
			case EMFILE:
			case ENFILE:
			case ENOBUFS:
			case ENOMEM:
				log_warn("accept: %s", strerror(e));
				return ACCEPT_BACKOFF;
			case ENETDOWN:
				log_info("the network namespace served is gone: no more handshakes");
				return ACCEPT_NETNS_GONE;
			default:
				log_err("accept: %s", strerror(e));
				return -e;
			}
		}
		pid = tlsh_worker_start(fd, ls->fds, 2, ls->handler, ls->arg);
		if (pid < 0) {
			/* its socket is closed: the kernel fails it */
			log_err("cannot start a handshake process: %s",
				strerror((int)-pid));
			return ACCEPT_BACKOFF;
		}
		ls->inflight++;
	}
}

/* Read the signals queued; returns the last that asks us to stop, or 0
 * (SIGCHLD only: tlsh_worker_reap() finds which processes ended) */
static unsigned int read_signals(int sigfd)
{
	struct signalfd_siginfo si;
	unsigned int stop = 0;

	while (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		if (si.ssi_signo != SIGCHLD)
			stop = si.ssi_signo;
	return stop;
}

int tlsh_listener_run(int lfd, unsigned idle_s, tlsh_worker_fn handler,
		      void *arg)
{
	struct lstate ls = { .handler = handler, .arg = arg };
	uint64_t idle_ms = (uint64_t)idle_s * 1000u, backoff_until = 0;
	sigset_t set;
	int sigfd, e, stopping = 0, ret = 0;

	ls.last_done = tlsh_now_ms();
	/* children are reaped here, not ignored (an inherited SIG_IGN
	 * would have the kernel reap them, unseen) */
	signal(SIGCHLD, SIG_DFL);
	tlsh_listener_block_signals();
	loop_signals(&set);
	sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sigfd < 0) {
		e = errno;
		log_err("signalfd: %s", strerror(e));
		close(lfd);
		return -e;
	}
	ls.fds[0] = lfd;
	ls.fds[1] = sigfd;

	for (;;) {
		struct pollfd pfd[2];
		uint64_t now = tlsh_now_ms();
		int timeout = -1, nfds = 1, pr;

		if (stopping) {
			if (ls.inflight == 0)
				break;
		} else if (idle_ms && ls.inflight == 0) {
			if (now - ls.last_done >= idle_ms) {
				log_info("idle for %u s, exiting", idle_s);
				break;
			}
			timeout = (int)(idle_ms - (now - ls.last_done));
		}
		pfd[0].fd = sigfd;
		pfd[0].events = POLLIN;
		if (!stopping && ls.inflight < LISTENER_MAX_INFLIGHT) {
			if (now >= backoff_until) {
				pfd[1].fd = lfd;
				pfd[1].events = POLLIN;
				nfds = 2;
			} else if (timeout < 0 || (uint64_t)timeout > backoff_until - now) {
				timeout = (int)(backoff_until - now);
			}
		}
		for (int i = 0; i < nfds; i++)
			pfd[i].revents = 0;
		pr = poll(pfd, (nfds_t)nfds, timeout);
		if (pr < 0) {
			e = errno;
			if (e == EINTR)
				continue;
			log_err("poll: %s", strerror(e));
			stopping = 1;
			ret = -e;
			continue;
		}
		if (pfd[0].revents) {
			unsigned int n, sig = read_signals(sigfd);

			if (sig && !stopping) {
				log_info("signal %u: no new handshakes, exiting after %u in flight",
					 sig, ls.inflight);
				stopping = 1;
				/* Queued handshakes go to a fresh upcall. */
				close(lfd);
				lfd = ls.fds[0] = -1;
			}
			n = tlsh_worker_reap();
			if (n) {
				ls.inflight -= n < ls.inflight ? n : ls.inflight;
				ls.last_done = tlsh_now_ms();
			}
		}
		if (lfd >= 0 && nfds == 2 && pfd[1].revents) {
			int r = accept_some(lfd, &ls);

			if (r == ACCEPT_BACKOFF)
				backoff_until = tlsh_now_ms() + 100;
			if (r < 0 || r == ACCEPT_NETNS_GONE) {
				stopping = 1;
				ret = r < 0 ? r : 0;
				close(lfd);
				lfd = ls.fds[0] = -1;
			}
		}
	}
	if (lfd >= 0)
		close(lfd);
	close(sigfd);
	return ret;
}

/* Decimal at s up to the first non-digit (*end), in [0, max].  0, -EINVAL
 * (no digit, or a leading zero) or -ERANGE. */
static int parse_u64(const char *s, const char **end, uint64_t max,
		     uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;

	if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] >= '0' && p[1] <= '9'))
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (max - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*end = p;
	*out = v;
	return 0;
}

int tlsh_netns_parse_description(const char *desc, uint32_t *inum, uint64_t *seq)
{
	const char *p;
	uint64_t i, s;
	int ret;

	if (strncmp(desc, "netns:", 6) != 0)
		return -EINVAL;
	ret = parse_u64(desc + 6, &p, UINT32_MAX, &i);
	if (ret < 0)
		return ret;
	if (i == 0 || *p != ':')
		return -EINVAL;
	ret = parse_u64(p + 1, &p, UINT64_MAX, &s);
	if (ret < 0)
		return ret;
	if (*p != '\0')
		return -EINVAL;
	*inum = (uint32_t)i;
	*seq = s;
	return 0;
}

int tlsh_netns_from_key(int32_t key, uint32_t *inum, uint64_t *seq, char *err,
			size_t errlen)
{
	char *desc = NULL;
	const char *d;

	/* Permitted on a key under construction while we hold authority. */
	if (keyctl_describe_alloc(key, &desc) < 0) {
		int e = errno;

		snprintf(err, errlen, "cannot describe key %d: %s", key,
			 strerror(e));
		return -e;
	}
	/* "type;uid;gid;perm;description" */
	d = desc;
	for (int i = 0; i < 4 && d; i++) {
		d = strchr(d, ';');
		if (d)
			d++;
	}
	if (strncmp(desc, "tlsh;", 5) != 0 || !d ||
	    tlsh_netns_parse_description(d, inum, seq) < 0) {
		snprintf(err, errlen,
			 "key %d is not a tlsh key with description netns:<inum>:<seq>",
			 key);
		free(desc);
		return -EINVAL;
	}
	free(desc);
	return 0;
}

uint32_t tlsh_netns_self(void)
{
	struct stat st;

	if (stat("/proc/self/ns/net", &st) < 0)
		return 0;
	return (uint32_t)st.st_ino;
}
