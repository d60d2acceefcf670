"""A session written as a Gemini CLI chat recording (JSONL), the chosen branch only.

The format is what @google/gemini-cli-core 0.61.0 records and reads back for `--resume`
(services/chatRecordingService.js `loadConversationRecord`, utils/sessionUtils.js
`convertSessionToClientHistory`; tests/readers/gemini_reader.mjs runs both): a metadata line
`{sessionId, projectHash, startTime, lastUpdated, kind, summary?}`, then message records
`{id, timestamp, type: user|gemini|info, content, toolCalls?, thoughts?, tokens?, model?}`.
A `gemini` record's `toolCalls` carry their own results (`result: [{functionResponse}]`,
`status`), which gemini-cli replays as the user turn after the model turn.

Gemini CLI keeps no tree: only the chosen branch is written (the others are counted as
flattened). Subagents are recordings of their own beside it (`companions`), linked as gemini-cli
links them: the file sits in a folder named after the parent session, and the spawning tool
call carries the subagent's id as `agentId`. A compaction is written the way gemini-cli records its own chat compression: a
`{"$set": {"messages": [...]}}` line whose history is the summary (a user turn) followed by
the kept messages; the loader starts again from that history, and the records before it stay
in the file. Injected context (a harness's own user-role text) becomes an `info` record:
kept and shown, never sent to the model as a prompt.

Thinking: the recording keeps thought summaries (`thoughts: [{subject, description}]`) and
no signatures. Unsigned thinking text is kept there; thinking signed by another provider
than Google is dropped and counted (its text was made to be replayed with its signature).

Where: `$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl`
(else under the user's home). <project> is the short id gemini-cli's project registry gave the
working directory (`.gemini/projects.json`, checked against the `.project_root` marker, as
config/projectRegistry.js does); for a directory gemini-cli has never run in, the legacy
sha256 folder, which gemini-cli copies into its new project folder when it first starts there
(config/storageMigration.js). Resume: `gemini --resume <session id>` in that directory.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import InvalidInput
from . import PROVENANCE_KEY, ConversionReport, result_text
from .model import Entry, Transcript, stable_uuid
from .pi import (
    cwd_of,
    image_data,
    json_line,
    leaves_besides,
    provenance,
    target_call,
    token_counts,
    when,
)

NAME = "gemini"
BINARY = "gemini"
#: gemini-cli-core versions whose loader read our output (tests/test_resume_gemini.py)
VERIFIED_VERSIONS = ("0.61.0",)
#: gemini-cli's own cap on a recorded tool output (chatRecordingTypes.js MAX_TOOL_OUTPUT_SIZE)
INLINE_LIMIT = 50 * 1024
ASSISTANT_SIDE = frozenset({"assistant", "thinking", "tool_call"})
PROJECT_ROOT_FILE = ".project_root"
_SLUG = re.compile(r"[a-z0-9-]+")  # the registry schema (config/projectRegistry.js)


# ---------------------------------------------------------------------------------------------
# Where Gemini CLI looks


def session_id(transcript: Transcript) -> str:
    """Derived from the session, branch and leaf, as every target's is."""
    return stable_uuid(NAME, transcript.session, transcript.branch, transcript.leaf)


def gemini_dir(env: Mapping[str, str]) -> Path:
    """gemini-cli's homedir() is $GEMINI_CLI_HOME taken as is, else the user's home."""
    home = env.get("GEMINI_CLI_HOME") or env.get("HOME") or str(Path.home())
    return Path(home) / ".gemini"


def project_hash(root: str) -> str:
    """utils/paths.js getProjectHash: sha256 of the project root (the metadata's projectHash
    and the legacy folder name)."""
    return hashlib.sha256(root.encode("utf-8")).hexdigest()


def _owner(marker: Path) -> str | None:
    """The directory a `.project_root` marker names: None when there is none, "" when it
    cannot be read (Gemini CLI then counts the folder as not that project's)."""
    try:
        return marker.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        return ""


