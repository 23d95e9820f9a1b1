# SPDX-License-Identifier: MIT
"""Tests for carapace-run's disks, NICs and switches (issue 24): disk=, net=
and --switch parsing, MACs and addresses, PCI device numbers, the QEMU
arguments, the host DT nodes (read back with fdtget), and each error."""

import hashlib
import re
import shutil
import socket
import subprocess
import textwrap
from pathlib import Path

import pytest

from carapace import disks as disks_mod
from carapace import network as network_mod
from carapace import ratelimits
from carapace.cli.run import main
from carapace.devicetree import inject_chosen
from carapace.disks import detect_format, disk_args, parse_disk
from carapace.errors import LaunchError
from carapace.iodevices import assign_pci_slots, device_args, plan_devices
from carapace.launcher import QEMU, HostConfig, qemu_command
from carapace.network import (check_host_ports, derive_mac, forward_lines, parse_switches,
                              uplink_args)
from carapace.paths import cache_dir
from carapace.vmspec import parse_vm_spec, parse_vms, place_images

pytestmark = pytest.mark.quick

MiB = 1 << 20
QCOW2_HEAD = b"QFI\xfb\x00\x00\x00\x03"
needs_dtc = pytest.mark.skipif(not (shutil.which("dtc") and shutil.which("fdtget")),
                               reason="dtc/fdtget not installed")
FIRMWARE = cache_dir() / "fw_dynamic.bin"
needs_qemu = pytest.mark.skipif(not (shutil.which(QEMU) and shutil.which("dtc")
                                     and FIRMWARE.is_file()),
                                reason="QEMU, dtc or OpenSBI firmware missing (make deps)")


@pytest.fixture(autouse=True)
def private_runtime_dir(tmp_path, monkeypatch):
    """The default control socket goes under tmp_path: never the user's."""
    monkeypatch.delenv("CARAPACE_CTL_SOCKET", raising=False)
    monkeypatch.delenv("CARAPACE_STREAM_SOCKET", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))


@pytest.fixture
def kernel(tmp_path):
    path = tmp_path / "guest.bin"
    path.write_bytes(b"\x13\x00\x00\x00" * 1250)
    return path


@pytest.fixture
def images(tmp_path):
    """raw a.img, b.img and a qcow2-headed c.qcow2, 1 MiB each."""
    out = {}
    for name, head in (("a.img", b""), ("b.img", b""), ("c.qcow2", QCOW2_HEAD)):
        path = tmp_path / name
        path.write_bytes(head + bytes(MiB - len(head)))
        out[name] = path
    return out


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def setup_two(kernel, images, switches=("name=lan,uplink=user,fwd=alpha:2222,fwd=beta:8080:80",
                                        "name=dmz")):
    vms = parse_vms([f"name=alpha,kernel={kernel},disk={images['a.img']},net=lan,net=dmz",
                     f"name=beta,kernel={kernel},disk={images['c.qcow2']},"
                     f"disk={images['b.img']}:ro,net=lan/52:54:00:AB:CD:EF,bootargs=x=1"])
    sws = parse_switches(list(switches))
    plan_devices(vms, sws)
    return vms, sws


# --- disk= ---------------------------------------------------------------------------


def test_disk_raw_qcow2_and_read_only(images):
    d = parse_disk(str(images["a.img"]), "alpha", 0)
    assert (d.path, d.read_only, d.fmt, d.vm, d.index) == (images["a.img"], False, "raw",
                                                           "alpha", 0)
    d = parse_disk(f"{images['c.qcow2']}:ro", "alpha", 1)
    assert (d.path, d.read_only, d.fmt, d.drive_id) == (images["c.qcow2"], True, "qcow2",
                                                        "disk-alpha-1")


def test_format_by_header_not_by_name(tmp_path):
    looks_raw = tmp_path / "disk.img"
    looks_raw.write_bytes(QCOW2_HEAD + bytes(100))
    looks_qcow2 = tmp_path / "disk.qcow2"
    looks_qcow2.write_bytes(b"QFI\x00" + bytes(100))
    assert detect_format(looks_raw) == "qcow2"
    assert detect_format(looks_qcow2) == "raw"


def test_relative_disk_path_becomes_absolute(images, monkeypatch):
    monkeypatch.chdir(images["a.img"].parent)
    assert parse_disk("a.img", "v", 0).path == images["a.img"]


