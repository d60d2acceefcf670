"""What a store must keep, computed naively from docs/format.md — not with `links.reachable`
or `maintenance.gc.roots`, which gc, fsck and pack share and so cannot check each other.

- The object graph is a full walk over EVERY object in the store: each body is decoded with
  the codec and every full 64-hex id string anywhere in it (map values, list items, nested at
  any depth) that is the id of a stored object is an edge — except the types that name nothing
  (`blob`, `zdict` raw bytes; `bundle`, `value`: "name nothing that must exist") and values
  under `tool_call_id` (a provider's identifier, never an object id). No field list: a link the
  code's field list forgets is still an edge here, so a gc that loses it is caught.
- Roots are read from the files themselves (docs/format.md "Directory layout", "Refs and
  HEAD", "Reflogs", "Garbage collection" step 3): every ref file under `refs/`, HEAD (a
  detached id, or the ref it names), both ids of every reflog line that survives expiry, the
  `zdict` ids listed in `objects/dicts`, and the snapshot ids that `cache/snapshots/<xx>/<event
  id>` names for live events. Expiry follows the documented rule with its own ancestry walk:
  a line older than `expire` goes; one older than `expire_unreachable` goes unless its new id
  is an ancestor of (or equal to) the ref's current tip. Operations ("The operation log"):
  every operation on the first-parent chain from `op-head` whose `time` is within `expire` is
  a root; an operation's edges are the old and new ids of its `changes` only — its parent is
  not a link (gc keeps operations by age, not by chain).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from ctxstore import codec

HEX64 = re.compile(r"^[0-9a-f]{64}$")
ZERO = "0" * 64
NAME_NOTHING = frozenset({"blob", "zdict", "bundle", "value"})
DAY_S = 86_400
NOT_LINK_KEYS = frozenset({"tool_call_id"})
DAY_MS = 86_400_000


def _is_id(s) -> bool:
    return type(s) is str and bool(HEX64.match(s))


def _id_strings(value, out: set[str], key: str | None = None) -> None:
    if key in NOT_LINK_KEYS:
        return
    if isinstance(value, str):
        if _is_id(value):
            out.add(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            _id_strings(v, out, k)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _id_strings(v, out, key)


class ObjectGraph:
    """Every object of a store with its decoded body's id strings (naive full walk)."""

    def __init__(self, store) -> None:
        self.ids: set[str] = set(store)
        self.types: dict[str, str] = {}
        self.edges: dict[str, set[str]] = {}
        self.values: dict[str, object] = {}
        for oid in self.ids:
            type_name, body = store.get_raw(oid)
            assert codec.compute_id(type_name, body) == oid, f"{oid} does not hash to its id"
            self.types[oid] = type_name
            found: set[str] = set()
            if type_name not in NAME_NOTHING:
                value = codec.unpack_value(body)
                self.values[oid] = value
                if type_name == "operation" and isinstance(value, dict):
                    _id_strings(value.get("changes"), found)  # not `parents`
                else:
                    _id_strings(value, found)
            found.discard(oid)
            self.edges[oid] = found & self.ids

    def closure(self, roots) -> set[str]:
        seen = {r for r in roots if r in self.ids}
        todo = list(seen)
        while todo:
            for nxt in self.edges[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    def parents(self, oid: str) -> list[str]:
        value = self.values.get(oid)
        if self.types.get(oid) != "event" or not isinstance(value, dict):
            return []
        return [p for p in value.get("parents") or () if _is_id(p)]

    def is_ancestor(self, a: str, b: str) -> bool:
        seen, todo = set(), [b]
        while todo:
            x = todo.pop()
            if x == a:
                return True
            if x not in seen:
                seen.add(x)
                todo.extend(self.parents(x))
        return False


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8").strip()


def ref_files(ctx_dir: Path) -> dict[str, str]:
    """name -> id of every ref file under refs/ (lock files are not refs)."""
    out = {}
    base = ctx_dir / "refs"
    for dirpath, _dirs, files in os.walk(base):
        for fn in files:
            if fn.endswith(".lock"):
                continue
            path = Path(dirpath) / fn
            text = _read(path)
            if _is_id(text):
                out[path.relative_to(ctx_dir).as_posix()] = text
    return out


def head_id(ctx_dir: Path, refs: dict[str, str]) -> str | None:
    path = ctx_dir / "HEAD"
    text = _read(path) if path.exists() else ""
    if text.startswith("ref: "):
        return refs.get(text[5:].strip())
    return text if _is_id(text) else None


def reflog_lines(ctx_dir: Path) -> dict[str, list[tuple[str, str, int]]]:
    """ref name -> [(old, new, ts_ms)] of every reflog file under logs/."""
    out = {}
    base = ctx_dir / "logs"
    for dirpath, _dirs, files in os.walk(base):
        for fn in files:
            if fn.endswith(".lock"):
                continue
            path = Path(dirpath) / fn
            entries = []
            for line in path.read_text(encoding="utf-8").splitlines():
                head = line.split("\t", 1)[0].split(" ")
                if len(head) == 4 and head[2].isdigit():
                    entries.append((head[0], head[1], int(head[2])))
            out[path.relative_to(base).as_posix()] = entries
    return out


def roots(ctx_dir: str | os.PathLike, graph: ObjectGraph, *, now: float | None = None,
          expire_days: float | None = 90, unreachable_days: float | None = 30) -> set[str]:
    """Documented gc roots of the store at `ctx_dir` (a `.ctx` directory), snapshots aside."""
    ctx_dir = Path(ctx_dir)
    now_ms = (time.time() if now is None else now) * 1000
    refs = ref_files(ctx_dir)
    out = set(refs.values())
    head = head_id(ctx_dir, refs)
    if head:
        out.add(head)
    for name, entries in reflog_lines(ctx_dir).items():
        tip = head if name == "HEAD" else refs.get(name)
        for old, new, ts in entries:
            if expire_days is not None and ts < now_ms - expire_days * DAY_MS:
                continue
            if (unreachable_days is not None and ts < now_ms - unreachable_days * DAY_MS
                    and not (new != ZERO and tip and graph.is_ancestor(new, tip))):
                continue
            out.update(x for x in (old, new) if x != ZERO)
    out.update(young_operations(ctx_dir, graph, now=now, expire_days=expire_days))
    dicts = ctx_dir / "objects" / "dicts"
    if dicts.exists():
        for line in dicts.read_text(encoding="utf-8").splitlines():
            parts = line.split()
            if len(parts) == 2 and _is_id(parts[1]):
                out.add(parts[1])
    return out


def young_operations(ctx_dir: Path, graph: ObjectGraph, *, now: float | None = None,
                     expire_days: float | None = 90) -> set[str]:
    """Operations on the first-parent chain from `op-head` no older than `expire_days`."""
    from datetime import datetime

    path = Path(ctx_dir) / "op-head"
    op = _read(path) if path.exists() else ""
    cutoff = None if expire_days is None else (time.time() if now is None else now) - expire_days * DAY_S
    out: set[str] = set()
    while _is_id(op) and op in graph.values and op not in out:
        value = graph.values[op]
        try:
            when = datetime.fromisoformat(str(value.get("time", "")).replace("Z", "+00:00")).timestamp()
        except ValueError:
            when = float("inf")
        if cutoff is None or when >= cutoff:
            out.add(op)
        parents = value.get("parents") or []
        op = parents[0] if parents else ""
    return out


def snapshot_names(ctx_dir: Path) -> dict[str, str]:
    """event id -> snapshot id, from cache/snapshots/<xx>/<event id>."""
    out = {}
    base = Path(ctx_dir) / "cache" / "snapshots"
    for dirpath, _dirs, files in os.walk(base):
        for fn in files:
            text = _read(Path(dirpath) / fn)
            if _is_id(fn) and _is_id(text):
                out[fn] = text
    return out


def live(ctx_dir: str | os.PathLike, store, **expiry) -> set[str]:
    """Every object gc must keep: the closure of the roots, plus the snapshots the cache names
    for live events (and what they name)."""
    graph = ObjectGraph(store)
    keep = graph.closure(roots(ctx_dir, graph, **expiry))
    snaps = snapshot_names(Path(ctx_dir))
    while True:
        more = {s for e, s in snaps.items() if e in keep and s not in keep}
        if not more:
            return keep
        keep |= graph.closure(more)
