// SPDX-License-Identifier: GPL-2.0
/*
 * tlsh-helper: user-space TLS handshake agent for the in-kernel TLS
 * handshake (AF_TLSH) API.  See tlsh-helper(8) and docs/interface.md.
 */
#include "accept.h"
#include "config.h"
#include "fault.h"
#include "connect.h"
#include "handshake.h"
#include "listener.h"
#include "log.h"
#include "request.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <keyutils.h>

#ifndef TLSH_VERSION
#define TLSH_VERSION "0.1"
#endif

#define SETUP_TIMEOUT	10	/* seconds, -k mode until the parent exits */
#define REJECT_TIMEOUT	5	/* seconds of negative caching */

enum { OPT_VERSION = 256, OPT_CONNECT, OPT_PEERNAME, OPT_PRIORITIES,
       OPT_CERT_FILE, OPT_KEY_FILE, OPT_PSK_FILE, OPT_PSK_IDENTITY, OPT_KTLS,
       OPT_SEND, OPT_ACCEPT, OPT_PSK, OPT_X509 };

/* --accept: how long to wait for the connection without -i */
#define ACCEPT_WAIT	60	/* seconds */

static const struct option long_options[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "connect", required_argument, NULL, OPT_CONNECT },
	{ "peername", required_argument, NULL, OPT_PEERNAME },
	{ "priorities", required_argument, NULL, OPT_PRIORITIES },
	{ "cert-file", required_argument, NULL, OPT_CERT_FILE },
	{ "key-file", required_argument, NULL, OPT_KEY_FILE },
	{ "psk-file", required_argument, NULL, OPT_PSK_FILE },
	{ "psk-identity", required_argument, NULL, OPT_PSK_IDENTITY },
	{ "ktls", no_argument, NULL, OPT_KTLS },
	{ "send", required_argument, NULL, OPT_SEND },
	{ "accept", required_argument, NULL, OPT_ACCEPT },
	{ "psk", no_argument, NULL, OPT_PSK },
	{ "x509", no_argument, NULL, OPT_X509 },
	{ NULL, 0, NULL, 0 }
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: tlsh-helper -k SERIAL [-c FILE] [-i SECONDS] [-v]\n"
		"       tlsh-helper -f [-c FILE] [-i SECONDS] [-v]\n"
		"       tlsh-helper --connect HOST:PORT [--peername NAME] [--priorities S]\n"
		"                   [--cert-file F --key-file F | --psk-file F [--psk-identity ID]]\n"
		"                   [--ktls] [--send STRING] [-c FILE] [-v]\n"
		"       tlsh-helper --accept [ADDR:]PORT [--priorities S]\n"
		"                   [--cert-file F --key-file F | --psk-file F | --psk] [--x509]\n"
		"                   [--ktls] [--send STRING] [-c FILE] [-i SECONDS] [-v]\n"
		"       tlsh-helper -h | --version\n"
		"\n"
		"  -k SERIAL   started by request-key(8) for tlsh key SERIAL\n"
		"  -f          foreground agent for the current network namespace\n"
		"  -c FILE     configuration file (default " TLSH_CONFIG_FILE ")\n"
		"  -i SECONDS  exit after SECONDS idle (0 = never)\n"
		"  -v          more logging (repeatable)\n"
		"  --connect   test a handshake over a plain TCP connection\n"
		"  --accept    test a server handshake on one accepted TCP connection\n");
}

static struct config cfg;
static volatile sig_atomic_t setup_key;

/* -k mode: a stuck setup must not hold up the kernel worker that waits
 * for request-key.  keyctl_reject() is a plain syscall wrapper. */
static void setup_alarm(int sig)
{
	(void)sig;
	if (setup_key)
		keyctl_reject((key_serial_t)setup_key, REJECT_TIMEOUT, ETIMEDOUT, 0);
	_exit(1);
}

/* Reject key with -err: the one place where a -errno of ours becomes the
 * positive errno the kernel gives those waiting for the key. */
static void reject_key(int32_t key, int err)
{
	if (keyctl_reject(key, REJECT_TIMEOUT, (unsigned)-err, 0) < 0 &&
	    keyctl_negate(key, REJECT_TIMEOUT, 0) < 0)
		log_err("cannot reject key %d: %s", key, strerror(errno));
}

/* The configuration and the GnuTLS set-up; 0 or -errno, logged. */
static int load_config(const char *path, int verbose)
{
	char err[PATH_MAX + 600];
	int ret;

	ret = tlsh_config_load(&cfg, path ? path : TLSH_CONFIG_FILE, path != NULL,
			       err, sizeof(err));
	if (ret < 0) {
		log_err("%s", err);
		return ret;
	}
	tlsh_log_set_level((enum tlsh_log_level)(cfg.log_level + verbose));
	ret = tlsh_hs_global_init(&cfg, err, sizeof(err));
	if (ret < 0)
		log_err("%s", err);
	return ret;
}

static void to_dev_null(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
}

