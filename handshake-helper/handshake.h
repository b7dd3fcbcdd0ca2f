/* SPDX-License-Identifier: GPL-2.0 */
/* The GnuTLS handshake, client or server, shared by the kernel mode and
 * the test modes (--connect, --accept). */
#ifndef TLSH_HANDSHAKE_H
#define TLSH_HANDSHAKE_H

#include <linux/tls.h>	/* the series' UAPI: TLSH_TYPE_* */
#include <stddef.h>
#include <stdint.h>

#include <gnutls/gnutls.h>

#include "config.h"
#include "keyring.h"

/*
 * A server's lookup of the PSK for the identity a client offers (printable
 * ASCII, without spaces or colons): 0 with the PSK in *psk and the serial
 * of the key that holds it in *serial (0: not a key), or -errno with the
 * reason in err.
 */
typedef int tlsh_psk_lookup_fn(void *arg, const char *identity,
			       struct tlsh_psk *psk, int32_t *serial,
			       char *err, size_t errlen);

struct hs_params {
	int type;			/* TLSH_TYPE_*: the role and the kind */
	const char *priorities;		/* NULL or "": configured default */
	const char *peername;		/* NULL or "": none */
	/* Raw peer address, used to verify the certificate when there is
	 * no peer name (4 or 16 bytes; 0 = unknown). */
	unsigned char peer_ip[16];
	size_t peer_ip_len;
	/* our certificate: a client's (or NULL), a server's (NULL: a
	 * TLSH_TYPE_SERVERHELLO_X509 server for PSK clients only) */
	const struct tlsh_x509 *x509;
	const struct tlsh_psk *psk;	/* for TLSH_TYPE_CLIENTHELLO_PSK */
	/* for TLSH_TYPE_SERVERHELLO_PSK: where the clients' PSKs are; for
	 * TLSH_TYPE_SERVERHELLO_X509 NULL, or the same: PSK clients are then
	 * served too (and the default priorities allow PSK key exchange) */
	tlsh_psk_lookup_fn *psk_lookup;
	void *psk_lookup_arg;
	unsigned timeout_ms;		/* whole handshake */
	/* complete with a server whose certificate does not verify (and
	 * say so in hs_session.unauthenticated) rather than fail */
	int auth_optional;
};

struct hs_session {
	gnutls_session_t session;
	int server;			/* a TLSH_TYPE_SERVERHELLO_* */
	gnutls_psk_client_credentials_t pskcred;
	gnutls_psk_server_credentials_t psksrv;
	const struct tlsh_x509 *x509;
	const struct tlsh_psk *psk;
	tlsh_psk_lookup_fn *psk_lookup;
	void *psk_lookup_arg;
	/* What the peer's certificate is verified against (verify_server(),
	 * server.c's verify_client()): a server's name or address, then the
	 * key purpose; nvdata 0 = not verified */
	gnutls_typed_vdata_st vdata[2];
	unsigned nvdata;
	unsigned char vd_ip[16];
	char vd_name[256];
	/* the verification's result (GNUTLS_CERT_* bits), and the GnuTLS
	 * error if it could not run at all */
	unsigned verify_status;
	int verify_error;
	int auth_optional;
	int unauthenticated;	/* accepted although verify_status != 0 */
	/* A server's client, as far as it is known (server.c): the subject
	 * of the certificate it presented, or the PSK identity it offered;
	 * "" = none */
	char client[256];
	int client_verified;		/* its certificate verified */
	int32_t client_key;		/* PSK: the key that holds its PSK */
	/* PSK: the identity the client offered was found (client, and
	 * client_key, are its) */
	int psk_found;
	/* PSK: why the identity the client offered was refused (-errno) */
	int psk_error;
	char psk_why[256];
	/* where the time went (microseconds): the TLS handshake itself,
	 * and the wait for the server's verdict on our certificate */
	uint64_t handshake_us, verdict_us;
};

/* How long to wait for the server's verdict on our certificate after a
 * TLS 1.3 handshake that took handshake_ms (see handshake.c); at most
 * left_ms.  Returns milliseconds. */
