// SPDX-License-Identifier: GPL-2.0
/*
 * Per accepted handshake socket: read what the kernel wants
 * (SOL_TLSH options), load the key material it names, run the handshake
 * (a client's or a server's), name a server's authenticated client
 * (TLSH_PEER_IDENTITY), install kTLS, report a failure with TLSH_STATUS,
 * close().
 */
#include "request.h"
#include "handshake.h"
#include "fault.h"
#include "keyring.h"
#include "ktls.h"
#include "log.h"
#include "server.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

/* How long before the kernel's deadline a handshake that deadline bounds
 * ends (ms) */
#define TLSH_DEADLINE_MARGIN_MS	500

/* An int option.  0 or -errno (getsockopt()'s; -EINVAL: a bad length) */
static int get_int(int fd, int opt, const char *name, int *v, char *err,
		   size_t errlen)
{
	socklen_t len = sizeof(*v);

	*v = 0;
	if (getsockopt(fd, SOL_TLSH, opt, v, &len) < 0) {
		int e = errno;

		snprintf(err, errlen, "getsockopt(%s): %s", name, strerror(e));
		return -e;
	}
	if (len != sizeof(*v)) {
		snprintf(err, errlen, "getsockopt(%s): unexpected length %u",
			 name, (unsigned)len);
		return -EINVAL;
	}
	return 0;
}

/* String option: not NUL-terminated, length in optlen, at most max.  0 or
 * -errno (getsockopt()'s; -EINVAL: too long, or a NUL byte inside) */
static int get_string(int fd, int opt, const char *name, char *buf,
		      size_t max, char *err, size_t errlen)
{
	socklen_t len = (socklen_t)max;

	buf[0] = '\0';
	if (getsockopt(fd, SOL_TLSH, opt, buf, &len) < 0) {
		int e = errno;

		if (e == ERANGE)
			snprintf(err, errlen, "%s longer than %zu bytes (%u)",
				 name, max, (unsigned)len);
		else
			snprintf(err, errlen, "getsockopt(%s): %s", name,
				 strerror(e));
		return e == ERANGE ? -EINVAL : -e;
	}
	if (len > max) {
		snprintf(err, errlen, "%s: bad length %u", name, (unsigned)len);
		return -EINVAL;
	}
	/* Tolerate one terminating NUL, refuse embedded ones. */
	if (len > 0 && buf[len - 1] == '\0')
		len--;
	if (memchr(buf, '\0', len)) {
		snprintf(err, errlen, "%s contains a NUL byte", name);
		return -EINVAL;
	}
	buf[len] = '\0';
	return 0;
}

static void describe_peer(int fd, struct tlsh_request *r)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char a[INET6_ADDRSTRLEN];

	tlsh_copy_string(r->peer, sizeof(r->peer), "unknown peer");
	r->peer_ip_len = 0;
	if (getpeername(fd, (struct sockaddr *)&ss, &len) < 0)
		return;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;

		memcpy(r->peer_ip, &in->sin_addr, 4);
		r->peer_ip_len = 4;
		inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
		snprintf(r->peer, sizeof(r->peer), "%s:%u", a, ntohs(in->sin_port));
	} else if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;

		memcpy(r->peer_ip, &in6->sin6_addr, 16);
		r->peer_ip_len = 16;
		inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
		snprintf(r->peer, sizeof(r->peer), "[%s]:%u", a,
			 ntohs(in6->sin6_port));
	}
}

