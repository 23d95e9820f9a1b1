# SPDX-License-Identifier: MIT
"""The transport that carries a live migration between two hosts: TLS 1.3
with an X.509 certificate on each side (the credentials' layout and the
rules are in carapace-tls's help, carapace/cli/tls.py; docs/migration.md,
"Transport", is the contract)."""

import dataclasses
import ipaddress
import os
import queue
import secrets
import select
import shutil
import socket
import ssl
import stat
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from .hostnames import host_address


TLS_DIR_ENV = "CARAPACE_TLS_DIR"
CA_FILE = "ca-cert.pem"
ROLE_FILES = {"server": ("server-cert.pem", "server-key.pem"),     # the destination
              "client": ("client-cert.pem", "client-key.pem")}     # the source
CA_KEY_FILE = "ca-key.pem"

# The ready mark: the destination's relay sends these 8 bytes once it has
# authenticated the source and connected its hypervisor's stream port; only
# then does the source's relay start the migration.  Never forwarded.
READY = b"CARARDY1"
HANDSHAKE_TIMEOUT = 10.0       # seconds a peer has to complete the TLS handshake
MAX_HANDSHAKES = 16            # handshakes in flight on one listener; more are refused
RAW_CHUNK = 256 * 1024         # TCP bytes read at once
SEND_CHUNK = 64 * 1024        # plaintext bytes taken per send() (4 TLS records)
OUT_HIGH_WATER = 4 << 20       # encrypted bytes held before send() pushes back
CLOSE_FLUSH = 5.0              # seconds close() may take to deliver what it holds

REASONS = ("certificate", "name", "no-certificate", "refused-by-peer", "not-tls", "closed",
           "timeout", "busy", "protocol")


class ConfigError(Exception):
    """Missing or unusable credentials, or a plain transport asked for off the
    loopback: nothing was sent (a usage error)."""


class Refused(Exception):
    """A peer that did not authenticate, or that refused us.  @reason is one of
    REASONS (docs/migration.md, "Transport"), @message says it for people."""

    def __init__(self, reason, message):
        super().__init__(message)
        self.reason, self.message = reason, message


class TlsStreamError(OSError):
    """The TLS layer failed after the handshake (a record that does not
    authenticate, an alert): the stream is broken."""


# --- credentials ------------------------------------------------------------------


@dataclasses.dataclass
class Credentials:
    """One side's credentials: @role "server" (the destination) or "client"
    (the source)."""
    role: str
    ca: Path
    cert: Path
    key: Path


