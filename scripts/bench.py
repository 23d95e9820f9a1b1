#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make bench: deterministic figures for Carapace, each with its baseline.

Every run uses QEMU `-icount shift=0,align=off`: one instruction advances the
virtual clock by 1 ns, so at QEMU virt's 10 MHz timebase one `rdtime` tick is
100 instructions, whatever privilege level executed them. Baselines (the same
payload or kernel directly on QEMU + OpenSBI) are measured in the same run.
Writes build/bench/results.json and build/bench/ratios.png (gnuplot).

Usage: scripts/bench.py [STEP ...]  (steps: micro ipi_latency_aia switch cfi_violation linux_boot
hyp_cfi snapshot stream live_snapshot migration disk_move fairness exit_cost footprint
disk net disk_io net_io disk_boot; default all). A run of some steps only
writes build/bench/results-partial.json instead of results.json.

The stream step alone runs without -icount: it measures the snapshot and
restore streams in host wall time, which varies with the host's load.

The guest-I/O steps (disk_io, net_io) run Linux with a spinner beside the I/O,
so that no hart ever idles (an idle machine's -icount clock follows host
time); disk_boot reads the executed instructions from QEMU (QMP).
"""
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("CARAPACE_CACHE",
                            Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "carapace"))
OUT = ROOT / "build" / "bench"
FW = CACHE / "fw_dynamic.bin"
IMAGE = CACHE / "linux" / "Image"
INITRD = ROOT / "build" / "linux" / "initramfs.cpio.gz"
PAYLOAD = ROOT / "build" / "bench" / "bench.bin"
# CARAPACE_HYP: another hypervisor image (build/cfi/carapace.bin: the CFI
# build); carapace-run boots the same one.
HYP = (Path(os.environ["CARAPACE_HYP"]).absolute() if os.environ.get("CARAPACE_HYP")
       else ROOT / "build" / "carapace.bin")
DIRTIER = ROOT / "build" / "guests" / "dirtier.bin"
ELP_PREEMPT = ROOT / "build" / "guests" / "cfi_elp_preempt.bin"
FAIRNESS = ROOT / "build" / "bench" / "fairness.bin"
CPU = "rv64,h=true,zicfilp=true,zicfiss=true,zimop=true,zcmop=true,sstc=true,svadu=true,smstateen=true"
# CARAPACE_QEMU: the QEMU of the bare runs (tools/carapace-run honours it too).
QEMU = os.environ.get("CARAPACE_QEMU") or "qemu-system-riscv64"
ICOUNT = ["-icount", "shift=0,align=off"]
# the machine of the bare runs: the launcher's default (tools/carapace/launcher.py
# PLIC_MACHINE), so both sides of every ratio run on the same board
MACHINE = "virt,aclint=on"
# the AIA machine (ipi_latency_aia): QEMU virt with an APLIC and IMSICs, and
# the guest interrupt files per hart design-aia.md's stage 7 makes the
# default, for both sides of the ratio
AIA_GUESTS = 3
AIA_MACHINE = f"virt,aia=aplic-imsic,aia-guests={AIA_GUESTS}"
INSNS_PER_TICK = 100
BENCH_RE = re.compile(r"BENCH (\S+) ([0-9.]+)")


def say(msg):
    print(f"[bench] {msg}", flush=True)


def bare(kernel, smp, append=None, initrd=None, timeout=600, extra=(), mem="512M", qemu=None,
         machine=MACHINE):
    """Run @kernel as the S-mode kernel on QEMU + OpenSBI; return its console.
    @extra: more QEMU options (devices). @qemu: another QEMU binary."""
    cmd = [qemu or QEMU, "-machine", machine, "-cpu", CPU, "-smp", str(smp),
           "-m", mem, "-display", "none", "-serial", "stdio", "-monitor", "none",
           "-bios", str(FW), "-kernel", str(kernel)] + ICOUNT + list(extra)
    if initrd:
        cmd += ["-initrd", str(initrd)]
    if append:
        cmd += ["-append", append]
    return run(cmd, timeout, stop_on="reboot: Power down")


def carapace(vms, smp, timeout=600, extra=(), qemu=None):
    """Run VMs under Carapace through the launcher; return the console.
    @extra: more launcher options. @qemu: another QEMU binary."""
    cmd = [sys.executable, str(ROOT / "tools" / "carapace-run"), "--batch", "--icount",
           "--timeout", str(timeout), "--smp", str(smp),
           "--ctl-socket", f"/tmp/carapace-bench-{os.getpid()}-{time.monotonic_ns()}.sock",
           *extra]
    for vm in vms:
        cmd += ["--vm", vm]
    return run(cmd, timeout + 30, env={**os.environ, "CARAPACE_QEMU": qemu} if qemu else None)


def conformant_qemu():
    """The conformant QEMU (scripts/qemu-conformant.sh: QEMU 10.0.2 with
    platform/qemu-virt/patches, which keep a guest's SPELP as the spec says)
    if it is built, else None."""
    r = subprocess.run([str(ROOT / "scripts" / "qemu-conformant.sh"), "path"],
                       capture_output=True, text=True)
    path = r.stdout.strip()
    return path if r.returncode == 0 and path and Path(path).is_file() else None


def wait_for_idle_init(p, lines):
    """Until the Linux guest of launcher @p (its console @lines) is idle in
    init, and 2 s more; fails if it stops or takes 300 s."""
    end = time.time() + 300
    while not any("init: idle" in l for l in lines):
        if time.time() > end or p.poll() is not None:
            raise RuntimeError("the guest did not reach init:\n" + "\n".join(lines[-30:]))
        time.sleep(0.2)
    time.sleep(2)


def stop_launcher(p):
    """SIGTERM: carapace-run takes QEMU down with it. Never SIGKILL: that
    would leave its QEMU running. One still there after 60 s is a bug, and
    is said so (the bench fails) rather than hidden."""
    p.terminate()
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"carapace-run (pid {p.pid}) did not exit within 60 s of SIGTERM")


def run(cmd, timeout, stop_on=None, env=None):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, text=True, errors="replace", env=env)
    lines, end = [], time.time() + timeout
    for line in p.stdout:
        lines.append(line.rstrip("\n"))
        if stop_on and stop_on in line:
            break
        if time.time() > end:
            break
    stop_launcher(p)
    return "\n".join(lines)


def bench_lines(text, prefix=""):
    vals = {}
    for line in text.splitlines():
        if prefix and not line.startswith(prefix):
            continue
        m = BENCH_RE.search(line)
        if m:
            vals[m.group(1)] = float(m.group(2))
    return vals


def init_time(text, prefix=""):
    for line in text.splitlines():
        if line.startswith(prefix) and "init: time " in line:
            return int(line.split("init: time ")[1].split()[0]) * INSNS_PER_TICK
    raise RuntimeError("no 'init: time' line:\n" + text[-3000:])


def micro(results):
    say("micro-benchmarks: bare QEMU + OpenSBI (baseline)")
    base = bench_lines(bare(PAYLOAD, 2, append="iters=20000"))
    say("micro-benchmarks: under Carapace")
    hyp = bench_lines(carapace([f"name=b,kernel={PAYLOAD},vcpus=2,bootargs=iters=20000"], 2), "[b]")
    for key, what in [("sbi_roundtrip", "SBI round trip (BASE get_spec_version)"),
                      ("mmio_uart_read", "MMIO read (UART LSR)"),
                      ("timer_irq_latency", "timer interrupt latency (deadline to handler)"),
                      ("ipi_latency", "IPI latency (send to handler on another hart)")]:
        if key in hyp:
            results[key] = {"what": what, "carapace": hyp[key], "bare": base.get(key),
                            "unit": "instructions"}


def ipi_latency_aia(results):
    """micro's IPI ping-pong on the AIA machine, sent as a kernel with an
    IMSIC sends it: a store of identity 1 to the other hart's interrupt file
    page, claimed through stopei (tests/bench/bench.c imsic_ipi=1). Under
    Carapace the guest is an AIA VM (its vIMSIC: design-aia.md 3.6, 4); bare,
    the payload uses the machine's own S files."""
    args = "imsic_ipi=1 iters=20000"
    say("IPI latency through the IMSIC: bare QEMU (aia=aplic-imsic) + OpenSBI (baseline)")
    text = bare(PAYLOAD, 2, append=args, machine=AIA_MACHINE)
    base = bench_lines(text)
    if "ipi_latency_imsic" not in base:
        raise RuntimeError("bare IMSIC ping-pong printed nothing:\n" + text[-3000:])
    say("IPI latency through the IMSIC: under Carapace, an AIA VM on the AIA machine")
    text = carapace([f"name=b,kernel={PAYLOAD},vcpus=2,irqchip=aia,bootargs={args}"], 2,
                    extra=["--aia", "--aia-guests", str(AIA_GUESTS)])
    hyp = bench_lines(text, "[b]")
    if "ipi_latency_imsic" not in hyp:
        raise RuntimeError("IMSIC ping-pong under Carapace printed nothing:\n" + text[-3000:])
    results["ipi_latency_aia"] = {
        "what": "IPI latency through the IMSIC (store to the target's file page, "
                "claim through stopei), AIA machine",
        "carapace": hyp["ipi_latency_imsic"], "bare": base["ipi_latency_imsic"],
        "unit": "instructions"}


def switch(results):
    """Two VMs on one hart ping-pong through HSM retentive suspend."""
    n = 2000
    out = {}
    for label, extra in [("cfi_off", ",cfi=off"), ("cfi_on", "")]:
        args = f"switch=1 iters={n}" + (" fwft_ss=1" if label == "cfi_on" else "")
        say(f"vCPU switch ping-pong, {label}")
        text = carapace([f"name=p{extra},kernel={PAYLOAD},bootargs={args}",
                         f"name=q{extra},kernel={PAYLOAD},bootargs={args}"], 1)
        vals = bench_lines(text, "[p]")
        if "suspend_switch_pair" not in vals:
            raise RuntimeError("switch benchmark printed nothing:\n" + text[-3000:])
        out[label] = vals["suspend_switch_pair"]
    results["vcpu_switch"] = {
        "what": "SBI suspend + switch to another VM's vCPU and back, per call",
        "cfi_off": out["cfi_off"], "cfi_on": out["cfi_on"],
        "cfi_overhead_pct": round(100.0 * (out["cfi_on"] / out["cfi_off"] - 1), 2),
        "unit": "instructions"}


LOOP_RE = re.compile(r"pass ([US]) \(.*?\): bad loop (\d+) us, good loop (\d+) us")


def per_violation(text, n, prefix=""):
    """{"U"|"S": instructions per landing-pad fault}: cfi_elp_preempt's loop of
    n jumps to a non-lpad target (each faults, the handler skips the target)
    minus its loop of n jumps to an lpad, 1000 instructions per us."""
    out = {}
    for line in text.splitlines():
        if line.startswith(prefix) and (m := LOOP_RE.search(line)):
            out[m.group(1)] = round((int(m.group(2)) - int(m.group(3))) * 1000 / n, 1)
    if set(out) != {"U", "S"}:
        raise RuntimeError("cfi_elp_preempt printed no loop times:\n" + text[-3000:])
    return out


def cfi_violation(results):
    """What a landing-pad violation costs, fault to the guest's handler and
    back: bare hardware delivers it; under trap the hypervisor counts it, and
    on a CPU whose sret loses SPELP (QEMU 10.0.2) has the hardware re-deliver
    it (hyp/cfi/lp_redeliver.c: a second exit, at the handler's sret)."""
    n = 2000
    say("landing-pad violations: bare QEMU + OpenSBI (baseline)")
    base = per_violation(bare(ELP_PREEMPT, 1, append=f"n={n}"), n)
    say("landing-pad violations: under Carapace (policy trap)")
    hyp = per_violation(carapace([f"name=v,kernel={ELP_PREEMPT},bootargs=n={n}"], 1), n, "[v]")
    for mode, key, what in [("U", "lp_violation_user", "landing-pad fault in user mode, to "
                             "the guest kernel's handler and back"),
                            ("S", "lp_violation_kernel", "landing-pad fault in the guest "
                             "kernel, to its handler and back")]:
        results[key] = {"what": what, "carapace": hyp[mode], "bare": base[mode],
                        "unit": "instructions"}
    # the same on a CPU that keeps a guest's SPELP (the spec): no re-delivery
    qemu = conformant_qemu()
    if not qemu:
        say("landing-pad violations on the conformant QEMU: not built (make qemu-conformant)")
        return
    say("landing-pad violations: bare conformant QEMU + OpenSBI (baseline)")
    base = per_violation(bare(ELP_PREEMPT, 1, append=f"n={n}", qemu=qemu), n)
    say("landing-pad violations: under Carapace on the conformant QEMU (policy trap)")
    hyp = per_violation(carapace([f"name=v,kernel={ELP_PREEMPT},bootargs=n={n}"], 1,
                                 qemu=qemu), n, "[v]")
    for mode, key in (("U", "lp_violation_user_conformant"),
                      ("S", "lp_violation_kernel_conformant")):
        results[key] = {"what": results[key[:-len("_conformant")]]["what"] +
                        " (conformant QEMU: the guest's SPELP kept, the fault injected)",
                        "carapace": hyp[mode], "bare": base[mode], "unit": "instructions"}


def linux_boot(results):
    args = "console=ttyS0 carapace.test=boot"
    say("Linux boot to init: bare QEMU + OpenSBI, 1 hart (baseline)")
    b = init_time(bare(IMAGE, 1, append=args, initrd=INITRD))
    say("Linux boot to init: under Carapace, 1 hart, 1 vCPU")
    c = init_time(carapace([f"name=l,kernel={IMAGE},initrd={INITRD},mem=256M,vcpus=1,"
                            f"bootargs={args}"], 1), "[l]")
    results["linux_boot"] = {"what": "machine reset to the first line of /init",
                             "carapace": c, "bare": b, "unit": "instructions"}


PLAIN_HYP = ROOT / "build" / "carapace.bin"
CFI_HYP = ROOT / "build" / "cfi" / "carapace.bin"


def hyp_cfi(results):
    """What the hypervisor's own CFI costs (issue 27): the hot paths under the
    plain build (riscv64-unknown-elf-gcc) and the CFI build (make cfi: lpad,
    sspush/sspopchk, ssp swapped at every exit), in the same run; the ratio
    is the CFI build's cost per path."""
    runs = {}
    for label, image in (("plain", PLAIN_HYP), ("cfi", CFI_HYP)):
        hyp = ["--hyp", str(image)]
        say(f"hypervisor build {label}: micro, switch, landing-pad violation, Linux boot")
        m = bench_lines(carapace([f"name=b,kernel={PAYLOAD},vcpus=2,bootargs=iters=20000"], 2,
                                 extra=hyp), "[b]")
        text = carapace([f"name=p,kernel={PAYLOAD},bootargs=switch=1 iters=2000",
                         f"name=q,kernel={PAYLOAD},bootargs=switch=1 iters=2000"], 1, extra=hyp)
        sw = bench_lines(text, "[p]")
        lp = per_violation(carapace([f"name=v,kernel={ELP_PREEMPT},bootargs=n=2000"], 1,
                                    extra=hyp), 2000, "[v]")
        boot = init_time(carapace([f"name=l,kernel={IMAGE},initrd={INITRD},mem=256M,vcpus=1,"
                                   f"bootargs=console=ttyS0 carapace.test=boot"], 1, extra=hyp),
                         "[l]")
        runs[label] = {"sbi_roundtrip": m["sbi_roundtrip"], "mmio_uart_read": m["mmio_uart_read"],
                       "ipi_latency": m["ipi_latency"],
                       "vcpu_switch": sw["suspend_switch_pair"],
                       "lp_violation_user": lp["U"], "linux_boot": boot}
    results["hyp_cfi"] = {
        "what": "each hot path under the plain and the CFI build of the hypervisor",
        "plain": runs["plain"], "cfi": runs["cfi"],
        "cost_pct": {k: round(100.0 * (runs["cfi"][k] / v - 1), 1)
                     for k, v in runs["plain"].items()},
        "unit": "instructions"}


def snapshot(results):
    """An idle 256 MiB Linux guest: snapshot size, the pause of a plain and of a
    live snapshot, and the time a restore takes, all in guest-visible time
    under -icount (1 us = 1000 instructions)."""
    import threading
    tmp = Path(tempfile.mkdtemp(prefix="carapace-bench-"))
    ctl_sock, stream_sock = tmp / "ctl.sock", tmp / "stream.sock"
    cmd = [sys.executable, str(ROOT / "tools" / "carapace-run"), "--batch", "--icount",
           "--timeout", "900", "--smp", "2", "--persist", "--spare-mem", "256M",
           "--ctl-socket", str(ctl_sock), "--stream-socket", str(stream_sock),
           "--vm", f"name=s,kernel={IMAGE},initrd={INITRD},mem=256M,vcpus=1,"
                   "bootargs=console=ttyS0 quiet carapace.test=idle"]
    say("snapshot: idle Linux guest, 256 MiB")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, text=True, errors="replace")
    lines = []
    threading.Thread(target=lambda: lines.extend(l.rstrip("\n") for l in p.stdout),
                     daemon=True).start()

    def ctl(*args):
        r = subprocess.run([sys.executable, str(ROOT / "tools" / "carapace-ctl"), "--socket",
                            str(ctl_sock), "--stream-socket", str(stream_sock), "--json",
                            "--timeout", "300", *args], capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(f"carapace-ctl {args}: {r.stdout}{r.stderr}")
        return json.loads(r.stdout.strip().splitlines()[-1])

    try:
        wait_for_idle_init(p, lines)
        # plain: the raw stream, so that gzip's speed is not in its pause;
        # live: the file a user gets (gzipped), its pause does not wait for it
        plain = ctl("snapshot", "s", str(tmp / "plain.snap"), "--no-compress")
        live = ctl("snapshot", "s", str(tmp / "live.snap"), "--live")
        restored = ctl("restore", str(tmp / "plain.snap"), "--name", "r")
    finally:
        stop_launcher(p)
        shutil.rmtree(tmp, ignore_errors=True)
    ram = 256 << 20
    results["snapshot_size"] = {"what": "snapshot of an idle 256 MiB Linux guest",
                                "bytes": plain["bytes"], "pages": plain["pages"],
                                "percent_of_ram": round(100.0 * plain["bytes"] / ram, 2),
                                "file_bytes": live["file_bytes"],
                                "file_percent_of_ram": round(100.0 * live["file_bytes"] / ram, 2),
                                "unit": "bytes"}
    results["snapshot_pause"] = {"what": "VM stopped by a plain / a live snapshot",
                                 "plain_us": plain["pause_us"], "live_us": live["pause_us"],
                                 "plain_instructions": plain["pause_us"] * 1000,
                                 "live_instructions": live["pause_us"] * 1000,
                                 "unit": "guest-visible us under -icount"}
    results["restore_time"] = {"what": "restore request to the VM running",
                               "us": restored["restore_us"],
                               "instructions": restored["restore_us"] * 1000,
                               "unit": "guest-visible us under -icount"}


STREAM_ROUNDS = 5


def stream_summary(samples):
    """[(bytes, host seconds)] of a stream's runs -> MB/s (10^6 bytes a second)
    of each, and their median, min and max.  A run that moved nothing or took
    no time is a broken measurement: it raises rather than record a figure."""
    if not samples:
        raise RuntimeError("stream: no run")
    rates = []
    for n, secs in samples:
        if n <= 0 or secs <= 0:
            raise RuntimeError(f"stream: a run of {n} bytes in {secs} s")
        rates.append(round(n / secs / 1e6, 1))
    return {"runs_mb_s": rates, "median_mb_s": statistics.median(rates),
            "min_mb_s": min(rates), "max_mb_s": max(rates),
            "runs_s": [round(secs, 3) for _, secs in samples]}


def stream(results):
    """Stream throughput in host wall time (issue 26): an idle 256 MiB Linux
    guest (1 vCPU, 2 harts) snapshotted plain, the stream written raw to a
    file by carapace-ctl's own code (tools/carapace/streams.py), then that
    file restored as a new VM (not verified first: the stream alone) and the
    copy destroyed, STREAM_ROUNDS times; MB/s from the request to the last
    byte written (snapshot) or to the reply that the VM runs (restore).
    Without -icount, as users run it: host time, so the figure moves with the
    host's speed and load (run it on a quiet machine); the first restore
    also pays for the host's first touch of the VM's memory."""
    cc = ctl_module()
    from carapace import streams
    tmp = Path(tempfile.mkdtemp(prefix="carapace-bench-"))
    ctl_sock, stream_sock = tmp / "ctl.sock", tmp / "stream.sock"
    cmd = [sys.executable, str(ROOT / "tools" / "carapace-run"), "--batch",
           "--timeout", "900", "--smp", "2", "--persist", "--spare-mem", "256M",
           "--ctl-socket", str(ctl_sock), "--stream-socket", str(stream_sock),
           "--vm", f"name=s,kernel={IMAGE},initrd={INITRD},mem=256M,vcpus=1,"
                   "bootargs=console=ttyS0 quiet carapace.test=idle"]
    say(f"stream: idle Linux guest, 256 MiB, {STREAM_ROUNDS} plain snapshots and restores "
        "(host time, no -icount)")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, text=True, errors="replace")
    lines = []
    threading.Thread(target=lambda: lines.extend(l.rstrip("\n") for l in p.stdout),
                     daemon=True).start()
    saves, loads = [], []
    try:
        wait_for_idle_init(p, lines)
        path = tmp / "plain.snap"
        for i in range(STREAM_ROUNDS):
            with cc.Client(ctl_sock, timeout=300) as c:
                t = time.monotonic()
                reply = streams.snapshot_vm(c, stream_sock, "s", path, compress=False)
                saves.append((reply["bytes"], time.monotonic() - t))
                t = time.monotonic()
                streams.restore_vm(c, stream_sock, path, name=f"r{i}", verify=False,
                                   stream_bytes=reply["bytes"])
                loads.append((reply["bytes"], time.monotonic() - t))
                c.request("destroy", {"vm": f"r{i}"})
    finally:
        stop_launcher(p)
        shutil.rmtree(tmp, ignore_errors=True)
    crc = "tables" if any("crc32c: tables" in l for l in lines) else "Zbc products or tables (no Zbc)"
    results["stream_throughput"] = {
        "what": "plain snapshot (raw file) and restore of an idle 256 MiB Linux guest, "
                "host wall time without -icount",
        "bytes": saves[-1][0], "crc32c": crc,
        "snapshot": stream_summary(saves), "restore": stream_summary(loads),
        "unit": "MB/s (10^6 bytes per host second)"}


