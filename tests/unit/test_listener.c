// SPDX-License-Identifier: GPL-2.0
/*
 * The accept loop of listener.c, driven with a loopback TCP listener in
 * place of the AF_TLSH one (tlsh_listener_run() only accepts and hands fds to
 * the handler): a stalled peer does not delay the others, many
 * handshakes run at once, and the idle timer counts from the last
 * finished handshake and never runs while one is in flight.
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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HANDLER_WAIT_MS 1500

static int active, max_active;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* A fake handshake: wait up to 1.5 s for one byte, echo it. */
static void handler(int fd, void *arg)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char c;

	(void)arg;
	pthread_mutex_lock(&lock);
	if (++active > max_active)
		max_active = active;
	pthread_mutex_unlock(&lock);
	if (poll(&pfd, 1, HANDLER_WAIT_MS) == 1 && read(fd, &c, 1) == 1) {
		usleep(100 * 1000);	/* "handshake" work */
		if (write(fd, &c, 1) != 1)
			DIAG("handler write: %s", strerror(errno));
	}
	pthread_mutex_lock(&lock);
	active--;
	pthread_mutex_unlock(&lock);
	close(fd);
}

struct run {
	int lfd;
	unsigned idle;
	int ret;
	uint64_t ended;
	pthread_t t;
};

static void *run_main(void *arg)
{
	struct run *r = arg;

	r->ret = tlsh_listener_run(r->lfd, r->idle, handler, NULL);
	r->ended = tlsh_now_ms();
	return NULL;
}

static int tcp_listener(struct sockaddr_in *sa)
{
	socklen_t len = sizeof(*sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)sa, sizeof(*sa)) < 0 ||
	    listen(fd, 128) < 0 || getsockname(fd, (struct sockaddr *)sa, &len) < 0)
		return -1;
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

/* Send a byte, wait for the echo; returns ms taken or -1. */
static long roundtrip(int fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint64_t t0 = tlsh_now_ms();
	char c = 'x';

	if (write(fd, &c, 1) != 1 || poll(&pfd, 1, timeout_ms) != 1 ||
	    read(fd, &c, 1) != 1 || c != 'x')
		return -1;
	return (long)(tlsh_now_ms() - t0);
}

static int is_closed(int fd)
{
	return write(fd, "", 0) < 0 && errno == EBADF;
}

static void test_loop(void)
{
	struct sockaddr_in sa;
	struct run r;
	int stalled, fast, many[40], ok = 0;
	long ms;
	uint64_t t_stalled;

	memset(&r, 0, sizeof(r));
	r.lfd = tcp_listener(&sa);
	r.idle = 1;
	CHECK(r.lfd >= 0, "a loopback listener stands in for AF_TLSH");
	if (r.lfd < 0)
		return;
	pthread_create(&r.t, NULL, run_main, &r);

	stalled = dial(&sa);		/* never sends: its handler waits 1.5 s */
	t_stalled = tlsh_now_ms();
	usleep(50 * 1000);
	fast = dial(&sa);
	ms = fast >= 0 ? roundtrip(fast, 1000) : -1;
	CHECK(ms >= 0 && ms < 600, "a stalled peer does not delay another handshake (%ld ms)", ms);
	close(fast);

	/* all 40 at once: each handler takes 100 ms after its byte */
	for (size_t i = 0; i < 40; i++)
		many[i] = dial(&sa);
	for (size_t i = 0; i < 40; i++)
		if (many[i] < 0 || write(many[i], "y", 1) != 1)
			DIAG("client %zu: %s", i, strerror(errno));
	for (size_t i = 0; i < 40; i++) {
		struct pollfd pfd = { .fd = many[i], .events = POLLIN };
		char c;

		if (many[i] >= 0 && poll(&pfd, 1, 2000) == 1 &&
		    read(many[i], &c, 1) == 1 && c == 'y')
			ok++;
		close(many[i]);
	}
	CHECK(ok == 40 && max_active >= 20,
	      "40 handshakes at once all complete, %d ran concurrently", max_active);

	pthread_join(r.t, NULL);
	close(stalled);
	/* the stalled handler ends at t_stalled + 1.5 s; idle 1 s after that */
	ms = (long)(r.ended - t_stalled);
	CHECK(r.ret == 0 && ms >= HANDLER_WAIT_MS + 1000 - 100 && ms < HANDLER_WAIT_MS + 1000 + 800,
	      "idle exit 1 s after the last handshake finished, not while one was in flight (%ld ms)",
	      ms);
	CHECK(is_closed(r.lfd), "the listener is closed on exit");
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
	tlsh_log_init("test_listener", 0, 1);
	tlsh_log_set_level(TLSH_LOG_WARNING);
	test_parsers();
	test_loop();
	return tap_done();
}
