// SPDX-License-Identifier: GPL-2.0
/*
 * The server role (TLSH_TYPE_SERVERHELLO_X509 and _PSK): what differs from
 * a client's handshake.  The rest (priorities, the deadline, alerts, kTLS)
 * is handshake.c's.
 *
 * x509: one certificate credential, set up once at start-up, holds the
 * client trust store (and the CRL); the server's certificate and key are
 * handed out per session through the retrieve callback, as a client's
 * are.  With a client trust store the server asks for a certificate: one
 * that is offered must verify (verify_client(), during the handshake), a
 * client that offers none is accepted, unauthenticated.  Without one it
 * asks for none.
 *
 * PSK: the identity the client offers names a key, looked up per
 * handshake (psk_callback()) in a keyring, or in a file for --accept.
 *
 * An x509 server serves PSK clients too where it has a keyring of their
 * keys: knfsd asks for x509 whatever its client will offer, which it
 * cannot know before the ClientHello.  Both credentials are then set; a
 * client that offers a PSK identity gets a PSK handshake, one that does
 * not the certificate one.  Such a server may have no certificate: it
 * then serves PSK clients only.
 */
#include "server.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include <gnutls/crypto.h>
#include <gnutls/x509.h>

/* RFC 9289, Section 5.2.1: a client certificate may carry
 * id-kp-rpcTLSClient instead of (or besides) id-kp-clientAuth */
#define TLSH_KP_RPC_TLS_CLIENT	"1.3.6.1.5.5.7.3.33"

static gnutls_certificate_credentials_t srv_xcred;
static const struct config *srv_cfg;

/*
 * A certificate chain and its key from files into x.  0 or -errno with
 * the reason in err; *bad_key says which file it is about.
 */
static int load_pair(const char *cert, const char *key, struct tlsh_x509 *x,
		     int *bad_key, char *err, size_t errlen)
{
	unsigned char *buf = NULL;
	size_t len = 0;
	char why[256];
	int ret;

	*bad_key = 0;
	ret = tlsh_read_file(cert, TLSH_PAYLOAD_MAX, &buf, &len);
	if (ret) {
		snprintf(err, errlen, "server-certificate %s: %s", cert,
			 ret == -EFBIG ? "file too large" : strerror(-ret));
		return ret;
	}
	ret = tlsh_keyring_parse_certs(x, buf, len, why, sizeof(why));
	tlsh_keyring_free_payload(buf, len);
	if (ret) {
		snprintf(err, errlen, "server-certificate %s: %s", cert, why);
		return ret;
	}
	*bad_key = 1;
	ret = tlsh_read_file(key, TLSH_PAYLOAD_MAX, &buf, &len);
	if (ret) {
		tlsh_keyring_x509_free(x);
		snprintf(err, errlen, "server-private-key %s: %s", key,
			 ret == -EFBIG ? "file too large" : strerror(-ret));
		return ret;
	}
	(void)mlock(buf, len);	/* best effort; unlocked when freed */
	ret = tlsh_keyring_parse_privkey(x, buf, len, why, sizeof(why));
	tlsh_keyring_free_payload(buf, len);
	if (ret) {
		tlsh_keyring_x509_free(x);
		snprintf(err, errlen, "server-private-key %s: %s", key, why);
		return ret;
	}
	return 0;
}

int tlsh_server_load_configured(const struct config *cfg, struct tlsh_x509 *x,
				char *err, size_t errlen)
{
	int bad_key;

	if (!cfg->server_cert[0]) {
		snprintf(err, errlen,
			 "no server certificate configured (server-certificate in %s)",
			 tlsh_config_file(cfg));
		return -ENOKEY;
	}
	return load_pair(cfg->server_cert, cfg->server_key, x, &bad_key, err,
			 errlen);
}

/* The subject of DER certificate der, RFC 4514, without control
 * characters (it goes into log lines) */
