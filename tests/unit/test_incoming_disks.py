# SPDX-License-Identifier: MIT
"""carapace-run --incoming-disk (issue 25, the disks' two modes of a
migration): its two forms and their refusals, the QEMU arguments (shared:
QEMU's image lock off; copy: a new image), the device numbers, the /chosen
properties the hypervisor reads (carapace,incoming-disks and
carapace,incoming-copy-disks), and the copy mode's new images: created when
QEMU starts, removed when no VM arrived (failed, interrupted), kept once
one has. QEMU itself never runs: run_qemu is replaced where the other
launcher tests replace it."""

import os
import shutil
import subprocess
import textwrap

import pytest

from carapace.cli import run as run_cli
from carapace.cli.run import build_parser, incoming_spec, main
from carapace.devicetree import inject_chosen
from carapace.errors import LaunchError
from carapace.incoming_disks import incoming_disk_lines, parse_incoming_disks
from carapace.iodevices import device_args, plan_devices
from carapace.spare_disks import parse_spare_disks
from carapace.vmspec import parse_vms

pytestmark = pytest.mark.quick

MiB = 1 << 20
BASE_DTS = textwrap.dedent("""\
    /dts-v1/;

    / {
    \t#address-cells = <0x02>;
    \t#size-cells = <0x02>;
    \tcompatible = "riscv-virtio";

    \tchosen {
    \t\tstdout-path = "/soc/serial@10000000";
    \t};
    };
    """)


@pytest.fixture(autouse=True)
def private_runtime_dir(tmp_path, monkeypatch):
    """Default sockets under tmp_path, never the user's; no TLS from the
    environment (the tests use --incoming-plain)."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.delenv("CARAPACE_CTL_SOCKET", raising=False)
    monkeypatch.delenv("CARAPACE_STREAM_SOCKET", raising=False)
    monkeypatch.delenv("CARAPACE_TLS_DIR", raising=False)
    (tmp_path / "run").mkdir()


@pytest.fixture
def kernel(tmp_path):
    path = tmp_path / "guest.bin"
    path.write_bytes(b"\x13\x00\x00\x00" * 1250)
    return path


@pytest.fixture
def image(tmp_path):
    """An existing image, as the source uses it (shared storage)."""
    path = tmp_path / "alpha.raw"
    with open(path, "wb") as f:
        f.truncate(8 * MiB)
    return path


# --- the two forms -----------------------------------------------------------------------------


def test_shared_form_opens_the_existing_image_without_its_lock(tmp_path, image):
    qcow = tmp_path / "beta.qcow2"
    qcow.write_bytes(b"QFI\xfb" + bytes(100))
    disks = parse_incoming_disks([str(image), str(qcow)])
    assert disks.mode == "shared" and not disks.copy and disks.new == []
    assert [(d.path, d.fmt, d.index, d.vm, d.locking, d.new_size, d.owner)
            for d in disks.disks] == [
        (image, "raw", 0, "", False, None, f"--incoming-disk {image}"),
        (qcow, "qcow2", 1, "", False, None, f"--incoming-disk {qcow}")]
    plan_devices([], [], incoming=disks.disks)
    assert disks.pci_devs == [1, 2]
    args = device_args([], [], incoming=disks.disks)
    assert args[:4] == [
        "-drive", f"file={image},if=none,id=incoming-disk-0,format=raw,file.locking=off",
        "-device", "virtio-blk-pci,drive=incoming-disk-0,bus=pcie.0,addr=0x1"]
    assert f"file={qcow},if=none,id=incoming-disk-1,format=qcow2,file.locking=off" in args


def test_copy_form_is_a_new_image_made_later(tmp_path):
    disks = parse_incoming_disks([f"{tmp_path}/c0.raw:size=8M", f"{tmp_path}/c1.raw:size=1536"])
    assert disks.mode == "copy" and disks.copy
    assert [(d.path, d.new_size, d.fmt, d.locking) for d in disks.new] == [
        (tmp_path / "c0.raw", 8 * MiB, "raw", True), (tmp_path / "c1.raw", 1536, "raw", True)]
    assert not any(d.path.exists() for d in disks.disks)      # made when QEMU starts
    plan_devices([], [], incoming=disks.disks)
    args = " ".join(device_args([], [], incoming=disks.disks))
    assert f"file={tmp_path}/c0.raw,if=none,id=incoming-disk-0,format=raw -device" in args
    assert "locking" not in args                             # this QEMU's own image


def test_device_numbers_after_the_vms_disks_before_the_spares(tmp_path, kernel, image):
    own = tmp_path / "own.raw"
    own.write_bytes(bytes(4096))
    vms = parse_vms([f"name=vm0,kernel={kernel},disk={own}"])
    disks = parse_incoming_disks([str(image)])
    spares = parse_spare_disks([f"{tmp_path}/sp.raw:size=8M"])
    plan_devices(vms, [], [], spares, disks.disks)
    assert [d.pci_dev for d in vms[0].disks + disks.disks + spares] == [1, 2, 3]
    drives = [a for a in device_args(vms, [], [], spares, disks.disks) if "if=none" in a]
    assert [a.split("id=")[1].split(",")[0] for a in drives] == [
        "disk-vm0-0", "incoming-disk-0", "disk--0"]


def test_the_image_of_a_vm_here_is_no_shared_incoming_disk(tmp_path, kernel, image):
    """A writable image belongs to one disk on a host: a --vm's disk cannot
    be the arriving VM's too."""
    vms = parse_vms([f"name=vm0,kernel={kernel},disk={image}"])
    with pytest.raises(LaunchError, match=f"--incoming-disk {image}: disk {image} is also vm "
                                          "vm0's disk 0; a writable disk belongs to one VM"):
        plan_devices(vms, [], incoming=parse_incoming_disks([str(image)]).disks)


