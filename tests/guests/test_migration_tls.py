# SPDX-License-Identifier: MIT
"""Who may take part in a live migration (issue 22: "migration streams are
neither authenticated nor encrypted, and --incoming listens on a TCP port any
local user can reach"), with real Carapace hosts: docs/migration.md,
"Transport"; docs/security.md, "A migration peer is untrusted".

- a destination started with `carapace-run --incoming PORT` (credentials from
  $CARAPACE_TLS_DIR) is attacked by peers that do not authenticate: a
  crafted migration stream over plain TCP, a TLS client without a
  certificate, one whose certificate another CA signed. Each is refused and
  reported by the relay, and its hypervisor sees none of it: no failed
  incoming migration, its own VM runs on, its memory is what it was, and the
  source that then authenticates moves its VM with exactly the bytes the
  source sent;
- a source refuses a destination whose certificate does not verify against
  its CA, or does not carry the name it was told to expect: the source
  hypervisor is never asked to migrate, its VM runs on.

Plain TCP off the loopback is refused by the tools themselves (tests/unit:
test_launcher.py, test_migrate.py, test_tls.py)."""

import os
import re
import socket
import ssl
import struct
import threading
import time

import pytest

from carapace import tls

from harness.migration import ADDR, OTHER, check_ok_migration, free_mem
from harness.ports import free_port
from harness.runs import vm_spec

pytestmark = pytest.mark.quick


VICTIM = vm_spec("victim", "demo", 1, "count=100000 delay_us=20000")
# what a destination hypervisor prints once bytes reach its stream port
HYP_RECEIVED = re.compile(r"^carapace: (incoming migration failed|vm \S+: incoming "
                          r"(migration|round)|vm \S+: migrated in)")


def crafted_stream():
    """What a local attacker sends a destination that takes plain TCP: a valid
    migration header and a CONFIG whose every byte is 0xff."""
    payload = b"\xff" * 648
    return (b"CARAMIGR" + struct.pack("<IIQQ", 2, 32, 0, 0)
            + struct.pack("<IIQII", 1, 0, len(payload), 0, 0) + payload)


def attack_plain(port):
    with socket.create_connection((ADDR, port), 10) as s:
        s.sendall(crafted_stream())
        s.settimeout(10)
        try:
            return s.recv(100)
        except (ConnectionResetError, socket.timeout):
            return b""


def tls_client(ctx, port):
    raw = socket.create_connection((ADDR, port), 10)
    raw.settimeout(10)
    try:
        conn = ctx.wrap_socket(raw, server_hostname="localhost")
        conn.sendall(crafted_stream())
        return conn.recv(100)                 # the relay's alert, or its end
    except (ssl.SSLError, OSError):
        return b""
    finally:
        raw.close()


def attack_without_certificate(port, creds):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(str(creds.main / "ca-cert.pem"))
    return tls_client(ctx, port)


def attack_with_another_ca(port, creds):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(str(creds.main / "ca-cert.pem"))
    ctx.load_cert_chain(str(creds.other / "client-cert.pem"), str(creds.other / "client-key.pem"))
    return tls_client(ctx, port)


