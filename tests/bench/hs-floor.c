// SPDX-License-Identifier: GPL-2.0-only
/*
 * hs-floor: the user-space floor of the handshake benchmark. Does, REPS
 * times, what the kernel test consumer and tlsh-helper do together for one
 * handshake, but all in one user-space process: socket + connect, a GnuTLS
 * client handshake with certificate and name verification against CAFILE,
 * then close. The credentials and the priorities are set up once, before
 * the first handshake (as the resident agent has them); the priorities are
 * the agent's defaults (handshake-helper/priorities.h, TLS 1.2 off as in
 * its default configuration), so that both do the same handshake (key
 * exchange group, cipher). Prints one line per handshake:
 *
 *   hs-floor HOST PORT NAME CAFILE REPS [PARALLEL]
 *   time_us=1234 status=ok version=TLS1.3 cipher=AES-128-GCM group=X25519
 *
 * REPS 0: one handshake for each line read on standard input, so that a
 * script can interleave them with other measurements in a warm process.
 * A line "fork" runs that handshake in a process forked for it (see
 * forked_handshake()).
 *
 * With PARALLEL given, each repetition starts PARALLEL handshakes at once
 * (one thread each) and prints the time until the last one finished:
 *
 *   batch_us=23456 ok=64 failed=0
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <gnutls/gnutls.h>

#include "../../handshake-helper/priorities.h"

static gnutls_certificate_credentials_t cred;
static gnutls_priority_t prio;
static struct addrinfo *ai;
static const char *name;
static pthread_barrier_t barrier;

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* one handshake; returns 0 on success, prints nothing */
static int handshake(char *desc, size_t desclen)
{
	gnutls_session_t s;
	int ret, fd = socket(ai->ai_family, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		snprintf(desc, desclen, "connect failed");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	gnutls_init(&s, GNUTLS_CLIENT);
	gnutls_priority_set(s, prio);
	gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred);
	gnutls_server_name_set(s, GNUTLS_NAME_DNS, name, strlen(name));
	gnutls_session_set_verify_cert(s, name, 0);
	gnutls_transport_set_int(s, fd);
	do {
		ret = gnutls_handshake(s);
	} while (ret < 0 && !gnutls_error_is_fatal(ret));
	if (ret < 0)
		snprintf(desc, desclen, "%s", gnutls_strerror(ret));
	else
		snprintf(desc, desclen, "ok version=%s cipher=%s group=%s",
			 gnutls_protocol_get_name(gnutls_protocol_get_version(s)),
			 gnutls_cipher_get_name(gnutls_cipher_get(s)),
			 gnutls_group_get_name(gnutls_group_get(s)));
	gnutls_deinit(s);
	close(fd);
	return ret < 0 ? -1 : 0;
}

/*
 * A handshake in a process forked for it, as the agent serves each one
 * (handshake-helper/worker.c). Timed as the agent's critical path is: from
 * the fork to the child's report that its handshake is done; its exit and
 * reaping are not.
 */
static int forked_handshake(char *desc, size_t desclen)
{
	int p[2], st;
	ssize_t n;
	pid_t pid;

	if (pipe(p) < 0) {
		snprintf(desc, desclen, "pipe failed");
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(desc, desclen, "fork failed");
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		char d[128];
		int ret = handshake(d, sizeof(d));

		if (write(p[1], d, strlen(d) + 1) < 0 || ret < 0)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	n = read(p[0], desc, desclen - 1);
	close(p[0]);
	desc[n > 0 ? n : 0] = '\0';
	if (n <= 0)
		snprintf(desc, desclen, "no report from the forked process");
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	return 0;
}

static void *worker(void *arg)
{
	char desc[128];

	pthread_barrier_wait(&barrier);
	*(int *)arg = handshake(desc, sizeof(desc));
	return NULL;
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	int reps, par = 1, batch = argc == 7, i, j, fails = 0, forked = 0;

	if (argc != 6 && argc != 7) {
		fprintf(stderr, "usage: hs-floor HOST PORT NAME CAFILE REPS [PARALLEL]\n");
		return 64;
	}
	name = argv[3];
	reps = atoi(argv[5]);
	if (argc == 7)
		par = atoi(argv[6]);
	if (par < 1 || par > 1024) {
		fprintf(stderr, "hs-floor: PARALLEL must be 1..1024\n");
		return 64;
	}
	if (getaddrinfo(argv[1], argv[2], &hints, &ai)) {
		fprintf(stderr, "hs-floor: cannot resolve %s\n", argv[1]);
		return 1;
	}
	gnutls_global_init();
	if (gnutls_priority_init2(&prio, TLSH_DEFAULT_PRIORITIES ":-VERS-TLS1.2", NULL,
				  GNUTLS_PRIORITY_INIT_DEF_APPEND) < 0) {
		fprintf(stderr, "hs-floor: the agent's default priorities do not parse\n");
		return 1;
	}
	gnutls_certificate_allocate_credentials(&cred);
	if (gnutls_certificate_set_x509_trust_file(cred, argv[4], GNUTLS_X509_FMT_PEM) <= 0) {
		fprintf(stderr, "hs-floor: no CA in %s\n", argv[4]);
		return 1;
	}
	for (i = 0; reps == 0 || i < reps; i++) {
		if (reps == 0) {
			char line[64];

			if (!fgets(line, sizeof(line), stdin))
				break;
			forked = !strncmp(line, "fork", 4);
		}
		if (!batch) {
			char desc[128];
			long long t0 = now_us();
			int ret = forked ? forked_handshake(desc, sizeof(desc))
					 : handshake(desc, sizeof(desc));

			printf("time_us=%lld status=%s\n", now_us() - t0, desc);
			fails += ret < 0;
		} else {
			pthread_t *th = calloc(par, sizeof(*th));
			int *res = calloc(par, sizeof(*res)), bad = 0;
			long long t0;

			pthread_barrier_init(&barrier, NULL, par + 1);
			for (j = 0; j < par; j++)
				pthread_create(&th[j], NULL, worker, &res[j]);
			t0 = now_us();
			pthread_barrier_wait(&barrier);
			for (j = 0; j < par; j++) {
				pthread_join(th[j], NULL);
				bad += res[j] < 0;
			}
			printf("batch_us=%lld ok=%d failed=%d\n", now_us() - t0, par - bad, bad);
			fails += bad;
			pthread_barrier_destroy(&barrier);
			free(th);
			free(res);
		}
		fflush(stdout);
	}
	gnutls_certificate_free_credentials(cred);
	freeaddrinfo(ai);
	return fails ? 1 : 0;
}
