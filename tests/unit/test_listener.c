// SPDX-License-Identifier: GPL-2.0
/*
 * The accept loop of listener.c and the handshake processes of worker.c,
 * driven with a loopback TCP listener in place of the AF_TLSH one
 * (tlsh_listener_run() only accepts and hands fds to the handler).  The
 * loop runs in an "agent" process forked from the test, single-threaded
 * as the helper's; the handler, a fake handshake, runs in a process per
 * connection.  A stalled peer does not delay the others; many handshakes
 * run at once, at most LISTENER_MAX_INFLIGHT; one handshake's memory is
 * not another's; one that crashes ends only itself and is logged; the
 * idle timer counts from the last finished handshake and never runs while
 * one is in flight; SIGTERM stops accepting and waits for the handshakes
 * in flight; killing the agent kills its handshakes (PR_SET_PDEATHSIG).
 * Also the netns key descriptions (util.c's parsers: test_util.c).
 */
#include "listener.h"
#include "log.h"
#include "tap.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define HANDLER_WAIT_MS 1500

/* Shared by the test and every handshake process (MAP_SHARED) */
static struct shared {
	atomic_int active, max_active;
} *sh;

/* How long a handler waits for its peer's byte (set before an agent is
 * started; the handshake processes get the agent's copy) */
static int handler_wait_ms = HANDLER_WAIT_MS;

/* Written by a 'p' handshake in its own memory */
static char secret[32];

/*
 * A fake handshake: wait for one byte and answer it.
 *   'x'  echo after 100 ms of "work"
 *   'y'  echo after 300 ms
 *   'p'  answer '1' if this process sees another handshake's secret, '0'
 *        if not; then leave a secret of its own
 *   's'  crash (SIGSEGV)
 *   'e'  exit with status 3
 * Runs in its own process: only write(2) and the like, no stdio.
 */
static void handler(int fd, void *arg)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int n;
	char c;

	(void)arg;
	n = atomic_fetch_add(&sh->active, 1) + 1;
	for (int m = atomic_load(&sh->max_active); n > m &&
	     !atomic_compare_exchange_weak(&sh->max_active, &m, n);)
		;
	if (poll(&pfd, 1, handler_wait_ms) == 1 && read(fd, &c, 1) == 1) {
		switch (c) {
		case 's':
			raise(SIGSEGV);
			break;
		case 'e':
			_exit(3);
		case 'p':
			c = secret[0] ? '1' : '0';
			memcpy(secret, "a handshake's key", 18);
			break;
		default:
			usleep((c == 'y' ? 300 : 100) * 1000);
			break;
		}
		if (write(fd, &c, 1) != 1) {
			/* the test sees no answer */
		}
	}
	atomic_fetch_sub(&sh->active, 1);
	close(fd);
}

