# SPDX-License-Identifier: MIT
"""Snapshot streams between a file and a hypervisor (docs/snapshot-format.md):
snapshot_vm() asks for a snapshot and writes the stream that the stream
socket (QEMU's end of the port "org.carapace.stream") carries to a file,
gzip-compressed unless asked not to; restore_vm() checks a file as the
hypervisor will (verify_snapshot()) and sends it while the "restore" request
runs.  Both follow the stream's length with a Progress line."""

import gzip
import os
import queue
import selectors
import threading
import time
from pathlib import Path

from .client import DEFAULT_TIMEOUT, connect_unix
from .errors import FileError, TransportError, UsageError
from .units import MiB

STREAM_CHUNK = 1 << 20
STREAM_TCP_PREFIX = "tcp:"     # refused: the stream port is never TCP (docs/migration.md)
PROGRESS_EVERY = 0.25          # seconds between progress lines
GZIP_LEVEL = 1                 # fastest: 1/3 of the stream for a Linux guest (docs/snapshot-format.md)
# Stream bytes received and waiting for gzip (the stream is faster than
# level 1 deflates it): past this the stream waits too.
GZIP_BACKLOG = 64 * MiB


# --- snapshot streams ------------------------------------------------------------

def verify_snapshot(path):
    """Check the snapshot file @path as the hypervisor will (header, order,
    lengths, CRCs, field ranges); returns carapace-snap's Snapshot, or raises
    FileError naming the first problem's section and byte offset."""
    from . import snapshot as snap    # parses the C headers: only when needed
    try:
        return snap.verify(path)
    except OSError as e:
        raise FileError(f"cannot read {path}: {e.strerror or e}") from None
    except snap.SnapError as e:
        raise FileError(f"{path}: not a valid snapshot: {e} (nothing was sent; "
                        "carapace-snap inspect shows the file)") from None


def connect_stream(path, timeout=DEFAULT_TIMEOUT):
    """A connection to the stream socket (QEMU's end of org.carapace.stream), a
    UNIX socket: every host has one, a carapace-run --incoming host too (only
    its relay faces the network)."""
    if str(path).startswith(STREAM_TCP_PREFIX):
        raise UsageError(f"--stream-socket {path}: a stream port is a UNIX socket, never "
                         "TCP (a carapace-run --incoming host has one too, beside its "
                         "control socket: carapace-run prints its path)")
    path = Path(path)
    return connect_unix(
        path, timeout, f"the stream socket {path}",
        missing=f"no stream socket at {path}: is Carapace running? carapace-run prints both "
                "sockets' paths when it starts; give it with --stream-socket PATH",
        refused=f"connection refused at the stream socket {path}: nothing listens "
                "(Carapace has exited?)")


class Progress:
    """'snapshot alpha: 12.0 MiB (12582912 bytes), 48.1 MiB/s' on @out: on a
    terminal rewritten in place every PROGRESS_EVERY seconds, elsewhere one
    line a second; finish() prints the total.  @out None: silent."""

    def __init__(self, out, what, total=None):
        self.out, self.what, self.total = out, what, total
        self.tty = bool(out is not None and hasattr(out, "isatty") and out.isatty())
        self.start = self.last = time.monotonic()
        self.shown = self.finished = False

    def text(self, done, now):
        elapsed = max(now - self.start, 1e-6)
        of = f" of {self.total / MiB:.1f} MiB" if self.total else ""
        return (f"{self.what}: {done / MiB:.1f} MiB{of} ({done} bytes), "
                f"{done / MiB / elapsed:.1f} MiB/s")

    def update(self, done):
        now = time.monotonic()
        if self.out is None or now - self.last < (PROGRESS_EVERY if self.tty else 1.0):
            return
        self.last = now
        if self.tty:
            self.out.write("\r" + self.text(done, now) + "\033[K")
            self.shown = True
        else:
            self.out.write(self.text(done, now) + "\n")
        self.out.flush()

    def abort(self):
        """End a progress line left open (before an error message)."""
        if self.out is not None and self.shown:
            self.out.write("\n")
            self.out.flush()
            self.shown = False

    def finish(self, done):
        if self.out is None or self.finished:
            return
        self.finished = True
        now = time.monotonic()
        line = self.text(done, now) + f" in {now - self.start:.2f} s"
        self.out.write(("\r" + line + "\033[K\n") if self.shown else line + "\n")
        self.out.flush()
        self.shown = False