@pytest.mark.parametrize("value, message", [
    ("/nope/disk.img", "vm v: disk=/nope/disk.img: no such file: /nope/disk.img"),
    (":ro", "want disk=PATH[:ro][:iops=N][:bw=SIZE]"),
    ("", "want disk=PATH[:ro][:iops=N][:bw=SIZE]"),
    ("{dir}", "not a file"),
])
def test_disk_errors(tmp_path, value, message):
    with pytest.raises(LaunchError) as info:
        parse_disk(value.format(dir=tmp_path), "v", 0)
    assert message in str(info.value)


def test_disk_rate_limits(images):
    """:iops= and :bw= in any order with :ro; left out: None (the
    hypervisor's default); 0: no limit; bw takes K/M/G (binary)."""
    a = images["a.img"]
    d = parse_disk(str(a), "v", 0)
    assert (d.path, d.read_only, d.iops, d.bandwidth) == (a, False, None, None)
    d = parse_disk(f"{a}:iops=500:bw=8M", "v", 0)
    assert (d.path, d.read_only, d.iops, d.bandwidth) == (a, False, 500, 8 * MiB)
    d = parse_disk(f"{a}:bw=4k:ro:iops=0", "v", 0)
    assert (d.path, d.read_only, d.iops, d.bandwidth) == (a, True, 0, 4096)
    d = parse_disk(f"{a}:ro:bw=0", "v", 0)
    assert (d.read_only, d.iops, d.bandwidth) == (True, None, 0)
    d = parse_disk(f"{a}:iops={1 << 40}:bw=1024G", "v", 0)
    assert (d.iops, d.bandwidth) == (1 << 40, 1 << 40)


def test_disk_path_with_a_colon_keeps_it(tmp_path):
    odd = tmp_path / "x:y.img"
    odd.write_bytes(bytes(4096))
    d = parse_disk(f"{odd}:ro", "v", 0)
    assert (d.path, d.read_only, d.iops) == (odd, True, None)


@pytest.mark.parametrize("opts, message", [
    (":iops=-1", "'-1' is not 0 (no limit) or 1..1099511627776 requests a second"),
    (":iops=1k", "'1k' is not 0 (no limit) or 1..1099511627776 requests a second"),
    (":iops=", "'' is not 0 (no limit)"),
    (f":iops={(1 << 40) + 1}", "is not 0 (no limit) or 1..1099511627776"),
    (":bw=4095", "bw=4095 is not 0 (no limit) or 4K..1024G bytes a second"),
    (":bw=1", "bw=1 is not 0 (no limit) or 4K..1024G"),
    (":bw=1.5M", "bw=1.5M is not 0 (no limit) or 4K..1024G"),
    (":bw=2048G", "bw=2048G is not 0 (no limit) or 4K..1024G"),
    (":bw=8MB", "bw=8MB is not 0"),
    (":pps=10", "unknown option ':pps=10' (known: ro, iops=, bw=)"),
    (":iops=5:iops=6", "'iops=' given twice"),
    (":ro:ro", "':ro' given twice"),
])
def test_disk_rate_limit_errors(images, opts, message):
    with pytest.raises(LaunchError) as info:
        parse_disk(f"{images['a.img']}{opts}", "v", 0)
    text = str(info.value)
    assert text.startswith(f"vm v: disk={images['a.img']}{opts}: ") and message in text, text


def test_disk_not_writable_needs_ro(images, monkeypatch):
    real = disks_mod.os.access
    monkeypatch.setattr(disks_mod.os, "access",
                        lambda p, mode: False if mode == disks_mod.os.W_OK else real(p, mode))
    with pytest.raises(LaunchError) as info:
        parse_disk(str(images["a.img"]), "v", 0)
    assert f"not writable: {images['a.img']} (give disk={images['a.img']}:ro" in str(info.value)
    assert parse_disk(f"{images['a.img']}:ro", "v", 0).read_only


def test_at_most_two_disks_and_two_nics(kernel, images):
    a, b = images["a.img"], images["b.img"]
    vm = parse_vm_spec(f"kernel={kernel},disk={a},disk={b},net=x,net=y", 0)
    assert [d.path for d in vm.disks] == [a, b] and [n.switch for n in vm.nics] == ["x", "y"]
    with pytest.raises(LaunchError) as info:
        parse_vm_spec(f"kernel={kernel},disk={a},disk={b},disk={a}", 0)
    assert "more than 2 disk=" in str(info.value)
    with pytest.raises(LaunchError) as info:
        parse_vm_spec(f"kernel={kernel},net=x,net=y,net=z", 0)
    assert "more than 2 net=" in str(info.value)


