# SPDX-License-Identifier: MIT
"""Tests for tools/carapace-ctl against a fake hypervisor: a thread serving a
UNIX socket with canned replies.  They check the exact requests (protocol
version 1, docs/management.md), the output for people and for scripts, every
exit status, and argument checking."""

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from carapace.cli.ctl import main
from carapace.client import Client, build_request
from carapace.errors import UsageError
from carapace.paths import default_ctl_socket
from harness.fakes import FakeHypervisor

pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parents[2]
CTL = ROOT / "tools" / "carapace-ctl"
MiB = 1 << 20
BIG = (1 << 64) - 2            # more than a double can hold exactly


# --- the fake hypervisor -----------------------------------------------------------

CANNED = {
    "hello": {"protocol": 1, "hypervisor": "carapace", "vm_max": 8, "harts": 2,
              "commands": ["hello", "list", "images", "stats", "cfi", "pause", "resume",
                           "destroy", "create"]},
    "list": {"vms": [
        {"name": "alpha", "index": 0, "state": "running", "vcpus": 2, "mem": 256 * MiB,
         "cfi": "trap", "boots": 1, "failed": False},
        {"name": "beta", "index": 1, "state": "paused", "vcpus": 1, "mem": 64 * MiB,
         "cfi": "strict", "boots": 3, "failed": True}]},
    "images": {"images": [{"name": "alpha.kernel", "size": 5000},
                          {"name": "web", "size": 32 * MiB}]},
    "stats": {"vms": [{"name": "alpha", "exits": BIG, "sbi": 61, "guest_page_faults": 7,
                       "virtual_insn": 3, "host_irq": 120, "sw_check": 2, "mmio": 40,
                       "wfi": 9, "injected": 1}],
              "host": {"free_mem": 300 * MiB}},
    "cfi": {"vm": "alpha", "policy": "trap", "landing_pads": True, "shadow_stacks": True,
            "vcpus": [
                {"id": 0, "hsm": "started", "ss_enabled": True, "ss_locked": True,
                 "ssp": 0x80FFF000, "lp_enabled": True, "lp_locked": False, "elp": 1,
                 "senvcfg": 0x1C, "violations_lp": 1, "violations_ss": 2,
                 "last_pc": BIG, "last_tval": 0x1234, "last_from": "VU"},
                {"id": 1, "hsm": "stopped", "ss_enabled": False, "ss_locked": False,
                 "ssp": 0, "lp_enabled": False, "lp_locked": False, "elp": 0,
                 "senvcfg": 0, "violations_lp": 0, "violations_ss": 0,
                 "last_pc": 0, "last_tval": 0, "last_from": None}]},
    "pause": {"vm": "alpha", "state": "paused"},
    "resume": {"vm": "alpha", "state": "running"},
    "destroy": {"vm": "alpha", "freed": 256 * MiB},
    "create": {"vm": "gamma", "index": 2},
}


def canned(request):
    """The reply a well-behaved hypervisor would give (request: parsed JSON)."""
    return {"v": 1, "id": request.get("id"), "ok": True, **CANNED[request["cmd"]]}


def error(code, text):
    return lambda request: {"v": 1, "id": request.get("id"), "ok": False, "code": code,
                            "error": text}


def FakeHyp(path, handler=canned):
    """The harness's fake hypervisor with a one-argument @handler(request) whose
    callable answers take the connection and end it (as a client that is
    answered, then dropped)."""
    def answer(request, hyp):
        reply = handler(request)
        if callable(reply):
            return lambda h: (reply(h.conn), h.hang_up())
        return reply
    return FakeHypervisor(path, None, answer)


@pytest.fixture
def sock_path(tmp_path):
    return tmp_path / "ctl.sock"


@pytest.fixture
def hyp(sock_path):
    server = FakeHyp(sock_path)
    yield server
    server.close()


@pytest.fixture
def serve(sock_path):
    """serve(handler) starts a FakeHyp with that handler."""
    servers = []

    def start(handler):
        servers.append(FakeHyp(sock_path, handler))
        return servers[-1]
    yield start
    for server in servers:
        server.close()


def run(sock_path, *argv):
    return main(["--socket", str(sock_path), *argv])


# --- requests: exactly as specified --------------------------------------------------


