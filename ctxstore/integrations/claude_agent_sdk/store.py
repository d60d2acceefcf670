"""CtxstoreSessionStore: the Claude Agent SDK's SessionStore over a ctxstore repository.

Each SDK key (project_key, session_id[, subpath]) is one transcript, imported a batch at a
time by importers.live with the same mapping as `ctx import`: a main key is a session, a
`subagents/.../agent-*` subpath a child session linked to the Task/Agent call that spawned
it. So the events here are the ones `ctx import` writes for the transcript Claude Code keeps
at `<project_key>/<session_id>.jsonl` (and `<session_id>/subagents/agent-*.jsonl`), after
every batch and at the end, and `ctx log`, `ctx show`, `ctx context`, `ctx export` work on a
session while the agent is still running.

`load` gives back the lines the events keep (what `ctx export --format claude-code`
writes), parsed; `delete` deletes the branch refs in one operation (`ctx undo` brings them
back until gc). The SDK's index fields (mtime, the summary sidecar) live in the live import's
state row beside the repository (.ctx/live.sqlite).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path, PurePosixPath
from typing import Any

from claude_agent_sdk import SessionStore, fold_session_summary

from ...errors import InvalidInput
from ...importers.export import _source_lines
from ...importers.live import Line, LiveImporter, parse_entries
from ...importers.records import event_line
from ...refs import branch_ref
from ...repo import Repository

_SEP = "\x1f"  # between the parts of a state key (no SDK key part contains it)
_PREFIX = "sdk" + _SEP


def _skey(key: dict) -> str:
    parts = (key["project_key"], key["session_id"], key.get("subpath") or "")
    for p in parts:
        if _SEP in p:
            raise InvalidInput(f"session key part {p!r} contains a control character")
    return _PREFIX + _SEP.join(parts)


def _vpath(key: dict) -> PurePosixPath:
    """Where Claude Code keeps this transcript, relative to its projects directory."""
    base = PurePosixPath(key["project_key"])
    sub = key.get("subpath")
    if not sub:
        return base / f"{key['session_id']}.jsonl"
    path = base / key["session_id"] / f"{sub}.jsonl"
    if not path.name.startswith("agent-"):
        raise InvalidInput(f"subpath {sub!r}: only subagent transcripts (subagents/…/agent-*) "
                           f"are SDK subkeys ctxstore knows how to import")
    return path


class CtxstoreSessionStore(SessionStore):
    """SessionStore for `ClaudeAgentOptions(session_store=CtxstoreSessionStore(path))`.

    `path` is a directory holding (or to hold) a `.ctx` store, or the `.ctx` directory.
    Every method is implemented; each append is one repository transaction, durable when it
    returns, costing O(batch)."""

    def __init__(self, path: str | os.PathLike) -> None:
        p = Path(path)
        if p.name == ".ctx" and (p / "config.json").exists():
            self.repo = Repository.open(p)
        elif (p / ".ctx" / "config.json").exists():
            self.repo = Repository.open(p / ".ctx")
        else:
            self.repo = Repository.init(p)
        self.live = LiveImporter(self.repo, check_same_thread=False)
        self._lock = threading.Lock()
        self._last_mtime = 0

    def close(self) -> None:
        with self._lock:
            self.live.close()
            self.repo.close()

    # -- the protocol ------------------------------------------------------------------------------
    async def append(self, key: dict, entries: list[dict]) -> None:
        await asyncio.to_thread(self.append_sync, key, entries)

    async def load(self, key: dict) -> list[dict] | None:
        return await asyncio.to_thread(self.load_sync, key)

    async def list_sessions(self, project_key: str) -> list[dict]:
        return await asyncio.to_thread(self._list, project_key, False)

    async def list_session_summaries(self, project_key: str) -> list[dict]:
        return await asyncio.to_thread(self._list, project_key, True)

    async def delete(self, key: dict) -> None:
        await asyncio.to_thread(self.delete_sync, key)

    async def list_subkeys(self, key: dict) -> list[str]:
        return await asyncio.to_thread(self._subkeys, key)

    # -- synchronous halves (also usable without an event loop) -----------------------------------
    def append_sync(self, key: dict, entries: list[dict]) -> None:
        if not entries:
            return
        skey, vpath = _skey(key), _vpath(key)
        main = not key.get("subpath")
        with self._lock:
            saved = self.live.row(skey)
            before = saved["n"] if saved else 0
            # a subagent's agent_metadata entries are its .meta.json, not transcript lines
            metadata, lines = [], []
            for e in entries:
                if not main and isinstance(e, dict) and e.get("type") == "agent_metadata":
                    metadata.append([before + len(lines), e])
                else:
                    lines.append(e)
            batch = self._new_only(skey, parse_entries(lines))
            if not batch and not metadata:
                return
            mtime = self._next_mtime()
            meta = {k: v for k, v in metadata[-1][1].items() if k != "type"} if metadata else None

            hint = (saved or {}).get("extra", {}).get("hint")
            if hint is None:
                hint = self._hint(key)

            def extra(saved_extra: dict) -> dict:
                out: dict[str, Any] = {"mtime": mtime, "hint": hint}
                if metadata:
                    out["metadata"] = [*saved_extra.get("metadata", []), *metadata]
                if main:  # the SDK's summary sidecar folds main transcripts only
                    folded = fold_session_summary(saved_extra.get("summary"), key, entries)
                    folded["mtime"] = mtime
                    out["summary"] = folded
                return out

            self.live.append(skey, vpath, batch, lambda: self._lines(skey), extra=extra,
                             meta=meta, source_hint=hint, message="claude-agent-sdk append")

    def _hint(self, key: dict) -> str:
        """The source session id for lines that carry no `sessionId`: the file name, as
        `ctx import` takes it, unless another project already has a session of that name
        (the SDK keeps projects apart; a file name alone would not)."""
        others = [k for k in self.live.keys(_PREFIX)
                  if k.split(_SEP)[2] == key["session_id"] and k.split(_SEP)[1] != key["project_key"]]
        return f"{key['project_key']}/{key['session_id']}" if others else ""

    def load_sync(self, key: dict) -> list[dict] | None:
        skey = _skey(key)
        with self._lock:
            row = self.live.row(skey)
            if row is None:
                return None
            out = [json.loads(text) for text, _v in self._lines(skey)]
            for pos, entry in reversed((row.get("extra") or {}).get("metadata", [])):
                out.insert(pos, entry)
            return out

    def delete_sync(self, key: dict) -> None:
        skey = _skey(key)
        with self._lock:
            keys = [skey] if key.get("subpath") else \
                [k for k in self.live.keys(skey) if k == skey or k.startswith(skey)]
            self.live.delete(keys, message=f"claude-agent-sdk delete: {key['session_id']}")

    # -- helpers -------------------------------------------------------------------------------
    def _next_mtime(self) -> int:
        """Storage write time in epoch ms, strictly increasing within this store (the SDK
        compares list_sessions' and the summaries' mtimes)."""
        now = int(time.time() * 1000)
        self._last_mtime = max(now, self._last_mtime + 1)
        return self._last_mtime

    def _lines(self, skey: str) -> list[Line]:
        """The lines imported under `skey`, in order (ctx export's reading of the events)."""
        row = self.live.row(skey)
        if row is None:
            return []
        sid = row["builders"][0]["sid"]
        mine = branch_ref(sid, "main").rsplit("/", 1)[0] + "/"
        tips = [t for t in (self.repo.refs.read(r) for r in row["tips"] if r.startswith(mine))
                if t]
        if not tips:  # its refs were deleted outside the SDK (ctx branch -d, undo)
            return []
        session = self.repo.session(sid)
        out: list[Line] = []
        for _n, ev in _source_lines(self.repo, sid, session, tips):
            text = event_line(self.repo.objects, ev.payload, ev.causality)
            if text is not None:
                out.append((text, json.loads(text)))
        return out

    def _new_only(self, skey: str, batch: list[Line]) -> list[Line]:
        """The SDK retries a failed batch and asks stores to treat `uuid` as an idempotency
        key: an entry whose uuid is stored already with the same content is dropped (a line
        reusing a uuid with other content is kept, as Claude Code's file keeps it)."""
        uuids = {v["uuid"] for _t, v in batch if isinstance(v, dict) and isinstance(v.get("uuid"), str)}
        if not uuids:
            return batch
        stored = self.live.stored_lines(skey, uuids)
        if not stored:
            return batch
        return [(t, v) for t, v in batch
                if not (isinstance(v, dict) and stored.get(v.get("uuid")) == v)]

    def _list(self, project_key: str, summaries: bool) -> list[dict]:
        prefix = _PREFIX + project_key + _SEP
        out = []
        with self._lock:
            for k in self.live.keys(prefix):
                pk, sid, sub = k[len(_PREFIX):].split(_SEP)
                if sub or pk != project_key:
                    continue
                extra = (self.live.row(k) or {}).get("extra") or {}
                if summaries:
                    if "summary" in extra:
                        out.append(extra["summary"])
                else:
                    out.append({"session_id": sid, "mtime": extra.get("mtime", 0)})
        return out

    def _subkeys(self, key: dict) -> list[str]:
        prefix = _PREFIX + key["project_key"] + _SEP + key["session_id"] + _SEP
        with self._lock:
            return [k[len(prefix):] for k in self.live.keys(prefix) if k != prefix]

    def __repr__(self) -> str:
        return f"CtxstoreSessionStore({str(self.repo.path)!r})"


def key_of(project_key: str, session_id: str, subpath: str | None = None) -> dict[str, Any]:
    """A SessionKey dict (the SDK's TypedDict needs no import for this)."""
    key: dict[str, Any] = {"project_key": project_key, "session_id": session_id}
    if subpath:
        key["subpath"] = subpath
    return key
