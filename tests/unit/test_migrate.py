# SPDX-License-Identifier: MIT
"""Tests for the host side of live migration (docs/migration.md) in
tools/carapace-ctl: the framing parser that follows a migration stream, the
progress it prints, and the relay (migrate, incoming) between a fake source
hypervisor (a control socket and a stream socket served by threads) and a
fake destination (a TLS server thread, Python's own ssl: the relay's TLS
must speak with it), including every --cut-at and --hold-at phase; the
transport's refusals (a destination whose certificate does not verify, or
that refuses ours, never gets the source hypervisor asked anything; peers
that do not authenticate never reach the destination's); plain TCP on the
loopback only; and the argument checks.  No QEMU."""

import io
import json
import re
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from carapace.cli.ctl import main, show_incoming
from carapace.client import COMMANDS, ERROR_CODES, Client
from carapace.crc32c import crc32c
from carapace.cli.run import bind_incoming
from carapace.errors import RemoteError, UsageError
from carapace.host import Host
from carapace.incoming import IncomingRelay, IncomingSpec
from carapace.incoming_disks import IncomingDisks
from carapace.migration import MigReporter, incoming_args, incoming_vm, migrate_vm, parse_target
from carapace import paths, relay
from carapace.relay import SEC, Hook, MigFramer, cstr_text, parse_phase
from carapace.streams import connect_stream
from carapace.tls import READY, ROLE_FILES, destination_transport, plain_transport, source_transport
from harness.fakes import FakeHypervisor

pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parents[2]
CTL = ROOT / "tools" / "carapace-ctl"
MiB = 1 << 20


PAGE = 4096


# --- building a migration stream ----------------------------------------------------


def header(version=9):
    """The migration header (docs/migration.md: protocol version 9)."""
    return b"CARAMIGR" + struct.pack("<IIQQ", version, 32, 0, 0)


def section(stype, payload, instance=0):
    if isinstance(stype, str):
        stype = SEC[stype]
    return struct.pack("<IIQII", stype, instance, len(payload), crc32c(payload), 0) + payload


def caps(features=0x1f, policies=0xf, free=1 << 30):
    return struct.pack("<IIIIQQII", features, policies, 2 << 24, 8, free, 10_000_000, 3, 0)


def config(name=b"alpha", ram=64 * MiB, vcpus=1):
    head = struct.pack("<16sQQIIIIII", name, 0x80000000, ram, vcpus, 0, 0x1f, 1, 0, 0)
    return head + bytes(648 - len(head))


def memory(gpa, pages, fill=0x5a):
    return struct.pack("<QQ", gpa, pages) + bytes([fill]) * (pages * PAGE)


def disk_block(n, fill=0x3c):
    """A DISK section's payload: block @n of disk 0 (128 sectors), all @fill."""
    return struct.pack("<QII", n * 128, 128, 0) + bytes([fill]) * 65536


def round_(n, pages, dirty, total, expected_us=2500, dirty_limit=0):
    return struct.pack("<IIQQQQQQQ", n, 0, pages, dirty, total, 0, 0, expected_us, dirty_limit)


def abort(code, message):
    return struct.pack("<16s160s", code.encode(), message.encode())


def ticks(t):
    return struct.pack("<QQ", t, 10_000_000)


class Closed(Exception):
    pass


def recv_exact(sock, n, keep=None):
    """@n bytes; each piece is also appended to @keep as it comes."""
    out = bytearray()
    while len(out) < n:
        try:
            chunk = sock.recv(n - len(out))
        except OSError:
            chunk = b""
        if not chunk:
            raise Closed(f"closed after {len(out)} of {n} bytes")
        out += chunk
        if keep is not None:
            keep += chunk
    return bytes(out)


def read_section(sock, keep=None):
    raw = recv_exact(sock, 24, keep)
    stype, instance, length, crc, _ = struct.unpack("<IIQII", raw)
    payload = recv_exact(sock, length, keep)
    assert crc32c(payload) == crc
    return stype, instance, payload


ROUNDS = [3, 2]                # pages sent in each pre-copy round


class SourceScript:
    """What a source hypervisor does on its stream connection for one
    migration (docs/migration.md); returns the reply fields."""

    def __init__(self, rounds=ROUNDS, config_payload=None, disk_blocks=0, reply_extra=None):
        self.rounds = rounds
        self.config_payload = config_payload or config()
        self.disk_blocks = disk_blocks     # DISK sections in round 1 (copy mode)
        self.reply_extra = reply_extra or {}
        self.sent = bytearray()
        self.got = []              # section types from D
        self.phase = None
        self.outcome = None        # "done", "refused", "broken at PHASE"

    def send(self, sock, data):
        sock.sendall(data)
        self.sent += data

    def __call__(self, sock):
        try:
            self.phase = "negotiation"
            self.send(sock, header())
            assert recv_exact(sock, 32)[:8] == b"CARAMIGR"
            stype, _, payload = read_section(sock)
            self.got.append(stype)
            if stype == SEC["ABORT"]:
                self.outcome = "refused"
                return {"ok": False, "code": "refused", "error": "the destination refused: "
                        + cstr_text(payload[16:])}
            self.send(sock, section("CONFIG", self.config_payload))
            stype, _, payload = read_section(sock)
            self.got.append(stype)
            if stype == SEC["ABORT"]:
                self.outcome = "refused"
                code = cstr_text(payload[:16])
                return {"ok": False, "code": code,
                        "error": "the destination refused: " + cstr_text(payload[16:])}
            pages = 0
            for n, count in enumerate(self.rounds, 1):
                self.phase = f"round:{n}"
                self.send(sock, section("MEMORY", memory(0x80000000, count, n)))
                for block in range(self.disk_blocks if n == 1 else 0):
                    self.send(sock, section("DISK", disk_block(block)))
                pages += count
                dirty = self.rounds[n] if n < len(self.rounds) else 1
                self.send(sock, section("ROUND", round_(n, count, dirty, len(self.sent) + 56)))
            self.phase = "stop-and-copy"
            self.send(sock, section("SWITCHOVER", struct.pack("<QII", 123456, len(self.rounds),
                                                              0)))
            self.send(sock, section("MEMORY", memory(0x80200000, 1, 0x77)))
            self.send(sock, section("VCPU", bytes(672)))
            for i, size in enumerate((280, 204, 24)):
                self.send(sock, section("DEVICE", bytes(24 + size), i))
            nsec = 1 + 2 * len(self.rounds) + self.disk_blocks + 1 + 1 + 1 + 3
            self.send(sock, section("END", struct.pack("<QQ", nsec, pages + 1)))
            self.phase = "confirmation"
            stype, _, payload = read_section(sock)
            self.got.append(stype)
            if stype != SEC["RUNNING"]:
                self.outcome = "refused"
                return {"ok": False, "code": cstr_text(payload[:16]),
                        "error": cstr_text(payload[16:])}
            self.send(sock, section("DONE", ticks(3000)))
            self.outcome = "done"
            return {"ok": True, "vm": "alpha", "rounds": len(self.rounds), "pages": pages + 1,
                    "bytes": len(self.sent), "total_us": 5000, "downtime_us": 300,
                    "dest_downtime_us": 200, **self.reply_extra}
        except (Closed, OSError) as e:
            self.outcome = f"broken at {self.phase}"
            return {"ok": False, "code": "stream",
                    "error": f"the stream broke ({self.phase}: {e}); vm alpha resumed"}


