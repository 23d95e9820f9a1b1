# SPDX-License-Identifier: MIT
"""carapace-run --incoming: the fresh host's migration relay (IncomingRelay),
a TLS 1.3 server that authenticates each source by its X.509 certificate
and only then connects it to the hypervisor's stream port; it stops
listening once a VM has arrived (docs/migration.md)."""

import dataclasses
import json
import sys
import threading
from pathlib import Path

from . import tls
from .errors import TransportError
from .migration import MigReporter, relay_armed
from .restorer import HELLO_TIMEOUT, hello_client

INCOMING_HOST = "127.0.0.1"    # --incoming: the relay's default address
RELAY_IDLE_MARGIN = 10.0       # --incoming: a source silent this long past the stall time goes


@dataclasses.dataclass
class IncomingSpec:
    """--incoming / --incoming-plain: where the relay listens, and how it
    authenticates sources (a carapace-tls Transport)."""
    addr: str
    port: int
    transport: object
    events: Path | None = None     # --incoming-events FILE
    disks: object = None           # --incoming-disk: an incoming_disks.IncomingDisks
    arrived: bool = False          # set by the relay once a VM has arrived

    @property
    def where(self):
        return f"[{self.addr}]:{self.port}" if ":" in self.addr else f"{self.addr}:{self.port}"


class IncomingRelay:
    """The network side of an --incoming host, in threads beside the console:
    listens on the spec's address (the socket is bound before QEMU starts),
    authenticates every source (carapace-tls Listener: a peer that fails is
    refused and reported, and nothing of it reaches the hypervisor), and once
    the hypervisor answers hello relays one authenticated source at a time to
    its stream socket, which the hypervisor reads as the migration it waits
    for (/chosen carapace,incoming).  After a failed attempt it waits for the
    next, as the hypervisor does; once a VM has arrived it stops listening.
    Lines for people go to @out ("carapace-run: incoming: ..."); with
    spec.events, every event also goes there as one JSON object a line."""

    SHOWN = ("listening", "refused", "accepted", "relaying", "ended", "arrived", "stopped",
             "warning")

    def __init__(self, spec, sock, ctl_socket, stream_socket, idle_timeout,
                 hello_timeout=HELLO_TIMEOUT, out=None, crlf=False):
        self.spec, self.sock = spec, sock
        self.ctl_socket, self.stream_socket = ctl_socket, stream_socket
        self.idle_timeout, self.hello_timeout = idle_timeout, hello_timeout
        self.out = out or sys.stderr
        self.eol = "\r\n" if crlf else "\n"
        self.lock = threading.Lock()
        self.events = open(spec.events, "a", buffering=1) if spec.events else None
        self.proc = None
        self.thread = None
        self.stopped = False
        self.acceptor = None

    def note(self, kind, text, **fields):
        with self.lock:
            if self.events:
                self.events.write(json.dumps({"event": kind, **fields},
                                             separators=(",", ":")) + "\n")
            if kind in self.SHOWN:
                self.out.write(f"carapace-run: incoming: {text}{self.eol}")
                self.out.flush()

    def start(self, proc):
        self.proc = proc
        self.acceptor = tls.Listener(self.sock, self.spec.transport, self.note).start()
        self.note("listening", f"listening on {self.spec.where} ({self.spec.transport.label})",
                  listen=self.spec.where, mode=self.spec.transport.mode)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def qemu_gone(self):
        return self.stopped or (self.proc is not None and self.proc.poll() is not None)

    def run(self):
        try:
            client = hello_client(self.ctl_socket, self.hello_timeout, self.qemu_gone)
            if client is None:
                return
            client.close()
            while not self.qemu_gone():
                try:
                    conn, peer, _ = self.acceptor.accept(timeout=0.5)
                except TimeoutError:
                    continue
                self.acceptor.busy = True
                self.note("relaying", f"relaying {peer} to the hypervisor", peer=peer)
                reporter = MigReporter(self.events, as_json=True, role="destination")
                reporter.emit = self.locked_emit(reporter.emit)
                arrived, confirmed, why = relay_armed(conn, self.stream_socket,
                                                          reporter, self.idle_timeout)
                self.acceptor.busy = False
                if arrived:
                    # the hypervisor keeps the VM it started, confirmed or not
                    self.spec.arrived = True
                    state = "" if confirmed else (" (unconfirmed: the source's DONE never "
                                                  "came; see its list)")
                    disks, fields = self.disks_text(reporter)
                    self.note("arrived", f"the VM from {peer} arrived{state}{disks}; no longer "
                              f"listening on {self.spec.where}", peer=peer,
                              confirmed=confirmed, **fields)
                    return
                self.note("ended", f"the attempt from {peer} ended ({why or 'stream closed'}); "
                          "waiting for another", peer=peer, why=why)
        except TransportError as e:
            self.note("stopped", f"stopped: {e}", error=str(e))
        except Exception as e:                 # say so: a silent relay would look idle
            self.note("stopped", f"stopped: {type(e).__name__}: {e}", error=str(e))
        finally:
            self.acceptor.close()

    def disks_text(self, reporter):
        """The --incoming-disk mode of an arrival, and in copy mode the DISK
        blocks the relay carried: (words, event fields)."""
        disks = self.spec.disks
        if disks is None:
            return "", {}
        if not disks.copy:
            return " (its disks shared: the source's images)", {"disk_mode": "shared"}
        return (f" (its disks copied: {reporter.disk_blocks} blocks received)",
                {"disk_mode": "copy", "disk_blocks": reporter.disk_blocks})

    def locked_emit(self, emit):
        def locked(event, text):
            with self.lock:
                emit(event, text)
        return locked

    def stop(self):
        self.stopped = True
        if self.acceptor:
            self.acceptor.close()
        else:
            self.sock.close()
        if self.thread:
            self.thread.join(5.0)
        with self.lock:
            if self.events:
                self.events.close()
                self.events = None


