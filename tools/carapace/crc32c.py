# SPDX-License-Identifier: MIT
"""CRC32C (Castagnoli), the checksum of every snapshot section: a byte table,
a path taking 4 bytes a step for buffers of a few KiB on little-endian
hosts, and for long buffers (a MEMORY section) many lanes at once, each
step one byte of every lane in a few whole-buffer C operations.  The 4-byte
steps did 30 MB/s, the lanes 5-7 times that: `carapace-ctl restore` checks
the whole file before it sends it (docs/performance.md, "Stream
throughput")."""

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


# --- many lanes at once -------------------------------------------------------------
#
# The buffer is cut into LANES lanes of STEPS bytes.  Each lane's register is
# kept as 4 byte planes (plane k: byte k of every lane's register, one bytes
# object, lane i at index i), and a step advances every lane by one byte:
# idx = plane0 ^ column (the lanes' next bytes, a strided slice), then the
# byte table's 4 output bytes by bytes.translate().  Then the lanes are
# joined pairwise, A then B being shift(A, len B) ^ B, B's register from 0,
# where shift (running through zero bytes) is linear: 16 byte tables for a
# given length, made from the matrix of one zero byte by squaring.

_LANES_MIN = 16 * 1024         # shorter buffers: the word path is as fast
_LANE_BYTES = 64               # bytes per lane, always: the joins run through 64 << t
_PLANES = tuple(bytes((t >> (8 * k)) & 0xFF for t in _T8) for k in range(4))
_SHIFT_TABLES = {}             # 64 << t bytes of zeros -> the 16 tables that run through them


def _times(matrix, vector):
    """@matrix (32 columns) times @vector, over GF(2)."""
    out, j = 0, 0
    while vector:
        if vector & 1:
            out ^= matrix[j]
        vector >>= 1
        j += 1
    return out


def _zero_bytes_matrix(n):
    """The register after @n zero bytes, as 32 columns (bit j set, advanced)."""
    def one_byte(reg):
        for _ in range(8):
            reg = (reg >> 1) ^ CRC_POLY if reg & 1 else reg >> 1
        return reg
    power = [one_byte(1 << j) for j in range(32)]
    result = [1 << j for j in range(32)]
    while n:
        if n & 1:
            result = [_times(power, col) for col in result]
        n >>= 1
        if n:
            power = [_times(power, col) for col in power]
    return result


def _shift_tables(n):
    """tables[k][m][b]: byte m of the register whose byte k is b (others 0),
    after @n zero bytes."""
    tables = _SHIFT_TABLES.get(n)
    if tables is None:
        matrix = _zero_bytes_matrix(n)
        tables = []
        for k in range(4):
            cols = [0] * 256           # linear: b's image is that of its bits'
            for b in range(1, 256):
                low = b & -b
                cols[b] = cols[b ^ low] ^ matrix[8 * k + low.bit_length() - 1]
            tables.append([bytes((c >> (8 * m)) & 0xFF for c in cols) for m in range(4)])
        _SHIFT_TABLES[n] = tables
    return tables


def _lanes(view, reg):
    """The register after the first lanes * _LANE_BYTES bytes of @view (lanes:
    the largest power of two that fits, so at least half of it) from @reg,
    and how many bytes that was."""
    lanes = 1 << ((len(view) // _LANE_BYTES).bit_length() - 1)
    steps = _LANE_BYTES
    raw = bytes(view[:lanes * steps])
    get, put = int.from_bytes, int.to_bytes
    p0, p1, p2, p3 = _PLANES
    # lane 0 starts from @reg, the others from 0
    c0, c1, c2, c3 = reg & 0xFF, (reg >> 8) & 0xFF, (reg >> 16) & 0xFF, reg >> 24
    for j in range(steps):
        idx = put(c0 ^ get(raw[j::steps], "little"), lanes, "little")
        c0 = get(idx.translate(p0), "little") ^ c1
        c1 = get(idx.translate(p1), "little") ^ c2
        c2 = get(idx.translate(p2), "little") ^ c3
        c3 = get(idx.translate(p3), "little")
    planes = [put(c, lanes, "little") for c in (c0, c1, c2, c3)]
    span = steps
    while lanes > 1:
        tables = _shift_tables(span)
        first = [p[0::2] for p in planes]
        lanes //= 2
        joined = []
        for m in range(4):
            acc = get(planes[m][1::2], "little")
            for k in range(4):
                acc ^= get(first[k].translate(tables[k][m]), "little")
            joined.append(put(acc, lanes, "little"))
        planes, span = joined, span * 2
    return planes[0][0] | planes[1][0] << 8 | planes[2][0] << 16 | planes[3][0] << 24, span


def crc32c(data, crc=0):
    """CRC32C (Castagnoli) of @data (bytes-like), continuing from @crc, which is a
    finished CRC (0 to start): init 0xFFFFFFFF, reflected poly 0x82F63B78, final
    xor 0xFFFFFFFF.  crc32c(b"123456789") == 0xE3069283."""
    crc ^= 0xFFFFFFFF
    view = memoryview(data).cast("B")
    while len(view) >= _LANES_MIN:
        crc, done = _lanes(view, crc)
        view = view[done:]
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