class DestScript:
    """What a destination hypervisor does for one incoming migration."""

    def __init__(self, refuse_at=None):
        self.refuse_at = refuse_at     # None, "caps" or "config"
        self.received = bytearray()
        self.sections = []             # (type, instance) from S
        self.outcome = None            # "done", "refused", "broken at PHASE"
        self.phase = None
        self.sock = None

    def __call__(self, sock):
        self.sock = sock
        keep = self.received
        try:
            self.phase = "negotiation"
            recv_exact(sock, 32, keep)
            if self.refuse_at == "caps":
                sock.sendall(header() + section("ABORT", abort("no-cfi", "no Zicfiss here")))
                self.outcome = "refused"
                return {"ok": False, "code": "refused", "error": "refused"}
            sock.sendall(header() + section("CAPS", caps()))
            stype, inst, _ = read_section(sock, keep)
            self.sections.append((stype, inst))
            if self.refuse_at == "config":
                sock.sendall(section("ABORT", abort("no-memory", "64M needed, 8M free")))
                self.outcome = "refused"
                return {"ok": False, "code": "no-memory", "error": "64M needed, 8M free"}
            sock.sendall(section("ACCEPT", struct.pack("<II", 3, 0)))
            self.phase = "pre-copy"
            while True:
                stype, inst, _ = read_section(sock, keep)
                self.sections.append((stype, inst))
                if stype == SEC["SWITCHOVER"]:
                    self.phase = "stop-and-copy"
                if stype == SEC["END"]:
                    break
            self.phase = "confirmation"
            sock.sendall(section("RUNNING", ticks(2000)))
            stype, inst, _ = read_section(sock, keep)
            self.sections.append((stype, inst))
            assert stype == SEC["DONE"]
            self.outcome = "done"
            return {"ok": True, "vm": "alpha", "pages": 6, "bytes": len(keep),
                    "downtime_us": 200}
        except (Closed, OSError) as e:
            self.outcome = f"broken at {self.phase}"
            return {"ok": False, "code": "stream", "error": f"stream broke: {e}"}


# --- fake hosts -------------------------------------------------------------------------


def listen_unix(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.listen(4)
    return s


def FakeHost(tmp_path, command, script):
    """The harness's fake hypervisor: "hello" is answered at once; @command
    ("migrate" or "incoming") runs @script on the stream connection, then
    answers with the script's reply fields."""
    def handler(req, hyp):
        if req["cmd"] == "hello":
            reply = {"ok": True, "protocol": 1}
        elif req["cmd"] == command:
            stream = hyp.wait_stream(5)
            reply = script(stream)
            stream.close()
        else:
            reply = {"ok": False, "code": "unknown-command", "error": "?"}
        return {"v": 1, "id": req.get("id"), **reply}
    return FakeHypervisor(tmp_path / "ctl.sock", tmp_path / "stream.sock", handler)


def tls_context(creds_dir, role, ca_dir=None):
    """An SSLContext of Python's own ssl for a fake peer: the certificate of
    @role from @creds_dir, trusting the CA of @ca_dir (default: the same)."""
    ca = (ca_dir or creds_dir) / "ca-cert.pem"
    cert, key = ROLE_FILES[role]
    server = role == "server"
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server else ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_verify_locations(str(ca))
    ctx.load_cert_chain(str(creds_dir / cert), str(creds_dir / key))
    return ctx


class FakeDestination:
    """carapace-run --incoming seen from outside: a relay that authenticates
    the source (TLS with @ctx; None: plain TCP), says it is ready, then runs
    @script on one connection."""

    def __init__(self, script, ctx=None):
        self.script, self.ctx = script, ctx
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()
        self.reply = None
        self.handshake_error = None

    def serve(self):
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        if self.ctx is not None:
            conn.settimeout(10)
            try:
                conn = self.ctx.wrap_socket(conn, server_side=True)
            except (ssl.SSLError, OSError) as e:
                self.handshake_error = e
                conn.close()
                return
            conn.settimeout(None)
        with conn:
            conn.sendall(READY)
            self.reply = self.script(conn)

    def kill(self):
        """As if its QEMU died: the connection resets."""
        sock = self.script.sock
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()

    def close(self):
        self.listener.close()
        self.thread.join(5)


TLS_MAIN = []          # the main credentials directory, once the fixture made it


@pytest.fixture(autouse=True)
def main_credentials(tls_creds, monkeypatch):
    TLS_MAIN[:] = [tls_creds.main]
    monkeypatch.delenv("CARAPACE_TLS_DIR", raising=False)


@pytest.fixture
def fakes(tmp_path, tls_creds):
    """make(src, dst, ctx): a fake source host and a fake destination (TLS
    with the main credentials unless @ctx says otherwise; "plain": plain)."""
    made = []

    def make(src=None, dst=None, ctx="tls"):
        src = src or SourceScript()
        dst = dst or DestScript()
        host = FakeHost(tmp_path, "migrate", src)
        if ctx == "tls":
            ctx = tls_context(tls_creds.main, "server")
        dest = FakeDestination(dst, None if ctx == "plain" else ctx)
        made.extend([host, dest])
        return host, dest, src, dst
    make.creds = tls_creds
    yield make
    for m in made:
        m.close()


def migrate(host, dest, *extra, json_out=False, creds=None):
    """carapace-ctl migrate alpha to @dest, with the TLS credentials @creds
    (default the fixture's main set) unless @extra asks for --plain or others."""
    if not any(a == "--plain" or a.startswith("--tls-") for a in extra):
        extra = ("--tls-dir", str(creds or TLS_MAIN[0]), *extra)
    argv = ["--socket", str(host.ctl_path), "--stream-socket", str(host.stream_path),
            "--timeout", "10", "migrate", "alpha", f"127.0.0.1:{dest.port}", *extra]
    if json_out:
        argv.append("--json")
    rc = main(argv)
    dest.thread.join(5)            # the destination's script has seen the end
    return rc


# --- the framing parser -------------------------------------------------------------------


def whole_stream():
    return (header() + section("CONFIG", config()) + section("MEMORY", memory(0x80000000, 3))
            + section("ROUND", round_(1, 3, 2, 999)) + section("ZERO", struct.pack("<QQ",
                                                                                 0x80001000, 2))
            + section("ROUND", round_(2, 2, 0, 1999))
            + section("SWITCHOVER", struct.pack("<QII", 42, 2, 0)) + section("VCPU", bytes(672))
            + section("END", struct.pack("<QQ", 7, 5)) + section("DONE", ticks(10)))


def events_of(chunks):
    framer = MigFramer()
    events = []
    for chunk in chunks:
        events += framer.feed(chunk)
    return framer, events



def test_relay_speaks_the_hypervisors_protocol_version():
    """The relay frames the stream it forwards by the protocol's header: a
    version other than the hypervisor's (include/abi/migration_format.h) makes
    it drop every migration (format 3 bumped the protocol to 4)."""
    text = (ROOT / paths.ABI_INCLUDE / "migration_format.h").read_text()
    version = int(re.search(r"#define MIG_VERSION\s+(\d+)", text).group(1))
    magic = re.search(r'#define MIG_MAGIC\s+"(\w+)"', text).group(1).encode()
    assert (relay.MIG_VERSION, relay.MIG_MAGIC) == (version, magic)


def test_framer_one_chunk_and_byte_by_byte_agree():
    data = whole_stream()
    f1, e1 = events_of([data])
    f2, e2 = events_of([data[i:i + 1] for i in range(len(data))])
    assert e1 == e2
    assert f1.error is None and f1.offset == len(data) and f1.safe == len(data)
    kinds = [(e.kind, e.name) for e in e1 if e.kind == "section"]
    assert [n for _, n in kinds] == ["CONFIG", "MEMORY", "ROUND", "ZERO", "ROUND",
                                     "SWITCHOVER", "VCPU", "END", "DONE"]
    assert f1.sections == 9 and f1.memory_pages == 5


def test_framer_offsets_and_fields():
    data = whole_stream()
    _, events = events_of([data])
    assert events[0].kind == "header" and events[0].end == 32
    config_start = events[1]
    assert (config_start.kind, config_start.start, config_start.end,
            config_start.length) == ("section-start", 32, 56, 648)
    config_done = events[2]
    assert config_done.end == 56 + 648 and config_done.fields["name"] == "alpha"
    assert config_done.fields["ram_size"] == 64 * MiB
    rounds = [e for e in events if e.kind == "section" and e.name == "ROUND"]
    assert rounds[0].fields == {"round": 1, "pages": 3, "dirty": 2, "bytes": 999, "disk_blocks": 0,
                                "disk_dirty": 0, "expected_downtime_us": 2500,
                                "dirty_limit": 0}
    end = [e for e in events if e.name == "DONE" and e.kind == "section"][0]
    assert end.end == len(data)
    memory_section = [e for e in events if e.name == "MEMORY" and e.kind == "section"][0]
    assert memory_section.fields is None       # counted, not kept


def test_framer_holds_back_an_incomplete_section_header():
    framer = MigFramer()
    data = header() + section("RUNNING", ticks(5))
    framer.feed(data[:20])
    assert framer.safe == 0                    # the header is not complete
    framer.feed(data[20:40])
    assert framer.offset == 40 and framer.safe == 32
    events = framer.feed(data[40:])
    assert framer.safe == len(data)
    assert [e.kind for e in events] == ["section-start", "section"]
    assert events[1].fields == {"downtime_ticks": 5, "timebase_hz": 10_000_000}


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5, 6, 7, 8, 10])
def test_framer_follows_protocol_9_only(version):
    """A header of another protocol version (1: before snapshot format 2's VCPU
    records; 2: before a move was kept once the VM ran on the destination; 3:
    before the VCPU sections were records; 4: before the VIRTIO sections; 5:
    before the disks' two modes; 7: before AIA VMs; 8: before FWFT
    misaligned_emulate) is not followed: its
    bytes are only counted."""
    framer = MigFramer()
    framer.feed(header(version) + section("ACCEPT", struct.pack("<II", 1, 0)))
    assert framer.error == (f"migration stream version {version}, header size 32 "
                            "(not 9, 32)")
    assert framer.sections == 0


