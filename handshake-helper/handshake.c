// SPDX-License-Identifier: GPL-2.0
/*
 * TLS handshakes with GnuTLS: the client's, and what the server's shares
 * with it (server.c has the server's credentials).
 *
 * One certificate credential holds the trust store, loaded once at
 * start-up (every handshake process inherits it); a client certificate is
 * handed out per session through the retrieve callback.  The handshake
 * runs on a non-blocking fd with poll() and an absolute deadline, so a
 * stalled peer costs nothing but its own handshake process.
 */
#include "fault.h"
#include "handshake.h"
#include "ktls.h"
#include "log.h"
#include "server.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <stdio.h>
#include <string.h>

#include <gnutls/x509.h>

#define PSK_KX ":+ECDHE-PSK:+DHE-PSK:+PSK"

static gnutls_certificate_credentials_t hs_xcred;
/* The default priorities, x509 and PSK, parsed once (tlsh_hs_global_init()):
 * a request that names its own is parsed for its session alone */
static gnutls_priority_t hs_prio_default[2];
static const gnutls_datum_t hs_alpn = {
	(unsigned char *)"sunrpc", sizeof("sunrpc") - 1
};
static const struct config *hs_cfg;

int tlsh_hs_retrieve_cert(gnutls_session_t s, const gnutls_datum_t *req_ca_dn,
			  int nreqs, const gnutls_pk_algorithm_t *pk_algos,
			  int pk_algos_length, gnutls_pcert_st **pcert,
			  unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
	const struct hs_session *hs = gnutls_session_get_ptr(s);

	(void)req_ca_dn;
	(void)nreqs;
	(void)pk_algos;
	(void)pk_algos_length;
	if (!hs || !hs->x509 || !hs->x509->npcerts || !hs->x509->key) {
		*pcert = NULL;
		*pcert_length = 0;
		*pkey = NULL;
		return 0;
	}
	/* Owned by the caller of tlsh_hs_run(); GnuTLS does not free these. */
	*pcert = (gnutls_pcert_st *)hs->x509->pcerts;
	*pcert_length = hs->x509->npcerts;
	*pkey = hs->x509->key;
	return 0;
}

/*
 * RFC 9289, Section 5.2.1: an RPC-with-TLS server certificate may carry
 * the id-kp-rpcTLSServer extended key usage instead of (or besides)
 * id-kp-serverAuth; either makes it a TLS server certificate for us.
 */
#define TLSH_KP_RPC_TLS_SERVER	"1.3.6.1.5.5.7.3.34"

unsigned tlsh_hs_verify_peer(struct hs_session *hs, const char *kp,
			     const char *alt_kp)
{
	gnutls_typed_vdata_st *purpose = &hs->vdata[hs->nvdata - 1];
	unsigned status = 0;
	int ret;

	purpose->data = (unsigned char *)kp;
	ret = gnutls_certificate_verify_peers(hs->session, hs->vdata,
					      hs->nvdata, &status);
	if (ret == 0 && (status & GNUTLS_CERT_PURPOSE_MISMATCH)) {
		unsigned alt = 0;

		purpose->data = (unsigned char *)alt_kp;
		ret = gnutls_certificate_verify_peers(hs->session, hs->vdata,
						      hs->nvdata, &alt);
		if (ret == 0 && !(alt & GNUTLS_CERT_PURPOSE_MISMATCH))
			status = alt;
	}
	hs->verify_error = ret;
	hs->verify_status = ret < 0 ? GNUTLS_CERT_INVALID : status;
	return hs->verify_status;
}

/*
 * Verify the server's chain, name and purpose during the handshake, so
 * that a rejected server fails it before our Finished, with the reason
 * kept for classify().  The chain must verify for serverAuth, or else for
 * rpcTLSServer.
 */
static int verify_server(gnutls_session_t s)
{
	struct hs_session *hs = gnutls_session_get_ptr(s);

	if (!hs || !hs->nvdata)
		return 0;		/* encryption only, or PSK */
	if (tlsh_hs_verify_peer(hs, GNUTLS_KP_TLS_WWW_SERVER,
				TLSH_KP_RPC_TLS_SERVER) && hs->auth_optional) {
		hs->unauthenticated = 1;	/* request.c says so */
		return 0;
	}
	/* GnuTLS's contract: non-zero ends the handshake */
	return hs->verify_status ? -1 : 0;
}

/* "bad priority string at '...' (on the system's default priorities): why",
 * with why from GnuTLS's error code ret */
static void priority_error(char *err, size_t errlen, const char *prio,
			   const char *errpos, int ret)
{
	snprintf(err, errlen, "bad priority string%s%.40s%s%s: %s",
		 errpos ? " at '" : "", errpos ? errpos : "",
		 errpos ? "'" : "",
		 tlsh_config_priority_appends(prio) ?
		 " (on the system's default priorities)" : "",
		 gnutls_strerror(ret));
}

