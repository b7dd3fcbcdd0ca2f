/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The agent's default GnuTLS priorities: its own header so that the
 * bench's user-space floor (tests/bench/hs-floor.c) does the very
 * handshake the agent does.
 */
#ifndef TLSH_PRIORITIES_H
#define TLSH_PRIORITIES_H

/*
 * Key exchange groups, fastest first: the ClientHello carries a key share
 * for the first one, and P-384 there would cost a P-384 key generation and
 * ECDH on both ends (a third of a warm handshake's time, measured by make
 * bench). The FFDHE groups serve TLS 1.2 DHE and DHE-PSK.
 */
#define TLSH_DEFAULT_GROUPS                                                \
	"-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:"      \
	"+GROUP-X448:+GROUP-SECP521R1:+GROUP-FFDHE2048:+GROUP-FFDHE3072:"  \
	"+GROUP-FFDHE4096"

/*
 * Modifiers, appended to the system's default priority string (GnuTLS's
 * built-in one, or the one /etc/gnutls/config sets), so that the system's
 * crypto policy applies, as tlshd does: only ciphers the 6.1 kTLS can take
 * (AES-128/256-GCM, CHACHA20-POLY1305, AES-128-CCM), TLS 1.3 and (if
 * tls12 = yes) TLS 1.2 with forward-secret key exchanges only, no
 * compression, no session tickets.
 */
#define TLSH_DEFAULT_PRIORITIES                                            \
	"-COMP-ALL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:"                   \
	"-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:"        \
	"+AES-128-CCM:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:+DHE-RSA:"           \
	TLSH_DEFAULT_GROUPS ":%NO_TICKETS"

#endif /* TLSH_PRIORITIES_H */