@pytest.mark.parametrize("argv, want", [
    (["hello"], {"cmd": "hello"}),
    (["list"], {"cmd": "list"}),
    (["images"], {"cmd": "images"}),
    (["stats"], {"cmd": "stats"}),
    (["stats", "alpha"], {"cmd": "stats", "vm": "alpha"}),
    (["cfi", "alpha"], {"cmd": "cfi", "vm": "alpha"}),
    (["pause", "alpha"], {"cmd": "pause", "vm": "alpha"}),
    (["resume", "alpha"], {"cmd": "resume", "vm": "alpha"}),
    (["destroy", "alpha"], {"cmd": "destroy", "vm": "alpha"}),
    (["create", "gamma", "--kernel", "alpha.kernel"],
     {"cmd": "create", "name": "gamma", "kernel": "alpha.kernel", "mem": 64 * MiB,
      "vcpus": 1, "cfi": "trap"}),
    (["create", "gamma", "--kernel", "web", "--initrd", "web-rd.cpio", "--mem", "1G",
      "--vcpus", "8", "--cfi", "strict", "--bootargs", 'console=ttyS0 x="ü"'],
     {"cmd": "create", "name": "gamma", "kernel": "web", "initrd": "web-rd.cpio",
      "mem": 1 << 30, "vcpus": 8, "cfi": "strict", "bootargs": 'console=ttyS0 x="ü"'}),
    (["create", "gamma", "--kernel", "web", "--irqchip", "aia"],
     {"cmd": "create", "name": "gamma", "kernel": "web", "mem": 64 * MiB, "vcpus": 1,
      "cfi": "trap", "irqchip": "aia"}),
])
def test_request_lines(hyp, sock_path, capsys, argv, want):
    assert run(sock_path, *argv) == 0
    (line,) = hyp.lines
    request = json.loads(line)
    request_id = request["id"]
    assert isinstance(request_id, int) and 0 <= request_id < 1 << 53
    assert request == {"v": 1, "id": request_id, **want}
    assert list(request)[:3] == ["v", "id", "cmd"]        # v, id, cmd first
    assert list(request)[3:] == list(want)[1:]             # arguments in the documented order
    # compact, one line, UTF-8 (not \u escapes)
    assert line == json.dumps(request, separators=(",", ":"), ensure_ascii=False).encode()
    assert b"\n" not in line and len(line) < 4096


def test_one_connection_many_requests_ids_increase(hyp, sock_path):
    with Client(sock_path, timeout=5) as client:
        assert client.request("list")["vms"][0]["name"] == "alpha"
        assert client.request("pause", {"vm": "alpha"})["state"] == "paused"
    first, second = hyp.requests
    assert second["id"] == first["id"] + 1
    assert hyp.connections == 1


def test_ids_differ_between_clients(hyp, sock_path):
    """A reply left over from an earlier client must not match a new request."""
    for _ in range(4):
        with Client(sock_path, timeout=5) as client:
            client.request("hello")
    ids = {r["id"] for r in hyp.requests}
    assert len(ids) == 4


def test_build_request_leaves_out_none_and_limits_length():
    line = build_request("create", 5, {"name": "a", "initrd": None, "mem": 1})
    assert line == b'{"v":1,"id":5,"cmd":"create","name":"a","mem":1}\n'
    with pytest.raises(UsageError, match="at most 4096"):
        build_request("create", 5, {"bootargs": "x" * 4096})


# --- output -----------------------------------------------------------------------


def test_hello_human(hyp, sock_path, capsys):
    assert run(sock_path, "hello") == 0
    out = capsys.readouterr().out
    assert out.startswith("carapace hypervisor, protocol 1, 2 harts, at most 8 VMs\n")
    assert "commands: hello list images stats cfi pause resume destroy create" in out


HYP_CFI_CASES = [
    (None, "unknown (an older hypervisor)"),
    ({"build": "plain"}, "plain build"),
    ({"build": "cfi", "landing_pads": True, "landing_pads_locked": True, "shadow_stack": True,
      "shadow_stack_locked": True, "debug_hooks": False},
     "landing pads on (locked), shadow stack on (locked)"),
    ({"build": "cfi", "landing_pads": True, "landing_pads_locked": False,
      "shadow_stack": False, "shadow_stack_locked": False, "debug_hooks": True},
     "landing pads on (not locked), shadow stack OFF, debug hooks built in"),
]


