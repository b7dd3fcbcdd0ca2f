// SPDX-License-Identifier: GPL-2.0
/*
 * Key payload parsing (PEM/DER certificates and private keys, PSK lines)
 * from buffers, then a real keyring round trip in a private anonymous
 * session keyring: user keys added here are read back by serial, and the
 * failures (no such key, not a user key, no read permission) are clear.
 * The server role's keys the same way: a PSK keyring found by name, a
 * client's PSK found by identity in it, the key naming a verified client.
 *
 *   test_keyring DIR   (DIR from run.sh: srv.pem srv.der chain.pem
 *                       srv.key srv.key.der other.key enc.key)
 */
#include "config.h"
#include "keyring.h"
#include "server.h"
#include "client-desc.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include <gnutls/crypto.h>
#include <keyutils.h>

static const char *dir;

static unsigned char *load(const char *name, size_t *len)
{
	char path[4096];
	unsigned char *buf = NULL;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (tlsh_read_file(path, TLSH_PAYLOAD_MAX, &buf, len)) {
		DIAG("cannot read %s", path);
		exit(1);
	}
	return buf;
}

static int certs(const char *name, unsigned *n, char *err, size_t errlen)
{
	struct tlsh_x509 x;
	size_t len;
	unsigned char *b = load(name, &len);
	int r;

	memset(&x, 0, sizeof(x));
	r = tlsh_keyring_parse_certs(&x, b, len, err, errlen);
	*n = x.npcerts;
	tlsh_keyring_x509_free(&x);
	free(b);
	return r;
}

/* Parse cert file + key file; returns the tlsh_keyring_parse_privkey result. */
static int pair(const char *cert, const char *key, char *err, size_t errlen)
{
	struct tlsh_x509 x;
	size_t cl, kl;
	unsigned char *cb = load(cert, &cl), *kb = load(key, &kl);
	int r;

	memset(&x, 0, sizeof(x));
	r = tlsh_keyring_parse_certs(&x, cb, cl, err, errlen);
	if (!r)
		r = tlsh_keyring_parse_privkey(&x, kb, kl, err, errlen);
	if (!r && !x.key)
		r = -1;
	tlsh_keyring_x509_free(&x);
	free(cb);
	free(kb);
	return r;
}

static int psk(const char *text, const char *id, struct tlsh_psk *p, char *err,
	       size_t errlen)
{
	return tlsh_keyring_parse_psk(p, (const unsigned char *)text, strlen(text), id,
				      err, errlen);
}

#define HEX32 "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

