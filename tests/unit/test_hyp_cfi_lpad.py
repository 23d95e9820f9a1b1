# SPDX-License-Identifier: MIT
"""Every indirect-branch target of the CFI build has its landing pad
(docs/security.md, "The hypervisor's own CFI"): a scan of
build/cfi/carapace.elf (make cfi), read here without any disassembler.

Zicfilp: a jalr/jr/c.jr/c.jalr through any register but ra (x1), t0 (x5) or
t2 (x7) makes the CPU expect an `lpad` (auipc x0, imm: a 4-byte aligned
word whose low 12 bits are 0x017) at its target, else a software-check
exception. So:
- every such jump whose target the code itself gives (auipc rX; jalr
  ...(rX)) must land on an lpad;
- every function whose address is taken (in a data word, or made in code by
  auipc rX + addi rY, rX) must start with one, since a call through a
  pointer may reach it; except the entries below, never jumped to;
- the image is a CFI build at all (lpads and shadow-stack pushes in it).
Jumps through a register loaded from memory cannot be resolved here: they
are what the second rule covers.

A missing build/cfi/carapace.elf skips, which fails under CI (CI=true)."""

import struct
from pathlib import Path

import pytest

pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parents[2]
CFI_ELF = ROOT / "build" / "cfi" / "carapace.elf"

RA, T0, T2 = 1, 5, 7
EXEMPT_RS1 = {RA, T0, T2}   # returns and software-guarded jumps: no landing pad
LPAD_0 = 0x00000017         # lpad 0 (auipc x0, 0)
NOP = 0x00000013
SSPUSH_RA = 0xce104073
# Address-taken entries that are never the target of an indirect jump.
NOT_JUMPED_TO = {
    "__trap_vector": "stvec: entered by traps, which clear ELP",
    "__trap_vector_ss": "stvec of a hart whose shadow stack is on: entered by traps",
    "__spelp_probe_exit": "stvec of the boot self-test (cfi/spelp_selftest.c)",
    "_secondary_start": "entered by the firmware's mret (SBI HSM hart start)",
    "_start": "entered by the firmware's mret",
}

SHF_ALLOC, SHF_EXECINSTR, SHT_NOBITS, SHT_SYMTAB = 0x2, 0x4, 8, 2
STT_NOTYPE, STT_FUNC, STB_GLOBAL = 0, 2, 1


