"""Import and export the transcripts Claude Code, Codex and pi write, and ctxstore's own JSONL.

Porcelain for the CLI (`ctx import`, `ctx export`); both return values and never print:

    import_paths(repo, paths, format=None, strict=False, progress=None) -> ImportReport
        paths: files or directories (walked for *.jsonl); format: "claude-code" | "codex" |
        "pi" | "jsonl" | None (detected per file). strict=True raises InvalidInput (exit 10)
        listing every problem and writes nothing. progress(done_bytes, total_bytes, path) is
        called about once per MB. ImportReport.summary() -> {files, bytes, sessions, events,
        new_events, artifacts, warnings}; .warnings -> [{file, line, message}];
        .sessions -> [SessionStats]; .to_dict() for --json.

    discover(env=None) -> [(format, directory, exists)]
        each harness's default transcript directory (CLAUDE_CONFIG_DIR, CODEX_HOME and
        PI_CODING_AGENT_DIR honoured), for `ctx import` with no PATH.

    export_session(repo, rev_or_session, format, out) -> {"session", "format", "lines"}
        rev_or_session: a session id (or unique prefix: every branch) or any revision
        (that history only); format: "claude-code" | "codex" | "pi" (lines JSON-equal to the
        original file, in order) | "jsonl" (neutral, re-importable to identical ids).

Layout: common (streaming, records, SessionBuilder), claude_code + claude_map, codex, pi,
neutral, detect, export, porcelain. docs/import-export.md has the mapping tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazyattrs import lazy_attributes

#: Loaded on first use (PEP 562): `ctx log` reads `importers.records` and must not pay for
#: importing every harness's importer.
_LAZY = {"ImportReport": ".common", "SessionStats": ".common", "FORMATS": ".detect",
         "detect_format": ".detect", "export_session": ".export", "discover": ".porcelain",
         "import_paths": ".porcelain"}

if TYPE_CHECKING:  # pragma: no cover
    from .common import ImportReport, SessionStats
    from .detect import FORMATS, detect_format
    from .export import export_session
    from .porcelain import discover, import_paths


__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY)

__all__ = ["FORMATS", "ImportReport", "SessionStats", "detect_format", "discover",
           "export_session", "import_paths"]
