# SPDX-License-Identifier: MIT
"""tools/carapace/hyp_image.py: the CFI build boots only where the CPU has
Zimop; elsewhere the launcher boots the plain build and says so."""

import pytest

from carapace import hyp_image
from carapace.launcher import DEFAULT_CPU

pytestmark = pytest.mark.quick

NO_CFI_CPU = "rv64,h=true,sstc=true,svadu=true"     # what tests use for a CPU without CFI


@pytest.fixture
def images(tmp_path, monkeypatch):
    cfi, plain = tmp_path / "cfi.bin", tmp_path / "plain.bin"
    cfi.write_bytes(hyp_image.LPAD_0 + b"\x73\x10\x40\x10")
    plain.write_bytes(b"\x73\x10\x40\x10" + hyp_image.LPAD_0)
    monkeypatch.setattr(hyp_image, "PLAIN_IMAGE", plain)
    return cfi, plain


def test_the_cfi_build_is_told_by_its_first_word(images):
    cfi, plain = images
    assert hyp_image.is_cfi_build(cfi) and not hyp_image.is_cfi_build(plain)


@pytest.mark.parametrize("cpu, has", [(DEFAULT_CPU, True), ("max", True), ("max,zimop=false", False),
                                      (NO_CFI_CPU, False), ("rv64,zimop=true", True)])
def test_zimop_from_the_cpu_string(cpu, has):
    assert hyp_image.cpu_has_zimop(cpu) == has


def test_a_cpu_with_zimop_boots_what_it_was_given(images):
    cfi, plain = images
    assert hyp_image.image_for_cpu(cfi, DEFAULT_CPU) == (cfi, None)
    assert hyp_image.image_for_cpu(plain, NO_CFI_CPU) == (plain, None)


def test_a_cpu_without_zimop_boots_the_plain_build_and_says_so(images):
    cfi, plain = images
    image, notice = hyp_image.image_for_cpu(cfi, NO_CFI_CPU)
    assert image == plain and "no Zimop" in notice and str(plain) in notice


def test_no_plain_build_is_a_clear_error(images, tmp_path, monkeypatch):
    cfi, _ = images
    monkeypatch.setattr(hyp_image, "PLAIN_IMAGE", tmp_path / "missing.bin")
    with pytest.raises(FileNotFoundError, match="no Zimop.*`make`"):
        hyp_image.image_for_cpu(cfi, NO_CFI_CPU)
