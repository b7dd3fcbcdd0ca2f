// SPDX-License-Identifier: GPL-2.0-only
/*
 * tlsh-fuzz: hostile user space for the AF_TLSH listener, the "tlsh" key
 * type and the NFS mount options, for the guest (tests/cases/090-hostile.sh).
 *
 *   tlsh-fuzz -m sock  [-s SEED] [-t SECONDS] [-n OPS] [-j WORKERS] [-u|-U]
 *   tlsh-fuzz -m keys  [-s SEED] [-t SECONDS] [-n OPS] [-u]
 *   tlsh-fuzz -m mount [-s SEED] [-t SECONDS] [-n OPS] [-a ADDR] [-X auto|on|off]
 *   tlsh-fuzz -m helper -k KEY [-s SEED] [-t SECONDS]   (as request-key's program)
 *   tlsh-fuzz -R RINGFILE          print the last operations recorded in RINGFILE
 *
 * sock:  random socket/bind/listen/accept/getsockopt/setsockopt/close (and
 *        shutdown, getname, poll, send/recv, ioctl, dup, fcntl, fork,
 *        SCM_RIGHTS, kTLS setsockopts, netns teardown) sequences on
 *        AF_TLSH sockets, by WORKERS processes of two threads each that
 *        share their descriptors (close races accept), with random
 *        lengths and random good and bad user pointers (NULL, kernel,
 *        non-canonical, unmapped, PROT_NONE, read-only, buffers that run
 *        into a guard page).
 * keys:  request_key(2), add_key(2) and keyctl(2) on the "tlsh" type with
 *        odd descriptions and huge or bad callout data / payloads; every
 *        one must fail, and no tlsh-helper may appear.
 * mount: mount(2) and fsopen/fsconfig(2) of nfs/nfs4 with malformed
 *        options (overlong, wrong types, repeated, unterminated, binary);
 *        xprtsec= values only when the kernel knows the option (-X auto
 *        probes with fsconfig and says "xprtsec: unknown" otherwise).
 *
 * helper: a hostile agent in place of tlsh-helper (see helper_main()); it
 *        logs to /tmp/artifacts/fuzz-helper.log.
 *
 * -u: the workers setuid to nobody (65534) after fork; -U: likewise, then
 * unshare a user and a network namespace (root of a namespace of its own).
 * The seed is printed first ("seed=N"); the same seed replays the same
 * sequence of calls per thread (timing between threads aside).
 * -r FILE records every operation in a shared ring (the last 1024) that
 * -R FILE prints, to see what ran before a kernel report.
 *
 * Output ends with a summary line per worker and "tlsh-fuzz: ... ops=N
 * violations=N"; violations are results the interface forbids (e.g. an
 * unprivileged bind that succeeds, a tlsh key request that succeeds,
 * getsockopt writing past optlen). Exit status: 0 no violation, 1
 * violations, 2 usage or setup error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#ifndef AF_TLSH
#define AF_TLSH 46
#endif
#ifndef SOL_TLSH
#define SOL_TLSH 288
#endif
#ifndef SOL_TLS
#define SOL_TLS 282
#endif
#ifndef TCP_ULP
#define TCP_ULP 31
#endif
/* the series' UAPI (make uapi): TLSH_* options, struct sockaddr_tlsh */
#include <linux/tls.h>

#define NFDS	16
#define PG	4096
#define BUFSZ	8192	/* the valid buffer; canary bytes follow it */
#define CANARY	64

/* ---------------------------------------------------------------- rng */

struct rng { uint64_t s; };

static uint64_t rnd(struct rng *r)
{
	/* xorshift64* */
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545F4914F6CDD1DULL;
}

static unsigned int rn(struct rng *r, unsigned int n)
{
	return n ? (unsigned int)(rnd(r) % n) : 0;
}

static int chance(struct rng *r, unsigned int pct)
{
	return rn(r, 100) < pct;
}

/* --------------------------------------------------------------- state */

static const char *mode = "sock";
static uint64_t seed;
static double seconds = 10;
static unsigned long max_ops;
static int workers = 1;
static int unpriv;		/* 1: setuid nobody, 2: + userns/netns */
static const char *mnt_addr = "192.0.2.1";
static const char *xprtsec_mode = "auto";
static int xprtsec_known;
static struct timespec t_end;
static volatile sig_atomic_t stop;

/* bad and awkward pointers, set up before the workers fork */
static char *pg_none;		/* PROT_NONE page */
static char *pg_ro;		/* read-only page */
static char *pg_gap;		/* unmapped page */
static char *pg_edge;		/* rw page followed by a PROT_NONE page */
static char *huge;		/* 2 MiB of 'A' ending in NUL */
#define HUGESZ	(2 << 20)

struct counts {
	unsigned long ops, ok, seqs, accepted, viol;
	unsigned long err[134];
};

struct worker {
	int id;
	int fds[NFDS];		/* shared by the worker's two threads */
	struct counts c[2];
	uint64_t seed;
	int user_key;		/* a "user" key in the session keyring */
	int is_root;
};

/* ---------------------------------------------------------------- ring */

#define RING_SLOTS	1024
#define RING_LINE	160
struct ring {
	unsigned long seq;
	char line[RING_SLOTS][RING_LINE];
};
static struct ring *ring;

static void note(int w, int t, const char *fmt, ...)
{
	char buf[RING_LINE - 24];
	va_list ap;
	unsigned long s;

	if (!ring)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	s = __atomic_fetch_add(&ring->seq, 1, __ATOMIC_RELAXED);
	snprintf(ring->line[s % RING_SLOTS], RING_LINE, "%010lu w%d.%d %s", s, w, t, buf);
}