@pytest.mark.parametrize("hyp_cfi,text", HYP_CFI_CASES)
def test_hello_says_which_build_runs(serve, sock_path, capsys, hyp_cfi, text):
    extra = {} if hyp_cfi is None else {"hyp_cfi": hyp_cfi}
    serve(lambda r: {**canned(r), **extra})
    assert run(sock_path, "hello") == 0
    assert f"\nhypervisor CFI: {text}\n" in capsys.readouterr().out


def test_hello_shows_vmids_when_given(serve, sock_path, capsys):
    serve(lambda r: {**canned(r), "vmids": 255})
    assert run(sock_path, "hello") == 0
    assert "at most 8 VMs, 255 VMIDs\n" in capsys.readouterr().out


def test_list_human_table(hyp, sock_path, capsys):
    assert run(sock_path, "list") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["NAME", "INDEX", "STATE", "VCPUS", "MEM", "CFI", "BOOTS",
                                "FAILED"]
    assert lines[1].split() == ["alpha", "0", "running", "2", "256M", "trap", "1", "no"]
    assert lines[2].split() == ["beta", "1", "paused", "1", "64M", "strict", "3", "yes"]
    assert lines[1].index("running") == lines[0].index("STATE")     # aligned columns


def test_list_empty(serve, sock_path, capsys):
    serve(lambda r: {"v": 1, "id": r["id"], "ok": True, "vms": []})
    assert run(sock_path, "list") == 0
    assert capsys.readouterr().out == "no VMs\n"


def test_images_human(hyp, sock_path, capsys):
    assert run(sock_path, "images") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["NAME", "BYTES", "SIZE"]
    assert lines[1].split() == ["alpha.kernel", "5000", "4.9K"]
    assert lines[2].split() == ["web", str(32 * MiB), "32M"]


def test_stats_human(hyp, sock_path, capsys):
    assert run(sock_path, "stats") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["NAME", "EXITS", "SBI", "PAGE-FAULTS", "VIRT-INSN",
                                "HOST-IRQ", "SW-CHECK", "MMIO", "WFI", "INJECTED"]
    assert lines[1].split() == ["alpha", str(BIG), "61", "7", "3", "120", "2", "40", "9", "1"]
    assert lines[2] == f"host: 300M free ({300 * MiB} bytes)"


def test_cfi_in_words(hyp, sock_path, capsys):
    assert run(sock_path, "cfi", "alpha") == 0
    head, v0, v1 = capsys.readouterr().out.splitlines()
    assert head == "vm alpha: policy trap; may use landing pads: yes, shadow stacks: yes"
    assert v0 == ("vcpu 0 (started): shadow stack on (locked), ssp=0x80fff000, "
                  "landing pads on, ELP=expected, senvcfg=0x1c, violations: 1 landing pad, "
                  f"2 shadow stack; last at pc {BIG:#x}, tval 0x1234, from VU")
    assert v1 == ("vcpu 1 (stopped): shadow stack off, landing pads off, ELP=none, "
                  "senvcfg=0x0, violations: none")


@pytest.mark.parametrize("argv, text", [
    (["pause", "alpha"], "vm alpha: paused\n"),
    (["resume", "alpha"], "vm alpha: running\n"),
    (["destroy", "alpha"], "vm alpha: destroyed, 256M freed\n"),
    (["create", "gamma", "--kernel", "web"], "vm gamma: created, index 2\n"),
])
def test_lifecycle_human(hyp, sock_path, capsys, argv, text):
    assert run(sock_path, *argv) == 0
    assert capsys.readouterr().out == text


@pytest.mark.parametrize("command", ["hello", "list", "images", "stats", "cfi", "pause",
                                     "resume", "destroy", "create"])
def test_json_output_is_the_reply(hyp, sock_path, capsys, command):
    args = {"stats": [], "create": ["gamma", "--kernel", "web"]}.get(command, ["alpha"])
    if command in ("hello", "list", "images"):
        args = []
    assert run(sock_path, "--json", command, *args) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    reply = json.loads(out)
    assert reply == {"v": 1, "id": hyp.requests[0]["id"], "ok": True, **CANNED[command]}


def test_json_keeps_64_bit_integers(hyp, sock_path, capsys):
    assert run(sock_path, "--json", "stats") == 0
    out = capsys.readouterr().out
    assert f'"exits":{BIG}' in out


