// SPDX-License-Identifier: GPL-2.0
/*
 * Certificates, private keys and PSKs from key payloads.
 *
 * Never logs or returns key material: error messages name the key serial
 * and what is wrong with it, nothing else.
 */
#include "keyring.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <keyutils.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>

static bool is_pem(const unsigned char *buf, size_t len)
{
	return memmem(buf, len, "-----BEGIN ", 11) != NULL;
}

void tlsh_keyring_free_payload(unsigned char *buf, size_t len)
{
	if (!buf)
		return;
	explicit_bzero(buf, len);
	(void)munlock(buf, len);
	free(buf);
}

/*
 * Read a key's payload into memory of our own, locked (where the limit
 * allows) so it is not written to swap, and wiped before it is freed.
 * keyctl_read_alloc() is not used: it frees the buffer of an attempt that
 * came up short (the key grew) without wiping it.  Returns 0 or -errno.
 */
static int read_payload(int32_t serial, unsigned char **buf, size_t *len)
{
	for (int tries = 0; tries < 4; tries++) {
		long want = keyctl_read(serial, NULL, 0);
		unsigned char *b;
		long n;

		if (want < 0)
			return -errno;
		if (want == 0 || want > TLSH_PAYLOAD_MAX) {
			*buf = NULL;
			*len = (size_t)want;
			return 0;
		}
		b = malloc((size_t)want);
		if (!b)
			return -ENOMEM;
		(void)mlock(b, (size_t)want);	/* best effort */
		n = keyctl_read(serial, (char *)b, (size_t)want);
		if (n >= 0 && n <= want) {
			*buf = b;
			*len = (size_t)n;
			return 0;
		}
		tlsh_keyring_free_payload(b, (size_t)want);
		if (n < 0)
			return -errno;
		/* the key was updated meanwhile and grew: again */
	}
	return -EAGAIN;
}

int tlsh_keyring_read(int32_t serial, unsigned char **buf, size_t *len,
		      char *err, size_t errlen)
{
	char *desc = NULL;
	unsigned char *data = NULL;
	size_t n = 0;
	int e;

	if (serial <= 0) {
		snprintf(err, errlen, "invalid key serial %d", serial);
		return -EINVAL;
	}
	/* "type;uid;gid;perm;description" */
	if (keyctl_describe_alloc(serial, &desc) < 0) {
		e = errno;
		snprintf(err, errlen, "cannot read key %d: %s", serial,
			 strerror(e));
		return -e;
	}
	if (strncmp(desc, "user;", 5) != 0 && strncmp(desc, "big_key;", 8) != 0) {
		const char *semi = strchr(desc, ';');
		int tl = semi ? (int)(semi - desc) : (int)strlen(desc);

		snprintf(err, errlen,
			 "key %d is of type '%.*s', expected 'user' or 'big_key'",
			 serial, tl > 32 ? 32 : tl, desc);
		free(desc);
		return -EINVAL;
	}
	free(desc);
	e = read_payload(serial, &data, &n);
	if (e) {
		snprintf(err, errlen, "cannot read key %d: %s", serial,
			 strerror(-e));
		return e;
	}
	if (n == 0 || n > TLSH_PAYLOAD_MAX) {
		tlsh_keyring_free_payload(data, n);
		snprintf(err, errlen, "key %d: %s payload", serial,
			 n == 0 ? "empty" : "oversized");
		return -EINVAL;
	}
	*buf = data;
	*len = n;
	return 0;
}

void tlsh_keyring_x509_free(struct tlsh_x509 *x)
{
	for (unsigned i = 0; i < x->npcerts; i++)
		gnutls_pcert_deinit(&x->pcerts[i]);
	x->npcerts = 0;
	if (x->key)
		gnutls_privkey_deinit(x->key);
	x->key = NULL;
}

