// SPDX-License-Identifier: GPL-2.0-only
/*
 * tls-front - an RPC-with-TLS (RFC 9289) front for a plain-TCP RPC server
 *
 * SYNOPSIS
 *   tls-front --listen ADDR:PORT [--listen ...] --backend ADDR:PORT
 *             (--cert F --key F | --psk-file F) [--ca F] [options]
 *
 * DESCRIPTION
 *   Linux 6.1's knfsd does not speak RPC-with-TLS.  tls-front sits in front
 *   of it: for every TCP connection it reads the first RPC record (record
 *   marking, RFC 5531 section 11).  If that record is a NULL call (any
 *   program and version, procedure 0) with credential flavor AUTH_TLS (7),
 *   tls-front answers it itself (MSG_ACCEPTED, SUCCESS, verifier AUTH_NONE
 *   with the 8-octet body "STARTTLS"), does the TLS server handshake on the
 *   same socket, connects to the backend over plain TCP and relays bytes
 *   both ways: decrypted client traffic to the backend, backend replies
 *   encrypted to the client.  Any other first record is relayed in
 *   plaintext (including that record) unless --tls-only is given, in which
 *   case the connection is closed.  After the first record the relay is
 *   byte-oriented, so pipelined and fragmented records pass unchanged.
 *
 *   One thread per connection; every wait is a poll() with a short tick, so
 *   a stalled peer blocks only its own connection and SIGTERM/SIGINT end
 *   the program promptly (exit status 0).
 *
 *   The switches meant to make the front misbehave for client tests, the
 *   log line format and examples are described in --help and in README.md
 *   beside this file.
 *
 * DEPENDENCIES
 *   libc, pthread, GnuTLS (>= 3.6.5 for TLS 1.3 tickets and KeyUpdate).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>

#define PROG		"tls-front"
#define MAX_LISTEN	8
#define RELAY_BUF	(64 * 1024)
#define PROBE_MAX	(64 * 1024)	/* largest AUTH_TLS probe record accepted */
#define TICK_MS		200
#define RAW_MAX		(PROBE_MAX + 4096)
#define LINGER_MS	5000	/* backend grace after the client closed */

#define RPC_CALL		0
#define RPC_REPLY		1
#define MSG_ACCEPTED		0
#define MSG_DENIED		1
#define ACCEPT_SUCCESS		0
#define REJECT_AUTH_ERROR	1
#define AUTH_BADCRED		1
#define AUTH_NONE		0
#define AUTH_SYS		1
#define AUTH_TLS		7

enum probe_reply {
	PR_STARTTLS,	/* correct */
	PR_BADVERF,	/* verifier body "STARTTLX" */
	PR_SHORTVERF,	/* verifier length 4, body "STAR" */
	PR_NULLVERF,	/* AUTH_NONE verifier of length 0 */
	PR_BADFLAVOR,	/* verifier flavor AUTH_SYS, body "STARTTLS" */
	PR_BADXID,	/* XID + 1 */
	PR_DENIED,	/* MSG_DENIED AUTH_ERROR AUTH_BADCRED (what knfsd says) */
};

static const char *const probe_reply_names[] = {
	[PR_STARTTLS] = "starttls",
	[PR_BADVERF] = "badverf",
	[PR_SHORTVERF] = "shortverf",
	[PR_NULLVERF] = "nullverf",
	[PR_BADFLAVOR] = "badflavor",
	[PR_BADXID] = "badxid",
	[PR_DENIED] = "denied",
};

struct listen_addr {
	struct sockaddr_storage ss;
	socklen_t len;
	const char *text;
	int fd;
};

/* --hostile-record: a record no peer may accept */
enum hostile { HR_NONE, HR_OVERSIZED, HR_BADTYPE };
static const char *const hostile_names[] = { "none", "oversized", "badtype" };

static struct {
	struct listen_addr listen[MAX_LISTEN];
	int nlisten;
	struct sockaddr_storage backend;
	socklen_t backend_len;
	const char *backend_text;
	const char *cert, *key, *ca, *psk_file, *priority;
	const char *log_file, *port_file, *pid_file;
	bool tls_only;
	bool no_tls;
	enum probe_reply probe_reply;
	bool never_answer_probe, stall_handshake, close_handshake, garbage;
	double stall_hold;		/* --stall-hold: seconds after EOF */
	enum hostile hostile;		/* --hostile-record */
	uint64_t hostile_after;		/* --hostile-after */
	bool hostile_after_set;
	uint64_t alert_after, drop_after, key_update_after;
	bool alert_after_set, drop_after_set, key_update_after_set;
	double drop_every;
	bool drop_rst;
	unsigned session_tickets;
	unsigned split_tickets_ms;
	bool require_client_cert;
	bool tls12_only, tls13_only;
	int verbose;
	double first_timeout, handshake_timeout, connect_timeout;
	unsigned max_conns;
} o = {
	.first_timeout = 60,
	.handshake_timeout = 30,
	.connect_timeout = 10,
	.max_conns = 1024,
};

static gnutls_certificate_credentials_t xcred;
static gnutls_psk_server_credentials_t pskcred;
static gnutls_priority_t prio;
static gnutls_datum_t ticket_key;

struct psk_entry {
	char *id;
	unsigned char *key;
	size_t keylen;
};
static struct psk_entry *psks;
static size_t npsks;

static atomic_int stop_flag;
static int sig_pipe[2] = { -1, -1 };
static FILE *log_fp;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t conn_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t conn_cv = PTHREAD_COND_INITIALIZER;
static unsigned nconns;
static unsigned long conn_seq;

struct buf {
	unsigned char *data;
	size_t off, len;
};

struct conn {
	unsigned long id;
	int cfd, bfd;
	char peer[INET6_ADDRSTRLEN + 16];
	gnutls_session_t s;
	int64_t start_ms;
	int64_t drop_at_ms;		/* --drop-every deadline, 0 = none */
	const char *probe;		/* what the first record was / got */
	char tls[512];			/* handshake result fields */
	char reason[256];		/* close reason */
	char verify[256];		/* client cert verification result */
	uint64_t c2b, b2c;		/* plaintext bytes delivered each way */
	uint64_t c_read;		/* bytes read from the client (relay) */
	unsigned tickets_sent;
	bool split_pending;		/* --split-tickets: next write splits */
	bool close_notify;		/* the client ended with close_notify */
	bool key_update_done;
	bool abortive;
	unsigned char *raw;		/* first record bytes as received */
	size_t rawlen;
};

/* ------------------------------------------------------------------ */
/* utilities */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void timestamp(char *out, size_t len)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(out, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, (int)(ts.tv_nsec / 1000000) % 1000);
}

static void emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emit(const char *fmt, ...)
{
	char line[2048], ts[96];
	va_list ap;

	if (!log_fp && o.verbose < 1)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	timestamp(ts, sizeof(ts));
	pthread_mutex_lock(&log_mu);
	if (log_fp) {
		fprintf(log_fp, "%s %s\n", ts, line);
		fflush(log_fp);
	}
	if (o.verbose >= 1)
		fprintf(stderr, "%s: %s %s\n", PROG, ts, line);
	pthread_mutex_unlock(&log_mu);
}

#define dbg(c, fmt, ...)						\
	do {								\
		if (o.verbose >= 2)					\
			emit("conn=%lu debug: " fmt, (c)->id, ##__VA_ARGS__); \
	} while (0)

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", PROG);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void set_reason(struct conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void set_reason(struct conn *c, const char *fmt, ...)
{
	va_list ap;

	if (c->reason[0])
		return;		/* keep the first cause */
	va_start(ap, fmt);
	vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
	va_end(ap);
}

static void tls_field(struct conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void tls_field(struct conn *c, const char *fmt, ...)
{
	size_t n = strlen(c->tls);
	va_list ap;

	if (n + 2 >= sizeof(c->tls))
		return;
	if (n)
		c->tls[n++] = ' ';
	va_start(ap, fmt);
	vsnprintf(c->tls + n, sizeof(c->tls) - n, fmt, ap);
	va_end(ap);
}

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void sockaddr_text(const struct sockaddr *sa, char *out, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
		snprintf(out, len, "%s:%u", host, port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
		snprintf(out, len, "[%s]:%u", host, port);
	} else {
		snprintf(out, len, "?");
	}
}

/* ------------------------------------------------------------------ */
/* waiting */

/*
 * Wait until @fd is ready for @events or @deadline (monotonic ms, 0 = no
 * deadline) passes.  Returns 1 ready, 0 deadline passed, -1 the connection
 * must end now (SIGTERM or --drop-every; reason set).
 */
static int wait_fd(struct conn *c, int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int64_t now = now_ms();
		int64_t t = TICK_MS;
		int r;

		if (atomic_load(&stop_flag)) {
			set_reason(c, "sigterm");
			return -1;
		}
		if (c->drop_at_ms && now >= c->drop_at_ms) {
			set_reason(c, "drop-every");
			c->abortive = true;
			return -1;
		}
		if (deadline && now >= deadline)
			return 0;
		if (deadline && deadline - now < t)
			t = deadline - now;
		if (c->drop_at_ms && c->drop_at_ms - now < t)
			t = c->drop_at_ms - now;
		r = poll(&p, 1, (int)t);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR) {
			set_reason(c, "poll: %s", strerror(errno));
			return -1;
		}
	}
}

static int64_t deadline_in(double seconds)
{
	if (seconds <= 0)
		return 0;
	return now_ms() + (int64_t)(seconds * 1000);
}

