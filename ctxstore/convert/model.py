"""The harness-neutral transcript every writer converts from.

A session's events carry far more than a target harness can hold (state events, raw source
lines, harness-specific records). `read_transcript` reduces them once to what a transcript
is made of — prompts, assistant text, thinking, tool calls and results, compactions,
subagent spawns — as frozen `Entry` values in parent order, each naming the ctxstore event it
came from and the entry before it, so a writer can rebuild the branch tree (Claude Code's
`parentUuid`, pi's `parentId`) or walk only the chosen branch (`Transcript.path`).

Messages are the truth, event payloads the fallback: an importer stores the full arguments
and result text in the message an event names (`causality.message_id`); the payload only
holds a preview. One event can yield several entries (a model response with thinking, text
and tool calls): the first has the event id as its entry id, the next `EVENT#1`, `EVENT#2`.
A tool call met twice (in a response message and in its own ToolCallRequested) is kept once.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..chunking import read_content
from ..errors import NotFound
from ..objects import Artifact, Compaction, Event, Message
from ..objects.frozen import EMPTY, FrozenMap, freeze, thaw
from ..objects.message import (
    ImageBlock,
    SummaryBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from ..repo import Repository

#: Entry kinds. "context" is text the harness injected (Claude Code's isMeta user lines,
#: Codex's developer messages): kept, but never counted as a user prompt.
KINDS = ("user", "assistant", "thinking", "tool_call", "tool_result", "compaction", "context")

#: Providers a thinking block's signature can be verified by (from the model name).
_PROVIDERS = (("claude", "anthropic"), ("anthropic", "anthropic"), ("gpt", "openai"),
              ("o1", "openai"), ("o3", "openai"), ("o4", "openai"), ("codex", "openai"),
              ("gemini", "google"))


def provider_of(model: str, source_format: str = "") -> str:
    """The provider behind MODEL ("" when unknown); the harness decides when the name is empty."""
    name = model.lower().rsplit("/", 1)[-1]
    for prefix, provider in _PROVIDERS:
        if name.startswith(prefix):
            return provider
    return {"claude-code": "anthropic", "codex": "openai", "gemini": "google"}.get(
        source_format, "") if not model else ""


@dataclass(frozen=True, slots=True)
class Image:
    media_type: str
    artifact: str = ""  # artifact id (read with Transcript.artifact_bytes)
    uri: str = ""


@dataclass(frozen=True, slots=True)
class Entry:
    """One transcript item. Only the fields of its `kind` are set.

    - user / assistant / context: `text` (context: `role` is the source role)
    - thinking: `text`, `signature`, `provider` (who can verify the signature)
    - tool_call: `call_id`, `tool` (name as in the source), `args`; `subagent` is the child
      session id when this call spawned one
    - tool_result: `call_id`, `tool`, `text` (whole, or the preview when `artifact` holds the
      rest: `artifact_size` bytes), `is_error`, `images`
    - compaction: `text` (the summary), `replaced` (event ids), `first_kept` (event id)
    """

    id: str
    event: str
    parent: str  # the previous entry's id on this entry's line, "" for the first
    kind: str
    ts: str = ""
    text: str = ""
    role: str = ""
    model: str = ""
    usage: FrozenMap = EMPTY
    signature: str = ""
    provider: str = ""
    call_id: str = ""
    tool: str = ""
    args: Any = EMPTY
    is_error: bool = False
    artifact: str = ""
    artifact_size: int = 0
    images: tuple[Image, ...] = ()
    replaced: tuple[str, ...] = ()
    first_kept: str = ""
    subagent: str = ""

    def __post_init__(self):
        object.__setattr__(self, "args", freeze(self.args))
        object.__setattr__(self, "usage", freeze(self.usage))

    def plain_args(self) -> Any:
        """The arguments as plain dicts and lists (for json.dumps)."""
        return thaw(self.args)


@dataclass(frozen=True)
class Transcript:
    """A session reduced to entries. `leaf` is the last entry of the chosen branch."""

    session: str
    title: str
    cwd: str
    created: str
    source_format: str  # the harness it was imported from, "ctxstore" for native sessions
    source_id: str  # the source harness's own session id, if any
    branch: str
    entries: tuple[Entry, ...]
    leaf: str
    model: str = ""
    subagents: tuple[Transcript, ...] = ()
    spawn_call: str = ""  # for a subagent transcript: the call id that spawned it
    _repo: Repository | None = field(default=None, compare=False, repr=False)

    def provenance(self, event: str = "") -> str:
        """`ctxstore://SESSION/EVENT`: what a converted file records as its origin."""
        return f"ctxstore://{self.session}/{event or self.leaf_event}"

    @property
    def leaf_event(self) -> str:
        return self.leaf.split("#", 1)[0]

    def by_id(self) -> dict[str, Entry]:
        return {e.id: e for e in self.entries}

    def path(self, leaf: str | None = None) -> tuple[Entry, ...]:
        """The entries from the root to LEAF (default: the chosen branch's), oldest first."""
        index = self.by_id()
        out: list[Entry] = []
        cur = leaf if leaf is not None else self.leaf
        while cur:
            entry = index[cur]
            out.append(entry)
            cur = entry.parent
        return tuple(reversed(out))

    def has_branches(self) -> bool:
        parents = [e.parent for e in self.entries]
        return len(parents) != len(set(parents))

    def prompts(self, entries: tuple[Entry, ...] | None = None) -> list[str]:
        return [e.text for e in (self.entries if entries is None else entries) if e.kind == "user"]

    def artifact_bytes(self, artifact_id: str) -> bytes:
        """The whole content of an artifact (a large tool result, an image)."""
        if self._repo is None:
            raise NotFound(f"artifact {artifact_id[:12]}: this transcript has no repository")
        art = self._repo.objects.get(artifact_id)
        if not isinstance(art, Artifact):
            raise NotFound(f"{artifact_id[:12]} is not an artifact")
        return read_content(self._repo.objects, art.content)

    def result_text(self, entry: Entry, limit: int) -> tuple[str, bool]:
        """(text, whole) of a tool result: the whole output when it fits in LIMIT bytes,
        else the preview and a line naming the artifact that holds the rest."""
        if not entry.artifact:
            return entry.text, True
        if entry.artifact_size <= limit:
            data = self.artifact_bytes(entry.artifact)
            text = data.decode("utf-8", "replace")
            return text, True
        note = (f"\n[ctxstore: output truncated; the whole {entry.artifact_size:,} bytes are "
                f"artifact {entry.artifact} (ctx cat {entry.artifact[:12]})]")
        return entry.text + note, False


class _Reader:
    """Turns one session's events into entries (see the module docstring)."""

    def __init__(self, repo: Repository, source_format: str):
        self.repo = repo
        self.source_format = source_format
        self.calls_seen: set[str] = set()
        self.results_seen: set[str] = set()
        self.tools: dict[str, str] = {}  # call id -> tool name, for results that do not say
        self.spawns: dict[str, str] = {}  # spawning call id (or event id) -> child session

    def message(self, ev: Event) -> Message | None:
        mid = ev.causality.get("message_id")
        if not isinstance(mid, str) or mid not in self.repo.objects:
            return None
        obj = self.repo.objects.get(mid)
        return obj if isinstance(obj, Message) else None

    def entries(self, eid: str, ev: Event) -> Iterator[dict[str, Any]]:
        """Field maps (without id/parent) for the entries of one event."""
        msg = self.message(ev)
        p = ev.payload
        base = {"event": eid, "ts": ev.ts}
        if ev.type == "UserPromptSubmitted":
            yield {**base, "kind": "user", "text": _text(msg) if msg else str(p.get("text", ""))}
            yield from self._images(base, msg)
        elif ev.type == "CompactionCompleted":
            yield self._compaction(base, ev, msg)
        elif ev.type == "MessageAdded":
            yield from self._added(base, p, msg)
        elif ev.type in ("ModelResponseReceived", "ToolCallRequested"):
            yield from self._model(base, ev, msg)
        elif ev.type in ("ToolCallFinished", "ToolCallFailed"):
            yield from self._results(base, ev, msg)

    def _added(self, base, p, msg) -> Iterator[dict[str, Any]]:
        role = msg.role if msg else str(p.get("role", "user"))
        if msg is not None and any(isinstance(b, (ToolCallBlock, ToolResultBlock)) for b in msg.blocks):
            yield from self._blocks(base, msg, "")
            return
        text = _text(msg) if msg else str(p.get("text", ""))
        if role == "assistant":
            yield {**base, "kind": "assistant", "text": text}
        elif role == "summary":
            yield {**base, "kind": "compaction", "text": text}
        else:
            yield {**base, "kind": "context", "role": role, "text": text}

    def _model(self, base, ev: Event, msg) -> Iterator[dict[str, Any]]:
        p = ev.payload
        model = str(p.get("model") or (msg.meta.get("model", "") if msg else "") or "")
        usage = p.get("usage") if ev.type == "ModelResponseReceived" else None
        base = {**base, "model": model, "usage": usage or EMPTY}
        if msg is not None:
            yield from self._blocks(base, msg, model)
            return
        if ev.type == "ToolCallRequested":
            yield from self._call(base, str(p.get("tool_call_id", "")), str(p.get("name", "")),
                                  p.get("args", EMPTY))
        elif p.get("text"):
            yield {**base, "kind": "assistant", "text": str(p["text"])}

    def _blocks(self, base, msg: Message, model: str) -> Iterator[dict[str, Any]]:
        for b in msg.blocks:
            if isinstance(b, ThinkingBlock):
                if b.text or b.signature:
                    yield {**base, "kind": "thinking", "text": b.text, "signature": b.signature,
                           "provider": provider_of(model, self.source_format)}
            elif isinstance(b, ToolCallBlock):
                yield from self._call(base, b.tool_call_id, b.name, b.args)
            elif isinstance(b, ToolResultBlock):
                yield from self._result(base, b, "")
            elif isinstance(b, (TextBlock, SummaryBlock)) and b.text:
                kind = "assistant" if msg.role == "assistant" else "context"
                yield {**base, "kind": kind, "role": msg.role, "text": b.text}

    def _call(self, base, call_id: str, name: str, args) -> Iterator[dict[str, Any]]:
        if call_id and call_id in self.calls_seen:
            return
        self.calls_seen.add(call_id)
        self.tools[call_id] = name
        yield {**base, "kind": "tool_call", "call_id": call_id, "tool": name, "args": args,
               "subagent": self.spawns.get(call_id) or self.spawns.get(base["event"], "")}

    def _results(self, base, ev: Event, msg) -> Iterator[dict[str, Any]]:
        p = ev.payload
        if msg is not None:
            for b in msg.blocks:
                if isinstance(b, ToolResultBlock):
                    yield from self._result(base, b, str(p.get("name", "")),
                                            ev.causality.get("artifact_id", ""), msg)
            return
        call_id = str(p.get("tool_call_id", ""))
        block = ToolResultBlock(call_id, str(p.get("error") or p.get("output") or p.get("preview") or ""),
                                is_error=ev.type == "ToolCallFailed")
        yield from self._result(base, block, str(p.get("name", "")),
                                ev.causality.get("artifact_id", ""))

    def _result(self, base, b: ToolResultBlock, name: str, artifact: Any = "",
                msg: Message | None = None) -> Iterator[dict[str, Any]]:
        if b.tool_call_id and b.tool_call_id in self.results_seen:
            return
        self.results_seen.add(b.tool_call_id)
        art = b.output_ref or (artifact if isinstance(artifact, str) else "")
        size = 0
        if art and art in self.repo.objects:
            obj = self.repo.objects.get(art)
            size = obj.size if isinstance(obj, Artifact) else 0
        images = tuple(Image(i.media_type, i.artifact_ref, i.uri)
                       for i in (msg.blocks if msg else ()) if isinstance(i, ImageBlock))
        yield {**base, "kind": "tool_result", "call_id": b.tool_call_id,
               "tool": name or self.tools.get(b.tool_call_id, ""),
               "text": b.text or b.preview, "is_error": b.is_error,
               "artifact": art if size else "", "artifact_size": size, "images": images}

    def _images(self, base, msg) -> Iterator[dict[str, Any]]:
        imgs = tuple(Image(i.media_type, i.artifact_ref, i.uri)
                     for i in (msg.blocks if msg else ()) if isinstance(i, ImageBlock))
        if imgs:
            yield {**base, "kind": "context", "role": "user", "text": "", "images": imgs}

    def _compaction(self, base, ev: Event, msg) -> dict[str, Any]:
        cid = ev.causality.get("compaction_id")
        comp = self.repo.objects.get(cid) if isinstance(cid, str) and cid in self.repo.objects else None
        summary = (_text(msg) if msg else "") or (comp.summary if isinstance(comp, Compaction) else "")
        if not isinstance(comp, Compaction):
            return {**base, "kind": "compaction", "text": summary}
        return {**base, "kind": "compaction", "text": summary,
                "replaced": tuple(comp.source_event_ids), "first_kept": comp.first_kept}


def _text(msg: Message) -> str:
    return "\n".join(b.text for b in msg.blocks if isinstance(b, (TextBlock, SummaryBlock)))


def _chosen_tip(branches: dict[str, str], branch: str | None, session: str) -> tuple[str, str]:
    if branch is not None:
        if branch not in branches:
            raise NotFound(f"session {session[:12]} has no branch {branch!r} "
                           f"(branches: {', '.join(sorted(branches)) or 'none'})")
        return branch, branches[branch]
    if "main" in branches:
        return "main", branches["main"]
    if not branches:
        raise NotFound(f"session {session[:12]} has no branches")
    name = sorted(branches)[0]
    return name, branches[name]


def read_transcript(repo: Repository, session: str, branch: str | None = None, *,
                    tree: bool = True, subagents: bool = True) -> Transcript:
    """The transcript of SESSION. With `tree`, every branch's events (the leaf is BRANCH's
    tip, default main); without, only BRANCH's history."""
    sess = repo.session(session)
    branches = repo.branches(session)
    name, tip = _chosen_tip(branches, branch, session)
    fmt = str(sess.origin.get("format", "")) or "ctxstore"
    reader = _Reader(repo, fmt)
    children = _children(repo, session) if subagents else []
    for child, child_sess in children:
        if child_sess.spawn_event:
            reader.spawns[_spawn_call(repo, child_sess.spawn_event) or child_sess.spawn_event] = child
    graph = repo.graph
    tips = list(branches.values()) if tree else [tip]
    events = sorted(graph.reachable_events(tips),
                    key=lambda e: (graph.event(e).generation, graph.event(e).ts, e))
    last_entry: dict[str, str] = {}  # event id -> id of the last entry at or before it
    entries: list[Entry] = []
    for eid in events:
        ev = graph.event(eid)
        parent = last_entry.get(ev.parents[0], "") if ev.parents else ""
        for n, fields in enumerate(reader.entries(eid, ev)):
            entry_id = eid if n == 0 else f"{eid}#{n}"
            entries.append(Entry(id=entry_id, parent=parent, **fields))
            parent = entry_id
        last_entry[eid] = parent
    kids = tuple(_child_transcript(repo, child, child_sess) for child, child_sess in children)
    model = next((e.model for e in entries if e.model), "") or str(sess.config.get("model", ""))
    return Transcript(session=session, title=sess.title, cwd=sess.cwd, created=sess.created,
                      source_format=fmt, source_id=str(sess.origin.get("id", "")), branch=name,
                      entries=tuple(entries), leaf=last_entry.get(tip, ""), model=model,
                      subagents=kids, _repo=repo)


def _children(repo: Repository, session: str) -> list[tuple[str, Any]]:
    out = []
    for other in repo.session_ids():
        s = repo.session(other)
        if s.parent_session == session and s.kind == "subagent":
            out.append((other, s))
    return sorted(out, key=lambda x: (x[1].created, x[0]))


def _spawn_call(repo: Repository, spawn_event: str) -> str:
    """The call id of the tool call that spawned a subagent ("" if the event names none)."""
    if spawn_event not in repo.objects:
        return ""
    ev = repo.graph.event(spawn_event)
    return str(ev.causality.get("tool_call_id") or ev.payload.get("tool_call_id") or "")


def _child_transcript(repo: Repository, child: str, sess) -> Transcript:
    t = read_transcript(repo, child, tree=False, subagents=True)
    call = _spawn_call(repo, sess.spawn_event) if sess.spawn_event else ""
    return Transcript(**{**{f: getattr(t, f) for f in t.__dataclass_fields__}, "spawn_call": call})



#: Namespace of the uuids converted files use: the same session, branch and event always
#: give the same target ids, so converting twice writes the same file.
_NAMESPACE = uuid.UUID("6f1c2b0e-3d4a-5b6c-8d7e-9f0a1b2c3d4e")


def stable_uuid(*parts: str) -> str:
    """A uuid5 of PARTS (target session ids, Claude Code record uuids)."""
    return str(uuid.uuid5(_NAMESPACE, "\x1f".join(parts)))


def unanswered(entries: tuple[Entry, ...] | list[Entry]) -> set[str]:
    """Call ids among ENTRIES that have no result among them (an interrupted call): a
    provider rejects a history holding a call without its result, so writers add one."""
    answered = {e.call_id for e in entries if e.kind == "tool_result"}
    return {e.call_id for e in entries if e.kind == "tool_call" and e.call_id not in answered}


def orphaned(entries: tuple[Entry, ...] | list[Entry]) -> set[str]:
    """Call ids of results whose call is not among ENTRIES (written as text by writers)."""
    called = {e.call_id for e in entries if e.kind == "tool_call"}
    return {e.call_id for e in entries if e.kind == "tool_result" and e.call_id not in called}


def tree_order(transcript: Transcript) -> list[Entry]:
    """Every entry, parents before children, each side branch before the chosen branch's
    continuation: the chosen leaf comes last, which is the leaf a harness that resumes "the
    newest leaf in the file" (Claude Code, pi) picks."""
    on_path = {e.id for e in transcript.path()}
    children: dict[str, list[Entry]] = {}
    for e in transcript.entries:
        children.setdefault(e.parent, []).append(e)
    out: list[Entry] = []
    stack = _push_order(children.get("", []), on_path)
    while stack:
        entry = stack.pop()
        out.append(entry)
        stack.extend(_push_order(children.get(entry.id, []), on_path))
    return out


def _push_order(kids: list[Entry], on_path: set[str]) -> list[Entry]:
    """Stack order: the chosen-path child first (popped last), side children after it in
    reverse (popped in file order)."""
    return [k for k in kids if k.id in on_path] + [k for k in reversed(kids) if k.id not in on_path]


def iso_utc(ts: str) -> str:
    """TS as the harnesses write it: RFC 3339 in UTC with milliseconds (Codex refuses a
    timestamp without a zone). A time without a zone is taken as UTC; a missing or unreadable
    one is now."""
    when = None
    if ts:
        try:
            when = datetime.fromisoformat(ts.replace("Z", "+00:00"))
        except ValueError:
            when = None
    if when is None:
        when = datetime.now(UTC)
    elif when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + \
        f"{when.microsecond // 1000:03d}Z"
