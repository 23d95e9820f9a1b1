# SPDX-License-Identifier: MIT
"""tests/guests/cfi_gstage.c: shadow-stack accesses against Carapace's G-stage.

Under Carapace with debug=1 the payload write-protects its RAM through the
debug SBI extension and checks that ordinary stores, sspush and ssamoswap on
write-protected chunks are resolved without the guest noticing and counted
as dirty, that loads are not, and (QEMU 10.0.2 quirk Q8) that sspopchk either
dirties its chunk (spec) or does not fault at all. In every Carapace run it
checks that shadow-stack accesses to emulated devices (UART, PLIC) raise a
store/AMO access fault (7) and are never emulated: nothing reaches the
console between the markers of `MMIO-SS-LINE: <>`. Without debug=1, and on
bare QEMU, the extension must be absent (probe 0, calls -2); on bare QEMU the
device probes only print what QEMU did (INFO).
"""

import re

import pytest

from harness.report import check_report, observed
from harness.runs import (EXIT_OK, assert_carapace_mode, assert_exit, run_hyp, run_reference,
                          stats, vm_spec)

PAYLOAD = "cfi_gstage"
T = f"PASS: {PAYLOAD}: "
MMIO_LINE = "MMIO-SS-LINE: <>"

MMIO_PROBES = [
    "sspush to the UART (SS page)",
    "sspopchk from the UART (SS page)",
    "ssamoswap.d on the UART (SS page)",
    "ssamoswap.d on the UART (RW page)",
    "sspush to the UART (RW page)",
    "ssamoswap.w on a PLIC priority register (SS page)",
]
# the four on the SS page always reach the hypervisor (G-stage fault on a
# device); the two through the RW alias only do on QEMU 10.0.2 (Q7)
INJECTED_MIN, INJECTED_MAX = 4, len(MMIO_PROBES)

MMIO_PASSES = [f"{T}{p}: store/AMO access fault (7)" for p in MMIO_PROBES] + [
    f"{T}{p}: stval is the virtual address 0x{a:x}"
    for p, a in zip(MMIO_PROBES, [0x10000000, 0x10000000, 0x10000000,
                                  0x50000000, 0x50000000, 0x0c000004])] + [
    f"{T}ordinary store + load of the UART scratch register (MMIO)",
    f"{T}UART scratch register unchanged by the SS accesses",
    f"{T}UART LCR unchanged by the SS accesses",
    f"{T}PLIC priority unchanged by ssamoswap.w",
]

WP_PASSES = [
    f"{T}debug extension present (debug=1): probe != 0",
    f"{T}write-protect then dirty-chunks, no access between: 0 chunks dirty",
    f"{T}write-protect covers every chunk the payload touched",
    f"{T}ordinary load from a write-protected chunk: 0 chunks dirty",
    f"{T}ordinary store to a write-protected chunk: 1 chunk dirty",
    f"{T}sspush to a write-protected chunk: 1 chunk dirty",
    f"{T}sspush to a write-protected chunk: value landed",
    f"{T}ordinary load from the SS page in a write-protected chunk: 0 chunks dirty",
    f"{T}sspopchk from a write-protected chunk: no trap",
    f"{T}ssamoswap.d on a write-protected chunk: 1 chunk dirty",
    f"{T}ssamoswap.d on a write-protected chunk: new value landed",
    f"{T}store to a chunk first touched after write-protect: 1 chunk dirty",
    f"{T}load then store to a chunk first touched (by the load) after write-protect: "
    "1 chunk dirty",
    f"{T}dirty chunks = distinct chunks of the stack, bss, S and D",
]
ABSENT_PASSES = [
    f"{T}debug extension absent: probe 0",
    f"{T}debug extension absent: write-protect is NOT_SUPPORTED (-2)",
    f"{T}debug extension absent: dirty-chunks is NOT_SUPPORTED (-2)",
]
WP_SKIP = f"SKIP: {PAYLOAD}: write-protect and dirty-chunk checks: no Carapace debug extension"
POPCHK_RE = re.compile(rf"INFO: {PAYLOAD}: sspopchk on a write-protected chunk: (.*)")


def require(rep, lines, where):
    missing = [l for l in lines if l not in rep.lines]
    assert not missing, f"{where}: missing lines:\n" + "\n".join(missing) + \
        "\n--- log ---\n" + "\n".join(rep.lines)


def run_vm(debug):
    spec = vm_spec("t", PAYLOAD, 1) + (",debug=1" if debug else "")
    spec += f",bootargs=debug_ext={int(debug)}"
    run = run_hyp([spec], ["t"], smp=2)
    rep = run.guests["t"]
    where = f"{PAYLOAD} (carapace, debug={int(debug)})"
    assert_carapace_mode(rep, where)
    check_report(rep, where)        # names the failed checks, if any
    assert_exit(run, EXIT_OK)
    require(rep, MMIO_PASSES + [MMIO_LINE], where)
    st = stats(run, "t")
    assert INJECTED_MIN <= st["inj"] <= INJECTED_MAX, \
        f"{where}: hypervisor injected {st['inj']} traps, want one per device probe " \
        f"({INJECTED_MIN}..{INJECTED_MAX})\n{run.out}"
    assert observed(rep, where) == (0, 0)
    assert (st["lp"], st["ss"]) == (0, 0), f"{where}: counters {st}\n{run.out}"
    return run, rep, where


@pytest.mark.quick
def test_cfi_gstage(guests_built):
    """debug=1: write-protect/dirty-chunk checks run (none skipped) and pass;
    shadow-stack accesses to devices get cause 7 and print nothing."""
    run, rep, where = run_vm(debug=True)
    assert not rep.kind("SKIP: "), f"{where}: skipped checks\n" + "\n".join(rep.lines)
    require(rep, WP_PASSES, where)
    pop = [m.group(1) for m in map(POPCHK_RE.match, rep.lines) if m]
    assert len(pop) == 1, f"{where}: no sspopchk outcome line\n" + "\n".join(rep.lines)
    print(f"{where}: sspopchk on a write-protected chunk: {pop[0]}")


@pytest.mark.quick
def test_cfi_gstage_no_debug(guests_built):
    """Without debug=1 the extension is absent (probe 0, calls -2); the device
    checks still run."""
    run, rep, where = run_vm(debug=False)
    require(rep, ABSENT_PASSES + [WP_SKIP], where)
    assert not any(l.startswith(T + "write-protect") for l in rep.lines), rep.lines


@pytest.mark.reference
def test_cfi_gstage_reference(guests_built):
    """Bare QEMU + OpenSBI: no debug extension (probe 0, calls -2); the device
    probes run and only report what QEMU did (INFO)."""
    rc, rep, out = run_reference(PAYLOAD, "debug_ext=0", smp=1)
    where = f"{PAYLOAD} (bare)"
    assert rc == 0, f"{where}: QEMU exit status {rc}\n{out}"
    check_report(rep, where)
    require(rep, ABSENT_PASSES + [WP_SKIP], where)
    line = [l for l in rep.lines if l.startswith("MMIO-SS-LINE: <")]
    assert line, f"{where}: no MMIO-SS-LINE\n{out}"
    infos = [l for l in rep.lines if l.startswith(f"INFO: {PAYLOAD}: bare QEMU: ")]
    assert len(infos) == len(MMIO_PROBES) + 1, f"{where}: device probe INFO lines\n{out}"
    print(f"{where}: {line[0]}")
    print("\n".join(infos))
