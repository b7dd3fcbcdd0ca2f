#!/usr/bin/env python3
"""Turn the bench console log into the table, CSVs, a Markdown table and a chart.

    report.py LOG OUTDIR

LOG holds the lines the guest scripts print (tests/bench/guest/bench-lib.sh):
    BENCH METRIC VALUE | BENCHNA METRIC REASON | BENCHINFO KEY TEXT
Writes OUTDIR/results.csv (every sample), OUTDIR/summary.csv (n, median,
p95, min, max per metric), OUTDIR/results.md and OUTDIR/bench.png (gnuplot).
"""
import math
import os
import re
import shutil
import subprocess
import sys

# (metric, label, unit); unit "ms" etc. Rows print in this order.
ROWS = [
    ("Handshake latency (one handshake, kernel consumer -> done())", None, None),
    ("hs.cold", "cold: agent spawned by request-key", "ms"),
    ("hs.warm", "warm: spawned agent already listening", "ms"),
    ("hs.warm.certreq", "warm, the server asks for a client certificate (verdict wait)", "ms"),
    ("hs.warm.total", "warm, traced run: consumer's time_us", "ms"),
    ("hs.warm.wait", "... of which queued -> accepted by the agent", "ms"),
    ("hs.warm.agent", "... of which accepted -> done (the agent's work)", "ms"),
    ("hs.cold.total", "cold, traced run: consumer's time_us", "ms"),
    ("hs.cold.upcall", "... of which queued -> upcall started", "ms"),
    ("hs.cold.spawn", "... of which upcall -> the new agent bound (request-key, exec, start-up)", "ms"),
    ("hs.cold.accept", "... of which bound -> request accepted", "ms"),
    ("hs.cold.agent", "... of which accepted -> done (the agent's work)", "ms"),
    ("hs.resident", "resident agent (tlsh-helper -f)", "ms"),
    ("hs.floor", "floor: GnuTLS client in user space (hs-floor)", "ms"),
    ("hs.floor.first", "floor, the first handshake of its process", "ms"),
    ("hs.floor.fork", "floor with a process forked per handshake, as the agent", "ms"),
    ("hs.gnutls-cli", "gnutls-cli process (exec included)", "ms"),
    ("hs.exec.tlsh-helper", "context: exec of tlsh-helper --version", "ms"),
    ("hs.exec.request-key", "context: exec of request-key (usage only)", "ms"),
    ("Scaling: N handshakes at once in one namespace (warm agent; time to the last)", None, None),
    ("scale.hs.1", "1 handshake", "ms"),
    ("scale.hs.8", "8 handshakes", "ms"),
    ("scale.hs.64", "64 handshakes", "ms"),
    ("scale.hs.256", "256 handshakes", "ms"),
    ("scale.floor.1", "user-space floor, 1 thread", "ms"),
    ("scale.floor.8", "user-space floor, 8 threads", "ms"),
    ("scale.floor.64", "user-space floor, 64 threads", "ms"),
    ("scale.floor.256", "user-space floor, 256 threads", "ms"),
    ("Scaling: one handshake in each of N namespaces at once", None, None),
    ("scale.ns.1.cold", "1 namespace, cold (1 agent spawned)", "ms"),
    ("scale.ns.4.cold", "4 namespaces, cold (4 agents spawned)", "ms"),
    ("scale.ns.16.cold", "16 namespaces, cold (16 agents spawned)", "ms"),
    ("scale.ns.1.warm", "1 namespace, warm", "ms"),
    ("scale.ns.4.warm", "4 namespaces, warm", "ms"),
    ("scale.ns.16.warm", "16 namespaces, warm", "ms"),
    ("Memory", None, None),
    ("mem.helper.rss_idle_kb", "tlsh-helper memory (PSS, all its processes), idle after one handshake", "KiB"),
    ("mem.helper.rss_serving_1_kb", "tlsh-helper memory (PSS, all its processes), max while serving 1", "KiB"),
    ("mem.helper.rss_serving_8_kb", "tlsh-helper memory (PSS, all its processes), max while serving 8", "KiB"),
    ("mem.helper.rss_serving_64_kb", "tlsh-helper memory (PSS, all its processes), max while serving 64", "KiB"),
    ("mem.helper.rss_serving_256_kb", "tlsh-helper memory (PSS, all its processes), max while serving 256", "KiB"),
    ("mem.helper.hwm_kb", "tlsh-helper VmHWM (peak) after all scaling runs", "KiB"),
    ("mem.kernel.per_queued_hs_b", "kernel slab per queued handshake (incl. its TCP connection)", "B"),
    ("mem.kernel.per_tcp_conn_b", "kernel slab per plain TCP connection (user-space baseline)", "B"),
    ("mem.kernel.per_queued_hs_extra_b", "difference: the handshake request itself", "B"),
    ("mem.kernel.per_queued_hs_meminfo_b", "per queued handshake, /proc/meminfo Slab", "B"),
    ("NFS mount latency (mount(8) to return; vers=4.2)", None, None),
    ("mount.none", "xprtsec=none (plain)", "ms"),
    ("mount.tls.cold", "xprtsec=tls, cold (agent spawned)", "ms"),
    ("mount.tls.warm", "xprtsec=tls, warm", "ms"),
    ("mount.none.notls-server", "none, to the server without TLS (plain.test)", "ms"),
    ("mount.auto.notls-server", "xprtsec=auto, to the same server without TLS", "ms"),
    ("mount.stunnel", "plain NFS through the stunnel tunnel", "ms"),
    ("mount.none-front", "none, through the TLS front (plaintext relay)", "ms"),
    ("NFS sequential throughput", None, None),
    ("tput.write.none", "write, none: whole run", "MiB/s"),
    ("tput.write.none.chunk", "write, none: per 32 MiB chunk", "MiB/s"),
    ("tput.write.tls", "write, tls (kTLS): whole run", "MiB/s"),
    ("tput.write.tls.chunk", "write, tls (kTLS): per 32 MiB chunk", "MiB/s"),
    ("tput.write.ktls", "write, ktls (kTLS both ends: knfsd serves TLS): whole run", "MiB/s"),
    ("tput.write.ktls.chunk", "write, ktls: per 32 MiB chunk", "MiB/s"),
    ("tput.write.stunnel", "write, stunnel: whole run", "MiB/s"),
    ("tput.write.stunnel.chunk", "write, stunnel: per 32 MiB chunk", "MiB/s"),
    ("tput.write.none-front", "write, none through the TLS front: whole run", "MiB/s"),
    ("tput.write.none-front.chunk", "write, none through the TLS front: per 32 MiB chunk", "MiB/s"),
    ("tput.read.none", "read, none: whole run", "MiB/s"),
    ("tput.read.none.chunk", "read, none: per 32 MiB chunk", "MiB/s"),
    ("tput.read.tls", "read, tls (kTLS): whole run", "MiB/s"),
    ("tput.read.tls.chunk", "read, tls (kTLS): per 32 MiB chunk", "MiB/s"),
    ("tput.read.ktls", "read, ktls (kTLS both ends: knfsd serves TLS): whole run", "MiB/s"),
    ("tput.read.ktls.chunk", "read, ktls: per 32 MiB chunk", "MiB/s"),
    ("tput.read.stunnel", "read, stunnel: whole run", "MiB/s"),
    ("tput.read.stunnel.chunk", "read, stunnel: per 32 MiB chunk", "MiB/s"),
    ("tput.read.none-front", "read, none through the TLS front: whole run", "MiB/s"),
    ("tput.read.none-front.chunk", "read, none through the TLS front: per 32 MiB chunk", "MiB/s"),
    ("CPU time per MiB moved (client side: all guest CPU less nfsd and server-side relays)", None, None),
    ("cpu.write.none", "write, none", "ms/MiB"),
    ("cpu.write.tls", "write, tls (kTLS)", "ms/MiB"),
    ("cpu.write.ktls", "write, ktls (kTLS both ends)", "ms/MiB"),
    ("cpu.write.stunnel", "write, stunnel", "ms/MiB"),
    ("cpu.write.none-front", "write, none through the TLS front", "ms/MiB"),
    ("cpu.read.none", "read, none", "ms/MiB"),
    ("cpu.read.tls", "read, tls (kTLS)", "ms/MiB"),
    ("cpu.read.ktls", "read, ktls (kTLS both ends)", "ms/MiB"),
    ("cpu.read.stunnel", "read, stunnel", "ms/MiB"),
    ("cpu.read.none-front", "read, none through the TLS front", "ms/MiB"),
    ("cpu.write.none.all", "write, none (whole guest)", "ms/MiB"),
    ("cpu.write.tls.all", "write, tls (whole guest)", "ms/MiB"),
    ("cpu.write.stunnel.all", "write, stunnel (whole guest)", "ms/MiB"),
    ("cpu.read.none.all", "read, none (whole guest)", "ms/MiB"),
    ("cpu.read.tls.all", "read, tls (whole guest)", "ms/MiB"),
    ("cpu.read.stunnel.all", "read, stunnel (whole guest)", "ms/MiB"),
    ("cpu.write.ktls.all", "write, ktls (whole guest: client and server)", "ms/MiB"),
    ("cpu.read.ktls.all", "read, ktls (whole guest: client and server)", "ms/MiB"),
    ("Server CPU time per MiB moved (nfsd threads and server-side relays: tls-front, stunnel)", None, None),
    ("cpu.server.write.none", "write, none", "ms/MiB"),
    ("cpu.server.write.tls", "write, tls (kTLS client, user-space TLS front)", "ms/MiB"),
    ("cpu.server.write.ktls", "write, ktls (knfsd with kTLS)", "ms/MiB"),
    ("cpu.server.write.stunnel", "write, stunnel", "ms/MiB"),
    ("cpu.server.read.none", "read, none", "ms/MiB"),
    ("cpu.server.read.tls", "read, tls (kTLS client, user-space TLS front)", "ms/MiB"),
    ("cpu.server.read.ktls", "read, ktls (knfsd with kTLS)", "ms/MiB"),
    ("cpu.server.read.stunnel", "read, stunnel", "ms/MiB"),
    ("The ciphers alone: 16 KiB records over loopback TCP, encrypted and decrypted, no NFS (CPU per MiB, both ends; crypto-loop)", None, None),
    ("crypto.ktls.AES-128-GCM", "kTLS (the kernel's), AES-128-GCM", "ms/MiB"),
    ("crypto.openssl.AES-128-GCM", "OpenSSL (stunnel's), AES-128-GCM", "ms/MiB"),
    ("crypto.ktls.AES-256-GCM", "kTLS, AES-256-GCM", "ms/MiB"),
    ("crypto.openssl.AES-256-GCM", "OpenSSL, AES-256-GCM", "ms/MiB"),
    ("crypto.ktls.CHACHA20-POLY1305", "kTLS, CHACHA20-POLY1305", "ms/MiB"),
    ("crypto.openssl.CHACHA20-POLY1305", "OpenSSL, CHACHA20-POLY1305", "ms/MiB"),
    ("Small-file metadata workload", None, None),
    ("meta.create.none", "create, none", "files/s"),
    ("meta.create.tls", "create, tls", "files/s"),
    ("meta.create.ktls", "create, ktls", "files/s"),
    ("meta.create.stunnel", "create, stunnel", "files/s"),
    ("meta.create.none-front", "create, none through the TLS front", "files/s"),
    ("meta.stat.none", "stat (after remount), none", "files/s"),
    ("meta.stat.tls", "stat, tls", "files/s"),
    ("meta.stat.ktls", "stat, ktls", "files/s"),
    ("meta.stat.stunnel", "stat, stunnel", "files/s"),
    ("meta.stat.none-front", "stat, none through the TLS front", "files/s"),
    ("meta.remove.none", "remove, none", "files/s"),
    ("meta.remove.tls", "remove, tls", "files/s"),
    ("meta.remove.ktls", "remove, ktls", "files/s"),
    ("meta.remove.stunnel", "remove, stunnel", "files/s"),
    ("meta.remove.none-front", "remove, none through the TLS front", "files/s"),
    ('Against the upstream 6.12 server (ref.test): our client vs the 6.12 client with tlshd', None, None),
    ('peer.tlsh.mount.none', 'ours: mount, none', 'ms'),
    ('peer.upstream.mount.none', '6.12: mount, none', 'ms'),
    ('peer.tlsh.mount.tls.warm', 'ours: mount, tls, agent warm', 'ms'),
    ('peer.upstream.mount.tls.warm', '6.12: mount, tls, agent warm', 'ms'),
    ('peer.tlsh.mount.tls.cold', 'ours: mount, tls, agent cold', 'ms'),
    ('peer.upstream.mount.tls.cold', '6.12: mount, tls, agent cold', 'ms'),
    ('peer.tlsh.mount.auto.notlshd', 'ours: mount, auto, server without tlshd', 'ms'),
    ('peer.upstream.mount.auto.notlshd', '6.12: mount, auto, server without tlshd', 'ms'),
    ('peer.tlsh.mount.none.notlshd', 'ours: mount, none, server without tlshd', 'ms'),
    ('peer.upstream.mount.none.notlshd', '6.12: mount, none, server without tlshd', 'ms'),
    ('peer.tlsh.tput.write.none', 'ours: write, none', 'MiB/s'),
    ('peer.upstream.tput.write.none', '6.12: write, none', 'MiB/s'),
    ('peer.tlsh.tput.write.tls', 'ours: write, tls', 'MiB/s'),
    ('peer.upstream.tput.write.tls', '6.12: write, tls', 'MiB/s'),
    ('peer.tlsh.tput.read.none', 'ours: read, none', 'MiB/s'),
    ('peer.upstream.tput.read.none', '6.12: read, none', 'MiB/s'),
    ('peer.tlsh.tput.read.tls', 'ours: read, tls', 'MiB/s'),
    ('peer.upstream.tput.read.tls', '6.12: read, tls', 'MiB/s'),
    ('peer.tlsh.cpu.write.none', 'ours: CPU per MiB written, none (client VM)', 'ms/MiB'),
    ('peer.upstream.cpu.write.none', '6.12: CPU per MiB written, none (client VM)', 'ms/MiB'),
    ('peer.tlsh.cpu.write.tls', 'ours: CPU per MiB written, tls (client VM)', 'ms/MiB'),
    ('peer.upstream.cpu.write.tls', '6.12: CPU per MiB written, tls (client VM)', 'ms/MiB'),
    ('peer.tlsh.cpu.read.none', 'ours: CPU per MiB read, none (client VM)', 'ms/MiB'),
    ('peer.upstream.cpu.read.none', '6.12: CPU per MiB read, none (client VM)', 'ms/MiB'),
    ('peer.tlsh.cpu.read.tls', 'ours: CPU per MiB read, tls (client VM)', 'ms/MiB'),
    ('peer.upstream.cpu.read.tls', '6.12: CPU per MiB read, tls (client VM)', 'ms/MiB'),
    ('The pairs: client and knfsd in one VM, ours (6.1, tlsh-helper) vs 6.12 with tlshd', None, None),
    ('peer.tlsh-pair.tput.write.none', 'ours: write, none', 'MiB/s'),
    ('peer.upstream-pair.tput.write.none', '6.12: write, none', 'MiB/s'),
    ('peer.tlsh-pair.tput.write.tls', 'ours: write, tls (kTLS both ends)', 'MiB/s'),
    ('peer.upstream-pair.tput.write.tls', '6.12: write, tls (kTLS both ends)', 'MiB/s'),
    ('peer.tlsh-pair.tput.read.none', 'ours: read, none', 'MiB/s'),
    ('peer.upstream-pair.tput.read.none', '6.12: read, none', 'MiB/s'),
    ('peer.tlsh-pair.tput.read.tls', 'ours: read, tls (kTLS both ends)', 'MiB/s'),
    ('peer.upstream-pair.tput.read.tls', '6.12: read, tls (kTLS both ends)', 'MiB/s'),
    ('peer.tlsh-pair.tput.write.stunnel', 'ours: write, plaintext NFS through stunnel', 'MiB/s'),
    ('peer.upstream-pair.tput.write.stunnel', '6.12: write, plaintext NFS through stunnel', 'MiB/s'),
    ('peer.tlsh-pair.tput.read.stunnel', 'ours: read, plaintext NFS through stunnel', 'MiB/s'),
    ('peer.upstream-pair.tput.read.stunnel', '6.12: read, plaintext NFS through stunnel', 'MiB/s'),
    ('peer.tlsh-pair.cpu.write.tls', 'ours: CPU per MiB written, tls (whole VM)', 'ms/MiB'),
    ('peer.upstream-pair.cpu.write.tls', '6.12: CPU per MiB written, tls (whole VM)', 'ms/MiB'),
    ('peer.tlsh-pair.cpu.read.tls', 'ours: CPU per MiB read, tls (whole VM)', 'ms/MiB'),
    ('peer.upstream-pair.cpu.read.tls', '6.12: CPU per MiB read, tls (whole VM)', 'ms/MiB'),
    ('peer.tlsh-pair.cpu.write.stunnel', 'ours: CPU per MiB written, stunnel (whole VM)', 'ms/MiB'),
    ('peer.upstream-pair.cpu.write.stunnel', '6.12: CPU per MiB written, stunnel (whole VM)', 'ms/MiB'),
    ('peer.tlsh-pair.cpu.read.stunnel', 'ours: CPU per MiB read, stunnel (whole VM)', 'ms/MiB'),
    ('peer.upstream-pair.cpu.read.stunnel', '6.12: CPU per MiB read, stunnel (whole VM)', 'ms/MiB'),
    ('peer.tlsh-pair.crypto.ktls.AES-128-GCM', "ours: the kernel's AES-128-GCM alone (crypto-loop, kTLS)", 'ms/MiB'),
    ('peer.upstream-pair.crypto.ktls.AES-128-GCM', "6.12: the kernel's AES-128-GCM alone (crypto-loop, kTLS)", 'ms/MiB'),
    ('peer.tlsh-pair.crypto.ktls.AES-256-GCM', "ours: the kernel's AES-256-GCM alone (crypto-loop, kTLS)", 'ms/MiB'),
    ('peer.upstream-pair.crypto.ktls.AES-256-GCM', "6.12: the kernel's AES-256-GCM alone (crypto-loop, kTLS)", 'ms/MiB'),
    ('The pairs profiled (BENCH_PROFILE=1): an untimed 64 MiB tls transfer under perf, busy CPU per MiB by symbol', None, None),
    ('peer.tlsh-pair.prof.write.cipher', 'ours: write, in the cipher and crypto API', 'ms/MiB'),
    ('peer.upstream-pair.prof.write.cipher', '6.12: write, in the cipher and crypto API', 'ms/MiB'),
    ('peer.tlsh-pair.prof.write.copy', 'ours: write, in memory copies', 'ms/MiB'),
    ('peer.upstream-pair.prof.write.copy', '6.12: write, in memory copies', 'ms/MiB'),
    ('peer.tlsh-pair.prof.write.rest', 'ours: write, in the rest', 'ms/MiB'),
    ('peer.upstream-pair.prof.write.rest', '6.12: write, in the rest', 'ms/MiB'),
    ('peer.tlsh-pair.prof.write.idle', 'ours: write, idle share of all samples', '%'),
    ('peer.upstream-pair.prof.write.idle', '6.12: write, idle share of all samples', '%'),
    ('peer.tlsh-pair.prof.read.cipher', 'ours: read, in the cipher and crypto API', 'ms/MiB'),
    ('peer.upstream-pair.prof.read.cipher', '6.12: read, in the cipher and crypto API', 'ms/MiB'),
    ('peer.tlsh-pair.prof.read.copy', 'ours: read, in memory copies', 'ms/MiB'),
    ('peer.upstream-pair.prof.read.copy', '6.12: read, in memory copies', 'ms/MiB'),
    ('peer.tlsh-pair.prof.read.rest', 'ours: read, in the rest', 'ms/MiB'),
    ('peer.upstream-pair.prof.read.rest', '6.12: read, in the rest', 'ms/MiB'),
    ('peer.tlsh-pair.prof.read.idle', 'ours: read, idle share of all samples', '%'),
    ('peer.upstream-pair.prof.read.idle', '6.12: read, idle share of all samples', '%'),
]