def _reply_bytes(reply):
    count = reply.get("bytes")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise TransportError(f"the snapshot reply has no byte count: {reply}")
    return count


def snapshot_vm(client, stream_path, vm, path, live=False, progress=None, compress=True,
                disks=True):
    """Snapshot VM @vm into the file @path.  Connects the stream socket first,
    sends "snapshot", copies the stream to PATH.tmp while it comes (the
    client's timeout bounds silence, not the whole transfer) and renames it to
    @path only when the reply is ok and exactly its "bytes" arrived; otherwise
    the temporary file is removed.  @compress: the file is the stream gzipped
    (a snapshot file may be either, docs/snapshot-format.md), else the stream
    itself.  @disks false: the stream leaves the disks' content out ("disks":
    false; the hypervisor's default is to put it in).  Returns the reply, with
    "file", "file_bytes" and "compressed" added."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        # owner only: a snapshot holds all of the guest's memory (its keys too)
        raw = os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb")
        os.chmod(tmp, 0o600)        # an old PATH.tmp keeps its mode through O_TRUNC
    except OSError as e:
        raise FileError(f"cannot write {tmp}: {e.strerror or e}") from None
    # No name or time in the gzip header: the same stream gives the same file.
    out = gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=GZIP_LEVEL,
                        mtime=0) if compress else raw
    meter = Progress(progress, f"snapshot {vm}")
    received, stream, reply, ok = 0, None, None, False
    try:
        # the writer ends (its thread) before the files close
        with raw, out, _FileWriter(out, tmp, threaded=compress) as writer:
            stream = connect_stream(stream_path, client.timeout)
            # A round trip first: the hypervisor learns of the stream connection
            # from a port event, which it has then seen (docs/management.md).
            client.request("hello")
            request = {"vm": vm, "live": bool(live)}
            if not disks:
                request["disks"] = False
            pending = client.begin("snapshot", request)
            reply = client.take_reply(pending)
            with selectors.DefaultSelector() as sel:
                sel.register(stream, selectors.EVENT_READ)
                if reply is None:
                    sel.register(client.sock, selectors.EVENT_READ)
                while True:
                    if reply is not None:
                        want = _reply_bytes(reply)
                        if received > want:
                            raise TransportError(f"{received} bytes came on the stream, but "
                                                 f"the reply says {want}")
                        if received == want:
                            break
                    events = sel.select(client.timeout)
                    if not events:
                        of = f" of {_reply_bytes(reply)}" if reply is not None else ""
                        raise TransportError(f"nothing on the stream or the control socket "
                                             f"for {client.timeout:g} s ({received}{of} bytes "
                                             "received)")
                    for key, _ in events:
                        if key.fileobj is stream:
                            received += _receive_some(stream, writer, received)
                            meter.update(received)
                        else:
                            client.receive()
                            reply = client.take_reply(pending)
                            if reply is not None:
                                sel.unregister(client.sock)
            writer.finish()
            try:
                out.close()                 # the gzip trailer, before the size
                raw.close()
                file_bytes = os.stat(tmp).st_size
            except OSError as e:
                raise FileError(f"cannot write {tmp}: {e.strerror or e}") from None
        os.replace(tmp, path)
        ok = True
    finally:
        if stream is not None:
            stream.close()
        if not ok:
            meter.abort()
            tmp.unlink(missing_ok=True)
    meter.finish(received)
    return {**reply, "file": str(path), "file_bytes": file_bytes, "compressed": bool(compress)}


def _receive_some(stream, writer, received):
    try:
        n = stream.recv_into(writer.buffer)
    except (BlockingIOError, TimeoutError):
        return 0
    except OSError as e:
        raise TransportError(f"the stream connection failed after {received} bytes: "
                             f"{e.strerror or e}") from None
    if not n:
        raise TransportError(f"the stream connection closed after {received} bytes")
    writer.write(n)
    return n


class _FileWriter:
    """Writes what the stream brings to a snapshot file (@out), from one
    receive buffer (.buffer: a recv() of a new 1 MiB object each time cost as
    much as writing the bytes).  @threaded (gzip): deflating runs on a
    thread of its own while the next bytes come (zlib lets the receiving
    thread run meanwhile): inline, an idle Linux guest's stream moved at
    50-70 MB/s, on the thread at 90-115, about deflate's own rate at level 1
    (docs/performance.md, "Stream throughput"); at most GZIP_BACKLOG bytes
    wait for it, then the stream does.  A write error is raised by the next
    write() or by finish()."""

    def __init__(self, out, tmp, threaded):
        self.out, self.tmp = out, tmp
        self.buffer = memoryview(bytearray(STREAM_CHUNK))
        self.error = None
        self.queue = self.thread = None
        if threaded:
            self.queue = queue.Queue(maxsize=max(1, GZIP_BACKLOG // STREAM_CHUNK))
            self.thread = threading.Thread(target=self._run, name="snapshot-gzip", daemon=True)
            self.thread.start()

    def _write(self, data):
        try:
            self.out.write(data)
        except OSError as e:
            raise FileError(f"cannot write {self.tmp}: {e.strerror or e}") from None

    def _run(self):
        while (data := self.queue.get()) is not None:
            if self.error is None:
                try:
                    self._write(data)
                except FileError as e:
                    self.error = e
                except Exception as e:     # whatever it is: the stream must not wait on it
                    self.error = FileError(f"cannot write {self.tmp}: {e}")

    def write(self, n):
        """The first @n bytes of .buffer."""
        if self.thread is None:
            self._write(self.buffer[:n])
            return
        if self.error is not None:
            raise self.error
        self.queue.put(bytes(self.buffer[:n]))      # the buffer is the next recv's

    def finish(self):
        """Wait until everything written is in the file; raise a write's error."""
        self.stop()
        if self.error is not None:
            raise self.error

    def stop(self):
        """End the thread (what is queued is written first)."""
        if self.thread is not None:
            self.queue.put(None)
            self.thread.join()
            self.thread = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class _FileSender:
    """Writes a stream (a snapshot file, expanded if it is gzip) on a
    non-blocking socket, as much as it takes at a time (the rest of a chunk
    a send() took part of is a view of it, not a copy)."""

    def __init__(self, f, path, size):
        self.f, self.path, self.size = f, path, size
        self.sent, self.chunk = 0, memoryview(b"")

    def send(self, sock):
        if not self.chunk:
            try:
                chunk = self.f.read(min(STREAM_CHUNK, self.size - self.sent))
            except OSError as e:
                raise FileError(f"cannot read {self.path}: {e.strerror or e}") from None
            if not chunk:
                raise FileError(f"{self.path} ended after {self.sent} of {self.size} bytes "
                                "(did it change?)")
            self.chunk = memoryview(chunk)
        try:
            n = sock.send(self.chunk)
        except BlockingIOError:
            return
        except OSError as e:
            raise TransportError(f"the stream connection failed after {self.sent} bytes: "
                                 f"{e.strerror or e}") from None
        self.chunk = self.chunk[n:]
        self.sent += n


