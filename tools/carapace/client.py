# SPDX-License-Identifier: MIT
"""The management protocol's client (docs/management.md): one JSON object per
line on the control socket (QEMU's end of the hypervisor's virtio-serial port
"org.carapace.control").  Client sends a request and picks its reply out of
what comes back; build_request() and parse_reply() are the line format.

    request  {"v":1,"id":7,"cmd":"pause","vm":"alpha"}
    reply    {"v":1,"id":7,"ok":true,"vm":"alpha","state":"paused"}
    error    {"v":1,"id":7,"ok":false,"code":"bad-state","error":"vm alpha is not running"}
"""

import json
import random
import socket
import time
from pathlib import Path

from .errors import RemoteError, TransportError, UsageError
from .paths import default_ctl_socket

PROTOCOL = 1
MAX_LINE = 4096                # bytes per request line, newline included
MAX_REPLY = 64 * 1024          # replies are at most 8192 bytes; accept more, to be lenient
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 86400.0
COMMANDS = ("hello", "list", "images", "stats", "metrics", "cfi", "pause", "resume", "wake", "destroy",
            "create", "snapshot", "restore", "migrate", "incoming", "devices", "nic")
ERROR_CODES = ("bad-request", "version", "unknown-command", "no-such-vm", "no-such-nic", "bad-state",
               "exists", "no-memory", "invalid", "busy", "internal", "unsupported",
               "no-stream", "bad-snapshot", "no-cfi", "no-feature", "stream", "refused",
               "bad-stream", "aborted", "unconfirmed", "no-device", "disk-io")


# --- the protocol ----------------------------------------------------------------


def build_request(cmd, request_id, args=None):
    """One request line, bytes, newline included: v, id, cmd, then the arguments
    in the order given (None values are left out)."""
    obj = {"v": PROTOCOL, "id": request_id, "cmd": cmd}
    for key, value in (args or {}).items():
        if value is not None:
            obj[key] = value
    line = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
    if len(line) > MAX_LINE:
        raise UsageError(f"request is {len(line)} bytes; a line holds at most {MAX_LINE}")
    return line


def parse_reply(line, request_id):
    """Check one reply line (bytes, without the newline) against the request it
    answers; returns the reply object or raises RemoteError/TransportError."""
    try:
        reply = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise TransportError(f"malformed reply ({e}): {shorten(line)}") from None
    if not isinstance(reply, dict):
        raise TransportError(f"malformed reply (not a JSON object): {shorten(line)}")
    if reply.get("v") != PROTOCOL:
        raise TransportError(f"reply speaks protocol version {reply.get('v')!r}, "
                             f"this carapace-ctl speaks {PROTOCOL}")
    if not isinstance(reply.get("ok"), bool):
        raise TransportError(f"malformed reply (no boolean \"ok\"): {shorten(line)}")
    if reply.get("id") != request_id:
        # id null on an error: the hypervisor could not read the request at all.
        if not (reply["ok"] is False and reply.get("id") is None):
            raise TransportError(f"reply id {reply.get('id')!r} does not match request "
                                 f"id {request_id} (a stale reply, or another client?)")
    if not reply["ok"]:
        raise RemoteError(str(reply.get("code", "internal")),
                          str(reply.get("error", "(no message)")), reply)
    return reply


def shorten(line, limit=200):
    text = line.decode("utf-8", "replace")
    return text if len(text) <= limit else text[:limit] + "..."