/*
 * Read exactly @n bytes.  Returns the number read (short only at EOF),
 * -1 on error/abort (reason set), -2 on timeout.
 */
static ssize_t read_exact(struct conn *c, int fd, unsigned char *p, size_t n,
			  int64_t deadline)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, p + got, n - got);

		if (r > 0) {
			got += (size_t)r;
			continue;
		}
		if (r == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			set_reason(c, "client read: %s", strerror(errno));
			return -1;
		}
		r = wait_fd(c, fd, POLLIN, deadline);
		if (r < 0)
			return -1;
		if (r == 0)
			return -2;
	}
	return (ssize_t)got;
}

static int write_all(struct conn *c, int fd, const unsigned char *p, size_t n,
		     int64_t deadline, const char *what)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = send(fd, p + done, n - done, MSG_NOSIGNAL);

		if (r > 0) {
			done += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			set_reason(c, "%s write: %s", what, strerror(errno));
			return -1;
		}
		r = wait_fd(c, fd, POLLOUT, deadline);
		if (r < 0)
			return -1;
		if (r == 0) {
			set_reason(c, "%s write timeout", what);
			return -1;
		}
	}
	return 0;
}

/* Read and discard client bytes until EOF, error, abort or @deadline. */
static void drain(struct conn *c, int64_t deadline, const char *state)
{
	unsigned char tmp[4096];

	for (;;) {
		ssize_t r = read(c->cfd, tmp, sizeof(tmp));

		if (r > 0)
			continue;
		if (r == 0) {
			set_reason(c, "client closed while %s", state);
			return;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			set_reason(c, "client read while %s: %s", state,
				   strerror(errno));
			return;
		}
		r = wait_fd(c, c->cfd, POLLIN, deadline);
		if (r < 0)
			return;
		if (r == 0) {
			set_reason(c, "timeout while %s", state);
			return;
		}
	}
}

/* ------------------------------------------------------------------ */
/* the first record */

enum first { FR_EOF, FR_PROBE, FR_OTHER, FR_ERR };

static int raw_append(struct conn *c, const unsigned char *p, size_t n)
{
	if (c->rawlen + n > RAW_MAX) {
		set_reason(c, "first record too large");
		return -1;
	}
	memcpy(c->raw + c->rawlen, p, n);
	c->rawlen += n;
	return 0;
}

static bool is_probe(const unsigned char *w, size_t len)
{
	/* xid, mtype, rpcvers, prog, vers, proc, cred.flavor, cred.len */
	if (len < 32)
		return false;
	return get32(w + 4) == RPC_CALL && get32(w + 8) == 2 &&
	       get32(w + 20) == 0 && get32(w + 24) == AUTH_TLS;
}

/*
 * Read the start of the first RPC record.  Only what is needed to
 * classify it is read (the first 32 payload octets, across fragments),
 * except for an AUTH_TLS probe, which is consumed whole.  Nothing past the
 * record is read, so the TLS ClientHello stays in the socket.  All bytes
 * read are kept in c->raw for forwarding.
 */
static enum first read_first_record(struct conn *c, uint32_t *xid)
{
	int64_t deadline = deadline_in(o.first_timeout);
	unsigned char pay[32];
	size_t paylen = 0, fragrem = 0, total = 0;
	bool last = false, have_hdr = false, probe;
	unsigned nfrags = 0;
	ssize_t r;

	for (;;) {
		if (!have_hdr) {
			unsigned char h[4];
			uint32_t v;

			r = read_exact(c, c->cfd, h, 4, deadline);
			if (r == -2) {
				set_reason(c, "timeout waiting for first record");
				return FR_ERR;
			}
			if (r < 0)
				return FR_ERR;
			if (r == 0 && c->rawlen == 0)
				return FR_EOF;
			if (raw_append(c, h, (size_t)r) < 0)
				return FR_ERR;
			if (r < 4) {
				set_reason(c, "client EOF inside first record");
				return FR_ERR;
			}
			v = get32(h);
			last = v & 0x80000000u;
			fragrem = v & 0x7fffffffu;
			have_hdr = true;
			nfrags++;
		}
		if (paylen < sizeof(pay) && fragrem) {
			size_t k = sizeof(pay) - paylen;

			if (k > fragrem)
				k = fragrem;
			r = read_exact(c, c->cfd, pay + paylen, k, deadline);
			if (r == -2) {
				set_reason(c, "timeout inside first record");
				return FR_ERR;
			}
			if (r < 0)
				return FR_ERR;
			if (raw_append(c, pay + paylen, (size_t)r) < 0)
				return FR_ERR;
			if ((size_t)r < k) {
				set_reason(c, "client EOF inside first record");
				return FR_ERR;
			}
			paylen += k;
			fragrem -= k;
			total += k;
		}
		if (paylen >= sizeof(pay) || (fragrem == 0 && last) ||
		    nfrags > 64)
			break;
		if (fragrem == 0)
			have_hdr = false;
	}

	probe = paylen >= sizeof(pay) && is_probe(pay, paylen);
	if (!probe)
		return FR_OTHER;
	*xid = get32(pay);

	/* Consume the rest of the probe record (credential body, verifier). */
	for (;;) {
		while (fragrem) {
			unsigned char tmp[4096];
			size_t k = fragrem < sizeof(tmp) ? fragrem : sizeof(tmp);

			if (total + k > PROBE_MAX) {
				set_reason(c, "AUTH_TLS probe record larger than %d",
					   PROBE_MAX);
				return FR_ERR;
			}
			r = read_exact(c, c->cfd, tmp, k, deadline);
			if (r == -2) {
				set_reason(c, "timeout inside probe record");
				return FR_ERR;
			}
			if (r < 0)
				return FR_ERR;
			if ((size_t)r < k) {
				set_reason(c, "client EOF inside probe record");
				return FR_ERR;
			}
			if (raw_append(c, tmp, k) < 0)
				return FR_ERR;
			fragrem -= k;
			total += k;
		}
		if (last)
			break;
		{
			unsigned char h[4];
			uint32_t v;

			r = read_exact(c, c->cfd, h, 4, deadline);
			if (r == -2) {
				set_reason(c, "timeout inside probe record");
				return FR_ERR;
			}
			if (r < 0)
				return FR_ERR;
			if (r < 4) {
				set_reason(c, "client EOF inside probe record");
				return FR_ERR;
			}
			if (raw_append(c, h, 4) < 0)
				return FR_ERR;
			v = get32(h);
			last = v & 0x80000000u;
			fragrem = v & 0x7fffffffu;
		}
	}
	return FR_PROBE;
}

/* Build the reply to the AUTH_TLS probe, with record mark. */
static size_t build_probe_reply(unsigned char *out, uint32_t xid,
				enum probe_reply mode)
{
	unsigned char *p = out + 4;

	put32(p, mode == PR_BADXID ? xid + 1 : xid);
	p += 4;
	put32(p, RPC_REPLY);
	p += 4;
	if (mode == PR_DENIED) {
		put32(p, MSG_DENIED);
		p += 4;
		put32(p, REJECT_AUTH_ERROR);
		p += 4;
		put32(p, AUTH_BADCRED);
		p += 4;
	} else {
		put32(p, MSG_ACCEPTED);
		p += 4;
		put32(p, mode == PR_BADFLAVOR ? AUTH_SYS : AUTH_NONE);
		p += 4;
		switch (mode) {
		case PR_NULLVERF:
			put32(p, 0);
			p += 4;
			break;
		case PR_SHORTVERF:
			put32(p, 4);
			memcpy(p + 4, "STAR", 4);
			p += 8;
			break;
		default:
			put32(p, 8);
			memcpy(p + 4, mode == PR_BADVERF ? "STARTTLX" : "STARTTLS",
			       8);
			p += 12;
			break;
		}
		put32(p, ACCEPT_SUCCESS);
		p += 4;
	}
	put32(out, 0x80000000u | (uint32_t)(p - out - 4));
	return (size_t)(p - out);
}

/* ------------------------------------------------------------------ */
/* TLS */

static int psk_lookup(gnutls_session_t s, const gnutls_datum_t *user,
		      gnutls_datum_t *key)
{
	size_t i;

	(void)s;
	for (i = 0; i < npsks; i++) {
		if (strlen(psks[i].id) != user->size ||
		    memcmp(psks[i].id, user->data, user->size))
			continue;
		key->data = gnutls_malloc(psks[i].keylen);
		if (!key->data)
			return -1;
		memcpy(key->data, psks[i].key, psks[i].keylen);
		key->size = (unsigned)psks[i].keylen;
		return 0;
	}
	return -1;
}

/* Client certificate verification (only with --ca). */
static int verify_client(gnutls_session_t s)
{
	struct conn *c = gnutls_session_get_ptr(s);
	unsigned int status = 0, n = 0;
	gnutls_datum_t out = { NULL, 0 };
	int r;

	if (!gnutls_certificate_get_peers(s, &n) || n == 0) {
		if (o.require_client_cert) {
			snprintf(c->verify, sizeof(c->verify), "no client certificate");
			return -1;
		}
		snprintf(c->verify, sizeof(c->verify), "none");
		return 0;
	}
	r = gnutls_certificate_verify_peers3(s, NULL, &status);
	if (r < 0) {
		snprintf(c->verify, sizeof(c->verify), "error: %s",
			 gnutls_strerror(r));
		return -1;
	}
	if (status == 0) {
		snprintf(c->verify, sizeof(c->verify), "ok");
		return 0;
	}
	if (gnutls_certificate_verification_status_print(
		    status, GNUTLS_CRT_X509, &out, 0) == 0) {
		snprintf(c->verify, sizeof(c->verify), "rejected: %s",
			 (const char *)out.data);
		gnutls_free(out.data);
	} else {
		snprintf(c->verify, sizeof(c->verify), "rejected: status 0x%x",
			 status);
	}
	return -1;
}