int tlsh_request_read(int fd, const struct config *cfg, struct tlsh_request *r,
		      char *err, size_t errlen)
{
	int ret, v;

	memset(r, 0, sizeof(*r));
	describe_peer(fd, r);

	ret = get_int(fd, TLSH_HANDSHAKE_TYPE, "TLSH_HANDSHAKE_TYPE", &r->type,
		      err, errlen);
	if (ret)
		return ret;
	if (r->type != TLSH_TYPE_CLIENTHELLO_X509 &&
	    r->type != TLSH_TYPE_CLIENTHELLO_PSK &&
	    r->type != TLSH_TYPE_SERVERHELLO_X509 &&
	    r->type != TLSH_TYPE_SERVERHELLO_PSK) {
		snprintf(err, errlen, "unsupported handshake type %d", r->type);
		return -EINVAL;
	}
	ret = get_string(fd, TLSH_PRIORITIES, "TLSH_PRIORITIES", r->priorities,
			 TLSH_MAX_PRIORITIES, err, errlen);
	if (ret)
		return ret;
	if (r->priorities[0] && !tlsh_valid_token(r->priorities, TLSH_MAX_PRIORITIES)) {
		snprintf(err, errlen, "TLSH_PRIORITIES is not printable ASCII");
		return -EINVAL;
	}
	ret = get_int(fd, TLSH_PEERID, "TLSH_PEERID", &v, err, errlen);
	if (ret)
		return ret;
	r->peerid = v;
	ret = get_int(fd, TLSH_X509_CERTIFICATE, "TLSH_X509_CERTIFICATE", &v,
		      err, errlen);
	if (ret)
		return ret;
	r->cert = v;
	ret = get_int(fd, TLSH_KEYRING, "TLSH_KEYRING", &v, err, errlen);
	if (ret == -ENOPROTOOPT)
		v = 0;		/* a kernel without TLSH_KEYRING */
	else if (ret)
		return ret;
	r->keyring = v;
	if (r->peerid < 0 || r->cert < 0 || r->keyring < 0) {
		/* Negative serials are special keyrings (@t, @p, @s...) */
		snprintf(err, errlen,
			 "invalid key serial (peerid %d, cert %d, keyring %d)",
			 r->peerid, r->cert, r->keyring);
		return -EINVAL;
	}
	if (r->type == TLSH_TYPE_CLIENTHELLO_PSK && r->peerid == 0) {
		snprintf(err, errlen, "PSK handshake without a PSK key");
		return -EINVAL;
	}
	if ((r->type == TLSH_TYPE_CLIENTHELLO_X509 ||
	     r->type == TLSH_TYPE_SERVERHELLO_X509) &&
	    (r->cert == 0) != (r->peerid == 0)) {
		snprintf(err, errlen,
			 "%s certificate key %d and private key %d must be given together",
			 r->type == TLSH_TYPE_SERVERHELLO_X509 ? "server" : "client",
			 r->cert, r->peerid);
		return -EINVAL;
	}
	ret = get_int(fd, TLSH_AUTH_OPTIONAL, "TLSH_AUTH_OPTIONAL",
		      &r->auth_optional, err, errlen);
	if (ret == -ENOPROTOOPT)
		r->auth_optional = 0;	/* a kernel without it */
	else if (ret)
		return ret;
	ret = get_string(fd, TLSH_PEERNAME, "TLSH_PEERNAME", r->peername,
			 TLSH_MAX_PEERNAME, err, errlen);
	if (ret)
		return ret;
	if (r->peername[0]) {
		char norm[TLSH_MAX_PEERNAME + 1];

		if (tlsh_normalize_peername(r->peername, norm, sizeof(norm)) < 0) {
			snprintf(err, errlen, "TLSH_PEERNAME is neither a DNS name nor an IP address");
			return -EINVAL;
		}
		tlsh_copy_string(r->peername, sizeof(r->peername), norm);
	}

	r->timeout_ms = cfg->handshake_timeout * 1000u;
	/* a __u32 of at most the kernel's deadline, so it fits an int.
	 * When the kernel's deadline comes first, the handshake ends a
	 * little before it: the agent then fails it as timed out, and says
	 * so, rather than finding the connection closed under it by the
	 * kernel's backstop ("connection reset" in the log). */
	ret = get_int(fd, TLSH_TIMEOUT_MS, "TLSH_TIMEOUT_MS", &v, err, errlen);
	r->read_ms = tlsh_now_ms();
	if (ret == -ENOPROTOOPT)
		log_debug("%s: kernel has no TLSH_TIMEOUT_MS", r->peer);
	else if (ret)
		return ret;
	else if ((uint32_t)v < r->timeout_ms + TLSH_DEADLINE_MARGIN_MS)
		r->timeout_ms = (uint32_t)v > TLSH_DEADLINE_MARGIN_MS ?
				(uint32_t)v - TLSH_DEADLINE_MARGIN_MS : 0;
	return 0;
}

