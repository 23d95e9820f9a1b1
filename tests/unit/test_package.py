# SPDX-License-Identifier: MIT
"""The host tools as a Python package (docs/python-api.md): `pip install .`
gives the four commands and `import carapace` (offline: the build backend is
standard library only), and the Host API drives a hypervisor, here the
harness's fake one."""

import json
import os
import subprocess
import sys
import tarfile

import pytest

from carapace import FileError, Host, RemoteError, TransportError, UsageError
from harness.fakes import HELLO, FakeHypervisor, err, ok
from harness.paths import ROOT

pytestmark = pytest.mark.quick

COMMANDS = ("carapace-run", "carapace-ctl", "carapace-snap", "carapace-tls")


def pip_install(python, cwd):
    """The system's pip installs the tree into the environment of @python
    (pip's general option --python; --no-index: nothing is downloaded)."""
    return subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                           "--no-index", "--disable-pip-version-check", "-q", str(ROOT)],
                          capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A virtual environment without pip, the package installed into it by the
    system's pip (pip install --python VENV .)."""
    pytest.importorskip("pip")
    base = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base)], check=True,
                   timeout=120)
    python = base / "bin" / "python"
    r = pip_install(python, base)
    assert r.returncode == 0, r.stdout + r.stderr
    return base


def test_pip_install_gives_the_commands(venv):
    for command in COMMANDS:
        r = subprocess.run([str(venv / "bin" / command), "--help"], capture_output=True,
                           text=True, timeout=60, cwd=venv)
        assert r.returncode == 0, r.stderr
        assert f"usage: {command}" in r.stdout or command == "carapace-tls"
    r = subprocess.run([str(venv / "bin" / "carapace-ctl"), "--socket", str(venv / "no.sock"),
                        "list"], capture_output=True, text=True, timeout=60, cwd=venv)
    assert r.returncode == 2 and "no control socket" in r.stderr       # exit codes kept


def test_installed_package_imports_outside_the_tree(venv):
    """Away from the source tree, the snapshot reader parses the C headers
    the wheel packed (carapace/_c/), the same rules as the tree's."""
    code = ("import carapace, carapace.snapshot_legal as l, json;"
            "print(json.dumps([carapace.__file__, l.SOURCE_ROOT, l.LEGAL]))")
    r = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True,
                       text=True, timeout=60, cwd=venv, env={**os.environ, "PYTHONPATH": ""})
    assert r.returncode == 0, r.stderr
    where, root, legal = json.loads(r.stdout)
    assert where.startswith(str(venv)) and root.startswith(str(venv))
    from carapace.snapshot_legal import LEGAL
    assert legal == json.loads(json.dumps(LEGAL))


def test_sdist_holds_what_a_wheel_needs(tmp_path):
    import carapace_build   # tools/carapace_build.py: tools/ is on sys.path (tests/conftest.py)
    name = carapace_build.build_sdist(str(tmp_path))
    with tarfile.open(tmp_path / name) as tar:
        names = tar.getnames()
    base = name.removesuffix(".tar.gz")
    for member in ("pyproject.toml", "tools/carapace_build.py", "tools/carapace/host.py",
                   "include/abi/snapshot_records.h"):
        assert f"{base}/{member}" in names


# --- the Python API against the fake hypervisor ------------------------------------------


@pytest.fixture
def socks(tmp_path):
    return tmp_path / "ctl.sock", tmp_path / "stream.sock"


def test_host_queries_and_changes(socks):
    vms = [{"name": "alpha", "index": 0, "state": "running", "vcpus": 1}]

    def handler(request, hyp):
        cmd = request["cmd"]
        if cmd == "hello":
            return ok(request, **HELLO)
        if cmd == "list":
            return ok(request, vms=vms)
        if cmd == "pause":
            return ok(request, vm=request["vm"], state="paused")
        if cmd == "create":
            return ok(request, vm=request["name"], index=1)
        return err(request, "no-such-vm", f"no VM named {request.get('vm')}")
    hyp = FakeHypervisor(socks[0], socks[1], handler)
    try:
        h = Host(ctl_socket=socks[0], stream_socket=socks[1], timeout=5)
        assert h.hello()["protocol"] == 1
        assert h.list() == vms
        assert h.pause("alpha")["state"] == "paused"
        assert h.create("beta", "demo.bin", mem="32M", vcpus=2, bootargs="x=1")["index"] == 1
        with pytest.raises(RemoteError) as e:
            h.destroy("zz")
        assert e.value.code == "no-such-vm"
        with pytest.raises(UsageError):
            h.pause("BAD NAME")                    # checked: nothing sent
        with pytest.raises(UsageError):
            h.create("gamma", "demo.bin", mem="3M")
    finally:
        hyp.close()
    create = [r for r in hyp.requests if r["cmd"] == "create"][0]
    assert {k: create[k] for k in ("name", "kernel", "mem", "vcpus", "cfi", "bootargs")} == \
        {"name": "beta", "kernel": "demo.bin", "mem": 32 << 20, "vcpus": 2, "cfi": "trap",
         "bootargs": "x=1"}
    assert [r["cmd"] for r in hyp.requests] == ["hello", "list", "pause", "create", "destroy"]


def test_host_default_stream_socket_beside_the_control_socket(tmp_path, monkeypatch):
    monkeypatch.delenv("CARAPACE_STREAM_SOCKET", raising=False)
    assert Host(ctl_socket=tmp_path / "c1.sock").stream_socket == tmp_path / "c1.stream.sock"


def test_host_snapshot_writes_the_stream(socks, tmp_path):
    stream = b"S" * 10000

    def handler(request, hyp):
        if request["cmd"] == "hello":
            return ok(request, **HELLO)

        def answer(h):
            h.wait_stream().sendall(stream)
            h.reply(ok(request, vm=request["vm"], bytes=len(stream), pages=0))
        return answer
    hyp = FakeHypervisor(socks[0], socks[1], handler)
    try:
        out = tmp_path / "alpha.snap"
        reply = Host(socks[0], socks[1], timeout=5).snapshot("alpha", out, compress=False)
    finally:
        hyp.close()
    assert reply["bytes"] == len(stream) and out.read_bytes() == stream


def test_host_restore_refuses_a_bad_file_before_connecting(socks, tmp_path):
    bad = tmp_path / "bad.snap"
    bad.write_bytes(b"not a snapshot")
    with pytest.raises(FileError):
        Host(socks[0], socks[1]).restore(bad)       # no socket: nothing was tried
    with pytest.raises(TransportError):
        Host(socks[0], socks[1]).list()


def test_host_migrate_checks_its_target(socks):
    with pytest.raises(UsageError):
        Host(socks[0], socks[1]).migrate("alpha", "no-port-here", plain=True)


@pytest.mark.parametrize("limit", [0, 60001])
def test_host_migrate_checks_its_downtime_limit(socks, limit):
    with pytest.raises(UsageError, match="downtime_limit_ms"):
        Host(socks[0], socks[1]).migrate("alpha", "127.0.0.1:4444", plain=True,
                                         downtime_limit_ms=limit)
