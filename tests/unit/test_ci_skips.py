# SPDX-License-Identifier: MIT
"""tests/conftest.py under CI: with CI=true a skipped test (or a module skipped
at collection) fails the session, with the skip reason in the report; xfail is
still allowed. Without CI, skips are skips. Each case runs a tiny pytest
session in a temporary directory holding a copy of the repository's conftest."""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.quick

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"

SKIPPING = """\
    import pytest

    def test_passes():
        pass

    @pytest.mark.skipif(True, reason="artifact-X-is-missing")
    def test_skipif_marker():
        pass

    def test_skip_call():
        pytest.skip("artifact-Y-is-missing")

    @pytest.mark.xfail(reason="known bug", strict=True)
    def test_xfail():
        assert False
"""


def run_session(tmp_path, ci, files):
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.pop("CI", None)
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rfEsx", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_ci_skip_fails_with_reason(tmp_path):
    proc = run_session(tmp_path, "true", {"test_it.py": SKIPPING})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "artifact-X-is-missing" in out and "artifact-Y-is-missing" in out, out
    assert "skipped under CI" in out, out
    assert "1 passed" in out and "1 xfailed" in out, out
    assert " skipped" not in out.splitlines()[-1], out


def test_no_ci_skip_passes(tmp_path):
    proc = run_session(tmp_path, None, {"test_it.py": SKIPPING})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "1 passed, 2 skipped, 1 xfailed" in out.splitlines()[-1], out
    assert "artifact-X-is-missing" in out, out   # -rs lists the skips


def test_ci_other_values_do_not_count(tmp_path):
    proc = run_session(tmp_path, "false", {"test_it.py": SKIPPING})
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ci_collection_skip_fails(tmp_path):
    files = {
        "test_ok.py": "def test_ok():\n    pass\n",
        "test_mod.py": """\
            import pytest
            pytest.skip("module-needs-artifact-Z", allow_module_level=True)
        """,
    }
    proc = run_session(tmp_path, "true", files)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "module-needs-artifact-Z" in out and "skipped under CI" in out, out
    assert "1 passed" in out, out   # the rest of the session still ran

    proc = run_session(tmp_path, None, files)
    assert proc.returncode == 0, proc.stdout + proc.stderr
