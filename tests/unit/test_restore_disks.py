# SPDX-License-Identifier: MIT
"""carapace-run's side of a snapshot's disks' content (issue 25, format 5):
--restore of a file holding it gets a new image per disk, created
exclusively, sparse and zeroed, of the saved size (disk=NEWPATH or
FILE.diskN.raw), removed when its restore did not complete; --spare-disk
(a new zeroed host disk for carapace-ctl restore --disk N); a file without
the disks' content takes the user's images, their size checked first. The
snapshots are make_seeds' streams (tests/fuzz/make_seeds.py) with DISK
runs."""

import gzip
import importlib.util
import os
import shutil
import stat
import struct
from pathlib import Path

import pytest

from carapace.cli import run as run_cli
from carapace.cli.run import main, remove_unrestored
from carapace.disk_images import NewImages, create_image, image_bytes, new_image_path
from carapace.errors import LaunchError
from carapace.iodevices import device_args, plan_devices
from carapace.launcher import QEMU
from carapace.paths import cache_dir
from carapace.restorer import parse_restores
from carapace.spare_disks import parse_spare_disks
from carapace.vmspec import parse_vms

pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parents[2]
needs_qemu = pytest.mark.skipif(not (shutil.which(QEMU) and shutil.which("dtc")
                                     and (cache_dir() / "fw_dynamic.bin").is_file()),
                                reason="QEMU, dtc or OpenSBI firmware missing (make deps)")
DISK0, DISK1 = 16384, 1000                    # the saved disks' capacities, in sectors