# --- exit statuses -------------------------------------------------------------------


def test_error_reply_exits_1(serve, sock_path, capsys):
    serve(error("bad-state", "vm alpha is not running"))
    assert run(sock_path, "resume", "alpha") == 1
    captured = capsys.readouterr()
    assert captured.err == "carapace-ctl: bad-state: vm alpha is not running\n"
    assert captured.out == ""


def test_error_reply_with_json_prints_it_too(serve, sock_path, capsys):
    serve(error("no-such-vm", "no VM named zz"))
    assert run(sock_path, "--json", "destroy", "zz") == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["code"] == "no-such-vm"
    assert captured.err == "carapace-ctl: no-such-vm: no VM named zz\n"


@pytest.mark.parametrize("code", ["bad-request", "version", "unknown-command", "no-such-vm",
                                  "bad-state", "exists", "no-memory", "invalid", "busy",
                                  "internal"])
def test_every_error_code_exits_1(serve, sock_path, capsys, code):
    serve(error(code, "because"))
    assert run(sock_path, "list") == 1
    assert capsys.readouterr().err == f"carapace-ctl: {code}: because\n"


def test_error_with_null_id_is_the_hypervisors_answer(serve, sock_path, capsys):
    """id null: the hypervisor could not read the request; still its answer.
    (The first id-null error on a connection is taken for the answer to a
    fragment a departed client left, which the leading newline ended.)"""
    err = (b'{"v":1,"id":null,"ok":false,"code":"bad-request","error":"fragment"}\n'
           b'{"v":1,"id":null,"ok":false,"code":"bad-request","error":"malformed JSON"}\n')
    serve(lambda r: err)
    assert run(sock_path, "list") == 1
    assert "carapace-ctl: bad-request: malformed JSON" in capsys.readouterr().err


@pytest.mark.parametrize("reply_id", [None, 0, "x", -1])
def test_id_mismatch_exits_2(serve, sock_path, capsys, reply_id):
    serve(lambda r: {"v": 1, "id": reply_id if reply_id != -1 else r["id"] + 1, "ok": True,
                     "vms": []})
    assert run(sock_path, "list") == 2
    assert "does not match request id" in capsys.readouterr().err


def test_ok_reply_without_our_id_exits_2(serve, sock_path, capsys):
    serve(lambda r: {"v": 1, "ok": True, "vms": []})
    assert run(sock_path, "list") == 2
    assert "does not match" in capsys.readouterr().err


@pytest.mark.parametrize("reply, message", [
    (b"not json\n", "malformed reply"),
    (b"[1,2]\n", "not a JSON object"),
    (b'{"v":2,"id":null,"ok":true}\n', "protocol version 2"),
    (b'{"v":1,"id":null}\n', 'no boolean "ok"'),
    (b"\xff\xfe\n", "malformed reply"),
])
def test_malformed_replies_exit_2(serve, sock_path, capsys, reply, message):
    serve(lambda r: reply)
    assert run(sock_path, "list") == 2
    assert message in capsys.readouterr().err


def test_timeout_exits_2(serve, sock_path, capsys):
    server = serve(lambda r: None)              # reads, never answers
    start = time.monotonic()
    assert run(sock_path, "--timeout", "0.3", "list") == 2
    assert time.monotonic() - start < 5
    err = capsys.readouterr().err
    assert "no reply within 0.3 s" in err and "one client at a time" in err
    assert len(server.lines) == 1


def test_slow_reply_within_timeout(serve, sock_path, capsys):
    def slow(request):
        time.sleep(0.3)
        return canned(request)
    serve(slow)
    assert run(sock_path, "--timeout", "5", "pause", "alpha") == 0
    assert capsys.readouterr().out == "vm alpha: paused\n"


def test_reply_in_pieces(serve, sock_path, capsys):
    def pieces(request):
        def send(conn):
            data = json.dumps(canned(request)).encode() + b"\n"
            for i in range(0, len(data), 7):
                conn.sendall(data[i:i + 7])
                time.sleep(0.01)
        return send
    serve(pieces)
    assert run(sock_path, "list") == 0
    assert "beta" in capsys.readouterr().out


def test_missing_socket_exits_2(tmp_path, capsys):
    assert run(tmp_path / "nope.sock", "list") == 2
    err = capsys.readouterr().err
    assert f"no control socket at {tmp_path / 'nope.sock'}" in err
    assert "carapace-run prints" in err


