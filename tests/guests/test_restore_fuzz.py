# SPDX-License-Identifier: MIT
"""Restore fuzzer: execution, not only parsing (issue 22, section 3).

The libFuzzer target (tests/fuzz, snap_load) checks that the loader never
misreads bytes; this one checks what a snapshot the loader ACCEPTS does to a
real host. It takes valid snapshots of running guests (snap_cfi with 2 vCPUs,
CFI on, paging, shadow stack; the victim guest with its timer), mutates them
field by field (each CONFIG, VCPU and DEVICE field, from the format's own
field table in tools/carapace-snap: boundary values, single bits, all ones,
random words; 1 to 3 fields at once, section CRCs recomputed so that the
mutation reaches the hypervisor's checks), and restores every mutant
(unverified: the tool's checks are skipped on purpose) into one running
Carapace host beside a victim VM (tests/guests/victim.c: checks its memory,
code, timer and CFI state every round). A mutant that is accepted runs for
a moment beside the others (up to LIVE_MAX at once), then is destroyed.

Checked throughout: the host never faults (no hypervisor trap or PANIC, QEMU
alive), every restore gets an answer (ok or a refusal), every accepted VM can
be destroyed, the management channel answers, and the victim stays clean
(no FAIL line, its rounds go on).

Quick tier: RESTORE_FUZZ_COUNT (default 150) mutants; `make soak-restore`
runs 100 000. Seed: RESTORE_FUZZ_SEED (default: a new one, printed).
Figures go to build/restore-fuzz-summary.txt.
"""

import collections
import os
import random
import struct
import time

import pytest

from carapace.client import Client
from carapace.crc32c import crc32c
from carapace.errors import RemoteError, TransportError
from carapace.snapshot import cstr
from carapace.snapshot_format import (CONFIG, DEVICE, DEVICES, HEADER, SEC_CONFIG, SEC_DEVICE,
                                      SEC_END, SEC_VCPU, SECTION, VCPU)
from carapace.streams import restore_vm

from harness.hosts import SnapHost
from harness.paths import ROOT
from harness.report import append_summary
from harness.runs import vm_spec

pytestmark = pytest.mark.quick

COUNT = int(os.environ.get("RESTORE_FUZZ_COUNT", "150"))
SEED = int(os.environ.get("RESTORE_FUZZ_SEED", str(random.SystemRandom().randrange(1 << 32))))
KEEP = os.environ.get("RESTORE_FUZZ_KEEP") == "1"   # every mutant kept in the test's tmp dir
LIVE_MAX = 4            # accepted mutants running at once beside the victim
SUMMARY = ROOT / "build" / "restore-fuzz-summary.txt"
FAULT_MARKS = ("hypervisor trap", "PANIC", "store fault handler failed",
               "code should not be reached", "Segmentation fault", "Aborted")


