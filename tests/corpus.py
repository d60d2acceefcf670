"""Where the real-transcript corpus is, for every test and benchmark that reads real sessions.

`CTXSTORE_CORPUS` names it when set; otherwise `../shared/corpus/sessions` beside the repository
root. A test that needs it calls `require_corpus()`: under `CI=true` a missing corpus fails the
run with one clear line (a real-data test that quietly skips would let CI say green about code
nobody checked); elsewhere the test is skipped with a message saying how to point at a corpus.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
ENV = "CTXSTORE_CORPUS"


def corpus_root() -> Path:
    """The corpus directory (it may not exist: see `require_corpus`)."""
    env = os.environ.get(ENV)
    return Path(env).expanduser().resolve() if env else REPO_ROOT.parent / "shared" / "corpus" / "sessions"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def corpus_present() -> bool:
    """The corpus directory exists and holds something: an empty folder (a mistyped or not yet
    filled $CTXSTORE_CORPUS) counts as missing, so each real-data test reports it in one line
    instead of failing on the first file it opens."""
    root = corpus_root()
    return root.is_dir() and any(root.iterdir())


def missing_message() -> str:
    root = corpus_root()
    where = f"{root} is empty" if root.is_dir() else f"not found at {root}"
    return (f"real-session corpus {where}: set {ENV}=/path/to/corpus/sessions "
            f"(the layout of ../shared/corpus/sessions) to run the real-data tests")


def require_corpus() -> Path:
    """The corpus directory; fails under CI=true and skips elsewhere when it is missing or
    empty."""
    root = corpus_root()
    if corpus_present():
        return root
    if in_ci():
        pytest.fail(missing_message(), pytrace=False)
    pytest.skip(missing_message())
