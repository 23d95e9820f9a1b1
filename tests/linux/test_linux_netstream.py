# SPDX-License-Identifier: MIT
"""The numstream test (issue 25; docs/testing.md, "The numstream test"): our
guest kernel (virtio-net built in) boots the tests/linux initramfs with
carapace.numstream=, which brings its NIC up and runs
tests/linux/numstream.c: a sender of numbered, checksummed messages over
TCP, or a receiver that checks they come in order, each once. A connection
lost to a restore (one end's TCP state back at the snapshot instant, the
other's not: it stalls) costs nothing at the application level: the sender
opens another and goes on from the number the receiver says it wants.

- two guests on one switch, alpha sending to beta: beta is live-snapshotted
  a few hundred messages in, destroyed, and restored on the same host
  (harness.moves.restore_in_place(): with its MAC, its original gone). The
  restored beta takes a new connection at a number at or after the one it
  had when the snapshot was asked for (or, when its original took nothing
  after the snapshot instant, the same connection carries on), and its
  counts go on from there to the last message, in order, each once;
- the same with the sender alpha restored: beta's counts go on over the
  whole run without a step back or a gap, the restored alpha resumes at the
  number beta wants, and beta ends with every message once;
- the guest's receiver on frames the host sends it (through a port
  forward): a CRC broken, a message left out, one sent twice; each guest
  says FAIL at the message, in the host checker's words, and its program
  exits 1;
- a guest -> host stream through a switch with an uplink (QEMU user
  networking) to a receiver on the host (harness.numstream.Receiver, the
  same protocol in Python): the guest is restored in place mid-stream, and
  the host's receiver sees every message once, in order, and progress after
  the restore."""

import pytest

from harness.hosts import SnapHost, started_hosts
from harness.moves import restore_in_place
from harness.numstream import (DATA, EVERY, Receiver, fails, fault, frame, got, host_stream,
                               order_fault, resumes, spec, wait_line)
from harness.ports import free_port

pytestmark = pytest.mark.linux

RUN_TIMEOUT = 600       # each host's --timeout
BOOT_TIMEOUT = 300      # from the host's start to the receiver's first counts
RATE = 100              # messages a second
COUNT = 3000            # the stream's length: 30 s at RATE
SNAP_AT = 300           # the receiver's count when the snapshot is asked for
END_TIMEOUT = 240       # from the restore to the last message
PORT = 5001
LAN = "10.0.3"          # the guests' network on a switch without an uplink
HOST = "10.0.2.2"       # QEMU user networking's gateway: the host


@pytest.fixture
def hosts(tmp_path):
    """make(tag, vms, extra=...): a SnapHost in its own directory, --persist
    (a VM destroyed before its restore may be the last one)."""
    def start(tmp, tag, vms, extra=()):
        where = tmp / tag
        where.mkdir()
        return SnapHost(where, vms, ["--persist", *extra], timeout=RUN_TIMEOUT)
    yield from started_hosts(start, tmp_path)


def pair(h_make, kernel):
    """alpha sending COUNT messages to beta, on the switch lan."""
    return h_make("h", [
        spec("alpha", kernel, f"send:{LAN}.2:{PORT}", "lan", ip=f"{LAN}.1/24", rate=RATE,
             count=COUNT),
        spec("beta", kernel, f"recv:{PORT}", "lan", ip=f"{LAN}.2/24", count=COUNT)],
        extra=["--switch", "name=lan"])


def counts_reach(n):
    return lambda l: any(g >= n for g in got([l]))


def done_line(count):
    return f"numstream: done: {count} messages, 0..{count - 1} in order, over "


def check_restored_nic(moved):
    nics = moved.restored.get("nics")
    assert nics and [n["new_mac"] for n in nics] == [False], moved.restored


def say_connections(h, extra=()):
    """The connections' story, for the record (pytest -s)."""
    for line in [*h.snapshot(), *extra]:
        if "numstream: connection" in line or "numstream: cannot connect" in line:
            print(line)


def check_no_fail(h):
    log = h.snapshot()
    assert not fails(log), "\n".join(fails(log))
    assert not any("init: numstream exit" in l for l in log), "\n".join(log[-60:])