def test_connection_refused_exits_2(sock_path, capsys):
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(sock_path))                   # bound, not listening: refused
    try:
        assert run(sock_path, "list") == 2
    finally:
        stale.close()
    err = capsys.readouterr().err
    assert f"connection refused at {sock_path}" in err and "carapace-run prints" in err


def test_server_closes_mid_reply_exits_2(serve, sock_path, capsys):
    def half(request):
        return lambda conn: conn.sendall(b'{"v":1,"id":' + str(request["id"]).encode()
                                         + b',"ok":tr')
    serve(half)
    assert run(sock_path, "list") == 2
    assert "connection closed in the middle of the reply" in capsys.readouterr().err


def test_server_closes_without_reply_exits_2(serve, sock_path, capsys):
    serve(lambda r: (lambda conn: None))
    assert run(sock_path, "list") == 2
    assert "connection closed without a reply" in capsys.readouterr().err


# --- raw -----------------------------------------------------------------------------


def test_raw_sends_verbatim_and_prints_the_reply(serve, sock_path, capsys):
    server = serve(lambda r: b'{"v":1,"id":null,"ok":false,"code":"bad-request",'
                             b'"error":"malformed JSON"}\n')
    assert run(sock_path, "raw", '{"v":1, "cmd": "list",') == 1
    assert server.lines == [b'{"v":1, "cmd": "list",']
    captured = capsys.readouterr()
    assert captured.out == ('{"v":1,"id":null,"ok":false,"code":"bad-request",'
                            '"error":"malformed JSON"}\n')
    assert captured.err == "carapace-ctl: bad-request: malformed JSON\n"


def test_raw_ok_and_long_lines_go_out_unchanged(hyp, sock_path, capsys):
    assert run(sock_path, "raw", '{"v":1,"id":42,"cmd":"hello"}') == 0
    assert json.loads(capsys.readouterr().out)["id"] == 42
    long = '{"v":1,"cmd":"' + "x" * 5000 + '"}'
    server_lines = len(hyp.lines)
    hyp.handler = lambda r, h: b'{"v":1,"id":null,"ok":false,"code":"bad-request",' \
                            b'"error":"line too long"}\n'
    assert run(sock_path, "raw", long) == 1
    assert hyp.lines[server_lines] == long.encode()
    assert "line too long" in capsys.readouterr().err


def test_raw_reply_not_json_exits_2(serve, sock_path, capsys):
    serve(lambda r: b"garbage\n")
    assert run(sock_path, "raw", "x") == 2
    assert capsys.readouterr().out == "garbage\n"


# --- argument checks: nothing is sent ------------------------------------------------


@pytest.mark.parametrize("argv, message", [
    ([], "no command"),
    (["frobnicate"], "invalid choice"),
    (["--bogus", "list"], "unrecognized arguments"),
    (["pause"], "required"),
    (["pause", "Alpha"], "bad VM name 'Alpha'"),
    (["resume", "a.b"], "bad VM name 'a.b'"),
    (["destroy", "abcdefghijklmnop"], "bad VM name"),
    (["cfi", ""], "bad VM name ''"),
    (["stats", "A"], "bad VM name"),
    (["create", "gamma"], "--kernel"),
    (["create", "Gamma", "--kernel", "k"], "bad VM name 'Gamma'"),
    (["create", "g", "--kernel", "K!"], "--kernel 'K!': bad image name"),
    (["create", "g", "--kernel", "x" * 32], "bad image name"),
    (["create", "g", "--kernel", "k", "--initrd", "a/b"], "--initrd 'a/b': bad image name"),
    (["create", "g", "--kernel", "k", "--mem", "64X"], "cannot parse size"),
    (["create", "g", "--kernel", "k", "--mem", "6M"], "at least 8M"),
    (["create", "g", "--kernel", "k", "--mem", "65M"], "multiple of 2M"),
    (["create", "g", "--kernel", "k", "--vcpus", "0"], "--vcpus 0: must be 1..8"),
    (["create", "g", "--kernel", "k", "--vcpus", "9"], "--vcpus 9: must be 1..8"),
    (["create", "g", "--kernel", "k", "--vcpus", "two"], "--vcpus two"),
    (["create", "g", "--kernel", "k", "--cfi", "maybe"], "--cfi maybe: must be one of"),
    (["create", "g", "--kernel", "k", "--irqchip", "apic"], "--irqchip apic: must be one of plic, aia"),
    (["create", "g", "--kernel", "k", "--bootargs", "x" * 512], "longer than 511 bytes"),
    (["create", "g", "--kernel", "k", "--bootargs", "a\0b"], "NUL"),
    (["--timeout", "0", "list"], "--timeout 0"),
    (["--timeout", "x", "list"], "invalid float"),
    (["raw", "a\nb"], "newline"),
    (["raw", ""], "LINE is empty"),
])
def test_usage_errors_exit_3_before_connecting(hyp, sock_path, capsys, argv, message):
    assert run(sock_path, *argv) == 3
    err = capsys.readouterr().err
    assert err.startswith("carapace-ctl: usage: ") and message in err
    assert hyp.connections == 0


