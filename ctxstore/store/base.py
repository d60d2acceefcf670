"""The object store interface: a small contract with several implementations.

`put` returns the id and writes nothing if the object exists; `get` of a missing id is a clear
error; ids can be abbreviated to a unique prefix of at least 4 hex digits. Every implementation
passes tests/store_contract.py.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator
from typing import Any

from .. import codec
from ..errors import AmbiguousId, BadRevision, ObjectNotFound
from ..objects import StoredObject, from_stored

MIN_PREFIX = 4
_HEX = frozenset("0123456789abcdef")


class ObjectStore(abc.ABC):
    """Content-addressed, immutable objects. Subclasses implement the five raw primitives."""

    # -- raw primitives ----------------------------------------------------------------------
    @abc.abstractmethod
    def _store_body(self, obj_id: str, type_name: str, body: bytes) -> None:
        """Persist a body known not to be present (its id already computed)."""

    @abc.abstractmethod
    def get_raw(self, obj_id: str) -> tuple[str, bytes]:
        """(type name, canonical body) of a full id; ObjectNotFound if absent."""

    @abc.abstractmethod
    def __contains__(self, obj_id: object) -> bool: ...

    @abc.abstractmethod
    def __iter__(self) -> Iterator[str]:
        """Every object id, each once, in no particular order."""

    @abc.abstractmethod
    def ids_with_prefix(self, prefix: str) -> Iterator[str]:
        """Ids starting with a hex prefix (callers stop after two)."""

    # -- durability -------------------------------------------------------------------------
    def flush(self) -> None:
        """Make every object put so far durable (no-op where there is no disk)."""
        return None

    def close(self) -> None:
        self.flush()

    def begin_transaction(self) -> None:
        """A repository transaction starts: until `end_transaction`, puts may be buffered
        (nothing names them before the commit's `flush`)."""
        return None

    def end_transaction(self) -> None:
        """Called when a repository transaction ends (committed or not): a store that holds a
        lock against gc for its look-ups lets it go until the next one (store/gclock.py)."""
        return None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- derived API ------------------------------------------------------------------------
    def put_body(self, type_name: str, body: bytes, obj_id: str | None = None) -> str:
        """Store an already canonical body. With `obj_id`, the id is re-checked (unpack)."""
        computed = codec.compute_id(type_name, body)
        if obj_id is not None and obj_id != computed:
            from ..errors import CorruptObject

            raise CorruptObject(f"object {obj_id} hashes to {computed}", id=obj_id)
        if computed not in self:
            self._store_body(computed, type_name, body)
        return computed

    def put_encoded(self, obj_id: str, type_name: str, body: bytes) -> str:
        """Store a body whose id the caller just computed with codec.encode_object (hot paths)."""
        if obj_id not in self:
            self._store_body(obj_id, type_name, body)
        return obj_id

    def put_new(self, obj_id: str, type_name: str, body: bytes) -> bool:
        """put_encoded, telling whether the store lacked the object (importers count new
        events)."""
        if obj_id in self:
            return False
        self._store_body(obj_id, type_name, body)
        return True

    def put_absent(self, obj_id: str, type_name: str, body: bytes) -> None:
        """Store a body the caller knows the store lacks, with no presence check: an event whose
        parent was new to the store a moment ago (a racing duplicate costs a few bytes)."""
        self._store_body(obj_id, type_name, body)

    def put(self, type_name: str, value: Any) -> str:
        """Encode and store a value of the given type; returns its id."""
        obj_id, body = codec.encode_object(type_name, value)
        if obj_id not in self:
            self._store_body(obj_id, type_name, body)
        return obj_id

    def put_object(self, obj: StoredObject) -> str:
        return self.put(obj.TYPE, obj.to_dict())

    def put_blob(self, data: bytes) -> str:
        return self.put("blob", data)

    def get(self, obj_id: str) -> Any:
        """The decoded object: a value type where one is registered, else the plain value."""
        type_name, body = self.get_raw(obj_id)
        return from_stored(type_name, codec.decode_body(type_name, body))

    def get_typed(self, obj_id: str, expected: type) -> Any:
        obj = self.get(obj_id)
        if not isinstance(obj, expected):
            raise ObjectNotFound(f"object {obj_id[:12]} is not a {getattr(expected, 'TYPE', expected.__name__)}")
        return obj

    def type_of(self, obj_id: str) -> str:
        return self.get_raw(obj_id)[0]

    def resolve(self, text: str) -> str:
        """A full id from a full or abbreviated (>= 4 hex digits) one."""
        prefix = text.strip().lower()
        if len(prefix) < MIN_PREFIX or not set(prefix) <= _HEX or len(prefix) > codec.ID_HEX_LEN:
            raise BadRevision(f"{text!r} is not an object id (need at least {MIN_PREFIX} hex digits)")
        if len(prefix) == codec.ID_HEX_LEN:
            if prefix not in self:
                raise ObjectNotFound(f"no object {prefix}")
            return prefix
        found: list[str] = []
        for obj_id in self.ids_with_prefix(prefix):
            found.append(obj_id)
            if len(found) > 1:
                raise AmbiguousId(f"abbreviated id {prefix} is ambiguous: matches {found[0][:12]}, "
                                  f"{found[1][:12]} and maybe more; give more digits")
        if not found:
            raise ObjectNotFound(f"no object with id starting {prefix}")
        return found[0]
