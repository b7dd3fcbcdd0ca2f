// SPDX-License-Identifier: GPL-2.0-only
/*
 * hs-serv: a TLS echo server for many handshakes at once (the scaling
 * guest case and the handshake scaling benchmarks).
 * gnutls-serv, the latency benchmarks' server, accepts with a small listen
 * backlog in one thread; with 64 or 256 connections arriving at once its
 * accept queue overflows and the dropped SYNs come back one second later,
 * which measures gnutls-serv rather than the clients. hs-serv listens with
 * a backlog of 1024 and serves each connection on its own thread: GnuTLS
 * server handshake (default priorities, the given certificate), then echo
 * until the peer closes.
 *
 *   hs-serv PORT CERTFILE KEYFILE
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <gnutls/gnutls.h>

static gnutls_certificate_credentials_t cred;

static void *serve(void *arg)
{
	int fd = (int)(long)arg, ret;
	gnutls_session_t s;
	char buf[4096];

	gnutls_init(&s, GNUTLS_SERVER);
	gnutls_set_default_priority(s);
	gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred);
	gnutls_transport_set_int(s, fd);
	do {
		ret = gnutls_handshake(s);
	} while (ret < 0 && !gnutls_error_is_fatal(ret));
	while (ret >= 0) {
		ret = gnutls_record_recv(s, buf, sizeof(buf));
		if (ret == GNUTLS_E_AGAIN || ret == GNUTLS_E_INTERRUPTED) {
			ret = 0;
			continue;
		}
		if (ret <= 0)
			break;
		if (gnutls_record_send(s, buf, ret) < 0)
			break;
	}
	gnutls_deinit(s);
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	pthread_attr_t attr;
	int lfd, one = 1;

	if (argc != 4) {
		fprintf(stderr, "usage: hs-serv PORT CERTFILE KEYFILE\n");
		return 64;
	}
	signal(SIGPIPE, SIG_IGN);
	gnutls_global_init();
	gnutls_certificate_allocate_credentials(&cred);
	if (gnutls_certificate_set_x509_key_file(cred, argv[2], argv[3], GNUTLS_X509_FMT_PEM) < 0) {
		fprintf(stderr, "hs-serv: cannot load %s / %s\n", argv[2], argv[3]);
		return 1;
	}
	sa.sin6_port = htons(atoi(argv[1]));
	lfd = socket(AF_INET6, SOCK_STREAM, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1024)) {
		perror("hs-serv: listen");
		return 1;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (;;) {
		pthread_t t;
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0)
			continue;
		if (pthread_create(&t, &attr, serve, (void *)(long)fd))
			close(fd);
	}
}
