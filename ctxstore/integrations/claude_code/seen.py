"""What the hook last saw of each transcript: one small file per transcript under
`.ctx/hookstate/`, so a hook call with nothing new costs a stat, not an import.

Claude Code fires the hooks at every prompt, tool call and stop, most of them with nothing
new in the transcript (the file is written asynchronously and often lags the hook). The
file holds the transcript's (size, mtime_ns, inode) as the last capture saw it *before*
reading: every complete line up to that size was imported by then. A later call whose stat
is the same has nothing to import. A differing stat (growth, a rewrite, another file at the
path) goes to the full capture, which decides from the byte offset it recorded in
.ctx/live.sqlite; this file is a hint, never the truth, so an old or lost one only costs the
full path once.

Standard library only: the hook's fast path (fastpath.py) imports this module and nothing
else of ctxstore.
"""

from __future__ import annotations

import hashlib
import json
import os

DIRNAME = "hookstate"


def state_file(ctx_dir: str, transcript: str) -> str:
    """The state file of `transcript` (a resolved path) in the store `ctx_dir`."""
    name = hashlib.blake2b(transcript.encode("utf-8", "surrogateescape"),
                           digest_size=12).hexdigest()
    return os.path.join(ctx_dir, DIRNAME, name + ".json")


def stat_of(transcript: str) -> list[int]:
    st = os.stat(transcript)
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def unchanged(ctx_dir: str, transcript: str) -> bool:
    """Whether the transcript is exactly as the last capture saw it (False when unknown)."""
    try:
        with open(state_file(ctx_dir, transcript), encoding="utf-8") as fh:
            saved = json.load(fh)
        return isinstance(saved, dict) and saved.get("path") == transcript and \
            saved.get("seen") == stat_of(transcript)
    except (OSError, ValueError):
        return False


def record(ctx_dir: str, transcript: str, seen: list[int]) -> None:
    """Write the state file atomically (temporary file, rename): a reader sees the old or
    the new one, never half. No fsync: a state file lost to a crash costs one full capture."""
    path = state_file(ctx_dir, transcript)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump({"path": transcript, "seen": seen}, fh)
    os.replace(tmp, path)
