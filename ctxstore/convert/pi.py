"""A session written as a pi coding agent session (JSONL, session format v3), the whole tree.

pi keeps a session as an append-only tree (core/session-manager.js of
@mariozechner/pi-coding-agent 0.73.1, the version tests/readers/pi_reader.mjs runs): a
`session` header line `{type, version: 3, id, timestamp, cwd}`, then entries `{type, id,
parentId, timestamp, ...}`. The leaf pi resumes from is the *last entry of the file*; every
other branch stays reachable with /tree. So every transcript entry keeps its place in the
tree (its parent is the pi entry its transcript parent went into), and the file ends with a
`session_info` entry (the title) whose parent is the chosen branch's leaf: that makes the
chosen branch current whatever order the branches were written in.

Messages are pi-ai's: `user` (text, images), `assistant` (`text`, `thinking`, `toolCall`
blocks, with api/provider/model/usage/stopReason), `toolResult` (toolCallId, toolName,
content, isError). Consecutive assistant-side entries of one source event (a response with
thinking, text and calls) become one assistant message. Injected context (a harness's own
user-role text) becomes a `custom_message`, which pi sends as user content without counting
it as a prompt. A compaction is pi's `compaction` entry with the first kept entry's id (the
entry itself when the summary kept nothing: pi then starts from the summary).

Thinking: pi-ai replays a signed thinking block only to the exact provider/api/model that
made it (providers/transform-messages.js) and sends the text otherwise. A block signed by
Anthropic is kept under its true provider; a block signed by anyone else is dropped and
counted (its signature is in a shape pi's provider for that vendor does not store), as is a
signed block whose provider is unknown. Unsigned thinking text is kept.

Tool results larger than pi's own tools ever return (50 KB, tools/truncate.js) are written
as their preview plus a line naming the ctxstore artifact that holds the rest.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from ..clock import iso_from_ms, parse_ts
from ..errors import NotFound
from . import PROVENANCE_KEY, ConversionReport, result_text
from .model import Entry, Image, Transcript, orphaned, provider_of, stable_uuid, tree_order
from .toolmap import map_call

NAME = "pi"
BINARY = "pi"
#: pi-coding-agent versions whose SessionManager read our output (tests/test_resume_pi.py)
VERIFIED_VERSIONS = ("0.73.1",)
SESSION_VERSION = 3
#: pi's tools truncate their output to 50 KB (DEFAULT_MAX_BYTES); larger results are referenced
INLINE_LIMIT = 50 * 1024
#: provider -> the pi-ai api its messages are labelled with
API_OF = {"anthropic": "anthropic-messages", "openai": "openai-responses",
          "google": "google-generative-ai"}
#: providers whose thinking signatures pi stores as the vendor sends them
SIGNATURES_KEPT = frozenset({"anthropic"})
ASSISTANT_SIDE = frozenset({"assistant", "thinking", "tool_call"})
ZERO_COST = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}


# ---------------------------------------------------------------------------------------------
# Helpers the Gemini writer shares


def provenance(transcript: Transcript) -> dict[str, str]:
    """What the converted file records under PROVENANCE_KEY (the fields Claude Code's and
    Codex's conversions record), read back by `convert.import_link` on import."""
    t = transcript
    return {"uri": t.provenance(), "session": t.session, "branch": t.branch,
            "event": t.leaf_event, "source_format": t.source_format, "title": t.title}


def when(ts: str, fallback: str = "") -> tuple[str, int]:
    """(ISO-8601 with milliseconds and Z, epoch milliseconds) of TS (FALLBACK, then the
    epoch, when it is not a timestamp)."""
    parsed = parse_ts(ts) or parse_ts(fallback)
    ms = int(parsed.timestamp() * 1000) if parsed else 0
    return iso_from_ms(ms), ms


def json_line(record: Any) -> bytes:
    """One JSONL line. Text is written as UTF-8; a string holding a lone surrogate (invalid
    UTF-8) is written with \\u escapes instead, which JSON.parse reads back the same."""
    try:
        return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(record, separators=(",", ":")) + "\n").encode("ascii")


def image_data(transcript: Transcript, image: Image) -> str:
    """The base64 bytes of an image ("" when ctxstore holds only its reference, or names an
    artifact this store does not have: the writer then says so in a text line)."""
    if not image.artifact:
        return ""
    try:
        return base64.b64encode(transcript.artifact_bytes(image.artifact)).decode("ascii")
    except NotFound:
        return ""


def leaves_besides(transcript: Transcript) -> int:
    """How many branch tips the tree has besides the chosen leaf."""
    parents = {e.parent for e in transcript.entries}
    return sum(1 for e in transcript.entries if e.id not in parents and e.id != transcript.leaf)