def _readable(path, what, hint):
    try:
        st = path.stat()
    except FileNotFoundError:
        raise ConfigError(f"{what} {path} does not exist{hint}") from None
    except OSError as e:
        raise ConfigError(f"{what} {path}: {e.strerror or e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"{what} {path} is not a file")
    return st


def find_credentials(role, tls_dir=None, ca=None, cert=None, key=None, plain_hint=""):
    """The @role's files: each of @ca, @cert, @key if given, else from @tls_dir,
    else from $CARAPACE_TLS_DIR.  Raises ConfigError saying what is missing
    and how to give it (@plain_hint: how to ask for plain TCP instead)."""
    cert_name, key_name = ROLE_FILES[role]
    side = "destination" if role == "server" else "source"
    env = os.environ.get(TLS_DIR_ENV)
    base = Path(tls_dir) if tls_dir else (Path(env) if env else None)
    if base is None and not (ca and cert and key):
        raise ConfigError(
            f"no TLS credentials for the {side}: give --tls-dir DIR (holding {CA_FILE}, "
            f"{cert_name}, {key_name}; `tools/carapace-tls init DIR` makes a test set), "
            f"or --tls-ca, --tls-cert and --tls-key, or set ${TLS_DIR_ENV}" + plain_hint)
    if base is not None and not base.is_dir():
        source = "--tls-dir" if tls_dir else f"${TLS_DIR_ENV}"
        raise ConfigError(f"{source} {base}: not a directory")
    hint = f" (a {side} needs {CA_FILE}, {cert_name} and {key_name})"
    creds = Credentials(role, Path(ca) if ca else base / CA_FILE,
                        Path(cert) if cert else base / cert_name,
                        Path(key) if key else base / key_name)
    _readable(creds.ca, "CA certificate", hint)
    _readable(creds.cert, "certificate", hint)
    st = _readable(creds.key, "private key", hint)
    if st.st_mode & stat.S_IROTH:
        raise ConfigError(f"private key {creds.key} is readable by every user (mode "
                          f"{stat.S_IMODE(st.st_mode):04o}): chmod 600 {creds.key}")
    return creds


def make_context(creds):
    """The SSLContext of @creds: TLS 1.3 only, the peer's certificate required
    and checked against @creds.ca alone (strict X.509 rules, and its purpose:
    a server certificate for the destination, a client one for the source)."""
    server = creds.role == "server"
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server else ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.verify_flags |= ssl.VERIFY_X509_STRICT
    if server:
        ctx.num_tickets = 0            # no session resumption: every source authenticates
    try:
        ctx.load_verify_locations(cafile=str(creds.ca))
    except (ssl.SSLError, OSError) as e:
        raise ConfigError(f"CA certificate {creds.ca}: not a usable PEM certificate "
                          f"({_ssl_text(e)})") from None
    try:
        ctx.load_cert_chain(str(creds.cert), str(creds.key))
    except (ssl.SSLError, OSError) as e:
        raise ConfigError(f"certificate {creds.cert} with key {creds.key}: {_ssl_text(e)} "
                          "(a PEM certificate and the unencrypted PEM key that belongs to "
                          "it)") from None
    return ctx


@dataclasses.dataclass
class Transport:
    """How one relay reaches its peer: @mode "tls" (with @context) or "plain".
    Source: @name is the name the destination's certificate must carry (None:
    the HOST it connects to).  Destination: @peers, when not empty, are the
    names of which a source's certificate must carry one."""
    mode: str
    context: ssl.SSLContext | None = None
    creds: Credentials | None = None
    name: str | None = None
    peers: tuple = ()

    @property
    def label(self):
        return "TLS" if self.mode == "tls" else "plain TCP"


def source_transport(tls_dir=None, ca=None, cert=None, key=None, name=None, plain_hint=""):
    creds = find_credentials("client", tls_dir, ca, cert, key, plain_hint)
    return Transport("tls", make_context(creds), creds, name=name)


def destination_transport(tls_dir=None, ca=None, cert=None, key=None, peers=(),
                          plain_hint=""):
    creds = find_credentials("server", tls_dir, ca, cert, key, plain_hint)
    return Transport("tls", make_context(creds), creds, peers=tuple(peers))


def is_loopback(host):
    """True if every address @host stands for is a loopback address."""
    if host in ("", None):
        return False                   # the wildcard: every interface
    try:
        infos = socket.getaddrinfo(host_address(host), None, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return False
    addrs = {info[4][0].split("%", 1)[0] for info in infos}
    return bool(addrs) and all(ipaddress.ip_address(a).is_loopback for a in addrs)


def plain_transport(host, what):
    """A plain transport, allowed only when @host is a loopback address (@what
    names the option, for the error)."""
    if not is_loopback(host):
        raise ConfigError(f"{what}: plain TCP only on the loopback (127.0.0.1, ::1, "
                          f"localhost), not {host or 'every interface'}: between hosts the "
                          "stream must be authenticated and encrypted (TLS, --tls-dir)")
    return Transport("plain")


# --- the TLS connection -------------------------------------------------------------


def _ssl_text(e):
    if isinstance(e, ssl.SSLCertVerificationError) and e.verify_message:
        return e.verify_message
    reason = getattr(e, "reason", None)
    if reason:
        return reason.lower().replace("_", " ")
    return getattr(e, "strerror", None) or str(e)


def classify(e, server_side):
    """A failed handshake as (reason, message) for people."""
    peer = "the source" if server_side else "the destination"
    if isinstance(e, ssl.SSLCertVerificationError):
        code = e.verify_code
        # X509_V_ERR_HOSTNAME_MISMATCH 62, _EMAIL_ 63, _IP_ADDRESS_ 64
        if code in (62, 63, 64):
            return "name", (f"{peer}'s certificate does not carry the expected name "
                            f"({e.verify_message})")
        return "certificate", f"{peer}'s certificate does not verify: {e.verify_message}"
    reason = (getattr(e, "reason", None) or "").upper()
    if reason == "PEER_DID_NOT_RETURN_A_CERTIFICATE":
        return "no-certificate", f"{peer} presented no certificate"
    if "ALERT" in reason and any(w in reason for w in ("CERTIFICATE", "UNKNOWN_CA",
                                                       "ACCESS_DENIED", "DECRYPT_ERROR")):
        return "refused-by-peer", f"{peer} refused this host's certificate ({_ssl_text(e)})"
    if isinstance(e, ssl.SSLEOFError) or reason in ("UNEXPECTED_EOF_WHILE_READING",):
        return "closed", f"{peer} closed the connection during the TLS handshake"
    if isinstance(e, ssl.SSLError):
        return "not-tls", f"{peer} does not speak TLS 1.3 ({_ssl_text(e)})"
    return "closed", f"{peer}: {_ssl_text(e)}"


class TlsConn:
    """A TLS connection over a TCP socket, for a selector loop (carapace-ctl's
    MigRelay): the socket is non-blocking and the TLS state machine runs on
    memory BIOs, so reading and writing never block and never lose bytes.

    recv(n) returns up to @n plaintext bytes, b"" at the end of the stream, or
    raises BlockingIOError; bytes decrypted beyond @n wait in .buffered, which
    a selector does not see (the relay reads them without waiting).  send()
    encrypts and returns how much it took; what the socket does not take yet
    waits in .pending_out (flush() pushes it when the socket is writable).
    close() delivers what is pending (for up to CLOSE_FLUSH seconds) and a
    close_notify."""

    send_chunk = SEND_CHUNK           # what send() takes at most: callers copy no more

    def __init__(self, raw, obj, incoming, outgoing):
        self.raw, self.obj, self.incoming, self.outgoing = raw, obj, incoming, outgoing
        self.plain = bytearray()       # decrypted, not yet taken by recv()
        self.out = bytearray()         # encrypted, not yet taken by the socket
        self.eof = False
        self.error = None              # why the TLS layer failed, for people
        self.closed = False
        raw.setblocking(False)

    def fileno(self):
        return self.raw.fileno()

    def setblocking(self, flag):
        """The socket stays non-blocking: the relay's loop is the only waiter."""

    def getpeercert(self):
        return self.obj.getpeercert()

    @property
    def buffered(self):
        return len(self.plain)

    @property
    def pending_out(self):
        return len(self.out)

    def _decrypt(self):
        while True:
            try:
                chunk = self.obj.read(RAW_CHUNK)
            except ssl.SSLWantReadError:
                return
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                self.eof = True        # close_notify, or a TCP end: the stream's end
                return
            except ssl.SSLError as e:
                self.eof = True
                self.error = _ssl_text(e)
                return
            if not chunk:
                self.eof = True
                return
            self.plain += chunk

    def recv(self, n):
        if not self.plain and not self.eof:
            data = self.raw.recv(RAW_CHUNK)    # BlockingIOError: nothing came
            if data:
                self.incoming.write(data)
            else:
                self.incoming.write_eof()
            self._decrypt()
            self.out += self.outgoing.read()   # a post-handshake message may want an answer
            self.flush()
            if not data:
                self.eof = True
        if self.plain:
            out = bytes(self.plain[:n])
            del self.plain[:n]
            return out
        if self.error:
            raise TlsStreamError(f"TLS: {self.error}")
        if self.eof:
            return b""
        raise BlockingIOError("no whole TLS record yet")

    def send(self, data):
        self.flush()
        if len(self.out) >= OUT_HIGH_WATER:
            raise BlockingIOError("the peer is not reading")
        n = min(len(data), SEND_CHUNK)
        try:
            self.obj.write(data[:n])
        except ssl.SSLError as e:
            raise TlsStreamError(f"TLS: {_ssl_text(e)}") from None
        self.out += self.outgoing.read()
        self.flush()
        return n

    def flush(self):
        while self.out:
            try:
                sent = self.raw.send(self.out)
            except (BlockingIOError, InterruptedError):
                return
            del self.out[:sent]

    def close(self):
        if self.closed:
            return
        self.closed = True
        try:
            try:
                self.obj.unwrap()
            except (ssl.SSLError, ValueError):
                pass                   # it waits for the peer's close_notify: not needed
            self.out += self.outgoing.read()
            deadline = time.monotonic() + CLOSE_FLUSH
            while self.out:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                select.select([], [self.raw], [], left)
                self.flush()
        except OSError:
            pass                       # the peer is gone: nothing more to deliver
        finally:
            self.raw.close()


def _send_all(raw, data, deadline):
    view = memoryview(data)
    while view:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        select.select([], [raw], [], left)
        try:
            sent = raw.send(view)
        except (BlockingIOError, InterruptedError):
            continue
        view = view[sent:]


def _recv_some(raw, deadline):
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        readable, _, _ = select.select([raw], [], [], left)
        if readable:
            try:
                return raw.recv(RAW_CHUNK)
            except (BlockingIOError, InterruptedError):
                continue


def handshake(raw, ctx, server_side, server_hostname=None, timeout=HANDSHAKE_TIMEOUT):
    """The TLS handshake on the TCP socket @raw; returns a TlsConn or raises
    Refused.  A failure sends the peer TLS's alert, so that it learns why."""
    raw.setblocking(False)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_side=server_side,
                       server_hostname=server_hostname)
    deadline = time.monotonic() + timeout
    peer = "the source" if server_side else "the destination"
    try:
        while True:
            try:
                obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                pass
            except ssl.SSLError as e:
                try:
                    _send_all(raw, outgoing.read(), time.monotonic() + 1.0)
                except (OSError, TimeoutError):
                    pass
                raise Refused(*classify(e, server_side)) from None
            _send_all(raw, outgoing.read(), deadline)
            data = _recv_some(raw, deadline)
            if data:
                incoming.write(data)
            else:
                incoming.write_eof()
        conn = TlsConn(raw, obj, incoming, outgoing)
        _send_all(raw, outgoing.read(), deadline)
        return conn
    except TimeoutError:
        raise Refused("timeout", f"{peer} did not complete the TLS handshake within "
                                 f"{timeout:g} s") from None
    except OSError as e:
        raise Refused("closed", f"{peer}: {e.strerror or e} during the TLS handshake") from None


def _names(cert):
    """The names a verified certificate carries: its DNS and IP subjectAltNames,
    then its subject's commonName."""
    names = [value for kind, value in cert.get("subjectAltName", ())
             if kind in ("DNS", "IP Address")]
    for rdn in cert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName" and value not in names:
                names.append(value)
    return names


def _field(cert, part, key="commonName"):
    for rdn in cert.get(part, ()):
        for k, value in rdn:
            if k == key:
                return value
    return None


def identity(conn):
    """What the peer's certificate and the session are, for the progress."""
    cert = conn.getpeercert() or {}
    version, cipher = conn.obj.version(), conn.obj.cipher()
    return {"subject": _field(cert, "subject"), "names": _names(cert),
            "issuer": _field(cert, "issuer"), "not_after": cert.get("notAfter"),
            "version": version, "cipher": cipher[0] if cipher else None}


def client_handshake(raw, transport, host, timeout=HANDSHAKE_TIMEOUT):
    """The source's side: authenticate the destination at @host (its
    certificate must carry transport.name, else @host) and show ours.
    Returns (TlsConn, identity) or raises Refused."""
    conn = handshake(raw, transport.context, False, transport.name or host, timeout)
    return conn, identity(conn)


def server_handshake(raw, transport, timeout=HANDSHAKE_TIMEOUT):
    """The destination's side: authenticate the source (and, with
    transport.peers, its name).  Returns (TlsConn, identity) or raises Refused."""
    conn = handshake(raw, transport.context, True, None, timeout)
    who = identity(conn)
    if transport.peers and not set(who["names"]) & set(transport.peers):
        conn.close()
        raise Refused("name", f"the source's certificate names {', '.join(who['names'])}, "
                              f"none of the allowed {', '.join(transport.peers)} (--tls-peer)")
    return conn, who


# --- the ready mark -------------------------------------------------------------------


def send_ready(conn, timeout=HANDSHAKE_TIMEOUT):
    """The destination's relay: tell the source it may start."""
    deadline = time.monotonic() + timeout
    view = memoryview(READY)
    conn.setblocking(False)
    while view:
        try:
            view = view[conn.send(view):]
        except (BlockingIOError, InterruptedError):
            if time.monotonic() > deadline:
                raise Refused("timeout", "the source does not read") from None
            select.select([], [conn], [], 0.1)
    if isinstance(conn, TlsConn):
        while conn.pending_out and time.monotonic() < deadline:
            select.select([], [conn], [], 0.1)
            conn.flush()


def wait_ready(conn, timeout):
    """The source's relay: wait for the destination's ready mark.  Raises
    Refused when the destination refused this host, closed, or sent something
    else."""
    conn.setblocking(False)
    got = bytearray()
    deadline = time.monotonic() + timeout
    while len(got) < len(READY):
        left = deadline - time.monotonic()
        if left <= 0:
            raise Refused("timeout", f"the destination did not say it is ready within "
                                     f"{timeout:g} s")
        if not getattr(conn, "buffered", 0):
            select.select([conn], [], [], min(left, 0.5))
        try:
            data = conn.recv(len(READY) - len(got))
        except (BlockingIOError, InterruptedError):
            continue
        except TlsStreamError as e:
            text = str(e)
            if "alert" in text:
                raise Refused("refused-by-peer", "the destination refused this host's "
                                                 f"certificate ({text})") from None
            raise Refused("closed", f"the destination broke the connection ({text})") from None
        except OSError as e:
            raise Refused("closed", f"the destination: {e.strerror or e}") from None
        if not data:
            raise Refused("closed", "the destination closed the connection before it was "
                                    "ready (it refused this host, or its stream port is busy: "
                                    "its log says which)")
        got += data
    if bytes(got) != READY:
        raise Refused("protocol", f"the destination is not a Carapace migration relay (it "
                                  f"sent {bytes(got)!r}, not {READY!r})")


# --- the destination's listener ----------------------------------------------------------


def _peer_text(peer):
    host, port = peer[0], peer[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def listen(addr, port, backlog=8):
    """A TCP listener on @addr:@port (OSError if it cannot)."""
    infos = socket.getaddrinfo(host_address(addr), port, type=socket.SOCK_STREAM,
                               flags=socket.AI_PASSIVE)
    family, stype, proto, _, sockaddr = infos[0]
    sock = socket.socket(family, stype, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(sockaddr)
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock


class Listener:
    """The destination's listening side: accepts connections on @sock (from
    listen()) and authenticates each in a thread of its own (at most
    MAX_HANDSHAKES at once), so that a peer that stalls its handshake delays
    nobody.  accept() hands out authenticated peers only: (conn, peer text,
    identity); a plain transport hands out every connection.  @on_event(kind,
    text, **fields) hears "refused" and "accepted" (with the peer's identity
    when TLS).  While .busy is set, an authenticated peer is refused ("busy")."""

    def __init__(self, sock, transport, on_event, handshake_timeout=HANDSHAKE_TIMEOUT):
        self.sock, self.transport, self.on_event = sock, transport, on_event
        self.handshake_timeout = handshake_timeout
        self.ready = queue.Queue()
        self.closed = False
        self.busy = False
        self.lock = threading.Lock()
        self.inflight = 0
        self.thread = None

    @property
    def address(self):
        return _peer_text(self.sock.getsockname())

    def start(self):
        self.thread = threading.Thread(target=self._accept_loop, daemon=True)
        self.thread.start()
        return self

    def _accept_loop(self):
        while not self.closed:
            try:
                raw, peer = self.sock.accept()
            except OSError:
                if self.closed:
                    return
                time.sleep(0.05)       # EMFILE and friends: try again
                continue
            with self.lock:
                full = self.inflight >= MAX_HANDSHAKES
                if not full:
                    self.inflight += 1
            if full:
                self._refuse(raw, peer, Refused("busy", f"{MAX_HANDSHAKES} handshakes "
                                                        "already in progress"))
                continue
            threading.Thread(target=self._authenticate, args=(raw, peer), daemon=True).start()

    def _refuse(self, conn, peer, e):
        try:
            conn.close()
        except OSError:
            pass
        text = _peer_text(peer)
        self.on_event("refused", f"refused {text}: {e.reason}: {e.message}", peer=text,
                      reason=e.reason, error=e.message)

    def _authenticate(self, raw, peer):
        text = _peer_text(peer)
        conn = raw
        try:
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.transport.mode == "tls":
                conn, who = server_handshake(raw, self.transport, self.handshake_timeout)
                if self.closed:
                    conn.close()
                    return
                if self.busy:
                    raise Refused("busy", "another migration is being relayed here")
                self.on_event("accepted",
                              f"source {text} authenticated: {who['subject']} (issued by "
                              f"{who['issuer']}), {who['version']}, {who['cipher']}",
                              peer=text, mode="tls", **who)
            else:
                who = {}
                if self.busy:
                    raise Refused("busy", "another migration is being relayed here")
                self.on_event("accepted", f"source {text} connected over plain TCP (not "
                                          "authenticated)", peer=text, mode="plain")
            self.ready.put((conn, text, who))
        except Refused as e:
            self._refuse(conn, peer, e)
        except OSError as e:
            self._refuse(conn, peer, Refused("closed", str(e.strerror or e)))
        finally:
            with self.lock:
                self.inflight -= 1

    def accept(self, timeout=None):
        """The next authenticated peer: (conn, peer text, identity); raises
        TimeoutError after @timeout seconds (None: no limit)."""
        try:
            return self.ready.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError from None

    def close(self):
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        while True:                    # peers authenticated but never taken
            try:
                conn, _, _ = self.ready.get_nowait()
            except queue.Empty:
                break
            conn.close()


# --- test credentials (carapace-tls init) ------------------------------------------------


OPENSSL_CONFIG = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca_ext]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = {server_names}
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[client_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
subjectAltName = {client_names}
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""
NEW_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]


def _openssl(args, what):
    try:
        r = subprocess.run(["openssl", *args], capture_output=True, text=True,
                           umask=0o077, timeout=60)
    except FileNotFoundError:
        raise ConfigError("the openssl command is missing: apt-get install openssl "
                          "(scripts/deps.sh installs it)") from None
    if r.returncode:
        raise ConfigError(f"openssl ({what}) failed: {r.stderr.strip()}")


def _dn_value(text):
    if not text or any(c in text for c in "/=\\,+\"<>;\n") or len(text) > 64:
        raise ConfigError(f"--name {text!r}: a host name or address of at most 64 "
                          "characters, without / = \\ , + \" < > ;")
    return text


def init_credentials(out_dir, name="localhost", ips=None, ca_dir=None, days=365, force=False):
    """Write a credentials directory @out_dir (see the module's docstring).
    Returns the paths written."""
    name = _dn_value(name)
    if ips is None:
        ips = ["127.0.0.1", "::1"] if name == "localhost" else []
    for ip in ips:
        try:
            ipaddress.ip_address(ip)
        except ValueError:
            raise ConfigError(f"--ip {ip}: not an IP address") from None
    if not 1 <= days <= 36500:
        raise ConfigError(f"--days {days}: must be 1..36500")
    out = Path(out_dir)
    names = [CA_FILE, *ROLE_FILES["server"], *ROLE_FILES["client"]]
    if ca_dir is None:
        names.append(CA_KEY_FILE)
    there = [n for n in names if (out / n).exists()]
    if there and not force:
        raise ConfigError(f"{out} already holds {', '.join(there)}: give another directory "
                          "or --force to replace them")
    ca_cert = ca_key = None
    if ca_dir is not None:
        ca_cert, ca_key = Path(ca_dir) / CA_FILE, Path(ca_dir) / CA_KEY_FILE
        for p in (ca_cert, ca_key):
            _readable(p, "CA file", f" (--ca names a directory made by carapace-tls init, "
                                    f"with {CA_FILE} and {CA_KEY_FILE})")
    out.mkdir(mode=0o700, parents=True, exist_ok=True)
    out.chmod(0o700)
    server_names = ", ".join([f"DNS:{name}"] if not _is_ip(name) else [f"IP:{name}"])
    server_names += "".join(f", IP:{ip}" for ip in ips if ip != name)
    client_names = f"IP:{name}" if _is_ip(name) else f"DNS:{name}"
    with tempfile.TemporaryDirectory(prefix="carapace-tls.") as tmp:
        tmp = Path(tmp)
        cnf = tmp / "openssl.cnf"
        cnf.write_text(OPENSSL_CONFIG.format(server_names=server_names,
                                             client_names=client_names))
        if ca_dir is None:
            ca_cert, ca_key = tmp / CA_FILE, tmp / CA_KEY_FILE
            _openssl(["req", "-x509", "-new", "-config", str(cnf), "-extensions", "ca_ext",
                      *NEW_KEY, "-keyout", str(ca_key), "-out", str(ca_cert),
                      "-days", str(days), "-subj", f"/CN=Carapace migration CA ({name})"],
                     "the CA")
        for role, ext in (("server", "server_ext"), ("client", "client_ext")):
            cert_name, key_name = ROLE_FILES[role]
            csr = tmp / f"{role}.csr"
            _openssl(["req", "-new", "-config", str(cnf), *NEW_KEY,
                      "-keyout", str(tmp / key_name), "-out", str(csr), "-subj", f"/CN={name}"],
                     f"the {role} key")
            _openssl(["x509", "-req", "-in", str(csr), "-CA", str(ca_cert),
                      "-CAkey", str(ca_key), "-set_serial", "0x" + secrets.token_hex(16),
                      "-days", str(days), "-extfile", str(cnf), "-extensions", ext,
                      "-out", str(tmp / cert_name)], f"the {role} certificate")
        written = []
        copies = [(ca_cert, CA_FILE)] + [(tmp / n, n) for n in (*ROLE_FILES["server"],
                                                                 *ROLE_FILES["client"])]
        if ca_dir is None:
            copies.append((ca_key, CA_KEY_FILE))
        for src, dst_name in copies:
            dst = out / dst_name
            shutil.copyfile(src, dst)
            dst.chmod(0o600)
            written.append(dst)
    return written


def _is_ip(text):
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False


