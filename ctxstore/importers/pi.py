"""pi coding agent sessions (`~/.pi/agent/sessions/--<cwd>--/<ts>_<uuid>.jsonl`).

The first line is the `session` header. v1 entries have no ids: history is the file order
and a compaction's `firstKeptEntryIndex` counts the header as entry 0. v3 entries form an
`id`/`parentId` tree: an entry whose parent is not the previous entry is a navigation in the
tree, so a new branch starts there (`main` is the line holding the last entry). Compactions
name their first kept entry; the replaced events are those before it back to the previous
compaction's range. Tool results pair with `toolCall` blocks by id. A header with a
`ctxstore` key is a session ctxstore converted (`ctx resume --in pi`): the import is a fork of
the session it names (ctxstore.convert.import_link), not an unrelated session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..convert import PROVENANCE_KEY, import_link
from ..objects import ImageBlock, TextBlock, ThinkingBlock, ToolCallBlock
from ..state.prompts import prompt_text, title_of
from .common import (
    MALFORMED,
    ImportContext,
    SessionBuilder,
    iter_jsonl,
    peek_jsonl,
    preview,
    tool_requested_payload,
)

FMT = "pi"
KNOWN_TYPES = frozenset({"session", "message", "model_change", "thinking_level_change",
                         "compaction", "branch_summary", "custom", "custom_message", "label",
                         "session_info"})


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) for c in content
                         if isinstance(c, dict) and c.get("type") == "text")
    return ""


def _blocks(content: Any) -> list:
    if isinstance(content, str):
        return [TextBlock(content)]
    out: list = []
    for c in content if isinstance(content, list) else []:
        if not isinstance(c, dict):
            continue
        kind = c.get("type")
        if kind == "text":
            out.append(TextBlock(str(c.get("text", ""))))
        elif kind == "thinking":
            out.append(ThinkingBlock(str(c.get("thinking", "")), str(c.get("thinkingSignature", ""))))
        elif kind == "toolCall":
            out.append(ToolCallBlock(str(c.get("id", "")), str(c.get("name", "")),
                                     c.get("arguments", {})))
        elif kind == "image":
            out.append(ImageBlock(media_type=str(c.get("mimeType", ""))))
    return out


def _first_prompt_title(path: Path) -> str:
    """A title from the first user request in the file's first lines ("" if none)."""
    for rec in peek_jsonl(path, limit=400):
        m = rec.get("message") if rec.get("type") == "message" else None
        if isinstance(m, dict) and m.get("role") == "user":
            title = title_of(prompt_text(_text(m.get("content"))))
            if title:
                return title
    return ""


def open_file(ctx: ImportContext, path: Path) -> PiFile:
    """The session a pi file starts (its header line), ready to be fed its lines (`run`, or
    `feed` a line at a time: `ctx import --follow`)."""
    header: dict = next(iter(peek_jsonl(path, limit=1)), {})
    if header.get("type") != "session":
        ctx.warn(path.name, 1, "no pi session header on the first line; session named after the file")
        header = {}
    source = header.get("id") if isinstance(header.get("id"), str) else path.stem
    version = header.get("version", 1)
    origin: dict[str, Any] = {"format": FMT, "id": source, "version": version}
    parent_path = header.get("parentSession") or header.get("branchedFrom")
    parent = ""
    if isinstance(parent_path, str):
        origin["parent_path"] = parent_path
        # pi names session files <timestamp>_<session id>.jsonl
        parent_id = Path(parent_path).stem.rpartition("_")[2]
        parent = ctx.find_session(FMT, parent_id) if parent_id else ""
        if not parent:
            ctx.report.notes.append(f"{path.name}: forked from {parent_path}, not imported; "
                                    f"link kept in the session origin only")
    # a file ctx resume/export wrote links back to the session it came from
    link = {} if parent_path else import_link(ctx.repo, header.get(PROVENANCE_KEY))
    origin.update(link.pop("origin", {}))
    b = SessionBuilder(ctx, fmt=FMT, file=path.name, source_id=source,
                       ts=header.get("timestamp", ""), nonce=source, origin=origin,
                       kind=link.pop("kind", "fork" if parent_path else "main"),
                       cwd=str(header.get("cwd") or ""), title=_first_prompt_title(path),
                       parent_session=link.pop("parent_session", parent),
                       spawn_event=link.pop("spawn_event", ""))
    return PiFile(b, tree=isinstance(version, int) and version >= 2)