def _registered(registry: Path) -> dict[str, str]:
    """projects.json's {directory: short id}; empty when it is missing or is not the schema
    Gemini CLI 0.61 checks (it then starts from an empty registry too: loadData)."""
    try:
        data = json.loads(registry.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError, UnicodeDecodeError):
        return {}
    except OSError as exc:
        raise InvalidInput(f"cannot read Gemini CLI's project registry {registry}: "
                           f"{exc.strerror or exc}") from None
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict) or not all(
            isinstance(v, str) and _SLUG.fullmatch(v) for v in projects.values()):
        return {}
    return projects


def project_slug(base: Path, root: str) -> str:
    """The short id gemini-cli's registry holds for ROOT ("" when it has none): the mapping in
    projects.json unless a `.project_root` marker names another directory, else a folder of
    tmp/ whose marker names ROOT (ProjectRegistry.getShortId)."""
    slug = _registered(base / "projects.json").get(root)
    if slug:
        owners = [_owner(base / d / slug / PROJECT_ROOT_FILE) for d in ("tmp", "history")]
        if all(o is None or o == root for o in owners):
            return slug
    tmp = base / "tmp"
    if tmp.is_dir():
        for folder in sorted(tmp.iterdir()):
            if _owner(folder / PROJECT_ROOT_FILE) == root:
                return folder.name
    return ""


def chats_dir(transcript: Transcript, env: Mapping[str, str]) -> Path:
    base = gemini_dir(env)
    root = os.path.abspath(cwd_of(transcript))
    return base / "tmp" / (project_slug(base, root) or project_hash(root)) / "chats"


def default_path(transcript: Transcript, env: Mapping[str, str]) -> Path:
    """chats/session-<start, to the minute>-<first 8 of the id>.jsonl, as gemini-cli names a
    new recording (ChatRecordingService.initialize)."""
    stamp = when(transcript.created)[0][:16].replace(":", "-")
    return chats_dir(transcript, env) / f"session-{stamp}-{session_id(transcript)[:8]}.jsonl"


def register(path: Path, transcript: Transcript, env: Mapping[str, str]) -> list[str]:
    """Nothing is registered: gemini-cli lists its project's chats/ folder. A file written to
    the legacy sha256 folder is copied into the project's folder by gemini-cli itself."""
    folder = path.parent.parent
    if folder.name == project_hash(os.path.abspath(cwd_of(transcript))):
        return [f"Gemini CLI has no project folder for {cwd_of(transcript)} yet: it copies "
                f"{folder} into it the first time it starts there"]
    return []


def resume_command(transcript: Transcript, path: Path) -> str:
    return f"cd {shlex.quote(cwd_of(transcript))} && gemini --resume {session_id(transcript)}"


def write(transcript: Transcript, out: BinaryIO) -> ConversionReport:
    report = ConversionReport(target=NAME, session_id=session_id(transcript))
    w = _GeminiWriter(transcript, report)
    w.run()
    out.write(b"".join(json_line(r) for r in w.records))
    report.records = len(w.records)
    return report


def agent_id(transcript: Transcript, child: Transcript) -> str:
    """The id a subagent's recording has (its sessionId, file name and the spawning call's
    `agentId`, which is how gemini-cli links the two)."""
    return stable_uuid(session_id(transcript), "agent", child.session)


def companions(transcript: Transcript, report: ConversionReport,
               path: Path | None = None) -> list[tuple[str, bytes]]:
    """The subagents' recordings, as gemini-cli files them: `chats/<parent session id>/<agent
    id>.jsonl`, `kind: subagent` (paths relative to the session file's folder PATH, which this
    target does not need; `ctx resume` writes them, an export to one file leaves them out)."""
    out: list[tuple[str, bytes]] = []
    for child in transcript.subagents:
        aid = agent_id(transcript, child)
        w = _GeminiWriter(dataclasses.replace(child, cwd=cwd_of(transcript)),
                          ConversionReport(NAME, session_id=aid), kind="subagent")
        w.run()
        out.append((f"{session_id(transcript)}/{aid}.jsonl", b"".join(json_line(r) for r in w.records)))
    return out


