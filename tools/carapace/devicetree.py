# SPDX-License-Identifier: MIT
"""The host device tree carapace-run boots the hypervisor with: QEMU's own
(dumped with -machine dumpdtb), with a /chosen that lists the switches
(switch_node), the VMs with their disks and NICs (vm_node), the extra images
(image_node) and the run's options (inject_chosen), compiled with dtc
(build_dtb)."""

import re
import shlex
import subprocess
from pathlib import Path

from .errors import LaunchError
from .launcher import QEMU, qemu_opt
from .ratelimits import rate_lines

DTC = "dtc"


def dump_args(extra):
    """The --qemu-arg list for the tree dump: all but a -set of a drive's
    option (-set drive.ID.OPT=V: the dump has no drives, QEMU would refuse)."""
    out, skip = [], False
    for i, arg in enumerate(extra):
        if skip:
            skip = False
        elif arg == "-set" and i + 1 < len(extra) and extra[i + 1].startswith("drive."):
            skip = True
        else:
            out.append(arg)
    return out


def dts_string(text):
    """Quote @text for DTS: escape quotes and backslashes, hex-escape the rest."""
    out = []
    for byte in text.encode():
        ch = chr(byte)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\x{byte:02x}")
    return '"' + "".join(out) + '"'


def cells64(value):
    return f"{value >> 32:#x} {value & 0xFFFFFFFF:#x}"


def cells(value, count, what):
    """@value as @count 32-bit cells of DTS text."""
    if count < 1 or value >> (32 * count):
        raise LaunchError(f"/chosen has #{what}-cells = <{count}>: cannot express "
                          f"{value:#x}; the tree QEMU gave is unusual")
    return " ".join(f"{(value >> (32 * i)) & 0xFFFFFFFF:#x}" for i in reversed(range(count)))


def vm_node(vm, images, indent="\t\t"):
    """DTS text of one vm@N node."""
    lines = [
        f"vm@{vm.index:x} {{",
        '\tcompatible = "carapace,vm";',
        "\t#address-cells = <0x2>;",
        "\t#size-cells = <0x2>;",
        f"\tcarapace,name = {dts_string(vm.name)};",
        f"\tcarapace,memory = <{cells64(vm.mem)}>;",
        f"\tcarapace,vcpus = <{vm.vcpus:#x}>;",
        f"\tcarapace,cfi = {dts_string(vm.cfi)};",
    ]
    if vm.debug:
        lines.append("\tcarapace,debug;")
    if vm.irqchip != "plic":
        lines.append(f"\tcarapace,irqchip = {dts_string(vm.irqchip)};")
    if vm.bootargs:
        lines.append(f"\tbootargs = {dts_string(vm.bootargs)};")
    for image in images:
        if image.vm == vm.name:
            lines += ["", f"\t{image.kind}@{image.addr:x} {{",
                      f'\t\tcompatible = "carapace,{image.kind}";',
                      f"\t\treg = <{cells64(image.addr)} {cells64(image.size)}>;",
                      "\t};"]
    for disk in vm.disks:
        lines += ["", f"\tdisk@{disk.index} {{",
                  '\t\tcompatible = "carapace,disk";',
                  f"\t\tcarapace,pci-dev = <{disk.pci_dev:#x}>;"]
        if disk.read_only:
            lines.append("\t\tcarapace,read-only;")
        lines += rate_lines({"iops": disk.iops, "bandwidth": disk.bandwidth})
        lines.append("\t};")
    for nic in vm.nics:
        mac = " ".join(nic.mac.split(":"))
        lines += ["", f"\tnic@{nic.index} {{",
                  '\t\tcompatible = "carapace,nic";',
                  f"\t\tcarapace,switch = {dts_string(nic.switch)};",
                  f"\t\tlocal-mac-address = [{mac}];",
                  *rate_lines({"pps": nic.pps, "bandwidth": nic.bandwidth}),
                  "\t};"]
    lines.append("};")
    return "".join(f"{indent}{line}\n" if line else "\n" for line in lines)