static void test_buffers(void)
{
	struct tlsh_psk p;
	struct tlsh_x509 x;
	char err[512];
	unsigned n = 0;
	int r;

	r = certs("srv.pem", &n, err, sizeof(err));
	CHECK(r == 0 && n == 1, "PEM certificate payload: one certificate");
	r = certs("chain.pem", &n, err, sizeof(err));
	CHECK(r == 0 && n == 2, "PEM chain payload: leaf and CA");
	r = certs("srv.der", &n, err, sizeof(err));
	CHECK(r == 0 && n == 1, "DER certificate payload");
	memset(&x, 0, sizeof(x));
	r = tlsh_keyring_parse_certs(&x, (const unsigned char *)"garbage", 7, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "not a PEM or DER X.509 certificate"),
	      "garbage certificate payload: '%s'", err);
	r = tlsh_keyring_parse_certs(&x, (const unsigned char *)"", 0, err, sizeof(err));
	CHECK(r == -EINVAL && strcmp(err, "certificate payload is empty") == 0,
	      "empty certificate payload is refused");
	r = tlsh_keyring_parse_certs(&x, (const unsigned char *)"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
				     63, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "bad PEM certificate"), "broken PEM certificate: '%s'", err);

	CHECK(pair("srv.pem", "srv.key", err, sizeof(err)) == 0,
	      "PEM private key matching the certificate");
	CHECK(pair("srv.der", "srv.key.der", err, sizeof(err)) == 0,
	      "DER private key matching the DER certificate");
	r = pair("srv.pem", "other.key", err, sizeof(err));
	CHECK(r == -EINVAL && strcmp(err, "certificate and private key do not match") == 0,
	      "a private key of another certificate is refused");
	r = pair("srv.pem", "enc.key", err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "encrypted"), "an encrypted private key is refused: '%s'", err);
	memset(&x, 0, sizeof(x));
	r = tlsh_keyring_parse_privkey(&x, (const unsigned char *)"\x30\x03\x02\x01\x00", 5, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "not a DER private key"), "garbage private key: '%s'", err);

	r = psk("client1:" HEX32, NULL, &p, err, sizeof(err));
	CHECK(r == 0 && strcmp(p.identity, "client1") == 0 && p.keylen == 32 &&
	      p.key[0] == 0 && p.key[31] == 0x1f, "PSK payload IDENTITY:HEXKEY");
	r = psk("client1:" HEX32 "\n", NULL, &p, err, sizeof(err));
	CHECK(r == 0 && p.keylen == 32, "PSK payload with a trailing newline");
	r = psk("client1:" HEX32 "\r\n", NULL, &p, err, sizeof(err));
	CHECK(r == 0 && p.keylen == 32, "PSK payload with CRLF");
	r = psk("a:" HEX32 "\nb:" "FFEEDDCCBBAA99887766554433221100" "\n", "b", &p, err, sizeof(err));
	CHECK(r == 0 && strcmp(p.identity, "b") == 0 && p.keylen == 16 && p.key[0] == 0xff,
	      "PSK file: the entry of the requested identity");
	r = psk("a:" HEX32 "\nb:" HEX32 "\n", NULL, &p, err, sizeof(err));
	CHECK(r == -EINVAL && strcmp(err, "more than one PSK entry") == 0,
	      "PSK payload with two entries is refused");
	r = psk("a:" HEX32 "\n", "zz", &p, err, sizeof(err));
	CHECK(r == -EINVAL && strcmp(err, "no PSK for identity 'zz'") == 0,
	      "PSK file without the identity: '%s'", err);
	r = psk(HEX32, NULL, &p, err, sizeof(err));
	CHECK(r == -EINVAL && strcmp(err, "PSK line 1: expected IDENTITY:HEXKEY") == 0,
	      "PSK payload without an identity");
	r = psk(":" HEX32, NULL, &p, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "identity must be 1..128 bytes"), "PSK with an empty identity");
	r = psk("id:0011", NULL, &p, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "key must be 16..64 bytes"), "PSK shorter than 16 bytes is refused");
	r = psk("id:" HEX32 "0", NULL, &p, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "key must be 16..64 bytes"), "PSK with an odd number of hex digits");
	r = psk("id:" "zz0102030405060708090a0b0c0d0e0f", NULL, &p, err, sizeof(err));
	CHECK(r == -EINVAL && strcmp(err, "PSK line 1: key is not hexadecimal") == 0 &&
	      p.keylen == 0 && p.key[1] == 0, "PSK with non-hex digits (and nothing left behind)");
	r = psk("my id:" HEX32, NULL, &p, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "printable ASCII"), "PSK identity with a space");
	CHECK(strstr(err, "0001020304") == NULL, "PSK error messages do not contain key material");
	tlsh_keyring_psk_clear(&p);
}

static key_serial_t add(const char *desc, const void *data, size_t len)
{
	key_serial_t k = add_key("user", desc, data, len, KEY_SPEC_SESSION_KEYRING);

	if (k < 0)
		DIAG("add_key %s: %s", desc, strerror(errno));
	return k;
}