static int dump_ring(const char *path)
{
	int fd = open(path, O_RDONLY);
	struct ring *r;
	unsigned long s, first;

	if (fd < 0) {
		perror(path);
		return 2;
	}
	r = mmap(NULL, sizeof(*r), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (r == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	first = r->seq > RING_SLOTS ? r->seq - RING_SLOTS : 0;
	for (s = first; s < r->seq; s++)
		printf("%.*s\n", RING_LINE, r->line[s % RING_SLOTS]);
	return 0;
}

/* ------------------------------------------------------------ helpers */

static int time_up(void)
{
	struct timespec now;

	if (stop)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > t_end.tv_sec ||
	       (now.tv_sec == t_end.tv_sec && now.tv_nsec >= t_end.tv_nsec);
}

static void count(struct counts *c, long ret)
{
	c->ops++;
	if (ret >= 0)
		c->ok++;
	else if (errno > 0 && errno < 133)
		c->err[errno]++;
	else
		c->err[133]++;
}

static void violation(struct worker *w, int t, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	w->c[t].viol++;
	printf("VIOLATION w%d.%d seed=%llu: %s\n", w->id, t,
	       (unsigned long long)w->seed, buf);
	fflush(stdout);
	note(w->id, t, "VIOLATION %s", buf);
}

/* a pointer for a user buffer of LEN bytes: mostly good, sometimes not */
static void *uptr(struct rng *r, char *good, size_t len, int *is_good)
{
	*is_good = 0;
	switch (rn(r, 20)) {
	case 0: return NULL;
	case 1: return (void *)1;
	case 2: return (void *)0xffffffff81000000UL;		/* kernel text */
	case 3: return (void *)0x0000800000000000UL;		/* non-canonical */
	case 4: return (void *)-1L;
	case 5: return pg_none + rn(r, PG);
	case 6: return pg_gap + rn(r, PG);
	case 7: return pg_ro;					/* EFAULT on write */
	case 8: return pg_edge + PG - (len > PG ? PG : len) + 1 + rn(r, len ? (unsigned int)len : 1); /* runs into the guard */
	default:
		*is_good = 1;
		return good;
	}
}

static int rlen(struct rng *r, int sane)
{
	static const int odd[] = { 0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32,
		64, 127, 128, 255, 256, 4095, 4096, 4097, 65536, 1 << 20,
		INT32_MAX, -1, -4, INT32_MIN };

	if (chance(r, 50))
		return sane;
	if (chance(r, 70))
		return odd[rn(r, sizeof(odd) / sizeof(odd[0]))];
	return (int)rnd(r);
}

static void fill(struct rng *r, char *buf, size_t len)
{
	size_t i;
	uint64_t v = 0;

	for (i = 0; i < len; i++) {
		if (!(i & 7))
			v = rnd(r);
		buf[i] = (char)(v >> ((i & 7) * 8));
	}
}

static int pick_fd(struct worker *w, struct rng *r)
{
	int i = rn(r, NFDS), j;

	for (j = 0; j < NFDS; j++) {
		int fd = __atomic_load_n(&w->fds[(i + j) % NFDS], __ATOMIC_RELAXED);

		if (fd >= 0)
			return fd;
	}
	return -1;
}

static void put_fd(struct worker *w, struct rng *r, int fd)
{
	int i = rn(r, NFDS), old;

	old = __atomic_exchange_n(&w->fds[i], fd, __ATOMIC_RELAXED);
	if (old >= 0)
		close(old);
}

static int take_fd(struct worker *w, struct rng *r)
{
	int i = rn(r, NFDS);

	return __atomic_exchange_n(&w->fds[i], -1, __ATOMIC_RELAXED);
}

static pid_t tid1;	/* the second thread: SIGALRM is passed on to it */

static void on_alarm(int sig)
{
	int e = errno;

	if (sig == SIGALRM && tid1)
		syscall(SYS_tgkill, getpid(), tid1, SIGUSR1);
	errno = e;
}

/* blocking calls are cut short: SIGALRM every 20 ms (thread 0), passed
 * on as SIGUSR1 to thread 1; no SA_RESTART */
static void start_timer(void)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerval it = { { 0, 20000 }, { 0, 20000 } };

	sigaction(SIGALRM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
}

/* in a child the fuzzer forks: its own timer, no second thread */
static void child_timer(void)
{
	sigset_t s;

	tid1 = 0;
	sigemptyset(&s);
	sigaddset(&s, SIGALRM);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
	start_timer();
}

/* ------------------------------------------------------------ sock mode */

static int rnd_level(struct rng *r)
{
	static const int lv[] = { SOL_TLSH, SOL_TLSH, SOL_TLSH, SOL_SOCKET,
		SOL_SOCKET, IPPROTO_TCP, IPPROTO_TCP, SOL_TLS, IPPROTO_IP,
		IPPROTO_IPV6, 0, 287, 289, -1 };

	if (chance(r, 5))
		return (int)rnd(r);
	return lv[rn(r, sizeof(lv) / sizeof(lv[0]))];
}

static int rnd_optname(struct rng *r, int level)
{
	static const int so[] = { SO_TYPE, SO_ERROR, SO_RCVBUF, SO_SNDBUF,
		SO_PEERCRED, SO_PEERNAME, SO_COOKIE, SO_LINGER, SO_RCVTIMEO_NEW,
		SO_SNDTIMEO_NEW, SO_KEEPALIVE, SO_ATTACH_FILTER, SO_DETACH_FILTER,
		SO_BINDTODEVICE, SO_MARK, SO_PEEK_OFF, SO_ACCEPTCONN, SO_DOMAIN,
		SO_PROTOCOL, SO_PEERSEC, SO_ZEROCOPY, SO_TIMESTAMP_NEW, SO_BUSY_POLL };
	static const int tcp[] = { TCP_INFO, TCP_ULP, TCP_ULP, TCP_NODELAY,
		TCP_CONGESTION, TCP_MAXSEG, TCP_REPAIR, TCP_USER_TIMEOUT,
		TCP_CORK, TCP_MD5SIG, TCP_ZEROCOPY_RECEIVE, TCP_FASTOPEN_CONNECT };

	if (chance(r, 5))
		return (int)rnd(r);
	switch (level) {
	case SOL_TLSH: return (int)rn(r, 10);
	case SOL_SOCKET: return so[rn(r, sizeof(so) / sizeof(so[0]))];
	case IPPROTO_TCP: return tcp[rn(r, sizeof(tcp) / sizeof(tcp[0]))];
	case SOL_TLS: return 1 + (int)rn(r, 6);
	default: return (int)rn(r, 80);
	}
}

/* kTLS crypto_info: a plausible header, random rest */
static size_t ktls_info(struct rng *r, char *buf)
{
	static const unsigned short ver[] = { 0x0303, 0x0304, 0x0302, 0 };
	static const size_t sz[] = { 40, 56, 40, 56, 40, 72, 4, 0 };
	unsigned short cipher = 51 + rn(r, 7);	/* 51..57 */
	size_t n = sz[rn(r, 8)];

	fill(r, buf, 80);
	memcpy(buf, &ver[rn(r, 4)], 2);
	memcpy(buf + 2, &cipher, 2);
	return chance(r, 20) ? rn(r, 90) : n;
}

static const char *opname[] = { "socket", "bind", "listen", "accept",
	"getsockopt", "setsockopt", "close", "shutdown", "getname", "poll",
	"recvmsg", "sendmsg", "ioctl", "dup", "fcntl", "connect", "fork",
	"scm_rights", "netns", "ktls" };

static void sock_op(struct worker *w, int t, struct rng *r)
{
	struct counts *c = &w->c[t];
	char buf[BUFSZ + CANARY], *p;
	int g, fd, op, ret = -1, len;
	socklen_t sl;

	/* weights: socket/bind/listen/accept/sockopts most often */
	static const unsigned char ops[] = { 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3,
		3, 4, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 7, 8, 9, 10, 11, 12, 13,
		14, 15, 16, 17, 18, 19, 19 };

	op = ops[rn(r, sizeof(ops))];
	if (op == 16 && !chance(r, 10))
		op = 4;
	if (op == 18 && !chance(r, 5))
		op = 2;
	fd = pick_fd(w, r);
	errno = 0;
	switch (op) {
	case 0: {	/* socket */
		static const int types[] = { SOCK_STREAM, SOCK_STREAM, SOCK_STREAM,
			SOCK_DGRAM, SOCK_SEQPACKET, SOCK_RAW, 0, 11 };
		int type = types[rn(r, 8)], proto = 0;

		if (chance(r, 30))
			type |= SOCK_NONBLOCK;
		if (chance(r, 30))
			type |= SOCK_CLOEXEC;
		if (chance(r, 10))
			proto = chance(r, 50) ? (int)rn(r, 300) : (int)rnd(r);
		ret = socket(AF_TLSH, type, proto);
		note(w->id, t, "socket(46, %#x, %d) = %d e%d", type, proto, ret, errno);
		if (ret >= 0) {
			c->seqs++;
			put_fd(w, r, ret);
		}
		break;
	}
	case 1: {	/* bind */
		struct sockaddr_tlsh *sa = (void *)buf;

		memset(buf, 0, sizeof(buf));
		sa->tlsh_family = chance(r, 85) ? AF_TLSH : (unsigned short)rnd(r);
		if (chance(r, 10))
			sa->tlsh_reserved = (unsigned short)rnd(r);
		switch (rn(r, 8)) {
		case 0: case 1: case 2: sa->tlsh_key = 0; break;
		case 3: sa->tlsh_key = w->user_key; break;
		case 4: sa->tlsh_key = -1 - (int)rn(r, 8); break;	/* KEY_SPEC_* */
		case 5: sa->tlsh_key = (int)rn(r, 1000); break;
		default: sa->tlsh_key = (int)rnd(r); break;
		}
		if (chance(r, 10))
			fill(r, (char *)sa->tlsh_zero, 8);
		if (chance(r, 5))
			fill(r, buf + sizeof(*sa), 128);
		len = rlen(r, sizeof(*sa));
		p = uptr(r, buf, sizeof(*sa), &g);
		ret = bind(fd, (struct sockaddr *)p, (socklen_t)len);
		note(w->id, t, "bind(%d, fam=%u res=%u key=%d %s, %d) = %d e%d", fd,
		     sa->tlsh_family, sa->tlsh_reserved, sa->tlsh_key,
		     g ? "good" : "bad", len, ret, errno);
		if (ret == 0 && !w->is_root && unpriv == 1)
			violation(w, t, "unprivileged bind(key=%d) succeeded", sa->tlsh_key);
		if (ret == 0 && sa->tlsh_key != 0)
			violation(w, t, "bind to key %d succeeded without authority", sa->tlsh_key);
		break;
	}
	case 2: {	/* listen */
		static const int bl[] = { 0, 1, 16, 128, -1, INT32_MAX, INT32_MIN };

		len = bl[rn(r, 7)];
		ret = listen(fd, len);
		note(w->id, t, "listen(%d, %d) = %d e%d", fd, len, ret, errno);
		if (ret == 0 && !w->is_root && unpriv == 1)
			violation(w, t, "unprivileged listen succeeded");
		break;
	}
	case 3: {	/* accept: blocking ones are cut short by SIGALRM */
		int flags = 0;
		socklen_t *lp;

		if (chance(r, 50))
			flags |= SOCK_NONBLOCK;	/* of the new socket only */
		if (chance(r, 20))
			flags |= SOCK_CLOEXEC;
		if (chance(r, 3))
			flags |= (int)rnd(r);
		sl = (socklen_t)rlen(r, 128);
		memcpy(buf + 256, &sl, sizeof(sl));
		p = uptr(r, buf, 128, &g);
		lp = chance(r, 30) ? NULL : (socklen_t *)uptr(r, buf + 256, 4, &g);
		if (chance(r, 30))
			p = NULL, lp = NULL;
		ret = accept4(fd, (struct sockaddr *)p, lp, flags);
		note(w->id, t, "accept4(%d, %p, %p, %#x) = %d e%d", fd, (void *)p,
		     (void *)lp, flags, ret, errno);
		if (ret >= 0) {
			c->accepted++;
			if (!w->is_root && unpriv == 1)
				violation(w, t, "unprivileged accept returned fd %d", ret);
			put_fd(w, r, ret);
		}
		break;
	}
	case 4: {	/* getsockopt, checking it writes no further than optlen */
		int level = rnd_level(r), name = rnd_optname(r, level), given;
		socklen_t *lp;
		int lgood, vgood;

		memset(buf, 0xa5, sizeof(buf));
		given = rlen(r, chance(r, 50) ? 4 : 256);
		memcpy(buf + BUFSZ - 8, &given, sizeof(given));
		lp = (socklen_t *)uptr(r, buf + BUFSZ - 8, 4, &lgood);
		p = uptr(r, buf, 256, &vgood);
		ret = getsockopt(fd, level, name, p, lp);
		note(w->id, t, "getsockopt(%d, %d, %d, %s, %s=%d) = %d e%d", fd, level,
		     name, vgood ? "good" : "bad", lgood ? "good" : "bad", given,
		     ret, errno);
		if (vgood && lgood && given >= 0 && given < BUFSZ - 8) {
			int k;

			for (k = given; k < BUFSZ - 8; k++)
				if ((unsigned char)buf[k] != 0xa5)
					break;
			if (k < BUFSZ - 8)
				violation(w, t, "getsockopt(%d, %d) with optlen %d wrote byte %d (ret %d)",
					  level, name, given, k, ret);
			for (k = BUFSZ - 4; k < BUFSZ + CANARY; k++)
				if ((unsigned char)buf[k] != 0xa5)
					violation(w, t, "getsockopt(%d, %d) wrote past its buffers", level, name);
			if (ret == 0 && level == SOL_TLSH) {
				int out;

				memcpy(&out, buf + BUFSZ - 8, sizeof(out));
				if (out < 0 || out > given)
					violation(w, t, "getsockopt(SOL_TLSH, %d) returned optlen %d for a %d-byte buffer",
						  name, out, given);
			}
		}
		break;
	}
	case 5: {	/* setsockopt */
		int level = rnd_level(r), name = rnd_optname(r, level), v;

		fill(r, buf, 512);
		len = rlen(r, 4);
		if (level == SOL_TLSH && chance(r, 60)) {
			static const int vals[] = { 0, 1, EKEYREJECTED, EACCES,
				ETIMEDOUT, -1, -4095, 4095, 4096, INT32_MAX, INT32_MIN };

			name = TLSH_STATUS;
			v = vals[rn(r, 11)];
			memcpy(buf, &v, sizeof(v));
		}
		if (level == IPPROTO_TCP && name == TCP_ULP) {
			static const char *ulp[] = { "tls", "tls", "tls\n", "", "espintcp", "mptcp" };

			strcpy(buf, ulp[rn(r, 6)]);
			len = chance(r, 80) ? (int)strlen(buf) : rlen(r, 3);
		}
		p = uptr(r, buf, (size_t)(len > 0 && len < 512 ? len : 4), &g);
		ret = setsockopt(fd, level, name, p, (socklen_t)len);
		note(w->id, t, "setsockopt(%d, %d, %d, %s, %d) = %d e%d", fd, level,
		     name, g ? "good" : "bad", len, ret, errno);
		break;
	}
	case 6:		/* close */
		fd = take_fd(w, r);
		ret = fd >= 0 ? close(fd) : -1;
		note(w->id, t, "close(%d) = %d e%d", fd, ret, errno);
		break;
	case 7:
		len = chance(r, 90) ? (int)rn(r, 3) : (int)rnd(r);
		ret = shutdown(fd, len);
		note(w->id, t, "shutdown(%d, %d) = %d e%d", fd, len, ret, errno);
		break;
	case 8: {
		socklen_t *lp;
		int peer = chance(r, 50);

		sl = (socklen_t)rlen(r, 128);
		memcpy(buf + 256, &sl, sizeof(sl));
		p = uptr(r, buf, 128, &g);
		lp = (socklen_t *)uptr(r, buf + 256, 4, &g);
		ret = peer ? getpeername(fd, (struct sockaddr *)p, lp) :
			     getsockname(fd, (struct sockaddr *)p, lp);
		note(w->id, t, "get%sname(%d) = %d e%d", peer ? "peer" : "sock", fd, ret, errno);
		break;
	}
	case 9: {
		struct pollfd pf = { .fd = fd, .events = (short)rnd(r) };

		ret = poll(&pf, 1, 0);
		note(w->id, t, "poll(%d, %#x) = %d rev=%#x e%d", fd, pf.events, ret,
		     pf.revents, errno);
		break;
	}
	case 10:
	case 11: {	/* recvmsg / sendmsg */
		struct iovec iov[2];
		struct msghdr m = { 0 };
		int flags = MSG_DONTWAIT;

		iov[0].iov_base = uptr(r, buf, 512, &g);
		iov[0].iov_len = (size_t)rlen(r, 512);
		iov[1].iov_base = uptr(r, buf + 1024, 512, &g);
		iov[1].iov_len = rn(r, 600);
		m.msg_iov = chance(r, 90) ? iov : (struct iovec *)uptr(r, (char *)iov, sizeof(iov), &g);
		m.msg_iovlen = 1 + rn(r, 2);
		if (chance(r, 30)) {
			m.msg_control = uptr(r, buf + 4096, 256, &g);
			m.msg_controllen = (size_t)rlen(r, 256);
			if (op == 11 && g)
				fill(r, buf + 4096, 256);
		}
		if (chance(r, 30))
			flags |= (int)(rnd(r) & (MSG_PEEK | MSG_OOB | MSG_TRUNC |
						 MSG_WAITALL | MSG_ERRQUEUE |
						 MSG_MORE | MSG_NOSIGNAL | MSG_EOR));
		flags |= MSG_NOSIGNAL;
		ret = op == 10 ? (int)recvmsg(fd, &m, flags) : (int)sendmsg(fd, &m, flags);
		note(w->id, t, "%s(%d, %#x) = %d e%d", op == 10 ? "recvmsg" : "sendmsg",
		     fd, flags, ret, errno);
		break;
	}
	case 12: {
		static const unsigned long req[] = { FIONREAD, FIONBIO, TIOCOUTQ,
			SIOCATMARK, 0x8906 /* SIOCGSTAMP_OLD */, 0x8927 /* SIOCGIFHWADDR */,
			0x894C /* SIOCGSKNS */, FIOASYNC, 0x5451 /* FIOCLEX */ };
		unsigned long rq = chance(r, 90) ? req[rn(r, 9)] : rnd(r);

		fill(r, buf, 256);
		ret = ioctl(fd, rq, uptr(r, buf, 64, &g));
		note(w->id, t, "ioctl(%d, %#lx) = %d e%d", fd, rq, ret, errno);
		if (ret >= 0 && rq == 0x894C)	/* a netns fd */
			close(ret);
		break;
	}
	case 13:
		ret = dup(fd);
		note(w->id, t, "dup(%d) = %d e%d", fd, ret, errno);
		if (ret >= 0)
			put_fd(w, r, ret);
		break;
	case 14:
		ret = fcntl(fd, F_SETFL, chance(r, 50) ? O_NONBLOCK : 0);
		note(w->id, t, "fcntl(%d, F_SETFL) = %d e%d", fd, ret, errno);
		break;
	case 15: {
		struct sockaddr_in6 *a = (void *)buf;

		fill(r, buf, 128);
		a->sin6_family = chance(r, 50) ? AF_TLSH : (chance(r, 50) ? AF_INET : AF_INET6);
		len = rlen(r, 16);
		ret = connect(fd, (struct sockaddr *)uptr(r, buf, 16, &g), (socklen_t)len);
		note(w->id, t, "connect(%d, fam=%d, %d) = %d e%d", fd, a->sin6_family, len, ret, errno);
		break;
	}
	case 16: {	/* a child that inherits the descriptors and plays with them */
		pid_t pid;

		if (t)
			break;
		pid = fork();
		if (pid == 0) {
			struct rng cr = { rnd(r) | 1 };
			int i;

			child_timer();
			for (i = 0; i < 40 && !time_up(); i++)
				sock_op(w, 1, &cr);
			_exit(0);
		}
		ret = pid > 0 ? 0 : -1;
		if (pid > 0) {
			if (chance(r, 50))
				kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		note(w->id, t, "fork = %d e%d", (int)pid, errno);
		break;
	}
	case 17: {	/* an AF_TLSH descriptor in flight over AF_UNIX */
		int sv[2];
		struct msghdr m = { 0 };
		struct iovec iov = { .iov_base = buf, .iov_len = 1 };
		union { struct cmsghdr h; char b[CMSG_SPACE(sizeof(int))]; } u;
		struct cmsghdr *cm;

		if (fd < 0 || socketpair(AF_UNIX, SOCK_DGRAM, 0, sv))
			break;
		memset(&u, 0, sizeof(u));
		m.msg_iov = &iov;
		m.msg_iovlen = 1;
		m.msg_control = u.b;
		m.msg_controllen = sizeof(u.b);
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
		ret = (int)sendmsg(sv[0], &m, MSG_DONTWAIT);
		if (ret > 0 && chance(r, 30)) {		/* also send the pair's own end: a cycle */
			memcpy(CMSG_DATA(cm), &sv[1], sizeof(int));
			sendmsg(sv[1], &m, MSG_DONTWAIT);
		}
		if (ret > 0 && chance(r, 50)) {
			memset(&u, 0, sizeof(u));
			m.msg_controllen = sizeof(u.b);
			if (recvmsg(sv[1], &m, MSG_DONTWAIT) > 0 &&
			    (cm = CMSG_FIRSTHDR(&m)) && cm->cmsg_type == SCM_RIGHTS) {
				int nfd;

				memcpy(&nfd, CMSG_DATA(cm), sizeof(int));
				put_fd(w, r, nfd);
			}
		}
		note(w->id, t, "scm_rights(%d) = %d e%d", fd, ret, errno);
		close(sv[0]);
		close(sv[1]);
		break;
	}
	case 18: {	/* a listener in a namespace that goes away */
		pid_t pid;

		if (t || (!w->is_root && unpriv != 2))
			break;
		pid = fork();
		if (pid == 0) {
			struct rng cr = { rnd(r) | 1 };
			int i, l;

			child_timer();
			if (unshare(CLONE_NEWNET))
				_exit(1);
			l = socket(AF_TLSH, SOCK_STREAM, 0);
			if (chance(&cr, 50))
				listen(l, 4);
			if (chance(&cr, 50)) {
				for (i = 0; i < NFDS; i++)
					w->fds[i] = -1;
				w->fds[0] = l;
				for (i = 0; i < 30; i++)
					sock_op(w, 1, &cr);
			}
			_exit(0);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
		ret = pid > 0 ? 0 : -1;
		note(w->id, t, "netns child = %d e%d", (int)pid, errno);
		break;
	}
	case 19: {	/* kTLS on whatever is behind the descriptor */
		size_t n;

		strcpy(buf, "tls");
		ret = setsockopt(fd, IPPROTO_TCP, TCP_ULP, buf, 3);
		n = ktls_info(r, buf + 128);
		ret = setsockopt(fd, SOL_TLS, chance(r, 50) ? 1 : 2,
				 chance(r, 90) ? buf + 128 : uptr(r, buf + 128, n, &g),
				 (socklen_t)n);
		note(w->id, t, "ktls(%d, %zu) = %d e%d", fd, n, ret, errno);
		break;
	}
	}
	count(c, ret);
	(void)opname;
}

/* ------------------------------------------------------------ keys mode */

static long sys_request_key(const char *type, const char *desc,
			    const char *callout, int dest)
{
	return syscall(SYS_request_key, type, desc, callout, dest);
}

static long sys_add_key(const char *type, const char *desc, const void *pl,
			size_t plen, int ring_id)
{
	return syscall(SYS_add_key, type, desc, pl, plen, ring_id);
}

/* an odd key description into BUF (at least 8192 bytes) */
static const char *odd_desc(struct rng *r, char *buf, int *is_good)
{
	static const char *fixed[] = { "", "netns:", "netns:1:1", "netns:0:0",
		"netns:-1:-1", "netns:4026531840:1", "netns:4026531840:",
		"netns:18446744073709551616:1", "netns:1:1:1", "netns::", ":",
		"netns", "NETNS:1:1", "netns:1:1\n", "netns: 1: 1", "%k %s %n %x",
		"../../../etc/passwd", "netns:0x10:0x10", "netns:1:99999999999999999999",
		"\xff\xfe\xfd", "netns:\t1:2", "*", "tlsh", "netns:1:1 --foreground" };
	int n;

	*is_good = 1;
	switch (rn(r, 6)) {
	case 0: case 1:
		return fixed[rn(r, sizeof(fixed) / sizeof(fixed[0]))];
	case 2:		/* long: 4095 is the longest description, 4096 too long */
		n = chance(r, 50) ? 4094 + (int)rn(r, 4) : 1 + (int)rn(r, 8000);
		memset(buf, chance(r, 50) ? 'n' : ':', (size_t)n);
		memcpy(buf, "netns:", 6);
		buf[n] = 0;
		return buf;
	case 3:		/* random bytes */
		n = (int)rn(r, 300);
		fill(r, buf, (size_t)n);
		buf[n] = 0;
		return buf;
	case 4:		/* unterminated up to the guard page */
		n = 1 + (int)rn(r, 64);
		memset(pg_edge + PG - n, 'x', (size_t)n);
		*is_good = 0;
		return pg_edge + PG - n;
	default:
		snprintf(buf, 64, "netns:%u:%u", (unsigned int)rnd(r), (unsigned int)rn(r, 10));
		return buf;
	}
}

static const char *odd_callout(struct rng *r, char *buf)
{
	size_t n;

	switch (rn(r, 8)) {
	case 0: return NULL;
	case 1: return "";
	case 2: return "x";
	case 3:		/* around the PAGE_SIZE limit of strndup_user() */
		n = 4090 + rn(r, 12);
		return huge + HUGESZ - 1 - n;
	case 4:		/* huge */
		n = 4096 + rn(r, HUGESZ - 4097);
		return huge + HUGESZ - 1 - n;
	case 5:
		return pg_none;
	case 6:
		n = 1 + rn(r, 64);
		memset(pg_edge + PG - n, 'c', n);
		return pg_edge + PG - n;
	default:
		snprintf(buf, 128, "%%k %%c %u --foreground", (unsigned int)rnd(r));
		return buf;
	}
}

static void keys_op(struct worker *w, int t, struct rng *r)
{
	static char dbuf[9000], cbuf[256];
	struct counts *c = &w->c[t];
	const char *type = "tlsh", *desc, *co;
	int g, dest, op = (int)rn(r, 10);
	long ret = -1;

	static const int dests[] = { 0, -1, -2, -3, -4, -5, -6, -7, -8, 12345 };
	dest = dests[rn(r, 10)];
	desc = odd_desc(r, dbuf, &g);
	if (chance(r, 5)) {	/* a bad type pointer or an overlong / odd type name */
		static const char *types[] = { "tlsh\n", "TLSH", "tlsh ", ".tlsh",
			"tlshtlshtlshtlshtlshtlshtlshtlshtlsh" };
		type = chance(r, 50) ? types[rn(r, 5)] : (const char *)uptr(r, (char *)"tlsh", 5, &g);
	}
	errno = 0;
	switch (op) {
	case 0: case 1: case 2: case 3: case 4:
		co = odd_callout(r, cbuf);
		ret = sys_request_key(type, desc, co, dest);
		note(w->id, t, "request_key(%.8s, %.24s, %s, %d) = %ld e%d",
		     type && (uintptr_t)type > 4096 && type != pg_none ? "..." : "bad",
		     g ? "desc" : "bad", co ? "callout" : "NULL", dest, ret, errno);
		break;
	case 5: case 6: {
		size_t plen;

		switch (rn(r, 4)) {
		case 0: plen = 0; break;
		case 1: plen = 1 + rn(r, 64); break;
		case 2: plen = (1 << 20) - 1 + rn(r, 3); break;	/* around the 1 MiB limit */
		default: plen = rn(r, HUGESZ); break;
		}
		ret = sys_add_key(type, desc, chance(r, 80) ? huge : (void *)pg_none, plen, dest);
		note(w->id, t, "add_key(tlsh, %zu, %d) = %ld e%d", plen, dest, ret, errno);
		break;
	}
	case 7:		/* search never upcalls; it must not find one either */
		ret = syscall(SYS_keyctl, 10 /* KEYCTL_SEARCH */, -3, type, desc, 0);
		note(w->id, t, "keyctl_search(tlsh) = %ld e%d", ret, errno);
		break;
	case 8:		/* authority over a random key */
		ret = syscall(SYS_keyctl, 16 /* KEYCTL_ASSUME_AUTHORITY */,
			      chance(r, 50) ? (long)rn(r, 2000) : (long)(int)rnd(r));
		note(w->id, t, "keyctl_assume_authority = %ld e%d", ret, errno);
		if (ret >= 0)
			syscall(SYS_keyctl, 16, 0);
		ret = -1;
		break;
	default:	/* instantiate / negate a random serial */
		ret = syscall(SYS_keyctl, chance(r, 50) ? 12 /* INSTANTIATE */ : 13 /* NEGATE */,
			      (long)rn(r, 2000), huge, (long)rn(r, 8192), -3);
		note(w->id, t, "keyctl_instantiate/negate = %ld e%d", ret, errno);
		ret = -1;
		break;
	}
	if (op <= 7 && ret >= 0 && type && !strcmp(type, "tlsh"))
		violation(w, t, "%s of type tlsh succeeded (key %ld)",
			  op <= 4 ? "request_key" : op <= 6 ? "add_key" : "keyctl_search", ret);
	count(c, ret);
}

/* ----------------------------------------------------------- mount mode */

static const char *nfs_opts[] = { "vers", "nfsvers", "proto", "port", "addr",
	"clientaddr", "timeo", "retrans", "rsize", "wsize", "sec", "mountport",
	"mountproto", "mountaddr", "mountvers", "nconnect", "max_connect",
	"lookupcache", "local_lock", "acregmin", "acdirmax", "minorversion",
	"namlen", "mounthost", "fsc", "write", "source", "soft", "hard",
	"softreval", "tcp", "udp", "rdma", "nolock", "sharecache", "resvport",
	"migration", "fg", "bg", "intr", "posix", "cto", "ac", "acl", "rdirplus",
	"trunkdiscovery", "xprtsec", "xprtsec" };

static const char *odd_value(struct rng *r, char *buf, size_t room)
{
	static const char *vals[] = { "", "4.2", "4.1", "4", "3", "2", "5",
		"4.3", "tcp", "tcp6", "udp", "rdma", "0", "-1", "4294967296",
		"18446744073709551617", "0x10", "1e9", "abc", "192.0.2.1",
		"2001:db8::1", "[2001:db8::1]", "none", "tls", "mtls", "krb5p",
		"sys:krb5", "all", "%s%n", "=", ",", "\xff", "99999999999999999999999" };
	size_t n;

	if (chance(r, 80))
		return vals[rn(r, sizeof(vals) / sizeof(vals[0]))];
	n = 1 + rn(r, (unsigned int)room - 1);		/* overlong */
	memset(buf, chance(r, 50) ? '9' : 'a', n);
	buf[n] = 0;
	return buf;
}

/* a text option string for mount(2), into OUT (PG bytes) */
static void mount_text(struct rng *r, char *out)
{
	char vbuf[PG];
	size_t used = 0;
	int i, n = 1 + (int)rn(r, 12);

	out[0] = 0;
	if (chance(r, 70))
		used += (size_t)snprintf(out, PG, "vers=%s,addr=%s,",
					 chance(r, 50) ? "4.2" : "3", mnt_addr);
	for (i = 0; i < n && used < PG - 64; i++) {
		const char *k = nfs_opts[rn(r, sizeof(nfs_opts) / sizeof(nfs_opts[0]))];
		int m;

		if (!xprtsec_known && !strcmp(k, "xprtsec"))
			k = "xprtsec_unprobed";	/* still an unknown option */
		if (chance(r, 15))
			m = snprintf(out + used, PG - used, "%s,", k);
		else
			m = snprintf(out + used, PG - used, "%s=%s,", k,
				     odd_value(r, vbuf, PG - used - strlen(k) - 2 > 2 ? PG - used - strlen(k) - 2 : 2));
		if (m < 0 || (size_t)m >= PG - used)
			break;
		used += (size_t)m;
	}
	if (xprtsec_known && chance(r, 40)) {	/* repeated, conflicting */
		static const char *xs[] = { "xprtsec=tls,xprtsec=none,",
			"xprtsec=none,xprtsec=mtls,", "xprtsec=,", "xprtsec,",
			"xprtsec=TLS,", "xprtsec=tls,sec=krb5,", "xprtsec=tls,proto=udp,",
			"xprtsec=mtls,xprtsec=mtls,xprtsec=mtls,", "xprtsec=tls\xff," };
		const char *x = xs[rn(r, 9)];

		if (used + strlen(x) < PG - 1) {
			memcpy(out + used, x, strlen(x) + 1);
			used += strlen(x);
		}
	}
	/* always soft and short: a mount that gets through must not hang */
	if (used + 32 < PG)
		snprintf(out + used, PG - used, "soft,timeo=5,retrans=1");
}

static int probe_xprtsec(void)
{
	char log[512];
	int fd, ret, known = 0;
	ssize_t n;

	fd = fsopen("nfs", FSOPEN_CLOEXEC);
	if (fd < 0)
		return 0;
	ret = fsconfig(fd, FSCONFIG_SET_STRING, "xprtsec", "none", 0);
	if (ret == 0)
		known = 1;
	while ((n = read(fd, log, sizeof(log) - 1)) > 0) {
		log[n] = 0;
		if (strstr(log, "xprtsec") && !strstr(log, "nknown"))
			known = 1;
	}
	close(fd);
	return known;
}

static void mount_op(struct worker *w, int t, struct rng *r)
{
	static char data[2 * PG], src[PG + 64];
	struct counts *c = &w->c[t];
	const char *type = chance(r, 50) ? "nfs" : "nfs4";
	int ret = -1, g;
	unsigned long flags = rnd(r) & (MS_RDONLY | MS_NOSUID | MS_NODEV |
					MS_NOEXEC | MS_SYNCHRONOUS | MS_SILENT |
					MS_NOATIME);
	const char *target = "/tmp/tlsh-fuzz-mnt";

	errno = 0;
	switch (rn(r, 5)) {
	case 0: case 1: {	/* mount(2) with text options */
		void *d = data;

		mount_text(r, data);
		if (chance(r, 10)) {	/* a full page without NUL, then a guard */
			memset(pg_edge, 'a', PG);
			memcpy(pg_edge, "vers=4.2,addr=", 14);
			d = pg_edge;
		}
		switch (rn(r, 6)) {
		case 0: snprintf(src, sizeof(src), "%s:/srv/export", mnt_addr); break;
		case 1: snprintf(src, sizeof(src), "server.test:/srv/export"); break;
		case 2: snprintf(src, sizeof(src), "[2001:db8::1]:/srv/export"); break;
		case 3: memset(src, 'h', PG); src[PG] = 0; src[100] = ':'; break;
		case 4: snprintf(src, sizeof(src), "%s", chance(r, 50) ? ":" : "nocolon"); break;
		default: snprintf(src, sizeof(src), "%s:", mnt_addr); break;
		}
		ret = mount(src, target, type, flags, d);
		note(w->id, t, "mount(%.20s, %s, %.60s) = %d e%d", src, type,
		     d == data ? data : "<unterminated page>", ret, errno);
		break;
	}
	case 2: {		/* mount(2) with binary (legacy struct) data */
		int ver = chance(r, 80) ? 1 + (int)rn(r, 7) : (int)rnd(r);

		fill(r, data, PG);
		memcpy(data, &ver, sizeof(ver));
		if (chance(r, 50)) {	/* nfs4_mount_data: fill in plausible pointers */
			void *ptrs[3];
			int k;

			for (k = 0; k < 3; k++)
				ptrs[k] = uptr(r, (char *)"192.0.2.1", 10, &g);
			memcpy(data + 8, ptrs, sizeof(ptrs));
		}
		ret = mount("x:/srv/export", target, type, flags, data);
		note(w->id, t, "mount(binary v%d, %s) = %d e%d", ver, type, ret, errno);
		break;
	}
	default: {		/* fsopen/fsconfig: wrong types, repeats, overlong */
		char vbuf[PG], log[512];
		int fd = fsopen(type, FSOPEN_CLOEXEC), i, n = 1 + (int)rn(r, 10);

		if (fd < 0) {
			ret = -1;
			break;
		}
		for (i = 0; i < n; i++) {
			const char *k = nfs_opts[rn(r, sizeof(nfs_opts) / sizeof(nfs_opts[0]))];
			unsigned int cmd = rn(r, 6);

			if (!xprtsec_known && !strcmp(k, "xprtsec"))
				k = chance(r, 50) ? "source" : "addr";
			switch (cmd) {
			case 0:	/* FSCONFIG_SET_FLAG */
				ret = fsconfig(fd, FSCONFIG_SET_FLAG, k, NULL, 0);
				break;
			case 1:	/* FSCONFIG_SET_BINARY */
				fill(r, vbuf, 256);
				ret = fsconfig(fd, FSCONFIG_SET_BINARY, k, vbuf, (int)rn(r, 300));
				break;
			case 2:	/* FSCONFIG_SET_FD */
				ret = fsconfig(fd, FSCONFIG_SET_FD, k, NULL, chance(r, 50) ? 0 : fd);
				break;
			case 3:	/* FSCONFIG_SET_PATH */
				ret = fsconfig(fd, FSCONFIG_SET_PATH, k, "/tmp", AT_FDCWD);
				break;
			default:
				ret = fsconfig(fd, FSCONFIG_SET_STRING, k,
					       chance(r, 5) ? (const char *)uptr(r, (char *)"x", 2, &g) :
					       odd_value(r, vbuf, PG - 1), 0);
				break;
			}
			note(w->id, t, "fsconfig(%s, cmd %u, %s) = %d e%d", type, cmd, k, ret, errno);
		}
		if (chance(r, 40)) {
			fsconfig(fd, FSCONFIG_SET_STRING, "source",
				 chance(r, 50) ? "127.0.0.1:/x" : "192.0.2.1:/srv/export", 0);
			if (chance(r, 50))
				fsconfig(fd, FSCONFIG_SET_STRING, "addr", "127.0.0.1", 0);
			fsconfig(fd, FSCONFIG_SET_FLAG, "soft", NULL, 0);
			fsconfig(fd, FSCONFIG_SET_STRING, "timeo", "5", 0);
			fsconfig(fd, FSCONFIG_SET_STRING, "retrans", "1", 0);
			ret = fsconfig(fd, FSCONFIG_CMD_CREATE, NULL, NULL, 0);
			note(w->id, t, "fsconfig(CMD_CREATE) = %d e%d", ret, errno);
		}
		while (read(fd, log, sizeof(log)) > 0)
			;
		close(fd);
		break;
	}
	}
	if (ret == 0 && (!strcmp(mode, "mount")))
		umount2(target, MNT_DETACH);
	count(c, ret);
}

/* ----------------------------------------------------------- helper mode */

/*
 * A hostile agent: run by request-key in place of tlsh-helper
 * ("create tlsh * * /usr/local/bin/tlsh-fuzz -m helper -k %k"), it takes
 * the authority over the key and then does a random mix of what a helper
 * may do, wrong and right: bind to the key, to another key or to none,
 * listen, instantiate with odd payloads, negate, reject, accept and
 * close handshakes with or without a status, drop the authority, fork and
 * leave, die by SIGKILL at any point.
 */
static int helper_main(long key)
{
	struct rng r = { (seed ^ ((uint64_t)key * 0x9E3779B97F4A7C15ULL)) | 1 };
	int fd = -1, hs[8], nhs = 0, i, steps = 2 + (int)rn(&r, 14), g;
	char buf[512];
	FILE *log = fopen("/tmp/artifacts/fuzz-helper.log", "a");

	for (i = 0; i < 8; i++)
		hs[i] = -1;
	child_timer();
#define HLOG(...) do { if (log) { fprintf(log, "key %ld: ", key); fprintf(log, __VA_ARGS__); fputc('\n', log); fflush(log); } } while (0)
	HLOG("start seed=%llu steps=%d", (unsigned long long)seed, steps);
	if (!chance(&r, 5))
		HLOG("assume_authority = %ld", syscall(SYS_keyctl, 16, key));
	for (i = 0; i < steps && !time_up(); i++) {
		long ret = 0;
		unsigned int what = rn(&r, 13);

		errno = 0;
		switch (what) {
		case 0: case 1: {	/* socket + bind */
			struct sockaddr_tlsh sa = { .tlsh_family = AF_TLSH };

			if (fd < 0)
				fd = socket(AF_TLSH, SOCK_STREAM, 0);
			switch (rn(&r, 6)) {
			case 0: case 1: case 2: sa.tlsh_key = (int)key; break;
			case 3: sa.tlsh_key = (int)key + 1; break;
			case 4: sa.tlsh_key = 0; break;
			default: sa.tlsh_key = -1 - (int)rn(&r, 8); break;
			}
			ret = bind(fd, (struct sockaddr *)&sa, (socklen_t)rlen(&r, sizeof(sa)));
			HLOG("bind(key %d) = %ld e%d", sa.tlsh_key, ret, errno);
			break;
		}
		case 2: case 3:
			if (fd < 0)
				fd = socket(AF_TLSH, SOCK_STREAM, 0);
			ret = listen(fd, chance(&r, 80) ? 16 : (int)rnd(&r));
			HLOG("listen = %ld e%d", ret, errno);
			break;
		case 4: case 5: {	/* instantiate with an odd payload */
			static const size_t lens[] = { 0, 1, 5, 4096, 32767, 1 << 20, (1 << 20) + 1 };
			size_t plen = lens[rn(&r, 7)];
			const void *pl = chance(&r, 70) ? (void *)huge : uptr(&r, huge, plen, &g);

			if (chance(&r, 50)) {
				snprintf(buf, sizeof(buf), "%d", (int)getpid());
				pl = buf;
				plen = strlen(buf);
			}
			ret = syscall(SYS_keyctl, 12 /* INSTANTIATE */, key, pl, plen,
				      chance(&r, 80) ? 0 : -3);
			HLOG("instantiate(%zu) = %ld e%d", plen, ret, errno);
			break;
		}
		case 6:
			ret = chance(&r, 50) ?
				syscall(SYS_keyctl, 13 /* NEGATE */, key, (long)rn(&r, 60), 0) :
				syscall(SYS_keyctl, 19 /* REJECT */, key, (long)rn(&r, 60),
					(long)(chance(&r, 80) ? EKEYREJECTED : (int)rnd(&r)), 0);
			HLOG("negate/reject = %ld e%d", ret, errno);
			break;
		case 7: case 8: {	/* accept one, do something with it */
			int h;

			if (fd < 0)
				break;
			h = accept4(fd, NULL, NULL, 0);	/* SIGALRM cuts it short */
			HLOG("accept = %d e%d", h, errno);
			if (h < 0)
				break;
			if (chance(&r, 50)) {
				socklen_t l = sizeof(buf);

				getsockopt(h, SOL_TLSH, 1 + (int)rn(&r, 6), buf, &l);
			}
			if (chance(&r, 40)) {
				int v = chance(&r, 80) ? (int)rn(&r, 200) : (int)rnd(&r);

				setsockopt(h, SOL_TLSH, TLSH_STATUS, &v, sizeof(v));
			}
			if (chance(&r, 50))
				close(h);
			else if (nhs < 8)
				hs[nhs++] = h;
			break;
		}
		case 9:
			HLOG("drop authority = %ld", syscall(SYS_keyctl, 16, 0L));
			break;
		case 10: {	/* the parent returns to request-key, the child goes on */
			pid_t pid = fork();

			if (pid > 0) {
				HLOG("forked %d, parent exits", (int)pid);
				_exit(0);
			}
			child_timer();
			break;
		}
		case 11:
			usleep(rn(&r, 300000));
			break;
		default:
			HLOG("dies now (%s)", chance(&r, 50) ? "SIGKILL" : "exit");
			if (chance(&r, 50))
				kill(getpid(), SIGKILL);
			_exit(chance(&r, 50) ? 0 : 1);
		}
		(void)ret;
	}
	HLOG("ends, %d handshake fds kept", nhs);
	if (chance(&r, 30))
		usleep(rn(&r, 500000));		/* hold them a while */
	for (i = 0; i < nhs; i++)
		if (chance(&r, 50))
			close(hs[i]);		/* the rest close at exit */
	_exit(0);
}
#undef HLOG

/* --------------------------------------------------------------- driver */

struct thread_arg {
	struct worker *w;
	int t;
};

static void *thread_main(void *a)
{
	struct thread_arg *ta = a;
	struct worker *w = ta->w;
	struct rng r = { (w->seed + (uint64_t)ta->t * 0x9E3779B97F4A7C15ULL) | 1 };
	struct counts *c = &w->c[ta->t];

	{			/* SIGALRM to thread 0, SIGUSR1 to thread 1 */
		sigset_t s;

		sigemptyset(&s);
		sigaddset(&s, ta->t ? SIGALRM : SIGUSR1);
		pthread_sigmask(SIG_BLOCK, &s, NULL);
		if (ta->t)
			__atomic_store_n(&tid1, gettid(), __ATOMIC_RELEASE);
	}
	while (!time_up() && (!max_ops || c->ops < max_ops)) {
		if (!strcmp(mode, "sock"))
			sock_op(w, ta->t, &r);
		else if (!strcmp(mode, "keys"))
			keys_op(w, ta->t, &r);
		else
			mount_op(w, ta->t, &r);
	}
	return NULL;
}

static int count_helpers(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[300], comm[64] = "";
		FILE *f;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strncmp(comm, "tlsh-helper", 11))
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

static int run_worker(struct worker *w)
{
	struct thread_arg ta[2] = { { w, 0 }, { w, 1 } };
	pthread_t th;
	struct itimerval it = { { 0, 0 }, { 0, 0 } };
	int i, nthreads = strcmp(mode, "sock") ? 1 : 2;
	unsigned long ops = 0, viol = 0, ok = 0;

	for (i = 0; i < NFDS; i++)
		w->fds[i] = -1;
	if (unpriv) {
		if (setgroups(0, NULL) || setgid(65534) || setuid(65534)) {
			perror("tlsh-fuzz: setuid nobody");
			return 2;
		}
		if (unpriv == 2 && unshare(CLONE_NEWUSER | CLONE_NEWNET)) {
			printf("tlsh-fuzz: w%d: unshare(user, net) as nobody: %s (userns part skipped)\n",
			       w->id, strerror(errno));
			return 3;
		}
	}
	w->is_root = geteuid() == 0 && !unpriv;
	w->user_key = (int)sys_add_key("user", "tlsh-fuzz", "x", 1, -3);
	start_timer();
	if (nthreads == 2 && pthread_create(&th, NULL, thread_main, &ta[1]) != 0)
		nthreads = 1;
	thread_main(&ta[0]);
	if (nthreads == 2)
		pthread_join(th, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (i = 0; i < NFDS; i++)
		if (w->fds[i] >= 0)
			close(w->fds[i]);
	for (i = 0; i < nthreads; i++) {
		ops += w->c[i].ops;
		ok += w->c[i].ok;
		viol += w->c[i].viol;
	}
	printf("tlsh-fuzz: w%d uid=%d mode=%s seed=%llu ops=%lu ok=%lu sockets=%lu accepted=%lu violations=%lu errno:",
	       w->id, (int)getuid(), mode, (unsigned long long)w->seed, ops, ok,
	       w->c[0].seqs + w->c[1].seqs, w->c[0].accepted + w->c[1].accepted, viol);
	for (i = 1; i < 134; i++)
		if (w->c[0].err[i] + w->c[1].err[i])
			printf(" %s=%lu", i < 133 ? strerrorname_np(i) : "noop",
			       w->c[0].err[i] + w->c[1].err[i]);
	printf("\n");
	fflush(stdout);
	return viol ? 1 : 0;
}

static void *map_or_die(size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("tlsh-fuzz: mmap");
		exit(2);
	}
	return p;
}

static void usage(void)
{
	fprintf(stderr, "usage: tlsh-fuzz -m sock|keys|mount [-s SEED] [-t SECONDS] [-n OPS] [-j N] [-u|-U]\n"
			"                 [-a ADDR] [-X auto|on|off] [-r RING] | -R RING\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *ringfile = NULL;
	long helper_key = 0;
	int o, i, rc = 0, helpers0 = -1, helpers1;
	char *end;

	seed = (uint64_t)time(NULL) * 1000003ULL ^ (uint64_t)getpid();
	while ((o = getopt(argc, argv, "m:s:t:n:j:uUa:X:r:R:k:")) != -1) {
		switch (o) {
		case 'm': mode = optarg; break;
		case 's': seed = strtoull(optarg, &end, 0); if (*end) usage(); break;
		case 't': seconds = atof(optarg); break;
		case 'n': max_ops = strtoul(optarg, NULL, 0); break;
		case 'j': workers = atoi(optarg); break;
		case 'u': unpriv = 1; break;
		case 'U': unpriv = 2; break;
		case 'a': mnt_addr = optarg; break;
		case 'X': xprtsec_mode = optarg; break;
		case 'r': ringfile = optarg; break;
		case 'R': return dump_ring(optarg);
		case 'k': helper_key = strtol(optarg, NULL, 0); break;
		default: usage();
		}
	}
	if (strcmp(mode, "sock") && strcmp(mode, "keys") && strcmp(mode, "mount") &&
	    strcmp(mode, "helper"))
		usage();
	if (workers < 1 || workers > 64)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);

	pg_none = map_or_die(PG, PROT_NONE);
	pg_ro = map_or_die(PG, PROT_READ);
	pg_gap = map_or_die(PG, PROT_READ | PROT_WRITE);
	munmap(pg_gap, PG);
	pg_edge = map_or_die(2 * PG, PROT_READ | PROT_WRITE);
	mprotect(pg_edge + PG, PG, PROT_NONE);
	huge = map_or_die(HUGESZ, PROT_READ | PROT_WRITE);
	memset(huge, 'A', HUGESZ - 1);
	huge[HUGESZ - 1] = 0;
	if (ringfile) {
		int fd = open(ringfile, O_RDWR | O_CREAT | O_TRUNC, 0644);

		if (fd < 0 || ftruncate(fd, sizeof(struct ring))) {
			perror(ringfile);
			return 2;
		}
		ring = mmap(NULL, sizeof(struct ring), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (ring == MAP_FAILED)
			ring = NULL;
	}
	if (!strcmp(mode, "mount")) {
		mkdir("/tmp/tlsh-fuzz-mnt", 0755);
		if (!strcmp(xprtsec_mode, "on"))
			xprtsec_known = 1;
		else if (!strcmp(xprtsec_mode, "auto"))
			xprtsec_known = probe_xprtsec();
		printf("tlsh-fuzz: xprtsec: %s\n", xprtsec_known ?
		       "known to this kernel, fuzzed" :
		       "unknown to this kernel (or -X off): its cases skipped");
	}
	if (!strcmp(mode, "keys"))
		helpers0 = count_helpers();

	printf("tlsh-fuzz: mode=%s seed=%llu seconds=%g workers=%d uid=%s\n", mode,
	       (unsigned long long)seed, seconds, workers,
	       unpriv == 2 ? "nobody+userns" : unpriv ? "nobody" : "self");
	printf("tlsh-fuzz: reproduce with: tlsh-fuzz -m %s -s %llu -t %g -j %d%s\n", mode,
	       (unsigned long long)seed, seconds, workers,
	       unpriv == 2 ? " -U" : unpriv ? " -u" : "");
	clock_gettime(CLOCK_MONOTONIC, &t_end);
	t_end.tv_sec += (time_t)seconds;
	t_end.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
	if (t_end.tv_nsec >= 1000000000L) {
		t_end.tv_sec++;
		t_end.tv_nsec -= 1000000000L;
	}

	if (!strcmp(mode, "helper")) {
		if (!helper_key)
			usage();
		return helper_main(helper_key);
	}
	for (i = 0; i < workers; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			return 2;
		}
		if (pid == 0) {
			static struct worker w;

			w.id = i;
			w.seed = seed + (uint64_t)i * 0xD1B54A32D192ED03ULL;
			_exit(run_worker(&w));
		}
	}
	for (i = 0; i < workers; i++) {
		int st;
		pid_t pid = wait(&st);

		if (pid < 0)
			break;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 1)
			rc = 1;
		else if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
			rc = rc ? rc : 3;
		else if (!WIFEXITED(st)) {
			printf("tlsh-fuzz: a worker died: %s\n",
			       WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "?");
			rc = 1;
		} else if (WEXITSTATUS(st) != 0) {
			rc = 2;
		}
	}
	/* what the workers forked */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	if (helpers0 >= 0) {
		usleep(200000);
		helpers1 = count_helpers();
		printf("tlsh-fuzz: tlsh-helper processes before=%d after=%d\n", helpers0, helpers1);
		if (helpers1 > helpers0) {
			printf("VIOLATION: key requests from user space started a tlsh-helper\n");
			rc = 1;
		}
	}
	printf("tlsh-fuzz: done, %s\n", rc == 0 ? "no violation" : rc == 1 ? "VIOLATIONS" :
	       rc == 3 ? "part skipped" : "error");
	return rc == 3 ? 0 : rc;
}
