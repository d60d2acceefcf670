"""What every transcript importer shares: streaming lines, warnings, records, and a session writer.

Importers never hold a whole file: `iter_jsonl` yields one line at a time and a
`SessionBuilder` writes each event as soon as it is mapped. What survives a line is small
(ids, tips, uuid -> event index), so memory grows with the number of records, not their size.

Losslessness rests on one rule: every original line is stored as a `record` object and the
first event mapped from it names the record (`causality.record_id`) and its place
(`payload.source = {format, file, line}`). Export walks those events in line order. The
record is written with that first event, after the line's messages, so it can name them
instead of repeating their strings (records.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import codec, jsonparse
from ..chunking import ChunkParams, put_large
from ..errors import CorruptObject, InvalidInput
from ..objects import Artifact, Compaction, Message, ToolCallBlock, ToolResultBlock
from ..refs import branch_ref
from ..repo import Repository, Transaction
from ..userfiles import open_input
from .records import MALFORMED, keep_line

PREVIEW_CHARS = 280  # event payload previews; the message holds the whole text
ARTIFACT_PREVIEW_CHARS = 2000  # what a message keeps of an output moved to an artifact
_TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d")
EPOCH = "1970-01-01T00:00:00.000Z"

FLUSH_EVERY = 16 << 20  # input bytes between store flushes
OPEN_CALL_MESSAGES = 256  # calling messages kept for their results' records

Progress = Callable[[int, int, str], None]


@dataclass
class SessionStats:
    session: str
    format: str
    file: str
    source_id: str
    kind: str
    events: int = 0
    new_events: int = 0
    records: int = 0
    tool_pairs: int = 0
    compactions: int = 0
    artifacts: int = 0
    branches: dict[str, str] = field(default_factory=dict)
    parent_session: str = ""
    spawn_event: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class ImportReport:
    """What an import did. `warnings` are bad-input findings: {file, line, message}."""

    sessions: list[SessionStats] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    files: int = 0
    bytes: int = 0

    @property
    def events(self) -> int:
        return sum(s.events for s in self.sessions)

    @property
    def new_events(self) -> int:
        return sum(s.new_events for s in self.sessions)

    @property
    def artifacts(self) -> int:
        return sum(s.artifacts for s in self.sessions)

    def summary(self) -> dict[str, Any]:
        return {"files": self.files, "bytes": self.bytes, "sessions": len(self.sessions),
                "events": self.events, "new_events": self.new_events,
                "artifacts": self.artifacts, "warnings": len(self.warnings)}

    def to_dict(self) -> dict[str, Any]:
        return {**self.summary(), "session_stats": [s.to_dict() for s in self.sessions],
                "warning_list": list(self.warnings), "notes": list(self.notes)}


class ImportContext:
    """State shared by all files of one `import_paths` call: repo, report, cross-file links."""

    def __init__(self, repo: Repository, tx: Transaction, progress: Progress | None = None,
                 total_bytes: int = 0) -> None:
        self.repo = repo
        #: the one transaction of the whole import: every session's refs move at its commit,
        #: together (one operation, undone as one; a killed import leaves no session behind)
        self.tx = tx
        self.report = ImportReport()
        self.progress = progress
        self.total_bytes = total_bytes
        self.done_bytes = 0
        self.threshold = int(repo.config.get("artifact_threshold", 4096))
        self.chunking = ChunkParams.from_config(repo.config)
        #: (format, source session id, agent id) -> ctx session id
        self.sessions: dict[tuple[str, str, str], str] = {}
        #: (source session id, agent id) -> spawning ToolCallRequested event
        self.agent_spawns: dict[tuple[str, str], str] = {}
        #: (source session id, prompt text) -> spawning ToolCallRequested events, oldest first
        self.task_prompts: dict[tuple[str, str], list[str]] = {}
        #: work that needs every file of the import first (a Claude Code summary file naming a
        #: message of a transcript later in the walk): run in order before the commit
        self.after_files: list[Callable[[], None]] = []
        self._indexed = False

    def warn(self, file: str, line: int, message: str) -> None:
        self.report.warnings.append({"file": file, "line": line, "message": message})

    def find_session(self, fmt: str, source_id: str, agent: str = "") -> str:
        """A ctx session imported from that source session, in this run or an earlier one."""
        key = (fmt, source_id, agent)
        if key not in self.sessions and not self._indexed:
            self._indexed = True
            for sid in self.repo.session_ids():
                try:
                    origin = self.repo.session(sid).origin
                except CorruptObject as exc:  # skipping it could import a duplicate of it
                    raise CorruptObject(f"session {sid} cannot be read, so this import could "
                                        f"not tell whether it is that session again: {exc} "
                                        f"(nothing more was imported; `ctx fsck` lists the "
                                        f"damage)", id=sid) from exc
                if origin.get("format") and origin.get("id"):
                    k = (origin["format"], origin["id"], origin.get("agent_id", ""))
                    self.sessions.setdefault(k, sid)
        return self.sessions.get(key, "")

    def advance(self, nbytes: int, path: str) -> None:
        before = self.done_bytes
        self.done_bytes += nbytes
        if self.done_bytes // FLUSH_EVERY != before // FLUSH_EVERY:
            self.repo.objects.flush()  # bounded write buffers on a very large file
        if self.progress is not None:
            self.progress(self.done_bytes, self.total_bytes, path)


def open_lines(path: Path):
    """The file's bytes to read line by line: `open_input`, or for a zstd-compressed file
    (`*.zst`, as Codex writes `rollout-*.jsonl.zst`) its decompressed stream (a stream that
    is not zstd raises InvalidInput naming the file; a cut one ends at the cut)."""
    if not str(path).endswith(".zst"):
        return open_input(path)
    import io

    import zstandard

    class _Zst(io.RawIOBase):
        def __init__(self, raw) -> None:
            self.raw = raw
            self.stream = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)

        def readable(self) -> bool:
            return True

        def readinto(self, buf) -> int:
            try:
                data = self.stream.read(len(buf))
            except zstandard.ZstdError as exc:
                raise InvalidInput(f"{path}: not a readable zstd stream ({exc})") from None
            buf[:len(data)] = data
            return len(data)

        def close(self) -> None:
            if not self.closed:
                self.raw.close()
            super().close()

    return io.BufferedReader(_Zst(open_input(path)), 1 << 16)


def iter_jsonl(ctx: ImportContext, path: Path) -> Iterator[tuple[int, str, Any]]:
    """(line number, text, parsed object or MALFORMED) for each non-empty line, streamed.

    Bad lines are reported here, once, with file and line; the caller keeps their raw text so
    nothing is dropped. A last line without a newline that fails to parse is "truncated".
    """
    name = path.name
    step, pending = 1 << 20, 0
    with open_lines(path) as fh:
        for n, raw in enumerate(fh, 1):
            pending += len(raw)
            if pending >= step:
                ctx.advance(pending, str(path))
                pending = 0
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                ctx.warn(name, n, f"invalid UTF-8 ({exc.reason}); undecodable bytes replaced")
                text = raw.decode("utf-8", errors="replace")
            text = text.rstrip("\r\n")
            if not text.strip():
                continue
            try:
                value = jsonparse.loads(text)
            except ValueError as exc:
                if not raw.endswith(b"\n"):
                    ctx.warn(name, n, f"truncated last line ({len(raw)} bytes, {exc.msg}); kept as raw text")
                else:
                    ctx.warn(name, n, f"malformed JSON ({exc.msg} at column {exc.colno}); kept as raw text")
                yield n, text, MALFORMED
                continue
            if not isinstance(value, dict):
                ctx.warn(name, n, f"a {type(value).__name__} where a JSON object was expected; kept as raw text")
                yield n, text, MALFORMED
                continue
            yield n, text, value
    ctx.advance(pending, str(path))


def peek_jsonl(path: Path, limit: int = 200) -> Iterator[dict]:
    """The first parseable JSON objects of a file (format detection, session metadata)."""
    with open_lines(path) as fh:
        for i, raw in enumerate(fh):
            if i >= limit:
                return
            try:
                value = jsonparse.loads(raw)  # json.loads's value, by msgspec where it can
            except ValueError:
                continue
            if isinstance(value, dict):
                yield value


def as_str(value: Any) -> str:
    """VALUE if it is a string, else "" (a field of an odd record may hold anything)."""
    return value if isinstance(value, str) else ""


def as_int(value: Any) -> int:
    """VALUE as an int if it is a number (not a bool, not NaN), else 0: token counts."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
    return int(value) if ok else 0