def test_framer_abort_fields():
    _, events = events_of([header() + section("ABORT", abort("no-cfi", "no Zicfiss here"))])
    assert events[-1].fields == {"code": "no-cfi", "message": "no Zicfiss here"}


def test_framer_big_memory_is_not_buffered():
    framer = MigFramer()
    framer.feed(header())
    run = section("MEMORY", memory(0x80000000, 512))
    for i in range(0, len(run), 65536):
        framer.feed(run[i:i + 65536])
        assert len(framer.buf) <= 24
    assert framer.memory_pages == 512


def test_framer_wrong_magic_sets_error_and_counts_on():
    framer = MigFramer()
    framer.feed(b"CARASNAP" + bytes(24))
    assert "not a migration stream" in framer.error
    assert framer.feed(b"x" * 100) == []
    assert framer.offset == 132 and framer.safe == 132


def test_framer_wrong_payload_size_gives_no_fields():
    _, events = events_of([header() + section("ROUND", bytes(8))])
    assert events[-1].name == "ROUND" and events[-1].fields is None


# --- progress lines ---------------------------------------------------------------------------


def report(events, as_json=False):
    out = io.StringIO()
    rep = MigReporter(out, as_json)
    for direction, ev, relayed in events:
        rep.stream_event(direction, ev, relayed)
    return out.getvalue()


def test_progress_lines():
    _, evs = events_of([whole_stream()])
    _, ds = events_of([header() + section("CAPS", caps()) + section("ACCEPT",
                                                                   struct.pack("<II", 2, 0))
                       + section("RUNNING", ticks(20000))
                       + section("ABORT", abort("bad-stream", "CRC mismatch"))])
    text = report([("ds", e, 0) for e in ds[:5]] + [("sd", e, e.end) for e in evs]
                  + [("ds", e, 0) for e in ds[5:]])
    lines = text.splitlines()
    assert lines[0].startswith("destination offers: Zicfilp Zicfiss Sstc Svpbmt Svadu; "
                               "policies trap delegate strict off; SBI 2.0; FWFT landing-pad "
                               "shadow-stack; 8 vCPUs; 1G free; timebase 10000000 Hz")
    assert "destination accepted (its slot 2), disks shared: pre-copy" in lines
    rounds = [line for line in lines if line.startswith("round ")]
    assert len(rounds) == 2
    assert rounds[0].startswith("round 1: 3 pages sent, 2 dirty left, ")
    assert rounds[0].endswith(" MB/s; downtime expected 2.5 ms")
    assert rounds[1].startswith("round 2: 2 pages sent, 0 dirty left, ")
    assert "stop-and-copy: the vm is paused on the source after 2 round(s)" in lines
    assert "the guest runs on the destination (its downtime 2.000 ms)" in lines
    assert "destination aborts: bad-stream: CRC mismatch" in lines
    assert any(line.startswith("vm alpha: 64M RAM, 1 vCPU(s), policy trap") for line in lines)


def test_progress_says_the_expected_downtime_and_the_pace():
    """A ROUND's estimate and auto-converge's pace, in words and in JSON; an
    estimate the source could not make yet (all ones) is "?" and null."""
    rounds = [section("ROUND", round_(1, 3, 2, 999, expected_us=137998, dirty_limit=2000)),
              section("ROUND", round_(2, 2, 0, 1999, expected_us=(1 << 64) - 1))]
    _, evs = events_of([header() + section("CONFIG", config()) + section("ACCEPT",
                        struct.pack("<II", 1, 0)) + b"".join(rounds)])
    lines = [line for line in report([("sd", e, e.end) for e in evs]).splitlines()
             if line.startswith("round ")]
    assert lines[0].endswith("; downtime expected 138.0 ms, its page writes held to "
                             "2000/s (auto-converge)")
    assert lines[1].endswith("; downtime expected ?")
    objs = [json.loads(line) for line in report([("sd", e, e.end) for e in evs],
                                                as_json=True).splitlines()]
    objs = [o for o in objs if o.get("event") == "round"]
    assert [(o["expected_downtime_us"], o["dirty_limit"]) for o in objs] == \
        [(137998, 2000), (None, 0)]


def test_progress_round_bytes_and_rate_json():
    _, evs = events_of([whole_stream()])
    text = report([("sd", e, e.end) for e in evs], as_json=True)
    objs = [json.loads(line) for line in text.splitlines()]
    rounds = [o for o in objs if o["event"] == "round"]
    assert [r["round"] for r in rounds] == [1, 2]
    round_ends = [e.end for e in evs if e.kind == "section" and e.name == "ROUND"]
    assert rounds[0]["bytes"] == round_ends[0]
    assert rounds[1]["bytes"] == round_ends[1] - round_ends[0]
    assert rounds[0]["total_bytes"] == 999 and rounds[0]["dirty"] == 2
    assert all(r["rate_mb_s"] >= 0 and r["seconds"] >= 0 for r in rounds)
    assert [o["event"] for o in objs].count("stop-and-copy") == 1


# --- the relay: whole migrations ------------------------------------------------------------


def test_migrate_relays_every_byte_both_ways(fakes, capsys):
    host, dest, src, dst = fakes()
    assert migrate(host, dest) == 0
    dest.thread.join(5)
    assert src.outcome == "done" and dst.outcome == "done"
    assert bytes(dst.received) == bytes(src.sent)          # nothing lost, nothing added
    assert src.got == [SEC["CAPS"], SEC["ACCEPT"], SEC["RUNNING"]]
    out = capsys.readouterr().out
    assert f"migrate alpha: connected to 127.0.0.1:{dest.port}" in out
    assert "round 1: 3 pages sent, 2 dirty left" in out
    assert "round 2: 2 pages sent, 1 dirty left" in out
    assert "stop-and-copy" in out
    last = out.strip().splitlines()[-1]
    assert last.startswith(f"vm alpha: migrated to 127.0.0.1:{dest.port} in ")
    assert "2 round(s), 6 pages" in last
    assert "downtime 0.500 ms of virtual time (0.300 ms on the source + 0.200 ms on the " \
           "destination)" in last
    req = [r for r in host.requests if r["cmd"] == "migrate"][0]
    assert req == {"v": 1, "id": req["id"], "cmd": "migrate", "vm": "alpha"}


def test_migrate_json_events_then_reply(fakes, capsys):
    host, dest, src, _ = fakes()
    assert migrate(host, dest, "--max-rounds", "7", json_out=True) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    objs = [json.loads(line) for line in lines]
    events = [o["event"] for o in objs[:-1]]
    assert events[:3] == ["transport", "ready", "connected"]
    assert objs[0]["mode"] == "tls" and objs[0]["subject"] == "localhost"
    assert objs[0]["version"] == "TLSv1.3" and objs[0]["peer"] == f"127.0.0.1:{dest.port}"
    assert events.count("round") == 2
    assert events.index("caps") < events.index("config") < events.index("accept") \
        < events.index("round") < events.index("stop-and-copy") < events.index("end") \
        < events.index("running") < events.index("done")
    reply = objs[-1]
    assert reply["ok"] is True and reply["rounds"] == 2 and reply["bytes"] == len(src.sent)
    assert reply["to"] == f"127.0.0.1:{dest.port}" and reply["wall_us"] > 0
    req = [r for r in host.requests if r["cmd"] == "migrate"][0]
    assert req["max_rounds"] == 7
    assert "downtime_limit_ms" not in req and "auto_converge" not in req


