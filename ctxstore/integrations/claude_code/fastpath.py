"""The hook's fast path: `ctx hook claude-code` with nothing new returns before the store,
the importer or click's command loading are touched.

cli.main.main() calls `nothing_to_do(argv)` first. It reads the hook JSON from stdin, finds
the store as `Repository.discover` does (--store, then CTX_DIR, then `.ctx/config.json`
walking up from the hook's cwd) and compares each named transcript's stat with what the
last capture saw (seen.py). When every transcript is unchanged and the event asks for no
other work, the call is done: a stat and a small file read, about the cost of `ctx
--version` (docs/benchmarks.md, "Claude Code hook"). Anything else — another command line,
no store, a changed transcript, SessionStart's catch-up, SessionEnd, a snapshot to take —
falls through to the full `ctx hook` with the stdin text kept in STDIN.

Standard library only, like seen.py.
"""

from __future__ import annotations

import json
import os
import sys

from . import seen

#: tools after which the workspace may have changed (the snapshot hook point)
FILE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"})
#: events that always do more than import new lines (hook.py says what)
FULL_EVENTS = frozenset({"SessionStart", "SessionEnd"})
TRANSCRIPT_KEYS = ("transcript_path", "agent_transcript_path")
#: payload texts the transcript may not hold yet (provisional.py keeps them)
CARRIED = ("last_assistant_message", "compact_summary")
TAIL = 256 * 1024  # bytes at the transcript's end where a text just written is looked for

#: the hook JSON read by nothing_to_do, for the full path (stdin can be read only once)
STDIN: str | None = None


def _store_arg(args: list[str]) -> tuple[str | None, bool]:
    """(--store value, whether the command line is exactly `[--store S] hook claude-code`)."""
    store = None
    if args[:1] == ["--store"] and len(args) >= 2:
        store, args = args[1], args[2:]
    elif args[:1] and args[0].startswith("--store="):
        store, args = args[0][len("--store="):], args[1:]
    return store, args == ["hook", "claude-code"]


def store_dir(store: str | None, cwd: str | None) -> str | None:
    """The `.ctx` directory Repository.discover would open, or None (the full path then
    says why)."""
    if not store:
        store = os.environ.get("CTX_DIR") or None
    if store:
        root = store
        if os.path.basename(os.path.normpath(root)) != ".ctx" and \
                os.path.isdir(os.path.join(root, ".ctx")):
            root = os.path.join(root, ".ctx")
        return root if os.path.exists(os.path.join(root, "config.json")) else None
    here = os.path.realpath(cwd or os.getcwd())
    while True:
        if os.path.exists(os.path.join(here, ".ctx", "config.json")):
            return os.path.join(here, ".ctx")
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def snapshots_asked(ctx_dir: str) -> bool:
    if os.environ.get("CTX_HOOK_SNAPSHOTS", "") in ("1", "true", "yes"):
        return True
    try:
        with open(os.path.join(ctx_dir, "config.json"), encoding="utf-8") as fh:
            return json.load(fh).get("hook_snapshots") is True
    except (OSError, ValueError, AttributeError):
        return False


def carried(data: dict) -> list[tuple[str, str]]:
    """(key, text) of each payload text the hook keeps if the transcript lags."""
    return [(k, data[k]) for k in CARRIED if isinstance(data.get(k), str) and data[k].strip()]


def target(data: dict) -> str | None:
    """The transcript a payload text belongs to: the subagent's at SubagentStop."""
    t = data.get("agent_transcript_path") or data.get("transcript_path")
    return t if isinstance(t, str) and t else None


def in_tail(transcript: str, text: str) -> bool:
    """Whether `text`, as JSON writes it, is in the transcript's last TAIL bytes (a miss
    sends the call the full way, which parses the lines to be sure)."""
    forms = [json.dumps(text, ensure_ascii=a)[1:-1].encode("utf-8") for a in (False, True)]
    try:
        with open(transcript, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - TAIL))
            tail = fh.read()
    except OSError:
        return False
    return any(f in tail for f in forms)


def idle(data: dict, ctx_dir: str) -> bool:
    """Whether this hook call has nothing to do: no transcript it names changed since the
    last capture and its event asks for no other work."""
    if data.get("hook_event_name") in FULL_EVENTS:
        return False
    if data.get("tool_name") in FILE_TOOLS and snapshots_asked(ctx_dir):
        return False
    named = [data.get(k) for k in TRANSCRIPT_KEYS if data.get(k)]
    if not named or not all(isinstance(t, str) for t in named):
        return False
    if not all(seen.unchanged(ctx_dir, os.path.realpath(os.path.expanduser(t))) for t in named):
        return False
    where = target(data)
    return all(in_tail(os.path.expanduser(where or ""), text) for _k, text in carried(data))


def take_stdin() -> str | None:
    """The hook JSON nothing_to_do read (once; None if it read none)."""
    global STDIN
    raw, STDIN = STDIN, None
    return raw


def nothing_to_do(args: list[str]) -> bool:
    """True when this command line is a hook call with nothing to do (the caller exits 0).
    Never raises for bad input: the full path reports it in .ctx/hooks.log."""
    global STDIN
    store, is_hook = _store_arg(args)
    if not is_hook:
        return False
    try:
        STDIN = sys.stdin.read()
        data = json.loads(STDIN)
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    if not isinstance(data, dict):
        return False
    cwd = data.get("cwd") if isinstance(data.get("cwd"), str) else None
    ctx_dir = store_dir(store, cwd)
    return ctx_dir is not None and idle(data, ctx_dir)