def test_start_lines_say_mode_place_and_fate(tmp_path, image):
    shared = parse_incoming_disks([str(image)])
    copy = parse_incoming_disks([f"{tmp_path}/c0.raw:size=8M"])
    plan_devices([], [], incoming=shared.disks)
    plan_devices([], [], incoming=copy.disks)
    assert incoming_disk_lines(shared) == [
        f"incoming disk 0: {image} (raw) at host PCI device 1 (00:01.0), shared mode: the "
        "arriving VM's disk 0, the image the source uses (QEMU's image lock off)"]
    assert incoming_disk_lines(copy, ", made later") == [
        f"incoming disk 0: new image {tmp_path}/c0.raw ({8 * MiB} bytes, zeroed, made later) at "
        "host PCI device 1 (00:01.0), copy mode: the arriving VM's disk 0 is copied into it "
        "(removed if no VM arrives)"]
    assert incoming_disk_lines(None) == []


# --- refusals ------------------------------------------------------------------------------------


# {t}: tmp_path, {img}: an existing image, {new}: a path that does not exist
REFUSALS = [
    (["--incoming-disk", "{img}"], "--incoming-disk needs --incoming"),
    (["--incoming-plain", "4444", "--incoming-disk", "{img}", "--incoming-disk",
      "{new}:size=8M"],
     "--incoming-disk {img} (shared: an existing image) and --incoming-disk {new}:size=8M "
     "(copy: a new image of SIZE bytes): one mode for all the VM's disks"),
    (["--incoming-plain", "4444", "--incoming-disk", "{new}:size=8M", "--incoming-disk",
      "{img}"], "one mode for all the VM's disks"),
    (["--incoming-plain", "4444"] + ["--incoming-disk", "{img}"] * 3,
     "--incoming-disk: 3 given, but a VM has at most 2 disks"),
    (["--incoming-plain", "4444", "--incoming-disk", "{img}:size=8M"],
     "--incoming-disk {img}:size=8M: {img} exists; the launcher creates this image itself"),
    (["--incoming-plain", "4444", "--incoming-disk", "{new}:size=1000"],
     "the size must be a non-zero multiple of 512 bytes (the size of the source's disk"),
    (["--incoming-plain", "4444", "--incoming-disk", "{new}:size=0"],
     "the size must be a non-zero multiple of 512 bytes"),
    (["--incoming-plain", "4444", "--incoming-disk", "{new}:size=1X"],
     "--incoming-disk {new}:size=1X: cannot parse size '1X'"),
    (["--incoming-plain", "4444", "--incoming-disk", "{new}:iops=5"],
     "unknown option ':iops=5' (known: size=)"),
    (["--incoming-plain", "4444", "--incoming-disk", ":size=8M"],
     "--incoming-disk :size=8M: want PATH (shared"),
    (["--incoming-plain", "4444", "--incoming-disk", "{new}"],
     "--incoming-disk {new}: no such file: {new} (shared mode opens the image the source "
     "uses; for a new image the disk's blocks are copied into, give {new}:size=SIZE)"),
    (["--incoming-plain", "4444", "--incoming-disk", "{t}/nodir/x.raw:size=8M"],
     "no such directory {t}/nodir"),
    (["--incoming-plain", "4444", "--incoming-disk", "{t}"], "not a file: {t}"),
]