def disk_args(disks):
    """The restore/incoming arguments disk0, disk1 from @disks: the host PCI
    device numbers the VM's disks go to, in order (None or [] : as saved)."""
    disks = list(disks or [])
    if len(disks) > 2 or any(not isinstance(d, int) or not 1 <= d <= 31 for d in disks):
        raise UsageError(f"disks {disks}: at most two host PCI device numbers 1..31")
    return {f"disk{i}": d for i, d in enumerate(disks)}


def check_disk_targets(path, snap, disks):
    """A snapshot holding its disks' content writes each into the host disk
    its restore names: never by default (that is the disk it was saved from,
    the original image), so one --disk per disk. That the host disk is a fresh
    zeroed one (a block the stream does not hold stays as it is) is the
    user's to see to: carapace-run --spare-disk makes one."""
    if not snap.disks_included or len(disks) == len(snap.disks):
        return
    sizes = ", ".join(f"disk {d['slot']}: {d['capacity']} sectors "
                      f"({d['capacity'] * 512} bytes{', read-only' if d['read_only'] else ''})"
                      for d in snap.disks)
    raise UsageError(f"{path} holds the content of its {len(snap.disks)} disk(s) "
                     f"({sizes}), and {len(disks)} --disk given: give --disk N for each, "
                     "the PCI device number of a fresh zeroed host disk of that size that "
                     "no VM has (carapace-run --spare-disk PATH:size=SIZE makes one); the "
                     "restore writes the disk's content there (never onto the disk it was "
                     "saved from); a read-only disk's is not in it: its --disk is its image")


