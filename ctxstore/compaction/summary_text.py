"""The text of a structured (no-model) summary: what the seed's CompactionRecord asks for,
written for a reader (a person or the model) within a token budget.

Sections, in reading order: the replaced range; goal and current task (with the assistant's
words it answered when the task is a short reply such as "yes, do it"); hard and soft
constraints; the plan with each step's status; decisions with their reasons; facts the range
established; files modified with their change summaries (never their contents); files read;
errors with whether they were resolved (and the call id that names each); commands run and
how they ended; open questions; next steps; the assistant's last words; the user's requests.

Budget: the goal, the current task, the hard constraints, and every file and error of the
replaced range are always written (the checks and the reader need them); everything else is
added in priority order while the text stays within `budget` tokens, each list newest first
with "(+N more in the compaction record)" for what did not fit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

HEADER = "[Summary of earlier work in this session]"
_ERRORISH = re.compile(r"error|fail|exception|traceback|not found|no such|denied|cannot|can't|"
                       r"invalid|refused|abort|exit(?:ed)? (?:code|with)", re.I)
#: where an error message starts: "Error: …", "path:12:3 - error: …", "FAILED …", "fatal: …"
_ERROR_START = re.compile(r"(?:\b\w*(?:Error|Exception)\b|\berror\b|\bFAILED\b|\bfatal\b|"
                          r"\bTraceback\b)[:\s]", re.I)
_CODEX_OUTPUT = re.compile(r'^\{"output":"((?:[^"\\]|\\.)*)')


def one_line(text: Any, limit: int = 160) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= limit else s[:limit - 1].rstrip() + "…"


def unwrap_output(text: str) -> str:
    """A Codex JSON tool output's `output` text (also from a preview cut mid-JSON), else TEXT."""
    s = (text or "").strip()
    if not s.startswith("{"):
        return s
    try:
        value = json.loads(s)
    except ValueError:
        m = _CODEX_OUTPUT.match(s)
        if not m:
            return s
        body = m.group(1).rstrip("\\")
        try:
            return json.loads(f'"{body}"')
        except ValueError:
            return body
    if isinstance(value, Mapping) and isinstance(value.get("output"), str):
        return value["output"]
    return s


def error_line(text: str, limit: int = 160) -> str:
    """What went wrong, in one line: where an error message starts ("Error: …", "…:12 -
    error: …"), else the first line that reads like an error, else the first line."""
    lines = [ln.strip() for ln in unwrap_output(text).splitlines() if ln.strip()]
    if not lines:
        return "(no output)"
    for ln in lines[:60]:
        m = _ERROR_START.search(ln)
        if m and len(ln) - m.start() >= 8:
            return one_line(ln[m.start():] if m.start() > 40 else ln, limit)
    pick = next((ln for ln in lines[:40] if _ERRORISH.search(ln) and len(ln) < 200), lines[0])
    return one_line(pick, limit)


def result_line(text: str, truncated: bool = False, limit: int = 120) -> str:
    """How a command ended: its output's last line (its first when the preview was cut)."""
    lines = [ln.strip() for ln in unwrap_output(text).splitlines() if ln.strip()]
    if not lines:
        return "(no output)"
    return one_line(lines[0] if truncated else lines[-1], limit)


class Writer:
    """Lines under a token budget: `must` lines always, `may` lines while they fit."""

    def __init__(self, count: Callable[[str], int], budget: int) -> None:
        self.count, self.budget = count, budget
        self.used = 0

    def cost(self, line: str) -> int:
        return self.count(line) + 1

    def must(self, out: list[str], line: str) -> None:
        out.append(line)
        self.used += self.cost(line)

    def fits(self, line: str) -> bool:
        return self.used + self.cost(line) <= self.budget

    def items(self, title: str, items: Sequence[str], *, newest_first: bool = True,
              required: int = 0) -> list[str]:
        """A titled list: the first REQUIRED items always (in order), the rest while they fit
        (the newest when NEWEST_FIRST), then a line for what was left out. [] when ITEMS is
        empty, or when nothing is required and not even one item fits."""
        if not items:
            return []
        head, rest = list(items[:required]), list(items[required:])
        order = list(reversed(rest)) if newest_first else rest
        if not head and not self.fits_all(title, order[0]):
            return []
        out: list[str] = []
        self.must(out, title)
        for it in head:
            self.must(out, it)
        taken: list[str] = []
        for it in order:
            if not self.fits(it):
                break
            self.used += self.cost(it)
            taken.append(it)
        left = len(rest) - len(taken)
        if newest_first:
            taken.reverse()
            if left:
                self.must(out, f"  (+{left} earlier, in the compaction record)")
            return out + taken
        out += taken
        if left:
            self.must(out, f"  (+{left} more, in the compaction record)")
        return out

    def fits_all(self, *lines: str) -> bool:
        return self.used + sum(self.cost(x) for x in lines) <= self.budget