def test_limits_accepted(hyp, sock_path):
    assert run(sock_path, "create", "a" * 15, "--kernel", "k" * 31, "--mem", "8M",
               "--vcpus", "8", "--bootargs", "x" * 511) == 0
    assert hyp.requests[0]["mem"] == 8 * MiB


def test_help_exits_0(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for word in ("create NAME --kernel IMG", "raw LINE", "CARAPACE_CTL_SOCKET",
                 "docs/management.md"):
        assert word in out


# --- the socket path --------------------------------------------------------------------


def test_default_socket(monkeypatch):
    monkeypatch.delenv("CARAPACE_CTL_SOCKET", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1234")
    assert default_ctl_socket() == Path(f"/run/user/1234/carapace-{os.getuid()}/ctl.sock")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "")
    assert default_ctl_socket() == Path(f"/tmp/carapace-{os.getuid()}/ctl.sock")
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert default_ctl_socket() == Path(f"/tmp/carapace-{os.getuid()}/ctl.sock")
    monkeypatch.setenv("CARAPACE_CTL_SOCKET", "/x/y.sock")
    assert default_ctl_socket() == Path("/x/y.sock")


def test_default_socket_same_as_launcher():
    """carapace-run and carapace-ctl share one implementation of the defaults."""
    import carapace.launcher
    import carapace.paths
    assert carapace.launcher.default_ctl_socket is carapace.paths.default_ctl_socket
    assert carapace.launcher.default_stream_socket is carapace.paths.default_stream_socket


def test_env_socket_is_used(hyp, sock_path, monkeypatch, capsys):
    monkeypatch.setenv("CARAPACE_CTL_SOCKET", str(sock_path))
    assert main(["pause", "alpha"]) == 0
    assert hyp.requests[0]["cmd"] == "pause"


def test_socket_option_beats_env(hyp, sock_path, monkeypatch, tmp_path):
    monkeypatch.setenv("CARAPACE_CTL_SOCKET", str(tmp_path / "elsewhere.sock"))
    assert run(sock_path, "list") == 0


# --- as a program ----------------------------------------------------------------------


def test_executable_with_shebang_and_spdx():
    assert os.access(CTL, os.X_OK)
    text = CTL.read_text()
    assert text.startswith("#!/usr/bin/env python3\n# SPDX-License-Identifier: MIT\n")


def test_runs_as_a_program(hyp, sock_path):
    r = subprocess.run([str(CTL), "--socket", str(sock_path), "--json", "list"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["vms"][1]["name"] == "beta"
    r = subprocess.run([str(CTL), "--socket", str(sock_path), "pause", "BAD"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 3


def test_leading_newline_and_fragment_reply_skipped(tmp_path):
    """carapace-ctl starts a connection with a newline (it ends a fragment a
    departed client may have left) and skips the one error reply, id null,
    that the fragment draws; its own reply is the one it returns."""
    sock = tmp_path / "frag.sock"

    def handler(request):
        return {"v": 1, "id": request["id"], "ok": True, "vms": []}

    server = FakeHyp(sock, handler)
    orig = server.talk

    def talk(conn):
        conn.sendall(b'{"v":1,"id":null,"ok":false,"code":"bad-request",'
                     b'"error":"malformed JSON"}\n')
        orig(conn)
    server.talk = talk
    try:
        with Client(sock, timeout=5) as c:
            reply = c.request("list")
        assert reply["ok"] and reply["vms"] == []
        assert server.empty_lines == 1
    finally:
        server.close()