/* Drive a non-blocking GnuTLS call to completion. */
#define TLS_LOOP(c, deadline, call, res)				\
	do {								\
		for (;;) {						\
			int w_;						\
			(res) = (call);					\
			if ((res) >= 0)					\
				break;					\
			if ((res) != GNUTLS_E_AGAIN &&			\
			    (res) != GNUTLS_E_INTERRUPTED &&		\
			    gnutls_error_is_fatal(res))			\
				break;					\
			if ((res) != GNUTLS_E_AGAIN)			\
				continue;				\
			w_ = wait_fd((c), (c)->cfd,			\
				     gnutls_record_get_direction((c)->s) ? \
				     POLLOUT : POLLIN, (deadline));	\
			if (w_ <= 0) {					\
				(res) = w_ == 0 ? GNUTLS_E_TIMEDOUT :	\
					GNUTLS_E_INTERRUPTED;		\
				break;					\
			}						\
		}							\
	} while (0)

static void describe_session(struct conn *c)
{
	gnutls_session_t s = c->s;
	gnutls_protocol_t ver = gnutls_protocol_get_version(s);
	char name[256];
	size_t nlen = sizeof(name);
	unsigned type = 0;
	char *desc;

	tls_field(c, "tls=ok version=%s cipher=%s",
		  gnutls_protocol_get_name(ver),
		  gnutls_cipher_get_name(gnutls_cipher_get(s)));
	/* for TLS 1.3 certificate handshakes gnutls_kx_get() is meaningless */
	if (ver != GNUTLS_TLS1_3 || gnutls_auth_get_type(s) == GNUTLS_CRD_PSK)
		tls_field(c, "kx=%s", gnutls_kx_get_name(gnutls_kx_get(s)));
	desc = gnutls_session_get_desc(s);
	if (desc) {
		tls_field(c, "desc=%s", desc);
		gnutls_free(desc);
	}
	if (gnutls_server_name_get(s, name, &nlen, &type, 0) == 0 &&
	    type == GNUTLS_NAME_DNS)
		tls_field(c, "sni=%s", name);
	if (gnutls_auth_get_type(s) == GNUTLS_CRD_PSK) {
		gnutls_datum_t u = { NULL, 0 };

		if (gnutls_psk_server_get_username2(s, &u) == 0 && u.data)
			tls_field(c, "psk=%.*s", (int)u.size, (const char *)u.data);
	} else {
		unsigned n = 0;
		const gnutls_datum_t *peers = gnutls_certificate_get_peers(s, &n);

		if (peers && n) {
			gnutls_x509_crt_t crt;
			gnutls_datum_t dn = { NULL, 0 };

			if (gnutls_x509_crt_init(&crt) == 0) {
				if (gnutls_x509_crt_import(crt, &peers[0],
							   GNUTLS_X509_FMT_DER) == 0 &&
				    gnutls_x509_crt_get_dn3(crt, &dn, 0) == 0) {
					tls_field(c, "client_cert=\"%s\"",
						  (const char *)dn.data);
					gnutls_free(dn.data);
				}
				gnutls_x509_crt_deinit(crt);
			}
		}
		if (c->verify[0])
			tls_field(c, "client_verify=\"%s\"", c->verify);
	}
}

/*
 * --split-tickets: the first write after the handshake (the tickets) goes
 * out as its first SPLIT_AT bytes, a pause, then the rest, so that a
 * record arrives in two TCP segments: the header and part of the body,
 * then the remainder.
 */
#define SPLIT_AT	10

static ssize_t split_push(gnutls_transport_ptr_t ptr, const void *buf,
			  size_t len)
{
	struct conn *c = ptr;

	if (c->split_pending && len > SPLIT_AT) {
		ssize_t n = send(c->cfd, buf, SPLIT_AT, MSG_NOSIGNAL);

		c->split_pending = false;
		if (n > 0)
			usleep(o.split_tickets_ms * 1000u);
		return n;	/* GnuTLS writes the rest next */
	}
	return send(c->cfd, buf, len, MSG_NOSIGNAL);
}

static ssize_t conn_pull(gnutls_transport_ptr_t ptr, void *buf, size_t len)
{
	const struct conn *c = ptr;

	return recv(c->cfd, buf, len, 0);
}

