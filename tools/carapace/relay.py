# SPDX-License-Identifier: MIT
"""The migration relay (docs/migration.md): MigRelay carries a migration
stream both ways between a hypervisor's stream socket and the connection to
the other host, and follows each direction's framing (MigFramer) to report
the phases (negotiation, rounds, stop-and-copy, confirmation, done) and to
apply the testing hooks (Hook: cut or hold the stream at a phase).

MIG_LAYOUTS are the payloads of the sections the relay reads
(include/abi/migration_format.h)."""

import collections
import dataclasses
import re
import selectors
import struct
import time

from .errors import RemoteError, TransportError, UsageError
from .units import KiB, MiB
from .streams import STREAM_CHUNK




MIG_MAGIC = b"CARAMIGR"
MIG_VERSION = 9                # include/abi/migration_format.h (9: FWFT misaligned_emulate)
MIG_HEADER = 32                # struct snap_header
MIG_SECTION_HEADER = 24        # struct snap_section
MIG_KEEP_MAX = 4096            # payloads kept to be read (every one but MEMORY, VCPU, DEVICE,
                               # VIRTIO)
MIG_MAX_ROUNDS = 100           # --max-rounds 1..100 (the hypervisor's default is 30)
MIG_DOWNTIME_LIMIT_MAX = 60000  # --downtime-limit 1..60000 ms (the hypervisor's default is 20)
MIG_HIGH_WATER = 4 * MiB       # bytes the relay holds per direction before it stops reading
MIG_DRAIN = 2.0                # seconds the relay waits after the reply for the last bytes
MIG_SEND_MAX = 256 * KiB       # bytes the relay offers a socket at once
MIG_PHASES = ("negotiation", "round:N", "stop-and-copy", "confirmation", "done")
# phases at which a hold ends by closing both connections (the held section
# is never forwarded)
MIG_HOLD_CLOSES = ("confirmation", "done")
# the snapshot format's section types (DISK only in copy mode,
# docs/migration.md "Disks"; DISK_ID never: a migration sends none), then the
# migration protocol's own
SEC = {"CONFIG": 1, "VCPU": 2, "DEVICE": 3, "MEMORY": 4, "END": 5, "VIRTIO": 6, "DISK": 7,
       "DISK_ID": 8, "CAPS": 16,
       "ACCEPT": 17, "ZERO": 18, "ROUND": 19, "SWITCHOVER": 20, "RUNNING": 21, "DONE": 22,
       "ABORT": 23, "DISK_LAYOUT": 24}
SEC_NAME = {v: k for k, v in SEC.items()}
MIG_ACCEPT_COPY_DISKS = 1      # ACCEPT flags: the destination chose copy mode
SNAP_FEATURES = ("Zicfilp", "Zicfiss", "Sstc", "Svpbmt", "Svadu")
MIG_FWFT = ("landing-pad", "shadow-stack")

# payload layouts of the sections the relay reads (include/abi/migration_format.h)
MIG_LAYOUTS = {
    SEC["CAPS"]: ("<IIIIQQII", ("features", "policies", "sbi_version", "max_vcpus",
                                "free_mem", "timebase_hz", "fwft", "vs_sv")),
    SEC["ACCEPT"]: ("<II", ("vm_index", "flags")),
    SEC["ROUND"]: ("<IIQQQQQQQ", ("round", "reserved", "pages", "dirty", "bytes", "disk_blocks",
                                  "disk_dirty", "expected_downtime_us", "dirty_limit")),
    SEC["DISK_LAYOUT"]: ("<QII", ("sectors", "flags", "reserved")),
    SEC["SWITCHOVER"]: ("<QII", ("guest_time", "rounds", "flags")),
    SEC["RUNNING"]: ("<QQ", ("downtime_ticks", "timebase_hz")),
    SEC["DONE"]: ("<QQ", ("downtime_ticks", "timebase_hz")),
    SEC["END"]: ("<QQ", ("sections", "memory_pages")),
    SEC["ZERO"]: ("<QQ", ("gpa", "pages")),
    SEC["ABORT"]: ("<16s160s", ("code", "message")),
    SEC["CONFIG"]: ("<16sQQIII", ("name", "ram_gpa", "ram_size", "nr_vcpus", "cfi_policy",
                                  "features")),
}
MIG_SIZES = {SEC["CAPS"]: 40, SEC["ACCEPT"]: 8, SEC["ROUND"]: 64, SEC["SWITCHOVER"]: 16,
             SEC["DISK_LAYOUT"]: 16,
             SEC["RUNNING"]: 16, SEC["DONE"]: 16, SEC["END"]: 16, SEC["ZERO"]: 16,
             SEC["ABORT"]: 176, SEC["CONFIG"]: 648}