def import_file(ctx: ImportContext, path: Path) -> None:
    pf = open_file(ctx, path)
    pf.run(path)
    pf.b.finish()


class PiFile:
    def __init__(self, b: SessionBuilder, tree: bool) -> None:
        self.b = b
        self.tree = tree
        self.by_index: list[str] = []  # v1: entry index (header = 0) -> last event id
        self.by_id: dict[str, tuple[str, int]] = {}  # v3: entry id -> (event, generation)
        self.last_id: str | None = None
        self.calls: dict[str, tuple[str, str]] = {}
        self.prev_last = ""  # last event replaced by the previous compaction

    def run(self, path: Path) -> None:
        for n, text, rec in iter_jsonl(self.b.ctx, path):
            self.feed(n, text, rec)

    def feed(self, n: int, text: str, rec: Any) -> None:
        b = self.b
        b.begin(n, rec, text)
        if rec is MALFORMED:
            b.append(f"{FMT}:malformed", "system", {})
            self.by_index.append(b.tip)
            return
        if self.tree and isinstance(rec.get("id"), str):
            self.position(rec, n)
        self.entry(rec, n)
        self.by_index.append(b.tip)
        if isinstance(rec.get("id"), str):
            self.by_id[rec["id"]] = (b.tip, b.tip_gen)
            self.last_id = rec["id"]

    def position(self, rec: dict, n: int) -> None:
        parent = rec.get("parentId")
        if parent is None or parent == self.last_id:
            return
        found = self.by_id.get(parent)
        if found is None:
            self.b.ctx.warn(self.b.file, n, f"dangling parent {parent!r}; attached after the "
                                            f"previous entry")
            return
        self.b.fork(found[0], found[1], rec["id"][:8])

    def entry(self, rec: dict, n: int) -> None:
        b = self.b
        t = rec.get("type")
        ts = b.ts(rec.get("timestamp"))
        if t == "message" and isinstance(rec.get("message"), dict):
            self.message(rec["message"], n, ts)
        elif t == "compaction":
            self.compaction(rec, n, ts)
        elif t in ("branch_summary", "custom_message"):
            role = "summary" if t == "branch_summary" else "custom"
            text = rec.get("summary") if t == "branch_summary" else _text(rec.get("content"))
            text = text if isinstance(text, str) else ""
            mid = b.message(role, [TextBlock(text)], meta={"pi_type": t})
            b.append("MessageAdded", "system", {"role": role, "text": preview(text)},
                     {"message_id": mid}, ts)
        else:
            if t not in KNOWN_TYPES:
                b.ctx.warn(b.file, n, f"unknown record type {t!r}; kept as {FMT}:{t}")
            payload = {k: rec[k] for k in ("name", "label", "customType", "modelId",
                                           "thinkingLevel", "provider") if isinstance(rec.get(k), str)}
            b.append(f"{FMT}:{t if isinstance(t, str) and t else 'unknown'}", "system", payload, ts=ts)

    def message(self, m: dict, n: int, ts: str) -> None:
        b = self.b
        role = m.get("role")
        if role == "user":
            mid = b.message("user", _blocks(m.get("content")))
            b.append("UserPromptSubmitted", "user", {"text": preview(_text(m.get("content")))},
                     {"message_id": mid}, ts)
        elif role == "assistant":
            blocks = _blocks(m.get("content"))
            meta = {k: m[k] for k in ("model", "provider", "responseId") if isinstance(m.get(k), str)}
            mid = b.message("assistant", blocks, meta=meta)
            payload: dict[str, Any] = {"text": preview(_text(m.get("content")))}
            if isinstance(m.get("model"), str):
                payload["model"] = m["model"]
            if isinstance(m.get("usage"), dict):
                payload["usage"] = m["usage"]
            if isinstance(m.get("stopReason"), str):
                payload["stop_reason"] = m["stopReason"]  # "aborted"/"error": calls abandoned
            b.append("ModelResponseReceived", "model", payload, {"message_id": mid}, ts)
            for blk in blocks:
                if isinstance(blk, ToolCallBlock):
                    eid = b.append("ToolCallRequested", "model",
                                   tool_requested_payload(blk.tool_call_id, blk.name, blk.args),
                                   {"tool_call_id": blk.tool_call_id, "message_id": mid}, ts)
                    self.calls[blk.tool_call_id] = (eid, blk.name)
        elif role == "toolResult":
            self.result(m, n, ts)
        elif role in ("custom", "hookMessage"):
            text = _text(m.get("content"))
            mid = b.message("custom", [TextBlock(text)], meta={"pi_role": role})
            b.append("MessageAdded", "system", {"role": "custom", "text": preview(text)},
                     {"message_id": mid}, ts)
        else:
            payload = {"role": role} if isinstance(role, str) else {}
            if isinstance(m.get("command"), str):
                payload["command"] = preview(m["command"], 500)
            b.append(f"{FMT}:{role if isinstance(role, str) and role else 'message'}", "user",
                     payload, ts=ts)

    def result(self, m: dict, n: int, ts: str) -> None:
        b = self.b
        tcid = str(m.get("toolCallId", ""))
        call = self.calls.get(tcid)
        if call is None:
            b.ctx.warn(b.file, n, f"tool result without its call (toolCallId {tcid!r})")
            b.append(f"{FMT}:toolResult", "tool", {"tool_call_id": tcid}, ts=ts)
            return
        requested, name = call
        text = _text(m.get("content"))
        b.tool_result(tcid, name, requested, text, bool(m.get("isError")), ts)

    def compaction(self, rec: dict, n: int, ts: str) -> None:
        b = self.b
        kept = ""
        # naming itself, it keeps nothing before it (how ctxstore's conversions say so)
        keeps_none = rec.get("id") is not None and rec.get("firstKeptEntryId") == rec.get("id")
        if keeps_none:
            pass
        elif isinstance(rec.get("firstKeptEntryId"), str):
            kept = self.by_id.get(rec["firstKeptEntryId"], ("", 0))[0]
        elif isinstance(rec.get("firstKeptEntryIndex"), int):
            i = rec["firstKeptEntryIndex"]
            kept = self.by_index[i] if 0 <= i < len(self.by_index) else ""
        if not kept:
            if not keeps_none:
                b.ctx.warn(b.file, n, "compaction names a first kept entry that is not in the "
                                      "file; treated as keeping nothing")
            source = None
        else:
            source = self._replaced(kept)
        summary = rec.get("summary") if isinstance(rec.get("summary"), str) else ""
        mid = b.message("summary", [TextBlock(summary)], meta={"pi_type": "compaction"})
        extra = {"from_hook": bool(rec.get("fromHook"))}
        b.compaction(summary, b.tip, ts, first_kept=kept, source_ids=source,
                     tokens_before=rec.get("tokensBefore") or 0, extra=extra, message_id=mid)
        if source:
            self.prev_last = source[-1]

    def _replaced(self, kept: str) -> list[str]:
        """Events before `kept` on its chain, back to the previous compaction's range."""
        graph, out = self.b.repo.graph, []
        parents = graph.event(kept).parents
        for cur, _ev in graph.first_parents(parents[0] if parents else None):
            if cur in (self.b.root, self.prev_last):
                break
            out.append(cur)
        out.reverse()
        return out
