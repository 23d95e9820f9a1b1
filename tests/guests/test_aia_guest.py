# SPDX-License-Identifier: MIT
"""Guest AIA in software (docs/design-aia.md, stage 3): a VM with
irqchip=aia gets an IMSIC file per vCPU and an APLIC in MSI mode instead of
the PLIC, all emulated (the host has no guest interrupt files: --aia-guests
0). The aia_guest payload checks the files' registers through siselect/sireg,
IPIs by stores to each other's page taken through stopei claims (and that
they cost exits), eithreshold masking, the UART's line through the APLIC,
and the illegal accesses; the same payload in a PLIC VM on the same host
finds the AIA CSRs illegal and its PLIC as ever. A host without Ssaia (the
PLIC machine) refuses an AIA VM, in the launcher and in the hypervisor.

Snapshot version 7 (stage 5): with snap=1 the guest leaves identities
pending but masked in both vCPUs' files and APLIC sources programmed, then
waits; a snapshot restored into a fresh QEMU, and a live migration to
another host, give a copy that finds every file register, vsiselect and
APLIC register as before, and its IPIs, unmasked identities and MSIs
working. The same snapshot restored on a host without Ssaia is refused
before anything is created."""

import re
import subprocess

import pytest

from carapace.snapshot_format import VERSION as SNAP_VERSION  # what Carapace writes
from harness.migration import check_ok_migration, life, marker_line
from harness.paths import CTL, LAUNCHER, ROOT
from harness.ports import free_port
from harness.report import Report, check_report
from harness.runs import EXIT_OK, assert_exit, run_carapace
from harness.snapshots import inspect

pytestmark = pytest.mark.quick

AIA_SW = ("--aia", "--aia-guests", "0")
EXITS_RE = re.compile(r"INFO: aia: (\d+) IPI round trips: (\d+) exits on vCPU 0")
NO_SSAIA = "the guest uses AIA (an IMSIC per vCPU and an APLIC); this host's CPU has no Ssaia"
# what the copy checks (tests/guests/aia_guest.c, snapshot_state())
COPY_CHECKS = [
    "PASS: aia: vCPU 0's file and siselect as before",
    "PASS: aia: vCPU 1's file and siselect as before",
    "PASS: aia: APLIC domaincfg as before",
    "PASS: aia: APLIC sourcecfg as before",
    "PASS: aia: APLIC targets as before",
    "PASS: aia: APLIC pending and enabled as before",
    "PASS: aia: APLIC inputs as before",
    "PASS: aia: no signal while masked, after",
    "PASS: aia: IPIs after: vCPU 1 took 20 pings",
    "PASS: aia: threshold 0: 7 and 40 taken once each",
    "PASS: aia: 3 and 66 still not enabled: not taken",
    "PASS: aia: APLIC: the detached source's MSI taken on vCPU 0",
]


def spec(name, irqchip=None, payload="aia_guest", vcpus=2, bootargs=None):
    s = f"name={name},kernel=build/guests/{payload}.bin,vcpus={vcpus},debug=1"
    s += f",irqchip={irqchip}" if irqchip else ""
    return s + (f",bootargs={bootargs}" if bootargs else "")


def test_aia_vm_in_software_beside_a_plic_vm(guests_built):
    run = run_carapace([spec("a", "aia", bootargs="rounds=300"), spec("p")], names=["a", "p"],
                       extra=AIA_SW)
    assert_exit(run, EXIT_OK)
    check_report(run.guests["a"], "vm a (AIA)", [
        "INFO: aia: an AIA VM: an IMSIC file per vCPU, an APLIC",
        "PASS: aia: IPIs: vCPU 1 took every ping",
        "PASS: aia: IPIs in software exit (stores, claims)",
        "PASS: aia: eithreshold 5: no signal (sip.SEIP)",
        "PASS: aia: UART interrupt through the APLIC: EIID taken on vCPU 0",
        "PASS: aia: odd eip (eip1) is an illegal instruction",
        "PASS: aia: reserved siselect 0x40 is an illegal instruction",
        "PASS: aia: byte store to a file page: store access fault",
        "PASS: aia: page past the vCPUs, identities 0 and 256, seteipnum_be: nothing",
    ])
    m = [EXITS_RE.match(l) for l in run.guests["a"].lines]
    m = [x for x in m if x]
    assert m and int(m[0].group(1)) == 300 and int(m[0].group(2)) >= 300, run.out
    check_report(run.guests["p"], "vm p (PLIC)", [
        "INFO: aia: a PLIC VM: no IMSIC, no APLIC",
        "PASS: aia: PLIC VM: stopei is an illegal instruction",
        "PASS: aia: PLIC VM: the PLIC's priority register reads back",
    ])
    # the two VMs' boot lines and the AIA VM's windows: nothing refused
    assert "carapace: vm a: shut down" in run.hyp and "carapace: vm p: shut down" in run.hyp


