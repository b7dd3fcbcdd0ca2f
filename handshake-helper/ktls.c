// SPDX-License-Identifier: GPL-2.0
/*
 * kTLS offload of an established GnuTLS session.
 *
 * gnutls_record_get_state() gives, per direction, the traffic key, the
 * IV and the next record sequence number (big endian, 8 bytes).  What the
 * kernel wants (net/tls/tls_sw.c, 6.1):
 *
 *   AES-GCM, AES-CCM   salt = first 4 bytes of the IV
 *     TLS 1.3          iv = the other 8 bytes of the 12-byte static IV
 *                      (the kernel XORs the sequence number into salt||iv)
 *     TLS 1.2          GnuTLS' IV is only the 4-byte implicit part; iv is
 *                      the first explicit nonce, which GnuTLS and the
 *                      kernel both take from the sequence number
 *   CHACHA20-POLY1305  iv = the full 12-byte IV, no salt (1.2 and 1.3)
 *   all                rec_seq = sequence number
 */
#include "fault.h"
#include "ktls.h"
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#ifndef SOL_TLS
#define SOL_TLS 282
#endif
#ifndef TCP_ULP
#define TCP_ULP 31
#endif

int tlsh_ktls_check(gnutls_session_t s, char *err, size_t errlen)
{
	gnutls_protocol_t v = gnutls_protocol_get_version(s);
	gnutls_cipher_algorithm_t c = gnutls_cipher_get(s);
	const char *name;

	if (v != GNUTLS_TLS1_2 && v != GNUTLS_TLS1_3) {
		name = gnutls_protocol_get_name(v);
		snprintf(err, errlen, "negotiated %s, kTLS needs TLS1.2 or TLS1.3",
			 name ? name : "unknown protocol");
		return -EPROTO;
	}
	switch (c) {
	case GNUTLS_CIPHER_AES_128_GCM:
	case GNUTLS_CIPHER_AES_256_GCM:
	case GNUTLS_CIPHER_AES_128_CCM:
	case GNUTLS_CIPHER_CHACHA20_POLY1305:
		return 0;
	default:
		name = gnutls_cipher_get_name(c);
		snprintf(err, errlen, "negotiated cipher %s is not supported by kTLS",
			 name ? name : "unknown");
		return -EPROTO;
	}
}

/* Salted AEADs: AES-GCM and AES-CCM.  0 or -EINVAL (unexpected sizes). */
static int fill_salted(unsigned char *key,
		       unsigned char *salt, unsigned char *iv,
		       unsigned char *rec_seq, size_t keysize,
		       const gnutls_datum_t *k, const gnutls_datum_t *civ,
		       const unsigned char seq[8], int tls13)
{
	/* salt 4, explicit iv 8, rec_seq 8 for all of them */
	if (k->size != keysize || civ->size != (tls13 ? 12u : 4u))
		return -EINVAL;
	memcpy(key, k->data, keysize);
	memcpy(salt, civ->data, 4);
	if (tls13)
		memcpy(iv, civ->data + 4, 8);
	else
		memcpy(iv, seq, 8);
	memcpy(rec_seq, seq, 8);
	return 0;
}

