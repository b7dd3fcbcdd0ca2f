// SPDX-License-Identifier: GPL-2.0
/*
 * tlsh-helper --accept [ADDR:]PORT: listen on a plain TCP socket, accept
 * one connection and run the agent's server handshake on it, so that the
 * server role can be tested without the AF_TLSH kernel: with the
 * configured certificate (or --cert-file/--key-file) and client trust
 * store, and PSK clients too if the configured keyring is found, as for
 * a kernel's x509 request; or with PSKs from the configured keyring
 * (--psk) or a psktool(1) file (--psk-file), as for a PSK request, or,
 * with --x509, as for an x509 request with those PSKs.  Prints what the
 * kernel would be told: the client and the key naming it, or the errno of
 * a failure ("status: ...").  --ktls and --send as with --connect.
 */
#include "accept.h"
#include "handshake.h"
#include "keyring.h"
#include "ktls.h"
#include "log.h"
#include "server.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* "[ADDR:]PORT" or "[V6ADDR]:PORT" (numeric; ADDR 127.0.0.1 by default,
 * PORT 0: any free one) into ss; 0 or -EINVAL */
static int parse_listen(const char *t, struct sockaddr_storage *ss,
			socklen_t *sslen)
{
	char host[INET6_ADDRSTRLEN] = "127.0.0.1";
	const char *port = t, *colon;
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	unsigned long pn;
	size_t hl;

	if (t[0] == '[') {
		const char *end = strchr(t, ']');

		if (!end || end[1] != ':')
			return -EINVAL;
		hl = (size_t)(end - t - 1);
		if (hl == 0 || hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, t + 1, hl);
		host[hl] = '\0';
		port = end + 2;
	} else if ((colon = strrchr(t, ':'))) {
		hl = (size_t)(colon - t);
		if (hl == 0 || hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, t, hl);
		host[hl] = '\0';
		port = colon + 1;
	}
	if (tlsh_parse_uint(port, 65535, &pn) < 0)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)pn);
		*sslen = sizeof(*in);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)pn);
		*sslen = sizeof(*in6);
		return 0;
	}
	return -EINVAL;
}

/* "192.0.2.1:2049" or "[2001:db8::1]:2049" */
static void describe(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, ntohs(in6->sin6_port));
	} else {
		const struct sockaddr_in *in = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, ntohs(in->sin_port));
	}
}

/* A listening socket on target, its address in where; fd or -errno,
 * logged */
static int listen_on(const char *target, char *where, size_t wlen)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, e, one = 1;

	if (parse_listen(target, &ss, &len) < 0) {
		log_err("--accept: expected [ADDRESS:]PORT or [IPV6ADDRESS]:PORT");
		return -EINVAL;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		e = errno;
		log_err("socket: %s", strerror(e));
		return -e;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 1) < 0) {
		e = errno;
		log_err("cannot listen on %s: %s", target, strerror(e));
		close(fd);
		return -e;
	}
	len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
		describe(&ss, where, wlen);
	else
		tlsh_copy_string(where, wlen, target);
	return fd;
}

/* The one connection, within wait_s seconds (0: no limit); fd or -errno,
 * logged */
static int accept_one(int lfd, unsigned wait_s, char *peer, size_t plen)
{
	struct pollfd pfd = { .fd = lfd, .events = POLLIN };
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int fd, pr;

	do
		pr = poll(&pfd, 1, wait_s ? (int)(wait_s * 1000) : -1);
	while (pr < 0 && errno == EINTR);
	if (pr == 0) {
		log_err("--accept: no connection within %u s", wait_s);
		return -ETIMEDOUT;
	}
	fd = pr < 0 ? -1 : accept4(lfd, (struct sockaddr *)&ss, &len,
				   SOCK_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		log_err("accept: %s", strerror(e));
		return -e;
	}
	describe(&ss, peer, plen);
	return fd;
}

/*
 * Keep the connection until the client closes it (at most LINGER_MS), as
 * a server with work to do on it would.  Closing at once would look like
 * a refusal to a TLS 1.3 client that waits for the server's verdict on its
 * certificate, and closing with the client's close_notify unread would
 * reset the connection.
 */
#define LINGER_MS	5000

static void linger(int fd)
{
	uint64_t end = tlsh_now_ms() + LINGER_MS;
	char buf[512];

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		uint64_t now = tlsh_now_ms();

		if (now >= end || poll(&pfd, 1, (int)(end - now)) <= 0 ||
		    recv(fd, buf, sizeof(buf), 0) <= 0)
			return;
	}
}

/* What the kernel would be told: "status: EKEYREJECTED" */
static void print_status(int ret)
{
	const char *name = strerrorname_np(-ret);

	if (name)
		printf("status: %s\n", name);
	else
		printf("status: %d\n", -ret);
	fflush(stdout);
}

/* The client, and the key that would name it to the kernel; 0 or -errno,
 * logged */
