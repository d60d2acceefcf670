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


_SCALARS = frozenset({str, int, float, bool, bytes, type(None)})


def freeze(value: Any) -> Any:
    """Recursively turn dicts into FrozenMap and lists into tuples.

    Exact-type checks come first: isinstance against the Mapping ABC is slow, and this runs
    for every payload of every object built."""
    t = type(value)
    if t in _SCALARS or t is FrozenMap:
        return value
    if t is dict:
        return FrozenMap({k: freeze(v) for k, v in value.items()})
    if t is list or t is tuple:
        return tuple([freeze(v) for v in value])
    if isinstance(value, Mapping):
        return FrozenMap({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Plain mutable copies (dict/list) of a frozen value, for JSON output and editing."""
    t = type(value)
    if t in _SCALARS:
        return value
    if t is FrozenMap or t is dict:
        return {k: thaw(v) for k, v in value.items()}
    if t is tuple or t is list:
        return [thaw(v) for v in value]
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


EMPTY = FrozenMap()
