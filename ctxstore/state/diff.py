"""`state_diff(a, b)`: what changed between two projected states, section by section.

Used by `ctx diff` to show how two points of a session (or two branches) differ in meaning
rather than in bytes. Only sections that differ appear; the result is plain JSON-safe data.
"""

from __future__ import annotations

from typing import Any

from ..objects.frozen import thaw
from .model import AgentState

#: Sections compared, in the order they are reported.
DIFF_SECTIONS = ("goal", "plan", "constraints", "open_questions", "facts", "decisions", "files",
                 "errors", "validations", "artifacts", "subagents")


def _fields_diff(a: dict, b: dict) -> dict[str, Any]:
    """{field: {"before": x, "after": y}} for the fields of two maps that differ."""
    return {k: {"before": thaw(a.get(k)), "after": thaw(b.get(k))}
            for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}


def _list_diff(a: tuple, b: tuple) -> dict[str, list]:
    """{"added": [...], "removed": [...]} keeping each side's order; items compared whole.
    Lists with the same items in another order give {"reordered": True}."""
    sa, sb = set(map(_key, a)), set(map(_key, b))
    out = {"added": [thaw(x) for x in b if _key(x) not in sa],
           "removed": [thaw(x) for x in a if _key(x) not in sb]}
    out = {k: v for k, v in out.items() if v}
    return out or ({"reordered": True} if a != b else {})


def _key(x: Any) -> Any:
    # FrozenMap and tuples are hashable; anything else falls back to its repr.
    try:
        hash(x)
        return x
    except TypeError:
        return repr(x)


def state_diff(a: AgentState, b: AgentState) -> dict[str, Any]:
    """Sections of `b` that differ from `a`: maps as per-field before/after, lists as
    added/removed items, files per list (read, modified)."""
    out: dict[str, Any] = {}
    for name in DIFF_SECTIONS:
        va, vb = getattr(a, name), getattr(b, name)
        if va == vb:
            continue
        if name in ("goal", "plan"):
            out[name] = _fields_diff(va, vb)
        elif name in ("constraints", "files"):
            out[name] = {k: _list_diff(va.get(k, ()), vb.get(k, ())) for k in sorted(set(va) | set(vb))
                         if va.get(k) != vb.get(k)}
        else:
            out[name] = _list_diff(va, vb)
    return out