@pytest.mark.parametrize("argv, message", REFUSALS)
def test_refusals_exit_3_before_anything_is_made(tmp_path, image, capsys, monkeypatch, argv,
                                                 message):
    def no_start(*a):
        raise AssertionError("refused arguments: nothing may listen, QEMU may not start")
    monkeypatch.setattr(run_cli, "bind_incoming", no_start)
    monkeypatch.setattr(run_cli, "run_qemu", no_start)
    names = {"t": tmp_path, "img": image, "new": tmp_path / "n.raw"}
    assert main([a.format(**names) for a in argv]) == 3
    err = capsys.readouterr().err
    assert err.startswith("carapace-run: error: ") and message.format(**names) in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["alpha.raw", "run"]


def test_an_image_this_process_cannot_write_is_refused_for_shared_mode(image, monkeypatch):
    real = os.access

    def access(path, mode, *a, **kw):        # as if read-only (root writes anything)
        if str(path) == str(image) and mode & os.W_OK:
            return False
        return real(path, mode, *a, **kw)
    monkeypatch.setattr(os, "access", access)
    with pytest.raises(LaunchError, match=f"not writable: {image} \\(the arriving VM writes"):
        parse_incoming_disks([str(image)])


# --- the host device tree --------------------------------------------------------------------------


def test_chosen_names_the_disks_and_the_copy_mode():
    none = inject_chosen(BASE_DTS, [], [], persist=True, incoming=True)
    assert "incoming-disks" not in none and "incoming-copy-disks" not in none
    shared = inject_chosen(BASE_DTS, [], [], persist=True, incoming=True,
                           incoming_disks=[3, 4])
    assert "\t\tcarapace,incoming-disks = <0x3 0x4>;\n" in shared
    assert "incoming-copy-disks" not in shared
    copy = inject_chosen(BASE_DTS, [], [], persist=True, incoming=True, incoming_disks=[5],
                         incoming_copy_disks=True)
    assert "\t\tcarapace,incoming-disks = <0x5>;\n" in copy
    assert "\t\tcarapace,incoming-copy-disks;\n" in copy


needs_dtc = pytest.mark.skipif(not (shutil.which("dtc") and shutil.which("fdtget")),
                               reason="dtc/fdtget not installed (make deps)")


@needs_dtc
def test_chosen_properties_compile_to_cells(tmp_path):
    src, dtb = tmp_path / "t.dts", tmp_path / "t.dtb"
    src.write_text(inject_chosen(BASE_DTS, [], [], persist=True, incoming=True,
                                 incoming_disks=[3, 4], incoming_copy_disks=True))
    subprocess.run(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", str(dtb), str(src)],
                   check=True, capture_output=True)

    def get(prop, *kind):
        return subprocess.run(["fdtget", *kind, str(dtb), "/chosen", prop], check=True,
                              capture_output=True, text=True).stdout.strip()
    assert get("carapace,incoming-disks", "-t", "u") == "3 4"
    assert get("carapace,incoming-copy-disks") == ""


# --- a whole launch: QEMU's tree dumped, QEMU itself replaced ---------------------------------------


