# SPDX-License-Identifier: MIT
"""The hypervisor's own CFI (docs/security.md, "The hypervisor's own CFI"):
the CFI build (make cfi, build/cfi/carapace.bin) runs with landing pads and
shadow stacks in HS-mode and says so; its debug hook (/chosen
carapace,selftest-cfi, the launcher's --selftest-cfi) breaks the
hypervisor's control flow the two ways a memory-safety bug would, and each
is caught: a software-check exception in HS-mode, reported with its pc, and
the host stopped (QEMU exits). A build without the hooks (the plain build,
make cfi-release) refuses the option and runs its VMs. And the CFI build
runs the CFI guest payloads as the plain one does.

The CFI build needs sid's gcc in the cached build root (make cfi says how
to get it); where it cannot be built the tests skip, which fails under CI."""

import os
import re
import subprocess

import pytest

from harness.paths import BUILD, CFI_HYP, PLAIN_HYP, ROOT
from harness.report import check_report
from harness.runs import EXIT_OK, assert_exit, run_carapace, vm_spec

pytestmark = pytest.mark.quick

RELEASE_HYP = BUILD / "cfi-release" / "carapace.bin"
# cfi_ss checks QEMU 10.0.2's Q7 unless told the CPU is conformant (test_cfi.py)
CFI_SS_ARGS = "q7=0" if os.environ.get("CARAPACE_CONFORMANT") == "1" else None
EXIT_QEMU_EARLY = 3     # carapace-run: QEMU exited before every VM was down
ON = "hypervisor CFI: landing pads on (locked), shadow stack on (locked)"
VIOLATION_RE = re.compile(r"carapace: PANIC: hypervisor CFI violation: (?P<what>.*) at pc "
                          r"0x(?P<pc>[0-9a-f]+) on hart \d+ \(software check, stval "
                          r"(?P<tval>\d+)\): host stopped$", re.M)
# what each hook breaks: (message, stval, the function the fault is in)
HOOKS = {"ret": ("shadow-stack mismatch", 3, "corrupt_return"),
         "call": ("indirect jump to a non-landing-pad target", 2, "lp_victim")}


def make_variant(target, image):
    """`make TARGET` (cached: rebuilt only when an input changed); @image, or
    a skip with make's reason (no sid root, say)."""
    r = subprocess.run(["make", "-s", target], cwd=ROOT, capture_output=True, text=True)
    if r.returncode or not image.is_file():
        pytest.skip(f"make {target} failed (the CFI build needs sid's gcc >= 15 in the "
                    f"cached build root):\n{r.stdout}{r.stderr}")
    return image


@pytest.fixture(scope="module")
def cfi_hyp():
    return make_variant("cfi", CFI_HYP)


@pytest.fixture(scope="module")
def release_hyp():
    return make_variant("cfi-release", RELEASE_HYP)


def symbols(image):
    """{name: (start, size)} of the ELF beside @image (the host's nm reads it)."""
    out = subprocess.run(["riscv64-unknown-elf-nm", "-S", str(image.with_suffix(".elf"))],
                         capture_output=True, text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4:
            syms[f[3]] = (int(f[0], 16), int(f[1], 16))
    return syms


def demo(bootargs="count=3 delay_us=1000"):
    return vm_spec("d", "demo", vcpus=1, bootargs=bootargs)


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_is_caught_and_stops_the_host(guests_built, cfi_hyp, hook):
    # the VM would print for a minute: the host must stop long before
    run = run_carapace([demo("count=600 delay_us=100000")], names=["d"], timeout=90,
                       extra=["--hyp", str(cfi_hyp), "--selftest-cfi", hook])
    what, tval, victim = HOOKS[hook]
    assert ON in run.out, run.out
    m = VIOLATION_RE.search(run.out)
    assert m, f"no CFI violation report\n{run.out}"
    assert (m.group("what"), int(m.group("tval"))) == (what, tval), run.out
    assert "NOT caught" not in run.out and "returned normally" not in run.out, run.out
    # QEMU exited (the hypervisor's SBI shutdown), the VM still up: not the timeout
    assert_exit(run, EXIT_QEMU_EARLY)
    assert "QEMU exited" in run.out and "timed out" not in run.out, run.out
    start, size = symbols(cfi_hyp)[victim]
    pc = int(m.group("pc"), 16)
    if hook == "call":
        assert pc == start + 4, f"pc {pc:#x}, want {victim}+4 ({start + 4:#x})"
    else:   # the sspopchk; QEMU 10.0.2 reports its block's start (Q3, docs/cfi.md)
        assert start <= pc < start + size, f"pc {pc:#x} not in {victim}\n{run.out}"


@pytest.mark.parametrize("build", ["plain", "cfi-release"])
def test_build_without_hooks_refuses_them(guests_built, request, build):
    image = PLAIN_HYP if build == "plain" else request.getfixturevalue("release_hyp")
    run = run_carapace([demo()], names=["d"], extra=["--hyp", str(image), "--selftest-cfi", "ret"])
    assert "carapace,selftest-cfi: refused: this build has no debug hooks" in run.out, run.out
    assert "CFI violation" not in run.out, run.out
    assert_exit(run, EXIT_OK)
    assert ("hypervisor CFI: plain build" if build == "plain" else ON) in run.out, run.out


@pytest.mark.parametrize("payload", ["cfi_lp", "cfi_ss", "cfi_fwft"])
def test_cfi_build_runs_cfi_guests(guests_built, cfi_hyp, payload):
    run = run_carapace([vm_spec("g", payload, vcpus=1,
                                bootargs=CFI_SS_ARGS if payload == "cfi_ss" else None)],
                       names=["g"],
                       extra=["--hyp", str(cfi_hyp)])
    assert ON in run.out, run.out
    assert_exit(run, EXIT_OK)
    check_report(run.guests["g"], payload)


def test_ctl_hello_says_which_build_runs(host_factory, cfi_hyp):
    h = host_factory([demo("count=100000 delay_us=100000")],
                          extra=["--hyp", str(cfi_hyp)])
    h.wait_for(lambda l: "[d]" in l, 60)
    reply, _ = h.ctl("hello")
    assert reply["hyp_cfi"] == {"build": "cfi", "landing_pads": True,
                                "landing_pads_locked": True, "shadow_stack": True,
                                "shadow_stack_locked": True, "debug_hooks": True}, reply