# ---------------------------------------------------------------------------------------------


class _GeminiWriter:
    def __init__(self, transcript: Transcript, report: ConversionReport, kind: str = "main") -> None:
        self.t = transcript
        self.report = report
        self.kind = kind
        #: spawning call id -> the agent id of the subagent recording written beside this one
        self.agents = {c.spawn_call: agent_id(transcript, c) for c in transcript.subagents
                       if c.spawn_call and kind == "main"}
        self.records: list[Any] = []
        self.live: list[tuple[int, dict[str, Any]]] = []  # (path index, message) gemini resumes
        self.calls: dict[str, dict[str, Any]] = {}  # call id -> its toolCalls record
        self.path = transcript.path()

    def new_id(self, entry_id: str) -> str:
        return stable_uuid(self.report.session_id, entry_id)

    def ts(self, e: Entry) -> str:
        return when(e.ts, self.t.created)[0]

    def add(self, index: int, message: dict[str, Any]) -> None:
        self.records.append(message)
        if message["type"] != "info":
            self.live.append((index, message))

    def run(self) -> None:
        t = self.t
        start = when(t.created)[0]
        last = when(self.path[-1].ts, t.created)[0] if self.path else start
        meta: dict[str, Any] = {"sessionId": self.report.session_id,
                                "projectHash": project_hash(os.path.abspath(cwd_of(t))),
                                "startTime": start, "lastUpdated": last, "kind": self.kind}
        if self.kind == "subagent":  # gemini-cli records a subagent's workspace directories
            meta["directories"] = [os.path.abspath(cwd_of(t))]
        else:
            meta[PROVENANCE_KEY] = provenance(t)
        if t.title and self.kind == "main":
            meta["summary"] = t.title
        self.records.append(meta)
        i = 0
        while i < len(self.path):
            e = self.path[i]
            if e.kind in ASSISTANT_SIDE:
                j = i
                while j + 1 < len(self.path) and self.path[j + 1].kind in ASSISTANT_SIDE:
                    j += 1
                self.gemini(i, self.path[i:j + 1])
                i = j + 1
                continue
            {"user": self.user, "context": self.context, "tool_result": self.result,
             "compaction": self.compaction}.get(e.kind, lambda _i, _e: None)(i, e)
            i += 1
        for call in self.calls.values():
            if "status" not in call:  # never answered in the source
                call["status"] = "cancelled"
        self.report.branches_flattened = leaves_besides(t)
        self.report.subagents = len(t.subagents)

    # -- records ------------------------------------------------------------------------------
    def parts(self, e: Entry) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"text": e.text}] if e.text or not e.images else []
        for img in e.images:
            data = image_data(self.t, img)
            if data:
                out.append({"inlineData": {"mimeType": img.media_type or "image/png", "data": data}})
                self.report.images += 1
            else:
                out.append({"text": f"[image {img.media_type or ''} {img.uri}: only referenced]"})
        return out

    def user(self, i: int, e: Entry) -> None:
        self.report.prompts += 1
        if e.text.strip().startswith(("/", "?")):
            self.report.notes.append(f"prompt {self.report.prompts} starts with {e.text.strip()[0]!r}: "
                                     f"kept in the file, but Gemini CLI leaves such lines (its "
                                     f"commands) out of the history it resumes")
        self.add(i, {"id": self.new_id(e.id), "timestamp": self.ts(e), "type": "user",
                     "content": self.parts(e)})

    def context(self, i: int, e: Entry) -> None:
        text = e.text or "[image]"
        self.add(i, {"id": self.new_id(e.id), "timestamp": self.ts(e), "type": "info",
                     "content": f"[{e.role or 'context'}] {text}"})

    def gemini(self, i: int, group: list[Entry]) -> None:
        first = group[0]
        model = next((e.model for e in group if e.model), "") or self.t.model
        texts: list[dict[str, Any]] = []
        thoughts: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        for e in group:
            if e.kind == "assistant":
                self.report.assistant_texts += 1
                texts.append({"text": e.text})
            elif e.kind == "thinking":
                if e.signature and (e.provider or "google") != "google" or not e.text:
                    self.report.thinking_dropped += 1 if e.signature else 0
                    continue
                self.report.thinking_kept += 1
                thoughts.append({"subject": "", "description": e.text, "timestamp": self.ts(e)})
            else:
                calls.append(self.call(e))
        message: dict[str, Any] = {"id": self.new_id(first.id), "timestamp": self.ts(first),
                                   "type": "gemini", "content": texts}
        if thoughts:
            message["thoughts"] = thoughts
        if calls:
            message["toolCalls"] = calls
        if model:
            message["model"] = model
        usage = next((e.usage for e in group if e.usage), None)
        if usage:
            message["tokens"] = _tokens(usage)
        if texts or thoughts or calls:
            self.add(i, message)

    def call(self, e: Entry) -> dict[str, Any]:
        call_id, name, args = target_call(NAME, e, self.report)
        record = {"id": call_id, "name": name, "args": args, "timestamp": self.ts(e)}
        if call_id in self.agents:
            record["agentId"] = self.agents[call_id]
        self.calls[call_id] = record
        return record

    def result(self, i: int, e: Entry) -> None:
        record = self.calls.get(e.call_id)
        text, _whole = result_text(self.t, e, INLINE_LIMIT, self.report)
        if record is None or "status" in record:
            self.report.notes.append(f"the result of call {e.call_id or '?'} has no call on this "
                                     f"branch: written as an info record")
            self.add(i, {"id": self.new_id(e.id), "timestamp": self.ts(e), "type": "info",
                         "content": f"[{e.tool or 'tool'} result] {text}"})
            return
        self.report.tool_results += 1
        response = {"error": text} if e.is_error else {"output": text}
        parts: list[dict[str, Any]] = [{"functionResponse": {"id": record["id"], "name": record["name"],
                                                             "response": response}}]
        for img in e.images:
            data = image_data(self.t, img)
            if data:
                parts.append({"inlineData": {"mimeType": img.media_type or "image/png", "data": data}})
                self.report.images += 1
        record["result"] = parts
        record["status"] = "error" if e.is_error else "success"
        record["resultDisplay"] = text if len(text) <= 2000 else text[:2000] + "…"

    def compaction(self, i: int, e: Entry) -> None:
        """gemini-cli's chat compression record: `$set.messages`, the summary then the kept
        messages (those from the first kept entry on)."""
        self.report.compactions += 1
        kept_from = self._kept_index(i, e)
        summary = {"id": self.new_id(e.id), "timestamp": self.ts(e), "type": "user",
                   "content": [{"text": e.text}]}
        kept = [(k, m) for k, m in self.live if k >= kept_from]
        self.live = [(i, summary), *kept]
        self.records.append({"$set": {"messages": [m for _, m in self.live],
                                      "lastUpdated": self.ts(e)}})

    def _kept_index(self, i: int, e: Entry) -> int:
        """The path index of the first kept entry (i, the compaction itself, when none is)."""
        for k, x in enumerate(self.path[:i]):
            if e.first_kept and x.event == e.first_kept:
                return k
        replaced = set(e.replaced)
        last = max((k for k, x in enumerate(self.path[:i]) if x.event in replaced), default=None)
        return last + 1 if last is not None and e.first_kept else i


def _tokens(usage: Mapping[str, Any]) -> dict[str, int]:
    """gemini's TokensSummary from ctxstore's usage (input counts the cached part, as Gemini's
    promptTokenCount does)."""
    total_in, cached, out = token_counts(usage)
    return {"input": total_in, "output": out, "cached": cached, "thoughts": 0, "tool": 0,
            "total": total_in + out}
