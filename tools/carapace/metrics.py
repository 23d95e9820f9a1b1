# SPDX-License-Identifier: MIT
"""Every counter of a Carapace host in the Prometheus text exposition format
(version 0.0.4), for a node exporter's textfile collector or a scraper
(`carapace-ctl metrics`; docs/management.md, "Metrics").

collect() asks the hypervisor with its `metrics` command: once for the host
(which names the VMs), then once per VM, on one connection; exposition()
turns what it got into text.  The names, types, labels and units are the
table FAMILIES below, which docs/management.md restates for operators."""

from .errors import RemoteError

EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Exception causes (scause) by code, as the RISC-V privileged spec names them.
# The hypervisor counts a cause of 24 or more under 0 (docs/management.md).
CAUSES = ("instruction_address_misaligned", "instruction_access_fault", "illegal_instruction",
          "breakpoint", "load_address_misaligned", "load_access_fault",
          "store_address_misaligned", "store_access_fault", "ecall_u", "ecall_s", "ecall_vs",
          "ecall_m", "instruction_page_fault", "load_page_fault", "reserved_14",
          "store_page_fault", "double_trap", "reserved_17", "software_check",
          "hardware_error", "instruction_guest_page_fault", "load_guest_page_fault",
          "virtual_instruction", "store_guest_page_fault")
HOST_INTERRUPT = "host_interrupt"
ECALL_VS = 10
# Always shown, 0 included, so that a rate() finds the series from the first
# scrape: the exits a guest makes in normal running.
USUAL_CAUSES = (ECALL_VS, 18, 20, 21, 22, 23)

# Every state `list` can show (docs/management.md, "States").
VM_STATES = ("running", "suspended", "pausing", "paused", "rebooting", "stopping", "down",
             "destroying")

REPLY_FIELDS = ("v", "id", "ok")


# --- asking the hypervisor ----------------------------------------------------------


def strip(reply):
    """A reply without its protocol fields."""
    return {k: v for k, v in reply.items() if k not in REPLY_FIELDS}


def collect(client):
    """{"host": the host's counters, "vms": [each VM's counters]} from the
    hypervisor behind @client.  A VM destroyed between the two requests is
    left out (it is gone)."""
    host = strip(client.request("metrics"))
    names = host.pop("vms", [])
    vms = []
    for name in names:
        try:
            vms.append(strip(client.request("metrics", {"vm": name})))
        except RemoteError as e:
            if e.code != "no-such-vm":
                raise
    return {"host": host, "vms": vms}


# --- the exposition format ----------------------------------------------------------


def escape_label(value):
    """A label value as the format quotes it: backslash, double quote and
    line feed escaped (nothing else may be)."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_help(text):
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def number(value):
    """A sample value: an integer as it is (exact, whatever its size)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    raise ValueError(f"not a counter value: {value!r}")


def seconds(ns):
    """Nanoseconds as exact decimal seconds ("1.000000250")."""
    return f"{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}"


def cause_name(code):
    return CAUSES[code] if 0 <= code < len(CAUSES) else f"cause_{code}"


def vm_exits(vm):
    """(cause label, exits) of a VM: the usual causes always, the others when
    counted, and the host interrupts taken while it ran."""
    counted = {}
    for key, n in (vm.get("by_cause") or {}).items():
        if key.isdigit():
            counted[int(key)] = n
    codes = sorted(set(USUAL_CAUSES) | set(counted))
    out = [(cause_name(code), counted.get(code, 0)) for code in codes]
    out.append((HOST_INTERRUPT, vm.get("host_irq", 0)))
    return out


def per_vm(field, convert=number):
    return lambda data: [({"vm": vm["vm"]}, convert(vm[field]))
                         for vm in data["vms"] if field in vm]


def host_value(field):
    return lambda data: ([({}, number(data["host"][field]))] if field in data["host"] else [])


def host_irq_chip(data):
    chip = data["host"].get("irq_chip")
    return [({"chip": chip}, "1")] if chip else []


def vm_info(data):
    return [({"vm": vm["vm"], "index": vm.get("index"), "cfi": vm.get("cfi")}, "1")
            for vm in data["vms"]]


def vm_state(data):
    out = []
    for vm in data["vms"]:
        states = VM_STATES if vm.get("state") in VM_STATES else VM_STATES + (vm.get("state"),)
        out += [({"vm": vm["vm"], "state": s}, "1" if s == vm.get("state") else "0")
                for s in states]
    return out


def vm_exit_samples(data):
    return [({"vm": vm["vm"], "cause": cause}, number(n))
            for vm in data["vms"] for cause, n in vm_exits(vm)]


def vm_sbi_calls(data):
    return [({"vm": vm["vm"]}, number((vm.get("by_cause") or {}).get(str(ECALL_VS), 0)))
            for vm in data["vms"]]


def vm_cfi_violations(data):
    return [({"vm": vm["vm"], "kind": kind}, number(vm[field]))
            for vm in data["vms"]
            for kind, field in (("landing_pad", "violations_lp"), ("shadow_stack", "violations_ss"))
            if field in vm]


def host_vms(data):
    return [({}, str(len(data["vms"])))]


def host_idle_wakeups(data):
    return [({"hart": i}, number(n)) for i, n in enumerate(data["host"].get("idle_wakeups", []))]


