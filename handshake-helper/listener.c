// SPDX-License-Identifier: GPL-2.0
/*
 * AF_TLSH listener and accept loop.
 *
 * A thread per accepted handshake: GnuTLS runs each handshake against its
 * own deadline, so one stalled peer never delays the others.  The main
 * thread only polls the listener, a signalfd and an eventfd the workers
 * poke when they finish, and keeps the idle clock: it counts from the last
 * finished handshake (or from the start), and only while none is in
 * flight.
 */
#include "listener.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
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
	pthread_mutex_t lock;
	unsigned inflight;
	uint64_t last_done;
	int evfd;
	listener_handler handler;
	void *arg;
};

struct job {
	struct lstate *ls;
	int fd;
};

static void *worker(void *a)
{
	struct job *j = a;
	struct lstate *ls = j->ls;
	uint64_t one = 1;

	ls->handler(j->fd, ls->arg);
	free(j);
	pthread_mutex_lock(&ls->lock);
	ls->inflight--;
	ls->last_done = tlsh_now_ms();
	pthread_mutex_unlock(&ls->lock);
	if (write(ls->evfd, &one, sizeof(one)) < 0) {
		/* the counter is also re-read on the next poll timeout */
	}
	return NULL;
}

static int spawn(struct lstate *ls, pthread_attr_t *attr, int fd)
{
	struct job *j = malloc(sizeof(*j));
	pthread_t t;
	int e;

	if (!j)
		return -ENOMEM;
	j->ls = ls;
	j->fd = fd;
	pthread_mutex_lock(&ls->lock);
	ls->inflight++;
	pthread_mutex_unlock(&ls->lock);
	e = pthread_create(&t, attr, worker, j);
	if (e) {
		pthread_mutex_lock(&ls->lock);
		ls->inflight--;
		pthread_mutex_unlock(&ls->lock);
		free(j);
	}
	return -e;
}

void tlsh_listener_block_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* What accept_some() leaves the accept loop with */
enum accept_state {
	ACCEPT_DRAINED,		/* nothing more queued, or the cap reached */
	ACCEPT_BACKOFF,		/* short of a resource: retry shortly */
	ACCEPT_NETNS_GONE,	/* the network namespace served is gone */
};

/*
 * Accept what is queued.  Returns an enum accept_state, or the -errno of
 * a fatal accept() error.
 */
static int accept_some(int lfd, struct lstate *ls, pthread_attr_t *attr)
{
	for (;;) {
		unsigned inflight;
		int fd, e;

		pthread_mutex_lock(&ls->lock);
		inflight = ls->inflight;
		pthread_mutex_unlock(&ls->lock);
		if (inflight >= LISTENER_MAX_INFLIGHT)
			return ACCEPT_DRAINED;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			e = errno;
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
		e = spawn(ls, attr, fd);
		if (e) {
			log_err("cannot start a handshake thread: %s", strerror(-e));
			close(fd);
			return ACCEPT_BACKOFF;
		}
	}
}

int tlsh_listener_run(int lfd, unsigned idle_s, listener_handler handler,
		      void *arg)
{
	struct lstate ls = { .handler = handler, .arg = arg };
	uint64_t idle_ms = (uint64_t)idle_s * 1000u, backoff_until = 0;
	pthread_attr_t attr;
	sigset_t set;
	int sigfd, e, stopping = 0, ret = 0;

	pthread_mutex_init(&ls.lock, NULL);
	ls.last_done = tlsh_now_ms();
	ls.evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	tlsh_listener_block_signals();
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (ls.evfd < 0 || sigfd < 0) {
		e = errno;
		log_err("eventfd/signalfd: %s", strerror(e));
		close(lfd);
		if (ls.evfd >= 0)
			close(ls.evfd);
		if (sigfd >= 0)
			close(sigfd);
		return -e;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 1024 * 1024);

	for (;;) {
		struct pollfd pfd[3];
		unsigned inflight;
		uint64_t last, now = tlsh_now_ms();
		int timeout = -1, nfds = 2, pr;

		pthread_mutex_lock(&ls.lock);
		inflight = ls.inflight;
		last = ls.last_done;
		pthread_mutex_unlock(&ls.lock);

		if (stopping) {
			if (inflight == 0)
				break;
		} else if (idle_ms && inflight == 0) {
			if (now - last >= idle_ms) {
				log_info("idle for %u s, exiting", idle_s);
				break;
			}
			timeout = (int)(idle_ms - (now - last));
		}
		pfd[0].fd = ls.evfd;
		pfd[0].events = POLLIN;
		pfd[1].fd = sigfd;
		pfd[1].events = POLLIN;
		if (!stopping && inflight < LISTENER_MAX_INFLIGHT) {
			if (now >= backoff_until) {
				pfd[2].fd = lfd;
				pfd[2].events = POLLIN;
				nfds = 3;
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
			uint64_t v;

			if (read(ls.evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				log_debug("eventfd: %s", strerror(errno));
		}
		if (pfd[1].revents) {
			struct signalfd_siginfo si;

			if (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				log_info("signal %u: no new handshakes, exiting after %u in flight",
					 si.ssi_signo, inflight);
				stopping = 1;
				/* Queued handshakes go to a fresh upcall. */
				close(lfd);
				lfd = -1;
			}
		}
		if (lfd >= 0 && nfds == 3 && pfd[2].revents) {
			int r = accept_some(lfd, &ls, &attr);

			if (r == ACCEPT_BACKOFF)
				backoff_until = tlsh_now_ms() + 100;
			if (r < 0 || r == ACCEPT_NETNS_GONE) {
				stopping = 1;
				ret = r < 0 ? r : 0;
				close(lfd);
				lfd = -1;
			}
		}
	}
	if (lfd >= 0)
		close(lfd);
	pthread_attr_destroy(&attr);
	close(sigfd);
	close(ls.evfd);
	pthread_mutex_destroy(&ls.lock);
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
