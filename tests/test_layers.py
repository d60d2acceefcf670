"""Layers import one way: codec → objects → store → refs → repo → features → maintenance →
manager → porcelain → cli, with no cycles, and the library never imports click.

Every import in ctxstore/ and cli/ (module level or inside a function) is checked."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LAYERS = [
    {"errors", "codec", "clock", "lockfile", "userfiles", "lazyattrs", "jsonparse"},
    {"objects"},
    {"store", "chunking"},
    {"refs"},
    {"config", "repo"},
    {"state", "context", "trace", "compaction", "importers", "transfer", "integrations",
     "memory", "retrieval", "workspace", "gitbridge", "redaction", "subagents", "convert",
     "search"},
    {"maintenance"},
    {"manager"},
    {"porcelain"},
    {"viewer"},
    {"cli"},
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def _modules():
    for path in sorted((ROOT / "ctxstore").rglob("*.py")):
        rel = path.relative_to(ROOT / "ctxstore").with_suffix("")
        yield ".".join(("ctxstore", *rel.parts)), path
    for path in sorted((ROOT / "cli").rglob("*.py")):
        rel = path.relative_to(ROOT / "cli").with_suffix("")
        yield ".".join(("ctxstore", "cli", *rel.parts)), path


def _imports(mod: str, path: Path) -> set[str]:
    pkg = mod.split(".")
    if path.name != "__init__.py":
        pkg = pkg[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[:len(pkg) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.add(target)
            out.update(f"{target}.{a.name}" for a in node.names)
    return out


def _unit(mod: str) -> str | None:
    """The layer unit of a ctxstore module: its first component below ctxstore."""
    parts = mod.split(".")
    if parts[0] != "ctxstore" or len(parts) < 2:
        return None
    return parts[1]


GRAPH = {mod: _imports(mod, path) for mod, path in _modules()}


def test_every_unit_has_a_layer():
    units = {_unit(m) for m in GRAPH} - {"__init__", None}
    assert units <= set(RANK), f"give these a layer in tests/test_layers.py: {units - set(RANK)}"


def test_imports_go_one_way():
    bad = []
    for mod, targets in GRAPH.items():
        src = _unit(mod)
        if src in (None, "__init__"):
            continue
        for t in targets:
            dst = _unit(t)
            if dst in RANK and RANK[dst] > RANK[src]:
                bad.append(f"{mod} imports {t} ({src} is below {dst})")
    assert not bad, "\n".join(sorted(set(bad)))


def test_no_import_cycles_between_units():
    edges = {}
    for mod, targets in GRAPH.items():
        src = _unit(mod)
        for t in targets:
            dst = _unit(t)
            if src in RANK and dst in RANK and dst != src:
                edges.setdefault(src, set()).add(dst)
    seen, stack = set(), []

    def visit(u):
        if u in stack:
            raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(u):] + [u]))
        if u in seen:
            return
        stack.append(u)
        for v in sorted(edges.get(u, ())):
            visit(v)
        stack.pop()
        seen.add(u)

    for u in sorted(edges):
        visit(u)


def _module_of(target: str) -> str | None:
    """The module an import target names (a package names its __init__), or None for a name
    inside a module or anything outside ctxstore."""
    for mod in (target, f"{target}.__init__"):
        if mod in GRAPH:
            return mod
    return None


def test_no_two_modules_import_each_other():
    """Within a unit too: two modules that import each other (even inside a function) are one
    module in two files; the lower half moves into a module both import (issue 30)."""
    deps = {mod: {_module_of(t) for t in targets} - {None, mod} for mod, targets in GRAPH.items()}
    assert len(deps) > 100 and sum(map(len, deps.values())) > 500  # the graph was read
    pairs = {tuple(sorted((a, b))) for a, targets in deps.items() for b in targets
             if a in deps.get(b, ())}
    assert not pairs, "these import each other:\n" + "\n".join(
        f"{a} <-> {b}" for a, b in sorted(pairs))


def test_library_never_imports_click():
    offenders = [m for m, targets in GRAPH.items()
                 if _unit(m) != "cli" and any(t == "click" or t.startswith("click.") for t in targets)]
    assert not offenders


#: The ref store's moving primitives: only the repository transaction (ctxstore/repo/) calls
#: them, so every ref move is journaled, atomic and in the operation log.
REF_MOVERS = frozenset({
    "set_if_equals", "_cas", "set_head_symbolic", "set_head_detached", "_write_head",
    "write_ref", "append_reflog", "_append_reflog", "replace_reflog", "write_journal",
    "remove_journal", "write_op_head",
})


def test_only_the_repository_layer_moves_refs():
    """Any use of a moving primitive — a call, a bound method passed along, inside a function
    or at module level — outside ctxstore/repo/ and the ref stores themselves is a failure."""
    bad = []
    for mod, path in _modules():
        unit = _unit(mod)
        if unit in ("repo", "refs"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = None
            if isinstance(node, ast.Attribute) and node.attr in REF_MOVERS:
                name = node.attr
            elif isinstance(node, ast.Name) and node.id in REF_MOVERS:
                name = node.id
            elif isinstance(node, ast.alias) and node.name.split(".")[-1] in REF_MOVERS:
                name = node.name
            elif isinstance(node, ast.Constant) and node.value in REF_MOVERS:
                name = node.value  # getattr(refs, "set_if_equals")
            if name:
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
    assert not bad, "move refs through repo.transaction() instead:\n" + "\n".join(bad)
