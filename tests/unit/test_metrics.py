# SPDX-License-Identifier: MIT
"""`carapace-ctl metrics` and `Host.metrics()` against the fake hypervisor: the
requests (the host's `metrics`, then one per VM it names, on one connection),
the exact exposition text for known replies, label escaping for a VM with an
odd name, and every line of the output through the harness's strict parser of
the Prometheus text format, 0.0.4 (which is tested here too; docs/management.md,
"Metrics")."""

import json

import pytest

from carapace import Host
from carapace.cli.ctl import main
from carapace.metrics import escape_label, exposition, seconds
from harness.exposition import parse_exposition
from harness.fakes import FakeHypervisor, err, ok

pytestmark = pytest.mark.quick

MiB = 1 << 20
BIG = (1 << 64) - 1            # more than a double holds exactly
ODD = 'we"ird\\na\nme é'       # quote, backslash, "\n" as text, a line feed, UTF-8

HOST = {"harts": 2, "vm_max": 8, "mem_total": 1024 * MiB, "mem_free": 512 * MiB,
        "events_dropped": 0, "requests": 7, "request_errors": 1, "idle_wakeups": [10, BIG],
        "irq_chip": "aia", "irq_handled": 30, "irq_unknown": 2, "irq_cut": 0, "irq_polled": 9}
ALPHA = {"vm": "alpha", "index": 0, "state": "running", "vcpus": 2, "mem": 256 * MiB,
         "cfi": "trap", "boots": 1, "failed": False, "exits": 200, "host_irq": 50,
         "by_cause": {"2": 10, "10": 120, "21": 20}, "mmio": 15, "wfi": 4, "wfi_in_place": 3,
         "injected": 10, "misaligned_emulated": 6,
         "violations_lp": 1, "violations_ss": 2, "imsic_sw_stores": 31, "imsic_csr_exits": 32,
         "imsic_moves": 33, "imsic_evictions": 34, "imsic_sgei": 35,
         "steal_ns": 1_500_000_250, "console_bytes": 4096}


def vm_reply(name, **changes):
    return {**ALPHA, "vm": name, **changes}


def metrics_handler(vms, gone=()):
    """The hypervisor's metrics command over @vms (name -> per-VM fields); the
    VMs named in @gone are listed but destroyed before their own request."""
    def handle(request, hyp):
        if not isinstance(request, dict) or request.get("cmd") != "metrics":
            return err(request, "unknown-command", "not in this fake")
        if "vm" not in request:
            return ok(request, **HOST, vms=list(vms))
        name = request["vm"]
        if name in gone or name not in vms:
            return err(request, "no-such-vm", "no VM by that name")
        return ok(request, **vms[name])
    return handle


@pytest.fixture
def sock_path(tmp_path):
    return tmp_path / "ctl.sock"


@pytest.fixture
def serve(sock_path):
    servers = []

    def start(handler):
        servers.append(FakeHypervisor(sock_path, None, handler))
        return servers[-1]
    yield start
    for server in servers:
        server.close()


def ctl(sock_path, *argv):
    return main(["--socket", str(sock_path), *argv])


def test_parser_refuses_what_the_format_does_not_allow():
    good = "# HELP a_total x\n# TYPE a_total counter\na_total{vm=\"x\"} 1\n"
    parse_exposition(good, prefix="")
    for bad in (good[:-1],                                          # no final line feed
                good + 'a_total{vm="y"} 1 2 3\n',                   # junk after the value
                good + 'a_total{vm="a\\tb"} 1\n',                   # an escape it lacks
                good + 'a_total{vm="a"b"} 1\n',                     # a raw quote
                good + 'a_total{vm="x"} 2\n',                       # the same series again
                good + "# HELP b x\n# TYPE b gauge\nb 1\na_total 3\n",   # split family
                good.replace("counter", "gauge"),                   # gauge named _total
                "# TYPE c counter\n# HELP c x\nc 1\n",              # counter without _total
                good + "# a comment\n",
                good + "b 1\n"):                                    # no TYPE
        with pytest.raises(AssertionError):
            parse_exposition(bad, prefix="")


# --- the exposition ------------------------------------------------------------------

