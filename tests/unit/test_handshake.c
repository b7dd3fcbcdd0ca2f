// SPDX-License-Identifier: GPL-2.0
/*
 * In-process handshakes over a socketpair: handshake.c as the client, a
 * GnuTLS server on a thread.
 *
 * kTLS key material: for TLS 1.3 and 1.2 and each of the four ciphers the
 * 6.1 kTLS takes, tlsh_ktls_fill() builds TLS_TX and TLS_RX exactly as they
 * would be handed to the kernel; this test then does what net/tls/tls_sw.c
 * does with them (nonce from salt/iv/rec_seq, AAD, record framing) in
 * user space: a record sealed with TLS_TX must be accepted by the GnuTLS
 * server, and a record from the server must open with TLS_RX.  That checks
 * key, salt, IV and sequence number without a kernel.
 *
 * Also: error mapping (timeout, fatal alert, certificate not trusted,
 * cipher kTLS cannot take).
 *
 * The server role the same way, the other way round: tlsh_hs_run() as the
 * server, a GnuTLS client on a thread: kTLS keys, no record after the
 * handshake (no session ticket), the client trust store (a client without
 * a certificate, with one that verifies, with one from another CA or for
 * servers only), the identity key, the PSK lookup (a fake keyring) and its
 * failures; an x509 server with PSKs too (PSK and certificate clients, no
 * certificate: PSK clients only, neither: -ENOKEY).
 *
 *   test_handshake DIR   (ca.pem, srv.pem, srv.key, client.pem, client.key,
 *                         otherclient.pem, otherclient.key)
 */
#include "config.h"
#include "handshake.h"
#include "keyring.h"
#include "ktls.h"
#include "log.h"
#include "server.h"
#include "client-desc.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <keyutils.h>

static const char *dir;
static struct config cfg;
static const unsigned char psk_key[32] = {
	1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
	17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32 };

enum srv_mode { SRV_ECHO, SRV_STALL, SRV_X509 };

struct server {
	int fd;
	enum srv_mode mode;
	const char *prio;
	pthread_t thread;
	int hs_ret;
	char got[64];		/* what the server received */
	int send_ret;
};

/* TLS 1.3 handshake records (NewSessionTicket) seen after the handshake */
static int post_hs_records;

static int psk_cb(gnutls_session_t s, const char *user, gnutls_datum_t *key)
{
	(void)s;
	if (strcmp(user, "client1") != 0)
		return -1;
	key->data = gnutls_malloc(sizeof(psk_key));
	key->size = sizeof(psk_key);
	memcpy(key->data, psk_key, sizeof(psk_key));
	return 0;
}

static void *server_main(void *arg)
{
	struct server *sv = arg;
	gnutls_session_t s;
	gnutls_psk_server_credentials_t pc = NULL;
	gnutls_certificate_credentials_t xc = NULL;

	if (sv->mode == SRV_STALL) {
		char b[4096];

		/* read the ClientHello and never answer */
		while (read(sv->fd, b, sizeof(b)) > 0)
			;
		return NULL;
	}
	/* tickets allowed: the client must be the one that avoids them */
	gnutls_init(&s, GNUTLS_SERVER | GNUTLS_NO_SIGNAL);
	gnutls_priority_set_direct(s, sv->prio, NULL);
	if (sv->mode == SRV_X509) {
		char path[2][4096];

		snprintf(path[0], sizeof(path[0]), "%s/srv.pem", dir);
		snprintf(path[1], sizeof(path[1]), "%s/srv.key", dir);
		gnutls_certificate_allocate_credentials(&xc);
		gnutls_certificate_set_x509_key_file(xc, path[0], path[1],
						     GNUTLS_X509_FMT_PEM);
		gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, xc);
	} else {
		gnutls_psk_allocate_server_credentials(&pc);
		gnutls_psk_set_server_credentials_function(pc, psk_cb);
		gnutls_psk_set_server_known_dh_params(pc, GNUTLS_SEC_PARAM_MEDIUM);
		gnutls_credentials_set(s, GNUTLS_CRD_PSK, pc);
	}
	gnutls_transport_set_int(s, sv->fd);
	gnutls_handshake_set_timeout(s, 5000);
	do {
		sv->hs_ret = gnutls_handshake(s);
	} while (sv->hs_ret < 0 && !gnutls_error_is_fatal(sv->hs_ret));
	if (sv->hs_ret < 0)
		gnutls_alert_send_appropriate(s, sv->hs_ret);
	if (sv->hs_ret == 0) {
		ssize_t n;

		gnutls_record_set_timeout(s, 5000);
		n = gnutls_record_recv(s, sv->got, sizeof(sv->got) - 1);
		if (n > 0)
			sv->got[n] = '\0';
		sv->send_ret = (int)gnutls_record_send(s, "world", 5);
	}
	gnutls_deinit(s);
	if (pc)
		gnutls_psk_free_server_credentials(pc);
	if (xc)
		gnutls_certificate_free_credentials(xc);
	return NULL;
}

static int start(struct server *sv, enum srv_mode mode, const char *prio)
{
	int sp[2];

	memset(sv, 0, sizeof(*sv));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return -1;
	sv->fd = sp[1];
	sv->mode = mode;
	sv->prio = prio;
	pthread_create(&sv->thread, NULL, server_main, sv);
	return sp[0];
}

static void finish(struct server *sv, int cfd)
{
	shutdown(cfd, SHUT_RDWR);
	pthread_join(sv->thread, NULL);
	close(sv->fd);
	close(cfd);
}

/* --- what net/tls/tls_sw.c does with the crypto_info -------------------- */

struct kparams {
	gnutls_cipher_algorithm_t alg;
	const unsigned char *key, *salt, *iv, *seq;
	size_t keylen, saltlen, ivlen;
	int tls13, explicit_iv;		/* explicit nonce on the wire */
};