@dataclasses.dataclass
class MigEvent:
    """Something one direction of a migration stream completed.  kind: "header",
    "section-start" (its 24-byte header is in: type, instance, length) or
    "section" (its payload too; @fields holds the decoded payload of the types
    in MIG_LAYOUTS, None for the others or a payload of the wrong size).
    @start is the stream offset of the element's first byte, @end of the byte
    after it (offsets count this direction's bytes from 0)."""
    kind: str
    start: int
    end: int
    type: int = 0
    instance: int = 0
    length: int = 0
    fields: dict | None = None

    @property
    def name(self):
        return SEC_NAME.get(self.type, f"type {self.type}")


class MigFramer:
    """Follows one direction of a migration stream as its bytes go by: a 32-byte
    header (magic CARAMIGR), then sections (24-byte header: type, instance,
    length, crc32c, reserved; then `length` payload bytes).  It checks no CRC
    and refuses nothing (the hypervisors do); bytes that are not a migration
    stream set .error and are then only counted.  MEMORY, VCPU, DEVICE and
    VIRTIO payloads are counted, not kept."""

    def __init__(self):
        self.offset = 0            # bytes fed so far
        self.state = "header"      # header | section-header | keep | skip
        self.buf = bytearray()
        self.need = MIG_HEADER
        self.left = 0              # payload bytes still to skip
        self.current = None        # MigEvent of the section being read
        self.error = None
        self.sections = 0          # complete sections
        self.memory_pages = 0      # pages in complete MEMORY and ZERO sections

    @property
    def safe(self):
        """Bytes that may be forwarded: all but an incomplete header or section
        header (a relay hook must be able to hold back a whole section)."""
        if self.error is None and self.state in ("header", "section-header"):
            return self.offset - len(self.buf)
        return self.offset

    def feed(self, data):
        """Take the next bytes; returns the MigEvents they complete, in order."""
        events, pos, data = [], 0, memoryview(data)
        while pos < len(data):
            if self.error is not None:
                self.offset += len(data) - pos
                break
            if self.state == "skip":
                n = min(self.left, len(data) - pos)
                pos += n
                self.offset += n
                self.left -= n
                if self.left == 0:
                    events.append(self.section_done(None))
                continue
            n = min(self.need - len(self.buf), len(data) - pos)
            self.buf += data[pos:pos + n]
            pos += n
            self.offset += n
            if len(self.buf) < self.need:
                break
            raw, self.buf = bytes(self.buf), bytearray()
            if self.state == "header":
                events.append(self.header(raw))
            elif self.state == "section-header":
                events.extend(self.section_header(raw))
            else:
                events.append(self.section_done(raw))
        return events

    def header(self, raw):
        magic, version, size = raw[:8], *struct.unpack_from("<II", raw, 8)
        if magic != MIG_MAGIC:
            self.error = f"not a migration stream (magic {magic!r}, not {MIG_MAGIC!r})"
        elif version != MIG_VERSION or size != MIG_HEADER:
            self.error = (f"migration stream version {version}, header size {size} "
                          f"(not {MIG_VERSION}, {MIG_HEADER})")
        self.state, self.need = "section-header", MIG_SECTION_HEADER
        return MigEvent("header", 0, self.offset)

    def section_header(self, raw):
        stype, instance, length, _crc, _res = struct.unpack("<IIQII", raw)
        start = self.offset - MIG_SECTION_HEADER
        self.current = MigEvent("section", start, start + MIG_SECTION_HEADER + length, stype,
                                instance, length)
        events = [MigEvent("section-start", start, self.offset, stype, instance, length)]
        if length == 0:
            events.append(self.section_done(b""))
        elif stype in MIG_LAYOUTS and length <= MIG_KEEP_MAX:
            self.state, self.need = "keep", length
        else:
            self.state, self.left = "skip", length
        return events

    def section_done(self, payload):
        ev, self.current = self.current, None
        self.state, self.need = "section-header", MIG_SECTION_HEADER
        self.sections += 1
        if ev.type == SEC["MEMORY"] and ev.length >= 16:
            self.memory_pages += (ev.length - 16) // SNAP_PAGE
        if payload is not None and ev.type in MIG_LAYOUTS and len(payload) == MIG_SIZES[ev.type]:
            fmt, names = MIG_LAYOUTS[ev.type]
            values = struct.unpack_from(fmt, payload)
            ev.fields = {k: (cstr_text(v) if isinstance(v, bytes) else v)
                         for k, v in zip(names, values) if k != "reserved"}
            if ev.type == SEC["ZERO"]:
                self.memory_pages += ev.fields["pages"]
        return ev


