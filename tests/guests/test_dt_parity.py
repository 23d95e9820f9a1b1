# SPDX-License-Identifier: MIT
"""Device-tree parity with QEMU virt (issue 13 item 1): the tree a guest gets
under Carapace against the one an S-mode kernel gets on bare QEMU + OpenSBI,
node by node, for what Carapace emulates (harts, memory, UART, PLIC, timer
frequency, /chosen, aliases). Both trees come from the same guest,
tests/guests/dt_dump.c, which prints the blob it was given; dtc decodes them.

Every property QEMU gives a compared node must be there with the same value
(phandles compared as the paths they point to), unless INTENDED says why not;
every property only Carapace gives must be in EXTRA; every node QEMU has that
Carapace lacks must be in ABSENT. The lists are the documentation of the
differences (docs/user-guide.md, "What a guest sees")."""

import binascii
import re
import subprocess

import pytest

from harness.paths import GUESTS
from harness.report import check_report
from harness.runs import reference_cmd, run_carapace

pytestmark = pytest.mark.quick

MEM = "256M"
HARTS = 2
COMPARED = ["/", "/aliases", "/chosen", "/memory@80000000", "/cpus", "/cpus/cpu-map",
            "/cpus/cpu-map/cluster0", "/soc", "/soc/serial@10000000", "/soc/plic@c000000"] + \
    [n for i in range(HARTS) for n in (f"/cpus/cpu@{i}", f"/cpus/cpu@{i}/interrupt-controller",
                                       f"/cpus/cpu-map/cluster0/core{i}")]

# (node, property): why Carapace differs from QEMU virt there
ISA_DIFF = {"riscv,isa": "only what Carapace virtualizes (checked: the same set as "
                        "riscv,isa-extensions, which is a subset of QEMU's)",
            "riscv,isa-extensions": "only what Carapace virtualizes (a subset, checked)",
            "riscv,cbom-block-size": "Zicbom is not offered",
            "riscv,cbop-block-size": "Zicbop is not offered",
            "riscv,cboz-block-size": "Zicboz is not offered"}
INTENDED = {
    **{(f"/cpus/cpu@{i}", k): why for i in range(HARTS) for k, why in ISA_DIFF.items()},
    ("/", "compatible"): "the machine is Carapace's, not QEMU's",
    ("/", "model"): "the machine is Carapace's, not QEMU's",
    ("/chosen", "rng-seed"): "random on both, per VM and boot under Carapace",
    ("/soc/plic@c000000", "reg"): "Carapace decodes the whole 64 MiB PLIC window",
    ("/soc/plic@c000000", "riscv,ndev"): "31 sources (QEMU: 95); the UART is 10, vmgenid 11",
    ("/soc/plic@c000000", "interrupts-extended"): "one context per vCPU, its S-mode external "
                                                  "interrupt; QEMU lists M then S per hart and "
                                                  "OpenSBI marks M unusable",
}
# (node, property) only Carapace has
EXTRA = {
    ("/chosen", "carapace,boot-count"): "reboots of this VM (SBI SRST)",
    ("/chosen", "carapace,vm-name"): "the VM's name",
}
# nodes of QEMU virt Carapace does not emulate (a prefix matches a subtree)
ABSENT = {
    "/reserved-memory": "OpenSBI's own memory: a guest's RAM is all its own",
    "/poweroff": "SBI SRST shuts a VM down", "/reboot": "SBI SRST reboots a VM",
    "/platform-bus@4000000": "no dynamic sysbus devices", "/pmu": "no SBI PMU yet (issue 13)",
    "/fw-cfg@10100000": "no fw_cfg", "/flash@20000000": "no flash",
    "/soc/rtc@101000": "no RTC", "/soc/test@100000": "SBI SRST instead of the test device",
    "/soc/virtio_mmio@": "no virtio-mmio devices", "/soc/clint@2000000": "Sstc timers and SBI "
    "IPIs; the CLINT is M-mode's", "/soc/pci@30000000": "no PCI",
}