def test_writable_disk_shared_by_two_vms_refused(kernel, images):
    a = images["a.img"]
    with pytest.raises(LaunchError) as info:
        plan_devices(parse_vms([f"name=p,kernel={kernel},disk={a}",
                                f"name=q,kernel={kernel},disk={a}:ro"]), [])
    assert f"vm q: disk {a} is also vm p's disk 0; a writable disk belongs to one VM" \
        in str(info.value)
    with pytest.raises(LaunchError):      # twice in one VM
        plan_devices(parse_vms([f"name=p,kernel={kernel},disk={a},disk={a}"]), [])
    # read-only everywhere: shared is fine
    plan_devices(parse_vms([f"name=p,kernel={kernel},disk={a}:ro",
                            f"name=q,kernel={kernel},disk={a}:ro"]), [])


# --- --switch and net= -----------------------------------------------------------


def test_parse_switches():
    lan, dmz = parse_switches(["name=lan,uplink=user,fwd=alpha:2222,fwd=beta:8080:80",
                               "name=dmz"])
    assert (lan.index, lan.name, lan.uplink) == (0, "lan", "user")
    assert [(f.vm, f.host_port, f.guest_port) for f in lan.forwards] == \
        [("alpha", 2222, 22), ("beta", 8080, 80)]
    assert (dmz.index, dmz.name, dmz.uplink, dmz.forwards) == (1, "dmz", None, [])


@pytest.mark.parametrize("specs, message", [
    (["uplink=user"], "want name=NAME"),
    (["name=LAN"], "want name=NAME"),
    (["name=lan,uplink=tap"], "uplink=tap: must be user"),
    (["name=lan,color=red"], "expected name=, uplink= or fwd=, got 'color=red'"),
    (["name=lan,name=wan"], "'name' given twice"),
    (["name=lan,fwd=a:2222"], "fwd= needs uplink=user"),
    (["name=lan,uplink=user,fwd=a"], "want fwd=VM:HOSTPORT[:GUESTPORT]"),
    (["name=lan,uplink=user,fwd=a:1:2:3"], "want fwd=VM:HOSTPORT[:GUESTPORT]"),
    (["name=lan,uplink=user,fwd=a:0"], "'0' is not a port number"),
    (["name=lan,uplink=user,fwd=a:22:65536"], "'65536' is not a port number"),
    (["name=lan,uplink=user,fwd=a:x"], "'x' is not a port number"),
    (["name=lan", "name=lan"], "two switches are named 'lan'"),
    ([f"name=s{i}" for i in range(9)], "9 switches given; the hypervisor has at most 8"),
])
def test_switch_errors(specs, message):
    with pytest.raises(LaunchError) as info:
        parse_switches(specs)
    assert message in str(info.value)


@pytest.mark.parametrize("net, message", [
    ("LAN", "want net=SWITCH[/MAC][:pps=N][:bw=SIZE]"),
    ("lan/52:54:00:12:34", "is not a MAC address"),
    ("lan/52-54-00-12-34-56", "is not a MAC address"),
    ("lan/53:54:00:12:34:56", "is a multicast address"),
    ("lan/ff:ff:ff:ff:ff:ff", "is a multicast address"),
    ("lan/00:00:00:00:00:00", "the all-zero MAC is not an address"),
])
def test_nic_errors(kernel, net, message):
    with pytest.raises(LaunchError) as info:
        parse_vm_spec(f"name=v,kernel={kernel},net={net}", 0)
    assert f"vm v: net={net}: " in str(info.value) and message in str(info.value)


def test_nic_rate_limits(kernel):
    """:pps= and :bw= after SWITCH or SWITCH/MAC; left out: None (the
    hypervisor's default); 0: no limit."""
    vm = parse_vm_spec(f"name=v,kernel={kernel},net=lan,net=dmz/52:54:00:AB:CD:EF:pps=300:bw=1M",
                       0)
    a, b = vm.nics
    assert (a.switch, a.mac, a.pps, a.bandwidth) == ("lan", None, None, None)
    assert (b.switch, b.mac, b.given, b.pps, b.bandwidth) == \
        ("dmz", "52:54:00:ab:cd:ef", True, 300, MiB)
    (c,) = parse_vm_spec(f"name=v,kernel={kernel},net=lan:bw=0:pps=0", 0).nics
    assert (c.switch, c.mac, c.pps, c.bandwidth) == ("lan", None, 0, 0)


