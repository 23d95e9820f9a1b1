# SPDX-License-Identifier: MIT
"""The conformant tier's own checks (docs/cfi.md, "Conformant QEMU"): the QEMU in
CARAPACE_QEMU is the one scripts/qemu-conformant.sh built from Debian's qemu
source with exactly the patches of platform/qemu-virt/patches, so that the CFI
tests (marker `cfi`) that run next in the same session run on it.

A missing binary fails (it is never a skip): `make test-conformant` and
scripts/run-tests.sh build it first, from the cache when the key matches."""

import os
import subprocess
from pathlib import Path

import pytest

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
