// SPDX-License-Identifier: GPL-2.0-only
/*
 * cert-id [FILE]: the identity under which the kernel names an
 * xprtsec=mtls NFS client presenting the certificate in FILE (or on
 * stdin): 16 hex digits, the first 8 bytes of the SHA-256 of the DER of
 * the certificate's issuer name followed by that of its subject name;
 * when its subject is empty, followed by the value of its
 * subjectAltName extension too; of the whole certificate's DER when it
 * has neither. FILE is
 * what a certificate key holds: PEM (the first certificate counts) or
 * the DER of one certificate.
 *
 * The cases compare it with the owner strings knfsd shows; computed here
 * with GnuTLS's certificate parser, independently of the kernel's.
 * Exit status 0, 1 if FILE holds no certificate, 2 on a usage or file
 * error.
 */
#define _GNU_SOURCE
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INPUT (1 << 20)

int main(int argc, char **argv)
{
	static unsigned char buf[MAX_INPUT];
	unsigned char digest[32], *in;
	gnutls_datum_t d, issuer, subject, der = { NULL, 0 }, san = { NULL, 0 };
	unsigned int critical;
	gnutls_x509_crt_t crt;
	gnutls_hash_hd_t h;
	FILE *f = stdin;
	size_t len;
	int ret, i;

	if (argc > 2) {
		fprintf(stderr, "usage: cert-id [FILE]\n");
		return 2;
	}
	if (argc == 2 && !(f = fopen(argv[1], "rb"))) {
		perror(argv[1]);
		return 2;
	}
	len = fread(buf, 1, sizeof(buf), f);
	ret = ferror(f) || len == sizeof(buf);
	if (f != stdin)
		fclose(f);
	if (ret) {
		fprintf(stderr, "cert-id: cannot read the input, or it is over 1 MiB\n");
		return 2;
	}
	d.data = buf;
	d.size = len;
	in = memmem(buf, len, "-----BEGIN ", 11);
	if (gnutls_x509_crt_init(&crt) < 0)
		return 2;
	ret = gnutls_x509_crt_import(crt, &d, in ? GNUTLS_X509_FMT_PEM :
						 GNUTLS_X509_FMT_DER);
	if (ret < 0 ||
	    gnutls_x509_crt_get_raw_issuer_dn(crt, &issuer) < 0 ||
	    gnutls_x509_crt_get_raw_dn(crt, &subject) < 0) {
		fprintf(stderr, "cert-id: no X.509 certificate: %s\n",
			gnutls_strerror(ret));
		return 1;
	}
	if (gnutls_hash_init(&h, GNUTLS_DIG_SHA256) < 0)
		return 2;
	/* the subjectAltName is read only behind an empty subject */
	if (subject.size > 2 ||
	    (gnutls_x509_crt_get_extension_by_oid2(crt, GNUTLS_X509EXT_OID_SAN,
						   0, &san, &critical) >= 0 &&
	     san.size)) {
		gnutls_hash(h, issuer.data, issuer.size);
		gnutls_hash(h, subject.data, subject.size);
		if (san.size)
			gnutls_hash(h, san.data, san.size);
	} else {
		if (gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_DER, &der) < 0)
			return 2;
		gnutls_hash(h, der.data, der.size);
	}
	gnutls_hash_deinit(h, digest);
	for (i = 0; i < 8; i++)
		printf("%02x", digest[i]);
	printf("\n");
	gnutls_free(der.data);
	gnutls_free(san.data);
	gnutls_free(issuer.data);
	gnutls_free(subject.data);
	gnutls_x509_crt_deinit(crt);
	return 0;
}
