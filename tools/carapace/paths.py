# SPDX-License-Identifier: MIT
"""Where things are, computed once: the default control and stream sockets
(carapace-run creates them, carapace-ctl and the Host API connect to them),
the download cache, and the C headers whose tables the snapshot reader
parses (include/ of a source tree, or the copy a `pip install` packs)."""

import os
from pathlib import Path

CTL_SOCKET_ENV = "CARAPACE_CTL_SOCKET"
STREAM_SOCKET_ENV = "CARAPACE_STREAM_SOCKET"
STREAM_SOCKET_NAME = "stream.sock"     # default: beside the control socket
CACHE_ENV = "CARAPACE_CACHE"
# The hypervisor image carapace-run boots by default, and the tests and
# benchmarks with it (build/cfi/carapace.bin: the CFI build, make cfi).
HYP_ENV = "CARAPACE_HYP"

# The C headers the snapshot reader parses (c_header.py), relative to the
# source tree's root. The hypervisor's ABI headers live in ONE folder: rename
# it here.
ABI_INCLUDE = "include/abi"
ARCH_INCLUDE = "include/arch/riscv"
C_HEADERS = (f"{ARCH_INCLUDE}/encoding.h", f"{ABI_INCLUDE}/snapshot_format.h",
             f"{ABI_INCLUDE}/snapshot_records.h", f"{ABI_INCLUDE}/snapshot_devices.h")

PACKAGE_DIR = Path(__file__).resolve().parent
# tools/carapace/ -> the source tree's root (meaningless once installed).
SOURCE_ROOT = PACKAGE_DIR.parents[1]
# Where an installed package keeps its copy of C_HEADERS (same relative paths).
BUNDLED_HEADERS = PACKAGE_DIR / "_c"


def header_root():
    """The directory C_HEADERS are relative to: the source tree this package
    runs from, else the copy packed into an installed package."""
    if all((SOURCE_ROOT / rel).is_file() for rel in C_HEADERS):
        return SOURCE_ROOT
    return BUNDLED_HEADERS


def default_ctl_socket():
    """$CARAPACE_CTL_SOCKET, else ${XDG_RUNTIME_DIR:-/tmp}/carapace-$UID/ctl.sock:
    where carapace-run puts the socket unless told otherwise."""
    if os.environ.get(CTL_SOCKET_ENV):
        return Path(os.environ[CTL_SOCKET_ENV])
    base = os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    return Path(base) / f"carapace-{os.getuid()}" / "ctl.sock"


def default_stream_socket(ctl_socket=None):
    """$CARAPACE_STREAM_SOCKET, else beside the control socket @ctl_socket
    (default_ctl_socket() if None): stream.sock beside a ctl.sock, NAME.stream.sock
    beside any other NAME.sock, so that hosts with their own control sockets in
    one directory (/tmp) never share a stream socket."""
    if os.environ.get(STREAM_SOCKET_ENV):
        return Path(os.environ[STREAM_SOCKET_ENV])
    ctl = Path(ctl_socket or default_ctl_socket())
    if ctl.name == "ctl.sock":
        return ctl.parent / STREAM_SOCKET_NAME
    return ctl.with_name(ctl.stem + ".stream" + (ctl.suffix or ".sock"))


def cache_dir():
    """$CARAPACE_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/carapace: firmware and
    images that make deps downloaded."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "carapace"


def default_hyp():
    """$CARAPACE_HYP (relative to the working directory), else
    build/carapace.bin of the source tree the tools came from."""
    if os.environ.get(HYP_ENV):
        return Path(os.environ[HYP_ENV]).absolute()
    return SOURCE_ROOT / "build" / "carapace.bin"
