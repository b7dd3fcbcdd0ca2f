// SPDX-License-Identifier: GPL-2.0-only
/*
 * tlsh_test: a kernel TLS consumer for the guest tests.
 *
 * Writing a request to /sys/kernel/debug/tlsh_test/run (debugfs; the
 * guest also mounts debugfs on /debug, which "ip netns exec" leaves
 * alone) runs it in the writer's network namespace and blocks until it
 * has finished; reading the file returns one line per handshake of the
 * last run:
 *
 *   T=/sys/kernel/debug/tlsh_test/run
 *   echo "addr=192.0.2.1 port=4433 name=server.test count=1" > $T
 *   cat $T
 *   0 start=0 status=0 done=1 cancelled=0 data=ok ms=212 time_us=211873
 *
 * Keys: addr= (IPv4 or IPv6), port=, name= (peer name, optional),
 * count= (parallel handshakes, default 1, at most 256), timeout= (ms,
 * 0 = the default deadline), type=x509|psk, peerid=, cert=, keyring= (key
 * serials),
 * data=echo|none (after the handshake: send a line over kTLS and expect
 * it back, as gnutls-serv --echo does; default echo), cancel= (ms after
 * which tls_handshake_cancel() is called; 0 = never), api=args|x509
 * (tls_handshake_start() or the original tls_client_hello_x509()),
 * authopt=1 (the agent may complete the handshake with a server it could
 * not verify; the line then ends with unauth=0|1, as done() learned it).
 *
 * role=server turns it around: the module listens on addr= port= (the
 * address to bind; 0.0.0.0 or :: for any), accepts count= connections
 * (each within accept= ms, default 20000), and asks for a server
 * handshake on each (type=x509|psk: tls_server_hello_x509() or
 * tls_server_hello_psk(); peerid=, cert=, keyring= as above). With
 * data=echo it reads one line over kTLS and sends it back. Each line then
 * ends with peer=DESC, the description of the key the agent named as the
 * authenticated client (TLSH_PEER_IDENTITY), or peer=- for none.
 *
 * "done" counts the calls of the done() callback, so a test can check it
 * ran exactly once (or not at all after a successful cancel). "ms" (jiffies)
 * and "time_us" (ktime) are the time from the socket's creation to done()
 * (to the report, when done() did not run), for the benchmarks.
 *
 * Runs proceed in parallel (the benchmarks start handshakes in many
 * namespaces at once). A fresh open reads the last run of anybody; a file
 * opened read-write reads the result of the last run written through it:
 *
 *   exec 3<>$T; echo "addr=..." >&3; cat <&3; exec 3>&-
 */

#include <linux/module.h>
#include <linux/kernel.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/inet.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/completion.h>
#include <linux/kthread.h>
#include <linux/nsproxy.h>
#include <linux/uio.h>
#include <linux/delay.h>
#include <linux/ktime.h>
#include <net/sock.h>
#include <net/net_namespace.h>
#include <net/tlsh.h>
#include <net/tls.h>
#include <linux/key.h>

#define TT_MAX	256

struct tt_conn {
	struct socket		*sock;
	struct completion	done;
	atomic_t		ndone;
	int			status;
	int			start_ret;
	bool			cancelled;
	char			data[16];
	struct key		*peer;		/* server: the client's key */
	bool			unauth;		/* authopt: not verified */
	unsigned long		t0, t1;
	ktime_t			k0, k1;
};

struct tt_params {
	struct sockaddr_storage	addr;
	int			addrlen;
	char			name[128];
	unsigned int		count;
	unsigned int		timeout;
	unsigned int		cancel;
	int			type;
	int			peerid;
	int			cert;
	int			keyring;
	bool			echo;
	bool			api_x509;
	bool			authopt;
	bool			server;
	unsigned int		accept_ms;
};

static DEFINE_MUTEX(tt_mutex);
static char *tt_result;

static void tt_done(void *data, int status)
{
	struct tt_conn *c = data;

	c->status = status;
	c->t1 = jiffies;
	c->k1 = ktime_get();
	atomic_inc(&c->ndone);
	complete(&c->done);
}

