# SPDX-License-Identifier: MIT
"""The numstream test (issue 25; docs/testing.md, "The numstream test"): a
Linux guest's `numstream send` (tests/linux/numstream.c, booted by
tests/linux/init with carapace.numstream=) sends numbered, checksummed
messages over TCP to a `numstream recv` in another guest or to the host,
which checks that they arrive in order, each once; across a connection lost
to a restore the sender goes on from the number the receiver says it wants.
Here, on the host: the wire format written anew (frame(), not the guest's
code, so one checks the other), the receiver's checks (fault()), the host's
own receiver (Receiver: the guest -> host test's far end, with the guest
receiver's rules and words), the host as a sender of frames it chose
(host_stream()), the lines a console showed (got(), resumes(), wait_line())
and a VM's spec (spec())."""

import re
import select
import socket
import struct
import threading
import time
import zlib

import pytest

from harness.linux import INITRAMFS
from harness.records import payload

MSG_SIZE, CTL_SIZE = 64, 16
HELLO, DATA, PING = 0x4948534E, 0x474D534E, 0x4750534E      # "NSHI", "NSMG", "NSPG"
RESUME, ACK = 0x5352534E, 0x4B41534E                        # "NSRS", "NSAK"
EVERY = 50                  # the receiver's default: a "got" line every 50 messages
HELLO_S = 2                 # the receiver's wait for a new connection's hello
# the suffix: a line torn by a snapshot never parses as a smaller number
GOT_RE = re.compile(r"numstream: got (\d+) in order")
RECV_CONN_RE = re.compile(r"numstream: connection (\d+) from (\S+), resuming at (\d+) "
                          r"\(the sender was at (\d+)\)")
SEND_CONN_RE = re.compile(r"numstream: connection (\d+) to (\S+), resuming at (\d+) "
                          r"\(had sent (\d+), acknowledged (\d+)\)")


def frame(kind, n):
    """A sender-to-receiver frame of @kind (HELLO, DATA, PING) for number @n."""
    body = struct.pack("<IIQ", kind, 0, n) + payload(n, MSG_SIZE - 20)
    return body + struct.pack("<I", zlib.crc32(body))


def control(kind, nxt):
    """A receiver-to-sender frame of @kind (RESUME, ACK): it wants @nxt next."""
    body = struct.pack("<IQ", kind, nxt)
    return body + struct.pack("<I", zlib.crc32(body))


def fault(m):
    """What is wrong with the 64 bytes @m as a frame of any kind (the guest's
    words), or None."""
    kind, _, n = struct.unpack_from("<IIQ", m)
    (crc,) = struct.unpack_from("<I", m, MSG_SIZE - 4)
    if kind not in (HELLO, DATA, PING):
        return f"bad magic {kind:08x}"
    computed = zlib.crc32(m[:MSG_SIZE - 4])
    if computed != crc:
        return f"CRC wrong (message {n}: stored {crc:08x}, computed {computed:08x})"
    if m != frame(kind, n):
        return f"payload wrong (message {n})"
    return None


def order_fault(n, want, count):
    """What is wrong with message @n arriving where @want belongs (the
    stream's last is @count - 1, 0: no end), or None."""
    if n > want:
        return f"gap: message {n} where {want} belongs ({n - want} missing)"
    if n < want:
        return f"message {n} again where {want} belongs"
    if count and n >= count:
        return f"past the last ({count - 1})"
    return None


def got(lines):
    """The counts a receiver's "got N in order" @lines said, in order."""
    return [int(m.group(1)) for line in lines if (m := GOT_RE.search(line))]


def resumes(lines, sender=False):
    """The numbers each connection of a receiver's (a @sender's) @lines
    resumed at, in order."""
    pattern = SEND_CONN_RE if sender else RECV_CONN_RE
    return [int(m.group(3)) for line in lines if (m := pattern.search(line))]


def fails(lines):
    return [line for line in lines if "numstream: FAIL" in line]


def wait_line(h, vm, pred, timeout, since=0, what="a line"):
    """Until VM @vm on host @h (a harness.hosts.Host) shows a console line
    @pred takes, among the host's lines after its first @since; that line.
    Fails at once on a numstream FAIL line of any VM."""
    end = time.monotonic() + timeout
    prefix = f"[{vm}] "
    while time.monotonic() < end:
        lines = h.snapshot()
        bad = fails(lines)
        assert not bad, "\n".join(bad) + "\n" + "\n".join(lines[-60:])
        for line in lines[since:]:
            if line.startswith(prefix) and pred(line[len(prefix):]):
                return line[len(prefix):]
        if h.proc.poll() is not None and not h.reader.is_alive():
            break
        time.sleep(0.1)
    pytest.fail(f"{vm}: no {what} in {timeout} s\n" + "\n".join(h.snapshot()[-60:]))


def spec(name, kernel, mode, net, ip=None, mem="128M", vcpus=1, **opts):
    """A --vm spec of a Linux guest running numstream @mode (send:HOST:PORT
    or recv:PORT) over a NIC on switch @net, with address @ip (ADDR/PREFIX;
    None: the launcher's, on a switch with an uplink); @opts: rate=,
    count=, every=, stall= (numstream's options)."""
    args = (f" carapace.ip={ip}" if ip else "") + \
        "".join(f" carapace.numstream_{k}={v}" for k, v in opts.items())
    return (f"name={name},kernel={kernel},initrd={INITRAMFS},mem={mem},vcpus={vcpus},"
            f"net={net},bootargs=console=ttyS0 quiet carapace.numstream={mode}{args}")