class Mutator:
    """Field-level mutations of one snapshot stream (uncompressed)."""

    WIDTH = {"B": 1, "I": 4, "Q": 8}

    def __init__(self, stream, rng):
        self.base = bytes(stream)
        self.rng = rng
        self.fields = []        # (payload offset, section header offset, layout, field, kind, count)
        pos = HEADER.size
        devices = dict(DEVICES)
        while pos < len(stream):
            sec = SECTION.decode(stream, pos)
            payload = pos + SECTION.size
            if sec["type"] == SEC_CONFIG:
                self._add(payload, pos, CONFIG)
            elif sec["type"] == SEC_VCPU:
                self._add(payload, pos, VCPU)
            elif sec["type"] == SEC_DEVICE:
                dev = DEVICE.decode(stream, payload)
                self._add(payload, pos, DEVICE)
                layout = devices.get(cstr(dev["name"]))
                if layout:
                    self._add(payload + DEVICE.size, pos, layout)
            elif sec["type"] == SEC_END:
                break
            pos = payload + sec["length"]
        assert self.fields, "no sections found in the base snapshot"
        # half the picks go to the registers and settings the hypervisor
        # loads into the hart (CSRs, CFI, HSM, the VM's configuration)
        self.hot = [f for f in self.fields
                    if (f[2] is VCPU and f[3] not in ("gpr", "f")) or f[2] is CONFIG]

    def _add(self, base, section, layout):
        for fname, kind, count, off in layout.fields:
            if kind != "s" or fname in ("name", "bootargs", "rx", "id"):
                self.fields.append((base + off, section, layout, fname, kind, count))

    def value(self, old, width):
        bits = 8 * width
        top = (1 << bits) - 1
        r = self.rng
        choice = r.randrange(9)
        if choice == 0:
            return old ^ (1 << r.randrange(bits))
        if choice == 1:
            return r.choice([0, 1, top, top >> 1, 1 << (bits - 1)])
        if choice == 2:
            return (old + r.choice([-1, 1, 2, -2, 4096, -4096])) & top
        if choice == 3:
            return r.getrandbits(bits)
        if choice == 4:             # a small number: indices, states, levels
            return r.randrange(64)
        if choice == 5:             # a high bit of a CSR (WPRI, mode fields)
            return old | (1 << r.randrange(max(1, bits - 32), bits))
        if choice == 6:
            return old & ~(1 << r.randrange(bits)) & top
        if choice == 7:             # two bits flipped
            return old ^ (1 << r.randrange(bits)) ^ (1 << r.randrange(bits))
        return old ^ (r.getrandbits(bits) & r.getrandbits(bits))

    def mutate(self):
        buf = bytearray(self.base)
        touched, what = set(), []
        for _ in range(self.rng.choice([1, 1, 1, 2, 3])):
            pool = self.hot if self.rng.random() < 0.5 else self.fields
            base, section, layout, fname, kind, count = self.rng.choice(pool)
            idx = self.rng.randrange(count)
            if kind == "s":
                off = base + idx
                old = buf[off]
                new = self.value(old, 1)
                buf[off] = new
            else:
                width = self.WIDTH[kind]
                off = base + idx * width
                old = int.from_bytes(buf[off:off + width], "little")
                new = self.value(old, width)
                buf[off:off + width] = new.to_bytes(width, "little")
            touched.add(section)
            name = f"{layout.name}.{fname}" + (f"[{idx}]" if count > 1 else "")
            what.append(f"{name} 0x{old:x}->0x{new:x}")
        for section in touched:
            sec = SECTION.decode(buf, section)
            start = section + SECTION.size
            crc = crc32c(bytes(buf[start:start + sec["length"]]))
            struct.pack_into("<I", buf, section + SECTION.offset("crc32c"), crc)
        return bytes(buf), "; ".join(what)


def take_base(h, tmp_path, name, ready, live):
    h.wait_for(lambda l: l.startswith(f"[{name}] {ready}"), 90)
    path = tmp_path / f"{name}.snap"
    args = ["snapshot", name, str(path), "--no-compress"] + (["--live"] if live else [])
    rep, _, _ = h.ctl(*args)
    assert rep["ok"], rep
    return path.read_bytes()


class ConsoleTail:
    """The console lines not read yet: each mutant's checks look only at what
    its restore printed (rescanning the whole console made a 100 000-mutant
    soak quadratic)."""

    def __init__(self, host):
        self.host, self.seen = host, 0

    def read(self):
        with self.host.lock:
            new = self.host.lines[self.seen:]
        self.seen += len(new)
        return new


def host_faults(lines):
    return [l for l in lines if any(m in l for m in FAULT_MARKS)]