def test_aia_vm_refused_without_ssaia(guests_built, host_factory):
    # the launcher: irqchip=aia on the PLIC machine
    r = subprocess.run([str(LAUNCHER), "--plic", "--dry-run", "--vm", spec("a", "aia")],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "irqchip=aia needs the AIA machine (--aia)" in r.stderr, r
    # the hypervisor: a VM created at run time on a host without Ssaia
    h = host_factory([spec("p", payload="demo", vcpus=1, bootargs="count=200 delay_us=50000")],
                     extra=["--plic", "--persist"])
    rep = h.raw('{"v":1,"cmd":"create","name":"x","kernel":"p.kernel","irqchip":"aia"}\n')
    assert rep["ok"] is False and rep["code"] == "invalid", rep
    assert "irqchip aia needs a host CPU with Ssaia" in rep["error"], rep
    rep = h.raw('{"v":1,"cmd":"create","name":"x","kernel":"p.kernel","irqchip":"apic"}\n')
    assert rep["ok"] is False and rep["code"] == "invalid", rep


def check_copy(lines, what):
    """The guest's life, up to the marker in the original and on in the copy:
    every check passed, the copy's own among them."""
    rep = Report(lines)
    check_report(rep, what, COPY_CHECKS)
    assert not rep.kind("SKIP: "), rep.lines


# software files; guest files (stage 4: the pause gives them back before the
# VCPU sections are read, the restore takes new ones), one TCG thread
AIA_GFILES = ("--aia", "--aia-guests", "3", "--icount")
MACHINES = pytest.mark.parametrize("machine", [AIA_SW, AIA_GFILES], ids=["sw", "gfiles"])


# How long a moved guest's rest may take in wall time: a safety net, not a
# measure. Under --icount (guest files) on a loaded 2-core host its 4-8 s of
# guest time took 84-87 s of wall time alone, and more beside a busy CI run.
GUEST_END_S = 300


@MACHINES
def test_aia_snapshot_restores_into_a_fresh_qemu(snap_host, tmp_path, machine):
    path = tmp_path / "aia.snap"
    h = snap_host([spec("orig", "aia", bootargs="snap=1 wait_ms=6000")],
                  extra=[*machine, "--expect", "orig=destroyed"])
    line = h.wait_for(lambda l: l.startswith("[orig] SNAPSHOT-READY"), 60)
    eip0 = int(re.search(r"eip0=(0x[0-9a-f]+)", line).group(1), 16)
    rep, _, _ = h.ctl("snapshot", "orig", str(path))
    assert rep["ok"], rep
    h.ctl("destroy", "orig")
    before = h.guest("orig")
    assert h.finish() == EXIT_OK
    # the file: an AIA VM's, the files' pending identities and the APLIC as set
    info = inspect(path)
    assert info["header"]["version"] == SNAP_VERSION and "aia" in info["config"]["feature_names"], info
    v0, v1 = (v["imsic"] for v in info["vcpus"])
    assert (v0["nr_ids"], v0["eidelivery"], v0["eithreshold"]) == (255, 1, 5), v0
    assert v0["pending"] == [i for i in range(64) if eip0 >> i & 1] + [66], v0
    assert v0["vsiselect"] == 0x72 and v1["vsiselect"] == 0xc2, (v0, v1)
    assert 9 in v1["pending"] and 70 in v1["pending"] and v1["eithreshold"] == 3, v1
    aplic = {d["name"]: d for d in info["devices"]}["aplic"]["state"]
    assert (aplic["sourcecfg[5]"], aplic["sourcecfg[6]"], aplic["pending"],
            aplic["enabled"], aplic["domaincfg"]) == (4, 1, 1 << 5, 1 << 6, 0x100), aplic
    assert {d["name"]: d for d in info["devices"]}["plic"]["state"]["priority[10]"] == 0
    # a fresh QEMU, restored from the file
    h2 = snap_host([], extra=[*machine, "--restore", str(path)])
    h2.wait_for(lambda l: l == "carapace: vm orig: shut down", GUEST_END_S)
    marker = next(i for i, l in enumerate(before) if l.startswith("SNAPSHOT-READY"))
    check_copy(before[:marker] + h2.guest("orig"), "vm orig, then restored")
    h2.kill()
    # the same file on a host without Ssaia (the PLIC machine): refused at
    # CONFIG, before anything is created
    r = subprocess.run([str(LAUNCHER), "--plic", "--batch", "--timeout", "60", "--ctl-socket",
                        str(tmp_path / "c3.sock"), "--restore", str(path)], cwd=ROOT,
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 3 and "no-feature" in r.stderr and NO_SSAIA in r.stderr, \
        r.stdout[-2000:] + r.stderr
    assert "restored vm" not in r.stderr and "[orig]" not in r.stdout, r.stdout[-2000:]


@MACHINES
def test_aia_vm_moves_to_another_host(hosts, machine):
    port = free_port()
    a = hosts("a", [spec("c", "aia", bootargs="snap=1 wait_ms=8000")], extra=[*machine])
    b = hosts("b", incoming=port, extra=[*machine])
    a.ready(), b.ready()
    marker_line(a, "c", "SNAPSHOT-READY")
    m = a.migrate("c", port)
    check_ok_migration(m, "c", "a -> b")
    assert b.vms() == {"c": "running"}, b.console()
    b.wait_for(lambda l: l == "carapace: vm c: shut down", GUEST_END_S)
    check_copy(life(a.guest("c"), b.guest("c"), "SNAPSHOT-READY"), "vm c: on a, then on b")
    assert a.guest("c")[-1].startswith("SNAPSHOT-READY"), a.console()


def test_aia_vm_does_not_move_to_a_host_without_ssaia(hosts):
    port = free_port()
    a = hosts("a", [spec("c", "aia", bootargs="snap=1 wait_ms=4000")], extra=[*AIA_SW])
    b = hosts("b", incoming=port, extra=["--plic"])
    a.ready(), b.ready()
    marker_line(a, "c", "SNAPSHOT-READY")
    m = a.migrate("c", port)
    assert m.rc == 1 and m.reply and m.reply["code"] == "no-feature", m.text()
    assert "the destination's CPU has no Ssaia" in m.reply["error"], m.text()
    assert not m.of("accept") and not m.of("round"), m.text()
    assert b.vms() == {}, b.console()
    assert a.vms() == {"c": "running"}, a.console()


# --- guest interrupt files (docs/design-aia.md stage 4) ---

GFILES_RE = re.compile(r"guest interrupt files: (\d+) per hart, 255 identities each")
COUNTS_RE = re.compile(r"aia gfiles: (.*)")


def aia_checks(run, name):
    check_report(run.guests[name], f"vm {name} (AIA)", [
        "PASS: aia: IPIs: vCPU 1 took every ping",
        "PASS: aia: IPIs: vCPU 0 took every pong",
        "PASS: aia: eithreshold 5: no signal (sip.SEIP)",
        "PASS: aia: UART interrupt through the APLIC: EIID taken on vCPU 0",
        "PASS: aia: odd eip (eip1) is an illegal instruction",
        "PASS: aia: byte store to a file page: store access fault",
        "PASS: aia: page past the vCPUs, identities 0 and 256, seteipnum_be: nothing",
        "PASS: aia: vCPU 1 took no stray interrupt",
    ])


def test_aia_ipis_through_guest_files_do_not_exit(guests_built):
    """With 3 guest files per hart each vCPU holds one: its page is mapped to
    the file, so the other vCPU's IPI stores and its own claims (vstopei)
    never exit; only the slice timer's exits remain. The same payload's
    threshold, APLIC and illegal-access checks hold as in software."""
    run = run_carapace([spec("a", "aia", bootargs="rounds=1000 gfiles=1"), spec("p")],
                       names=["a", "p"], extra=("--aia", "--aia-guests", "3", "--icount"))
    assert_exit(run, EXIT_OK)
    m = GFILES_RE.search("\n".join(run.hyp))
    assert m and int(m.group(1)) == 3, run.hyp
    aia_checks(run, "a")
    check_report(run.guests["a"], "vm a (AIA)", ["PASS: aia: IPIs through guest files do not exit"])
    check_report(run.guests["p"], "vm p (PLIC)", ["PASS: aia: PLIC VM: stopei is an illegal instruction"])


def test_aia_more_vcpus_than_guest_files(guests_built, host_factory):
    """One guest file per hart, two AIA VMs of two vCPUs on two harts: at
    most two of the four vCPUs hold a file at a time, the others run in
    software, and files move between vCPUs and harts with their pending
    bits (the payload leaves identities pending under its threshold and
    checks them). Every IPI still arrives exactly once, in both VMs, and
    the metrics count the moves."""
    h = host_factory([spec("a", "aia", bootargs="rounds=400"),
                      spec("b", "aia", bootargs="rounds=400")],
                     extra=["--aia", "--aia-guests", "1", "--icount", "--persist"], timeout=300)
    for name in ("a", "b"):
        h.wait_for(lambda l, n=name: l.startswith(f"[{n}] DONE:"), 240)
    m = GFILES_RE.search("\n".join(h.snapshot()))
    assert m and int(m.group(1)) == 1, h.snapshot()
    for name in ("a", "b"):
        lines = h.guest(name)
        done = [l for l in lines if l.startswith("DONE:")]
        assert done and done[0].endswith(" 0 failed"), lines
        check_report(Report(lines), f"vm {name} (AIA)", [
            "PASS: aia: IPIs: vCPU 1 took every ping", "PASS: aia: IPIs: vCPU 0 took every pong",
            "PASS: aia: vCPU 1 took no stray interrupt"])
    data, _ = h.ctl("metrics")
    vms = {vm["vm"]: vm for vm in data["vms"]}
    assert sum(vms[n]["imsic_moves"] for n in ("a", "b")) > 0, vms


ACCESSES_RE = re.compile(r"INFO: aia: imsic accesses: csr (\d+) stores (\d+)$")


def test_imsic_counters_match_what_the_guest_did(guests_built, host_factory):
    """The per-vCPU IMSIC counters (docs/design-aia.md 3.9) in `metrics`: with
    every file in software (--aia-guests 0), each sireg access in 0x70..0xFF
    and each stopei access exits once and each 32-bit store into a vCPU's
    page is emulated once, so the VM's imsic_csr_exits and imsic_sw_stores
    are exactly what aia_guest says it did; no file moves, is evicted or
    raises an SGEI; a PLIC VM's are all 0; Prometheus shows the same."""
    h = host_factory([spec("a", "aia", bootargs="rounds=100"), spec("p")],
                     extra=[*AIA_SW, "--persist"], timeout=180)
    for name in ("a", "p"):
        h.wait_for(lambda l, n=name: l.startswith(f"[{n}] DONE:"), 120)
    done = [l for l in h.guest("a") if l.startswith("DONE:")]
    assert len(done) == 1 and done[0].endswith(" 0 failed"), h.guest("a")
    got = [m for m in map(ACCESSES_RE.match, h.guest("a")) if m]
    assert got, h.guest("a")
    csr, stores = int(got[0].group(1)), int(got[0].group(2))
    assert csr >= 200 and stores >= 200, (csr, stores)   # 100 round trips at least
    data, _ = h.ctl("metrics")
    vms = {vm["vm"]: vm for vm in data["vms"]}
    a, p = vms["a"], vms["p"]
    assert (a["imsic_csr_exits"], a["imsic_sw_stores"]) == (csr, stores), a
    assert (a["imsic_moves"], a["imsic_evictions"], a["imsic_sgei"]) == (0, 0, 0), a
    # the guest's virtual-instruction exits include every emulated CSR access
    assert a["by_cause"].get("22", 0) >= csr, a
    assert all(p[f] == 0 for f in ("imsic_csr_exits", "imsic_sw_stores", "imsic_moves",
                                   "imsic_evictions", "imsic_sgei")), p
    text = subprocess.run([str(CTL), "--socket", str(h.sock), "metrics"], capture_output=True,
                          text=True, timeout=60, check=True).stdout
    assert f'carapace_vm_imsic_csr_exits_total{{vm="a"}} {csr}\n' in text, text
    assert f'carapace_vm_imsic_sw_stores_total{{vm="a"}} {stores}\n' in text, text
    assert 'carapace_vm_imsic_sw_stores_total{vm="p"} 0\n' in text, text
