// SPDX-License-Identifier: GPL-2.0
/*
 * crypto-loop: the cost of a TLS 1.3 cipher alone, as kTLS and as OpenSSL
 * (stunnel's library) pay it, without NFS.  A child process sends MIB MiB
 * of 16 KiB records to its parent over loopback TCP; the parent reads them.
 *
 *   ktls     the kernel encrypts (TLS_TX on the sender) and decrypts
 *            (TLS_RX on the receiver); the processes write and read
 *            plaintext
 *   openssl  the processes encrypt and decrypt each record with OpenSSL's
 *            EVP AEAD (one context each, a new nonce per record) and
 *            move ciphertext plus tag
 *
 * Prints "crypto-loop MODE CIPHER MIB cpu_ms_per_mib wall_ms_per_mib":
 * user and system time of both processes per MiB, and wall time per MiB.
 * The keys are fixed: this measures speed, it protects nothing.
 *
 * Usage: crypto-loop ktls|openssl AES-128-GCM|AES-256-GCM|CHACHA20-POLY1305 MIB
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/tls.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SOL_TLS
#define SOL_TLS 282
#endif
#ifndef TCP_ULP
#define TCP_ULP 31
#endif

#define REC 16384	/* plaintext bytes per record */
#define TAG 16

static const unsigned char key[32] = "tlsh crypto-loop key, not secret";
static const unsigned char iv[12] = "fixed nonce";

struct cipher {
	const char *name;
	unsigned short ktls_type;
	const EVP_CIPHER *(*evp)(void);
};

static const struct cipher ciphers[] = {
	{ "AES-128-GCM", TLS_CIPHER_AES_GCM_128, EVP_aes_128_gcm },
	{ "AES-256-GCM", TLS_CIPHER_AES_GCM_256, EVP_aes_256_gcm },
	{ "CHACHA20-POLY1305", TLS_CIPHER_CHACHA20_POLY1305, EVP_chacha20_poly1305 },
};

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* kTLS in direction dir (TLS_TX or TLS_RX) with the fixed key */
static void set_ktls(int fd, const struct cipher *c, int dir)
{
	union {
		struct tls12_crypto_info_aes_gcm_128 a128;
		struct tls12_crypto_info_aes_gcm_256 a256;
		struct tls12_crypto_info_chacha20_poly1305 chacha;
	} ci;
	socklen_t len;

	memset(&ci, 0, sizeof(ci));
	ci.a128.info.version = TLS_1_3_VERSION;
	ci.a128.info.cipher_type = c->ktls_type;
	switch (c->ktls_type) {
	case TLS_CIPHER_AES_GCM_128:
		memcpy(ci.a128.key, key, sizeof(ci.a128.key));
		memcpy(ci.a128.salt, iv, sizeof(ci.a128.salt));
		memcpy(ci.a128.iv, iv + 4, sizeof(ci.a128.iv));
		len = sizeof(ci.a128);
		break;
	case TLS_CIPHER_AES_GCM_256:
		memcpy(ci.a256.key, key, sizeof(ci.a256.key));
		memcpy(ci.a256.salt, iv, sizeof(ci.a256.salt));
		memcpy(ci.a256.iv, iv + 4, sizeof(ci.a256.iv));
		len = sizeof(ci.a256);
		break;
	default:
		memcpy(ci.chacha.key, key, sizeof(ci.chacha.key));
		memcpy(ci.chacha.iv, iv, sizeof(ci.chacha.iv));
		len = sizeof(ci.chacha);
		break;
	}
	if (setsockopt(fd, SOL_TCP, TCP_ULP, "tls", sizeof("tls")))
		die("TCP_ULP tls");
	if (setsockopt(fd, SOL_TLS, dir, &ci, len))
		die("kTLS keys");
}

static void write_all(int fd, const unsigned char *b, size_t n)
{
	while (n) {
		ssize_t w = write(fd, b, n);

		if (w <= 0)
			die("write");
		b += w;
		n -= (size_t)w;
	}
}

static void read_all(int fd, unsigned char *b, size_t n)
{
	while (n) {
		ssize_t r = read(fd, b, n);

		if (r <= 0)
			die("read");
		b += r;
		n -= (size_t)r;
	}
}

