"""Summarizers behind one protocol: request (a JSON-safe map) in, structured summary out.

The request carries the state projection at the end of the range, the events in the range
(type, actor, payload, text) and the previous compaction's record when chaining. A summarizer
returns a map with the compaction record's fields (see REQUIRED_FIELDS); anything else it
returns is ignored. Every summarizer's output goes through the same checks (checks.py).
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ..errors import CompactionRejected

REQUIRED_FIELDS = ("summary", "goal", "constraints", "progress", "files", "tool_results",
                   "errors", "decisions", "open_questions", "next_steps")


class Summarizer(Protocol):
    name: str
    version: str

    def __call__(self, request: Mapping[str, Any]) -> Mapping[str, Any]: ...


def _uniq(items):
    seen, out = set(), []
    for x in items:
        key = json.dumps(x, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            out.append(x)
    return out


class StructuredSummarizer:
    """Deterministic, no model: the record is built from the state and the events in range."""

    name = "structured"
    version = "1"

    def __call__(self, request: Mapping[str, Any]) -> dict[str, Any]:
        state = request["state"]
        prev = request.get("previous") or {}
        events = request["events"]
        goal = {"user_goal": state["goal"]["user_goal"],
                "current_task": state["goal"]["current_task"]}
        cons = {"hard": list(state["constraints"]["hard"]), "soft": list(state["constraints"]["soft"])}
        steps = state["plan"]["steps"]
        done = [s["text"] for s in steps if s.get("status") == "done"]
        done += [f"{v['check']}: passed" for v in state.get("validations", ()) if v.get("result") == "pass"]
        done = list(dict.fromkeys(done))
        in_progress = [s["text"] for s in steps if s.get("status") not in ("done",)]
        read = _uniq([*prev.get("files", {}).get("read", ()),
                      *({"path": e["payload"]["path"]} for e in events if e["type"] == "FileRead"
                        and e["payload"].get("path"))])
        rstate = request.get("range_state") or {}
        in_range = [{"path": f["path"], "change_summary": f.get("change_summary", "")}
                    for f in rstate.get("files", {}).get("modified", ())]
        in_range += [{"path": e["payload"]["path"],
                      "change_summary": e["payload"].get("change_summary", "")}
                     for e in events if e["type"] in ("FileWritten", "DiffApplied")
                     and e["payload"].get("path")]
        modified = _merge_files([*prev.get("files", {}).get("modified", ()), *in_range])
        tool_results = list(prev.get("tool_results", ()))
        errors = list(prev.get("errors", ()))
        for e in rstate.get("errors", ()):
            if e.get("tool_call_id") or e.get("error"):
                errors.append({"tool_call_id": e.get("tool_call_id", ""),
                               "error": (e.get("error") or "")[:300],
                               "retried": bool(e.get("retried"))})
        for e in events:
            p = e["payload"]
            if e["type"] == "ToolCallFinished" and (e.get("artifact_id") or p.get("truncated")):
                tool_results.append({"tool_call_id": p.get("tool_call_id", ""),
                                     "summary": (p.get("preview") or "")[:300],
                                     "artifact_ref": e.get("artifact_id", "")})
            elif e["type"] == "ToolCallFailed" and not rstate:
                errors.append({"tool_call_id": p.get("tool_call_id", ""),
                               "error": (p.get("error") or p.get("preview") or "")[:300],
                               "retried": bool(p.get("retry"))})
            elif e["type"] == "VerifierFinished" and p.get("result") == "fail":
                errors.append({"check": p.get("check", ""), "error": "verification failed",
                               "retried": False})
        for tcid in request.get("abandoned_tool_calls", ()):
            errors.append({"tool_call_id": tcid, "error": "abandoned: no result; the user moved on",
                           "retried": False})
        retried = {e.get("tool_call_id") for e in state.get("errors", ()) if e.get("retried")}
        for err in errors:
            if err.get("tool_call_id") in retried:
                err["retried"] = True
        decisions = [d.get("decision", "") for d in state.get("decisions", ())]
        open_q = list(state.get("open_questions", ()))
        next_steps = [s["text"] for s in steps if s.get("status") != "done"]
        if not next_steps and goal["current_task"]:
            next_steps = [f"Continue: {goal['current_task']}"]
        user_said = [*_quotes(prev.get("summary", "")),
                     *(e["text"][:400] for e in events if e["type"] == "UserPromptSubmitted" and e["text"])]
        record = {"goal": goal, "constraints": cons,
                  "progress": {"done": done, "in_progress": in_progress},
                  "files": {"read": read, "modified": modified}, "tool_results": tool_results,
                  "errors": _uniq(errors), "decisions": decisions, "open_questions": open_q,
                  "next_steps": next_steps}
        record["summary"] = render_summary(record, user_said)
        record["memory_candidates"] = memory_candidates(rstate)
        return record


def memory_candidates(range_state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Facts and decisions established in the replaced range, with their source refs, offered
    for review (`ctx memory review`); never written to memory by compaction itself."""
    out = []
    for f in range_state.get("facts", ()):
        if f.get("content") and f.get("source_refs"):
            out.append({"content": f["content"], "kind": "fact",
                        "source_refs": list(f["source_refs"]),
                        "confidence": float(f.get("confidence", 1.0))})
    for d in range_state.get("decisions", ()):
        if d.get("decision") and d.get("evidence_refs"):
            text = d["decision"] + (f" ({d['rationale']})" if d.get("rationale") else "")
            out.append({"content": text, "kind": "decision",
                        "source_refs": list(d["evidence_refs"]), "confidence": 0.8})
    return out