SNAP_PAGE = 4096


def cstr_text(raw):
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def parse_phase(text, option):
    """A --cut-at/--hold-at PHASE: ("negotiation"|"stop-and-copy"|"confirmation"|
    "done", None) or ("round", N)."""
    if text in ("negotiation", "stop-and-copy", "confirmation", "done"):
        return text, None
    m = re.fullmatch(r"round:([0-9]{1,9})", text)
    if m and int(m.group(1)) >= 1:
        return "round", int(m.group(1))
    raise UsageError(f"{option} {text}: PHASE must be one of negotiation, round:N (N >= 1), "
                     "stop-and-copy, confirmation, done")


def phase_text(phase):
    kind, n = phase
    return f"round:{n}" if kind == "round" else kind


@dataclasses.dataclass
class Hook:
    """A testing hook of carapace-ctl migrate: at @phase, "cut" closes both
    connections; "hold" stops relaying for @seconds (then goes on; at
    confirmation and done it closes both: RUNNING, DONE never forwarded)."""
    action: str            # "cut" | "hold"
    phase: tuple           # parse_phase()
    seconds: float = 0.0


class _Chunks:
    """Bytes received and not yet sent, as the chunks they came in: taking
    from the front never moves the rest (a bytearray trimmed at the front
    copies itself whole when it grows again)."""

    def __init__(self):
        self.chunks = collections.deque()
        self.head = 0              # bytes of chunks[0] already taken
        self.size = 0

    def __len__(self):
        return self.size

    def append(self, data):
        self.chunks.append(data)
        self.size += len(data)

    def front(self, n):
        """Up to @n bytes from the front (one chunk's worth at most), uncopied."""
        return memoryview(self.chunks[0])[self.head:self.head + n]

    def take(self, n):
        self.head += n
        self.size -= n
        while self.chunks and self.head >= len(self.chunks[0]):
            self.head -= len(self.chunks.popleft())


class _Pipe:
    """One direction of the relay: bytes from @src to @dst, followed by a framer."""

    def __init__(self, name, src, dst):
        self.name, self.src, self.dst = name, src, dst
        self.framer = MigFramer()
        self.buf = _Chunks()       # received, not yet sent
        self.sent = 0              # bytes written to dst (stream offset)
        self.eof = False
        self.barrier = None        # (offset, hook): stop sending there and fire
        self.terminal = None       # end offset of a DONE or ABORT section

    @property
    def received(self):
        return self.framer.offset

    def limit(self):
        """How many buffered bytes may go now."""
        end = self.framer.safe
        if self.barrier is not None:
            end = min(end, self.barrier[0])
        return max(0, min(end - self.sent, len(self.buf)))


