"""Which transcript format a file is, from its first lines, and which files a path holds.

Detection looks at shapes, not names. The harnesses added since the first three (harnesses.py)
are asked first, each by its own `sniff`; then pi starts with a `session` header, Codex lines
are `{timestamp, type, payload}`, ctxstore's neutral JSONL starts with its own header, and
Claude Code lines carry `sessionId`/`uuid` or one of its record types.

A folder is walked for `*.jsonl` files (each detected on its own) and for the session units
each added harness claims under it (`session_units`: a Gemini `session-*.json`, an OpenCode
storage tree or database, a Cline task folder, an Aider history file, ...).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..errors import InvalidInput, NotFound
from . import claude_code, codex, harnesses, pi
from .common import peek_jsonl

FORMATS = ("claude-code", "codex", "pi", *harnesses.MODULES, "jsonl")
CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context",
                         "compacted"})


def detect_format(path: Path) -> str | None:
    # a zstd-compressed file is a Codex rollout or nothing: no added harness writes one
    added = harnesses.sniff(path) if not path.name.endswith(".zst") else None
    if added is not None:
        return added
    if path.is_dir():
        return None
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

    Directories are walked recursively for `*.jsonl` and for the session units the added
    harnesses claim (a folder that is itself one unit, an OpenCode storage tree or a Cline task,
    is taken whole). Claude Code subagent files (`agent-*.jsonl`) sort after every other file
    so their parent session exists first.
    """
    if format is not None and format not in FORMATS:
        raise InvalidInput(f"unknown import format {format!r}: use one of {', '.join(FORMATS)}")
    files: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir() and harnesses.sniff(p) is not None:
            files.append(p)  # the folder is one session unit (a storage tree, a task)
        elif p.is_dir():
            files.extend(walk(p))
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


def walk(root: Path) -> list[Path]:
    """Every session unit under the folder `root`: its `*.jsonl` files (none inside a unit that
    is a folder) and what each added harness claims, each once, sorted."""
    units: set[Path] = set()
    for m in harnesses.added():
        units.update(m.session_units(root))
    dirs = [u for u in units if u.is_dir()]
    out = set(units)
    for x in root.rglob("*.jsonl"):
        if x.is_file() and not any(d in x.parents for d in dirs):
            out.add(x)
    # zstd-compressed JSONL (Codex's `rollout-*.jsonl.zst`); as Codex reads them, a plain
    # `.jsonl` beside one is the same rollout and wins
    for x in root.rglob("*.jsonl.zst"):
        if x.is_file() and not any(d in x.parents for d in dirs) \
                and not x.with_name(x.name[:-len(".zst")]).is_file():
            out.add(x)
    return sorted(out)


def _known(fmt: str, rec: dict) -> bool:
    """Whether `fmt`'s importer knows this record (the rule behind its "unknown record type"
    warning; neutral JSONL records carry a `ctxstore` kind)."""
    if fmt == "jsonl":
        return "ctxstore" in rec or rec.get("kind") == "ctxstore-session"
    if fmt in harnesses.MODULES:
        return bool(harnesses.module(fmt).known(rec))
    known = {"claude-code": claude_code.KNOWN_TYPES, "codex": codex.KNOWN_TYPES,
             "pi": pi.KNOWN_TYPES}[fmt]
    return rec.get("type") in known


def format_mismatch(path: Path, fmt: str, sample: int = 200) -> str | None:
    """Why `path` is not a `fmt` transcript, or None when most of its first `sample` records
    are records `fmt`'s importer knows. Used when the user forces a format: importing a file
    whose records the importer mostly does not know would make a session of junk. An added
    harness without a record rule (`known`: its sessions are documents, folders or databases)
    takes exactly what its `sniff` recognises."""
    if fmt in harnesses.MODULES and (path.is_dir() or not hasattr(harnesses.module(fmt), "known")):
        if harnesses.module(fmt).sniff(path):
            return None
        detected = detect_format(path)
        hint = f"it looks like {detected}" if detected else "its format is not one ctxstore reads"
        return f"{path}: not a {harnesses.module(fmt).LABEL} session ({hint})"
    if path.is_dir():
        return f"{path}: a folder, not a {fmt} transcript"
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
            ("pi", base("PI_CODING_AGENT_DIR", home / ".pi" / "agent") / "sessions"),
            *harnesses.default_dirs(env)]
