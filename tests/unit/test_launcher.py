# SPDX-License-Identifier: MIT
"""Tests for tools/carapace-run: VM specs, extra images, placement, the device
tree, the control socket, console parsing, the batch runner and exit statuses.
Tests that need dtc, QEMU, the firmware or the cross compiler skip when those
are missing."""

import os
import shutil
import socket
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from carapace import console
from carapace.cli import run as run_cli
from carapace.cli.run import (bind_incoming, build_parser, incoming_spec, listen_address, main,
                              parse_expects, persist_settled, run_interactive, run_qemu)
from carapace.console import (RunResult, VmResult, exit_status, parse_console, print_summary,
                              run_batch)
from carapace.devicetree import build_dtb, dts_string, inject_chosen
from carapace.errors import LaunchError
from carapace.launcher import (DEFAULT_CPU, QEMU, HostConfig, ctl_device_args, ctl_socket_path,
                               prepare_ctl_socket, qemu_command, remove_ctl_socket,
                               stream_device_args, stream_socket_path)
from carapace.paths import cache_dir, default_ctl_socket, default_stream_socket
from carapace.restorer import parse_restores
from carapace.vmspec import (check_host_memory, default_host_mem, parse_images, parse_size,
                             parse_vm_spec, parse_vms, place_images)

from harness.snapshots import crc32c

# scripts/run-tests.sh selects tests by marker; these take seconds, so: quick.
pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = ROOT / "tools" / "carapace-run"
MiB = 1 << 20


needs_dtc = pytest.mark.skipif(not (shutil.which("dtc") and shutil.which("fdtget")),
                               reason="dtc/fdtget not installed")
FIRMWARE = cache_dir() / "fw_dynamic.bin"
needs_qemu = pytest.mark.skipif(not (shutil.which(QEMU) and shutil.which("dtc")
                                     and FIRMWARE.is_file()),
                                reason="QEMU, dtc or OpenSBI firmware missing (make deps)")
CROSS_GCC = "riscv64-unknown-elf-gcc"
needs_cross = pytest.mark.skipif(not shutil.which(CROSS_GCC), reason="no riscv64 gcc")


