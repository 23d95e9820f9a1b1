# SPDX-License-Identifier: MIT
"""Tests for tools/carapace-tls, the transport of live migration
(docs/migration.md, "Transport"): credentials and their checks, the test
credentials `init` makes, the destination's listener (every peer that does
not authenticate is refused, and nothing of it is handed on), the source's
checks of the destination, the ready mark, the TLS connection the relay
drives (bytes intact both ways, a tampered record breaks the stream), and
plain TCP kept to the loopback.  No QEMU; openssl makes the credentials."""

import os
import socket
import ssl
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from carapace import tls

pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "carapace-tls"


@pytest.fixture(autouse=True)
def no_tls_dir_env(monkeypatch):
    monkeypatch.delenv(tls.TLS_DIR_ENV, raising=False)


# --- what init makes ------------------------------------------------------------------


def openssl_verify(ca, cert, purpose):
    return subprocess.run(["openssl", "verify", "-x509_strict", "-purpose", purpose,
                           "-CAfile", str(ca), str(cert)], capture_output=True, text=True)


def test_init_makes_a_private_set_that_verifies(tls_creds):
    d = tls_creds.main
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    for name in ("ca-cert.pem", "ca-key.pem", "server-cert.pem", "server-key.pem",
                 "client-cert.pem", "client-key.pem"):
        assert stat.S_IMODE((d / name).stat().st_mode) == 0o600, name
    ca = d / "ca-cert.pem"
    assert openssl_verify(ca, d / "server-cert.pem", "sslserver").returncode == 0
    assert openssl_verify(ca, d / "client-cert.pem", "sslclient").returncode == 0
    # each certificate for its own end only
    assert openssl_verify(ca, d / "server-cert.pem", "sslclient").returncode != 0
    assert openssl_verify(ca, d / "client-cert.pem", "sslserver").returncode != 0
    # a second host of the same CA has no CA key; another CA's set does not verify here
    assert not (tls_creds.second / "ca-key.pem").exists()
    assert (tls_creds.second / "ca-cert.pem").read_bytes() == ca.read_bytes()
    assert openssl_verify(ca, tls_creds.second / "server-cert.pem", "sslserver").returncode == 0
    assert openssl_verify(ca, tls_creds.other / "client-cert.pem", "sslclient").returncode != 0


def test_init_refuses_to_overwrite_and_bad_names(tls_creds, tmp_path):
    r = subprocess.run([sys.executable, str(TOOL), "init", str(tls_creds.main)],
                       capture_output=True, text=True)
    assert r.returncode == 3 and "already holds ca-cert.pem" in r.stderr and "--force" in r.stderr
    with pytest.raises(tls.ConfigError, match="--name 'a/b'"):
        tls.init_credentials(tmp_path / "x", name="a/b")
    with pytest.raises(tls.ConfigError, match="--ip 300.1.1.1: not an IP address"):
        tls.init_credentials(tmp_path / "x", name="h", ips=["300.1.1.1"])
    with pytest.raises(tls.ConfigError, match="ca-key.pem does not exist"):
        tls.init_credentials(tmp_path / "y", ca_dir=tls_creds.second)   # no CA key there


# --- credentials --------------------------------------------------------------------------


def test_missing_credentials_say_what_to_give(tmp_path):
    with pytest.raises(tls.ConfigError) as e:
        tls.find_credentials("server", plain_hint="; or --plain")
    text = str(e.value)
    for word in ("no TLS credentials for the destination", "--tls-dir DIR", "ca-cert.pem",
                 "server-cert.pem", "server-key.pem", "tools/carapace-tls init DIR",
                 "--tls-ca", "$CARAPACE_TLS_DIR", "; or --plain"):
        assert word in text, word
    (tmp_path / "ca-cert.pem").write_text("x")
    with pytest.raises(tls.ConfigError, match=r"certificate .*client-cert.pem does not exist "
                                              r"\(a source needs ca-cert.pem, client-cert.pem"):
        tls.find_credentials("client", tmp_path)
    with pytest.raises(tls.ConfigError, match="not a directory"):
        tls.find_credentials("client", tmp_path / "ca-cert.pem")