static int tt_parse(char *buf, struct tt_params *p)
{
	char *opt, *val;
	unsigned short port = 0;
	char addr[64] = "";
	int ret;

	memset(p, 0, sizeof(*p));
	p->count = 1;
	p->echo = true;
	p->type = TLSH_TYPE_CLIENTHELLO_X509;
	p->accept_ms = 20000;
	while ((opt = strsep(&buf, " \t\n")) != NULL) {
		if (!*opt)
			continue;
		val = strchr(opt, '=');
		if (!val)
			return -EINVAL;
		*val++ = '\0';
		ret = 0;
		if (!strcmp(opt, "addr"))
			strscpy(addr, val, sizeof(addr));
		else if (!strcmp(opt, "port"))
			ret = kstrtou16(val, 10, &port);
		else if (!strcmp(opt, "name"))
			strscpy(p->name, val, sizeof(p->name));
		else if (!strcmp(opt, "count"))
			ret = kstrtouint(val, 10, &p->count);
		else if (!strcmp(opt, "timeout"))
			ret = kstrtouint(val, 10, &p->timeout);
		else if (!strcmp(opt, "cancel"))
			ret = kstrtouint(val, 10, &p->cancel);
		else if (!strcmp(opt, "peerid"))
			ret = kstrtoint(val, 0, &p->peerid);
		else if (!strcmp(opt, "cert"))
			ret = kstrtoint(val, 0, &p->cert);
		else if (!strcmp(opt, "authopt"))
			ret = kstrtobool(val, &p->authopt);
		else if (!strcmp(opt, "keyring"))
			ret = kstrtoint(val, 0, &p->keyring);
		else if (!strcmp(opt, "type"))
			p->type = !strcmp(val, "psk") ? TLSH_TYPE_CLIENTHELLO_PSK :
						       TLSH_TYPE_CLIENTHELLO_X509;
		else if (!strcmp(opt, "data"))
			p->echo = strcmp(val, "none");
		else if (!strcmp(opt, "api"))
			p->api_x509 = !strcmp(val, "x509");
		else if (!strcmp(opt, "role"))
			p->server = !strcmp(val, "server");
		else if (!strcmp(opt, "accept"))
			ret = kstrtouint(val, 10, &p->accept_ms);
		else
			return -EINVAL;
		if (ret)
			return ret;
	}
	if (!port || !addr[0] || !p->count || p->count > TT_MAX)
		return -EINVAL;
	if (p->server)
		p->type = p->type == TLSH_TYPE_CLIENTHELLO_PSK ?
			  TLSH_TYPE_SERVERHELLO_PSK : TLSH_TYPE_SERVERHELLO_X509;
	if (strchr(addr, ':')) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&p->addr;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		if (!in6_pton(addr, -1, sin6->sin6_addr.s6_addr, -1, NULL))
			return -EINVAL;
		p->addrlen = sizeof(*sin6);
	} else {
		struct sockaddr_in *sin = (struct sockaddr_in *)&p->addr;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		if (!in4_pton(addr, -1, (u8 *)&sin->sin_addr.s_addr, -1, NULL))
			return -EINVAL;
		p->addrlen = sizeof(*sin);
	}
	return 0;
}

static int tt_start(struct tt_conn *c, struct tt_params *p)
{
	struct tls_handshake_args args = {
		.done		= tt_done,
		.data		= c,
		.peername	= p->name[0] ? p->name : NULL,
		.peerid		= p->peerid,
		.cert		= p->cert,
		.keyring	= p->keyring,
		.timeout_ms	= p->timeout,
		.peer_identity	= &c->peer,
		.auth_optional	= p->authopt,
		.unauthenticated = &c->unauth,
	};

	if (p->type == TLSH_TYPE_SERVERHELLO_X509)
		return tls_server_hello_x509(c->sock, &args);
	if (p->type == TLSH_TYPE_SERVERHELLO_PSK)
		return tls_server_hello_psk(c->sock, &args);
	if (p->api_x509)
		return tls_client_hello_x509(c->sock, tt_done, c, NULL,
					     p->peerid, p->cert);
	return tls_handshake_start(c->sock, p->type, &args);
}

