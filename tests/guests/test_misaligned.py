# SPDX-License-Identifier: MIT
"""FWFT MISALIGNED_EXC_DELEG = 0 (tests/guests/misaligned.c): the payload on
bare QEMU + OpenSBI 1.6 (which emulates in M-mode) and under Carapace (which
emulates in the hypervisor, hyp/dispatch/misaligned.c) gives the same results:
the same PASS lines and the same INFO lines, but for what only one of the two
says (the reset value, implementation-defined: 0 on OpenSBI, 1 under Carapace,
checked there). QEMU performs plain misaligned accesses in hardware, so on
QEMU the emulation itself is tested by tests/unit/test_misaligned.c."""

import pytest

from harness.report import check_report
from harness.runs import (EXIT_OK, assert_carapace_mode, assert_exit, run_carapace,
                          run_reference, vm_spec)

CARAPACE_ONLY = {"PASS: misaligned: reset value 1 (delegated)"}
RESET_INFO = "INFO: misaligned: reset value "


def results(rep):
    """The lines both runs must share: PASS and INFO, without the init line."""
    return [l for l in rep.lines
            if (l.startswith("PASS: ") or l.startswith("INFO: misaligned:"))
            and l not in CARAPACE_ONLY and not l.startswith(RESET_INFO)]


@pytest.mark.reference
def test_misaligned_bare_and_carapace_agree(guests_built):
    rc, bare, out = run_reference("misaligned", smp=1)
    assert rc == 0, f"misaligned: QEMU exit status {rc}\n{out}"
    check_report(bare, "misaligned (bare)")
    run = run_carapace([vm_spec("t", "misaligned", 1)], names=["t"])
    rep = run.guests["t"]
    assert_carapace_mode(rep, "misaligned")
    assert_exit(run, EXIT_OK)
    check_report(rep, "misaligned (carapace)", sorted(CARAPACE_ONLY))
    assert RESET_INFO + "1" in rep.lines, run.out
    assert results(rep) == results(bare), \
        "bare and Carapace differ:\n" + "\n".join(
            f"{a!r:70} | {b!r}" for a, b in zip(results(bare), results(rep)) if a != b)
    # every form passed in each mode, Sv39 and the page crossing included
    assert sum(1 for l in results(rep) if l.startswith("PASS: misaligned: Sv39: ")) == 24
    assert "PASS: misaligned: ld across: stval is the unmapped page's first byte" in rep.lines



def test_firmware_keeps_misaligned_traps(guests_built):
    """The hypervisor does not ask the firmware for MISALIGNED_EXC_DELEG
    (docs/sbi.md: its own code would then take a CPU's misaligned traps, and
    a trap in HS stops the host): no boot line says it asked."""
    run = run_carapace([vm_spec("t", "misaligned", 1)], names=["t"])
    assert_carapace_mode(run.guests["t"], "misaligned")
    assert_exit(run, EXIT_OK)
    assert not [l for l in run.out.splitlines() if "MISALIGNED_EXC_DELEG" in l and
                l.lstrip().startswith("carapace:")], run.out