int tlsh_hs_global_init(const struct config *cfg, char *err, size_t errlen)
{
	int ret;

	hs_cfg = cfg;
	ret = gnutls_global_init();
	if (ret < 0) {
		snprintf(err, errlen, "GnuTLS initialisation failed: %s",
			 gnutls_strerror(ret));
		return ret == GNUTLS_E_MEMORY_ERROR ? -ENOMEM : -EIO;
	}
	ret = gnutls_certificate_allocate_credentials(&hs_xcred);
	if (ret < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ret = tlsh_server_global_init(cfg, err, errlen);
	if (ret < 0)
		return ret;
	for (int psk = 0; psk < 2; psk++) {
		char prio[TLSH_MAX_PRIORITIES + 64];
		const char *errpos = NULL;
		int gerr;

		ret = tlsh_hs_priorities(cfg, NULL, psk ? TLSH_TYPE_CLIENTHELLO_PSK :
					 TLSH_TYPE_CLIENTHELLO_X509, prio,
					 sizeof(prio));
		if (ret < 0) {
			snprintf(err, errlen, "priority string too long");
			return ret;
		}
		ret = tlsh_config_priority_init(&hs_prio_default[psk], prio,
						&errpos, &gerr);
		if (ret < 0) {
			priority_error(err, errlen, prio, errpos, gerr);
			return ret;
		}
	}
	gnutls_certificate_set_retrieve_function2(hs_xcred, tlsh_hs_retrieve_cert);
	gnutls_certificate_set_verify_function(hs_xcred, verify_server);
	if (cfg->encryption_only) {
		log_warn("encryption-only = yes: server certificates are NOT verified");
		return 0;
	}
	if (cfg->trust_store[0] == '\0') {
		ret = gnutls_certificate_set_x509_system_trust(hs_xcred);
		if (ret < 0) {
			snprintf(err, errlen, "cannot load the system trust store: %s",
				 gnutls_strerror(ret));
			return ret == GNUTLS_E_MEMORY_ERROR ? -ENOMEM : -EIO;
		}
		if (ret == 0)
			log_warn("the system trust store is empty: no server certificate will verify");
		else
			log_debug("loaded %d CA certificates from the system trust store",
				  ret);
	} else {
		ret = gnutls_certificate_set_x509_trust_file(hs_xcred,
				cfg->trust_store, GNUTLS_X509_FMT_PEM);
		if (ret <= 0) {
			snprintf(err, errlen,
				 "%s:%u: trust-store %s: %s", cfg->file,
				 cfg->trust_store_line, cfg->trust_store,
				 ret < 0 ? gnutls_strerror(ret)
					 : "no PEM certificates in file");
			return ret == GNUTLS_E_MEMORY_ERROR ? -ENOMEM : -EINVAL;
		}
		log_debug("loaded %d CA certificates from %s", ret,
			  cfg->trust_store);
	}
	return tlsh_hs_load_crl(hs_xcred, cfg, err, errlen);
}

int tlsh_hs_load_crl(gnutls_certificate_credentials_t cred,
		     const struct config *cfg, char *err, size_t errlen)
{
	int ret;

	if (!cfg->crl[0])
		return 0;
	ret = gnutls_certificate_set_x509_crl_file(cred, cfg->crl,
						   GNUTLS_X509_FMT_PEM);
	if (ret <= 0)
		ret = gnutls_certificate_set_x509_crl_file(cred, cfg->crl,
							   GNUTLS_X509_FMT_DER);
	if (ret <= 0) {
		snprintf(err, errlen, "%s:%u: crl %s: %s", cfg->file,
			 cfg->crl_line, cfg->crl,
			 ret < 0 ? gnutls_strerror(ret) : "no CRL in file");
		return ret == GNUTLS_E_MEMORY_ERROR ? -ENOMEM : -EINVAL;
	}
	return 0;
}

void tlsh_hs_global_deinit(void)
{
	for (int psk = 0; psk < 2; psk++) {
		if (hs_prio_default[psk])
			gnutls_priority_deinit(hs_prio_default[psk]);
		hs_prio_default[psk] = NULL;
	}
	if (hs_xcred)
		gnutls_certificate_free_credentials(hs_xcred);
	hs_xcred = NULL;
	tlsh_server_global_deinit();
	gnutls_global_deinit();
}

int tlsh_hs_priorities(const struct config *cfg, const char *requested, int type,
		       char *out, size_t outlen)
{
	const char *base;
	const char *psk = "";
	int n;

	if (requested && *requested) {
		base = requested;
	} else {
		base = cfg->priorities[0] ? cfg->priorities
					  : TLSH_DEFAULT_PRIORITIES;
		if (type == TLSH_TYPE_CLIENTHELLO_PSK ||
		    type == TLSH_TYPE_SERVERHELLO_PSK)
			psk = PSK_KX;
	}
	n = snprintf(out, outlen, "%s%s%s", base, psk,
		     cfg->tls12 ? "" : ":-VERS-TLS1.2");
	return (n < 0 || (size_t)n >= outlen) ? -E2BIG : 0;
}

void tlsh_hs_describe(gnutls_session_t s, char *buf, size_t len)
{
	const char *v = gnutls_protocol_get_name(gnutls_protocol_get_version(s));
	const char *c = gnutls_cipher_get_name(gnutls_cipher_get(s));

	snprintf(buf, len, "%s %s", v ? v : "?", c ? c : "?");
}

/* "signer unknown, expired" from a verification status; of a client's
 * certificate if client, else of a server's */
static void verify_reasons(unsigned status, int client, char *buf, size_t len)
{
	static const struct {
		unsigned bit;
		const char *text;
	} reasons[] = {
		{ GNUTLS_CERT_SIGNER_NOT_FOUND, "signer unknown" },
		{ GNUTLS_CERT_UNEXPECTED_OWNER, "name does not match" },
		{ GNUTLS_CERT_EXPIRED, "expired" },
		{ GNUTLS_CERT_NOT_ACTIVATED, "not yet valid" },
		{ GNUTLS_CERT_REVOKED, "revoked" },
		{ GNUTLS_CERT_SIGNATURE_FAILURE, "bad signature" },
		{ GNUTLS_CERT_SIGNER_NOT_CA, "signer is not a CA" },
		{ GNUTLS_CERT_INSECURE_ALGORITHM, "insecure algorithm" },
		{ GNUTLS_CERT_PURPOSE_MISMATCH, NULL },	/* see below */
		{ GNUTLS_CERT_SIGNER_CONSTRAINTS_FAILURE, "signer constraints violated" },
		{ GNUTLS_CERT_UNKNOWN_CRIT_EXTENSIONS, "unknown critical extension" },
		{ GNUTLS_CERT_REVOCATION_DATA_SUPERSEDED, "revocation data too old" },
		{ GNUTLS_CERT_REVOCATION_DATA_ISSUED_IN_FUTURE, "revocation data from the future" },
	};
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
		int n;

		if (!(status & reasons[i].bit))
			continue;
		n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
			     reasons[i].text ? reasons[i].text : client ?
			     "not a TLS client certificate" :
			     "not a TLS server certificate");
		if (n < 0 || (size_t)n >= len - used)
			return;
		used += (size_t)n;
	}
	if (!used)
		snprintf(buf, len, "verification failed (status 0x%x)", status);
}