int tlsh_ktls_fill(gnutls_session_t s, int read, union ktls_crypto_info *ci,
		   socklen_t *len, char *err, size_t errlen)
{
	gnutls_datum_t mac, iv, key;
	unsigned char seq[8];
	int tls13, ret;

	memset(ci, 0, sizeof(*ci));
	ret = tlsh_ktls_check(s, err, errlen);
	if (ret < 0)
		return ret;
	ret = -EINVAL;
	tls13 = gnutls_protocol_get_version(s) == GNUTLS_TLS1_3;
	if (gnutls_record_get_state(s, read, &mac, &iv, &key, seq) < 0) {
		snprintf(err, errlen, "cannot get the TLS record state");
		return -EINVAL;
	}
	ci->info.version = tls13 ? TLS_1_3_VERSION : TLS_1_2_VERSION;
	switch (gnutls_cipher_get(s)) {
	case GNUTLS_CIPHER_AES_128_GCM:
		ci->info.cipher_type = TLS_CIPHER_AES_GCM_128;
		ret = fill_salted(ci->gcm128.key, ci->gcm128.salt,
				  ci->gcm128.iv, ci->gcm128.rec_seq,
				  TLS_CIPHER_AES_GCM_128_KEY_SIZE, &key, &iv,
				  seq, tls13);
		*len = sizeof(ci->gcm128);
		break;
	case GNUTLS_CIPHER_AES_256_GCM:
		ci->info.cipher_type = TLS_CIPHER_AES_GCM_256;
		ret = fill_salted(ci->gcm256.key, ci->gcm256.salt,
				  ci->gcm256.iv, ci->gcm256.rec_seq,
				  TLS_CIPHER_AES_GCM_256_KEY_SIZE, &key, &iv,
				  seq, tls13);
		*len = sizeof(ci->gcm256);
		break;
	case GNUTLS_CIPHER_AES_128_CCM:
		ci->info.cipher_type = TLS_CIPHER_AES_CCM_128;
		ret = fill_salted(ci->ccm128.key, ci->ccm128.salt,
				  ci->ccm128.iv, ci->ccm128.rec_seq,
				  TLS_CIPHER_AES_CCM_128_KEY_SIZE, &key, &iv,
				  seq, tls13);
		*len = sizeof(ci->ccm128);
		break;
	case GNUTLS_CIPHER_CHACHA20_POLY1305:
		ci->info.cipher_type = TLS_CIPHER_CHACHA20_POLY1305;
		if (key.size == TLS_CIPHER_CHACHA20_POLY1305_KEY_SIZE &&
		    iv.size == TLS_CIPHER_CHACHA20_POLY1305_IV_SIZE) {
			memcpy(ci->chacha.key, key.data, key.size);
			memcpy(ci->chacha.iv, iv.data, iv.size);
			memcpy(ci->chacha.rec_seq, seq, sizeof(ci->chacha.rec_seq));
			ret = 0;
		}
		*len = sizeof(ci->chacha);
		break;
	default:
		break;
	}
	explicit_bzero(seq, sizeof(seq));
	if (ret < 0) {
		explicit_bzero(ci, sizeof(*ci));
		snprintf(err, errlen, "unexpected key or IV size (%u/%u) for %s",
			 key.size, iv.size, gnutls_cipher_get_name(gnutls_cipher_get(s)));
	}
	return ret;
}

/*
 * A TLS 1.3 record hides its type and any padding inside the ciphertext,
 * so kTLS decrypts it into a buffer of its own and copies the data out.
 * Told that the peer pads nothing (GnuTLS, OpenSSL and the kernel do not),
 * it decrypts straight into the reader's pages: one copy fewer for each
 * record, the pages of a READ reply or a WRITE call. A record that turns
 * out padded, or not data, is decrypted again the slow way (counted as
 * TlsRxNoPadViolation in /proc/net/tls_stat), so this is only a hint;
 * kernels before 6.0 do not know it, and the session works without it.
 */
static void expect_no_pad(int fd)
{
#ifdef TLS_RX_EXPECT_NO_PAD
	int one = 1;

	if (setsockopt(fd, SOL_TLS, TLS_RX_EXPECT_NO_PAD, &one, sizeof(one)) < 0)
		log_debug("TLS_RX_EXPECT_NO_PAD: %s", strerror(errno));
#else
	(void)fd;
#endif
}

int tlsh_ktls_install(int fd, gnutls_session_t s, char *err, size_t errlen)
{
	union ktls_crypto_info ci;
	socklen_t len = 0;
	int e;

	e = tlsh_ktls_check(s, err, errlen);
	if (e < 0)
		return e;
	if (setsockopt(fd, SOL_TCP, TCP_ULP, "tls", sizeof("tls")) < 0) {
		e = errno;
		snprintf(err, errlen, "cannot attach the kernel TLS ULP: %s",
			 strerror(e));
		return -e;
	}
	for (int dir = 0; dir < 2; dir++) {
		/* whatever went wrong, the session is not one kTLS takes */
		if (tlsh_ktls_fill(s, dir, &ci, &len, err, errlen) < 0)
			return -EPROTO;
		if (setsockopt(fd, SOL_TLS, dir ? TLS_RX : TLS_TX, &ci, len) < 0) {
			e = errno;
			explicit_bzero(&ci, sizeof(ci));
			snprintf(err, errlen, "setsockopt(%s): %s",
				 dir ? "TLS_RX" : "TLS_TX", strerror(e));
			return -e;
		}
		explicit_bzero(&ci, sizeof(ci));
		if (dir == 0)
			tlsh_fault_point(FAULT_AFTER_TX);
	}
	if (gnutls_protocol_get_version(s) == GNUTLS_TLS1_3)
		expect_no_pad(fd);
	return 0;
}
