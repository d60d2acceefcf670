"""ctxstore: a git-like, content-addressed store and runtime for the working state of LLM agents.

    from ctxstore import Store, ContextManager

`Store` is the repository (objects + refs + config in a `.ctx` directory; `Store.memory()` for
tests); `ContextManager` is the seed's interface for harness authors.
"""

__version__ = "0.1.0"

from .errors import CtxError  # noqa: E402
from .manager import ContextManager  # noqa: E402
from .repo import Repository  # noqa: E402

Store = Repository

__all__ = ["ContextManager", "CtxError", "Repository", "Store", "__version__"]