void tlsh_hs_verify_reasons(const struct hs_session *hs, char *buf, size_t len)
{
	if (hs->verify_error < 0)
		snprintf(buf, len, "%s", gnutls_strerror(hs->verify_error));
	else
		verify_reasons(hs->verify_status, hs->server, buf, len);
}

/* Name (or address) and purpose the server certificate must match. */
static void set_verification(struct hs_session *hs, const struct hs_params *p)
{
	gnutls_typed_vdata_st *vd = hs->vdata;
	size_t iplen = 0;
	unsigned n = 0;

	memset(hs->vdata, 0, sizeof(hs->vdata));
	if (p->peername && *p->peername) {
		if (tlsh_ip_literal(p->peername, hs->vd_ip, &iplen)) {
			vd[n].type = GNUTLS_DT_IP_ADDRESS;
			vd[n].data = hs->vd_ip;
			vd[n].size = (unsigned)iplen;
		} else {
			tlsh_copy_string(hs->vd_name, sizeof(hs->vd_name), p->peername);
			vd[n].type = GNUTLS_DT_DNS_HOSTNAME;
			vd[n].data = (unsigned char *)hs->vd_name;
			vd[n].size = 0;
		}
		n++;
	} else if (p->peer_ip_len == 4 || p->peer_ip_len == 16) {
		memcpy(hs->vd_ip, p->peer_ip, p->peer_ip_len);
		vd[n].type = GNUTLS_DT_IP_ADDRESS;
		vd[n].data = hs->vd_ip;
		vd[n].size = (unsigned)p->peer_ip_len;
		n++;
	} else {
		log_warn("no peer name or address: verifying the certificate chain only");
	}
	vd[n].type = GNUTLS_DT_KEY_PURPOSE_OID;
	vd[n].data = (unsigned char *)GNUTLS_KP_TLS_WWW_SERVER;
	vd[n].size = 0;
	n++;
	hs->nvdata = n;		/* verify_server() uses them */
}

static const char *verify_subject(const struct hs_params *p, char *buf,
				  size_t len)
{
	if (p->peername && *p->peername)
		return p->peername;
	if (p->peer_ip_len == 4 || p->peer_ip_len == 16) {
		if (inet_ntop(p->peer_ip_len == 4 ? AF_INET : AF_INET6,
			      p->peer_ip, buf, (socklen_t)len))
			return buf;
	}
	return "peer";
}