def test_numstream_guest_receiver_fails_as_the_host_checker(guest_kernel, initramfs, hosts):
    """Three guests' receivers, each sent messages 0..9 by the host and
    then a wrong one: message 10 with a payload byte flipped, message 11,
    message 9 again. Each guest says FAIL at message 10, in the words of the
    host's checker (harness.numstream.fault(), order_fault()), and its
    program exits 1."""
    flipped = bytearray(frame(DATA, 10))
    flipped[30] ^= 4
    wrong = {"crc": bytes(flipped), "gap": frame(DATA, 11), "dup": frame(DATA, 9)}
    want = {name: f"numstream: FAIL at message 10: {fault(m) or order_fault(n, 10, 0)}"
            for (name, m), n in zip(wrong.items(), (10, 11, 9))}
    assert want["crc"].startswith("numstream: FAIL at message 10: CRC wrong (message 10: "), want
    assert want["gap"].endswith("gap: message 11 where 10 belongs (1 missing)"), want
    assert want["dup"].endswith("message 9 again where 10 belongs"), want
    ports = {name: free_port() for name in wrong}
    fwd = "".join(f",fwd={name}:{port}:{PORT}" for name, port in ports.items())
    h = hosts("h", [spec(name, guest_kernel, f"recv:{PORT}", "up", count=20) for name in wrong],
              extra=["--switch", f"name=up,uplink=user{fwd}"])
    for name, m in wrong.items():
        host_stream(ports[name], [frame(DATA, n) for n in range(10)] + [m], BOOT_TIMEOUT)
    for name in wrong:
        h.wait_for(lambda l, n=name: l.startswith(f"[{n}] init: numstream exit"), 60)
        lines = h.guest(name)
        assert fails(lines) == [want[name]], (name, fails(lines), want[name])
        assert "init: numstream exit 1" in lines, (name, lines)


def test_numstream_receiver_restored_beside_the_sender(guest_kernel, initramfs, hosts):
    """beta (the receiver) live-snapshotted at count SNAP_AT, destroyed and
    restored beside alpha: the stream goes on from beta's snapshot instant
    and ends with every message once, in order."""
    h = pair(hosts, guest_kernel)
    wait_line(h, "beta", counts_reach(SNAP_AT), BOOT_TIMEOUT, what=f"count {SNAP_AT}")
    at = got(h.guest("beta"))[-1]
    moved = restore_in_place(h, "beta")
    check_restored_nic(moved)
    before = got(l for l in h.snapshot()[:moved.mark] if l.startswith("[beta] "))
    wait_line(h, "beta", lambda l: l.startswith(done_line(COUNT)), END_TIMEOUT,
              since=moved.mark, what="done line from the restored beta")
    wait_line(h, "alpha", lambda l: l.startswith(f"numstream: all {COUNT} acknowledged"), 30,
              since=moved.mark, what="all acknowledged after the restore")
    check_no_fail(h)
    after = got(moved.lines("beta"))
    # the original's counts: one run from the first
    assert before == list(range(EVERY, before[-1] + 1, EVERY)), before
    # the restored beta: at its snapshot instant, between the snapshot's
    # request and the destroy (its first line may be torn off by the snapshot)
    assert after and at < after[0] <= before[-1] + 2 * EVERY, (at, before[-1], after[:3])
    assert after == list(range(after[0], COUNT + 1, EVERY)), after
    # it went on over a new connection, from its own count, which alpha took.
    # Or over the same connection: when the original took nothing after the
    # snapshot instant (a fast restore), alpha's TCP resends what the
    # restored beta has not acknowledged and the stream goes on; every
    # number once and in order all the same (beta's checks, counts above)
    back = resumes(moved.lines("beta"))
    if not back:
        assert not resumes(moved.lines("alpha"), sender=True), moved.lines("alpha")
        print(f"numstream: beta snapshotted at count >= {at}, its original reached "
              f"{before[-1]}; restored {moved.stopped_s:.1f} s after the snapshot, the same "
              f"connection carried on")
        say_connections(h)
        return
    assert at <= back[0], (at, back, after[:3])
    assert back[0] in resumes(moved.lines("alpha"), sender=True), \
        (back, [l for l in moved.lines("alpha") if "connection" in l])
    print(f"numstream: beta snapshotted at count >= {at} (pause "
          f"{moved.snapshot_pause_us / 1e3:.0f} ms), its original reached {before[-1]}; "
          f"restored {moved.stopped_s:.1f} s after the snapshot, resumed at {back[0]}, "
          f"connections {resumes(h.guest('alpha'), sender=True)}")
    say_connections(h)