/*
 * Load the keys the request names.  With a keyring (the kernel made this
 * handshake process's thread possess it when tlsh_request_read() read
 * TLSH_KEYRING), a serial must be in it: the kernel checked, as the
 * mounting user, that the user may read what it linked there, and nothing
 * else is read.  Without one, the serials come from a kernel consumer that
 * names them directly, and root's user keyring is linked for this process
 * only.  0 or -errno.
 */
static int load_named_keys(const struct tlsh_request *r,
			   struct tlsh_x509 *x509, struct tlsh_psk *psk,
			   char *err, size_t errlen)
{
	int psk_type = r->type == TLSH_TYPE_CLIENTHELLO_PSK;
	int status;

	if (!psk_type && !r->cert)
		return 0;		/* no client certificate */
	if (r->keyring) {
		status = tlsh_keyring_member(r->keyring, r->peerid, err, errlen);
		if (!status && !psk_type)
			status = tlsh_keyring_member(r->keyring, r->cert, err,
						     errlen);
	} else {
		status = tlsh_keyring_use_user_keyring(err, errlen);
	}
	if (!status && psk_type)
		status = tlsh_keyring_load_psk(psk, r->peerid, err, errlen);
	else if (!status)
		status = tlsh_keyring_load_x509(x509, r->cert, r->peerid, err,
						errlen);
	/* A key that is gone (revoked, then collected) is not the kernel's
	 * "no handshake agent" */
	return status == -ENOKEY ? -EKEYREVOKED : status;
}

/*
 * What the request needs: the keys it names (load_named_keys()).  A
 * server without serials uses its configured certificate.  A PSK server
 * looks its clients' keys up in *psk_ring, the request's keyring or the
 * configured one (server.c); an x509 server too, where it finds that
 * keyring (knfsd asks for x509 whatever its client offers), and then
 * needs no certificate.  0 or -errno.
 */
static int load_keys(const struct tlsh_request *r, const struct config *cfg,
		     struct tlsh_x509 *x509, struct tlsh_psk *psk,
		     int32_t *psk_ring, char *err, size_t errlen)
{
	int status = 0;

	if (r->type == TLSH_TYPE_SERVERHELLO_PSK) {
		*psk_ring = tlsh_server_psk_keyring(cfg, r->keyring, err, errlen);
		return *psk_ring < 0 ? *psk_ring : 0;
	}
	if (r->type != TLSH_TYPE_SERVERHELLO_X509)
		return load_named_keys(r, x509, psk, err, errlen);
	if (r->cert)
		status = load_named_keys(r, x509, psk, err, errlen);
	else if (cfg->server_cert[0])
		status = tlsh_server_load_configured(cfg, x509, err, errlen);
	if (status)
		return status;
	*psk_ring = tlsh_server_x509_psk_keyring(cfg, r->keyring,
						 x509->npcerts != 0, err, errlen);
	return *psk_ring < 0 ? *psk_ring : 0;
}

/* The consumer allowed it (TLSH_AUTH_OPTIONAL): the session is encrypted,
 * but the server was not authenticated.  Say so to the kernel, and why in
 * the log.  0 or -EPROTO.
 */
