/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fault injection for the guest tests of how the kernel copes with an
 * agent that dies (tests/cases/025-tlsh-faults.sh).
 *
 * Only tlsh-helper-testing acts on it: the same program, built with
 * fault.c compiled with TLSH_TESTING. It kills itself with SIGKILL at the
 * point named by the environment variable TLSH_HELPER_FAULT:
 *
 *   before-bind     -k mode, after assuming authority over the key and
 *                   before binding the AF_TLSH listener (the agent)
 *   mid-handshake   after the server's ServerHello has been received (the
 *                   handshake's process: the accept loop logs its death)
 *   after-tx        after TLS_TX has been set and before TLS_RX (the
 *                   handshake's process)
 *   after-ktls      after both directions have their keys, before the
 *                   status is reported (the handshake's process)
 *
 * In tlsh-helper (what "make install" installs) both functions do
 * nothing and the environment is not looked at.
 */
#ifndef TLSH_FAULT_H
#define TLSH_FAULT_H

#include <gnutls/gnutls.h>

enum tlsh_fault_point {
	FAULT_BEFORE_BIND,
	FAULT_MID_HANDSHAKE,
	FAULT_AFTER_TX,
	FAULT_AFTER_KTLS,
};

/* Dies here if TLSH_HELPER_FAULT names point p */
void tlsh_fault_point(enum tlsh_fault_point p);
/* Arms the mid-handshake point on a new session */
void tlsh_fault_session(gnutls_session_t s);

#endif
