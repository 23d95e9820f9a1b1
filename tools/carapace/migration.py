# SPDX-License-Identifier: MIT
"""Live migration from the management client's side (docs/migration.md):
migrate_vm() connects to the destination's relay (connect_destination(): TCP,
then TLS that authenticates both hosts, then the destination's ready mark)
and relays the stream while the source's "migrate" request runs;
incoming_vm() is the destination's relay on a running host, which admits a
source only once it has authenticated.  MigReporter prints the progress."""

import json
import re
import socket
import time

from .client import DEFAULT_TIMEOUT
from .errors import TransportError, UsageError
from .limits import CFI_POLICIES
from .relay import MIG_ACCEPT_COPY_DISKS, MIG_FWFT, SEC, SNAP_FEATURES, MigRelay
from .hostnames import host_address
from .streams import connect_stream, disk_args
from .units import human_size


def parse_target(text):
    """HOST:PORT (IPv6 as [ADDR]:PORT) -> (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise UsageError(f"{text}: give the destination as HOST:PORT (e.g. 127.0.0.1:4444)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, tcp_port(port, text)


def tcp_port(text, what):
    if not re.fullmatch(r"[0-9]{1,5}", text) or not 1 <= int(text) <= 65535:
        raise UsageError(f"{what}: port must be 1..65535")
    return int(text)


def connect_tcp(host, port, timeout=DEFAULT_TIMEOUT):
    """The TCP connection to the destination (QEMU's chardev of carapace-run
    --incoming, or carapace-ctl incoming)."""
    where = f"{host}:{port}"
    try:
        sock = socket.create_connection((host_address(host), port), timeout=timeout)
    except ConnectionRefusedError:
        raise TransportError(f"nothing listens at {where} (connection refused): start the "
                             "destination first (carapace-run --incoming PORT for a fresh "
                             "host, carapace-ctl incoming PORT on a running one)") from None
    except socket.gaierror as e:
        raise TransportError(f"cannot resolve {host}: {e.strerror or e}") from None
    except (TimeoutError, socket.timeout):
        raise TransportError(f"timed out connecting to {where}") from None
    except OSError as e:
        raise TransportError(f"cannot connect to {where}: {e.strerror or e}") from None
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class Refusal(TransportError):
    """The peer did not authenticate, or refused us (carapace-tls Refused):
    @reason is one of carapace-tls REASONS, @stage "tls" or "ready"."""

    def __init__(self, message, reason, stage):
        super().__init__(message)
        self.reason, self.stage = reason, stage


def connect_destination(host, port, transport, timeout=DEFAULT_TIMEOUT, reporter=None):
    """The source's connection to the destination's relay at @host:@port, ready
    for the migration: TCP, then (transport.mode "tls") the TLS handshake that
    authenticates both hosts, then the destination's ready mark.  Raises
    TransportError (Refusal when a side refused the other) before the source
    hypervisor has been asked anything."""
    from . import tls      # imported when needed: carapace-ctl starts faster

    reporter = reporter or MigReporter(None)
    where = f"{host}:{port}"
    raw = connect_tcp(host, port, timeout)
    conn = raw
    try:
        if transport.mode == "tls":
            try:
                conn, who = tls.client_handshake(raw, transport, host,
                                                 min(timeout, tls.HANDSHAKE_TIMEOUT))
            except tls.Refused as e:
                raise Refusal(f"TLS with {where}: {e.message}" + refusal_hint(e, transport),
                              e.reason, "tls") from None
            reporter.note("transport", f"TLS to {where}: the destination is {who['subject']} "
                          f"(names {' '.join(who['names'])}; issued by {who['issuer']}), "
                          f"{who['version']}, {who['cipher']}", mode="tls", peer=where, **who)
        else:
            reporter.note("transport", f"plain TCP to {where}: the stream is neither "
                          "authenticated nor encrypted (--plain, loopback only)",
                          mode="plain", peer=where)
        try:
            tls.wait_ready(conn, timeout)
        except tls.Refused as e:
            hint = (" (a TLS relay says nothing to a plain client: give the credentials, "
                    "not --plain?)" if transport.mode == "plain" and e.reason == "timeout"
                    else "")
            raise Refusal(f"{where}: {e.message}{hint}", e.reason, "ready") from None
        reporter.note("ready", "the destination authenticated this host and is ready"
                      if transport.mode == "tls" else "the destination is ready", peer=where)
    except BaseException:
        conn.close()
        raise
    return conn


def refusal_hint(e, transport):
    """What to check after a refused handshake, by its reason."""
    creds = transport.creds
    if e.reason == "certificate" and creds:
        return f" (is {creds.ca} the CA that signed the destination's certificate?)"
    if e.reason == "name":
        return (" (connect by a name its certificate carries, or give that name with "
                "--tls-name)")
    if e.reason == "refused-by-peer" and creds:
        return f" (does the destination trust the CA that signed {creds.cert}?)"
    if e.reason == "not-tls":
        return " (is the destination's relay started with TLS credentials?)"
    return ""


def mb_rate(nbytes, seconds):
    return nbytes / 1e6 / max(seconds, 1e-6)


def bits_text(value, names):
    words = [n for i, n in enumerate(names) if value >> i & 1]
    return " ".join(words) if words else "none"


def sbi_text(version):
    return f"{version >> 24}.{version & 0xffffff}" if isinstance(version, int) else "?"


def ticks_us(fields):
    hz = fields.get("timebase_hz") or 0
    return fields["downtime_ticks"] * 1_000_000 // hz if hz else None


class MigReporter:
    """Progress of a migration on @out: lines for people, or with @as_json one
    JSON object per event ({"event": ...}).  @role: "source" (carapace-ctl
    migrate) or "destination" (carapace-ctl incoming)."""

    def __init__(self, out, as_json=False, role="source"):
        self.out, self.as_json, self.role = out, as_json, role
        self.start = time.monotonic()
        self.round_mark = None             # (time, S->D bytes) where the round began
        self.events = []                   # every event object, in order
        self.disk_blocks = 0               # DISK sections S sent D (copy mode)

    def emit(self, event, text):
        self.events.append(event)
        if self.out is None:
            return
        if self.as_json:
            self.out.write(json.dumps(event, separators=(",", ":")) + "\n")
        else:
            self.out.write(text + "\n")
        self.out.flush()

    def note(self, what, text, **fields):
        self.emit({"event": what, **fields}, text)

    def stream_event(self, direction, ev, relayed):
        """@direction "sd" (source to destination) or "ds"; @relayed: bytes the
        source to destination direction carried up to @ev."""
        if ev.kind != "section":
            return
        f, now = ev.fields, time.monotonic()
        sender = "source" if direction == "sd" else "destination"
        if ev.type == SEC["DISK"] and direction == "sd":
            self.disk_blocks += 1
        if ev.type == SEC["CAPS"] and f:
            self.note("caps", (f"destination offers: {bits_text(f['features'], SNAP_FEATURES)}; "
                               f"policies {bits_text(f['policies'], CFI_POLICIES)}; SBI "
                               f"{sbi_text(f['sbi_version'])}; FWFT "
                               f"{bits_text(f['fwft'], MIG_FWFT)}; {f['max_vcpus']} vCPUs; "
                               f"{human_size(f['free_mem'])} free; timebase "
                               f"{f['timebase_hz']} Hz"), **f)
        elif ev.type == SEC["CONFIG"] and f:
            policy = f["cfi_policy"]
            self.note("config", (f"vm {f['name']}: {human_size(f['ram_size'])} RAM, "
                                 f"{f['nr_vcpus']} vCPU(s), policy "
                                 f"{CFI_POLICIES[policy] if policy < 4 else policy}, gets "
                                 f"{bits_text(f['features'], SNAP_FEATURES)}"),
                      vm=f["name"], ram_size=f["ram_size"], vcpus=f["nr_vcpus"],
                      cfi_policy=policy, features=f["features"])
        elif ev.type == SEC["ACCEPT"] and f:
            self.round_mark = (now, relayed)
            copy = bool(f["flags"] & MIG_ACCEPT_COPY_DISKS)
            self.note("accept", (f"destination accepted (its slot {f['vm_index']}), disks "
                                 f"{'copied in the stream' if copy else 'shared'}: pre-copy"),
                      vm_index=f["vm_index"], disk_mode="copy" if copy else "shared")
        elif ev.type == SEC["DISK_LAYOUT"] and f:
            self.note("disk", (f"disk {ev.instance}: {human_size(f['sectors'] * 512)}"
                               f"{' read-only' if f['flags'] & 1 else ''}, copied"),
                      disk=ev.instance, sectors=f["sectors"], read_only=bool(f["flags"] & 1))
        elif ev.type == SEC["ROUND"] and f:
            t0, b0 = self.round_mark or (self.start, 0)
            seconds, nbytes = now - t0, relayed - b0
            rate = mb_rate(nbytes, seconds)
            self.round_mark = (now, relayed)
            disks = (f", {f['disk_blocks']} disk blocks sent, {f['disk_dirty']} dirty left"
                     if f["disk_blocks"] or f["disk_dirty"] else "")
            expected = f["expected_downtime_us"]
            unknown = expected == (1 << 64) - 1       # no rate measured yet
            pace = (f", its page writes held to {f['dirty_limit']}/s (auto-converge)"
                    if f["dirty_limit"] else "")
            self.note("round", (f"round {f['round']}: {f['pages']} pages sent, {f['dirty']} "
                                f"dirty left{disks}, {nbytes} bytes, {rate:.1f} MB/s; "
                                f"downtime expected "
                                f"{'?' if unknown else f'{expected / 1000:.1f} ms'}{pace}"),
                      round=f["round"], pages=f["pages"], dirty=f["dirty"],
                      disk_blocks=f["disk_blocks"], disk_dirty=f["disk_dirty"], bytes=nbytes,
                      total_bytes=f["bytes"], seconds=round(seconds, 6),
                      rate_mb_s=round(rate, 3),
                      expected_downtime_us=None if unknown else expected,
                      dirty_limit=f["dirty_limit"])
        elif ev.type == SEC["SWITCHOVER"] and f:
            self.note("stop-and-copy", (f"stop-and-copy: the vm is paused on the source "
                                        f"after {f['rounds']} round(s)"),
                      rounds=f["rounds"], guest_time=f["guest_time"])
        elif ev.type == SEC["END"] and f:
            self.note("end", (f"stop-and-copy sent: {f['sections']} sections before END, "
                              f"{f['memory_pages']} memory pages in all"), **f)
        elif ev.type == SEC["RUNNING"] and f:
            us = ticks_us(f)
            self.note("running", ("the guest runs on the destination"
                                  + (f" (its downtime {us / 1000:.3f} ms)" if us is not None
                                     else "")), downtime_us=us)
        elif ev.type == SEC["DONE"] and f:
            us = ticks_us(f)
            self.note("done", ("done: the source destroyed its copy"
                               + (f" (its downtime {us / 1000:.3f} ms)" if us is not None
                                  else "")), downtime_us=us)
        elif ev.type == SEC["ABORT"]:
            code = f["code"] if f else "?"
            message = f["message"] if f else "(malformed ABORT)"
            self.note("abort", f"{sender} aborts: {code}: {message}", side=sender, code=code,
                      message=message)


def migrate_vm(client, stream_path, vm, host, port, max_rounds=None, reporter=None,
               hook=None, remote=None, start=None, transport=None, downtime_limit_ms=None,
               auto_converge=None):
    """Migrate VM @vm to the destination listening at @host:@port: connects
    there over @transport (carapace-tls Transport; unless @remote is that
    connection already, from connect_destination()), connects the stream
    socket, sends "migrate" and relays the stream both ways until the reply
    (docs/migration.md).  Returns the reply with "wall_us" (the time since
    @start, a time.monotonic(), default now) and "to" added; raises
    RemoteError (the VM stays on the source unless the reply is ok) or
    TransportError.  The relay closes both connections.  @downtime_limit_ms,
    @auto_converge: when pre-copy may stop, and whether a guest that writes
    faster than the stream is paced (None: the hypervisor's defaults, 20 ms
    and on)."""
    reporter = reporter or MigReporter(None)
    start = time.monotonic() if start is None else start
    if remote is None:
        if transport is None:
            raise UsageError("migrate_vm: give a transport (carapace-tls source_transport(), "
                             "or plain_transport() on the loopback)")
        remote = connect_destination(host, port, transport, client.timeout, reporter)
    where = f"{host}:{port}"
    local = None
    try:
        local = connect_stream(stream_path, client.timeout)
        client.request("hello")               # see snapshot_vm()
        reporter.note("connected", f"migrate {vm}: connected to {where}", vm=vm, to=where)
        pending = client.begin("migrate", {"vm": vm, "max_rounds": max_rounds,
                                           "downtime_limit_ms": downtime_limit_ms,
                                           "auto_converge": auto_converge})
        relay = MigRelay(client, pending, local, remote, "source", reporter, hook)
        reply = relay.run(client.timeout)
    finally:
        for sock in (remote, local):
            if sock is not None:
                sock.close()
    return {**reply, "to": where, "wall_us": int((time.monotonic() - start) * 1e6)}


def listen_tcp(addr, port):
    from . import tls      # imported when needed: carapace-ctl starts faster
    try:
        return tls.listen(addr, port)
    except socket.gaierror as e:
        raise UsageError(f"--listen {addr}: {e.strerror or e}") from None
    except OSError as e:
        raise TransportError(f"cannot listen on {addr}:{port}: {e.strerror or e}") from None


def incoming_args(name=None, disks=None, copy_disks=False):
    """The "incoming" request's arguments, checked (UsageError): @name the VM's
    new name, @disks the host disks (PCI device numbers) its disks go to, in
    order; @copy_disks: copy mode ("disks": "copy"), the disks' blocks come
    in the stream, so every disk needs one here, a free zeroed host disk of
    its size (the hypervisor refuses a disk without one, no-device, once it
    knows the VM's disks: not here, a VM may have none). Shared mode (the
    default) sends no "disks"."""
    return {"name": name, **disk_args(disks), "disks": "copy" if copy_disks else None}


def incoming_vm(client_factory, stream_path, addr, port, name=None, reporter=None,
                wait=None, transport=None, disks=None, copy_disks=False):
    """Receive one VM on a running host: listen on @addr:@port and wait (up to
    @wait seconds, None: no limit) for a source that authenticates over
    @transport (carapace-tls Transport: destination_transport(), or
    plain_transport() on the loopback); peers that do not are refused and
    reported, and never reach the hypervisor.  Then tell the source it may
    start, connect the control socket (@client_factory() returns a Client)
    and the stream socket, send "incoming" (@name: the VM's new name; @disks,
    @copy_disks: see incoming_args()) and relay until the reply.  Returns the
    reply with "from" and "wall_us" added."""
    from . import tls      # imported when needed: carapace-ctl starts faster

    if transport is None:
        raise UsageError("incoming_vm: give a transport (carapace-tls "
                         "destination_transport(), or plain_transport() on the loopback)")
    request = incoming_args(name, disks, copy_disks)        # before listening
    reporter = reporter or MigReporter(None, role="destination")
    acceptor = tls.Listener(listen_tcp(addr, port), transport, reporter.note)
    remote = local = None
    try:
        where = f"{addr}:{acceptor.sock.getsockname()[1]}"
        reporter.note("listening", f"waiting for a migration on {where} ({transport.label})",
                      listen=where, mode=transport.mode)
        acceptor.start()
        try:
            remote, peer_text, _ = acceptor.accept(wait)
        except TimeoutError:
            verb = "authenticated" if transport.mode == "tls" else "connected"
            raise TransportError(f"no source {verb} at {where} within {wait:g} s") from None
        acceptor.close()
        start = time.monotonic()
        # the source may start now: its first bytes wait in the connection
        # while the hypervisor is asked (a refusal there breaks its stream)
        try:
            tls.send_ready(remote)
        except tls.Refused as e:
            raise TransportError(f"the source {peer_text}: {e.message}") from None
        with client_factory() as client:
            local = connect_stream(stream_path, client.timeout)
            client.request("hello")
            pending = client.begin("incoming", request)
            relay = MigRelay(client, pending, local, remote, "destination", reporter)
            reply = relay.run(client.timeout)
    finally:
        acceptor.close()
        for sock in (remote, local):
            if sock is not None:
                sock.close()
    return {**reply, "from": peer_text, "wall_us": int((time.monotonic() - start) * 1e6)}


def relay_armed(remote, stream_path, reporter, idle_timeout):
    """A carapace-run --incoming host, whose hypervisor waits for a migration
    without a request (/chosen carapace,incoming): relay one authenticated
    source (@remote, from carapace-tls Listener) to the stream socket until
    either side ends, or nothing moves for @idle_timeout seconds.  Returns
    (arrived, confirmed, why): arrived once the hypervisor has started the VM
    (it keeps it, and waits for no other migration), confirmed once S's DONE
    has gone to it; why the relay ended early, else None."""
    from . import tls      # imported when needed: carapace-ctl starts faster

    local = relay = None
    try:
        local = connect_stream(stream_path, DEFAULT_TIMEOUT)
        tls.send_ready(remote)
        relay = MigRelay(None, None, local, remote, "destination", reporter)
        relay.run(idle_timeout)
        return relay.arrived, relay.confirmed, None
    except tls.Refused as e:
        why = e.message
    except TransportError as e:
        why = str(e)
    finally:
        for sock in (remote, local):
            if sock is not None:
                sock.close()
    return (relay.arrived, relay.confirmed, why) if relay else (False, False, why)


