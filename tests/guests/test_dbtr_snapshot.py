# SPDX-License-Identifier: MIT
"""SBI DBTR across a snapshot, a restore and a live migration (snapshot
format 8's DBTR record; tests/guests/sbi_dbtr.c, bootarg snapshot=1): the
guest installs an execute trigger on a function and a load watchpoint it
disables, checks them and prints SNAPSHOT-READY; the harness snapshots it
(the file holds both triggers and the shared memory), restores it into a
fresh QEMU, and moves it live to a fresh host. Each copy must take the
breakpoint exception calling the function, not fire the disabled
watchpoint, read back the very trigger words it read before, and fire the
watchpoint once enabled."""

import re

import pytest

from harness.migration import check_ok_migration, life, marker_line
from harness.ports import free_port
from harness.report import Report, check_report
from harness.runs import vm_spec
from harness.snapshots import inspect

pytestmark = pytest.mark.quick

SPEC = vm_spec("orig", "sbi_dbtr", 1, "snapshot=1").replace(",vcpus=1", ",vcpus=1,mem=16M")
DBTR_EXEC = (6 << 60) | (1 << 2) | (1 << 4)    # mcontrol6, execute, S
DBTR_LOAD = 6 << 60 | 1                          # mcontrol6, load, disabled (no mode)


def ready(line):
    """(exec index, watch index, tdata1, tdata2) the guest printed."""
    m = re.search(r"exec=(\d+) watch=(\d+) tdata1=(0x[0-9a-f]+) tdata2=(0x[0-9a-f]+)", line)
    return int(m.group(1)), int(m.group(2)), int(m.group(3), 16), int(m.group(4), 16)


def check_copy(lines, where):
    rep = Report(lines)
    check_report(rep, where)
    assert not rep.kind("SKIP: "), rep.lines
    passes = rep.kind("PASS: ")
    for want in ("restored: calling it: scause is breakpoint (3)",
                 "restored: the disabled watchpoint does not fire",
                 "restored: read_triggers returns the same words",
                 "restored: enabled, loading it: scause is breakpoint (3)"):
        assert any(want in l for l in passes), f"{where}: no PASS {want!r}\n" + \
            "\n".join(rep.lines)
    assert len(rep.kind("SNAPSHOT-READY")) == 1, rep.lines    # it did not start over


@pytest.mark.parametrize("live", [False, True], ids=["plain", "live"])
def test_dbtr_triggers_survive_snapshot_and_restore(snap_host, tmp_path, live):
    h = snap_host([SPEC], extra=["--persist"])
    line = h.wait_for(lambda l: l.startswith("[orig] SNAPSHOT-READY"), 60)
    idx, widx, tdata1, tdata2 = ready(line)
    assert tdata1 == DBTR_EXEC, hex(tdata1)
    orig = h.guest("orig")
    assert not [l for l in orig if l.startswith("FAIL")], "\n".join(h.snapshot())

    path = tmp_path / ("live.snap" if live else "plain.snap")
    rep, _, _ = h.ctl("snapshot", "orig", str(path), *(["--live"] if live else []))
    assert rep["ok"] and rep["live"] == live, rep
    dbtr = inspect(path)["vcpus"][0]["dbtr"]
    assert dbtr["shmem"] is not None, dbtr
    trig = {t["index"]: t for t in dbtr["triggers"]}
    assert sorted(trig) == sorted((idx, widx)), dbtr
    assert (trig[idx]["tdata1"], trig[idx]["tdata2"], trig[idx]["state"]) == \
        (DBTR_EXEC, tdata2, 0b101), trig[idx]
    assert (trig[widx]["tdata1"], trig[widx]["state"]) == (DBTR_LOAD, 0b101), trig[widx]
    h.kill()

    h2 = snap_host([], extra=["--restore", str(path)])
    h2.wait_for(lambda l: l == "carapace: vm orig: shut down", 60)
    check_copy(life(orig, h2.guest("orig"), "SNAPSHOT-READY"),
               "vm orig (restored in a fresh QEMU)")


def test_dbtr_triggers_move_with_the_vm(hosts):
    # a move keeps the VM's generation ID: the guest waits 7 s, the harness
    # checks that it went on (and printed) on b only
    port = free_port()
    a = hosts("a", [vm_spec("orig", "sbi_dbtr", 1, "snapshot=1 wait_ms=7000")])
    b = hosts("b", incoming=port)
    a.ready(), b.ready()
    marker_line(a, "orig", "SNAPSHOT-READY")
    m = a.migrate("orig", port)
    check_ok_migration(m, "orig", "a -> b")
    b.wait_for(lambda l: l == "carapace: vm orig: shut down", 60)
    check_copy(life(a.guest("orig"), b.guest("orig"), "SNAPSHOT-READY"), "vm orig: on a, then b")
    assert a.guest("orig")[-1].startswith("SNAPSHOT-READY"), a.console()
