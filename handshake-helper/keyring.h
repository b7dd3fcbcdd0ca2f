/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Key material named by key serials.  The parsers take a buffer, so they
 * are testable without a kernel keyring; tlsh_keyring_read() fetches a payload.
 *
 * Payload formats (see tlsh-helper(8)):
 *   certificate  one X.509 certificate in DER, or one or more in PEM
 *                (leaf first, then intermediates)
 *   private key  PEM or DER; PKCS#8 (unencrypted), PKCS#1 RSA or SEC1 EC
 *   PSK          one line "IDENTITY:HEXKEY", as in a psktool(1) file
 */
#ifndef TLSH_KEYRING_H
#define TLSH_KEYRING_H

#include <stddef.h>
#include <stdint.h>

#include <gnutls/gnutls.h>
#include <gnutls/abstract.h>

#define TLSH_MAX_CHAIN		16
#define TLSH_PSK_ID_MAX		128
#define TLSH_PSK_MIN		16	/* bytes */
#define TLSH_PSK_MAX		64	/* bytes */
#define TLSH_PAYLOAD_MAX	(1024 * 1024)

struct tlsh_x509 {
	gnutls_pcert_st pcerts[TLSH_MAX_CHAIN];
	unsigned npcerts;
	gnutls_privkey_t key;
};

struct tlsh_psk {
	char identity[TLSH_PSK_ID_MAX + 1];
	unsigned char key[TLSH_PSK_MAX];
	size_t keylen;
};

/*
 * Read the payload of key SERIAL (a "user" or "big_key" key).  Returns 0 or
 * -errno with a message in err: keyctl(2)'s error (-ENOKEY, -EACCES,
 * -EKEYREVOKED...), -EINVAL for a serial or key type we do not read or an
 * empty or oversized payload; *buf is to be released with
 * tlsh_keyring_free_payload().
 */
int tlsh_keyring_read(int32_t serial, unsigned char **buf, size_t *len,
		      char *err, size_t errlen);
void tlsh_keyring_free_payload(unsigned char *buf, size_t len);

/* Parse a certificate (chain) into x->pcerts.  0 or -EINVAL with a
 * message in err. */
int tlsh_keyring_parse_certs(struct tlsh_x509 *x, const unsigned char *buf,
			     size_t len, char *err, size_t errlen);
/* Parse a private key into x->key and check that it matches pcerts[0].
 * 0, -EINVAL or -ENOMEM with a message in err. */
int tlsh_keyring_parse_privkey(struct tlsh_x509 *x, const unsigned char *buf,
			       size_t len, char *err, size_t errlen);
void tlsh_keyring_x509_free(struct tlsh_x509 *x);

/*
 * Parse "IDENTITY:HEXKEY" lines.  With want_identity NULL exactly one entry
 * must be present; otherwise the entry with that identity is taken.  0 or
 * -EINVAL with a message in err (never with key material).
 */
int tlsh_keyring_parse_psk(struct tlsh_psk *psk, const unsigned char *buf,
			   size_t len, const char *want_identity, char *err,
			   size_t errlen);
void tlsh_keyring_psk_clear(struct tlsh_psk *psk);

/*
 * Where a handshake process finds the keys a request names.  With a keyring
 * from TLSH_KEYRING (which the kernel made the reading thread, the
 * process's only one, possess when it was read), every serial must be a
 * member of it: tlsh_keyring_member() says so, or fails with -EACCES.
 * Without one (a kernel consumer that names serials directly),
 * tlsh_keyring_use_user_keyring() links root's user keyring into the
 * calling thread's keyring, for that thread only.  0 or -errno with a
 * message in err.
 */
int tlsh_keyring_member(int32_t keyring, int32_t serial, char *err,
			size_t errlen);
int tlsh_keyring_use_user_keyring(char *err, size_t errlen);

/*
 * The server role.  tlsh_keyring_find_ring(): the keyring of type "keyring"
 * described NAME among those this process can search
 * (find_key_by_type_and_desc(3)); its serial, or -errno with a message.
 * tlsh_keyring_find_psk(): the PSK a client offered IDENTITY for: the
 * "user" key described IDENTITY in KEYRING (or a keyring linked there),
 * whose payload is the line "IDENTITY:HEXKEY" of that same identity.  0
 * with the key's serial in *serial, or -ENOKEY (no such key), the error
 * of reading it, -EINVAL (a payload for another identity, or malformed),
 * with a message in err.
 */
int32_t tlsh_keyring_find_ring(const char *name, char *err, size_t errlen);
int tlsh_keyring_find_psk(int32_t keyring, const char *identity,
			  struct tlsh_psk *psk, int32_t *serial, char *err,
			  size_t errlen);

/* "tlsh:client:" and a SHA-256 in hex */
#define TLSH_CLIENT_KEY_PREFIX	"tlsh:client:"
#define TLSH_CLIENT_KEY_DESC	(sizeof(TLSH_CLIENT_KEY_PREFIX) + 64)

/*
 * A "user" key that names a verified client: its certificate (DER) as
 * payload, described "tlsh:client:<hex SHA-256 of the DER of the
 * certificate's issuer and subject names>" (of the whole certificate
 * when its subject is empty), so that a renewed certificate names the
 * same client (in desc, TLSH_CLIENT_KEY_DESC bytes), in the calling
 * process's process keyring,
 * so that the process possesses it and may hand it to the kernel
 * (TLSH_PEER_IDENTITY).  Its serial, or -errno (add_key(2)'s, -EINVAL
 * for an empty or unreadable certificate) with a message in err.
 */
int32_t tlsh_keyring_add_client_cert(const unsigned char *der, size_t len,
				     char desc[TLSH_CLIENT_KEY_DESC], char *err,
				     size_t errlen);

/* Convenience: read serials and parse. 0 or -errno (tlsh_keyring_read()'s
 * or the parser's) with a message in err. */
int tlsh_keyring_load_x509(struct tlsh_x509 *x, int32_t cert, int32_t privkey,
			   char *err, size_t errlen);
int tlsh_keyring_load_psk(struct tlsh_psk *psk, int32_t serial, char *err,
			  size_t errlen);

#endif
