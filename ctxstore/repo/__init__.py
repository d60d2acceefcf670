"""The repository layer: one `.ctx` directory's objects, refs and config, the transactions that
write events and move refs, and the reads that interpret the DAG (graph walks, revisions).

Everything above this package (features, porcelain, cli) reads and writes through it.
"""

from .repository import CTX_DIRNAME, AppendTransaction, Current, Repository, iter_session_refs
from .transaction import Transaction

__all__ = ["CTX_DIRNAME", "AppendTransaction", "Current", "Repository", "Transaction",
           "iter_session_refs"]