static void subject_of(const gnutls_datum_t *der, char *buf, size_t len)
{
	gnutls_x509_crt_t crt;
	gnutls_datum_t dn = { NULL, 0 };

	tlsh_copy_string(buf, len, "unreadable subject");
	if (gnutls_x509_crt_init(&crt) < 0)
		return;
	if (gnutls_x509_crt_import(crt, der, GNUTLS_X509_FMT_DER) == 0 &&
	    gnutls_x509_crt_get_dn3(crt, &dn, 0) == 0) {
		size_t i;

		for (i = 0; i < dn.size && i + 1 < len; i++)
			buf[i] = dn.data[i] < 0x20 || dn.data[i] == 0x7f ?
				 '?' : (char)dn.data[i];
		buf[i] = '\0';
		if (i < dn.size && len > 4)
			memcpy(buf + len - 4, "...", 4);
		if (!dn.size)
			tlsh_copy_string(buf, len, "empty subject");
	}
	gnutls_free(dn.data);
	gnutls_x509_crt_deinit(crt);
}

/*
 * Verify a client's certificate during the handshake, so that one that
 * does not verify fails it with the reason kept for classify(), and an
 * alert.  The chain must verify for clientAuth, or else for rpcTLSClient;
 * no name is checked (the consumer decides what the identity may do).
 */
static int verify_client(gnutls_session_t s)
{
	struct hs_session *hs = gnutls_session_get_ptr(s);
	const gnutls_datum_t *certs;
	unsigned n = 0;

	if (!hs || !hs->nvdata)
		return 0;
	certs = gnutls_certificate_get_peers(s, &n);
	if (!certs || !n)
		return 0;	/* none: a client not authenticated */
	subject_of(&certs[0], hs->client, sizeof(hs->client));
	/* GnuTLS's contract: non-zero ends the handshake */
	if (tlsh_hs_verify_peer(hs, GNUTLS_KP_TLS_WWW_CLIENT,
				TLSH_KP_RPC_TLS_CLIENT))
		return -1;
	hs->client_verified = 1;
	return 0;
}