def ctl_module():
    """The management client (tools/carapace/client.py, docs/management.md)."""
    sys.path.insert(0, str(ROOT / "tools"))
    from carapace import client
    return client


def snapshot_dropped(cc, ctl_sock, stream_sock, vm, live):
    """One snapshot of @vm whose stream is read and dropped as fast as it comes
    (no file, no compression: the host side holds the hypervisor back as little
    as it can). Returns the reply and the VM's counters just before and after."""
    stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stream.connect(str(stream_sock))
    stream.settimeout(0.2)
    got, stop = [0], threading.Event()

    def drain():
        while not stop.is_set():
            try:
                chunk = stream.recv(1 << 20)
            except TimeoutError:
                continue
            if not chunk:
                return
            got[0] += len(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        with cc.Client(ctl_sock, timeout=300) as c:
            c.request("hello")      # the stream connection is known before the request
            before = c.request("stats", {"vm": vm})["vms"][0]
            reply = c.request("snapshot", {"vm": vm, "live": live})
            after = c.request("stats", {"vm": vm})["vms"][0]
        end = time.time() + 60
        while got[0] < reply["bytes"] and reader.is_alive() and time.time() < end:
            time.sleep(0.01)
        if got[0] != reply["bytes"]:
            raise RuntimeError(f"snapshot: {got[0]} stream bytes, the reply says {reply['bytes']}")
    finally:
        stop.set()
        reader.join()
        stream.close()
    return reply, before, after


def dirtier_run(smp, mib=16, ram=64):
    """One run of tests/guests/dirtier.c on @smp harts: a live snapshot, then a
    plain one, while it runs. Returns the figures of live_snapshot()."""
    cc = ctl_module()
    tmp = Path(tempfile.mkdtemp(prefix="carapace-bench-"))
    ctl_sock, stream_sock = tmp / "ctl.sock", tmp / "stream.sock"
    cmd = [sys.executable, str(ROOT / "tools" / "carapace-run"), "--batch", "--icount",
           "--timeout", "600", "--smp", str(smp),
           "--ctl-socket", str(ctl_sock), "--stream-socket", str(stream_sock),
           "--vm", f"name=d,kernel={DIRTIER},mem={ram}M,vcpus=1,"
                   f"bootargs=mib={mib} win_us=1000 windows=30000"]
    say(f"live snapshot: a guest writing {mib} MiB in a loop, {ram} MiB of RAM, {smp} hart(s)")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, text=True, errors="replace")
    lines = []
    threading.Thread(target=lambda: lines.extend(l.rstrip("\n") for l in p.stdout),
                     daemon=True).start()
    dirty = re.compile(r"^\[d\] DIRTY (\d+) (\d+) (\d+) (\d+) (\d+)$")

    def windows():
        return sum(1 for l in list(lines) if dirty.match(l))

    def wait_windows(n):
        end = time.time() + 300
        while windows() < n:
            if time.time() > end or p.poll() is not None:
                raise RuntimeError("the dirtier stopped early:\n" + "\n".join(lines[-30:]))
            time.sleep(0.05)

    try:
        wait_windows(60)
        live, l0, l1 = snapshot_dropped(cc, ctl_sock, stream_sock, "d", True)
        wait_windows(windows() + 60)
        plain, _, _ = snapshot_dropped(cc, ctl_sock, stream_sock, "d", False)
        wait_windows(windows() + 20)
    finally:
        stop_launcher(p)
        shutil.rmtree(tmp, ignore_errors=True)

    # windows, and where the hypervisor's log lines fell among them: a line
    # comes before the DIRTY line of the window it happened in
    wins, marks = [], []
    for l in lines:
        m = dirty.match(l)
        if m:
            wins.append(tuple(int(g) for g in m.groups()[1:]))  # iters, ticks, stolen, longest
        elif l.endswith("vm d: paused") or "vm d: snapshot of" in l:
            marks.append((len(wins), "end" if "snapshot of" in l else "pause"))
    if [k for _, k in marks] != ["pause", "end", "pause", "end"]:
        raise RuntimeError(f"live snapshot: unexpected log lines {marks}:\n" + "\n".join(lines[-30:]))
    (l_start, _), (l_end, _), (p_start, _), (p_end, _) = marks
    rate = statistics.median(w[0] / w[1] for w in wins[10:l_start])    # iterations per tick
    after = statistics.median(w[0] / w[1] for w in wins[l_end + 5:p_start])

    def cost(a, b):
        seg = wins[a:b + 1]
        ticks = sum(w[1] for w in seg)
        lost = ticks - sum(w[0] for w in seg) / rate
        return ticks, lost, max(w[3] for w in seg)

    def ms(t):      # ticks -> guest ms
        return round(t * INSNS_PER_TICK / 1e6, 1)

    ticks, lost, longest = cost(l_start, l_end)
    _, p_lost, _ = cost(p_start, p_end)
    return {
        "baseline_iterations_per_ms": round(rate * 1e6 / INSNS_PER_TICK, 1),
        "after_vs_baseline_pct": round(100.0 * after / rate, 2),
        "stream_bytes": live["bytes"], "pages": live["pages"],
        "pause_us": live["pause_us"],
        "duration_ms": ms(ticks),
        "lost_ms": ms(lost),
        "lost_pct": round(100.0 * lost / ticks, 1),
        "throughput_pct": round(100.0 * (1 - lost / ticks), 1),
        "lost_ms_per_mib": round(ms(lost) / (live["bytes"] / (1 << 20)), 2),
        "longest_stall_ms": ms(longest),
        "cow_copies": ((l1["guest_page_faults"] - l0["guest_page_faults"]) -
                       (l1["mmio"] - l0["mmio"])),
        "plain_pause_ms": round(plain["pause_us"] / 1000, 1),
        "plain_lost_ms": ms(p_lost)}