def blob_of(lines, prefix=""):
    """The DTB a dt_dump guest printed, as bytes."""
    blob = b""
    for l in lines:
        m = re.match(re.escape(prefix) + r"DTB (\d+) ([0-9a-f]+)$", l.strip())
        if m:
            assert int(m.group(1)) == len(blob), "DTB lines out of order"
            blob += binascii.unhexlify(m.group(2))
    assert blob, "no DTB lines:\n" + "\n".join(lines)
    return blob


# Structure-block tokens (Devicetree Specification, "Structure Block")
FDT_BEGIN_NODE, FDT_END_NODE, FDT_PROP, FDT_NOP, FDT_END = 1, 2, 3, 4, 9
PHANDLE_REFS = ("cpu", "interrupt-parent", "msi-parent")


def consumer_problems(blob):
    """What a consumer that follows the spec (Linux's unflattening) makes of
    the blob, not what a lenient decoder shows: each node's properties must
    come before its first child (a later one is never read), and every
    phandle a node names (cpu, interrupt-parent, msi-parent, the parents in
    interrupts-extended) must be the phandle of a node, as read that way."""
    be = lambda off: int.from_bytes(blob[off:off + 4], "big")
    assert be(0) == 0xd00dfeed, "not a DTB"
    off, strings = be(8), be(12)
    problems, handles, refs, path, had_child = [], set(), [], [], []
    while True:
        tok = be(off)
        off += 4
        if tok == FDT_BEGIN_NODE:
            end = blob.index(b"\0", off)
            if had_child:
                had_child[-1] = True
            path.append(blob[off:end].decode())
            had_child.append(False)
            off = (end + 4) & ~3
        elif tok == FDT_END_NODE:
            path.pop()
            had_child.pop()
        elif tok == FDT_PROP:
            size, name_off = be(off), be(off + 4)
            name = blob[strings + name_off:blob.index(b"\0", strings + name_off)].decode()
            val = blob[off + 8:off + 8 + size]
            off = (off + 8 + size + 3) & ~3
            node = "/".join(path) or "/"
            if had_child[-1]:
                problems.append(f"{node} {name}: after a child node (never read)")
                continue
            if name == "phandle":
                handles.add(int.from_bytes(val, "big"))
            elif name in PHANDLE_REFS:
                refs.append((node, name, int.from_bytes(val[:4], "big")))
            elif name == "interrupts-extended":
                # <parent irq> pairs: every controller here has one cell
                cells = [int.from_bytes(val[i:i + 4], "big") for i in range(0, len(val), 4)]
                refs += [(node, name, c) for c in cells[0::2]]
        elif tok == FDT_END:
            break
        else:
            assert tok == FDT_NOP, f"bad structure token {tok} at {off - 4}"
    problems += [f"{node} {name}: phandle {h:#x} names no node" for node, name, h in refs
                 if h not in handles]
    return problems


def dts_of(lines, prefix=""):
    """Decode the DTB a dt_dump guest printed: {node path: {property: value}}."""
    blob = blob_of(lines, prefix)
    assert not consumer_problems(blob), "\n".join(consumer_problems(blob))
    dts = subprocess.run(["dtc", "-q", "-I", "dtb", "-O", "dts", "-o", "-", "-"], input=blob,
                         capture_output=True, check=True).stdout.decode()
    tree, path = {}, []
    for raw in dts.splitlines():
        line = raw.strip()
        if line.endswith("{"):
            name = line[:-1].strip().split(":")[-1].strip()
            path.append("" if name == "/" else name)
            tree["/".join(path) or "/"] = {}
        elif line == "};":
            path.pop()
        elif line.endswith(";") and path and not line.startswith("/dts-v1/"):
            k, _, v = line[:-1].partition(" = ")
            tree["/".join(path) or "/"][k.strip()] = v.strip()
    return tree