def test_migrate_passes_the_downtime_limit_and_no_auto_converge(fakes, capsys):
    host, dest, _, _ = fakes()
    assert migrate(host, dest, "--downtime-limit", "50", "--no-auto-converge") == 0
    req = [r for r in host.requests if r["cmd"] == "migrate"][0]
    assert (req["downtime_limit_ms"], req["auto_converge"]) == (50, False)


@pytest.mark.parametrize("where, code", [("caps", "refused"), ("config", "no-memory")])
def test_destination_refuses(fakes, capsys, where, code):
    host, dest, src, dst = fakes(dst=DestScript(refuse_at=where))
    assert migrate(host, dest) == 1
    err = capsys.readouterr()
    assert f"carapace-ctl: {code}: the destination refused" in err.err
    assert src.outcome == "refused" and dst.outcome == "refused"
    if where == "caps":
        assert "destination aborts: no-cfi: no Zicfiss here" in err.out
    else:
        assert "destination aborts: no-memory: 64M needed, 8M free" in err.out


def test_error_reply_with_json_prints_it(fakes, capsys):
    host, dest, _, _ = fakes(dst=DestScript(refuse_at="config"))
    assert migrate(host, dest, json_out=True) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert json.loads(out[-1])["code"] == "no-memory"
    assert any(json.loads(line).get("event") == "abort" for line in out[:-1])


def test_nothing_listens(tmp_path, capsys):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    rc = main(["--socket", str(tmp_path / "none.sock"), "migrate", "alpha",
                   f"127.0.0.1:{port}", "--tls-dir", str(TLS_MAIN[0])])
    assert rc == 2
    err = capsys.readouterr().err
    assert f"nothing listens at 127.0.0.1:{port} (connection refused)" in err
    assert "carapace-run --incoming PORT" in err


def test_destination_first_then_control_socket(tmp_path, capsys):
    dest = FakeDestination(DestScript(), tls_context(TLS_MAIN[0], "server"))
    try:
        rc = main(["--socket", str(tmp_path / "none.sock"), "migrate", "alpha",
                       f"127.0.0.1:{dest.port}", "--tls-dir", str(TLS_MAIN[0])])
    finally:
        dest.close()
    assert rc == 2
    out, err = capsys.readouterr()
    assert "the destination authenticated this host and is ready" in out
    assert "no control socket" in err


# --- the transport: who may take part ----------------------------------------------------------


def untouched(host):
    """The source hypervisor was asked nothing: no request, no stream connection."""
    time.sleep(0.1)
    return host.requests == [] and host.stream is None


def test_migrate_refuses_a_destination_whose_certificate_does_not_verify(fakes, capsys):
    """A destination with another CA's certificate (it would accept ours):
    the source refuses it in the handshake, before its hypervisor is asked
    anything; exit 2, and with --json an error event that says why."""
    host, dest, src, dst = fakes(ctx=tls_context(fakes.creds.other, "server",
                                                 ca_dir=fakes.creds.main))
    assert migrate(host, dest, json_out=True) == 2
    out, err = capsys.readouterr()
    assert "the destination's certificate does not verify" in err
    assert f"is {fakes.creds.main / 'ca-cert.pem'} the CA that signed" in err
    last = json.loads(out.strip().splitlines()[-1])
    assert last["event"] == "error" and last["reason"] == "certificate" \
        and last["stage"] == "tls", last
    assert untouched(host) and src.outcome is None and dst.outcome is None
    assert dest.handshake_error is not None           # our alert ended its handshake


def test_migrate_checks_the_destinations_name(fakes, capsys):
    host, dest, src, _ = fakes()
    assert migrate(host, dest, "--tls-dir", str(fakes.creds.main), "--tls-name",
                   "elsewhere.test") == 2
    err = capsys.readouterr().err
    assert "does not carry the expected name" in err and "elsewhere.test" in err
    assert "--tls-name" in err and untouched(host)


def test_migrate_to_a_destination_that_refuses_our_certificate(fakes, capsys):
    """The destination trusts another CA: it refuses us; we say so (exit 2)
    and the source hypervisor was asked nothing."""
    host, dest, src, _ = fakes(ctx=tls_context(fakes.creds.main, "server",
                                               ca_dir=fakes.creds.other))
    assert migrate(host, dest, json_out=True) == 2
    out, err = capsys.readouterr()
    assert "the destination refused this host's certificate" in err
    last = json.loads(out.strip().splitlines()[-1])
    assert (last["reason"], last["stage"]) == ("refused-by-peer", "ready"), last
    assert untouched(host)


def test_migrate_plain_to_a_tls_destination_is_refused(fakes, capsys):
    host, dest, _, _ = fakes()
    assert main(["--socket", str(host.ctl_path), "--stream-socket", str(host.stream_path),
                     "--timeout", "1", "migrate", "alpha", f"127.0.0.1:{dest.port}",
                     "--plain"]) == 2
    assert "did not say it is ready within 1 s (a TLS relay says nothing to a plain " \
        "client" in capsys.readouterr().err
    assert untouched(host)


def test_migrate_over_plain_tcp_on_the_loopback(fakes, capsys):
    host, dest, src, dst = fakes(ctx="plain")
    assert migrate(host, dest, "--plain") == 0
    dest.thread.join(5)
    assert src.outcome == "done" and bytes(dst.received) == bytes(src.sent)
    assert "plain TCP to 127.0.0.1" in capsys.readouterr().out


def test_migrate_without_credentials_says_how(tmp_path, capsys):
    rc = main(["--socket", str(tmp_path / "none.sock"), "migrate", "alpha",
                   "127.0.0.1:4444"])
    assert rc == 3
    err = capsys.readouterr().err
    assert "no TLS credentials for the source: give --tls-dir DIR" in err
    assert "client-cert.pem" in err and "on the loopback only, --plain" in err


@pytest.mark.parametrize("argv", [
    ["migrate", "alpha", "192.0.2.7:4444", "--plain"],
    ["migrate", "alpha", "[2001:db8::1]:4444", "--plain"],
    ["incoming", "4444", "--plain", "--listen", "0.0.0.0"],
    ["incoming", "4444", "--plain", "--listen", "::"],
])
def test_plain_refused_off_the_loopback(tmp_path, capsys, argv):
    """Plain TCP is for one machine: a non-loopback address is refused before
    anything listens or connects."""
    assert main(["--socket", str(tmp_path / "none.sock"), *argv]) == 3
    assert "plain TCP only on the loopback" in capsys.readouterr().err


def test_plain_and_certificates_do_not_mix(tmp_path, capsys):
    assert main(["--socket", str(tmp_path / "none.sock"), "migrate", "alpha",
                     "127.0.0.1:1", "--plain", "--tls-dir", str(TLS_MAIN[0])]) == 3
    assert "--plain and --tls-dir" in capsys.readouterr().err


