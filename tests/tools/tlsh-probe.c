// SPDX-License-Identifier: GPL-2.0-only
/*
 * tlsh-probe: exercise the AF_TLSH socket calls from user space and print
 * what each returned, one line per call, for the guest tests:
 *
 *   tlsh-probe bind [KEY]     socket + bind (KEY default 0)
 *   tlsh-probe listen         socket + listen (binds to the own netns)
 *   tlsh-probe accept         socket + accept without listen
 *   tlsh-probe getsockopt     socket + getsockopt(SOL_TLSH) on a listener
 *   tlsh-probe hold MS        socket + listen, then MS milliseconds without
 *                             accepting anything, then close: a listener
 *                             that goes away with handshakes queued on it
 *   tlsh-probe stall          socket + listen, then a blocking accept of
 *                             one handshake and a blocking recv() on it
 *                             (an agent waiting for a server that says
 *                             nothing first): "recv ret=N" when it returns
 *
 * Output: "CALL ok" or "CALL errno=NAME"; the exit status is 0 when
 * every call succeeded, 1 otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#ifndef AF_TLSH
#define AF_TLSH 46
#endif
#ifndef SOL_TLSH
#define SOL_TLSH 288
#endif
/* the series' UAPI (make uapi): struct sockaddr_tlsh */
#include <linux/tls.h>

static int report(const char *what, int ret)
{
	if (ret < 0) {
		printf("%s errno=%s\n", what, strerrorname_np(errno));
		return 1;
	}
	printf("%s ok\n", what);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_tlsh sa = { .tlsh_family = AF_TLSH };
	char buf[64];
	socklen_t len = sizeof(buf);
	int fd, rc = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: tlsh-probe bind [KEY]|listen|accept|getsockopt|hold MS|stall\n");
		return 2;
	}
	fd = socket(AF_TLSH, SOCK_STREAM, 0);
	if (report("socket", fd))
		return 1;
	if (!strcmp(argv[1], "bind")) {
		if (argc > 2)
			sa.tlsh_key = atoi(argv[2]);
		rc |= report("bind", bind(fd, (struct sockaddr *)&sa, sizeof(sa)));
	} else if (!strcmp(argv[1], "listen")) {
		rc |= report("listen", listen(fd, 16));
	} else if (!strcmp(argv[1], "accept")) {
		rc |= report("accept", accept4(fd, NULL, NULL, SOCK_NONBLOCK));
	} else if (!strcmp(argv[1], "getsockopt")) {
		rc |= report("listen", listen(fd, 16));
		rc |= report("getsockopt", getsockopt(fd, SOL_TLSH, 1, buf, &len));
	} else if (!strcmp(argv[1], "hold") && argc > 2) {
		rc |= report("listen", listen(fd, 16));
		fflush(stdout);
		usleep((useconds_t)strtoul(argv[2], NULL, 10) * 1000);
		printf("close\n");
	} else if (!strcmp(argv[1], "stall")) {
		int hs;

		rc |= report("listen", listen(fd, 16));
		fflush(stdout);
		hs = accept4(fd, NULL, NULL, 0);
		rc |= report("accept", hs);
		fflush(stdout);
		if (hs >= 0) {
			ssize_t n = recv(hs, buf, 1, 0);

			if (n < 0)
				printf("recv ret=-1 errno=%s\n", strerrorname_np(errno));
			else
				printf("recv ret=%zd\n", n);
			close(hs);
		}
	} else {
		fprintf(stderr, "tlsh-probe: unknown call %s\n", argv[1]);
		return 2;
	}
	close(fd);
	return rc;
}