static int kparams(const union ktls_crypto_info *ci, struct kparams *k)
{
	memset(k, 0, sizeof(*k));
	k->tls13 = ci->info.version == TLS_1_3_VERSION;
	switch (ci->info.cipher_type) {
	case TLS_CIPHER_AES_GCM_128:
		k->alg = GNUTLS_CIPHER_AES_128_GCM;
		k->key = ci->gcm128.key; k->keylen = 16;
		k->salt = ci->gcm128.salt; k->saltlen = 4;
		k->iv = ci->gcm128.iv; k->ivlen = 8;
		k->seq = ci->gcm128.rec_seq;
		break;
	case TLS_CIPHER_AES_GCM_256:
		k->alg = GNUTLS_CIPHER_AES_256_GCM;
		k->key = ci->gcm256.key; k->keylen = 32;
		k->salt = ci->gcm256.salt; k->saltlen = 4;
		k->iv = ci->gcm256.iv; k->ivlen = 8;
		k->seq = ci->gcm256.rec_seq;
		break;
	case TLS_CIPHER_AES_CCM_128:
		k->alg = GNUTLS_CIPHER_AES_128_CCM;
		k->key = ci->ccm128.key; k->keylen = 16;
		k->salt = ci->ccm128.salt; k->saltlen = 4;
		k->iv = ci->ccm128.iv; k->ivlen = 8;
		k->seq = ci->ccm128.rec_seq;
		break;
	case TLS_CIPHER_CHACHA20_POLY1305:
		k->alg = GNUTLS_CIPHER_CHACHA20_POLY1305;
		k->key = ci->chacha.key; k->keylen = 32;
		k->iv = ci->chacha.iv; k->ivlen = 12;
		k->seq = ci->chacha.rec_seq;
		break;
	default:
		return -1;
	}
	k->explicit_iv = !k->tls13 && ci->info.cipher_type != TLS_CIPHER_CHACHA20_POLY1305;
	return 0;
}

/* nonce = salt || iv, XOR seq into the last 8 bytes (1.3 and ChaCha) */
static void nonce(const struct kparams *k, const unsigned char *explicit_iv,
		  unsigned char n[12])
{
	memcpy(n, k->salt, k->saltlen);
	memcpy(n + k->saltlen, explicit_iv ? explicit_iv : k->iv, k->ivlen);
	if (!k->explicit_iv)
		for (int i = 0; i < 8; i++)
			n[4 + i] ^= k->seq[i];
}

static gnutls_aead_cipher_hd_t aead(const struct kparams *k)
{
	gnutls_aead_cipher_hd_t h;
	gnutls_datum_t key = { (unsigned char *)k->key, (unsigned)k->keylen };

	return gnutls_aead_cipher_init(&h, k->alg, &key) < 0 ? NULL : h;
}

/* Seal one application_data record the way kTLS TX would. */
static ssize_t seal(const union ktls_crypto_info *ci, const char *msg,
		    unsigned char *out, size_t outlen)
{
	struct kparams k;
	unsigned char n[12], aad[13], pt[256];
	size_t mlen = strlen(msg), ptlen = mlen, ctlen, hdr, aadlen;
	gnutls_aead_cipher_hd_t h;

	if (kparams(ci, &k) < 0 || mlen + 64 > sizeof(pt) || outlen < 300)
		return -1;
	memcpy(pt, msg, mlen);
	if (k.tls13)
		pt[ptlen++] = 23;	/* inner content type */
	hdr = 5 + (k.explicit_iv ? 8 : 0);
	ctlen = ptlen + 16;
	out[0] = 23;
	out[1] = 3;
	out[2] = 3;
	out[3] = (unsigned char)((hdr - 5 + ctlen) >> 8);
	out[4] = (unsigned char)(hdr - 5 + ctlen);
	if (k.explicit_iv)
		memcpy(out + 5, k.iv, 8);
	nonce(&k, k.explicit_iv ? k.iv : NULL, n);
	if (k.tls13) {
		memcpy(aad, out, 5);
		aadlen = 5;
	} else {
		memcpy(aad, k.seq, 8);
		aad[8] = 23;
		aad[9] = 3;
		aad[10] = 3;
		aad[11] = (unsigned char)(mlen >> 8);
		aad[12] = (unsigned char)mlen;
		aadlen = 13;
	}
	h = aead(&k);
	if (!h || gnutls_aead_cipher_encrypt(h, n, 12, aad, aadlen, 16, pt, ptlen,
					     out + hdr, &ctlen) < 0) {
		if (h)
			gnutls_aead_cipher_deinit(h);
		return -1;
	}
	gnutls_aead_cipher_deinit(h);
	return (ssize_t)(hdr + ctlen);
}