def live_snapshot(results):
    """What a live snapshot costs a running guest. tests/guests/dirtier.c
    computes and writes a 16 MiB region in a loop (every 2 MiB chunk within
    0.14 ms) and prints, per 1 ms window of its guest time (rdtime), how many
    iterations it did. A live snapshot is taken, then a plain one, while it
    runs; the stream is read and dropped by bench itself. Baseline: its own
    rate in the windows before the first snapshot, same run. Lost work = the
    snapshot's windows' guest time minus their iterations at the baseline rate.
    Under -icount every instruction of any hart (the streaming hart, the copies
    on a write fault) advances the one guest clock, so the lost work is what
    the snapshot costs in instructions, shown as guest time. Two runs: the
    guest alone on one hart with the stream on the other (2 harts), and the
    guest sharing the only hart with the stream (1 hart)."""
    r = dirtier_run(2)
    one = dirtier_run(1)
    results["live_snapshot_cost"] = {
        "what": "a guest computing and writing 16 MiB in a loop (64 MiB RAM, 1 vCPU) while "
                "a live snapshot of it is taken, 2 harts: its work lost, against its own "
                "rate before the snapshot in the same run; one_hart: the same on 1 hart",
        **r,
        "one_hart": {k: one[k] for k in ("duration_ms", "lost_ms", "lost_pct", "throughput_pct",
                                         "lost_ms_per_mib", "longest_stall_ms", "cow_copies")},
        "unit": "guest-visible ms under -icount (1 ms = 1 M instructions)"}



# --- live migration (issue 10) ----------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class BenchHost:
    """One carapace-run under -icount in the background, its console kept."""

    def __init__(self, tag, tmp, smp, args):
        self.ctl_sock, self.stream_sock = tmp / f"{tag}.sock", tmp / f"{tag}s.sock"
        cmd = [sys.executable, str(ROOT / "tools" / "carapace-run"), "--batch", "--icount",
               "--timeout", "900", "--smp", str(smp), "--ctl-socket", str(self.ctl_sock), *args]
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, text=True, errors="replace")
        self.lines = []
        threading.Thread(target=lambda: self.lines.extend(l.rstrip("\n") for l in self.p.stdout),
                         daemon=True).start()

    def wait_for(self, text, timeout=300):
        end = time.time() + timeout
        while not any(text in l for l in list(self.lines)):
            if time.time() > end or self.p.poll() is not None:
                raise RuntimeError(f"no {text!r}:\n" + "\n".join(self.lines[-30:]))
            time.sleep(0.1)

    def stop(self):
        stop_launcher(self.p)


def bench_credentials(tmp):
    """Migration credentials for the two hosts (tools/carapace-tls init): the
    stream goes over TLS, as users run it."""
    creds = tmp / "tls"
    subprocess.run([sys.executable, str(ROOT / "tools" / "carapace-tls"), "init", str(creds)],
                   check=True, capture_output=True, text=True)
    return creds


def migrate_once(src, vm, port, *extra):
    """carapace-ctl migrate (extra: its options, the credentials among them):
    its final JSON reply (wall_us added by the tool)."""
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "carapace-ctl"), "--socket",
                        str(src.ctl_sock), "--stream-socket", str(src.stream_sock), "--json",
                        "--timeout", "600", "migrate", vm, f"127.0.0.1:{port}", *extra],
                       capture_output=True, text=True)
    out = r.stdout.strip().splitlines()
    if r.returncode or not out:
        raise RuntimeError(f"migrate {vm}: {r.stdout}{r.stderr}")
    return json.loads(out[-1])


def linux_migration(kind, bootargs, *extra):
    """A 256 MiB Linux guest (1 vCPU) migrated between two -icount hosts
    (@extra: carapace-ctl migrate's options)."""
    tmp = Path(tempfile.mkdtemp(prefix="carapace-bench-"))
    port = free_port()
    say(f"migration: {kind} Linux guest, 256 MiB")
    src = BenchHost("a", tmp, 2, ["--stream-socket", str(tmp / "as.sock"), "--persist",
                                  "--vm", f"name=m,kernel={IMAGE},initrd={INITRD},mem=256M,"
                                          f"vcpus=1,bootargs=console=ttyS0 quiet {bootargs}"])
    src.stream_sock = tmp / "as.sock"
    creds = bench_credentials(tmp)
    dst = BenchHost("b", tmp, 2, ["--incoming", str(port), "--tls-dir", str(creds)])
    try:
        src.wait_for("init: " if kind == "idle" else "cfitest: round 3/")
        dst.wait_for("waiting for an incoming migration")
        time.sleep(2)
        reply = migrate_once(src, "m", port, "--tls-dir", str(creds), *extra)
        dst.wait_for("vm m: migrated in")
    finally:
        src.stop()
        dst.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return {"rounds": reply["rounds"], "bytes": reply["bytes"], "pages": reply["pages"],
            "total_us": reply["total_us"], "wall_us": reply["wall_us"],
            "downtime_source_us": reply["downtime_us"],
            "downtime_destination_us": reply["dest_downtime_us"],
            "downtime_us": reply["downtime_us"] + reply["dest_downtime_us"],
            "expected_downtime_us": reply.get("expected_downtime_us"),
            "dirty_limit": reply.get("dirty_limit"), "dirty_holds": reply.get("dirty_holds"),
            "dirty_held_us": reply.get("dirty_held_us")}


def dirty_logging_cost(paced=False):
    """tests/guests/dirtier.c (writes 16 MiB in a loop, reports iterations per
    1 ms of guest time) migrated with at most 3 pre-copy rounds, unpaced: the
    work it loses while its writes are logged, against its own rate before,
    same run. @paced: migrated as users do (auto-converge, the 20 ms limit):
    its downtime and what the pace costs it."""
    tmp = Path(tempfile.mkdtemp(prefix="carapace-bench-"))
    port = free_port()
    say(f"migration: a guest writing 16 MiB in a loop, 64 MiB of RAM, 2 harts"
        f"{', paced' if paced else ''}")
    src = BenchHost("a", tmp, 2, ["--stream-socket", str(tmp / "as.sock"), "--persist",
                                  "--vm", f"name=d,kernel={DIRTIER},mem=64M,vcpus=1,"
                                          "bootargs=mib=16 win_us=1000 windows=30000"])
    src.stream_sock = tmp / "as.sock"
    creds = bench_credentials(tmp)
    dst = BenchHost("b", tmp, 2, ["--incoming", str(port), "--tls-dir", str(creds)])
    dirty = re.compile(r"^\[d\] DIRTY (\d+) (\d+) (\d+) (\d+) (\d+)$")
    try:
        end = time.time() + 300
        while sum(1 for l in list(src.lines) if dirty.match(l)) < 60:
            if time.time() > end or src.p.poll() is not None:
                raise RuntimeError("the dirtier stopped early:\n" + "\n".join(src.lines[-30:]))
            time.sleep(0.05)
        dst.wait_for("waiting for an incoming migration")
        # unpaced: what logging alone costs (auto-converge would hold it too)
        opts = [] if paced else ["--max-rounds", "3", "--no-auto-converge"]
        reply = migrate_once(src, "d", port, *opts, "--tls-dir", str(creds))
    finally:
        src.stop()
        dst.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    wins, start, pause = [], None, None
    for l in src.lines:
        m = dirty.match(l)
        if m:
            wins.append(tuple(int(g) for g in m.groups()[1:]))
        elif l.endswith("vm d: migrating"):
            start = len(wins)
        elif l.endswith("vm d: paused"):
            pause = len(wins)
    if start is None or pause is None or pause <= start:
        raise RuntimeError("migration: no pre-copy windows:\n" + "\n".join(src.lines[-30:]))
    rate = statistics.median(w[0] / w[1] for w in wins[10:start])
    seg = wins[start:pause]
    ticks = sum(w[1] for w in seg)
    lost = ticks - sum(w[0] for w in seg) / rate

    def ms(t):
        return round(t * INSNS_PER_TICK / 1e6, 1)
    return {"rounds": reply["rounds"], "bytes": reply["bytes"],
            "precopy_ms": ms(ticks), "lost_ms": ms(lost),
            "throughput_pct": round(100.0 * (1 - lost / ticks), 1),
            "lost_ms_per_round": round(ms(lost) / max(1, reply["rounds"]), 1),
            "downtime_us": reply["downtime_us"] + reply["dest_downtime_us"],
            "expected_downtime_us": reply.get("expected_downtime_us"),
            "dirty_limit": reply.get("dirty_limit"), "dirty_holds": reply.get("dirty_holds")}


