// SPDX-License-Identifier: GPL-2.0
/* Fault injection for the guest tests: see fault.h. */
#include "fault.h"

#ifdef TLSH_TESTING
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static const char *const fault_names[] = {
	[FAULT_BEFORE_BIND] = "before-bind",
	[FAULT_MID_HANDSHAKE] = "mid-handshake",
	[FAULT_AFTER_TX] = "after-tx",
	[FAULT_AFTER_KTLS] = "after-ktls",
};

static bool fault_armed(enum tlsh_fault_point p)
{
	const char *v = getenv("TLSH_HELPER_FAULT");

	return v && strcmp(v, fault_names[p]) == 0;
}

void tlsh_fault_point(enum tlsh_fault_point p)
{
	if (!fault_armed(p))
		return;
	log_warn("TLSH_HELPER_FAULT=%s: killing myself", fault_names[p]);
	raise(SIGKILL);
}

static int fault_hook(gnutls_session_t s, unsigned int htype, unsigned when,
		      unsigned int incoming, const gnutls_datum_t *msg)
{
	(void)s; (void)htype; (void)when; (void)incoming; (void)msg;
	tlsh_fault_point(FAULT_MID_HANDSHAKE);
	return 0;
}

void tlsh_fault_session(gnutls_session_t s)
{
	if (fault_armed(FAULT_MID_HANDSHAKE))
		gnutls_handshake_set_hook_function(s,
			GNUTLS_HANDSHAKE_SERVER_HELLO, GNUTLS_HOOK_POST,
			fault_hook);
}
#else
void tlsh_fault_point(enum tlsh_fault_point p)
{
	(void)p;
}

void tlsh_fault_session(gnutls_session_t s)
{
	(void)s;
}
#endif
