// SPDX-License-Identifier: GPL-2.0
/*
 * tlsh-helper --connect HOST:PORT: connect a plain TCP socket and run the
 * agent's handshake code on it, so handshakes can be tested without the
 * AF_TLSH kernel (accept.c is the server's side: --accept).  With --ktls the session is then handed to the kernel
 * and --send/echo I/O goes through kTLS (only where the tls module is
 * already loaded: this never causes it to be loaded).
 */
#include "connect.h"
#include "handshake.h"
#include "keyring.h"
#include "ktls.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define IO_TIMEOUT_MS	5000

/* "HOST:PORT" or "[ADDRESS]:PORT"; 0 or -EINVAL */
static int split_target(const char *t, char *host, size_t hostlen,
			char *port, size_t portlen)
{
	const char *colon, *h = t;
	size_t hl;
	unsigned long pn;

	if (t[0] == '[') {
		const char *end = strchr(t, ']');

		if (!end || end[1] != ':')
			return -EINVAL;
		h = t + 1;
		hl = (size_t)(end - h);
		colon = end + 1;
	} else {
		colon = strrchr(t, ':');
		if (!colon)
			return -EINVAL;
		hl = (size_t)(colon - t);
	}
	if (hl == 0 || hl >= hostlen || tlsh_parse_uint(colon + 1, 65535, &pn) < 0 ||
	    pn == 0 || tlsh_copy_string(port, portlen, colon + 1) < 0)
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = '\0';
	return 0;
}

/* A connected TCP socket (blocking), or -errno */
static int connect_timeout(const struct addrinfo *ai, unsigned timeout_ms)
{
	struct pollfd pfd;
	int fd, err = 0;
	socklen_t len = sizeof(err);

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    ai->ai_protocol);
	if (fd < 0)
		return -errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		if (errno != EINPROGRESS) {
			err = errno;
			close(fd);
			return -err;
		}
		pfd.fd = fd;
		pfd.events = POLLOUT;
		if (poll(&pfd, 1, (int)timeout_ms) <= 0) {
			close(fd);
			return -ETIMEDOUT;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
			close(fd);
			return err ? -err : -EIO;
		}
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

int tlsh_connect_load_file(const char *path, unsigned char **buf, size_t *len)
{
	int e = tlsh_read_file(path, TLSH_PAYLOAD_MAX, buf, len);

	if (e)
		log_err("%s: %s", path, strerror(-e));
	return e;
}

int tlsh_connect_load_x509(const char *cert_file, const char *key_file,
			   struct tlsh_x509 *x)
{
	unsigned char *buf;
	size_t len;
	char err[256];
	int e;

	e = tlsh_connect_load_file(cert_file, &buf, &len);
	if (e)
		return e;
	e = tlsh_keyring_parse_certs(x, buf, len, err, sizeof(err));
	tlsh_keyring_free_payload(buf, len);
	if (e) {
		log_err("%s: %s", cert_file, err);
		return e;
	}
	e = tlsh_connect_load_file(key_file, &buf, &len);
	if (e)
		return e;
	e = tlsh_keyring_parse_privkey(x, buf, len, err, sizeof(err));
	tlsh_keyring_free_payload(buf, len);
	if (e)
		log_err("%s: %s", key_file, err);
	return e;
}

/* The client certificate and key, or the PSK, from files; 0 or -errno,
 * logged */
static int load_creds(const struct connect_opts *o, struct tlsh_x509 *x,
		      struct tlsh_psk *psk)
{
	if (o->psk_file) {
		unsigned char *buf;
		size_t len;
		char err[256];
		int e = tlsh_connect_load_file(o->psk_file, &buf, &len);

		if (e)
			return e;
		e = tlsh_keyring_parse_psk(psk, buf, len, o->psk_identity, err,
					   sizeof(err));
		tlsh_keyring_free_payload(buf, len);
		if (e)
			log_err("%s: %s", o->psk_file, err);
		return e;
	}
	if (!o->cert_file)
		return 0;
	return tlsh_connect_load_x509(o->cert_file, o->key_file, x);
}

/* Read one application-data chunk from a kTLS socket, skipping other
 * record types (e.g. a TLS 1.3 NewSessionTicket).  Returns bytes, 0 when
 * the peer closed, or -errno. */
static ssize_t ktls_recv(int fd, char *buf, size_t len, uint64_t deadline)
{
	for (;;) {
		char cbuf[CMSG_SPACE(sizeof(unsigned char))];
		struct iovec iov = { buf, len };
		struct msghdr msg;
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		const struct cmsghdr *cm;
		uint64_t now = tlsh_now_ms();
		ssize_t n;

		if (now >= deadline || poll(&pfd, 1, (int)(deadline - now)) <= 0)
			return -ETIMEDOUT;
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		n = recvmsg(fd, &msg, 0);
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		cm = CMSG_FIRSTHDR(&msg);
		if (cm && cm->cmsg_level == SOL_TLS &&
		    cm->cmsg_type == TLS_GET_RECORD_TYPE &&
		    *CMSG_DATA(cm) != 23 /* application_data */) {
			log_debug("kTLS: skipped record of type %u", *CMSG_DATA(cm));
			continue;
		}
		return n;
	}
}