def migration(results):
    """Live migration between two Carapace hosts (two QEMUs under -icount, the
    stream relayed over TCP on the loopback by carapace-ctl): an idle and a busy
    256 MiB Linux guest, and what dirty logging costs a guest that writes.
    Downtime: the source's guest time from pausing the VM to its last byte
    plus the destination's from the first stop-and-copy byte to the guest
    running (the two QEMUs keep separate clocks); wall time beside it."""
    idle = linux_migration("idle", "carapace.test=idle")
    busy_args = "carapace.test=rounds carapace.rounds=100000 carapace.dirty=8"
    busy = linux_migration("busy", busy_args)
    unpaced = linux_migration("busy", busy_args, "--no-auto-converge")
    results["migration"] = {"what": "a 256 MiB Linux guest (1 vCPU) migrated between two "
                                    "Carapace hosts; busy: cfitest rounds rewriting 8 MiB, "
                                    "auto-converge on (the default, limit 20 ms) and off "
                                    "(the same run's baseline); goal: busy downtime <= 50 ms",
                            "idle": idle, "busy": busy, "busy_unpaced": unpaced,
                            "goal_downtime_us": 50000,
                            "unit": "guest-visible us under -icount; wall_us: host time"}
    results["dirty_logging_cost"] = {"what": "a guest computing and writing 16 MiB in a loop "
                                             "(64 MiB RAM) migrated with at most 3 pre-copy "
                                             "rounds: its work lost while logged",
                                     **dirty_logging_cost(),
                                     "paced": dirty_logging_cost(paced=True),
                                     "unit": "guest-visible ms under -icount"}

# --- moving guests that do I/O (issue 25) --------------------------------------

DISK_GEN = ROOT / "build" / "guests" / "disk_gen.bin"
DISK_GEN_MIB = 32                # its disk: 512 blocks of 64 KiB
DISK_GEN_RATE = re.compile(r"^\[d\] DISKGEN-RATE (\d+) (\d+)$")


def disk_gen_vm(disk, bootargs):
    """tests/guests/disk_gen.c on @disk with a NIC on the switch lan."""
    return ["--switch", "name=lan",
            "--vm", f"name=d,kernel={DISK_GEN},mem=64M,vcpus=1,disk={disk},net=lan,"
                    f"bootargs={bootargs}"]


def disk_move_once(mode, bootargs, tmp, creds, tag):
    """disk_gen (@bootargs) moved live from host A to a fresh host B whose
    disk comes in @mode: copy (a new image B's launcher makes) or shared (A's
    image). The migrate reply's figures."""
    port = free_port()
    disk = tmp / f"{tag}-a.raw"
    with open(disk, "wb") as f:
        f.truncate(DISK_GEN_MIB << 20)
    target = (f"{tmp / f'{tag}-b.raw'}:size={DISK_GEN_MIB << 20}" if mode == "copy"
              else str(disk))
    src = BenchHost(f"{tag}a", tmp, 2, ["--stream-socket", str(tmp / f"{tag}as.sock"),
                                         "--persist", *disk_gen_vm(disk, bootargs)])
    src.stream_sock = tmp / f"{tag}as.sock"
    dst = BenchHost(f"{tag}b", tmp, 2, ["--incoming", str(port), "--tls-dir", str(creds),
                                         "--switch", "name=lan", "--incoming-disk", target])
    try:
        src.wait_for("DISKGEN-READY")
        dst.wait_for("waiting for an incoming migration")
        time.sleep(3)       # the guest's writes well under way (host time)
        reply = migrate_once(src, "d", port, "--tls-dir", str(creds))
        dst.wait_for("vm d: migrated in")
    finally:
        src.stop()
        dst.stop()
    if reply.get("disk_mode") != mode:
        raise RuntimeError(f"disk_move: asked for {mode}, the move says {reply}")
    return {"downtime_us": reply["downtime_us"] + reply["dest_downtime_us"],
            "downtime_source_us": reply["downtime_us"],
            "downtime_destination_us": reply["dest_downtime_us"],
            "total_us": reply["total_us"], "wall_us": reply["wall_us"],
            "rounds": reply["rounds"], "bytes": reply["bytes"],
            "ram_bytes": reply["pages"] * 4096, "disk_bytes": reply["disk_bytes"],
            "disk_blocks": reply["disk_blocks"]}


DISK_SNAPS = 3      # live snapshots per pattern, one host run: the median is the figure


