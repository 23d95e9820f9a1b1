# SPDX-License-Identifier: MIT
"""The Debian root file system (scripts/mkrootfs.sh, docs/user-guide.md "The
Debian root file system") booted from a disk by our guest kernel on bare QEMU
+ OpenSBI: the base image (built here if it is not cached; a failed build
fails the test) under a fresh qcow2 overlay on a virtio-blk-device, a
virtio-net-device on QEMU user networking with a port forward to the guest's
sshd. The login prompt on the console; ssh with the key of the cache runs the
CFI test programs; a file written survives a reboot (and the host key with
it); after a poweroff the overlay's file system is fsck-clean and the base
image untouched. The time to the login prompt is wall time (TCG, no -icount:
sshd and the network need real time), printed."""

import os
import re
import subprocess
import time

import pytest

from harness.console import ConsoleProcess
from harness.disks import QEMU_IMG, check_fsck
from harness.linux import REQUIRED_FULL, CfiReport, check_cfi
from harness.paths import ROOT
from harness.ports import free_port
from harness.runs import reference_cmd

pytestmark = pytest.mark.linux

MKROOTFS = ROOT / "scripts" / "mkrootfs.sh"
BUILD_TIMEOUT = 3600        # a cold build: download, unpack, first boot under TCG
LOGIN_TIMEOUT = 300         # seconds from QEMU's start to the login prompt
GUEST_IP = "10.0.2.15"
LOGIN_RE = re.compile(r"^\S+ login: ", re.M)


@pytest.fixture(scope="session")
def rootfs(guest_kernel):
    """`make rootfs` (cached when its inputs did not change): (base image,
    private ssh key)."""
    try:
        r = subprocess.run(["make", "-s", "rootfs"], cwd=ROOT, capture_output=True, text=True,
                           timeout=BUILD_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"make rootfs took over {BUILD_TIMEOUT} s\n{e.stderr}")
    assert r.returncode == 0, f"make rootfs failed:\n{r.stdout}\n{r.stderr[-6000:]}"
    out = {}
    for what in ("path", "ssh-key"):
        out[what] = subprocess.run([str(MKROOTFS), what], cwd=ROOT, capture_output=True,
                                   text=True, check=True).stdout.strip()
    base = os.path.realpath(out["path"])
    assert os.path.isfile(base), f"no base image at {out['path']}\n{r.stderr}"
    return base, out["ssh-key"]


class Guest(ConsoleProcess):
    """One bare-QEMU boot of the overlay: its console, and ssh through the
    port forward."""

    def __init__(self, kernel, overlay, key):
        self.port = free_port()
        self.key = key
        append = (f"root=/dev/vda rw console=ttyS0 carapace.ip={GUEST_IP}/24 "
                  f"carapace.gw=10.0.2.2 carapace.hostname=alpha")
        extra = ["-drive", f"file={overlay},format=qcow2,if=none,id=root",
                 "-device", "virtio-blk-device,drive=root",
                 "-netdev", f"user,id=net,hostfwd=tcp:127.0.0.1:{self.port}-{GUEST_IP}:22",
                 "-device", "virtio-net-device,netdev=net"]
        super().__init__(reference_cmd(kernel, mem="512M", serial_only=True, append=append,
                                       extra=extra))

    def wait_login(self, count):
        """Wait for the @count-th login prompt; the seconds since QEMU started."""
        return self.wait_count(LOGIN_RE, count, LOGIN_TIMEOUT, "login prompt")

    def ssh(self, command, check=True):
        return super().ssh(self.port, self.key, command, check)

    def wait_exit(self, timeout=120):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"QEMU still running {timeout} s after poweroff\n{self.console()[-4000:]}")


def make_overlay(overlay):
    r = subprocess.run([str(MKROOTFS), "overlay", str(overlay)], cwd=ROOT, capture_output=True,
                       text=True, env={**os.environ, "FRESH": "1"})
    assert r.returncode == 0, f"mkrootfs.sh overlay failed:\n{r.stderr}"
    info = subprocess.run([QEMU_IMG, "info", "-U", str(overlay)], capture_output=True,
                          text=True, check=True).stdout
    assert "file format: qcow2" in info, info


def test_rootfs_boot_ssh_persist(guest_kernel, rootfs, tmp_path):
    base, key = rootfs
    base_stat = os.stat(base)
    overlay = tmp_path / "alpha.qcow2"
    make_overlay(overlay)

    g = Guest(guest_kernel, overlay, key)
    try:
        first = g.wait_login(1)
        con = g.console()
        assert re.search(r"Linux version \S+-carapace", con), f"not our kernel\n{con}"
        assert "carapace-net: eth0 10.0.2.15/24 via 10.0.2.2" in con, con
        assert "carapace-hostkeys: made /etc/ssh/ssh_host_ed25519_key" in con, con

        # the CFI test programs, over ssh
        rep = CfiReport(g.ssh("cfitest").stdout.splitlines())
        check_cfi(rep, "cfitest over ssh", REQUIRED_FULL, "\n".join(rep.lines))
        status = g.ssh("cfistatus").stdout
        assert "cfistatus: shstk+lpad: prctl ok features=[shstk lpad]" in status, status
        assert "cfistatus: done" in status, status

        hostkey = g.ssh("ssh-keygen -l -f /etc/ssh/ssh_host_ed25519_key.pub").stdout
        token = f"carapace-{os.getpid()}-{time.time_ns()}"
        g.ssh(f"echo {token} >/root/persist && sync")
        g.ssh("reboot", check=False)        # the connection may drop mid-command
        second = g.wait_login(2)

        assert g.ssh("cat /root/persist").stdout.strip() == token, g.console()[-4000:]
        assert g.ssh("ssh-keygen -l -f /etc/ssh/ssh_host_ed25519_key.pub").stdout == hostkey
        assert g.console().count("carapace-hostkeys: made") == 1, "host key made again"
        g.ssh("poweroff", check=False)
        assert g.wait_exit() == 0, g.console()[-4000:]
    finally:
        g.kill()

    fsck = check_fsck(overlay, tmp_path)
    after = os.stat(base)
    assert (after.st_mtime_ns, after.st_size) == (base_stat.st_mtime_ns, base_stat.st_size), \
        "the base image was written"
    print(f"rootfs: login prompt {first:.1f} s after QEMU started (wall time, TCG); "
          f"after the reboot {second - first:.1f} s later; "
          f"base {os.path.getsize(base) >> 20} MiB; {fsck.strip().splitlines()[-1]}")