@pytest.mark.parametrize("net, message", [
    ("lan:pps=x", "'x' is not 0 (no limit) or 1..1099511627776 frames a second"),
    ("lan:bw=100", "bw=100 is not 0 (no limit) or 4K..1024G bytes a second"),
    ("lan:iops=5", "unknown option ':iops=5' (known: pps=, bw=)"),
    ("lan:pps=1:pps=2", "'pps=' given twice"),
    ("lan:ro", "want net=SWITCH[/MAC][:pps=N][:bw=SIZE]"),
])
def test_nic_rate_limit_errors(kernel, net, message):
    with pytest.raises(LaunchError) as info:
        parse_vm_spec(f"name=v,kernel={kernel},net={net}", 0)
    text = str(info.value)
    assert text.startswith(f"vm v: net={net}: ") and message in text, text


def test_rate_limit_bounds_are_the_hypervisor_s():
    """The launcher's bounds and the defaults --dry-run names are
    hyp/include/vm_lifecycle.h's."""
    header = (Path(__file__).resolve().parents[2] / "hyp" / "include" /
              "vm_lifecycle.h").read_text()

    def value(name):
        m = re.search(rf"#define {name}\s+\(?(\d+)(?:ull)?(?: << (\d+))?\)?", header)
        assert m, name
        return int(m.group(1)) << int(m.group(2) or 0)
    assert ratelimits.RATE_MAX == value("VM_IO_RATE_MAX")
    assert ratelimits.BANDWIDTH_MIN == value("VM_IO_BANDWIDTH_MIN")
    assert ratelimits.DISK_DEFAULTS == (value("VM_DISK_IOPS_DEFAULT"),
                                        value("VM_DISK_BANDWIDTH_DEFAULT"))
    assert ratelimits.NIC_DEFAULTS == (value("VM_NIC_PPS_DEFAULT"),
                                       value("VM_NIC_BANDWIDTH_DEFAULT"))


def test_macs_derived_from_the_name_and_stable(kernel, images):
    vms, sws = setup_two(kernel, images)
    alpha, beta = vms
    want = "52:54:00:" + ":".join(f"{b:02x}" for b in
                                  hashlib.sha256(b"alpha/nic1").digest()[:3])
    assert alpha.nics[1].mac == want and not alpha.nics[1].given
    assert alpha.nics[0].mac == derive_mac("alpha/nic0") != alpha.nics[1].mac
    assert beta.nics[0].mac == "52:54:00:ab:cd:ef" and beta.nics[0].given   # lower case
    assert sws[0].mac == derive_mac("switch/lan") and sws[1].mac is None
    again, _ = setup_two(kernel, images)
    assert [n.mac for vm in again for n in vm.nics] == [n.mac for vm in vms for n in vm.nics]


def test_mac_collisions(kernel, monkeypatch):
    mac = "52:54:00:11:22:33"
    with pytest.raises(LaunchError) as info:
        plan_devices(parse_vms([f"name=a,kernel={kernel},net=lan/{mac}",
                                f"name=b,kernel={kernel},net=dmz/{mac}"]),
                     parse_switches(["name=lan", "name=dmz"]))
    assert f"vm b NIC 0 and vm a NIC 0 have the same MAC {mac}" in str(info.value)
    # a derived MAC that meets a given one: the given one keeps it
    monkeypatch.setattr(network_mod, "derive_mac", lambda seed: mac)
    with pytest.raises(LaunchError) as info:
        plan_devices(parse_vms([f"name=a,kernel={kernel},net=lan",
                                f"name=b,kernel={kernel},net=lan/{mac}"]),
                     parse_switches(["name=lan"]))
    assert str(info.value) == (f"vm a NIC 0 and vm b NIC 0 have the same MAC {mac} "
                               "(a derived MAC: give one, net=SWITCH/MAC)")


def test_unknown_switch(kernel):
    with pytest.raises(LaunchError) as info:
        plan_devices(parse_vms([f"name=a,kernel={kernel},net=wan"]),
                     parse_switches(["name=lan"]))
    assert str(info.value) == "vm a: net=wan: no --switch named 'wan' (switches: lan)"


def test_ports_per_switch(kernel, monkeypatch):
    monkeypatch.setattr(network_mod, "MAX_PORTS", 3)
    specs = [f"name=v{i},kernel={kernel},net=lan" for i in range(3)]
    plan_devices(parse_vms(specs), parse_switches(["name=lan"]))
    with pytest.raises(LaunchError) as info:
        plan_devices(parse_vms(specs), parse_switches(["name=lan,uplink=user"]))
    assert "switch lan: 4 ports (NICs and uplink); a switch has at most 3" in str(info.value)