def test_a_tampered_stream_breaks_the_migration(fakes, capsys):
    """A byte changed on the wire (D to S, in the destination's header and
    CAPS): the source's relay refuses the record, says so, and the source sees
    its stream break: nothing altered reaches its hypervisor."""
    host, dest, src, dst = fakes()
    proxy = socket.create_server(("127.0.0.1", 0))
    state = {"armed": False, "flipped": False}
    header_record = 5 + 32 + 1 + 16     # S's migration header in one TLS 1.3 record

    def forward_s_to_d(a, b):
        """Follow the source's TLS records; its header arms the flip."""
        buf = bytearray()
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                buf += data
                while len(buf) >= 5 and len(buf) >= 5 + int.from_bytes(buf[3:5], "big"):
                    n = 5 + int.from_bytes(buf[3:5], "big")
                    if buf[0] == 23 and n == header_record:
                        state["armed"] = True
                    del buf[:n]
                b.sendall(data)
        except OSError:
            pass

    def forward_d_to_s(b, a):
        try:
            while True:
                data = bytearray(b.recv(65536))
                if not data:
                    break
                if state["armed"] and not state["flipped"]:
                    data[-1] ^= 0x40                # in the tag of D's next record
                    state["flipped"] = True
                a.sendall(data)
        except OSError:
            pass

    real = dest.port

    def run():
        a, _ = proxy.accept()
        b = socket.create_connection(("127.0.0.1", real))
        threading.Thread(target=forward_s_to_d, args=(a, b), daemon=True).start()
        forward_d_to_s(b, a)
        for z in (a, b):
            z.close()
    threading.Thread(target=run, daemon=True).start()
    dest.port = proxy.getsockname()[1]
    try:
        assert migrate(host, dest) == 1
    finally:
        dest.port = real
        proxy.close()
    out, err = capsys.readouterr()
    assert state["flipped"]
    assert "warning: the connection with the destination: TLS: " in out, out
    assert "carapace-ctl: stream: " in err
    assert src.got == [] and src.outcome == "broken at negotiation"


# --- the testing hooks ------------------------------------------------------------------------


CUTS = {
    # phase: (where the source may be when it sees its stream break, what D got last)
    "negotiation": ({"negotiation"}, None),
    "round:1": ({"round:2", "stop-and-copy", "confirmation"}, (SEC["ROUND"], 0)),
    "round:2": ({"stop-and-copy", "confirmation"}, (SEC["ROUND"], 0)),
    "stop-and-copy": ({"stop-and-copy", "confirmation"}, (SEC["SWITCHOVER"], 0)),
    "confirmation": ({"confirmation"}, (SEC["END"], 0)),
}


@pytest.mark.parametrize("phase", list(CUTS))
def test_cut_at(fakes, capsys, phase):
    host, dest, src, dst = fakes()
    assert migrate(host, dest, "--cut-at", phase) == 1
    dest.thread.join(5)
    out, err = capsys.readouterr()
    assert f"hook: cut at {phase}: closing both connections" in out
    assert "carapace-ctl: stream: the stream broke" in err
    src_phases, last = CUTS[phase]
    assert src.outcome in {f"broken at {p}" for p in src_phases}
    assert dst.outcome.startswith("broken at")
    assert SEC["RUNNING"] not in src.got
    if last is None:
        assert dst.sections == [] and bytes(dst.received) == bytes(src.sent[:32])
    else:
        assert dst.sections[-1] == last
    if phase.startswith("round:"):
        n = int(phase[6:])
        rounds = [s for s in dst.sections if s[0] == SEC["ROUND"]]
        assert len(rounds) == n                  # nothing after round N's ROUND
        assert bytes(dst.received) == bytes(src.sent[:len(dst.received)])
    if phase == "stop-and-copy":
        # SWITCHOVER, then the next section's header and half its payload (no more)
        i = bytes(src.sent).index(section("SWITCHOVER", struct.pack("<QII", 123456, 2, 0)))
        switch_end = i + 24 + 16
        assert len(dst.received) == switch_end + 24 + (16 + PAGE) // 2
    if phase == "confirmation":
        assert bytes(dst.received) == bytes(src.sent)     # all of stop-and-copy went


def watcher(on_line):
    class Out(io.StringIO):
        def write(self, text):
            for line in text.splitlines():
                on_line(line)
            return super().write(text)
    return Out()


def run_migrate_vm(host, dest, hook, on_line=lambda line: None):
    out = watcher(on_line)
    reporter = MigReporter(out)
    with Client(host.ctl_path, 10) as client:
        try:
            return migrate_vm(client, host.stream_path, "alpha", "127.0.0.1", dest.port,
                                  reporter=reporter, hook=hook,
                                  transport=source_transport(TLS_MAIN[0])), out.getvalue()
        except RemoteError as e:
            return e, out.getvalue()


@pytest.mark.parametrize("phase", ["negotiation", "round:1", "round:2", "stop-and-copy"])
def test_hold_at_then_go_on(fakes, phase):
    host, dest, src, dst = fakes()
    hook = Hook("hold", parse_phase(phase, "--hold-at"), 0.3)
    t0 = time.monotonic()
    reply, out = run_migrate_vm(host, dest, hook)
    assert time.monotonic() - t0 >= 0.3
    dest.thread.join(5)
    assert isinstance(reply, dict) and reply["ok"] is True
    assert f"hook: hold at {phase}: relaying stops for 0.3 s" in out
    assert f"hook: hold at {phase} over: relaying again" in out
    assert src.outcome == "done" and bytes(dst.received) == bytes(src.sent)


@pytest.mark.parametrize("phase", ["negotiation", "round:1", "round:2", "stop-and-copy",
                                   "confirmation"])
def test_hold_at_and_kill_the_destination(fakes, phase):
    host, dest, src, dst = fakes()
    hook = Hook("hold", parse_phase(phase, "--hold-at"), 0.5)

    def on_line(line):
        if line.startswith(f"hook: hold at {phase}: relaying stops"):
            dest.kill()
    reply, out = run_migrate_vm(host, dest, hook, on_line)
    dest.thread.join(5)
    assert isinstance(reply, RemoteError) and reply.code == "stream"
    assert src.outcome.startswith("broken at") and SEC["RUNNING"] not in src.got
    assert dst.outcome != "done"


def test_hold_at_confirmation_never_forwards_running(fakes):
    host, dest, src, dst = fakes()
    hook = Hook("hold", ("confirmation", None), 0.2)
    reply, out = run_migrate_vm(host, dest, hook)
    dest.thread.join(5)
    assert isinstance(reply, RemoteError) and reply.code == "stream"
    assert "hook: hold at confirmation over: RUNNING is not forwarded, closing both " \
           "connections" in out
    assert src.outcome == "broken at confirmation" and SEC["RUNNING"] not in src.got
    assert dst.outcome == "broken at confirmation"        # it waited for DONE in vain


@pytest.mark.parametrize("action", ["cut", "hold"])
def test_hook_at_done_forwards_running_but_never_done(fakes, capsys, action):
    """done: the source gets RUNNING (and answers ok, its copy destroyed);
    its DONE never reaches the destination, which waits for it in vain: the
    window docs/migration.md says leaves the VM running, unconfirmed, there."""
    host, dest, src, dst = fakes()
    if action == "cut":
        assert migrate(host, dest, "--cut-at", "done") == 0
        out = capsys.readouterr().out
        assert "hook: cut at done: closing both connections" in out
    else:
        reply, out = run_migrate_vm(host, dest, Hook("hold", ("done", None), 0.2))
        assert isinstance(reply, dict) and reply["ok"] is True
        assert "hook: hold at done over: DONE is not forwarded, closing both connections" \
            in out
    dest.thread.join(5)
    assert SEC["RUNNING"] in src.got and src.outcome == "done"
    assert dst.outcome == "broken at confirmation"
    assert (SEC["DONE"], 0) not in dst.sections
    assert bytes(dst.received) == bytes(src.sent[:len(dst.received)])
    assert len(src.sent) - len(dst.received) == 24 + 16     # exactly DONE held back


def test_hook_for_a_round_that_never_comes(fakes, capsys):
    host, dest, src, _ = fakes()
    assert migrate(host, dest, "--cut-at", "round:9") == 0
    assert "hook:" not in capsys.readouterr().out
    assert src.outcome == "done"


# --- incoming ---------------------------------------------------------------------------------


def tls_source(port, creds_dir, ca_dir=None):
    """A source's relay seen from the destination: Python's own TLS client
    (the certificate of @creds_dir, trusting @ca_dir's CA), past the ready mark."""
    raw = socket.create_connection(("127.0.0.1", port), 10)
    s = tls_context(creds_dir, "client", ca_dir).wrap_socket(raw, server_hostname="localhost")
    assert recv_exact(s, len(READY)) == READY
    return s


