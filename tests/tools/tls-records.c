// SPDX-License-Identifier: GPL-2.0-only
/*
 * tls-records PCAP PORT: the TLS records that the side with TCP port PORT
 * sent in a capture (tcpdump -w, Ethernet, IPv4 or IPv6), as lines
 *
 *   COUNT TYPE LENGTH
 *
 * (COUNT records of content type TYPE, e.g. 23 for application data, and
 * LENGTH octets after the 5-octet record header), from the start of each
 * connection: the TCP stream of every connection from PORT is put back
 * in order from its SYN (segments captured out of order, as a veth pair
 * delivers them from two CPUs, wait for the missing ones) and walked
 * record by record, from the first
 * segment that starts with a TLS handshake record (so that a plaintext
 * prelude is passed over: RPC-with-TLS's AUTH_TLS probe and its reply
 * come before the handshake). A connection whose SYN was not captured,
 * or with a hole that the capture never fills, is reported on stderr and
 * counted only up to the hole. Exit status 0, 1 if any connection was left out, 2 on a
 * usage or file error.
 *
 * The guest's cases use it to see how a kTLS sender cuts its data into
 * records (full 16 KiB records or one per page).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXFLOWS 256
#define MAXKINDS 4096
#define MAXPENDING 512

struct seg {
	uint32_t seq, len;
	uint8_t *data;
};

struct flow {
	uint8_t key[36];	/* addresses and ports */
	uint32_t next;		/* next expected sequence number */
	int broken;
	int tls;		/* the TLS records have begun */
	unsigned int skip;	/* payload octets left in the current record */
	uint8_t hdr[5];		/* record header being collected */
	unsigned int hlen;
	struct seg pending[MAXPENDING];	/* captured ahead of a missing one */
	int npending;
};

struct kind {
	unsigned int type, len;
	unsigned long count;
};

static struct flow flows[MAXFLOWS];
static int nflows;
static struct kind kinds[MAXKINDS];
static int nkinds;

static void count(unsigned int type, unsigned int len)
{
	int i;

	for (i = 0; i < nkinds; i++)
		if (kinds[i].type == type && kinds[i].len == len) {
			kinds[i].count++;
			return;
		}
	if (nkinds < MAXKINDS)
		kinds[nkinds++] = (struct kind){ type, len, 1 };
}

static struct flow *find(const uint8_t *key, int create)
{
	int i;

	for (i = 0; i < nflows; i++)
		if (!memcmp(flows[i].key, key, sizeof(flows[i].key)))
			return &flows[i];
	if (!create || nflows == MAXFLOWS)
		return NULL;
	memset(&flows[nflows], 0, sizeof(flows[nflows]));
	memcpy(flows[nflows].key, key, sizeof(flows[nflows].key));
	return &flows[nflows++];
}

static void walk(struct flow *f, const uint8_t *p, size_t n)
{
	while (n > 0) {
		if (f->skip > 0) {
			size_t take = f->skip < n ? f->skip : n;

			f->skip -= take;
			p += take;
			n -= take;
			continue;
		}
		f->hdr[f->hlen++] = *p++;
		n--;
		if (f->hlen == sizeof(f->hdr)) {
			f->skip = (unsigned int)f->hdr[3] << 8 | f->hdr[4];
			count(f->hdr[0], f->skip);
			f->hlen = 0;
		}
	}
}

/* the segment at SEQ: the part of it after f->next, if any, is new */
static void deliver(struct flow *f, uint32_t seq, const uint8_t *d, uint32_t len)
{
	if ((int32_t)(seq + len - f->next) <= 0)
		return;	/* a retransmission */
	d += f->next - seq;
	len = seq + len - f->next;
	if (!f->tls)	/* a handshake record, TLS 1.0-1.3 record version */
		f->tls = seq == f->next && len >= 3 && d[0] == 22 &&
			 d[1] == 3 && d[2] <= 3;
	if (f->tls)
		walk(f, d, len);
	f->next += len;
}