def test_credentials_from_the_environment(tls_creds, monkeypatch):
    monkeypatch.setenv(tls.TLS_DIR_ENV, str(tls_creds.main))
    creds = tls.find_credentials("client")
    assert creds.cert == tls_creds.main / "client-cert.pem"
    # a file given one by one wins over the directory's
    creds = tls.find_credentials("client", cert=tls_creds.second / "client-cert.pem",
                                 key=tls_creds.second / "client-key.pem")
    assert creds.cert.parent == tls_creds.second and creds.ca.parent == tls_creds.main


def test_a_key_every_user_can_read_is_refused(tls_creds, tmp_path):
    key = tmp_path / "key.pem"
    key.write_bytes((tls_creds.main / "server-key.pem").read_bytes())
    key.chmod(0o644)
    with pytest.raises(tls.ConfigError, match=r"readable by every user \(mode 0644\): "
                                              r"chmod 600"):
        tls.find_credentials("server", tls_creds.main, key=key)
    key.chmod(0o640)                           # a group may (Debian's ssl-cert)
    tls.find_credentials("server", tls_creds.main, key=key)


def test_a_key_that_is_not_the_certificates_is_refused(tls_creds):
    creds = tls.find_credentials("server", tls_creds.main,
                                 key=tls_creds.main / "client-key.pem")
    with pytest.raises(tls.ConfigError, match="key values mismatch"):
        tls.make_context(creds)


def test_contexts_speak_tls13_only_and_trust_only_the_ca(tls_creds):
    for role in ("server", "client"):
        ctx = tls.make_context(tls.find_credentials(role, tls_creds.main))
        assert ctx.minimum_version == ssl.TLSVersion.TLSv1_3
        assert ctx.verify_mode == ssl.CERT_REQUIRED
        assert len(ctx.get_ca_certs()) == 1       # never the system's CAs
    assert tls.make_context(tls.find_credentials("client", tls_creds.main)).check_hostname


# --- plain TCP: the loopback only ---------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "127.3.4.5", "::1", "localhost"])
def test_plain_on_the_loopback(host):
    assert tls.plain_transport(host, "--plain").mode == "plain"


@pytest.mark.parametrize("host", ["localhost", "LocalHost.", "relay.localhost"])
def test_localhost_names_need_no_resolver(host, monkeypatch):
    """A minimal Debian has no /etc/hosts: its resolver knows no "localhost".
    RFC 6761 reserves the names for the loopback, so they are taken as it
    without asking (the fresh-machine run failed here)."""
    real = socket.getaddrinfo

    def no_hosts_file(name, *args, **kw):
        if "localhost" in str(name).lower():
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(name, *args, **kw)
    monkeypatch.setattr(socket, "getaddrinfo", no_hosts_file)
    assert tls.plain_transport(host, "--plain").mode == "plain"
    assert not tls.is_loopback("localhost.example.com")


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "10.1.2.3", "192.0.2.7",
                                  "no-such-host.invalid"])
def test_plain_refused_off_the_loopback(host):
    with pytest.raises(tls.ConfigError, match="plain TCP only on the loopback"):
        tls.plain_transport(host, "--plain")


# --- the handshake, both ends -----------------------------------------------------------


class Dest:
    """A destination's listener on 127.0.0.1 with the given credentials,
    recording its events."""

    def __init__(self, creds_dir, peers=(), handshake_timeout=5.0, mode="tls"):
        self.events = []
        if mode == "tls":
            self.transport = tls.destination_transport(creds_dir, peers=peers)
        else:
            self.transport = tls.plain_transport("127.0.0.1", "test")
        self.listener = tls.Listener(tls.listen("127.0.0.1", 0), self.transport, self.note,
                                     handshake_timeout).start()
        self.port = self.listener.sock.getsockname()[1]

    def note(self, kind, text, **fields):
        self.events.append({"event": kind, "text": text, **fields})

    def wait_event(self, kind, timeout=10):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            got = [e for e in self.events if e["event"] == kind]
            if got:
                return got
            time.sleep(0.01)
        pytest.fail(f"no {kind} event: {self.events}")

    def close(self):
        self.listener.close()


