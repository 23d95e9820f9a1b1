# SPDX-License-Identifier: MIT
"""Batch runs of carapace-run: the hypervisor's console read line by line
(ConsoleParser: each guest's "[NAME] text" and each VM's end), QEMU killed
at the timeout, and the exit status from the VMs' outcomes (exit_status)."""

import dataclasses
import os
import re
import selectors
import signal
import subprocess
import sys
import time

DEFAULT_TIMEOUT = 120.0
OUTCOMES = ("shutdown", "failed", "stopped", "destroyed", "running")
EXIT_OK, EXIT_VM, EXIT_TIMEOUT, EXIT_ERROR = 0, 1, 2, 3
POWEROFF_GRACE = 10.0          # seconds QEMU gets to exit after "all VMs down"
SETTLE_GRACE = 1.0             # --persist: console lines after the last expected end
KILL_GRACE = 3.0               # seconds between SIGTERM and SIGKILL


@dataclasses.dataclass
class VmResult:
    name: str
    outcome: str = "running"
    reason: str = ""
    console: list = dataclasses.field(default_factory=list)   # text after "[name] "


@dataclasses.dataclass
class RunResult:
    vms: dict
    lines: list = dataclasses.field(default_factory=list)
    all_down: bool = False
    panic: str | None = None
    timed_out: bool = False
    qemu_status: int | None = None
    error: str | None = None   # launcher-level trouble: QEMU did not start, died, hung
    persist: bool = False      # --persist: the timeout is the normal end of the run
    settled: bool = False      # --persist: every expected VM ended, the run with it


VM_EVENT_RE = re.compile(r"carapace: vm (?P<name>[a-z0-9_-]+): (?P<event>shut down \(system "
                         r"failure\)|shut down|stopped: .*|not created: .*|rebooting|"
                         r"destroyed(?:, .*)?)\Z")
GUEST_RE = re.compile(r"\[(?P<name>[a-z0-9_-]{1,15})\] (?P<text>.*)\Z", re.DOTALL)
ALL_DOWN = "carapace: all VMs down, powering off"
PANIC = "carapace: PANIC: "


def vm_event_outcome(event):
    """Map the text after 'vm NAME: ' to (outcome, reason)."""
    if event == "shut down":
        return "shutdown", ""
    if event == "shut down (system failure)":
        return "failed", "system failure"
    if event == "rebooting":
        return "running", ""
    if event.startswith("destroyed"):
        return "destroyed", ""
    if event.startswith("stopped: "):
        return "stopped", event[len("stopped: "):]
    return "stopped", event           # "not created: why"


class ConsoleParser:
    """Follow the console line by line; only line starts count, so guests cannot
    forge hypervisor lines (theirs always begin with "[name] ")."""

    def __init__(self, names):
        self.result = RunResult({name: VmResult(name) for name in names})

    def feed(self, line):
        r = self.result
        r.lines.append(line)
        m = GUEST_RE.match(line)
        if m and m["name"] in r.vms:
            r.vms[m["name"]].console.append(m["text"])
            return
        m = VM_EVENT_RE.match(line)
        if m and m["name"] in r.vms:
            vm = r.vms[m["name"]]
            outcome, reason = vm_event_outcome(m["event"])
            # Destroying a VM that had already ended keeps how it ended.
            if outcome != "destroyed" or vm.outcome == "running":
                vm.outcome, vm.reason = outcome, reason
        elif line.startswith(ALL_DOWN):
            r.all_down = True
        elif line.startswith(PANIC) and r.panic is None:
            r.panic = line[len(PANIC):]


def parse_console(text, names):
    """Parse a whole captured console (for tests and logs)."""
    parser = ConsoleParser(names)
    for line in text.replace("\r", "").split("\n"):
        parser.feed(line)
    return parser.result


def decode_line(raw):
    return raw.replace(b"\r", b"").decode("utf-8", "replace")