/* the record's nonce: the fixed one with the record number in its tail */
static void nonce(unsigned char *n, long rec)
{
	memcpy(n, iv, sizeof(iv));
	for (int i = 0; i < 8; i++)
		n[11 - i] ^= (unsigned char)(rec >> (8 * i));
}

static void send_records(int fd, const struct cipher *c, int ktls, long recs)
{
	static unsigned char pt[REC], ct[REC + TAG];
	unsigned char n[12];
	EVP_CIPHER_CTX *x;
	int l;

	memset(pt, 'x', sizeof(pt));
	if (ktls) {
		set_ktls(fd, c, TLS_TX);
		for (long i = 0; i < recs; i++)
			write_all(fd, pt, REC);
		return;
	}
	x = EVP_CIPHER_CTX_new();
	if (!x || !EVP_EncryptInit_ex(x, c->evp(), NULL, key, NULL))
		die("EVP_EncryptInit_ex");
	for (long i = 0; i < recs; i++) {
		nonce(n, i);
		if (!EVP_EncryptInit_ex(x, NULL, NULL, NULL, n) ||
		    !EVP_EncryptUpdate(x, ct, &l, pt, REC) ||
		    !EVP_EncryptFinal_ex(x, ct + l, &l) ||
		    !EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_GET_TAG, TAG, ct + REC))
			die("encrypt");
		write_all(fd, ct, sizeof(ct));
	}
	EVP_CIPHER_CTX_free(x);
}

static void receive_records(int fd, const struct cipher *c, int ktls, long recs)
{
	static unsigned char pt[REC], ct[REC + TAG];
	unsigned char n[12];
	EVP_CIPHER_CTX *x;
	int l;

	if (ktls) {
		set_ktls(fd, c, TLS_RX);
		for (long i = 0; i < recs; i++)
			read_all(fd, pt, REC);
		return;
	}
	x = EVP_CIPHER_CTX_new();
	if (!x || !EVP_DecryptInit_ex(x, c->evp(), NULL, key, NULL))
		die("EVP_DecryptInit_ex");
	for (long i = 0; i < recs; i++) {
		read_all(fd, ct, sizeof(ct));
		nonce(n, i);
		if (!EVP_DecryptInit_ex(x, NULL, NULL, NULL, n) ||
		    !EVP_DecryptUpdate(x, pt, &l, ct, REC) ||
		    !EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_SET_TAG, TAG, ct + REC) ||
		    EVP_DecryptFinal_ex(x, pt + l, &l) <= 0) {
			fprintf(stderr, "crypto-loop: record %ld does not decrypt\n", i);
			exit(1);
		}
	}
	EVP_CIPHER_CTX_free(x);
}

static double seconds(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	const struct cipher *c = NULL;
	struct timespec t0, t1;
	struct rusage self, kids;
	int ls, fd, ktls, status;
	long mib, recs;
	double cpu, wall;
	pid_t pid;

	if (argc != 4 || (strcmp(argv[1], "ktls") && strcmp(argv[1], "openssl")) ||
	    (mib = atol(argv[3])) <= 0) {
		fprintf(stderr, "usage: crypto-loop ktls|openssl CIPHER MIB\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(ciphers) / sizeof(ciphers[0]); i++)
		if (!strcmp(argv[2], ciphers[i].name))
			c = &ciphers[i];
	if (!c) {
		fprintf(stderr, "crypto-loop: unknown cipher %s\n", argv[2]);
		return 2;
	}
	ktls = !strcmp(argv[1], "ktls");
	recs = mib * 1024 * 1024 / REC;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 1) ||
	    getsockname(ls, (struct sockaddr *)&a, &alen))
		die("listen");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
			die("connect");
		send_records(fd, c, ktls, recs);
		close(fd);
		_exit(0);
	}
	fd = accept(ls, NULL, NULL);
	if (fd < 0)
		die("accept");
	receive_records(fd, c, ktls, recs);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	cpu = seconds(self.ru_utime) + seconds(self.ru_stime) +
	      seconds(kids.ru_utime) + seconds(kids.ru_stime);
	wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("crypto-loop %s %s %ld %.1f %.1f\n", argv[1], c->name, mib,
	       cpu * 1000 / (double)mib, wall * 1000 / (double)mib);
	return 0;
}
