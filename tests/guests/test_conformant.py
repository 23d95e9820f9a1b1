# SPDX-License-Identifier: MIT
"""The conformant tier's own checks (docs/cfi.md, "Conformant QEMU"): the QEMU in
CARAPACE_QEMU is the one scripts/qemu-conformant.sh built from Debian's qemu
source with exactly the patches of platform/qemu-virt/patches, so that the CFI
tests (marker `cfi`) that run next in the same session run on it.

A missing binary fails (it is never a skip): `make test-conformant` and
scripts/run-tests.sh build it first, from the cache when the key matches."""

import contextlib
import os
import subprocess
from pathlib import Path

import pytest

from test_snapshot_elp import SPEC, catch_pending_elp, check_restored

ROOT = Path(__file__).resolve().parents[2]
PATCHES = ROOT / "platform" / "qemu-virt" / "patches"

pytestmark = pytest.mark.conformant


def conformant_qemu():
    q = os.environ.get("CARAPACE_QEMU")
    assert q, "CARAPACE_QEMU is not set: run `make test-conformant` (or scripts/run-tests.sh conformant)"
    path = Path(q)
    assert path.is_file() and os.access(path, os.X_OK), \
        f"CARAPACE_QEMU={q} is not an executable file: run `make qemu-conformant`"
    return path


def test_conformant_qemu_is_the_patched_build():
    qemu = conformant_qemu()
    info = qemu.parent / "BUILDINFO"
    assert info.is_file(), f"{info} missing: {qemu} was not built by scripts/qemu-conformant.sh"
    listed = [l.strip() for l in info.read_text().splitlines() if l.startswith("  ")]
    ours = sorted(p.name for p in PATCHES.glob("*.patch"))
    assert ours, f"no patches in {PATCHES}"
    assert listed == ours, f"{qemu} was built with {listed}, the tree has {ours}"


def test_conformant_qemu_matches_the_installed_version():
    qemu = conformant_qemu()
    ours = subprocess.run([str(qemu), "--version"], capture_output=True, text=True, timeout=30)
    assert ours.returncode == 0, ours.stderr
    debian = subprocess.run(["qemu-system-riscv64", "--version"], capture_output=True,
                            text=True, timeout=30)
    assert debian.returncode == 0, debian.stderr
    # "QEMU emulator version 10.0.2 (Debian ...)": the upstream version must agree.
    version = lambda out: out.split("version", 1)[1].split()[0]  # noqa: E731
    assert version(ours.stdout) == version(debian.stdout), (ours.stdout, debian.stdout)


@contextlib.contextmanager
def qemu(binary):
    """carapace-run started inside uses @binary (None: Debian's QEMU 10.0.2)."""
    old = os.environ.get("CARAPACE_QEMU")
    if binary:
        os.environ["CARAPACE_QEMU"] = binary
    else:
        os.environ.pop("CARAPACE_QEMU", None)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("CARAPACE_QEMU", None)
        else:
            os.environ["CARAPACE_QEMU"] = old


@pytest.mark.parametrize("way", ["stock-to-conformant", "conformant-to-stock"])
def test_snapshot_pending_landing_pad_crosses_platforms(snap_host, tmp_path, way):
    """docs/cfi.md §7.4: a file keeps ELP where the spec does, whatever the
    CPU that wrote it does with SPELP. A snapshot caught between a jump and
    its target on QEMU 10.0.2 (which leaves the ELP of an exit in the guest's
    vsstatus.SPELP) restores on the conformant QEMU (which takes it from the
    trapped context's SPELP), and the other way round: the first act of the
    copy is the landing-pad fault."""
    conformant = os.environ.get("CARAPACE_QEMU")
    assert conformant, "CARAPACE_QEMU is not set: run `make test-conformant`"
    first, second = (None, conformant) if way == "stock-to-conformant" else (conformant, None)
    with qemu(first):
        h = snap_host([SPEC], extra=["--persist"])
        path = catch_pending_elp(h, tmp_path, live=False)
    h.kill()
    with qemu(second):
        h2 = snap_host([], extra=["--restore", str(path)])
    h2.wait_for(lambda l: l == "carapace: vm orig: shut down", 60)
    rep = check_restored(h2.guest("orig"), f"vm orig ({way})")
    assert not rep.kind("SNAPSHOT-READY"), rep.lines   # it did not start over