unsigned int tlsh_hs_verdict_wait_ms(uint64_t handshake_ms, uint32_t left_ms);

/* Load the trust store / CRL from cfg, and check the server role's files
 * (tlsh_server_global_init()).  cfg must outlive all handshakes.  Returns
 * 0 or -errno (-EINVAL: a bad priority string, trust store, CRL, server
 * certificate or key, client trust store; -ENOMEM; -EIO: GnuTLS or the
 * system trust store could not be set up; the error of reading a server
 * file) with a message in err. */
int tlsh_hs_global_init(const struct config *cfg, char *err, size_t errlen);
/* Load the configured crl (PEM, else DER) into cred, for server or client
 * certificates; 0 (also without a crl) or -errno with a message in err. */
int tlsh_hs_load_crl(gnutls_certificate_credentials_t cred,
		     const struct config *cfg, char *err, size_t errlen);
void tlsh_hs_global_deinit(void);

/*
 * Run a handshake of type p->type on connected socket fd (made
 * non-blocking for the duration, restored afterwards): a client's, or a
 * server's (server.c has what differs).  On success returns 0 and leaves
 * the session in hs (free it with tlsh_hs_session_free()).  On failure
 * returns the -errno whose errno is reported to the kernel - -EKEYREJECTED
 * (a certificate not verified; a server: a client's PSK identity unknown
 * or its key not the one it offered), -ENOKEY (a server without a
 * certificate, and for x509 without PSKs too), -EACCES (fatal alert from the peer),
 * -ETIMEDOUT, -ECONNRESET (the peer closed or reset the connection),
 * -EPROTO (other TLS errors, negotiated cipher not usable by kTLS), -EINVAL
 * (bad parameters), -ENOMEM, -EIO - with one line describing the reason in
 * err.
 */
int tlsh_hs_run(struct hs_session *hs, int fd, const struct hs_params *p,
		char *err, size_t errlen);
/* The connection of session s closed after the handshake (kTLS could not
 * be installed, a send failed): read what the server sent last.  Returns
 * -EACCES (a fatal alert: the server refused us, e.g. a TLS 1.3 server
 * wanting a client certificate) or -ECONNRESET, with the reason in err. */
int tlsh_hs_closed_after(gnutls_session_t s, int fd, char *err, size_t errlen);
void tlsh_hs_session_free(struct hs_session *hs);

/* Effective priority string for a handshake of type: without a requested
 * one, the configured default, with the PSK key exchanges for the PSK
 * types (tlsh_hs_run() passes a PSK type for an x509 server that takes
 * PSK clients too).  0 or -E2BIG (too long). */
int tlsh_hs_priorities(const struct config *cfg, const char *requested, int type,
		       char *out, size_t outlen);

/* Why the peer's certificate did not verify: "signer unknown, expired" */
void tlsh_hs_verify_reasons(const struct hs_session *hs, char *buf, size_t len);

/*
 * For server.c.  tlsh_hs_retrieve_cert(): GnuTLS's callback that hands out
 * our own certificate, hs->x509.  tlsh_hs_verify_peer(): verify the peer's
 * chain for key purpose kp (the last of hs->vdata), or else for alt_kp
 * (GnuTLS checks one purpose per verification); the result in
 * hs->verify_status and hs->verify_error, and returned: 0 = verified.
 */
int tlsh_hs_retrieve_cert(gnutls_session_t s, const gnutls_datum_t *req_ca_dn,
			  int nreqs, const gnutls_pk_algorithm_t *pk_algos,
			  int pk_algos_length, gnutls_pcert_st **pcert,
			  unsigned int *pcert_length, gnutls_privkey_t *pkey);
unsigned tlsh_hs_verify_peer(struct hs_session *hs, const char *kp,
			     const char *alt_kp);

/* "TLS1.3 AES-256-GCM" */
void tlsh_hs_describe(gnutls_session_t s, char *buf, size_t len);

#endif