def host_stream(port, frames, timeout):
    """The host as a sender to a guest's receiver that a port forward takes
    127.0.0.1:@port to: connects (again until the guest listens: QEMU's
    forward closes the connection when the guest refuses it), says hello,
    takes the resume, which must want 0, and sends @frames (bytes each).
    An attempt is given up only when QEMU closes it, never on a timer: QEMU
    accepts at once and retries its SYN to the guest, so an attempt given up
    while that is on its way reaches the receiver later, after the one that
    sent the frames, and replaces it there (a receiver takes the newest)."""
    end = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port),
                                          timeout=max(1.0, end - time.monotonic())) as c:
                c.sendall(frame(HELLO, 0))
                resume = b""
                while len(resume) < CTL_SIZE and (chunk := c.recv(CTL_SIZE - len(resume))):
                    resume += chunk
                if len(resume) == CTL_SIZE:
                    assert resume == control(RESUME, 0), resume.hex()
                    for f in frames:
                        c.sendall(f)
                    return
        except OSError:
            pass
        if time.monotonic() > end:
            pytest.fail(f"no guest receiver behind 127.0.0.1:{port} in {timeout} s")
        time.sleep(1)


class Receiver:
    """The host end of a guest -> host stream: a `numstream recv` in Python on
    127.0.0.1 (QEMU user networking takes a guest's connection to
    10.0.2.2:PORT there), on a thread. The same protocol, checks and lines
    (in .lines) as the guest's; it stops at its first FAIL."""

    def __init__(self, count, every=EVERY):
        self.count, self.every = count, every
        self.next = self.received = self.conns = 0
        self.lines, self.lock = [], threading.Lock()
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(4)
        self.port = self.srv.getsockname()[1]
        self.conn, self.buf, self.stopping = None, b"", False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def say(self, text):
        with self.lock:
            self.lines.append(f"numstream: {text}")

    def snapshot(self):
        with self.lock:
            return list(self.lines)

    def serve(self):
        try:
            while not self.stopping:
                socks = [self.srv] + ([self.conn] if self.conn else [])
                ready, _, _ = select.select(socks, [], [], 0.2)
                # the current connection's bytes first: a replacement comes after them
                if self.conn in ready and not self.read():
                    return
                if self.srv in ready:
                    self.accept()
        except OSError as e:
            if not self.stopping:
                self.say(f"FAIL: {e}")
        finally:
            for s in (self.conn, self.srv):
                if s:
                    s.close()

    def drop(self, why):
        self.say(f"connection {self.conns} {why}")
        self.conn.close()
        self.conn, self.buf = None, b""

    @staticmethod
    def hello(c):
        """The hello a new connection @c sends first: (its frame, None) or
        (None, what is wrong)."""
        m = b""
        try:
            while len(m) < MSG_SIZE:
                chunk = c.recv(MSG_SIZE - len(m))
                if not chunk:
                    return None, "no hello (closed)"
                m += chunk
        except OSError as e:
            return None, f"no hello ({e.strerror or e})"
        kind = struct.unpack_from("<I", m)[0]
        why = fault(m) or (None if kind == HELLO else f"no hello (magic {kind:08x})")
        return (None, why) if why else (m, None)

    def accept(self):
        c, (addr, port) = self.srv.accept()
        c.settimeout(HELLO_S)
        m, why = self.hello(c)
        if why:
            self.say(f"connection from {addr}:{port} refused: {why}")
            c.close()
            return
        if self.conn:
            self.drop("replaced by a new one")
        self.conn, self.conns = c, self.conns + 1
        self.say(f"connection {self.conns} from {addr}:{port}, resuming at {self.next} "
                 f"(the sender was at {struct.unpack_from('<Q', m, 8)[0]})")
        try:
            self.conn.sendall(control(RESUME, self.next))
        except OSError:
            self.drop("lost before the resume went out")

    def read(self):
        """What the connection has; False after a FAIL."""
        try:
            chunk = self.conn.recv(1 << 16)
        except OSError as e:
            self.drop(f"lost ({e.strerror})")
            return True
        if not chunk:
            self.drop("lost (closed by the sender)")
            return True
        self.buf += chunk
        frames = 0
        while len(self.buf) >= MSG_SIZE:
            m, self.buf = self.buf[:MSG_SIZE], self.buf[MSG_SIZE:]
            frames += 1
            if not self.take(m):
                return False
        if frames:
            try:
                self.conn.sendall(control(ACK, self.next))
            except OSError:
                self.drop("lost (an acknowledgement did not go out)")
        return True

    def take(self, m):
        """Frame @m, checked as the guest's receiver does; False after a FAIL."""
        kind, _, n = struct.unpack_from("<IIQ", m)
        why = fault(m)
        if not why and kind == HELLO:
            why = f"a hello inside connection {self.conns}"
        if not why and kind == DATA:
            why = order_fault(n, self.next, self.count)
        if why:
            self.say(f"FAIL at message {self.next}: {why}")
            return False
        if kind == PING:
            return True
        self.next += 1
        self.received += 1
        if self.next % self.every == 0:
            self.say(f"got {self.next} in order")
        if self.count and self.next == self.count:
            self.say(f"done: {self.received} messages, 0..{self.next - 1} in order, "
                     f"over {self.conns} connections")
        return True

    def wait(self, pred, timeout, what):
        """Until one of its lines satisfies @pred; that line. Fails at once
        on a FAIL line."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            lines = self.snapshot()
            assert not fails(lines), "\n".join(lines[-20:])
            for line in lines:
                if pred(line):
                    return line
            time.sleep(0.1)
        pytest.fail(f"the host's receiver: no {what} in {timeout} s\n" +
                    "\n".join(self.snapshot()[-20:]))

    def stop(self):
        self.stopping = True
        self.thread.join(timeout=5)
