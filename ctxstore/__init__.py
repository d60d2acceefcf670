"""ctxstore: a git-like, content-addressed store and runtime for the working state of LLM agents.

    from ctxstore import Repository, ContextManager

`Repository` is the store (objects + refs + config in a `.ctx` directory; `Repository.memory()`
for tests); `ContextManager` is the seed's interface for harness authors.

The names are resolved on first use (PEP 562 `__getattr__`), so `import ctxstore` — which every
`ctx` command pays for — does not load the manager, context builder and compaction engine.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Public name -> (module, attribute), imported when first looked up.
_LAZY = {
    "ContextManager": ("ctxstore.manager", "ContextManager"),
    "CtxError": ("ctxstore.errors", "CtxError"),
    "Repository": ("ctxstore.repo", "Repository"),
}

if TYPE_CHECKING:  # pragma: no cover
    from .errors import CtxError
    from .manager import ContextManager
    from .repo import Repository



def __getattr__(name: str) -> Any:
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'ctxstore' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["ContextManager", "CtxError", "Repository", "__version__"]
