"""An in-memory object store: for tests, dry runs, and as the reference implementation."""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from ..errors import ObjectNotFound
from .base import ObjectStore


class MemoryStore(ObjectStore):
    def __init__(self) -> None:
        self._objects: dict[str, tuple[str, bytes]] = {}
        self._sorted: list[str] | None = None

    def _store_body(self, obj_id: str, type_name: str, body: bytes) -> None:
        self._objects[obj_id] = (type_name, bytes(body))
        self._sorted = None

    def get_raw(self, obj_id: str) -> tuple[str, bytes]:
        try:
            return self._objects[obj_id]
        except KeyError:
            raise ObjectNotFound(f"no object {obj_id}") from None

    def __contains__(self, obj_id: object) -> bool:
        return obj_id in self._objects

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._objects))

    def __len__(self) -> int:
        return len(self._objects)

    def ids_with_prefix(self, prefix: str) -> Iterator[str]:
        if self._sorted is None:
            self._sorted = sorted(self._objects)
        i = bisect.bisect_left(self._sorted, prefix)
        while i < len(self._sorted) and self._sorted[i].startswith(prefix):
            yield self._sorted[i]
            i += 1