ALPHA_TEXT = """\
# HELP carapace_vm_info A VM that exists (always 1); labels: its slot index and CFI policy.
# TYPE carapace_vm_info gauge
carapace_vm_info{vm="alpha",index="0",cfi="trap"} 1
# HELP carapace_vm_state 1 for the state the VM is in, 0 for the others (docs/management.md, States).
# TYPE carapace_vm_state gauge
carapace_vm_state{vm="alpha",state="running"} 1
carapace_vm_state{vm="alpha",state="suspended"} 0
carapace_vm_state{vm="alpha",state="pausing"} 0
carapace_vm_state{vm="alpha",state="paused"} 0
carapace_vm_state{vm="alpha",state="rebooting"} 0
carapace_vm_state{vm="alpha",state="stopping"} 0
carapace_vm_state{vm="alpha",state="down"} 0
carapace_vm_state{vm="alpha",state="destroying"} 0
# HELP carapace_vm_vcpus vCPUs of the VM.
# TYPE carapace_vm_vcpus gauge
carapace_vm_vcpus{vm="alpha"} 2
# HELP carapace_vm_memory_bytes Guest RAM of the VM in bytes.
# TYPE carapace_vm_memory_bytes gauge
carapace_vm_memory_bytes{vm="alpha"} 268435456
# HELP carapace_vm_boots_total Times the VM was started: 1 after its first boot, +1 per reboot.
# TYPE carapace_vm_boots_total counter
carapace_vm_boots_total{vm="alpha"} 1
# HELP carapace_vm_failed 1 if the VM went down by a failure (stopped by Carapace, or SRST system failure).
# TYPE carapace_vm_failed gauge
carapace_vm_failed{vm="alpha"} 0
# HELP carapace_vm_exits_total VM exits by cause: the exception (scause name) or host_interrupt; their sum is all exits.
# TYPE carapace_vm_exits_total counter
carapace_vm_exits_total{vm="alpha",cause="illegal_instruction"} 10
carapace_vm_exits_total{vm="alpha",cause="ecall_vs"} 120
carapace_vm_exits_total{vm="alpha",cause="software_check"} 0
carapace_vm_exits_total{vm="alpha",cause="instruction_guest_page_fault"} 0
carapace_vm_exits_total{vm="alpha",cause="load_guest_page_fault"} 20
carapace_vm_exits_total{vm="alpha",cause="virtual_instruction"} 0
carapace_vm_exits_total{vm="alpha",cause="store_guest_page_fault"} 0
carapace_vm_exits_total{vm="alpha",cause="host_interrupt"} 50
# HELP carapace_vm_sbi_calls_total SBI calls the guest made (ecall from VS mode).
# TYPE carapace_vm_sbi_calls_total counter
carapace_vm_sbi_calls_total{vm="alpha"} 120
# HELP carapace_vm_mmio_accesses_total Guest accesses to emulated devices (UART, PLIC, ...).
# TYPE carapace_vm_mmio_accesses_total counter
carapace_vm_mmio_accesses_total{vm="alpha"} 15
# HELP carapace_vm_wfi_waits_total WFI instructions the guest waited in.
# TYPE carapace_vm_wfi_waits_total counter
carapace_vm_wfi_waits_total{vm="alpha"} 4
# HELP carapace_vm_wfi_in_place_total Of those, waits that kept the vCPU loaded on its hart and ended in the guest again.
# TYPE carapace_vm_wfi_in_place_total counter
carapace_vm_wfi_in_place_total{vm="alpha"} 3
# HELP carapace_vm_injected_traps_total Traps the hypervisor injected into the guest.
# TYPE carapace_vm_injected_traps_total counter
carapace_vm_injected_traps_total{vm="alpha"} 10
# HELP carapace_vm_misaligned_emulated_total Misaligned loads and stores the hypervisor emulated for vCPUs that set SBI FWFT MISALIGNED_EXC_DELEG to 0.
# TYPE carapace_vm_misaligned_emulated_total counter
carapace_vm_misaligned_emulated_total{vm="alpha"} 6
# HELP carapace_vm_cfi_violations_total CFI violations (software-check exceptions) by kind, every boot included.
# TYPE carapace_vm_cfi_violations_total counter
carapace_vm_cfi_violations_total{vm="alpha",kind="landing_pad"} 1
carapace_vm_cfi_violations_total{vm="alpha",kind="shadow_stack"} 2
# HELP carapace_vm_console_output_bytes_total Bytes the guest wrote to its console (UART and SBI DBCN), before filtering.
# TYPE carapace_vm_console_output_bytes_total counter
carapace_vm_console_output_bytes_total{vm="alpha"} 4096
# HELP carapace_vm_steal_seconds_total Time its vCPUs were ready but had no hart, summed over vCPUs; counted for vCPUs that registered SBI STA steal-time records.
# TYPE carapace_vm_steal_seconds_total counter
carapace_vm_steal_seconds_total{vm="alpha"} 1.500000250
# HELP carapace_vm_imsic_sw_stores_total Stores into its vCPUs' IMSIC pages that the hypervisor emulated (a file in software).
# TYPE carapace_vm_imsic_sw_stores_total counter
carapace_vm_imsic_sw_stores_total{vm="alpha"} 31
# HELP carapace_vm_imsic_csr_exits_total IMSIC CSR accesses (sireg, stopei) the hypervisor emulated (a file in software).
# TYPE carapace_vm_imsic_csr_exits_total counter
carapace_vm_imsic_csr_exits_total{vm="alpha"} 32
# HELP carapace_vm_imsic_moves_total Times a vCPU's IMSIC state moved into or out of a guest interrupt file.
# TYPE carapace_vm_imsic_moves_total counter
carapace_vm_imsic_moves_total{vm="alpha"} 33
# HELP carapace_vm_imsic_evictions_total Guest interrupt files taken from a parked vCPU of the VM for another vCPU.
# TYPE carapace_vm_imsic_evictions_total counter
carapace_vm_imsic_evictions_total{vm="alpha"} 34
# HELP carapace_vm_imsic_sgei_total Supervisor guest external interrupts that woke a vCPU waiting with its guest file.
# TYPE carapace_vm_imsic_sgei_total counter
carapace_vm_imsic_sgei_total{vm="alpha"} 35
# HELP carapace_host_harts Host harts running guests.
# TYPE carapace_host_harts gauge
carapace_host_harts 2
# HELP carapace_host_vm_slots VMs that can exist at once.
# TYPE carapace_host_vm_slots gauge
carapace_host_vm_slots 8
# HELP carapace_host_vms VMs that exist, in any state.
# TYPE carapace_host_vms gauge
carapace_host_vms 1
# HELP carapace_host_memory_bytes Host memory for VMs and the hypervisor's own allocations, in bytes.
# TYPE carapace_host_memory_bytes gauge
carapace_host_memory_bytes 1073741824
# HELP carapace_host_memory_free_bytes Host memory free for new VMs, in bytes.
# TYPE carapace_host_memory_free_bytes gauge
carapace_host_memory_free_bytes 536870912
# HELP carapace_host_idle_wakeups_total Times a hart left its idle wait with nothing to run.
# TYPE carapace_host_idle_wakeups_total counter
carapace_host_idle_wakeups_total{hart="0"} 10
carapace_host_idle_wakeups_total{hart="1"} 18446744073709551615
# HELP carapace_host_events_dropped_total VM events lost because the host services' ring was full (reboot notices).
# TYPE carapace_host_events_dropped_total counter
carapace_host_events_dropped_total 0
# HELP carapace_host_mgmt_requests_total Request lines the management channel answered.
# TYPE carapace_host_mgmt_requests_total counter
carapace_host_mgmt_requests_total 7
# HELP carapace_host_mgmt_errors_total Error replies the management channel sent.
# TYPE carapace_host_mgmt_errors_total counter
carapace_host_mgmt_errors_total 1
# HELP carapace_host_interrupt_controller The controller the host's own device interrupts come through (plic, aia, none).
# TYPE carapace_host_interrupt_controller gauge
carapace_host_interrupt_controller{chip="aia"} 1
# HELP carapace_host_interrupts_total Host device interrupts claimed on hart 0 and given to a driver.
# TYPE carapace_host_interrupts_total counter
carapace_host_interrupts_total 30
# HELP carapace_host_interrupts_unknown_total Host interrupt claims no driver registered (completed, not dispatched).
# TYPE carapace_host_interrupts_unknown_total counter
carapace_host_interrupts_unknown_total 2
"""


