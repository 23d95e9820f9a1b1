# SPDX-License-Identifier: MIT
"""`carapace-ctl metrics` against the real hypervisor with two VMs sharing one
host hart: every line of the output is valid exposition text, the counters
move between two scrapes (exits, SBI calls, console bytes, steal time of the
VM that registered SBI STA records), a VM that went down shows the counts of
its outcome line (exits by cause adding up to its total), a scrape costs
exactly its own requests, and a paused VM's exits by cause add up too."""

import json
import re
import subprocess

import pytest

from harness.exposition import parse_exposition
from harness.paths import CTL
from harness.runs import vm_spec

pytestmark = pytest.mark.quick

OUTCOME = (r"carapace: vm sta: exits (?P<exits>\d+), sbi calls (?P<sbi>\d+), wfi (?P<wfi>\d+) "
           r"\((?P<wfi_in_place>\d+) in place\), injected traps (?P<injected>\d+), "
           r"cfi violations: landing pad (?P<lp>\d+), shadow stack (?P<ss>\d+)$")


def scrape(host):
    """(parsed exposition, the counters as JSON) of one `carapace-ctl metrics`
    and one `carapace-ctl --json metrics`."""
    text = subprocess.run([str(CTL), "--socket", str(host.sock), "metrics"],
                          capture_output=True, text=True, timeout=60, check=True).stdout
    data = json.loads(subprocess.run([str(CTL), "--socket", str(host.sock), "--json", "metrics"],
                                     capture_output=True, text=True, timeout=60,
                                     check=True).stdout)
    return parse_exposition(text), data


def value(families, name, **labels):
    return float(families[name]["samples"][tuple(labels.items())])


def by_vm(data):
    return {vm["vm"]: vm for vm in data["vms"]}


def test_metrics_move_and_add_up(host_factory):
    # one hart for both VMs (STA's shared run): the sta VM's vCPUs wait for it
    h = host_factory([vm_spec("sta", "sbi_sta", 2, "shared=1 spin_ms=5000"),
                      vm_spec("busy", "spin", 1, "spin_ms=600000")],
                     extra=["--smp", "1", "--expect", "busy=destroyed"],
                     timeout=300)
    h.wait_for(lambda l: l.startswith("[sta] "), 60)
    first, first_json = scrape(h)
    # its outcome line: the hypervisor's own count, by another path than metrics
    outcome = re.match(OUTCOME, h.wait_for(lambda l: re.match(OUTCOME, l), 180))
    second, second_json = scrape(h)

    for fam, want in ((first, "running"), (second, "down")):
        assert {dict(s)["vm"] for s in fam["carapace_vm_vcpus"]["samples"]} == {"sta", "busy"}
        assert value(fam, "carapace_host_harts") == 1
        assert value(fam, "carapace_host_vms") == 2
        states = {dict(s)["state"]: float(v) for s, v in fam["carapace_vm_state"]["samples"].items()
                  if dict(s)["vm"] == "sta"}
        assert states[want] == 1 and sum(states.values()) == 1, states
        assert 0 < value(fam, "carapace_host_memory_free_bytes") < \
            value(fam, "carapace_host_memory_bytes")
    for name in ("carapace_vm_sbi_calls_total", "carapace_vm_console_output_bytes_total",
                 "carapace_vm_steal_seconds_total"):
        assert value(second, name, vm="sta") > value(first, name, vm="sta"), name
    assert value(second, "carapace_vm_exits_total", vm="sta", cause="ecall_vs") > \
        value(first, "carapace_vm_exits_total", vm="sta", cause="ecall_vs")
    sta_exits = sum(float(v) for labels, v in second["carapace_vm_exits_total"]["samples"].items()
                    if dict(labels)["vm"] == "sta")
    assert sta_exits == int(outcome["exits"]) == by_vm(second_json)["sta"]["exits"]
    for name, field in (("carapace_vm_sbi_calls_total", "sbi"),
                        ("carapace_vm_wfi_waits_total", "wfi"),
                        ("carapace_vm_wfi_in_place_total", "wfi_in_place"),
                        ("carapace_vm_injected_traps_total", "injected")):
        assert value(second, name, vm="sta") == int(outcome[field]), name
    for kind, field in (("landing_pad", "lp"), ("shadow_stack", "ss")):
        assert value(second, "carapace_vm_cfi_violations_total", vm="sta", kind=kind) == \
            int(outcome[field])
    # steal is counted where the guest registered a record: the spinner has none
    assert value(second, "carapace_vm_steal_seconds_total", vm="busy") == 0
    # the text scrape and the JSON one are 3 request lines each (host + 2 VMs)
    first_requests = first_json["host"]["requests"]
    assert value(second, "carapace_host_mgmt_requests_total") == first_requests + 3
    assert second_json["host"]["requests"] == first_requests + 6

    # a paused VM's counters stand still: its exits by cause add up to its total
    h.ctl("pause", "busy")
    paused, paused_json = scrape(h)
    exits = {dict(s)["cause"]: float(v)
             for s, v in paused["carapace_vm_exits_total"]["samples"].items()
             if dict(s)["vm"] == "busy"}
    assert sum(exits.values()) == by_vm(paused_json)["busy"]["exits"] > 0, exits
    assert exits["host_interrupt"] > 0           # its slices ended by the host timer
    assert value(paused, "carapace_vm_state", vm="busy", state="paused") == 1
    assert value(paused, "carapace_vm_state", vm="busy", state="running") == 0
    h.ctl("destroy", "busy")
    h.finish(timeout=120)   # the STA guest's own timing checks are test_guests.py's (-icount)
