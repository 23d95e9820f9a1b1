# SPDX-License-Identifier: MIT
"""The seed corpora of the fuzz targets beyond the snapshot restore are what
tests/fuzz/make_more_seeds.py writes today (docs/fuzzing.md, "More
targets"). A corpus left behind by a format change fuzzes nothing useful:
the migration protocol went to version 6 while tests/fuzz/corpus/mig_recv/
still held version 5 streams, every one refused at the header. fdt_host is
left out: its seeds are compiled by dtc, whose output is its own."""

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parents[2]
FUZZ = ROOT / "tests" / "fuzz"


def load_writer():
    sys.path.insert(0, str(FUZZ))         # it imports make_seeds beside it
    try:
        spec = importlib.util.spec_from_file_location("make_more_seeds",
                                                      FUZZ / "make_more_seeds.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(FUZZ))


WRITER = load_writer()


@pytest.mark.parametrize("target", sorted(t for t in WRITER.TARGETS if t != "fdt_host"))
def test_corpus_is_what_the_script_writes(target):
    stale = []
    for name, data in WRITER.TARGETS[target]().items():
        path = FUZZ / "corpus" / target / name
        if not path.is_file() or path.read_bytes() != data:
            stale.append(name)
    assert not stale, (f"tests/fuzz/corpus/{target}/ is not what make_more_seeds.py writes "
                       f"({', '.join(stale[:5])}{' ...' if len(stale) > 5 else ''}): run "
                       f"/usr/bin/python3 tests/fuzz/make_more_seeds.py {target}")


def test_mig_recv_seeds_are_of_the_protocol_version():
    text = (ROOT / "include" / "abi" / "migration_format.h").read_text()
    version = next(int(line.split()[2]) for line in text.splitlines()
                   if line.split()[:2] == ["#define", "MIG_VERSION"])
    seed = (FUZZ / "corpus" / "mig_recv" / "copy-valid").read_bytes()
    # behind the 8-byte harness header: magic, then the u32 version
    assert seed[8:16] == b"CARAMIGR"
    assert int.from_bytes(seed[16:20], "little") == version