static int tls_handshake(struct conn *c)
{
	int64_t deadline = deadline_in(o.handshake_timeout);
	unsigned flags = GNUTLS_SERVER | GNUTLS_NONBLOCK;
	int r;

	flags |= o.session_tickets ? GNUTLS_NO_AUTO_SEND_TICKET : GNUTLS_NO_TICKETS;
	r = gnutls_init(&c->s, flags);
	if (r < 0) {
		c->s = NULL;
		tls_field(c, "tls=failed");
		set_reason(c, "gnutls_init: %s", gnutls_strerror(r));
		return -1;
	}
	gnutls_session_set_ptr(c->s, c);
	r = gnutls_priority_set(c->s, prio);
	if (r == 0 && xcred)
		r = gnutls_credentials_set(c->s, GNUTLS_CRD_CERTIFICATE, xcred);
	if (r == 0 && pskcred)
		r = gnutls_credentials_set(c->s, GNUTLS_CRD_PSK, pskcred);
	if (r == 0 && o.session_tickets)
		r = gnutls_session_ticket_enable_server(c->s, &ticket_key);
	if (r < 0) {
		tls_field(c, "tls=failed");
		set_reason(c, "session setup: %s", gnutls_strerror(r));
		return -1;
	}
	if (xcred)
		gnutls_certificate_server_set_request(c->s,
			o.require_client_cert ? GNUTLS_CERT_REQUIRE :
			o.ca ? GNUTLS_CERT_REQUEST : GNUTLS_CERT_IGNORE);
	if (o.split_tickets_ms) {
		gnutls_transport_set_ptr(c->s, c);
		gnutls_transport_set_push_function(c->s, split_push);
		gnutls_transport_set_pull_function(c->s, conn_pull);
	} else {
		gnutls_transport_set_int(c->s, c->cfd);
	}
	gnutls_handshake_set_timeout(c->s, 0);

	TLS_LOOP(c, deadline, gnutls_handshake(c->s), r);
	if (r < 0) {
		/* tell the client why, as a well-behaved server does */
		if (r != GNUTLS_E_TIMEDOUT && r != GNUTLS_E_FATAL_ALERT_RECEIVED &&
		    r != GNUTLS_E_PREMATURE_TERMINATION)
			(void)gnutls_alert_send_appropriate(c->s, r);
		tls_field(c, "tls=failed error=\"%s\"", gnutls_strerror(r));
		if (!c->verify[0] && (r == GNUTLS_E_CERTIFICATE_REQUIRED ||
				      r == GNUTLS_E_NO_CERTIFICATE_FOUND))
			snprintf(c->verify, sizeof(c->verify), "no client certificate");
		if (c->verify[0])
			tls_field(c, "client_verify=\"%s\"", c->verify);
		if (r == GNUTLS_E_TIMEDOUT)
			set_reason(c, "handshake timeout");
		else if (r == GNUTLS_E_FATAL_ALERT_RECEIVED)
			set_reason(c, "handshake failed: client sent alert %s",
				   gnutls_alert_get_name(gnutls_alert_get(c->s)));
		else
			set_reason(c, "handshake failed: %s", gnutls_strerror(r));
		return -1;
	}
	describe_session(c);

	if (o.session_tickets) {
		if (gnutls_protocol_get_version(c->s) == GNUTLS_TLS1_3) {
			c->split_pending = o.split_tickets_ms > 0;
			TLS_LOOP(c, deadline_in(o.handshake_timeout),
				 gnutls_session_ticket_send(c->s, o.session_tickets, 0),
				 r);
			if (r < 0) {
				set_reason(c, "session ticket send: %s",
					   gnutls_strerror(r));
				return -1;
			}
			c->tickets_sent = o.session_tickets;
			tls_field(c, "tickets=%u", o.session_tickets);
		} else {
			tls_field(c, "tickets=skipped-tls12");
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* backend */

static int connect_backend(struct conn *c)
{
	int fd, one = 1, err = 0;
	socklen_t elen = sizeof(err);

	fd = socket(o.backend.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		set_reason(c, "backend socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&o.backend, o.backend_len) < 0) {
		if (errno != EINPROGRESS) {
			set_reason(c, "backend connect: %s", strerror(errno));
			close(fd);
			return -1;
		}
		int r = wait_fd(c, fd, POLLOUT, deadline_in(o.connect_timeout));

		if (r <= 0) {
			if (r == 0)
				set_reason(c, "backend connect: timeout");
			close(fd);
			return -1;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
			err = errno;
		if (err) {
			set_reason(c, "backend connect: %s", strerror(err));
			close(fd);
			return -1;
		}
	}
	c->bfd = fd;
	return 0;
}

/* ------------------------------------------------------------------ */
/* hostile records */

/*
 * Read one TLS record from the client (the ClientHello) and discard it.
 * Returns 0, or -1 when the client closed or the deadline passed.
 */
static int skip_client_record(struct conn *c, int64_t dl)
{
	unsigned char h[5], body[4096];
	size_t left;

	if (read_exact(c, c->cfd, h, 5, dl) != 5)
		return -1;
	left = (size_t)h[3] << 8 | h[4];
	while (left) {
		size_t k = left < sizeof(body) ? left : sizeof(body);

		if (read_exact(c, c->cfd, body, k, dl) != (ssize_t)k)
			return -1;
		left -= k;
	}
	return 0;
}

/*
 * Write the --hostile-record record straight to the client's socket,
 * bypassing GnuTLS: "oversized" is a handshake record (type 22) whose
 * length, 18433, exceeds the largest ciphertext TLS 1.2 or 1.3 allows
 * (2^14 + 2048), with that many random octets after it; "badtype" is a
 * record of content type 99, which no TLS version defines, with 32
 * random octets. Then wait (bounded) for the client to give up.
 * The caller has set the connection's close reason.
 */
static void send_hostile_record(struct conn *c)
{
	size_t len = o.hostile == HR_OVERSIZED ? 18433 : 32;
	unsigned char *r = malloc(5 + len);

	if (!r) {
		set_reason(c, "out of memory");
		return;
	}
	r[0] = o.hostile == HR_OVERSIZED ? 22 : 99;
	r[1] = 3;
	r[2] = 3;
	r[3] = (unsigned char)(len >> 8);
	r[4] = (unsigned char)len;
	gnutls_rnd(GNUTLS_RND_NONCE, r + 5, len);
	if (write_all(c, c->cfd, r, 5 + len, deadline_in(o.handshake_timeout),
		      "client") == 0)
		drain(c, deadline_in(o.handshake_timeout),
		      "waiting after the hostile record");
	free(r);
	tls_field(c, "hostile=%s-sent", hostile_names[o.hostile]);
}

/* ------------------------------------------------------------------ */
/* relay */

static void send_alert(struct conn *c)
{
	int r;

	TLS_LOOP(c, deadline_in(2),
		 gnutls_alert_send(c->s, GNUTLS_AL_FATAL, GNUTLS_A_INTERNAL_ERROR),
		 r);
	(void)r;
}

/*
 * Relay until both directions are finished, or one side fails.  @cb
 * initially holds the client bytes already read (the first record in
 * plaintext mode).
 */
static void relay(struct conn *c, struct buf *cb, struct buf *bb)
{
	bool c_eof = false, b_eof = false, b_shut = false;
	bool recv_wants_write = false;
	size_t tls_pending = 0;
	int64_t linger_until = 0;

	for (;;) {
		struct pollfd p[2];
		bool want_cread, ready_now = false;
		int64_t now, t;
		int r = 0;

		/*
		 * Backend closed: deliver what it sent, close_notify, done.
		 * Client closed: deliver what it sent, half-close the backend
		 * and give it LINGER_MS to send its last replies.
		 */
		if (b_eof && bb->len == 0) {
			if (c->s)
				TLS_LOOP(c, deadline_in(2),
					 gnutls_bye(c->s, GNUTLS_SHUT_WR), r);
			else
				shutdown(c->cfd, SHUT_WR);
			(void)r;
			set_reason(c, "%s", !c_eof ? "backend closed" :
				   c->close_notify ? "client closed (close_notify)" :
				   "client closed");
			return;
		}
		if (c_eof && cb->len == 0 && !b_shut) {
			shutdown(c->bfd, SHUT_WR);
			b_shut = true;
			linger_until = now_ms() + LINGER_MS;
		}
		if (b_shut && now_ms() >= linger_until) {
			set_reason(c, "client closed (backend did not close)");
			return;
		}

		/* misbehaviour thresholds */
		if (o.alert_after_set && c->b2c >= o.alert_after &&
		    tls_pending == 0) {
			if (c->s) {
				send_alert(c);
				set_reason(c, "alert-after (fatal alert sent after %llu bytes)",
					   (unsigned long long)c->b2c);
			} else {
				set_reason(c, "alert-after (plaintext: closed after %llu bytes)",
					   (unsigned long long)c->b2c);
			}
			return;
		}
		if (o.hostile_after_set && c->s && c->b2c >= o.hostile_after &&
		    tls_pending == 0) {
			set_reason(c, "hostile-after (%s record after %llu bytes)",
				   hostile_names[o.hostile],
				   (unsigned long long)c->b2c);
			send_hostile_record(c);
			return;
		}
		if (o.key_update_after_set && !c->key_update_done && c->s &&
		    c->b2c >= o.key_update_after && tls_pending == 0) {
			c->key_update_done = true;
			if (gnutls_protocol_get_version(c->s) == GNUTLS_TLS1_3) {
				TLS_LOOP(c, deadline_in(5),
					 gnutls_session_key_update(c->s, GNUTLS_KU_PEER),
					 r);
				if (r < 0) {
					set_reason(c, "key update: %s", gnutls_strerror(r));
					return;
				}
				dbg(c, "key update sent after %llu bytes",
				    (unsigned long long)c->b2c);
				tls_field(c, "key_update=sent");
			} else {
				tls_field(c, "key_update=skipped-tls12");
			}
		}
		if (o.drop_after_set && c->c_read >= o.drop_after && cb->len == 0) {
			set_reason(c, "drop-after (%llu client bytes)",
				   (unsigned long long)c->c_read);
			c->abortive = true;
			return;
		}

		/* compact */
		if (cb->len == 0)
			cb->off = 0;
		else if (cb->off > RELAY_BUF / 2) {
			memmove(cb->data, cb->data + cb->off, cb->len);
			cb->off = 0;
		}
		if (!tls_pending) {
			if (bb->len == 0)
				bb->off = 0;
			else if (bb->off > RELAY_BUF / 2) {
				memmove(bb->data, bb->data + bb->off, bb->len);
				bb->off = 0;
			}
		}

		want_cread = !c_eof && cb->off + cb->len < RELAY_BUF &&
			     !(o.drop_after_set && c->c_read >= o.drop_after);
		p[0].fd = c->cfd;
		p[0].events = 0;
		p[0].revents = 0;
		if (want_cread) {
			if (c->s && gnutls_record_check_pending(c->s) > 0)
				ready_now = true;
			else
				p[0].events |= POLLIN;
		}
		if (bb->len || recv_wants_write)
			p[0].events |= POLLOUT;
		p[1].fd = c->bfd;
		p[1].events = 0;
		p[1].revents = 0;
		if (!b_eof && bb->off + bb->len < RELAY_BUF)
			p[1].events |= POLLIN;
		if (cb->len && !b_shut)
			p[1].events |= POLLOUT;
		if (!p[0].events)
			p[0].fd = -1;
		if (!p[1].events)
			p[1].fd = -1;

		now = now_ms();
		t = ready_now ? 0 : TICK_MS;
		if (c->drop_at_ms && c->drop_at_ms - now < t)
			t = c->drop_at_ms - now < 0 ? 0 : c->drop_at_ms - now;
		r = poll(p, 2, (int)t);
		if (r < 0 && errno != EINTR) {
			set_reason(c, "poll: %s", strerror(errno));
			return;
		}
		if (atomic_load(&stop_flag)) {
			set_reason(c, "sigterm");
			return;
		}
		if (c->drop_at_ms && now_ms() >= c->drop_at_ms) {
			set_reason(c, "drop-every");
			c->abortive = true;
			return;
		}
		if (r <= 0 && !ready_now)
			continue;

		/* client -> buffer */
		if (want_cread &&
		    (ready_now || (p[0].revents & (POLLIN | POLLHUP | POLLERR)) ||
		     (recv_wants_write && (p[0].revents & POLLOUT)))) {
			unsigned char *dst = cb->data + cb->off + cb->len;
			size_t room = RELAY_BUF - cb->off - cb->len;
			ssize_t n;

			if (o.drop_after_set && o.drop_after - c->c_read < room)
				room = (size_t)(o.drop_after - c->c_read);
			recv_wants_write = false;
			if (c->s) {
				n = gnutls_record_recv(c->s, dst, room);
				if (n == 0) {
					c_eof = true;
					c->close_notify = true;
					dbg(c, "client close_notify");
				} else if (n == GNUTLS_E_AGAIN) {
					recv_wants_write =
						gnutls_record_get_direction(c->s) == 1;
					n = 0;
				} else if (n == GNUTLS_E_PREMATURE_TERMINATION) {
					c_eof = true;
					dbg(c, "client closed without close_notify");
					n = 0;
				} else if (n == GNUTLS_E_REHANDSHAKE) {
					gnutls_alert_send(c->s, GNUTLS_AL_WARNING,
							  GNUTLS_A_NO_RENEGOTIATION);
					n = 0;
				} else if (n < 0 && gnutls_error_is_fatal((int)n)) {
					if (n == GNUTLS_E_FATAL_ALERT_RECEIVED)
						set_reason(c, "client sent fatal alert %s",
							   gnutls_alert_get_name(
								   gnutls_alert_get(c->s)));
					else
						set_reason(c, "client TLS error: %s",
							   gnutls_strerror((int)n));
					c->abortive = true;
					return;
				} else if (n < 0) {
					n = 0;	/* warning alert etc. */
				}
			} else {
				n = read(c->cfd, dst, room);
				if (n == 0) {
					c_eof = true;
				} else if (n < 0) {
					if (errno != EAGAIN && errno != EWOULDBLOCK &&
					    errno != EINTR) {
						set_reason(c, "client read: %s",
							   strerror(errno));
						c->abortive = true;
						return;
					}
					n = 0;
				}
			}
			cb->len += (size_t)n;
			c->c_read += (uint64_t)n;
		}

		/* buffer -> backend */
		if (cb->len && (p[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t n = send(c->bfd, cb->data + cb->off, cb->len,
					 MSG_NOSIGNAL);

			if (n > 0) {
				cb->off += (size_t)n;
				cb->len -= (size_t)n;
				c->c2b += (uint64_t)n;
			} else if (n < 0 && errno != EAGAIN &&
				   errno != EWOULDBLOCK && errno != EINTR) {
				set_reason(c, "backend write: %s", strerror(errno));
				c->abortive = true;
				return;
			}
		}

		/* backend -> buffer */
		if (!b_eof && bb->off + bb->len < RELAY_BUF &&
		    (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			ssize_t n = read(c->bfd, bb->data + bb->off + bb->len,
					 RELAY_BUF - bb->off - bb->len);

			if (n > 0) {
				bb->len += (size_t)n;
			} else if (n == 0) {
				b_eof = true;
				dbg(c, "backend EOF");
			} else if (errno != EAGAIN && errno != EWOULDBLOCK &&
				   errno != EINTR) {
				set_reason(c, "backend read: %s", strerror(errno));
				c->abortive = true;
				return;
			}
		}

		/* buffer -> client */
		if (bb->len && (p[0].revents & (POLLOUT | POLLERR | POLLHUP))) {
			size_t lim = bb->len;
			ssize_t n;

			if (o.alert_after_set && o.alert_after > c->b2c &&
			    o.alert_after - c->b2c < lim)
				lim = (size_t)(o.alert_after - c->b2c);
			if (o.hostile_after_set && o.hostile_after > c->b2c &&
			    o.hostile_after - c->b2c < lim)
				lim = (size_t)(o.hostile_after - c->b2c);
			if (o.key_update_after_set && !c->key_update_done &&
			    o.key_update_after > c->b2c &&
			    o.key_update_after - c->b2c < lim)
				lim = (size_t)(o.key_update_after - c->b2c);
			if (c->s) {
				if (tls_pending)
					lim = tls_pending;
				n = gnutls_record_send(c->s, bb->data + bb->off, lim);
				if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) {
					tls_pending = lim;
					n = 0;
				} else if (n < 0) {
					set_reason(c, "client TLS send: %s",
						   gnutls_strerror((int)n));
					c->abortive = true;
					return;
				} else {
					tls_pending = 0;
				}
			} else {
				n = send(c->cfd, bb->data + bb->off, lim, MSG_NOSIGNAL);
				if (n < 0) {
					if (errno != EAGAIN && errno != EWOULDBLOCK &&
					    errno != EINTR) {
						set_reason(c, "client write: %s",
							   strerror(errno));
						c->abortive = true;
						return;
					}
					n = 0;
				}
			}
			bb->off += (size_t)n;
			bb->len -= (size_t)n;
			c->b2c += (uint64_t)n;
		}
	}
}

/* ------------------------------------------------------------------ */
/* per connection */

static void conn_finish(struct conn *c)
{
	if (c->s) {
		gnutls_deinit(c->s);
		c->s = NULL;
	}
	if (c->abortive && o.drop_rst) {
		struct linger l = { .l_onoff = 1, .l_linger = 0 };

		setsockopt(c->cfd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	} else if (c->abortive) {
		/*
		 * Unread bytes make close() send a RST; discard what has
		 * arrived so a drop is a FIN (unless more is in flight).
		 */
		unsigned char tmp[4096];
		int i;

		for (i = 0; i < 256 && read(c->cfd, tmp, sizeof(tmp)) > 0; i++)
			;
	}
	close(c->cfd);
	if (c->bfd >= 0)
		close(c->bfd);
	emit("conn=%lu peer=%s probe=%s%s%s c2b=%llu b2c=%llu dur=%.3fs close=\"%s\"",
	     c->id, c->peer, c->probe, c->tls[0] ? " " : "", c->tls,
	     (unsigned long long)c->c2b, (unsigned long long)c->b2c,
	     (double)(now_ms() - c->start_ms) / 1000.0,
	     c->reason[0] ? c->reason : "?");
}

static void handle(struct conn *c)
{
	struct buf cb = { NULL, 0, 0 }, bb = { NULL, 0, 0 };
	unsigned char reply[64];
	uint32_t xid = 0;
	size_t n;

	c->raw = malloc(RAW_MAX);
	if (!c->raw) {
		set_reason(c, "out of memory");
		return;
	}
	switch (read_first_record(c, &xid)) {
	case FR_EOF:
		c->probe = "none";
		set_reason(c, "client closed before first record");
		return;
	case FR_ERR:
		c->probe = c->rawlen ? "incomplete" : "none";
		return;
	case FR_OTHER:
		c->probe = "plain";
		/* what it began with: an RPC record marker and XID, or not */
		if (c->rawlen >= 8)
			tls_field(c, "first=%02x%02x%02x%02x%02x%02x%02x%02x",
				  c->raw[0], c->raw[1], c->raw[2], c->raw[3],
				  c->raw[4], c->raw[5], c->raw[6], c->raw[7]);
		if (o.tls_only) {
			set_reason(c, "tls-only: first record is not an AUTH_TLS probe");
			return;
		}
		break;
	case FR_PROBE:
		dbg(c, "AUTH_TLS probe xid=0x%08x (%zu bytes)", xid, c->rawlen);
		if (o.no_tls) {
			c->probe = "forwarded";
			break;
		}
		if (o.never_answer_probe) {
			c->probe = "unanswered";
			drain(c, 0, "stalling the probe");
			return;
		}
		n = build_probe_reply(reply, xid, o.probe_reply);
		if (write_all(c, c->cfd, reply, n, deadline_in(o.handshake_timeout),
			      "client") < 0) {
			c->probe = "reply-failed";
			return;
		}
		c->rawlen = 0;	/* answered here, not forwarded */
		if (o.probe_reply != PR_STARTTLS) {
			/* a failed probe: whatever follows goes in plaintext */
			c->probe = probe_reply_names[o.probe_reply];
			break;
		}
		c->probe = "starttls";
		if (o.stall_handshake) {
			tls_field(c, "tls=stalled");
			drain(c, 0, "stalling the handshake");
			/* a server that does not close when its client does:
			 * the client's socket stays in FIN_WAIT2 */
			if (o.stall_hold > 0)
				usleep((useconds_t)(o.stall_hold * 1e6));
			return;
		}
		if (o.close_handshake) {
			skip_client_record(c, deadline_in(o.handshake_timeout));
			tls_field(c, "tls=closed-after-clienthello");
			set_reason(c, "close-handshake");
			return;
		}
		if (o.hostile != HR_NONE && !o.hostile_after_set) {
			/* in place of the ServerHello */
			if (skip_client_record(c, deadline_in(o.handshake_timeout)) < 0)
				return;
			set_reason(c, "hostile-record (%s, in the handshake)",
				   hostile_names[o.hostile]);
			send_hostile_record(c);
			return;
		}
		if (o.garbage) {
			unsigned char g[256];

			memcpy(g, "GARBAGE!", 8);	/* never a TLS record */
			gnutls_rnd(GNUTLS_RND_NONCE, g + 8, sizeof(g) - 8);
			if (write_all(c, c->cfd, g, sizeof(g),
				      deadline_in(o.handshake_timeout), "client") == 0)
				drain(c, deadline_in(o.handshake_timeout),
				      "waiting after garbage");
			tls_field(c, "tls=garbage-sent");
			return;
		}
		if (tls_handshake(c) < 0)
			return;
		break;
	}

	if (connect_backend(c) < 0) {
		if (c->s)
			send_alert(c);
		return;
	}
	cb.data = malloc(RELAY_BUF);
	bb.data = malloc(RELAY_BUF);
	if (!cb.data || !bb.data) {
		set_reason(c, "out of memory");
	} else {
		memcpy(cb.data, c->raw, c->rawlen);
		cb.len = c->rawlen;
		c->c_read = c->rawlen;
		relay(c, &cb, &bb);
	}
	free(cb.data);
	free(bb.data);
}

static void *conn_thread(void *arg)
{
	struct conn *c = arg;

	handle(c);
	conn_finish(c);
	free(c->raw);
	free(c);
	pthread_mutex_lock(&conn_mu);
	nconns--;
	pthread_cond_broadcast(&conn_cv);
	pthread_mutex_unlock(&conn_mu);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* setup */

static void usage(FILE *f)
{
	fprintf(f,
"usage: " PROG " --listen ADDR:PORT --backend ADDR:PORT\n"
"                 (--cert FILE --key FILE | --psk-file FILE) [options]\n"
"\n"
"An RPC-with-TLS (RFC 9289) front for a plain-TCP RPC server (knfsd).\n"
"Answers the AUTH_TLS NULL probe with STARTTLS, does the TLS server\n"
"handshake and relays decrypted traffic to the backend.\n"
"\n"
"Addresses: 127.0.0.1:2049, 0.0.0.0:2049, [::]:2049, [2001:db8::1]:2049.\n"
"Port 0 picks a free port (see --port-file).\n"
"\n"
"Basic options:\n"
"  -l, --listen ADDR:PORT     listen here (repeatable, up to %d)\n"
"  -b, --backend ADDR:PORT    plain TCP RPC server to relay to\n"
"      --cert FILE            server certificate (PEM, may hold a chain)\n"
"      --key FILE             its private key (PEM)\n"
"      --ca FILE              CA(s) for verifying client certificates; a\n"
"                             client certificate is requested and, if\n"
"                             sent, verified\n"
"      --require-client-cert  mTLS: reject clients without a certificate\n"
"                             that verifies against --ca\n"
"      --psk-file FILE        accept PSK handshakes; lines \"identity:hexkey\"\n"
"                             (gnutls psktool format; '#' comments allowed)\n"
"      --tls12-only           offer TLS 1.2 only\n"
"      --tls13-only           offer TLS 1.3 only\n"
"      --priority STRING      GnuTLS priority string (replaces the default:\n"
"                             TLS 1.3 and 1.2, AES-GCM, ChaCha20-Poly1305,\n"
"                             AES-128-CCM, plus (EC)DHE-PSK and PSK with\n"
"                             --psk-file)\n"
"      --plain-ok             relay connections that do not start with an\n"
"                             AUTH_TLS probe in plaintext (default)\n"
"      --tls-only             close such connections instead\n"
"      --first-timeout S      wait for the first record (default 60)\n"
"      --handshake-timeout S  TLS handshake deadline (default 30)\n"
"      --connect-timeout S    backend connect deadline (default 10)\n"
"      --max-conns N          concurrent connections (default 1024)\n"
"      --log FILE             append one line per connection to FILE\n"
"  -v, --verbose              log lines to stderr too; twice: debug lines\n"
"      --port-file FILE       write the bound port of each listener, one\n"
"                             per line, once listening\n"
"      --pid-file FILE        write the process id\n"
"  -h, --help                 this text\n"
"\n"
"Misbehaviour for tests (at most one of the first eight):\n"
"      --no-tls               act like a server without TLS: forward the\n"
"                             probe to the backend and relay plaintext\n"
"      --probe-reply=MODE     answer the probe wrongly, then relay\n"
"                             plaintext: badverf (body \"STARTTLX\"),\n"
"                             shortverf (length 4), nullverf (length 0),\n"
"                             badflavor (AUTH_SYS verifier), badxid (XID+1),\n"
"                             denied (MSG_DENIED AUTH_ERROR AUTH_BADCRED);\n"
"                             starttls is the default, correct answer\n"
"      --never-answer-probe   read the probe, never answer\n"
"      --stall-handshake      send STARTTLS, never answer the ClientHello\n"
"      --stall-hold=SECONDS   with --stall-handshake: when the client closes,\n"
"                             keep the connection open SECONDS more\n"
"      --close-handshake      send STARTTLS, read the ClientHello, close\n"
"      --garbage-after-starttls  send STARTTLS, then 256 non-TLS bytes\n"
"      --alert-after=N        after N plaintext bytes to the client, send a\n"
"                             fatal TLS alert (internal_error) and close\n"
"      --drop-after=N         close after N bytes of client traffic\n"
"                             (the N bytes reach the backend first)\n"
"      --drop-every=S         close every connection S seconds (may be\n"
"                             fractional) after it was accepted\n"
"      --drop-rst             close drops with a TCP RST, not a FIN\n"
"      --session-tickets=N    send N TLS 1.3 NewSessionTickets right after\n"
"                             the handshake (default 0: none)\n"
"      --split-tickets=MS     send the tickets' first bytes, wait MS ms,\n"
"                             then the rest (a record split in two)\n"
"      --key-update-after=N   after N plaintext bytes to the client, send a\n"
"                             TLS 1.3 KeyUpdate requesting the peer's too\n"
"      --hostile-record=R     send STARTTLS, read the ClientHello, answer\n"
"                             with a record no peer may accept, written\n"
"                             past GnuTLS: oversized (length 18433, over\n"
"                             the 2^14+2048 limit) or badtype (type 99)\n"
"      --hostile-after=N      with --hostile-record: do the handshake and\n"
"                             relay, then after N plaintext bytes to the\n"
"                             client send that record inside the session\n"
"\n"
"Log line: TIME conn=ID peer=ADDR probe=none|plain|starttls|forwarded|\n"
"unanswered|MODE [tls=ok version= cipher= kx= ... | tls=failed error=...]\n"
"c2b=BYTES b2c=BYTES dur=SECONDS close=\"REASON\"\n"
"SIGTERM/SIGINT: stop accepting, end connections, exit 0.\n",
		MAX_LISTEN);
}

static int parse_addr(const char *text, struct sockaddr_storage *ss,
		      socklen_t *len, bool port0_ok, const char *what)
{
	char host[256];
	const char *port;
	struct addrinfo hints = { 0 }, *ai = NULL;
	char *end;
	unsigned long pn;
	int r;

	if (text[0] == '[') {
		const char *rb = strchr(text, ']');

		if (!rb || rb[1] != ':' || (size_t)(rb - text - 1) >= sizeof(host))
			die("%s: bad address '%s' (want [IPV6]:PORT)", what, text);
		memcpy(host, text + 1, (size_t)(rb - text - 1));
		host[rb - text - 1] = 0;
		port = rb + 2;
	} else {
		const char *colon = strrchr(text, ':');

		if (!colon || (size_t)(colon - text) >= sizeof(host))
			die("%s: bad address '%s' (want ADDR:PORT or [IPV6]:PORT)",
			    what, text);
		if (memchr(text, ':', (size_t)(colon - text)))
			die("%s: IPv6 address '%s' needs brackets: [ADDR]:PORT",
			    what, text);
		memcpy(host, text, (size_t)(colon - text));
		host[colon - text] = 0;
	port = colon + 1;
	}
	errno = 0;
	pn = strtoul(port, &end, 10);
	if (!*port || *end || errno || pn > 65535 || (!port0_ok && pn == 0))
		die("%s: bad port in '%s'", what, text);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	r = getaddrinfo(host, port, &hints, &ai);
	if (r != 0 || !ai)
		die("%s: bad address '%s': %s (numeric addresses only)", what,
		    text, gai_strerror(r));
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

static uint64_t parse_u64(const char *s, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!s || !*s || *s == '-')
		die("%s: missing or negative number", what);
	v = strtoull(s, &end, 10);
	if (*end || errno)
		die("%s: '%s' is not a number", what, s);
	return v;
}

static double parse_secs(const char *s, const char *what, bool zero_ok)
{
	char *end;
	double v;

	errno = 0;
	if (!s || !*s)
		die("%s: missing number of seconds", what);
	v = strtod(s, &end);
	if (*end || errno || v < 0 || v > 1e6 || (!zero_ok && v == 0) || v != v)
		die("%s: '%s' is not a valid number of seconds", what, s);
	return v;
}

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch = tolower(ch);
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

static void load_psk_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	unsigned lineno = 0;

	if (!f)
		die("--psk-file %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *colon, *hex, *e;
		size_t hl, i;
		struct psk_entry *pe;

		lineno++;
		if (!strchr(line, '\n') && !feof(f))
			die("--psk-file %s:%u: line too long", path, lineno);
		e = line + strlen(line);
		while (e > line && isspace((unsigned char)e[-1]))
			*--e = 0;
		if (!line[0] || line[0] == '#')
			continue;
		colon = strchr(line, ':');
		if (!colon)
			die("--psk-file %s:%u: want identity:hexkey", path, lineno);
		*colon = 0;
		hex = colon + 1;
		hl = strlen(hex);
		if (!line[0])
			die("--psk-file %s:%u: empty identity", path, lineno);
		if (hl == 0 || hl % 2 || hl > 512)
			die("--psk-file %s:%u: key must be 2..512 hex digits, even count",
			    path, lineno);
		pe = realloc(psks, (npsks + 1) * sizeof(*psks));
		if (!pe)
			die("out of memory");
		psks = pe;
		pe = &psks[npsks];
		pe->id = strdup(line);
		pe->keylen = hl / 2;
		pe->key = malloc(pe->keylen);
		if (!pe->id || !pe->key)
			die("out of memory");
		for (i = 0; i < pe->keylen; i++) {
			int hi = hexval((unsigned char)hex[2 * i]);
			int lo = hexval((unsigned char)hex[2 * i + 1]);

			if (hi < 0 || lo < 0)
				die("--psk-file %s:%u: key has a non-hex digit", path,
				    lineno);
			pe->key[i] = (unsigned char)(hi << 4 | lo);
		}
		npsks++;
	}
	if (ferror(f))
		die("--psk-file %s: read error", path);
	fclose(f);
	if (!npsks)
		die("--psk-file %s: no identity:hexkey lines", path);
}

static void check_readable(const char *path, const char *what)
{
	if (access(path, R_OK) != 0)
		die("%s %s: %s", what, path, strerror(errno));
}

static void setup_tls(void)
{
	char pbuf[512];
	const char *err_pos = NULL;
	int r;

	r = gnutls_global_init();
	if (r < 0)
		die("gnutls_global_init: %s", gnutls_strerror(r));

	if (o.cert) {
		r = gnutls_certificate_allocate_credentials(&xcred);
		if (r < 0)
			die("gnutls: %s", gnutls_strerror(r));
		r = gnutls_certificate_set_x509_key_file2(xcred, o.cert, o.key,
							  GNUTLS_X509_FMT_PEM,
							  NULL, 0);
		if (r < 0)
			die("--cert %s / --key %s: %s", o.cert, o.key,
			    gnutls_strerror(r));
		if (o.ca) {
			r = gnutls_certificate_set_x509_trust_file(xcred, o.ca,
								   GNUTLS_X509_FMT_PEM);
			if (r <= 0)
				die("--ca %s: %s", o.ca, r == 0 ?
				    "no certificates found" : gnutls_strerror(r));
			gnutls_certificate_set_verify_function(xcred, verify_client);
		}
		gnutls_certificate_set_known_dh_params(xcred, GNUTLS_SEC_PARAM_MEDIUM);
	}
	if (o.psk_file) {
		load_psk_file(o.psk_file);
		r = gnutls_psk_allocate_server_credentials(&pskcred);
		if (r < 0)
			die("gnutls: %s", gnutls_strerror(r));
		gnutls_psk_set_server_credentials_function2(pskcred, psk_lookup);
		gnutls_psk_set_server_known_dh_params(pskcred, GNUTLS_SEC_PARAM_MEDIUM);
	}
	if (o.session_tickets) {
		r = gnutls_session_ticket_key_generate(&ticket_key);
		if (r < 0)
			die("session ticket key: %s", gnutls_strerror(r));
	}

	if (o.priority) {
		snprintf(pbuf, sizeof(pbuf), "%s", o.priority);
	} else {
		snprintf(pbuf, sizeof(pbuf),
			 "NORMAL:-VERS-ALL:%s"
			 ":-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM"
			 ":+CHACHA20-POLY1305:+AES-128-CCM%s",
			 o.tls12_only ? "+VERS-TLS1.2" :
			 o.tls13_only ? "+VERS-TLS1.3" :
			 "+VERS-TLS1.3:+VERS-TLS1.2",
			 o.psk_file ? ":+ECDHE-PSK:+DHE-PSK:+PSK" : "");
	}
	r = gnutls_priority_init(&prio, pbuf, &err_pos);
	if (r < 0)
		die("priority string '%s': %s%s%s", pbuf, gnutls_strerror(r),
		    err_pos ? " at " : "", err_pos ? err_pos : "");
}

static void on_signal(int sig)
{
	int saved = errno;
	char ch = (char)sig;
	ssize_t r;

	atomic_store(&stop_flag, 1);
	r = write(sig_pipe[1], &ch, 1);
	(void)r;
	errno = saved;
}

static void setup_listeners(void)
{
	int i;

	for (i = 0; i < o.nlisten; i++) {
		struct listen_addr *l = &o.listen[i];
		int one = 1;
		int fd = socket(l->ss.ss_family,
				SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

		if (fd < 0)
			die("--listen %s: socket: %s", l->text, strerror(errno));
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (l->ss.ss_family == AF_INET6) {
			int v6only = o.nlisten > 1;

			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only,
				   sizeof(v6only));
		}
		if (bind(fd, (struct sockaddr *)&l->ss, l->len) < 0)
			die("--listen %s: bind: %s", l->text, strerror(errno));
		if (listen(fd, 128) < 0)
			die("--listen %s: listen: %s", l->text, strerror(errno));
		l->len = sizeof(l->ss);
		if (getsockname(fd, (struct sockaddr *)&l->ss, &l->len) < 0)
			die("--listen %s: getsockname: %s", l->text, strerror(errno));
		l->fd = fd;
	}
}

static void write_small_file(const char *path, const char *text, const char *what)
{
	char tmp[PATH_MAX];
	FILE *f;

	/* write then rename, so a reader never sees a partial file */
	if (snprintf(tmp, sizeof(tmp), "%s.tmp%ld", path, (long)getpid()) >=
	    (int)sizeof(tmp))
		die("%s %s: path too long", what, path);
	f = fopen(tmp, "w");
	if (!f)
		die("%s %s: %s", what, path, strerror(errno));
	fputs(text, f);
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		die("%s %s: %s", what, path, strerror(errno));
}

enum {
	OPT_CERT = 256, OPT_KEY, OPT_CA, OPT_PLAIN_OK, OPT_TLS_ONLY, OPT_NO_TLS,
	OPT_PROBE_REPLY, OPT_NEVER_ANSWER, OPT_STALL_HS, OPT_CLOSE_HS,
	OPT_GARBAGE, OPT_ALERT_AFTER, OPT_DROP_AFTER, OPT_DROP_EVERY,
	OPT_DROP_RST, OPT_TICKETS, OPT_SPLIT_TICKETS, OPT_KU_AFTER,
	OPT_REQ_CERT, OPT_PSK,
	OPT_TLS12, OPT_TLS13, OPT_PRIORITY, OPT_LOG, OPT_PORT_FILE,
	OPT_PID_FILE, OPT_FIRST_TO, OPT_HS_TO, OPT_CONN_TO, OPT_MAX_CONNS,
	OPT_HOSTILE, OPT_HOSTILE_AFTER, OPT_STALL_HOLD,
};

static const struct option longopts[] = {
	{ "listen", required_argument, NULL, 'l' },
	{ "backend", required_argument, NULL, 'b' },
	{ "cert", required_argument, NULL, OPT_CERT },
	{ "key", required_argument, NULL, OPT_KEY },
	{ "ca", required_argument, NULL, OPT_CA },
	{ "plain-ok", no_argument, NULL, OPT_PLAIN_OK },
	{ "tls-only", no_argument, NULL, OPT_TLS_ONLY },
	{ "no-tls", no_argument, NULL, OPT_NO_TLS },
	{ "probe-reply", required_argument, NULL, OPT_PROBE_REPLY },
	{ "never-answer-probe", no_argument, NULL, OPT_NEVER_ANSWER },
	{ "stall-handshake", no_argument, NULL, OPT_STALL_HS },
	{ "stall-hold", required_argument, NULL, OPT_STALL_HOLD },
	{ "close-handshake", no_argument, NULL, OPT_CLOSE_HS },
	{ "garbage-after-starttls", no_argument, NULL, OPT_GARBAGE },
	{ "alert-after", required_argument, NULL, OPT_ALERT_AFTER },
	{ "drop-after", required_argument, NULL, OPT_DROP_AFTER },
	{ "drop-every", required_argument, NULL, OPT_DROP_EVERY },
	{ "drop-rst", no_argument, NULL, OPT_DROP_RST },
	{ "session-tickets", required_argument, NULL, OPT_TICKETS },
	{ "split-tickets", required_argument, NULL, OPT_SPLIT_TICKETS },
	{ "key-update-after", required_argument, NULL, OPT_KU_AFTER },
	{ "hostile-record", required_argument, NULL, OPT_HOSTILE },
	{ "hostile-after", required_argument, NULL, OPT_HOSTILE_AFTER },
	{ "require-client-cert", no_argument, NULL, OPT_REQ_CERT },
	{ "psk-file", required_argument, NULL, OPT_PSK },
	{ "tls12-only", no_argument, NULL, OPT_TLS12 },
	{ "tls13-only", no_argument, NULL, OPT_TLS13 },
	{ "priority", required_argument, NULL, OPT_PRIORITY },
	{ "log", required_argument, NULL, OPT_LOG },
	{ "port-file", required_argument, NULL, OPT_PORT_FILE },
	{ "pid-file", required_argument, NULL, OPT_PID_FILE },
	{ "first-timeout", required_argument, NULL, OPT_FIRST_TO },
	{ "handshake-timeout", required_argument, NULL, OPT_HS_TO },
	{ "connect-timeout", required_argument, NULL, OPT_CONN_TO },
	{ "max-conns", required_argument, NULL, OPT_MAX_CONNS },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void parse_args(int argc, char **argv)
{
	int ch, modes;
	uint64_t v;
	size_t i;

	while ((ch = getopt_long(argc, argv, "l:b:vh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'l':
			if (o.nlisten >= MAX_LISTEN)
				die("--listen: at most %d addresses", MAX_LISTEN);
			parse_addr(optarg, &o.listen[o.nlisten].ss,
				   &o.listen[o.nlisten].len, true, "--listen");
			o.listen[o.nlisten].text = optarg;
			o.listen[o.nlisten].fd = -1;
			o.nlisten++;
			break;
		case 'b':
			parse_addr(optarg, &o.backend, &o.backend_len, false,
				   "--backend");
			o.backend_text = optarg;
			break;
		case OPT_CERT: o.cert = optarg; break;
		case OPT_KEY: o.key = optarg; break;
		case OPT_CA: o.ca = optarg; break;
		case OPT_PLAIN_OK: o.tls_only = false; break;
		case OPT_TLS_ONLY: o.tls_only = true; break;
		case OPT_NO_TLS: o.no_tls = true; break;
		case OPT_PROBE_REPLY:
			for (i = 0; i < sizeof(probe_reply_names) /
				    sizeof(probe_reply_names[0]); i++)
				if (!strcmp(optarg, probe_reply_names[i]))
					break;
			if (i == sizeof(probe_reply_names) / sizeof(probe_reply_names[0]))
				die("--probe-reply: unknown mode '%s' (starttls, badverf, "
				    "shortverf, nullverf, badflavor, badxid, denied)",
				    optarg);
			o.probe_reply = (enum probe_reply)i;
			break;
		case OPT_NEVER_ANSWER: o.never_answer_probe = true; break;
		case OPT_STALL_HS: o.stall_handshake = true; break;
		case OPT_STALL_HOLD:
			o.stall_hold = parse_secs(optarg, "--stall-hold", false);
			break;
		case OPT_CLOSE_HS: o.close_handshake = true; break;
		case OPT_GARBAGE: o.garbage = true; break;
		case OPT_ALERT_AFTER:
			o.alert_after = parse_u64(optarg, "--alert-after");
			o.alert_after_set = true;
			break;
		case OPT_DROP_AFTER:
			o.drop_after = parse_u64(optarg, "--drop-after");
			if (o.drop_after == 0)
				die("--drop-after: must be at least 1");
			o.drop_after_set = true;
			break;
		case OPT_DROP_EVERY:
			o.drop_every = parse_secs(optarg, "--drop-every", false);
			break;
		case OPT_DROP_RST: o.drop_rst = true; break;
		case OPT_TICKETS:
			v = parse_u64(optarg, "--session-tickets");
			if (v > 16)
				die("--session-tickets: at most 16");
			o.session_tickets = (unsigned)v;
			break;
		case OPT_SPLIT_TICKETS:
			v = parse_u64(optarg, "--split-tickets");
			if (v < 1 || v > 10000)
				die("--split-tickets: 1..10000 ms");
			o.split_tickets_ms = (unsigned)v;
			break;
		case OPT_KU_AFTER:
			o.key_update_after = parse_u64(optarg, "--key-update-after");
			o.key_update_after_set = true;
			break;
		case OPT_HOSTILE:
			for (i = 1; i < sizeof(hostile_names) / sizeof(hostile_names[0]); i++)
				if (!strcmp(optarg, hostile_names[i]))
					break;
			if (i == sizeof(hostile_names) / sizeof(hostile_names[0]))
				die("--hostile-record: unknown record '%s' (oversized, badtype)",
				    optarg);
			o.hostile = (enum hostile)i;
			break;
		case OPT_HOSTILE_AFTER:
			o.hostile_after = parse_u64(optarg, "--hostile-after");
			o.hostile_after_set = true;
			break;
		case OPT_REQ_CERT: o.require_client_cert = true; break;
		case OPT_PSK: o.psk_file = optarg; break;
		case OPT_TLS12: o.tls12_only = true; break;
		case OPT_TLS13: o.tls13_only = true; break;
		case OPT_PRIORITY: o.priority = optarg; break;
		case OPT_LOG: o.log_file = optarg; break;
		case OPT_PORT_FILE: o.port_file = optarg; break;
		case OPT_PID_FILE: o.pid_file = optarg; break;
		case OPT_FIRST_TO:
			o.first_timeout = parse_secs(optarg, "--first-timeout", false);
			break;
		case OPT_HS_TO:
			o.handshake_timeout = parse_secs(optarg, "--handshake-timeout",
							 false);
			break;
		case OPT_CONN_TO:
			o.connect_timeout = parse_secs(optarg, "--connect-timeout",
						       false);
			break;
		case OPT_MAX_CONNS:
			v = parse_u64(optarg, "--max-conns");
			if (v == 0 || v > 65536)
				die("--max-conns: 1..65536");
			o.max_conns = (unsigned)v;
			break;
		case 'v': o.verbose++; break;
		case 'h': usage(stdout); exit(0);
		default:
			fprintf(stderr, "Try '" PROG " --help'.\n");
			exit(2);
		}
	}
	if (optind < argc)
		die("unexpected argument '%s' (try --help)", argv[optind]);
	if (!o.nlisten)
		die("--listen ADDR:PORT is required (try --help)");
	if (!o.backend_text)
		die("--backend ADDR:PORT is required (try --help)");
	if (!o.cert != !o.key)
		die("--cert and --key go together");
	if (!o.cert && !o.psk_file)
		die("need --cert and --key, or --psk-file (or both)");
	if (o.cert) {
		check_readable(o.cert, "--cert");
		check_readable(o.key, "--key");
	}
	if (o.ca) {
		check_readable(o.ca, "--ca");
		if (!o.cert)
			die("--ca verifies client certificates and needs --cert/--key");
	}
	if (o.psk_file)
		check_readable(o.psk_file, "--psk-file");
	if (o.require_client_cert && !o.ca)
		die("--require-client-cert needs --ca FILE to verify against");
	if (o.tls12_only && o.tls13_only)
		die("--tls12-only and --tls13-only exclude each other");
	if (o.priority && (o.tls12_only || o.tls13_only))
		die("--priority replaces the defaults; do not combine it with "
		    "--tls12-only/--tls13-only");
	modes = o.no_tls + (o.probe_reply != PR_STARTTLS) + o.never_answer_probe +
		o.stall_handshake + o.close_handshake + o.garbage +
		(o.hostile != HR_NONE && !o.hostile_after_set);
	if (modes > 1)
		die("--no-tls, --probe-reply, --never-answer-probe, "
		    "--stall-handshake, --close-handshake, "
		    "--garbage-after-starttls and --hostile-record exclude each other");
	if (o.hostile_after_set && o.hostile == HR_NONE)
		die("--hostile-after=N needs --hostile-record=oversized|badtype");
	if (o.hostile_after_set && o.no_tls)
		die("--hostile-after needs a TLS session; not with --no-tls");
	if (o.no_tls && o.tls_only)
		die("--no-tls and --tls-only exclude each other");
	if (o.key_update_after_set && o.tls12_only)
		die("--key-update-after needs TLS 1.3; not with --tls12-only");
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	pthread_attr_t attr;
	sigset_t all, old;
	char ports[MAX_LISTEN * 8 + 1] = "";
	int i;

	parse_args(argc, argv);
	setup_tls();
	if (o.log_file) {
		log_fp = fopen(o.log_file, "a");
		if (!log_fp)
			die("--log %s: %s", o.log_file, strerror(errno));
	}
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		die("pipe: %s", strerror(errno));

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);

	setup_listeners();
	for (i = 0; i < o.nlisten; i++) {
		char t[INET6_ADDRSTRLEN + 16];
		size_t n = strlen(ports);

		sockaddr_text((struct sockaddr *)&o.listen[i].ss, t, sizeof(t));
		emit("listening on %s, backend %s", t, o.backend_text);
		snprintf(ports + n, sizeof(ports) - n, "%u\n",
			 ntohs(o.listen[i].ss.ss_family == AF_INET6 ?
			       ((struct sockaddr_in6 *)&o.listen[i].ss)->sin6_port :
			       ((struct sockaddr_in *)&o.listen[i].ss)->sin_port));
	}
	if (o.pid_file) {
		char pid[32];

		snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
		write_small_file(o.pid_file, pid, "--pid-file");
	}
	if (o.port_file)
		write_small_file(o.port_file, ports, "--port-file");

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	sigfillset(&all);

	while (!atomic_load(&stop_flag)) {
		struct pollfd p[MAX_LISTEN + 1];
		int r;

		for (i = 0; i < o.nlisten; i++) {
			p[i].fd = o.listen[i].fd;
			p[i].events = POLLIN;
			p[i].revents = 0;
		}
		p[o.nlisten].fd = sig_pipe[0];
		p[o.nlisten].events = POLLIN;
		p[o.nlisten].revents = 0;
		r = poll(p, (nfds_t)o.nlisten + 1, 1000);
		if (r < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		for (i = 0; r > 0 && i < o.nlisten; i++) {
			struct sockaddr_storage ss;
			socklen_t sl = sizeof(ss);
			struct conn *c;
			pthread_t th;
			int fd, one = 1;

			if (!(p[i].revents & POLLIN))
				continue;
			fd = accept4(o.listen[i].fd, (struct sockaddr *)&ss, &sl,
				     SOCK_NONBLOCK | SOCK_CLOEXEC);
			if (fd < 0) {
				if (errno == EMFILE || errno == ENFILE ||
				    errno == ENOBUFS || errno == ENOMEM) {
					/* do not spin on a listener we cannot serve */
					struct timespec ts = { 0, 100 * 1000000L };

					emit("accept: %s", strerror(errno));
					nanosleep(&ts, NULL);
				}
				continue;
			}
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			c = calloc(1, sizeof(*c));
			if (!c) {
				close(fd);
				continue;
			}
			c->cfd = fd;
			c->bfd = -1;
			c->start_ms = now_ms();
			if (o.drop_every > 0)
				c->drop_at_ms = c->start_ms +
						(int64_t)(o.drop_every * 1000);
			c->probe = "none";
			sockaddr_text((struct sockaddr *)&ss, c->peer, sizeof(c->peer));
			pthread_mutex_lock(&conn_mu);
			c->id = ++conn_seq;
			if (nconns >= o.max_conns) {
				pthread_mutex_unlock(&conn_mu);
				emit("conn=%lu peer=%s refused: --max-conns %u reached",
				     c->id, c->peer, o.max_conns);
				close(fd);
				free(c);
				continue;
			}
			nconns++;
			pthread_mutex_unlock(&conn_mu);
			/* signals go to the main thread only */
			pthread_sigmask(SIG_BLOCK, &all, &old);
			if (pthread_create(&th, &attr, conn_thread, c) != 0) {
				pthread_sigmask(SIG_SETMASK, &old, NULL);
				emit("conn=%lu peer=%s refused: cannot create thread",
				     c->id, c->peer);
				close(fd);
				free(c);
				pthread_mutex_lock(&conn_mu);
				nconns--;
				pthread_mutex_unlock(&conn_mu);
				continue;
			}
			pthread_sigmask(SIG_SETMASK, &old, NULL);
		}
	}

	for (i = 0; i < o.nlisten; i++)
		close(o.listen[i].fd);
	{
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 5;
		pthread_mutex_lock(&conn_mu);
		while (nconns > 0) {
			if (pthread_cond_timedwait(&conn_cv, &conn_mu, &until) != 0)
				break;
		}
		i = (int)nconns;
		pthread_mutex_unlock(&conn_mu);
	}
	emit("stopping (signal), %d connection(s) still open", i);
	if (o.pid_file)
		unlink(o.pid_file);
	return 0;
}
