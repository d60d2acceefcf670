"""Which transcript format a file is, from its first lines, and which files a path holds.

Detection looks at shapes, not names: pi starts with a `session` header, Codex lines are
`{timestamp, type, payload}`, ctxstore's neutral JSONL starts with its own header, and Claude
Code lines carry `sessionId`/`uuid` or one of its record types.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InvalidInput, NotFound
from .common import peek_jsonl

FORMATS = ("claude-code", "codex", "pi", "jsonl")
CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context",
                         "compacted"})


def detect_format(path: Path) -> str | None:
    for rec in peek_jsonl(path, limit=20):
        t = rec.get("type")
        if rec.get("kind") == "ctxstore-session" or "ctxstore" in rec:
            return "jsonl"
        if t == "session" and "id" in rec:
            return "pi"
        if t in CODEX_TYPES and "payload" in rec:
            return "codex"
        if "sessionId" in rec or "uuid" in rec or "leafUuid" in rec:
            return "claude-code"
    return None


def collect_files(paths: list, format: str | None) -> list[tuple[Path, str | None]]:
    """(file, format or None) for every transcript under `paths`, parents before subagents.

    Directories are walked recursively for `*.jsonl`. Claude Code subagent files
    (`agent-*.jsonl`) sort after every other file so their parent session exists first.
    """
    if format is not None and format not in FORMATS:
        raise InvalidInput(f"unknown import format {format!r}: use one of {', '.join(FORMATS)}")
    files: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            files.extend(sorted(x for x in p.rglob("*.jsonl") if x.is_file()))
        elif p.is_file():
            files.append(p)
        else:
            raise NotFound(f"no such file or directory: {p}")
    seen: set[Path] = set()
    out: list[tuple[Path, str]] = []
    for f in sorted(files, key=lambda x: (x.name.startswith("agent-"), len(x.parts), str(x))):
        if f in seen:
            continue
        seen.add(f)
        out.append((f, format or detect_format(f)))  # None: the caller reports it
    return out
