# SPDX-License-Identifier: MIT
"""Guests' disk images read and made on the host with e2fsprogs (mke2fs,
e2fsck, debugfs: scripts/deps.sh installs them) and qemu-img: an empty ext4
image (make_ext4, or one holding files), whether its journal needs a replay
(needs_recovery), the replay a mount would do (replay_journal), the fsck
verdict (check_fsck: clean or the test fails, naming the inodes e2fsck
complains of), a file read out of it (read_file) and where a file's block
lies in it (block_offset)."""

import os
import re
import shutil
import subprocess

QEMU_IMG = os.environ.get("QEMU_IMG") or "qemu-img"
SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
QCOW2_MAGIC = b"QFI\xfb"


def tool(name):
    """The path of e2fsprogs' @name; the test fails without it."""
    path = shutil.which(name, path=SBIN)
    assert path, f"{name} missing on the host (package e2fsprogs: scripts/deps.sh host)"
    return path


def make_ext4(path, size_mib, files=None):
    """A raw image of @size_mib MiB at @path holding an empty ext4 file
    system, or the files of the directory @files (mke2fs -d), in 4 KiB
    blocks (what mke2fs gives a disk of 512 MiB or more; it would pick 1 KiB
    for a small one). Inode tables and journal are written now, so the
    guest's kernel does not zero them in the background while a test
    measures its I/O."""
    with open(path, "wb") as f:
        f.truncate(size_mib << 20)
    cmd = [tool("mke2fs"), "-q", "-F", "-t", "ext4", "-b", "4096",
           "-E", "lazy_itable_init=0,lazy_journal_init=0"]
    if files is not None:
        cmd += ["-d", str(files)]
    r = subprocess.run([*cmd, str(path)], capture_output=True, text=True)
    assert r.returncode == 0, f"mke2fs {path}: exit {r.returncode}\n{r.stdout}{r.stderr}"
    return path


def needs_recovery(raw):
    """Whether the ext4 image @raw has journal transactions not yet written
    to their places (a guest stopped with the file system mounted)."""
    r = subprocess.run([tool("dumpe2fs"), "-h", str(raw)], capture_output=True, text=True)
    assert r.returncode == 0, f"dumpe2fs -h {raw}: exit {r.returncode}\n{r.stderr}"
    m = re.search(r"^Filesystem features:(.*)$", r.stdout, re.M)
    assert m, r.stdout
    return "needs_recovery" in m.group(1).split()


def replay_journal(raw):
    """Replay @raw's journal as a mount would (e2fsck -E journal_only: that
    and nothing else, no repair), in place."""
    r = subprocess.run([tool("e2fsck"), "-E", "journal_only", "-y", str(raw)],
                       capture_output=True, text=True)
    assert r.returncode == 0 and not needs_recovery(raw), \
        f"replaying {raw}'s journal: exit {r.returncode}\n{r.stdout}{r.stderr}"


def check_fsck(image, tmp_path, console=""):
    """The ext4 file system in @image (raw, or a qcow2 overlay, read as its
    whole chain), read on the host: clean (e2fsck -fn exits 0). On a
    failure the message names the inodes e2fsck complains of and ends with
    @console's tail (the guest's shutdown: did / go read-only?). A raw image
    is read where it is (-n writes nothing); a qcow2 one through a raw copy
    in @tmp_path. Returns e2fsck's output."""
    with open(image, "rb") as f:
        qcow2 = f.read(4) == QCOW2_MAGIC
    raw = image
    if qcow2:
        raw = tmp_path / "fsck.raw"
        subprocess.run([QEMU_IMG, "convert", "-O", "raw", str(image), str(raw)], check=True)
    r = subprocess.run([tool("e2fsck"), "-fn", str(raw)], capture_output=True, text=True)
    names = ""
    if r.returncode:
        inodes = sorted(set(re.findall(r"[Ii]node (\d+)", r.stdout)))[:8]
        if inodes:
            names = subprocess.run([tool("debugfs"), "-R", "ncheck " + " ".join(inodes),
                                    str(raw)], capture_output=True, text=True).stdout
    if qcow2:
        raw.unlink()
    assert r.returncode == 0, (f"e2fsck -fn {image.name}: exit {r.returncode}\n{r.stdout}"
                               f"{r.stderr}{names}\n{console[-3000:]}")
    return r.stdout


def read_file(raw, path):
    """The bytes of the file @path in the ext4 image @raw (debugfs: read as
    the image lies, no journal replayed: replay_journal() first if
    needs_recovery())."""
    r = subprocess.run([tool("debugfs"), "-R", f"cat {path}", str(raw)], capture_output=True)
    assert r.returncode == 0, f"debugfs cat {path} in {raw}: exit {r.returncode}\n" + \
        r.stderr.decode(errors="replace")
    # debugfs says a missing file on stderr and exits 0
    err = r.stderr.decode(errors="replace")
    assert "File not found" not in err, f"{path} not in {raw}: {err}"
    return r.stdout


def block_offset(raw, path, index):
    """Where block @index of the file @path lies in the ext4 image @raw: its
    byte offset in the image, and the file system's block size. For tests
    that change a file's data behind the file system's back."""
    r = subprocess.run([tool("debugfs"), "-R", f"bmap {path} {index}", str(raw)],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip().isdigit() and int(r.stdout), \
        f"debugfs bmap {path} {index}: {r.stdout}{r.stderr}"
    s = subprocess.run([tool("dumpe2fs"), "-h", str(raw)], capture_output=True, text=True)
    block = int(re.search(r"^Block size:\s+(\d+)", s.stdout, re.M).group(1))
    return int(r.stdout) * block, block
