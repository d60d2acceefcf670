"""Object stores: the interface and its implementations."""

from .base import MIN_PREFIX, ObjectStore
from .memory import MemoryStore
from .packstore import PackStore

__all__ = ["MIN_PREFIX", "MemoryStore", "ObjectStore", "PackStore"]