def target_call(target: str, e: Entry, report: ConversionReport) -> tuple[str, str, dict[str, Any]]:
    """(call id, tool name, arguments object) of a tool_call entry written for TARGET (the
    target's own tool where it has one, counted in REPORT as mapped or generic)."""
    name, args, mapped = map_call(target, e.tool, e.plain_args())
    if mapped:
        report.tool_calls_mapped += 1
    else:
        report.tool_calls_generic += 1
    return e.call_id or f"call_{e.id[:16]}", name, args if isinstance(args, dict) else {"input": args}


def cwd_of(transcript: Transcript) -> str:
    """The directory the session is resumed in: its own, else the current one."""
    return transcript.cwd or os.getcwd()


# ---------------------------------------------------------------------------------------------
# The target interface (ctxstore/convert/__init__.py)


def session_id(transcript: Transcript) -> str:
    """Derived from the session, branch and leaf: converting the same history twice gives the
    same id and the same bytes."""
    return stable_uuid(NAME, transcript.session, transcript.branch, transcript.leaf)


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or str(Path.home())


def _expand(path: str, env: Mapping[str, str]) -> str:
    """pi's expandTildePath: a leading `~` or `~/` is the home directory."""
    return _home(env) + path[1:] if path == "~" or path.startswith("~/") else path


def agent_dir(env: Mapping[str, str]) -> Path:
    """$PI_CODING_AGENT_DIR, else ~/.pi/agent (config.js getAgentDir)."""
    agent = env.get("PI_CODING_AGENT_DIR")
    return Path(_expand(agent, env)) if agent else Path(_home(env)) / ".pi" / "agent"


def sessions_dir(env: Mapping[str, str]) -> Path:
    """The folder of pi's per-project session folders: <agent dir>/sessions."""
    return agent_dir(env) / "sessions"


def _session_dir_setting(settings: Path) -> str:
    try:
        value = json.loads(settings.read_text(encoding="utf-8")).get("sessionDir")
    except (FileNotFoundError, ValueError, UnicodeDecodeError, AttributeError):
        return ""  # pi starts without a settings file it cannot parse, too
    return value if isinstance(value, str) else ""


def session_folder(cwd: str, env: Mapping[str, str]) -> Path:
    """The folder pi lists and opens sessions in for CWD (main.js): PI_CODING_AGENT_SESSION_DIR,
    else the `sessionDir` setting (the project's .pi/settings.json over the agent dir's
    settings.json), else <agent dir>/sessions/--<cwd>--."""
    chosen = env.get("PI_CODING_AGENT_SESSION_DIR") or next(
        (v for v in (_session_dir_setting(Path(cwd) / ".pi" / "settings.json"),
                     _session_dir_setting(agent_dir(env) / "settings.json")) if v), "")
    if chosen:
        return Path(cwd) / _expand(chosen, env)  # a relative setting is relative to pi's cwd
    return sessions_dir(env) / project_dir_name(cwd)


def project_dir_name(cwd: str) -> str:
    """pi's folder for a working directory (session-manager.js getDefaultSessionDir): the
    path without its leading slash, every / \\ : as -, between -- and --."""
    path = cwd[1:] if cwd[:1] in ("/", "\\") else cwd
    return "--" + path.replace("/", "-").replace("\\", "-").replace(":", "-") + "--"


def default_path(transcript: Transcript, env: Mapping[str, str]) -> Path:
    """`<session folder>/<created, : and . as ->_<session id>.jsonl`, as pi names a new
    session file (SessionManager.newSession)."""
    stamp = when(transcript.created)[0].replace(":", "-").replace(".", "-")
    return session_folder(cwd_of(transcript), env) / f"{stamp}_{session_id(transcript)}.jsonl"


def register(path: Path, transcript: Transcript, env: Mapping[str, str]) -> list[str]:
    """Nothing to do: pi lists the files of the project's folder (SessionManager.list)."""
    return []


def resume_command(transcript: Transcript, path: Path) -> str:
    return f"pi --session {path}"


def write(transcript: Transcript, out: BinaryIO) -> ConversionReport:
    report = ConversionReport(target=NAME, session_id=session_id(transcript))
    _PiWriter(transcript, out, report).run()
    return report


# ---------------------------------------------------------------------------------------------