def _quotes(previous_summary: str) -> list[str]:
    """The user's words a previous summary quoted, so a chain keeps the newest of them."""
    return [line[2:] for line in previous_summary.splitlines() if line.startswith("> ")]


def render_summary(r: Mapping[str, Any], user_said: list[str]) -> str:
    """The text the model reads in place of the summarized range.

    Its size is bounded whatever the history: every list shows only its newest items (the
    record keeps them all), and a chained compaction carries the previous record's structured
    fields forward, never the previous text, so repeated compaction cannot grow it."""
    lines = ["[Summary of earlier work in this session]"]
    lines.append(f"Goal: {r['goal']['user_goal']}")
    lines.append(f"Current task: {r['goal']['current_task']}")
    for c in r["constraints"]["hard"]:
        lines.append(f"Hard constraint: {c}")
    for c in r["constraints"]["soft"]:
        lines.append(f"Soft constraint: {c}")
    for title, items in (("Done", r["progress"]["done"]), ("In progress", r["progress"]["in_progress"]),
                         ("Decisions", r["decisions"]), ("Open questions", r["open_questions"]),
                         ("Next steps", r["next_steps"])):
        if items:
            lines.append(f"{title}:")
            lines += _capped("-", items, lambda x: " ".join(str(x).split())[:200], SHOW_LIST)
    if r["files"]["read"]:
        read = [f["path"] for f in r["files"]["read"]]
        more = f" (+{len(read) - SHOW_FILES} earlier)" if len(read) > SHOW_FILES else ""
        lines.append("Files read: " + ", ".join(read[-SHOW_FILES:]) + more)
    lines += _capped("Modified", r["files"]["modified"],
                     lambda f: f"{f['path']}: {' '.join(f.get('change_summary', '').split())[:120]}",
                     SHOW_FILES)
    lines += _capped("Tool result", r["tool_results"], lambda t: (
        f"{t['tool_call_id']}: {' '.join(t['summary'].split())[:120]}"
        + (f" (full output: artifact {t['artifact_ref'][:12]})" if t.get("artifact_ref") else "")))
    lines += _capped("Error", r["errors"], lambda e: (
        f"{e.get('tool_call_id') or e.get('check', '')}: {' '.join(e.get('error', '').split())[:120]}"
        + (" (retried)" if e.get("retried") else "")))
    if user_said:
        lines.append("The user said:")
        lines += [f"> {' '.join(u.split())[:300]}" for u in user_said[-SHOW_QUOTES:]]
    return "\n".join(lines)


#: The rendered summary shows the newest items of long lists; the record keeps them all.
SHOW_ITEMS = 8
SHOW_LIST = 12
SHOW_FILES = 20
SHOW_QUOTES = 5


def _capped(label: str, items, fmt, limit: int = SHOW_ITEMS) -> list[str]:
    items = list(items)
    shown = items[-limit:]
    out = [f"{label} {fmt(x)}" for x in shown]
    if len(items) > len(shown):
        out.insert(0, f"({len(items) - len(shown)} earlier item(s) are listed in the compaction record)")
    return out


def _merge_files(entries) -> list[dict]:
    """One entry per path, newest last; an empty change summary keeps the older one."""
    by_path: dict[str, dict] = {}
    for f in entries:
        old = by_path.pop(f["path"], None)
        entry = dict(f)
        if old is not None and not entry.get("change_summary"):
            entry["change_summary"] = old.get("change_summary", "")
        by_path[f["path"]] = entry
    return list(by_path.values())


class CallableSummarizer:
    """A Python callable (e.g. one that calls a model) behind the protocol."""

    def __init__(self, fn: Callable[[Mapping[str, Any]], Mapping[str, Any]], name: str = "callable",
                 version: str = "1") -> None:
        self.fn, self.name, self.version = fn, name, version

    def __call__(self, request):
        try:
            return self.fn(request)
        except Exception as exc:  # noqa: BLE001 - any failure of user code is a failed summary
            raise CompactionRejected(f"summarizer {self.name} failed: {exc}") from None


class CommandSummarizer:
    """An external command: the request as JSON on stdin, the summary as JSON on stdout."""

    def __init__(self, command: str, timeout: float = 600.0) -> None:
        self.command, self.timeout = command, timeout
        self.name = f"command:{shlex.split(command)[0] if command.strip() else ''}"
        self.version = "1"

    def __call__(self, request):
        try:
            proc = subprocess.run(shlex.split(self.command), input=json.dumps(request, default=str),
                                  capture_output=True, text=True, timeout=self.timeout)
        except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
            raise CompactionRejected(f"summarizer command failed to run: {exc}") from None
        if proc.returncode != 0:
            tail = (proc.stderr or "").strip().splitlines()[-1:] or [""]
            raise CompactionRejected(f"summarizer command exited {proc.returncode}: {tail[0][:200]}")
        try:
            out = json.loads(proc.stdout)
        except json.JSONDecodeError:
            raise CompactionRejected("summarizer command did not print a JSON object") from None
        return out