def test_addresses_and_bootargs(kernel, images):
    vms, _ = setup_two(kernel, images)
    alpha, beta = vms
    assert (alpha.ip, alpha.ip_switch) == ("10.0.2.15", "lan")
    assert alpha.bootargs == ("carapace.ip=10.0.2.15/24 carapace.gw=10.0.2.2 "
                              "carapace.hostname=alpha")
    assert beta.ip == "10.0.2.16"
    assert beta.bootargs == ("x=1 carapace.ip=10.0.2.16/24 carapace.gw=10.0.2.2 "
                             "carapace.hostname=beta")


def test_address_counts_per_switch_and_names_the_nic(kernel):
    vms = parse_vms([f"name=a,kernel={kernel},net=dmz",
                     f"name=b,kernel={kernel},net=wan",
                     f"name=c,kernel={kernel},net=dmz,net=lan",
                     f"name=d,kernel={kernel},net=lan"])
    plan_devices(vms, parse_switches(["name=lan,uplink=user", "name=wan,uplink=user",
                                      "name=dmz"]))
    assert [vm.ip for vm in vms] == [None, "10.0.2.15", "10.0.2.15", "10.0.2.16"]
    assert vms[0].bootargs is None
    assert vms[2].bootargs.endswith("carapace.gw=10.0.2.2 carapace.hostname="
                                    f"{vms[2].name} carapace.ipdev=eth1")
    assert "ipdev" not in vms[3].bootargs


def test_one_uplinked_switch_per_vm(kernel):
    with pytest.raises(LaunchError) as info:
        plan_devices(parse_vms([f"name=a,kernel={kernel},net=lan,net=wan"]),
                     parse_switches(["name=lan,uplink=user", "name=wan,uplink=user"]))
    assert "vm a: NICs on 2 switches with an uplink (lan, wan); at most one" in str(info.value)


def test_bootargs_with_address_too_long(kernel):
    vms = parse_vms([f"name=a,kernel={kernel},net=lan,bootargs={'x' * 480}"])
    with pytest.raises(LaunchError) as info:
        plan_devices(vms, parse_switches(["name=lan,uplink=user"]))
    assert "vm a: bootargs longer than 511 bytes with the launcher's" in str(info.value)


@pytest.mark.parametrize("switches, message", [
    (["name=lan,uplink=user,fwd=zed:2222", "name=wan"],
     "switch lan: fwd=zed:2222: no VM named 'zed'"),
    (["name=lan,uplink=user", "name=wan,uplink=user,fwd=a:2222"],
     "switch wan: fwd=a:2222: vm a has no NIC on switch wan"),
    (["name=lan,uplink=user,fwd=a:2222,fwd=a:2222:23", "name=wan"],
     "host port 2222 is forwarded twice"),
    (["name=lan,uplink=user,fwd=a:2222", "name=wan,uplink=user,fwd=b:2222"],
     "host port 2222 is forwarded twice (switch wan to vm b, and switch lan to vm a)"),
])
def test_forward_errors(kernel, switches, message):
    vms = parse_vms([f"name=a,kernel={kernel},net=lan", f"name=b,kernel={kernel},net=wan"])
    with pytest.raises(LaunchError) as info:
        plan_devices(vms, parse_switches(switches))
    assert message in str(info.value)


def test_forward_lines(kernel, images):
    _, sws = setup_two(kernel, images)
    assert forward_lines(sws) == ["vm alpha: ssh -p 2222 root@localhost",
                                  "vm beta: localhost:8080 -> 10.0.2.16:80 (tcp)"]


def test_host_port_in_use(kernel):
    port = free_port()
    vms = parse_vms([f"name=a,kernel={kernel},net=lan"])
    sws = parse_switches([f"name=lan,uplink=user,fwd=a:{port}"])
    plan_devices(vms, sws)
    check_host_ports(sws)                     # free: passes
    busy = socket.socket()
    busy.bind(("127.0.0.1", port))
    busy.listen(1)
    try:
        with pytest.raises(LaunchError) as info:
            check_host_ports(sws)
    finally:
        busy.close()
    assert f"switch lan: fwd=a:{port}: host port {port} is not free on 127.0.0.1" \
        in str(info.value)


# --- PCI device numbers and QEMU arguments ----------------------------------------------


def test_pci_slots_uplinks_then_disks(kernel, images):
    vms, sws = setup_two(kernel, images)
    assert sws[0].pci_dev == 1 and sws[1].pci_dev is None
    assert [d.pci_dev for vm in vms for d in vm.disks] == [2, 3, 4]