def seeds():
    spec = importlib.util.spec_from_file_location("make_seeds",
                                                  ROOT / "tests" / "fuzz" / "make_seeds.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def snapshot_file(path, disks=True, capacities=(DISK0, DISK1), name="alpha", read_only=()):
    """A gzip snapshot file of vm @name with a disk per @capacities (those in
    @read_only read-only) and a NIC, holding their content (a block of each
    writable one) if @disks."""
    ms = seeds()
    ro = ms.snap.VIO_OFFER["virtio_blk"] | ms.snap.VIO_BLK_F_RO
    vio = [("virtio_blk", ms.vio_blk(capacity=c, pci_dev=2 + i,
                                     serial=f"{name}-vd{'ab'[i]}".encode(),
                                     **({"read_only": 1, "device_features": ro}
                                        if i in read_only else {})))
           for i, c in enumerate(capacities)] + [("virtio_net", ms.vio_net())]
    runs = [(i, 0, bytes([0x5A + i]) * 65536) for i in range(len(capacities))
            if i not in read_only] if disks else None
    path.write_bytes(gzip.compress(ms.stream(name=name, runs=((0x400000, 1),), ring=True,
                                             vio=vio, disks=runs)))
    return path


@pytest.fixture
def kernel(tmp_path):
    path = tmp_path / "guest.bin"
    path.write_bytes(b"\x13\x00\x00\x00" * 1250)
    return path


@pytest.fixture(autouse=True)
def private_runtime_dir(tmp_path, monkeypatch):
    """Default sockets under tmp_path, never the user's."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.delenv("CARAPACE_CTL_SOCKET", raising=False)
    monkeypatch.delenv("CARAPACE_STREAM_SOCKET", raising=False)
    (tmp_path / "run").mkdir()
    return tmp_path / "run"


def test_new_images_by_default_beside_the_file(tmp_path, kernel):
    snap = snapshot_file(tmp_path / "a.snap")
    (r,) = parse_restores([str(snap)], [])
    assert r.disks_included and not r.restored
    assert [(d.path, d.new_size, d.fmt, d.read_only, d.vm, d.index) for d in r.disks] == [
        (tmp_path / "a.snap.disk0.raw", DISK0 * 512, "raw", False, "alpha", 0),
        (tmp_path / "a.snap.disk1.raw", DISK1 * 512, "raw", False, "alpha", 1)]
    assert new_image_path(snap, 1) == tmp_path / "a.snap.disk1.raw"
    assert not any(d.path.exists() for d in r.disks)          # made when QEMU starts
    vms = parse_vms([f"name=vm0,kernel={kernel},disk={snapshot_file(tmp_path / 'x.raw')}"])
    plan_devices(vms, [], [r])
    assert [d.pci_dev for d in r.disks] == [2, 3]
    args = " ".join(device_args(vms, [], [r]))
    assert (f"file={tmp_path}/a.snap.disk0.raw,if=none,id=disk-alpha-0,format=raw "
            "-device virtio-blk-pci,drive=disk-alpha-0,bus=pcie.0,addr=0x2") in args
    assert "readonly" not in args


def test_new_image_paths_given_and_refused(tmp_path):
    snap = snapshot_file(tmp_path / "a.snap")
    (r,) = parse_restores([f"{snap},disk={tmp_path}/new0.raw"], [])
    assert [d.path for d in r.disks] == [tmp_path / "new0.raw", tmp_path / "a.snap.disk1.raw"]
    old = tmp_path / "old.raw"
    old.write_bytes(bytes(DISK0 * 512))
    link = tmp_path / "dangling.raw"
    link.symlink_to(tmp_path / "nowhere")
    for item, words in [
        (f"{snap},disk={old}", f"{old} exists; the launcher creates this image itself"),
        (f"{snap},disk={link}", f"{link} exists"),            # not followed, not replaced
        (f"{snap},disk={tmp_path}/n.raw:ro", "cannot be :ro"),
        (f"{snap},disk={tmp_path}/n.raw:iops=5", "unknown option ':iops=5'"),
        (f"{snap},disk={tmp_path}/no/such/dir.raw", "no such directory"),
        (f"{snap},disk={tmp_path}/x,disk={tmp_path}/y,disk={tmp_path}/z", "want FILE or"),
    ]:
        with pytest.raises(LaunchError) as info:
            parse_restores([item], [])
        assert words in str(info.value), (item, str(info.value))
    one = snapshot_file(tmp_path / "one.snap", capacities=(DISK0,))
    with pytest.raises(LaunchError, match="it holds 1 disk.s. with their content, 2 disk= given"):
        parse_restores([f"{one},disk={tmp_path}/p,disk={tmp_path}/q"], [])
    (tmp_path / "a.snap.disk1.raw").write_bytes(b"")        # the default is taken too
    with pytest.raises(LaunchError, match="a.snap.disk1.raw exists"):
        parse_restores([str(snap)], [])
    # two restores cannot share a new image
    (tmp_path / "a.snap.disk1.raw").unlink()
    b = snapshot_file(tmp_path / "b.snap", name="beta")
    restores = parse_restores([f"{snap},disk={tmp_path}/same.raw",
                               f"{b},disk={tmp_path}/same.raw"], [])
    with pytest.raises(LaunchError, match="the new image .*same.raw is also vm alpha's"):
        plan_devices([], [], restores)


def test_a_read_only_disk_takes_its_image(tmp_path):
    """A read-only disk's content is not in the snapshot (it is its
    image's): that disk takes disk=PATH[:ro], an image of its size, as
    without the content; the writable one a new image."""
    snap = snapshot_file(tmp_path / "a.snap", read_only=(0,))
    with pytest.raises(LaunchError, match="its disk 0 is read-only, so its content is not in "
                                          "the snapshot .*give disk=PATH.:ro., that image"):
        parse_restores([str(snap)], [])
    image = tmp_path / "data.img"
    with open(image, "wb") as f:
        f.truncate(DISK0 * 512)
    (r,) = parse_restores([f"{snap},disk={image}:ro"], [])
    assert [(d.path, d.read_only, d.new_size) for d in r.disks] == [
        (image, True, None), (tmp_path / "a.snap.disk1.raw", False, DISK1 * 512)]
    small = tmp_path / "small.img"
    small.write_bytes(bytes(512))
    with pytest.raises(LaunchError, match="small.img is 512 bytes, the saved disk 0"):
        parse_restores([f"{snap},disk={small}:ro"], [])


def test_create_image_is_exclusive_sparse_zeroed_and_private(tmp_path):
    path = tmp_path / "n.raw"
    create_image(path, 64 << 20)
    st = path.stat()
    assert st.st_size == 64 << 20 and stat.S_IMODE(st.st_mode) == 0o600
    assert st.st_blocks * 512 < 1 << 20                       # sparse: nothing allocated
    with open(path, "rb") as f:
        assert f.read(1 << 20) == bytes(1 << 20)
    path.write_bytes(b"guest data")
    with pytest.raises(FileExistsError):
        create_image(path, 4096)
    assert path.read_bytes() == b"guest data"                  # never touched
    target = tmp_path / "target"
    target.write_bytes(b"keep")
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(FileExistsError):
        create_image(tmp_path / "link", 4096)
    assert target.read_bytes() == b"keep"


def test_new_images_all_or_none_and_removed_unless_restored(tmp_path, capsys):
    a = snapshot_file(tmp_path / "a.snap")
    b = snapshot_file(tmp_path / "b.snap", name="beta")
    ra, rb = parse_restores([str(a), f"{b},disk={tmp_path}/b0.raw"], [])
    new = NewImages()
    new.create(ra.disks + rb.disks)
    assert all(d.path.stat().st_size == d.new_size for d in ra.disks + rb.disks)
    ra.restored = True
    remove_unrestored(new, [ra, rb])
    assert all(d.path.exists() for d in ra.disks)               # a restored VM's disks
    assert not any(d.path.exists() for d in rb.disks)
    err = capsys.readouterr().err
    assert f"restore {b} did not complete: removed the new image {tmp_path}/b0.raw" in err
    # a failure half-way removes what was made, and nothing else
    (rc,) = parse_restores([f"{b},disk={tmp_path}/c0.raw,disk={tmp_path}/c1.raw"], [])
    (tmp_path / "c1.raw").write_bytes(b"someone's")
    with pytest.raises(LaunchError, match="cannot create the new image .*c1.raw: File exists"):
        NewImages().create(rc.disks)
    assert not (tmp_path / "c0.raw").exists()
    assert (tmp_path / "c1.raw").read_bytes() == b"someone's"


def test_spare_disks(tmp_path, kernel):
    spares = parse_spare_disks([f"{tmp_path}/s0.raw:size=8M", f"{tmp_path}/s1.raw:size=1536"])
    assert [(d.path, d.new_size, d.vm, d.owner) for d in spares] == [
        (tmp_path / "s0.raw", 8 << 20, "", f"--spare-disk {tmp_path}/s0.raw"),
        (tmp_path / "s1.raw", 1536, "", f"--spare-disk {tmp_path}/s1.raw")]
    snap = snapshot_file(tmp_path / "a.snap")
    (r,) = parse_restores([str(snap)], [])
    disk = tmp_path / "vm.raw"
    disk.write_bytes(bytes(4096))
    vms = parse_vms([f"name=vm0,kernel={kernel},disk={disk}"])
    plan_devices(vms, [], [r], spares)                          # after every other disk
    assert [d.pci_dev for d in vms[0].disks + r.disks + spares] == [1, 2, 3, 4, 5]
    args = " ".join(device_args(vms, [], [r], spares))
    assert "id=disk--1,format=raw -device virtio-blk-pci,drive=disk--1,bus=pcie.0,addr=0x5" \
        in args
    assert run_cli.spare_lines(spares)[0] == (
        f"spare disk {tmp_path}/s0.raw ({8 << 20} bytes, zeroed) at host PCI device 4 "
        "(00:04.0): carapace-ctl restore FILE --disk 4")
    for item, words in [(f"{tmp_path}/s.raw", "want PATH:size=SIZE"),
                        (f"{tmp_path}/s.raw:size=1000", "multiple of 512"),
                        (f"{tmp_path}/s.raw:size=0", "multiple of 512"),
                        (f"{disk}:size=8M", "exists"),
                        (f"{tmp_path}/s.raw:ro", "want PATH:size=SIZE")]:
        with pytest.raises(LaunchError) as info:
            parse_spare_disks([item])
        assert words in str(info.value), (item, str(info.value))
    with pytest.raises(LaunchError, match="is also --spare-disk"):
        plan_devices([], [], [], parse_spare_disks([f"{tmp_path}/t.raw:size=8M"] * 2))


def test_without_the_disks_content_the_images_size_is_checked(tmp_path):
    """As in format 4: the user's images, of the saved disks' size; said
    before QEMU starts (the hypervisor would refuse with no-device)."""
    snap = snapshot_file(tmp_path / "a.snap", disks=False)
    good0, good1 = tmp_path / "g0.raw", tmp_path / "g1.qcow2"
    stub_image(good0, DISK0)
    # a qcow2 image: its virtual size, not its file's
    good1.write_bytes(b"QFI\xfb" + bytes(20) + struct.pack(">Q", DISK1 * 512) + bytes(100))
    assert image_bytes(good1) == DISK1 * 512
    (r,) = parse_restores([f"{snap},disk={good0},disk={good1}:ro"], [])
    assert not r.disks_included and [d.new_size for d in r.disks] == [None, None]
    assert [d.fmt for d in r.disks] == ["raw", "qcow2"]
    small = tmp_path / "small.raw"
    small.write_bytes(bytes(4096))
    with pytest.raises(LaunchError, match=r"disk=.*small.raw is 4096 bytes, the saved disk 1 "
                                          r"512000 \(1000 sectors\): a restore needs a disk of "
                                          r"its size"):
        parse_restores([f"{snap},disk={good0},disk={small}"], [])


def stub_image(path, sectors, changed=None):
    """A raw image as the stub host disk of make_seeds' DISK_IDs: block b all
    bytes b * 7 + 1; block @changed all 0xee."""
    with open(path, "wb") as f:
        for b in range(-(-sectors // 128)):
            n = min(128, sectors - b * 128) * 512
            f.write(bytes([0xEE if b == changed else (b * 7 + 1) & 0xFF]) * n)


def test_without_the_disks_content_the_images_identity_is_checked(tmp_path):
    """Format 6: a raw image whose sampled blocks are not the saved disk's is
    refused before QEMU starts, naming the disk and the block (the
    hypervisor would refuse with no-device); a block not sampled may differ,
    and a qcow2 image is left to the hypervisor."""
    snap = snapshot_file(tmp_path / "a.snap", disks=False, capacities=(DISK0,))
    good, bad, unsampled = (tmp_path / n for n in ("good.raw", "bad.raw", "unsampled.raw"))
    stub_image(good, DISK0)
    (r,) = parse_restores([f"{snap},disk={good}"], [])
    assert not r.disks_included
    stub_image(bad, DISK0, changed=42)     # sampled: blocks 0, 8, ..., 42, ..., 127
    with pytest.raises(LaunchError, match=r"disk=.*bad.raw is not the saved disk 0 \(block 42, "
                                          r"sectors 5376-5503, differs"):
        parse_restores([f"{snap},disk={bad}"], [])
    stub_image(unsampled, DISK0, changed=41)
    parse_restores([f"{snap},disk={unsampled}"], [])
    qcow = tmp_path / "q.qcow2"
    qcow.write_bytes(b"QFI\xfb" + bytes(20) + struct.pack(">Q", DISK0 * 512) + bytes(100))
    parse_restores([f"{snap},disk={qcow}"], [])


@needs_qemu
def test_dry_run_says_what_it_will_create(kernel, tmp_path, capsys):
    snap = snapshot_file(tmp_path / "a.snap")
    code = main(["--dry-run", "--hyp", str(kernel), "--restore", f"{snap},disk={tmp_path}/n0.raw",
                 "--spare-disk", f"{tmp_path}/sp.raw:size=4M"])
    assert code == 0
    out = capsys.readouterr().out
    assert (f"#   disk 0: new image {tmp_path}/n0.raw ({DISK0 * 512} bytes, zeroed, created when "
            "QEMU starts; the snapshot's disk content is written into it) at 00:01.0") in out
    assert f"#   disk 1: new image {tmp_path}/a.snap.disk1.raw" in out
    assert f"# spare disk {tmp_path}/sp.raw ({4 << 20} bytes, zeroed) at host PCI device 3" in out
    assert not any(p.exists() for p in (tmp_path / "n0.raw", tmp_path / "a.snap.disk1.raw",
                                        tmp_path / "sp.raw"))


def test_a_launch_that_fails_before_qemu_removes_the_new_images(tmp_path, kernel, capsys,
                                                                 monkeypatch):
    """QEMU never ran (here: it cannot start): no image of a restore stays."""
    snap = snapshot_file(tmp_path / "a.snap")

    def no_qemu(*args, **kw):
        assert all(p.exists() for p in (tmp_path / "a.snap.disk0.raw",
                                        tmp_path / "a.snap.disk1.raw"))   # made before
        raise LaunchError("QEMU did not start (test)")
    monkeypatch.setattr(run_cli, "run_qemu", no_qemu)
    monkeypatch.setattr(run_cli, "host_config", fake_host_config(kernel, tmp_path))
    assert main(["--batch", "--restore", str(snap)]) == 3
    err = capsys.readouterr().err
    assert "QEMU did not start (test)" in err and "removed the new image" in err
    assert not os.path.lexists(tmp_path / "a.snap.disk0.raw")
    assert not os.path.lexists(tmp_path / "a.snap.disk1.raw")


def fake_host_config(kernel, tmp_path):
    real = run_cli.host_config

    def host_config(args, *rest, **kw):
        args.hyp = kernel
        args.bios = kernel
        args.ctl_socket = str(tmp_path / "c.sock")
        return real(args, *rest, **kw)
    return host_config