def test_restore_fuzz_execution(guests_built, tmp_path):
    rng = random.Random(SEED)
    print(f"restore fuzz: seed {SEED}, {COUNT} mutants")
    timeout = int(os.environ.get("RESTORE_FUZZ_TIMEOUT", "3600"))
    # the victim checks itself for as long as the run may last (its default is 10 minutes)
    victim = ("name=victim,kernel=build/guests/victim.bin,vcpus=1,mem=64M,cfi=trap,"
              f"bootargs=period_ms=10 round_ms=200 late_ms=5000 run_ms={timeout * 1000}")
    h = SnapHost(tmp_path, [victim,
                            vm_spec("base1", "snap_cfi", 2, "wait_ms=600000"),
                            vm_spec("base2", "demo", 1, "count=1000000 delay_us=50000")],
                 extra=["--expect", "victim=destroyed", "--persist"],
                 timeout=timeout)
    try:
        bases = [take_base(h, tmp_path, "base1", "SNAPSHOT-READY", False),
                 take_base(h, tmp_path, "base2", "hello from 0 (3/", True)]
        h.ctl("destroy", "base1")
        h.ctl("destroy", "base2")
        mutators = [Mutator(b, rng) for b in bases]
        client = Client(str(h.sock), timeout=60)
        outcomes = collections.Counter()
        reasons = collections.Counter()
        alive = collections.deque()
        mutant = tmp_path / "mutant.snap"
        log = open(tmp_path / "mutations.log", "w")     # every mutant, in order
        mutation = {}

        def destroy(name):
            """Every accepted mutant can be removed (one that shut down or
            was stopped by the hypervisor is still listed, down)."""
            try:
                client.request("destroy", {"vm": name})
            except (RemoteError, TransportError) as e:
                pytest.fail(f"destroy {name} ({mutation[name]}, kept as {name}.snap): {e}\n" +
                            "\n".join(h.snapshot()[-60:]))
        last_round, checked_round, last_check = None, None, time.monotonic()
        console = ConsoleTail(h)
        t0 = time.monotonic()
        for i in range(COUNT):
            data, what = rng.choice(mutators).mutate()
            mutant.write_bytes(data)
            if KEEP:
                (tmp_path / f"mutant-{i}.snap").write_bytes(data)
            log.write(f"{i} {what}\n")
            log.flush()
            name = f"m{i % 1000}"
            try:
                restore_vm(client, str(h.stream), mutant, name=name, verify=False,
                               stream_bytes=len(data))
                outcomes["accepted"] += 1
                alive.append(name)
                mutation[name] = f"mutant {i}: {what}"
                (tmp_path / f"{name}.snap").write_bytes(data)
            except RemoteError as e:
                outcomes["refused"] += 1
                reasons[e.code] += 1
            except Exception as e:  # noqa: BLE001: no answer at all is the host's fault
                pytest.fail(f"mutant {i} ({what}): restore raised {e!r}\n" +
                            "\n".join(h.snapshot()[-40:]))
            while len(alive) > LIVE_MAX:
                destroy(alive.popleft())
            new = console.read()
            faults = host_faults(new)
            if faults or h.proc.poll() is not None:
                pytest.fail(f"host fault after mutant {i} ({what}):\n" + "\n".join(faults or
                            h.snapshot()[-40:]))
            victim_lines = [l[len("[victim] "):] for l in new if l.startswith("[victim] ")]
            fails = [l for l in victim_lines if l.startswith("FAIL")]
            assert not fails, f"victim after mutant {i} ({what}): {fails}"
            rounds = [l for l in victim_lines if l.startswith("VICTIM: round")]
            if rounds:
                last_round = rounds[-1]
            if time.monotonic() - last_check > 5:
                last_check = time.monotonic()
                if last_round is None or last_round == checked_round:
                    pytest.fail(f"the victim printed no round for 5 s, after mutant {i} ({what});"
                                f" running beside it: " +
                                "; ".join(f"{n} = {mutation[n]}" for n in alive) +
                                "\n--- console ---\n" + "\n".join(h.snapshot()[-120:]))
                checked_round = last_round
            if (i + 1) % 1000 == 0:     # progress on a long soak
                print(f"restore fuzz: {i + 1}/{COUNT} in {time.monotonic() - t0:.0f} s, "
                      f"accepted {outcomes['accepted']}, refused {outcomes['refused']}", flush=True)
        for gone in alive:
            destroy(gone)
        late = console.read()
        assert not host_faults(late) and h.proc.poll() is None, "\n".join(late[-40:])
        assert not [l for l in late if l.startswith("[victim] FAIL")], late
        listing = client.request("list")
        assert listing.get("ok"), listing
        elapsed = time.monotonic() - t0
        rounds = [l for l in h.guest("victim") if l.startswith("VICTIM: round")]
        line = (f"restore fuzz seed {SEED}: {COUNT} mutants in {elapsed:.0f} s "
                f"({COUNT / elapsed:.1f}/s), accepted {outcomes['accepted']}, refused "
                f"{outcomes['refused']}, 0 host faults, victim clean ({rounds[-1] if rounds else '?'});"
                f" refusals by code: {dict(reasons.most_common(8))}")
        append_summary(SUMMARY, line)
    finally:
        h.kill()
        (tmp_path / "console.log").write_text("\n".join(h.snapshot()) + "\n")
