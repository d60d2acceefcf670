"""The oracle for copilot sessions (being written): see ADDED in transcripts.py for the surface."""

from __future__ import annotations

from pathlib import Path


def detect(path: Path) -> bool:
    return False


def units(root: Path) -> list[Path]:
    return []


def analyze(path: Path):
    raise NotImplementedError