static int read_full(int fd, unsigned char *b, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t r = read(fd, b + got, len - got);

		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

static void seq_inc(unsigned char seq[8])
{
	for (int i = 7; i >= 0 && ++seq[i] == 0; i--)
		;
}

/* Open one record from fd the way kTLS RX would (rec_seq in *ci advances
 * past skipped handshake records). */
static int open_record(union ktls_crypto_info *ci, int fd, char *msg,
		       size_t msglen)
{
	struct kparams k;
	unsigned char hdr[5], body[512], n[12], aad[13], pt[512];
	size_t blen, off, ptlen = sizeof(pt), aadlen;
	gnutls_aead_cipher_hd_t h;
	int r;

	if (kparams(ci, &k) < 0)
		return -1;
again:
	if (read_full(fd, hdr, 5) < 0)
		return -1;
	blen = (size_t)hdr[3] << 8 | hdr[4];
	if (blen > sizeof(body) || blen < 16 + (k.explicit_iv ? 8u : 0u) ||
	    read_full(fd, body, blen) < 0)
		return -1;
	off = k.explicit_iv ? 8 : 0;
	nonce(&k, k.explicit_iv ? body : NULL, n);
	if (k.tls13) {
		memcpy(aad, hdr, 5);
		aadlen = 5;
	} else {
		size_t l = blen - off - 16;

		memcpy(aad, k.seq, 8);
		aad[8] = hdr[0];
		aad[9] = 3;
		aad[10] = 3;
		aad[11] = (unsigned char)(l >> 8);
		aad[12] = (unsigned char)l;
		aadlen = 13;
	}
	h = aead(&k);
	if (!h)
		return -1;
	r = gnutls_aead_cipher_decrypt(h, n, 12, aad, aadlen, 16, body + off,
				       blen - off, pt, &ptlen);
	gnutls_aead_cipher_deinit(h);
	if (r < 0)
		return -1;
	if (k.tls13) {
		while (ptlen && pt[ptlen - 1] == 0)
			ptlen--;
		if (ptlen && pt[ptlen - 1] == 22) {
			/* kTLS hands such records to the consumer as
			 * non-data records; the next one has seq + 1 */
			post_hs_records++;
			seq_inc((unsigned char *)k.seq);
			goto again;
		}
		if (!ptlen || pt[--ptlen] != 23)
			return -1;
	} else if (hdr[0] != 23) {
		return -1;
	}
	if (ptlen >= msglen)
		return -1;
	memcpy(msg, pt, ptlen);
	msg[ptlen] = '\0';
	return 0;
}

static struct hs_params psk_params(const struct tlsh_psk *p, const char *prio,
				   unsigned timeout_ms)
{
	struct hs_params hp;

	memset(&hp, 0, sizeof(hp));
	hp.type = TLSH_TYPE_CLIENTHELLO_PSK;
	hp.priorities = prio;
	hp.psk = p;
	hp.timeout_ms = timeout_ms;
	return hp;
}

/*
 * X.509 for the matrix: GnuTLS binds external PSKs to SHA-256, so TLS1.3
 * with AES-256-GCM (a SHA-384 suite) cannot be negotiated with one.
 */
static void ktls_case(const char *ver, const char *cipher, int tls13, int psk)
{
	struct tlsh_psk p;
	char prio[512], err[512];
	union ktls_crypto_info tx, rx;
	socklen_t txlen = 0, rxlen = 0;
	struct hs_session hs;
	struct hs_params hp;
	struct server sv;
	int cfd, r, sealed_ok = 0, opened_ok = 0;

	snprintf(prio, sizeof(prio), "NORMAL:-VERS-ALL:+VERS-%s:-CIPHER-ALL:+%s%s",
		 ver, cipher, psk ? ":+ECDHE-PSK:+DHE-PSK:+PSK" : "");
	cfd = start(&sv, psk ? SRV_ECHO : SRV_X509, prio);
	memset(&p, 0, sizeof(p));
	strcpy(p.identity, "client1");
	memcpy(p.key, psk_key, sizeof(psk_key));
	p.keylen = sizeof(psk_key);
	hp = psk_params(&p, prio, 5000);
	if (!psk) {
		hp.type = TLSH_TYPE_CLIENTHELLO_X509;
		hp.psk = NULL;
		hp.peername = "server.test";
	}
	post_hs_records = 0;
	r = tlsh_hs_run(&hs, cfd, &hp, err, sizeof(err));
	if (r == 0) {
		char desc[96], want[96];

		tlsh_hs_describe(hs.session, desc, sizeof(desc));
		snprintf(want, sizeof(want), "%s %s", ver, cipher);
		r = strcmp(desc, want) ? -1 : 0;
		if (r)
			DIAG("negotiated %s, wanted %s", desc, want);
	} else {
		DIAG("handshake: %s", err);
	}
	if (r == 0 && tlsh_ktls_fill(hs.session, 0, &tx, &txlen, err, sizeof(err)) == 0 &&
	    tlsh_ktls_fill(hs.session, 1, &rx, &rxlen, err, sizeof(err)) == 0) {
		unsigned char rec[512];
		char got[64];
		ssize_t rl = seal(&tx, "hello", rec, sizeof(rec));
		if (rl > 0 && write(cfd, rec, (size_t)rl) == rl &&
		    open_record(&rx, cfd, got, sizeof(got)) == 0)
			opened_ok = strcmp(got, "world") == 0;
	}
	finish(&sv, cfd);
	sealed_ok = strcmp(sv.got, "hello") == 0;
	CHECK(r == 0 && tx.info.version == (tls13 ? TLS_1_3_VERSION : TLS_1_2_VERSION) &&
	      txlen == rxlen && txlen > sizeof(struct tls_crypto_info) &&
	      sealed_ok && opened_ok && (psk || post_hs_records == 0),
	      "kTLS %s %s%s: TLS_TX seals what the peer accepts, TLS_RX opens what it sends%s",
	      ver, cipher, psk ? " PSK" : "",
	      psk ? "" : ", no session ticket arrives");
	if (psk)
		DIAG("PSK: %d NewSessionTicket record(s) before the data", post_hs_records);
	if (!sealed_ok || !opened_ok)
		DIAG("sealed_ok=%d opened_ok=%d server_hs=%d", sealed_ok, opened_ok, sv.hs_ret);
	explicit_bzero(&tx, sizeof(tx));
	explicit_bzero(&rx, sizeof(rx));
	tlsh_hs_session_free(&hs);
}

static void error_cases(void)
{
	const char *prio13 = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+ECDHE-PSK:+DHE-PSK:+PSK";
	char err[512];
	struct tlsh_psk p;
	struct hs_session hs;
	struct hs_params hp;
	struct server sv;
	uint64_t t0, dt;
	int cfd, r;

	memset(&p, 0, sizeof(p));
	strcpy(p.identity, "client1");
	memcpy(p.key, psk_key, sizeof(psk_key));
	p.keylen = sizeof(psk_key);

	/* a peer that never answers */
	cfd = start(&sv, SRV_STALL, prio13);
	hp = psk_params(&p, prio13, 400);
	t0 = tlsh_now_ms();
	r = tlsh_hs_run(&hs, cfd, &hp, err, sizeof(err));
	dt = tlsh_now_ms() - t0;
	tlsh_hs_session_free(&hs);
	finish(&sv, cfd);
	CHECK(r == -ETIMEDOUT && strcmp(err, "handshake timed out after 400 ms") == 0 &&
	      dt >= 350 && dt < 1500,
	      "a silent peer: -ETIMEDOUT at the deadline (%llu ms)", (unsigned long long)dt);

	hp = psk_params(&p, prio13, 0);
	r = tlsh_hs_run(&hs, -1, &hp, err, sizeof(err));
	tlsh_hs_session_free(&hs);
	CHECK(r == -ETIMEDOUT, "no time left (TLSH_TIMEOUT_MS 0): -ETIMEDOUT without a handshake");

	/* wrong PSK: the server aborts with a fatal alert */
	p.key[0] ^= 0xff;
	cfd = start(&sv, SRV_ECHO, prio13);
	hp = psk_params(&p, prio13, 3000);
	r = tlsh_hs_run(&hs, cfd, &hp, err, sizeof(err));
	tlsh_hs_session_free(&hs);
	finish(&sv, cfd);
	CHECK(r == -EACCES &&
	      strncmp(err, "the server refused PSK identity '", 33) == 0 &&
	      strstr(err, "': it has no key for it, or another key (peer sent fatal alert: "),
	      "wrong PSK: -EACCES, '%s'", err);
	p.key[0] ^= 0xff;

	/* a cipher kTLS cannot take */
	cfd = start(&sv, SRV_ECHO,
		    "NORMAL:-VERS-ALL:+VERS-TLS1.2:-CIPHER-ALL:+AES-128-CBC:+PSK:+ECDHE-PSK");
	hp = psk_params(&p, "NORMAL:-VERS-ALL:+VERS-TLS1.2:-CIPHER-ALL:+AES-128-CBC:+PSK:+ECDHE-PSK", 3000);
	r = tlsh_hs_run(&hs, cfd, &hp, err, sizeof(err));
	tlsh_hs_session_free(&hs);
	finish(&sv, cfd);
	CHECK(r == -EPROTO && strcmp(err, "negotiated cipher AES-128-CBC is not supported by kTLS") == 0,
	      "a cipher kTLS cannot take: -EPROTO, '%s'", err);

	/* a PSK handshake without a PSK */
	hp = psk_params(NULL, prio13, 3000);
	r = tlsh_hs_run(&hs, -1, &hp, err, sizeof(err));
	tlsh_hs_session_free(&hs);
	CHECK(r == -EINVAL && strcmp(err, "PSK handshake without a PSK") == 0,
	      "PSK handshake without a key: -EINVAL");
	hp.type = 7;
	r = tlsh_hs_run(&hs, -1, &hp, err, sizeof(err));
	tlsh_hs_session_free(&hs);
	CHECK(r == -EINVAL && strcmp(err, "unsupported handshake type 7") == 0,
	      "unknown handshake type: -EINVAL");
}

static void x509_cases(void)
{
	char err[512];
	struct hs_session hs;
	struct hs_params hp;
	struct server sv;
	int cfd, r;
	static const unsigned char lo[4] = { 127, 0, 0, 1 };

	memset(&hp, 0, sizeof(hp));
	hp.type = TLSH_TYPE_CLIENTHELLO_X509;
	hp.timeout_ms = 3000;
	hp.peername = "server.test";
	const char *group;

	cfd = start(&sv, SRV_X509, "NORMAL");
	r = tlsh_hs_run(&hs, cfd, &hp, err, sizeof(err));
	group = r == 0 ? gnutls_group_get_name(gnutls_group_get(hs.session)) : NULL;
	tlsh_hs_session_free(&hs);
	finish(&sv, cfd);
	CHECK(r == 0, "x509: trusted certificate for server.test%s%s", r ? ": " : "", r ? err : "");
	/* the default priorities offer the fastest group first */
	CHECK(group && strcmp(group, "X25519") == 0,
	      "x509: the default priorities agree on X25519 with a NORMAL server (%s)",
	      group ? group : "none");

	hp.peername = "";
	memcpy(hp.peer_ip, lo, 4);
	hp.peer_ip_len = 4;
	cfd = start(&sv, SRV_X509, "NORMAL");
	r = tlsh_hs_run(&hs, cfd, &hp, err, sizeof(err));
	tlsh_hs_session_free(&hs);
	finish(&sv, cfd);
	CHECK(r == 0, "x509: no peer name, the peer address 127.0.0.1 is checked");

	hp.peername = "other.test";
	cfd = start(&sv, SRV_X509, "NORMAL");
	r = tlsh_hs_run(&hs, cfd, &hp, err, sizeof(err));
	tlsh_hs_session_free(&hs);
	finish(&sv, cfd);
	CHECK(r == -EKEYREJECTED &&
	      strcmp(err, "certificate for other.test not trusted: name does not match") == 0,
	      "x509: wrong name: -EKEYREJECTED, '%s'", err);
}

/* --- the server role: tlsh_hs_run() as the server, a GnuTLS client ---- */

struct client {
	int fd;
	const char *prio;
	struct tlsh_x509 x;		/* its certificate, if x.npcerts */
	const char *psk_id;		/* PSK, or NULL */
	unsigned char psk[32];
	pthread_t thread;
	int hs_ret, alert;
	ssize_t recv_ret;
	char got[64];			/* what the client received */
};

/* hands the certificate over whatever CAs the server names */
static int client_cert(gnutls_session_t s, const gnutls_datum_t *req_ca_dn,
		       int nreqs, const gnutls_pk_algorithm_t *pk_algos,
		       int pk_algos_length, gnutls_pcert_st **pcert,
		       unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
	struct client *c = gnutls_session_get_ptr(s);

	(void)req_ca_dn;
	(void)nreqs;
	(void)pk_algos;
	(void)pk_algos_length;
	*pcert = c->x.npcerts ? c->x.pcerts : NULL;
	*pcert_length = c->x.npcerts;
	*pkey = c->x.npcerts ? c->x.key : NULL;
	return 0;
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	gnutls_session_t s;
	gnutls_certificate_credentials_t xc = NULL;
	gnutls_psk_client_credentials_t pc = NULL;

	gnutls_init(&s, GNUTLS_CLIENT | GNUTLS_NO_SIGNAL);
	gnutls_session_set_ptr(s, c);
	gnutls_priority_set_direct(s, c->prio, NULL);
	if (c->psk_id) {
		gnutls_datum_t k = { c->psk, sizeof(c->psk) };

		gnutls_psk_allocate_client_credentials(&pc);
		gnutls_psk_set_client_credentials(pc, c->psk_id, &k, GNUTLS_PSK_KEY_RAW);
		gnutls_credentials_set(s, GNUTLS_CRD_PSK, pc);
	} else {
		gnutls_certificate_allocate_credentials(&xc);
		gnutls_certificate_set_retrieve_function2(xc, client_cert);
		gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, xc);
	}
	gnutls_transport_set_int(s, c->fd);
	gnutls_handshake_set_timeout(s, 5000);
	do {
		c->hs_ret = gnutls_handshake(s);
	} while (c->hs_ret < 0 && !gnutls_error_is_fatal(c->hs_ret));
	if (c->hs_ret == GNUTLS_E_FATAL_ALERT_RECEIVED)
		c->alert = (int)gnutls_alert_get(s);
	if (c->hs_ret == 0) {
		ssize_t n;

		gnutls_record_set_timeout(s, 5000);
		gnutls_record_send(s, "hello", 5);
		do {
			n = gnutls_record_recv(s, c->got, sizeof(c->got) - 1);
		} while (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED);
		if (n > 0)
			c->got[n] = '\0';
		if (n == GNUTLS_E_FATAL_ALERT_RECEIVED)
			c->alert = (int)gnutls_alert_get(s);
		c->recv_ret = n;
	}
	gnutls_deinit(s);
	if (pc)
		gnutls_psk_free_client_credentials(pc);
	if (xc)
		gnutls_certificate_free_credentials(xc);
	return NULL;
}