def test_exact_text_for_a_known_host(serve, sock_path, capsys):
    hyp = serve(metrics_handler({"alpha": ALPHA}))
    assert ctl(sock_path, "metrics") == 0
    out = capsys.readouterr().out
    assert out == ALPHA_TEXT
    parse_exposition(out)
    # the host's request, then one per VM it named, on one connection
    assert [(r["cmd"], r.get("vm")) for r in hyp.requests] == [("metrics", None),
                                                               ("metrics", "alpha")]
    assert hyp.connections == 1


def test_exits_by_cause_sum_to_all_exits():
    families = parse_exposition(exposition({"host": HOST, "vms": [ALPHA]}))
    exits = families["carapace_vm_exits_total"]["samples"]
    assert sum(int(v) for v in exits.values()) == ALPHA["exits"]


def test_odd_vm_name_is_escaped_and_reads_back(serve, sock_path, capsys):
    serve(metrics_handler({"alpha": ALPHA, ODD: vm_reply(ODD, index=1, state="paused")}))
    assert ctl(sock_path, "metrics") == 0
    out = capsys.readouterr().out
    assert 'carapace_vm_vcpus{vm="we\\"ird\\\\na\\nme é"} 2\n' in out
    families = parse_exposition(out)
    vcpus = families["carapace_vm_vcpus"]["samples"]
    assert set(vcpus) == {(("vm", "alpha"),), (("vm", ODD),)}
    state = families["carapace_vm_state"]["samples"]
    assert state[(("vm", ODD), ("state", "paused"))] == "1"
    assert families["carapace_host_vms"]["samples"][()] == "2"


