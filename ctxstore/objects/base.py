"""The base of every stored value type.

An object is a frozen value. It knows how to become a plain dict and back; it does not know
its id or its bytes: identity is a storage concern and the bytes belong to ctxstore.codec.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import CorruptObject

_REGISTRY: dict[str, type[StoredObject]] = {}


@dataclass(frozen=True, slots=True)
class StoredObject:
    TYPE: ClassVar[str] = ""

    def __init_subclass__(cls, **kw):
        super(StoredObject, cls).__init_subclass__(**kw)
        if cls.__dict__.get("TYPE"):
            _REGISTRY[cls.TYPE] = cls

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StoredObject:
        raise NotImplementedError


#: Types whose classes live in a module that is imported when first needed (objects/__init__).
_LAZY_TYPES = {"message": "ctxstore.objects.message", "artifact": "ctxstore.objects.message",
               "compaction": "ctxstore.objects.compaction",
               "operation": "ctxstore.objects.operation",
               "memory": "ctxstore.objects.memory"}


def class_for(type_name: str) -> type[StoredObject] | None:
    cls = _REGISTRY.get(type_name)
    if cls is None and type_name in _LAZY_TYPES:
        importlib.import_module(_LAZY_TYPES[type_name])
        cls = _REGISTRY.get(type_name)
    return cls


def from_stored(type_name: str, value: Any) -> Any:
    """Build the value type for a decoded body; unknown types come back as plain values."""
    cls = class_for(type_name)
    if cls is None:
        return value
    if not isinstance(value, dict):
        raise CorruptObject(f"a {type_name} object must be a map")
    try:
        return cls.from_dict(value)
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptObject(f"malformed {type_name} object: {exc}") from None