static int echo(int fd, gnutls_session_t s, int ktls, const char *msg)
{
	size_t want = strlen(msg), got = 0;
	uint64_t deadline = tlsh_now_ms() + IO_TIMEOUT_MS;
	char buf[4096];
	ssize_t n;

	if (want + 1 >= sizeof(buf)) {
		log_err("--send: string too long");
		return -E2BIG;
	}
	memcpy(buf, msg, want);
	buf[want] = '\n';
	n = ktls ? send(fd, buf, want + 1, MSG_NOSIGNAL)
		 : gnutls_record_send(s, buf, want + 1);
	if (n != (ssize_t)(want + 1)) {
		int e = !ktls ? EPROTO : n < 0 ? errno : EIO;

		log_err("send failed: %s", ktls ? strerror(e)
						 : gnutls_strerror((int)n));
		/* a server that refused us after the handshake may have
		 * closed before we sent: its alert says why */
		if (!ktls && tlsh_hs_closed_after(s, fd, buf, sizeof(buf)) == -EACCES)
			log_err("receive failed: %s (%s)",
				gnutls_strerror(GNUTLS_E_FATAL_ALERT_RECEIVED), buf);
		return -e;
	}
	if (!ktls)
		gnutls_record_set_timeout(s, IO_TIMEOUT_MS);
	while (!memchr(buf, '\n', got) && got < sizeof(buf) - 1 &&
	       tlsh_now_ms() < deadline) {
		n = ktls ? ktls_recv(fd, buf + got, sizeof(buf) - 1 - got, deadline)
			 : gnutls_record_recv(s, buf + got, sizeof(buf) - 1 - got);
		if (!ktls && (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED))
			continue;
		if (n <= 0) {
			log_err("receive failed: %s",
				n == 0 ? "connection closed" :
				ktls ? strerror((int)-n) : gnutls_strerror((int)n));
			return n == 0 ? -ECONNRESET : ktls ? (int)n : -EPROTO;
		}
		got += (size_t)n;
	}
	buf[got] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	printf("received: %s\n", buf);
	if (!ktls)
		gnutls_bye(s, GNUTLS_SHUT_WR);
	return 0;
}

int tlsh_connect_io(int fd, gnutls_session_t s, const struct connect_opts *o)
{
	if (o->ktls) {
		char err[256];
		int ret = tlsh_ktls_install(fd, s, err, sizeof(err));

		if (ret) {
			log_err("kTLS: %s", err);
			return ret;
		}
		printf("ktls installed\n");
		fflush(stdout);
	}
	return o->send ? echo(fd, s, o->ktls, o->send) : 0;
}

int tlsh_connect_main(const struct connect_opts *o, const struct config *cfg)
{
	char host[256], port[8], err[512], desc[96], name[256];
	struct addrinfo hints, *res = NULL;
	const struct addrinfo *ai;
	struct tlsh_x509 x509;
	struct tlsh_psk psk;
	struct hs_session hs;
	struct hs_params p;
	const char *peername;
	int fd = -EADDRNOTAVAIL, ret, status = 1;	/* no address at all */

	memset(&x509, 0, sizeof(x509));
	memset(&psk, 0, sizeof(psk));
	memset(&hs, 0, sizeof(hs));
	if (split_target(o->target, host, sizeof(host), port, sizeof(port)) < 0) {
		log_err("--connect: expected HOST:PORT or [ADDRESS]:PORT");
		return 2;
	}
	if (tlsh_normalize_peername(o->peername ? o->peername : host, name,
				    sizeof(name)) < 0) {
		log_err("peer name '%s' is neither a DNS name nor an IP address",
			o->peername ? o->peername : host);
		return 2;
	}
	peername = name;
	if (o->ktls && access("/sys/module/tls", F_OK) < 0) {
		log_err("--ktls: kernel TLS is not available (/sys/module/tls does not exist; not loading it)");
		return 3;
	}
	if (load_creds(o, &x509, &psk) < 0)
		return 1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	ret = getaddrinfo(host, port, &hints, &res);
	if (ret) {
		log_err("%s: %s", host, gai_strerror(ret));
		goto out;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = connect_timeout(ai, cfg->handshake_timeout * 1000u);
		if (fd >= 0)
			break;
	}
	if (fd < 0) {
		log_err("cannot connect to %s: %s", o->target, strerror(-fd));
		goto out;
	}

	memset(&p, 0, sizeof(p));
	p.type = o->psk_file ? TLSH_TYPE_CLIENTHELLO_PSK : TLSH_TYPE_CLIENTHELLO_X509;
	p.priorities = o->priorities;
	p.peername = peername;
	if (ai->ai_family == AF_INET) {
		memcpy(p.peer_ip, &((const struct sockaddr_in *)ai->ai_addr)->sin_addr, 4);
		p.peer_ip_len = 4;
	} else if (ai->ai_family == AF_INET6) {
		memcpy(p.peer_ip, &((const struct sockaddr_in6 *)ai->ai_addr)->sin6_addr, 16);
		p.peer_ip_len = 16;
	}
	p.x509 = o->cert_file ? &x509 : NULL;
	p.psk = o->psk_file ? &psk : NULL;
	p.timeout_ms = cfg->handshake_timeout * 1000u;

	ret = tlsh_hs_run(&hs, fd, &p, err, sizeof(err));
	if (ret) {
		log_err("handshake with %s (%s) failed: %s", o->target, peername, err);
		goto out;
	}
	tlsh_hs_describe(hs.session, desc, sizeof(desc));
	printf("handshake ok: %s\n", desc);
	fflush(stdout);
	if (tlsh_connect_io(fd, hs.session, o) < 0)
		goto out;
	status = 0;
out:
	if (res)
		freeaddrinfo(res);
	tlsh_hs_session_free(&hs);
	tlsh_keyring_x509_free(&x509);
	tlsh_keyring_psk_clear(&psk);
	if (fd >= 0)
		close(fd);
	return status;
}
