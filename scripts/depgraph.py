#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""depgraph: the file-level dependency graph of the hypervisor, from its objects.

File A depends on file B when A's object uses a symbol (function or data) that
B's object defines.  Calls made through function pointers registered at run
time are not edges: that is how a lower layer reaches a higher one without a
cycle.  Prints every cycle (strongly connected component of more than one
file) and exits 1 if there is any.

    scripts/depgraph.py [--nm NM] [--dot] OBJ...
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
    ap.add_argument("--dot", action="store_true", help="print the graph in DOT")
    ap.add_argument("objs", nargs="+")
    args = ap.parse_args(argv)
    graph = build_graph(args.nm, args.objs)
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
    if not cycles:
        print(f"no dependency cycle among {len(graph)} files")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main())