def test_unauthenticated_peers_never_reach_the_hypervisor(hosts, tmp_path, tls_creds):
    """B waits for a VM (`carapace-run --incoming`, credentials from
    $CARAPACE_TLS_DIR) and runs a VM of its own. Three peers that do not
    authenticate try to feed its hypervisor a stream; then A moves its VM
    there. B's hypervisor must see only A's stream."""
    creds = tls_creds
    port = free_port()
    a = hosts("a", [vm_spec("c", "demo", 1, "count=100000 delay_us=20000")])
    env = {**os.environ, "CARAPACE_TLS_DIR": str(creds.main)}
    b = hosts("b", [VICTIM], incoming=port, creds=None, env=env)
    a.ready(), b.ready()
    b.wait_for(lambda l: l == "carapace: waiting for an incoming migration on the stream port",
               30)
    a.wait_for(lambda l: l.startswith("[c] hello"), 30)
    b_free = free_mem(b)
    hellos = b.count("victim", "hello")

    got = [attack_plain(port), attack_without_certificate(port, creds),
           attack_with_another_ca(port, creds)]
    time.sleep(1.0)                      # what a hypervisor would print, it has by now
    lines = b.snapshot()
    reached = [l for l in lines if HYP_RECEIVED.search(l)]
    assert not reached, "bytes of an unauthenticated peer reached the hypervisor:\n" \
        + "\n".join(reached) + "\n" + b.console()
    assert not any(g.startswith(b"CARAMIGR") for g in got), got   # no hypervisor answered
    for reason in ("not-tls", "no-certificate", "certificate"):
        b.wait_for(lambda l: l.startswith("carapace-run: incoming: refused 127.0.0.1:")
                   and f": {reason}: " in l, 20)
    assert not [l for l in lines if l.startswith("carapace-run: incoming: relaying")], \
        b.console()
    assert b.vms() == {"victim": "running"} and free_mem(b) == b_free, b.console()

    # the source that authenticates gets through, and B's hypervisor reads
    # exactly the bytes A sent
    m = a.migrate("c", port)
    check_ok_migration(m, "c", "a -> b after the attacks")
    arrived = b.wait_for(lambda l: l.startswith("carapace: vm c: migrated in ("), 30)
    got_bytes = int(re.search(r", (\d+) bytes, ", arrived).group(1))
    assert got_bytes == m.reply["bytes"], (arrived, m.reply)
    relaying = [l for l in b.snapshot() if l.startswith("carapace-run: incoming: relaying")]
    assert len(relaying) == 1, b.console()
    assert b.vms() == {"victim": "running", "c": "running"}
    assert b.count("victim", "hello") > hellos + 10, "b's own VM stopped"
    b.wait_for(lambda l: l.startswith("[c] hello"), 30)       # c goes on, on b


class OtherDestination:
    """A destination's relay with another CA's certificate (carapace-tls's
    Listener: it would accept the source, it is the source that must refuse)."""

    def __init__(self, tls, creds):
        self.events = []
        transport = tls.destination_transport(ca=creds.main / "ca-cert.pem",
                                              cert=creds.other / "server-cert.pem",
                                              key=creds.other / "server-key.pem")
        self.listener = tls.Listener(tls.listen(ADDR, 0), transport,
                                     lambda kind, text, **f: self.events.append((kind, f)))
        self.listener.start()
        self.port = self.listener.sock.getsockname()[1]
        self.tls = tls
        self.taken = []
        threading.Thread(target=self.take, daemon=True).start()

    def take(self):
        while True:
            try:
                conn, _, _ = self.listener.accept(0.2)
            except TimeoutError:
                if self.listener.closed:
                    return
                continue
            self.taken.append(conn)
            self.tls.send_ready(conn)


def test_source_refuses_an_unverified_destination(hosts, tls_creds):
    """A's migrate to a destination whose certificate its CA did not sign, or
    that does not carry the expected name: refused in the handshake (exit 2,
    reason and stage in the JSON error event), A's hypervisor is never asked
    to migrate and its VM runs on."""
    a = hosts("a", [vm_spec("c", "demo", 1, "count=100000 delay_us=20000"), OTHER])
    a.ready()
    a.wait_for(lambda l: l.startswith("[c] hello"), 30)
    d = OtherDestination(tls, tls_creds)
    try:
        m = a.migrate("c", d.port)
        assert m.rc == 2, m.text()
        err = m.of("error")
        assert err and (err[-1]["reason"], err[-1]["stage"]) == ("certificate", "tls"), m.text()
        assert "the destination's certificate does not verify" in m.err, m.text()
        assert not d.taken and ("refused", {"peer": d.events[0][1]["peer"],
                                            "reason": "refused-by-peer",
                                            "error": d.events[0][1]["error"]}) == d.events[0]
    finally:
        d.listener.close()
    # a destination of our CA, but not the host we meant
    port = free_port()
    b = hosts("b", incoming=port, creds=tls_creds.second)     # hostb.test
    b.ready()
    m = a.migrate("c", port, "--tls-name", "hostc.test")
    assert m.rc == 2 and m.of("error")[-1]["reason"] == "name", m.text()
    assert "hostc.test" in m.err, m.text()
    time.sleep(0.5)
    assert not [l for l in a.snapshot() if "vm c: migrating" in l], a.console()
    assert a.vms() == {"c": "running", "other": "running"}
    assert not [l for l in b.snapshot() if HYP_RECEIVED.search(l)], b.console()
    assert [e["reason"] for e in b.relay_events() if e["event"] == "refused"] \
        == ["refused-by-peer"], b.relay_events()
    # and to the host it meant, it goes
    m = a.migrate("c", port, "--tls-name", "hostb.test")
    check_ok_migration(m, "c", "a -> b (hostb.test)")
    assert m.of("transport")[0]["subject"] == "hostb.test"
