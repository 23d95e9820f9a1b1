# SPDX-License-Identifier: MIT
"""Shared pytest setup: the markers the test suites use, registered so that
`-m quick` and friends select them without "unknown marker" warnings; under
CI (CI=true), no silent skips: a test that skips (missing artifacts, tools,
firmware) fails with the skip reason, and a module skipped at collection
fails the session (xfail stays allowed); and the migration credentials every
migration test uses (the tls_creds fixture); our guest kernel, which the
Linux tier and tests/guest_kernel both boot (the guest_kernel fixture)."""

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

# The one place tests/ edits sys.path: the harness package (tests/harness) and
# the tools' package (tools/carapace) import from the source tree, uninstalled.
TESTS = Path(__file__).resolve().parent
for _path in (TESTS.parent / "tools", TESTS):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

# The harness' asserts explain themselves as a test module's do.
pytest.register_assert_rewrite("harness")

TLS_TOOL = TESTS.parent / "tools" / "carapace-tls"

MARKERS = {
    "quick": "runs Carapace on QEMU with small guests (minutes)",
    "reference": "runs a guest directly on QEMU + OpenSBI (no Carapace)",
    "linux": "boots Linux guests under Carapace",
    "slow": "long-running runs",
    "soak": "make soak only (guest fuzzer, Linux soak): never in make test",
    "cfi": "the CFI guest tests (tests/guests/test_cfi*.py, test_snapshot_elp.py): "
           "the conformant tier re-runs them on CARAPACE_QEMU",
    "conformant": "checks the conformant QEMU of CARAPACE_QEMU (make test-conformant)",
}

# Modules whose tests carry the `cfi` marker (the conformant tier's selection).
CFI_MODULES = {"test_cfi.py", "test_cfi_gstage.py", "test_snapshot_elp.py", "test_hyp_cfi.py",
               "test_hyp_wx.py"}

# Known differences on the conformant QEMU (CARAPACE_CONFORMANT=1, set by
# scripts/run-tests.sh conformant): the payload or the test still expects a
# QEMU 10.0.2 quirk that platform/qemu-virt/patches fixes (docs/cfi.md,
# "Conformant QEMU"). strict: a test that passes there fails the run, so the
# entry goes once the expectation is fixed. nodeid -> (reason, strict)
CONFORMANT_XFAIL = {}

CI_SKIP = "skipped under CI (CI=true), which counts as a failure"


def _ci():
    return os.environ.get("CI") == "true"


def _skip_reason(report):
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # (path, line, reason)
        path, line, reason = longrepr
        return f"{reason} ({path}:{line})"
    return str(longrepr)


class _SkipFailure(str):
    """A failure text that also shows in the short test summary (-rfE): pytest
    takes that line from longrepr.reprcrash.message."""

    @property
    def reprcrash(self):
        return self

    @property
    def message(self):
        return str(self)


_collect_skips = []  # modules skipped at collection under CI


def pytest_configure(config):
    for name, help_text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {help_text}")
    _collect_skips.clear()


def pytest_collection_modifyitems(config, items):
    conformant = os.environ.get("CARAPACE_CONFORMANT") == "1"
    for item in items:
        if item.path.name in CFI_MODULES:
            item.add_marker(pytest.mark.cfi)
        if conformant and item.nodeid in CONFORMANT_XFAIL:
            reason, strict = CONFORMANT_XFAIL[item.nodeid]
            item.add_marker(pytest.mark.xfail(reason=f"conformant QEMU: {reason}", strict=strict))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not _ci() or not report.skipped or hasattr(report, "wasxfail"):
        return
    report.outcome = "failed"
    report.longrepr = _SkipFailure(f"{CI_SKIP}: {_skip_reason(report)}")


def pytest_collectreport(report):
    # Failing a collect report would stop the whole run (collection error);
    # record the skip and fail the session at the end instead.
    if _ci() and report.skipped:
        _collect_skips.append(f"{report.nodeid}: {_skip_reason(report)}")


def pytest_sessionfinish(session, exitstatus):
    if _collect_skips and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if _collect_skips:
        terminalreporter.section("skipped at collection under CI", sep="=", red=True)
        for line in _collect_skips:
            terminalreporter.write_line(f"FAILED {line}: {CI_SKIP}")


@dataclasses.dataclass
class TlsCreds:
    """Migration credentials made by tools/carapace-tls init (docs/user-guide.md):
    @main, one CA's set for localhost (127.0.0.1, ::1; ca-key.pem included);
    @second, another host of the same CA (hostb.test, 127.0.0.1, no CA key);
    @other, a set of another CA, which the deployment of @main must refuse."""
    main: Path
    second: Path
    other: Path


@pytest.fixture(scope="session")
def tls_creds(tmp_path_factory):
    base = tmp_path_factory.mktemp("tls")

    def init(name, *args):
        r = subprocess.run([sys.executable, str(TLS_TOOL), "init", str(base / name), *args],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, f"carapace-tls init {name}: {r.stdout}{r.stderr}"
        return base / name
    main = init("main")
    return TlsCreds(main, init("second", "--name", "hostb.test", "--ip", "127.0.0.1",
                               "--ca", str(main)), init("other"))


@pytest.fixture(scope="session")
def guest_kernel():
    """Build (or find cached) our Image; the build failing is a failure.
    (harness is imported here, not at the top: tests/unit/test_ci_skips.py
    runs a copy of this file where there is no harness.)"""
    from harness.linux import build_guest_kernel
    return build_guest_kernel()