static void test_keyring(void)
{
	struct tlsh_x509 x;
	struct tlsh_psk p;
	unsigned char *buf = NULL, *cert, *key;
	size_t len = 0, cl, kl;
	char err[512];
	key_serial_t kc, kk, kp, kder, ring;
	int r;

	/* our own anonymous session keyring: nothing outside is touched */
	ring = keyctl_join_session_keyring(NULL);
	CHECK(ring > 0, "a private session keyring for the test");
	if (ring <= 0)
		return;
	cert = load("chain.pem", &cl);
	key = load("srv.key", &kl);
	kc = add("tlsh-test:cert", cert, cl);
	kk = add("tlsh-test:key", key, kl);
	kp = add("tlsh-test:psk", "client1:" HEX32 "\n", 8 + 64 + 1);
	free(key);
	key = load("srv.key.der", &kl);
	kder = add("tlsh-test:keyder", key, kl);
	CHECK(kc > 0 && kk > 0 && kp > 0 && kder > 0, "user keys added with add_key(2)");

	r = tlsh_keyring_read(kc, &buf, &len, err, sizeof(err));
	CHECK(r == 0 && len == cl && memcmp(buf, cert, cl) == 0,
	      "tlsh_keyring_read returns the payload of key %d", kc);
	tlsh_keyring_free_payload(buf, len);
	memset(&x, 0, sizeof(x));
	r = tlsh_keyring_load_x509(&x, kc, kk, err, sizeof(err));
	CHECK(r == 0 && x.npcerts == 2 && x.key, "certificate chain and PEM key loaded by serial");
	tlsh_keyring_x509_free(&x);
	memset(&x, 0, sizeof(x));
	r = tlsh_keyring_load_x509(&x, kc, kder, err, sizeof(err));
	CHECK(r == 0 && x.key, "DER private key loaded by serial");
	tlsh_keyring_x509_free(&x);
	r = tlsh_keyring_load_psk(&p, kp, err, sizeof(err));
	CHECK(r == 0 && strcmp(p.identity, "client1") == 0 && p.keylen == 32,
	      "PSK loaded by serial");
	tlsh_keyring_psk_clear(&p);

	memset(&x, 0, sizeof(x));
	r = tlsh_keyring_load_x509(&x, kk, kc, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "certificate key") && strstr(err, "bad PEM certificate"),
	      "certificate and key serials swapped: '%s'", err);
	tlsh_keyring_x509_free(&x);

	r = tlsh_keyring_read(2147483000, &buf, &len, err, sizeof(err));
	CHECK(r == -ENOKEY && strcmp(err, "cannot read key 2147483000: Required key not available") == 0,
	      "a serial that does not exist: '%s'", err);
	r = tlsh_keyring_read(ring, &buf, &len, err, sizeof(err));
	snprintf((char *)cert, cl, "key %d is of type 'keyring', expected 'user' or 'big_key'", ring);
	CHECK(r == -EINVAL && strcmp(err, (char *)cert) == 0, "a keyring serial is refused: '%s'", err);
	r = tlsh_keyring_read(-3, &buf, &len, err, sizeof(err));
	CHECK(r == -EINVAL && strcmp(err, "invalid key serial -3") == 0,
	      "special (negative) serials are refused");
	/* possessor may view but not read */
	if (keyctl_setperm(kp, KEY_POS_VIEW | KEY_USR_VIEW) == 0) {
		r = tlsh_keyring_load_psk(&p, kp, err, sizeof(err));
		CHECK(r == -EACCES && strncmp(err, "PSK key", 7) != 0 &&
		      strstr(err, "Permission denied"),
		      "a key without read permission: '%s'", err);
	} else {
		CHECK(0, "keyctl_setperm: %s", strerror(errno));
	}
	free(cert);
	free(key);
}

