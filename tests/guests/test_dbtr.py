# SPDX-License-Identifier: MIT
"""SBI DBTR (tests/guests/sbi_dbtr.c): the payload on bare QEMU + OpenSBI 1.6
and under Carapace prints the same PASS lines, apart from those marked
"(Carapace)" (where OpenSBI 1.6 departs from the v3.0 text; they run only
under Carapace). Then two copies of it on one host hart, 100 us slices, one
also putting triggers on the hypervisor's own code and data: a vCPU's
triggers must never fire in another VM (both run the same image at the same
addresses) nor in the host."""

import subprocess

import pytest

from harness.paths import HYP
from harness.report import check_report
from harness.runs import (EXIT_OK, assert_carapace_mode, assert_exit, run_carapace, run_hyp,
                          run_reference, vm_spec)

ONLY = "(Carapace)"


def passes(rep):
    return {l for l in rep.lines if l.startswith("PASS: ")}


@pytest.mark.reference
def test_dbtr_same_as_bare(guests_built):
    rc, bare, out = run_reference("sbi_dbtr")
    assert rc == 0, f"sbi_dbtr: QEMU exit status {rc}\n{out}"
    check_report(bare, "sbi_dbtr (bare)")
    run = run_carapace([vm_spec("t", "sbi_dbtr", 2)], names=["t"])
    assert_exit(run, EXIT_OK)
    rep = run.guests["t"]
    assert_carapace_mode(rep, "sbi_dbtr")
    check_report(rep, "sbi_dbtr (carapace)")
    common = {l for l in passes(rep) if ONLY not in l}
    assert passes(bare) == common, (
        f"only bare: {sorted(passes(bare) - common)}\nonly Carapace: {sorted(common - passes(bare))}")
    assert any(ONLY in l for l in passes(rep)), run.out
    assert any(l.startswith("carapace: DBTR: ") and "VS/VU only" in l for l in run.hyp), run.out


def hyp_symbol(name):
    """Address of @name in the ELF of the hypervisor the runs boot."""
    elf = HYP.with_suffix(".elf")
    out = subprocess.run(["riscv64-unknown-elf-nm", str(elf)], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == name:
            return int(parts[0], 16)
    raise AssertionError(f"{name} not in {elf}")


@pytest.mark.quick
def test_dbtr_isolation_and_attack(guests_built):
    text, data = hyp_symbol("__trap_vector"), hyp_symbol("harts")
    attack = f"hyp_text={text:#x} hyp_data={data:#x}"
    vms = [vm_spec("a", "sbi_dbtr", 2, attack), vm_spec("b", "sbi_dbtr", 2)]
    run = run_hyp(vms, ["a", "b"], smp=1, timeslice_us=100, timeout=180)
    assert_exit(run, EXIT_OK)
    for vm in "ab":
        assert_carapace_mode(run.guests[vm], f"vm {vm}")
        check_report(run.guests[vm], f"vm {vm}")
    a = run.guests["a"].lines
    assert "PASS: dbtr: the host ran on through 2000 SBI calls and a sleep (Carapace)" in a, run.out
    assert not any("the host ran on" in l for l in run.guests["b"].lines), run.out
