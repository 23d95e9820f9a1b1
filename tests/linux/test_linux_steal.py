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

import pytest

from harness.linux import INITRAMFS, REF_TIMEOUT, build_initramfs, reference_linux, run_carapace
from harness.runs import run_to_end

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
def steal_initramfs(sta_kernel):
    """The tests/linux initramfs (its init has the steal case), for our guest kernel."""
    return build_initramfs(sta_kernel)


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


def steal_in_two_vms(kernel, smp):
    """Two busy one-vCPU VMs on @smp host harts, each kernel having found STA:
    the output and {vm: (steal ticks grown, busy ticks)}."""
    code, out, reps = run_carapace([spec("a", kernel), spec("b", kernel)], ["a", "b"], smp=smp)
    assert code == 0, f"launcher exit {code}\n{out}"
    steal = {}
    for vm, rep in reps.items():
        assert any(DETECTED in l for l in rep.lines), f"vm {vm}: kernel did not find STA\n{out}"
        cpus, spin, grown = steal_of(rep.lines, f"vm {vm}", out)
        steal[vm] = grown, cpus * spin * USER_HZ
    return out, steal


def test_reference_no_sta(sta_kernel, steal_initramfs):
    """Bare QEMU + OpenSBI 1.6: no STA, so no steal."""
    _, out = run_to_end(reference_linux(steal_initramfs, "steal carapace.spin=2", kernel=sta_kernel,
                                        mem="256M", smp=1), "steal", REF_TIMEOUT)
    lines = [l.rstrip("\r") for l in out.splitlines()]
    assert DETECTED not in out, out
    _, _, grown = steal_of(lines, "bare", out)
    assert grown == 0, f"steal grew by {grown} ticks on bare QEMU\n{out}"


def test_steal_grows_when_two_vms_share_a_hart(sta_kernel, steal_initramfs):
    out, steal = steal_in_two_vms(sta_kernel, smp=1)
    for vm, (grown, busy) in steal.items():
        assert grown >= busy // 4, \
            f"vm {vm}: steal grew {grown} of {busy} busy ticks (want >= 25%)\n{out}"
        assert grown <= busy, f"vm {vm}: steal {grown} > busy time {busy}\n{out}"


def test_steal_stays_near_zero_with_a_hart_each(sta_kernel, steal_initramfs):
    out, steal = steal_in_two_vms(sta_kernel, smp=2)
    for vm, (grown, busy) in steal.items():
        assert grown <= busy // 20, \
            f"vm {vm}: steal grew {grown} of {busy} busy ticks with a hart each (want <= 5%)\n{out}"
