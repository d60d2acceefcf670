"""Claude Code target: a session JSONL as Claude Code writes it, branches and all.

Where Claude Code looks: `$CLAUDE_CONFIG_DIR/projects/<cwd with every non-alphanumeric
character as "-">/<session uuid>.jsonl` (default config dir `~/.claude`; a sanitized name
longer than 200 characters is cut and suffixed with a hash — the same rule as the Claude
Agent SDK's `_sanitize_path`, whose reader the tests run). Subagents go to
`<session uuid>/subagents/agent-<id>.jsonl` with a `.meta.json` naming the spawning call
(`toolUseId`), as Claude Code 2.1.x writes them.

Records: one per content block (`user` / `assistant` with `message`, `uuid`, `parentUuid`),
so every ctxstore entry keeps its place in the tree and a rewind branch stays a branch. The
chosen branch is written last, so its leaf is the newest leaf (the one Claude Code and the
SDK resume). A compaction is a `system` `compact_boundary` (parentUuid null,
logicalParentUuid the entry before) and an `isCompactSummary` user record, exactly as
Claude Code writes its own. Thinking is kept only when an Anthropic model produced it with a
signature (the API rejects anything else sent back); the rest is dropped and counted.

The last line is a `summary` record (the title Claude Code's picker shows) for the chosen
leaf. The first line is a `ctxstore-provenance` record (Claude Code and the SDK skip record types
they do not know): the ctxstore session, branch and event this file was converted from, which
`ctx import` reads to link the file back to its source session.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from . import PROVENANCE_KEY, ConversionReport, result_text, toolmap
from .model import Entry, Transcript, iso_utc, orphaned, stable_uuid, tree_order, unanswered

NAME = "claude-code"
BINARY = "claude"
#: Claude Code versions whose reader (the Claude Agent SDK's session reader, which bundles
#: and mirrors that CLI's) was run on our output in tests/test_resume_claude_code.py.
VERIFIED_VERSIONS = ("2.1.332",)
WRITER_VERSION = VERIFIED_VERSIONS[-1]
#: A tool result up to this size is written whole; a larger one as its preview plus a line
#: naming the ctxstore artifact (Claude Code itself stores tool output inline).
INLINE_LIMIT = 1 << 20
_ID_OK = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_SANITIZE = re.compile(r"[^a-zA-Z0-9]")


def session_id(transcript: Transcript) -> str:
    return stable_uuid("claude-code", transcript.session, transcript.branch, transcript.leaf)


def _simple_hash(s: str) -> str:
    """Claude Code's 32-bit string hash in base 36 (its long-project-path suffix)."""
    h = 0
    for ch in s:
        h = ((h << 5) - h + ord(ch)) & 0xFFFFFFFF
    if h >= 0x80000000:
        h -= 0x100000000
    h = abs(h)
    digits, out = "0123456789abcdefghijklmnopqrstuvwxyz", ""
    while h:
        h, r = divmod(h, 36)
        out = digits[r] + out
    return out or "0"


def project_dir_name(cwd: str) -> str:
    name = _SANITIZE.sub("-", cwd)
    return name if len(name) <= 200 else f"{name[:200]}-{_simple_hash(cwd)}"


def config_dir(env: Mapping[str, str]) -> Path:
    return Path(env.get("CLAUDE_CONFIG_DIR") or Path(env.get("HOME") or Path.home()) / ".claude")


def default_path(transcript: Transcript, env: Mapping[str, str]) -> Path:
    return config_dir(env) / "projects" / project_dir_name(transcript.cwd) / \
        f"{session_id(transcript)}.jsonl"


def register(path: Path, transcript: Transcript, env: Mapping[str, str]) -> list[str]:
    """Claude Code lists every `<id>.jsonl` of a project directory: nothing to register."""
    return []


def resume_command(transcript: Transcript, path: Path) -> str:
    return f"cd {shlex.quote(transcript.cwd)} && claude --resume {session_id(transcript)}"


