# SPDX-License-Identifier: MIT
"""The one fake hypervisor of the tests: a control socket and (optionally) a
stream socket served by threads, as QEMU's two chardevs in front of the
hypervisor (docs/management.md), so that the tools and the carapace package
are tested without QEMU."""

import json
import socket
import threading
import time

HELLO = {"protocol": 1, "hypervisor": "carapace", "vm_max": 8, "harts": 2,
         "commands": ["hello", "list", "images", "stats", "cfi", "pause", "resume", "wake",
                      "destroy", "create", "snapshot", "restore", "migrate", "incoming"]}


def ok(request, **fields):
    """A success reply to @request (parsed JSON) carrying @fields."""
    return {"v": 1, "id": request["id"], "ok": True, **fields}


def err(request, code, message):
    """An error reply to @request."""
    return {"v": 1, "id": request["id"], "ok": False, "code": code, "error": message}


def hello_only(request, hyp):
    """The default handler: answers hello, refuses everything else."""
    if isinstance(request, dict) and request.get("cmd") == "hello":
        return ok(request, **HELLO)
    return {"v": 1, "id": request.get("id") if isinstance(request, dict) else None,
            "ok": False, "code": "unknown-command", "error": "not in this fake"}


class FakeHypervisor:
    """@handler(request, hyp) answers each request line (parsed JSON, or the raw
    bytes if it is not JSON) with a dict (sent as a JSON line), bytes (sent as
    they are), None (no reply) or a callable(hyp) that answers itself through
    hyp.conn (and may hyp.hang_up()).  Every line is kept in .lines; an empty
    line draws no reply (as the hypervisor).  hyp.stream is the last stream
    connection (None before one)."""

    def __init__(self, ctl_path, stream_path=None, handler=hello_only):
        self.ctl_path, self.stream_path, self.handler = ctl_path, stream_path, handler
        self.lines, self.connections, self.empty_lines = [], 0, 0
        self.stream, self.stream_connections = None, 0
        self.stream_bytes = bytearray()
        self.conn = None
        self.hung_up = False
        self.stop = threading.Event()
        self.listeners = []
        for path, serve in ((ctl_path, self.serve_ctl), (stream_path, self.serve_stream)):
            if path is None:
                continue
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(str(path))
            listener.listen(4)
            listener.settimeout(0.05)
            self.listeners.append(listener)
            threading.Thread(target=serve, args=(listener,), daemon=True).start()

    @property
    def requests(self):
        """The request lines that parse as JSON, parsed."""
        out = []
        for line in self.lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out

    def accept(self, listener):
        while not self.stop.is_set():
            try:
                conn, _ = listener.accept()
                return conn
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return None
        return None

    def serve_stream(self, listener):
        while True:
            conn = self.accept(listener)
            if conn is None:
                return
            self.stream_connections += 1
            self.stream = conn

    def serve_ctl(self, listener):
        while True:
            conn = self.accept(listener)
            if conn is None:
                return
            self.connections += 1
            self.conn, self.hung_up = conn, False
            conn.settimeout(0.05)
            try:
                self.talk(conn)
            finally:
                conn.close()

    def talk(self, conn):
        """Read request lines on @conn and answer each until it closes."""
        buffer = b""
        while not self.stop.is_set():
            try:
                data = conn.recv(65536)
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return
            if not data:
                return
            buffer += data
            while b"\n" in buffer:
                line, _, buffer = buffer.partition(b"\n")
                if not line:
                    self.empty_lines += 1
                    continue
                self.lines.append(line)
                try:
                    request = json.loads(line)
                except ValueError:
                    request = line
                answer = self.handler(request, self)
                if callable(answer):
                    answer(self)
                    if self.hung_up:
                        return
                elif isinstance(answer, dict):
                    self.reply(answer)
                elif answer:
                    conn.sendall(answer)

    def reply(self, obj):
        self.conn.sendall(json.dumps(obj, separators=(",", ":")).encode() + b"\n")

    def hang_up(self):
        """End the current control connection once the handler returns."""
        self.hung_up = True

    def wait_stream(self, timeout=5):
        """The stream connection, once a client has made it (None after @timeout)."""
        deadline = time.monotonic() + timeout
        while self.stream is None and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.stream

    def read_stream(self, count, timeout=10):
        """Read @count bytes from the stream connection (restore)."""
        deadline = time.monotonic() + timeout
        self.stream.settimeout(timeout)
        while len(self.stream_bytes) < count and time.monotonic() < deadline:
            chunk = self.stream.recv(min(65536, count - len(self.stream_bytes)))
            if not chunk:
                break
            self.stream_bytes += chunk
        return bytes(self.stream_bytes)

    def close(self):
        self.stop.set()
        for listener in self.listeners:
            try:
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            listener.close()
        if self.stream:
            self.stream.close()
