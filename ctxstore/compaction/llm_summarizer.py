"""A summarizer that asks a real model, through the `llm` library (optional extra `[llm]`).

`ctx compact --summarizer llm:MODEL` uses any model an installed llm plugin provides (OpenAI,
Anthropic, Gemini, local models, ...). The model is given the structured request — the state
at the end of the range, the projected state of the replaced range (files modified, errors,
plan), the calls the rule of state/calls.py calls abandoned, and the range's events as text,
cut to `max_chars` with the newest kept — and asked for the record's structured fields as one
JSON object (with a JSON schema when the model supports one). Its answer goes through the same
checks as every summarizer; the model id and PROMPT_VERSION are recorded in the compaction
record's provenance.

Why `llm`: one well-kept library gives every provider behind one call, with keys, aliases and
plugins configured the way its users already have them; ctxstore carries no provider code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import CompactionRejected, InvalidInput
from .summarizers import REQUIRED_FIELDS

#: Bumped whenever the prompt or the schema changes; recorded with every compaction.
PROMPT_VERSION = "ctx-llm-summary-1"
DEFAULT_MAX_CHARS = 60_000

SYSTEM = """You compact part of an AI coding agent's session. The agent will continue from \
your summary instead of the events, so nothing it needs may become vague.
Reply with ONE JSON object and nothing else, with exactly these fields:
  summary: string, the text the agent reads instead of the events. It MUST contain the user
    goal verbatim and every hard constraint verbatim.
  goal: {"user_goal": the USER GOAL copied verbatim, "current_task": the task in progress}
  constraints: {"hard": every HARD CONSTRAINT copied verbatim, "soft": [...]}
  progress: {"done": [...], "in_progress": [...]} (every PLAN step goes into one of them)
  files: {"read": [{"path"}], "modified": [{"path", "change_summary"}]} (every path listed
    under FILES MODIFIED)
  tool_results: [{"tool_call_id", "summary", "artifact_ref"}] for results worth keeping
  errors: [{"tool_call_id", "error", "retried"}] (every id under ERRORS and ABANDONED CALLS)
  decisions: [strings]; open_questions: [strings]; next_steps: [strings, at least one]
"""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "summary": {"type": "string"},
        "goal": {"type": "object", "properties": {"user_goal": {"type": "string"},
                                                  "current_task": {"type": "string"}}},
        "constraints": {"type": "object", "properties": {
            "hard": {"type": "array", "items": {"type": "string"}},
            "soft": {"type": "array", "items": {"type": "string"}}}},
        "progress": {"type": "object", "properties": {
            "done": {"type": "array", "items": {"type": "string"}},
            "in_progress": {"type": "array", "items": {"type": "string"}}}},
        "files": {"type": "object", "properties": {
            "read": {"type": "array", "items": {"type": "object"}},
            "modified": {"type": "array", "items": {"type": "object"}}}},
        "tool_results": {"type": "array", "items": {"type": "object"}},
        "errors": {"type": "array", "items": {"type": "object"}},
        "decisions": {"type": "array", "items": {"type": "string"}},
        "open_questions": {"type": "array", "items": {"type": "string"}},
        "next_steps": {"type": "array", "items": {"type": "string"}},
    },
    "required": list(REQUIRED_FIELDS),
}


def _lines(title: str, items) -> list[str]:
    items = list(items)
    return [f"{title}:", *(f"- {x}" for x in items)] if items else [f"{title}: (none)"]


def render_request(request: Mapping[str, Any], max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """The prompt text for one request: the facts the checks hold the summary to, first and
    whole; then the events, newest kept when they exceed `max_chars`."""
    state = request.get("state") or {}
    rstate = request.get("range_state") or {}
    prev = request.get("previous") or {}
    goal = state.get("goal", {})
    out = [f"KIND: {request.get('kind', 'compaction')}",
           f"USER GOAL: {goal.get('user_goal', '')}",
           f"CURRENT TASK: {goal.get('current_task', '')}"]
    out += _lines("HARD CONSTRAINTS", state.get("constraints", {}).get("hard", ()))
    out += _lines("PLAN", (f"[{s.get('status', '')}] {s.get('text', '')}"
                           for s in state.get("plan", {}).get("steps", ())))
    out += _lines("FILES MODIFIED", (f.get("path", "") for f in [
        *prev.get("files", {}).get("modified", ()), *rstate.get("files", {}).get("modified", ())]))
    out += _lines("ERRORS", (f"{e.get('tool_call_id', '')}: {str(e.get('error', ''))[:200]}"
                             for e in [*prev.get("errors", ()), *rstate.get("errors", ())]))
    out += _lines("ABANDONED CALLS", request.get("abandoned_tool_calls", ()))
    if prev.get("summary"):
        out += ["PREVIOUS SUMMARY:", prev["summary"]]
    head = "\n".join(out)
    budget = max(0, max_chars - len(head))
    events: list[str] = []
    for e in reversed(request.get("events", ())):
        text = " ".join(str(e.get("text", "")).split())[:2000]
        line = f"[{e.get('type', '')} {str(e.get('id', ''))[:12]}] {text}"
        if len(line) + 1 > budget:
            events.append(f"[... {len(request['events']) - len(events)} older event(s) left out]")
            break
        budget -= len(line) + 1
        events.append(line)
    return head + "\nEVENTS (oldest first):\n" + "\n".join(reversed(events))


def _parse(text: str) -> Any:
    t = text.strip()
    if t.startswith("```"):
        t = t.split("\n", 1)[1] if "\n" in t else ""
        t = t.rsplit("```", 1)[0]
    start, end = t.find("{"), t.rfind("}")
    if start < 0 or end < start:
        raise CompactionRejected("the model's answer holds no JSON object")
    try:
        return json.loads(t[start:end + 1])
    except json.JSONDecodeError as exc:
        raise CompactionRejected(f"the model's answer is not valid JSON: {exc}") from None


class LlmSummarizer:
    """`llm:MODEL` behind the Summarizer protocol."""

    version = PROMPT_VERSION

    def __init__(self, model_id: str, *, max_chars: int = DEFAULT_MAX_CHARS,
                 options: Mapping[str, Any] | None = None) -> None:
        try:
            import llm
        except ImportError:
            raise InvalidInput("--summarizer llm:MODEL needs the llm library: "
                               "pip install 'ctxstore[llm]'") from None
        try:
            self.model = llm.get_model(model_id)
        except llm.UnknownModelError:
            raise InvalidInput(f"llm knows no model {model_id!r}: `llm models` lists them; "
                               f"install a provider plugin (e.g. llm-anthropic) for more") from None
        self.model_id = self.model.model_id
        self.name = f"llm:{self.model_id}"
        self.max_chars, self.options = max_chars, dict(options or {})
        self.provenance = {"model": self.model_id, "prompt_version": PROMPT_VERSION}

    def __call__(self, request: Mapping[str, Any]) -> Any:
        kw: dict[str, Any] = {"system": SYSTEM, "stream": False, **self.options}
        if getattr(self.model, "supports_schema", False):
            kw["schema"] = SCHEMA
        try:
            response = self.model.prompt(render_request(request, self.max_chars), **kw)
            text = response.text()
        except CompactionRejected:
            raise
        except Exception as exc:  # noqa: BLE001 - any provider failure is a failed summary
            raise CompactionRejected(f"summarizer {self.name} failed: "
                                     f"{type(exc).__name__}: {exc}") from None
        return _parse(text)