/*
 * Whether alert a, received by a PSK client, is how servers refuse its
 * PSK: a binder that does not verify (GnuTLS: illegal_parameter; RFC 8446
 * suggests decrypt_error), a TLS 1.2 Finished that does not decrypt
 * (bad_record_mac), or unknown_psk_identity.  Our server, like any that
 * does not tell, answers an unknown identity as a wrong key, so the
 * client's message names both.
 */
static bool psk_refused_alert(const struct hs_session *hs,
			      const struct hs_params *p,
			      gnutls_alert_description_t a)
{
	if (hs->server || p->type != TLSH_TYPE_CLIENTHELLO_PSK || !p->psk)
		return false;
	return a == GNUTLS_A_ILLEGAL_PARAMETER || a == GNUTLS_A_DECRYPT_ERROR ||
	       a == GNUTLS_A_BAD_RECORD_MAC ||
	       a == GNUTLS_A_UNKNOWN_PSK_IDENTITY;
}

/* The -errno for GnuTLS error ret, told to the kernel, with the reason in
 * err: see tlsh_hs_run() */
static int classify(const struct hs_session *hs, const struct hs_params *p,
		    int ret, char *err, size_t errlen)
{
	gnutls_session_t s = hs->session;
	char addr[64];
	gnutls_alert_description_t a;
	const char *an;

	if (hs->server) {
		int e = tlsh_server_classify(hs, ret, err, errlen);

		if (e)
			return e;
	}
	switch (ret) {
	case GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR:
	case GNUTLS_E_CERTIFICATE_ERROR:
		if (hs->verify_status) {
			char why[256];

			tlsh_hs_verify_reasons(hs, why, sizeof(why));
			snprintf(err, errlen, "certificate for %s not trusted: %s",
				 verify_subject(p, addr, sizeof(addr)), why);
			return -EKEYREJECTED;
		}
		/* fall through */
	case GNUTLS_E_NO_CERTIFICATE_FOUND:
	case GNUTLS_E_CERTIFICATE_REQUIRED:
		snprintf(err, errlen, "certificate for %s not trusted: %s",
			 verify_subject(p, addr, sizeof(addr)),
			 gnutls_strerror(ret));
		return -EKEYREJECTED;
	case GNUTLS_E_FATAL_ALERT_RECEIVED:
		a = gnutls_alert_get(s);
		an = gnutls_alert_get_name(a);
		if (psk_refused_alert(hs, p, a))
			snprintf(err, errlen,
				 "the server refused PSK identity '%s': it has no key for it, or another key (peer sent fatal alert: %s)",
				 p->psk->identity, an ? an : "unknown");
		else
			snprintf(err, errlen, "peer sent fatal alert: %s",
				 an ? an : "unknown");
		return -EACCES;
	case GNUTLS_E_TIMEDOUT:
		snprintf(err, errlen, "handshake timed out after %u ms",
			 p->timeout_ms);
		return -ETIMEDOUT;
	case GNUTLS_E_PREMATURE_TERMINATION:
	case GNUTLS_E_UNEXPECTED_PACKET_LENGTH:
		/* what a server that answers STARTTLS but has no TLS (a 6.4+
		 * knfsd without tlshd) does: the kernel may fall back */
		snprintf(err, errlen, "peer closed the connection during the handshake");
		return -ECONNRESET;
	case GNUTLS_E_PUSH_ERROR:
	case GNUTLS_E_PULL_ERROR: {
		int e = errno;

		snprintf(err, errlen, "connection error during the handshake: %s",
			 strerror(e));
		return e == ECONNRESET || e == EPIPE ? -ECONNRESET : -EPROTO;
	}
	default:
		snprintf(err, errlen, "TLS handshake failed: %s",
			 gnutls_strerror(ret));
		return -EPROTO;
	}
}

/*
 * The session's own transport functions, the same calls as GnuTLS's
 * defaults.  With its defaults, GnuTLS turns on kTLS itself when the
 * system configuration asks it to ("ktls = true" in the [global] section
 * of /etc/gnutls/config): it attaches the TLS ULP to the socket and
 * installs its keys, and ours would then fail (EEXIST).  A session with
 * push and pull functions of its own is left alone.  (Debian 12's GnuTLS
 * is built without kTLS and ignores the setting; other builds do not.)
 */
static ssize_t hs_push(gnutls_transport_ptr_t ptr, const void *buf, size_t len)
{
	return send((int)(intptr_t)ptr, buf, len, MSG_NOSIGNAL);
}

static ssize_t hs_pull(gnutls_transport_ptr_t ptr, void *buf, size_t len)
{
	return recv((int)(intptr_t)ptr, buf, len, 0);
}

/* GnuTLS's own (gnutls_system_recv_timeout()) refuses to go with a pull
 * function that is not GnuTLS's: > 0 readable, 0 timed out, -1 error */
static int hs_pull_timeout(gnutls_transport_ptr_t ptr, unsigned int ms)
{
	struct pollfd pfd = { .fd = (int)(intptr_t)ptr, .events = POLLIN };

	return poll(&pfd, 1, ms == GNUTLS_INDEFINITE_TIMEOUT || ms > INT_MAX ?
			     -1 : (int)ms);
}