/* A certificate and key from DIR into x (both PEM) */
static int load_x509(const char *cert, const char *key, struct tlsh_x509 *x)
{
	char path[4096], err[256];
	unsigned char *buf;
	size_t len;
	int r;

	memset(x, 0, sizeof(*x));
	snprintf(path, sizeof(path), "%s/%s", dir, cert);
	if (tlsh_read_file(path, TLSH_PAYLOAD_MAX, &buf, &len))
		return -1;
	r = tlsh_keyring_parse_certs(x, buf, len, err, sizeof(err));
	free(buf);
	snprintf(path, sizeof(path), "%s/%s", dir, key);
	if (r || tlsh_read_file(path, TLSH_PAYLOAD_MAX, &buf, &len))
		return -1;
	r = tlsh_keyring_parse_privkey(x, buf, len, err, sizeof(err));
	free(buf);
	if (r)
		DIAG("%s: %s", key, err);
	return r;
}

/* The clients' PSKs, as a keyring would give them: client1 only */
static int fake_lookup(void *arg, const char *identity, struct tlsh_psk *psk,
		       int32_t *serial, char *err, size_t errlen)
{
	(void)arg;
	if (strcmp(identity, "client1") != 0) {
		snprintf(err, errlen, "no PSK for identity '%s' here", identity);
		return -ENOKEY;
	}
	strcpy(psk->identity, "client1");
	memcpy(psk->key, psk_key, sizeof(psk_key));
	psk->keylen = sizeof(psk_key);
	*serial = 4242;
	return 0;
}