def test_pci_slots_run_out(kernel, images):
    vms, sws = setup_two(kernel, images)
    assign_pci_slots(vms, sws, first=1, last=4)
    with pytest.raises(LaunchError) as info:
        assign_pci_slots(vms, sws, first=1, last=3)
    assert str(info.value) == ("4 PCI devices (3 disks and 1 uplinks) but bus 0 has 3 free "
                               "device numbers (1..3); give fewer disks or uplinks")


def test_eight_vms_with_two_disks_and_uplinks_fit(kernel, tmp_path):
    specs = []
    for i in range(8):
        for j in range(2):
            (tmp_path / f"d{i}{j}").write_bytes(bytes(512))
        specs.append(f"name=v{i},kernel={kernel},disk={tmp_path}/d{i}0,"
                     f"disk={tmp_path}/d{i}1,net=s{i}")
    vms = parse_vms(specs)
    sws = parse_switches([f"name=s{i},uplink=user" for i in range(8)])
    plan_devices(vms, sws)
    numbers = [sw.pci_dev for sw in sws] + [d.pci_dev for vm in vms for d in vm.disks]
    assert sorted(numbers) == list(range(1, 25))


def test_device_args(kernel, images):
    vms, sws = setup_two(kernel, images)
    a, b, c = images["a.img"], images["b.img"], images["c.qcow2"]
    assert device_args(vms, sws) == [
        "-netdev", "user,id=uplink-lan,net=10.0.2.0/24,"
                   "hostfwd=tcp:127.0.0.1:2222-10.0.2.15:22,"
                   "hostfwd=tcp:127.0.0.1:8080-10.0.2.16:80",
        "-device", f"virtio-net-pci,netdev=uplink-lan,bus=pcie.0,addr=0x1,mac={sws[0].mac},"
                   "romfile=",
        "-drive", f"file={a},if=none,id=disk-alpha-0,format=raw",
        "-device", "virtio-blk-pci,drive=disk-alpha-0,bus=pcie.0,addr=0x2",
        "-drive", f"file={c},if=none,id=disk-beta-0,format=qcow2",
        "-device", "virtio-blk-pci,drive=disk-beta-0,bus=pcie.0,addr=0x3",
        "-drive", f"file={b},if=none,id=disk-beta-1,format=raw,readonly=on",
        "-device", "virtio-blk-pci,drive=disk-beta-1,bus=pcie.0,addr=0x4",
    ]


def test_disk_path_commas_doubled(tmp_path):
    odd = tmp_path / "a,b.img"
    odd.write_bytes(bytes(512))
    disk = parse_disk(str(odd), "v", 0)
    disk.pci_dev = 5
    assert disk_args(disk)[1] == f"file={tmp_path}/a,,b.img,if=none,id=disk-v-0,format=raw"


def test_uplink_without_forwards():
    (sw,) = parse_switches(["name=lan,uplink=user"])
    sw.pci_dev, sw.mac = 7, "52:54:00:01:02:03"
    assert uplink_args(sw) == ["-netdev", "user,id=uplink-lan,net=10.0.2.0/24",
                               "-device", "virtio-net-pci,netdev=uplink-lan,bus=pcie.0,"
                                          "addr=0x7,mac=52:54:00:01:02:03,romfile="]


def test_qemu_command_carries_the_devices(kernel, images, tmp_path):
    vms, sws = setup_two(kernel, images)
    host = HostConfig(hyp=kernel, bios=kernel, mem=512 * MiB, ctl_socket=tmp_path / "c.sock")
    cmd = qemu_command(host, tmp_path / "h.dtb", place_images(vms, 512 * MiB), True,
                       device_args(vms, sws))
    dev = device_args(vms, sws)
    start = cmd.index(dev[0])
    assert cmd[start:start + len(dev)] == dev
    assert start > cmd.index("-dtb") and start < cmd.index("-chardev")


# --- the host device tree -----------------------------------------------------------

BASE_DTS = textwrap.dedent("""\
    /dts-v1/;

    / {
    \t#address-cells = <0x02>;
    \t#size-cells = <0x02>;

    \tchosen {
    \t};
    };
    """)


def fdtget(dtb, node, prop, kind=None):
    cmd = ["fdtget"] + (["-t", kind] if kind else []) + [str(dtb), node, prop]
    return subprocess.run(cmd, check=True, capture_output=True).stdout.decode().rstrip("\n")


def has_prop(dtb, node, prop):
    return subprocess.run(["fdtget", str(dtb), node, prop], capture_output=True).returncode == 0