/*
 * Discard what the server already sent (the rest of its flight): a socket
 * closed with unread data ends in a TCP reset, which can overtake our alert
 * and leave the server with "connection reset" instead of the reason.
 */
static void drain(gnutls_session_t s)
{
	int fd = gnutls_transport_get_int(s);
	char buf[4096];

	for (int i = 0; i < 16; i++)
		if (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0)
			return;
}

/*
 * The TLS alert that tells the server why we end the handshake: it is what
 * its operator gets to see.  For a server we do not trust, the reason
 * verify_server() found; for other errors, GnuTLS's choice.  Nothing is
 * sent for a timeout, a closed connection or the server's own alert.
 */
static void send_alert(const struct hs_session *hs, int ret)
{
	static const struct {
		unsigned bit;
		gnutls_alert_description_t alert;
	} by_status[] = {
		{ GNUTLS_CERT_REVOKED, GNUTLS_A_CERTIFICATE_REVOKED },
		{ GNUTLS_CERT_EXPIRED, GNUTLS_A_CERTIFICATE_EXPIRED },
		{ GNUTLS_CERT_NOT_ACTIVATED, GNUTLS_A_BAD_CERTIFICATE },
		{ GNUTLS_CERT_SIGNER_NOT_FOUND, GNUTLS_A_UNKNOWN_CA },
		{ GNUTLS_CERT_SIGNER_NOT_CA, GNUTLS_A_UNKNOWN_CA },
		{ GNUTLS_CERT_PURPOSE_MISMATCH, GNUTLS_A_UNSUPPORTED_CERTIFICATE },
	};
	gnutls_alert_description_t a = GNUTLS_A_BAD_CERTIFICATE;

	switch (ret) {
	case GNUTLS_E_TIMEDOUT:
	case GNUTLS_E_FATAL_ALERT_RECEIVED:
	case GNUTLS_E_PREMATURE_TERMINATION:
	case GNUTLS_E_UNEXPECTED_PACKET_LENGTH:
	case GNUTLS_E_PUSH_ERROR:
	case GNUTLS_E_PULL_ERROR:
		return;
	case GNUTLS_E_CERTIFICATE_ERROR:
	case GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR:
		if (!hs->verify_status)
			break;
		for (size_t i = 0; i < sizeof(by_status) / sizeof(by_status[0]); i++)
			if (hs->verify_status & by_status[i].bit) {
				a = by_status[i].alert;
				break;
			}
		/* a failed send changes nothing: the handshake has failed */
		(void)gnutls_alert_send(hs->session, GNUTLS_AL_FATAL, a);
		drain(hs->session);
		return;
	default:
		break;
	}
	/* a server that could not look up the PSK identity a client
	 * offered; one that does not know it gets what a wrong key gets
	 * (psk_decoy()) */
	if (hs->psk_error && !tlsh_server_psk_refused(hs))
		(void)gnutls_alert_send(hs->session, GNUTLS_AL_FATAL,
					GNUTLS_A_INTERNAL_ERROR);
	else
		(void)gnutls_alert_send_appropriate(hs->session, ret);
	drain(hs->session);
}

static int drive_handshake(struct hs_session *hs, int fd,
			   const struct hs_params *p, char *err, size_t errlen)
{
	gnutls_session_t s = hs->session;
	uint64_t deadline = tlsh_now_ms() + p->timeout_ms;

	for (;;) {
		struct pollfd pfd;
		uint64_t now;
		int pr, ret;

		ret = gnutls_handshake(s);
		/* done on a decoy PSK (a 256-bit guess): refused all the same */
		if (ret == 0 && hs->psk_error)
			return classify(hs, p, ret, err, errlen);
		if (ret == 0)
			return 0;
		if (ret != GNUTLS_E_AGAIN && ret != GNUTLS_E_INTERRUPTED) {
			if (!gnutls_error_is_fatal(ret)) {
				log_debug("non-fatal during handshake: %s",
					  gnutls_strerror(ret));
				continue;
			}
			send_alert(hs, ret);
			return classify(hs, p, ret, err, errlen);
		}
		now = tlsh_now_ms();
		if (now >= deadline)
			return classify(hs, p, GNUTLS_E_TIMEDOUT, err, errlen);
		pfd.fd = fd;
		pfd.events = gnutls_record_get_direction(s) ? POLLOUT : POLLIN;
		pfd.revents = 0;
		pr = poll(&pfd, 1, (int)(deadline - now));
		if (pr == 0)
			return classify(hs, p, GNUTLS_E_TIMEDOUT, err, errlen);
		if (pr < 0 && errno != EINTR) {
			snprintf(err, errlen, "poll: %s", strerror(errno));
			return -EPROTO;
		}
	}
}