@pytest.fixture
def dests():
    made = []

    def make(*args, **kw):
        d = Dest(*args, **kw)
        made.append(d)
        return d
    yield make
    for d in made:
        d.close()


def source(creds_dir, port, name=None, host="127.0.0.1", **files):
    """The source's side: handshake and ready mark; (conn, identity) or Refused."""
    transport = tls.source_transport(creds_dir, name=name, **files)
    raw = socket.create_connection((host, port), 5)
    conn, who = tls.client_handshake(raw, transport, host, 5)
    try:
        tls.wait_ready(conn, 5)
    except BaseException:
        conn.close()
        raise
    return conn, who


def serve_ready(dest):
    """What a destination's relay does with an authenticated peer: the ready mark."""
    def run():
        try:
            conn, peer, who = dest.listener.accept(10)
        except TimeoutError:
            return
        dest.accepted = (conn, peer, who)
        tls.send_ready(conn)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_both_hosts_authenticated(dests, tls_creds):
    d = dests(tls_creds.main)
    t = serve_ready(d)
    conn, who = source(tls_creds.second, d.port)     # hostb.test, same CA
    t.join(5)
    assert who["subject"] == "localhost" and "127.0.0.1" in who["names"]
    assert who["version"] == "TLSv1.3" and who["issuer"].startswith("Carapace migration CA")
    _, peer, src = d.accepted
    assert src["subject"] == "hostb.test" and peer.startswith("127.0.0.1:")
    assert [e["event"] for e in d.events] == ["accepted"]
    assert d.events[0]["mode"] == "tls" and d.events[0]["subject"] == "hostb.test"
    conn.close()
    d.accepted[0].close()


def refused_reasons(d, n=1):
    d.wait_event("refused")
    end = time.monotonic() + 5
    while len([e for e in d.events if e["event"] == "refused"]) < n and time.monotonic() < end:
        time.sleep(0.01)
    return [e["reason"] for e in d.events if e["event"] == "refused"]


def nothing_handed_on(d):
    with pytest.raises(TimeoutError):
        d.listener.accept(0.3)


def test_a_source_without_a_certificate_is_refused(dests, tls_creds):
    d = dests(tls_creds.main)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_verify_locations(str(tls_creds.main / "ca-cert.pem"))
    raw = socket.create_connection(("127.0.0.1", d.port), 5)
    conn, _ = tls.client_handshake(raw, tls.Transport("tls", ctx), "127.0.0.1", 5)
    with pytest.raises(tls.Refused) as e:
        tls.wait_ready(conn, 5)
    assert e.value.reason == "refused-by-peer" and "certificate required" in e.value.message
    conn.close()
    assert refused_reasons(d) == ["no-certificate"]
    nothing_handed_on(d)


def test_a_source_of_another_ca_is_refused(dests, tls_creds):
    d = dests(tls_creds.main)
    # it trusts our CA (so it gets as far as showing its certificate)
    with pytest.raises(tls.Refused) as e:
        source(tls_creds.other, d.port, ca=tls_creds.main / "ca-cert.pem")
    assert e.value.reason == "refused-by-peer", e.value.message
    assert refused_reasons(d) == ["certificate"]
    assert "does not verify" in d.events[0]["error"]
    nothing_handed_on(d)


def test_a_server_certificate_does_not_do_for_a_source(dests, tls_creds):
    """Certificates are checked for their purpose: the destination's own
    certificate (serverAuth) cannot open a migration to another destination."""
    d = dests(tls_creds.main)
    with pytest.raises(tls.Refused):
        source(tls_creds.main, d.port, cert=tls_creds.second / "server-cert.pem",
               key=tls_creds.second / "server-key.pem")
    assert refused_reasons(d) == ["certificate"]
    nothing_handed_on(d)