def disk_snapshot_cost(tmp, pattern):
    """disk_gen writing as fast as its disk lets it (the disk's default rate
    limit), at random or in sequence (@pattern), DISK_SNAPS live snapshots
    with its disk taken one after the other: for each, its writes per guest
    ms in the snapshot's windows against the 20 windows before it, same run;
    the median of the snapshots is the figure (one snapshot's windows are
    few: a single one varies by +-10 points from run to run). @pattern
    "neighbour": the writer writes at random while the live snapshots are of
    another VM beside it, idle, whose 32 MiB disk is full (no write of the
    writer is ever held): what the stream alone costs the writer under
    -icount."""
    cc = ctl_module()
    disk = tmp / f"snap-{pattern}.raw"
    with open(disk, "wb") as f:
        f.truncate(DISK_GEN_MIB << 20)
    seq = " seq=1" if pattern == "sequential" else ""
    target, extra = "d", []
    if pattern == "neighbour":
        full = tmp / "snap-neighbour-n.raw"
        full.write_bytes(os.urandom(DISK_GEN_MIB << 20))
        target = "n"
        extra = ["--vm", f"name=n,kernel={DISK_GEN},mem=64M,vcpus=1,disk={full},"
                         "bootargs=run_ms=400000 idle=1"]
    h = BenchHost(f"s{pattern}", tmp, 2, ["--stream-socket", str(tmp / f"s{pattern}-stream.sock"),
                                          "--persist",
                                          *disk_gen_vm(disk, f"run_ms=400000 win_ms=20{seq}"),
                                          *extra])
    h.stream_sock = tmp / f"s{pattern}-stream.sock"

    def windows():
        return sum(1 for l in list(h.lines) if DISK_GEN_RATE.match(l))

    def wait_windows(n, end):
        mark = windows()
        while windows() < mark + n and time.time() < end:
            time.sleep(0.1)

    replies = []
    try:
        h.wait_for("DISKGEN-READY")
        end = time.time() + 600
        wait_windows(60, end)
        for _ in range(DISK_SNAPS):
            live, _, _ = snapshot_dropped(cc, h.ctl_sock, h.stream_sock, target, True)
            replies.append(live)
            wait_windows(30, end)
    finally:
        h.stop()
    wins, marks = [], []
    for l in h.lines:
        m = DISK_GEN_RATE.match(l)
        if m:
            wins.append((int(m.group(1)), int(m.group(2))))
        elif l.endswith(f"vm {target}: paused") or f"vm {target}: snapshot of" in l:
            marks.append(len(wins))
    if len(marks) != 2 * DISK_SNAPS or not all(r.get("disks") for r in replies):
        raise RuntimeError(f"disk snapshot: unexpected log {marks} {replies}")
    each = []
    for i, live in enumerate(replies):
        start, stop = marks[2 * i], marks[2 * i + 1]
        before = wins[max(10, start - 20):start]
        during = wins[start:stop + 1]
        rate = sum(w for w, _ in before) / sum(t for _, t in before)
        rate_during = sum(w for w, _ in during) / sum(t for _, t in during)
        each.append({"writes_per_ms_before": round(rate * 1e4, 2),
                     "writes_per_ms_during": round(rate_during * 1e4, 2),
                     "cost_pct": round(100 * (1 - rate_during / rate), 1),
                     "duration_ms": round(sum(t for _, t in during) / 1e4, 1),
                     "pause_us": live["pause_us"], "stream_bytes": live["bytes"],
                     "disk_runs": live.get("disk_runs"), "disk_holds": live.get("disk_holds")})
    mid = sorted(each, key=lambda e: e["cost_pct"])[len(each) // 2]
    return {**mid, "goal_pct": 20, "cost_pct_each": [e["cost_pct"] for e in each],
            "snapshots": each}


def disk_move(results):
    """A guest writing its disk and sending on its NIC (tests/guests/
    disk_gen.c: 4 KiB writes at random over a 32 MiB disk, a frame after
    each) moved live between two -icount hosts over TLS, its disk copied in
    the stream and shared; at 1 MiB/s of writes, and idle (no write, the
    same run's baseline). Then what a live snapshot with the disk costs the
    guest's write rate."""
    tmp = Path(tempfile.mkdtemp(prefix="carapace-bench-"))
    creds = bench_credentials(tmp)
    out = {}
    try:
        for mode in ("copy", "shared"):
            say(f"disk move: {mode} mode, idle guest")
            idle = disk_move_once(mode, "run_ms=200000 idle=1", tmp, creds, f"{mode}i")
            say(f"disk move: {mode} mode, guest writing 1 MiB/s")
            busy = disk_move_once(mode, "run_ms=200000 rate_kib=1024", tmp, creds, f"{mode}w")
            out[mode] = {"idle": idle, "writing_1mib_s": busy}
        snap = {}
        for pattern in ("random", "sequential", "neighbour"):
            say(f"disk move: live snapshot of a guest writing its disk ({pattern})")
            snap[pattern] = disk_snapshot_cost(tmp, pattern)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    results["disk_move"] = {"what": "disk_gen (64 MiB RAM, 32 MiB disk, a NIC) moved live "
                                    "between two -icount hosts: idle, and writing 1 MiB/s "
                                    "of 4 KiB random writes with a frame after each; goal: "
                                    "downtime <= 10 ms writing",
                            **out, "goal_downtime_us": 10000,
                            "unit": "guest-visible us under -icount; wall_us: host time"}
    results["disk_snapshot_cost"] = {"what": "disk_gen writing 4 KiB units as fast as its "
                                             "disk's default limit lets it, at random over "
                                             "its 32 MiB disk or one after the other, a live "
                                             "snapshot with its disk: writes per guest ms "
                                             "during against before",
                                     **snap, "unit": "guest ms under -icount"}


# --- fairness under abuse (issue 14) ------------------------------------------

SLICE_US = 5000           # the scheduler's default slice, passed explicitly
FAIR_RE = re.compile(r"^\[v\] FAIR (\w+) ?(\d*)$")
ABUSES = ("console", "ipi", "spin", "rfence")


VIO_BLK = ROOT / "build" / "guests" / "vio_blk.bin"
VIO_RATE_RE = re.compile(r"(?:\[(\w+)\] )?INFO: vio_blk: VIO-RATE: ops=(\d+) us=(\d+)")


def vio_rate(text, vm=None):
    """Instructions per victim operation (write 4 KiB, read it back, verify):
    under -icount shift=0 a guest microsecond is 1000 instructions."""
    for m in VIO_RATE_RE.finditer(text):
        if m.group(1) == vm:
            return int(m.group(3)) * 1000 / int(m.group(2))
    say("disk: no VIO-RATE line:\n" + text[-1500:])
    return None


def disk(results):
    """tests/guests/vio_blk.c mode=victim (a polled driver writing, reading
    back and verifying 4 KiB blocks) on bare QEMU's virtio-blk-device and on a
    Carapace guest disk (a virtio-blk-pci disk behind the guest model), the
    instructions of one operation (two requests) in each; then the same victim
    beside a VM flooding its own disk with 64 KiB reads, against its rate alone
    in the same run's baseline."""
    with tempfile.TemporaryDirectory() as tmp:
        imgs = [Path(tmp) / f"d{i}.raw" for i in range(3)]
        for img in imgs:
            with open(img, "wb") as f:
                f.truncate(8 << 20)
        args = "sectors=16384 mode=victim seconds=1"
        say("disk: bare QEMU virtio-blk-device")
        bare_ins = vio_rate(bare(VIO_BLK, 1, append=args, timeout=300, extra=[
            "-global", "virtio-mmio.force-legacy=false",
            "-drive", f"file={imgs[0]},if=none,id=d0,format=raw",
            "-device", "virtio-blk-device,drive=d0"]))
        say("disk: Carapace guest disk")
        hyp_ins = vio_rate(carapace([f"name=v,kernel={VIO_BLK},vcpus=1,mem=64M,disk={imgs[1]},"
                                     f"bootargs={args}"], 1, timeout=300), "v")
        say("disk: the victim beside a flooding neighbour (2 harts)")
        flood = carapace([f"name=v,kernel={VIO_BLK},vcpus=1,mem=64M,disk={imgs[1]},"
                          f"bootargs={args}",
                          f"name=f,kernel={VIO_BLK},vcpus=1,mem=64M,disk={imgs[2]},"
                          "bootargs=sectors=16384 mode=flood seconds=2"], 2, timeout=300)
        alone = carapace([f"name=v,kernel={VIO_BLK},vcpus=1,mem=64M,disk={imgs[1]},"
                          f"bootargs={args}"], 2, timeout=300)
    flooded, alone_ins = vio_rate(flood, "v"), vio_rate(alone, "v")
    if bare_ins and hyp_ins:
        results["disk_op_insns"] = {"carapace": hyp_ins, "bare": bare_ins}
    if flooded and alone_ins:
        results["disk_op_insns_beside_flood"] = {"carapace": flooded, "bare": alone_ins}
        results["disk_fair_share"] = {
            "what": "victim's disk operations a guest second beside a VM flooding its disk, "
                    "against alone (both at the default limits, 2 harts)",
            "pct_of_alone": round(100 * alone_ins / flooded, 1), "bound_pct": 50,
            "unit": "percent"}


VIO_NET = ROOT / "build" / "guests" / "vio_net.bin"
PING_RE = re.compile(r"\[p\] INFO: vio_net: NET-PING: sent=(\d+) echoed=(\d+) us=(\d+)")
FLOOD_RE = re.compile(r"\[f\] INFO: vio_net: NET-FLOOD: tag=\d+ queued=\d+ sent=(\d+) us=(\d+)")


def ping_run(third):
    """A ping pair on switch lan (300 frames, 50 ms for each echo) beside a
    third VM @third: (round trips a guest second, percent lost, the third's
    frames a second or None)."""
    text = carapace([f"name=e,kernel={VIO_NET},vcpus=1,mem=32M,net=lan,bootargs=mode=echo "
                     "seconds=4",
                     f"name=p,kernel={VIO_NET},vcpus=1,mem=32M,net=lan,bootargs=mode=ping "
                     "count=300 wait_ms=50 loss_ok=1 tag=2", third], 2, timeout=300,
                    extra=["--switch", "name=lan"])
    m, f = PING_RE.search(text), FLOOD_RE.search(text)
    if not m:
        say("net: no NET-PING line:\n" + text[-1500:])
        return None
    sent, echoed, us = (int(g) for g in m.groups())
    return (round(echoed * 1e6 / us, 1), round(100 * (sent - echoed) / sent, 1),
            round(int(f.group(1)) * 1e6 / int(f.group(2))) if f else None)


def net(results):
    """tests/guests/vio_net.c: a ping pair on a switch beside a VM that only
    spins (the CPU share alone), beside one flooding the switch with
    broadcast frames at its NIC's default limit, and with no limit."""
    out = {}
    for kind, third in (
            ("spinner", f"name=f,kernel={ROOT / 'build' / 'guests' / 'spin.bin'},vcpus=1,"
                        "mem=32M,bootargs=spin_ms=3000"),
            ("flood", f"name=f,kernel={VIO_NET},vcpus=1,mem=32M,net=lan,bootargs=mode=flood "
                      "seconds=3 tag=5"),
            ("flood_unlimited", f"name=f,kernel={VIO_NET},vcpus=1,mem=32M,net=lan:pps=0:bw=0,"
                                "bootargs=mode=flood seconds=3 tag=5")):
        say(f"net: a ping pair beside {kind.replace('_', ' ')}")
        r = ping_run(third)
        if r:
            out[kind] = {"round_trips_per_s": r[0], "lost_pct": r[1], "flood_fps": r[2]}
    if "spinner" in out:
        for kind in ("flood", "flood_unlimited"):
            if kind in out:
                out[kind]["pct_of_spinner"] = round(
                    100 * out[kind]["round_trips_per_s"] / out["spinner"]["round_trips_per_s"], 1)
    results["net_fair_share"] = {"what": "a ping pair on a switch (round trips a guest second, "
                                         "frames lost) beside a spinner, a broadcast flood at "
                                         "the NIC default limit, one with no limit (2 harts)",
                                 **out, "bound": {"pct_of_spinner": 70, "lost_pct": 8},
                                 "unit": "round trips per guest second; percent"}


def fair_run(smp, abuse, samples=500, abuser_vcpus=2):
    """One victim VM (1 vCPU, tests/bench/fairness.c role=victim) alone
    (abuse=None) or beside a 2-vCPU abuser VM on @smp host harts."""
    vms = [f"name=v,kernel={FAIRNESS},vcpus=1,mem=64M,"
           f"bootargs=role=victim samples={samples} period_us=1000 settle_ms=30"]
    if abuse:
        vms.append(f"name=a,kernel={FAIRNESS},vcpus={abuser_vcpus},mem=64M,"
                   f"bootargs=role=abuser abuse={abuse}")
    cmd = [sys.executable, str(ROOT / "tools" / "carapace-run"), "--batch", "--icount",
           "--timeout", "300", "--smp", str(smp), "--timeslice-us", str(SLICE_US),
           "--ctl-socket", f"/tmp/carapace-bench-{os.getpid()}-{time.monotonic_ns()}.sock"]
    for vm in vms:
        cmd += ["--vm", vm]
    say(f"fairness: {smp} hart(s), victim " + (f"beside a 2-vCPU {abuse} abuser" if abuse
                                               else "alone (baseline)"))
    text = run(cmd, 330, stop_on="[v] FAIR end")
    vals = {m.group(1): int(m.group(2) or 0) for l in text.splitlines()
            if (m := FAIR_RE.match(l))}
    if "end" not in vals:
        # a starved victim never finishes: that is a failure of the bound, not of bench
        say(f"fairness: the victim did not finish ({smp} harts, {abuse}):\n" + text[-1500:])
        return None
    us = lambda t: round(t * 1e6 / 10_000_000, 1)     # 10 MHz timebase
    return {"lat_median_us": us(vals["lat_median_ticks"]), "lat_p99_us": us(vals["lat_p99_ticks"]),
            "lat_max_us": us(vals["lat_max_ticks"]),
            "lat_mean_us": round(vals["lat_mean_x100"] / 100 * 0.1, 2),
            "iters_per_s": vals["iters_per_s"], "samples": vals["samples"]}


def fairness(results):
    """A victim VM's timer-interrupt latency (deadline to handler) and the rate
    of a fixed loop, alone and then beside another VM on the same harts (the
    scheduler shares every hart among all runnable vCPUs, no pinning): a
    benign busy neighbour (`busy`: a loop with a 1 ms tick, the reference),
    then the abuses: console flood (UART and DBCN), SBI IPI storm, spinning
    with interrupts off, SBI RFENCE storm. N = 3 runnable vCPUs (the victim
    and the neighbour's 2), H host harts, slice S, round-robin. Bounds:
    - latency, p99 and max: <= ceil((N - H) / H) slices + 10 % of a slice (a
      deadline that falls while the victim is off its hart waits for at most
      that many other slices to end); on 2 harts plus half a slice: an exit
      that waits for the other hart (a lock, an RFENCE acknowledgment) ends a
      slice late by up to one turn of QEMU's single-threaded round robin
      between harts (at most half the time to the next timer deadline; on
      hardware microseconds).
    - throughput, 1 hart: >= 0.9 / N of the victim alone (its 1/N share).
      2 harts: >= 0.5 / N, a starvation floor only: under -icount the harts
      share one instruction clock and QEMU splits it unevenly between busy
      harts (a victim alone on its hart keeps 0.34 of its rate beside one
      spinning vCPU on the other hart, 0.53 beside one that ticks), so the
      H/N share of real hardware cannot be checked from guest time."""
    n, slice_us = 3, SLICE_US
    out, ok = {}, True
    for smp in (1, 2):
        base = fair_run(smp, None)
        if base is None:
            raise RuntimeError(f"fairness: the victim alone did not finish on {smp} hart(s)")
        lat_bound = -(-(n - smp) // smp) * slice_us + slice_us / 10 + (slice_us / 2 if smp > 1 else 0)
        tput_bound = (0.9 if smp == 1 else 0.5) / n
        row = {"idle": base, "lat_bound_us": lat_bound, "tput_ratio_bound": round(tput_bound, 3)}
        for abuse in ("busy",) + ABUSES:
            r = fair_run(smp, abuse)
            if r is None:
                row[abuse] = {"pass": False, "finished": False}
                ok = False
                continue
            r["tput_ratio"] = round(r["iters_per_s"] / base["iters_per_s"], 3)
            if "busy" in row and row["busy"].get("iters_per_s"):
                r["tput_vs_busy"] = round(r["iters_per_s"] / row["busy"]["iters_per_s"], 3)
            # idle latency is below a tick (about 64 instructions): ratios against >= 0.1 us
            r["lat_p99_ratio"] = round(r["lat_p99_us"] / max(base["lat_p99_us"], 0.1), 1)
            r["lat_median_ratio"] = round(r["lat_median_us"] / max(base["lat_median_us"], 0.1), 1)
            r["pass"] = (r["lat_p99_us"] <= lat_bound and r["lat_max_us"] <= lat_bound
                         and r["tput_ratio"] >= tput_bound)
            ok &= r["pass"]
            row[abuse] = r
        out[f"smp{smp}"] = row
    results["fairness"] = {"what": "victim VM (1 vCPU, busy) beside a 2-vCPU neighbour VM on the "
                                   "same harts: timer latency deadline-to-handler and loop "
                                   "rate, vs the victim alone in the same run",
                           "slice_us": slice_us, "runnable_vcpus": n, **out, "pass": ok,
                           "unit": "guest-visible us under -icount; iterations per guest second"}


# Exits whose work the hypervisor does on the caller's hart alone (no wait
# for another hart, no reset): each must fit in the slack the fairness bounds
# allow a slice end (S/10 = 0.5 M instructions at S = 5 ms).
EXIT_COST_BOUND = 500_000
EXIT_COST_OWN = ("cost_sbi_base", "cost_ipi_all", "cost_rfence_all", "cost_fence_i_all",
                 "cost_pmu_config_all", "cost_pmu_start_stop", "cost_pmu_event_info_max",
                 "cost_dbcn_write_max", "cost_dbcn_write_text", "cost_uart_newline",
                 "cost_first_touch")
REBOOT_RE = re.compile(r"\[r\] (BOOT|REBOOT) (\d+) boot (\d+)")


def reboot_cost(initrd=None):
    """Instructions from a guest's SRST reboot call (its REBOOT line) to the
    first line of its next boot, per reboot: the VM's reset (RAM discarded,
    kernel and initrd copied in, device tree built) on the hart that found
    the VM off every hart, plus the few thousand instructions of the guest's
    own start. 1 hart, 4 reboots."""
    vm = f"name=r,kernel={PAYLOAD},mem=256M," + (f"initrd={initrd}," if initrd else "") + \
        "bootargs=reboot=1 reboots=4"
    text = carapace([vm], 1, timeout=120)
    marks = [(m.group(1), int(m.group(2)), int(m.group(3)))
             for l in text.splitlines() if (m := REBOOT_RE.match(l))]
    gaps = [b[1] - a[1] for a, b in zip(marks, marks[1:])
            if a[0] == "REBOOT" and b[0] == "BOOT" and b[2] == a[2] + 1]
    if not gaps:
        raise RuntimeError("exit_cost: no reboot measured:\n" + text[-2000:])
    return max(gaps) * INSNS_PER_TICK


def exit_cost(results):
    """The most work one exit of each kind can make the hypervisor do
    (tests/bench/bench.c cost=1: every argument at its most expensive), as
    instructions per exit under -icount, counted by the guest with rdtime
    across every privilege level and every hart. A VM of 8 vCPUs, 256 MiB,
    on 1 and on 2 harts (on 2, the other hart is idle or runs the VM's
    second vCPU). Then an SRST reboot, with the payload alone and with a
    36.6 MB initrd (the Linux Image as a blob)."""
    out = {}
    for smp in (1, 2):
        say(f"exit cost: 8-vCPU VM on {smp} hart(s)")
        text = carapace([f"name=b,kernel={PAYLOAD},vcpus=8,mem=256M,bootargs=cost=1 iters=2000"],
                        smp)
        out[f"smp{smp}"] = bench_lines(text, "[b]")
    say("exit cost: SRST reboot, small image and 36.6 MB initrd")
    small, big = reboot_cost(), reboot_cost(IMAGE)
    mib = IMAGE.stat().st_size / 2**20
    out["reboot_small"] = small
    out["reboot_initrd"] = big
    out["reboot_per_mib"] = round((big - small) / mib)
    own = {k: max(out["smp1"].get(k, 0), out["smp2"].get(k, 0)) for k in EXIT_COST_OWN}
    out["own_max"] = max(own.values())
    out["own_bound"] = EXIT_COST_BOUND
    out["pass"] = out["own_max"] <= EXIT_COST_BOUND
    results["exit_cost"] = {"what": "the most work one exit of each kind asks of the hypervisor",
                            **out, "unit": "instructions per exit (-icount)"}


def footprint(results):
    size = subprocess.run(["riscv64-unknown-elf-size", str(ROOT / "build" / "carapace.elf")],
                          capture_output=True, text=True).stdout.splitlines()[-1].split()
    text = carapace([f"name=f,kernel={PAYLOAD},bootargs=iters=10"], 1, timeout=120)
    m = re.search(r"vm f: .*overhead (\d+) bytes", text)
    results["footprint"] = {"what": "hypervisor image and per-VM memory overhead",
                            "image_bin_bytes": HYP.stat().st_size,
                            "text": int(size[0]), "data": int(size[1]), "bss": int(size[2]),
                            "per_vm_overhead_bytes": int(m.group(1)) if m else None,
                            "unit": "bytes"}


# --- guest I/O (issue 24) -----------------------------------------------------

GUEST_KERNEL = CACHE / "guest-kernel" / "Image"
IOBENCH = OUT / "iobench.cpio.gz"
IO_MIB = 64             # MiB per sequential transfer
IO_BS_KIB = 1024        # KiB per sequential read()/write(), O_DIRECT: dd bs=1M iflag=direct
IO_READS = 4096         # random 4 KiB reads, O_DIRECT
IO_SYNC_MS = 200        # the guest's pause at each phase's start and end (hypervisor counters)
IO_GOALS = {"disk": 1.3, "net": 1.5}    # Carapace / bare, issue 24
# Bare runs per figure, the median kept: a bare request's instructions vary
# by up to 15 % from run to run (whether QEMU answers before the guest's task
# sleeps is host timing); Carapace's, slower to answer, by about 1 %.
IO_BARE_RUNS = 3
DISK_PHASES = ("disk_write", "disk_read", "disk_rand")
IO_FIGURES = ("insns", "ticks", "requests", "irqs", "drift_ppm")
IO_POSITIVE = ("insns", "ticks", "requests")
SYNC_RE = re.compile(r"IOBENCH SYNC (\S+)-(start|end)$")
VIRTIO_MMIO_V1 = ["-global", "virtio-mmio.force-legacy=false"]
IO_UNIT = ("instructions of the whole machine (every hart and privilege level: rdtime x 100 "
           "under -icount shift=0) during the phase, minus what a SCHED_IDLE spinner in the "
           "guest got (tests/bench/linux/iobench.c)")
EXIT_KEYS = ("exits", "mmio", "host_irq", "guest_page_faults")


def io_figures(text, phases, prefix=""):
    """{phase: {insns, ticks, requests, irqs, drift_ppm}} from the BENCH lines
    tests/bench/linux/iobench.c printed in @text (only lines starting with
    @prefix). A figure the guest did not print, or a count that is not
    positive, raises: bench fails rather than record a zero."""
    vals = bench_lines(text, prefix)
    failed = [l for l in text.splitlines() if l.startswith(prefix) and "IOBENCH FAIL" in l]
    out = {}
    for ph in phases:
        row = {}
        for key in IO_FIGURES:
            v = vals.get(f"{ph}_{key}")
            if v is None or (key in IO_POSITIVE and v <= 0):
                why = "not printed" if v is None else f"{v}, not a count"
                raise RuntimeError(f"iobench: {prefix}{ph}_{key} {why}"
                                   + (f" ({failed[0]})" if failed else "") + ":\n" + text[-3000:])
            row[key] = v
        out[ph] = row
    return out


def io_median(runs, phases):
    """For each phase, the figures of the run whose instructions are the
    median of @runs (lists of io_figures()), with every run's instructions
    and requests beside them (`runs`)."""
    out = {}
    for ph in phases:
        rows = sorted((r[ph] for r in runs), key=lambda f: f["insns"])
        out[ph] = {**rows[len(rows) // 2], "runs": [(f["insns"], f["requests"]) for f in rows]}
    return out


def io_uncertainty_pct(f):
    """How far the phase's figure can be off through the spinner's rate: the
    two calibrations around it differ by drift_ppm, the mean of them is used,
    and the spinner's share is the rest of the interval."""
    spinner = f["ticks"] * INSNS_PER_TICK - f["insns"]
    return round(100.0 * spinner * f["drift_ppm"] / 2e6 / f["insns"], 2)


def io_exits(counters, phase):
    """The hypervisor's counters (`stats` of the VM) across a phase, read at
    the guest's SYNC pauses; None when one of the two reads is missing."""
    a, b = counters.get(f"{phase}-start"), counters.get(f"{phase}-end")
    if not a or not b:
        return None
    return {k: b[k] - a[k] for k in EXIT_KEYS}


def io_result(what, kind, b, c, exits=None, mib=None):
    """One figure, Carapace against bare: instructions per MiB (@mib given)
    or per request, and what goes with them."""
    def per(f):
        return f["insns"] / mib if mib else f["insns"] / f["requests"]

    ratio = per(c) / per(b)
    r = {"what": what, "carapace": round(per(c)), "bare": round(per(b)),
         "ratio": round(ratio, 3), "goal": IO_GOALS[kind], "goal_met": ratio <= IO_GOALS[kind],
         "requests": {"carapace": int(c["requests"]), "bare": int(b["requests"])},
         "insns_per_request": {"carapace": round(c["insns"] / c["requests"]),
                               "bare": round(b["insns"] / b["requests"])},
         "irqs_per_request": {"carapace": round(c["irqs"] / c["requests"], 3),
                              "bare": round(b["irqs"] / b["requests"], 3)},
         "guest_ms": {"carapace": round(c["ticks"] / 1e4, 1), "bare": round(b["ticks"] / 1e4, 1)},
         "uncertainty_pct": {"carapace": io_uncertainty_pct(c), "bare": io_uncertainty_pct(b)},
         "unit": ("instructions per MiB: " if mib else "instructions per request: ") + IO_UNIT}
    if "runs" in b:
        r["bare_runs"] = [round(i / mib if mib else i / n) for i, n in b["runs"]]
    if exits:
        r["carapace_per_request"] = {k: round(v / c["requests"], 3) for k, v in exits.items()}
    return r


class LiveRun:
    """A command (bare QEMU or carapace-run) in the background, its console
    lines kept as they come."""

    def __init__(self, cmd):
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, text=True, errors="replace")
        self.lines = []
        self.reader = threading.Thread(
            target=lambda: self.lines.extend(l.rstrip("\n") for l in self.p.stdout), daemon=True)
        self.reader.start()

    def wait_for(self, pattern, timeout):
        end, rx = time.time() + timeout, re.compile(pattern)
        while True:
            for l in list(self.lines):
                if rx.search(l):
                    return l
            if time.time() > end or self.p.poll() is not None:
                raise RuntimeError(f"no line matching {pattern!r}:\n" + self.text()[-3000:])
            time.sleep(0.02)

    def text(self):
        return "\n".join(self.lines)

    def stop(self):
        stop_launcher(self.p)
        self.reader.join(timeout=10)


def carapace_io(vms, smp, vm, timeout=900, extra=()):
    """VMs under Carapace (carapace-run, -icount) until all are down; at each
    IOBENCH SYNC line of @vm (the guest pauses there) its counters are read
    with `stats`. Returns the console and {"PHASE-start|end": counters}."""
    cc = ctl_module()
    sock = f"/tmp/carapace-bench-{os.getpid()}-{time.monotonic_ns()}.sock"
    cmd = [sys.executable, str(ROOT / "tools" / "carapace-run"), "--batch", "--icount",
           "--timeout", str(timeout), "--smp", str(smp), "--ctl-socket", sock, *extra]
    for spec in vms:
        cmd += ["--vm", spec]
    run, counters, seen = LiveRun(cmd), {}, 0
    try:
        end = time.time() + timeout + 30
        while run.p.poll() is None and time.time() < end:
            fresh = run.lines[seen:]
            seen += len(fresh)
            for l in fresh:
                m = SYNC_RE.search(l)
                if m and l.startswith(f"[{vm}] "):
                    with cc.Client(sock, timeout=30) as c:
                        counters[f"{m.group(1)}-{m.group(2)}"] = \
                            c.request("stats", {"vm": vm})["vms"][0]
            time.sleep(0.01)
    finally:
        run.stop()
    return run.text(), counters


def scratch_disk(path, mib=IO_MIB + 16):
    """A raw, sparse scratch disk: the phases use its first IO_MIB MiB."""
    with open(path, "wb") as f:
        f.truncate(mib << 20)
    return path


def disk_io(results):
    """Guest disk I/O with Linux (issue 24): tests/bench/linux/iobench.c as
    the initramfs of our guest kernel, 1 vCPU, 256 MiB, 1 hart, on a raw
    scratch disk: writes then reads IO_MIB MiB sequentially and makes
    IO_READS random 4 KiB reads, all O_DIRECT. Baseline: the same kernel and
    initramfs on bare QEMU with the disk as a virtio-blk-device (virtio 1.x
    over MMIO, as Carapace's model). Under Carapace the guest disk is
    Carapace's virtio-blk model over a virtio-blk-pci host disk, without a
    rate limit (iops=0, bw=0): the figure is the I/O path's cost, against a
    bare QEMU that has none either. A second run at the default limits
    (docs/virtio.md, "Fair share") is reported beside it
    (`with_default_limits`): the limit stretches a phase from tens of
    milliseconds to about 2 s of guest time, and the hypervisor's own
    periodic work in those seconds (its timer, the kicks of held requests)
    is counted too."""
    args = (f"console=ttyS0 quiet iobench.run=disk iobench.mib={IO_MIB} iobench.bs={IO_BS_KIB} "
            f"iobench.reads={IO_READS} iobench.sync_ms={IO_SYNC_MS}")
    with tempfile.TemporaryDirectory() as tmp:
        img_b, img_c = (scratch_disk(Path(tmp) / f"{n}.raw") for n in ("bare", "carapace"))
        runs = []
        for i in range(IO_BARE_RUNS):
            say(f"guest disk I/O: bare QEMU, virtio-blk-device, 1 hart (baseline, run {i + 1} "
                f"of {IO_BARE_RUNS})")
            runs.append(io_figures(bare(GUEST_KERNEL, 1, append=args, initrd=IOBENCH, mem="256M",
                                        extra=VIRTIO_MMIO_V1 + [
                                            "-drive", f"file={img_b},if=none,id=d0,format=raw",
                                            "-device", "virtio-blk-device,drive=d0"]),
                                   DISK_PHASES))
        b = io_median(runs, DISK_PHASES)
        c = {}
        for limits, spec in (("none", ":iops=0:bw=0"), ("default", "")):
            say(f"guest disk I/O: under Carapace, 1 hart, 1 vCPU, rate limit: {limits}")
            text, counters = carapace_io([f"name=d,kernel={GUEST_KERNEL},initrd={IOBENCH},"
                                          f"mem=256M,vcpus=1,disk={img_c}{spec},bootargs={args}"],
                                         1, "d")
            c[limits] = (io_figures(text, DISK_PHASES, "[d]"), counters)
    for ph, key, what, mib in (
            ("disk_write", "disk_seq_write", f"sequential write of {IO_MIB} MiB, O_DIRECT, "
             f"{IO_BS_KIB} KiB per write()", IO_MIB),
            ("disk_read", "disk_seq_read", f"sequential read of {IO_MIB} MiB, O_DIRECT, "
             f"{IO_BS_KIB} KiB per read()", IO_MIB),
            ("disk_rand", "disk_rand_read", f"{IO_READS} random 4 KiB reads, O_DIRECT, "
             f"over {IO_MIB} MiB", None)):
        unlimited, counters = c["none"]
        results[key] = io_result(what, "disk", b[ph], unlimited[ph], io_exits(counters, ph), mib)
        limited, counters = c["default"]
        results[key]["with_default_limits"] = {
            k: v for k, v in io_result(what, "disk", b[ph], limited[ph], io_exits(counters, ph),
                                       mib).items()
            if k in ("carapace", "ratio", "guest_ms", "carapace_per_request")}


class Sink:
    """The host end of a guest -> host transfer: a TCP server on the loopback
    (QEMU user networking takes the guest's connection to 10.0.2.2:PORT to
    127.0.0.1:PORT) that counts one connection's bytes and, when the guest
    half-closes, answers their count (8 bytes, little-endian)."""

    def __init__(self):
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(1)
        self.srv.settimeout(900)
        self.port, self.got = self.srv.getsockname()[1], None
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        try:
            conn, _ = self.srv.accept()
        except OSError:
            return
        with conn:
            n = 0
            while chunk := conn.recv(1 << 20):
                n += len(chunk)
            conn.sendall(n.to_bytes(8, "little"))
            self.got = n

    def check(self, want):
        self.srv.close()
        self.thread.join(timeout=10)
        if self.got != want:
            raise RuntimeError(f"the host sink counted {self.got} bytes, not {want}")


def net_io(results):
    """Guest network throughput with Linux (issue 24): iobench (as disk_io)
    sends IO_MIB MiB over TCP, 1 vCPU, 1 hart. Guest -> host: to a sink on
    the host through QEMU user networking, the baseline with the NIC as a
    virtio-net-device on bare QEMU, under Carapace through a switch with an
    uplink. Guest -> guest: two VMs on one Carapace switch (no uplink), the
    receiver answering the count; its instructions (all of the receiver's
    work, the switch's, the sender's) against the bare guest -> host figure.
    One hart: on two (one VM each) guest -> guest took ten times the
    instructions, most in the hypervisor functions that take the other VM's
    device lock; under -icount QEMU runs one hart at a time, so a wait for
    the other hart lasts until QEMU switches harts (docs/performance.md,
    "Guest I/O with Linux")."""
    args = f"console=ttyS0 quiet iobench.mib={IO_MIB} iobench.sync_ms={IO_SYNC_MS}"
    total = IO_MIB << 20
    runs = []
    for i in range(IO_BARE_RUNS):
        sink = Sink()
        say(f"guest -> host TCP: bare QEMU, virtio-net-device on user networking, 1 hart "
            f"(baseline, run {i + 1} of {IO_BARE_RUNS})")
        runs.append(io_figures(bare(GUEST_KERNEL, 1, initrd=IOBENCH, mem="256M",
                                    append=f"{args} iobench.run=tx carapace.ip=10.0.2.15/24 "
                                           f"iobench.peer=10.0.2.2:{sink.port}",
                                    extra=VIRTIO_MMIO_V1 + ["-netdev", "user,id=n0", "-device",
                                                            "virtio-net-device,netdev=n0"]),
                               ("net_tx",)))
        sink.check(total)
    b = io_median(runs, ("net_tx",))["net_tx"]
    sink = Sink()
    say("guest -> host TCP: under Carapace, a switch with an uplink, 1 hart")
    text, counters = carapace_io([f"name=t,kernel={GUEST_KERNEL},initrd={IOBENCH},mem=256M,"
                                  f"vcpus=1,net=up,bootargs={args} iobench.run=tx "
                                  f"iobench.peer=10.0.2.2:{sink.port}"], 1, "t",
                                 extra=["--switch", "name=up,uplink=user"])
    c = io_figures(text, ("net_tx",), "[t]")["net_tx"]
    sink.check(total)
    results["net_tx_host"] = io_result(f"guest -> host TCP, {IO_MIB} MiB", "net", b, c,
                                       io_exits(counters, "net_tx"), IO_MIB)
    say("guest -> guest TCP: two VMs on one Carapace switch, 1 hart")
    rx = (f"name=r,kernel={GUEST_KERNEL},initrd={IOBENCH},mem=256M,vcpus=1,net=lan,"
          "bootargs=console=ttyS0 quiet iobench.run=rx carapace.ip=10.0.3.2/24 iobench.port=5001")
    tx = (f"name=t,kernel={GUEST_KERNEL},initrd={IOBENCH},mem=256M,vcpus=1,net=lan,"
          f"bootargs={args} iobench.run=tx carapace.ip=10.0.3.1/24 iobench.peer=10.0.3.2:5001")
    text, counters = carapace_io([rx, tx], 1, "t", extra=["--switch", "name=lan"])
    g = io_figures(text, ("net_tx",), "[t]")["net_tx"]
    if bench_lines(text, "[r]").get("net_rx_bytes") != total:
        raise RuntimeError("guest -> guest: the receiver did not count every byte:\n"
                           + text[-3000:])
    results["net_guest_to_guest"] = io_result(
        f"guest -> guest TCP on one switch, {IO_MIB} MiB, both guests' and the switch's "
        "work; baseline: bare guest -> host", "net", b, g, io_exits(counters, "net_tx"), IO_MIB)


class Qmp:
    """QEMU's QMP on a unix socket: enough to read how many instructions the
    machine has executed (query-replay's icount: every hart, idle time not
    counted, unlike the -icount clock, which runs with host time while every
    hart waits)."""

    def __init__(self, path, timeout=60):
        end = time.time() + timeout
        while True:
            self.s = socket.socket(socket.AF_UNIX)
            self.s.settimeout(30)
            try:
                self.s.connect(str(path))
                self.f = self.s.makefile("rw")
                if not self.f.readline():       # the greeting
                    raise ConnectionResetError("no QMP greeting")
                self.cmd("qmp_capabilities")
                return
            except (OSError, ValueError):
                # carapace-run's first QEMU, which only dumps the device
                # tree, took the extra options too and is gone
                self.s.close()
                if time.time() > end:
                    raise RuntimeError(f"no QMP at {path}")
                time.sleep(0.1)

    def cmd(self, name):
        self.f.write(json.dumps({"execute": name}) + "\n")
        self.f.flush()
        while True:
            line = self.f.readline()
            if not line:
                raise ConnectionResetError("QMP closed")
            reply = json.loads(line)
            if "return" in reply:
                return reply["return"]
            if "error" in reply:
                raise RuntimeError(f"QMP {name}: {reply['error']}")

    def icount(self):
        return self.cmd("query-replay")["icount"]

    def close(self):
        self.s.close()


def boot_to_login(cmd, qmp_path, pattern, timeout=900):
    """Start @cmd; when getty's issue line (@pattern) appears, the machine's
    executed instructions (QMP) and the wall time since the start. The
    prompt after the issue line has no newline (a batch console never
    flushes it); the guest then waits for a login, so a late read adds
    little (`settle`: what the next 2 s added, idle)."""
    t0 = time.time()
    run = LiveRun(cmd)
    try:
        run.wait_for(pattern, timeout)
        wall = time.time() - t0
        qmp = Qmp(qmp_path)
        insns = qmp.icount()
        time.sleep(2)
        settle = qmp.icount() - insns
        qmp.close()
    finally:
        run.stop()
    return insns, round(wall, 1), settle


def disk_boot(results):
    """The Debian guest of `make run` (its root file system on a qcow2
    overlay of the base image, our guest kernel, 256 MiB, a NIC on a switch
    with an uplink) from machine reset to getty's issue line, in
    instructions executed (QMP): idle time, which under -icount runs at host
    speed while the guest waits for its disk, is left out. Baseline: the
    same kernel, command line and overlay on bare QEMU, the disk and NIC as
    virtio-mmio devices. 1 vCPU on 1 hart (make run: 2 on 2): with two,
    QEMU runs one hart at a time under -icount and the count follows its
    round robin between harts (bare: 2.6 G against 0.9 G on one hart,
    docs/performance.md, "Guest I/O with Linux")."""
    base = Path(subprocess.run([str(ROOT / "scripts" / "mkrootfs.sh"), "path"],
                               capture_output=True, text=True).stdout.strip())
    if not base.exists():
        raise RuntimeError(f"disk_boot: no Debian base image at {base} (make rootfs)")
    args = "root=/dev/vda rw console=ttyS0 quiet"
    net = "carapace.ip=10.0.2.15/24 carapace.gw=10.0.2.2 carapace.hostname=alpha"
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for who in ("bare", "carapace"):
            ov, qmp = Path(tmp) / f"{who}.qcow2", Path(tmp) / f"{who}.qmp"
            subprocess.run([str(ROOT / "scripts" / "mkrootfs.sh"), "overlay", str(ov)],
                           check=True, capture_output=True, env={**os.environ, "FRESH": "1"})
            qmp_arg = f"unix:{qmp},server=on,wait=off"
            if who == "bare":
                say("Debian boot to login: bare QEMU, 1 hart (baseline)")
                cmd = [QEMU, "-machine", MACHINE, "-cpu", CPU, "-smp", "1", "-m", "256M",
                       "-display", "none", "-serial", "stdio", "-monitor", "none",
                       "-bios", str(FW), "-kernel", str(GUEST_KERNEL), "-append", f"{args} {net}",
                       *ICOUNT, *VIRTIO_MMIO_V1,
                       "-drive", f"file={ov},if=none,id=d0,format=qcow2",
                       "-device", "virtio-blk-device,drive=d0",
                       "-netdev", "user,id=n0", "-device", "virtio-net-device,netdev=n0",
                       "-qmp", qmp_arg]
                pattern = r"^Debian GNU/Linux \S+ alpha ttyS0"
            else:
                say("Debian boot to login: under Carapace, 1 hart, 1 vCPU")
                cmd = [sys.executable, str(ROOT / "tools" / "carapace-run"), "--batch",
                       "--icount", "--timeout", "900", "--smp", "1",
                       "--ctl-socket", str(Path(tmp) / "ctl.sock"),
                       "--switch", "name=lan,uplink=user",
                       "--vm", f"name=alpha,kernel={GUEST_KERNEL},mem=256M,vcpus=1,disk={ov},"
                               f"net=lan,bootargs={args}",
                       "--qemu-arg=-qmp", f"--qemu-arg={qmp_arg}"]
                pattern = r"^\[alpha\] Debian GNU/Linux \S+ alpha ttyS0"
            out[who] = boot_to_login(cmd, qmp, pattern)
    (c, c_wall, c_settle), (b, b_wall, b_settle) = out["carapace"], out["bare"]
    results["disk_boot"] = {"what": "Debian guest (make run's) from machine reset to its login "
                                    "prompt (getty's issue line), 1 hart, 1 vCPU",
                            "carapace": c, "bare": b, "ratio": round(c / b, 3),
                            "wall_s": {"carapace": c_wall, "bare": b_wall},
                            "settle_2s": {"carapace": c_settle, "bare": b_settle},
                            "unit": "instructions executed by the machine (QMP query-replay "
                                    "icount: every hart, idle time not counted)"}


def table(results):
    print()
    print(f"{'metric':<28} {'Carapace':>14} {'baseline':>14} {'ratio':>8}")
    for key, r in results.items():
        if "carapace" in r and r.get("bare"):
            print(f"{key:<28} {r['carapace']:>14,.1f} {r['bare']:>14,.1f} "
                  f"{r['carapace'] / r['bare']:>8.2f}")
        elif "carapace" in r:
            print(f"{key:<28} {r['carapace']:>14,.1f} {'-':>14} {'-':>8}")
    if "vcpu_switch" in results:
        r = results["vcpu_switch"]
        print(f"{'vcpu_switch (cfi on/off)':<28} {r['cfi_on']:>14,.1f} {r['cfi_off']:>14,.1f} "
              f"{r['cfi_on'] / r['cfi_off']:>8.3f}")
    if "hyp_cfi" in results:
        r = results["hyp_cfi"]
        print(f"\n{'hypervisor CFI build':<28} {'CFI build':>14} {'plain build':>14} {'cost %':>8}")
        for k, v in r["plain"].items():
            print(f"  {k:<26} {r['cfi'][k]:>14,.1f} {v:>14,.1f} {r['cost_pct'][k]:>8.1f}")
    if "snapshot_size" in results:
        r = results["snapshot_size"]
        print(f"snapshot of an idle 256 MiB Linux guest: file {r['file_bytes']:,} bytes "
              f"({r['file_percent_of_ram']} % of RAM, target <= 15 %), stream "
              f"{r['bytes']:,} bytes ({r['percent_of_ram']} % of RAM, {r['pages']} pages)")
        r = results["snapshot_pause"]
        print(f"snapshot pause: plain {r['plain_us']:,} us, live {r['live_us']:,} us "
              f"(guest time under -icount)")
        r = results["restore_time"]
        print(f"restore: {r['us']:,} us (guest time under -icount)")
    if "stream_throughput" in results:
        r = results["stream_throughput"]
        for kind in ("snapshot", "restore"):
            k = r[kind]
            print(f"stream, {kind} of an idle 256 MiB Linux guest ({r['bytes']:,} bytes): "
                  f"median {k['median_mb_s']} MB/s host time ({k['min_mb_s']}-{k['max_mb_s']} "
                  f"over {len(k['runs_mb_s'])} runs; varies with the host's load)")
    if "live_snapshot_cost" in results:
        r = results["live_snapshot_cost"]
        print(f"live snapshot of a busy guest ({r['stream_bytes'] / 2**20:.1f} MiB stream): "
              f"throughput {r['throughput_pct']} % of baseline for {r['duration_ms']:,} ms, "
              f"lost {r['lost_ms']:,} ms ({r['lost_ms_per_mib']} ms/MiB), "
              f"{r['cow_copies']} chunk copies, longest stall {r['longest_stall_ms']} ms, "
              f"pause {r['pause_us']} us; plain snapshot: stopped {r['plain_pause_ms']:,} ms "
              f"(lost {r['plain_lost_ms']:,} ms)")
        o = r["one_hart"]
        print(f"  the same on 1 hart (guest and stream share it): throughput "
              f"{o['throughput_pct']} % for {o['duration_ms']:,} ms, lost {o['lost_ms']:,} ms, "
              f"longest stall {o['longest_stall_ms']} ms")
    if "migration" in results:
        for kind in ("idle", "busy", "busy_unpaced"):
            r = results["migration"].get(kind)
            if not r:
                continue
            pace = (f"; paced to {r['dirty_limit']} pages/s ({r['dirty_holds']} holds, "
                    f"{r['dirty_held_us'] / 1000:,.1f} ms)" if r.get("dirty_limit") else "")
            print(f"migration, {kind} 256 MiB Linux guest: {r['rounds']} pre-copy round(s), "
                  f"{r['bytes']:,} bytes, {r['pages']} pages, total {r['total_us'] / 1000:,.1f} ms "
                  f"(wall {r['wall_us'] / 1000:,.1f} ms); downtime {r['downtime_us'] / 1000:.3f} ms "
                  f"({r['downtime_source_us'] / 1000:.3f} source + "
                  f"{r['downtime_destination_us'] / 1000:.3f} destination; goal idle <= 5 ms, "
                  f"busy <= 50 ms){pace}")
        r = results["dirty_logging_cost"]
        print(f"dirty logging: a guest writing 16 MiB in a loop keeps {r['throughput_pct']} % "
              f"of its rate for {r['precopy_ms']:,} ms of pre-copy ({r['rounds']} rounds, "
              f"lost {r['lost_ms']} ms, {r['lost_ms_per_round']} ms a round; unpaced, "
              f"downtime {r['downtime_us'] / 1000:.3f} ms)")
        p = r.get("paced")
        if p:
            print(f"  the same migrated paced (auto-converge, 20 ms limit): downtime "
                  f"{p['downtime_us'] / 1000:.3f} ms after {p['rounds']} rounds, it kept "
                  f"{p['throughput_pct']} % of its rate for {p['precopy_ms']:,} ms, paced to "
                  f"{p['dirty_limit']} pages/s ({p['dirty_holds']} holds)")
    if "fairness" in results:
        r = results["fairness"]
        for smp in (1, 2):
            row = r[f"smp{smp}"]
            b = row["idle"]
            print(f"fairness, {smp} hart(s), 3 runnable vCPUs; bounds: latency p99/max <= "
                  f"{row['lat_bound_us']:,.0f} us, throughput >= {row['tput_ratio_bound']:.3f} "
                  f"x alone")
            print(f"  {'alone':<9} latency median {b['lat_median_us']:>8,.1f} us  p99 "
                  f"{b['lat_p99_us']:>8,.1f} us  max {b['lat_max_us']:>8,.1f} us  "
                  f"{b['iters_per_s']:>11,} iterations/s")
            for abuse in ("busy",) + ABUSES:
                a = row[abuse]
                if not a.get("finished", True):
                    print(f"  {abuse:<9} victim did not finish: FAIL")
                    continue
                print(f"  {abuse:<9} latency median {a['lat_median_us']:>8,.1f} us  p99 "
                      f"{a['lat_p99_us']:>8,.1f} us  max {a['lat_max_us']:>8,.1f} us  "
                      f"throughput {a['tput_ratio']:.3f} x alone "
                      f"({a.get('tput_vs_busy', 1):.2f} x busy)  "
                      f"{'pass' if a['pass'] else 'FAIL'}")
    if "exit_cost" in results:
        r = results["exit_cost"]
        print(f"work per exit, instructions (1 hart / 2 harts); bound for the exits that wait "
              f"for nothing: {r['own_bound']:,}")
        for k in sorted(set(r["smp1"]) | set(r["smp2"])):
            print(f"  {k:<28} {r['smp1'].get(k, 0):>12,.0f} {r['smp2'].get(k, 0):>12,.0f}")
        print(f"  SRST reboot: {r['reboot_small']:,} (small image), {r['reboot_initrd']:,} "
              f"(36.6 MB initrd): {r['reboot_per_mib']:,} per MiB of images")
        print(f"  largest own work {r['own_max']:,.0f}: {'pass' if r['pass'] else 'FAIL'}")
    io = [k for k in ("disk_seq_write", "disk_seq_read", "disk_rand_read", "net_tx_host",
                      "net_guest_to_guest") if k in results]
    if io:
        print("guest I/O, Carapace / bare (instructions of the whole machine; per MiB, random "
              "reads per request):")
        for k in io:
            r = results[k]
            spread = (f" (bare runs {min(r['bare_runs']):,}-{max(r['bare_runs']):,})"
                      if r.get("bare_runs") else "")
            line = (f"  {k:<19} {r['carapace']:>11,} / {r['bare']:>11,}{spread} = {r['ratio']:.2f} "
                    f"(goal {r['goal']}: {'met' if r['goal_met'] else 'missed'}); per request "
                    f"{r['insns_per_request']['carapace']:,} / {r['insns_per_request']['bare']:,}, "
                    f"requests {r['requests']['carapace']:,} / {r['requests']['bare']:,}, "
                    f"interrupts per request {r['irqs_per_request']['carapace']} / "
                    f"{r['irqs_per_request']['bare']}")
            e = r.get("carapace_per_request")
            if e:
                line += (f"; exits per request {e['exits']} (MMIO {e['mmio']}, host interrupts "
                         f"{e['host_irq']})")
            d = r.get("with_default_limits")
            if d:
                line += (f"; at the default rate limit {d['carapace']:,} = {d['ratio']:.2f} in "
                         f"{d['guest_ms']['carapace']} ms of guest time")
            print(line)
    if "disk_boot" in results:
        r = results["disk_boot"]
        print(f"Debian boot to login: {r['carapace'] / 1e9:.2f} G / {r['bare'] / 1e9:.2f} G "
              f"instructions = {r['ratio']:.2f} (wall {r['wall_s']['carapace']} s / "
              f"{r['wall_s']['bare']} s)")
    if "disk_fair_share" in results:
        r = results["disk_fair_share"]
        print(f"disk fair share: a victim beside a disk flood keeps {r['pct_of_alone']} % of "
              f"its rate alone (bound >= {r['bound_pct']} %)")
    if "net_fair_share" in results:
        r = results["net_fair_share"]
        for kind in ("spinner", "flood", "flood_unlimited"):
            if kind in r:
                k = r[kind]
                print(f"net fair share, ping pair beside {kind.replace('_', ' ')}: "
                      f"{k['round_trips_per_s']:,} round trips/s, {k['lost_pct']} % lost"
                      + (f", {k['pct_of_spinner']} % of beside the spinner" if
                         "pct_of_spinner" in k else "")
                      + (f" (flood {k['flood_fps']:,} frames/s)" if k.get("flood_fps") else ""))
    if "footprint" in results:
        r = results["footprint"]
        print(f"image {r['image_bin_bytes']} bytes (text {r['text']}, data {r['data']}, "
              f"bss {r['bss']}); per-VM overhead {r['per_vm_overhead_bytes']} bytes")


def chart(results):
    if not shutil.which("gnuplot"):
        say("gnuplot not installed: no chart (scripts/deps.sh bench installs it)")
        return
    rows = [(k, r["carapace"] / r["bare"]) for k, r in results.items()
            if r.get("bare") and r.get("carapace")]
    if "vcpu_switch" in results:
        r = results["vcpu_switch"]
        rows.append(("vcpu_switch cfi on/off", r["cfi_on"] / r["cfi_off"]))
    data = OUT / "ratios.dat"
    data.write_text("".join(f'"{k}" {v:.4f}\n' for k, v in rows))
    # log scale: the MMIO ratio compares a trap with a plain device read
    script = (f'set terminal png size 900,500 noenhanced\nset output "{OUT / "ratios.png"}"\n'
              'set style fill solid\nset boxwidth 0.6\nset ylabel "Carapace / baseline (log)"\n'
              'set logscale y\nset yrange [0.1:*]\n'
              'set xtics rotate by -30\nset title "Carapace vs baseline (instruction counts, -icount shift=0)"\n'
              f'plot "{data}" using 2:xtic(1) with boxes notitle, 1 with lines lt 0 notitle\n')
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    say(f"chart: {OUT / 'ratios.png'}")


# What a step needs beyond what every step needs.
STEP_NEEDS = {"hyp_cfi": (PLAIN_HYP, CFI_HYP), "disk_io": (GUEST_KERNEL, IOBENCH), "net_io": (GUEST_KERNEL, IOBENCH),
              "disk_move": (DISK_GEN,),
              "disk_boot": (GUEST_KERNEL,)}


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    steps = {f.__name__: f for f in (micro, ipi_latency_aia, switch, cfi_violation, linux_boot,
                                     hyp_cfi,
                                     snapshot, stream, live_snapshot, migration, disk_move, fairness,
                                     exit_cost, footprint, disk, net, disk_io, net_io,
                                     disk_boot)}
    chosen = sys.argv[1:] or list(steps)
    for name in chosen:
        if name not in steps:
            sys.exit(f"bench: no step {name!r} (steps: {' '.join(steps)})")
    needs = [FW, IMAGE, INITRD, PAYLOAD, HYP, DIRTIER, ELP_PREEMPT, FAIRNESS]
    for name in chosen:
        needs += STEP_NEEDS.get(name, ())
    for f in needs:
        if not f.exists():
            sys.exit(f"bench: missing {f} (run: make bench)")
    results = {}
    for name in chosen:
        steps[name](results)
    out = OUT / ("results.json" if chosen == list(steps) else "results-partial.json")
    out.write_text(json.dumps(results, indent=2) + "\n")
    table(results)
    if chosen == list(steps):
        chart(results)
    say(f"results: {out}")
    if "fairness" in results and not results["fairness"]["pass"]:
        sys.exit("bench: a fairness bound failed (see above)")
    if "exit_cost" in results and not results["exit_cost"]["pass"]:
        sys.exit("bench: an exit did more work than the per-exit bound (see above)")


if __name__ == "__main__":
    main()
