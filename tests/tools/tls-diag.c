// SPDX-License-Identifier: GPL-2.0-only
/*
 * tls-diag [PORT]: the kernel TLS state of this network namespace's
 * established TCP connections (IPv4 and IPv6, kernel sockets included),
 * as sock_diag reports it (INET_DIAG_ULP_INFO, what "ss -tni" shows of
 * the tls ULP, with the flags this system's ss does not print). With
 * PORT, only connections with that local or remote port. One line per
 * connection that has the tls ULP:
 *
 *   LOCAL REMOTE version=1.3 cipher=aes-gcm-256 tx=sw rx=sw rx_no_pad=1
 *
 * Connections without it are not listed. Exit status: 0, 1 when sock_diag
 * fails, 2 on a usage error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tls.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TCP_ESTABLISHED_STATE 1

static const char *conf_name(unsigned int c)
{
	switch (c) {
	case TLS_CONF_BASE: return "base";
	case TLS_CONF_SW: return "sw";
	case TLS_CONF_HW: return "hw";
	case TLS_CONF_HW_RECORD: return "hw-record";
	default: return "?";
	}
}

static const char *cipher_name(unsigned int c)
{
	switch (c) {
	case TLS_CIPHER_AES_GCM_128: return "aes-gcm-128";
	case TLS_CIPHER_AES_GCM_256: return "aes-gcm-256";
	case TLS_CIPHER_AES_CCM_128: return "aes-ccm-128";
	case TLS_CIPHER_CHACHA20_POLY1305: return "chacha20-poly1305";
	default: return "?";
	}
}

static void endpoint(char *buf, size_t len, int family, const __be32 *addr,
		     __be16 port)
{
	char a[INET6_ADDRSTRLEN];

	inet_ntop(family, addr, a, sizeof(a));
	snprintf(buf, len, family == AF_INET6 ? "[%s]:%u" : "%s:%u", a,
		 ntohs(port));
}

/* the tls nest of INET_DIAG_ULP_INFO: print its fields */
static void print_tls(const char *local, const char *remote,
		      struct rtattr *nest)
{
	unsigned int version = 0, cipher = 0, tx = 0, rx = 0, no_pad = 0;
	int len = RTA_PAYLOAD(nest);
	struct rtattr *a;

	for (a = RTA_DATA(nest); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		switch (a->rta_type) {
		case TLS_INFO_VERSION:
			version = *(__u16 *)RTA_DATA(a);
			break;
		case TLS_INFO_CIPHER:
			cipher = *(__u16 *)RTA_DATA(a);
			break;
		case TLS_INFO_TXCONF:
			tx = *(__u16 *)RTA_DATA(a);
			break;
		case TLS_INFO_RXCONF:
			rx = *(__u16 *)RTA_DATA(a);
			break;
		case TLS_INFO_RX_NO_PAD:
			no_pad = 1;
			break;
		}
	}
	printf("%s %s version=%s cipher=%s tx=%s rx=%s rx_no_pad=%u\n",
	       local, remote,
	       version == TLS_1_3_VERSION ? "1.3" :
	       version == TLS_1_2_VERSION ? "1.2" : "?",
	       cipher_name(cipher), conf_name(tx), conf_name(rx), no_pad);
}

static void one_socket(struct inet_diag_msg *m, int len, int port)
{
	char local[64], remote[64];
	struct rtattr *a, *u;
	int ulen;

	if (port >= 0 && ntohs(m->id.idiag_sport) != port &&
	    ntohs(m->id.idiag_dport) != port)
		return;
	endpoint(local, sizeof(local), m->idiag_family, m->id.idiag_src,
		 m->id.idiag_sport);
	endpoint(remote, sizeof(remote), m->idiag_family, m->id.idiag_dst,
		 m->id.idiag_dport);
	for (a = (struct rtattr *)(m + 1); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type != INET_DIAG_ULP_INFO)
			continue;
		ulen = RTA_PAYLOAD(a);
		for (u = RTA_DATA(a); RTA_OK(u, ulen); u = RTA_NEXT(u, ulen))
			if (u->rta_type == INET_ULP_INFO_TLS)
				print_tls(local, remote, u);
	}
}

static int dump(int fd, int family, int port)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
	} q = {
		.nlh = {
			.nlmsg_len = sizeof(q),
			.nlmsg_type = SOCK_DIAG_BY_FAMILY,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
		},
		.req = {
			.sdiag_family = family,
			.sdiag_protocol = IPPROTO_TCP,
			.idiag_ext = 1 << (INET_DIAG_INFO - 1),
			.idiag_states = 1 << TCP_ESTABLISHED_STATE,
		},
	};
	static char buf[65536];
	struct nlmsghdr *h;

	if (send(fd, &q, sizeof(q), 0) < 0)
		return -errno;
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n < 0)
			return -errno;
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				return e->error ? e->error : -EPROTO;
			}
			one_socket(NLMSG_DATA(h),
				   h->nlmsg_len - NLMSG_LENGTH(sizeof(struct inet_diag_msg)),
				   port);
		}
	}
}

int main(int argc, char **argv)
{
	int fd, ret, port = -1;

	if (argc > 2 || (argc == 2 && (atoi(argv[1]) <= 0 || atoi(argv[1]) > 65535))) {
		fprintf(stderr, "usage: tls-diag [PORT]\n");
		return 2;
	}
	if (argc == 2)
		port = atoi(argv[1]);
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0) {
		perror("tls-diag: socket(NETLINK_SOCK_DIAG)");
		return 1;
	}
	ret = dump(fd, AF_INET, port);
	if (!ret)
		ret = dump(fd, AF_INET6, port);
	close(fd);
	if (ret) {
		fprintf(stderr, "tls-diag: sock_diag: %s\n", strerror(-ret));
		return 1;
	}
	return 0;
}