static int report_unauthenticated(int fd, const struct tlsh_request *r,
				  const struct hs_session *hs, char *err,
				  size_t errlen)
{
	char why[256];
	int one = 1;

	if (hs->verify_status)
		tlsh_hs_verify_reasons(hs, why, sizeof(why));
	else
		snprintf(why, sizeof(why), "encryption-only = yes");
	if (setsockopt(fd, SOL_TLSH, TLSH_UNAUTHENTICATED, &one,
		       sizeof(one)) < 0) {
		int e = errno;

		snprintf(err, errlen, "setsockopt(TLSH_UNAUTHENTICATED): %s",
			 strerror(e));
		return -EPROTO;
	}
	log_warn("%s (%s): certificate not verified (%s): encrypted, the server NOT authenticated, as the kernel allows for this request",
		 r->peer, r->peername[0] ? r->peername : "no peer name", why);
	return 0;
}

/* A server's authenticated client: hand the key that names it to the
 * kernel, for the consumer (TLSH_PEER_IDENTITY), before kTLS and the
 * close.  0 (*serial 0: no client to name) or -errno. */
static int report_peer_identity(int fd, const struct hs_session *hs,
				int32_t *serial, char *err, size_t errlen)
{
	char desc[TLSH_CLIENT_KEY_DESC];
	int ret, k;

	ret = tlsh_server_identity(hs, serial, desc, err, errlen);
	if (ret || !*serial)
		return ret;
	k = *serial;
	if (setsockopt(fd, SOL_TLSH, TLSH_PEER_IDENTITY, &k, sizeof(k)) < 0) {
		int e = errno;

		snprintf(err, errlen,
			 "cannot name the client to the kernel: setsockopt(TLSH_PEER_IDENTITY, key %d): %s",
			 k, strerror(e));
		return -e;
	}
	if (desc[0])
		log_debug("client identity: key %d (%s)", k, desc);
	return 0;
}

/* Tell the kernel why the handshake failed: the one place where a -errno
 * of ours becomes the positive errno of the kernel interface. */
static void report(int fd, int status)
{
	int e = -status;

	if (setsockopt(fd, SOL_TLSH, TLSH_STATUS, &e, sizeof(e)) < 0)
		log_warn("setsockopt(TLSH_STATUS, %d): %s", e, strerror(errno));
}

/* The log line of a handshake's outcome */
static void log_outcome(const struct tlsh_request *r, const struct hs_session *hs,
			int server, int32_t identity, int status, const char *err)
{
	const char *who = r->peername[0] ? r->peername : "no peer name";
	char desc[96], client[300];

	if (status && server) {
		log_err("server handshake with %s failed: %s", r->peer, err);
		return;
	}
	if (status) {
		log_err("handshake with %s (%s) failed: %s", r->peer, who, err);
		return;
	}
	tlsh_hs_describe(hs->session, desc, sizeof(desc));
	if (!server) {
		log_info("handshake with %s (%s) done: %s%s", r->peer, who, desc,
			 r->type == TLSH_TYPE_CLIENTHELLO_PSK ? ", PSK" :
			 r->cert ? ", client certificate" : "");
		return;
	}
	tlsh_server_client_name(hs, client, sizeof(client));
	if (identity)
		log_info("server handshake with %s (%s) done: %s, %s, identity key %d",
			 r->peer, client, desc,
			 tlsh_server_by_psk(hs) ? "PSK" : "client certificate",
			 identity);
	else
		log_info("server handshake with %s (%s) done: %s", r->peer,
			 client, desc);
}

