/* SPDX-License-Identifier: GPL-2.0 */
/*
 * AF_TLSH user-space API, as specified in docs/interface.md.
 *
 * The build host's kernel headers do not have these definitions yet, so
 * they are spelled out here.  Every constant is guarded so that, once the
 * series' include/uapi/linux/tls.h and include/linux/socket.h are
 * installed, their definitions win; the values below must stay identical
 * to docs/interface.md.
 */
#ifndef TLSH_UAPI_H
#define TLSH_UAPI_H

#include <stddef.h>
#include <sys/socket.h>
#include <linux/types.h>
#include <linux/socket.h>
/* The series adds the TLSH_* options, enum tlsh_hs_type and struct
 * sockaddr_tlsh here: include it first so that its definitions win. */
#include <linux/tls.h>

#ifndef AF_TLSH
#define AF_TLSH		46
#endif
#ifndef PF_TLSH
#define PF_TLSH		AF_TLSH
#endif
#ifndef SOL_TLSH
#define SOL_TLSH	288
#endif

/*
 * struct sockaddr_tlsh and enum tlsh_hs_type come with the TLSH_* option
 * names in the series' uapi header: if those are defined, so are they.
 */
#ifdef TLSH_PRIORITIES
#define TLSH_HAVE_KERNEL_UAPI 1
#else
struct sockaddr_tlsh {
	__kernel_sa_family_t	tlsh_family;	/* AF_TLSH */
	__u16			tlsh_reserved;	/* must be 0 */
	__s32			tlsh_key;	/* key serial, or 0 */
	__u8			tlsh_zero[8];	/* must be 0 */
};
#endif

_Static_assert(sizeof(struct sockaddr_tlsh) == 16, "sockaddr_tlsh size");
_Static_assert(offsetof(struct sockaddr_tlsh, tlsh_key) == 4,
	       "sockaddr_tlsh layout");

/* getsockopt(SOL_TLSH) on an accepted handshake socket */
#ifndef TLSH_PRIORITIES
#define TLSH_PRIORITIES		1	/* string, length 0: agent default */
#endif
#ifndef TLSH_PEERID
#define TLSH_PEERID		2	/* key_serial_t: private key or PSK */
#endif
#ifndef TLSH_HANDSHAKE_TYPE
#define TLSH_HANDSHAKE_TYPE	3	/* int: TLSH_TYPE_* */
#endif
#ifndef TLSH_X509_CERTIFICATE
#define TLSH_X509_CERTIFICATE	4	/* key_serial_t: client cert or 0 */
#endif
#ifndef TLSH_PEERNAME
#define TLSH_PEERNAME		5	/* string: server name, may be empty */
#endif
#ifndef TLSH_TIMEOUT_MS
#define TLSH_TIMEOUT_MS		6	/* __u32: ms left before the kernel gives up */
#endif
#ifndef TLSH_KEYRING
#define TLSH_KEYRING		8	/* key_serial_t: keyring holding the keys, or 0 */
#endif
#ifndef TLSH_AUTH_OPTIONAL
#define TLSH_AUTH_OPTIONAL	9	/* int: 1 = an unverifiable peer is accepted */
#endif
/* setsockopt(SOL_TLSH) */
#ifndef TLSH_STATUS
#define TLSH_STATUS		7	/* int: positive errno, 0 = no error */
#endif
#ifndef TLSH_UNAUTHENTICATED
#define TLSH_UNAUTHENTICATED	10	/* int 1: the peer was not authenticated */
#endif

/* enum tlsh_hs_type in the series' header, which also has TLSH_STATUS */
#ifndef TLSH_HAVE_KERNEL_UAPI
#define TLSH_TYPE_CLIENTHELLO_X509	0
#define TLSH_TYPE_CLIENTHELLO_PSK	1
#endif

#endif /* TLSH_UAPI_H */