@pytest.mark.parametrize("data", [b"GET / HTTP/1.0\r\n\r\n",
                                  b"CARAMIGR" + bytes(24),       # a migration header
                                  bytes(range(256)) * 4])
def test_plain_bytes_to_the_tls_port_are_refused(dests, tls_creds, data):
    d = dests(tls_creds.main)
    with socket.create_connection(("127.0.0.1", d.port), 5) as s:
        s.sendall(data)
        s.settimeout(5)
        try:
            while s.recv(4096):       # its alert, then the end
                pass
        except ConnectionResetError:
            pass
    assert refused_reasons(d) == ["not-tls"]
    nothing_handed_on(d)


def test_tls12_is_refused(dests, tls_creds):
    d = dests(tls_creds.main)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_verify_locations(str(tls_creds.main / "ca-cert.pem"))
    ctx.load_cert_chain(str(tls_creds.main / "client-cert.pem"),
                        str(tls_creds.main / "client-key.pem"))
    raw = socket.create_connection(("127.0.0.1", d.port), 5)
    with pytest.raises(tls.Refused) as e:
        tls.client_handshake(raw, tls.Transport("tls", ctx), "127.0.0.1", 5)
    assert e.value.reason == "not-tls"
    assert refused_reasons(d) == ["not-tls"]
    nothing_handed_on(d)


def test_a_silent_peer_times_out_and_delays_nobody(dests, tls_creds):
    """Handshakes run side by side: a peer that says nothing is dropped after
    the handshake timeout, and a source that comes meanwhile gets through."""
    d = dests(tls_creds.main, handshake_timeout=1.5)
    silent = socket.create_connection(("127.0.0.1", d.port), 5)
    t = serve_ready(d)
    t0 = time.monotonic()
    conn, _ = source(tls_creds.main, d.port)
    assert time.monotonic() - t0 < 1.0          # not behind the silent one
    t.join(5)
    assert refused_reasons(d) == ["timeout"]
    silent.close()
    conn.close()
    d.accepted[0].close()


def test_only_named_sources(dests, tls_creds):
    d = dests(tls_creds.main, peers=("hostb.test",))
    with pytest.raises(tls.Refused) as e:
        source(tls_creds.main, d.port)                 # localhost: not allowed
    assert e.value.reason == "closed"
    assert refused_reasons(d) == ["name"]
    assert "none of the allowed hostb.test" in d.events[-1]["error"]
    t = serve_ready(d)
    conn, _ = source(tls_creds.second, d.port)         # hostb.test
    t.join(5)
    conn.close()
    d.accepted[0].close()


def test_busy_destination_refuses_a_second_source(dests, tls_creds):
    d = dests(tls_creds.main)
    d.listener.busy = True
    with pytest.raises(tls.Refused) as e:
        source(tls_creds.main, d.port)
    assert e.value.reason == "closed" and "refused this host, or its stream port is busy" \
        in e.value.message
    assert refused_reasons(d) == ["busy"]


def test_the_source_refuses_a_destination_of_another_ca(dests, tls_creds):
    d = dests(tls_creds.other)
    with pytest.raises(tls.Refused) as e:
        source(tls_creds.main, d.port)
    assert e.value.reason == "certificate" and "does not verify" in e.value.message
    # the destination learns why (the source's alert) and hands nothing on
    assert refused_reasons(d) == ["refused-by-peer"]
    nothing_handed_on(d)


def test_the_source_checks_the_destinations_name(dests, tls_creds):
    d = dests(tls_creds.second)                        # hostb.test, 127.0.0.1
    with pytest.raises(tls.Refused) as e:
        source(tls_creds.main, d.port, name="hosta.test")
    assert e.value.reason == "name" and "hosta.test" in e.value.message
    t = serve_ready(d)
    conn, who = source(tls_creds.main, d.port, name="hostb.test")
    t.join(5)
    assert who["subject"] == "hostb.test"
    conn.close()
    d.accepted[0].close()


