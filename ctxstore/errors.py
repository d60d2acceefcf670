"""The one exception root of ctxstore.

Every error a user can cause or meet derives from `CtxError` and carries an exit code.
The CLI has exactly one handler that turns these into one line on stderr and that exit code.
An exit code, once given a meaning, is never reused for another one (borg's rule): add new
codes at the end of the table in docs/cli.md, never renumber.
"""

from __future__ import annotations


class CtxError(Exception):
    """Root of every ctxstore error. `exit_code` is what the CLI exits with."""

    exit_code = 1

    def __init__(self, message: str = "", **details: object) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def __str__(self) -> str:
        return self.message


class NotFound(CtxError):
    """Something named by the user does not exist (object, ref, revision, session, file)."""

    exit_code = 3


class ObjectNotFound(NotFound):
    pass


class RefNotFound(NotFound):
    pass


class StoreNotFound(NotFound):
    """No `.ctx` directory found via --store, CTX_DIR or walking up from the cwd."""

    exit_code = 9


class AmbiguousId(CtxError):
    """An abbreviated id matches more than one object."""

    exit_code = 4


class BadRevision(CtxError):
    """A revision expression that cannot be parsed or resolved."""

    exit_code = 5


class InvalidRefName(BadRevision):
    """A ref or branch name that breaks git's ref name rules."""


class RefConflict(CtxError):
    """A ref moved since it was read and the transaction cannot be rebased onto it (reset,
    merge, compaction, branch, checkout, undo): nothing was written."""

    exit_code = 6


class LockHeld(CtxError):
    """A lock file is held by another process (or left behind by a crashed one)."""

    exit_code = 7


class CorruptObject(CtxError):
    """Stored bytes do not decode or do not hash to their id."""

    exit_code = 8


class CorruptStore(CorruptObject):
    """A store file is damaged beyond one object (a pack or index header, `dicts`, a ref, a
    reflog, config.json); the message names the file and line. Nothing is skipped."""

    exit_code = 17


class InvalidInput(CtxError):
    """Malformed user input: JSON payload, batch line, transcript record, option value."""

    exit_code = 10


class MemoryRefused(InvalidInput):
    """A memory write the governance rules refuse: no source refs (invariant 10), no scope or
    no expiry/update policy (invariant 11), a source that is not in the store."""


class CodecError(InvalidInput):
    """A value that has no canonical encoding (NaN, non-str map key, unsupported type)."""


class CompactionRejected(CtxError):
    """A compaction failed its checks; no ref moved."""

    exit_code = 11


class BadPack(CtxError):
    """A portable pack file is truncated, hostile or inconsistent; nothing was imported."""

    exit_code = 12


class IntegrityProblems(CtxError):
    """fsck found problems; the details list each one."""

    exit_code = 13


class BudgetTooSmall(CtxError):
    """The token budget cannot hold the P0 tier of the context."""

    exit_code = 14


class Unsupported(CtxError):
    """A feature, format version or option that this build does not support."""

    exit_code = 15


class IOFailure(CtxError):
    """An operating-system error on a file, wherever it happens (import, export, pack, unpack,
    artifact add, append --batch, the store): permissions, disk full, a missing output
    directory, a directory named as a file. A named input that does not exist is NotFound."""

    exit_code = 16


class WorkspaceConflict(CtxError):
    """A restore would overwrite or delete files changed since the newest snapshot of that
    directory (uncommitted work); nothing was written. The message names the files; --force
    overrides."""

    exit_code = 18


class RemoteFailed(CtxError):
    """A git remote could not be reached, refused the credentials, or failed the transfer;
    the message names the URL, never a credential."""

    exit_code = 19
