"""The links between objects: which ids an object names, and everything reachable from roots.

Pack (what to carry), gc (what to keep) and fsck (what must resolve) all use this one walk, so
they can never disagree about what "reachable" means. `references` reads only the decoded
value: it knows field names, not bytes. Only full 64-hex ids count as links; anything else in
an id-ish field (a provider's `toolu_...` call id, an abbreviated id) is data, not a link.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .. import codec
from ..errors import CorruptObject, ObjectNotFound

#: Event payload keys whose values name objects (a string or a list of strings).
EVENT_PAYLOAD_LINKS = ("session", "memory_id", "evidence_refs", "artifact_ref", "artifact_id",
                       "workspace")
#: Causality keys that hold a provider's identifier, never an object id.
NOT_LINKS = frozenset({"tool_call_id"})
#: Compaction fields that name objects.
COMPACTION_LINKS = ("first_event", "last_event", "first_kept", "previous")
#: Session fields that name objects (a fork names the session and event it came from).
SESSION_LINKS = ("parent_session", "spawn_event")


_HEX = frozenset("0123456789abcdef")


def is_id(value: Any) -> bool:
    """codec.is_full_id, fast enough for the hot loop of a walk over millions of objects."""
    return type(value) is str and len(value) == codec.ID_HEX_LEN and _HEX.issuperset(value)


def _ids(value: Any, out: list[str]) -> None:
    """Append `value` if it is a full id, or each full id in it if it is a list."""
    if type(value) is str:
        if is_id(value):
            out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            if is_id(v):
                out.append(v)


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def _event(value: Any, out: list[str]) -> None:
    _ids(_get(value, "parents"), out)
    causality = _get(value, "causality")
    if isinstance(causality, dict):
        for key in sorted(causality):
            if key not in NOT_LINKS:
                _ids(causality[key], out)
    payload = _get(value, "payload")
    if isinstance(payload, dict):
        for key in EVENT_PAYLOAD_LINKS:
            _ids(payload.get(key), out)
        _source(payload.get("source"), out)


def _source(source: Any, out: list[str]) -> None:
    """An imported line (docs/format.md "Imported records") needs the messages and blobs its
    stored form leaves out: without them the line cannot be rebuilt for export."""
    if isinstance(source, dict):
        _ids(source.get("messages"), out)
        blobs = source.get("blobs")
        if isinstance(blobs, dict):
            _ids(list(blobs.values()), out)


def _message(value: Any, out: list[str]) -> None:
    blocks = _get(value, "blocks")
    for block in blocks if isinstance(blocks, list) else ():
        if isinstance(block, dict):
            _ids(block.get("output_ref"), out)
            _ids(block.get("artifact_ref"), out)


def _compaction(value: Any, out: list[str]) -> None:
    for key in COMPACTION_LINKS:
        _ids(_get(value, key), out)
    _ids(_get(value, "source_event_ids"), out)
    results = _get(value, "tool_results")
    for item in results if isinstance(results, list) else ():
        _ids(_get(item, "artifact_ref"), out)


def _chunks(value: Any, out: list[str]) -> None:
    chunks = _get(value, "chunks")
    for item in chunks if isinstance(chunks, list) else ():
        if isinstance(item, list) and item:
            _ids(item[0], out)


def _workspace(value: Any, out: list[str]) -> None:
    """A workspace snapshot (docs/format.md "Workspace snapshots"): its base and the content of
    each git object it adds; git ids themselves are not links."""
    _ids(_get(value, "base"), out)
    objects = _get(value, "objects")
    for item in objects if isinstance(objects, list) else ():
        if isinstance(item, list) and len(item) == 2:
            _ids(item[1], out)


def _fields(*keys: str) -> Callable[[Any, list[str]], None]:
    def walk(value: Any, out: list[str]) -> None:
        for key in keys:
            _ids(_get(value, key), out)
    return walk


def _operation(value: Any, out: list[str]) -> None:
    """The ids an operation's ref moves name (old and new). Its parent operation is not a link:
    gc keeps young operations by age (docs/format.md "The operation log"), not by chain."""
    changes = _get(value, "changes")
    for change in changes if isinstance(changes, list) else ():
        if isinstance(change, list) and len(change) == 3:
            _ids(change[1], out)
            _ids(change[2], out)


_WALKERS: dict[str, Callable[[Any, list[str]], None]] = {
    "event": _event,
    "message": _message,
    "artifact": _fields("content"),
    "chunks": _chunks,
    "compaction": _compaction,
    "snapshot": _fields("event"),
    "session": _fields(*SESSION_LINKS),
    "memory": _fields("source_refs", "supersedes"),
    "operation": _operation,
    "workspace": _workspace,
    "record": _source,  # older imports: a separate record object with the same blobs map
}


def references(type_name: str, value: Any) -> list[str]:
    """The ids `value` (a decoded object of `type_name`) names, in a fixed order, no duplicates.

    Blobs, dictionaries, bundles and plain values name nothing that must exist.
    """
    walker = _WALKERS.get(type_name)
    if walker is None:
        return []
    out: list[str] = []
    walker(value, out)
    if len(out) > 1:
        out = list(dict.fromkeys(out))
    return out


def has_links(type_name: str) -> bool:
    return type_name in _WALKERS


def object_references(type_name: str, body: bytes) -> list[str]:
    """`references` of a stored body (decoding it only for types that can name anything)."""
    if type_name not in _WALKERS:
        return []
    return references(type_name, codec.unpack_value(body))


def reachable(store, roots: Iterable[str], *, missing: dict[str, str] | None = None,
              stop: Callable[[str], bool] | None = None,
              progress: Callable[[int], None] | None = None, every: int = 10_000,
              visit: Callable[[str, str, Any], None] | None = None) -> set[str]:
    """Every id reachable from `roots` through `references`, roots included (iterative).

    `missing`: if given, an absent object is recorded there as {missing id: id that named it
    (or "" for a root)} instead of raising ObjectNotFound. `stop(id)`: if true, the id is not
    entered or followed (a thin pack's boundary). `progress(n)` is called every `every` objects.
    `visit(id, type, decoded value)` sees every object (value None for types naming nothing).
    """
    seen: set[str] = set()
    stack: list[tuple[str, str]] = []
    for r in roots:
        if r not in seen and (stop is None or not stop(r)):
            seen.add(r)
            stack.append((r, ""))
    get_raw = store.get_raw
    n = 0
    while stack:
        obj_id, named_by = stack.pop()
        try:
            type_name, body = get_raw(obj_id)
        except ObjectNotFound:
            if missing is None:
                where = f" (named by {named_by})" if named_by else ""
                raise ObjectNotFound(f"no object {obj_id}{where}", id=obj_id) from None
            missing.setdefault(obj_id, named_by)
            continue
        n += 1
        if progress is not None and n % every == 0:
            progress(n)
        if type_name not in _WALKERS:
            if visit is not None:
                visit(obj_id, type_name, None)
            continue
        try:
            value = codec.unpack_value(body)
        except CorruptObject:
            if missing is None:
                raise
            missing.setdefault(obj_id, named_by)  # unreadable counts as absent
            continue
        if visit is not None:
            visit(obj_id, type_name, value)
        for ref in references(type_name, value):
            if ref not in seen and (stop is None or not stop(ref)):
                seen.add(ref)
                stack.append((ref, obj_id))
    if progress is not None:
        progress(n)
    if missing:
        seen.difference_update(missing)
    return seen