/*
 * TLS 1.3 ends the client's side of the handshake before the server has
 * checked the client's certificate: a server that rejects it (or the lack
 * of one) sends an alert after our last flight.  When the server asked
 * for a certificate, wait a little for such an alert, so that a rejected
 * certificate fails the handshake here, with the server's reason, rather
 * than the connection's first RPC.  A NewSessionTicket, or silence, means
 * the certificate was accepted.
 *
 * A server that accepts and sends no ticket (we ask for none) sends
 * nothing at all, so the whole wait is paid on every such handshake.  It
 * is sized from the handshake just done: checking our certificate costs
 * the server about what checking its certificate cost us, and the
 * handshake's duration covers that plus a round trip.  Three times that
 * (room for scheduling jitter), at least HS_VERDICT_MIN_MS and at most
 * HS_VERDICT_MAX_MS.  A verdict that comes later still ends the
 * connection: kernel TLS receives the alert and the transport reconnects.
 */
#define HS_VERDICT_MIN_MS	100
#define HS_VERDICT_MAX_MS	750

unsigned int tlsh_hs_verdict_wait_ms(uint64_t handshake_ms, uint32_t left_ms)
{
	uint64_t w = 3 * handshake_ms;

	if (w < HS_VERDICT_MIN_MS)
		w = HS_VERDICT_MIN_MS;
	if (w > HS_VERDICT_MAX_MS)
		w = HS_VERDICT_MAX_MS;
	if (w > left_ms)
		w = left_ms;
	return (unsigned int)w;
}

/* The largest TLS record: header, 2^14 octets and the AEAD's expansion */
#define HS_RECORD_MAX	(5 + 16384 + 256)

/*
 * Wait (at most until deadline, in tlsh_now_ms() time) until the socket holds a
 * whole TLS record, or the connection ended.  GnuTLS must never be handed
 * part of a record: it would keep that part, and kTLS, installed next,
 * would start in the middle of a record and fail the connection.  True
 * when gnutls_record_recv() may read, false when the time ran out first.
 *
 * Only recv(MSG_PEEK) is used: the handshake socket forwards it to the
 * kernel's TCP socket, while ioctl(FIONREAD) and SOL_SOCKET options would
 * act on the handshake socket itself.  poll() reports readable as soon
 * as one byte is there, so the rest of a split record is waited for in
 * short sleeps (a rare case: a record split across TCP segments).
 */
static bool whole_record_ready(int fd, uint64_t deadline)
{
	unsigned char buf[HS_RECORD_MAX];

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return true;	/* closed or failed: GnuTLS says how */
		if (n >= 5 && (size_t)n >= 5u + (size_t)(buf[3] << 8 | buf[4]))
			return true;
		if (tlsh_now_ms() >= deadline)
			return false;
		(void)poll(NULL, 0, 5);
	}
}

static int await_verdict(struct hs_session *hs, int fd, unsigned int wait_ms,
			 const struct hs_params *p, char *err, size_t errlen)
{
	gnutls_session_t s = hs->session;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint64_t deadline = tlsh_now_ms() + wait_ms;
	unsigned char byte;
	ssize_t n;

	/* a verdict comes only on a certificate we sent */
	if (gnutls_protocol_get_version(s) != GNUTLS_TLS1_3 ||
	    !gnutls_certificate_client_get_request_status(s) ||
	    !hs->x509 || !hs->x509->npcerts)
		return 0;
	if (poll(&pfd, 1, (int)wait_ms) <= 0)
		return 0;
	/* one deadline for both waits */
	if (!whole_record_ready(fd, deadline))
		return 0;	/* kTLS will read the record */
	n = gnutls_record_recv(s, &byte, sizeof(byte));
	if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
		return 0;	/* a ticket, processed */
	if (n == 0) {
		snprintf(err, errlen,
			 "peer closed the connection right after the handshake (client certificate not accepted?)");
		return -EACCES;
	}
	if (n > 0) {
		snprintf(err, errlen,
			 "peer sent application data before the first request");
		return -EPROTO;
	}
	if (n == GNUTLS_E_PULL_ERROR || n == GNUTLS_E_PREMATURE_TERMINATION) {
		snprintf(err, errlen,
			 "peer reset the connection right after the handshake (client certificate not accepted?)");
		return -EACCES;
	}
	return classify(hs, p, (int)n, err, errlen);
}

/* The PSK, handed to GnuTLS per handshake: GnuTLS wipes this copy when it
 * is done with it, which it does not do for the copy that
 * gnutls_psk_set_client_credentials() keeps in the credentials.
 */
static int psk_callback(gnutls_session_t s, char **username,
			gnutls_datum_t *key)
{
	const struct hs_session *hs = gnutls_session_get_ptr(s);
	const struct tlsh_psk *psk = hs ? hs->psk : NULL;

	/* GnuTLS's contract: non-zero is a failure */
	if (!psk || !psk->keylen)
		return -1;
	*username = gnutls_strdup(psk->identity);
	key->data = gnutls_malloc(psk->keylen);
	if (!*username || !key->data) {
		gnutls_free(*username);
		gnutls_free(key->data);
		*username = NULL;
		key->data = NULL;
		return -1;
	}
	memcpy(key->data, psk->key, psk->keylen);
	key->size = (unsigned)psk->keylen;
	return 0;
}