def run_incoming(host, transport, reporter, sources, wait=10):
    """incoming_vm on @host, calling each of @sources(port) once it listens."""
    done = {}

    def on_listening(line):
        obj = json.loads(line)
        if obj["event"] == "listening":
            port = int(obj["listen"].rsplit(":", 1)[1])
            done["thread"] = threading.Thread(target=lambda: [f(port) for f in sources],
                                              daemon=True)
            done["thread"].start()
    reporter.out = watcher(on_listening)
    try:
        reply = incoming_vm(lambda: Client(host.ctl_path, 10), host.stream_path,
                                "127.0.0.1", 0, "beta", reporter, wait=wait,
                                transport=transport)
    finally:
        host.close()
    done["thread"].join(10)
    return reply


def test_incoming_relays_and_prints_the_result(tmp_path, capsys):
    dst = DestScript()
    host = FakeHost(tmp_path, "incoming", dst)
    src = SourceScript()
    result = {}

    def source(port):
        with tls_source(port, TLS_MAIN[0]) as s:
            result["reply"] = src(s)
    reporter = MigReporter(None, True, "destination")
    reply = run_incoming(host, destination_transport(TLS_MAIN[0]), reporter, [source])
    assert reply["ok"] is True and reply["vm"] == "alpha" and reply["downtime_us"] == 200
    assert reply["from"].startswith("127.0.0.1:")
    assert src.outcome == "done" and dst.outcome == "done"
    assert bytes(dst.received) == bytes(src.sent)
    req = [r for r in host.requests if r["cmd"] == "incoming"][0]
    assert req["name"] == "beta"
    assert show_incoming(reply).startswith(f"vm alpha: received from {reply['from']} and "
                                               "running: 6 pages, ")
    accepted = [e for e in reporter.events if e["event"] == "accepted"]
    assert len(accepted) == 1 and accepted[0]["subject"] == "localhost"
    assert accepted[0]["mode"] == "tls" and accepted[0]["version"] == "TLSv1.3"


def test_incoming_refuses_unauthenticated_peers_before_the_hypervisor(tmp_path, tls_creds):
    """Plain bytes (a whole migration stream), a TLS client without a
    certificate and one with another CA's come first: each is refused and
    reported, none reaches the hypervisor (its stream sees the authenticated
    source's bytes alone, and it is asked "incoming" once); the source that
    authenticates then moves its VM."""
    dst = DestScript()
    host = FakeHost(tmp_path, "incoming", dst)
    src = SourceScript()
    seen = {}

    def plain(port):
        with socket.create_connection(("127.0.0.1", port), 10) as s:
            s.sendall(header() + section("CONFIG", config()))
            seen["plain"] = s.recv(100)          # TLS's alert or nothing, never a header

    def no_certificate(port):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(str(tls_creds.main / "ca-cert.pem"))
        with ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), 10),
                             server_hostname="localhost") as s:
            with pytest.raises((ssl.SSLError, ConnectionResetError)):
                s.sendall(header())
                s.recv(8)

    def other_ca(port):
        with pytest.raises((ssl.SSLError, Closed, ConnectionResetError)):
            tls_source(port, tls_creds.other, tls_creds.main)

    def good(port):
        time.sleep(0.3)                        # after the refusals were reported
        with tls_source(port, tls_creds.second) as s:
            src(s)
    reporter = MigReporter(None, True, "destination")
    reply = run_incoming(host, destination_transport(tls_creds.main), reporter,
                         [plain, no_certificate, other_ca, good])
    refused = [(e["reason"]) for e in reporter.events if e["event"] == "refused"]
    assert refused == ["not-tls", "no-certificate", "certificate"], reporter.events
    assert not seen["plain"].startswith(b"CARAMIGR")
    assert reply["ok"] is True and src.outcome == "done" and dst.outcome == "done"
    assert bytes(dst.received) == bytes(src.sent)        # nothing of the others
    assert [r["cmd"] for r in host.requests] == ["hello", "incoming"]
    accepted = [e for e in reporter.events if e["event"] == "accepted"]
    assert [a["subject"] for a in accepted] == ["hostb.test"]


def test_incoming_plain_on_the_loopback(tmp_path):
    dst = DestScript()
    host = FakeHost(tmp_path, "incoming", dst)
    src = SourceScript()

    def source(port):
        with socket.create_connection(("127.0.0.1", port), 10) as s:
            assert recv_exact(s, 8) == READY
            src(s)
    reporter = MigReporter(None, True, "destination")
    reply = run_incoming(host, plain_transport("127.0.0.1", "test"), reporter, [source])
    assert reply["ok"] is True and bytes(dst.received) == bytes(src.sent)
    assert [e["mode"] for e in reporter.events if e["event"] == "accepted"] == ["plain"]


def test_incoming_wait_times_out(tmp_path, capsys):
    host = FakeHost(tmp_path, "incoming", DestScript())
    try:
        rc = main(["--socket", str(host.ctl_path), "--stream-socket",
                       str(host.stream_path), "incoming", "0", "--wait", "0.2"])
        assert rc == 3                       # port 0 is refused before anything
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        rc = main(["--socket", str(host.ctl_path), "--stream-socket",
                       str(host.stream_path), "incoming", str(port), "--wait", "0.2",
                       "--tls-dir", str(TLS_MAIN[0])])
    finally:
        host.close()
    assert rc == 2
    out, err = capsys.readouterr()
    assert f"waiting for a migration on 127.0.0.1:{port} (TLS)" in out
    assert f"no source authenticated at 127.0.0.1:{port} within 0.2 s" in err


def test_incoming_port_in_use(tmp_path, capsys):
    host = FakeHost(tmp_path, "incoming", DestScript())
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    try:
        rc = main(["--socket", str(host.ctl_path), "incoming",
                       str(busy.getsockname()[1]), "--tls-dir", str(TLS_MAIN[0])])
    finally:
        busy.close()
        host.close()
    assert rc == 2
    assert "cannot listen on 127.0.0.1:" in capsys.readouterr().err


# --- carapace-run --incoming: the relay of a host waiting for one VM ----------------------------


class ArmedHost:
    """A hypervisor started with /chosen carapace,incoming, seen from its
    sockets: the control socket answers hello; each connection to the stream
    socket is a migration attempt, run by the next of @scripts (DestScript)."""

    def __init__(self, tmp_path, scripts):
        self.ctl_path, self.stream_path = tmp_path / "ctl.sock", tmp_path / "stream.sock"
        self.scripts = list(scripts)
        self.attempts = 0
        self.ctl = listen_unix(self.ctl_path)
        self.stream = listen_unix(self.stream_path)
        threading.Thread(target=self.serve_ctl, daemon=True).start()
        self.streams = threading.Thread(target=self.serve_stream, daemon=True)
        self.streams.start()

    def serve_ctl(self):
        while True:
            try:
                conn, _ = self.ctl.accept()
            except OSError:
                return
            with conn:
                buf = b""
                while not buf.rstrip(b"\n").endswith(b"}"):
                    data = conn.recv(4096)
                    if not data:
                        break
                    buf += data
                for line in buf.split(b"\n"):
                    if line.strip():
                        req = json.loads(line)
                        conn.sendall(json.dumps({"v": 1, "id": req.get("id"), "ok": True,
                                                 "protocol": 1}).encode() + b"\n")

    def serve_stream(self):
        while self.scripts:
            try:
                conn, _ = self.stream.accept()
            except OSError:
                return
            self.attempts += 1
            with conn:
                self.scripts.pop(0)(conn)

    def close(self):
        for s in (self.ctl, self.stream):
            s.close()


def wait_for_event(events, kind, timeout=10):
    """Until the events file (one JSON object a line) holds an event @kind."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if events.exists() and f'"event":"{kind}"' in events.read_text():
            return
        time.sleep(0.02)
    raise AssertionError(f"no {kind!r} event in {events} after {timeout} s")


class Running:
    """What IncomingRelay needs of QEMU's process: that it runs."""

    def poll(self):
        return None


