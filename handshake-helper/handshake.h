/* SPDX-License-Identifier: GPL-2.0 */
/* The GnuTLS client handshake, shared by the kernel and --connect modes. */
#ifndef TLSH_HANDSHAKE_H
#define TLSH_HANDSHAKE_H

#include <linux/tls.h>	/* the series' UAPI: TLSH_TYPE_* */
#include <stddef.h>
#include <stdint.h>

#include <gnutls/gnutls.h>

#include "config.h"
#include "keyring.h"

struct hs_params {
	int type;			/* TLSH_TYPE_CLIENTHELLO_X509 / _PSK */
	const char *priorities;		/* NULL or "": configured default */
	const char *peername;		/* NULL or "": none */
	/* Raw peer address, used to verify the certificate when there is
	 * no peer name (4 or 16 bytes; 0 = unknown). */
	unsigned char peer_ip[16];
	size_t peer_ip_len;
	const struct tlsh_x509 *x509;	/* client certificate, or NULL */
	const struct tlsh_psk *psk;	/* for TLSH_TYPE_CLIENTHELLO_PSK */
	unsigned timeout_ms;		/* whole handshake */
	/* complete with a server whose certificate does not verify (and
	 * say so in hs_session.unauthenticated) rather than fail */
	int auth_optional;
};

struct hs_session {
	gnutls_session_t session;
	gnutls_psk_client_credentials_t pskcred;
	const struct tlsh_x509 *x509;
	const struct tlsh_psk *psk;
	/* What the server certificate is verified against (verify_server()):
	 * its name or address, then the key purpose; nvdata 0 = not verified */
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
	/* where the time went (microseconds): the TLS handshake itself,
	 * and the wait for the server's verdict on our certificate */
	uint64_t handshake_us, verdict_us;
};

/* How long to wait for the server's verdict on our certificate after a
 * TLS 1.3 handshake that took handshake_ms (see handshake.c); at most
 * left_ms.  Returns milliseconds. */
unsigned int tlsh_hs_verdict_wait_ms(uint64_t handshake_ms, uint32_t left_ms);

/* Load the trust store / CRL from cfg.  cfg must outlive all handshakes.
 * Returns 0 or -errno (-EINVAL: a bad priority string, trust store or CRL;
 * -ENOMEM; -EIO: GnuTLS or the system trust store could not be set up)
 * with a message in err. */
int tlsh_hs_global_init(const struct config *cfg, char *err, size_t errlen);
void tlsh_hs_global_deinit(void);

/*
 * Run a client handshake on connected socket fd (made non-blocking for the
 * duration, restored afterwards).  On success returns 0 and leaves the
 * session in hs (free it with tlsh_hs_session_free()).  On failure returns
 * the -errno whose errno is reported to the kernel - -EKEYREJECTED
 * (certificate not verified), -EACCES (fatal alert from the peer),
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

/* Effective priority string for a handshake. 0 or -E2BIG (too long). */
int tlsh_hs_priorities(const struct config *cfg, const char *requested, int type,
		       char *out, size_t outlen);

/* Why the server certificate did not verify: "signer unknown, expired" */
void tlsh_hs_verify_reasons(const struct hs_session *hs, char *buf, size_t len);

/* "TLS1.3 AES-256-GCM" */
void tlsh_hs_describe(gnutls_session_t s, char *buf, size_t len);

#endif