class _Writer:
    def __init__(self, t: Transcript, sid: str, report: ConversionReport, sidechain: str = ""):
        self.t, self.sid, self.report = t, sid, report
        self.agent = sidechain  # agent id when writing a subagent file
        self.uuids: dict[str, str] = {}
        self.call_ids: dict[str, str] = {}
        self.turn: dict[str, str] = {}  # entry id -> assistant message id of its turn
        self.lines: list[bytes] = []
        self.spawned: dict[str, str] = {}  # call id -> the child session it spawned

    def uuid(self, entry_id: str) -> str:
        if entry_id not in self.uuids:
            self.uuids[entry_id] = stable_uuid(self.sid, entry_id)
        return self.uuids[entry_id]

    def call_id(self, call: str) -> str:
        """A tool_use id the Anthropic API accepts (`^[A-Za-z0-9_-]+$`), stable per call."""
        if call not in self.call_ids:
            self.call_ids[call] = call if _ID_OK.match(call) else \
                "toolu_" + stable_uuid(self.sid, "call", call).replace("-", "")[:24]
        return self.call_ids[call]

    def emit(self, record: dict[str, Any]) -> None:
        self.lines.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()
                          + b"\n")
        self.report.records += 1

    def base(self, entry: Entry, parent_uuid: str | None, kind: str, uid: str = "") -> dict[str, Any]:
        rec: dict[str, Any] = {"parentUuid": parent_uuid, "isSidechain": bool(self.agent),
                               "userType": "external", "cwd": self.t.cwd, "sessionId": self.sid,
                               "version": WRITER_VERSION, "type": kind,
                               "uuid": uid or self.uuid(entry.id),
                               "timestamp": iso_utc(entry.ts or self.t.created)}
        if self.agent:
            rec["agentId"] = self.agent
        return rec

    def write_all(self, entries: list[Entry]) -> None:
        self.spawned = {e.call_id: e.subagent for e in entries if e.kind == "tool_call" and e.subagent}
        no_result = unanswered(entries)
        no_call = orphaned(entries)
        index = {e.id: e for e in entries}
        for e in entries:
            parent = (self.uuid(e.parent) or None) if e.parent in index else None
            self.entry(e, parent, index, no_call)
            if e.kind == "tool_call" and e.call_id in no_result:
                self.synthetic_result(e)

    def entry(self, e: Entry, parent: str | None, index: dict[str, Entry], no_call: set[str]) -> None:
        if e.kind == "user":
            self.report.prompts += 1
            self.user(e, parent, e.text)
        elif e.kind == "context":
            self.context(e, parent)
        elif e.kind in ("assistant", "thinking", "tool_call"):
            self.assistant(e, parent, index)
        elif e.kind == "tool_result":
            if e.call_id in no_call:
                self.user(e, parent, f"[tool result of call {e.call_id} ({e.tool or 'unknown tool'})]\n"
                          + self.result_text(e), meta=True)
            else:
                self.tool_result(e, parent)
        elif e.kind == "compaction":
            self.compaction(e, parent)

    def user(self, e: Entry, parent: str | None, text: str, meta: bool = False,
             uid: str = "") -> None:
        rec = self.base(e, parent, "user", uid)
        if meta:
            rec["isMeta"] = True
        rec["message"] = {"role": "user", "content": text}
        self.emit(rec)

    def context(self, e: Entry, parent: str | None) -> None:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": e.text}] if e.text else []
        blocks += self.images(e)
        rec = self.base(e, parent, "user")
        rec["isMeta"] = True
        rec["message"] = {"role": "user", "content": blocks or e.text}
        self.emit(rec)

    def images(self, e: Entry) -> list[dict[str, Any]]:
        import base64

        out = []
        for img in e.images:
            if not img.artifact:
                self.report.notes.append(f"image without stored bytes at {e.event[:12]} left out")
                continue
            data = self.t.artifact_bytes(img.artifact)
            out.append({"type": "image", "source": {"type": "base64",
                        "media_type": img.media_type or "image/png",
                        "data": base64.b64encode(data).decode("ascii")}})
            self.report.images += 1
        return out

    def assistant(self, e: Entry, parent: str | None, index: dict[str, Entry]) -> None:
        prev = index.get(e.parent)
        same_turn = prev is not None and prev.kind in ("assistant", "thinking", "tool_call") \
            and prev.event == e.event
        self.turn[e.id] = self.turn[prev.id] if same_turn and prev else \
            "msg_" + stable_uuid(self.sid, "msg", e.id).replace("-", "")[:24]
        if e.kind == "thinking":
            if not (e.provider == "anthropic" and e.signature):
                self.report.thinking_dropped += 1
                self._skip(e, parent)
                return
            self.report.thinking_kept += 1
            block: dict[str, Any] = {"type": "thinking", "thinking": e.text, "signature": e.signature}
        elif e.kind == "tool_call":
            name, args, mapped = toolmap.map_call(NAME, e.tool, e.plain_args())
            if not _ID_OK.match(name):
                name = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "tool"
            if not isinstance(args, dict):
                args = {"input": args}
            self.report.tool_calls_mapped += int(mapped)
            self.report.tool_calls_generic += int(not mapped)
            block = {"type": "tool_use", "id": self.call_id(e.call_id), "name": name, "input": args}
        else:
            self.report.assistant_texts += 1
            block = {"type": "text", "text": e.text}
        rec = self.base(e, parent, "assistant")
        rec["message"] = {"id": self.turn[e.id], "type": "message", "role": "assistant",
                          "model": e.model or self.t.model or "unknown", "content": [block],
                          "stop_reason": "tool_use" if e.kind == "tool_call" else None,
                          "stop_sequence": None, "usage": _usage(e.usage)}
        self.emit(rec)

    def _skip(self, e: Entry, parent: str | None) -> None:
        """A dropped entry still has children: they hang on its parent."""
        self.uuids[e.id] = parent or ""

    def result_text(self, e: Entry) -> str:
        return result_text(self.t, e, INLINE_LIMIT, self.report)[0]

    def tool_result(self, e: Entry, parent: str | None) -> None:
        self.report.tool_results += 1
        text = self.result_text(e)
        images = self.images(e)
        content: Any = [{"type": "text", "text": text}, *images] if images else text
        rec = self.base(e, parent, "user")
        rec["message"] = {"role": "user", "content": [{"type": "tool_result",
                          "tool_use_id": self.call_id(e.call_id), "content": content,
                          "is_error": e.is_error}]}
        child = self.spawned.get(e.call_id)
        if child:  # as Claude Code records a finished subagent: its id names the agent file
            rec["toolUseResult"] = {"status": "completed", "agentId": agent_id(self.sid, child),
                                    "content": [{"type": "text", "text": text}]}
        self.emit(rec)

    def synthetic_result(self, call: Entry) -> None:
        uid = stable_uuid(self.sid, call.id, "no-result")
        rec = self.base(call, self.uuid(call.id), "user", uid)
        rec["message"] = {"role": "user", "content": [{"type": "tool_result",
                          "tool_use_id": self.call_id(call.call_id),
                          "content": "[no result was recorded for this call]", "is_error": True}]}
        self.emit(rec)
        self.uuids[call.id] = uid  # the call's children follow its answer
        self.report.notes.append(f"call {call.call_id} had no result: an error result was added")

    def compaction(self, e: Entry, parent: str | None) -> None:
        self.report.compactions += 1
        boundary = stable_uuid(self.sid, e.id, "boundary")
        rec = self.base(e, None, "system", boundary)
        rec.update({"subtype": "compact_boundary", "content": "Conversation compacted",
                    "isMeta": False, "level": "info", "logicalParentUuid": parent,
                    "compactMetadata": {"trigger": "manual", "preTokens": 0}})
        self.emit(rec)
        summary = self.base(e, boundary, "user")
        summary.update({"isCompactSummary": True, "isVisibleInTranscriptOnly": True,
                        "message": {"role": "user", "content": e.text}})
        self.emit(summary)