def test_incoming_host_relay_refuses_retries_and_stops_once_arrived(tmp_path, tls_creds):
    """carapace-run --incoming's relay (IncomingRelay) with a fake armed
    hypervisor: a plain peer is refused and never reaches the stream socket; an
    authenticated source that gives up is relayed, and the relay waits for the
    next one (as the hypervisor does); the next moves its VM, byte for byte,
    and the relay stops listening. Every step is an event in the events file."""
    first, second = DestScript(), DestScript()
    host = ArmedHost(tmp_path, [first, second])
    events = tmp_path / "events.jsonl"
    spec = IncomingSpec("127.0.0.1", 0, destination_transport(tls_creds.main), events)
    sock = bind_incoming(spec)
    port = spec.port = sock.getsockname()[1]
    out = io.StringIO()
    relay = IncomingRelay(spec, sock, host.ctl_path, host.stream_path, 10, out=out)
    relay.start(Running())
    try:
        with socket.create_connection(("127.0.0.1", port), 10) as s:
            s.sendall(header() + section("CONFIG", config()))
            s.recv(100)
        with tls_source(port, tls_creds.second) as s:       # authenticated, then gives up
            s.sendall(header())
        # until the relay has seen that attempt end, a next source is refused "busy"
        wait_for_event(events, "ended")
        src = SourceScript()
        with tls_source(port, tls_creds.main) as s:
            assert src(s)["ok"] is True
        relay.thread.join(10)
        assert not relay.thread.is_alive()
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), 2)
        host.streams.join(10)                    # the second attempt's script is over
    finally:
        relay.stop()
        host.close()
    assert host.attempts == 2                                 # the plain peer: never
    assert first.outcome == "broken at negotiation" and second.outcome == "done"
    assert bytes(second.received) == bytes(src.sent)
    kinds = [json.loads(line)["event"] for line in events.read_text().splitlines()]
    ended = kinds.index("ended")
    assert kinds[:4] == ["listening", "refused", "accepted", "relaying"], kinds
    assert kinds[ended + 1:ended + 3] == ["accepted", "relaying"], kinds
    assert kinds[-1] == "arrived" and kinds.count("ended") == 1, kinds
    for word in ("caps", "accept", "round", "stop-and-copy", "end", "running", "done"):
        assert word in kinds[ended + 3:-1], (word, kinds)
    text = out.getvalue()
    assert f"carapace-run: incoming: listening on 127.0.0.1:{port} (TLS)" in text
    assert "carapace-run: incoming: refused 127.0.0.1:" in text and ": not-tls: " in text
    assert "waiting for another" in text
    assert f"arrived; no longer listening on 127.0.0.1:{port}" in text


# --- arguments ----------------------------------------------------------------------------------


@pytest.mark.parametrize("argv, message", [
    (["migrate", "alpha"], "the following arguments are required: HOST:PORT"),
    (["migrate", "Alpha", "h:1"], "bad VM name 'Alpha'"),
    (["migrate", "alpha", "4444"], "give the destination as HOST:PORT"),
    (["migrate", "alpha", ":4444"], "give the destination as HOST:PORT"),
    (["migrate", "alpha", "h:0"], "h:0: port must be 1..65535"),
    (["migrate", "alpha", "h:65536"], "port must be 1..65535"),
    (["migrate", "alpha", "h:x"], "port must be 1..65535"),
    (["migrate", "alpha", "h:1", "--max-rounds", "0"], "--max-rounds 0: must be 1..100"),
    (["migrate", "alpha", "h:1", "--max-rounds", "101"], "--max-rounds 101: must be 1..100"),
    (["migrate", "alpha", "h:1", "--max-rounds", "-1"], "--max-rounds -1: must be 1..100"),
    (["migrate", "alpha", "h:1", "--downtime-limit", "0"],
     "--downtime-limit 0: must be 1..60000 (ms)"),
    (["migrate", "alpha", "h:1", "--downtime-limit", "60001"],
     "--downtime-limit 60001: must be 1..60000 (ms)"),
    (["migrate", "alpha", "h:1", "--downtime-limit", "2.5"],
     "--downtime-limit 2.5: must be 1..60000 (ms)"),
    (["migrate", "alpha", "h:1", "--cut-at", "round:0"], "--cut-at round:0: PHASE must be"),
    (["migrate", "alpha", "h:1", "--cut-at", "rounds"], "PHASE must be one of negotiation"),
    (["migrate", "alpha", "h:1", "--hold-at", "negotiation"], "--hold-at needs --hold-seconds"),
    (["migrate", "alpha", "h:1", "--hold-seconds", "1"], "--hold-seconds needs --hold-at"),
    (["migrate", "alpha", "h:1", "--hold-at", "confirmation", "--hold-seconds", "-1"],
     "--hold-seconds -1: must be"),
    (["migrate", "alpha", "h:1", "--cut-at", "negotiation", "--hold-at", "round:1",
      "--hold-seconds", "1"], "give --cut-at or --hold-at, not both"),
    (["incoming"], "the following arguments are required: PORT"),
    (["incoming", "70000"], "incoming 70000: port must be 1..65535"),
    (["incoming", "4444", "--name", "Bad!"], "bad VM name 'Bad!'"),
    (["incoming", "4444", "--wait", "0"], "--wait 0: must be more than 0"),
])
def test_usage_errors_exit_3_before_connecting(tmp_path, capsys, argv, message):
    rc = main(["--socket", str(tmp_path / "none.sock"), *argv])
    assert rc == 3
    assert message in capsys.readouterr().err


def test_ipv6_target_and_phases():
    assert parse_target("[::1]:4444") == ("::1", 4444)
    assert parse_target("example.org:1") == ("example.org", 1)
    assert parse_phase("round:12", "--cut-at") == ("round", 12)
    assert parse_phase("stop-and-copy", "--cut-at") == ("stop-and-copy", None)


def test_new_error_codes_known():
    for code in ("refused", "bad-stream", "aborted", "no-stream", "busy", "bad-state", "no-cfi",
                 "no-feature", "no-memory", "exists", "stream"):
        assert code in ERROR_CODES
    assert "migrate" in COMMANDS and "incoming" in COMMANDS


def test_help_lists_migration(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "migrate VM HOST:PORT [--max-rounds N] [--downtime-limit MS] [--no-auto-converge]" \
        in out
    assert "--cut-at PHASE" in out and "--hold-at PHASE --hold-seconds S" in out


def test_migrate_as_a_program(fakes):
    host, dest, src, _ = fakes()
    proc = subprocess.run([sys.executable, str(CTL), "--socket", str(host.ctl_path),
                           "--stream-socket", str(host.stream_path), "migrate", "alpha",
                           f"127.0.0.1:{dest.port}", "--json", "--tls-dir", str(TLS_MAIN[0])],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1])["ok"] is True
    assert src.outcome == "done"


def test_stream_socket_is_never_tcp(capsys):
    """The stream port is a UNIX socket on every host (an --incoming host's too):
    the tcp:HOST:PORT form that reached a plain TCP stream port is refused."""
    with pytest.raises(UsageError, match="a stream port is a UNIX socket, never TCP"):
        connect_stream("tcp:127.0.0.1:4444", 5)
    assert main(["--stream-socket", "tcp:127.0.0.1:4444", "restore", "/dev/null",
                     "--no-verify"]) != 0


# --- the disks' two modes (issue 25): the destination chooses -----------------------------------


COPY_FIGURES = {"disk_mode": "copy", "disk_blocks": 12, "disk_bytes": 12 * 65536}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def plain_source_later(port, src):
    """A source that connects (plain TCP) once something listens on @port,
    then runs @src; the thread it runs in."""
    def run():
        deadline = time.monotonic() + 10
        while True:
            try:
                s = socket.create_connection(("127.0.0.1", port), 10)
                break
            except ConnectionRefusedError:
                if time.monotonic() > deadline:
                    return
                time.sleep(0.02)
        with s:
            assert recv_exact(s, len(READY)) == READY
            src(s)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def ctl_incoming(tmp_path, reply_extra, *extra, json_out=False):
    """carapace-ctl incoming PORT --plain @extra on a fake host whose reply
    gains @reply_extra, with one source; (exit status, the host's requests)."""
    dst = DestScript()
    host = FakeHost(tmp_path, "incoming", lambda sock: {**dst(sock), **reply_extra})
    port = free_port()
    source = plain_source_later(port, SourceScript())
    try:
        rc = main(["--socket", str(host.ctl_path), "--stream-socket", str(host.stream_path),
                   "--timeout", "10", *(["--json"] if json_out else []), "incoming", str(port),
                   "--plain", "--wait", "10", *extra])
    finally:
        host.close()
    source.join(10)
    return rc, host.requests


