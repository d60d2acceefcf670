"""Which harnesses ctxstore reads, in the order their files are told apart.

Claude Code, Codex and pi were the first three and keep their hand-tuned detection in
detect.py. Every harness added since is one module of this package that exposes the same small
surface, so that detection, directory walks, `ctx import FORMAT`, `ctx export --format`,
`--follow` and the default folders learn a harness by its name being listed here:

    FMT: str                                   the format name (`ctx import FMT`)
    LABEL: str                                 the harness's own name, for messages
    sniff(path) -> bool                        is this file (or folder) one this harness wrote?
                                               cheap: the first lines, the first bytes, a table
    session_units(root) -> [Path]              under a folder being walked, the files or
                                               folders that are this harness's sessions
    default_dirs(env, home) -> [Path]          where the harness keeps sessions by default,
                                               honouring its own environment variables
    import_file(ctx, path) -> None             import one session unit (file or folder)
    known(rec) -> bool                         optional, JSONL formats: a record the importer
                                               knows (a forced FORMAT that does not fit is refused)
    export(records, out) -> int                optional: write the source back from its
                                               records [(line, value)] in line order (document
                                               formats); without it each record is one line
    open_file(ctx, path)                       optional: a reader with .run/.feed/.b for
                                               `--follow` on an append-only JSONL file; without
                                               it --follow re-imports the whole file on change

The modules are imported on first use: `ctx log` must not pay for every importer.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

#: Harnesses added after the first three, in detection order: a format whose records could be
#: mistaken for a later one's comes first (Gemini CLI and Qwen Code lines carry `sessionId`,
#: which Claude Code's detection would otherwise claim).
MODULES: dict[str, str] = {
    "gemini": ".gemini",
    "qwen": ".qwen",
    "copilot": ".copilot",
    "opencode": ".opencode",
    "cursor": ".cursor",
    "goose": ".goose",
    "aider": ".aider",
    "cline": ".cline",
}

#: The first three, whose detection lives in detect.py; `jsonl` is ctxstore's own format.
BUILTIN = ("claude-code", "codex", "pi")


def module(fmt: str) -> ModuleType:
    return importlib.import_module(MODULES[fmt], __package__)


def added() -> list[ModuleType]:
    """The added harnesses' modules, in detection order."""
    return [module(f) for f in MODULES]


def sniff(path: Path) -> str | None:
    """The added harness that wrote `path`, or None."""
    for fmt in MODULES:
        if module(fmt).sniff(path):
            return fmt
    return None


def default_dirs(env: Mapping[str, str] | None = None) -> list[tuple[str, Path]]:
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    return [(fmt, d) for fmt in MODULES for d in module(fmt).default_dirs(env, home)]