def usage_payload(input_tokens: int, cached: int, output: int) -> dict[str, int]:
    """A ModelResponseReceived usage in the convention trace.normalize_usage reads: every
    input token (cached included), the cached part, every output token (reasoning included)."""
    return {"input_tokens": input_tokens, "cached_input_tokens": cached, "output_tokens": output}


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    return text if len(text) <= limit else text[:limit]


def args_preview(args: Any, limit: int = 1000) -> tuple[Any, bool]:
    """Tool-call args for an event payload: strings over `limit` chars cut (the message's
    tool_call block keeps them whole), and whether anything was cut."""
    cut = False

    def walk(v: Any) -> Any:
        nonlocal cut
        if isinstance(v, str) and len(v) > limit:
            cut = True
            return v[:limit]
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(args), cut


def tool_requested_payload(tcid: str, name: str, args: Any) -> dict[str, Any]:
    short, cut = args_preview(args)
    payload = {"tool_call_id": tcid, "name": name, "args": short}
    if cut:
        payload["args_truncated"] = True
    return payload


def good_ts(value: Any) -> str | None:
    return value if isinstance(value, str) and _TS.match(value) else None


# ---------------------------------------------------------------------------------------------
# Writing one session
# ---------------------------------------------------------------------------------------------

class SessionBuilder:
    """Appends events of one imported session along "lines" (chains of events); a line is
    started by a fork at a real rewind. At `finish`, the current line is `main` and every other
    line a branch, moved by compare-and-swap and only forward unless the source was rewritten."""

    def __init__(self, ctx: ImportContext, *, fmt: str, file: str, source_id: str, ts: str,
                 nonce: str, origin: dict, kind: str = "main", title: str = "",
                 parent_session: str = "", spawn_event: str = "", cwd: str = "",
                 agent: str = "") -> None:
        self.ctx = ctx
        self.repo = ctx.repo
        self.objects = ctx.repo.objects
        self.fmt = fmt
        self.file = file
        self.source_id = source_id
        self.cwd = cwd
        self.last_ts = good_ts(ts) or EPOCH
        self.tx = ctx.tx
        self.sid, self.root = self.tx.new_session(
            title=title, ts=self.last_ts, kind=kind, parent_session=parent_session,
            spawn_event=spawn_event, origin=origin, nonce=nonce, cwd=cwd, checkout=False)
        ctx.sessions[(fmt, source_id, agent)] = self.sid
        self.stats = SessionStats(self.sid, fmt, file, source_id, kind,
                                  parent_session=parent_session, spawn_event=spawn_event)
        ctx.report.sessions.append(self.stats)
        self.stats.events = 1  # SessionStarted; new_events counts only events mapped from lines
        # each line: [tip id, tip generation, name hint]
        self.lines: list[list[Any]] = [[self.root, 1, ""]]
        self.cur = 0
        self._source: dict | None = None
        self._pending: tuple[Any, str] | None = None  # (parsed line, text) awaiting its record
        self._line_messages: list[tuple[str, dict]] = []  # (id, stored form) mapped from it
        #: tool call id -> (id, stored form) of the message that made the call, until answered
        self._call_messages: dict[str, tuple[str, dict]] = {}
        self.last_compaction = ""  # event id of the last CompactionCompleted on this session
        self.pending_boundary = ""  # a CompactionStarted waiting for its summary
        self.pending_meta: dict = {}

    # -- records and positions ---------------------------------------------------------------
    @property
    def tip(self) -> str:
        return self.lines[self.cur][0]

    @property
    def tip_gen(self) -> int:
        return self.lines[self.cur][1]

    def begin(self, line_no: int, value: Any, text: str) -> None:
        """Start one source line. Its record is stored when the line's first event is appended,
        so that it can leave out what the messages mapped so far already hold; that event
        names the record (`causality.record_id`) and carries the line's `payload.source`."""
        self._pending = (value, text)
        self._line_messages = []
        self._source = {"format": self.fmt, "file": self.file, "line": line_no}
        self.stats.records += 1

    def ts(self, value: Any) -> str:
        ts = good_ts(value)
        if ts:
            self.last_ts = ts
        return self.last_ts

    def fork(self, event_id: str, generation: int, hint: str) -> None:
        """Start a new line at `event_id` (a real rewind in the source)."""
        self.lines.append([event_id, generation, hint])
        self.cur = len(self.lines) - 1

    # -- objects -------------------------------------------------------------------------------
    def put(self, obj) -> str:
        return self.objects.put_object(obj)

    def message(self, role: str, blocks: list, meta: dict | None = None,
                provenance: dict | None = None) -> str:
        fields = Message.fields_of(role, blocks, provenance or {"source": self.fmt}, meta or {})
        mid, body = codec.encode_object("message", fields)
        self.objects.put_encoded(mid, "message", body)
        calls = [b.tool_call_id for b in blocks if isinstance(b, ToolCallBlock)]
        if self._pending is not None or calls:
            stored = (mid, codec.unpack_value(body))
            if self._pending is not None:
                self._line_messages.append(stored)
            for tcid in calls:
                self._call_messages[tcid] = stored
            while len(self._call_messages) > OPEN_CALL_MESSAGES:  # calls never answered
                del self._call_messages[next(iter(self._call_messages))]
        return mid

    def tool_output(self, text: str, source_event: str) -> tuple[str, str, int]:
        """(preview, artifact id or "", size) of a tool output; big ones become artifacts."""
        data = text.encode("utf-8", "replace")
        if len(data) <= self.ctx.threshold:
            return text, "", len(data)
        blob = put_large(self.objects, data, self.ctx.chunking)  # chunked above the threshold
        pv = preview(text, ARTIFACT_PREVIEW_CHARS)
        art = self.put(Artifact("tool_output", blob, len(data), summary=pv[:200],
                                source_event=source_event))
        self.stats.artifacts += 1
        return pv, art, len(data)

    def tool_result(self, tcid: str, name: str, requested: str, text: str, is_error: bool,
                    ts: str, meta: dict | None = None) -> str:
        """The result half of a tool pair: Message(role tool) + ToolCallFinished/Failed, with
        an artifact for a large output. Returns the event id."""
        pv, art, size = self.tool_output(text, requested)
        block = ToolResultBlock(tcid, text="" if art else text, preview=pv if art else "",
                                output_ref=art, is_error=is_error, truncated=bool(art))
        mid = self.message("tool", [block], meta=meta)
        call = self._call_messages.pop(tcid, None)
        if call is not None and self._pending is not None:
            if call[1] is None:  # a live import resumed from its state keeps only the id
                call = (call[0], codec.unpack_value(self.objects.get_raw(call[0])[1]))
            self._line_messages.append(call)  # a result repeats its call's input (Edit, Write)
        caus = {"tool_call_id": tcid, "message_id": mid, **({"artifact_id": art} if art else {})}
        self.stats.tool_pairs += 1
        if is_error:
            return self.append("ToolCallFailed", "tool", {"tool_call_id": tcid, "name": name,
                                                          "error": preview(text, 1000)}, caus, ts)
        return self.append("ToolCallFinished", "tool", {"tool_call_id": tcid, "name": name,
                                                        "preview": preview(pv), "size": size,
                                                        "truncated": bool(art)}, caus, ts)

    # -- events --------------------------------------------------------------------------------
    def append(self, type: str, actor: str, payload: dict | None = None,
               causality: dict | None = None, ts: str | None = None) -> str:
        payload = dict(payload or {})
        causality = dict(causality or {})
        if self._pending is not None:
            value, text = self._pending
            self._pending = None
            payload["source"] = {**self._source, **keep_line(
                self.objects, value, text, self.ctx.threshold, self._line_messages,
                causality.get("message_id", ""), self.ctx.chunking)}
            self._line_messages = []
        line = self.lines[self.cur]
        eid, new = self.tx.put_new_event(
            {"type": type, "actor": actor, "payload": payload, "parents": [line[0]],
             "generation": line[1] + 1, "ts": ts or self.last_ts, "causality": causality},
            self.sid)
        self.stats.new_events += new
        line[0], line[1] = eid, line[1] + 1
        self.stats.events += 1
        return eid

    def compaction(self, summary: str, upto: str, ts: str, *, first_kept: str = "",
                   source_ids: list[str] | None = None, tokens_before: int = 0,
                   extra: dict | None = None, message_id: str = "") -> str:
        """Write a Compaction naming the events it replaced, then its CompactionCompleted event.

        Without `source_ids`, the replaced events are those on the first-parent chain from
        `upto` back to (not including) the previous compaction or the session root.
        """
        if source_ids is None:
            source_ids = self.chain_since_compaction(upto)
        from ..context.tokenizer import default_tokenizer  # only sessions with compactions pay

        tokens_after = default_tokenizer().count(summary) if summary else 0
        comp = Compaction(session=self.sid, first_event=source_ids[0] if source_ids else "",
                          last_event=source_ids[-1] if source_ids else "",
                          first_kept=first_kept, source_event_ids=tuple(source_ids),
                          tokens_before=int(tokens_before or 0), tokens_after=tokens_after,
                          summary=summary,
                          provenance={"summarizer": self.fmt, "origin": "import", **(extra or {})},
                          previous=self._compaction_id(self.last_compaction))
        cid = self.put(comp)
        caus = {"compaction_id": cid}
        if message_id:
            caus["message_id"] = message_id
        counts = {"summarized_events": len(source_ids), "tokens_after": tokens_after,
                  **({"tokens_before": int(tokens_before)} if tokens_before else {})}
        eid = self.append("CompactionCompleted", "system", {"summarizer": self.fmt, **counts},
                          caus, ts)
        self.last_compaction = eid
        self.stats.compactions += 1
        return eid

    def _compaction_id(self, event_id: str) -> str:
        if not event_id:
            return ""
        return self.repo.graph.event(event_id).causality.get("compaction_id", "")

    def chain_since_compaction(self, upto: str) -> list[str]:
        out: list[str] = []
        for cur, ev in self.repo.graph.first_parents(upto):
            if cur in (self.root, self.last_compaction) or ev.type == "CompactionCompleted":
                break
            out.append(cur)
        out.reverse()
        return out

    # -- finishing -----------------------------------------------------------------------------
    def branch_names(self) -> dict[str, str]:
        names: dict[str, str] = {"main": self.lines[self.cur][0]}
        for i, (tip, _gen, hint) in enumerate(self.lines):
            if i == self.cur:
                continue
            name = f"rewind-{hint}" if hint else f"rewind-{i}"
            if name in names:
                name = f"{name}-{i}"
            names[name] = tip
        return names

    def finish(self) -> None:
        """Stage the branch moves; they happen when the import's transaction commits."""
        tx, graph = self.tx, self.repo.graph
        for name, tip in self.branch_names().items():
            ref = branch_ref(self.sid, name)
            cur = tx.read(ref)
            self.stats.branches[name] = tip
            if cur == tip:
                continue
            if cur is not None and cur != self.root and graph.is_ancestor(tip, cur):
                self.ctx.report.notes.append(f"{self.file}: branch {name} already holds a longer "
                                             f"history; left at {cur[:12]}")
                self.stats.branches[name] = cur
                continue
            # the root is every line's ancestor: skip a walk of the whole new history
            if cur is not None and cur != self.root and not graph.is_ancestor(cur, tip):
                self.ctx.report.notes.append(f"{self.file}: branch {name} rewritten by the source "
                                             f"(old tip {cur[:12]} kept in the reflog)")
            tx.set_ref(ref, tip, message=f"import: {self.fmt} {self.file}")
