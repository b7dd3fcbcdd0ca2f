#!/usr/bin/env python3
"""Test helpers for tls-front: a fake RPC backend and an RPC(-with-TLS) client.

  rpctest.py backend --port-file F [--host 127.0.0.1]
      Plain-TCP RPC server.  Each call is answered: an AUTH_TLS (flavor 7)
      credential gets MSG_DENIED AUTH_ERROR AUTH_BADCRED (what Linux 6.1
      knfsd says), procedure 0 gets an empty MSG_ACCEPTED SUCCESS reply,
      any other procedure gets SUCCESS with the call's arguments echoed back
      (large replies are sent in several record fragments).

  rpctest.py client --port P [options]   (see --help)
  rpctest.py gnutls-cli --port P [options]
      The same with gnutls-cli --starttls as the TLS client (PSK, chosen
      priorities): probe, handshake on SIGALRM, one NULL call.
      Exit status 0 when every expectation held; a one-line reason on
      stderr otherwise.  Prints key=value facts on stdout.
"""
import argparse
import os
import socket
import ssl
import struct
import sys
import threading
import time

AUTH_NONE, AUTH_SYS, AUTH_TLS = 0, 1, 7


def rec_mark(payload, frag=0):
    """Record-mark payload, split into fragments of at most frag bytes."""
    if not frag or frag >= len(payload):
        return struct.pack(">I", 0x80000000 | len(payload)) + payload
    out = []
    for i in range(0, len(payload), frag):
        part = payload[i:i + frag]
        last = i + frag >= len(payload)
        out.append(struct.pack(">I", (0x80000000 if last else 0) | len(part)))
        out.append(part)
    return b"".join(out)


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("EOF after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return buf


def read_record(sock):
    data = b""
    while True:
        (h,) = struct.unpack(">I", recv_exact(sock, 4))
        data += recv_exact(sock, h & 0x7FFFFFFF)
        if h & 0x80000000:
            return data


def call(xid, proc, flavor=AUTH_NONE, args=b"", prog=100003, vers=4):
    return struct.pack(">10I", xid, 0, 2, prog, vers, proc, flavor, 0,
                       AUTH_NONE, 0) + args


def parse_reply(rec):
    """Returns (xid, kind, verf_flavor, verf_body, results)."""
    xid, mtype, stat = struct.unpack(">3I", rec[:12])
    if mtype != 1:
        return xid, "not-a-reply", None, None, b""
    if stat == 1:
        rstat, what = struct.unpack(">2I", rec[12:20])
        return xid, "denied-%d-%d" % (rstat, what), None, None, b""
    vfl, vlen = struct.unpack(">2I", rec[12:20])
    vbody = rec[20:20 + vlen]
    off = 20 + ((vlen + 3) & ~3)
    (astat,) = struct.unpack(">I", rec[off:off + 4])
    return xid, "accepted-%d" % astat, vfl, vbody, rec[off + 4:]


# ---------------------------------------------------------------- backend

def serve_conn(conn):
    try:
        while True:
            try:
                rec = read_record(conn)
            except EOFError:
                return
            xid, mtype, rpcvers, prog, vers, proc, cfl, clen = \
                struct.unpack(">8I", rec[:32])
            off = 32 + ((clen + 3) & ~3)
            vfl, vlen = struct.unpack(">2I", rec[off:off + 8])
            off += 8 + ((vlen + 3) & ~3)
            args = rec[off:]
            if cfl == AUTH_TLS:
                rep = struct.pack(">5I", xid, 1, 1, 1, 1)
            elif proc == 0:
                rep = struct.pack(">6I", xid, 1, 0, 0, 0, 0)
            else:
                rep = struct.pack(">6I", xid, 1, 0, 0, 0, 0) + args
            conn.sendall(rec_mark(rep, 3000 if len(rep) > 8192 else 0))
    except (OSError, struct.error):
        return
    finally:
        conn.close()


def backend(a):
    fam = socket.AF_INET6 if ":" in a.host else socket.AF_INET
    ls = socket.socket(fam, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((a.host, 0))
    ls.listen(64)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % ls.getsockname()[1])
    os.rename(tmp, a.port_file)
    deadline = time.time() + a.lifetime
    ls.settimeout(1)
    while time.time() < deadline:
        try:
            conn, _ = ls.accept()
        except socket.timeout:
            continue
        threading.Thread(target=serve_conn, args=(conn,), daemon=True).start()


# ---------------------------------------------------------------- client

class Fail(Exception):
    pass


def probe(sock, frag=0):
    xid = int.from_bytes(os.urandom(4), "big")
    rec = rec_mark(call(xid, 0, AUTH_TLS), frag)
    if frag:
        for i in range(0, len(rec), 5):     # and dribble it out
            sock.sendall(rec[i:i + 5])
            time.sleep(0.005)
    else:
        sock.sendall(rec)
    try:
        rec = read_record(sock)
    except socket.timeout:
        return "no-reply(timeout)"
    except (EOFError, OSError) as e:
        return "no-reply(%s)" % type(e).__name__
    rxid, kind, vfl, vbody, _ = parse_reply(rec)
    if rxid != xid:
        return "badxid"
    if kind == "accepted-0" and vfl == AUTH_NONE and vbody == b"STARTTLS":
        return "starttls"
    if kind == "accepted-0":
        # e.g. accepted-verf0-len8 (wrong body), accepted-verf0-len0
        return "accepted-verf%d-len%d" % (vfl, len(vbody))
    return kind     # e.g. denied-1-1: MSG_DENIED AUTH_ERROR AUTH_BADCRED


def rpc_calls(sock, a, facts):
    xid0 = int.from_bytes(os.urandom(4), "big") & 0x7FFFFFFF
    for batch in range(a.calls):
        n = a.pipeline
        xids = [xid0 + batch * n + i for i in range(n)]
        payload = os.urandom(a.echo) if a.echo else b""
        proc = 1 if a.echo else 0
        out = b"".join(rec_mark(call(x, proc, args=payload), a.frag)
                       for x in xids)
        sock.sendall(out)
        for x in xids:
            rec = read_record(sock)
            rxid, kind, _, _, res = parse_reply(rec)
            if rxid != x:
                raise Fail("reply xid 0x%x, want 0x%x" % (rxid, x))
            if kind != "accepted-0":
                raise Fail("reply %s" % kind)
            if res != payload:
                raise Fail("echo mismatch (%d bytes back, %d sent)"
                           % (len(res), len(payload)))
        if a.pause:
            time.sleep(a.pause)
    facts["calls_ok"] = a.calls * a.pipeline


def expect_closed(sock, timeout):
    sock.settimeout(timeout)
    try:
        while True:
            if not sock.recv(4096):
                return True
    except (ConnectionResetError, ssl.SSLError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def client(a):
    facts = {}
    host = a.host
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(fam, socket.SOCK_STREAM)
    sock.settimeout(a.timeout)
    sock.connect((host, a.port))
    try:
        if a.probe:
            facts["probe"] = probe(sock, a.probe_frag)
            if a.expect_probe and facts["probe"] != a.expect_probe:
                raise Fail("probe answer %s, want %s"
                           % (facts["probe"], a.expect_probe))
        if a.tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.load_verify_locations(a.ca)
            ctx.check_hostname = True
            if a.tls_max:
                ctx.maximum_version = getattr(ssl.TLSVersion, a.tls_max)
            if a.tls_min:
                ctx.minimum_version = getattr(ssl.TLSVersion, a.tls_min)
            if a.cert:
                ctx.load_cert_chain(a.cert, a.key)
            try:
                sock = ctx.wrap_socket(sock, server_hostname=a.name)
            except (ssl.SSLError, OSError) as e:
                facts["handshake"] = "failed"
                raise Fail("handshake: %s" % e)
            facts["handshake"] = "ok"
            facts["version"] = sock.version()
            facts["cipher"] = sock.cipher()[0]
        if a.expect_close:
            if a.send_null:
                try:
                    sock.sendall(rec_mark(call(1, 0)))
                except OSError:
                    pass
            if not expect_closed(sock, a.timeout):
                raise Fail("connection not closed within %ss" % a.timeout)
            facts["closed"] = "yes"
        elif a.calls:
            try:
                rpc_calls(sock, a, facts)
            except (EOFError, OSError, socket.timeout, ssl.SSLError) as e:
                raise Fail("rpc: %s: %s" % (type(e).__name__, e))
        if a.tls and not a.expect_close:
            facts["session_ticket"] = \
                "yes" if sock.session and sock.session.has_ticket else "no"
            if a.expect_ticket and facts["session_ticket"] != "yes":
                raise Fail("no session ticket received")
    except Fail as e:
        print(" ".join("%s=%s" % kv for kv in facts.items()))
        print("rpctest: %s" % e, file=sys.stderr)
        return 1
    finally:
        sock.close()
    print(" ".join("%s=%s" % kv for kv in facts.items()))
    return 0


def gnutls_client(a):
    """Probe, then TLS with gnutls-cli --starttls (PSK or X.509), one call."""
    import select
    import signal
    import subprocess
    # --logfile: informational output to stderr, stdout carries only data
    cmd = ["gnutls-cli", "-p", str(a.port), a.host, "--starttls",
           "--logfile=/dev/stderr"]
    if a.psk_id:
        cmd += ["--pskusername", a.psk_id, "--pskkey", a.psk_key]
    if a.ca:
        cmd += ["--x509cafile", a.ca, "--sni-hostname", a.name,
                "--verify-hostname", a.name]
    else:
        cmd += ["--insecure"]
    if a.priority:
        cmd += ["--priority", a.priority]
    facts = {}
    lines = []
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)

    def err_reader():
        for ln in p.stderr:
            ln = ln.decode(errors="replace").rstrip()
            lines.append(ln)

    threading.Thread(target=err_reader, daemon=True).start()

    def rd(n):
        buf = b""
        end = time.time() + a.timeout
        while len(buf) < n and time.time() < end:
            r, _, _ = select.select([p.stdout], [], [], 0.1)
            if r:
                chunk = os.read(p.stdout.fileno(), n - len(buf))
                if not chunk:
                    break
                buf += chunk
        return buf

    try:
        xid = 0x4000 + (os.getpid() & 0xFFF)
        p.stdin.write(rec_mark(call(xid, 0, AUTH_TLS)))
        p.stdin.flush()
        rep = rd(36)
        if len(rep) != 36 or parse_reply(rep[4:])[3] != b"STARTTLS":
            raise Fail("probe: no STARTTLS (%r)" % rep)
        facts["probe"] = "starttls"
        p.send_signal(signal.SIGALRM)
        # Wait until gnutls-cli has left its plaintext loop, or it could
        # still send the next call in the clear.
        end = time.time() + a.timeout
        while time.time() < end and p.poll() is None and \
                not any("Starting TLS handshake" in ln for ln in lines):
            time.sleep(0.01)
        # gnutls-cli reads stdin only once the handshake is done, and in
        # --starttls mode it reports only failures: a reply to a NULL call
        # is the proof of a completed handshake.  Session details are in
        # tls-front's log.
        p.stdin.write(rec_mark(call(xid + 1, 0)))
        p.stdin.flush()
        rep = rd(28)
        if any("andshake has failed" in ln or "Error" in ln for ln in lines):
            facts["handshake"] = "failed"
            raise Fail("handshake failed: %s" % " | ".join(lines[-3:]))
        if len(rep) != 28:
            raise Fail("no reply to NULL call inside TLS (%d bytes): %s"
                       % (len(rep), " | ".join(lines[-3:])))
        facts["handshake"] = "ok"
        rxid, kind, _, _, _ = parse_reply(rep[4:])
        if rxid != xid + 1 or kind != "accepted-0":
            raise Fail("bad reply xid=0x%x %s" % (rxid, kind))
        facts["calls_ok"] = 1
    except (Fail, BrokenPipeError) as e:
        print(" ".join("%s=%s" % kv for kv in facts.items()))
        print("rpctest: %s" % e, file=sys.stderr)
        return 1
    finally:
        p.kill()
        p.wait()
    print(" ".join("%s=%s" % kv for kv in facts.items()))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("backend")
    b.add_argument("--port-file", required=True)
    b.add_argument("--host", default="127.0.0.1")
    b.add_argument("--lifetime", type=float, default=300,
                   help="exit after this many seconds")
    c = sub.add_parser("client")
    c.add_argument("--host", default="127.0.0.1")
    c.add_argument("--port", type=int, required=True)
    c.add_argument("--timeout", type=float, default=5)
    c.add_argument("--probe", action="store_true", help="send AUTH_TLS probe")
    c.add_argument("--expect-probe", help="starttls, denied-1-1, ...")
    c.add_argument("--probe-frag", type=int, default=0,
                   help="send the probe in fragments of this size, slowly")
    c.add_argument("--tls", action="store_true", help="TLS after the probe")
    c.add_argument("--ca")
    c.add_argument("--name", default="server.test")
    c.add_argument("--cert")
    c.add_argument("--key")
    c.add_argument("--tls-max", help="TLSv1_2 or TLSv1_3")
    c.add_argument("--tls-min", help="TLSv1_2 or TLSv1_3")
    c.add_argument("--calls", type=int, default=1,
                   help="batches of RPC calls (0: none)")
    c.add_argument("--pipeline", type=int, default=1,
                   help="calls sent back to back per batch")
    c.add_argument("--echo", type=int, default=0,
                   help="use the echo procedure with this many arg bytes")
    c.add_argument("--frag", type=int, default=0,
                   help="record fragment size for calls")
    c.add_argument("--pause", type=float, default=0,
                   help="sleep between batches")
    c.add_argument("--expect-close", action="store_true",
                   help="expect the server to close the connection")
    c.add_argument("--send-null", action="store_true",
                   help="with --expect-close: send a plain NULL call first")
    c.add_argument("--expect-ticket", action="store_true")
    g = sub.add_parser("gnutls-cli", help="drive gnutls-cli --starttls")
    g.add_argument("--host", default="127.0.0.1")
    g.add_argument("--port", type=int, required=True)
    g.add_argument("--timeout", type=float, default=5)
    g.add_argument("--psk-id")
    g.add_argument("--psk-key")
    g.add_argument("--ca")
    g.add_argument("--name", default="server.test")
    g.add_argument("--priority")
    a = ap.parse_args()
    if a.cmd == "gnutls-cli":
        return gnutls_client(a)
    if a.cmd == "backend":
        backend(a)
        return 0
    return client(a)


if __name__ == "__main__":
    sys.exit(main())