# (label, numerator, denominator, op, limit): ratio of medians
TARGETS = [
    ("warm handshake <= 1.3x user-space floor", "hs.warm", "hs.floor", "<=", 1.3),
    ("cold handshake <= 1.5x warm", "hs.cold", "hs.warm", "<=", 1.5),
    ("auto mount vs server without TLS <= 1.2x none mount (same server)",
     "mount.auto.notls-server", "mount.none.notls-server", "<=", 1.2),
    ("kTLS write throughput >= 1.5x stunnel", "tput.write.tls", "tput.write.stunnel", ">=", 1.5),
    ("kTLS read throughput >= 1.5x stunnel", "tput.read.tls", "tput.read.stunnel", ">=", 1.5),
    ("kTLS both ends (knfsd) write throughput >= 1.5x stunnel", "tput.write.ktls", "tput.write.stunnel", ">=", 1.5),
    ("kTLS both ends (knfsd) read throughput >= 1.5x stunnel", "tput.read.ktls", "tput.read.stunnel", ">=", 1.5),
    ("64 concurrent handshakes <= 40x one", "scale.hs.64", "scale.hs.1", "<=", 40),
    ("peer: our warm tls mount <= the 6.12 client's", "peer.tlsh.mount.tls.warm",
     "peer.upstream.mount.tls.warm", "<=", 1.0),
    ("peer: our cold tls mount <= 1.5x the 6.12 client's (warm)", "peer.tlsh.mount.tls.cold",
     "peer.upstream.mount.tls.warm", "<=", 1.5),
    ("peer: tls write throughput >= 0.9x the 6.12 client's", "peer.tlsh.tput.write.tls",
     "peer.upstream.tput.write.tls", ">=", 0.9),
    ("peer: tls read throughput >= 0.9x the 6.12 client's", "peer.tlsh.tput.read.tls",
     "peer.upstream.tput.read.tls", ">=", 0.9),
]
# ratios shown for context, no target
CONTEXT = [
    ("resident agent / user-space floor", "hs.resident", "hs.floor"),
    ("warm handshake / the floor with a process per handshake", "hs.warm", "hs.floor.fork"),
    ("the floor: a process per handshake / one process", "hs.floor.fork", "hs.floor"),
    ("the agent's work (accepted -> done) / user-space floor", "hs.warm.agent", "hs.floor"),
    ("a fresh agent's first handshake (accepted -> done) / the floor's first", "hs.cold.agent", "hs.floor.first"),
    ("64 concurrent, agent / user-space floor", "scale.hs.64", "scale.floor.64"),
    ("256 concurrent, agent / user-space floor", "scale.hs.256", "scale.floor.256"),
    ("user-space floor: 64 threads / 1", "scale.floor.64", "scale.floor.1"),
    ("256 concurrent handshakes / one", "scale.hs.256", "scale.hs.1"),
    ("16 namespaces cold / 1 namespace cold", "scale.ns.16.cold", "scale.ns.1.cold"),
    ("16 namespaces warm / 1 namespace warm", "scale.ns.16.warm", "scale.ns.1.warm"),
    ("auto mount (no-TLS server) / direct none mount", "mount.auto.notls-server", "mount.none"),
    ("tls mount warm / none mount", "mount.tls.warm", "mount.none"),
    ("stunnel write throughput / none", "tput.write.stunnel", "tput.write.none"),
    ("kTLS write throughput / none", "tput.write.tls", "tput.write.none"),
    ("kTLS both ends write throughput / none", "tput.write.ktls", "tput.write.none"),
    ("kTLS both ends read throughput / none", "tput.read.ktls", "tput.read.none"),
    ("server CPU per MiB written: knfsd with kTLS / stunnel", "cpu.server.write.ktls", "cpu.server.write.stunnel"),
    ("server CPU per MiB read: knfsd with kTLS / stunnel", "cpu.server.read.ktls", "cpu.server.read.stunnel"),
    ("the cipher alone, AES-128-GCM: OpenSSL's CPU / kTLS's", "crypto.openssl.AES-128-GCM", "crypto.ktls.AES-128-GCM"),
    ("the cipher alone, AES-256-GCM: OpenSSL's CPU / kTLS's", "crypto.openssl.AES-256-GCM", "crypto.ktls.AES-256-GCM"),
    ("the cipher alone, CHACHA20-POLY1305: OpenSSL's CPU / kTLS's", "crypto.openssl.CHACHA20-POLY1305",
     "crypto.ktls.CHACHA20-POLY1305"),
    ("peer: our none mount / the 6.12 client's", "peer.tlsh.mount.none", "peer.upstream.mount.none"),
    ("peer: our auto mount, no tlshd / the 6.12 client's none mount, no tlshd",
     "peer.tlsh.mount.auto.notlshd", "peer.upstream.mount.none.notlshd"),
    ("peer: our CPU per MiB written, tls / the 6.12 client's", "peer.tlsh.cpu.write.tls",
     "peer.upstream.cpu.write.tls"),
    ("peer: our CPU per MiB read, tls / the 6.12 client's", "peer.tlsh.cpu.read.tls",
     "peer.upstream.cpu.read.tls"),
    ("pairs: our tls write throughput / the 6.12 pair's", "peer.tlsh-pair.tput.write.tls",
     "peer.upstream-pair.tput.write.tls"),
    ("pairs: our tls read throughput / the 6.12 pair's", "peer.tlsh-pair.tput.read.tls",
     "peer.upstream-pair.tput.read.tls"),
    ("pairs: our CPU per MiB written, tls / the 6.12 pair's", "peer.tlsh-pair.cpu.write.tls",
     "peer.upstream-pair.cpu.write.tls"),
    ("pairs: our CPU per MiB read, tls / the 6.12 pair's", "peer.tlsh-pair.cpu.read.tls",
     "peer.upstream-pair.cpu.read.tls"),
    ("pairs: ours (6.1), kTLS both ends / stunnel, write throughput", "peer.tlsh-pair.tput.write.tls",
     "peer.tlsh-pair.tput.write.stunnel"),
    ("pairs: ours (6.1), kTLS both ends / stunnel, read throughput", "peer.tlsh-pair.tput.read.tls",
     "peer.tlsh-pair.tput.read.stunnel"),
    ("pairs: 6.12's, kTLS both ends / stunnel, write throughput", "peer.upstream-pair.tput.write.tls",
     "peer.upstream-pair.tput.write.stunnel"),
    ("pairs: 6.12's, kTLS both ends / stunnel, read throughput", "peer.upstream-pair.tput.read.tls",
     "peer.upstream-pair.tput.read.stunnel"),
    ("pairs: the kernel's AES-256-GCM alone (crypto-loop), ours (6.1) / 6.12's",
     "peer.tlsh-pair.crypto.ktls.AES-256-GCM", "peer.upstream-pair.crypto.ktls.AES-256-GCM"),
    ("pairs: the kernel's AES-128-GCM alone (crypto-loop), ours (6.1) / 6.12's",
     "peer.tlsh-pair.crypto.ktls.AES-128-GCM", "peer.upstream-pair.crypto.ktls.AES-128-GCM"),
    ("pairs profiled: CPU per MiB written in the cipher, ours / 6.12's", "peer.tlsh-pair.prof.write.cipher",
     "peer.upstream-pair.prof.write.cipher"),
    ("pairs profiled: CPU per MiB written in the rest, ours / 6.12's", "peer.tlsh-pair.prof.write.rest",
     "peer.upstream-pair.prof.write.rest"),
    ("pairs profiled: CPU per MiB read in the cipher, ours / 6.12's", "peer.tlsh-pair.prof.read.cipher",
     "peer.upstream-pair.prof.read.cipher"),
    ("pairs profiled: CPU per MiB read in the rest, ours / 6.12's", "peer.tlsh-pair.prof.read.rest",
     "peer.upstream-pair.prof.read.rest"),
]