def _usage(usage: Mapping[str, Any]) -> dict[str, int]:
    out = {"input_tokens": 0, "output_tokens": 0}
    for key in ("input_tokens", "output_tokens", "cache_read_input_tokens",
                "cache_creation_input_tokens"):
        v = usage.get(key) if isinstance(usage, Mapping) else None
        if isinstance(v, int):
            out[key] = v
    return out


def _provenance(t: Transcript, sid: str) -> dict[str, Any]:
    return {"type": "ctxstore-provenance", "sessionId": sid, "timestamp": iso_utc(t.created),
            PROVENANCE_KEY: {"uri": t.provenance(), "session": t.session, "branch": t.branch,
                             "event": t.leaf_event, "source_format": t.source_format,
                             "title": t.title}}


def write(transcript: Transcript, out: BinaryIO) -> ConversionReport:
    """Write TRANSCRIPT (every branch; the chosen one last) as one Claude Code session."""
    sid = session_id(transcript)
    report = ConversionReport(NAME, session_id=sid)
    w = _Writer(transcript, sid, report)
    w.emit(_provenance(transcript, sid))
    entries = tree_order(transcript)
    w.write_all(entries)
    # the title Claude Code's picker shows (a session without any prompt is listed too)
    w.emit({"type": "summary", "summary": _title(transcript),
            "leafUuid": (w.uuid(transcript.leaf) or None) if transcript.leaf else None})
    forks = sum(max(0, n - 1) for n in _fanout(entries).values())
    report.branches_kept = forks
    report.subagents = len(transcript.subagents)
    out.writelines(w.lines)
    return report


def _title(t: Transcript) -> str:
    first = next((p for p in t.prompts(t.path()) if p.strip()), "")
    return (t.title or first.strip().split("\n", 1)[0] or f"ctxstore session {t.session[:12]}")[:200]


def _fanout(entries: list[Entry]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for e in entries:
        counts[e.parent] = counts.get(e.parent, 0) + 1
    return counts


def agent_id(sid: str, child_session: str) -> str:
    """The agent id of a subagent in session SID (its file is `agent-<id>.jsonl`)."""
    return "a" + stable_uuid(sid, "agent", child_session).replace("-", "")[:16]


def companions(transcript: Transcript, report: ConversionReport,
               path: Path) -> list[tuple[str, bytes]]:
    """The subagent files beside the session: (path relative to the session file's
    directory, bytes), written by `ctx resume` (an export to one file leaves them out)."""
    sid = session_id(transcript)
    out: list[tuple[str, bytes]] = []
    for child in transcript.subagents:
        agent = agent_id(sid, child.session)
        w = _Writer(child, sid, ConversionReport(NAME), sidechain=agent)
        w.write_all(list(child.path()))
        meta = {"agentType": "general-purpose", "description": child.title}
        if child.spawn_call:
            meta["toolUseId"] = _Writer(transcript, sid, report).call_id(child.spawn_call)
        base = f"{sid}/subagents/agent-{agent}"
        out.append((base + ".jsonl", b"".join(w.lines)))
        out.append((base + ".meta.json", json.dumps(meta, ensure_ascii=False).encode() + b"\n"))
    return out