def restore_vm(client, stream_path, path, name=None, verify=True, progress=None,
               stream_bytes=None, disks=None):
    """Restore a VM from the snapshot file @path (as @name, else the name it
    had; its disks on the host disks @disks names, else where they were).
    Checks the file first (unless @verify is false), connects the
    stream socket, sends "restore" with the stream's size and writes the
    stream (a gzip file expanded as it goes) on the stream socket, stopping at
    an early error reply.  @stream_bytes: the stream's size if the caller
    knows it (a verify did).  Returns the reply, which comes once the VM runs."""
    path = Path(path)
    from . import snapshot as snap    # parses the C headers: only when needed
    if verify:
        snap = verify_snapshot(path)
        check_disk_targets(path, snap, disks or [])
        stream_bytes = snap.size
    try:
        if stream_bytes is None:
            stream_bytes = snap.stream_size(path)
        f, _, _, _ = snap.open_stream(path)
    except OSError as e:
        raise FileError(f"cannot read {path}: {e.strerror or e}") from None
    size = stream_bytes
    meter = Progress(progress, f"restore {path.name}", size)
    sender, stream, done = _FileSender(f, path, size), None, False
    try:
        with f:
            stream = connect_stream(stream_path, client.timeout)
            client.request("hello")          # see snapshot_vm()
            pending = client.begin("restore", {"name": name, "bytes": size,
                                               **disk_args(disks)})
            stream.setblocking(False)
            reply = client.take_reply(pending)
            with selectors.DefaultSelector() as sel:
                sel.register(client.sock, selectors.EVENT_READ)
                writing = size > 0
                if writing:
                    sel.register(stream, selectors.EVENT_WRITE)
                while reply is None:
                    if writing and sender.sent == size:
                        sel.unregister(stream)
                        writing = False
                        meter.finish(size)
                    events = sel.select(client.timeout)
                    if not events:
                        raise TransportError(
                            f"no reply within {client.timeout:g} s, {sender.sent} of {size} "
                            "bytes of the stream sent"
                            + (" (the hypervisor stopped reading?)" if writing else ""))
                    for key, _ in events:
                        if key.fileobj is stream:
                            sender.send(stream)
                            meter.update(sender.sent)
                        else:
                            client.receive()
                            reply = client.take_reply(pending)
                            if reply is not None:
                                break
            if sender.sent < size:
                raise TransportError(f"the hypervisor answered ok after {sender.sent} of "
                                     f"{size} bytes of the stream")
            done = True
    finally:
        if stream is not None:
            stream.close()
        if not done:
            meter.abort()
    return reply