int main(int argc, char **argv)
{
	char err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const uint8_t *pkt;
	unsigned int port;
	int i, lost = 0;
	pcap_t *pc;

	if (argc != 3) {
		fprintf(stderr, "usage: tls-records PCAP PORT\n");
		return 2;
	}
	port = (unsigned int)atoi(argv[2]);
	pc = pcap_open_offline(argv[1], err);
	if (!pc) {
		fprintf(stderr, "tls-records: %s\n", err);
		return 2;
	}
	if (pcap_datalink(pc) != DLT_EN10MB) {
		fprintf(stderr, "tls-records: %s: not an Ethernet capture\n", argv[1]);
		return 2;
	}
	while (pcap_next_ex(pc, &h, &pkt) == 1) {
		const uint8_t *ip = pkt + 14, *tcp;
		size_t caplen = h->caplen, iplen, off;
		uint8_t key[36] = { 0 };
		uint32_t seq, len;
		struct flow *f;
		uint16_t et;

		if (caplen < 14)
			continue;
		et = (uint16_t)(pkt[12] << 8 | pkt[13]);
		if (et == 0x0800 && caplen >= 34 && ip[9] == IPPROTO_TCP) {
			off = (size_t)(ip[0] & 0xf) * 4;
			iplen = (size_t)(ip[2] << 8 | ip[3]);
			memcpy(key, ip + 12, 8);
		} else if (et == 0x86dd && caplen >= 54 && ip[6] == IPPROTO_TCP) {
			off = 40;
			iplen = 40 + (size_t)(ip[4] << 8 | ip[5]);
			memcpy(key, ip + 8, 32);
		} else {
			continue;
		}
		if (14 + off + 20 > caplen || off + 20 > iplen)
			continue;
		tcp = ip + off;
		if ((unsigned int)(tcp[0] << 8 | tcp[1]) != port)
			continue;
		memcpy(key + 32, tcp, 4);	/* both ports */
		seq = (uint32_t)tcp[4] << 24 | tcp[5] << 16 | tcp[6] << 8 | tcp[7];
		off += (size_t)(tcp[12] >> 4) * 4;
		if (off > iplen)
			continue;
		len = (uint32_t)(iplen - off);
		if (tcp[13] & 0x02) {	/* SYN: a new connection */
			f = find(key, 1);
			if (f) {	/* a port used again: start afresh */
				for (i = 0; i < f->npending; i++)
					free(f->pending[i].data);
				memset(f, 0, sizeof(*f));
				memcpy(f->key, key, sizeof(f->key));
				f->next = seq + 1;
			}
			continue;
		}
		f = find(key, 0);
		if (!f) {
			if (len > 0) {
				/* started before the capture: ignore it */
				f = find(key, 1);
				if (f) {
					f->broken = 1;
					lost++;
					fprintf(stderr, "tls-records: a connection from port %u started before the capture\n", port);
				}
			}
			continue;
		}
		if (f->broken || len == 0)
			continue;
		if (14 + iplen > caplen) {
			f->broken = 1;
			lost++;
			fprintf(stderr, "tls-records: a packet cut by the snap length in a connection from port %u\n", port);
			continue;
		}
		if ((int32_t)(seq - f->next) > 0) {
			if (f->npending == MAXPENDING) {
				f->broken = 1;
				lost++;
				fprintf(stderr, "tls-records: a hole in a connection from port %u\n", port);
				continue;
			}
			f->pending[f->npending].seq = seq;
			f->pending[f->npending].len = len;
			f->pending[f->npending].data = malloc(len);
			if (!f->pending[f->npending].data) {
				perror("tls-records");
				return 2;
			}
			memcpy(f->pending[f->npending++].data, ip + off, len);
			continue;
		}
		deliver(f, seq, ip + off, len);
		/* what waited for this segment */
		for (i = 0; i < f->npending; i++) {
			struct seg *g = &f->pending[i];

			if ((int32_t)(g->seq - f->next) > 0)
				continue;
			deliver(f, g->seq, g->data, g->len);
			free(g->data);
			*g = f->pending[--f->npending];
			i = -1;	/* again from the start */
		}
	}
	pcap_close(pc);
	for (i = 0; i < nflows; i++)
		if (!flows[i].broken && flows[i].npending) {
			lost++;
			fprintf(stderr, "tls-records: a hole in a connection from port %u\n", port);
		}
	for (i = 0; i < nkinds; i++)
		printf("%lu %u %u\n", kinds[i].count, kinds[i].type, kinds[i].len);
	return lost ? 1 : 0;
}
