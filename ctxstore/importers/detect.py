"""Which transcript format a file is, from its first lines, and which files a path holds.

Detection looks at shapes, not names: pi starts with a `session` header, Codex lines are
`{timestamp, type, payload}`, ctxstore's neutral JSONL starts with its own header, and Claude
Code lines carry `sessionId`/`uuid` or one of its record types.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..errors import InvalidInput, NotFound
from . import claude_code, codex, pi
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


def _known(fmt: str, rec: dict) -> bool:
    """Whether `fmt`'s importer knows this record (the rule behind its "unknown record type"
    warning; neutral JSONL records carry a `ctxstore` kind)."""
    if fmt == "jsonl":
        return "ctxstore" in rec or rec.get("kind") == "ctxstore-session"
    known = {"claude-code": claude_code.KNOWN_TYPES, "codex": codex.KNOWN_TYPES,
             "pi": pi.KNOWN_TYPES}[fmt]
    return rec.get("type") in known


def format_mismatch(path: Path, fmt: str, sample: int = 200) -> str | None:
    """Why `path` is not a `fmt` transcript, or None when most of its first `sample` records
    are records `fmt`'s importer knows. Used when the user forces a format: importing a file
    whose records the importer mostly does not know would make a session of junk."""
    records = list(peek_jsonl(path, limit=sample))
    if not records:
        return f"{path}: no JSON records in its first {sample} lines"
    known = sum(_known(fmt, r) for r in records)
    if known * 2 >= len(records):
        return None
    detected = detect_format(path)
    hint = f"it looks like {detected}" if detected and detected != fmt else \
        "its format is not one ctxstore reads"
    return f"{path}: only {known} of the first {len(records)} records are {fmt} records ({hint})"


def default_locations(env: Mapping[str, str] | None = None) -> list[tuple[str, Path]]:
    """(format, directory) where each harness keeps its transcripts by default:
    Claude Code `$CLAUDE_CONFIG_DIR/projects` (else ~/.claude/projects), Codex
    `$CODEX_HOME/sessions` (else ~/.codex/sessions), pi `$PI_CODING_AGENT_DIR/sessions` (else
    ~/.pi/agent/sessions; the variable pi-mono's coding-agent reads in src/config.ts)."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())

    def base(var: str, default: Path) -> Path:
        value = env.get(var)
        return Path(value).expanduser() if value else default

    return [("claude-code", base("CLAUDE_CONFIG_DIR", home / ".claude") / "projects"),
            ("codex", base("CODEX_HOME", home / ".codex") / "sessions"),
            ("pi", base("PI_CODING_AGENT_DIR", home / ".pi" / "agent") / "sessions")]
