"""What the search index holds for one event or memory: its text, its kind, its tool, the
files it touched, where it came from. One function per source object, deterministic, because
the index is contentless: removing a row re-derives the very text that was added
(SQLite FTS5's 'delete' command needs it), and the snippet of a hit is cut from it too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import codec
from ..errors import ObjectNotFound

if TYPE_CHECKING:
    from ..objects import Event
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


def _raw(store, oid: Any, type_name: str) -> dict | None:
    """The stored fields of object OID when it is a TYPE_NAME (read as plain values: decoding
    into frozen objects would cost a third of indexing and the start-up of a search)."""
    if not isinstance(oid, str) or not oid:
        return None
    try:
        kind, body = store.get_raw(oid)
    except ObjectNotFound:
        return None  # fsck's business: the event stays findable by what it says itself
    if kind != type_name:
        return None
    d = codec.unpack_value(body)
    return d if isinstance(d, dict) else None


def event_document(repo, ev: Event, harness: str, effects: bool = True) -> Document:
    """The document of one event. A message's text is indexed on the event that carries it;
    a tool call's name and arguments on its ToolCallRequested event and its result (and the
    result's artifact) on ToolCallFinished/Failed, so the model turn that holds both is not
    indexed three times. Without `effects` the files a call touches are not worked out (the
    text is the same: what a snippet or a removal needs)."""
    store = repo.objects
    msg = _raw(store, ev.causality.get("message_id"), "message")
    kind = _BY_TYPE.get(ev.type) or (_BY_ROLE.get(msg.get("role"), _OTHER) if msg is not None
                                     else _OTHER)
    tcid = ev.causality.get("tool_call_id") or ev.payload.get("tool_call_id")
    parts: list[str] = []
    tool = ev.payload.get("name") if isinstance(ev.payload.get("name"), str) else ""
    files: list[str] = []
    artifacts: list[Any] = [ev.causality.get("artifact_id")]
    compaction = ""
    replaces: tuple[str, ...] = ()
    if msg is not None:
        for b in msg.get("blocks") or ():
            k = b.get("type")
            if kind in (_CALL, _RESULT) and tcid and b.get("tool_call_id", tcid) != tcid:
                continue
            if k in ("text", "thinking", "summary") and kind not in (_CALL, _RESULT):
                parts.append(_text(b.get("text")))
            elif k == "tool_call" and kind == _CALL:
                tool = _text(b.get("name"))
                parts.append(tool)
                parts.extend(_strings(b.get("args")))
                if effects:
                    files.extend(_call_files(tool, b.get("args"), harness))
            elif k == "tool_result" and kind == _RESULT:
                parts.append(_text(b.get("text")) or _text(b.get("preview")))
                artifacts.append(b.get("output_ref"))
    else:
        parts.extend(_strings(ev.payload))
        if kind == _CALL and tool and effects:
            files.extend(_call_files(tool, ev.payload.get("args"), harness))
    if ev.type in ("FileRead", "FileWritten", "DiffApplied") and isinstance(ev.payload.get("path"), str):
        files.append(ev.payload["path"])
    rec = _raw(store, ev.causality.get("compaction_id"), "compaction")
    if rec is not None:
        compaction = ev.causality["compaction_id"]
        replaces = tuple(e for e in rec.get("source_event_ids") or () if isinstance(e, str))
        parts.append(compaction_text(rec))
    for aid in artifacts:
        art = _raw(store, aid, "artifact")
        if art is not None:
            parts.append(artifact_text(store, art))
    src = ev.payload.get("source")
    src = src if isinstance(src, Mapping) else {}
    line = src.get("line")
    return Document("\n".join(p for p in parts if p)[:DOC_TEXT_LIMIT], kind, tool or "",
                    tuple(dict.fromkeys(files)), str(src.get("file") or ""),
                    line if isinstance(line, int) else 0, replaces, compaction)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def compaction_text(rec: Mapping) -> str:
    """A summary's searchable text: the summary, and what it carries forward in words."""
    parts = [_text(rec.get("summary"))]
    for key in ("goal", "progress", "decisions", "open_questions", "next_steps", "errors"):
        parts.extend(_strings(rec.get(key)))
    return "\n".join(p for p in parts if p)


def memory_document(mem: Memory) -> Document:
    text = " ".join((mem.content, mem.kind, *mem.keywords))
    return Document(text[:DOC_TEXT_LIMIT], _MEMORY)


def artifact_text(store, art: Mapping) -> str:
    """An artifact's name and the start of its content when that is text."""
    from ..chunking import text_start

    head = f"{_text(art.get('kind'))} {_text(art.get('uri'))} {_text(art.get('summary'))}"
    content = _text(art.get("content"))
    if not content:
        return head
    text = text_start(store, content, ARTIFACT_TEXT_LIMIT)
    return head if text is None else head + "\n" + text


def _call_files(name: str, args: Any, harness: str) -> list[str]:
    """Paths a tool call reads or modifies, as the projector's tool effects name them."""
    from ..objects.frozen import thaw
    from ..state.tools import call_effects

    return [e.path for e in call_effects(name, thaw(args), harness)
            if e.kind in ("read", "modify") and e.path]