LINE = re.compile(r"(BENCH|BENCHNA|BENCHINFO) (\S+)(?: (.*))?$")


def parse(path):
    samples, na, info = {}, {}, {}
    with open(path, errors="replace") as f:
        for raw in f:
            raw = raw.replace("\r", "").rstrip("\n")
            i = raw.find("BENCH")
            if i < 0:
                continue
            m = LINE.match(raw[i:])
            if not m:
                continue
            kind, key, rest = m.group(1), m.group(2), (m.group(3) or "").strip()
            if kind == "BENCH":
                try:
                    samples.setdefault(key, []).append(float(rest))
                except ValueError:
                    pass
            elif kind == "BENCHNA":
                na[key] = rest
            else:
                info[key] = rest
    return samples, na, info


def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def p95(v):
    s = sorted(v)
    return s[max(0, math.ceil(0.95 * len(s)) - 1)]


def fmt(x):
    if x is None:
        return "-"
    if abs(x) >= 100:
        return "%.0f" % x
    if abs(x) >= 10:
        return "%.1f" % x
    return "%.2f" % x


def main():
    log, out = sys.argv[1], sys.argv[2]
    samples, na, info = parse(log)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.csv"), "w") as f:
        f.write("metric,sample,value\n")
        for k, v in samples.items():
            for i, x in enumerate(v):
                f.write("%s,%d,%g\n" % (k, i + 1, x))
    stats = {k: (len(v), median(v), p95(v), min(v), max(v)) for k, v in samples.items() if v}
    units = {m: u for m, _, u in ROWS if u}
    known = {m for m, _, _ in ROWS}
    with open(os.path.join(out, "summary.csv"), "w") as f:
        f.write("metric,unit,n,median,p95,min,max,note\n")
        for m in [r[0] for r in ROWS if r[2]] + sorted(set(stats) - known):
            if m in stats:
                n, md, p, lo, hi = stats[m]
                f.write("%s,%s,%d,%g,%g,%g,%g,\n" % (m, units.get(m, ""), n, md, p, lo, hi))
            elif m in na:
                f.write('%s,%s,0,,,,,"%s"\n' % (m, units.get(m, ""), na[m].replace('"', "'")))

    def med(m):
        return stats[m][1] if m in stats else None

    md = []
    txt = []
    md.append("| what | unit | n | median | p95 |")
    md.append("| --- | --- | --- | --- | --- |")
    width = 62
    for m, label, unit in ROWS:
        if unit is None:
            if any(r[0] in stats or r[0] in na for r in ROWS[ROWS.index((m, label, unit)) + 1:]
                   [:next((i for i, r in enumerate(ROWS[ROWS.index((m, label, unit)) + 1:]) if r[2] is None), None)]):
                txt.append("")
                txt.append(m)
                md.append("| **%s** | | | | |" % m)
            continue
        if m in stats:
            n, mdn, p, _, _ = stats[m]
            txt.append("  %-*s %8s %8s  %-7s n=%d" % (width, label, fmt(mdn), fmt(p), unit, n))
            md.append("| %s | %s | %d | %s | %s |" % (label, unit, n, fmt(mdn), fmt(p)))
        elif m in na:
            txt.append("  %-*s %s" % (width, label, na[m]))
            md.append("| %s | %s | 0 | %s | |" % (label, unit, na[m]))
    extra = sorted(set(stats) - known)
    for m in extra:
        n, mdn, p, _, _ = stats[m]
        txt.append("  %-*s %8s %8s  n=%d" % (width, m, fmt(mdn), fmt(p), n))

    txt.append("")
    txt.append("Targets (ratios of medians, same run)")
    md.append("")
    md.append("| target | ratio | result |")
    md.append("| --- | --- | --- |")
    for label, a, b, op, lim in TARGETS:
        if med(a) is not None and med(b):
            r = med(a) / med(b)
            ok = r <= lim if op == "<=" else r >= lim
            res = "MET" if ok else "MISSED"
            txt.append("  %-*s %6.2fx  %s" % (width, label, r, res))
            md.append("| %s | %.2fx | %s |" % (label, r, res))
        else:
            why = na.get(a) or na.get(b) or "no samples"
            txt.append("  %-*s    -    n/a: %s" % (width, label, why))
            md.append("| %s | - | n/a: %s |" % (label, why))
    txt.append("")
    txt.append("Context ratios")
    for label, a, b in CONTEXT:
        if med(a) is not None and med(b):
            txt.append("  %-*s %6.2fx" % (width, label, med(a) / med(b)))
            md.append("| (context) %s | %.2fx | |" % (label, med(a) / med(b)))

    txt.append("")
    txt.append("Notes")
    for k in sorted(info):
        txt.append("  %s: %s" % (k, info[k]))

    report = "\n".join(txt)
    print(report)
    with open(os.path.join(out, "results.txt"), "w") as f:
        f.write(report + "\n")
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    chart(out, stats)


