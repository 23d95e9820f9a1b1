# SPDX-License-Identifier: MIT
"""SBI STA seen by Linux: /proc/stat's steal column.

Debian's 7.2 kernel (and trixie's 6.12) is built without CONFIG_PARAVIRT, so
it never probes STA; our guest kernel (guest-linux-patches/guest.config) has
it, so these tests boot that one (built by guest-linux-patches/build.sh, or
found in the cache). Two one-vCPU VMs keep their CPU busy for a few seconds
(init's `carapace.test=steal`): on one host hart each VM waits about half the
time, and steal must grow by at least a quarter of the busy time; on two host
harts each vCPU has a hart of its own, and steal must stay near zero. On bare
QEMU + OpenSBI there is no STA: the kernel says nothing about it and steal
stays 0.
"""

import re
import subprocess

import pytest

from harness.linux import INITRAMFS, REF_TIMEOUT, cpu_with_cfi, run_carapace
from harness.paths import CACHE, FIRMWARE, HYP, LAUNCHER, ROOT

pytestmark = pytest.mark.linux

SPIN_S = 4
USER_HZ = 100           # /proc/stat's unit
STEAL_RE = re.compile(r"init: steal: cpus (\d+) spin (\d+) s, steal ticks before (\d+) after (\d+)")
DETECTED = "riscv-pv: SBI STA extension detected"


@pytest.fixture(scope="session")
def sta_kernel(guest_kernel):
    """Our guest kernel (CONFIG_PARAVIRT: it uses STA); building it is part of the test."""
    config = guest_kernel.parent / "config"
    assert "CONFIG_PARAVIRT=y" in config.read_text().splitlines(), \
        f"{config}: the guest kernel lost CONFIG_PARAVIRT, it would not use STA"
    return str(guest_kernel)


@pytest.fixture(scope="session")
def steal_initramfs():
    """The tests/linux initramfs (its init has the steal case)."""
    if not FIRMWARE.is_file():
        pytest.skip(f"OpenSBI firmware not found at {FIRMWARE}; run `make deps`")
    r = subprocess.run(["make", "-s", "-f", "tests/linux/linux.mk", "B=build",
                        f"CACHE={CACHE}", "linux-initramfs"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, f"building the initramfs failed:\n{r.stdout}\n{r.stderr}"
    return INITRAMFS


def steal_of(lines, where, out):
    """(cpus, spin seconds, steal ticks grown) from init's steal line."""
    for line in lines:
        m = STEAL_RE.search(line)
        if m:
            cpus, spin, before, after = map(int, m.groups())
            return cpus, spin, after - before
    pytest.fail(f"{where}: no steal line\n{out}")


def spec(name, kernel):
    return (f"name={name},kernel={kernel},initrd={INITRAMFS},mem=128M,vcpus=1,"
            f"bootargs=console=ttyS0 carapace.test=steal carapace.spin={SPIN_S}")


def run_two(kernel, smp):
    code, out, reps = run_carapace([spec("a", kernel), spec("b", kernel)], ["a", "b"], smp=smp)
    assert code == 0, f"launcher exit {code}\n{out}"
    return out, {n: r.lines for n, r in reps.items()}


def test_reference_no_sta(sta_kernel, steal_initramfs):
    """Bare QEMU + OpenSBI 1.6: no STA, so no steal."""
    cmd = ["qemu-system-riscv64", "-machine", "virt", "-cpu", cpu_with_cfi(), "-smp", "1",
           "-m", "256M", "-nographic", "-bios", str(FIRMWARE), "-kernel", str(sta_kernel),
           "-initrd", str(steal_initramfs), "-append",
           "console=ttyS0 carapace.test=steal carapace.spin=2"]
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=REF_TIMEOUT, cwd=ROOT)
    out = r.stdout.decode(errors="replace")
    lines = [l.rstrip("\r") for l in out.splitlines()]
    assert DETECTED not in out, out
    _, _, grown = steal_of(lines, "bare", out)
    assert grown == 0, f"steal grew by {grown} ticks on bare QEMU\n{out}"


def test_steal_grows_when_two_vms_share_a_hart(sta_kernel, steal_initramfs):
    if not HYP.is_file() or not LAUNCHER.is_file():
        pytest.skip("build/carapace.bin or the launcher not there yet")
    out, lines = run_two(sta_kernel, smp=1)
    for vm in "ab":
        assert any(DETECTED in l for l in lines[vm]), f"vm {vm}: kernel did not find STA\n{out}"
        cpus, spin, grown = steal_of(lines[vm], f"vm {vm}", out)
        busy = cpus * spin * USER_HZ
        assert grown >= busy // 4, \
            f"vm {vm}: steal grew {grown} of {busy} busy ticks (want >= 25%)\n{out}"
        assert grown <= busy, f"vm {vm}: steal {grown} > busy time {busy}\n{out}"


def test_steal_stays_near_zero_with_a_hart_each(sta_kernel, steal_initramfs):
    if not HYP.is_file() or not LAUNCHER.is_file():
        pytest.skip("build/carapace.bin or the launcher not there yet")
    out, lines = run_two(sta_kernel, smp=2)
    for vm in "ab":
        assert any(DETECTED in l for l in lines[vm]), f"vm {vm}: kernel did not find STA\n{out}"
        cpus, spin, grown = steal_of(lines[vm], f"vm {vm}", out)
        busy = cpus * spin * USER_HZ
        assert grown <= busy // 20, \
            f"vm {vm}: steal grew {grown} of {busy} busy ticks with a hart each (want <= 5%)\n{out}"