/* Spawned by request-key: see "The upcall" in docs/interface.md. */
static int kernel_mode(int32_t key, const char *cfgpath, long idle, int verbose)
{
	char err[600], pidstr[16];
	uint32_t inum = 0;
	uint64_t seq = 0;
	int lfd, pipefd[2], n;
	pid_t pid;
	char go;

	tlsh_log_init("tlsh-helper", 1, 0);
	setup_key = key;
	signal(SIGALRM, setup_alarm);
	alarm(SETUP_TIMEOUT);

	if (keyctl_assume_authority(key) < 0) {
		int e = errno;

		log_err("key %d: cannot assume authority: %s", key, strerror(e));
		reject_key(key, -e);
		return 1;
	}
	/* bind() is the authoritative check; a key that is described but
	 * not as a tlsh key for a namespace is refused here already. */
	n = tlsh_netns_from_key(key, &inum, &seq, err, sizeof(err));
	if (n == -EINVAL) {
		log_err("%s", err);
		reject_key(key, n);
		return 1;
	}
	if (n)
		log_warn("%s", err);
	if (load_config(cfgpath, verbose) < 0) {
		reject_key(key, -EKEYREJECTED);
		return 1;
	}
	tlsh_fault_point(FAULT_BEFORE_BIND);
	lfd = tlsh_listener_open(key, err, sizeof(err));
	if (lfd < 0) {
		log_err("network namespace %u: %s", inum, err);
		reject_key(key, lfd);
		return 1;
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
		int e = errno;

		log_err("cannot start the agent: %s", strerror(e));
		reject_key(key, -e);
		return 1;
	}
	if (pid == 0) {
		/* The agent.  Waits until the key is instantiated. */
		close(pipefd[1]);
		alarm(0);
		signal(SIGALRM, SIG_DFL);
		setup_key = 0;
		if (read(pipefd[0], &go, 1) != 1)
			_exit(1);	/* the parent failed and has logged why */
		close(pipefd[0]);
		setsid();
		to_dev_null();
		keyctl_assume_authority(0);
		/* An anonymous session keyring of its own: nothing of
		 * request-key's.  Keys are possessed per handshake process
		 * only, in its thread keyring (request.c: load_keys()). */
		if (keyctl_join_session_keyring(NULL) < 0)
			log_warn("cannot set up the session keyring: %s",
				 strerror(errno));
		if (idle < 0)
			idle = (long)cfg.idle_timeout;
		log_info("serving network namespace %u (key %d), idle timeout %ld s",
			 inum, key, idle);
		return tlsh_listener_run(lfd, (unsigned)idle, tlsh_request_serve,
					 &cfg) < 0 ? 1 : 0;
	}
	close(pipefd[0]);
	close(lfd);
	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	if (keyctl_instantiate(key, pidstr, strlen(pidstr), 0) < 0) {
		int e = errno;

		log_err("key %d: cannot instantiate: %s", key, strerror(e));
		reject_key(key, -e);
		return 1;	/* the child sees EOF and exits */
	}
	keyctl_assume_authority(0);
	if (write(pipefd[1], "g", 1) != 1) {
		log_err("cannot start the agent: %s", strerror(errno));
		return 1;
	}
	return 0;
}

static int foreground_mode(const char *cfgpath, long idle, int verbose)
{
	char err[600];
	int lfd;

	tlsh_log_init("tlsh-helper", 1, 1);
	if (load_config(cfgpath, verbose) < 0)
		return 2;
	lfd = tlsh_listener_open(0, err, sizeof(err));
	if (lfd < 0) {
		log_err("%s", err);
		return 1;
	}
	if (idle > 0)
		log_info("serving network namespace %u, idle timeout %ld s",
			 tlsh_netns_self(), idle);
	else
		log_info("serving network namespace %u", tlsh_netns_self());
	return tlsh_listener_run(lfd, idle < 0 ? 0 : (unsigned)idle, tlsh_request_serve,
				 &cfg) < 0 ? 1 : 0;
}

/*
 * The agent holds private keys and PSKs as root: a crash leaves no core
 * file with them, and no process of another user (nor one of root's
 * without CAP_SYS_PTRACE) may attach to it or read its memory.
 */
static void protect_secrets(void)
{
	const struct rlimit none = { 0, 0 };

	if (setrlimit(RLIMIT_CORE, &none) < 0)
		log_warn("setrlimit(RLIMIT_CORE): %s", strerror(errno));
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		log_warn("prctl(PR_SET_DUMPABLE): %s", strerror(errno));
}