def test_incoming_copy_disks_asks_for_copy_and_prints_the_disk_figures(tmp_path, capsys):
    rc, requests = ctl_incoming(tmp_path, COPY_FIGURES, "--copy-disks", "--disk", "3",
                                "--disk", "4")
    assert rc == 0
    (req,) = [r for r in requests if r["cmd"] == "incoming"]
    assert (req["disks"], req["disk0"], req["disk1"]) == ("copy", 3, 4)
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("vm alpha: received from 127.0.0.1:")
    assert last.endswith("downtime 0.200 ms on this host; disks copied: 12 blocks received, "
                         "786432 bytes (768K)"), last


def test_incoming_shared_is_the_default_and_sends_no_disks_field(tmp_path, capsys):
    rc, requests = ctl_incoming(tmp_path, {"disk_mode": "shared", "disk_blocks": 0,
                                           "disk_bytes": 0}, "--disk", "5")
    assert rc == 0
    (req,) = [r for r in requests if r["cmd"] == "incoming"]
    assert "disks" not in req and req["disk0"] == 5
    assert "; disks shared (the same images on both hosts)" in capsys.readouterr().out


def test_incoming_json_passes_the_disk_figures_through(tmp_path, capsys):
    rc, _ = ctl_incoming(tmp_path, COPY_FIGURES, "--copy-disks", "--disk", "3", json_out=True)
    assert rc == 0
    reply = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert {k: reply[k] for k in COPY_FIGURES} == COPY_FIGURES


def test_copy_disks_without_a_disk_is_the_hypervisors_to_refuse(tmp_path, capsys):
    """--copy-disks without --disk still asks for copy mode: only the
    hypervisor knows the VM's disks (a VM may have none), and refuses a disk
    without a host disk (no-device); carapace-ctl says so, exit 1."""
    why = ("section 24 0 at offset 760: copy mode, but no host disk was given for this disk "
           "(incoming disk0/disk1)")
    rc, requests = ctl_incoming(tmp_path, {"ok": False, "code": "no-device", "error": why},
                                "--copy-disks")
    assert rc == 1
    (req,) = [r for r in requests if r["cmd"] == "incoming"]
    assert req["disks"] == "copy" and "disk0" not in req and "disk1" not in req
    assert f"carapace-ctl: no-device: {why}" in capsys.readouterr().err
    assert incoming_args("beta", [3], copy_disks=True) == {"name": "beta", "disk0": 3,
                                                           "disks": "copy"}
    assert incoming_args(None, [3, 4]) == {"name": None, "disk0": 3, "disk1": 4,
                                           "disks": None}
    with pytest.raises(UsageError, match="at most two host PCI device numbers 1..31"):
        Host(tmp_path / "none.sock").incoming(4444, plain=True, disks=[3, 40],
                                              copy_disks=True)


def test_host_incoming_sends_copy(tmp_path):
    """The Python API: Host.incoming(copy_disks=True) asks for copy mode."""
    dst = DestScript()
    host = FakeHost(tmp_path, "incoming", lambda sock: {**dst(sock), **COPY_FIGURES})
    port = free_port()
    source = plain_source_later(port, SourceScript())
    try:
        reply = Host(host.ctl_path, host.stream_path, timeout=10).incoming(
            port, plain=True, wait=10, disks=[7], copy_disks=True)
    finally:
        host.close()
    source.join(10)
    assert reply["disk_mode"] == "copy" and reply["disk_blocks"] == 12
    (req,) = [r for r in host.requests if r["cmd"] == "incoming"]
    assert (req["disks"], req["disk0"]) == ("copy", 7)


@pytest.mark.parametrize("figures, words", [
    (COPY_FIGURES, "; disks copied: 12 blocks sent, 786432 bytes (768K); downtime"),
    ({"disk_mode": "shared", "disk_blocks": 0, "disk_bytes": 0},
     "; disks shared (the same images on both hosts); downtime"),
    ({"disk_mode": "none", "disk_blocks": 0, "disk_bytes": 0}, " pages; downtime"),
])
def test_migrate_prints_the_disk_figures(fakes, capsys, figures, words):
    host, dest, src, _ = fakes(src=SourceScript(reply_extra=figures))
    assert migrate(host, dest) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("vm alpha: migrated to") and words in last, last
    if figures["disk_mode"] == "none":
        assert "disks" not in last


def test_migrate_json_passes_the_disk_figures_through(fakes, capsys):
    host, dest, _, _ = fakes(src=SourceScript(reply_extra=COPY_FIGURES))
    assert migrate(host, dest, json_out=True) == 0
    reply = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert {k: reply[k] for k in COPY_FIGURES} == COPY_FIGURES


def test_reporter_counts_the_disk_blocks_the_source_sent():
    reporter = MigReporter(None, True, "destination")
    data = (header() + section("CONFIG", config()) + section("DISK", disk_block(0))
            + section("DISK", disk_block(1)) + section("ROUND", round_(1, 0, 0, 99)))
    framer = MigFramer()
    for ev in framer.feed(data):
        reporter.stream_event("sd", ev, ev.end)
    for ev in MigFramer().feed(header() + section("DISK", disk_block(2))):
        reporter.stream_event("ds", ev, 0)           # never from D: not counted
    assert reporter.disk_blocks == 2


@pytest.mark.parametrize("mode", ["copy", "shared", None])
def test_incoming_host_relay_marks_the_arrival_and_says_the_disk_mode(tmp_path, tls_creds,
                                                                       mode):
    """carapace-run --incoming's relay sets spec.arrived once the VM runs here
    (the launcher keeps the --incoming-disk copy images then) and says how
    the disks came: copy, with the DISK blocks it carried; shared; nothing
    without --incoming-disk."""
    dst = DestScript()
    host = ArmedHost(tmp_path, [dst])
    events = tmp_path / "events.jsonl"
    disks = IncomingDisks(mode, []) if mode else None
    spec = IncomingSpec("127.0.0.1", 0, plain_transport("127.0.0.1", "test"), events, disks)
    sock = bind_incoming(spec)
    port = spec.port = sock.getsockname()[1]
    out = io.StringIO()
    relay = IncomingRelay(spec, sock, host.ctl_path, host.stream_path, 10, out=out)
    relay.start(Running())
    try:
        assert not spec.arrived
        src = SourceScript(disk_blocks=3)
        plain_source_later(port, src).join(10)
        relay.thread.join(10)
    finally:
        relay.stop()
        host.close()
    assert src.outcome == "done" and spec.arrived
    arrived = [json.loads(line) for line in events.read_text().splitlines()
               if json.loads(line)["event"] == "arrived"]
    assert len(arrived) == 1
    text = out.getvalue()
    if mode == "copy":
        assert (arrived[0]["disk_mode"], arrived[0]["disk_blocks"]) == ("copy", 3)
        assert "arrived (its disks copied: 3 blocks received); no longer listening" in text
    elif mode == "shared":
        assert arrived[0]["disk_mode"] == "shared" and "disk_blocks" not in arrived[0]
        assert "arrived (its disks shared: the source's images); no longer" in text
    else:
        assert "disk_mode" not in arrived[0] and "disks" not in text


def test_a_failed_attempt_is_no_arrival(tmp_path):
    """An attempt that ends before the VM runs leaves spec.arrived false."""
    host = ArmedHost(tmp_path, [DestScript(), DestScript()])
    spec = IncomingSpec("127.0.0.1", 0, plain_transport("127.0.0.1", "test"),
                        tmp_path / "events.jsonl", IncomingDisks("copy", []))
    sock = bind_incoming(spec)
    port = spec.port = sock.getsockname()[1]
    relay = IncomingRelay(spec, sock, host.ctl_path, host.stream_path, 10, out=io.StringIO())
    relay.start(Running())
    try:
        with socket.create_connection(("127.0.0.1", port), 10) as s:
            assert recv_exact(s, len(READY)) == READY
            s.sendall(header())                   # then gives up
        wait_for_event(spec.events, "ended")
    finally:
        relay.stop()
        host.close()
    assert not spec.arrived
