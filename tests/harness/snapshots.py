# SPDX-License-Identifier: MIT
"""Snapshot files in tests: what carapace-snap inspect --json says of one, and
a CRC32C written here (not the tools'), so that a test crafting or checking
a file does not trust the code it checks."""

import json
import struct
import subprocess

from harness.paths import SNAP


def inspect(path):
    """carapace-snap inspect --json @path, parsed."""
    r = subprocess.run([str(SNAP), "inspect", "--json", str(path)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


SECTION_HEADER = 24            # struct snap_section


def sections(stream):
    """(offset, type, instance, length) of every section of @stream (the
    bytes of a snapshot, its 32-byte header first), read here, not by the
    tools."""
    out, off = [], 32
    while off + SECTION_HEADER <= len(stream):
        stype, inst, length = struct.unpack_from("<IIQ", stream, off)
        out.append((off, stype, inst, length))
        off += SECTION_HEADER + length
    return out


def crc32c(data):
    """CRC32C (Castagnoli), as the format uses it; written here so that the
    test does not trust the tool it checks."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF
