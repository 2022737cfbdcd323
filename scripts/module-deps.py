#!/usr/bin/env python3
"""The dependencies among the proxy crate's top-level modules (issue 44, point 4).

A module depends on another when any of its files names `crate::other` (in a `use` or a path).
Prints each module's dependencies, then every cycle (strongly connected component of more than
one module). Exit status 1 when there is a cycle, so `--check` can gate a build once none is left.
Usage: scripts/module-deps.py [--check] [crates/proxy/src]
"""
import os
import re
import sys

def top_modules(src):
    mods = {}
    for name in os.listdir(src):
        path = os.path.join(src, name)
        if name.endswith(".rs") and name not in ("lib.rs", "main.rs"):
            mods[name[:-3]] = [path]
        elif os.path.isdir(path):
            files = []
            for root, _, names in os.walk(path):
                files += [os.path.join(root, n) for n in names if n.endswith(".rs")]
            mods[name] = files
    # foo.rs with a foo/ directory: one module
    for name in list(mods):
        d = os.path.join(src, name)
        if os.path.isdir(d) and os.path.exists(d + ".rs"):
            mods[name] = sorted(set(mods[name] + [d + ".rs"]))
    return mods

def strip_tests(text):
    # `#[cfg(test)] mod tests { ... }` at the end of a file: unit tests may reach anywhere.
    at = text.find("#[cfg(test)]\nmod tests")
    return text if at < 0 else text[:at]

def deps(mods):
    out = {}
    for name, files in mods.items():
        seen = set()
        for f in files:
            text = strip_tests(open(f, encoding="utf-8").read())
            text = re.sub(r"//[^\n]*", "", text)
            seen |= set(re.findall(r"\bcrate::([a-z_][a-z0-9_]*)", text))
            for m in re.finditer(r"use crate::\{([^}]*)\}", text):
                seen |= set(re.findall(r"\b([a-z_][a-z0-9_]*)\b", m.group(1)))
        out[name] = sorted(d for d in seen if d in mods and d != name)
    return out

def cycles(graph):
    index, low, stack, on, sccs, n = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))
    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return sccs

def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    src = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "crates", "proxy", "src")
    graph = deps(top_modules(src))
    for name in sorted(graph):
        print(f"{name:12} -> {', '.join(graph[name]) or '-'}")
    found = cycles(graph)
    print(f"\n{len(found)} cycle(s) among {len(graph)} top-level modules")
    for c in found:
        print("  " + " <-> ".join(c))
    if "--check" in sys.argv and found:
        sys.exit(1)

main()
