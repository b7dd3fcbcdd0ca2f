// SPDX-License-Identifier: GPL-2.0-only
/*
 * nfs4-clientid [-0] ADDRESS OWNER: ask the NFSv4 server at ADDRESS
 * (IPv4, port 2049, plain TCP, AUTH_SYS as root, the credential the Linux
 * client establishes its client ID with) for a client ID under the
 * client owner OWNER, with a verifier of its own: EXCHANGE_ID (NFSv4.1),
 * or SETCLIENTID (NFSv4.0) with -0. This is what another host does to
 * take over the lease of the client that owns OWNER, as if that client
 * had rebooted; the guest cases check that knfsd refuses it to a
 * connection that did not authenticate as that client.
 *
 * Prints the operation's status ("NFS4_OK", "NFS4ERR_CLID_INUSE", or
 * "NFS4ERR_<number>"). Exit status 0 when the server answered, 1 when it
 * did not answer as an NFSv4 server, 2 on a usage or connection error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define NFS_PROGRAM	100003
#define NFS4_COMPOUND	1
#define OP_SETCLIENTID	35
#define OP_EXCHANGE_ID	42
#define OPAQUE_LIMIT	1024
#define NFS4ERR_CLID_INUSE 10017

struct xdr {
	uint8_t buf[4096];
	size_t len;
};

static void put32(struct xdr *x, uint32_t v)
{
	uint32_t n = htonl(v);

	memcpy(x->buf + x->len, &n, 4);
	x->len += 4;
}

static void put_fixed(struct xdr *x, const void *p, size_t n)
{
	memcpy(x->buf + x->len, p, n);
	memset(x->buf + x->len + n, 0, (4 - n % 4) % 4);
	x->len += (n + 3) & ~(size_t)3;
}

static void put_opaque(struct xdr *x, const void *p, size_t n)
{
	put32(x, (uint32_t)n);
	put_fixed(x, p, n);
}

static int read_full(int fd, void *p, size_t n)
{
	uint8_t *b = p;

	while (n) {
		ssize_t r = read(fd, b, n);

		if (r <= 0)
			return -1;
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

/* the reply's uint32 at *off, advancing it; -1 past the end */
static int64_t get32(const uint8_t *b, size_t len, size_t *off)
{
	uint32_t n;

	if (*off + 4 > len)
		return -1;
	memcpy(&n, b + *off, 4);
	*off += 4;
	return ntohl(n);
}

static int skip_opaque(const uint8_t *b, size_t len, size_t *off)
{
	int64_t n = get32(b, len, off);

	if (n < 0 || *off + (((size_t)n + 3) & ~(size_t)3) > len)
		return -1;
	*off += ((size_t)n + 3) & ~(size_t)3;
	return 0;
}

int main(int argc, char **argv)
{
	static uint8_t reply[65536];
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(2049) };
	struct timeval tv = { .tv_sec = 20 };
	int minor = 1, fd, argi = 1;
	const char *owner;
	uint8_t verf[8];
	uint32_t xid, mark, rlen;
	struct xdr x = { .len = 4 };
	int64_t status;
	size_t off = 0;

	if (argc == 4 && !strcmp(argv[1], "-0")) {
		minor = 0;
		argi = 2;
	}
	if (argc - argi != 2 || inet_pton(AF_INET, argv[argi], &sin.sin_addr) != 1 ||
	    strlen(argv[argi + 1]) > OPAQUE_LIMIT) {
		fprintf(stderr, "usage: nfs4-clientid [-0] IPV4-ADDRESS OWNER\n");
		return 2;
	}
	owner = argv[argi + 1];
	srandom((unsigned int)time(NULL) ^ (unsigned int)getpid());
	xid = (uint32_t)random();
	for (size_t i = 0; i < sizeof(verf); i++)
		verf[i] = (uint8_t)random();

	/* RPC call header, AUTH_SYS root, AUTH_NONE verifier */
	put32(&x, xid);
	put32(&x, 0);			/* CALL */
	put32(&x, 2);			/* RPC version */
	put32(&x, NFS_PROGRAM);
	put32(&x, 4);
	put32(&x, NFS4_COMPOUND);
	put32(&x, 1);			/* AUTH_SYS */
	put32(&x, 5 * 4 + 8);		/* its body's length */
	put32(&x, 0);			/* stamp */
	put_opaque(&x, "intruder", 8);	/* machine name */
	put32(&x, 0);			/* uid */
	put32(&x, 0);			/* gid */
	put32(&x, 0);			/* no other gids */
	put32(&x, 0);			/* AUTH_NONE verifier */
	put32(&x, 0);
	/* COMPOUND: no tag, the minor version, one operation */
	put32(&x, 0);
	put32(&x, (uint32_t)minor);
	put32(&x, 1);
	if (minor) {
		put32(&x, OP_EXCHANGE_ID);
		put_fixed(&x, verf, sizeof(verf));
		put_opaque(&x, owner, strlen(owner));
		put32(&x, 0);		/* eia_flags */
		put32(&x, 0);		/* SP4_NONE */
		put32(&x, 0);		/* no implementation id */
	} else {
		put32(&x, OP_SETCLIENTID);
		put_fixed(&x, verf, sizeof(verf));
		put_opaque(&x, owner, strlen(owner));
		put32(&x, 0x40000000);	/* callback program */
		put_opaque(&x, "tcp", 3);
		put_opaque(&x, "192.0.2.99.3.255", 16);
		put32(&x, 1);		/* callback_ident */
	}
	mark = htonl(0x80000000u | (uint32_t)(x.len - 4));
	memcpy(x.buf, &mark, 4);

	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		perror("nfs4-clientid: connect");
		return 2;
	}
	if (write(fd, x.buf, x.len) != (ssize_t)x.len) {
		perror("nfs4-clientid: write");
		return 2;
	}
	if (read_full(fd, &mark, 4)) {
		fprintf(stderr, "nfs4-clientid: no reply\n");
		return 1;
	}
	rlen = ntohl(mark) & 0x7fffffffu;
	if (rlen > sizeof(reply) || read_full(fd, reply, rlen)) {
		fprintf(stderr, "nfs4-clientid: a reply of %u bytes cut short or too long\n", rlen);
		return 1;
	}
	close(fd);

	/* xid, REPLY, MSG_ACCEPTED, verifier, SUCCESS, then COMPOUND4res */
	if (get32(reply, rlen, &off) != xid || get32(reply, rlen, &off) != 1 ||
	    get32(reply, rlen, &off) != 0 || get32(reply, rlen, &off) < 0 ||
	    skip_opaque(reply, rlen, &off) || get32(reply, rlen, &off) != 0) {
		fprintf(stderr, "nfs4-clientid: the server did not accept the call\n");
		return 1;
	}
	status = get32(reply, rlen, &off);
	if (status < 0 || skip_opaque(reply, rlen, &off)) {
		fprintf(stderr, "nfs4-clientid: a COMPOUND reply cut short\n");
		return 1;
	}
	if (status == 0)
		printf("NFS4_OK\n");
	else if (status == NFS4ERR_CLID_INUSE)
		printf("NFS4ERR_CLID_INUSE\n");
	else
		printf("NFS4ERR_%lld\n", (long long)status);
	return 0;
}
