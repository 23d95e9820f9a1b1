# SPDX-License-Identifier: MIT
"""The end of a live migration (docs/migration.md, "Failure handling",
protocol 3; issue 22): a VM is never lost and never runs twice.

- a stream cut between RUNNING and DONE (the relay hook `done`): the source
  destroyed its copy on RUNNING, the destination keeps the VM it runs,
  marked arrived-unconfirmed (it once destroyed it too: the VM was lost);
- a cut before RUNNING reaches the source (`confirmation`): the source
  keeps its copy paused (left-unconfirmed) and answers `unconfirmed`, the
  destination keeps running its own (arrived-unconfirmed); the operator
  removes the stale copy on the source, or resumes it when the destination
  has died;
- a VM still arriving that its operator destroys on the destination ends
  the receive cleanly (the source is told and keeps its copy; the host waits
  for the next attempt, which succeeds); one destroyed after it started
  there leaves the receive with nothing to touch: a VM that takes its slot
  next is never destroyed or marked by the migration's end."""

import time

import pytest

from harness.migration import OTHER, check_left_unconfirmed, check_ok_migration, life, marker_line
from harness.ports import free_port
from harness.report import Report, check_report
from harness.runs import vm_spec

pytestmark = pytest.mark.quick

HOLD = 20       # seconds the relay holds while the test acts on B (ctl is slow under load)


def entries(h):
    listing, _ = h.ctl("list")
    return {v["name"]: v for v in listing["vms"]}


def moving_c(hosts, wait_ms=20000, **dest):
    """Host a, snap_cfi "c" at its marker (it checks itself @wait_ms later)
    beside OTHER, and host b waiting for it (--incoming; @dest: more of
    its parameters): (a, b, b's port)."""
    port = free_port()
    a = hosts("a", [vm_spec("c", "snap_cfi", 2, f"wait_ms={wait_ms}"), OTHER])
    b = hosts("b", incoming=port, **dest)
    a.ready(), b.ready()
    marker_line(a, "c", "SNAPSHOT-READY")
    return a, b, port


def arrived_unconfirmed(b):
    """b runs c and marks it: the source never confirmed the migration."""
    b.wait_for(lambda l: "vm c: arrived by a migration the source never confirmed" in l, 30)
    vm = entries(b)["c"]
    assert vm["state"] == "running" and vm["migration"] == "arrived-unconfirmed", vm


def guest_ends_well(src, dst, vm, where):
    """The guest's life (on @src up to its marker, then on @dst) passes its checks."""
    dst.wait_for(lambda l: l == f"carapace: vm {vm}: shut down", 60)
    rep = Report(life(src.guest(vm), dst.guest(vm), "SNAPSHOT-READY"))
    check_report(rep, where)
    assert not rep.kind("SKIP: "), rep.lines


def test_cut_between_running_and_done_keeps_the_vm_on_the_destination(hosts):
    a, b, port = moving_c(hosts)
    m = a.migrate("c", port, "--cut-at", "done")
    hook = m.of("hook")
    assert hook and hook[0]["phase"] == "done", m.text()
    # the source had RUNNING: its copy is gone, its answer ok
    assert m.rc == 0 and m.reply["ok"] and m.of("running"), m.text()
    assert a.vms() == {"other": "running"}, a.console()
    # the destination never had DONE: it keeps the VM it runs, and says so
    arrived_unconfirmed(b)
    guest_ends_well(a, b, "c", "vm c: on a, then on b (DONE cut)")


def test_cut_before_running_reaches_the_source_leaves_both_copies_marked(hosts):
    a, b, port = moving_c(hosts)
    m = a.migrate("c", port, "--cut-at", "confirmation")
    assert m.of("hook") and m.of("hook")[0]["phase"] == "confirmation", m.text()
    # the source cannot know whether the destination runs it: its copy stays
    # paused, never resumed by itself
    assert m.rc == 1 and m.reply["code"] == "unconfirmed", m.text()
    assert "left-unconfirmed" in m.reply["error"], m.text()
    check_left_unconfirmed(a, "c", "RUNNING cut")
    arrived_unconfirmed(b)
    # the operator sees it runs on b and removes the stale copy on a
    rep, _ = a.ctl("destroy", "c")
    assert rep["ok"], rep
    assert a.vms() == {"other": "running"}
    guest_ends_well(a, b, "c", "vm c: on a, then on b (RUNNING cut)")
    assert not [l for l in a.guest("c") if l.startswith("PASS: snap: ssp")], a.console()


