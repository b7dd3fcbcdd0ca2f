/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The server role: the credentials of TLSH_TYPE_SERVERHELLO_X509 and
 * _PSK handshakes, the verification of a client's certificate, the lookup
 * of a client's PSK, and the key that names an authenticated client.
 */
#ifndef TLSH_SERVER_H
#define TLSH_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "handshake.h"
#include "keyring.h"

/*
 * At start-up, from tlsh_hs_global_init(): the server certificate and key
 * the configuration names are read and checked (then dropped: a server
 * handshake's process reads them again, so that no other process holds the
 * key), and the client trust store (and the CRL) loaded.  0 or -errno
 * (-EINVAL: a bad file, with "FILE:LINE: ..." in err; -ENOMEM; the error
 * of reading a file).
 */
int tlsh_server_global_init(const struct config *cfg, char *err, size_t errlen);
void tlsh_server_global_deinit(void);

/* The configured server certificate chain and key, into x (free it with
 * tlsh_keyring_x509_free()).  0, -ENOKEY (none configured), -EINVAL (a
 * bad file) or the error of reading one, with the reason in err. */
int tlsh_server_load_configured(const struct config *cfg, struct tlsh_x509 *x,
				char *err, size_t errlen);

/*
 * Where a server PSK handshake looks up the clients' PSKs: the request's
 * keyring if it names one (keyring > 0: tlsh_request_read() made this
 * thread possess it), else the configured server-psk-keyring, found by name
 * once root's user keyring is linked to this thread.  Its serial, or
 * -ENOKEY with the reason in err (or another -errno of keyctl(2)).
 */
int32_t tlsh_server_psk_keyring(const struct config *cfg, int32_t keyring,
				char *err, size_t errlen);
/*
 * The same for a TLSH_TYPE_SERVERHELLO_X509 server, which serves PSK
 * clients too where it finds that keyring: its serial, or 0 (logged at
 * level debug) when it has a certificate (have_cert) and no such keyring;
 * with neither -ENOKEY, err saying both are missing.
 */
int32_t tlsh_server_x509_psk_keyring(const struct config *cfg,
				     int32_t keyring, int have_cert,
				     char *err, size_t errlen);
/* A tlsh_psk_lookup_fn: arg points to the int32_t serial of a keyring
 * (tlsh_keyring_find_psk()) */
int tlsh_server_psk_from_keyring(void *arg, const char *identity,
				 struct tlsh_psk *psk, int32_t *serial,
				 char *err, size_t errlen);
/* A tlsh_psk_lookup_fn: arg points to a struct tlsh_server_psk_file, the
 * contents of a psktool(1) password file (tlsh_keyring_parse_psk()) */
struct tlsh_server_psk_file {
	const unsigned char *buf;
	size_t len;
};
int tlsh_server_psk_from_file(void *arg, const char *identity,
			      struct tlsh_psk *psk, int32_t *serial,
			      char *err, size_t errlen);

/* hs_types[]'s credentials of a server handshake (tlsh_hs_run()):
 * p->x509 for x509, and p->psk_lookup too if set (PSK clients are then
 * served as well; p->x509 may then be NULL: PSK clients only);
 * p->psk_lookup for PSK.  0 or -errno with err (-ENOKEY: x509 with
 * neither). */
int tlsh_server_x509(struct hs_session *hs, const struct hs_params *p,
		     char *err, size_t errlen);
int tlsh_server_psk(struct hs_session *hs, const struct hs_params *p,
		    char *err, size_t errlen);

/* classify()'s part for a server: the -errno for GnuTLS error ret where
 * the client is the reason (a certificate not verified, a PSK identity not
 * known or not matched: -EKEYREJECTED) or a PSK lookup failed on the
 * server's side (its -errno), with the reason in err; 0 where the common
 * mapping applies. */
int tlsh_server_classify(const struct hs_session *hs, int ret, char *err,
			 size_t errlen);

/* After a PSK lookup failed (hs->psk_error): 1 where the client is
 * refused (no usable key for the identity it offered: the handshake goes
 * on with a decoy key and fails as a wrong key does, the client is told
 * what a wrong key gets, the kernel EKEYREJECTED), 0 where the server
 * failed (the key ring or key could not be read, or may not be trusted:
 * internal_error, and that errno) */
int tlsh_server_psk_refused(const struct hs_session *hs);

/* After a server handshake: whether the client was authenticated by a
 * PSK (rather than a certificate, or not at all) */
int tlsh_server_by_psk(const struct hs_session *hs);

/* "CN=client,O=example", "PSK identity client1" or "unauthenticated
 * client": who the server's client is, for messages */
void tlsh_server_client_name(const struct hs_session *hs, char *buf,
			     size_t len);

/*
 * After a server handshake: the key that names the authenticated client,
 * for TLSH_PEER_IDENTITY.  A PSK's key; for a verified client certificate
 * a new "user" key holding it (tlsh_keyring_add_client_cert(), description
 * in desc); 0 in *serial for a client not authenticated (or a PSK from a
 * file).  0 or -errno with the reason in err.
 */
int tlsh_server_identity(const struct hs_session *hs, int32_t *serial,
			 char desc[TLSH_CLIENT_KEY_DESC], char *err,
			 size_t errlen);

#endif