class Elf:
    """The sections and function symbols of a little-endian ELF64 (@data)."""

    def __init__(self, data):
        assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "not an ELF64 LE file"
        self.data = bytearray(data)
        shoff = struct.unpack_from("<Q", data, 0x28)[0]
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
        raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
               for i in range(shnum)]
        names = raw[shstrndx][4]
        self.sections = []
        for (name, typ, flags, addr, off, size, link, _, _, _) in raw:
            end = data.index(b"\0", names + name)
            self.sections.append({"name": data[names + name:end].decode(), "type": typ,
                                  "flags": flags, "addr": addr, "off": off, "size": size,
                                  "link": link})
        # name -> (address, size): C functions, and the global labels of
        # the assembly (no .type there) in a code section
        self.funcs = {}
        for s in self.sections:
            if s["type"] != SHT_SYMTAB:
                continue
            strtab = self.sections[s["link"]]["off"]
            for i in range(s["size"] // 24):
                st_name, info, _, shndx, value, size = struct.unpack_from("<IBBHQQ", data,
                                                                          s["off"] + 24 * i)
                in_code = shndx < len(self.sections) and \
                    self.sections[shndx]["flags"] & SHF_EXECINSTR
                if info & 0xf == STT_FUNC or (info & 0xf == STT_NOTYPE and
                                              info >> 4 == STB_GLOBAL and in_code):
                    end = data.index(b"\0", strtab + st_name)
                    self.funcs[data[strtab + st_name:end].decode()] = (value, size)

    def code(self):
        return [s for s in self.sections if s["flags"] & SHF_EXECINSTR and s["size"]]

    def data_sections(self):
        return [s for s in self.sections if s["flags"] & SHF_ALLOC and
                not s["flags"] & SHF_EXECINSTR and s["type"] != SHT_NOBITS and s["size"]]

    def word(self, addr):
        """The 32-bit word at @addr in a code section, or None."""
        for s in self.code():
            if s["addr"] <= addr and addr + 4 <= s["addr"] + s["size"]:
                return struct.unpack_from("<I", self.data, s["off"] + addr - s["addr"])[0]
        return None

    def patch(self, addr, word):
        for s in self.code():
            if s["addr"] <= addr < s["addr"] + s["size"]:
                struct.pack_into("<I", self.data, s["off"] + addr - s["addr"], word)
                return
        raise KeyError(hex(addr))


def sext(value, bits):
    return value - (1 << bits) if value & (1 << (bits - 1)) else value


def instructions(elf):
    """(pc, length, encoding) of every instruction, a linear sweep of the
    code sections (GCC puts no data there; asm padding decodes as 16-bit)."""
    for s in elf.code():
        body, pc = bytes(elf.data[s["off"]:s["off"] + s["size"]]), 0
        while pc + 2 <= len(body):
            half = struct.unpack_from("<H", body, pc)[0]
            if half & 3 == 3 and pc + 4 <= len(body):
                yield s["addr"] + pc, 4, struct.unpack_from("<I", body, pc)[0]
                pc += 4
            else:
                yield s["addr"] + pc, 2, half
                pc += 2


def is_lpad(word):
    return word is not None and word & 0xfff == LPAD_0


def scan(elf):
    """(indirect jumps [(pc, rs1, target or None)], addresses made in code
    [(pc, address)], lpad count, sspush count)."""
    insns = list(instructions(elf))
    jumps, made, lpads, pushes = [], [], 0, 0
    for i, (pc, n, w) in enumerate(insns):
        if n == 4 and is_lpad(w):
            lpads += pc % 4 == 0
        if n == 4 and w == SSPUSH_RA:
            pushes += 1
        if n == 2:
            # c.jr / c.jalr: 100x rs1 00000 10, rs1 != 0
            if w & 0xe07f == 0x8002 and (w >> 7) & 31:
                rs1 = (w >> 7) & 31
                if rs1 not in EXEMPT_RS1:
                    jumps.append((pc, rs1, None))
            continue
        opcode, rd, rs1 = w & 0x7f, (w >> 7) & 31, (w >> 15) & 31
        if opcode == 0x67 and (w >> 12) & 7 == 0 and rs1 not in EXEMPT_RS1:     # jalr
            target = None
            prev = insns[i - 1] if i else None
            if prev and prev[1] == 4 and prev[2] & 0x7f == 0x17 and (prev[2] >> 7) & 31 == rs1:
                target = prev[0] + sext(prev[2] & 0xfffff000, 32) + sext(w >> 20, 12)
            jumps.append((pc, rs1, target))
        if opcode == 0x17 and rd:       # auipc rd: an addi from it is an address
            for (pc2, n2, w2) in insns[i + 1:i + 7]:
                if n2 == 4 and w2 & 0x707f == 0x13 and (w2 >> 15) & 31 == rd:
                    made.append((pc, pc + sext(w & 0xfffff000, 32) + sext(w2 >> 20, 12)))
                    break
                if n2 == 4 and (w2 >> 7) & 31 == rd and w2 & 0x7f not in (0x23, 0x63):
                    break       # rd written by something else first
    return jumps, made, lpads, pushes


def data_words(elf):
    """Every 8-byte aligned word of the loaded data sections."""
    for s in elf.data_sections():
        for off in range(0, s["size"] - 7, 8):
            if (s["addr"] + off) % 8 == 0:
                yield struct.unpack_from("<Q", elf.data, s["off"] + off)[0]


def problems(elf):
    """What breaks the rules of the module docstring, one text each."""
    jumps, made, lpads, pushes = scan(elf)
    found = []
    if lpads < 100 or pushes < 100:
        found.append(f"not a CFI build: {lpads} lpads, {pushes} sspush ra")
    for pc, rs1, target in jumps:
        if target is not None and (target % 4 or not is_lpad(elf.word(target))):
            found.append(f"jalr at {pc:#x} through x{rs1} to {target:#x}: no lpad there")
    by_addr = {}
    for name, (addr, _) in elf.funcs.items():
        by_addr.setdefault(addr, []).append(name)
    taken = {a for a in data_words(elf) if a in by_addr}
    taken |= {a for _, a in made if a in by_addr}
    for addr in sorted(taken):
        names = by_addr[addr]
        if any(n in NOT_JUMPED_TO for n in names):
            continue
        if addr % 4 or not is_lpad(elf.word(addr)):
            found.append(f"{'/'.join(sorted(names))} at {addr:#x}: address taken, "
                         f"no lpad at its entry")
    return found


@pytest.fixture(scope="module")
def cfi_elf():
    if not CFI_ELF.is_file():
        pytest.skip(f"{CFI_ELF.relative_to(ROOT)} not built: run `make cfi`")
    return CFI_ELF.read_bytes()


def test_every_indirect_target_has_a_landing_pad(cfi_elf):
    elf = Elf(cfi_elf)
    assert problems(elf) == []


def test_the_scan_sees_the_code(cfi_elf):
    # enough found for the first test to mean something
    elf = Elf(cfi_elf)
    jumps, made, lpads, pushes = scan(elf)
    taken = {a for a in data_words(elf)} & {a for a, _ in elf.funcs.values()}
    assert len(taken) >= 20, f"only {len(taken)} functions in function-pointer tables"
    assert len([j for j in jumps if j[2] is None]) >= 20, "only a few pointer calls found"
    assert "__vcpu_enter" in elf.funcs and is_lpad(elf.word(elf.funcs["__vcpu_enter"][0]))


def test_a_function_pointer_target_without_lpad_is_found(cfi_elf):
    elf = Elf(cfi_elf)
    addrs = {a: n for n, (a, _) in elf.funcs.items()}
    victim = next(a for a in data_words(elf) if a in addrs and addrs[a] not in NOT_JUMPED_TO)
    elf.patch(victim, NOP)
    assert any(f"at {victim:#x}: address taken" in p for p in problems(elf)), addrs[victim]


def test_an_asm_entry_without_lpad_is_found(cfi_elf):
    # _secondary_start is exempt; an address-taken asm function is not
    elf = Elf(cfi_elf)
    jumps, made, _, _ = scan(elf)
    addrs = {a: n for n, (a, _) in elf.funcs.items()}
    made_funcs = [a for _, a in made if a in addrs and addrs[a] not in NOT_JUMPED_TO]
    assert made_funcs, "no function address made in code"
    elf.patch(made_funcs[0], NOP)
    assert any(f"at {made_funcs[0]:#x}: address taken" in p for p in problems(elf))


def test_a_resolved_jump_off_its_lpad_is_found(cfi_elf):
    # auipc a5, 0; jalr ra, 8(a5) written over the first two words of a
    # function: its target (8 bytes on) is no lpad
    elf = Elf(cfi_elf)
    start = elf.funcs["__vcpu_fp_save"][0]
    a5 = 15
    elf.patch(start, 0x17 | a5 << 7)
    elf.patch(start + 4, 0x67 | RA << 7 | a5 << 15 | 8 << 20)
    assert f"jalr at {start + 4:#x} through x15 to {start + 8:#x}: no lpad there" in problems(elf)


def test_a_plain_build_is_not_taken_for_a_cfi_one():
    plain = ROOT / "build" / "carapace.elf"
    if not plain.is_file():
        pytest.skip("build/carapace.elf not built: run `make`")
    assert any(p.startswith("not a CFI build") for p in problems(Elf(plain.read_bytes())))
