// SPDX-License-Identifier: GPL-2.0-only
/*
 * tcp-sink PORT: accept TCP connections (IPv4 and IPv6) and never answer;
 * reads and discards what arrives. A peer that never speaks TLS, for the
 * guest's stall tests. Exits on SIGTERM.
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAXFD 1024

int main(int argc, char **argv)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	static struct pollfd fds[MAXFD];
	int one = 1, lfd, n = 1;
	char buf[4096];

	if (argc != 2) {
		fprintf(stderr, "usage: tcp-sink PORT\n");
		return 2;
	}
	sa.sin6_port = htons((unsigned short)atoi(argv[1]));
	lfd = socket(AF_INET6, SOCK_STREAM, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 128)) {
		perror("tcp-sink");
		return 1;
	}
	fds[0].fd = lfd;
	fds[0].events = POLLIN;
	for (;;) {
		if (poll(fds, n, -1) < 0)
			return 1;
		for (int i = n - 1; i >= 0; i--) {
			if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (i == 0) {
				int c = accept(lfd, NULL, NULL);

				if (c >= 0 && n < MAXFD) {
					fds[n].fd = c;
					fds[n++].events = POLLIN;
				} else if (c >= 0) {
					close(c);
				}
			} else if (read(fds[i].fd, buf, sizeof(buf)) <= 0) {
				close(fds[i].fd);
				fds[i] = fds[--n];
			}
		}
	}
}
