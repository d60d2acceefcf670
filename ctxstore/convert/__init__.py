"""Conversion of a ctxstore session into another harness's own session format ("resume anywhere").

`model.read_transcript` reduces a session to a harness-neutral `Transcript`; each target
module turns one into that harness's file. A target module (registered in TARGETS by name,
imported on first use) provides:

    NAME: str                       # "claude-code", "codex", "pi", "gemini"
    BINARY: str                     # the executable whose --version is checked
    VERIFIED_VERSIONS: tuple[str]   # harness versions whose reader was run on our output
    write(transcript, out: BinaryIO) -> ConversionReport
    default_path(transcript, env: Mapping[str, str]) -> Path   # where the harness looks
    register(path, transcript, env) -> list[str]   # extra steps the harness needs to list it
    resume_command(transcript, path) -> str        # the harness's own command to continue
    session_id(transcript) -> str                  # the id the written session has there
    companions(transcript, report, path) -> [(relative path, bytes)]   # optional: files beside
                                                   # the session (subagents), `ctx resume` only

`write` never touches the file system beyond `out`; porcelain/resume.py does the atomic write.
"""

from __future__ import annotations

import importlib
from dataclasses import asdict, dataclass, field
from types import ModuleType
from typing import Any, BinaryIO, Protocol

from ..errors import InvalidInput
from .model import Entry, Image, Transcript, read_transcript

#: target name -> module. R2's pi and gemini writers live in convert/pi.py and convert/gemini.py.
TARGETS: dict[str, str] = {
    "claude-code": "ctxstore.convert.claude_code",
    "codex": "ctxstore.convert.codex",
    "pi": "ctxstore.convert.pi",
    "gemini": "ctxstore.convert.gemini",
}

#: The key every writer records provenance under (a `ctxstore` key at the top of a record
#: would make the file look like ctxstore's neutral JSONL to `ctx import`'s detection).
PROVENANCE_KEY = "ctxstoreProvenance"


def import_link(repo: Any, provenance: Any) -> dict[str, Any]:
    """The session fields an importer gives a file ctxstore converted (its provenance under
    PROVENANCE_KEY: a map, or the `ctxstore://SESSION/EVENT` uri): the link to the source
    session kept in `origin[PROVENANCE_KEY]`, and, when
    that session is in REPO, a fork of it (`kind` "fork", `parent_session`, `spawn_event` =
    the event converted up to) instead of an unrelated session."""
    if isinstance(provenance, str) and provenance.startswith("ctxstore://"):
        sid, _, eid = provenance[len("ctxstore://"):].partition("/")
        provenance = {"uri": provenance, "session": sid, "event": eid.split("#", 1)[0]}
    if not isinstance(provenance, dict):
        return {}
    link = {k: provenance[k] for k in ("uri", "session", "branch", "event")
            if isinstance(provenance.get(k), str)}
    if not link:
        return {}
    out: dict[str, Any] = {"origin": {PROVENANCE_KEY: link}}
    sid, eid = link.get("session", ""), link.get("event", "")
    if sid and sid in repo.objects and repo.objects.type_of(sid) == "session":
        out.update(kind="fork", parent_session=sid)
        if eid and eid in repo.objects:
            out["spawn_event"] = eid
    return out


class UnverifiedVersion(InvalidInput):
    """The installed harness is newer than any version whose reader we ran on our output."""


@dataclass
class ConversionReport:
    """What a conversion kept, mapped, dropped: the counts the CLI prints and tests check."""

    target: str
    session_id: str = ""  # the converted session's id in the target harness
    prompts: int = 0
    assistant_texts: int = 0
    tool_calls_mapped: int = 0
    tool_calls_generic: int = 0
    tool_results: int = 0
    thinking_kept: int = 0
    thinking_dropped: int = 0
    compactions: int = 0
    compactions_as_message: int = 0
    branches_kept: int = 0
    branches_flattened: int = 0
    subagents: int = 0
    artifacts_inlined: int = 0
    artifacts_referenced: int = 0
    images: int = 0
    records: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def tool_calls(self) -> int:
        return self.tool_calls_mapped + self.tool_calls_generic

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "tool_calls": self.tool_calls}


def result_text(transcript: Transcript, entry: Entry, limit: int,
                report: ConversionReport) -> tuple[str, bool]:
    """`Transcript.result_text` (whole when it fits in LIMIT bytes, else preview + artifact
    reference), counting an artifact-backed output as inlined or referenced in REPORT."""
    text, whole = transcript.result_text(entry, limit)
    if entry.artifact:
        report.artifacts_inlined += int(whole)
        report.artifacts_referenced += int(not whole)
    return text, whole


class Writer(Protocol):
    def __call__(self, transcript: Transcript, out: BinaryIO) -> ConversionReport: ...


def target(name: str) -> ModuleType:
    """The writer module of target NAME (InvalidInput naming the known ones otherwise)."""
    if name not in TARGETS:
        raise InvalidInput(f"unknown harness {name!r}: use one of {', '.join(TARGETS)}")
    try:
        return importlib.import_module(TARGETS[name])
    except ModuleNotFoundError as exc:
        if exc.name != TARGETS[name]:
            raise
        raise InvalidInput(f"converting to {name} is not available in this build") from exc


__all__ = ["TARGETS", "ConversionReport", "Entry", "Image", "Transcript", "UnverifiedVersion",
           "Writer", "import_link", "read_transcript", "result_text", "target", "PROVENANCE_KEY"]