/* Receive up to @len bytes of application data, skipping other records */
static int tt_recv(struct tt_conn *c, char *buf, int len)
{
	char cbuf[CMSG_SPACE(sizeof(u8))];
	struct msghdr rmsg = {
		.msg_control	= cbuf,
		.msg_controllen	= sizeof(cbuf),
	};
	struct cmsghdr *cmsg = (struct cmsghdr *)cbuf;
	struct kvec iov = { .iov_base = buf, .iov_len = len };
	int ret;

	for (;;) {
		ret = kernel_recvmsg(c->sock, &rmsg, &iov, 1, len, 0);
		if (ret < 0 || (ret == 0 && rmsg.msg_controllen == sizeof(cbuf)))
			return ret ? : -ECONNRESET;
		/* kTLS hands over other records (NewSessionTicket...) with
		 * their type; only application data (23) is ours
		 */
		if (rmsg.msg_controllen < sizeof(cbuf) &&
		    cmsg->cmsg_level == SOL_TLS &&
		    cmsg->cmsg_type == TLS_GET_RECORD_TYPE &&
		    *(u8 *)CMSG_DATA(cmsg) != 23) {
			rmsg.msg_control = cbuf;
			rmsg.msg_controllen = sizeof(cbuf);
			continue;
		}
		return ret;
	}
}

/* Server: read one line and send it back */
static void tt_echo_back(struct tt_conn *c)
{
	struct msghdr msg = { };
	char line[128];
	struct kvec iov;
	int got = 0, ret;

	while (got < (int)sizeof(line) && !memchr(line, '\n', got)) {
		ret = tt_recv(c, line + got, sizeof(line) - got);
		if (ret <= 0) {
			scnprintf(c->data, sizeof(c->data), "recv%d", ret);
			return;
		}
		got += ret;
	}
	iov.iov_base = line;
	iov.iov_len = got;
	ret = kernel_sendmsg(c->sock, &msg, &iov, 1, got);
	if (ret != got)
		scnprintf(c->data, sizeof(c->data), "send%d", ret);
	else
		strscpy(c->data, "ok", sizeof(c->data));
}

static void tt_echo(struct tt_conn *c, int i)
{
	char line[32], back[32];
	struct msghdr msg = { };
	struct kvec iov;
	int len, got = 0, ret;

	len = scnprintf(line, sizeof(line), "tlsh-test-%d\n", i);
	iov.iov_base = line;
	iov.iov_len = len;
	ret = kernel_sendmsg(c->sock, &msg, &iov, 1, len);
	if (ret != len) {
		scnprintf(c->data, sizeof(c->data), "send%d", ret);
		return;
	}
	while (got < len) {
		ret = tt_recv(c, back + got, sizeof(back) - got);
		if (ret <= 0) {
			scnprintf(c->data, sizeof(c->data), "recv%d", ret);
			return;
		}
		got += ret;
	}
	strscpy(c->data, memcmp(line, back, len) ? "mismatch" : "ok",
		sizeof(c->data));
}