int tlsh_keyring_parse_certs(struct tlsh_x509 *x, const unsigned char *buf,
			     size_t len, char *err, size_t errlen)
{
	gnutls_datum_t d = { (unsigned char *)buf, (unsigned)len };
	int ret;

	if (len == 0 || len > TLSH_PAYLOAD_MAX) {
		snprintf(err, errlen, "certificate payload is %s",
			 len ? "too large" : "empty");
		return -EINVAL;
	}
	if (is_pem(buf, len)) {
		unsigned n = TLSH_MAX_CHAIN;

		ret = gnutls_pcert_list_import_x509_raw(x->pcerts, &n, &d,
				GNUTLS_X509_FMT_PEM,
				GNUTLS_X509_CRT_LIST_FAIL_IF_UNSORTED);
		if (ret == GNUTLS_E_SHORT_MEMORY_BUFFER) {
			snprintf(err, errlen,
				 "certificate chain longer than %d certificates",
				 TLSH_MAX_CHAIN);
			return -EINVAL;
		}
		if (ret < 0 || n == 0) {
			snprintf(err, errlen, "bad PEM certificate: %s",
				 ret < 0 ? gnutls_strerror(ret) : "none found");
			return -EINVAL;
		}
		x->npcerts = n;
		return 0;
	}
	ret = gnutls_pcert_import_x509_raw(&x->pcerts[0], &d,
					   GNUTLS_X509_FMT_DER, 0);
	if (ret < 0) {
		snprintf(err, errlen,
			 "not a PEM or DER X.509 certificate: %s",
			 gnutls_strerror(ret));
		return -EINVAL;
	}
	x->npcerts = 1;
	return 0;
}

/* Compare the public key of the certificate with that of the key. */
static bool key_matches_cert(gnutls_privkey_t key, const gnutls_pcert_st *pc)
{
	gnutls_pubkey_t pub;
	gnutls_datum_t a = { NULL, 0 }, b = { NULL, 0 };
	bool match = false;

	if (gnutls_pubkey_init(&pub) < 0)
		return false;
	if (gnutls_pubkey_import_privkey(pub, key, 0, 0) == 0 &&
	    gnutls_pubkey_export2(pub, GNUTLS_X509_FMT_DER, &a) == 0 &&
	    gnutls_pubkey_export2(pc->pubkey, GNUTLS_X509_FMT_DER, &b) == 0)
		match = a.size == b.size && memcmp(a.data, b.data, a.size) == 0;
	gnutls_free(a.data);
	gnutls_free(b.data);
	gnutls_pubkey_deinit(pub);
	return match;
}

int tlsh_keyring_parse_privkey(struct tlsh_x509 *x, const unsigned char *buf,
			       size_t len, char *err, size_t errlen)
{
	gnutls_datum_t d = { (unsigned char *)buf, (unsigned)len };
	gnutls_privkey_t key;
	bool pem;
	int ret;

	if (len == 0 || len > TLSH_PAYLOAD_MAX) {
		snprintf(err, errlen, "private key payload is %s",
			 len ? "too large" : "empty");
		return -EINVAL;
	}
	pem = is_pem(buf, len);
	if (gnutls_privkey_init(&key) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ret = gnutls_privkey_import_x509_raw(key, &d,
			pem ? GNUTLS_X509_FMT_PEM : GNUTLS_X509_FMT_DER,
			NULL, GNUTLS_PKCS_PLAIN);
	if (ret < 0) {
		gnutls_privkey_deinit(key);
		if (ret == GNUTLS_E_DECRYPTION_FAILED ||
		    (pem && memmem(buf, len, "ENCRYPTED", 9)))
			snprintf(err, errlen,
				 "private key is encrypted (store it unencrypted in the key)");
		else
			snprintf(err, errlen, "not a %s private key: %s",
				 pem ? "PEM" : "DER", gnutls_strerror(ret));
		return -EINVAL;
	}
	if (x->npcerts && !key_matches_cert(key, &x->pcerts[0])) {
		gnutls_privkey_deinit(key);
		snprintf(err, errlen,
			 "certificate and private key do not match");
		return -EINVAL;
	}
	x->key = key;
	return 0;
}

/* The value of hex digit c, or -EINVAL */
static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -EINVAL;
}

