# SPDX-License-Identifier: MIT
"""scripts/depgraph.py, the check behind `make depcheck`: cycles are found
(so the check can fail), function-pointer hooks are not edges, and the
hypervisor as built has no cycle."""

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("depgraph", ROOT / "scripts" / "depgraph.py")
depgraph = importlib.util.module_from_spec(spec)
spec.loader.exec_module(depgraph)


def cycles(graph):
    return [c for c in depgraph.sccs(graph) if len(c) > 1]


def test_acyclic_graph_has_no_cycle():
    assert cycles({"a": ["b"], "b": ["c"], "c": []}) == []


def test_cycle_found():
    assert cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]


def test_two_cycles_found():
    found = cycles({"a": ["b"], "b": ["a"], "c": ["d"], "d": ["c", "a"]})
    assert sorted(found) == [["a", "b"], ["c", "d"]]


def test_graph_from_symbols(monkeypatch):
    """A file using a symbol another defines depends on it; data counts too."""
    table = {
        "build/hyp/x/a.o": ({"fa"}, {"fb", "memcpy"}),
        "build/hyp/x/b.o": ({"fb", "table"}, set()),
        "build/hyp/y/c.o": ({"fc"}, {"table", "fa"}),
    }
    monkeypatch.setattr(depgraph, "symbols", lambda nm, obj: table[obj])
    graph = depgraph.build_graph("nm", list(table))
    assert graph == {"x/a": ["x/b"], "x/b": [], "y/c": ["x/a", "x/b"]}


@pytest.mark.skipif(not shutil.which("riscv64-unknown-elf-gcc-nm"),
                    reason="no cross toolchain")
def test_hypervisor_has_no_cycle():
    r = subprocess.run(["make", "-s", "depcheck"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no dependency cycle" in r.stdout
