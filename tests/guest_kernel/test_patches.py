# SPDX-License-Identifier: MIT
"""guest-linux-patches/: the series applies, in order, to Debian's
linux-source-7.2 and every patch is `checkpatch.pl --strict` clean
(guest-linux-patches/build.sh check). Host only: no kernel build, no QEMU.
The same check on broken copies of the directory must fail, so this test
can fail."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parents[2]
PATCHES = ROOT / "guest-linux-patches"
BUILD = PATCHES / "build.sh"
CHECK_TIMEOUT = 600     # a cold check extracts the kernel source (~20 s)


def check(patches_dir=None):
    env = dict(os.environ)
    if patches_dir is not None:
        env["GUEST_PATCHES_DIR"] = str(patches_dir)
    r = subprocess.run([str(BUILD), "check"], cwd=ROOT, env=env, text=True,
                       capture_output=True, timeout=CHECK_TIMEOUT)
    return r.returncode, r.stdout + r.stderr


def series():
    return [l.split("#")[0].strip() for l in (PATCHES / "series").read_text().splitlines()
            if l.split("#")[0].strip()]


def copy(tmp_path):
    d = tmp_path / "patches"
    shutil.copytree(PATCHES, d, ignore=shutil.ignore_patterns("build.sh"))
    return d


def test_series_applies_and_is_checkpatch_clean():
    code, out = check()
    assert code == 0, out
    assert f"check: {len(series())} patches apply" in out, out
    assert "checkpatch --strict clean" in out, out


def test_series_lists_the_required_patches():
    names = series()
    assert len(names) >= 2, names
    joined = " ".join(names)
    assert "proc-pid" in joined, names       # /proc/<pid>/status lines
    assert "why-user-CFI-is-off" in joined, names
    cover = (PATCHES / "0000-cover-letter.patch").read_text()
    for n in names:
        subject = (PATCHES / n).read_text().split("Subject: ", 1)[1].split("\n")[0]
        title = subject.split("] ", 1)[1]
        assert title in cover, f"cover letter does not explain {title!r}"


def test_check_fails_on_a_patch_that_no_longer_applies(tmp_path):
    d = copy(tmp_path)
    p = d / series()[0]
    text = p.read_text()
    # change a context line of the first hunk: the patch must be refused
    assert "\n #include <linux/prctl.h>\n" in text
    p.write_text(text.replace("\n #include <linux/prctl.h>\n", "\n #include <linux/prctl2.h>\n", 1))
    code, out = check(d)
    assert code != 0, out
    assert "does not apply" in out, out


def test_check_fails_on_a_style_error(tmp_path):
    d = copy(tmp_path)
    p = d / series()[0]
    text = p.read_text()
    # an added line with trailing whitespace and a space indent
    old = "+\tseq_puts(m, \"riscv_Thread_features:\\t\");\n"
    assert old in text
    p.write_text(text.replace(old, "+        seq_puts(m, \"riscv_Thread_features:\\t\"); \n", 1))
    code, out = check(d)
    assert code != 0, out
    assert "checkpatch --strict complains" in out, out


def test_check_fails_on_a_patch_missing_from_series(tmp_path):
    d = copy(tmp_path)
    (d / "series").write_text("\n".join(series()[:-1]) + "\n")
    code, out = check(d)
    assert code != 0, out
    assert "not listed in series" in out, out
