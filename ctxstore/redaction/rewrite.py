"""Redacted copies of object graphs: every object reachable from some roots, with secrets
replaced, re-hashed bottom-up so every link names the redacted object.

Content addressing makes this the only honest way to redact a store's history: an object that
changes gets a new id, and so does everything that names it, up to the tips. An object with no
secret below it keeps its id (the same bytes hash the same), so a redacted pack of a clean
session is byte-identical to the plain one.

What is rewritten: every string in an object's value except full object ids (which are
remapped) and map keys; the bytes of a blob that are UTF-8 text (other bytes are counted in
`binary` and left as they are); a chunked content is read whole, redacted and chunked again
(so a secret across a chunk boundary is found). An artifact whose content changed gets the new
size. Events keep their generation; their parents are remapped.

Users: `ctx pack --redact`, `ctx export --redact` and a git push (through `redacted_view`,
writing into an overlay so the store is untouched), and `ctx redact --purge` (writing into the
store itself, through the repository transaction).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import codec
from ..errors import ObjectNotFound
from ..objects.links import has_links, is_id, references
from ..store.base import ObjectStore
from ..store.memory import MemoryStore
from .detect import Redactor, summarize


@dataclass
class RewriteReport:
    """What a rewrite found: counts only, never a secret."""

    objects: int = 0  # objects visited
    rewritten: int = 0  # objects that got a new id
    redactions: int = 0
    by_detector: dict[str, int] = field(default_factory=dict)
    by_type: dict[str, int] = field(default_factory=dict)  # redactions per object type
    binary: int = 0  # blobs that are not UTF-8 text, left unscanned
    #: workspace snapshots carried as they are: their files are git objects named by SHA-1
    #: of their bytes, so redacting them would break the snapshot (docs/redaction.md)
    workspace: int = 0
    bytes_scanned: int = 0
    engines: tuple[str, ...] = ()

    def add(self, type_name: str, fired: tuple[str, ...]) -> None:
        if not fired:
            return
        self.redactions += len(fired)
        self.by_type[type_name] = self.by_type.get(type_name, 0) + len(fired)
        for d, n in summarize(fired).items():
            self.by_detector[d] = self.by_detector.get(d, 0) + n

    def to_dict(self) -> dict[str, Any]:
        return {"objects": self.objects, "rewritten": self.rewritten,
                "redactions": self.redactions, "by_detector": dict(sorted(self.by_detector.items())),
                "by_type": dict(sorted(self.by_type.items())), "binary_unscanned": self.binary,
                "workspace_unredacted": self.workspace,
                "bytes_scanned": self.bytes_scanned, "engines": list(self.engines)}


class OverlayStore(ObjectStore):
    """Reads through to `base`; writes go to memory. The redacted copy of a pack or a push
    lives here, so the store itself never holds a rewritten object it did not ask for."""

    def __init__(self, base: ObjectStore) -> None:
        self.base = base
        self.added = MemoryStore()

    def _store_body(self, obj_id: str, type_name: str, body: bytes) -> None:
        self.added._store_body(obj_id, type_name, body)

    def get_raw(self, obj_id: str) -> tuple[str, bytes]:
        if obj_id in self.added:
            return self.added.get_raw(obj_id)
        return self.base.get_raw(obj_id)

    def __contains__(self, obj_id: object) -> bool:
        return obj_id in self.added or obj_id in self.base

    def __iter__(self) -> Iterator[str]:
        yield from self.added
        for oid in self.base:
            if oid not in self.added:
                yield oid

    def ids_with_prefix(self, prefix: str) -> Iterator[str]:
        seen = set(self.added.ids_with_prefix(prefix))
        yield from seen
        for oid in self.base.ids_with_prefix(prefix):
            if oid not in seen:
                yield oid


#: put_event(fields) -> id: how rewritten events are written (the purge passes its
#: transaction's put_event, the one place events are written).
PutEvent = Callable[[dict], str]


class Rewriter:
    """Redact the graph below some roots from `source` into `target` (which may be the same
    store). `mapping` grows across calls: old id -> new id (equal when nothing changed)."""

    def __init__(self, source: ObjectStore, target: ObjectStore, redactor: Redactor,
                 put_event: PutEvent | None = None,
                 known: Mapping[str, str] | None = None) -> None:
        self.source = source
        self.target = target
        self.redactor = redactor
        self.put_event = put_event
        #: redacted ids from earlier rewrites with the same policy (a push map): an object
        #: found here, whose copy `target` still holds, is not visited again
        self.known = known or {}
        self.reused = 0
        self.events: set[str] = set()  # events this rewrite visited
        self.mapping: dict[str, str] = {}
        self.sizes: dict[str, int] = {}  # new content id -> its size
        self.report = RewriteReport(engines=redactor.engines)

    def rewrite(self, roots: Iterable[str]) -> dict[str, str]:
        """Rewrite everything reachable from ROOTS; returns the mapping of the roots."""
        roots = list(roots)
        #: (id, (type, body, decoded value) once read: an object waiting for its children
        #: is not read and decoded a second time)
        stack: list[tuple[str, tuple | None]] = [(r, None) for r in reversed(roots)]
        mapping, source = self.mapping, self.source
        while stack:
            oid, read = stack.pop()
            if oid in mapping:
                continue
            if read is not None:
                mapping[oid] = self._one(oid, *read)
                continue
            hit = self.known.get(oid)
            if hit is not None and (hit == oid or hit in self.target):
                mapping[oid] = hit
                self.reused += 1
                continue
            try:
                type_name, body = source.get_raw(oid)
            except ObjectNotFound:
                mapping[oid] = oid  # absent here (a thin store): the link stays as it was
                continue
            if type_name == "workspace":  # never rewritten: see RewriteReport.workspace
                mapping[oid] = oid
                self.report.workspace += 1
                continue
            value = None
            if type_name != "chunks" and has_links(type_name):
                value = codec.unpack_value(body)
                children = [c for c in references(type_name, value) if c not in mapping]
                if children:
                    stack.append((oid, (type_name, body, value)))
                    stack.extend((c, None) for c in children)
                    continue
            mapping[oid] = self._one(oid, type_name, body, value)
        return {r: mapping[r] for r in roots}

    # -- one object ------------------------------------------------------------------------------
    def _one(self, oid: str, type_name: str, body: bytes, value: Any = None) -> str:
        self.report.objects += 1
        if type_name == "blob":
            data = codec.decode_body("blob", body)
            self.report.bytes_scanned += len(data)
            new, fired = self.redactor.redact_bytes(data)
            if not fired:
                if _is_binary(data):
                    self.report.binary += 1
                self.sizes[oid] = len(data)
                return oid
            self.report.add("blob", fired)
            nid = self.target.put("blob", new)
            self.sizes[nid] = len(new)
            return self._changed(oid, nid)
        if type_name == "chunks":
            return self._chunks(oid)
        if value is None:
            value = codec.unpack_value(body)
        self.report.bytes_scanned += len(body)
        if type_name == "event":
            self.events.add(oid)
        fired: list[str] = []
        new = self._value(value, fired)
        if type_name == "artifact" and isinstance(new, dict) and isinstance(value, dict) and \
                new.get("content") != value.get("content"):
            new["size"] = self._size(new["content"])
        if new == value:
            return oid
        self.report.add(type_name, tuple(fired))
        if type_name == "event" and self.put_event is not None:
            nid = self.put_event(new)
        else:
            nid = self.target.put(type_name, new)
        return self._changed(oid, nid)

    def _size(self, content: str) -> int:
        """The size of a redacted content (rewritten now, or earlier: from the push map)."""
        if content not in self.sizes:
            from ..chunking import content_size

            self.sizes[content] = content_size(self.target, content)
        return self.sizes[content]

    def records(self) -> dict[str, str]:
        """What a push map keeps of this rewrite (docs/format.md "Redacted pushes"): every
        event visited, changed or not, and every other object whose id changed."""
        return {o: n for o, n in self.mapping.items()
                if o not in self.known and (o in self.events or o != n)}

    def _changed(self, oid: str, nid: str) -> str:
        if nid != oid:
            self.report.rewritten += 1
        return nid

    def _chunks(self, oid: str) -> str:
        from ..chunking import iter_content, put_large

        data = b"".join(iter_content(self.source, oid))
        self.report.bytes_scanned += len(data)
        new, fired = self.redactor.redact_bytes(data)
        if not fired:
            self.report.binary += _is_binary(data)
            self.sizes[oid] = len(data)
            return oid
        self.report.add("blob", fired)
        nid = put_large(self.target, new)
        self.sizes[nid] = len(new)
        return self._changed(oid, nid)

    def _value(self, v: Any, fired: list[str]) -> Any:
        t = type(v)
        if t is str:
            if is_id(v):
                return self.mapping.get(v, v)
            new, hits = self.redactor.redact(v)
            if hits:
                fired.extend(hits)
            return new
        if t is dict:
            return {k: self._value(x, fired) for k, x in v.items()}
        if t is list or t is tuple:
            return [self._value(x, fired) for x in v]
        return v


def _is_binary(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def remap_refs(refs: Mapping[str, str], mapping: Mapping[str, str]) -> dict[str, str]:
    """Ref tips through a rewrite; a session's refs follow its session id if that changed
    (`refs/sessions/<sid>/<branch>`, `refs/session-meta/<sid>`)."""
    out = {}
    for name, tip in refs.items():
        parts = name.split("/")
        if len(parts) >= 4 and parts[0] == "refs" and parts[1] == "sessions" and parts[2] in mapping:
            parts[2] = mapping[parts[2]]
        elif len(parts) == 3 and parts[:2] == ["refs", "session-meta"] and parts[2] in mapping:
            parts[2] = mapping[parts[2]]
        out["/".join(parts)] = mapping.get(tip, tip)
    return out
