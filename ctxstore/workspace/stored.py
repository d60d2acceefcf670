"""Where a store keeps its workspace snapshots, and reading one back: the bottom of the
workspace package, which taking (snapshot.py) and materialising (closure.py) a snapshot
both build on without importing each other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import CorruptObject, Unsupported


def ctx_dir_of(repo) -> Path:
    if repo.path is None:
        raise Unsupported("workspace snapshots need a store on disk (an in-memory store has "
                          "no place for the git object database)")
    return Path(repo.path)


def read_workspace(repo, wid: str) -> dict[str, Any]:
    type_name, _ = repo.objects.get_raw(wid)
    if type_name != "workspace":
        raise CorruptObject(f"object {wid[:12]} is a {type_name}, not a workspace snapshot")
    value = repo.objects.get(wid)
    if not isinstance(value, dict) or not isinstance(value.get("tree"), str):
        raise CorruptObject(f"workspace object {wid[:12]} has no tree")
    return value