def fake_host_config(kernel, tmp_path):
    real = run_cli.host_config

    def host_config(args, *rest, **kw):
        args.hyp = kernel
        args.bios = kernel
        args.ctl_socket = str(tmp_path / "c.sock")
        return real(args, *rest, **kw)
    return host_config


class Listening:
    """What bind_incoming gives: a socket the relay would serve (unused here)."""

    def close(self):
        pass


def launch(tmp_path, kernel, monkeypatch, run_qemu, *disks):
    """carapace-run --batch --incoming-plain PORT --incoming-disk @disks, with
    @run_qemu(args, cmd, vms, host, ...) in QEMU's place; its exit status."""
    monkeypatch.setattr(run_cli, "run_qemu", run_qemu)
    monkeypatch.setattr(run_cli, "host_config", fake_host_config(kernel, tmp_path))
    monkeypatch.setattr(run_cli, "bind_incoming", lambda spec: Listening())
    argv = ["--batch", "--incoming-plain", "4444"]
    for d in disks:
        argv += ["--incoming-disk", d]
    return main(argv)


def copy_disks(tmp_path):
    return [f"{tmp_path}/in0.raw:size=8M", f"{tmp_path}/in1.raw:size=4M"]


def test_copy_images_made_before_qemu_and_the_tree_names_them(tmp_path, kernel, monkeypatch,
                                                              capsys):
    seen = {}

    def qemu(args, cmd, vms, host, *rest):
        seen["cmd"] = cmd
        seen["dts"] = (tmp_path / "keep" / "host.dts").read_text()
        for name, size in (("in0.raw", 8 * MiB), ("in1.raw", 4 * MiB)):
            st = (tmp_path / name).stat()
            assert st.st_size == size and st.st_mode & 0o777 == 0o600
            assert st.st_blocks == 0                      # sparse: nothing written yet
        return 0
    monkeypatch.setattr(run_cli, "build_parser", keep_in(tmp_path / "keep"))
    assert launch(tmp_path, kernel, monkeypatch, qemu, *copy_disks(tmp_path)) == 0
    assert "\t\tcarapace,incoming-disks = <0x1 0x2>;\n" in seen["dts"]
    assert "\t\tcarapace,incoming-copy-disks;\n" in seen["dts"]
    assert "\t\tcarapace,incoming;\n" in seen["dts"]
    assert f"file={tmp_path}/in0.raw,if=none,id=incoming-disk-0,format=raw" in seen["cmd"]
    err = capsys.readouterr().err
    assert f"carapace-run: incoming disk 1: new image {tmp_path}/in1.raw" in err


def keep_in(directory):
    """build_parser() whose parse_args adds --keep @directory (the tree stays)."""
    real = run_cli.build_parser

    def build_parser():
        p = real()
        parse = p.parse_args
        p.parse_args = lambda argv=None: parse(list(argv) + ["--keep", str(directory)])
        return p
    return build_parser


def test_no_vm_arrived_removes_the_copy_images(tmp_path, kernel, monkeypatch, capsys):
    """Every attempt failed (or none came) and the run ended: the images go."""
    def qemu(args, cmd, vms, host, *rest):
        assert (tmp_path / "in0.raw").exists() and not host.incoming.arrived
        return 0
    assert launch(tmp_path, kernel, monkeypatch, qemu, *copy_disks(tmp_path)) == 0
    assert not os.path.lexists(tmp_path / "in0.raw")
    assert not os.path.lexists(tmp_path / "in1.raw")
    err = capsys.readouterr().err
    for name in ("in0.raw", "in1.raw"):
        assert (f"carapace-run: no VM arrived: removed the new image {tmp_path}/{name} "
                "(--incoming-disk)") in err


def test_an_arrived_vm_keeps_its_copy_images(tmp_path, kernel, monkeypatch, capsys):
    def qemu(args, cmd, vms, host, *rest):
        host.incoming.arrived = True          # what the relay does once the VM runs here
        return 0
    assert launch(tmp_path, kernel, monkeypatch, qemu, *copy_disks(tmp_path)) == 0
    assert (tmp_path / "in0.raw").stat().st_size == 8 * MiB
    assert (tmp_path / "in1.raw").stat().st_size == 4 * MiB
    assert "no VM arrived" not in capsys.readouterr().err


