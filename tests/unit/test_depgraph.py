# SPDX-License-Identifier: MIT
"""scripts/depgraph.py, the check behind `make depcheck`: cycles, files in no
layer and upward dependencies are found (so the check can fail, shown on
objects compiled with a deliberate upward call and an unplaced file),
function-pointer hooks are not edges, the layers table of
docs/architecture.md is hyp/layers.txt's, and the hypervisor as built passes."""

import importlib.util
import re
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


LAYERS_TXT = ROOT / "hyp" / "layers.txt"
CROSS_GCC = "riscv64-unknown-elf-gcc"
needs_cross = pytest.mark.skipif(not shutil.which(CROSS_GCC + "-nm"), reason="no cross toolchain")


def test_layers_parsed_lowest_first():
    folders = depgraph.parse_layers("# comment\nlow  a b  # tail\n\nhigh c\n")
    assert folders == {"a": (0, "low"), "b": (0, "low"), "c": (1, "high")}


@pytest.mark.parametrize("text", ["low a\nhigh a\n", "low a\nempty\n"])
def test_layers_file_errors(text):
    """A folder in two layers, or a layer without a folder, is refused."""
    with pytest.raises(ValueError):
        depgraph.parse_layers(text)


def test_upward_edge_and_unplaced_file_found():
    folders = depgraph.parse_layers("low lib\nhigh boot\n")
    graph = {"lib/a": ["boot/b"], "boot/b": ["lib/a"], "boot/c": ["lib/a"],
             "stray/d": ["lib/a"], "top": []}
    assert depgraph.upward_edges(graph, folders) == [("lib/a", "low", "boot/b", "high")]
    assert depgraph.unplaced(graph, folders) == ["stray/d", "top"]


def compile_objs(tmp_path, sources):
    """Compile {"folder/name": C source} for the hypervisor's target, laid out
    as build/hyp/folder/name.o; returns the object paths."""
    objs = []
    for name, code in sources.items():
        src = tmp_path / "src" / (name.replace("/", "_") + ".c")
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text(code)
        obj = tmp_path / "build" / "hyp" / (name + ".o")
        obj.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([CROSS_GCC, "-c", "-O2", "-o", str(obj), str(src)], check=True)
        objs.append(str(obj))
    return objs


def depcheck(objs, capsys):
    rc = depgraph.main(["--nm", CROSS_GCC + "-nm", "--layers", str(LAYERS_TXT)] + objs)
    return rc, capsys.readouterr().out


LOW = "int low_value(void);\nint low_value(void) { return 1; }\n"
HOOK = ("int low_value(void);\nint (*low_hook)(void);\n"
        "int low_value(void) { return low_hook ? low_hook() : 1; }\n")
HIGH = ("int low_value(void);\nint high_value(void);\n"
        "int high_value(void) { return low_value() + 1; }\n")


@needs_cross
def test_objects_in_layer_order_pass(tmp_path, capsys):
    """The baseline of the two tests below: a boot file using a lib file, and a
    lib file reaching boot through a hook registered at run time."""
    objs = compile_objs(tmp_path, {"lib/low": HOOK, "boot/high": HIGH + (
        "extern int (*low_hook)(void);\nvoid wire(void);\n"
        "void wire(void) { low_hook = high_value; }\n")})
    rc, out = depcheck(objs, capsys)
    assert rc == 0, out
    assert "no upward dependency" in out


@needs_cross
def test_deliberate_upward_call_fails(tmp_path, capsys):
    """lib/ calling into boot/ directly (no cycle: boot does not use lib here)."""
    objs = compile_objs(tmp_path, {
        "lib/low": "int high_value(void);\nint low_value(void);\n"
                   "int low_value(void) { return high_value(); }\n",
        "boot/high": "int high_value(void);\nint high_value(void) { return 2; }\n"})
    rc, out = depcheck(objs, capsys)
    assert rc == 1
    assert "upward: lib/low (lib) uses boot/high (boot)" in out
    assert "cycle" not in out.replace("no dependency cycle", "")


@needs_cross
def test_file_in_no_layer_fails(tmp_path, capsys):
    objs = compile_objs(tmp_path, {"lib/low": LOW, "vmm/stray": HIGH})
    rc, out = depcheck(objs, capsys)
    assert rc == 1
    assert "vmm/stray: in no layer" in out


def docs_layers_table():
    """[(layer, [folders])] from the table under docs/architecture.md's "## Layers"."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:-1] for line in section.splitlines()
            if line.startswith("|") and not line.startswith("|---")]
    return [(cells[0].strip(), re.findall(r"`([a-z_]+)/`", cells[1])) for cells in rows[1:]]


def test_docs_layers_table_is_layers_txt():
    """The docs' table may add prose, never a different list or order."""
    folders = depgraph.parse_layers(LAYERS_TXT.read_text())
    want = {}
    for folder, (rank, name) in folders.items():
        want.setdefault((rank, name), []).append(folder)
    assert docs_layers_table() == [(name, fs) for (_, name), fs in sorted(want.items())]


def test_every_hypervisor_source_is_in_a_layer():
    """Without a build: each .c/.S under hyp/ sits in a folder of a layer."""
    folders = depgraph.parse_layers(LAYERS_TXT.read_text())
    sources = [p.relative_to(ROOT / "hyp") for p in (ROOT / "hyp").rglob("*")
               if p.suffix in (".c", ".S") and "include" not in p.parts]
    stray = [str(p) for p in sources if len(p.parts) != 2 or p.parts[0] not in folders]
    assert sources and stray == []


@needs_cross
def test_hypervisor_passes_depcheck():
    r = subprocess.run(["make", "-s", "depcheck"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no dependency cycle, no upward dependency" in r.stdout
