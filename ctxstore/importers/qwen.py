"""Qwen Code sessions (being written: see harnesses.py for the surface every harness module has)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..errors import Unsupported
from .common import ImportContext

FMT = "qwen"
LABEL = "Qwen Code"


def sniff(path: Path) -> bool:
    return False


def session_units(root: Path) -> list[Path]:
    return []


def default_dirs(env: Mapping[str, str], home: Path) -> list[Path]:
    return []


def import_file(ctx: ImportContext, path: Path) -> None:
    raise Unsupported(f"{path}: {LABEL} import is not written yet")