void tlsh_keyring_psk_clear(struct tlsh_psk *psk)
{
	explicit_bzero(psk, sizeof(*psk));
}

/* One "IDENTITY:HEXKEY" line (without the newline). */
static int parse_psk_line(struct tlsh_psk *psk, const unsigned char *l,
			  size_t len, unsigned lineno, char *err, size_t errlen)
{
	const unsigned char *colon = memchr(l, ':', len);
	size_t idlen, hexlen;

	if (!colon) {
		snprintf(err, errlen, "PSK line %u: expected IDENTITY:HEXKEY",
			 lineno);
		return -EINVAL;
	}
	idlen = (size_t)(colon - l);
	if (idlen == 0 || idlen > TLSH_PSK_ID_MAX) {
		snprintf(err, errlen, "PSK line %u: identity must be 1..%d bytes",
			 lineno, TLSH_PSK_ID_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < idlen; i++)
		if (l[i] <= 0x20 || l[i] >= 0x7f) {
			snprintf(err, errlen,
				 "PSK line %u: identity must be printable ASCII without spaces",
				 lineno);
			return -EINVAL;
		}
	hexlen = len - idlen - 1;
	if (hexlen % 2 || hexlen / 2 < TLSH_PSK_MIN || hexlen / 2 > TLSH_PSK_MAX) {
		snprintf(err, errlen,
			 "PSK line %u: key must be %d..%d bytes as an even number of hex digits",
			 lineno, TLSH_PSK_MIN, TLSH_PSK_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < hexlen / 2; i++) {
		int hi = hexval(colon[1 + 2 * i]), lo = hexval(colon[2 + 2 * i]);

		if (hi < 0 || lo < 0) {
			tlsh_keyring_psk_clear(psk);
			snprintf(err, errlen, "PSK line %u: key is not hexadecimal",
				 lineno);
			return -EINVAL;
		}
		psk->key[i] = (unsigned char)(hi << 4 | lo);
	}
	memcpy(psk->identity, l, idlen);
	psk->identity[idlen] = '\0';
	psk->keylen = hexlen / 2;
	return 0;
}

int tlsh_keyring_parse_psk(struct tlsh_psk *psk, const unsigned char *buf,
			   size_t len, const char *want_identity, char *err,
			   size_t errlen)
{
	unsigned lineno = 0, found = 0;
	size_t pos = 0;

	tlsh_keyring_psk_clear(psk);
	if (memchr(buf, '\0', len)) {
		snprintf(err, errlen, "PSK payload contains a NUL byte");
		return -EINVAL;
	}
	while (pos < len) {
		const unsigned char *line = buf + pos;
		const unsigned char *nl = memchr(line, '\n', len - pos);
		const unsigned char *stop = nl ? nl : buf + len;
		size_t l = (size_t)(stop - line);
		struct tlsh_psk tmp;
		int ret;

		pos += l + (nl ? 1 : 0);
		lineno++;
		if (l && line[l - 1] == '\r')
			l--;
		if (l == 0)
			continue;
		if (want_identity) {
			size_t wl = strlen(want_identity);

			if (l <= wl || line[wl] != ':' ||
			    memcmp(line, want_identity, wl) != 0)
				continue;
		}
		memset(&tmp, 0, sizeof(tmp));
		ret = parse_psk_line(&tmp, line, l, lineno, err, errlen);
		if (ret) {
			tlsh_keyring_psk_clear(&tmp);
			tlsh_keyring_psk_clear(psk);
			return ret;
		}
		if (found++) {
			tlsh_keyring_psk_clear(&tmp);
			tlsh_keyring_psk_clear(psk);
			if (want_identity)
				snprintf(err, errlen,
					 "PSK identity '%.*s' appears more than once",
					 TLSH_PSK_ID_MAX, want_identity);
			else
				snprintf(err, errlen, "more than one PSK entry");
			return -EINVAL;
		}
		*psk = tmp;
		tlsh_keyring_psk_clear(&tmp);
	}
	if (!found) {
		if (want_identity)
			snprintf(err, errlen, "no PSK for identity '%.*s'",
				 TLSH_PSK_ID_MAX, want_identity);
		else
			snprintf(err, errlen, "no PSK entry (expected IDENTITY:HEXKEY)");
		return -EINVAL;
	}
	return 0;
}

int tlsh_keyring_member(int32_t keyring, int32_t serial, char *err,
			size_t errlen)
{
	void *list = NULL;
	long n;
	int e;

	n = keyctl_read_alloc(keyring, &list);
	if (n < 0) {
		e = errno;
		snprintf(err, errlen, "cannot list the kernel's key ring %d: %s",
			 keyring, strerror(e));
		return -e;
	}
	/* a keyring's payload is the serials of its keys (key_serial_t) */
	for (long i = 0; i < n / (long)sizeof(int32_t); i++) {
		int32_t k;

		memcpy(&k, (const unsigned char *)list + i * sizeof(int32_t),
		       sizeof(k));
		if (k == serial) {
			free(list);
			return 0;
		}
	}
	free(list);
	/* a key revoked, expired or invalidated since the mount may have
	 * been taken out of the keyring already: say what became of it */
	if (keyctl_describe(serial, NULL, 0) < 0 &&
	    (errno == ENOKEY || errno == EKEYREVOKED || errno == EKEYEXPIRED)) {
		e = errno;
		snprintf(err, errlen, "key %d: %s", serial, strerror(e));
		return -e;
	}
	snprintf(err, errlen,
		 "key %d is not in the kernel's key ring %d for this request",
		 serial, keyring);
	return -EACCES;
}

int tlsh_keyring_use_user_keyring(char *err, size_t errlen)
{
	int e;

	if (keyctl_link(KEY_SPEC_USER_KEYRING, KEY_SPEC_THREAD_KEYRING) == 0)
		return 0;
	e = errno;
	snprintf(err, errlen, "cannot link root's user key ring: %s",
		 strerror(e));
	return -e;
}

int tlsh_keyring_load_x509(struct tlsh_x509 *x, int32_t cert, int32_t privkey,
			   char *err, size_t errlen)
{
	unsigned char *buf = NULL;
	size_t len = 0;
	char why[256];
	int ret;

	ret = tlsh_keyring_read(cert, &buf, &len, err, errlen);
	if (ret)
		return ret;
	ret = tlsh_keyring_parse_certs(x, buf, len, why, sizeof(why));
	tlsh_keyring_free_payload(buf, len);
	if (ret) {
		snprintf(err, errlen, "certificate key %d: %s", cert, why);
		return ret;
	}
	ret = tlsh_keyring_read(privkey, &buf, &len, err, errlen);
	if (ret) {
		tlsh_keyring_x509_free(x);
		return ret;
	}
	ret = tlsh_keyring_parse_privkey(x, buf, len, why, sizeof(why));
	tlsh_keyring_free_payload(buf, len);
	if (ret) {
		tlsh_keyring_x509_free(x);
		snprintf(err, errlen, "private key %d: %s", privkey, why);
		return ret;
	}
	return 0;
}

int tlsh_keyring_load_psk(struct tlsh_psk *psk, int32_t serial, char *err,
			  size_t errlen)
{
	unsigned char *buf = NULL;
	size_t len = 0;
	char why[256];
	int ret;

	ret = tlsh_keyring_read(serial, &buf, &len, err, errlen);
	if (ret)
		return ret;
	ret = tlsh_keyring_parse_psk(psk, buf, len, NULL, why, sizeof(why));
	tlsh_keyring_free_payload(buf, len);
	if (ret)
		snprintf(err, errlen, "PSK key %d: %s", serial, why);
	return ret;
}

/*
 * Whether only this process's user can change key k (named what, for the
 * message): it owns k, and neither k's group nor others may write to it
 * (to a keyring: add, link or unlink keys; to a key: update its payload).
 * In a server's PSK keyring, anyone who can do either can make a client's
 * identity take a key of their choosing.  0, -EACCES with the reason in
 * err, or -errno of describing the key.
 */
static int key_sealed(key_serial_t k, const char *what, char *err,
		      size_t errlen)
{
	char *desc = NULL;
	unsigned long uid;
	unsigned int perm;
	int n;

	/* "type;uid;gid;perm;description" */
	if (keyctl_describe_alloc(k, &desc) < 0) {
		int e = errno;

		snprintf(err, errlen, "cannot read %s: %s", what, strerror(e));
		return -e;
	}
	n = sscanf(desc, "%*[^;];%lu;%*u;%x;", &uid, &perm);
	free(desc);
	if (n != 2) {
		snprintf(err, errlen, "cannot read %s: unexpected description",
			 what);
		return -EINVAL;
	}
	if (uid != (unsigned long)geteuid()) {
		snprintf(err, errlen, "%s is not ours (owned by uid %lu, not %u)",
			 what, uid, (unsigned)geteuid());
		return -EACCES;
	}
	if (perm & (KEY_GRP_WRITE | KEY_OTH_WRITE)) {
		snprintf(err, errlen,
			 "%s can be written by others (permissions %08x): not used (keyctl setperm %d %#x)",
			 what, perm, k, perm & ~(KEY_GRP_WRITE | KEY_OTH_WRITE));
		return -EACCES;
	}
	return 0;
}

int32_t tlsh_keyring_find_ring(const char *name, char *err, size_t errlen)
{
	key_serial_t ring = find_key_by_type_and_desc("keyring", name, 0);
	char what[300];
	int e;

	if (ring <= 0) {
		e = ring < 0 ? errno : ENOKEY;
		snprintf(err, errlen, "no key ring '%.255s': %s", name,
			 strerror(e));
		return -e;
	}
	/*
	 * Where the process's own keyrings do not have it, keyutils looks
	 * for the name in /proc/keys, which lists another user's keyring
	 * too if it lets us view it: only our own is taken, and only if no
	 * one else can put keys in it.
	 */
	snprintf(what, sizeof(what), "key ring '%.255s' (%d)", name, ring);
	e = key_sealed(ring, what, err, errlen);
	return e ? e : ring;
}

int tlsh_keyring_find_psk(int32_t keyring, const char *identity,
			  struct tlsh_psk *psk, int32_t *serial, char *err,
			  size_t errlen)
{
	unsigned char *buf = NULL;
	size_t len = 0;
	char why[256], what[320];
	long k;
	int ret;

	tlsh_keyring_psk_clear(psk);
	*serial = 0;
	k = keyctl_search(keyring, "user", identity, 0);
	if (k < 0) {
		int e = errno;

		if (e == ENOKEY)
			snprintf(err, errlen, "no PSK for identity '%.*s' in key ring %d",
				 TLSH_PSK_ID_MAX, identity, keyring);
		else
			snprintf(err, errlen,
				 "cannot search key ring %d for identity '%.*s': %s",
				 keyring, TLSH_PSK_ID_MAX, identity, strerror(e));
		return -e;
	}
	snprintf(what, sizeof(what), "PSK key %ld for identity '%.*s'", k,
		 TLSH_PSK_ID_MAX, identity);
	ret = key_sealed((key_serial_t)k, what, err, errlen);
	if (ret)
		return ret;
	ret = tlsh_keyring_read((int32_t)k, &buf, &len, err, errlen);
	if (ret)
		return ret;
	/* the payload names its identity too: the two must agree */
	ret = tlsh_keyring_parse_psk(psk, buf, len, identity, why, sizeof(why));
	tlsh_keyring_free_payload(buf, len);
	if (ret) {
		snprintf(err, errlen, "%s: %s", what, why);
		return ret;
	}
	*serial = (int32_t)k;
	return 0;
}

/* What names a client for as long as it is that client: the SHA-256 of
 * the DER of its certificate's issuer and subject names, which a renewal
 * keeps (its serial number, validity and key, so its bytes, change).  A
 * certificate with an empty subject has its names in subjectAltName
 * only: the issuer's name and that extension's DER, which a renewal keeps
 * too; one with neither is digested whole.  0, or -EINVAL with a message
 * in err. */
static int client_cert_digest(const unsigned char *der, size_t len,
			      unsigned char sum[32], char *err, size_t errlen)
{
	gnutls_datum_t in = { (unsigned char *)der, (unsigned int)len };
	gnutls_datum_t issuer = { NULL, 0 }, subject = { NULL, 0 };
	gnutls_datum_t san = { NULL, 0 };
	unsigned int critical;
	gnutls_x509_crt_t crt;
	gnutls_hash_hd_t h;
	int ret = -EINVAL;

	if (gnutls_x509_crt_init(&crt) < 0) {
		snprintf(err, errlen, "cannot read the client certificate: out of memory");
		return -ENOMEM;
	}
	if (gnutls_x509_crt_import(crt, &in, GNUTLS_X509_FMT_DER) < 0 ||
	    gnutls_x509_crt_get_raw_issuer_dn(crt, &issuer) < 0 ||
	    gnutls_x509_crt_get_raw_dn(crt, &subject) < 0) {
		snprintf(err, errlen, "cannot read the client certificate's names");
		goto out;
	}
	if (gnutls_hash_init(&h, GNUTLS_DIG_SHA256) < 0) {
		snprintf(err, errlen, "cannot hash the client certificate");
		goto out;
	}
	/* an empty Name is the two octets of an empty SEQUENCE; the
	 * subjectAltName is read only behind an empty subject */
	if (subject.size > 2 ||
	    (gnutls_x509_crt_get_extension_by_oid2(crt, GNUTLS_X509EXT_OID_SAN,
						   0, &san, &critical) >= 0 &&
	     san.size)) {
		gnutls_hash(h, issuer.data, issuer.size);
		gnutls_hash(h, subject.data, subject.size);
		if (san.size)
			gnutls_hash(h, san.data, san.size);
	} else {
		gnutls_hash(h, der, len);
	}
	gnutls_hash_deinit(h, sum);
	ret = 0;
out:
	gnutls_free(issuer.data);
	gnutls_free(subject.data);
	gnutls_free(san.data);
	gnutls_x509_crt_deinit(crt);
	return ret;
}

int32_t tlsh_keyring_add_client_cert(const unsigned char *der, size_t len,
				     char desc[TLSH_CLIENT_KEY_DESC], char *err,
				     size_t errlen)
{
	unsigned char sum[32];
	size_t n = sizeof(TLSH_CLIENT_KEY_PREFIX) - 1;
	key_serial_t k;
	int ret;

	if (!der || !len) {
		snprintf(err, errlen, "no client certificate");
		return -EINVAL;
	}
	ret = client_cert_digest(der, len, sum, err, errlen);
	if (ret)
		return ret;
	memcpy(desc, TLSH_CLIENT_KEY_PREFIX, n);
	for (size_t i = 0; i < sizeof(sum); i++)
		snprintf(desc + n + 2 * i, 3, "%02x", sum[i]);
	k = add_key("user", desc, der, len, KEY_SPEC_PROCESS_KEYRING);
	if (k < 0) {
		int e = errno;

		snprintf(err, errlen, "cannot add key %s: %s", desc, strerror(e));
		return -e;
	}
	return k;
}