def chart(out, stats):
    """bench.png: four panels of medians with p95 whiskers."""
    if not shutil.which("gnuplot"):
        print("bench: gnuplot not installed, no chart")
        return
    panels = [
        ("Handshake latency (ms)", [("cold", "hs.cold"), ("warm", "hs.warm"), ("resident", "hs.resident"),
                                     ("floor", "hs.floor"), ("gnutls-cli", "hs.gnutls-cli")]),
        ("N handshakes at once, one netns (ms)", [("agent 1", "scale.hs.1"), ("agent 8", "scale.hs.8"),
                                                  ("agent 64", "scale.hs.64"), ("agent 256", "scale.hs.256"),
                                                  ("floor 1", "scale.floor.1"), ("floor 8", "scale.floor.8"),
                                                  ("floor 64", "scale.floor.64"), ("floor 256", "scale.floor.256")]),
        ("One handshake in each of N netns (ms)", [("1 cold", "scale.ns.1.cold"), ("4 cold", "scale.ns.4.cold"),
                                                   ("16 cold", "scale.ns.16.cold"), ("1 warm", "scale.ns.1.warm"),
                                                   ("4 warm", "scale.ns.4.warm"), ("16 warm", "scale.ns.16.warm")]),
        ("NFS mount latency (ms)", [("none", "mount.none"), ("tls cold", "mount.tls.cold"),
                                    ("tls warm", "mount.tls.warm"), ("none, no-TLS srv", "mount.none.notls-server"),
                                    ("auto, no-TLS srv", "mount.auto.notls-server"), ("stunnel", "mount.stunnel")]),
        ("NFS sequential throughput (MiB/s)", [("wr none", "tput.write.none"), ("wr tls", "tput.write.tls"),
                                               ("wr ktls", "tput.write.ktls"),
                                               ("wr stunnel", "tput.write.stunnel"), ("rd none", "tput.read.none"),
                                               ("rd tls", "tput.read.tls"), ("rd ktls", "tput.read.ktls"),
                                               ("rd stunnel", "tput.read.stunnel")]),
        ("Client CPU per MiB (ms)", [("wr none", "cpu.write.none"), ("wr tls", "cpu.write.tls"),
                                     ("wr ktls", "cpu.write.ktls"),
                                     ("wr stunnel", "cpu.write.stunnel"), ("rd none", "cpu.read.none"),
                                     ("rd tls", "cpu.read.tls"), ("rd ktls", "cpu.read.ktls"),
                                     ("rd stunnel", "cpu.read.stunnel")]),
    ]
    gp = ['set terminal pngcairo size 1500,900 font "sans,9"',
          'set output "%s"' % os.path.join(out, "bench.png"),
          'set multiplot layout 2,3 title "tlsh benchmarks (QEMU TCG: ratios matter, not absolute numbers)"',
          'set style fill solid 0.6 border -1', 'set boxwidth 0.6', 'set grid ytics',
          'set xtics rotate by -30', 'set yrange [0:*]', 'unset key']
    for i, (title, items) in enumerate(panels):
        rows = [(lab, stats[m][1], stats[m][2]) for lab, m in items if m in stats]
        data = os.path.join(out, "chart%d.dat" % i)
        with open(data, "w") as f:
            for j, (lab, mdn, p) in enumerate(rows):
                f.write('%d "%s" %g %g\n' % (j, lab, mdn, p))
        gp.append('set title "%s"' % title)
        gp.append("set logscale y" if i in (1, 2) and rows else "unset logscale y")
        gp.append("set yrange [*:*]" if i in (1, 2) and rows else "set yrange [0:*]")
        if rows:
            gp.append('plot "%s" using 1:3:xtic(2) with boxes lc rgb "#4a7ab0", '
                      '"" using 1:3:3:4 with yerrorbars lc rgb "black" pt 0' % data)
        else:
            gp.append('set label 1 "not measured" at graph 0.4,0.5; plot [0:1][0:1] 2; unset label 1')
    gp.append("unset multiplot")
    r = subprocess.run(["gnuplot"], input="\n".join(gp), text=True, capture_output=True)
    if r.returncode:
        print("bench: gnuplot failed:", r.stderr.strip()[:400])
    else:
        print("bench: chart %s" % os.path.join(out, "bench.png"))


if __name__ == "__main__":
    main()