static int print_client(const struct hs_session *hs, const char *peer)
{
	char name[300], desc[TLSH_CLIENT_KEY_DESC], err[512];
	int32_t serial;
	int ret;

	ret = tlsh_server_identity(hs, &serial, desc, err, sizeof(err));
	if (ret) {
		log_err("server handshake with %s failed: %s", peer, err);
		return ret;
	}
	tlsh_server_client_name(hs, name, sizeof(name));
	if (serial && desc[0])
		printf("client: %s (identity key %d: %s)\n", name, serial, desc);
	else if (serial)
		printf("client: %s (identity key %d)\n", name, serial);
	else
		printf("client: %s\n", name);
	fflush(stdout);
	return 0;
}

int tlsh_accept_main(const struct connect_opts *o, const struct config *cfg,
		     unsigned wait_s)
{
	char err[512], desc[96], where[80] = "", peer[80] = "";
	struct tlsh_server_psk_file pf = { NULL, 0 };
	unsigned char *pskbuf = NULL;
	struct tlsh_x509 x509;
	struct hs_session hs;
	struct hs_params p;
	int32_t ring = 0;
	int lfd = -1, fd = -1, ret, status = 1, psk_type;
	size_t psklen = 0;

	memset(&x509, 0, sizeof(x509));
	memset(&hs, 0, sizeof(hs));
	memset(&p, 0, sizeof(p));
	if (o->ktls && access("/sys/module/tls", F_OK) < 0) {
		log_err("--ktls: kernel TLS is not available (/sys/module/tls does not exist; not loading it)");
		return 3;
	}
	/* the credentials first: nothing to accept a client for without */
	psk_type = (o->psk_file || o->server_psk) && !o->server_x509;
	p.type = psk_type ? TLSH_TYPE_SERVERHELLO_PSK : TLSH_TYPE_SERVERHELLO_X509;
	if (o->psk_file) {
		if (tlsh_connect_load_file(o->psk_file, &pskbuf, &psklen) < 0)
			return 1;
		pf.buf = pskbuf;
		pf.len = psklen;
		p.psk_lookup = tlsh_server_psk_from_file;
		p.psk_lookup_arg = &pf;
	} else if (o->server_psk) {
		ring = tlsh_server_psk_keyring(cfg, 0, err, sizeof(err));
		if (ring < 0) {
			log_err("server handshake: %s", err);
			print_status(ring);
			return 1;
		}
		p.psk_lookup = tlsh_server_psk_from_keyring;
		p.psk_lookup_arg = &ring;
	}
	if (!psk_type) {
		/* x509: the certificate, if any, and PSK clients too */
		if (o->cert_file) {
			if (tlsh_connect_load_x509(o->cert_file, o->key_file,
						   &x509) < 0)
				goto out;
		} else if (cfg->server_cert[0]) {
			ret = tlsh_server_load_configured(cfg, &x509, err,
							  sizeof(err));
			if (ret) {
				log_err("server handshake: %s", err);
				print_status(ret);
				goto out;
			}
		}
		/* as for the kernel's request: the configured keyring's PSK
		 * clients, where it is found */
		if (!p.psk_lookup) {
			ring = tlsh_server_x509_psk_keyring(cfg, 0,
							    x509.npcerts != 0,
							    err, sizeof(err));
			if (ring < 0) {
				log_err("server handshake: %s", err);
				print_status(ring);
				goto out;
			}
			if (ring > 0) {
				p.psk_lookup = tlsh_server_psk_from_keyring;
				p.psk_lookup_arg = &ring;
			}
		}
		p.x509 = x509.npcerts ? &x509 : NULL;
	}
	p.priorities = o->priorities;
	p.timeout_ms = cfg->handshake_timeout * 1000u;

	lfd = listen_on(o->target, where, sizeof(where));
	if (lfd < 0) {
		status = lfd == -EINVAL ? 2 : 1;
		goto out;
	}
	printf("listening on %s\n", where);
	fflush(stdout);
	fd = accept_one(lfd, wait_s, peer, sizeof(peer));
	close(lfd);
	if (fd < 0)
		goto out;

	ret = tlsh_hs_run(&hs, fd, &p, err, sizeof(err));
	if (ret) {
		log_err("server handshake with %s failed: %s", peer, err);
		print_status(ret);
		goto out;
	}
	tlsh_hs_describe(hs.session, desc, sizeof(desc));
	printf("handshake ok: %s\n", desc);
	fflush(stdout);
	ret = print_client(&hs, peer);
	if (ret) {
		print_status(ret);
		goto out;
	}
	if (tlsh_connect_io(fd, hs.session, o) < 0)
		goto out;
	linger(fd);
	status = 0;
out:
	tlsh_hs_session_free(&hs);
	tlsh_keyring_x509_free(&x509);
	tlsh_keyring_free_payload(pskbuf, psklen);
	if (fd >= 0)
		close(fd);
	return status;
}
