"""Codex target: a rollout JSONL as the Codex CLI writes it.

Where Codex looks: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<uuid>.jsonl`
(default `~/.codex`). A rollout has no ids or parents, so only the chosen branch is written
(the other branches are counted as flattened). Two views are written, as Codex writes them:

- `response_item` lines are the model's history (what `codex resume` sends back): user and
  assistant `message`s, `function_call` / `function_call_output`, and `custom_tool_call` /
  `custom_tool_call_output` for `apply_patch` (whose input is the patch text). Reasoning is
  written only when it is an OpenAI model's encrypted reasoning (the signature), since Codex
  sends it back to the API; everything else is dropped and counted.
- `event_msg` lines are what Codex's thread view replays (`thread/read` in `codex app-server`
  builds its turns only from these): `task_started` / `task_complete` around each prompt,
  `user_message`, `agent_message`, and a `dynamic_tool_call_request` / `_response` pair per
  tool call so each call shows as a tool call item with its arguments and output.

Subagents are rollouts of their own beside it (`companions`), linked as Codex links a
spawned thread. A compaction is a `compacted` line with the summary (Codex rebuilds the history from the user
messages before it plus the summary, as it does for its own) and a `context_compacted` event.
`session_meta` carries a `ctxstore` key with the provenance (Codex ignores keys it does not
know; `ctx import` reads it to link the rollout back to its source session).

Codex 0.171 also keeps a thread index in `$CODEX_HOME/state_N.sqlite`; see `register`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from . import PROVENANCE_KEY, ConversionReport, result_text, toolmap
from .model import Entry, Transcript, iso_utc, stable_uuid, unanswered

NAME = "codex"
BINARY = "codex"
#: Codex versions whose own reader (`codex app-server` thread/read) ran on our output in
#: tests/test_resume_codex.py (the npm package @openai/codex, pinned in tests/readers).
VERIFIED_VERSIONS = ("0.171.0",)
WRITER_VERSION = VERIFIED_VERSIONS[-1]
INLINE_LIMIT = 1 << 20


def session_id(transcript: Transcript) -> str:
    return stable_uuid("codex", transcript.session, transcript.branch, transcript.leaf)


def home(env: Mapping[str, str]) -> Path:
    return Path(env.get("CODEX_HOME") or Path(env.get("HOME") or Path.home()) / ".codex")


def existing(transcript: Transcript, env: Mapping[str, str]) -> Path | None:
    """A rollout already written for this very conversion (the id is stable), if any."""
    sessions = home(env) / "sessions"
    if not sessions.is_dir():
        return None
    return next(iter(sorted(sessions.glob(f"*/*/*/rollout-*-{session_id(transcript)}.jsonl"))), None)


def default_path(transcript: Transcript, env: Mapping[str, str],
                 now: datetime | None = None) -> Path:
    found = existing(transcript, env)
    if found is not None:
        return found
    now = now or datetime.now(UTC)
    return home(env) / "sessions" / now.strftime("%Y/%m/%d") / \
        f"rollout-{now.strftime('%Y-%m-%dT%H-%M-%S')}-{session_id(transcript)}.jsonl"


def resume_command(transcript: Transcript, path: Path) -> str:
    return f"codex resume {session_id(transcript)}"


def register(path: Path, transcript: Transcript, env: Mapping[str, str]) -> list[str]:
    """Nothing is written to Codex's thread index (`state_N.sqlite`): Codex 0.171.0 adds a
    rollout it finds under sessions/ to its `threads` table itself (seen with its own
    app-server in tests/test_resume_codex.py). What is found is reported, read-only."""
    notes = []
    for db in sorted(home(env).glob("state_*.sqlite")):
        cols = _thread_columns(db)
        if {"id", "rollout_path"} <= cols:
            notes.append(f"{db.name}: Codex indexes the new rollout itself on its next listing "
                         f"(verified with {WRITER_VERSION}); nothing written there")
        else:
            notes.append(f"{db.name}: no threads table this writer knows; nothing written there")
    return notes


def _thread_columns(db: Path) -> set[str]:
    import sqlite3

    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return {row[1] for row in con.execute("PRAGMA table_info(threads)")}
        finally:
            con.close()
    except sqlite3.Error:
        return set()


class _Writer:
    def __init__(self, t: Transcript, sid: str, report: ConversionReport):
        self.t, self.sid, self.report = t, sid, report
        self.lines: list[bytes] = []
        self.turn = ""
        self.ts = t.created
        self.kinds: dict[str, str] = {}  # call id -> "function" | "custom"
        self.calls: dict[str, tuple[str, Any]] = {}  # call id -> (name, args) as written
        self.last_agent = ""

    def line(self, kind: str, payload: dict[str, Any]) -> None:
        rec = {"timestamp": _ts(self.ts), "type": kind, "payload": payload}
        self.lines.append(json.dumps(rec, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
        self.report.records += 1

    def event(self, payload: dict[str, Any]) -> None:
        self.line("event_msg", payload)

    def item(self, payload: dict[str, Any]) -> None:
        self.line("response_item", payload)

    def start_turn(self, e: Entry) -> None:
        self.end_turn()
        self.turn = stable_uuid(self.sid, "turn", e.id)
        self.event({"type": "task_started", "turn_id": self.turn, "model_context_window": None})

    def end_turn(self) -> None:
        if self.turn:
            self.event({"type": "task_complete", "turn_id": self.turn,
                        "last_agent_message": self.last_agent or None})
        self.turn, self.last_agent = "", ""

    def ensure_turn(self, e: Entry) -> None:
        if not self.turn:
            self.start_turn(e)

    def write_all(self, entries: tuple[Entry, ...]) -> None:
        no_result = unanswered(entries)
        called = {e.call_id for e in entries if e.kind == "tool_call"}
        for e in entries:
            self.ts = e.ts or self.ts
            if e.kind == "user":
                self.report.prompts += 1
                self.start_turn(e)
                self.item({"type": "message", "role": "user",
                           "content": [{"type": "input_text", "text": e.text}]})
                self.event({"type": "user_message", "message": e.text, "images": [],
                            "local_images": [], "text_elements": []})
                continue
            self.ensure_turn(e)
            if e.kind == "assistant":
                self.report.assistant_texts += 1
                self.item({"type": "message", "role": "assistant",
                           "content": [{"type": "output_text", "text": e.text}]})
                self.event({"type": "agent_message", "message": e.text})
                self.last_agent = e.text
            elif e.kind == "context":
                self.item({"type": "message", "role": "developer",
                           "content": [{"type": "input_text", "text": e.text or "[image]"}]})
            elif e.kind == "thinking":
                self.thinking(e)
            elif e.kind == "tool_call":
                self.call(e)
                if e.call_id in no_result:
                    self.output(e.call_id, e.tool, e.plain_args(),
                                "[no result was recorded for this call]", False)
                    self.report.notes.append(f"call {e.call_id} had no result: one was added")
            elif e.kind == "tool_result":
                self.result(e, e.call_id in called)
            elif e.kind == "compaction":
                self.report.compactions += 1
                self.line("compacted", {"message": e.text})
                self.event({"type": "context_compacted"})
        self.end_turn()

    def thinking(self, e: Entry) -> None:
        # only Codex's own records hold OpenAI's encrypted reasoning as it must be sent back;
        # another harness's "signature" for a GPT model is in that harness's shape
        if not (e.provider == "openai" and e.signature and self.t.source_format == "codex"):
            self.report.thinking_dropped += 1
            return
        self.report.thinking_kept += 1
        summary = [{"type": "summary_text", "text": e.text}] if e.text else []
        self.item({"type": "reasoning", "summary": summary, "content": None,
                   "encrypted_content": e.signature})
        if e.text:
            self.event({"type": "agent_reasoning", "text": e.text})

    def call(self, e: Entry) -> None:
        name, args, mapped = toolmap.map_call(NAME, e.tool, e.plain_args())
        self.report.tool_calls_mapped += int(mapped)
        self.report.tool_calls_generic += int(not mapped)
        if isinstance(args, str):  # apply_patch: a custom (freeform) tool
            self.kinds[e.call_id] = "custom"
            self.item({"type": "custom_tool_call", "status": "completed", "call_id": e.call_id,
                       "name": name, "input": args})
        else:
            self.kinds[e.call_id] = "function"
            self.item({"type": "function_call", "name": name,
                       "arguments": json.dumps(args, ensure_ascii=False), "call_id": e.call_id})
        self.event({"type": "dynamic_tool_call_request", "callId": e.call_id,
                    "turnId": self.turn, "tool": name, "arguments": args})
        self.calls[e.call_id] = (name, args)

    def result(self, e: Entry, has_call: bool) -> None:
        text, _whole = result_text(self.t, e, INLINE_LIMIT, self.report)
        if e.images:
            self.report.notes.append(f"{len(e.images)} image(s) of a tool result left out "
                                     f"(a rollout output is text)")
        if not has_call:  # a result whose call is not on this branch: text, not a dangling output
            self.item({"type": "message", "role": "developer", "content": [{"type": "input_text",
                       "text": f"[tool result of call {e.call_id} ({e.tool or 'unknown tool'})]\n{text}"}]})
            return
        self.report.tool_results += 1
        name, args = self.calls.get(e.call_id, (e.tool, {}))
        self.output(e.call_id, name, args, text, not e.is_error)

    def output(self, call_id: str, name: str, args: Any, text: str, ok: bool) -> None:
        kind = "custom_tool_call_output" if self.kinds.get(call_id) == "custom" else "function_call_output"
        self.item({"type": kind, "call_id": call_id, "output": text})
        self.event({"type": "dynamic_tool_call_response", "call_id": call_id, "turn_id": self.turn,
                    "tool": name, "arguments": args,
                    "content_items": [{"type": "inputText", "text": text}],
                    "success": ok, "error": None if ok else text[:2000],
                    "duration": {"secs": 0, "nanos": 0}})


def _ts(ts: str) -> str:
    return iso_utc(ts)


def _rollout(transcript: Transcript, sid: str, report: ConversionReport,
             source: Any = "cli") -> list[bytes]:
    """The lines of one rollout: session_meta (with the provenance), then the chosen branch."""
    w = _Writer(transcript, sid, report)
    w.line("session_meta", {
        "id": sid, "timestamp": _ts(transcript.created), "cwd": transcript.cwd,
        "originator": "ctxstore", "cli_version": WRITER_VERSION, "source": source,
        "model_provider": "openai",
        PROVENANCE_KEY: {"uri": transcript.provenance(), "session": transcript.session,
                         "branch": transcript.branch, "event": transcript.leaf_event,
                         "source_format": transcript.source_format, "title": transcript.title}})
    w.write_all(transcript.path())
    return w.lines


def write(transcript: Transcript, out: BinaryIO) -> ConversionReport:
    """Write TRANSCRIPT's chosen branch as one Codex rollout (subagents: `companions`)."""
    sid = session_id(transcript)
    report = ConversionReport(NAME, session_id=sid)
    lines = _rollout(transcript, sid, report)
    on_path = {e.id for e in transcript.path()}
    report.branches_flattened = sum(1 for e in transcript.entries
                                    if e.id not in on_path and e.parent in on_path)
    report.subagents = len(transcript.subagents)
    out.writelines(lines)
    return report


def companions(transcript: Transcript, report: ConversionReport,
               path: Path) -> list[tuple[str, bytes]]:
    """Each subagent as its own rollout beside the session's, as Codex writes a spawned
    thread: `session_meta.source` = `{"subagent": {"thread_spawn": {"parent_thread_id",
    "depth", ...}}}` (written by `ctx resume`; an export is the one session)."""
    sid = session_id(transcript)
    stamp = path.name[len("rollout-"):len("rollout-") + 19]  # the session's own file time
    out = []
    for child in transcript.subagents:
        cid = stable_uuid("codex", sid, "subagent", child.session)
        spawn = {"thread_spawn": {"parent_thread_id": sid, "depth": 1, "agent_path": None,
                                  "agent_nickname": child.title[:80] or None, "agent_role": None}}
        lines = _rollout(child, cid, ConversionReport(NAME, session_id=cid), {"subagent": spawn})
        out.append((f"rollout-{stamp}-{cid}.jsonl", b"".join(lines)))
    return out