@pytest.fixture(autouse=True)
def private_runtime_dir(tmp_path, monkeypatch):
    """The default control socket goes under tmp_path: never the user's."""
    monkeypatch.delenv("CARAPACE_CTL_SOCKET", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    return tmp_path / "run"


@pytest.fixture
def kernel(tmp_path):
    path = tmp_path / "guest.bin"
    path.write_bytes(b"\x13\x00\x00\x00" * 1250)     # 5000 bytes of nops
    return path


def linux_image(path, text_offset, image_size, efi=False, file_size=4096):
    """A file with a RISC-V Linux Image header."""
    head = bytearray(file_size)
    if efi:
        head[0:2] = b"MZ"
    head[8:16] = text_offset.to_bytes(8, "little")
    head[16:24] = image_size.to_bytes(8, "little")
    head[0x30:0x38] = b"RISCV\0\0\0"
    head[0x38:0x3C] = b"RSC\x05"
    path.write_bytes(bytes(head))
    return path


# --- VM specs ---------------------------------------------------------------------


def test_spec_defaults(kernel):
    vm = parse_vm_spec(f"kernel={kernel}", 3)
    assert (vm.index, vm.name, vm.kernel, vm.initrd) == (3, "vm3", kernel, None)
    assert (vm.mem, vm.vcpus, vm.cfi, vm.bootargs) == (64 * MiB, 1, "trap", None)
    assert vm.kernel_info.kind == "flat binary"


def test_spec_all_keys(kernel, tmp_path):
    initrd = tmp_path / "rd.cpio"
    initrd.write_bytes(b"070701")
    vm = parse_vm_spec(f"name=web_1,kernel={kernel},initrd={initrd},mem=1G,vcpus=8,"
                          "cfi=strict,bootargs=console=hvc0", 0)
    assert (vm.name, vm.initrd, vm.mem, vm.vcpus, vm.cfi, vm.bootargs) == \
        ("web_1", initrd, 1 << 30, 8, "strict", "console=hvc0")


def test_bootargs_takes_the_rest_verbatim(kernel):
    vm = parse_vm_spec(f"kernel={kernel},bootargs=a=1,b,mem=32M, x=\"y\\z\"", 0)
    assert vm.bootargs == 'a=1,b,mem=32M, x="y\\z"'
    assert vm.mem == 64 * MiB       # "mem=32M" belonged to the bootargs


def test_relative_kernel_path_becomes_absolute(kernel, monkeypatch):
    monkeypatch.chdir(kernel.parent)
    assert parse_vm_spec("kernel=guest.bin", 0).kernel == kernel


@pytest.mark.parametrize("text, size", [("64M", 64 * MiB), ("64m", 64 * MiB),
                                        ("2G", 2 << 30), ("8192K", 8 * MiB),
                                        ("16MiB", 16 * MiB), ("4194304", 4 * MiB)])
def test_parse_size(text, size):
    assert parse_size(text, "x") == size


@pytest.mark.parametrize("spec, message", [
    ("kernel={k},colour=red", "unknown key 'colour'"),
    ("kernel={k},mem=64M,mem=32M", "'mem' given twice"),
    ("name=a", "kernel=PATH is required"),
    ("kernel=/nonexistent/guest.bin", "no such file: /nonexistent/guest.bin"),
    ("kernel=", "no such file"),
    ("kernel={k},initrd=/nope.cpio", "initrd: no such file"),
    ("kernel={k},mem=64X", "cannot parse size '64X'"),
    ("kernel={k},mem=6M", "at least 8M"),
    ("kernel={k},mem=65M", "multiple of 2M"),
    ("kernel={k},vcpus=0", "vcpus=0 must be 1..8"),
    ("kernel={k},vcpus=9", "vcpus=9 must be 1..8"),
    ("kernel={k},vcpus=two", "vcpus=two must be 1..8"),
    ("kernel={k},cfi=maybe", "cfi=maybe must be one of trap, delegate, strict, off"),
    ("name=Alpha,kernel={k}", "bad name 'Alpha'"),
    ("name=a.b,kernel={k}", "bad name 'a.b'"),
    ("name=abcdefghijklmnop,kernel={k}", "bad name 'abcdefghijklmnop'"),
    ("name=,kernel={k}", "bad name ''"),
    ("kernel={k},vcpus", "expected KEY=VALUE, got 'vcpus'"),
    ("kernel={k},", "expected KEY=VALUE, got ''"),
    ("", "expected KEY=VALUE, got ''"),
    ("kernel={k},bootargs=" + "x" * 512, "bootargs longer than 511 bytes"),
])
def test_spec_errors(kernel, spec, message):
    with pytest.raises(LaunchError) as info:
        parse_vm_spec(spec.format(k=kernel), 0)
    assert message in str(info.value)


def test_longest_name_and_bootargs_accepted(kernel):
    vm = parse_vm_spec(f"name={'a' * 15},kernel={kernel},bootargs={'x' * 511}", 0)
    assert vm.name == "a" * 15 and len(vm.bootargs) == 511


@pytest.mark.parametrize("head, message", [(b"\x7fELF\x02\x01", "ELF"),
                                           (b"\x1f\x8b\x08\x00", "gzip"),
                                           (b"MZ\0\0zimg", "EFI zboot"),
                                           (b"", "empty")])
def test_unbootable_kernels_rejected(tmp_path, head, message):
    path = tmp_path / "k"
    path.write_bytes(head + (b"\0" * 100 if head else b""))
    with pytest.raises(LaunchError, match=message):
        parse_vm_spec(f"kernel={path}", 0)


def test_linux_image_detected(tmp_path):
    image = linux_image(tmp_path / "Image", 0x200000, 20 * MiB)
    info = parse_vm_spec(f"kernel={image}", 0).kernel_info
    assert (info.kind, info.load_offset, info.claim) == ("Linux Image", 0x200000, 20 * MiB)
    efi = linux_image(tmp_path / "Image.efi", 0x200000, 20 * MiB, efi=True)
    assert parse_vm_spec(f"kernel={efi}", 0).kernel_info.kind == "Linux Image (EFI stub)"


def test_guest_ram_must_hold_the_kernel(tmp_path):
    image = linux_image(tmp_path / "Image", 0x200000, 62 * MiB)
    with pytest.raises(LaunchError, match="mem=64M is too small.*at least 66M"):
        parse_vm_spec(f"kernel={image}", 0)
    assert parse_vm_spec(f"kernel={image},mem=66M", 0).mem == 66 * MiB


def test_guest_ram_must_hold_kernel_and_initrd(kernel, tmp_path):
    initrd = tmp_path / "rd"
    initrd.write_bytes(b"\0" * (62 * MiB))
    with pytest.raises(LaunchError, match="and initrd"):
        parse_vm_spec(f"kernel={kernel},initrd={initrd}", 0)


def test_vm_names_unique(kernel):
    with pytest.raises(LaunchError, match="two VMs are named 'vm1'"):
        parse_vms([f"name=vm1,kernel={kernel}", f"kernel={kernel}"])


def test_at_most_eight_vms(kernel):
    assert len(parse_vms([f"kernel={kernel}"] * 8)) == 8
    with pytest.raises(LaunchError, match="at most 8"):
        parse_vms([f"kernel={kernel}"] * 9)


# --- placement ----------------------------------------------------------------------


def sized(tmp_path, name, size):
    path = tmp_path / name
    path.write_bytes(b"\x13" * size)
    return path


def test_single_image_sits_16m_below_ram_end(kernel):
    vms = parse_vms([f"name=a,kernel={kernel}"])
    (image,) = place_images(vms, 512 * MiB)
    assert (image.vm, image.kind, image.size) == ("a", "kernel", 5000)
    assert image.addr == 0x9EE00000     # 0xa0000000 - 16M - 5000, rounded down to 2M


def test_images_stack_downward_aligned(tmp_path):
    k1, k2 = sized(tmp_path, "k1", 3 * MiB + 1), sized(tmp_path, "k2", 2 * MiB)
    rd = sized(tmp_path, "rd", 5 * MiB)
    vms = parse_vms([f"name=a,kernel={k1},initrd={rd}", f"name=b,kernel={k2}"])
    images = place_images(vms, 1 << 30)
    assert [(i.vm, i.kind) for i in images] == [("a", "kernel"), ("a", "ramdisk"),
                                                ("b", "kernel")]
    top = 0x80000000 + (1 << 30) - 16 * MiB
    for image in images:
        assert image.addr % (2 * MiB) == 0
        assert image.addr + image.size <= top   # below the previous image
        top = image.addr
    assert [i.addr for i in images] == [0xBEC00000, 0xBE600000, 0xBE400000]


def test_images_must_stay_above_64m(tmp_path):
    big = sized(tmp_path, "big", 40 * MiB)
    vms = parse_vms([f"kernel={big},mem=64M"])
    with pytest.raises(LaunchError, match="host RAM too small, use --mem"):
        place_images(vms, 96 * MiB)
    # 128M: top of images at 0x87000000, the 40M image starts at 0x84800000: fits.
    assert place_images(vms, 128 * MiB)[0].addr == 0x84800000


def test_default_host_mem(kernel, tmp_path):
    vms = parse_vms([f"kernel={kernel}"])
    assert default_host_mem(vms) == 512 * MiB     # the floor
    rd = sized(tmp_path, "rd", 3 * MiB)
    vms = parse_vms([f"kernel={kernel},mem=256M,initrd={rd}", f"kernel={kernel},mem=128M"])
    # guest RAM 384M + images rounded to 2M (2M + 4M + 2M) + 256M
    assert default_host_mem(vms) == (384 + 8 + 256) * MiB


def test_host_ram_must_hold_guest_ram(kernel):
    vms = parse_vms([f"kernel={kernel},mem=512M"])
    images = place_images(vms, 512 * MiB)
    with pytest.raises(LaunchError, match="cannot hold 512M of guest RAM.*--mem 770M"):
        check_host_memory(vms, images, 512 * MiB)
    mem = default_host_mem(vms)
    check_host_memory(vms, place_images(vms, mem), mem)


# --- device tree ---------------------------------------------------------------------

BASE_DTS = textwrap.dedent("""\
    /dts-v1/;

    / {
    \t#address-cells = <0x02>;
    \t#size-cells = <0x02>;
    \tcompatible = "riscv-virtio";

    \tchosen {
    \t\tstdout-path = "/soc/serial@10000000";
    \t};

    \tmemory@80000000 {
    \t\tdevice_type = "memory";
    \t\treg = <0x00 0x80000000 0x00 0x20000000>;
    \t};
    };
    """)

TRICKY = 'console=hvc0 root="/dev/x y" path=C:\\dir\\ tab\there ünï €'


def compile_dts(tmp_path, dts):
    src, dtb = tmp_path / "t.dts", tmp_path / "t.dtb"
    src.write_text(dts)
    subprocess.run(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", str(dtb), str(src)],
                   check=True, capture_output=True)
    return dtb


def fdtget(dtb, node, prop, kind=None):
    cmd = ["fdtget"] + (["-t", kind] if kind else []) + [str(dtb), node, prop]
    return subprocess.run(cmd, check=True, capture_output=True).stdout.decode().rstrip("\n")


def two_vms(tmp_path, kernel):
    rd = sized(tmp_path, "rd", 3 * MiB)
    vms = parse_vms([f"name=a,kernel={kernel},mem=128M,vcpus=2,cfi=off,bootargs={TRICKY}",
                        f"name=b,kernel={kernel},initrd={rd}"])
    return vms, place_images(vms, 512 * MiB)


def test_dts_string_escapes():
    assert dts_string('a"b\\c') == '"a\\"b\\\\c"'
    assert dts_string("t\tü") == '"t\\x09\\xc3\\xbc"'


@needs_dtc
def test_vm_nodes_compile_and_read_back(tmp_path, kernel):
    vms, images = two_vms(tmp_path, kernel)
    dtb = compile_dts(tmp_path, inject_chosen(BASE_DTS, vms, images, timeslice_us=2500))
    assert fdtget(dtb, "/chosen", "stdout-path") == "/soc/serial@10000000"
    assert fdtget(dtb, "/chosen", "carapace,timeslice-us") == "2500"
    assert fdtget(dtb, "/chosen", "#address-cells") == "2"
    assert fdtget(dtb, "/chosen", "#size-cells") == "2"
    a, b = "/chosen/vm@0", "/chosen/vm@1"
    assert fdtget(dtb, a, "compatible") == "carapace,vm"
    assert fdtget(dtb, a, "carapace,name") == "a"
    assert fdtget(dtb, a, "carapace,memory", "x") == "0 8000000"
    assert fdtget(dtb, a, "carapace,vcpus") == "2"
    assert fdtget(dtb, a, "carapace,cfi") == "off"
    assert fdtget(dtb, a, "#address-cells") == "2" and fdtget(dtb, a, "#size-cells") == "2"
    raw = subprocess.run(["fdtget", "-t", "bx", str(dtb), a, "bootargs"], check=True,
                         capture_output=True).stdout.split()
    assert bytes(int(x, 16) for x in raw) == TRICKY.encode() + b"\0"
    assert fdtget(dtb, b, "carapace,name") == "b"
    assert fdtget(dtb, b, "carapace,cfi") == "trap"
    with pytest.raises(subprocess.CalledProcessError):
        fdtget(dtb, b, "bootargs")                      # none given: none written
    ka, kb, rd = images
    assert fdtget(dtb, f"{a}/kernel@{ka.addr:x}", "compatible") == "carapace,kernel"
    assert fdtget(dtb, f"{a}/kernel@{ka.addr:x}", "reg", "x") == f"0 {ka.addr:x} 0 1388"
    assert fdtget(dtb, f"{b}/kernel@{kb.addr:x}", "reg", "x") == f"0 {kb.addr:x} 0 1388"
    assert fdtget(dtb, f"{b}/ramdisk@{rd.addr:x}", "compatible") == "carapace,ramdisk"
    assert fdtget(dtb, f"{b}/ramdisk@{rd.addr:x}", "reg", "x") == f"0 {rd.addr:x} 0 300000"
    # The rest of the tree is untouched.
    assert fdtget(dtb, "/memory@80000000", "reg", "x") == "0 80000000 0 20000000"


@needs_dtc
def test_chosen_created_when_missing(tmp_path, kernel):
    vms, images = two_vms(tmp_path, kernel)
    base = BASE_DTS.replace('\tchosen {\n\t\tstdout-path = "/soc/serial@10000000";\n\t};\n', "")
    assert "chosen" not in base
    dtb = compile_dts(tmp_path, inject_chosen(base, vms, images))
    assert fdtget(dtb, "/chosen/vm@1", "carapace,name") == "b"
    with pytest.raises(subprocess.CalledProcessError):
        fdtget(dtb, "/chosen", "carapace,timeslice-us")


@needs_dtc
def test_existing_chosen_cells_and_subnodes_kept(tmp_path, kernel):
    vms, images = two_vms(tmp_path, kernel)
    base = BASE_DTS.replace('\t\tstdout-path = "/soc/serial@10000000";\n',
                            "\t\t#address-cells = <0x1>;\n\t\tx = <1>;\n\n"
                            "\t\tother {\n\t\t\ty = <2>;\n\t\t};\n")
    dts = inject_chosen(base, vms, images, timeslice_us=7)
    assert dts.count("#address-cells = <0x1>") == 1
    dtb = compile_dts(tmp_path, dts)       # our properties still precede subnodes
    assert fdtget(dtb, "/chosen", "#address-cells") == "1"
    assert fdtget(dtb, "/chosen", "#size-cells") == "2"
    assert fdtget(dtb, "/chosen/other", "y") == "2"
    assert fdtget(dtb, "/chosen/vm@0", "carapace,name") == "a"


@needs_qemu
def test_build_dtb_from_qemu(tmp_path, kernel):
    vms = parse_vms([f"name=a,kernel={kernel}"])
    host = HostConfig(hyp=kernel, bios=FIRMWARE, mem=512 * MiB, smp=3)
    images = place_images(vms, host.mem)
    dtb, dts = build_dtb(host, vms, images, tmp_path)
    assert dtb == tmp_path / "host.dtb" and "vm@0 {" in dts
    assert fdtget(dtb, "/memory@80000000", "reg", "x") == "0 80000000 0 20000000"
    assert fdtget(dtb, "/cpus/cpu@2", "device_type") == "cpu"
    assert "zicfilp" in fdtget(dtb, "/cpus/cpu@0", "riscv,isa-extensions")
    assert fdtget(dtb, "/chosen/vm@0", "carapace,name") == "a"
    assert fdtget(dtb, "/chosen", "stdout-path") == "/soc/serial@10000000"


@needs_qemu
def test_qemu_dump_error_is_reported(tmp_path, kernel):
    host = HostConfig(hyp=kernel, bios=FIRMWARE, mem=512 * MiB, cpu="no-such-cpu")
    with pytest.raises(LaunchError, match="QEMU device tree dump failed"):
        build_dtb(host, [], [], tmp_path)


# --- QEMU command line ----------------------------------------------------------------


def host_for(kernel, **kw):
    return HostConfig(hyp=Path("/h/carapace.bin"), bios=Path("/fw.bin"), mem=768 * MiB,
                         **kw)


def test_qemu_command_interactive(tmp_path, kernel):
    vms, images = two_vms(tmp_path, kernel)
    cmd = qemu_command(host_for(kernel), Path("/t/host.dtb"), images, batch=False)
    assert cmd[:13] == [QEMU, "-machine", "virt,aclint=on", "-cpu", DEFAULT_CPU, "-smp", "2",
                        "-m", "768M", "-bios", "/fw.bin", "-kernel", "/h/carapace.bin"]
    assert cmd[13:15] == ["-dtb", "/t/host.dtb"]
    loaders = [cmd[i + 1] for i, a in enumerate(cmd) if a == "-device"
               and cmd[i + 1].startswith("loader,")]
    assert loaders == [f"loader,file={i.path},addr={i.addr:#x},force-raw=on" for i in images]
    assert cmd[-1] == "-nographic"
    assert "-icount" not in cmd and "stdio" not in cmd
    assert not any("semihosting" in a for a in cmd)


def test_qemu_command_batch_icount_extra(tmp_path, kernel):
    vms, images = two_vms(tmp_path, kernel)
    host = host_for(kernel, icount=True, smp=4, extra=["-d", "guest_errors"])
    cmd = qemu_command(host, Path("/t/host.dtb"), images, batch=True)
    assert "-nographic" not in cmd
    assert cmd[-8:] == ["-display", "none", "-serial", "stdio", "-monitor", "none",
                        "-d", "guest_errors"]
    i = cmd.index("-icount")
    assert cmd[i + 1] == "shift=0,align=off"
    assert cmd[cmd.index("-smp") + 1] == "4"


def test_loader_path_commas_doubled(tmp_path, monkeypatch):
    odd = tmp_path / "a,b"
    odd.mkdir()
    k = sized(odd, "k", 100)
    monkeypatch.chdir(odd)          # a relative kernel= path becomes absolute
    vms = parse_vms(["kernel=k"])
    cmd = qemu_command(host_for(k), Path("/d"), place_images(vms, 512 * MiB), True)
    escaped = str(odd).replace(",", ",,")
    assert any(a.startswith(f"loader,file={escaped}/k,addr=") for a in cmd)


# --- extra images (--image) -----------------------------------------------------------


def test_parse_images(tmp_path, kernel):
    web, rd = sized(tmp_path, "web", 3 * MiB), sized(tmp_path, "rd", 100)
    vms = parse_vms([f"name=a,kernel={kernel}"])
    images = parse_images([f"web={web}", f"web-rd.v2_x={rd}", f"{'n' * 31}={rd}"], vms)
    assert [(i.name, i.path) for i in images] == [("web", web), ("web-rd.v2_x", rd),
                                                   ("n" * 31, rd)]
    assert parse_images([], vms) == []


@pytest.mark.parametrize("item, message", [
    ("Web={f}", "bad image name 'Web'"),
    ("a/b={f}", "bad image name 'a/b'"),
    ("={f}", "bad image name ''"),
    ("x" * 32 + "={f}", "bad image name"),
    ("web", "expected NAME=PATH"),
    ("a.kernel={f}", "'a.kernel' is taken by vm a's own image"),
    ("a.initrd={f}", "'a.initrd' is taken by vm a"),      # reserved even without initrd
    ("b.kernel={f}", "'b.kernel' is taken by vm b"),
    ("web=/nonexistent/web.img", "--image web: no such file: /nonexistent/web.img"),
    ("web=", "--image web: no such file"),
    ("web={empty}", "--image web: file is empty"),
])
def test_image_errors(tmp_path, kernel, item, message):
    f, empty = sized(tmp_path, "f", 10), tmp_path / "empty"
    empty.write_bytes(b"")
    vms = parse_vms([f"name=a,kernel={kernel}", f"name=b,kernel={kernel}"])
    with pytest.raises(LaunchError) as info:
        parse_images([item.format(f=f, empty=empty)], vms)
    assert message in str(info.value)


def test_image_names_unique(tmp_path):
    f = sized(tmp_path, "f", 10)
    with pytest.raises(LaunchError, match="two images are named 'web'"):
        parse_images([f"web={f}", f"x={f}", f"web={f}"], [])


def test_image_named_like_an_absent_vm_is_fine(tmp_path, kernel):
    f = sized(tmp_path, "f", 10)
    vms = parse_vms([f"name=a,kernel={kernel}"])
    assert parse_images([f"zz.kernel={f}"], vms)[0].name == "zz.kernel"


def test_at_most_24_images_in_all(tmp_path, kernel):
    f = sized(tmp_path, "f", 10)
    assert len(parse_images([f"i{n}={f}" for n in range(24)], [])) == 24
    with pytest.raises(LaunchError, match="25 images in all .*at most 24"):
        parse_images([f"i{n}={f}" for n in range(25)], [])
    # The VMs' own kernels and initrds count: 1 + 2 + 21 = 24 fits, 25 does not.
    vms = parse_vms([f"name=a,kernel={kernel}", f"name=b,kernel={kernel},initrd={f}"])
    assert len(parse_images([f"i{n}={f}" for n in range(21)], vms)) == 21
    with pytest.raises(LaunchError, match="25 images in all"):
        parse_images([f"i{n}={f}" for n in range(22)], vms)


def test_extra_images_placed_after_the_vms_images(tmp_path):
    k, rd = sized(tmp_path, "k", 3 * MiB + 1), sized(tmp_path, "rd", 5 * MiB)
    web = sized(tmp_path, "web", 2 * MiB)
    vms = parse_vms([f"name=a,kernel={k},initrd={rd}"])
    extra = parse_images([f"web={web}", f"web2={k}"], vms)
    images = place_images(vms, 1 << 30, extra)
    assert [(i.vm, i.kind, i.name) for i in images] == [
        ("a", "kernel", "a.kernel"), ("a", "ramdisk", "a.initrd"),
        (None, "image", "web"), (None, "image", "web2")]
    assert [i.addr for i in images] == [0xBEC00000, 0xBE600000, 0xBE400000, 0xBE000000]
    assert images[3].size == 3 * MiB + 1


def test_images_without_vms(tmp_path):
    web = sized(tmp_path, "web", 5000)
    (image,) = place_images([], 512 * MiB, parse_images([f"web={web}"], []))
    assert (image.vm, image.kind, image.name, image.addr) == (None, "image", "web", 0x9EE00000)
    check_host_memory([], [image], 512 * MiB)
    check_host_memory([], [], 512 * MiB)              # no VMs, no images: fine


def test_default_host_mem_counts_images_and_spare(tmp_path, kernel):
    big = tmp_path / "big"
    with open(big, "wb") as f:          # sparse: only the size matters
        f.truncate(300 * MiB + 1)
    vms = parse_vms([f"kernel={kernel},mem=256M"])
    extra = parse_images([f"big={big}"], vms)
    # guest RAM 256M + images (2M + 302M) + 256M
    assert default_host_mem(vms, extra) == (256 + 2 + 302 + 256) * MiB
    assert default_host_mem(vms, extra, spare=1 << 30) == (256 + 2 + 302 + 256 + 1024) * MiB
    assert default_host_mem([], [], spare=0) == 512 * MiB           # the floor
    assert default_host_mem([], [], spare=512 * MiB) == 768 * MiB


def test_host_ram_must_hold_spare_mem(kernel):
    vms = parse_vms([f"kernel={kernel},mem=128M"])
    images = place_images(vms, 512 * MiB)
    check_host_memory(vms, images, 512 * MiB, spare=256 * MiB)
    with pytest.raises(LaunchError,
                       match="cannot hold 128M of guest RAM, 512M of --spare-mem.*--mem 898M"):
        check_host_memory(vms, images, 512 * MiB, spare=512 * MiB)
    mem = default_host_mem(vms, spare=512 * MiB)
    check_host_memory(vms, place_images(vms, mem), mem, spare=512 * MiB)


@needs_dtc
def test_image_nodes_and_persist_in_chosen(tmp_path, kernel):
    web = sized(tmp_path, "web", 3 * MiB + 5)
    vms, _ = two_vms(tmp_path, kernel)
    extra = parse_images([f"web={web}", f"rd.x_1={kernel}"], vms)
    images = place_images(vms, 512 * MiB, extra)
    dtb = compile_dts(tmp_path, inject_chosen(BASE_DTS, vms, images, persist=True))
    assert fdtget(dtb, "/chosen", "carapace,persist") == ""
    web_image, rd_image = images[3:]
    node = f"/chosen/image@{web_image.addr:x}"
    assert fdtget(dtb, node, "compatible") == "carapace,image"
    assert fdtget(dtb, node, "carapace,name") == "web"
    assert fdtget(dtb, node, "reg", "x") == f"0 {web_image.addr:x} 0 300005"
    node = f"/chosen/image@{rd_image.addr:x}"
    assert fdtget(dtb, node, "carapace,name") == "rd.x_1"
    assert fdtget(dtb, node, "reg", "x") == f"0 {rd_image.addr:x} 0 1388"
    # The VMs' own images stay in their VM nodes, not as image@ nodes.
    listed = subprocess.run(["fdtget", "-l", str(dtb), "/chosen"], check=True,
                            capture_output=True, text=True).stdout.split()
    assert sorted(listed) == sorted(["vm@0", "vm@1", f"image@{web_image.addr:x}",
                                     f"image@{rd_image.addr:x}"])
    assert fdtget(dtb, "/chosen/vm@1", "carapace,name") == "b"


@needs_dtc
def test_stream_stall_in_chosen_only_when_given(tmp_path, kernel):
    vms, images = two_vms(tmp_path, kernel)
    assert "stream-stall" not in inject_chosen(BASE_DTS, vms, images)
    dtb = compile_dts(tmp_path, inject_chosen(BASE_DTS, vms, images, stream_stall_ms=1500))
    assert fdtget(dtb, "/chosen", "carapace,stream-stall-ms") == "1500"


@needs_dtc
def test_no_persist_no_images_no_nodes(tmp_path, kernel):
    vms, images = two_vms(tmp_path, kernel)
    dts = inject_chosen(BASE_DTS, vms, images)
    assert "carapace,persist" not in dts and "image@" not in dts
    dtb = compile_dts(tmp_path, dts)
    with pytest.raises(subprocess.CalledProcessError):
        fdtget(dtb, "/chosen", "carapace,persist")


@needs_dtc
def test_persist_with_no_vms(tmp_path):
    web = sized(tmp_path, "web", 100)
    images = place_images([], 512 * MiB, parse_images([f"web={web}"], []))
    dtb = compile_dts(tmp_path, inject_chosen(BASE_DTS, [], images, persist=True))
    assert fdtget(dtb, "/chosen", "carapace,persist") == ""
    assert fdtget(dtb, f"/chosen/image@{images[0].addr:x}", "carapace,name") == "web"


@needs_dtc
def test_image_reg_follows_existing_chosen_cells(tmp_path):
    """If QEMU's /chosen had its own cells, image reg is written in them."""
    web = sized(tmp_path, "web", 100)
    images = place_images([], 512 * MiB, parse_images([f"web={web}"], []))
    base = BASE_DTS.replace('\t\tstdout-path = "/soc/serial@10000000";\n',
                            "\t\t#address-cells = <0x01>;\n\t\t#size-cells = <0x01>;\n")
    dtb = compile_dts(tmp_path, inject_chosen(base, [], images))
    assert fdtget(dtb, f"/chosen/image@{images[0].addr:x}", "reg", "x") == \
        f"{images[0].addr:x} 64"
    base = BASE_DTS.replace('\t\tstdout-path = "/soc/serial@10000000";\n',
                            "\t\t#address-cells = <0x00>;\n")
    with pytest.raises(LaunchError, match="#address-cells = <0>"):
        inject_chosen(base, [], images)


# --- the control socket ------------------------------------------------------------------


def test_ctl_device_args():
    assert ctl_device_args(Path("/r/ctl.sock")) == [
        "-global", "virtio-mmio.force-legacy=false",
        "-device", "virtio-serial-device,id=carapace-vser,max_ports=5",
        "-chardev", "socket,id=carapace-ctl,path=/r/ctl.sock,server=on,wait=off",
        "-device", "virtserialport,bus=carapace-vser.0,chardev=carapace-ctl,"
                   "name=org.carapace.control,nr=1"]
    assert "path=/a,,b/c.sock,server" in ctl_device_args(Path("/a,b/c.sock"))[5]


def test_mgmt_ports_are_the_ones_the_hypervisor_drives():
    # QEMU makes (and polls) every port's queues: no more than the driver's
    from carapace import c_header, launcher, paths
    header = (paths.SOURCE_ROOT / "hyp/include/virtio_console.h").read_text()
    objects, _ = c_header.c_macros(header)
    assert launcher.MGMT_MAX_PORTS == c_header.c_value(objects["VCON_MAX_PORTS"], objects)


def test_default_socket_directory_created_private(private_runtime_dir):
    path = ctl_socket_path(None)
    assert path == private_runtime_dir / f"carapace-{os.getuid()}" / "ctl.sock"
    assert not path.parent.exists()
    assert prepare_ctl_socket(path, private=True) == path
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert not path.exists()


def test_default_socket_directory_mode_tightened(private_runtime_dir):
    directory = private_runtime_dir / f"carapace-{os.getuid()}"
    directory.mkdir(parents=True)
    directory.chmod(0o755)
    prepare_ctl_socket(directory / "ctl.sock", private=True)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700


def test_default_socket_directory_of_someone_else(private_runtime_dir, monkeypatch):
    directory = private_runtime_dir / "carapace-x"
    directory.mkdir(parents=True)
    monkeypatch.setattr(os, "getuid", lambda: os.stat(directory).st_uid + 1)
    with pytest.raises(LaunchError, match="belongs to another user; use --ctl-socket"):
        prepare_ctl_socket(directory / "ctl.sock", private=True)


def test_default_socket_directory_symlink_refused(private_runtime_dir, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    private_runtime_dir.mkdir()
    (private_runtime_dir / "carapace-x").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(LaunchError, match="is not a directory"):
        prepare_ctl_socket(private_runtime_dir / "carapace-x" / "ctl.sock", private=True)


def test_chosen_socket_directory_created(tmp_path):
    path = tmp_path / "a" / "b" / "ctl.sock"
    prepare_ctl_socket(path)
    assert path.parent.is_dir() and stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def listening(path):
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    return server


def test_socket_in_use_refused(tmp_path):
    path = tmp_path / "ctl.sock"
    with listening(path):
        with pytest.raises(LaunchError) as info:
            prepare_ctl_socket(path)
        assert str(info.value) == f"another Carapace is using {path}; use --ctl-socket"
        assert path.exists()                          # left alone


def test_stale_socket_removed(tmp_path):
    path = tmp_path / "ctl.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))                             # bound, nobody listening
    stale.close()
    assert stat.S_ISSOCK(path.lstat().st_mode)
    prepare_ctl_socket(path)
    assert not path.exists()


def test_non_socket_at_the_path_refused(tmp_path):
    path = tmp_path / "ctl.sock"
    path.write_text("precious")
    with pytest.raises(LaunchError, match="exists and is not a socket; use --ctl-socket"):
        prepare_ctl_socket(path)
    assert path.read_text() == "precious"


def test_socket_path_too_long(tmp_path):
    with pytest.raises(LaunchError, match="path too long for a UNIX socket"):
        ctl_socket_path("/tmp/" + "x" * 103)
    assert ctl_socket_path("/tmp/" + "x" * 102) == Path("/tmp/" + "x" * 102)
    assert ctl_socket_path("rel.sock") == Path.cwd() / "rel.sock"


def test_remove_ctl_socket(tmp_path):
    path = tmp_path / "ctl.sock"
    remove_ctl_socket(path)                        # absent: fine
    with listening(path):
        remove_ctl_socket(path)
    assert not path.exists()
    path.write_text("not ours")
    remove_ctl_socket(path)                        # not a socket: left alone
    assert path.exists()


def test_qemu_command_has_the_management_device(tmp_path, kernel):
    vms, images = two_vms(tmp_path, kernel)
    host = host_for(kernel, ctl_socket=Path("/run/c,1/ctl.sock"))
    for batch in (False, True):
        cmd = qemu_command(host, Path("/t/host.dtb"), images, batch=batch)
        args = ctl_device_args(Path("/run/c,1/ctl.sock"))
        i = cmd.index("-global")
        assert cmd[i:i + len(args)] == args
        assert "socket,id=carapace-ctl,path=/run/c,,1/ctl.sock,server=on,wait=off" in cmd
        assert not any("semihosting" in a for a in cmd)
    # Without a socket path in the config: the default one.
    cmd = qemu_command(host_for(kernel), Path("/t/host.dtb"), images, batch=True)
    assert f"path={default_ctl_socket()}," in cmd[cmd.index("-chardev") + 1]


# --- console parsing and exit statuses ----------------------------------------------

CONSOLE = """\
OpenSBI v1.6\r
carapace: Carapace hypervisor, HS-mode, boot hart 0 of 2\r
carapace: vm a: boot 0, 1 vcpu(s), 64 MiB RAM\r
[a] hello from a\r
[b] hello from b\r
[a] carapace: vm a: stopped: forged by the guest\r
[zz] not a VM of ours\r
[a] \r
carapace: vm b: rebooting\r
[b] again\r
carapace: vm a: shut down\r
carapace: vm a: exits 63, sbi calls 61\r
carapace: vm b: stopped: guest page fault at 0x1000\r
carapace: vm c: shut down (system failure)\r
carapace: vm d: not created: not enough host memory\r
carapace: all VMs down, powering off (some VM failed)\r
"""


def test_parse_console_outcomes():
    r = parse_console(CONSOLE, ["a", "b", "c", "d", "e"])
    outcomes = {n: (v.outcome, v.reason) for n, v in r.vms.items()}
    assert outcomes == {"a": ("shutdown", ""),
                        "b": ("stopped", "guest page fault at 0x1000"),
                        "c": ("failed", "system failure"),
                        "d": ("stopped", "not created: not enough host memory"),
                        "e": ("running", "")}
    assert r.vms["a"].console == ["hello from a", "carapace: vm a: stopped: forged by the guest",
                                  ""]
    assert r.vms["b"].console == ["hello from b", "again"]
    assert r.all_down and r.panic is None
    assert r.lines[0] == "OpenSBI v1.6"


def test_parse_console_destroyed():
    r = parse_console("carapace: vm a: destroyed, 64 MiB returned\n"
                         "carapace: vm b: shut down\n"
                         "carapace: vm b: destroyed, 64 MiB returned\n"
                         "[c] carapace: vm c: destroyed\n"
                         "carapace: vm d: destroyed\n"
                         "carapace: vm e: destroyedx\n", ["a", "b", "c", "d", "e"])
    outcomes = {n: v.outcome for n, v in r.vms.items()}
    assert outcomes == {"a": "destroyed", "b": "shutdown", "c": "running", "d": "destroyed",
                        "e": "running"}


def test_parse_console_reboot_reopens():
    r = parse_console("carapace: vm a: shut down (system failure)\n"
                         "carapace: vm a: rebooting\n", ["a"])
    assert r.vms["a"].outcome == "running" and not r.all_down


def test_parse_console_panic_and_lookalikes():
    r = parse_console("carapace: vm a: shut downx\n"
                         " carapace: vm a: shut down\n"
                         "carapace: all VMs downer\n"
                         "carapace: PANIC: bad trap\ncarapace: PANIC: second\n", ["a"])
    assert r.vms["a"].outcome == "running"
    assert not r.all_down
    assert r.panic == "bad trap"


def result_with(outcomes, **kw):
    r = RunResult({n: VmResult(n, o) for n, o in outcomes.items()}, **kw)
    return r


@pytest.mark.parametrize("outcomes, kw, expect, code", [
    ({"a": "shutdown", "b": "shutdown"}, {"all_down": True}, None, 0),
    ({"a": "shutdown", "b": "failed"}, {"all_down": True}, None, 1),
    ({"a": "stopped", "b": "shutdown"}, {"all_down": True}, None, 1),
    ({"a": "shutdown", "b": "running"}, {"all_down": True}, None, 1),
    ({"a": "shutdown", "b": "running"}, {"timed_out": True}, None, 2),
    ({"a": "stopped", "b": "running"}, {"timed_out": True}, None, 2),
    ({"a": "shutdown"}, {"error": "QEMU exited"}, None, 3),
    ({"a": "stopped", "b": "shutdown"}, {"all_down": True}, {"a": "stopped"}, 0),
    ({"a": "shutdown", "b": "shutdown"}, {"all_down": True}, {"a": "stopped"}, 1),
    ({"a": "stopped", "b": "failed"}, {"all_down": True}, {"a": "stopped"}, 1),
    ({"a": "stopped", "b": "failed"}, {"all_down": True}, {"a": "stopped", "b": "failed"}, 0),
    ({"a": "stopped", "b": "running"}, {"timed_out": True}, {"a": "stopped", "b": "running"}, 0),
    ({"a": "running", "b": "running"}, {"timed_out": True}, {"a": "stopped", "b": "running"}, 2),
])
def test_exit_status(outcomes, kw, expect, code):
    assert exit_status(result_with(outcomes, **kw), expect)[0] == code


@pytest.mark.parametrize("outcomes, expect, code", [
    ({"a": "shutdown", "b": "shutdown"}, None, 0),
    ({}, None, 0),                                        # a host that waited for VMs
    ({"a": "shutdown", "b": "running"}, None, 1),        # b should have shut down
    ({"a": "shutdown", "b": "running"}, {"b": "running"}, 0),
    ({"a": "stopped", "b": "running"}, {"b": "running"}, 1),
    ({"a": "stopped", "late": "shutdown"}, {"a": "stopped"}, 0),
    ({"a": "destroyed", "b": "shutdown"}, None, 1),
    ({"a": "destroyed", "b": "shutdown"}, {"a": "destroyed"}, 0),
])
def test_exit_status_persist_timeout_is_the_end(outcomes, expect, code):
    r = result_with(outcomes, timed_out=True, persist=True)
    assert exit_status(r, expect)[0] == code


def test_exit_status_persist_error_still_counts():
    r = result_with({"a": "shutdown"}, error="QEMU exited (status 1) before all VMs were down",
                    persist=True)
    assert exit_status(r)[0] == 3


def test_run_batch_persist_ends_at_the_timeout():
    start = time.monotonic()
    r = run_batch(script("""
        import time
        print("carapace: vm a: shut down", flush=True)
        time.sleep(300)
        """), ["a"], timeout=1.0, echo=None, persist=True)
    assert time.monotonic() - start < 10
    assert r.timed_out and r.persist and r.vms["a"].outcome == "shutdown"
    assert exit_status(r) == (0, "every VM ended as expected")


def test_run_batch_persist_ends_once_every_expected_vm_ended():
    """--persist with --expect: the run is over once those VMs all ended (a
    --restore test once waited out its whole 400 s timeout)."""
    prog = script("""
        import time
        print("carapace: vm a: shut down", flush=True)
        time.sleep(0.5)
        print("carapace: vm b: destroyed, 64 MiB returned", flush=True)
        print("carapace: vm b: exits 1", flush=True)
        time.sleep(300)
        """)
    start = time.monotonic()
    settled = persist_settled({"a": "shutdown", "b": "destroyed"}, None)
    r = run_batch(prog, ["a", "b"], timeout=60, echo=None, persist=True, settled=settled)
    assert time.monotonic() - start < 15
    assert r.settled and not r.timed_out and r.error is None, r
    assert exit_status(r, {"a": "shutdown", "b": "destroyed"})[0] == 0
    # one VM still to end: the timeout stays the end
    start = time.monotonic()
    r = run_batch(prog, ["a", "b"], timeout=2.0, echo=None, persist=True,
                     settled=persist_settled({"a": "shutdown", "b": "failed"}, None))
    assert r.timed_out and not r.settled
    assert time.monotonic() - start >= 2.0
    # no --expect, or a VM expected to keep running: only the timeout ends it
    assert persist_settled({}, None) is None
    assert persist_settled({"a": "running"}, None) is None


def test_zero_vms_need_persist():
    with pytest.raises(LaunchError, match="give at least one --vm .or --persist"):
        parse_vms([])
    assert parse_vms([], persist=True) == []


def test_expect_runtime_vm_needs_persist():
    with pytest.raises(LaunchError, match="no VM named 'late'"):
        parse_expects(["late=shutdown"], {"a"})
    assert parse_expects(["late=shutdown"], {"a"}, persist=True) == {"late": "shutdown"}
    with pytest.raises(LaunchError, match="no VM named 'Late'"):
        parse_expects(["Late=shutdown"], {"a"}, persist=True)


def test_summary_lists_each_vm_and_its_console(capsys):
    r = parse_console(CONSOLE, ["a", "b"])
    assert print_summary(r, {"b": "shutdown"}) == 1
    out = capsys.readouterr().out
    assert "vm a: shutdown\n    [a] hello from a\n" in out
    assert "vm b: stopped: guest page fault at 0x1000 (expected shutdown)\n" in out
    assert "    [b] again\n" in out
    assert out.rstrip().endswith("==== exit 1: vm b: stopped, expected shutdown ====")


# --- the batch runner, with stand-in programs ---------------------------------------


def script(text):
    return [sys.executable, "-c", textwrap.dedent(text)]


def test_run_batch_clean_run(tmp_path, capsys):
    log = tmp_path / "console.log"
    cmd = script(r"""
        import sys, time
        out = sys.stdout.buffer
        out.write(b"[a] hi\r\ncarapace: vm a: shut down\r\n"); out.flush()
        time.sleep(0.2)
        out.write(b"carapace: all VMs down, powering off\r\n[a] no newline")
        """)
    r = run_batch(cmd, ["a"], timeout=20, log_path=log)
    assert (r.all_down, r.timed_out, r.error, r.qemu_status) == (True, False, None, 0)
    assert r.vms["a"].outcome == "shutdown"
    assert r.vms["a"].console == ["hi", "no newline"]
    assert log.read_bytes().startswith(b"[a] hi\r\n")      # raw, \r kept
    assert "carapace: vm a: shut down\n" in capsys.readouterr().out   # echoed live
    assert exit_status(r)[0] == 0


@pytest.fixture
def stdin_with_data():
    """Make fd 0 a pipe holding data, as a CI runner or a shell pipeline might."""
    saved = os.dup(0)
    r, w = os.pipe()
    os.write(w, b"typed ahead\n")
    os.close(w)
    os.dup2(r, 0)
    os.close(r)
    yield
    os.dup2(saved, 0)
    os.close(saved)


def test_run_batch_stdin_is_not_read(stdin_with_data):
    r = run_batch(script("""
        import sys
        data = sys.stdin.read()
        print("carapace: vm a: shut down" if data == "" else "stdin had data")
        print("carapace: all VMs down, powering off")
        """), ["a"], timeout=20, echo=None)
    assert r.vms["a"].outcome == "shutdown"


def test_run_batch_timeout_kills_the_process_group(tmp_path):
    pidfile = tmp_path / "child.pid"
    cmd = ["sh", "-c", f"sleep 300 & echo $! > {pidfile}; echo '[a] started'; wait"]
    start = time.monotonic()
    r = run_batch(cmd, ["a"], timeout=1.0, echo=None)
    assert time.monotonic() - start < 10
    assert r.timed_out and r.vms["a"].console == ["started"]
    assert exit_status(r)[0] == 2
    child = int(pidfile.read_text())
    for _ in range(50):           # the grandchild must be gone too
        if not Path(f"/proc/{child}").exists() or \
                Path(f"/proc/{child}/stat").read_text().split()[2] == "Z":
            break
        time.sleep(0.1)
    else:
        pytest.fail("sleep survived the timeout")


def test_run_batch_early_exit_is_an_error():
    r = run_batch(script("""
        import sys
        print("carapace: vm a: shut down")
        print("carapace: PANIC: no memory")
        sys.exit(1)
        """), ["a", "b"], timeout=20, echo=None)
    assert not r.timed_out and r.qemu_status == 1
    assert "before all VMs were down" in r.error and "no memory" in r.error
    assert exit_status(r)[0] == 3


def test_run_batch_hung_after_poweroff(monkeypatch):
    monkeypatch.setattr(console, "POWEROFF_GRACE", 0.5)
    start = time.monotonic()
    r = run_batch(script("""
        import time
        print("carapace: vm a: shut down")
        print("carapace: all VMs down, powering off", flush=True)
        time.sleep(300)
        """), ["a"], timeout=60, echo=None)
    assert time.monotonic() - start < 20      # not the whole timeout
    assert not r.timed_out and "did not exit" in r.error
    assert exit_status(r)[0] == 3


def test_run_batch_missing_program():
    r = run_batch(["/nonexistent/qemu"], ["a"], timeout=5, echo=None)
    assert "cannot start /nonexistent/qemu" in r.error
    assert exit_status(r)[0] == 3


# --- the command line ---------------------------------------------------------------


@pytest.mark.parametrize("argv, message", [
    (["--batch"], "--vm"),
    (["--vm", "kernel={k}", "--timeout", "5"], "--timeout needs --batch"),
    (["--vm", "kernel={k}", "--expect", "vm0=shutdown"], "--expect needs --batch"),
    (["--vm", "kernel={k}", "--log", "x"], "--log needs --batch"),
    (["--batch", "--vm", "kernel={k}", "--expect", "zz=stopped"], "no VM named 'zz'"),
    (["--batch", "--vm", "kernel={k}", "--expect", "vm0=dead"], "OUTCOME one of"),
    (["--batch", "--vm", "kernel={k}", "--timeout", "0"], "must be positive"),
    (["--vm", "kernel={k}", "--smp", "9"], "--smp 9: must be 1..8"),
    (["--vm", "kernel={k}", "--mem", "513M"], "multiple of 2M"),
    (["--vm", "kernel={k}", "--timeslice-us", "0"], "--timeslice-us 0"),
    (["--vm", "kernel={k}", "--stream-stall-ms", "99"], "--stream-stall-ms 99: must be"),
    (["--vm", "kernel={k}", "--bios", "/nope/fw.bin"], "run `make deps`"),
    (["--vm", "kernel={k}", "--hyp", "/nope/carapace.bin", "--bios", "{k}"],
     "hypervisor image not found"),
    (["--vm", "kernel={k},mem=512M", "--mem", "512M", "--bios", "{k}", "--hyp", "{k}"],
     "host RAM too small, use --mem"),
    (["--vm", "kernel={k}", "--bogus"], "unrecognized arguments"),
    (["--vm", "kernel={k}", "--aia-guests", "1"], "--aia-guests needs --aia"),
    (["--vm", "kernel={k}", "--aia", "--aia-guests", "8"], "--aia-guests 8: must be 0..7"),
    (["--vm", "kernel={k}", "--aia", "--aia-guests", "-1"], "--aia-guests -1: must be 0..7"),
])
def test_main_errors_exit_3(kernel, capsys, argv, message, monkeypatch):
    monkeypatch.delenv("CARAPACE_AIA_GUESTS", raising=False)
    assert main([a.format(k=kernel) for a in argv]) == 3
    err = capsys.readouterr().err
    assert err.startswith("carapace-run: error: ") and message in err


def test_help_documents_the_contract(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for word in ("carapace,vm", "carapace,kernel", "bootargs=TEXT", "timeout: QEMU was killed"):
        assert word in out


@pytest.mark.parametrize("argv, message", [
    ([], "no VMs: give at least one --vm (or --persist"),
    (["--vm", "name=a,kernel={k}", "--image", "Bad={k}"], "bad image name 'Bad'"),
    (["--vm", "name=a,kernel={k}", "--image", "a.kernel={k}"], "'a.kernel' is taken by vm a"),
    (["--vm", "name=a,kernel={k}", "--image", "w={k}", "--image", "w={k}"],
     "two images are named 'w'"),
    (["--persist", "--image", "w=/nope/w.img"], "--image w: no such file: /nope/w.img"),
    (["--persist", "--image", "w"], "expected NAME=PATH"),
    (["--persist", "--spare-mem", "1X"], "--spare-mem: cannot parse size '1X'"),
    (["--persist", "--spare-mem", "3M"], "--spare-mem 3M: must be a multiple of 2M"),
    (["--persist", "--spare-mem", "1G", "--mem", "512M", "--bios", "{k}", "--hyp", "{k}"],
     "1G of --spare-mem"),
    (["--persist", "--ctl-socket", "/" + "x" * 200], "path too long"),
    (["--batch", "--vm", "kernel={k}", "--expect", "late=shutdown"], "no VM named 'late'"),
])
def test_main_new_option_errors_exit_3(kernel, capsys, argv, message):
    assert main([a.format(k=kernel) for a in argv]) == 3
    err = capsys.readouterr().err
    assert err.startswith("carapace-run: error: ") and message in err


@needs_qemu
def test_main_socket_in_use_exits_3(kernel, tmp_path, capsys):
    path = tmp_path / "busy.sock"
    with listening(path):
        assert main(["--batch", "--hyp", str(kernel), "--ctl-socket", str(path),
                        "--vm", f"kernel={kernel}"]) == 3
    err = capsys.readouterr().err
    assert f"carapace-run: error: another Carapace is using {path}; use --ctl-socket" in err


def test_help_documents_images_and_management(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for word in ("--image NAME=PATH", "--spare-mem SIZE", "--persist", "--ctl-socket PATH",
                 "carapace,image", "carapace,persist", "VM.kernel", "VM.initrd",
                 "carapace-ctl", "XDG_RUNTIME_DIR", "ends at the"):
        assert word in out, word


def test_executable_with_shebang():
    assert os.access(LAUNCHER, os.X_OK)
    assert LAUNCHER.read_text().startswith("#!/usr/bin/env python3\n")


@needs_qemu
def test_unwritable_log_exits_3(kernel, capsys, private_runtime_dir):
    assert main(["--batch", "--hyp", str(kernel), "--log", "/nonexistent/dir/log",
                    "--vm", f"kernel={kernel}"]) == 3
    assert not any(private_runtime_dir.glob("*/ctl.sock"))     # cleaned up
    assert "No such file or directory: '/nonexistent/dir/log'" in capsys.readouterr().err


@needs_qemu
def test_dry_run_prints_command_and_tree(kernel, tmp_path, capsys):
    keep = tmp_path / "keep"
    code = main(["--dry-run", "--keep", str(keep), "--hyp", str(kernel),
                    "--vm", f"name=a,kernel={kernel},bootargs=x,y", "--timeslice-us", "900"])
    assert code == 0
    out = capsys.readouterr().out
    assert f"-dtb {keep / 'host.dtb'}" in out and "-nographic" in out
    assert '\t\tvm@0 {\n' in out and 'bootargs = "x,y";' in out
    assert fdtget(keep / "host.dtb", "/chosen", "carapace,timeslice-us") == "900"
    assert (keep / "host.dts").read_text() in out


@needs_qemu
def test_dry_run_images_persist_socket(kernel, tmp_path, capsys, private_runtime_dir):
    keep, web = tmp_path / "keep", sized(tmp_path, "web", 3 * MiB)
    code = main(["--dry-run", "--keep", str(keep), "--hyp", str(kernel), "--persist",
                    "--image", f"web={web}", "--spare-mem", "1G"])
    assert code == 0
    out = capsys.readouterr().out
    sock = private_runtime_dir / f"carapace-{os.getuid()}" / "ctl.sock"
    assert f"-chardev socket,id=carapace-ctl,path={sock},server=on,wait=off" in out
    assert "-device virtio-serial-device,id=carapace-vser,max_ports=5" in out
    assert "name=org.carapace.control,nr=1" in out
    assert "-global virtio-mmio.force-legacy=false" in out
    assert f"# control socket: {sock}" in out
    assert f"#   image web: {web} ({3 * MiB} bytes) at 0x" in out
    assert "-m 1284M" in out            # image 4M + 256M + 1G spare
    assert "carapace,persist;" in out and "image@" in out
    assert not sock.parent.exists()     # a dry run creates nothing
    dtb = keep / "host.dtb"
    assert fdtget(dtb, "/chosen", "carapace,persist") == ""
    (node,) = [n for n in subprocess.run(["fdtget", "-l", str(dtb), "/chosen"], check=True,
                                         capture_output=True, text=True).stdout.split()]
    assert fdtget(dtb, f"/chosen/{node}", "carapace,name") == "web"
    assert fdtget(dtb, f"/chosen/{node}", "compatible") == "carapace,image"


@pytest.mark.parametrize("argv, env, want", [
    ([], {}, None),
    (["--aia"], {}, 0),
    (["--aia", "--aia-guests", "3"], {}, 3),
    ([], {"CARAPACE_AIA_GUESTS": "2"}, 2),          # a whole tier on the AIA machine
    ([], {"CARAPACE_AIA_GUESTS": ""}, None),
    (["--plic"], {"CARAPACE_AIA_GUESTS": "2"}, None),   # a PLIC case within that tier
    (["--aia-guests", "5"], {"CARAPACE_AIA_GUESTS": "2"}, 5),
    (["--aia"], {"CARAPACE_AIA_GUESTS": "1"}, 1),
])
def test_machine_from_options_and_environment(argv, env, want):
    assert run_cli.aia_guests(build_parser().parse_args(argv), env) == want


@pytest.mark.parametrize("argv, env, message", [
    (["--aia", "--plic"], {}, "--aia and --plic: choose one machine"),
    ([], {"CARAPACE_AIA_GUESTS": "8"}, "CARAPACE_AIA_GUESTS=8: must be 0..7"),
    ([], {"CARAPACE_AIA_GUESTS": "yes"}, "CARAPACE_AIA_GUESTS=yes: must be 0..7"),
    (["--plic", "--aia-guests", "2"], {"CARAPACE_AIA_GUESTS": "2"}, "--aia-guests needs --aia"),
])
def test_machine_option_errors(argv, env, message):
    with pytest.raises(LaunchError, match=message):
        run_cli.aia_guests(build_parser().parse_args(argv), env)


def test_machine_plic_by_default_aia_when_asked(kernel):
    assert host_for(kernel).machine() == "virt,aclint=on"
    assert host_for(kernel, aclint=False).machine() == "virt"
    assert host_for(kernel, aia_guests=0, aclint=True).machine() == "virt,aia=aplic-imsic"
    assert host_for(kernel, aia_guests=0).machine() == "virt,aia=aplic-imsic"
    assert host_for(kernel, aia_guests=3).machine() == "virt,aia=aplic-imsic,aia-guests=3"
    cmd = qemu_command(host_for(kernel, aia_guests=3), Path("/t/host.dtb"), [], batch=True)
    assert cmd[1:3] == ["-machine", "virt,aia=aplic-imsic,aia-guests=3"]


def test_irqchip_spec_and_machine(kernel):
    """irqchip=aia (docs/design-aia.md 3.1): parsed, checked, and only on the
    AIA machine; PLIC by default."""
    assert parse_vm_spec(f"kernel={kernel}", 0).irqchip == "plic"
    aia = parse_vm_spec(f"kernel={kernel},irqchip=aia", 0)
    assert aia.irqchip == "aia"
    with pytest.raises(LaunchError, match="irqchip=apic must be one of plic, aia"):
        parse_vm_spec(f"kernel={kernel},irqchip=apic", 0)
    run_cli.check_irqchips([aia], host_for(kernel, aia_guests=0))
    run_cli.check_irqchips([parse_vm_spec(f"kernel={kernel}", 0)], host_for(kernel))
    with pytest.raises(LaunchError, match="irqchip=aia needs the AIA machine"):
        run_cli.check_irqchips([aia], host_for(kernel))


@needs_dtc
def test_irqchip_in_the_vm_node(tmp_path, kernel):
    vms = [parse_vm_spec(f"name=a,kernel={kernel},irqchip=aia", 0),
           parse_vm_spec(f"name=b,kernel={kernel}", 1)]
    dtb = compile_dts(tmp_path, inject_chosen(BASE_DTS, vms, []))
    assert fdtget(dtb, "/chosen/vm@0", "carapace,irqchip") == "aia"
    with pytest.raises(subprocess.CalledProcessError):
        fdtget(dtb, "/chosen/vm@1", "carapace,irqchip")     # the default: not written


@needs_qemu
def test_dry_run_aia_machine_tree(kernel, tmp_path, capsys):
    """--aia: QEMU's own tree of the AIA machine is the one the VMs are added
    to (the dump runs the same -machine as the run)."""
    keep = tmp_path / "keep"
    assert main(["--dry-run", "--keep", str(keep), "--hyp", str(kernel), "--aia",
                 "--aia-guests", "3", "--vm", f"name=a,kernel={kernel}"]) == 0
    out, err = capsys.readouterr()
    assert "-machine virt,aia=aplic-imsic,aia-guests=3 " in out
    dtb = keep / "host.dtb"
    imsic = "/soc/interrupt-controller@28000000"
    assert fdtget(dtb, imsic, "compatible") == "qemu,imsics riscv,imsics"
    assert fdtget(dtb, imsic, "riscv,guest-index-bits") == "2"
    assert fdtget(dtb, "/soc/interrupt-controller@d000000", "riscv,num-sources") == "96"
    assert "ssaia" in fdtget(dtb, "/cpus/cpu@0", "riscv,isa-extensions")
    assert fdtget(dtb, "/chosen/vm@0", "carapace,name") == "a"
    # guest files without -icount: QEMU 10.0.2's hgeip race, said
    assert "guest interrupt files under QEMU's multi-threaded TCG" in err


@needs_qemu
@pytest.mark.parametrize("extra, warned", [(["--aia-guests", "3", "--icount"], False),
                                           (["--aia-guests", "0"], False),
                                           (["--aia-guests", "1"], True)])
def test_guest_files_warn_only_without_icount(kernel, capsys, extra, warned):
    assert main(["--dry-run", "--hyp", str(kernel), "--aia", *extra,
                 "--vm", f"name=a,kernel={kernel}"]) == 0
    assert ("guest interrupt files under QEMU's multi-threaded TCG" in
            capsys.readouterr().err) == warned


@needs_qemu
def test_dry_run_lists_the_vms_image_names(kernel, tmp_path, capsys):
    assert main(["--dry-run", "--hyp", str(kernel), "--vm", f"name=a,kernel={kernel}"]) == 0
    assert ", image a.kernel" in capsys.readouterr().out


# --- end to end: QEMU with a stand-in hypervisor -------------------------------------

FAKE_HYP = """\
	.section .text
	.globl _start
_start:
	la	s0, msg
1:	lbu	a0, 0(s0)
	beqz	a0, 2f
	li	a7, 0x4442434E		/* SBI DBCN */
	li	a6, 2			/* console_write_byte */
	ecall
	addi	s0, s0, 1
	j	1b
2:
{end}
3:	wfi
	j	3b
msg:
	.byte {message}, 0
"""
POWER_OFF = "\tli a7, 0x53525354\n\tli a6, 0\n\tli a0, 0\n\tli a1, 0\n\tecall"


def fake_hypervisor(tmp_path, message, power_off=True):
    """An S-mode binary that prints @message over SBI and powers off (or spins)."""
    src, elf, binary = tmp_path / "fake.S", tmp_path / "fake.elf", tmp_path / "fake.bin"
    src.write_text(FAKE_HYP.format(end=POWER_OFF if power_off else "",
                                   message=", ".join(str(b) for b in message.encode())))
    subprocess.run([CROSS_GCC, "-nostdlib", "-march=rv64imac_zicsr", "-mabi=lp64",
                    "-Wl,-Ttext=0x80200000", "-o", str(elf), str(src)], check=True)
    subprocess.run(["riscv64-unknown-elf-objcopy", "-O", "binary", str(elf), str(binary)],
                   check=True)
    return binary


def launch(tmp_path, kernel, message, *extra, power_off=True, vms=("a", "b")):
    hyp = fake_hypervisor(tmp_path, message, power_off)
    argv = ["--batch", "--hyp", str(hyp), "--ctl-socket", str(tmp_path / "ctl.sock"), *extra]
    for name in vms:
        argv += ["--vm", f"name={name},kernel={kernel}"]
    return main(argv)


ALL_DOWN = "carapace: all VMs down, powering off\r\n"


@needs_qemu
@needs_cross
def test_e2e_clean_shutdown(tmp_path, kernel, capsys):
    log = tmp_path / "log"
    msg = ("carapace: vm a: shut down\r\n[b] bye\r\ncarapace: vm b: shut down\r\n" + ALL_DOWN)
    assert launch(tmp_path, kernel, msg, "--log", str(log)) == 0
    out = capsys.readouterr().out
    assert "vm b: shutdown\n    [b] bye\n" in out
    assert b"OpenSBI" in log.read_bytes()


@needs_qemu
@needs_cross
def test_e2e_stopped_vm_and_expect(tmp_path, kernel):
    msg = ("carapace: vm a: shut down\r\ncarapace: vm b: stopped: illegal instruction\r\n"
           + ALL_DOWN)
    assert launch(tmp_path, kernel, msg) == 1
    assert launch(tmp_path, kernel, msg, "--expect", "b=stopped") == 0
    assert launch(tmp_path, kernel, msg, "--expect", "a=stopped") == 1


@needs_qemu
@needs_cross
def test_e2e_timeout(tmp_path, kernel, capsys):
    msg = "carapace: vm a: shut down\r\n"
    start = time.monotonic()
    assert launch(tmp_path, kernel, msg, "--timeout", "2", power_off=False) == 2
    assert time.monotonic() - start < 15
    assert "carapace-run: timeout after 2 s" in capsys.readouterr().err
    assert launch(tmp_path, kernel, msg, "--timeout", "2", "--expect", "b=running",
                  power_off=False) == 0


@needs_qemu
@needs_cross
def test_e2e_poweroff_before_all_down(tmp_path, kernel, capsys):
    assert launch(tmp_path, kernel, "carapace: PANIC: oops\r\n") == 3
    assert "hypervisor panic: oops" in capsys.readouterr().err


@needs_qemu
@needs_cross
def test_e2e_socket_announced_and_removed(tmp_path, kernel, capsys):
    msg = "carapace: vm a: shut down\r\ncarapace: vm b: shut down\r\n" + ALL_DOWN
    assert launch(tmp_path, kernel, msg) == 0
    err = capsys.readouterr().err
    assert f"control socket {tmp_path / 'ctl.sock'}" in err
    assert not (tmp_path / "ctl.sock").exists()


@needs_qemu
@needs_cross
def test_e2e_default_socket(tmp_path, kernel, capsys, private_runtime_dir):
    hyp = fake_hypervisor(tmp_path, "carapace: vm a: shut down\r\n" + ALL_DOWN)
    assert main(["--batch", "--hyp", str(hyp), "--vm", f"name=a,kernel={kernel}"]) == 0
    directory = private_runtime_dir / f"carapace-{os.getuid()}"
    assert f"control socket {directory / 'ctl.sock'}" in capsys.readouterr().err
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert not (directory / "ctl.sock").exists()


@needs_qemu
@needs_cross
def test_e2e_qemu_listens_on_the_socket(tmp_path, kernel):
    """QEMU accepts the management device arguments and listens on the socket
    while it runs; the launcher removes the socket afterwards."""
    path = tmp_path / "ctl.sock"
    hyp = fake_hypervisor(tmp_path, "carapace: vm a: shut down\r\n", power_off=False)
    codes = []
    runner = threading.Thread(target=lambda: codes.append(main(
        ["--batch", "--timeout", "5", "--persist", "--hyp", str(hyp), "--ctl-socket",
         str(path), "--vm", f"name=a,kernel={kernel}"])))
    runner.start()
    try:
        for _ in range(150):
            if path.exists():
                break
            time.sleep(0.1)
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(str(path))                 # QEMU's chardev accepts
        client.close()
        # A second launcher on the same socket is refused.
        assert main(["--batch", "--hyp", str(hyp), "--ctl-socket", str(path),
                        "--vm", f"name=a,kernel={kernel}"]) == 3
    finally:
        runner.join(60)
    assert codes == [0]                           # --persist: the timeout ends the run
    assert not path.exists()


@needs_qemu
@needs_cross
def test_e2e_persist_ends_at_the_timeout(tmp_path, kernel, capsys):
    msg = "carapace: vm a: shut down\r\ncarapace: vm b: shut down\r\n"
    start = time.monotonic()
    assert launch(tmp_path, kernel, msg, "--persist", "--timeout", "2", power_off=False) == 0
    assert time.monotonic() - start < 15
    err = capsys.readouterr().err
    assert "--persist: run ended at the timeout (2 s)" in err
    # The outcomes still count: b did not shut down here.
    msg = "carapace: vm a: shut down\r\n"
    assert launch(tmp_path, kernel, msg, "--persist", "--timeout", "2", power_off=False) == 1
    assert launch(tmp_path, kernel, msg, "--persist", "--timeout", "2", "--expect",
                  "b=running", power_off=False) == 0


@needs_qemu
@needs_cross
def test_e2e_persist_without_vms(tmp_path, kernel, capsys):
    msg = "carapace: waiting for VMs\r\n[late] hello\r\ncarapace: vm late: shut down\r\n"
    assert launch(tmp_path, kernel, msg, "--persist", "--timeout", "2",
                  "--image", f"late-k={kernel}", "--expect", "late=shutdown",
                  power_off=False, vms=()) == 0
    out = capsys.readouterr().out
    assert "vm late: shutdown\n    [late] hello\n" in out


# --- the stream port and --restore ------------------------------------------------------


def test_stream_device_args():
    assert stream_device_args(Path("/r/stream.sock")) == [
        "-chardev", "socket,id=carapace-stream,path=/r/stream.sock,server=on,wait=off",
        "-device", "virtserialport,bus=carapace-vser.0,chardev=carapace-stream,"
                   "name=org.carapace.stream,nr=2"]
    assert "path=/a,,b/s.sock,server" in stream_device_args(Path("/a,b/s.sock"))[1]


def test_qemu_command_has_the_stream_port_after_the_control_port(tmp_path, kernel):
    vms, images = two_vms(tmp_path, kernel)
    host = host_for(kernel, ctl_socket=Path("/run/c/ctl.sock"),
                    stream_socket=Path("/run/s,1/stream.sock"))
    for batch in (False, True):
        cmd = qemu_command(host, Path("/t/host.dtb"), images, batch=batch)
        ctl_args = ctl_device_args(Path("/run/c/ctl.sock"))
        stream_args = stream_device_args(Path("/run/s,1/stream.sock"))
        i = cmd.index("-global")
        assert cmd[i:i + len(ctl_args) + len(stream_args)] == ctl_args + stream_args
    # Without a stream path in the config: stream.sock beside the control socket.
    cmd = qemu_command(host_for(kernel, ctl_socket=Path("/run/c/ctl.sock")),
                          Path("/t/host.dtb"), images, batch=True)
    assert "socket,id=carapace-stream,path=/run/c/stream.sock,server=on,wait=off" in cmd


def test_default_stream_socket(monkeypatch, private_runtime_dir):
    monkeypatch.delenv("CARAPACE_STREAM_SOCKET", raising=False)
    assert default_stream_socket() == \
        private_runtime_dir / f"carapace-{os.getuid()}" / "stream.sock"
    assert default_stream_socket(Path("/x/my.sock")) == Path("/x/my.stream.sock")
    # two hosts with their own control sockets in one directory never share one
    assert default_stream_socket(Path("/tmp/a.sock")) != default_stream_socket(Path("/tmp/b.sock"))
    assert default_stream_socket(Path("/x/ctl.sock")) == Path("/x/stream.sock")
    monkeypatch.setenv("CARAPACE_STREAM_SOCKET", "/s/stream-1.sock")
    assert default_stream_socket(Path("/x/my.sock")) == Path("/s/stream-1.sock")


def test_stream_socket_path_checks(tmp_path, monkeypatch):
    monkeypatch.delenv("CARAPACE_STREAM_SOCKET", raising=False)
    ctl_sock = tmp_path / "ctl.sock"
    assert stream_socket_path(None, ctl_sock) == tmp_path / "stream.sock"
    assert stream_socket_path("rel.sock", ctl_sock) == Path.cwd() / "rel.sock"
    with pytest.raises(LaunchError, match="path too long.*use a shorter --stream-socket"):
        stream_socket_path("/tmp/" + "x" * 103, ctl_sock)
    with pytest.raises(LaunchError, match="both .*; use --stream-socket"):
        stream_socket_path(str(ctl_sock), ctl_sock)


def test_stream_socket_in_use_or_not_a_socket(tmp_path):
    path = tmp_path / "stream.sock"
    with listening(path):
        with pytest.raises(LaunchError) as info:
            prepare_ctl_socket(path, option="--stream-socket")
        assert str(info.value) == f"another Carapace is using {path}; use --stream-socket"
    path.unlink()
    path.write_text("x")
    with pytest.raises(LaunchError, match="is not a socket; use --stream-socket"):
        prepare_ctl_socket(path, option="--stream-socket")


def make_snapshot(path, name="alpha", vcpus=1, mem=16 * MiB, pages=1):
    """A small valid snapshot file (docs/snapshot-format.md): no CFI, one
    page of memory per @pages."""
    import struct

    def section(stype, instance, payload):
        return struct.pack("<IIQII", stype, instance, len(payload), crc32c(payload), 0) + payload
    out = [struct.pack("<8sIIQQ", b"CARASNAP", 1, 32, 0, 0),
           section(1, 0, struct.pack("<16sQQIIIIIIQQ32s32s512s", name.encode(), 0x80000000, mem,
                                     vcpus, 0, 0x1C, 1, 0, 0, 5, 10_000_000, b"k", b"", b""))]
    for i in range(vcpus):
        # pc, then the trapped context (SPP, FS Initial) and vsstatus (UXL 64-bit)
        out.append(section(2, i, struct.pack("<32Q15Q32QQ4B3I2Q", *([0] * 32),
                                             0x80200000, 0x2100, 2 << 32, *([0] * 12),
                                             *([0] * 32), 0,
                                             0, 0, 0, 0, 1 if i == 0 else 0, 0, 0, 0, 0)))
    out.append(section(3, 0, struct.pack("<16sII", b"uart16550", 280, 0) + bytes(280)))
    out.append(section(3, 1, struct.pack("<16sII", b"plic", 204, 0) + bytes(204)))
    out.append(section(3, 2, struct.pack("<16sII", b"vmgenid", 24, 0) + bytes(24)))
    for p in range(pages):
        out.append(section(4, 0, struct.pack("<QQ", 0x80200000 + p * 4096, 1) + b"\x13" * 4096))
    out.append(section(5, 0, struct.pack("<QQ", vcpus + 4 + pages, pages)))
    path.write_bytes(b"".join(out))
    return path


def test_parse_restores(tmp_path, kernel):
    a = make_snapshot(tmp_path / "a.snap", "alpha", vcpus=2, mem=32 * MiB, pages=3)
    b = make_snapshot(tmp_path / "b.snap", "beta")
    vms = parse_vms([f"name=vm0,kernel={kernel}"])
    ra, rb = parse_restores([str(a), str(b)], vms)
    assert (ra.path, ra.name, ra.vcpus, ra.mem, ra.size, ra.pages) == \
        (a, "alpha", 2, 32 * MiB, a.stat().st_size, 3)
    assert rb.name == "beta"
    assert parse_restores([], vms) == []


def test_parse_restores_with_disks(tmp_path, kernel):
    """--restore FILE,disk=PATH: host disks for the saved VM's disks, numbered
    on PCI bus 0 after the --vm disks, each a virtio-blk-pci device of QEMU's;
    the restore names them (disk0, disk1)."""
    from carapace.iodevices import device_args, plan_devices
    a = make_snapshot(tmp_path / "a.snap", "alpha")
    d0, d1, d2 = (tmp_path / f"d{i}.raw" for i in range(3))
    for d in (d0, d1, d2):
        d.write_bytes(bytes(4096))
    vms = parse_vms([f"name=vm0,kernel={kernel},disk={d0}"])
    (ra,) = parse_restores([f"{a},disk={d1},disk={d2}:ro"], vms)
    assert [(d.path, d.read_only, d.vm, d.index) for d in ra.disks] == [
        (d1, False, "alpha", 0), (d2, True, "alpha", 1)]
    plan_devices(vms, [], [ra])
    assert vms[0].disks[0].pci_dev == 1 and [d.pci_dev for d in ra.disks] == [2, 3]
    args = " ".join(device_args(vms, [], [ra]))
    assert "id=disk-alpha-1,format=raw,readonly=on" in args and "addr=0x3" in args, args
    with pytest.raises(LaunchError, match="want FILE or FILE,disk=PATH"):
        parse_restores([f"{a},net=lan"], vms)
    with pytest.raises(LaunchError, match="is also vm vm0's disk 0"):
        (rb,) = parse_restores([f"{a},disk={d0}"], vms)
        plan_devices(vms, [], [rb])


@pytest.mark.parametrize("make, message", [
    (lambda p: None, "cannot read"),
    (lambda p: p.write_bytes(b"CARASNAP"), "not a valid snapshot: header, byte 8: truncated"),
    (lambda p: p.write_bytes(make_snapshot(p).read_bytes()[:-1]), "not a valid snapshot: END"),
    (lambda p: p.write_bytes(make_snapshot(p).read_bytes() + b"x"), "trailing byte"),
])
def test_parse_restores_checks_the_file(tmp_path, make, message):
    path = tmp_path / "x.snap"
    make(path)
    with pytest.raises(LaunchError) as info:
        parse_restores([str(path)], [])
    assert str(info.value).startswith(f"--restore {path}: ") and message in str(info.value)


def test_parse_restores_names_unique(tmp_path, kernel):
    a = make_snapshot(tmp_path / "a.snap", "alpha")
    a2 = make_snapshot(tmp_path / "a2.snap", "alpha")
    with pytest.raises(LaunchError, match="holds vm alpha, and a --restore .*a.snap has"):
        parse_restores([str(a), str(a2)], [])
    vms = parse_vms([f"name=alpha,kernel={kernel}"])
    with pytest.raises(LaunchError, match="holds vm alpha, and a --vm has that name"):
        parse_restores([str(a)], vms)
    files = [str(make_snapshot(tmp_path / f"{i}.snap", f"v{i}")) for i in range(8)]
    with pytest.raises(LaunchError, match="1 VMs and 8 --restore: the hypervisor runs at "
                                             "most 8"):
        parse_restores(files, parse_vms([f"name=z,kernel={kernel}"]))


def test_main_restore_errors_exit_3(tmp_path, capsys):
    bad = tmp_path / "bad.snap"
    bad.write_bytes(b"not a snapshot at all, but long enough for a header")
    assert main(["--restore", str(bad)]) == 3
    err = capsys.readouterr().err
    assert err.startswith(f"carapace-run: error: --restore {bad}: {bad}: not a valid snapshot: "
                          "header, byte 0: bad magic")
    assert main(["--restore", str(tmp_path / "nope.snap")]) == 3
    assert "cannot read" in capsys.readouterr().err


def test_restore_implies_persist_and_names_count_for_expect(tmp_path):
    """--restore without --vm is fine (it implies --persist), and --expect may
    name the restored VM; checked before the host is set up."""
    snap = make_snapshot(tmp_path / "a.snap", "alpha")
    args = build_parser().parse_args(["--batch", "--restore", str(snap),
                                         "--expect", "alpha=running"])
    restores = parse_restores(args.restore, parse_vms(args.vm, persist=True))
    assert parse_expects(args.expect, {r.name for r in restores}) == {"alpha": "running"}
    with pytest.raises(LaunchError, match="give at least one --vm"):
        parse_vms([], persist=False)


@needs_qemu
def test_dry_run_restore(kernel, tmp_path, capsys, private_runtime_dir):
    snap = make_snapshot(tmp_path / "a.snap", "alpha", mem=512 * MiB, pages=2)
    code = main(["--dry-run", "--hyp", str(kernel), "--restore", str(snap),
                    "--vm", f"name=b,kernel={kernel}", "--batch", "--expect", "alpha=running"])
    assert code == 0
    out = capsys.readouterr().out
    sock_dir = private_runtime_dir / f"carapace-{os.getuid()}"
    assert "carapace,persist;" in out                        # --restore implies --persist
    assert (f"# restore: {snap}: vm alpha, 1 vCPU(s), 512M RAM, 2 memory pages, "
            f"{snap.stat().st_size} bytes") in out
    assert f"# stream socket: {sock_dir / 'stream.sock'}" in out
    assert (f"-chardev socket,id=carapace-stream,path={sock_dir / 'stream.sock'},server=on,"
            "wait=off -device virtserialport,bus=carapace-vser.0,chardev=carapace-stream,"
            "name=org.carapace.stream,nr=2") in out
    assert "-m 834M" in out             # b's 64M and 2M image + 256M + 512M restored
    assert not sock_dir.exists()


@needs_qemu
def test_restore_ram_counts_in_host_memory(kernel, tmp_path, capsys):
    snap = make_snapshot(tmp_path / "a.snap", "alpha", mem=512 * MiB)
    assert main(["--dry-run", "--hyp", str(kernel), "--restore", str(snap),
                    "--mem", "512M"]) == 3
    assert "512M for --restore VMs" in capsys.readouterr().err


@needs_qemu
def test_main_stream_socket_in_use_exits_3(kernel, tmp_path, capsys):
    busy = tmp_path / "stream.sock"
    with listening(busy):
        assert main(["--batch", "--hyp", str(kernel), "--ctl-socket",
                        str(tmp_path / "ctl.sock"), "--vm", f"kernel={kernel}"]) == 3
        assert busy.exists()                                  # another's: left alone
    err = capsys.readouterr().err
    assert f"another Carapace is using {busy}; use --stream-socket" in err


# A stand-in for QEMU and the hypervisor behind its two sockets: it serves the
# control socket (hello, restore) and the stream socket, and prints console
# lines like the hypervisor.  MODE: ok, refuse (bad-snapshot after 100 bytes),
# mute (never answers).
FAKE_QEMU = r"""
import json, os, socket, sys, time
ctl_path, stream_path, mode = sys.argv[1], sys.argv[2], sys.argv[3]
def listen(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(1)
    return s
ctl_l, stream_l = listen(ctl_path), listen(stream_path)
print("carapace: waiting for VMs", flush=True)
conn, _ = ctl_l.accept()
stream_l.settimeout(10)
stream = None
buf = b""
while True:
    data = conn.recv(65536)
    if not data:
        break
    buf += data
    while b"\n" in buf:
        line, _, buf = buf.partition(b"\n")
        if not line or mode == "mute":
            continue
        req = json.loads(line)
        if req["cmd"] == "hello":
            reply = {"protocol": 1, "hypervisor": "carapace", "vm_max": 8, "harts": 2,
                     "commands": ["hello", "restore"]}
        else:
            stream, _ = stream_l.accept()
            want = 100 if mode == "refuse" else req["bytes"]
            got = b""
            while len(got) < want:
                got += stream.recv(want - len(got))
            if mode == "refuse":
                reply = {"ok": False, "code": "bad-snapshot",
                         "error": "section CONFIG 0 at offset 32: name: 1-15 of a-z 0-9 _ -"}
            else:
                name = req.get("name", "alpha")
                print(f"carapace: vm {name}: restored (1 pages), running", flush=True)
                print(f"[{name}] hello again", flush=True)
                print(f"carapace: vm {name}: shut down", flush=True)
                reply = {"vm": name, "index": 0, "pages": 1}
            stream.close()
        reply = {"v": 1, "id": req["id"], "ok": reply.pop("ok", True), **reply}
        conn.sendall(json.dumps(reply).encode() + b"\n")
time.sleep(300)
"""


def fake_run(tmp_path, mode, batch=True, timeout=20):
    """run_qemu() with FAKE_QEMU for QEMU: the launcher's --restore path."""
    ctl_sock, stream_sock = tmp_path / "ctl.sock", tmp_path / "stream.sock"
    snap = make_snapshot(tmp_path / "a.snap", "alpha")
    restores = parse_restores([str(snap)], [])
    cmd = [sys.executable, "-c", FAKE_QEMU, str(ctl_sock), str(stream_sock), mode]
    if not batch:
        cmd = [sys.executable, "-c", FAKE_QEMU.replace("print(", "(lambda *a, **k: None)("),
               str(ctl_sock), str(stream_sock), mode]
    host = HostConfig(hyp=Path("/h"), bios=Path("/b"), mem=512 * MiB, persist=True,
                         ctl_socket=ctl_sock, stream_socket=stream_sock)
    args = build_parser().parse_args((["--batch", "--timeout", str(timeout)] if batch
                                         else []) + ["--restore", str(snap)])
    start = time.monotonic()
    code = run_qemu(args, cmd, [], host, {}, restores)
    return code, time.monotonic() - start, snap


def test_restore_then_the_batch_runs_on(tmp_path, capsys):
    code, elapsed, snap = fake_run(tmp_path, "ok", timeout=3)
    captured = capsys.readouterr()
    assert code == 0, captured
    assert f"carapace-run: restoring vm alpha from {snap} ({snap.stat().st_size} bytes, " \
           "1 memory pages)" in captured.err
    assert f"carapace-run: restored vm alpha from {snap}: index 0, 1 memory pages" in captured.err
    assert "vm alpha: shutdown\n    [alpha] hello again\n" in captured.out


def test_restore_error_exits_3_and_stops_qemu(tmp_path, capsys):
    code, elapsed, snap = fake_run(tmp_path, "refuse", timeout=60)
    assert code == 3
    assert elapsed < 30                               # QEMU was stopped, not timed out
    err = capsys.readouterr().err
    assert (f"carapace-run: error: restore {snap}: bad-snapshot: section CONFIG 0 at offset 32: "
            "name: 1-15 of a-z 0-9 _ -") in err


def test_restore_never_answered_exits_3(tmp_path, capsys):
    code, elapsed, snap = fake_run(tmp_path, "mute", timeout=2)
    assert code == 3 and elapsed < 20
    assert "carapace-run: error: restore" in capsys.readouterr().err


def test_restore_interactive_error_exits_3(tmp_path, capsys):
    code, elapsed, snap = fake_run(tmp_path, "refuse", batch=False)
    assert code == 3 and elapsed < 30
    assert f"error: restore {snap}: bad-snapshot" in capsys.readouterr().err


def test_help_documents_restore(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for word in ("--restore FILE", "--stream-socket PATH", "implies --persist",
                 "CARAPACE_STREAM_SOCKET", "stream.sock"):
        assert word in out, word


@needs_qemu
@needs_cross
def test_e2e_qemu_listens_on_the_stream_socket(tmp_path, kernel, capsys):
    """QEMU accepts the stream port's arguments and listens on its socket; the
    launcher announces it and removes it afterwards."""
    ctl_sock, stream_sock = tmp_path / "ctl.sock", tmp_path / "s" / "stream.sock"
    hyp = fake_hypervisor(tmp_path, "carapace: vm a: shut down\r\n", power_off=False)
    codes = []
    runner = threading.Thread(target=lambda: codes.append(main(
        ["--batch", "--timeout", "4", "--persist", "--hyp", str(hyp), "--ctl-socket",
         str(ctl_sock), "--stream-socket", str(stream_sock), "--vm",
         f"name=a,kernel={kernel}"])))
    runner.start()
    try:
        for _ in range(150):
            if stream_sock.exists():
                break
            time.sleep(0.1)
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(str(stream_sock))          # QEMU's chardev accepts
        client.close()
    finally:
        runner.join(60)
    assert codes == [0]
    assert f"stream socket {stream_sock}" in capsys.readouterr().err
    assert not stream_sock.exists() and not ctl_sock.exists()


# --- --incoming: a host waiting for one migrated VM (docs/migration.md) -----------------


@pytest.fixture
def no_tls_env(monkeypatch):
    monkeypatch.delenv("CARAPACE_TLS_DIR", raising=False)


def incoming_host(kernel, tls_creds, argv=()):
    args = build_parser().parse_args(["--incoming", "4444", "--tls-dir",
                                         str(tls_creds.main), *argv])
    spec = incoming_spec(args)
    return host_for(kernel, incoming=spec, persist=True,
                    stream_socket=Path("/run/x/stream.sock")), spec


def test_qemu_command_incoming_keeps_a_unix_stream_socket(tmp_path, kernel, tls_creds):
    """The hypervisor's stream port is the same private UNIX socket with
    --incoming: QEMU never listens on TCP (the relay does, in front)."""
    host, spec = incoming_host(kernel, tls_creds)
    cmd = qemu_command(host, Path("/t/host.dtb"), [], batch=True)
    chardevs = [cmd[i + 1] for i, a in enumerate(cmd) if a == "-chardev"]
    assert chardevs[1] == ("socket,id=carapace-stream,path=/run/x/stream.sock,server=on,"
                           "wait=off")
    assert not any("host=" in c or "port=" in c for c in chardevs)
    assert (spec.addr, spec.port, spec.transport.mode) == ("127.0.0.1", 4444, "tls")
    assert spec.transport.creds.cert == tls_creds.main / "server-cert.pem"


def test_incoming_in_chosen_only_when_asked(tmp_path, kernel):
    assert "carapace,incoming" not in inject_chosen(BASE_DTS, [], [], persist=True)
    dts = inject_chosen(BASE_DTS, [], [], persist=True, incoming=True)
    assert "\t\tcarapace,persist;\n" in dts and "\t\tcarapace,incoming;\n" in dts


@needs_dtc
def test_incoming_property_compiles(tmp_path, kernel):
    dtb = compile_dts(tmp_path, inject_chosen(BASE_DTS, [], [], persist=True,
                                                 incoming=True))
    assert fdtget(dtb, "/chosen", "carapace,incoming") == ""
    assert fdtget(dtb, "/chosen", "carapace,persist") == ""


@pytest.mark.parametrize("text, want", [
    ("4444", ("127.0.0.1", 4444)), ("0.0.0.0:1", ("0.0.0.0", 1)),
    ("[::]:65535", ("::", 65535)), ("b.example:4444", ("b.example", 4444)),
])
def test_incoming_address(text, want):
    assert listen_address(text, "--incoming") == want


@pytest.mark.parametrize("argv, message", [
    (["--incoming", "0"], "--incoming 0: want [ADDR:]PORT, PORT 1..65535"),
    (["--incoming", "65536"], "--incoming 65536: want [ADDR:]PORT, PORT 1..65535"),
    (["--incoming", "http"], "--incoming http: want [ADDR:]PORT"),
    (["--incoming", ":4444"], "--incoming :4444: want [ADDR:]PORT"),
    (["--incoming", "4444", "--restore", "a.snap"], "--incoming and --restore"),
    (["--incoming", "1", "--incoming-plain", "2"], "--incoming and --incoming-plain: give one"),
    (["--tls-dir", "/x"], "--tls-dir needs --incoming"),
    (["--incoming-events", "/x"], "--incoming-events needs --incoming"),
    (["--incoming-plain", "4444", "--tls-peer", "a"],
     "--incoming-plain and --tls-peer: plain TCP has no certificates"),
])
def test_incoming_errors_exit_3(capsys, no_tls_env, argv, message):
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert err.startswith("carapace-run: error: ") and message in err


def test_incoming_needs_credentials(capsys, no_tls_env):
    """--incoming is TLS by default: without credentials it does not start, and
    says what to give (and that plain TCP is a loopback-only option)."""
    assert main(["--incoming", "4444"]) == 3
    err = capsys.readouterr().err
    for word in ("--incoming: no TLS credentials for the destination", "--tls-dir DIR",
                 "server-cert.pem", "tools/carapace-tls init DIR",
                 "--incoming-plain PORT (loopback only"):
        assert word in err, word


@pytest.mark.parametrize("addr", ["0.0.0.0:4444", "[::]:4444", "192.0.2.1:4444"])
def test_incoming_plain_refuses_a_non_loopback_bind(capsys, no_tls_env, addr):
    assert main(["--incoming-plain", addr]) == 3
    err = capsys.readouterr().err
    assert f"--incoming-plain {addr}: plain TCP only on the loopback" in err


def test_incoming_port_in_use_refused(kernel, tls_creds):
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    try:
        port = busy.getsockname()[1]
        args = build_parser().parse_args(["--incoming", str(port), "--tls-dir",
                                             str(tls_creds.main)])
        with pytest.raises(LaunchError, match=f"--incoming: cannot listen on "
                                                 f"127.0.0.1:{port}"):
            bind_incoming(incoming_spec(args))
    finally:
        busy.close()
    bind_incoming(incoming_spec(args)).close()     # free again


@needs_qemu
def test_dry_run_incoming_needs_no_vm_and_implies_persist(kernel, capsys, tls_creds,
                                                          private_runtime_dir):
    assert main(["--dry-run", "--hyp", str(kernel), "--incoming", "0.0.0.0:4444",
                    "--tls-dir", str(tls_creds.main)]) == 0
    out = capsys.readouterr().out
    assert "-chardev socket,id=carapace-stream,path=" in out and "port=4444" not in out
    assert "# incoming: TLS relay on 0.0.0.0:4444, waiting for one migrated VM" in out
    assert f"authenticated against {tls_creds.main / 'ca-cert.pem'}" in out
    assert "# --persist: the hypervisor stays up" in out
    assert "carapace,persist;" in out and "carapace,incoming;" in out


@needs_qemu
def test_dry_run_incoming_plain_says_what_it_gives_up(kernel, capsys, no_tls_env,
                                                      private_runtime_dir):
    assert main(["--dry-run", "--hyp", str(kernel), "--incoming-plain", "4444"]) == 0
    out = capsys.readouterr().out
    assert "# incoming: plain TCP relay on 127.0.0.1:4444 (not authenticated, not " \
           "encrypted: any local user can send a stream)" in out


def test_qemu_gets_a_private_umask(monkeypatch):
    """QEMU creates the control and stream sockets: with umask 077 they are
    its user's only, wherever they are."""
    seen = {}

    class FakePopen:
        def __init__(self, cmd, **kw):
            seen.update(kw)
            raise OSError(2, "stop here")
    monkeypatch.setattr(subprocess, "Popen", FakePopen)
    result = run_batch(["qemu"], [], timeout=1, echo=None)
    assert seen["umask"] == 0o077 and result.error
    with pytest.raises(OSError):
        run_interactive(["qemu"], [], Path("/c.sock"))
    assert seen["umask"] == 0o077


def test_help_documents_incoming(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for word in ("--incoming [ADDR:]PORT", "carapace,incoming", "--tls-dir DIR",
                 "carapace-ctl migrate VM\nHOST:PORT --tls-dir DIR", "--incoming-plain PORT",
                 "--incoming 0.0.0.0:4444"):
        assert word in out, word
    assert "carapace,incoming;" in run_cli.__doc__
