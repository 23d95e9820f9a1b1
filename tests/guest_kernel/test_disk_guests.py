# SPDX-License-Identifier: MIT
"""Issue 24 end to end with Linux: the two guests of `make run` under
Carapace, each booting Debian from its own disk (a qcow2 overlay over the
base image, through Carapace's virtio-blk model over a virtio-pci disk), on
one switch with an uplink. ssh reaches each guest through its port forward;
the guests reach each other over TCP on the switch; a file written and
synced before a reboot is there after it; the file system is fsck-clean
once the guest has powered off; the base image is never written."""

import os
import re
import sys

import pytest

from harness.console import ConsoleProcess
from harness.disks import check_fsck
from harness.paths import LAUNCHER
from harness.ports import free_port

from test_rootfs import make_overlay, rootfs  # noqa: F401 (fixture)

pytestmark = pytest.mark.linux

LOGIN_TIMEOUT = 400


class Host(ConsoleProcess):
    """One carapace-run (batch) with the two disk guests; consoles gathered."""

    def __init__(self, kernel, overlays, ports, sock, key):
        fwd = ",".join(f"fwd={vm}:{port}" for vm, port in ports.items())
        cmd = [sys.executable, str(LAUNCHER), "--batch", "--timeout", "900", "--smp", "2",
               "--ctl-socket", sock, "--switch", f"name=lan,uplink=user,{fwd}"]
        for vm, overlay in overlays.items():
            cmd += ["--vm", f"name={vm},kernel={kernel},mem=256M,vcpus=2,disk={overlay},net=lan,"
                    "bootargs=root=/dev/vda rw console=ttyS0"]
        self.ports, self.key = ports, key
        super().__init__(cmd)

    def wait_login(self, vm, count):
        # getty's issue line: the prompt after it has no newline, which a
        # batch run's console never flushes
        pat = re.compile(rf"^\[{vm}\] Debian GNU/Linux \S+ {vm} ttyS0", re.M)
        self.wait_count(pat, count, LOGIN_TIMEOUT, f"vm {vm} login prompt")

    def ssh(self, vm, command, check=True):
        return super().ssh(self.ports[vm], self.key, command, check).stdout


def test_make_run_guests_boot_from_disks_with_ssh(guest_kernel, rootfs, tmp_path):
    base, key = rootfs
    base_stat = os.stat(base)
    overlays = {vm: tmp_path / f"{vm}.qcow2" for vm in ("alpha", "beta")}
    for overlay in overlays.values():
        make_overlay(overlay)
    ports = {"alpha": free_port(), "beta": free_port()}
    h = Host(guest_kernel, overlays, ports, str(tmp_path / "ctl.sock"), key)
    try:
        for vm in overlays:
            h.wait_login(vm, 1)
        assert h.ssh("alpha", "hostname").strip() == "alpha"
        assert h.ssh("beta", "hostname").strip() == "beta"
        assert "inet 10.0.2.16/24" in h.ssh("beta", "ip -4 addr show eth0")
        # guest to guest on the switch: beta's sshd answers alpha's TCP connect
        banner = h.ssh("alpha", "timeout 20 bash -c 'exec 3<>/dev/tcp/10.0.2.16/22; "
                                "head -c 8 <&3'")
        assert banner.startswith("SSH-2.0"), banner
        # the CFI programs on the disk, under Carapace
        assert "shstk: prctl ok" in h.ssh("alpha", "cfistatus")
        # a file synced before a reboot is there after it
        h.ssh("alpha", "head -c 1048576 /dev/urandom > /root/data && sha256sum /root/data "
                       "> /root/data.sum && sync")
        h.ssh("alpha", "reboot", check=False)  # the connection may drop under it
        h.wait_login("alpha", 2)
        h.ssh("alpha", "sha256sum -c /root/data.sum")
        for vm in overlays:
            h.ssh(vm, "poweroff", check=False)
        h.proc.wait(300)
    finally:
        h.kill()
    assert "carapace: all VMs down" in h.console(), h.console()[-4000:]
    for overlay in overlays.values():
        check_fsck(overlay, tmp_path, h.console())
    after = os.stat(base)
    assert (after.st_size, after.st_mtime_ns) == (base_stat.st_size, base_stat.st_mtime_ns), \
        "the base image was written"