def kill_group(proc):
    """Stop QEMU and anything it started: TERM, then KILL if it lingers."""
    for sig, grace in ((signal.SIGTERM, KILL_GRACE), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue
    proc.wait()


def pump_console(proc, parser, deadline, echo, log, settled=None):
    """Read QEMU's output until EOF or the deadline; returns False on timeout.
    @settled(result): true once the run has nothing left to show (a --persist
    host whose expected VMs all ended): it ends then, a short grace later."""
    fd = proc.stdout.fileno()
    pending = b""
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            if parser.result.all_down:    # QEMU should exit now; do not wait long
                deadline = min(deadline, time.monotonic() + POWEROFF_GRACE)
            if settled and not parser.result.settled and settled(parser.result):
                parser.result.settled = True     # the last lines still come
                deadline = min(deadline, time.monotonic() + SETTLE_GRACE)
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if not sel.select(left):
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            if log:
                log.write(chunk)
                log.flush()
            *complete, pending = (pending + chunk).split(b"\n")
            for raw in complete:
                emit_line(decode_line(raw), parser, echo)
    if pending:
        emit_line(decode_line(pending), parser, echo)
    return True


def emit_line(line, parser, echo):
    parser.feed(line)
    if echo:
        echo.write(line + "\n")
        echo.flush()


def run_batch(cmd, names, timeout=DEFAULT_TIMEOUT, log_path=None, echo=True, persist=False,
              on_start=None, settled=None):
    """Run @cmd without a terminal, following the console; returns a RunResult.
    @echo: a file for the live console, True for stdout, None for silence.
    @persist: the hypervisor stays up (--persist), so the run ends at the timeout.
    @on_start(proc) runs once QEMU has started (--restore)."""
    if echo is True:
        echo = sys.stdout
    parser = ConsoleParser(names)
    result = parser.result
    result.persist = persist
    log = open(log_path, "wb") if log_path else None
    try:
        try:
            # Own session: a timeout kills QEMU and anything it spawned, nothing else.
            # umask 077: QEMU's sockets (control, stream) are its user's only
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    umask=0o077)
        except OSError as e:
            result.error = f"cannot start {cmd[0]}: {e.strerror}"
            return result
        try:
            if on_start:
                on_start(proc)
            finished = pump_console(proc, parser, time.monotonic() + timeout, echo, log,
                                    settled)
            if finished:
                result.qemu_status = proc.wait(timeout=POWEROFF_GRACE)
        except subprocess.TimeoutExpired:
            finished = False
        finally:
            if proc.poll() is None:
                kill_group(proc)
            proc.stdout.close()
    finally:
        if log:
            log.close()
    if not finished and result.settled:
        finished = True            # ended by us: every expected VM had ended
    elif not finished and result.all_down:
        result.error = "QEMU did not exit after the hypervisor powered off; killed it"
    elif not finished:
        result.timed_out = True
    elif not result.all_down:
        result.error = f"QEMU exited (status {result.qemu_status}) before all VMs were down"
        if result.panic:
            result.error += f"; hypervisor panic: {result.panic}"
    return result


def exit_status(result, expect=None):
    """(exit code, why) for a batch run.  @expect maps VM names to outcomes; the
    other VMs must shut down cleanly.  Expecting "running" makes a timeout the
    expected end of the run; with --persist (result.persist) the timeout is
    always the end of the run and only the outcomes count."""
    wanted = {name: (expect or {}).get(name, "shutdown") for name in result.vms}
    wrong = [f"vm {name}: {result.vms[name].outcome}, expected {outcome}"
             for name, outcome in wanted.items() if result.vms[name].outcome != outcome]
    timeout_expected = result.persist or (not wrong and "running" in wanted.values())
    if result.timed_out and not timeout_expected:
        return EXIT_TIMEOUT, "timeout"
    if result.error:
        return EXIT_ERROR, result.error
    if wrong:
        return EXIT_VM, "; ".join(wrong)
    return EXIT_OK, "every VM ended as expected"


def print_summary(result, expect, out=None):
    out = out or sys.stdout
    code, why = exit_status(result, expect)
    out.write("\n==== carapace-run summary ====\n")
    for vm in result.vms.values():
        detail = f": {vm.reason}" if vm.reason else ""
        wanted = (expect or {}).get(vm.name)
        note = f" (expected {wanted})" if wanted and wanted != vm.outcome else ""
        out.write(f"vm {vm.name}: {vm.outcome}{detail}{note}\n")
        for text in vm.console:
            out.write(f"    [{vm.name}] {text}\n")
    out.write(f"==== exit {code}: {why} ====\n")
    out.flush()
    return code