static int tcp_listener(struct sockaddr_in *sa)
{
	socklen_t len = sizeof(*sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)sa, sizeof(*sa)) < 0 ||
	    listen(fd, 256) < 0 || getsockname(fd, (struct sockaddr *)sa, &len) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int dial(const struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd >= 0 && connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Send byte c, wait for the answer; returns it, 0 if the connection
 * closed, -1 on a timeout or an error. */
static int ask(int fd, char c, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (fd < 0 || write(fd, &c, 1) != 1 || poll(&pfd, 1, timeout_ms) != 1)
		return -1;
	n = read(fd, &c, 1);
	return n == 1 ? (unsigned char)c : n == 0 || errno == ECONNRESET ? 0 : -1;
}

/* Wait until n handlers run (at most timeout_ms) */
static int wait_active(int n, int timeout_ms)
{
	uint64_t end = tlsh_now_ms() + (uint64_t)timeout_ms;

	while (atomic_load(&sh->active) != n) {
		if (tlsh_now_ms() >= end)
			return -1;
		usleep(5 * 1000);
	}
	return 0;
}

struct agent {
	struct sockaddr_in sa;		/* where it listens */
	pid_t pid;
	int log;			/* its standard error */
	int status;			/* its wait status, once it ended */
	uint64_t ended;			/* tlsh_now_ms() when it was reaped */
};

/*
 * Fork an agent: tlsh_listener_run() on a fresh loopback listener, with
 * the helper's protect_secrets() (no core file), standard error to a
 * temporary file.  The test keeps no copy of the listener.
 */
static int agent_start(struct agent *a, unsigned idle, int wait_ms)
{
	char path[] = "/tmp/tlsh-test-listener.XXXXXX";
	int lfd;

	memset(a, 0, sizeof(*a));
	atomic_store(&sh->active, 0);
	atomic_store(&sh->max_active, 0);
	handler_wait_ms = wait_ms;
	a->log = mkstemp(path);
	if (a->log >= 0)
		unlink(path);
	lfd = tcp_listener(&a->sa);
	if (a->log < 0 || lfd < 0)
		return -1;
	fflush(stdout);
	a->pid = fork();
	if (a->pid == 0) {
		const struct rlimit none = { 0, 0 };

		setrlimit(RLIMIT_CORE, &none);
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
		dup2(a->log, STDERR_FILENO);
		_exit(tlsh_listener_run(lfd, idle, handler, NULL) < 0 ? 1 : 0);
	}
	close(lfd);
	return a->pid < 0 ? -1 : 0;
}

/* Wait for the agent to end */
static void agent_wait(struct agent *a)
{
	if (a->pid > 0 && waitpid(a->pid, &a->status, 0) == a->pid)
		a->ended = tlsh_now_ms();
	else
		a->status = -1;
	a->pid = 0;
}

/* Whether the agent exited 0 */
static int agent_ok(const struct agent *a)
{
	return a->status != -1 && WIFEXITED(a->status) && WEXITSTATUS(a->status) == 0;
}

/* How many lines of the agent's log contain what */
static int log_count(const struct agent *a, const char *what)
{
	char buf[16384];
	ssize_t n = pread(a->log, buf, sizeof(buf) - 1, 0);
	int count = 0;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	for (const char *p = buf; (p = strstr(p, what)); p++)
		count++;
	return count;
}

static void agent_log_diag(const struct agent *a)
{
	char buf[4096];
	ssize_t n = pread(a->log, buf, sizeof(buf) - 1, 0);

	if (n > 0) {
		buf[n] = '\0';
		DIAG("agent's log: %s", buf);
	}
}

static void test_loop(void)
{
	struct agent a;
	int stalled, fast, many[40], ok = 0, p1, p2, late;
	long ms;
	uint64_t t_stalled, t0;

	CHECK(agent_start(&a, 1, HANDLER_WAIT_MS) == 0,
	      "an agent process accepts on a loopback listener standing in for AF_TLSH");
	if (a.pid <= 0)
		return;

	stalled = dial(&a.sa);		/* never sends: its handler waits 1.5 s */
	t_stalled = tlsh_now_ms();
	usleep(50 * 1000);
	fast = dial(&a.sa);
	t0 = tlsh_now_ms();
	ok = ask(fast, 'x', 1400) == 'x';
	ms = (long)(tlsh_now_ms() - t0);
	CHECK(ok && ms < 1000, "a stalled peer does not delay another handshake (%ld ms)", ms);
	close(fast);

	/* all 40 at once: each handler takes 300 ms after its byte */
	ok = 0;
	for (size_t i = 0; i < 40; i++)
		many[i] = dial(&a.sa);
	for (size_t i = 0; i < 40; i++)
		if (many[i] < 0 || write(many[i], "y", 1) != 1)
			DIAG("client %zu: %s", i, strerror(errno));
	for (size_t i = 0; i < 40; i++) {
		struct pollfd pfd = { .fd = many[i], .events = POLLIN };
		char c;

		if (many[i] >= 0 && poll(&pfd, 1, 4000) == 1 &&
		    read(many[i], &c, 1) == 1 && c == 'y')
			ok++;
		close(many[i]);
	}
	CHECK(ok == 40 && atomic_load(&sh->max_active) >= 20,
	      "40 handshakes at once all complete, %d ran concurrently",
	      atomic_load(&sh->max_active));

	/* with threads, the second would see the first one's secret */
	p1 = dial(&a.sa);
	p2 = dial(&a.sa);
	CHECK(ask(p1, 'p', 2000) == '0' && ask(p2, 'p', 2000) == '0',
	      "a handshake's memory is its own: another handshake does not see what it wrote");
	close(p1);
	close(p2);

	agent_wait(&a);
	close(stalled);
	/* the stalled handler ends at t_stalled + 1.5 s; idle 1 s after that */
	ms = (long)(a.ended - t_stalled);
	CHECK(agent_ok(&a) && ms >= HANDLER_WAIT_MS + 1000 - 100 &&
	      ms < HANDLER_WAIT_MS + 1000 + 800,
	      "idle exit 1 s after the last handshake finished, not while one was in flight (%ld ms)",
	      ms);
	late = dial(&a.sa);
	CHECK(late < 0 && errno == ECONNREFUSED,
	      "the listener is closed on exit: nothing is left listening");
	if (late >= 0)
		close(late);
	if (log_count(&a, "handshake process"))
		agent_log_diag(&a);
	close(a.log);
}

/* One crashes, one exits non-zero: the others go on, each logged once */
static void test_crash(void)
{
	struct agent a;
	int other, crash, fail, r;

	if (agent_start(&a, 1, HANDLER_WAIT_MS) < 0) {
		CHECK(0, "an agent for the crash test: %s", strerror(errno));
		return;
	}
	other = dial(&a.sa);
	crash = dial(&a.sa);
	fail = dial(&a.sa);
	wait_active(3, 3000);
	r = ask(crash, 's', 2000);
	CHECK(r == 0, "a handshake process that crashes: its peer sees the connection close");
	CHECK(ask(fail, 'e', 2000) == 0 && ask(other, 'x', 2000) == 'x',
	      "... and another handshake in flight completes");
	close(other);
	close(crash);
	close(fail);
	agent_wait(&a);
	CHECK(agent_ok(&a), "... and the agent goes on (it exited 0 when idle)");
	CHECK(log_count(&a, " killed by signal 11 (Segmentation fault): its handshake failed, the others go on") == 1 &&
	      log_count(&a, "handshake process ") == 2 &&
	      log_count(&a, " exited with status 3: its handshake failed") == 1,
	      "the agent logs one line for each: 'handshake process PID killed by signal 11 (...)', '... exited with status 3'");
	if (log_count(&a, "handshake process ") != 2)
		agent_log_diag(&a);
	close(a.log);
}

/* SIGTERM: no new handshakes; the one in flight completes, then the exit */
static void test_sigterm(void)
{
	struct agent a;
	int inflight, late, r, waiting;

	if (agent_start(&a, 0, HANDLER_WAIT_MS) < 0) {
		CHECK(0, "an agent for the SIGTERM test: %s", strerror(errno));
		return;
	}
	inflight = dial(&a.sa);
	wait_active(1, 3000);
	kill(a.pid, SIGTERM);
	usleep(200 * 1000);
	late = dial(&a.sa);
	CHECK(late < 0 && errno == ECONNREFUSED,
	      "SIGTERM: the listener is closed at once (no handshake process holds it)");
	if (late >= 0)
		close(late);
	waiting = waitpid(a.pid, &a.status, WNOHANG) == 0;
	r = ask(inflight, 'y', 2000);
	agent_wait(&a);
	CHECK(waiting && r == 'y' && agent_ok(&a),
	      "... the agent waits for the handshake in flight, which completes, then exits 0");
	close(inflight);
	close(a.log);
}

/* Killing the agent kills its handshake processes (PR_SET_PDEATHSIG) */
static void test_death(void)
{
	struct agent a;
	struct pollfd pfd;
	int c, r = -1;
	char byte;
	long ms;
	uint64_t t0;

	if (agent_start(&a, 0, 10000) < 0) {
		CHECK(0, "an agent for the death test: %s", strerror(errno));
		return;
	}
	c = dial(&a.sa);		/* its handler would wait 10 s */
	r = wait_active(1, 3000);
	kill(a.pid, SIGKILL);
	agent_wait(&a);
	t0 = tlsh_now_ms();
	pfd.fd = c;
	pfd.events = POLLIN;
	if (r == 0 && poll(&pfd, 1, 3000) == 1)
		r = (int)read(c, &byte, 1);
	else
		r = -2;
	ms = (long)(tlsh_now_ms() - t0);
	CHECK((r == 0 || (r < 0 && errno == ECONNRESET)) && ms < 1000,
	      "killing the agent ends its handshakes in flight at once (%ld ms)", ms);
	close(c);
	close(a.log);
}

/* At most LISTENER_MAX_INFLIGHT at once; the next waits for one to end */
static void test_cap(void)
{
	struct agent a;
	struct pollfd pfd;
	int held[LISTENER_MAX_INFLIGHT], next, n = 0, waited, answered, peak;
	char c = 'x';

	/* the handlers of the held connections wait 3 s for a byte */
	if (agent_start(&a, 1, 3000) < 0) {
		CHECK(0, "an agent for the cap test: %s", strerror(errno));
		return;
	}
	for (int i = 0; i < LISTENER_MAX_INFLIGHT; i++) {
		held[i] = dial(&a.sa);
		n += held[i] >= 0;
	}
	wait_active(LISTENER_MAX_INFLIGHT, 10000);
	next = dial(&a.sa);
	pfd.fd = next;
	pfd.events = POLLIN;
	/* no answer while the others run, one once the first ends */
	waited = next >= 0 && write(next, &c, 1) == 1 && poll(&pfd, 1, 500) == 0;
	answered = poll(&pfd, 1, 8000) == 1 && read(next, &c, 1) == 1 && c == 'x';
	peak = atomic_load(&sh->max_active);
	CHECK(n == LISTENER_MAX_INFLIGHT && waited && answered &&
	      peak == LISTENER_MAX_INFLIGHT,
	      "at most %d handshake processes at once; the next is served when one ends (%d ran at once)",
	      LISTENER_MAX_INFLIGHT, peak);
	for (int i = 0; i < LISTENER_MAX_INFLIGHT; i++)
		if (held[i] >= 0)
			close(held[i]);
	close(next);
	agent_wait(&a);
	close(a.log);
}

static void test_parsers(void)
{
	static const char *const bad_desc[] = {
		"netns:0:1", "netns:x:1", "netns:1:", "netns:01:1", "netns:1:2:3",
		"net:1:2", "netns::1", "netns:1:-1" };
	static const char *const large_desc[] = {
		"netns:4294967296:1", "netns:1:18446744073709551616" };
	uint32_t inum;
	uint64_t seq;
	int all;

	CHECK(tlsh_netns_parse_description("netns:4026531992:7", &inum, &seq) == 0 &&
	      inum == 4026531992u && seq == 7 &&
	      tlsh_netns_parse_description("netns:1:18446744073709551615", &inum, &seq) == 0 &&
	      seq == UINT64_MAX,
	      "tlsh key descriptions netns:<inum>:<seq> are parsed");
	all = 1;
	for (size_t i = 0; i < sizeof(bad_desc) / sizeof(*bad_desc); i++)
		if (tlsh_netns_parse_description(bad_desc[i], &inum, &seq) != -EINVAL) {
			DIAG("description '%s' not refused with -EINVAL", bad_desc[i]);
			all = 0;
		}
	CHECK(all, "malformed key descriptions: -EINVAL");
	all = 1;
	for (size_t i = 0; i < sizeof(large_desc) / sizeof(*large_desc); i++)
		if (tlsh_netns_parse_description(large_desc[i], &inum, &seq) != -ERANGE) {
			DIAG("description '%s' not refused with -ERANGE", large_desc[i]);
			all = 0;
		}
	CHECK(all, "key descriptions with numbers too large: -ERANGE");
	CHECK(tlsh_netns_self() != 0, "the caller's network namespace inode is found");
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	tlsh_log_init("test_listener", 0, 1);
	tlsh_log_set_level(TLSH_LOG_WARNING);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		CHECK(0, "shared memory for the handlers: %s", strerror(errno));
		return tap_done();
	}
	test_parsers();
	test_loop();
	test_crash();
	test_sigterm();
	test_death();
	test_cap();
	return tap_done();
}