def connect_unix(path, timeout, where, missing, refused):
    """A UNIX stream socket connected to @path (timeout @timeout), or
    TransportError saying what went wrong at @where (the socket as errors name
    it): @missing when there is no socket, @refused when nothing listens, each
    with what an operator should do."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
        return sock
    except FileNotFoundError:
        msg = missing
    except ConnectionRefusedError:
        msg = refused
    except (TimeoutError, BlockingIOError):
        msg = f"timed out connecting to {where}"
    except OSError as e:
        msg = f"cannot connect to {where}: {e.strerror or e}"
    sock.close()
    raise TransportError(msg)


class Client:
    """One connection to the control socket.  request() sends one line and waits
    for its reply; the channel serves one client at a time."""

    def __init__(self, path=None, timeout=DEFAULT_TIMEOUT):
        self.path = Path(path) if path else default_ctl_socket()
        self.timeout = timeout
        # Not 1, 2, 3...: a reply meant for an earlier client must not match.
        self.next_id = random.SystemRandom().randrange(1, 1 << 31)
        self.buffer = b""
        self.first = True
        self.sock = connect_unix(
            self.path, timeout, self.path,
            missing=f"no control socket at {self.path}: is Carapace running? carapace-run "
                    "prints the socket's path when it starts; give it with --socket PATH",
            refused=f"connection refused at {self.path}: the socket exists but nothing "
                    "listens (Carapace has exited?); carapace-run prints the path of the "
                    "live one when it starts")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.sock.close()

    def send_line(self, data):
        try:
            self.sock.sendall(data)
        except (TimeoutError, BlockingIOError):
            raise TransportError(f"timed out sending to {self.path}") from None
        except OSError as e:
            raise TransportError(f"connection lost while sending: {e.strerror or e}") from None

    def read_line(self):
        """The next line (without its newline), within the timeout."""
        self.wait_line()
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def wait_line(self):
        """Receive until the buffer holds a whole line, within the timeout."""
        deadline = time.monotonic() + self.timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self.timed_out()
            self.sock.settimeout(left)
            self.receive()

    def receive(self):
        """One recv() into the buffer (blocking up to the socket's timeout)."""
        if len(self.buffer) > MAX_REPLY:
            raise TransportError(f"reply longer than {MAX_REPLY} bytes")
        try:
            chunk = self.sock.recv(65536)
        except (TimeoutError, BlockingIOError):
            raise self.timed_out() from None
        except OSError as e:
            raise TransportError(f"connection lost: {e.strerror or e}") from None
        if not chunk:
            if self.buffer:
                raise TransportError("connection closed in the middle of the reply: "
                                     f"{shorten(self.buffer)}")
            raise TransportError("connection closed without a reply")
        self.buffer += chunk

    def timed_out(self):
        return TransportError(f"no reply within {self.timeout:g} s (the channel serves one "
                              "client at a time: is another one connected?)")

    def request(self, cmd, args=None):
        """Send @cmd with @args (a dict, in order); return the reply object."""
        pending = self.begin(cmd, args)
        while True:
            reply = self.take_reply(pending)
            if reply is not None:
                return reply
            self.wait_line()

    def begin(self, cmd, args=None):
        """Send @cmd without waiting: returns what take_reply() needs to pick its
        reply out of the bytes that come back."""
        request_id = self.next_id
        self.next_id += 1
        data = build_request(cmd, request_id, args)
        pending = {"id": request_id, "skip": 0}
        if self.first:
            # A client that left before ending its line can leave a fragment on
            # the channel (connection events and data travel on different
            # virtqueues, so the hypervisor cannot always tell two clients'
            # bytes apart). A newline first ends it; its error reply (id null)
            # comes before ours and is skipped. An empty line gets no reply.
            data, pending["skip"], self.first = b"\n" + data, 1, False
        self.send_line(data)
        return pending

    def take_reply(self, pending):
        """The reply to @pending if a whole line of it is in the buffer, else
        None; raises RemoteError for an error reply, TransportError for a bad one."""
        while b"\n" in self.buffer:
            line, _, self.buffer = self.buffer.partition(b"\n")
            try:
                return parse_reply(line, pending["id"])
            except RemoteError as e:
                if pending["skip"] and e.reply.get("id") is None and e.code == "bad-request":
                    pending["skip"] -= 1
                    continue
                raise
        if len(self.buffer) > MAX_REPLY:
            raise TransportError(f"reply longer than {MAX_REPLY} bytes")
        return None

    def raw(self, line):
        """Send @line (str) verbatim plus a newline; return the reply line (str)."""
        self.send_line(line.encode() + b"\n")
        return self.read_line().decode("utf-8", "replace")


