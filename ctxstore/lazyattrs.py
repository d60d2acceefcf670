"""Package attributes that load their module on first use (PEP 562).

`ctx --version`, `ctx log` and `ctx status` must not pay for importing compaction or the
importers; packages that re-export those names list them in a table instead, and this builds
the module-level `__getattr__` / `__dir__` pair once for all of them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_attributes(package: str, namespace: MutableMapping[str, Any],
                    table: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for PACKAGE, whose name N loads from the (relative) module
    `table[N]`; a loaded value is cached in NAMESPACE (the package's globals())."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(table))

    return __getattr__, __dir__


class LazyPattern:
    """A regular expression compiled on first use, used like the compiled pattern
    (`.search`, `.match`, ...). Modules that `ctx log` loads to render one line keep their
    patterns in these: compiling a dozen patterns costs a few milliseconds of every start."""

    __slots__ = ("_compiled", "_flags", "_pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._pattern = pattern
        self._flags = flags
        self._compiled: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._compiled is None:
            import re

            self._compiled = re.compile(self._pattern, self._flags)
        return getattr(self._compiled, name)