def test_destination_dead_after_running_the_operator_resumes_the_source(hosts):
    a, b, port = moving_c(hosts)
    p = a.migrate("c", port, "--hold-at", "confirmation", "--hold-seconds", "3",
                  background=True)
    p.wait_event("hook", 60)
    b.kill()            # it ran the VM, then died before the source heard of it
    m = p.finish()
    assert m.rc == 1 and m.reply["code"] == "unconfirmed", m.text()
    assert entries(a)["c"]["migration"] == "left-unconfirmed"
    # b is gone: the operator resumes the copy on a, which goes on from where
    # it paused and passes its checks there
    rep, _ = a.ctl("resume", "c")
    assert rep["ok"] and rep["state"] == "running", rep
    assert "migration" not in entries(a)["c"]
    a.wait_for(lambda l: l == "carapace: vm c: shut down", 60)
    rep = Report(a.guest("c"))
    check_report(rep, "vm c, resumed on a after an unconfirmed migration")
    assert not rep.kind("SKIP: "), rep.lines


def test_destroying_an_arriving_vm_cancels_the_receive(hosts):
    a, b, port = moving_c(hosts, wait_ms=45000)
    p = a.migrate("c", port, "--hold-at", "round:1", "--hold-seconds", str(HOLD),
                  background=True)
    p.wait_event("hook", 60)
    assert set(b.vms()) == {"c"}, b.console()    # created at ACCEPT, never run
    rep, _ = b.ctl("destroy", "c")
    assert rep["ok"] and rep["freed"] > 0, rep
    assert b.vms() == {}, b.console()
    stats, _ = b.ctl("stats")
    b_free = stats["host"]["free_mem"]
    m = p.finish()
    # the source was told (ABORT) and its VM runs on
    assert m.rc == 1 and m.reply["code"] == "refused", m.text()
    assert "destroyed here by its operator" in m.reply["error"], m.text()
    assert a.vms() == {"c": "running", "other": "running"}, a.console()
    b.wait_for(lambda l: "incoming migration failed" in l and "waiting for another" in l, 30)
    # nothing leaked on b, and the next attempt comes in
    stats, _ = b.ctl("stats")
    assert stats["host"]["free_mem"] == b_free
    m = a.migrate("c", port)
    check_ok_migration(m, "c", "a -> b after a destroyed arrival")
    assert b.vms() == {"c": "running"} and "migration" not in entries(b)["c"]
    guest_ends_well(a, b, "c", "vm c: on a, then on b (second attempt)")


def test_a_vm_destroyed_after_arriving_leaves_its_reused_slot_alone(hosts):
    a, b, port = moving_c(hosts, wait_ms=9000, extra=["--image", "demo=build/guests/demo.bin"])
    p = a.migrate("c", port, "--hold-at", "confirmation", "--hold-seconds", str(HOLD),
                  background=True)
    p.wait_event("hook", 60)
    # b runs the VM (its RUNNING is held back); its operator destroys it
    # there and creates another VM, which takes the same slot
    slot = entries(b)["c"]["index"]
    rep, _ = b.ctl("destroy", "c")
    assert rep["ok"], rep
    rep, _ = b.ctl("create", "n", "--kernel", "demo", "--bootargs",
                   "count=100000 delay_us=20000")
    assert rep["ok"] and rep["index"] == slot, rep
    m = p.finish()          # the hold ends: both connections close
    time.sleep(2)
    # the end of the migration touched nothing of the new VM
    n = entries(b)
    assert list(n) == ["n"] and n["n"]["state"] == "running" and "migration" not in n["n"], n
    assert not [l for l in b.snapshot() if "vm n: destroyed" in l or "vm n: arrived" in l], \
        b.console()
    hellos = b.count("n", "hello")
    time.sleep(1)
    assert b.count("n", "hello") > hellos, b.console()
    assert m.rc == 1 and m.reply["code"] == "unconfirmed", m.text()
    # c does not run on b any more: the operator resumes the paused copy on a
    assert entries(a)["c"]["migration"] == "left-unconfirmed"
    rep, _ = a.ctl("resume", "c")
    assert rep["ok"], rep
    a.wait_for(lambda l: l == "carapace: vm c: shut down", 60)
    check_report(Report(a.guest("c")), "vm c, resumed on a")