def switch_node(sw, indent="\t\t"):
    """DTS text of one /chosen/switch@N node (a --switch)."""
    lines = [f"switch@{sw.index:x} {{",
             '\tcompatible = "carapace,switch";',
             f"\tcarapace,name = {dts_string(sw.name)};"]
    if sw.uplink:
        lines.append(f"\tcarapace,uplink-pci-dev = <{sw.pci_dev:#x}>;")
    lines.append("};")
    return "".join(f"{indent}{line}\n" for line in lines)


def image_node(image, address_cells, size_cells, indent="\t\t"):
    """DTS text of one /chosen/image@ADDR node (an --image)."""
    reg = f"{cells(image.addr, address_cells, 'address')} {cells(image.size, size_cells, 'size')}"
    lines = [f"image@{image.addr:x} {{",
             '\tcompatible = "carapace,image";',
             f"\tcarapace,name = {dts_string(image.name)};",
             f"\treg = <{reg}>;",
             "};"]
    return "".join(f"{indent}{line}\n" for line in lines)


CHOSEN_RE = re.compile(r"^\tchosen \{\n(?P<body>.*?)^\t\};\n", re.MULTILINE | re.DOTALL)


def chosen_cells(body, name):
    """/chosen's own #address-cells or #size-cells if QEMU set it, else None."""
    m = re.search(rf"^\t\t#{name}-cells = <(?:0x([0-9a-f]+)|([0-9]+))>;", body,
                  re.MULTILINE)
    if not m:
        return None
    return int(m.group(1), 16) if m.group(1) else int(m.group(2))


def inject_chosen(dts, vms, images, timeslice_us=None, whole_lines=False, persist=False,
                  vmid_bits=None, stream_stall_ms=None, incoming=False, selftest_pci_irq=False,
                  selftest_hostio=False, switches=(), incoming_disks=(),
                  incoming_copy_disks=False, wfi_traps=False, selftest_wx=None,
                  selftest_cfi=None):
    """Add the VM and image nodes (and our properties) to /chosen of a tree
    decompiled by dtc (tab-indented)."""
    if not CHOSEN_RE.search(dts):
        root_end = dts.rfind("};")
        if root_end < 0:
            raise LaunchError("QEMU's device tree has no root node")
        dts = dts[:root_end] + "\tchosen {\n\t};\n" + dts[root_end:]
    m = CHOSEN_RE.search(dts)
    body = m.group("body")
    # Properties must precede subnodes in DTS: put ours first, the VMs last.
    props, ncells = [], {}
    for what in ("address", "size"):
        ncells[what] = chosen_cells(body, what)
        if ncells[what] is None:
            props.append(f"\t\t#{what}-cells = <0x2>;\n")
            ncells[what] = 2
    if timeslice_us is not None:
        props.append(f"\t\tcarapace,timeslice-us = <{timeslice_us:#x}>;\n")
    if wfi_traps:
        props.append("\t\tcarapace,wfi-traps;\n")
    if whole_lines:
        # Batch mode reads guest output line by line: never print half a line
        # early (the hypervisor does that interactively, to show prompts).
        props.append("\t\tcarapace,partial-flush-ms = <0x0>;\n")
    if persist:
        # The hypervisor stays up when every VM is down (VMs can be created later).
        props.append("\t\tcarapace,persist;\n")
    if vmid_bits is not None:
        # Use at most this many VMID bits (tests: more VMs than VMIDs).
        props.append(f"\t\tcarapace,vmid-bits = <{vmid_bits:#x}>;\n")
    if stream_stall_ms is not None:
        # A snapshot or restore whose client moves no byte this long is abandoned.
        props.append(f"\t\tcarapace,stream-stall-ms = <{stream_stall_ms:#x}>;\n")
    if incoming:
        # At boot, wait for one migrated VM on the stream port (--incoming).
        props.append("\t\tcarapace,incoming;\n")
    if incoming_disks:
        # --incoming-disk: the arriving VM's disk k goes to the k-th host disk
        devs = " ".join(f"{dev:#x}" for dev in incoming_disks)
        props.append(f"\t\tcarapace,incoming-disks = <{devs}>;\n")
    if incoming_copy_disks:
        # --incoming-disk PATH:size=SIZE: the disks' blocks come in the stream
        props.append("\t\tcarapace,incoming-copy-disks;\n")
    if selftest_pci_irq:
        # Test hook: a virtio-blk read at boot whose INTx the hypervisor takes.
        props.append("\t\tcarapace,selftest-pci-irq;\n")
    if selftest_hostio:
        # Tests: at boot, write/read every host disk and ARP on every host NIC.
        props.append("\t\tcarapace,selftest-hostio;\n")
    if selftest_wx is not None:
        # Test hook: at boot the hypervisor stores to its text ("store") or
        # calls into its data ("exec"): W^X must stop it with a page fault.
        props.append(f'\t\tcarapace,selftest-wx = "{selftest_wx}";\n')
    if selftest_cfi is not None:
        # Test hook of a debug build: break the hypervisor's own control flow
        # ("ret" or "call"); its CFI must stop the host.
        props.append(f"\t\tcarapace,selftest-cfi = \"{selftest_cfi}\";\n")
    nodes = "".join("\n" + switch_node(sw) for sw in switches)
    nodes += "".join("\n" + vm_node(vm, images) for vm in vms)
    nodes += "".join("\n" + image_node(image, ncells["address"], ncells["size"])
                     for image in images if image.vm is None)
    new = "\tchosen {\n" + "".join(props) + body + nodes + "\t};\n"
    return dts[:m.start()] + new + dts[m.end():]