/* The server role: in the test's private session keyring */
static void test_server_keys(void)
{
	char name[64], err[512], desc[TLSH_CLIENT_KEY_DESC], want[TLSH_CLIENT_KEY_DESC];
	unsigned char got[4096];
	struct tlsh_server_psk_file pf;
	struct config cfg;
	struct tlsh_psk p;
	key_serial_t ring, kc, kx, ko;
	int32_t serial = 0, found;
	unsigned char *der;
	size_t dl;
	long n;
	int r;

	snprintf(name, sizeof(name), "tlsh-unit-psk-%d", (int)getpid());
	ring = add_key("keyring", name, NULL, 0, KEY_SPEC_SESSION_KEYRING);
	kc = add_key("user", "client1", "client1:" HEX32 "\n", 8 + 64 + 1, ring);
	kx = add_key("user", "mismatch", "other:" HEX32, 6 + 64, ring);
	CHECK(ring > 0 && kc > 0 && kx > 0, "a PSK keyring with two user keys");

	found = tlsh_keyring_find_ring(name, err, sizeof(err));
	CHECK(found == ring, "the keyring is found by its name (%d)", found);
	found = tlsh_keyring_find_ring("tlsh-unit-no-such-ring", err, sizeof(err));
	CHECK(found == -ENOKEY &&
	      strcmp(err, "no key ring 'tlsh-unit-no-such-ring': Required key not available") == 0,
	      "a keyring name not found: -ENOKEY, '%s'", err);
	tlsh_config_defaults(&cfg);
	CHECK(tlsh_server_psk_keyring(&cfg, 1234, err, sizeof(err)) == 1234,
	      "a request's keyring comes before the configured one");
	snprintf(cfg.server_psk_keyring, sizeof(cfg.server_psk_keyring), "%s", name);
	found = tlsh_server_psk_keyring(&cfg, 0, err, sizeof(err));
	CHECK(found == ring, "without one, the configured server-psk-keyring (%d)", found);
	snprintf(cfg.server_psk_keyring, sizeof(cfg.server_psk_keyring), "tlsh-unit-none");
	found = tlsh_server_psk_keyring(&cfg, 0, err, sizeof(err));
	CHECK(found == -ENOKEY && strstr(err, "(server-psk-keyring in /") != NULL,
	      "a configured keyring that does not exist: -ENOKEY, '%s'", err);

	r = tlsh_keyring_find_psk(ring, "client1", &p, &serial, err, sizeof(err));
	CHECK(r == 0 && serial == kc && strcmp(p.identity, "client1") == 0 &&
	      p.keylen == 32 && p.key[31] == 0x1f,
	      "a client's PSK by identity: the key described so, its serial");
	tlsh_keyring_psk_clear(&p);
	r = tlsh_keyring_find_psk(ring, "nobody", &p, &serial, err, sizeof(err));
	snprintf(want, sizeof(want), "no PSK for identity 'nobody' in key ring %d", ring);
	CHECK(r == -ENOKEY && serial == 0 && strcmp(err, want) == 0,
	      "an identity without a key: -ENOKEY, '%s'", err);
	r = tlsh_keyring_find_psk(ring, "mismatch", &p, &serial, err, sizeof(err));
	CHECK(r == -EINVAL && serial == 0 && strstr(err, "for identity 'mismatch': no PSK for identity 'mismatch'"),
	      "a key whose payload names another identity: -EINVAL, '%s'", err);
	/* keys someone else could change are not used */
	if (keyctl_setperm(kc, KEY_POS_ALL | KEY_USR_VIEW | KEY_OTH_WRITE) == 0) {
		r = tlsh_keyring_find_psk(ring, "client1", &p, &serial, err, sizeof(err));
		CHECK(r == -EACCES && serial == 0 &&
		      strstr(err, "for identity 'client1' can be written by others (permissions 3f010004): not used"),
		      "a PSK key others may write: -EACCES, '%s'", err);
		CHECK(keyctl_setperm(kc, KEY_POS_ALL | KEY_USR_VIEW) == 0 &&
		      tlsh_keyring_find_psk(ring, "client1", &p, &serial, err, sizeof(err)) == 0,
		      "... and used again once only its owner may");
		tlsh_keyring_psk_clear(&p);
	} else {
		CHECK(0, "keyctl_setperm: %s", strerror(errno));
	}
	if (keyctl_setperm(ring, KEY_POS_ALL | KEY_USR_ALL | KEY_GRP_WRITE) == 0) {
		found = tlsh_keyring_find_ring(name, err, sizeof(err));
		CHECK(found == -EACCES && strstr(err, "can be written by others"),
		      "a key ring its group may write: -EACCES, '%s'", err);
		CHECK(keyctl_setperm(ring, KEY_POS_ALL | KEY_USR_ALL) == 0 &&
		      tlsh_keyring_find_ring(name, err, sizeof(err)) == ring,
		      "... and found again once only its owner may");
	} else {
		CHECK(0, "keyctl_setperm: %s", strerror(errno));
	}
	ko = add_key("user", "owned", "owned:" HEX32, 6 + 64, ring);
	if (ko > 0 && keyctl_chown(ko, 65534, -1) == 0) {
		r = tlsh_keyring_find_psk(ring, "owned", &p, &serial, err, sizeof(err));
		CHECK(r == -EACCES && serial == 0 && strstr(err, "is not ours (owned by uid 65534"),
		      "a PSK key another user owns: -EACCES, '%s'", err);
	} else {
		tap_check(1, "a PSK key another user owns # SKIP keyctl_chown: %s",
			  strerror(errno));
	}
	pf.buf = (const unsigned char *)"other:" HEX32 "\nclient1:" HEX32 "\n";
	pf.len = strlen((const char *)pf.buf);
	r = tlsh_server_psk_from_file(&pf, "client1", &p, &serial, err, sizeof(err));
	CHECK(r == 0 && serial == 0 && p.keylen == 32,
	      "a psktool file: the identity's line, no key serial");
	tlsh_keyring_psk_clear(&p);

	/* another user's keyring of that name is not taken */
	if (keyctl_chown(ring, 65534, -1) == 0) {
		found = tlsh_keyring_find_ring(name, err, sizeof(err));
		CHECK(found == -EACCES && strstr(err, "is not ours"),
		      "a keyring of that name that another user owns: -EACCES, '%s'", err);
	} else {
		tap_check(1, "a keyring of that name that another user owns # SKIP keyctl_chown: %s",
			  strerror(errno));
	}

	/* the key naming a verified client */
	der = load("srv.der", &dl);
	found = tlsh_keyring_add_client_cert(der, dl, desc, err, sizeof(err));
	want_client_desc(&(gnutls_datum_t){ der, (unsigned int)dl }, want);
	n = found > 0 ? keyctl_read(found, (char *)got, sizeof(got)) : -1;
	CHECK(found > 0 && strcmp(desc, want) == 0 && n == (long)dl &&
	      memcmp(got, der, dl) == 0 &&
	      keyctl_search(KEY_SPEC_PROCESS_KEYRING, "user", desc, 0) == found,
	      "a client's certificate: a user key in the process keyring, described tlsh:client:<sha256 of its issuer and subject names>");
	CHECK(tlsh_keyring_add_client_cert(NULL, 0, desc, err, sizeof(err)) == -EINVAL,
	      "no certificate, no key: -EINVAL");
	/* named in subjectAltName only: a renewal keeps the description */
	{
		char d1[TLSH_CLIENT_KEY_DESC] = "", d1b[TLSH_CLIENT_KEY_DESC] = "";
		char d2[TLSH_CLIENT_KEY_DESC] = "";
		const char *names[] = { "spiffe1.der", "spiffe1b.der", "spiffe2.der" };
		char *descs[] = { d1, d1b, d2 };
		int ok = 1;

		for (int i = 0; i < 3; i++) {
			size_t l;
			unsigned char *c = load(names[i], &l);

			ok &= tlsh_keyring_add_client_cert(c, l, descs[i], err,
							   sizeof(err)) > 0;
			free(c);
		}
		CHECK(ok && strcmp(d1, d1b) == 0 && strcmp(d1, d2) != 0,
		      "an empty subject: the same description after a renewal, another for another subjectAltName ('%s', '%s', '%s')",
		      d1, d1b, d2);
	}
	CHECK(tlsh_keyring_add_client_cert(der, dl / 2, desc, err, sizeof(err)) == -EINVAL &&
	      strstr(err, "cannot read the client certificate's names"),
	      "a certificate cut short: no key, -EINVAL, '%s'", err);
	free(der);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test_keyring DIR\n");
		return 2;
	}
	dir = argv[1];
	test_buffers();
	test_keyring();
	test_server_keys();
	return tap_done();
}