@needs_dtc
def test_dt_nodes(kernel, images, tmp_path):
    vms, sws = setup_two(kernel, images)
    dts = inject_chosen(BASE_DTS, vms, place_images(vms, 512 * MiB), switches=sws)
    src, dtb = tmp_path / "t.dts", tmp_path / "t.dtb"
    src.write_text(dts)
    subprocess.run(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", str(dtb), str(src)],
                   check=True, capture_output=True)
    assert dts.index("switch@0 {") < dts.index("vm@0 {")
    lan, dmz = "/chosen/switch@0", "/chosen/switch@1"
    assert fdtget(dtb, lan, "compatible") == "carapace,switch"
    assert fdtget(dtb, lan, "carapace,name") == "lan"
    assert fdtget(dtb, lan, "carapace,uplink-pci-dev") == "1"
    assert fdtget(dtb, dmz, "carapace,name") == "dmz"
    assert not has_prop(dtb, dmz, "carapace,uplink-pci-dev")
    alpha, beta = "/chosen/vm@0", "/chosen/vm@1"
    assert fdtget(dtb, f"{alpha}/disk@0", "compatible") == "carapace,disk"
    assert fdtget(dtb, f"{alpha}/disk@0", "carapace,pci-dev") == "2"
    assert not has_prop(dtb, f"{alpha}/disk@0", "carapace,read-only")
    assert fdtget(dtb, f"{beta}/disk@0", "carapace,pci-dev") == "3"
    assert fdtget(dtb, f"{beta}/disk@1", "carapace,pci-dev") == "4"
    assert has_prop(dtb, f"{beta}/disk@1", "carapace,read-only")
    assert fdtget(dtb, f"{alpha}/nic@0", "compatible") == "carapace,nic"
    assert fdtget(dtb, f"{alpha}/nic@0", "carapace,switch") == "lan"
    assert fdtget(dtb, f"{alpha}/nic@1", "carapace,switch") == "dmz"
    mac = fdtget(dtb, f"{alpha}/nic@1", "local-mac-address", "bx").split()
    assert ":".join(f"{int(x, 16):02x}" for x in mac) == vms[0].nics[1].mac
    mac = fdtget(dtb, f"{beta}/nic@0", "local-mac-address", "bx").split()
    assert mac == ["52", "54", "0", "ab", "cd", "ef"]
    assert fdtget(dtb, beta, "bootargs") == ("x=1 carapace.ip=10.0.2.16/24 carapace.gw=10.0.2.2 "
                                             "carapace.hostname=beta")
    for node, prop in ((f"{alpha}/disk@0", "carapace,iops"),
                       (f"{alpha}/disk@0", "carapace,bandwidth"),
                       (f"{alpha}/nic@0", "carapace,pps"), (f"{alpha}/nic@0", "carapace,bandwidth")):
        assert not has_prop(dtb, node, prop), (node, prop)     # left out: the defaults


@needs_dtc
def test_dt_rate_limits(kernel, images, tmp_path):
    """Each limit given becomes its property, two cells (0 too: no limit)."""
    vms = parse_vms([f"name=a,kernel={kernel},disk={images['a.img']}:iops=500:bw=8M,"
                     f"disk={images['b.img']}:ro:iops=0,net=lan:pps=300:bw=0,net=dmz:bw={1 << 40}"])
    plan_devices(vms, parse_switches(["name=lan", "name=dmz"]))
    dts = inject_chosen(BASE_DTS, vms, place_images(vms, 512 * MiB), switches=[])
    src, dtb = tmp_path / "t.dts", tmp_path / "t.dtb"
    src.write_text(dts)
    subprocess.run(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", str(dtb), str(src)],
                   check=True, capture_output=True)
    a = "/chosen/vm@0"
    assert fdtget(dtb, f"{a}/disk@0", "carapace,iops", "u") == "0 500"
    assert fdtget(dtb, f"{a}/disk@0", "carapace,bandwidth", "u") == f"0 {8 * MiB}"
    assert fdtget(dtb, f"{a}/disk@1", "carapace,iops", "u") == "0 0"
    assert not has_prop(dtb, f"{a}/disk@1", "carapace,bandwidth")
    assert has_prop(dtb, f"{a}/disk@1", "carapace,read-only")
    assert fdtget(dtb, f"{a}/nic@0", "carapace,pps", "u") == "0 300"
    assert fdtget(dtb, f"{a}/nic@0", "carapace,bandwidth", "u") == "0 0"
    assert not has_prop(dtb, f"{a}/nic@1", "carapace,pps")
    assert fdtget(dtb, f"{a}/nic@1", "carapace,bandwidth", "u") == "256 0"