void tlsh_request_serve(int fd, void *arg)
{
	const struct config *cfg = arg;
	struct tlsh_request r;
	struct tlsh_x509 x509;
	struct tlsh_psk psk;
	struct hs_session hs;
	struct hs_params p;
	char err[512];
	int status, server = 0;
	int32_t psk_ring = 0, identity = 0;
	uint64_t t_start = tlsh_now_us(), t_hs = 0, t_ktls = 0;

	memset(&x509, 0, sizeof(x509));
	memset(&psk, 0, sizeof(psk));
	(void)mlock(&psk, sizeof(psk));	/* best effort: keep it off swap */
	memset(&hs, 0, sizeof(hs));
	status = tlsh_request_read(fd, cfg, &r, err, sizeof(err));
	/* (r.type is read first: a request that fails later has its role) */
	server = r.type == TLSH_TYPE_SERVERHELLO_X509 ||
		 r.type == TLSH_TYPE_SERVERHELLO_PSK;
	if (!status) {
		log_debug("%s (%s): %s %s handshake, timeout %u ms, priorities %s",
			  r.peer, r.peername[0] ? r.peername : "no peer name",
			  r.type == TLSH_TYPE_CLIENTHELLO_PSK ||
			  r.type == TLSH_TYPE_SERVERHELLO_PSK ? "PSK" : "x509",
			  server ? "server" : "client",
			  r.timeout_ms, r.priorities[0] ? r.priorities : "default");
		status = load_keys(&r, cfg, &x509, &psk, &psk_ring, err,
				   sizeof(err));
	}
	if (!status) {
		uint64_t elapsed;

		memset(&p, 0, sizeof(p));
		p.type = r.type;
		p.priorities = r.priorities;
		p.peername = r.peername;
		memcpy(p.peer_ip, r.peer_ip, sizeof(p.peer_ip));
		p.peer_ip_len = r.peer_ip_len;
		p.x509 = r.cert || r.type == TLSH_TYPE_SERVERHELLO_X509 ? &x509 : NULL;
		p.psk = r.type == TLSH_TYPE_CLIENTHELLO_PSK ? &psk : NULL;
		/* an x509 server's PSK clients too, if it found a keyring */
		if (r.type == TLSH_TYPE_SERVERHELLO_PSK || psk_ring > 0) {
			p.psk_lookup = tlsh_server_psk_from_keyring;
			p.psk_lookup_arg = &psk_ring;
		}
		/* what is left of it after loading the keys */
		elapsed = tlsh_now_ms() - r.read_ms;
		p.timeout_ms = r.timeout_ms > elapsed ?
			       r.timeout_ms - (unsigned)elapsed : 0;
		p.auth_optional = r.auth_optional;
		t_hs = tlsh_now_us();
		status = tlsh_hs_run(&hs, fd, &p, err, sizeof(err));
	}
	/* the consumer's reference on it is taken now, kept on success */
	if (!status && server)
		status = report_peer_identity(fd, &hs, &identity, err, sizeof(err));
	/*
	 * Before kTLS, as the peer's identity: once both directions have
	 * keys, a worker that dies (its agent killed: PDEATHSIG) leaves a
	 * handshake the kernel completes with status 0, and a server not
	 * verified must not then count as authenticated
	 */
	if (!status && hs.unauthenticated)
		status = report_unauthenticated(fd, &r, &hs, err, sizeof(err));
	if (!status) {
		t_ktls = tlsh_now_us();
		status = tlsh_ktls_install(fd, hs.session, err, sizeof(err));
		if (!status)
			tlsh_fault_point(FAULT_AFTER_KTLS);
		if (status == -ENOTCONN || status == -ECONNRESET || status == -EPIPE) {
			if (!server) {
				status = tlsh_hs_closed_after(hs.session, fd, err,
							      sizeof(err));
			} else {
				snprintf(err, sizeof(err),
					 "the client closed the connection right after the handshake");
				status = -ECONNRESET;
			}
		}
	}
	log_outcome(&r, &hs, server, identity, status, err);
	if (status) {
		report(fd, status);
	} else {
		/* where the time went, for "why is it slow" */
		log_debug("%s (%s): request and keys %.1f ms, TLS handshake %.1f ms, verdict wait %.1f ms, kTLS %.1f ms",
			  r.peer, r.peername[0] ? r.peername : "no peer name",
			  (double)(t_hs - t_start) / 1000,
			  (double)hs.handshake_us / 1000,
			  (double)hs.verdict_us / 1000,
			  (double)(tlsh_now_us() - t_ktls) / 1000);
	}
	tlsh_hs_session_free(&hs);
	tlsh_keyring_x509_free(&x509);
	tlsh_keyring_psk_clear(&psk);
	(void)munlock(&psk, sizeof(psk));
	close(fd);
}
