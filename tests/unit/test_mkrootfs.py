# SPDX-License-Identifier: MIT
"""scripts/mkrootfs.sh overlay: a VM's qcow2 overlay over the current base
image is kept from one run to the next (its files persist), one over another
base is made anew, FRESH=1 renews it, and no base is an error. On small
stand-in images in a temporary cache; the base image build itself is tested
in tests/guest_kernel/test_rootfs.py."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parents[2]
MKROOTFS = ROOT / "scripts" / "mkrootfs.sh"
QEMU_IMG = os.environ.get("QEMU_IMG") or "qemu-img"


def qemu_img(*args):
    assert shutil.which(QEMU_IMG), f"{QEMU_IMG} missing (package qemu-utils: scripts/deps.sh host)"
    return subprocess.run([QEMU_IMG, *args], capture_output=True, text=True, check=True).stdout


def overlay(cache, out, fresh=False):
    env = {**os.environ, "CARAPACE_CACHE": str(cache)}
    env.pop("FRESH", None)
    if fresh:
        env["FRESH"] = "1"
    return subprocess.run([str(MKROOTFS), "overlay", str(out)], capture_output=True, text=True,
                          env=env, timeout=60)


def backing(path):
    return json.loads(qemu_img("info", "-U", "--output=json", str(path))).get("backing-filename")


def use_base(cache, key):
    """A stand-in base image CACHE/rootfs/KEY/base.qcow2, made current."""
    d = cache / "rootfs" / key
    d.mkdir(parents=True)
    qemu_img("create", "-q", "-f", "qcow2", str(d / "base.qcow2"), "16M")
    link = cache / "rootfs" / "base.qcow2"
    if link.is_symlink():
        link.unlink()
    link.symlink_to(f"{key}/base.qcow2")
    return d / "base.qcow2"


def test_overlay_kept_over_current_base_renewed_over_another(tmp_path):
    cache = tmp_path / "cache"
    out = tmp_path / "run" / "alpha.qcow2"
    first = use_base(cache, "aaaa")
    r = overlay(cache, out)
    assert r.returncode == 0, r.stderr
    assert backing(out) == str(first)
    assert "file format: qcow2" in qemu_img("info", "-U", str(out))

    # the VM wrote to its disk: a second run keeps the file
    qemu_img("resize", "-q", "-f", "qcow2", str(out), "32M")
    r = overlay(cache, out)
    assert r.returncode == 0 and "[rootfs] kept " in r.stderr, r.stderr
    assert "virtual size: 32 MiB" in qemu_img("info", "-U", str(out))

    r = overlay(cache, out, fresh=True)
    assert r.returncode == 0 and "[rootfs] made " in r.stderr, r.stderr
    assert "virtual size: 16 MiB" in qemu_img("info", "-U", str(out))

    # a new base: the old overlay would be garbage over it
    second = use_base(cache, "bbbb")
    r = overlay(cache, out)
    assert r.returncode == 0 and "not the current base" in r.stderr, r.stderr
    assert backing(out) == str(second)


def test_overlay_without_base_fails(tmp_path):
    assert shutil.which(QEMU_IMG), f"{QEMU_IMG} missing (package qemu-utils: scripts/deps.sh host)"
    out = tmp_path / "alpha.qcow2"
    r = overlay(tmp_path / "cache", out)
    assert r.returncode != 0
    assert "no base image" in r.stderr and "make rootfs" in r.stderr, r.stderr
    assert not out.exists()


def test_guest_programs_build_reproducibly(tmp_path):
    """The base image's cache key hashes the CFI test programs it holds
    (cache_key in scripts/mkrootfs.sh): two builds of the same sources must
    be byte-identical, or every fresh clone (CI's included) would build the
    image again. Each build here is a fresh make run into its own directory."""
    digests = []
    for n in (1, 2):
        b = tmp_path / f"b{n}"
        r = subprocess.run(["make", "--no-print-directory", f"B={b}", f"{b}/linux/cfitest",
                            f"{b}/guest-kernel/cfistatus"], cwd=ROOT, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, f"build {n} failed:\n{r.stdout}\n{r.stderr}"
        digests.append([(b / p).read_bytes() for p in ("linux/cfitest", "guest-kernel/cfistatus")])
    for name, first, second in zip(("cfitest", "cfistatus"), *digests):
        assert first == second, f"two builds of {name} differ: the rootfs cache key would too"