int main(int argc, char **argv)
{
	struct connect_opts co;
	const char *cfgpath = NULL;
	int32_t key = 0;
	long idle = -1;
	int opt, verbose = 0, foreground = 0, connect = 0, accept_mode = 0, cflags = 0;
	unsigned long v;

	/* Fds 0-2 may be closed under request-key: keep sockets off them. */
	do {
		opt = open("/dev/null", O_RDWR);
	} while (opt >= 0 && opt <= STDERR_FILENO);
	if (opt > STDERR_FILENO)
		close(opt);
	signal(SIGPIPE, SIG_IGN);
	tlsh_config_defaults(&cfg);
	memset(&co, 0, sizeof(co));
	tlsh_log_init("tlsh-helper", 0, 1);
	protect_secrets();

	while ((opt = getopt_long(argc, argv, "k:fc:i:vh", long_options, NULL)) != -1) {
		switch (opt) {
		case 'k':
			if (tlsh_parse_serial(optarg, &key) < 0) {
				log_err("-k: key serial must be a positive 32-bit decimal number");
				return 2;
			}
			break;
		case 'f':
			foreground = 1;
			break;
		case 'c':
			if (!*optarg || strlen(optarg) >= PATH_MAX) {
				log_err("-c: bad file name");
				return 2;
			}
			cfgpath = optarg;
			break;
		case 'i':
			if (tlsh_parse_uint(optarg, TLSH_MAX_IDLE, &v) < 0) {
				log_err("-i: expected seconds, 0..%d", TLSH_MAX_IDLE);
				return 2;
			}
			idle = (long)v;
			break;
		case 'v':
			verbose++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case OPT_VERSION:
			printf("tlsh-helper %s (GnuTLS %s)\n", TLSH_VERSION,
			       gnutls_check_version(NULL));
			return 0;
		case OPT_CONNECT:
			connect = 1;
			co.target = optarg;
			break;
		case OPT_PEERNAME:
			co.peername = optarg;
			cflags++;
			break;
		case OPT_PRIORITIES:
			if (!tlsh_valid_token(optarg, TLSH_MAX_PRIORITIES)) {
				log_err("--priorities: bad priority string");
				return 2;
			}
			co.priorities = optarg;
			cflags++;
			break;
		case OPT_CERT_FILE:
			co.cert_file = optarg;
			cflags++;
			break;
		case OPT_KEY_FILE:
			co.key_file = optarg;
			cflags++;
			break;
		case OPT_PSK_FILE:
			co.psk_file = optarg;
			cflags++;
			break;
		case OPT_PSK_IDENTITY:
			if (strlen(optarg) > TLSH_PSK_ID_MAX) {
				log_err("--psk-identity: too long");
				return 2;
			}
			co.psk_identity = optarg;
			cflags++;
			break;
		case OPT_KTLS:
			co.ktls = 1;
			cflags++;
			break;
		case OPT_SEND:
			co.send = optarg;
			cflags++;
			break;
		case OPT_ACCEPT:
			accept_mode = 1;
			co.target = optarg;
			break;
		case OPT_PSK:
			co.server_psk = 1;
			cflags++;
			break;
		case OPT_X509:
			co.server_x509 = 1;
			cflags++;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		log_err("unexpected argument '%s'", argv[optind]);
		return 2;
	}
	if ((key != 0) + foreground + connect + accept_mode != 1) {
		log_err("exactly one of -k SERIAL, -f, --connect or --accept is needed");
		usage(stderr);
		return 2;
	}
	if (cflags && !connect && !accept_mode) {
		log_err("--peername, --priorities, --cert-file, --key-file, --psk*, --x509, --ktls and --send go with --connect or --accept");
		return 2;
	}
	if (connect && co.server_psk) {
		log_err("--psk goes with --accept (--connect takes --psk-file)");
		return 2;
	}
	if (connect && co.server_x509) {
		log_err("--x509 goes with --accept");
		return 2;
	}
	if (accept_mode) {
		if (co.peername || co.psk_identity) {
			log_err("--peername and --psk-identity go with --connect");
			return 2;
		}
		if (!co.cert_file != !co.key_file) {
			log_err("--cert-file and --key-file go together");
			return 2;
		}
		if (co.psk_file && co.server_psk) {
			log_err("--psk-file and --psk exclude each other");
			return 2;
		}
		/* a certificate and PSKs: only as an x509 request */
		if (co.cert_file && (co.psk_file || co.server_psk) &&
		    !co.server_x509) {
			log_err("--cert-file/--key-file and --psk-file or --psk go together only with --x509");
			return 2;
		}
		if (load_config(cfgpath, verbose) < 0)
			return 2;
		opt = tlsh_accept_main(&co, &cfg, idle < 0 ? ACCEPT_WAIT : (unsigned)idle);
		tlsh_hs_global_deinit();
		return opt;
	}
	if (connect) {
		if (!co.cert_file != !co.key_file) {
			log_err("--cert-file and --key-file go together");
			return 2;
		}
		if (co.psk_file && co.cert_file) {
			log_err("--psk-file excludes --cert-file/--key-file");
			return 2;
		}
		if (co.psk_identity && !co.psk_file) {
			log_err("--psk-identity needs --psk-file");
			return 2;
		}
		if (idle >= 0) {
			log_err("-i does not apply to --connect");
			return 2;
		}
		if (load_config(cfgpath, verbose) < 0)
			return 2;
		opt = tlsh_connect_main(&co, &cfg);
		tlsh_hs_global_deinit();
		return opt;
	}
	if (foreground)
		return foreground_mode(cfgpath, idle, verbose);
	return kernel_mode(key, cfgpath, idle, verbose);
}