def run_tool(cmd, what):
    """Run a helper program; its stderr becomes the error message if it fails."""
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    except FileNotFoundError:
        raise LaunchError(f"{cmd[0]} not found; run `make deps`") from None
    if proc.returncode:
        detail = (proc.stderr or proc.stdout).strip()
        raise LaunchError(f"{what} failed (exit {proc.returncode}): {detail}\n"
                          f"  command: {shlex.join(map(str, cmd))}")
    return proc.stdout


def build_dtb(host, vms, images, workdir, switches=()):
    """Dump QEMU's tree, add the switches and VMs, compile.  Returns (dtb
    path, DTS text)."""
    workdir = Path(workdir)
    raw, dts_path, dtb = workdir / "qemu.dtb", workdir / "host.dts", workdir / "host.dtb"
    # --qemu-arg goes along: options such as -machine aia=... change the tree.
    run_tool([QEMU, "-machine", f"{host.machine()},dumpdtb={qemu_opt(raw)}",
              *host.machine_args(),
              "-display", "none", "-serial", "none", "-monitor", "none",
              *dump_args(host.extra)],
             "QEMU device tree dump")
    base = run_tool([DTC, "-q", "-I", "dtb", "-O", "dts", str(raw)], "dtc (decompile)")
    disks = host.incoming.disks if host.incoming is not None else None
    dts = inject_chosen(base, vms, images, host.timeslice_us, host.batch, host.persist,
                        host.vmid_bits, host.stream_stall_ms, host.incoming is not None,
                        host.selftest_pci_irq, host.selftest_hostio, switches,
                        incoming_disks=disks.pci_devs if disks else (),
                        incoming_copy_disks=bool(disks and disks.copy),
                        wfi_traps=host.wfi_traps, selftest_wx=host.selftest_wx,
                        selftest_cfi=host.selftest_cfi)
    dts_path.write_text(dts)
    run_tool([DTC, "-q", "-I", "dts", "-O", "dtb", "-o", str(dtb), str(dts_path)],
             "dtc (compile)")
    return dtb, dts


