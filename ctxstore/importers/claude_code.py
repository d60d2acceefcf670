"""Claude Code transcripts (`~/.claude/projects/<dir>/<session>.jsonl`): the tree half.

Events follow the file order on lines of history. `main` is the chain Claude Code itself
resumes: walked back by `parentUuid` (`logicalParentUuid` across a compact boundary, whose
`parentUuid` is null) from the newest non-sidechain user/assistant line (`resume_chain`, a
first pass over the file). Records on that chain go on `main`; a typed request that leaves it
(or re-asks from a point of a branch that already led to a request) is a real rewind and
starts a branch `rewind-<uuid8>` at its parent; everything else continues the line its parent
is on. So the parentUuid forks Claude Code writes for parallel tool calls and
hook progress, a queue-delivered prompt whose parent is stale, and slash-command, caveat and
"[Request interrupted by user]" lines never make a branch. Sidechains (and a file without any
non-sidechain message) keep the older line-order rule: a typed request whose parent already
led to another typed request starts a branch, and the line holding the last record is main.

Subagents become child sessions (kind "subagent") linked to the spawning Task/Agent call:
inline sidechains (1.0.x) grouped by their root, `agent-*.jsonl` files beside the session
(2.0.x) and `<session>/subagents/agent-*.jsonl` + `.meta.json` (2.1.x).

A file ctxstore converted (`ctx resume` / `ctx export --format claude-code`) starts with a
`ctxstore-provenance` record: the import is then a fork of the session it came from (see
ctxstore.convert.import_link), not an unrelated session.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .. import jsonparse
from ..convert import PROVENANCE_KEY, import_link
from ..state.prompts import SKIP, classify_prompt, prompt_text, title_of
from .claude_map import FMT, FileState, content_text, is_prompt, map_record
from .common import MALFORMED, ImportContext, SessionBuilder, good_ts, iter_jsonl, peek_jsonl
from .idtable import IdTable

KNOWN_TYPES = frozenset({
    "user", "assistant", "system", "summary", "attachment", "progress", "file-history-snapshot",
    "queue-operation", "permission-mode", "last-prompt", "mode", "agent-name", "custom-title",
    "ai-title", "frame-link", "pr-link", "started", "result", "relocated", "worktree-state",
    "bridge-session", "atis-latch",
    "ctxstore-provenance",  # the first line of a file ctxstore converted (ctxstore/convert)
})


def is_agent_file(path: Path) -> bool:
    return path.name.startswith("agent-")


def _head(path: Path) -> dict[str, Any]:
    """Session id, first timestamp, cwd, agent id and first prompt from the file's first lines."""
    return _head_of(peek_jsonl(path))


def _head_of(records: Iterable[Any], out: dict[str, Any] | None = None) -> dict[str, Any]:
    """_head over parsed lines; with `out`, continues a head read from earlier lines (each
    field is the first one found, so the fold goes on where it stopped)."""
    if out is None:
        out = {"session": "", "ts": "", "cwd": "", "agent": "", "prompt": None, "title": ""}
    for rec in records:
        if not isinstance(rec, dict):
            continue
        if rec.get("type") == "ctxstore-provenance" and "provenance" not in out:
            out["provenance"] = rec.get(PROVENANCE_KEY)
        if not out["session"] and isinstance(rec.get("sessionId"), str):
            out["session"] = rec["sessionId"]
        snap = rec.get("snapshot") if isinstance(rec.get("snapshot"), dict) else {}
        ts = good_ts(rec.get("timestamp")) or good_ts(snap.get("timestamp"))
        if not out["ts"] and ts:
            out["ts"] = ts
        if not out["cwd"] and isinstance(rec.get("cwd"), str):
            out["cwd"] = rec["cwd"]
        if not out["agent"] and isinstance(rec.get("agentId"), str):
            out["agent"] = rec["agentId"]
        if is_prompt(rec):
            text = content_text(rec["message"].get("content"))
            if out["prompt"] is None:
                out["prompt"] = text
            if not out["title"]:
                out["title"] = title_of(prompt_text(text))
    return out


