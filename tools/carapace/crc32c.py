# SPDX-License-Identifier: MIT
"""CRC32C (Castagnoli), the checksum of every snapshot section: a byte table,
and a slicing-by-8 path for long buffers on little-endian hosts."""

import array
import sys


# --- CRC32C ------------------------------------------------------------------------

CRC_POLY = 0x82F63B78          # Castagnoli, reflected


def _byte_table():
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ CRC_POLY if crc & 1 else crc >> 1
        table.append(crc)
    return table


_T8 = _byte_table()
_T16 = None                    # built on first use by a large buffer
_FAST_MIN = 4096
_FAST_OK = sys.byteorder == "little" and array.array("I").itemsize == 4


def _word_tables():
    """Two 65536-entry tables that take the CRC register through 4 bytes at a
    time: lo[v] advances the low half of the register (v) by 4 bytes, hi[v] the
    high half by 2 bytes."""
    global _T16
    if _T16 is None:
        def advance(crc, nbytes):
            for _ in range(nbytes):
                crc = _T8[crc & 0xFF] ^ (crc >> 8)
            return crc
        hi = [advance(v, 2) for v in range(65536)]
        lo = [_T8[c & 0xFF] ^ (c >> 8) for c in (_T8[c & 0xFF] ^ (c >> 8) for c in hi)]
        _T16 = (array.array("I", lo), array.array("I", hi))
    return _T16


def crc32c(data, crc=0):
    """CRC32C (Castagnoli) of @data (bytes-like), continuing from @crc, which is a
    finished CRC (0 to start): init 0xFFFFFFFF, reflected poly 0x82F63B78, final
    xor 0xFFFFFFFF.  crc32c(b"123456789") == 0xE3069283."""
    crc ^= 0xFFFFFFFF
    view = memoryview(data).cast("B")
    n = len(view)
    start = 0
    if _FAST_OK and n >= _FAST_MIN:
        lo, hi = _word_tables()
        start = n - n % 4
        for word in view[:start].cast("I"):
            x = crc ^ word
            crc = lo[x & 0xFFFF] ^ hi[x >> 16]
    table = _T8
    for byte in view[start:]:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