/* Run a server handshake of type against client c (started here) on a
 * socketpair, with the default priorities (the client's: prio), our
 * certificate own (or NULL) and the clients' PSKs from lookup (or NULL);
 * the server's fd is returned in *sfd */
static int serve_with(struct client *c, int type, const struct tlsh_x509 *own,
		      tlsh_psk_lookup_fn *lookup, const char *prio,
		      struct hs_session *hs, int *sfd, char *err, size_t errlen)
{
	struct hs_params hp;
	int sp[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return -1;
	c->fd = sp[1];
	c->prio = prio;
	pthread_create(&c->thread, NULL, client_main, c);
	memset(&hp, 0, sizeof(hp));
	hp.type = type;
	hp.x509 = own;
	hp.psk_lookup = lookup;
	hp.timeout_ms = 5000;
	*sfd = sp[0];
	err[0] = '\0';
	return tlsh_hs_run(hs, sp[0], &hp, err, errlen);
}

/* The same, a PSK server's PSKs from fake_lookup(), an x509 server's none */
static int serve(struct client *c, int type, const struct tlsh_x509 *own,
		 const char *prio, struct hs_session *hs, int *sfd, char *err,
		 size_t errlen)
{
	return serve_with(c, type, own,
			  type == TLSH_TYPE_SERVERHELLO_PSK ? fake_lookup : NULL,
			  prio, hs, sfd, err, errlen);
}

static void serve_done(struct client *c, struct hs_session *hs, int sfd)
{
	shutdown(sfd, SHUT_RDWR);
	pthread_join(c->thread, NULL);
	close(sfd);
	close(c->fd);
	tlsh_hs_session_free(hs);
	tlsh_keyring_x509_free(&c->x);
}

/* What kTLS would do with the server's keys: open the client's "hello"
 * with TLS_RX, seal "world" with TLS_TX; and in TLS 1.3 nothing was sent
 * after the handshake (no NewSessionTicket: TLS_TX's sequence is 0; a
 * GnuTLS server sends tickets only with a ticket key, which we never set,
 * and GNUTLS_NO_TICKETS says so too) */
static int server_ktls_ok(struct hs_session *hs, int sfd, int tls13)
{
	union ktls_crypto_info tx, rx;
	socklen_t txlen = 0, rxlen = 0;
	char err[256];
	struct kparams k;
	int ok = 0;

	if (tlsh_ktls_fill(hs->session, 0, &tx, &txlen, err, sizeof(err)) == 0 &&
	    tlsh_ktls_fill(hs->session, 1, &rx, &rxlen, err, sizeof(err)) == 0 &&
	    kparams(&tx, &k) == 0) {
		static const unsigned char zero[8];
		unsigned char rec[512];
		char got[64];
		ssize_t rl;

		ok = !tls13 || memcmp(k.seq, zero, 8) == 0;
		if (!ok)
			DIAG("TLS_TX starts after a record sent after the handshake");
		ok = ok && open_record(&rx, sfd, got, sizeof(got)) == 0 &&
		     strcmp(got, "hello") == 0;
		rl = seal(&tx, "world", rec, sizeof(rec));
		ok = ok && rl > 0 && write(sfd, rec, (size_t)rl) == rl;
	}
	explicit_bzero(&tx, sizeof(tx));
	explicit_bzero(&rx, sizeof(rx));
	return ok;
}

static void server_ktls_case(const char *ver, const char *cipher, int psk)
{
	char prio[512], err[512];
	struct hs_session hs;
	struct tlsh_x509 own;
	struct client c;
	int sfd, r, ok;

	snprintf(prio, sizeof(prio), "NORMAL:-VERS-ALL:+VERS-%s:-CIPHER-ALL:+%s%s",
		 ver, cipher, psk ? ":+ECDHE-PSK:+DHE-PSK:+PSK" : "");
	memset(&c, 0, sizeof(c));
	if (psk) {
		c.psk_id = "client1";
		memcpy(c.psk, psk_key, sizeof(psk_key));
	}
	load_x509("srv.pem", "srv.key", &own);
	r = serve(&c, psk ? TLSH_TYPE_SERVERHELLO_PSK : TLSH_TYPE_SERVERHELLO_X509,
		  &own, prio, &hs, &sfd, err, sizeof(err));
	ok = r == 0 && server_ktls_ok(&hs, sfd, strcmp(ver, "TLS1.3") == 0);
	if (r)
		DIAG("server handshake: %s", err);
	serve_done(&c, &hs, sfd);
	tlsh_keyring_x509_free(&own);
	CHECK(ok && strcmp(c.got, "world") == 0,
	      "server %s %s%s: TLS_RX opens what the client sends, TLS_TX seals what it accepts%s",
	      ver, cipher, psk ? " PSK" : "",
	      strcmp(ver, "TLS1.3") == 0 ?
	      ", nothing was sent after the handshake (TLS_TX's sequence is 0)" : "");
}

static void server_x509_cases(void)
{
	char err[512], desc[TLSH_CLIENT_KEY_DESC], name[300];
	const char *prio = "NORMAL:-VERS-ALL:+VERS-TLS1.3";
	struct hs_session hs;
	struct tlsh_x509 own;
	struct client c;
	int32_t serial = -1;
	int sfd, r, ok;

	load_x509("srv.pem", "srv.key", &own);

	/* a client without a certificate: accepted, not authenticated */
	memset(&c, 0, sizeof(c));
	r = serve(&c, TLSH_TYPE_SERVERHELLO_X509, &own, prio, &hs, &sfd, err, sizeof(err));
	ok = r == 0 && tlsh_server_identity(&hs, &serial, desc, err, sizeof(err)) == 0;
	tlsh_server_client_name(&hs, name, sizeof(name));
	serve_done(&c, &hs, sfd);
	CHECK(ok && serial == 0 && !hs.client_verified &&
	      strcmp(name, "unauthenticated client") == 0,
	      "server x509: a client without a certificate is accepted, unauthenticated, no identity key (%s)",
	      r ? err : name);

	/* a client certificate from the client trust store's CA */
	memset(&c, 0, sizeof(c));
	load_x509("client.pem", "client.key", &c.x);
	r = serve(&c, TLSH_TYPE_SERVERHELLO_X509, &own, prio, &hs, &sfd, err, sizeof(err));
	ok = r == 0 && hs.client_verified;
	tlsh_server_client_name(&hs, name, sizeof(name));
	CHECK(ok && strcmp(name, "CN=client.test") == 0,
	      "server x509: a client certificate signed by the client trust store's CA verifies (%s)",
	      r ? err : name);
	serial = 0;
	if (ok && tlsh_server_identity(&hs, &serial, desc, err, sizeof(err)) == 0 &&
	    serial > 0) {
		const gnutls_datum_t *peer = gnutls_certificate_get_peers(hs.session,
									  &(unsigned){ 0 });
		unsigned char payload[4096];
		char want[TLSH_CLIENT_KEY_DESC];
		long n = keyctl_read(serial, (char *)payload, sizeof(payload));

		want_client_desc(peer, want);
		CHECK(strcmp(desc, want) == 0 && n == (long)peer->size &&
		      memcmp(payload, peer->data, peer->size) == 0 &&
		      keyctl_search(KEY_SPEC_PROCESS_KEYRING, "user", desc, 0) == serial,
		      "server x509: the identity key is a user key in the process keyring, the client's DER certificate described tlsh:client:<sha256 of its issuer and subject names>");
	} else {
		CHECK(0, "server x509: an identity key for the verified client: %s", err);
	}
	serve_done(&c, &hs, sfd);

	/* a client certificate from another CA: refused, with an alert */
	memset(&c, 0, sizeof(c));
	load_x509("otherclient.pem", "otherclient.key", &c.x);
	r = serve(&c, TLSH_TYPE_SERVERHELLO_X509, &own, prio, &hs, &sfd, err, sizeof(err));
	serve_done(&c, &hs, sfd);
	CHECK(r == -EKEYREJECTED &&
	      strcmp(err, "client certificate 'CN=other client' not trusted: signer unknown") == 0 &&
	      c.alert == GNUTLS_A_UNKNOWN_CA,
	      "server x509: a client certificate from another CA: -EKEYREJECTED, '%s', the client gets unknown_ca",
	      err);

	/* a certificate for TLS servers only, as a client's */
	memset(&c, 0, sizeof(c));
	load_x509("srv.pem", "srv.key", &c.x);
	r = serve(&c, TLSH_TYPE_SERVERHELLO_X509, &own, prio, &hs, &sfd, err, sizeof(err));
	serve_done(&c, &hs, sfd);
	CHECK(r == -EKEYREJECTED && strstr(err, "not trusted: not a TLS client certificate"),
	      "server x509: a server-only certificate as a client's: -EKEYREJECTED, '%s'", err);

	/* TLS 1.2 too */
	memset(&c, 0, sizeof(c));
	load_x509("client.pem", "client.key", &c.x);
	r = serve(&c, TLSH_TYPE_SERVERHELLO_X509, &own, "NORMAL:-VERS-ALL:+VERS-TLS1.2",
		  &hs, &sfd, err, sizeof(err));
	ok = r == 0 && hs.client_verified &&
	     gnutls_protocol_get_version(hs.session) == GNUTLS_TLS1_2;
	serve_done(&c, &hs, sfd);
	CHECK(ok, "server x509: TLS 1.2 with a verified client certificate%s%s",
	      r ? ": " : "", r ? err : "");

	/* no certificate of its own */
	memset(&c, 0, sizeof(c));
	r = serve(&c, TLSH_TYPE_SERVERHELLO_X509, NULL, prio, &hs, &sfd, err, sizeof(err));
	serve_done(&c, &hs, sfd);
	CHECK(r == -ENOKEY, "server x509 without a certificate: -ENOKEY");
	tlsh_keyring_x509_free(&own);
}

/* A PSK client (client1, or the wrong key for it) into c */
static void psk_client(struct client *c, int wrong_key)
{
	memset(c, 0, sizeof(*c));
	c->psk_id = "client1";
	memcpy(c->psk, psk_key, sizeof(psk_key));
	if (wrong_key)
		c->psk[0] ^= 0xff;
}

static void server_psk_cases(void)
{
	const char *prio = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+ECDHE-PSK:+DHE-PSK:+PSK";
	const char *prio12 = "NORMAL:-VERS-ALL:+VERS-TLS1.2:+ECDHE-PSK:+DHE-PSK:+PSK";
	char err[512], desc[TLSH_CLIENT_KEY_DESC], name[300];
	struct hs_session hs;
	struct client c;
	int32_t serial = 0;
	int sfd, r, ok, wrong_key_alert;

	psk_client(&c, 0);
	r = serve(&c, TLSH_TYPE_SERVERHELLO_PSK, NULL, prio, &hs, &sfd, err, sizeof(err));
	ok = r == 0 && tlsh_server_identity(&hs, &serial, desc, err, sizeof(err)) == 0;
	tlsh_server_client_name(&hs, name, sizeof(name));
	serve_done(&c, &hs, sfd);
	CHECK(ok && serial == 4242 && strcmp(name, "PSK identity client1") == 0,
	      "server PSK: the identity's key from the lookup, its serial for TLSH_PEER_IDENTITY (%s)",
	      r ? err : name);

	psk_client(&c, 1);
	r = serve(&c, TLSH_TYPE_SERVERHELLO_PSK, NULL, prio, &hs, &sfd, err, sizeof(err));
	serve_done(&c, &hs, sfd);
	wrong_key_alert = c.alert;
	CHECK(r == -EKEYREJECTED && c.alert != 0 &&
	      strcmp(err, "the client's key for PSK identity 'client1' does not match key 4242") == 0,
	      "server PSK: the wrong key for a known identity: -EKEYREJECTED, '%s', the client told %s",
	      err, gnutls_alert_get_name(c.alert));

	/* an unknown identity: the client must not learn that it is, by
	 * the alert, from a wrong key */
	psk_client(&c, 0);
	c.psk_id = "stranger";
	r = serve(&c, TLSH_TYPE_SERVERHELLO_PSK, NULL, prio, &hs, &sfd, err, sizeof(err));
	serve_done(&c, &hs, sfd);
	CHECK(r == -EKEYREJECTED && strcmp(err, "no PSK for identity 'stranger' here") == 0 &&
	      c.alert == wrong_key_alert,
	      "server PSK: an unknown identity: -EKEYREJECTED with the lookup's reason, the client told what a wrong key gets (%s)",
	      gnutls_alert_get_name(c.alert));

	psk_client(&c, 0);
	c.psk_id = "two words";
	r = serve(&c, TLSH_TYPE_SERVERHELLO_PSK, NULL, prio, &hs, &sfd, err, sizeof(err));
	serve_done(&c, &hs, sfd);
	CHECK(r == -EKEYREJECTED && strstr(err, "the client offered a PSK identity of 9 bytes that is not") &&
	      c.alert == wrong_key_alert,
	      "server PSK: an identity no key could be named by is not looked up: -EKEYREJECTED, the client told what a wrong key gets (%s)",
	      gnutls_alert_get_name(c.alert));

	psk_client(&c, 0);
	r = serve(&c, TLSH_TYPE_SERVERHELLO_PSK, NULL, prio12, &hs, &sfd, err,
		  sizeof(err));
	ok = r == 0 && gnutls_protocol_get_version(hs.session) == GNUTLS_TLS1_2;
	serve_done(&c, &hs, sfd);
	CHECK(ok, "server PSK: TLS 1.2%s%s", r ? ": " : "", r ? err : "");

	/* TLS 1.2 finds the key later (the ClientKeyExchange), and fails
	 * a wrong one in the Finished: an unknown identity the same way */
	psk_client(&c, 1);
	r = serve(&c, TLSH_TYPE_SERVERHELLO_PSK, NULL, prio12, &hs, &sfd, err,
		  sizeof(err));
	serve_done(&c, &hs, sfd);
	wrong_key_alert = c.alert;
	ok = r == -EKEYREJECTED && c.alert != 0;
	psk_client(&c, 0);
	c.psk_id = "stranger";
	r = serve(&c, TLSH_TYPE_SERVERHELLO_PSK, NULL, prio12, &hs, &sfd, err,
		  sizeof(err));
	serve_done(&c, &hs, sfd);
	CHECK(ok && r == -EKEYREJECTED && strcmp(err, "no PSK for identity 'stranger' here") == 0 &&
	      c.alert == wrong_key_alert,
	      "server PSK: TLS 1.2, an unknown identity: the client told what a wrong key gets (%s, %s)",
	      gnutls_alert_get_name(wrong_key_alert), gnutls_alert_get_name(c.alert));
}

/*
 * An x509 server with the clients' PSKs too (what knfsd asks for, not
 * knowing what its client will offer), on the default priorities: a PSK
 * client gets a PSK handshake and is named by its key, a certificate
 * client the certificate handshake of an x509 server without PSKs; with
 * PSKs and no certificate, PSK clients only; with neither, -ENOKEY.
 */
static void server_x509_psk_cases(void)
{
	const char *prio13 = "NORMAL:-VERS-ALL:+VERS-TLS1.3";
	const char *psk13 = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+ECDHE-PSK:+DHE-PSK:+PSK";
	char err[512], desc[TLSH_CLIENT_KEY_DESC], name[300];
	struct hs_session hs;
	struct tlsh_x509 own;
	struct client c;
	int32_t serial;
	int sfd, r, ok, wrong_key_alert;

	load_x509("srv.pem", "srv.key", &own);

	psk_client(&c, 0);
	r = serve_with(&c, TLSH_TYPE_SERVERHELLO_X509, &own, fake_lookup, psk13,
		       &hs, &sfd, err, sizeof(err));
	serial = 0;
	ok = r == 0 && tlsh_server_by_psk(&hs) &&
	     gnutls_protocol_get_version(hs.session) == GNUTLS_TLS1_3 &&
	     tlsh_server_identity(&hs, &serial, desc, err, sizeof(err)) == 0 &&
	     desc[0] == '\0';
	tlsh_server_client_name(&hs, name, sizeof(name));
	serve_done(&c, &hs, sfd);
	CHECK(ok && serial == 4242 && strcmp(name, "PSK identity client1") == 0 &&
	      c.hs_ret == 0,
	      "server x509 with PSKs: a TLS 1.3 PSK client gets a PSK handshake, named by its key as for a PSK request (%s)",
	      r ? err : name);

	memset(&c, 0, sizeof(c));
	load_x509("client.pem", "client.key", &c.x);
	r = serve_with(&c, TLSH_TYPE_SERVERHELLO_X509, &own, fake_lookup, prio13,
		       &hs, &sfd, err, sizeof(err));
	serial = 0;
	ok = r == 0 && !tlsh_server_by_psk(&hs) && hs.client_verified &&
	     tlsh_server_identity(&hs, &serial, desc, err, sizeof(err)) == 0 &&
	     serial > 0 && strncmp(desc, "tlsh:client:", 12) == 0;
	tlsh_server_client_name(&hs, name, sizeof(name));
	serve_done(&c, &hs, sfd);
	CHECK(ok && strcmp(name, "CN=client.test") == 0,
	      "server x509 with PSKs: a certificate client still gets the certificate handshake, its certificate verified and named (%s)",
	      r ? err : name);

	memset(&c, 0, sizeof(c));
	r = serve_with(&c, TLSH_TYPE_SERVERHELLO_X509, &own, fake_lookup, prio13,
		       &hs, &sfd, err, sizeof(err));
	serial = -1;
	ok = r == 0 && !tlsh_server_by_psk(&hs) && !hs.client_verified &&
	     tlsh_server_identity(&hs, &serial, desc, err, sizeof(err)) == 0;
	tlsh_server_client_name(&hs, name, sizeof(name));
	serve_done(&c, &hs, sfd);
	CHECK(ok && serial == 0 && strcmp(name, "unauthenticated client") == 0,
	      "server x509 with PSKs: a client without certificate or PSK is accepted, unauthenticated (%s)",
	      r ? err : name);

	psk_client(&c, 1);
	r = serve_with(&c, TLSH_TYPE_SERVERHELLO_X509, &own, fake_lookup, psk13,
		       &hs, &sfd, err, sizeof(err));
	serve_done(&c, &hs, sfd);
	wrong_key_alert = c.alert;
	CHECK(r == -EKEYREJECTED && c.alert != 0 &&
	      strcmp(err, "the client's key for PSK identity 'client1' does not match key 4242") == 0,
	      "server x509 with PSKs: the wrong key for a known identity: -EKEYREJECTED, '%s'", err);

	psk_client(&c, 0);
	c.psk_id = "stranger";
	r = serve_with(&c, TLSH_TYPE_SERVERHELLO_X509, &own, fake_lookup, psk13,
		       &hs, &sfd, err, sizeof(err));
	serve_done(&c, &hs, sfd);
	CHECK(r == -EKEYREJECTED && strcmp(err, "no PSK for identity 'stranger' here") == 0 &&
	      c.alert == wrong_key_alert,
	      "server x509 with PSKs: an unknown identity: -EKEYREJECTED, the client told what a wrong key gets (%s)",
	      gnutls_alert_get_name(c.alert));

	psk_client(&c, 0);
	r = serve_with(&c, TLSH_TYPE_SERVERHELLO_X509, &own, fake_lookup,
		       "NORMAL:-VERS-ALL:+VERS-TLS1.2:+ECDHE-PSK:+DHE-PSK:+PSK",
		       &hs, &sfd, err, sizeof(err));
	serial = 0;
	ok = r == 0 && tlsh_server_by_psk(&hs) &&
	     gnutls_protocol_get_version(hs.session) == GNUTLS_TLS1_2 &&
	     tlsh_server_identity(&hs, &serial, desc, err, sizeof(err)) == 0;
	serve_done(&c, &hs, sfd);
	CHECK(ok && serial == 4242, "server x509 with PSKs: a TLS 1.2 PSK client too%s%s",
	      r ? ": " : "", r ? err : "");

	/* PSKs and no certificate: PSK clients only */
	psk_client(&c, 0);
	r = serve_with(&c, TLSH_TYPE_SERVERHELLO_X509, NULL, fake_lookup, psk13,
		       &hs, &sfd, err, sizeof(err));
	serial = 0;
	ok = r == 0 && tlsh_server_by_psk(&hs) &&
	     tlsh_server_identity(&hs, &serial, desc, err, sizeof(err)) == 0;
	serve_done(&c, &hs, sfd);
	CHECK(ok && serial == 4242,
	      "server x509 with PSKs and no certificate: a PSK client completes, named by its key%s%s",
	      r ? ": " : "", r ? err : "");

	memset(&c, 0, sizeof(c));
	load_x509("client.pem", "client.key", &c.x);
	r = serve_with(&c, TLSH_TYPE_SERVERHELLO_X509, NULL, fake_lookup, prio13,
		       &hs, &sfd, err, sizeof(err));
	serve_done(&c, &hs, sfd);
	CHECK(r == -EPROTO &&
	      strcmp(err, "the client offered no PSK identity, and this server takes PSK clients only (no server certificate)") == 0,
	      "server x509 with PSKs and no certificate: a certificate client: -EPROTO, '%s'", err);

	/* neither */
	memset(&c, 0, sizeof(c));
	r = serve_with(&c, TLSH_TYPE_SERVERHELLO_X509, NULL, NULL, prio13,
		       &hs, &sfd, err, sizeof(err));
	serve_done(&c, &hs, sfd);
	CHECK(r == -ENOKEY && strcmp(err, "no server certificate, and no PSKs") == 0,
	      "server x509 with neither a certificate nor PSKs: -ENOKEY, '%s'", err);
	tlsh_keyring_x509_free(&own);
}

int main(int argc, char **argv)
{
	static const char *const ciphers[] = {
		"AES-128-GCM", "AES-256-GCM", "CHACHA20-POLY1305", "AES-128-CCM" };
	char err[1024], path[4096];

	if (argc < 2) {
		fprintf(stderr, "usage: test_handshake DIR\n");
		return 2;
	}
	dir = argv[1];
	signal(SIGPIPE, SIG_IGN);
	tlsh_log_init("test_handshake", 0, 1);
	tlsh_log_set_level(TLSH_LOG_WARNING);
	tlsh_config_defaults(&cfg);
	cfg.tls12 = 1;
	snprintf(path, sizeof(path), "%s/ca.pem", dir);
	tlsh_copy_string(cfg.trust_store, sizeof(cfg.trust_store), path);
	/* the server's side asks clients for a certificate */
	tlsh_copy_string(cfg.client_trust_store, sizeof(cfg.client_trust_store), path);
	if (tlsh_hs_global_init(&cfg, err, sizeof(err)) < 0) {
		CHECK(0, "tlsh_hs_global_init: %s", err);
		return 1;
	}
	for (int v = 0; v < 2; v++)
		for (size_t c = 0; c < 4; c++)
			ktls_case(v ? "TLS1.2" : "TLS1.3", ciphers[c], !v, 0);
	ktls_case("TLS1.3", "AES-128-GCM", 1, 1);
	ktls_case("TLS1.2", "AES-128-CCM", 0, 1);
	error_cases();
	x509_cases();
	for (size_t i = 0; i < 4; i++)
		server_ktls_case("TLS1.3", ciphers[i], 0);
	server_ktls_case("TLS1.2", "AES-256-GCM", 0);
	server_ktls_case("TLS1.3", "AES-128-GCM", 1);
	server_x509_cases();
	server_psk_cases();
	server_x509_psk_cases();
	/* the wait for a TLS 1.3 server's verdict on our certificate */
	CHECK(tlsh_hs_verdict_wait_ms(3, 15000) == 100 &&
	      tlsh_hs_verdict_wait_ms(100, 15000) == 300 &&
	      tlsh_hs_verdict_wait_ms(5000, 15000) == 750 &&
	      tlsh_hs_verdict_wait_ms(100, 120) == 120,
	      "verdict wait: three times the handshake, within 100..750 ms and the time left");
	tlsh_hs_global_deinit();
	return tap_done();
}