class _PiWriter:
    def __init__(self, transcript: Transcript, out: BinaryIO, report: ConversionReport) -> None:
        self.t = transcript
        self.out = out
        self.report = report
        self.pi_id: dict[str, str] = {}  # transcript entry id -> pi entry id
        self.used: set[str] = set()
        self.call_names: dict[str, str] = {}  # call id -> the tool name written
        self.children: dict[str, int] = {}
        for e in transcript.entries:
            self.children[e.parent] = self.children.get(e.parent, 0) + 1
        self.first_of_event: dict[str, str] = {}  # event id -> first pi entry written for it

    # -- ids and lines ------------------------------------------------------------------------
    def new_id(self, seed: str) -> str:
        digest = hashlib.sha256(seed.encode()).hexdigest()
        for n in range(8, len(digest) + 1):
            if digest[:n] not in self.used:
                self.used.add(digest[:n])
                return digest[:n]
        raise AssertionError(f"no free pi id for {seed}")  # 64 hex digits cannot all collide

    def emit(self, record: dict[str, Any]) -> None:
        self.out.write(json_line(record))
        self.report.records += 1

    def entry(self, kind: str, seed: str, parent: str, ts: str, **fields: Any) -> str:
        pid = self.new_id(seed)
        self.emit({"type": kind, "id": pid, "parentId": parent or None,
                   "timestamp": when(ts, self.t.created)[0], **fields})
        return pid

    # -- the file -----------------------------------------------------------------------------
    def run(self) -> None:
        t = self.t
        created = when(t.created)[0]
        self.emit({"type": "session", "version": SESSION_VERSION, "id": self.report.session_id,
                   "timestamp": created, "cwd": cwd_of(t), PROVENANCE_KEY: provenance(t)})
        self.orphans = orphaned(t.entries)
        entries = tree_order(t)
        i = 0
        while i < len(entries):
            e = entries[i]
            if e.kind in ASSISTANT_SIDE:
                group = [e]
                while i + 1 < len(entries) and self._continues(group[-1], entries[i + 1]):
                    i += 1
                    group.append(entries[i])
                self.assistant(group)
            else:
                self.single(e)
            i += 1
        leaf = self.pi_id.get(t.leaf, "")
        self.entry("session_info", f"{t.provenance()}/session_info", leaf, t.path()[-1].ts if leaf else t.created,
                   name=t.title or _first_line(t.prompts(t.path())) or f"ctxstore {t.session[:12]}")
        self.report.branches_kept = leaves_besides(t)
        if t.subagents:
            self.report.subagents = len(t.subagents)
            self.report.notes.append(f"{len(t.subagents)} subagent transcript(s) not written: pi "
                                     f"has no subagent sessions (the spawning calls and their "
                                     f"results are kept)")

    def _continues(self, prev: Entry, nxt: Entry) -> bool:
        """Whether NXT goes into PREV's assistant message: the same source event, straight
        after PREV, and PREV is no branch point."""
        return (nxt.kind in ASSISTANT_SIDE and nxt.event == prev.event and nxt.parent == prev.id
                and self.children.get(prev.id, 0) == 1)

    def parent_of(self, e: Entry) -> str:
        return self.pi_id.get(e.parent, "") if e.parent else ""

    def place(self, entries: Iterable[Entry], pid: str) -> None:
        for e in entries:
            self.pi_id[e.id] = pid
            self.first_of_event.setdefault(e.event, pid)

    def single(self, e: Entry) -> None:
        handler = {"user": self.user, "context": self.context, "tool_result": self.result,
                   "compaction": self.compaction}.get(e.kind)
        if e.kind == "tool_result" and e.call_id in self.orphans:
            handler = self.orphan
        if handler is None:  # an unknown kind from a newer model: keep the tree connected
            self.pi_id[e.id] = self.parent_of(e)
            return
        self.place([e], handler(e))

    # -- entries ------------------------------------------------------------------------------
    def message(self, e: Entry, message: dict[str, Any]) -> str:
        return self.entry("message", e.id, self.parent_of(e), e.ts, message=message)

    def images(self, images: tuple[Image, ...]) -> list[dict[str, Any]]:
        out = []
        for img in images:
            data = image_data(self.t, img)
            if data:
                out.append({"type": "image", "data": data, "mimeType": img.media_type or "image/png"})
                self.report.images += 1
            else:
                out.append({"type": "text", "text": f"[image {img.media_type} {img.uri}: not held "
                                                    f"by ctxstore, only referenced]".replace("  ", " ")})
        return out

    def user(self, e: Entry) -> str:
        self.report.prompts += 1
        content = [{"type": "text", "text": e.text}, *self.images(e.images)]
        return self.message(e, {"role": "user", "content": content, "timestamp": when(e.ts, self.t.created)[1]})

    def context(self, e: Entry) -> str:
        content = ([{"type": "text", "text": e.text}] if e.text else []) + self.images(e.images)
        return self.entry("custom_message", e.id, self.parent_of(e), e.ts,
                          customType=f"ctxstore:{e.role or 'context'}", content=content, display=True)

    def compaction(self, e: Entry) -> str:
        self.report.compactions += 1
        pid = self.new_id(e.id)
        kept = self.kept_entry(e)
        self.emit({"type": "compaction", "id": pid, "parentId": self.parent_of(e) or None,
                   "timestamp": when(e.ts, self.t.created)[0], "summary": e.text,
                   "firstKeptEntryId": kept or pid, "tokensBefore": 0,
                   "details": {PROVENANCE_KEY: self.t.provenance(e.event),
                               "replacedEvents": len(e.replaced)},
                   "fromHook": False})
        return pid

    def orphan(self, e: Entry) -> str:
        """A result whose call is in no entry: as text (a provider rejects a tool result
        without its call)."""
        text, _whole = result_text(self.t, e, INLINE_LIMIT, self.report)
        self.report.notes.append(f"the result of call {e.call_id or '?'} has no call in the "
                                 f"session: written as text")
        return self.entry("custom_message", e.id, self.parent_of(e), e.ts,
                          customType="ctxstore:tool-result", display=True,
                          content=[{"type": "text", "text": f"[{e.tool or 'tool'} result] {text}"}])

    def kept_entry(self, e: Entry) -> str:
        """The pi entry of the compaction's first kept event, or of the first entry after the
        last replaced one on its path when that event made no entry ("" when none is kept)."""
        if not e.first_kept:
            return ""
        if e.first_kept in self.first_of_event:
            return self.first_of_event[e.first_kept]
        replaced = set(e.replaced)
        path = self.t.path(e.parent) if e.parent else ()
        last = max((i for i, x in enumerate(path) if x.event in replaced), default=None)
        if last is None:
            return ""
        return next((self.pi_id[x.id] for x in path[last + 1:] if x.id in self.pi_id), "")

    def result(self, e: Entry) -> str:
        self.report.tool_results += 1
        text, _whole = result_text(self.t, e, INLINE_LIMIT, self.report)
        name = self.call_names.get(e.call_id) or map_call(NAME, e.tool, {})[0]
        return self.message(e, {"role": "toolResult", "toolCallId": e.call_id or f"call_{e.id[:16]}",
                                "toolName": name,
                                "content": [{"type": "text", "text": text}, *self.images(e.images)],
                                "isError": e.is_error, "timestamp": when(e.ts, self.t.created)[1]})

    def assistant(self, group: list[Entry]) -> None:
        first = group[0]
        model = next((e.model for e in group if e.model), "") or self.t.model
        provider = next((e.provider for e in group if e.provider), "") or provider_of(model)
        content: list[dict[str, Any]] = []
        for e in group:
            if e.kind == "assistant":
                self.report.assistant_texts += 1
                content.append({"type": "text", "text": e.text})
            elif e.kind == "thinking":
                block = self.thinking(e, provider)
                if block is not None:
                    content.append(block)
            else:
                content.append(self.call(e))
        if not content:  # only thinking nobody can verify: nothing of the message is left
            self.place(group, self.parent_of(first))
            return
        calls = any(c["type"] == "toolCall" for c in content)
        message = {"role": "assistant", "content": content,
                   "api": API_OF.get(provider, "openai-completions"),
                   "provider": provider or "ctxstore", "model": model or "unknown",
                   "usage": _usage(first.usage), "stopReason": "toolUse" if calls else "stop",
                   "timestamp": when(first.ts, self.t.created)[1]}
        self.place(group, self.message(first, message))

    def thinking(self, e: Entry, provider: str) -> dict[str, Any] | None:
        if e.signature and (e.provider or provider) not in SIGNATURES_KEPT:
            self.report.thinking_dropped += 1
            return None
        if not e.text and not e.signature:
            return None
        self.report.thinking_kept += 1
        block: dict[str, Any] = {"type": "thinking", "thinking": e.text}
        if e.signature:
            block["thinkingSignature"] = e.signature
            if not e.text:  # Anthropic's redacted_thinking: pi keeps its data as the signature
                block["redacted"] = True
        return block

    def call(self, e: Entry) -> dict[str, Any]:
        call_id, name, args = target_call(NAME, e, self.report)
        self.call_names[call_id] = name
        return {"type": "toolCall", "id": call_id, "name": name, "arguments": args}


def token_counts(usage: Mapping[str, Any]) -> tuple[int, int, int]:
    """(input with the cached part, cached input, output) of ctxstore's usage payload
    {input_tokens, cached_input_tokens, output_tokens}."""
    return tuple(int(usage.get(k, 0) or 0)  # type: ignore[return-value]
                 for k in ("input_tokens", "cached_input_tokens", "output_tokens"))


def _usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    """pi-ai's Usage (input without the cached part, cacheRead the cached part)."""
    total_in, cached, out = token_counts(usage)
    return {"input": max(total_in - cached, 0), "output": out, "cacheRead": cached, "cacheWrite": 0,
            "totalTokens": total_in + out, "cost": dict(ZERO_COST)}


def _first_line(prompts: list[str]) -> str:
    for p in prompts:
        line = p.strip().split("\n", 1)[0].strip()
        if line:
            return line[:120]
    return ""