# (name, type, help, samples(data) -> [(labels, value text)])
FAMILIES = (
    ("carapace_vm_info", "gauge",
     "A VM that exists (always 1); labels: its slot index and CFI policy.", vm_info),
    ("carapace_vm_state", "gauge",
     "1 for the state the VM is in, 0 for the others (docs/management.md, States).", vm_state),
    ("carapace_vm_vcpus", "gauge", "vCPUs of the VM.", per_vm("vcpus")),
    ("carapace_vm_memory_bytes", "gauge", "Guest RAM of the VM in bytes.", per_vm("mem")),
    ("carapace_vm_boots_total", "counter",
     "Times the VM was started: 1 after its first boot, +1 per reboot.", per_vm("boots")),
    ("carapace_vm_failed", "gauge",
     "1 if the VM went down by a failure (stopped by Carapace, or SRST system failure).",
     per_vm("failed")),
    ("carapace_vm_exits_total", "counter",
     "VM exits by cause: the exception (scause name) or host_interrupt; their sum is all "
     "exits.", vm_exit_samples),
    ("carapace_vm_sbi_calls_total", "counter",
     "SBI calls the guest made (ecall from VS mode).", vm_sbi_calls),
    ("carapace_vm_mmio_accesses_total", "counter",
     "Guest accesses to emulated devices (UART, PLIC, ...).", per_vm("mmio")),
    ("carapace_vm_wfi_waits_total", "counter", "WFI instructions the guest waited in.",
     per_vm("wfi")),
    ("carapace_vm_wfi_in_place_total", "counter",
     "Of those, waits that kept the vCPU loaded on its hart and ended in the guest again.",
     per_vm("wfi_in_place")),
    ("carapace_vm_injected_traps_total", "counter",
     "Traps the hypervisor injected into the guest.", per_vm("injected")),
    ("carapace_vm_misaligned_emulated_total", "counter",
     "Misaligned loads and stores the hypervisor emulated for vCPUs that set SBI FWFT "
     "MISALIGNED_EXC_DELEG to 0.", per_vm("misaligned_emulated")),
    ("carapace_vm_cfi_violations_total", "counter",
     "CFI violations (software-check exceptions) by kind, every boot included.",
     vm_cfi_violations),
    ("carapace_vm_console_output_bytes_total", "counter",
     "Bytes the guest wrote to its console (UART and SBI DBCN), before filtering.",
     per_vm("console_bytes")),
    ("carapace_vm_steal_seconds_total", "counter",
     "Time its vCPUs were ready but had no hart, summed over vCPUs; counted for vCPUs that "
     "registered SBI STA steal-time records.", per_vm("steal_ns", seconds)),
    # AIA VMs' IMSIC files (docs/design-aia.md 3.9); 0 for a PLIC VM
    ("carapace_vm_imsic_sw_stores_total", "counter",
     "Stores into its vCPUs' IMSIC pages that the hypervisor emulated (a file in software).",
     per_vm("imsic_sw_stores")),
    ("carapace_vm_imsic_csr_exits_total", "counter",
     "IMSIC CSR accesses (sireg, stopei) the hypervisor emulated (a file in software).",
     per_vm("imsic_csr_exits")),
    ("carapace_vm_imsic_moves_total", "counter",
     "Times a vCPU's IMSIC state moved into or out of a guest interrupt file.",
     per_vm("imsic_moves")),
    ("carapace_vm_imsic_evictions_total", "counter",
     "Guest interrupt files taken from a parked vCPU of the VM for another vCPU.",
     per_vm("imsic_evictions")),
    ("carapace_vm_imsic_sgei_total", "counter",
     "Supervisor guest external interrupts that woke a vCPU waiting with its guest file.",
     per_vm("imsic_sgei")),
    ("carapace_host_harts", "gauge", "Host harts running guests.", host_value("harts")),
    ("carapace_host_vm_slots", "gauge", "VMs that can exist at once.", host_value("vm_max")),
    ("carapace_host_vms", "gauge", "VMs that exist, in any state.", host_vms),
    ("carapace_host_memory_bytes", "gauge",
     "Host memory for VMs and the hypervisor's own allocations, in bytes.",
     host_value("mem_total")),
    ("carapace_host_memory_free_bytes", "gauge", "Host memory free for new VMs, in bytes.",
     host_value("mem_free")),
    ("carapace_host_idle_wakeups_total", "counter",
     "Times a hart left its idle wait with nothing to run.", host_idle_wakeups),
    ("carapace_host_events_dropped_total", "counter",
     "VM events lost because the host services' ring was full (reboot notices).",
     host_value("events_dropped")),
    ("carapace_host_mgmt_requests_total", "counter",
     "Request lines the management channel answered.", host_value("requests")),
    ("carapace_host_mgmt_errors_total", "counter",
     "Error replies the management channel sent.", host_value("request_errors")),
    ("carapace_host_interrupt_controller", "gauge",
     "The controller the host's own device interrupts come through (plic, aia, none).",
     host_irq_chip),
    ("carapace_host_interrupts_total", "counter",
     "Host device interrupts claimed on hart 0 and given to a driver.",
     host_value("irq_handled")),
    ("carapace_host_interrupts_unknown_total", "counter",
     "Host interrupt claims no driver registered (completed, not dispatched).",
     host_value("irq_unknown")),
)


def sample_line(name, labels, value):
    if not labels:
        return f"{name} {value}"
    text = ",".join(f'{key}="{escape_label(v)}"' for key, v in labels.items())
    return f"{name}{{{text}}} {value}"


def exposition(data):
    """The text of @data (collect()'s dict): one family per name, HELP and
    TYPE first, every line ended by a line feed."""
    lines = []
    for name, kind, text, samples in FAMILIES:
        lines.append(f"# HELP {name} {escape_help(text)}")
        lines.append(f"# TYPE {name} {kind}")
        lines += [sample_line(name, labels, value) for labels, value in samples(data)]
    return "\n".join(lines) + "\n"
