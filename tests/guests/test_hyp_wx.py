# SPDX-License-Identifier: MIT
"""The hypervisor's own address space (hyp/mm/hyp_map.c, docs/security.md):
it runs on its own identity map, text r-x, data rw-, never both. The
launcher's hidden --selftest-wx makes it, after boot, store to its own text
("store") or call into its data ("exec") (hyp/boot/wx_selftest.c): each must
take a page fault in HS-mode, whose report (hyp/arch/trap_fault.c) names it,
and the host must stop (an SBI shutdown: QEMU exits). With satp Bare either
attempt goes through and the self-test itself reports the failure."""

import re

import pytest

from harness.runs import EXIT_OK, assert_exit, qemu_cpu, run_carapace, vm_spec

pytestmark = pytest.mark.quick

EXIT_ERROR = 3      # carapace-run: QEMU exited before every VM was down
MAP_RE = re.compile(r"^carapace: own address space: Sv(48|39), text r-x, rodata r--, "
                    r"data rw-, guest RAM rw-, devices rw-; (\d+) shadow-stack pages "
                    r"with guard pages")
FAULTS = {
    "store": r"carapace: PANIC: hypervisor store page fault at 0x(?P<addr>[0-9a-f]+) "
             r"\(text is read-only: W\^X\) on hart 0",
    "exec": r"carapace: PANIC: hypervisor instruction page fault at 0x(?P<addr>[0-9a-f]+) "
            r"\(data is never executable: W\^X\) on hart 0, sepc 0x(?P=addr)",
}
TRIED = {"store": r"carapace: W\^X selftest: storing to text at 0x(?P<addr>[0-9a-f]+)",
         "exec": r"carapace: W\^X selftest: calling into data at 0x(?P<addr>[0-9a-f]+)"}


def spin():
    return [vm_spec("s", "spin", vcpus=2, bootargs="spin_ms=200")]


@pytest.mark.parametrize("sv", [48, 39])
def test_boots_on_its_own_map_with_wx(guests_built, sv):
    # QEMU's default CPU takes Sv48; without sv48 and sv57 the hart keeps
    # only Sv39, and the map is built again for it
    cpu = [] if sv == 48 else ["--cpu", qemu_cpu() + ",sv48=false,sv57=false"]
    run = run_carapace(spin(), smp=2, names=["s"], extra=cpu)
    assert_exit(run, EXIT_OK)
    found = [m for m in map(MAP_RE.match, run.hyp) if m]
    assert len(found) == 1, run.out
    assert found[0].group(1) == str(sv), run.out
    assert int(found[0].group(2)) >= 2, run.out    # every hart's (HART_MAX of them)
    assert "W^X selftest" not in run.out, run.out
    assert "page fault" not in run.out, run.out


@pytest.mark.parametrize("how", FAULTS)
def test_wx_violation_faults_in_hs_and_stops_the_host(guests_built, how):
    run = run_carapace(spin(), smp=2, names=["s"], extra=["--selftest-wx", how])
    # QEMU exited on its own (the panic's SBI shutdown), not at the timeout
    assert_exit(run, EXIT_ERROR)
    assert "QEMU exited (status 0) before all VMs were down; hypervisor panic" in run.out, \
        run.out
    tried = re.search(TRIED[how], run.out)
    fault = re.search(FAULTS[how], run.out)
    assert tried and fault, run.out
    assert tried.group("addr") == fault.group("addr"), run.out
    assert "FAILED" not in run.out, run.out
    # it stopped before any VM ran: the guest printed nothing
    assert not run.guests["s"].lines, run.out
