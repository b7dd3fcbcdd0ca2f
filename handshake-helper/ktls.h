/* SPDX-License-Identifier: GPL-2.0 */
/* Hand the negotiated TLS session to the kernel (kTLS). */
#ifndef TLSH_KTLS_H
#define TLSH_KTLS_H

#include <stddef.h>
#include <sys/socket.h>
#include <linux/tls.h>

#include <gnutls/gnutls.h>

union ktls_crypto_info {
	struct tls_crypto_info info;
	struct tls12_crypto_info_aes_gcm_128 gcm128;
	struct tls12_crypto_info_aes_gcm_256 gcm256;
	struct tls12_crypto_info_aes_ccm_128 ccm128;
	struct tls12_crypto_info_chacha20_poly1305 chacha;
};

/* 0 if version and cipher of s are usable with the 6.1 kTLS, else -EPROTO
 * with a message in err. */
int tlsh_ktls_check(gnutls_session_t s, char *err, size_t errlen);

/*
 * Build the TLS_TX (read = 0) or TLS_RX (read = 1) argument from the
 * current GnuTLS record state.  Returns 0, -EPROTO (a session kTLS cannot
 * take) or -EINVAL (no record state, unexpected key or IV sizes), with a
 * message in err.  The caller must explicit_bzero() *ci after use.
 */
int tlsh_ktls_fill(gnutls_session_t s, int read, union ktls_crypto_info *ci,
		   socklen_t *len, char *err, size_t errlen);

/* TCP_ULP "tls", TLS_TX, TLS_RX.  Returns 0, -EPROTO (a session kTLS
 * cannot take) or the -errno of the failed setsockopt(), with a message in
 * err. */
int tlsh_ktls_install(int fd, gnutls_session_t s, char *err, size_t errlen);

#endif