/* A client hello with an x.509 certificate (or none): the configured
 * trust store verifies the server, unless encryption-only */
static int hs_client_x509(struct hs_session *hs, const struct hs_params *p,
			  char *err, size_t errlen)
{
	int ret;

	hs->x509 = p->x509;
	hs->auth_optional = p->auth_optional;
	/* not verifying at all is not authenticating: say so where the
	 * kernel lets us */
	if (hs_cfg->encryption_only && p->auth_optional)
		hs->unauthenticated = 1;
	ret = gnutls_credentials_set(hs->session, GNUTLS_CRD_CERTIFICATE,
				     hs_xcred);
	if (ret < 0) {
		snprintf(err, errlen, "setting credentials: %s",
			 gnutls_strerror(ret));
		return -EINVAL;
	}
	if (hs_cfg->encryption_only)
		log_info("encryption-only: not verifying the certificate of %s",
			 p->peername && *p->peername ? p->peername : "the peer");
	else
		set_verification(hs, p);
	return 0;
}

/* A client hello with a pre-shared key: the key authenticates both ends */
static int hs_client_psk(struct hs_session *hs, const struct hs_params *p,
			 char *err, size_t errlen)
{
	int ret;

	if (!p->psk || !p->psk->keylen) {
		snprintf(err, errlen, "PSK handshake without a PSK");
		return -EINVAL;
	}
	hs->psk = p->psk;
	ret = gnutls_psk_allocate_client_credentials(&hs->pskcred);
	if (ret == 0) {
		gnutls_psk_set_client_credentials_function(hs->pskcred,
							   psk_callback);
		ret = gnutls_credentials_set(hs->session, GNUTLS_CRD_PSK,
					     hs->pskcred);
	}
	if (ret < 0) {
		snprintf(err, errlen, "setting credentials: %s",
			 gnutls_strerror(ret));
		return -EINVAL;
	}
	return 0;
}

/* What each handshake type does differently: its GnuTLS credentials (a
 * server's are in server.c). The rest of a handshake (priorities, ALPN,
 * the deadline, kTLS) is tlsh_hs_run()'s, the same for every type, but
 * for what only a client does (SNI, the wait for the server's verdict). */
static const struct hs_type {
	int type;
	int server;
	int (*credentials)(struct hs_session *hs, const struct hs_params *p,
			   char *err, size_t errlen);
} hs_types[] = {
	{ TLSH_TYPE_CLIENTHELLO_X509, 0, hs_client_x509 },
	{ TLSH_TYPE_CLIENTHELLO_PSK, 0, hs_client_psk },
	{ TLSH_TYPE_SERVERHELLO_X509, 1, tlsh_server_x509 },
	{ TLSH_TYPE_SERVERHELLO_PSK, 1, tlsh_server_psk },
};

static const struct hs_type *hs_type_find(int type)
{
	for (size_t i = 0; i < sizeof(hs_types) / sizeof(hs_types[0]); i++)
		if (hs_types[i].type == type)
			return &hs_types[i];
	return NULL;
}

