"""Opening the store an integration writes to, by path, the way every adapter does."""

from __future__ import annotations

import os
from pathlib import Path

from ..repo import CTX_DIRNAME, Repository


def open_repository(path: str | os.PathLike) -> Repository:
    """Open the store at PATH (a directory holding `.ctx`, or `.ctx` itself), creating it if
    absent: an adapter is often the first writer a project has."""
    p = Path(path)
    if (p / "config.json").exists() and p.name == CTX_DIRNAME:
        return Repository.open(p)
    if (p / CTX_DIRNAME / "config.json").exists():
        return Repository.open(p / CTX_DIRNAME)
    return Repository.init(p)