int tlsh_server_global_init(const struct config *cfg, char *err, size_t errlen)
{
	int ret;

	srv_cfg = cfg;
	ret = gnutls_certificate_allocate_credentials(&srv_xcred);
	if (ret < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	gnutls_certificate_set_retrieve_function2(srv_xcred, tlsh_hs_retrieve_cert);
	gnutls_certificate_set_verify_function(srv_xcred, verify_client);
	/* TLS 1.2 DHE-RSA: an RFC 7919 group of the medium security level */
	(void)gnutls_certificate_set_known_dh_params(srv_xcred,
						     GNUTLS_SEC_PARAM_MEDIUM);
	if (cfg->server_cert[0]) {
		struct tlsh_x509 x;
		char why[PATH_MAX + 300];
		int bad_key;

		memset(&x, 0, sizeof(x));
		ret = load_pair(cfg->server_cert, cfg->server_key, &x, &bad_key,
				why, sizeof(why));
		tlsh_keyring_x509_free(&x);
		if (ret) {
			snprintf(err, errlen, "%s:%u: %s", cfg->file,
				 bad_key ? cfg->server_key_line :
				 cfg->server_cert_line, why);
			return ret;
		}
	}
	if (!cfg->client_trust_store[0])
		return 0;
	ret = gnutls_certificate_set_x509_trust_file(srv_xcred,
			cfg->client_trust_store, GNUTLS_X509_FMT_PEM);
	if (ret <= 0) {
		snprintf(err, errlen, "%s:%u: client-trust-store %s: %s",
			 cfg->file, cfg->client_trust_store_line,
			 cfg->client_trust_store,
			 ret < 0 ? gnutls_strerror(ret) : "no PEM certificates in file");
		return ret == GNUTLS_E_MEMORY_ERROR ? -ENOMEM : -EINVAL;
	}
	log_debug("loaded %d CA certificates for client certificates from %s",
		  ret, cfg->client_trust_store);
	return tlsh_hs_load_crl(srv_xcred, cfg, err, errlen);
}

void tlsh_server_global_deinit(void)
{
	if (srv_xcred)
		gnutls_certificate_free_credentials(srv_xcred);
	srv_xcred = NULL;
}

int32_t tlsh_server_psk_keyring(const struct config *cfg, int32_t keyring,
				char *err, size_t errlen)
{
	char why[512];
	int32_t ring;
	int ret;

	if (keyring > 0)
		return keyring;
	ret = tlsh_keyring_use_user_keyring(err, errlen);
	if (ret)
		return ret;
	ring = tlsh_keyring_find_ring(cfg->server_psk_keyring, why, sizeof(why));
	if (ring < 0)
		snprintf(err, errlen, "%s (server-psk-keyring in %s)", why,
			 tlsh_config_file(cfg));
	return ring;
}

int32_t tlsh_server_x509_psk_keyring(const struct config *cfg,
				     int32_t keyring, int have_cert,
				     char *err, size_t errlen)
{
	char why[768];
	int32_t ring;

	ring = tlsh_server_psk_keyring(cfg, keyring, why, sizeof(why));
	if (ring > 0) {
		log_debug("x509 server: PSK clients too, their keys in key ring %d",
			  ring);
		return ring;
	}
	if (have_cert) {
		/* no such keyring is the usual case; one that cannot be
		 * used is the administrator's to know */
		if (ring == -ENOKEY)
			log_debug("x509 server: no PSK clients: %s", why);
		else
			log_warn("x509 server: PSK clients cannot be served: %s",
				 why);
		return 0;
	}
	snprintf(err, errlen,
		 "no server certificate configured (server-certificate in %s), and no PSKs: %s",
		 tlsh_config_file(cfg), why);
	return -ENOKEY;
}

int tlsh_server_psk_from_keyring(void *arg, const char *identity,
				 struct tlsh_psk *psk, int32_t *serial,
				 char *err, size_t errlen)
{
	return tlsh_keyring_find_psk(*(const int32_t *)arg, identity, psk,
				     serial, err, errlen);
}

int tlsh_server_psk_from_file(void *arg, const char *identity,
			      struct tlsh_psk *psk, int32_t *serial,
			      char *err, size_t errlen)
{
	const struct tlsh_server_psk_file *f = arg;

	*serial = 0;
	return tlsh_keyring_parse_psk(psk, f->buf, f->len, identity, err,
				      errlen);
}

/* What a PSK identity may be: what a payload line can hold */
static bool valid_identity(const gnutls_datum_t *id)
{
	if (!id->size || id->size > TLSH_PSK_ID_MAX)
		return false;
	for (unsigned i = 0; i < id->size; i++)
		if (id->data[i] <= 0x20 || id->data[i] >= 0x7f ||
		    id->data[i] == ':')
			return false;
	return true;
}

#define TLSH_PSK_DECOY_LEN	32

/*
 * A random key for an identity the server has no key for, so that the
 * handshake fails where a wrong key fails (TLS 1.3's binder, TLS 1.2's
 * Finished) and the client is told the same: a client that is told
 * unknown_psk_identity (RFC 8446 leaves it optional) learns which
 * identities the server knows, one handshake per guess.
 */
static int psk_decoy(gnutls_datum_t *key)
{
	key->data = gnutls_malloc(TLSH_PSK_DECOY_LEN);
	if (!key->data)
		return -1;
	if (gnutls_rnd(GNUTLS_RND_KEY, key->data, TLSH_PSK_DECOY_LEN) < 0) {
		gnutls_free(key->data);
		key->data = NULL;
		return -1;
	}
	key->size = TLSH_PSK_DECOY_LEN;
	return 0;
}

/*
 * The PSK of the identity the client offers, handed to GnuTLS (which wipes
 * its copy when done).  A lookup that fails is kept (hs->psk_error,
 * psk_why) for classify(): the handshake then fails with that reason.
 * Where the client is refused (tlsh_server_psk_refused()), GnuTLS gets a
 * decoy key rather than an error: see psk_decoy().
 */
static int psk_callback(gnutls_session_t s, const gnutls_datum_t *id,
			gnutls_datum_t *key)
{
	struct hs_session *hs = gnutls_session_get_ptr(s);
	char ident[TLSH_PSK_ID_MAX + 1];
	struct tlsh_psk psk;
	int32_t serial = 0;
	int ret;

	/* GnuTLS's contract: non-zero is a failure */
	if (!hs || !hs->psk_lookup)
		return -1;
	if (!valid_identity(id)) {
		hs->psk_error = -EINVAL;
		snprintf(hs->psk_why, sizeof(hs->psk_why),
			 "the client offered a PSK identity of %u bytes that is not 1..%d printable characters without spaces or colons",
			 id->size, TLSH_PSK_ID_MAX);
		return psk_decoy(key);
	}
	memcpy(ident, id->data, id->size);
	ident[id->size] = '\0';
	(void)mlock(&psk, sizeof(psk));	/* best effort: keep it off swap */
	ret = hs->psk_lookup(hs->psk_lookup_arg, ident, &psk, &serial,
			     hs->psk_why, sizeof(hs->psk_why));
	if (!ret) {
		key->data = gnutls_malloc(psk.keylen);
		if (!key->data) {
			snprintf(hs->psk_why, sizeof(hs->psk_why), "out of memory");
			ret = -ENOMEM;
		}
	}
	if (!ret) {
		memcpy(key->data, psk.key, psk.keylen);
		key->size = (unsigned)psk.keylen;
		tlsh_copy_string(hs->client, sizeof(hs->client), ident);
		hs->client_key = serial;
		hs->psk_found = 1;
	}
	tlsh_keyring_psk_clear(&psk);
	(void)munlock(&psk, sizeof(psk));
	hs->psk_error = ret;
	if (ret && tlsh_server_psk_refused(hs))
		return psk_decoy(key);
	return ret ? -1 : 0;
}

int tlsh_server_x509(struct hs_session *hs, const struct hs_params *p,
		     char *err, size_t errlen)
{
	bool cert = p->x509 && p->x509->npcerts && p->x509->key;
	int ret;

	if (!cert && !p->psk_lookup) {
		snprintf(err, errlen, "no server certificate, and no PSKs");
		return -ENOKEY;
	}
	/* PSK clients too (the priorities allow it: tlsh_hs_run()) */
	if (p->psk_lookup) {
		ret = tlsh_server_psk(hs, p, err, errlen);
		if (ret)
			return ret;
	}
	if (!cert)
		return 0;	/* PSK clients only */
	hs->x509 = p->x509;
	ret = gnutls_credentials_set(hs->session, GNUTLS_CRD_CERTIFICATE,
				     srv_xcred);
	if (ret < 0) {
		snprintf(err, errlen, "setting credentials: %s",
			 gnutls_strerror(ret));
		return -EINVAL;
	}
	if (!srv_cfg->client_trust_store[0]) {
		/* a certificate we cannot verify is not asked for */
		gnutls_certificate_server_set_request(hs->session,
						      GNUTLS_CERT_IGNORE);
		return 0;
	}
	memset(hs->vdata, 0, sizeof(hs->vdata));
	hs->vdata[0].type = GNUTLS_DT_KEY_PURPOSE_OID;
	hs->vdata[0].data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT;
	hs->nvdata = 1;		/* verify_client() uses it */
	gnutls_certificate_server_set_request(hs->session, GNUTLS_CERT_REQUEST);
	return 0;
}

int tlsh_server_psk(struct hs_session *hs, const struct hs_params *p,
		    char *err, size_t errlen)
{
	int ret;

	if (!p->psk_lookup) {
		snprintf(err, errlen, "PSK server handshake without a key ring");
		return -EINVAL;
	}
	hs->psk_lookup = p->psk_lookup;
	hs->psk_lookup_arg = p->psk_lookup_arg;
	ret = gnutls_psk_allocate_server_credentials(&hs->psksrv);
	if (ret == 0) {
		gnutls_psk_set_server_credentials_function2(hs->psksrv,
							    psk_callback);
		/* TLS 1.2 DHE-PSK */
		ret = gnutls_psk_set_server_known_dh_params(hs->psksrv,
				GNUTLS_SEC_PARAM_MEDIUM);
	}
	if (ret == 0)
		ret = gnutls_credentials_set(hs->session, GNUTLS_CRD_PSK,
					     hs->psksrv);
	if (ret < 0) {
		snprintf(err, errlen, "setting credentials: %s",
			 gnutls_strerror(ret));
		return -EINVAL;
	}
	return 0;
}

int tlsh_server_psk_refused(const struct hs_session *hs)
{
	switch (hs->psk_error) {
	case -ENOKEY:		/* no key for the identity */
	case -EINVAL:		/* not an identity, or a malformed key */
	case -EKEYEXPIRED:
	case -EKEYREVOKED:
	case -EKEYREJECTED:
		return 1;
	default:
		return 0;
	}
}

int tlsh_server_classify(const struct hs_session *hs, int ret, char *err,
			 size_t errlen)
{
	if (hs->psk_error) {
		snprintf(err, errlen, "%s", hs->psk_why);
		return tlsh_server_psk_refused(hs) ? -EKEYREJECTED :
						     hs->psk_error;
	}
	if (hs->verify_status && (ret == GNUTLS_E_CERTIFICATE_ERROR ||
				  ret == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR)) {
		char why[256];

		tlsh_hs_verify_reasons(hs, why, sizeof(why));
		snprintf(err, errlen, "client certificate '%s' not trusted: %s",
			 hs->client, why);
		return -EKEYREJECTED;
	}
	/* The identity was known, and the client's key for it is another:
	 * TLS 1.3's binder does not verify (GnuTLS says illegal parameter),
	 * TLS 1.2's Finished does not decrypt */
	if (hs->psk_found &&
	    (ret == GNUTLS_E_RECEIVED_ILLEGAL_PARAMETER ||
	     ret == GNUTLS_E_DECRYPTION_FAILED ||
	     ret == GNUTLS_E_ERROR_IN_FINISHED_PACKET)) {
		if (hs->client_key)
			snprintf(err, errlen,
				 "the client's key for PSK identity '%s' does not match key %d",
				 hs->client, hs->client_key);
		else
			snprintf(err, errlen,
				 "the client's key for PSK identity '%s' does not match ours",
				 hs->client);
		return -EKEYREJECTED;
	}
	/* A server for PSK clients only, and a client that offered none */
	if (ret == GNUTLS_E_INSUFFICIENT_CREDENTIALS && hs->psksrv &&
	    !hs->x509 && !hs->psk_found) {
		snprintf(err, errlen,
			 "the client offered no PSK identity, and this server takes PSK clients only (no server certificate)");
		return -EPROTO;
	}
	return 0;
}

int tlsh_server_by_psk(const struct hs_session *hs)
{
	return hs->psk_found && hs->session &&
	       gnutls_auth_get_type(hs->session) == GNUTLS_CRD_PSK;
}

void tlsh_server_client_name(const struct hs_session *hs, char *buf,
			     size_t len)
{
	if (tlsh_server_by_psk(hs))
		snprintf(buf, len, "PSK identity %s", hs->client);
	else if (hs->client_verified)
		snprintf(buf, len, "%s", hs->client);
	else
		snprintf(buf, len, "unauthenticated client");
}

int tlsh_server_identity(const struct hs_session *hs, int32_t *serial,
			 char desc[TLSH_CLIENT_KEY_DESC], char *err,
			 size_t errlen)
{
	const gnutls_datum_t *certs;
	unsigned n = 0;
	int32_t k;

	*serial = 0;
	desc[0] = '\0';
	if (tlsh_server_by_psk(hs)) {
		*serial = hs->client_key;
		return 0;
	}
	if (!hs->client_verified)
		return 0;
	certs = gnutls_certificate_get_peers(hs->session, &n);
	if (!certs || !n) {
		snprintf(err, errlen, "the verified client certificate is gone");
		return -EPROTO;
	}
	k = tlsh_keyring_add_client_cert(certs[0].data, certs[0].size, desc,
					 err, errlen);
	if (k < 0)
		return k;
	*serial = k;
	return 0;
}