def test_numstream_sender_restored_beside_the_receiver(guest_kernel, initramfs, hosts):
    """alpha (the sender) live-snapshotted at beta's count SNAP_AT,
    destroyed and restored beside beta: beta, never stopped, counts every
    message once, in order, over the whole run; the restored alpha resumes
    at the number beta wants."""
    h = pair(hosts, guest_kernel)
    wait_line(h, "beta", counts_reach(SNAP_AT), BOOT_TIMEOUT, what=f"count {SNAP_AT}")
    moved = restore_in_place(h, "alpha")
    check_restored_nic(moved)
    at_restore = got(h.guest("beta"))[-1]
    assert at_restore < COUNT - 2 * EVERY, \
        f"the original alpha sent (nearly) all before its restore: {at_restore}; raise COUNT"
    wait_line(h, "beta", lambda l: l.startswith(done_line(COUNT)), END_TIMEOUT,
              since=moved.mark, what="done line")
    wait_line(h, "alpha", lambda l: l.startswith(f"numstream: all {COUNT} acknowledged"), 30,
              since=moved.mark, what="all acknowledged from the restored alpha")
    check_no_fail(h)
    counts = got(h.guest("beta"))
    assert counts == list(range(EVERY, COUNT + 1, EVERY)), counts
    back = resumes(moved.lines("alpha"), sender=True)
    assert back and back[0] in resumes(moved.lines("beta")), (back, moved.lines("beta"))
    restored_at = next(l for l in moved.lines("alpha") if "resuming at" in l)
    print(f"numstream: alpha snapshotted at beta's count >= {SNAP_AT} (pause "
          f"{moved.snapshot_pause_us / 1e3:.0f} ms); restored {moved.stopped_s:.1f} s after "
          f"the snapshot, beta at {at_restore}; {restored_at}")
    say_connections(h)


def test_numstream_guest_to_host_across_a_restore(guest_kernel, initramfs, hosts):
    """alpha sends COUNT messages to the host (Receiver) through a switch
    with an uplink; live-snapshotted at the host's count SNAP_AT,
    destroyed and restored: the host counts every message once, in order,
    and goes on after the restore over a new connection, at the number it
    wanted."""
    rx = Receiver(COUNT)
    try:
        h = hosts("h", [spec("alpha", guest_kernel, f"send:{HOST}:{rx.port}", "up", rate=RATE,
                             count=COUNT)],
                  extra=["--switch", "name=up,uplink=user"])
        rx.wait(counts_reach(SNAP_AT), BOOT_TIMEOUT, f"count {SNAP_AT}")
        moved = restore_in_place(h, "alpha")
        check_restored_nic(moved)
        at_restore = rx.next
        assert at_restore < COUNT - 2 * EVERY, \
            f"the original alpha sent (nearly) all before its restore: {at_restore}; raise COUNT"
        rx.wait(lambda l: l.startswith(done_line(COUNT)), END_TIMEOUT, "done line")
        wait_line(h, "alpha", lambda l: l.startswith(f"numstream: all {COUNT} acknowledged"), 30,
                  since=moved.mark, what="all acknowledged from the restored alpha")
    finally:
        rx.stop()
    check_no_fail(h)
    lines = rx.snapshot()
    assert not fails(lines), lines
    assert got(lines) == list(range(EVERY, COUNT + 1, EVERY)), got(lines)
    # progress after the restore, over the connection the restored alpha
    # opened: from the number the host wanted, to the last. Or over the
    # same connection: when the original sent little after the snapshot
    # instant (a fast restore), TCP takes what the restored alpha sends
    # again as retransmissions of bytes the host has, and the stream goes
    # on; every number once and in order all the same (checked above)
    back = resumes(moved.lines("alpha"), sender=True)
    if not back:
        assert len(resumes(lines)) == 1, (resumes(lines), lines)
        print(f"numstream: host receiver at {at_restore} when alpha came back, the same "
              f"connection carried on ({moved.stopped_s:.1f} s after the snapshot)")
        say_connections(h, [f"[host] {l}" for l in lines])
        return
    there = [i for i, l in enumerate(lines) if resumes([l]) == [back[0]]]
    assert there, (back, lines)
    first = (back[0] // EVERY + 1) * EVERY
    assert got(lines[there[-1]:]) == list(range(first, COUNT + 1, EVERY)), (back, lines[there[-1]:])
    print(f"numstream: host receiver at {at_restore} when alpha came back "
          f"({moved.stopped_s:.1f} s after the snapshot, pause "
          f"{moved.snapshot_pause_us / 1e3:.0f} ms); connections {resumes(lines)}")
    say_connections(h, [f"[host] {l}" for l in lines])
