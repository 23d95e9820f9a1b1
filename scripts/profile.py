#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Attribute a tbprof profile (tests/bench/profile/tbprof.c: the instructions
each translation block start executed, cut into phases at a mark) to
functions, with the symbol tables of the images that ran: the hypervisor's
ELF, the guest kernel's System.map, a guest program's ELF.

    scripts/profile.py PROFILE --phase N [--elf carapace.elf] [--map System.map]
                       [--elf iobench] [--top 40] [--compare OTHER_PROFILE]

Prints the phase's instructions by function, largest first, each with the
image it belongs to; with --compare, the same for a second profile (the
baseline run) beside it. A block is credited to the function whose symbol
is the nearest at or below its start (a block never crosses a function)."""

import argparse
import bisect
import collections
import subprocess
import sys


def load_phases(path):
    """{phase: {(vaddr, hart): instructions}}; hart None unless the profile
    was taken with per_hart=on (a third field)"""
    phases, cur = {}, None
    with open(path) as f:
        for line in f:
            if line.startswith("phase "):
                cur = phases.setdefault(int(line.split()[1]), collections.Counter())
                continue
            addr, n, *hart = line.split()
            cur[int(addr, 16), int(hart[0]) if hart else None] += int(n)
    return phases


class Symbols:
    def __init__(self):
        self.addrs, self.names = [], []

    def add(self, pairs, image):
        for addr, name in pairs:
            self.addrs.append(addr)
            self.names.append(f"{image}:{name}")

    def done(self):
        order = sorted(range(len(self.addrs)), key=self.addrs.__getitem__)
        self.addrs = [self.addrs[i] for i in order]
        self.names = [self.names[i] for i in order]

    def name(self, addr):
        i = bisect.bisect_right(self.addrs, addr) - 1
        return self.names[i] if i >= 0 else "?"


def nm_pairs(elf):
    out = subprocess.run(["nm", "-n", elf], capture_output=True, text=True, check=True).stdout
    return map_pairs(out.splitlines())


def map_pairs(lines):
    for line in lines:
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            yield int(parts[0], 16), parts[2]


def by_function(counts, syms):
    """{name: instructions}; per hart ("hN:" before the name) when the
    profile has harts"""
    out = collections.Counter()
    for (addr, hart), n in counts.items():
        out[syms.name(addr) if hart is None else f"h{hart}:{syms.name(addr)}"] += n
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profile")
    ap.add_argument("--phase", type=int, required=True)
    ap.add_argument("--elf", action="append", default=[], help="an ELF image's symbols")
    ap.add_argument("--map", action="append", default=[], help="a System.map's symbols")
    ap.add_argument("--compare", help="a second profile (the baseline), same phase")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--per", type=float, default=1.0,
                    help="divide every figure by this (e.g. the phase's requests)")
    a = ap.parse_args()
    syms = Symbols()
    for elf in a.elf:
        syms.add(nm_pairs(elf), elf.rsplit("/", 1)[-1])
    for m in a.map:
        with open(m) as f:
            syms.add(map_pairs(f), "kernel")
    syms.done()
    main_f = by_function(load_phases(a.profile)[a.phase], syms)
    base_f = by_function(load_phases(a.compare)[a.phase], syms) if a.compare else None
    total = sum(main_f.values())
    print(f"phase {a.phase}: {total / a.per:,.0f} instructions"
          + (f" (baseline {sum(base_f.values()) / a.per:,.0f})" if base_f else ""))
    images = collections.Counter()
    for name, n in main_f.items():
        images[name.rsplit(":", 1)[0]] += n   # the image, per hart when there are harts
    for image, n in images.most_common():
        print(f"  {image:<24} {n / a.per:14,.0f}")
    print()
    for name, n in main_f.most_common(a.top):
        extra = f" {base_f.get(name, 0) / a.per:14,.0f}" if base_f is not None else ""
        print(f"{n / a.per:14,.0f}{extra}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
