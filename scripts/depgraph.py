#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""depgraph: the file-level dependency graph of the hypervisor, from its objects.

File A depends on file B when A's object uses a symbol (function or data) that
B's object defines.  Calls made through function pointers registered at run
time are not edges: that is how a lower layer reaches a higher one.

With --layers FILE (hyp/layers.txt: one layer a line, lowest first, its name
and then its folders), the folder of each file is its layer, and the check
fails on a file in no layer and on an upward edge (a file using a file of a
higher layer).  It always fails on a cycle (a strongly connected component of
more than one file), which within one layer the order does not rule out.
Prints every problem and exits 1 if there is any.

    scripts/depgraph.py [--nm NM] [--layers FILE] [--dot] OBJ...
"""
import argparse
import subprocess
import sys
from pathlib import Path


def symbols(nm, obj):
    out = subprocess.run([nm, obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRCVWGS":
            defined.add(parts[2])
    return defined, used


def name_of(obj):
    p = Path(obj)
    parts = p.with_suffix("").parts
    i = parts.index("hyp") if "hyp" in parts else len(parts) - 2
    return "/".join(parts[i + 1:])


def build_graph(nm, objs):
    defs, uses = {}, {}
    for obj in objs:
        d, u = symbols(nm, obj)
        n = name_of(obj)
        uses[n] = u
        for s in d:
            defs.setdefault(s, n)
    graph = {n: sorted({defs[s] for s in u if s in defs and defs[s] != n})
             for n, u in uses.items()}
    return graph


def parse_layers(text):
    """{folder: (rank, layer name)} from the layers file's text; rank 0 is the
    lowest layer. A folder named twice is an error: it would have two layers."""
    folders = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) < 2:
            raise ValueError(f"line {lineno}: layer {words[0]} has no folder")
        rank = len({r for r, _ in folders.values()})
        for folder in words[1:]:
            if folder in folders:
                raise ValueError(f"line {lineno}: folder {folder} is already in "
                                 f"layer {folders[folder][1]}")
            folders[folder] = (rank, words[0])
    return folders


def layer_of(folders, name):
    """(rank, layer name) of file @name ("folder/file"), or None if no layer has its folder."""
    folder, sep, _ = name.partition("/")
    return folders.get(folder) if sep else None


def unplaced(graph, folders):
    return sorted(n for n in graph if layer_of(folders, n) is None)


def upward_edges(graph, folders):
    """(file, its layer, used file, that file's layer) for every edge to a higher layer."""
    out = []
    for n in sorted(graph):
        mine = layer_of(folders, n)
        for s in graph[n]:
            theirs = layer_of(folders, s)
            if mine and theirs and theirs[0] > mine[0]:
                out.append((n, mine[1], s, theirs[1]))
    return out


def sccs(graph):
    """Tarjan's algorithm, iterative."""
    index, low, onstack, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                onstack.add(node)
            succ = graph.get(node, [])
            if i < len(succ):
                work.append((node, i + 1))
                nxt = succ[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in onstack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    onstack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                out.append(sorted(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nm", default="riscv64-unknown-elf-gcc-nm")
    ap.add_argument("--layers", help="the layers file (hyp/layers.txt)")
    ap.add_argument("--dot", action="store_true", help="print the graph in DOT")
    ap.add_argument("objs", nargs="+")
    args = ap.parse_args(argv)
    graph = build_graph(args.nm, args.objs)
    bad = 0
    if args.dot:
        print("digraph hyp {")
        for n, succ in sorted(graph.items()):
            for s in succ:
                print(f'  "{n}" -> "{s}";')
        print("}")
    cycles = [c for c in sccs(graph) if len(c) > 1]
    for c in cycles:
        print(f"cycle among {len(c)} files: {' '.join(c)}")
        for n in c:
            print(f"  {n} -> {' '.join(s for s in graph[n] if s in c)}")
    bad += len(cycles)
    if args.layers:
        folders = parse_layers(Path(args.layers).read_text())
        for n in unplaced(graph, folders):
            print(f"{n}: in no layer (its folder is not in {args.layers})")
        for n, mine, s, theirs in upward_edges(graph, folders):
            print(f"upward: {n} ({mine}) uses {s} ({theirs})")
        bad += len(unplaced(graph, folders)) + len(upward_edges(graph, folders))
    if not bad:
        layered = f", no upward dependency in {args.layers}" if args.layers else ""
        print(f"no dependency cycle{layered} among {len(graph)} files")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