int tlsh_hs_run(struct hs_session *hs, int fd, const struct hs_params *p,
		char *err, size_t errlen)
{
	char prio[TLSH_MAX_PRIORITIES + 64];
	const struct hs_type *t = hs_type_find(p->type);
	const char *errpos = NULL;
	int ret, gerr = 0, flags, status, psk_kx;
	uint64_t t0, t1;

	memset(hs, 0, sizeof(*hs));
	if (!t) {
		snprintf(err, errlen, "unsupported handshake type %d", p->type);
		return -EINVAL;
	}
	hs->server = t->server;
	if (p->timeout_ms == 0) {
		snprintf(err, errlen, "no time left for the handshake");
		return -ETIMEDOUT;
	}
	/* The default priorities with the PSK key exchanges: a PSK
	 * handshake's, and an x509 server's that serves PSK clients too
	 * (GnuTLS takes a TLS 1.3 client's PSK only with them) */
	psk_kx = p->type == TLSH_TYPE_CLIENTHELLO_PSK ||
		 p->type == TLSH_TYPE_SERVERHELLO_PSK ||
		 (p->type == TLSH_TYPE_SERVERHELLO_X509 && p->psk_lookup);
	if (tlsh_hs_priorities(hs_cfg, p->priorities,
			       psk_kx ? TLSH_TYPE_SERVERHELLO_PSK : p->type,
			       prio, sizeof(prio)) < 0) {
		snprintf(err, errlen, "priority string too long");
		return -EINVAL;
	}

	/* No session tickets: there is nothing to resume (the session goes
	 * to kTLS), and a server's NewSessionTicket would be a handshake
	 * record after the handshake, for the client's kTLS to deal with.  A
	 * GnuTLS server sends none without a ticket key, which we never set:
	 * this says so for the client's side and the server's alike */
	ret = gnutls_init(&hs->session, (hs->server ? GNUTLS_SERVER : GNUTLS_CLIENT) |
			  GNUTLS_NO_SIGNAL | GNUTLS_NO_TICKETS);
	if (ret < 0) {
		snprintf(err, errlen, "gnutls_init: %s", gnutls_strerror(ret));
		hs->session = NULL;
		return -ENOMEM;
	}
	gnutls_session_set_ptr(hs->session, hs);
	tlsh_fault_session(hs->session);
	if (p->priorities && p->priorities[0]) {
		gnutls_priority_t own;

		if (tlsh_config_priority_init(&own, prio, &errpos, &gerr) == 0) {
			gerr = gnutls_priority_set(hs->session, own);
			gnutls_priority_deinit(own);
		}
	} else {
		gerr = gnutls_priority_set(hs->session, hs_prio_default[psk_kx]);
	}
	/* what the kernel is told is EINVAL, whatever GnuTLS's reason */
	if (gerr < 0) {
		priority_error(err, errlen, prio, errpos, gerr);
		return -EINVAL;
	}

	ret = t->credentials(hs, p, err, errlen);
	if (ret)
		return ret;
	if (!hs->server && p->peername && *p->peername &&
	    tlsh_valid_dns_name(p->peername)) {
		unsigned char ip[16];
		size_t iplen;

		if (!tlsh_ip_literal(p->peername, ip, &iplen))
			gnutls_server_name_set(hs->session, GNUTLS_NAME_DNS,
					       p->peername, strlen(p->peername));
	}
	/* RFC 9289, Section 5.1: offer ALPN "sunrpc"; a server that does
	 * not answer with it (tlshd and FreeBSD do not yet) is accepted.  As
	 * a server: choose it when offered, and accept a client that offers
	 * none */
	ret = gnutls_alpn_set_protocols(hs->session, &hs_alpn, 1, 0);
	if (ret < 0) {
		snprintf(err, errlen, "ALPN: %s", gnutls_strerror(ret));
		return -EINVAL;
	}
	gnutls_transport_set_int(hs->session, fd);
	gnutls_transport_set_push_function(hs->session, hs_push);
	gnutls_transport_set_pull_function(hs->session, hs_pull);
	gnutls_transport_set_pull_timeout_function(hs->session,
						   hs_pull_timeout);
	gnutls_handshake_set_timeout(hs->session, p->timeout_ms);

	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
		snprintf(err, errlen, "fcntl: %s", strerror(errno));
		return -EINVAL;
	}
	t0 = tlsh_now_us();
	status = drive_handshake(hs, fd, p, err, errlen);
	t1 = tlsh_now_us();
	hs->handshake_us = t1 - t0;
	if (!status && !hs->server) {
		uint64_t spent_ms = hs->handshake_us / 1000;
		/* what the handshake left of the agent's time */
		uint32_t left_ms = spent_ms < p->timeout_ms ?
				   p->timeout_ms - (uint32_t)spent_ms : 0;

		status = await_verdict(hs, fd,
				       tlsh_hs_verdict_wait_ms(spent_ms, left_ms),
				       p, err, errlen);
		hs->verdict_us = tlsh_now_us() - t1;
	}
	if (fcntl(fd, F_SETFL, flags) < 0 && !status) {
		snprintf(err, errlen, "fcntl: %s", strerror(errno));
		status = -EIO;
	}
	if (status)
		return status;

	if (gnutls_record_check_pending(hs->session) > 0) {
		snprintf(err, errlen,
			 "peer sent application data before the handshake completed");
		return -EPROTO;
	}
	return tlsh_ktls_check(hs->session, err, errlen);
}

int tlsh_hs_closed_after(gnutls_session_t s, int fd, char *err, size_t errlen)
{
	char buf[256];

	for (int i = 0; i < 8; i++) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, 100) <= 0)
			break;
		n = gnutls_record_recv(s, buf, sizeof(buf));
		if (n == GNUTLS_E_FATAL_ALERT_RECEIVED) {
			const char *an = gnutls_alert_get_name(gnutls_alert_get(s));

			snprintf(err, errlen,
				 "the server refused the session after the handshake: %s",
				 an ? an : "unknown alert");
			return -EACCES;
		}
		if (n <= 0 && n != GNUTLS_E_AGAIN && n != GNUTLS_E_INTERRUPTED)
			break;
	}
	snprintf(err, errlen,
		 "the server closed the connection right after the handshake");
	return -ECONNRESET;
}

void tlsh_hs_session_free(struct hs_session *hs)
{
	if (hs->session)
		gnutls_deinit(hs->session);
	if (hs->pskcred)
		gnutls_psk_free_client_credentials(hs->pskcred);
	if (hs->psksrv)
		gnutls_psk_free_server_credentials(hs->psksrv);
	memset(hs, 0, sizeof(*hs));
}