# --- the command ------------------------------------------------------------------------


def test_help_documents_disks_and_switches(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for word in ("--switch SPEC", "disk=PATH[:ro][:iops=N][:bw=SIZE]",
                 "net=SW[/MAC][:pps=N][:bw=SIZE]", "carapace,iops", "carapace,pps", "uplink=user",
                 "fwd=VM:HP[:GP]", "carapace.ip=10.0.2.X/24", "carapace,switch",
                 "carapace,disk", "carapace,nic", "local-mac-address",
                 "ssh -p 2222 root@localhost"):
        assert word in out, word


@pytest.mark.parametrize("argv, message", [
    (["--vm", "name=a,kernel={k},disk=/nope/a.img"], "vm a: disk=/nope/a.img: no such file"),
    (["--vm", "name=a,kernel={k},net=lan"], "vm a: net=lan: no --switch named 'lan'"),
    (["--switch", "name=lan,uplink=user,fwd=a:2222,fwd=b:2222",
      "--vm", "name=a,kernel={k},net=lan", "--vm", "name=b,kernel={k},net=lan"],
     "host port 2222 is forwarded twice"),
])
def test_main_errors_exit_3(kernel, capsys, argv, message):
    assert main([a.format(k=kernel) for a in argv]) == 3
    err = capsys.readouterr().err
    assert err.startswith("carapace-run: error: ") and message in err


@needs_qemu
def test_main_port_in_use_exits_3_before_qemu(kernel, tmp_path, capsys):
    port = free_port()
    busy = socket.socket()
    busy.bind(("127.0.0.1", port))
    busy.listen(1)
    try:
        code = main(["--batch", "--hyp", str(kernel), "--ctl-socket", str(tmp_path / "c.sock"),
                     "--switch", f"name=lan,uplink=user,fwd=a:{port}",
                     "--vm", f"name=a,kernel={kernel},net=lan"])
    finally:
        busy.close()
    assert code == 3
    err = capsys.readouterr().err
    assert f"host port {port} is not free on 127.0.0.1" in err
    assert "batch run" not in err                   # QEMU never started
    assert not (tmp_path / "c.sock").exists()


@needs_qemu
def test_dry_run_shows_the_devices(kernel, images, tmp_path, capsys):
    keep = tmp_path / "keep"
    code = main(["--dry-run", "--keep", str(keep), "--hyp", str(kernel),
                 "--switch", "name=lan,uplink=user,fwd=a:2222",
                 "--vm", f"name=a,kernel={kernel},disk={images['c.qcow2']}:ro,net=lan"])
    assert code == 0
    out = capsys.readouterr().out
    assert "-netdev user,id=uplink-lan,net=10.0.2.0/24,hostfwd=tcp:127.0.0.1:2222-10.0.2.15:22" \
        in out
    assert f"-drive file={images['c.qcow2']},if=none,id=disk-a-0,format=qcow2,readonly=on" in out
    assert "# switch lan: uplink (QEMU user networking) at 00:01.0, MAC 52:54:00:" in out
    assert (f"#   vm a: disk 0 {images['c.qcow2']} (qcow2, read-only) at 00:02.0, "
            "rate limits 2000 requests/s (default), 32M/s (default)") in out
    assert "# vm a: ssh -p 2222 root@localhost" in out
    assert fdtget(keep / "host.dtb", "/chosen/vm@0/disk@0", "carapace,pci-dev") == "2"
    assert fdtget(keep / "host.dtb", "/chosen/switch@0", "carapace,uplink-pci-dev") == "1"
    # and QEMU accepts that command line: the device tree dump ran with the same -machine
    assert Path(keep / "qemu.dtb").is_file()


def test_tree_dump_leaves_out_a_set_of_a_drive():
    """The QEMU that dumps the host tree has no drives: a --qemu-arg -set of
    a drive's option (a test's throttled host disk) stays out of it, every
    other argument goes along."""
    from carapace.devicetree import dump_args
    extra = ["-machine", "aia=aplic-imsic", "-set", "drive.disk-r-0.throttling.bps-total=1",
             "-set", "device.x.y=1", "-d", "guest_errors"]
    assert dump_args(extra) == ["-machine", "aia=aplic-imsic", "-set", "device.x.y=1", "-d",
                                "guest_errors"]
    assert dump_args(["-set"]) == ["-set"]
