"""The repository layer: one `.ctx` directory's objects, refs and config, the transactions that
write events and move refs, and the reads that interpret the DAG (graph walks, revisions).

Everything above this package (features, porcelain, cli) reads and writes through it.
"""

from ..lazyattrs import lazy_attributes
from .repository import CTX_DIRNAME, Current, Repository, iter_session_refs

# The write path loads on first use: `ctx status`, `log` and `show` only read.
__getattr__, __dir__ = lazy_attributes(__name__, globals(), {
    "Transaction": ".transaction"})

__all__ = ["CTX_DIRNAME", "Current", "Repository", "Transaction",
           "iter_session_refs"]
