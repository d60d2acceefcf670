"""Deep-frozen containers, so that an object's payload cannot change after its id is known."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class FrozenMap(dict):
    """A dict that refuses mutation. Subclasses dict so json and msgpack handle it as-is."""

    __slots__ = ()

    def _readonly(self, *_a, **_k):
        raise TypeError("FrozenMap is immutable")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _readonly  # type: ignore
    __ior__ = _readonly  # type: ignore

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items())))

    def __reduce__(self):
        return (FrozenMap, (dict(self),))

    def thaw(self) -> dict:
        return thaw(self)


def freeze(value: Any) -> Any:
    """Recursively turn dicts into FrozenMap and lists into tuples."""
    if isinstance(value, Mapping):
        if type(value) is FrozenMap:
            return value
        return FrozenMap({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Plain mutable copies (dict/list) of a frozen value, for JSON output and editing."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


EMPTY = FrozenMap()