@pytest.mark.parametrize("stop, status", [(KeyboardInterrupt, 130),
                                          (SystemExit(143), 143),
                                          (LaunchError("QEMU did not start (test)"), 3)])
def test_an_interrupted_or_failed_run_removes_the_copy_images(tmp_path, kernel, monkeypatch,
                                                              capsys, stop, status):
    def qemu(args, cmd, vms, host, *rest):
        assert (tmp_path / "in0.raw").exists()
        raise stop
    try:
        code = launch(tmp_path, kernel, monkeypatch, qemu, *copy_disks(tmp_path))
    except SystemExit as e:                   # SIGTERM's way out: main lets it through
        code = e.code
    assert code == status
    assert not os.path.lexists(tmp_path / "in0.raw")
    assert not os.path.lexists(tmp_path / "in1.raw")
    assert "no VM arrived: removed the new image" in capsys.readouterr().err


def test_shared_images_are_never_removed(tmp_path, kernel, monkeypatch, image, capsys):
    def qemu(args, cmd, vms, host, *rest):
        assert "\t\tcarapace,incoming-copy-disks;\n" not in (tmp_path / "keep" /
                                                               "host.dts").read_text()
        return 0
    monkeypatch.setattr(run_cli, "build_parser", keep_in(tmp_path / "keep"))
    assert launch(tmp_path, kernel, monkeypatch, qemu, str(image)) == 0
    assert image.stat().st_size == 8 * MiB
    assert "\t\tcarapace,incoming-disks = <0x1>;\n" in (tmp_path / "keep" / "host.dts").read_text()
    assert "no VM arrived" not in capsys.readouterr().err


def test_an_existing_file_is_never_taken_over(tmp_path, kernel, monkeypatch):
    """Made exclusively: a file that appears between the check and the start
    is left alone, and the run does not start."""
    def qemu(*a):
        raise AssertionError("QEMU must not start")
    real = run_cli.NewImages.create

    def create(self, disks):
        (tmp_path / "in1.raw").write_bytes(b"someone's")
        return real(self, disks)
    monkeypatch.setattr(run_cli.NewImages, "create", create)
    assert launch(tmp_path, kernel, monkeypatch, qemu, *copy_disks(tmp_path)) == 3
    assert (tmp_path / "in1.raw").read_bytes() == b"someone's"
    assert not os.path.lexists(tmp_path / "in0.raw")


def test_dry_run_creates_nothing_and_says_what_it_will(tmp_path, kernel, capsys):
    d0, d1 = copy_disks(tmp_path)
    assert main(["--dry-run", "--hyp", str(kernel), "--bios", str(kernel), "--incoming-plain",
                 "4444", "--incoming-disk", d0, "--incoming-disk", d1]) == 0
    out = capsys.readouterr().out
    assert (f"# incoming disk 0: new image {tmp_path}/in0.raw ({8 * MiB} bytes, zeroed, created "
            "when QEMU starts) at host PCI device 1 (00:01.0), copy mode") in out
    assert "carapace,incoming-disks = <0x1 0x2>;" in out
    assert "carapace,incoming-copy-disks;" in out
    assert not os.path.lexists(tmp_path / "in0.raw")


def test_incoming_spec_carries_the_disks(tmp_path, image):
    args = build_parser().parse_args(["--incoming-plain", "4444", "--incoming-disk", str(image)])
    spec = incoming_spec(args)
    assert spec.disks.mode == "shared" and spec.disks.disks[0].path == image
    assert not spec.arrived
    args = build_parser().parse_args(["--incoming-plain", "4444"])
    assert incoming_spec(args).disks is None


def test_help_documents_incoming_disk(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for words in ("--incoming-disk PATH", "--incoming-disk PATH:size=SIZE",
                  "/chosen/carapace,incoming-disks", "/chosen/carapace,incoming-copy-disks",
                  "QEMU opens it\n                             without its image lock"):
        assert words in out, words
    assert "carapace,incoming-disks = <3 4>;" in run_cli.__doc__