def resolve_phandles(tree):
    """Phandle cells of interrupt-parent, interrupts-extended and cpu as paths."""
    by_handle = {p["phandle"]: path for path, p in tree.items() if "phandle" in p}

    def name(cell):
        return by_handle.get(f"<{cell}>", cell)
    for props in tree.values():
        props.pop("phandle", None)
        for k in ("interrupt-parent", "cpu", "msi-parent"):
            if k in props:
                props[k] = name(props[k].strip("<>"))
        if "interrupts-extended" in props:
            cells = props["interrupts-extended"].strip("<>").split()
            props["interrupts-extended"] = " ".join(
                f"{by_handle.get(f'<{c}>', c) if i % 2 == 0 else c}" for i, c in enumerate(cells))
    return tree


def dump_bare(extra=()):
    r = subprocess.run(reference_cmd(GUESTS / "dt_dump.bin", smp=HARTS, mem=MEM, serial_only=True,
                                     extra=extra),
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    lines = r.stdout.decode(errors="replace").splitlines()
    return resolve_phandles(dts_of(lines))


def dump_carapace(spec="", extra=()):
    run = run_carapace([f"name=t,kernel=build/guests/dt_dump.bin,vcpus={HARTS},mem={MEM}{spec}"],
                       smp=HARTS, names=["t"], extra=extra)
    check_report(run.guests["t"], "dt_dump (carapace)")
    return resolve_phandles(dts_of(run.guests["t"].lines))


def test_guest_dt_matches_qemu_virt(guests_built):
    qemu, ours = dump_bare(), dump_carapace()
    compare(qemu, ours, COMPARED, INTENDED, EXTRA, ABSENT)


# An AIA VM (irqchip=aia, docs/design-aia.md 3.1) against QEMU virt
# aia=aplic-imsic: its S-level IMSIC and APLIC nodes as QEMU's, the devices on
# the APLIC; the M-level ones OpenSBI keeps are not a guest's.
AIA_IMSIC, AIA_APLIC = "/soc/interrupt-controller@28000000", "/soc/interrupt-controller@d000000"
AIA_COMPARED = [n for n in COMPARED if n != "/soc/plic@c000000"] + [AIA_IMSIC, AIA_APLIC]
AIA_INTENDED = {
    **{k: why for k, why in INTENDED.items() if not k[0].startswith("/soc/plic")},
    (AIA_APLIC, "riscv,num-sources"): "31 sources (QEMU: 96); the UART is 10, vmgenid 11",
}
AIA_ABSENT = {
    **ABSENT,
    "/soc/interrupt-controller@24000000": "the M-level IMSIC: OpenSBI's (disabled in its tree)",
    "/soc/interrupt-controller@c000000": "the M-level APLIC: OpenSBI's (disabled in its tree)",
}


def test_aia_guest_dt_matches_qemu_virt_aia(guests_built):
    qemu = dump_bare(extra=("-machine", "aia=aplic-imsic"))
    ours = dump_carapace(",irqchip=aia", extra=("--aia", "--aia-guests", "0"))
    assert "/soc/plic@c000000" not in ours and "/soc/plic@c000000" not in qemu
    compare(qemu, ours, AIA_COMPARED, AIA_INTENDED, EXTRA, AIA_ABSENT)
    assert "ssaia" in ours["/cpus/cpu@0"]["riscv,isa-extensions"], ours["/cpus/cpu@0"]
    assert "smaia" not in ours["/cpus/cpu@0"]["riscv,isa-extensions"], ours["/cpus/cpu@0"]


def compare(qemu, ours, compared, intended, extra, absent):
    """Every compared node's properties as QEMU's, but the listed differences
    (see the module's docstring); the ISA a checked subset."""
    problems = []
    for node in compared:
        if node not in qemu:
            problems.append(f"{node}: not in QEMU's tree (the compared list is stale)")
            continue
        if node not in ours:
            problems.append(f"{node}: missing")
            continue
        for prop, val in qemu[node].items():
            if (node, prop) in intended:
                continue
            if prop not in ours[node]:
                problems.append(f"{node} {prop}: missing (QEMU: {val})")
            elif ours[node][prop] != val:
                problems.append(f"{node} {prop}: {ours[node][prop]} (QEMU: {val})")
        for prop in ours[node]:
            if prop not in qemu[node] and (node, prop) not in extra and (node, prop) not in intended:
                problems.append(f"{node} {prop}: only Carapace has it, and the extra list does not say why")
    for node in qemu:
        if node not in ours and not any(node.startswith(a) for a in absent):
            problems.append(f"{node}: QEMU has it, Carapace not, and the absent list does not say why")
    for key in intended:
        if key[1] in qemu.get(key[0], {}) and ours.get(key[0], {}).get(key[1]) == qemu[key[0]][key[1]]:
            problems.append(f"{key}: listed as a difference, but equal (the list is stale)")
    assert not problems, "guest DT vs QEMU virt:\n  " + "\n  ".join(problems)

    # the intended ISA differences, checked: a subset, and riscv,isa the same set
    q = set(re.findall(r'"([^"]+)"', qemu["/cpus/cpu@0"]["riscv,isa-extensions"].replace("\\0", '" "')))
    o = re.findall(r'"([^"]+)"', ours["/cpus/cpu@0"]["riscv,isa-extensions"].replace("\\0", '" "'))
    # svade beside svadu: A/D updating off at boot, FWFT PTE_AD_HW_UPDATING turns
    # it on (the DT binding's rule, the spec's reset value 0); QEMU's firmware
    # leaves it on, so QEMU lists svadu alone
    extra = {"svade"} if "svadu" in q else set()
    assert "svadu" not in q or {"svade", "svadu"} <= set(o), o
    assert set(o) <= q | extra, f"Carapace offers extensions QEMU's CPU lacks: {set(o) - q}"
    isa = ours["/cpus/cpu@0"]["riscv,isa"].strip('"')
    single, _, multi = isa.partition("_")
    assert single == "rv64" + "".join(e for e in o if len(e) == 1), (isa, o)
    assert sorted(multi.split("_")) == sorted(e for e in o if len(e) > 1), (isa, o)


def tiny_blob(cpu_props_after_child):
    """/cpus/cpu@0 with an interrupt-controller child and a phandle, and
    /cpus/cpu-map/cluster0/core0 naming it: the shape fdt_guest.c writes."""
    strings, struct = b"", b""
    names = {}

    def u32(v):
        return v.to_bytes(4, "big")

    def node(name):
        nonlocal struct
        raw = name.encode() + b"\0"
        struct += u32(FDT_BEGIN_NODE) + raw + b"\0" * (-len(raw) % 4)

    def prop(name, val):
        nonlocal struct, strings
        if name not in names:
            names[name] = len(strings)
            strings += name.encode() + b"\0"
        struct += u32(FDT_PROP) + u32(len(val)) + u32(names[name]) + val + b"\0" * (-len(val) % 4)

    def end():
        nonlocal struct
        struct += u32(FDT_END_NODE)
    node(""), node("cpus"), node("cpu@0")
    if not cpu_props_after_child:
        prop("phandle", u32(0x200))
    node("interrupt-controller"), prop("phandle", u32(1)), end()
    if cpu_props_after_child:
        prop("phandle", u32(0x200))
    end(), node("cpu-map"), node("cluster0"), node("core0"), prop("cpu", u32(0x200))
    end(), end(), end(), end(), end()
    struct += u32(FDT_END)
    head = 40
    return (u32(0xd00dfeed) + u32(head + len(struct) + len(strings)) + u32(head) +
            u32(head + len(struct)) + u32(0) * 6 + struct + strings)


def test_consumer_check_finds_a_property_after_a_child():
    """The check above fails on the bug it was written for (Linux: "cpu-map/
    cluster0/core0: Can't get CPU for leaf core"), and passes the fix."""
    assert consumer_problems(tiny_blob(False)) == []
    assert consumer_problems(tiny_blob(True)) == [
        "/cpus/cpu@0 phandle: after a child node (never read)",
        "/cpus/cpu-map/cluster0/core0 cpu: phandle 0x200 names no node"]
