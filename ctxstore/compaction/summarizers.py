"""Summarizers behind one protocol: request (a JSON-safe map) in, structured summary out.

The request carries the state projection at the end of the range, the events in the range
(type, actor, payload, text) and the previous compaction's record when chaining. A summarizer
returns a map with the compaction record's fields (see REQUIRED_FIELDS); anything else it
returns is ignored. Every summarizer's output goes through the same checks (checks.py).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import CompactionRejected
from .summary_text import HEADER, Writer, error_line, one_line, result_line

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


#: The structured summary's text stays within this many tokens unless the policy says
#: otherwise (`summary_tokens`); what must be said (goal, task, hard constraints, the range's
#: files and errors) is said even beyond it.
DEFAULT_SUMMARY_TOKENS = 2000


class StructuredSummarizer:
    """Deterministic, no model: the record is built from the projected state at the end of the
    range, the range's own projected state (files it modified, errors, facts) and its events;
    the text (summary_text.py) says what the seed's CompactionRecord asks for within
    `budget_tokens` (the policy's `summary_tokens` overrides it)."""

    name = "structured"
    version = "2"

    def __init__(self, budget_tokens: int = DEFAULT_SUMMARY_TOKENS, tokenizer=None) -> None:
        self.budget_tokens, self.tokenizer = budget_tokens, tokenizer

    def __call__(self, request: Mapping[str, Any]) -> dict[str, Any]:
        state = request["state"]
        prev = request.get("previous") or {}
        events = request["events"]
        rstate = request.get("range_state") or {}
        goal = {"user_goal": state["goal"]["user_goal"],
                "current_task": state["goal"]["current_task"]}
        cons = {"hard": list(state["constraints"]["hard"]), "soft": list(state["constraints"]["soft"])}
        steps = state["plan"]["steps"]
        done = [s["text"] for s in steps if s.get("status") in DONE]
        done += [f"{v['check']}: passed" for v in _newest_checks(state).values()
                 if v.get("result") == "pass"]
        done = list(dict.fromkeys(done))
        in_progress = [s["text"] for s in steps if s.get("status") not in DONE]
        read = _uniq([*prev.get("files", {}).get("read", ()),
                      *({"path": f["path"]} for f in rstate.get("files", {}).get("read", ())),
                      *({"path": e["payload"]["path"]} for e in events if e["type"] == "FileRead"
                        and e["payload"].get("path"))])
        in_range = _merge_files(
            [*({"path": f["path"], "change_summary": f.get("change_summary", "")}
               for f in rstate.get("files", {}).get("modified", ())),
             *({"path": e["payload"]["path"], "change_summary": e["payload"].get("change_summary", "")}
               for e in events if e["type"] in ("FileWritten", "DiffApplied") and e["payload"].get("path"))])
        modified = _merge_files([*prev.get("files", {}).get("modified", ()), *in_range])
        calls = {e["payload"].get("tool_call_id"): e["payload"] for e in events
                 if e["type"] == "ToolCallRequested" and e["payload"].get("tool_call_id")}
        tool_results = list(prev.get("tool_results", ()))
        for e in events:
            p = e["payload"]
            if e["type"] == "ToolCallFinished" and (e.get("artifact_id") or p.get("truncated")):
                tool_results.append({"tool_call_id": p.get("tool_call_id", ""),
                                     "summary": (p.get("preview") or "")[:300],
                                     "artifact_ref": e.get("artifact_id", "")})
        range_errors = _range_errors(request, state, rstate, events, calls)
        errors = [dict(e) for e in prev.get("errors", ())] + range_errors
        retried = {e.get("tool_call_id") for e in state.get("errors", ()) if e.get("retried")}
        for err in errors:
            if err.get("tool_call_id") in retried:
                err["retried"] = err["resolved"] = True
        decisions = [d.get("decision", "") + (f" — because {d['rationale']}" if d.get("rationale") else "")
                     for d in state.get("decisions", ())]
        open_q = list(state.get("open_questions", ()))
        next_steps = [s["text"] for s in steps if s.get("status") not in DONE]
        if not next_steps:
            next_steps = [one_line(f"Fix or work around: {e['tool']} {e['target']}: {e['line']}", 200)
                          for e in range_errors
                          if not e.get("resolved") and e.get("kind") == "error"][-2:]
            if goal["current_task"]:
                next_steps.append(f"Continue: {goal['current_task']}")
        record = {"goal": goal, "constraints": cons,
                  "progress": {"done": done, "in_progress": in_progress},
                  "files": {"read": read, "modified": modified}, "tool_results": tool_results,
                  "errors": _uniq([{k: v for k, v in e.items() if k not in ("target", "line")}
                                   for e in errors]),
                  "decisions": decisions, "open_questions": open_q, "next_steps": next_steps}
        budget = (request.get("policy") or {}).get("summary_tokens") or self.budget_tokens
        record["summary"] = render_summary(record, SummaryInput(
            request=request, range_files=in_range, range_errors=range_errors, calls=calls),
            int(budget), self._count)
        record["memory_candidates"] = memory_candidates(rstate)
        return record

    def _count(self, text: str) -> int:
        """Tokens of TEXT by the tokenizer the engine hands over (the context manager's); used
        alone, about 4 bytes a token (compaction must not import the context layer above it)."""
        if self.tokenizer is None:
            return len(text.encode("utf-8")) // 4 + 1
        return self.tokenizer.count(text)


def _newest_checks(state: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for v in state.get("validations", ()):
        out.pop(v.get("check", ""), None)
        out[v.get("check", "")] = v
    return out


def _range_errors(request, state, rstate, events, calls) -> list[dict[str, Any]]:
    """The range's errors as record entries, each with `what` (tool and target) and `line`
    (what went wrong) for the text, and `resolved`."""
    out: list[dict[str, Any]] = []
    for e in rstate.get("errors", ()):
        if not (e.get("tool_call_id") or e.get("error")):
            continue
        tool = e.get("name") or calls.get(e.get("tool_call_id"), {}).get("name", "") or "tool"
        targets = [t for t in e.get("targets", ()) if t]
        denied = e.get("kind") == "denied"
        out.append({"tool_call_id": e.get("tool_call_id", ""), "tool": tool,
                    "error": (e.get("error") or "")[:300], "retried": bool(e.get("retried")),
                    "resolved": bool(e.get("retried")), "kind": e.get("kind") or "error",
                    "target": targets[0] if targets else "",
                    "line": "" if denied else error_line(e.get("error") or "")})
    if not rstate:  # a request without the range's state: read failures off the events
        for e in events:
            p = e["payload"]
            if e["type"] == "ToolCallFailed":
                tool = p.get("name") or calls.get(p.get("tool_call_id"), {}).get("name", "") or "tool"
                text = p.get("error") or p.get("preview") or ""
                out.append({"tool_call_id": p.get("tool_call_id", ""), "tool": tool,
                            "error": text[:300], "retried": bool(p.get("retry")),
                            "resolved": bool(p.get("retry")), "kind": "error", "target": "",
                            "line": error_line(text)})
    newest = _newest_checks(state)
    for e in events:
        p = e["payload"]
        if e["type"] == "VerifierFinished" and p.get("result") == "fail":
            check = p.get("check", "")
            ok = newest.get(check, {}).get("result") == "pass"
            out.append({"check": check, "error": "verification failed", "retried": ok,
                        "resolved": ok, "kind": "error", "tool": "check", "target": check,
                        "line": "verification failed"})
    abandoned = (rstate.get("tool_calls") or {}).get("abandoned") or {}
    for tcid in request.get("abandoned_tool_calls", ()):
        tool = (abandoned.get(tcid) or calls.get(tcid) or {}).get("name", "") or "tool"
        reason = (abandoned.get(tcid) or {}).get("reason") or "the user moved on"
        out.append({"tool_call_id": tcid, "tool": tool,
                    "error": "abandoned: no result; the user moved on", "retried": False,
                    "resolved": False, "kind": "abandoned", "target": "",
                    "line": f"abandoned, no result ({one_line(reason, 60)})"})
    return out


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


#: Plan step statuses that mean done (TodoWrite says "completed").
DONE = ("done", "completed")
#: How much of a harness's own summary (an imported compaction this one chains after) is kept.
EARLIER_SUMMARY_CHARS = 2000
#: A current task shorter than this ("yes, do it") is shown with what it answered.
SHORT_TASK = 30
_SHELL_ID = re.compile(r"[0-9a-f]{4,}|bash_\d+|shell_\w+")


@dataclass
class SummaryInput:
    """What the text needs beyond the record: the request, the range's own files and errors,
    and the range's calls by id."""

    request: Mapping[str, Any]
    range_files: list[dict]
    range_errors: list[dict]
    calls: dict


def _prefix(paths: list[str]) -> str:
    """The directory all PATHS share (ending in "/"), when naming it once saves room."""
    absolute = [p for p in paths if p.startswith("/")]
    if len(absolute) < 2 or len(absolute) != len(paths):
        return ""
    try:
        common = os.path.commonpath(absolute)
    except ValueError:
        return ""
    if common in absolute:  # a path itself, not a directory they share
        common = os.path.dirname(common)
    return common.rstrip("/") + "/" if len(common) > 10 else ""


def _short(path: str, prefix: str) -> str:
    return path[len(prefix):] if prefix and path.startswith(prefix) else path


def _commands(events, calls) -> list[str]:
    """`command` -> how it ended, for the range's successful commands (exec tools)."""
    from ..state.tools import call_effects

    out = []
    for e in events:
        p = e["payload"]
        if e["type"] != "ToolCallFinished":
            continue
        call = calls.get(p.get("tool_call_id"))
        if not call:
            continue
        cmds = [x.summary for x in call_effects(call.get("name", ""), call.get("args", {}))
                if x.kind == "exec" and x.summary]
        if cmds and not _SHELL_ID.fullmatch(cmds[0].strip()):  # not a background shell's id
            cmd = re.sub(r"^(?:ba)?sh -l?c ", "", cmds[0].strip())
            if p.get("truncated") or _cut_json(p.get("preview") or ""):  # a cut preview's
                # lines say nothing about how the command ended
                size = p.get("size") if isinstance(p.get("size"), int) else 0
                ended = f"{size:,} bytes of output" if size else "long output"
            else:
                ended = result_line(p.get("preview") or "", False, 100)
            out.append(f"- `{one_line(cmd, 100)}` → {ended}")
    return out


def _cut_json(text: str) -> bool:
    """A JSON tool output (Codex) whose preview was cut: it no longer parses."""
    t = text.strip()
    if not t.startswith("{"):
        return False
    try:
        json.loads(t)
    except ValueError:
        return True
    return False


def _assistant_before(events, index: int) -> str:
    for e in reversed(events[:index]):
        if e["type"] == "ModelResponseReceived" and str(e["payload"].get("text") or "").strip():
            return str(e["payload"]["text"])
    return ""


def _last_paragraph(text: str, limit: int = 400, ask: bool = False) -> str:
    """The last paragraph of TEXT (with ASK, the newest of its last three that asks something)."""
    paras = [p for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    asking = [p for p in paras[-3:] if "?" in p] if ask else []
    last = asking[-1] if asking else paras[-1] if paras else text
    return one_line(last, limit) if len(last) <= limit else "…" + one_line(last[-limit:], limit)


def render_summary(r: Mapping[str, Any], extra: SummaryInput, budget: int = 0,
                   count: Callable[[str], int] | None = None) -> str:
    """The text the model reads in place of the summarized range (module summary_text.py
    describes the sections and the budget). Chained compactions carry the previous record's
    structured fields, never its text, so repeated compaction cannot grow it."""
    from ..state.prompts import prompt_text

    req = extra.request
    events, state = req.get("events") or [], req.get("state") or {}
    prev = req.get("previous") or {}
    w = Writer(count or (lambda t: (len(t.encode()) + 3) // 4), budget or DEFAULT_SUMMARY_TOKENS)
    sec: dict[str, list[str]] = {}
    n = len(events)
    span = (f"{events[0].get('ts', '')[:16]} to {events[-1].get('ts', '')[:16]}".replace("T", " ")
            if events else "")
    head: list[str] = []
    w.must(head, f"{HEADER[:-1]}: {n} event(s) replaced" + (f", {span}" if span.strip(" to") else "")
           + ("; it carries the summary before it" if prev else "") + "]")
    w.must(head, f"Goal: {r['goal']['user_goal']}")
    task = r["goal"]["current_task"]
    line = f"Current task: {task}" if task != r["goal"]["user_goal"] else "Current task: the goal"
    prompts = [i for i, e in enumerate(events) if e["type"] == "UserPromptSubmitted"]
    if task and len(task) < SHORT_TASK and prompts:  # "yes, do it": say what it answers
        before = _assistant_before(events, prompts[-1])
        if before:
            line += f' (the user\'s reply to: "{_last_paragraph(before, 240, ask=True)}")'
    w.must(head, line)
    for c in r["constraints"]["hard"]:
        w.must(head, f"Hard constraint: {c}")
    sec["head"] = head
    # the range's files and errors: always named
    paths = [f["path"] for f in r["files"]["modified"]] + [f["path"] for f in r["files"]["read"]]
    prefix = _prefix(paths)
    in_range = {f["path"] for f in extra.range_files}
    rng = [f for f in r["files"]["modified"] if f["path"] in in_range]
    earlier = [f for f in r["files"]["modified"] if f["path"] not in in_range]
    if prefix:
        w.must(head, f"Paths below are relative to {prefix}")
    sec["files"] = w.items("Files modified (change summaries, not contents):", [
        f"- {_short(f['path'], prefix)}: {one_line(f.get('change_summary') or 'modified', 80)}"
        for f in rng], required=len(rng))

    def err(e: Mapping[str, Any]) -> str:
        status = ("refused by the user" if e.get("kind") == "denied" else
                  "resolved (a later call succeeded)" if e.get("resolved") else "NOT resolved")
        ref = e.get("tool_call_id") or ""
        target = one_line(_short(e.get("target") or "", prefix), 70)
        return (f"- {e.get('tool') or 'tool'}{' ' + target if target else ''} — {status}"
                + (f": {e['line']}" if e.get("line") else "") + (f" [call {ref}]" if ref else ""))

    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for e in extra.range_errors:  # the same failure of the same call: one line, every call id
        groups.setdefault((e.get("tool"), e.get("target"), e.get("kind"), bool(e.get("resolved")),
                           e.get("line", "")[:60]), []).append(e)
    lines = []
    for same in groups.values():
        ids = [e.get("tool_call_id") for e in same if e.get("tool_call_id")]
        lines.append(err({**same[-1], "tool_call_id": ", ".join(ids)})
                     .replace("[call ", "[calls " if len(ids) > 1 else "[call ")
                     + (f" ({len(same)} times)" if len(same) > 1 else ""))
    sec["errors"] = w.items("Errors (and whether they were resolved):", lines, required=len(lines))
    # then by priority, while the budget lasts
    sec["next"] = w.items("Next steps:", [f"- {one_line(x, 200)}" for x in r["next_steps"]],
                          newest_first=False)
    sec["questions"] = w.items("Open questions:", [f"- {one_line(q, 200)}" for q in r["open_questions"]])
    sec["decisions"] = w.items("Decisions:", [f"- {one_line(d, 240)}" for d in r["decisions"]])
    steps = state.get("plan", {}).get("steps", ())
    marks = {"done": "done", "in_progress": "in progress", "completed": "done"}
    sec["plan"] = w.items("Plan:", [f"- [{marks.get(s.get('status'), s.get('status') or 'pending')}] "
                                    f"{one_line(s.get('text'), 200)}" for s in steps],
                          newest_first=False)
    facts = [f"- {one_line(f['content'], 200)}"
             + (f" (confidence {f['confidence']:g})" if f.get("confidence", 1.0) < 1.0 else "")
             for f in (req.get("range_state") or {}).get("facts", ()) if f.get("content")]
    sec["facts"] = w.items("Facts established:", facts)
    last = next((str(e["payload"].get("text")) for e in reversed(events)
                 if e["type"] == "ModelResponseReceived" and str(e["payload"].get("text") or "").strip()), "")
    sec["last"] = w.items("The assistant's last words in this range:",
                          [f"> {_last_paragraph(last)}"] if last else [])
    said = [*_quotes(prev.get("summary", "")),
            *(one_line(t, 300) for t in (prompt_text(e["text"]) for e in events
                                         if e["type"] == "UserPromptSubmitted" and e.get("text")) if t)]
    known = [one_line(x, 300)[:100] for x in (r["goal"]["user_goal"], task) if x]
    said = [q for q in said if q[:100] not in known]  # the goal and the task are said above
    sec["said"] = w.items("The user asked (newest last):", [f"> {q}" for q in said[-SHOW_QUOTES:]])
    earlier_text = prev.get("summary", "") if prev and not (prev.get("goal") or {}).get("user_goal") else ""
    sec["earlier_summary"] = w.items(  # a harness's own summary (an imported compaction) as it was
        f"Summary before this range (by {(prev.get('provenance') or {}).get('summarizer', 'the harness')}):",
        [f"  {ln}" for ln in earlier_text[:EARLIER_SUMMARY_CHARS].splitlines() if ln.strip()]
        + (["  …"] if len(earlier_text) > EARLIER_SUMMARY_CHARS else []), newest_first=False)
    sec["commands"] = w.items("Commands run (newest last; failures are under Errors):",
                              _commands(events, extra.calls)[-SHOW_ITEMS:])
    sec["soft"] = w.items("Soft constraints:", [f"- {c}" for c in r["constraints"]["soft"]])
    sec["checks"] = w.items("Checks passed:", [f"- {d}" for d in r["progress"]["done"]
                                                if d.endswith(": passed")])
    sec["earlier_files"] = w.items(
        "Files modified before this range:",
        [f"- {_short(f['path'], prefix)}: {one_line(f.get('change_summary') or 'modified', 80)}"
         for f in earlier][-SHOW_FILES:])
    old = [e for e in prev.get("errors", ()) if isinstance(e, Mapping)]
    sec["earlier_errors"] = w.items("Errors before this range:", [
        f"- {e.get('tool') or e.get('check') or e.get('tool_call_id', '')}: "
        f"{error_line(e.get('error', ''), 120)}"
        + (" — resolved" if e.get("resolved") or e.get("retried") else "") for e in old][-SHOW_ITEMS:])
    read = [_short(f["path"], prefix) for f in r["files"]["read"]]
    sec["read"] = w.items("Files read:", ["  " + ", ".join(read[-SHOW_FILES:])
                                          + (f" (+{len(read) - SHOW_FILES} earlier)"
                                             if len(read) > SHOW_FILES else "")] if read else [])
    order = ("head", "earlier_summary", "plan", "decisions", "facts", "files", "earlier_files", "read", "errors",
             "earlier_errors", "commands", "checks", "questions", "soft", "next", "last", "said")
    return "\n".join(line for name in order for line in sec[name])


#: The rendered summary shows at most the newest items of these optional lists (budget
#: permitting); the record keeps them all.
SHOW_ITEMS = 8
SHOW_FILES = 20
SHOW_QUOTES = 5


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