class MigRelay:
    """Relays a migration between the local stream socket and the connection to
    the other host (a TCP socket, or carapace-tls's TlsConn over one) until the
    control request's reply arrives (then a little longer, so that the last
    section - DONE, ABORT - gets through), following both directions' framing
    for progress and the testing hooks.  @role "source": the local hypervisor
    is S (carapace-ctl migrate), "destination": it is D.  Without a @client (a
    carapace-run --incoming host, whose hypervisor waits without a request)
    it relays until either side ends; .arrived then says whether D started
    the VM, .confirmed whether S's DONE went through to D."""

    def __init__(self, client, pending, local, remote, role, reporter, hook=None):
        self.client, self.pending = client, pending
        self.local, self.remote, self.role = local, remote, role
        self.reporter, self.hook = reporter, hook
        if role == "source":
            self.sd, self.ds = _Pipe("sd", local, remote), _Pipe("ds", remote, local)
        else:
            self.sd, self.ds = _Pipe("sd", remote, local), _Pipe("ds", local, remote)
        self.closed = False
        self.reply = None
        self.error = None          # RemoteError, raised once the relay is over
        self.switchover_seen = False
        self.fired = False
        self.done_end = None       # S->D offset after S's DONE section
        self.running_seen = False  # D's RUNNING began: D has started the VM

    @property
    def arrived(self):
        """D has started the VM (its RUNNING came): D keeps it from then on,
        whether S's DONE comes or not (docs/migration.md, Failure handling)."""
        return self.running_seen

    @property
    def confirmed(self):
        """S's DONE has gone to D: the migration is complete there."""
        return self.done_end is not None and self.sd.sent >= self.done_end

    # -- the hook --
    def on_event(self, pipe, ev):
        self.reporter.stream_event(pipe.name, ev,
                                   self.sd.received if pipe is self.ds else ev.end)
        if ev.kind == "section" and ev.type in (SEC["DONE"], SEC["ABORT"]):
            pipe.terminal = ev.end
        if ev.kind == "section" and ev.type == SEC["DONE"] and pipe is self.sd:
            self.done_end = ev.end
        if ev.kind == "section-start" and ev.type == SEC["RUNNING"] and pipe is self.ds:
            self.running_seen = True
        hook = self.hook
        if hook is None or self.fired:
            return
        kind, n = hook.phase
        if pipe is self.ds and kind == "negotiation" and ev.kind == "section" \
                and ev.type == SEC["CAPS"]:
            pipe.barrier = (ev.end, hook)
        elif pipe is self.sd and kind == "round" and ev.kind == "section" \
                and ev.type == SEC["ROUND"] and ev.fields and ev.fields["round"] == n:
            pipe.barrier = (ev.end, hook)
        elif pipe is self.sd and kind == "stop-and-copy":
            if ev.kind == "section" and ev.type == SEC["SWITCHOVER"]:
                self.switchover_seen = True
            elif ev.kind == "section-start" and self.switchover_seen and pipe.barrier is None:
                # the next section's header and half of its payload (at least a byte)
                pipe.barrier = (ev.end + max(1, ev.length // 2) if ev.length else ev.end, hook)
        elif pipe is self.ds and kind == "confirmation" and ev.kind == "section-start" \
                and ev.type == SEC["RUNNING"]:
            pipe.barrier = (ev.start, hook)          # RUNNING is never forwarded
        elif pipe is self.sd and kind == "done" and ev.kind == "section-start" \
                and ev.type == SEC["DONE"]:
            pipe.barrier = (ev.start, hook)          # RUNNING went; DONE never does

    def fire(self, pipe):
        _, hook = pipe.barrier
        self.fired = True
        phase = phase_text(hook.phase)
        counts = (f"{self.sd.sent} bytes went to the destination, {self.ds.sent} to the "
                  "source")
        if hook.action == "cut":
            self.reporter.note("hook", f"hook: cut at {phase}: closing both connections "
                               f"({counts})", action="cut", phase=phase,
                               to_destination=self.sd.sent, to_source=self.ds.sent)
            self.close()
            return
        self.reporter.note("hook", f"hook: hold at {phase}: relaying stops for "
                           f"{hook.seconds:g} s ({counts})", action="hold", phase=phase,
                           seconds=hook.seconds, to_destination=self.sd.sent,
                           to_source=self.ds.sent)
        deadline = time.monotonic() + hook.seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            if self.client is not None and self.reply is None and self.error is None:
                self.wait_control(left)
            else:
                time.sleep(left)
        if hook.phase[0] in MIG_HOLD_CLOSES:
            held = "RUNNING" if hook.phase[0] == "confirmation" else "DONE"
            self.reporter.note("hook", f"hook: hold at {phase} over: {held} is not "
                               "forwarded, closing both connections", action="hold-end",
                               phase=phase)
            self.close()
            return
        self.reporter.note("hook", f"hook: hold at {phase} over: relaying again",
                           action="hold-end", phase=phase)
        pipe.barrier = None

    def wait_control(self, timeout):
        ready = selectors.DefaultSelector()
        with ready:
            ready.register(self.client.sock, selectors.EVENT_READ)
            if ready.select(timeout):
                self.read_control()

    def read_control(self):
        self.client.receive()
        try:
            self.reply = self.client.take_reply(self.pending)
        except RemoteError as e:
            self.error = e

    def close(self):
        if not self.closed:
            self.closed = True
            for sock in (self.local, self.remote):
                try:
                    sock.close()
                except OSError:
                    pass

    def answered(self):
        return self.reply is not None or self.error is not None

    def finished(self):
        """After the reply: has the local side's last section gone through?"""
        if self.closed:
            return True
        out = self.sd if self.role == "source" else self.ds
        inward = self.ds if self.role == "source" else self.sd
        if out.terminal is not None and out.sent >= out.terminal:
            return True
        if self.error is not None and out.received == 0:
            return True                # refused before the local side sent a byte
        if self.role == "destination" and self.reply is not None and not out.buf \
                and not inward.buf:
            return True                # D replies ok after DONE: its RUNNING went long ago
        return out.eof and not out.buf

    # -- the loop --
    def run(self, timeout):
        for sock in (self.local, self.remote):
            sock.setblocking(False)
        drain_until = None
        while True:
            if self.answered():
                if self.finished():
                    break
                if drain_until is None:
                    drain_until = time.monotonic() + MIG_DRAIN
            elif self.closed:
                drain_until = None
            sel = selectors.DefaultSelector()
            with sel:
                wants, decrypted = {}, []
                if not self.closed:
                    for pipe in (self.sd, self.ds):
                        if not pipe.eof and len(pipe.buf) < MIG_HIGH_WATER:
                            wants.setdefault(pipe.src, [0, []])
                            wants[pipe.src][0] |= selectors.EVENT_READ
                            wants[pipe.src][1].append(("read", pipe))
                            if getattr(pipe.src, "buffered", 0):
                                decrypted.append(pipe)     # no selector sees these
                        if pipe.limit():
                            wants.setdefault(pipe.dst, [0, []])
                            wants[pipe.dst][0] |= selectors.EVENT_WRITE
                            wants[pipe.dst][1].append(("write", pipe))
                    for sock in (self.local, self.remote):
                        if getattr(sock, "pending_out", 0):   # TLS records not yet sent
                            wants.setdefault(sock, [0, []])
                            wants[sock][0] |= selectors.EVENT_WRITE
                            wants[sock][1].append(("flush", sock))
                for sock, (mask, jobs) in wants.items():
                    sel.register(sock, mask, jobs)
                if not self.answered() and self.client is not None:
                    sel.register(self.client.sock, selectors.EVENT_READ, None)
                if not sel.get_map():
                    break
                wait = timeout
                if drain_until is not None:
                    wait = max(0.0, drain_until - time.monotonic())
                events = sel.select(0 if decrypted else wait)
            for pipe in decrypted:
                if not self.closed:
                    self.pull(pipe)
            if not events and decrypted:
                continue
            if not events:
                if drain_until is not None:
                    break
                raise TransportError(
                    f"nothing moved for {timeout:g} s: {self.sd.sent} bytes relayed to the "
                    f"destination, {self.ds.sent} to the source, no reply yet"
                    + (" (the connections are closed)" if self.closed else ""))
            if drain_until is not None:
                drain_until = time.monotonic() + MIG_DRAIN
            for key, mask in events:
                if self.closed and key.data is not None:
                    continue
                if key.data is None:
                    # (a hold fired by an earlier event of this batch may have
                    # read the reply already: look again, never block)
                    if not self.answered():
                        self.wait_control(0)
                    continue
                for job, pipe in key.data:
                    if self.closed:
                        break
                    if job == "read" and mask & selectors.EVENT_READ:
                        self.pull(pipe)
                    elif job == "write" and mask & selectors.EVENT_WRITE:
                        self.push(pipe)
                    elif job == "flush" and mask & selectors.EVENT_WRITE:
                        self.flush(pipe)
            for pipe in (self.sd, self.ds):
                if pipe.eof and not self.closed and not pipe.limit():
                    # One end went away (or finished): what it sent went on; the
                    # other now sees its stream end (a broken stream is an abort).
                    self.close()
        self.close()
        if self.error is not None:
            raise self.error
        return self.reply

    def flush(self, sock):
        try:
            sock.flush()
        except OSError:
            self.close()               # the other host is gone: the migration is over

    def pull(self, pipe):
        from . import tls      # imported when needed: carapace-ctl starts faster
        try:
            data = pipe.src.recv(STREAM_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except tls.TlsStreamError as e:
            # a record that does not authenticate, an alert: the stream is broken
            side = "destination" if self.role == "source" else "source"
            self.reporter.note("warning", f"warning: the connection with the {side}: {e}",
                               message=str(e))
            data = b""
        except OSError:
            data = b""
        if not data:
            pipe.eof = True
            return
        events = pipe.framer.feed(data)
        pipe.buf.append(data)
        was_error = pipe.framer.error
        for ev in events:
            self.on_event(pipe, ev)
        if was_error and not getattr(pipe, "warned", False):
            pipe.warned = True
            self.reporter.note("warning", f"warning: {pipe.framer.error} "
                               f"({'source' if pipe is self.sd else 'destination'} side); "
                               "relaying it without progress", message=pipe.framer.error)
        self.push(pipe)

    def push(self, pipe):
        # a socket takes a few hundred KiB per send(), a TLS connection a few
        # records: offer no more than that at a time
        most = getattr(pipe.dst, "send_chunk", MIG_SEND_MAX)
        while not self.closed:
            n = min(pipe.limit(), most)
            if n:
                view = pipe.buf.front(n)
                n = len(view)
                try:
                    sent = pipe.dst.send(view)
                except (BlockingIOError, InterruptedError):
                    return
                except OSError:
                    pipe.eof = True        # the receiver is gone: the migration is over
                    self.close()
                    return
                pipe.buf.take(sent)
                pipe.sent += sent
                if sent < n:
                    return
            if pipe.barrier is not None and pipe.sent >= pipe.barrier[0] \
                    and not self.fired:
                self.fire(pipe)
                continue
            return


