# SPDX-License-Identifier: MIT
"""Linux perf on the guest PMU (SBI PMU, hyp/vsbi/vsbi_pmu.c, hyp/state/pmu.c).

Debian's kernel (CONFIG_PERF_EVENTS, CONFIG_RISCV_PMU_SBI) is used: our own
guest kernel is built without perf events. The init script
(carapace.test=pmu) prints the riscv-pmu-sbi driver's boot lines, then
`cfitest --pmu` (tests/linux/pmu_count.c) counts the instructions and cycles
of a loop of 100 000, 200 000 and 1 000 000 iterations with perf_event_open.

Both runs use -icount: without it QEMU's instret and cycle follow the host's
clock (a loop ten times longer can count less), and the checks that counts
grow with the loop would be about the host machine's load."""

import pytest

from harness.linux import INITRAMFS, KERNEL, reference_linux, run_carapace
from harness.runs import run_to_end

pytestmark = pytest.mark.linux

PROBED = "riscv-pmu-sbi: SBI PMU extension is available"
CARAPACE_COUNTERS = "riscv-pmu-sbi: 8 firmware and 2 hardware counters"
REQUIRED = [f"{ev}: {what}" for ev in ("instructions", "cycles") for what in (
    "perf_event_open and read work",
    "100000 iterations count more than 100000",
    "twice the loop counts more",
    "ten times the loop counts at least 3x more")]


def check_pmu(lines, where, out):
    """Every required check passed, none failed, DONE says so."""
    text = "\n".join(lines)
    fails = [l for l in lines if "FAIL: pmu:" in l]
    assert not fails, f"{where}: failed checks:\n" + "\n".join(fails) + f"\n{out}"
    for r in REQUIRED:
        assert any(f"PASS: pmu: {r} (" in l for l in lines), f"{where}: no PASS for '{r}'\n{text}"
    assert any("DONE: 8 passed, 0 failed" in l for l in lines), f"{where}: DONE\n{out}"
    assert any(PROBED in l for l in lines), f"{where}: the SBI PMU driver did not probe\n{out}"


def test_reference_pmu(initramfs):
    """Bare QEMU + OpenSBI: validates pmu_count.c against the real firmware."""
    _, out = run_to_end(reference_linux(initramfs, "pmu", extra=["-icount", "shift=0,align=off"]),
                        "pmu", timeout=300)
    check_pmu([l.rstrip("\r") for l in out.splitlines()], "bare QEMU", out)


def test_carapace_pmu(initramfs):
    """Under Carapace: the driver finds Carapace's counters (cycle and instret,
    eight firmware counters) and perf counts a Linux process's loop."""
    spec = (f"name=p,kernel={KERNEL},initrd={INITRAMFS},mem=256M,vcpus=2,"
            "bootargs=console=ttyS0 carapace.test=pmu")
    code, out, reps = run_carapace([spec], ["p"], extra=("--icount",))
    assert code == 0, f"launcher exit {code}\n{out}"
    lines = reps["p"].lines
    check_pmu(lines, "Carapace", out)
    assert any(CARAPACE_COUNTERS in l for l in lines), f"counters\n{out}"