def test_ready_mark_must_be_ours(tls_creds):
    """A TLS server of the same CA that is no Carapace relay is refused."""
    ctx = tls.make_context(tls.find_credentials("server", tls_creds.main))
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve():
        raw, _ = server.accept()
        with ctx.wrap_socket(raw, server_side=True) as conn:
            conn.sendall(b"HTTP/1.1")
            time.sleep(0.5)
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    with pytest.raises(tls.Refused) as e:
        source(tls_creds.main, port)
    assert e.value.reason == "protocol" and "not a Carapace migration relay" in e.value.message
    t.join(5)
    server.close()


# --- the connection the relay drives -------------------------------------------------------


def pump(conn, data, got, want):
    """Send @data and collect @want bytes into @got, with the relay's
    non-blocking calls (BlockingIOError, .buffered, .pending_out)."""
    import selectors
    view = memoryview(data)
    deadline = time.monotonic() + 60
    with selectors.DefaultSelector() as sel:
        while (view or conn.pending_out or len(got) < want) and time.monotonic() < deadline:
            mask = selectors.EVENT_READ
            if view or conn.pending_out:
                mask |= selectors.EVENT_WRITE
            sel.register(conn, mask)
            sel.select(0 if conn.buffered else 0.2)
            sel.unregister(conn)
            try:
                chunk = conn.recv(1 << 20)
                if not chunk:
                    break
                got += chunk
            except BlockingIOError:
                pass
            if view:
                try:
                    view = view[conn.send(view):]
                except BlockingIOError:
                    pass
            conn.flush()


def test_bytes_go_both_ways_intact(dests, tls_creds):
    """10 MiB each way at once: what arrives is what was sent."""
    d = dests(tls_creds.main)
    t = serve_ready(d)
    client, _ = source(tls_creds.main, d.port)
    t.join(5)
    server = d.accepted[0]
    a = os.urandom(10 << 20)
    b = os.urandom(10 << 20)
    got_a, got_b = bytearray(), bytearray()
    threads = [threading.Thread(target=pump, args=(client, a, got_b, len(b))),
               threading.Thread(target=pump, args=(server, b, got_a, len(a)))]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert bytes(got_a) == a and bytes(got_b) == b
    client.close()
    # close delivers a close_notify: the other end reads the end of the stream
    end = time.monotonic() + 5
    while time.monotonic() < end:
        try:
            assert server.recv(10) == b""
            break
        except BlockingIOError:
            time.sleep(0.01)
    server.close()


def test_a_tampered_record_breaks_the_stream(dests, tls_creds):
    """A byte changed on the wire after the handshake: the receiver refuses the
    record (TlsStreamError), it never returns altered bytes."""
    d = dests(tls_creds.main)
    proxy = socket.create_server(("127.0.0.1", 0))
    state = {"flip": False}

    def run_proxy():
        a, _ = proxy.accept()
        b = socket.create_connection(("127.0.0.1", d.port))

        def copy(src, dst, flips):
            try:
                while True:
                    data = bytearray(src.recv(65536))
                    if not data:
                        break
                    if flips and state["flip"]:
                        data[-1] ^= 1
                        state["flip"] = False
                    dst.sendall(data)
            except OSError:
                pass
        threading.Thread(target=copy, args=(b, a, False), daemon=True).start()
        copy(a, b, True)
    threading.Thread(target=run_proxy, daemon=True).start()
    t = serve_ready(d)
    client, _ = source(tls_creds.main, proxy.getsockname()[1])
    t.join(5)
    server = d.accepted[0]
    state["flip"] = True
    client.send(b"x" * 1000)
    client.flush()
    end = time.monotonic() + 5
    with pytest.raises(tls.TlsStreamError, match="bad record mac|decryption failed"):
        while time.monotonic() < end:
            try:
                data = server.recv(4096)
                assert not data.startswith(b"x"), "an altered record was accepted"
                if data == b"":
                    break
            except BlockingIOError:
                time.sleep(0.01)
    client.close()
    server.close()
    proxy.close()
