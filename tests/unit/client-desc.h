/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The description the agent gives the key that names a verified client,
 * computed here apart from keyring.c: "tlsh:client:" and the hex SHA-256
 * of the DER of the certificate's issuer name followed by its subject
 * name (the test certificates all have a subject).
 */
#ifndef TLSH_CLIENT_DESC_H
#define TLSH_CLIENT_DESC_H

#include <stdio.h>
#include <string.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>

#include "keyring.h"

static void want_client_desc(const gnutls_datum_t *der,
			     char want[TLSH_CLIENT_KEY_DESC])
{
	gnutls_datum_t issuer = { NULL, 0 }, subject = { NULL, 0 };
	size_t n = strlen(TLSH_CLIENT_KEY_PREFIX);
	unsigned char sum[32] = { 0 };
	gnutls_x509_crt_t crt;
	gnutls_hash_hd_t h;

	gnutls_x509_crt_init(&crt);
	gnutls_x509_crt_import(crt, der, GNUTLS_X509_FMT_DER);
	gnutls_x509_crt_get_raw_issuer_dn(crt, &issuer);
	gnutls_x509_crt_get_raw_dn(crt, &subject);
	gnutls_hash_init(&h, GNUTLS_DIG_SHA256);
	gnutls_hash(h, issuer.data, issuer.size);
	gnutls_hash(h, subject.data, subject.size);
	gnutls_hash_deinit(h, sum);
	gnutls_free(issuer.data);
	gnutls_free(subject.data);
	gnutls_x509_crt_deinit(crt);
	memcpy(want, TLSH_CLIENT_KEY_PREFIX, n);
	for (size_t i = 0; i < sizeof(sum); i++)
		snprintf(want + n + 2 * i, 3, "%02x", sum[i]);
}

#endif
