"""What the search index holds for one event or memory: its text, its kind, its tool, the
files it touched, where it came from. One function per source object, deterministic, because
the index is contentless: removing a row re-derives the very text that was added
(SQLite FTS5's 'delete' command needs it), and the snippet of a hit is cut from it too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import CtxError, ObjectNotFound

if TYPE_CHECKING:
    from ..objects import Event
    from ..objects.compaction import Compaction
    from ..objects.memory import Memory

#: Characters of one document that are indexed (the event's own text, then its artifacts).
DOC_TEXT_LIMIT = 32 << 10
#: Bytes of an artifact's content that are read for its text.
ARTIFACT_TEXT_LIMIT = 32 << 10

_PROMPT, _RESPONSE, _CALL, _RESULT, _SUMMARY, _MEMORY, _OTHER = (
    "prompt", "response", "tool-call", "tool-result", "summary", "memory", "other")
_BY_TYPE = {"UserPromptSubmitted": _PROMPT, "ToolCallRequested": _CALL,
            "ToolCallStarted": _CALL, "ToolCallFinished": _RESULT, "ToolCallFailed": _RESULT,
            "CompactionCompleted": _SUMMARY, "BranchMerged": _SUMMARY,
            "claude-code:summary": _SUMMARY, "MemoryWritten": _MEMORY}
_BY_ROLE = {"user": _PROMPT, "assistant": _RESPONSE, "model": _RESPONSE, "tool": _RESULT}


class Document(NamedTuple):  # not a dataclass: `ctx search` starts faster
    text: str
    kind: str
    tool: str = ""
    files: tuple[str, ...] = ()
    source_file: str = ""
    source_line: int = 0
    replaces: tuple[str, ...] = ()  # a compaction's source events
    compaction: str = ""  # the compaction record's id


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if not (len(value) == 64 and value.isalnum()):  # ids say nothing
            yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if k != "source":  # the importer's copy of the source record
                yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _get(store, oid: Any, cls: type) -> Any:
    if not isinstance(oid, str) or not oid:
        return None
    try:
        obj = store.get(oid)
    except ObjectNotFound:
        return None  # fsck's business: the event stays findable by what it says itself
    return obj if isinstance(obj, cls) else None


def event_document(repo, ev: Event, harness: str, effects: bool = True) -> Document:
    """The document of one event. A message's text is indexed on the event that carries it;
    a tool call's name and arguments on its ToolCallRequested event and its result (and the
    result's artifact) on ToolCallFinished/Failed, so the model turn that holds both is not
    indexed three times. Without `effects` the files a call touches are not worked out (the
    text is the same: what a snippet or a removal needs)."""
    from ..objects import Artifact, Message

    store = repo.objects
    msg = _get(store, ev.causality.get("message_id"), Message)
    kind = _BY_TYPE.get(ev.type) or (_BY_ROLE.get(msg.role, _OTHER) if msg is not None
                                     else _OTHER)
    tcid = ev.causality.get("tool_call_id") or ev.payload.get("tool_call_id")
    parts: list[str] = []
    tool = ev.payload.get("name") if isinstance(ev.payload.get("name"), str) else ""
    files: list[str] = []
    artifacts: list[Any] = [ev.causality.get("artifact_id")]
    compaction = ""
    replaces: tuple[str, ...] = ()
    if msg is not None:
        for b in msg.blocks:
            k = b.KIND
            if kind in (_CALL, _RESULT) and tcid and getattr(b, "tool_call_id", tcid) != tcid:
                continue
            if k in ("text", "thinking", "summary") and kind not in (_CALL, _RESULT):
                parts.append(b.text)  # type: ignore[attr-defined]
            elif k == "tool_call" and kind == _CALL:
                tool = b.name  # type: ignore[attr-defined]
                parts.append(b.name)  # type: ignore[attr-defined]
                parts.extend(_strings(b.args))  # type: ignore[attr-defined]
                if effects:
                    files.extend(_call_files(b.name, b.args, harness))  # type: ignore[attr-defined]
            elif k == "tool_result" and kind == _RESULT:
                parts.append(b.text or b.preview)  # type: ignore[attr-defined]
                artifacts.append(b.output_ref)  # type: ignore[attr-defined]
    else:
        parts.extend(_strings(ev.payload))
        if kind == _CALL and tool and effects:
            files.extend(_call_files(tool, ev.payload.get("args"), harness))
    if ev.type in ("FileRead", "FileWritten", "DiffApplied") and isinstance(ev.payload.get("path"), str):
        files.append(ev.payload["path"])
    rec = _compaction(store, ev.causality.get("compaction_id"))
    if rec is not None:
        compaction, replaces = ev.causality["compaction_id"], tuple(rec.source_event_ids)
        parts.append(compaction_text(rec))
    for aid in artifacts:
        art = _get(store, aid, Artifact)
        if art is not None:
            parts.append(artifact_text(store, art))
    src = ev.payload.get("source")
    src = src if isinstance(src, Mapping) else {}
    line = src.get("line")
    return Document("\n".join(p for p in parts if p)[:DOC_TEXT_LIMIT], kind, tool or "",
                    tuple(dict.fromkeys(files)), str(src.get("file") or ""),
                    line if isinstance(line, int) else 0, replaces, compaction)


def _compaction(store, cid: Any) -> Compaction | None:
    if not isinstance(cid, str) or not cid:
        return None
    from ..objects.compaction import Compaction

    return _get(store, cid, Compaction)


def compaction_text(rec: Compaction) -> str:
    """A summary's searchable text: the summary, and what it carries forward in words."""
    parts = [rec.summary]
    for value in (rec.goal, rec.progress, rec.decisions, rec.open_questions, rec.next_steps,
                  rec.errors):
        parts.extend(_strings(value))
    return "\n".join(p for p in parts if p)


def memory_document(mem: Memory) -> Document:
    text = " ".join((mem.content, mem.kind, *mem.keywords))
    return Document(text[:DOC_TEXT_LIMIT], _MEMORY)


def artifact_text(store, art) -> str:
    """An artifact's name and the start of its content when that is text."""
    from ..chunking import open_content

    head = f"{art.kind} {art.uri} {art.summary}"
    if not art.content:
        return head
    try:
        with open_content(store, art.content) as f:
            data = f.read(ARTIFACT_TEXT_LIMIT)
    except CtxError:
        return head  # fsck's business: the artifact stays findable by its name
    if b"\0" in data[:4096]:
        return head  # binary content
    return head + "\n" + data.decode("utf-8", "replace")


def _call_files(name: str, args: Any, harness: str) -> list[str]:
    """Paths a tool call reads or modifies, as the projector's tool effects name them."""
    from ..objects.frozen import thaw
    from ..state.tools import call_effects

    return [e.path for e in call_effects(name, thaw(args), harness)
            if e.kind in ("read", "modify") and e.path]