def is_request(rec: dict) -> bool:
    """A prompt the user typed, not markup (a harness command, its output, a caveat or an
    interrupted-request marker): only these can start a rewind."""
    if not is_prompt(rec):
        return False
    return classify_prompt(content_text(rec["message"].get("content")))[0] != SKIP


def _parent_of(rec: dict) -> str | None:
    parent = rec.get("parentUuid")
    if parent is None:
        parent = rec.get("logicalParentUuid")  # a compact_boundary continues its logical parent
    return parent if isinstance(parent, str) else None


def resume_chain(path: Path) -> ResumeChain | None:
    """The uuids Claude Code resumes: walked back by parentUuid (logicalParentUuid across a
    compact boundary) from the newest non-sidechain user/assistant line. None when the file
    has no such line (the line-order rule applies then)."""
    def records():
        links, link_error = _link_decoder()
        with open(path, "rb") as fh:
            for raw in fh:
                try:  # the five fields chain_of reads (~4x faster than the whole line)
                    yield links(raw)
                except link_error:  # not a JSON object msgspec reads: the whole line decides
                    try:
                        yield jsonparse.loads(raw)
                    except ValueError:
                        continue

    return chain_of(records(), expect=path.stat().st_size // LINE_BYTES_GUESS)


#: bytes a transcript line is taken to have when sizing the id tables from the file size: the
#: corpus's Claude Code files average 1.96 KB (0.3-4 KB each); a guess too small leaves empty
#: slots (4-8 bytes an expected line), too large costs one more growth of the table
LINE_BYTES_GUESS = 2048


def chain_of(records: Iterable[Any], expect: int = 0) -> ResumeChain | None:
    """resume_chain over parsed lines (the live importer holds them, not a file); `expect`:
    about how many lines there are."""
    table = IdTable(expect=expect)
    parents = array("i")  # row -> its parent's row, -1 for none, -2 for a uuid of no line
    leaf = row = -1
    last = None
    links = _links_type()
    if links is dict:  # pragma: no cover - msgspec is a core dependency
        links = type(None)
    for rec in records:
        if type(rec) is links:  # the prepass's five fields: attributes, not five get calls
            uuid, parent, kind, side = rec.uuid, rec.parentUuid, rec.type, rec.isSidechain
            if parent is None:
                parent = rec.logicalParentUuid
        elif isinstance(rec, dict):
            uuid, parent, kind, side = (rec.get("uuid"), rec.get("parentUuid"), rec.get("type"),
                                        rec.get("isSidechain"))
            if parent is None:
                parent = rec.get("logicalParentUuid")
        else:
            continue
        if not isinstance(uuid, str):
            continue
        if not isinstance(parent, str):  # as _parent_of reads it
            parent = None
        if parent is None:
            prow = -1
        elif parent == last:  # most lines follow the line before: no lookup
            prow = row
        else:
            prow = table.add(parent)
        row, last = table.add(uuid), uuid
        if row >= len(parents) or prow >= len(parents):  # new rows: room for them
            parents.extend(_NO_LINE * (max(row, prow) + 1 - len(parents)))
        parents[row] = prow  # a uuid seen again: its newest line's parent, as a dict gave
        if kind in ("user", "assistant") and not side:
            leaf = row
    if leaf < 0:
        return None
    on = bytearray(len(table))
    cur = leaf
    while cur >= 0 and not on[cur] and parents[cur] != -2:
        on[cur] = 1
        cur = parents[cur]
    return ResumeChain(table, on)


_NO_LINE = array("i", [-2])


class ResumeChain:
    """The uuids on the resume chain: a flag per row of the file's IdTable, which the uuid
    index (_Index) then shares, so each uuid is stored once for both. Reads as a set of uuid
    strings (`in`, iteration, len)."""

    __slots__ = ("table", "_on")

    def __init__(self, table: IdTable, on: bytearray) -> None:
        self.table, self._on = table, on

    def __contains__(self, uuid: object) -> bool:
        if type(uuid) is not str and not isinstance(uuid, str):
            return False
        r = self.table.find(uuid)
        return 0 <= r < len(self._on) and self._on[r] == 1

    def __iter__(self) -> Iterator[str]:
        return (self.table.id_at(r) for r, on in enumerate(self._on) if on)

    def __len__(self) -> int:
        return self._on.count(1)


def is_leaf(rec: Any) -> bool:
    """A line the resume chain can start from (the newest one does)."""
    return (isinstance(rec, dict) and isinstance(rec.get("uuid"), str)
            and rec.get("type") in ("user", "assistant") and not rec.get("isSidechain"))


_LINKS: tuple | None = None


def _link_decoder():
    """(decode, error types): a msgspec decoder of the five link fields of a line into an
    object with `get` (other keys are skipped, not built), or json via jsonparse without
    msgspec. Values are those of the parsed line: msgspec refuses what json.loads reads
    differently, and the caller then parses the whole line."""
    global _LINKS
    if _LINKS is None:
        try:
            import msgspec
        except ImportError:  # pragma: no cover - a core dependency
            def decode(raw: bytes) -> Any:
                raise ValueError("no msgspec")
            _LINKS = (decode, ValueError, dict)
            return _LINKS[:2]

        class Links(msgspec.Struct):
            uuid: Any = None
            parentUuid: Any = None
            logicalParentUuid: Any = None
            type: Any = None
            isSidechain: Any = None

            def get(self, key: str, default: Any = None) -> Any:
                return getattr(self, key, default)

        _LINKS = (msgspec.json.Decoder(Links).decode, msgspec.MsgspecError, Links)
    return _LINKS[:2]


def _links_type() -> type:
    """The class `_link_decoder` decodes into (chain_of reads it like a dict)."""
    _link_decoder()
    return _LINKS[2]


class _Entry:
    __slots__ = ("builder", "parent", "event", "gen", "marked", "line")

    def __init__(self, builder, parent, event, gen, line=0):
        self.builder, self.parent, self.event, self.gen = builder, parent, event, gen
        self.marked = False
        self.line = line


class _Index:
    """uuid -> _Entry of the lines placed so far, held in arrays by row of an IdTable (the
    resume chain's, when there is one): ~120 bytes a line with the uuid itself instead of
    ~290 plus a ~90-byte string, since a file's every line stays in it until the file is done.
    `get` hands out a new _Entry each time, so a changed one is stored back (`index[uuid] =
    ent`, as `_mark` does)."""

    __slots__ = ("_table", "_placed", "_count", "_builders", "_bpos", "_b", "_parent", "_event",
                 "_gen", "_line", "_marked")

    def __init__(self, table: IdTable | None = None) -> None:
        self._table = table if table is not None else IdTable()
        self._placed = bytearray()  # row -> 1 once a line with that uuid was placed
        self._count = 0
        self._builders: list[SessionBuilder] = []
        self._bpos: dict[int, int] = {}  # id(builder) -> its position in _builders
        self._b = array("H")
        self._parent = array("i")  # row of the parent's uuid, -1 for none
        self._event = bytearray()  # 32 raw bytes a row
        self._gen = array("q")
        self._line = array("i")
        self._marked = bytearray()

    def __len__(self) -> int:
        return self._count

    def _row(self, uuid: object) -> int:
        if type(uuid) is not str and not isinstance(uuid, str):
            return -1
        r = self._table.find(uuid)
        return r if 0 <= r < len(self._placed) and self._placed[r] else -1

    def __contains__(self, uuid: object) -> bool:
        return self._row(uuid) >= 0

    def get(self, uuid: str, default: _Entry | None = None) -> _Entry | None:
        if type(uuid) is not str and not isinstance(uuid, str):
            return default
        i = self._table.find(uuid)
        if i < 0 or i >= len(self._placed) or not self._placed[i]:
            return default
        return _IndexEntry(self._table, self._parent[i], self._builders[self._b[i]],
                           self._event[32 * i:32 * i + 32].hex(), self._gen[i], self._line[i],
                           bool(self._marked[i]))

    def __getitem__(self, uuid: str) -> _Entry:
        e = self.get(uuid)
        if e is None:
            raise KeyError(uuid)
        return e

    def mark_ancestors(self, uuid: str | None) -> None:
        """ClaudeFile._mark over rows: `uuid` and its ancestors are marked up to the first
        one that already is (or one never placed)."""
        i = self._row(uuid) if uuid else -1
        placed, marked, parent = self._placed, self._marked, self._parent
        while i >= 0 and placed[i] and not marked[i]:
            marked[i] = 1
            i = parent[i]

    def __setitem__(self, uuid: str, e: _Entry) -> None:
        self.put(uuid, e.builder, e.parent, e.event, e.gen, e.line, e.marked)

    def put(self, uuid: str, builder: Any, parent_uuid: str | None, event: str, gen: int,
            line: int, marked: bool = False) -> None:
        """`index[uuid] = _Entry(...)` without the _Entry (once a line)."""
        b = self._bpos.get(id(builder))
        if b is None:
            b = self._bpos[id(builder)] = len(self._builders)
            self._builders.append(builder)
        raw = bytes.fromhex(event)
        if len(raw) != 32:
            raise ValueError(f"not an event id: {event!r}")
        parent = self._table.add(parent_uuid) if parent_uuid is not None else -1
        i = self._table.add(uuid)
        placed = self._placed
        if i >= len(placed) or parent >= len(placed):
            # room for every row of the table (the chain's rows too), none of them placed yet
            grow = len(self._table) - len(placed)
            placed += bytes(grow)
            self._b.extend(_ZERO_H * grow)
            self._parent.extend(_NONE_I * grow)
            self._event += bytes(32 * grow)
            self._gen.extend(_ZERO_Q * grow)
            self._line.extend(_ZERO_I * grow)
            self._marked += bytes(grow)
        if not placed[i]:
            placed[i] = 1
            self._count += 1
        self._b[i], self._parent[i], self._gen[i], self._line[i] = b, parent, gen, line
        self._event[32 * i:32 * i + 32] = raw
        self._marked[i] = 1 if marked else 0


class _IndexEntry(_Entry):
    """An _Entry read from _Index: its parent's uuid is made from the row only when asked for
    (placing a line reads its parent's entry but not the grandparent's uuid)."""

    __slots__ = ("_table", "_prow")

    def __init__(self, table: IdTable, prow: int, builder, event, gen, line, marked) -> None:
        self._table, self._prow = table, prow
        self.builder, self.event, self.gen, self.line, self.marked = (builder, event, gen, line,
                                                                      marked)

    @property
    def parent(self) -> str | None:  # type: ignore[override]
        p = self._prow
        if type(p) is int:
            return self._table.id_at(p) if p >= 0 else None
        return p

    @parent.setter
    def parent(self, value: str | None) -> None:
        self._prow = value


_ZERO_H, _ZERO_Q, _ZERO_I, _NONE_I = array("H", [0]), array("q", [0]), array("i", [0]), array("i", [-1])


class ClaudeFile:
    def __init__(self, ctx: ImportContext, path: Path) -> None:
        self.ctx = ctx
        self.path = path
        self.name = path.name
        self.index: Any = _Index()  # uuid -> _Entry (the live importer: a persistent map)
        self.groups: dict[str, SessionBuilder] = {}
        self.builders: list[SessionBuilder] = []
        self.newest_on_line: dict[int, str] = {}  # main builder: line -> newest uuid on it
        self.expect_lines = 0  # about how many lines the file has (sizes the tables)

    def run(self) -> None:
        self.expect_lines = self.path.stat().st_size // LINE_BYTES_GUESS
        self.start(_head(self.path),
                   None if is_agent_file(self.path) else resume_chain(self.path))
        for n, text, rec in iter_jsonl(self.ctx, self.path):
            self.feed(n, text, rec)
        self.end()

    # start / feed / end: run() in three steps, so the live importer (live.py) can feed lines
    # as they are written and stop after any of them
    def start(self, head: dict, chain: Any) -> None:
        """`chain`: the resume chain (a ResumeChain, or a set-like of uuids), None for none."""
        if isinstance(chain, ResumeChain) and type(self.index) is _Index and not len(self.index):
            self.index = _Index(chain.table)  # one row per uuid for both
        source = head["session"] or self.path.stem
        self.fs = FileState(source, self.expect_lines)
        self.main = self._open_main(head, source)
        self.builders.append(self.main)
        self.chain = chain

    def feed(self, n: int, text: str, rec: Any) -> None:
        if rec is MALFORMED:
            self.main.begin(n, rec, text)
            self.main.append(f"{FMT}:malformed", "system", {})
            return
        self._one(n, text, rec)

    def end(self) -> None:
        if self.chain is not None:
            self.main.cur = 0  # main is the line Claude Code resumes
        for b in self.builders:
            b.finish()

    def meta(self) -> dict:
        """The subagent's `.meta.json` beside its transcript ({} if none)."""
        return _meta(self.path)

    def _open_main(self, head: dict, source: str) -> SessionBuilder:
        common = dict(fmt=FMT, file=self.name, source_id=source, ts=head["ts"], cwd=head["cwd"],
                      title=head["title"])
        if not is_agent_file(self.path):
            # a file ctx resume/export wrote links back to the session it came from
            link = import_link(self.ctx.repo, head.get("provenance"))
            origin = {"format": FMT, "id": source, **link.pop("origin", {})}
            return SessionBuilder(self.ctx, nonce=source, origin=origin, **link, **common)
        agent = head["agent"] or self.path.stem[len("agent-"):]
        meta = self.meta()
        parent = self.ctx.find_session(FMT, source)
        spawn = self.ctx.agent_spawns.get((source, agent), "")
        if not spawn and head["prompt"] is not None:
            queue = self.ctx.task_prompts.get((source, head["prompt"]), [])
            spawn = queue.pop(0) if queue else ""
        if not parent:
            self.ctx.warn(self.name, 1, f"subagent of session {source} whose parent transcript "
                                        f"was not imported; imported without a parent link")
        origin = {"format": FMT, "id": source, "agent_id": agent, "layout": _layout(self.path)}
        if meta:
            origin["meta"] = meta
            common["title"] = str(meta.get("description", "")) or common["title"]
        return SessionBuilder(self.ctx, nonce=f"{source}/agent-{agent}", origin=origin,
                              kind="subagent", parent_session=parent, spawn_event=spawn,
                              agent=agent, **common)

    def _one(self, n: int, text: str, rec: dict) -> None:
        t = rec.get("type")
        if t not in KNOWN_TYPES:
            self.ctx.warn(self.name, n, f"unknown record type {t!r}; kept as {FMT}:{t}")
        uuid = rec.get("uuid") if isinstance(rec.get("uuid"), str) else ""
        b = self.main
        if uuid and rec.get("isSidechain") and not is_agent_file(self.path):
            b = self._sidechain(rec, uuid)
        b.begin(n, rec, text)
        if not uuid:
            parent = None
        elif b is self.main and self.chain is not None:
            parent = self._place(b, rec, uuid, n)
        else:
            parent = self._position(b, rec, uuid, n)
        map_record(b, self.fs, rec, n)
        if uuid:
            tip = b.lines[b.cur]
            if type(self.index) is _Index:
                self.index.put(uuid, b, parent, tip[0], tip[1], b.cur)
            else:  # the live importer's persistent map
                self.index[uuid] = _Entry(b, parent, tip[0], tip[1], b.cur)
            if b is self.main:
                self.newest_on_line[b.cur] = uuid
            if is_request(rec):
                self._mark(parent)

    def _place(self, b: SessionBuilder, rec: dict, uuid: str, n: int) -> str | None:
        """Put a main-file record on its line: the resume chain is line 0 (`main`); a typed
        request off the chain is a real rewind and starts a branch at its parent; anything
        else (parallel tool results, hooks, a queue-delivered prompt's stale parent, command
        and caveat lines) continues the line its parent is on."""
        line = b.lines[b.cur]
        if not line[2]:
            line[2] = uuid[:8]
        parent = _parent_of(rec)
        on_chain = uuid in self.chain
        if on_chain:  # where the parent is does not matter: only whether it was placed
            ent = None
            known = parent is not None and parent in self.index
        else:
            ent = self.index.get(parent) if parent is not None else None
            known = ent is not None
        if parent is not None and not known:
            self.ctx.warn(self.name, n, f"dangling parent {parent!r} (no such uuid earlier in "
                                        f"the file); attached after the previous record")
        if on_chain:
            b.cur = 0
        elif ent is not None and ent.builder is b:
            # a request that leaves the chain, or re-asks from a point of a branch that
            # already led to another request, is a rewind; the rest follows its parent
            if is_request(rec) and (parent in self.chain or ent.marked):
                tip = b.lines[ent.line]
                if self.newest_on_line.get(ent.line) == parent:  # keep the uuid-less records
                    b.fork(tip[0], tip[1], uuid[:8])  # that followed the parent (snapshots)
                else:
                    b.fork(ent.event, ent.gen, uuid[:8])
            else:
                b.cur = ent.line
        return parent if known else None

    def _position(self, b: SessionBuilder, rec: dict, uuid: str, n: int) -> str | None:
        """Fork a new line if this record is a real rewind; returns its (logical) parent."""
        line = b.lines[b.cur]
        if not line[2]:
            line[2] = uuid[:8]
        parent = _parent_of(rec)
        if parent is None:
            return None
        ent = self.index.get(parent)
        if ent is None:
            self.ctx.warn(self.name, n, f"dangling parent {parent!r} (no such uuid earlier in "
                                        f"the file); attached after the previous record")
            return None
        if ent.builder is b and ent.marked and is_request(rec):
            b.fork(ent.event, ent.gen, uuid[:8])
        return parent

    def _mark(self, parent: str | None) -> None:
        """Mark `parent` and its ancestors up to the first marked one: points a typed request
        was asked from (a later request from one of them is a rewind)."""
        if type(self.index) is _Index:  # by row, without making each ancestor's uuid again
            self.index.mark_ancestors(parent)
            return
        while parent:
            ent = self.index.get(parent)
            if ent is None or ent.marked:
                return
            ent.marked = True
            self.index[parent] = ent  # stored back: the index may hand out copies (_Index)
            parent = ent.parent

    def _sidechain(self, rec: dict, uuid: str) -> SessionBuilder:
        parent = rec.get("parentUuid")
        ent = self.index.get(parent) if isinstance(parent, str) else None
        if ent is not None and ent.builder is not self.main:
            return ent.builder
        key = rec.get("agentId") if isinstance(rec.get("agentId"), str) else uuid
        if key in self.groups:
            return self.groups[key]
        src = self.fs.source_id
        spawn = self.ctx.agent_spawns.get((src, key), "")
        msg = rec.get("message")
        if not spawn and rec.get("type") == "user" and isinstance(msg, dict):
            queue = self.ctx.task_prompts.get((src, content_text(msg.get("content"))), [])
            spawn = queue.pop(0) if queue else ""
        if not spawn:
            self.ctx.report.notes.append(f"{self.name}: sidechain {key} has no matching "
                                         f"Task/Agent call; linked to its session only")
        b = SessionBuilder(self.ctx, fmt=FMT, file=self.name, source_id=src,
                           ts=rec.get("timestamp") or self.main.last_ts,
                           nonce=f"{src}/sidechain/{key}", kind="subagent",
                           origin={"format": FMT, "id": src, "agent_id": key, "layout": "inline"},
                           parent_session=self.main.sid, spawn_event=spawn, agent=key,
                           cwd=rec.get("cwd") if isinstance(rec.get("cwd"), str) else "")
        self.groups[key] = b
        self.builders.append(b)
        return b


def _layout(path: Path) -> str:
    return "subagents-dir" if path.parent.name == "subagents" else "beside-session"


def _meta(path: Path) -> dict:
    meta_path = path.with_suffix(".meta.json")
    try:
        value = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def import_file(ctx: ImportContext, path: Path) -> None:
    from .claude_summary import attach, summaries_only  # only summary files pay

    summaries = summaries_only(path) if path.stat().st_size < (1 << 20) else []
    f = ClaudeFile(ctx, path)
    f.run()
    if summaries:  # after every file: the transcript it names may come later in the walk
        ctx.after_files.append(lambda: attach(ctx, path, f.main.sid, summaries))