@pytest.mark.parametrize("raw, quoted", [
    ("plain", "plain"), ('a"b', 'a\\"b'), ("a\\b", "a\\\\b"), ("a\nb", "a\\nb"),
    ("\\n", "\\\\n"), ("tab\there", "tab\there")])
def test_escape_label(raw, quoted):
    assert escape_label(raw) == quoted


def test_unknown_state_and_cause_are_shown_not_dropped():
    vm = vm_reply("alpha", state="hibernating", by_cause={"10": 1, "30": 4})
    families = parse_exposition(exposition({"host": HOST, "vms": [vm]}))
    assert families["carapace_vm_state"]["samples"][
        (("vm", "alpha"), ("state", "hibernating"))] == "1"
    assert families["carapace_vm_exits_total"]["samples"][
        (("vm", "alpha"), ("cause", "cause_30"))] == "4"


IMSIC_FIELDS = {"imsic_sw_stores": "carapace_vm_imsic_sw_stores_total",
                "imsic_csr_exits": "carapace_vm_imsic_csr_exits_total",
                "imsic_moves": "carapace_vm_imsic_moves_total",
                "imsic_evictions": "carapace_vm_imsic_evictions_total",
                "imsic_sgei": "carapace_vm_imsic_sgei_total"}


def test_imsic_counters_per_vm_each_its_own_field():
    # every field to its own family and VM, exact at 64 bits
    beta = vm_reply("beta", index=1, **{f: BIG - i for i, f in enumerate(IMSIC_FIELDS)})
    families = parse_exposition(exposition({"host": HOST, "vms": [ALPHA, beta]}))
    for i, (field, name) in enumerate(IMSIC_FIELDS.items()):
        assert families[name]["type"] == "counter"
        assert families[name]["samples"] == {(("vm", "alpha"),): str(ALPHA[field]),
                                             (("vm", "beta"),): str(BIG - i)}, name


def test_imsic_counters_absent_from_an_older_hypervisor_give_no_sample():
    old = {k: v for k, v in ALPHA.items() if k not in IMSIC_FIELDS}
    families = parse_exposition(exposition({"host": HOST, "vms": [old]}))
    for name in IMSIC_FIELDS.values():
        assert families[name]["samples"] == {}, name
    assert families["carapace_vm_vcpus"]["samples"] == {(("vm", "alpha"),): "2"}


@pytest.mark.parametrize("ns, text", [(0, "0.000000000"), (1, "0.000000001"),
                                      (BIG, "18446744073.709551615")])
def test_steal_seconds_are_exact(ns, text):
    assert seconds(ns) == text
    assert float(text) * 1e9 == pytest.approx(ns)


def test_no_vms(serve, sock_path, capsys):
    serve(metrics_handler({}))
    assert ctl(sock_path, "metrics") == 0
    families = parse_exposition(capsys.readouterr().out)
    assert families["carapace_host_vms"]["samples"][()] == "0"
    assert families["carapace_vm_exits_total"]["samples"] == {}


def test_vm_gone_between_requests_is_left_out(serve, sock_path, capsys):
    serve(metrics_handler({"alpha": ALPHA, "beta": vm_reply("beta")}, gone={"beta"}))
    assert ctl(sock_path, "--json", "metrics") == 0
    data = json.loads(capsys.readouterr().out)
    assert [vm["vm"] for vm in data["vms"]] == ["alpha"]


def test_other_errors_fail_the_scrape_and_print_nothing(serve, sock_path, capsys):
    def handle(request, hyp):
        if "vm" in request:
            return err(request, "internal", "reply too large")
        return ok(request, **HOST, vms=["alpha"])
    serve(handle)
    assert ctl(sock_path, "metrics") == 1
    captured = capsys.readouterr()
    assert captured.out == ""         # a textfile collector never reads half a scrape
    assert "internal: reply too large" in captured.err


def test_json_is_the_counters_with_exact_64_bit_integers(serve, sock_path, capsys):
    serve(metrics_handler({"alpha": vm_reply("alpha", console_bytes=BIG)}))
    assert ctl(sock_path, "--json", "metrics") == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    data = json.loads(out)
    assert data == {"host": HOST, "vms": [vm_reply("alpha", console_bytes=BIG)]}
    assert '"console_bytes":18446744073709551615' in out


def test_host_api(serve, sock_path):
    serve(metrics_handler({"alpha": ALPHA}))
    host = Host(ctl_socket=sock_path, timeout=5)
    assert host.metrics() == {"host": HOST, "vms": [ALPHA]}
    assert host.metrics_text() == ALPHA_TEXT


def test_metrics_takes_no_argument(capsys):
    assert main(["metrics", "alpha"]) == 3
    assert "unrecognized arguments" in capsys.readouterr().err