static int tt_run(struct tt_params *p, char **result)
{
	struct net *net = current->nsproxy->net_ns;
	struct socket *lsock = NULL;
	unsigned long wait;
	struct tt_conn *conns;
	size_t size = p->count * 240 + 1;
	char *out;
	unsigned int i;
	bool leak = false;
	int ret, pos = 0;

	conns = kcalloc(p->count, sizeof(*conns), GFP_KERNEL);
	out = kzalloc(size, GFP_KERNEL);
	if (!conns || !out) {
		kfree(conns);
		kfree(out);
		return -ENOMEM;
	}

	if (p->server) {
		ret = sock_create_kern(net, p->addr.ss_family, SOCK_STREAM,
				       IPPROTO_TCP, &lsock);
		if (ret)
			goto out_free;
		sock_set_reuseaddr(lsock->sk);
		lsock->sk->sk_rcvtimeo = msecs_to_jiffies(p->accept_ms);
		ret = kernel_bind(lsock, (struct sockaddr *)&p->addr,
				  p->addrlen);
		if (!ret)
			ret = kernel_listen(lsock, TT_MAX);
		if (ret) {
			sock_release(lsock);
			goto out_free;
		}
	}

	for (i = 0; i < p->count; i++) {
		struct tt_conn *c = &conns[i];

		init_completion(&c->done);
		strscpy(c->data, "-", sizeof(c->data));
		c->t0 = jiffies;
		c->k0 = ktime_get();
		if (lsock) {
			ret = kernel_accept(lsock, &c->sock, 0);
			if (ret)
				c->sock = NULL;
		} else {
			ret = sock_create_kern(net, p->addr.ss_family,
					       SOCK_STREAM, IPPROTO_TCP,
					       &c->sock);
			if (!ret)
				ret = kernel_connect(c->sock,
						     (struct sockaddr *)&p->addr,
						     p->addrlen, 0);
		}
		if (!ret)
			ret = tt_start(c, p);
		c->start_ret = ret;
	}

	if (p->cancel) {
		msleep(p->cancel);
		for (i = 0; i < p->count; i++)
			if (!conns[i].start_ret)
				conns[i].cancelled = tls_handshake_cancel(conns[i].sock);
	}

	/* The API promises done() within the deadline; wait a little longer */
	wait = msecs_to_jiffies((p->timeout ? : TLSH_DEFAULT_TIMEOUT_MS) + 10000);
	for (i = 0; i < p->count; i++) {
		struct tt_conn *c = &conns[i];

		if (c->start_ret || c->cancelled)
			continue;
		if (!wait_for_completion_timeout(&c->done, wait)) {
			/* done() never ran: the sock must outlive the request */
			c->status = -EDEADLK;
			c->sock = NULL;		/* leaked on purpose */
			leak = true;
			continue;
		}
		if (!c->status && p->echo && p->server)
			tt_echo_back(c);
		else if (!c->status && p->echo)
			tt_echo(c, i);
	}

	for (i = 0; i < p->count; i++) {
		struct tt_conn *c = &conns[i];
		unsigned long t1 = c->t1 ? c->t1 : jiffies;
		ktime_t k1 = c->t1 ? c->k1 : ktime_get();

		pos += scnprintf(out + pos, size - pos,
				 "%u start=%d status=%d done=%d cancelled=%d data=%s ms=%u time_us=%lld",
				 i, c->start_ret, c->status,
				 atomic_read(&c->ndone), c->cancelled, c->data,
				 jiffies_to_msecs(t1 - c->t0),
				 ktime_us_delta(k1, c->k0));
		if (p->server)
			pos += scnprintf(out + pos, size - pos, " peer=%s",
					 c->peer ? c->peer->description : "-");
		if (p->authopt)
			pos += scnprintf(out + pos, size - pos, " unauth=%d",
					 c->unauth);
		pos += scnprintf(out + pos, size - pos, "\n");
		key_put(c->peer);
		if (c->sock)
			sock_release(c->sock);
	}
	if (lsock)
		sock_release(lsock);
	if (!leak)
		kfree(conns);
	*result = out;
	return 0;

out_free:
	kfree(conns);
	kfree(out);
	return ret;
}

static ssize_t tt_write(struct file *file, const char __user *ubuf,
			size_t len, loff_t *ppos)
{
	struct seq_file *m = file->private_data;
	struct tt_params p;
	char *buf, *result = NULL, *own = NULL;
	int ret;

	if (len > 512)
		return -EINVAL;
	buf = memdup_user_nul(ubuf, len);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	ret = tt_parse(buf, &p);
	kfree(buf);
	if (ret)
		return ret;

	ret = tt_run(&p, &result);
	if (ret)
		return ret;
	if (file->f_mode & FMODE_READ)
		own = kstrdup(result, GFP_KERNEL);
	mutex_lock(&tt_mutex);
	kfree(tt_result);
	tt_result = result;
	if (own) {
		kfree(m->private);
		m->private = own;
	}
	mutex_unlock(&tt_mutex);
	return len;
}

static int tt_show(struct seq_file *m, void *v)
{
	mutex_lock(&tt_mutex);
	if (m->private)
		seq_puts(m, m->private);
	else if (tt_result)
		seq_puts(m, tt_result);
	mutex_unlock(&tt_mutex);
	return 0;
}

static int tt_open(struct inode *inode, struct file *file)
{
	return single_open(file, tt_show, NULL);
}

static int tt_release(struct inode *inode, struct file *file)
{
	struct seq_file *m = file->private_data;

	kfree(m->private);
	return single_release(inode, file);
}

static const struct file_operations tt_fops = {
	.owner		= THIS_MODULE,
	.open		= tt_open,
	.read		= seq_read,
	.write		= tt_write,
	.llseek		= seq_lseek,
	.release	= tt_release,
};

static struct dentry *tt_dir;

static int __init tt_init(void)
{
	tt_dir = debugfs_create_dir("tlsh_test", NULL);
	debugfs_create_file("run", 0600, tt_dir, NULL, &tt_fops);
	return 0;
}

static void __exit tt_exit(void)
{
	debugfs_remove(tt_dir);
	kfree(tt_result);
}

module_init(tt_init);
module_exit(tt_exit);
MODULE_DESCRIPTION("AF_TLSH test consumer (guest tests only)");
MODULE_LICENSE("GPL");
