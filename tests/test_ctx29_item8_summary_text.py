"""Issue 29 item 8: the structured (no-model) summary says what the seed's CompactionRecord asks
for — goal and current task, decisions with their reasons, errors and whether they were
resolved, files with their change summaries (not their contents), open questions, next steps —
within its token budget, with the checks unchanged."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxstore import ContextManager, Repository
from ctxstore.compaction import CallableSummarizer, StructuredSummarizer, compact
from ctxstore.compaction.summarizers import DEFAULT_SUMMARY_TOKENS
from ctxstore.importers import import_paths

from .corpus import require_corpus

SESSIONS = (
    "claude-code/ccl_jssoundrecorder_queue-operation-thinking_v2.0.42.jsonl",
    "claude-code/ccl_sample_many-summary-records_v1.0.24.jsonl",
    "codex/rollout-genuine_v0.58.0_chatbot-ui-lmstudio_019a93b9.jsonl",
    "pi/pi-mono_before-compaction_v1-format_genuine.jsonl",
)


def dry_run(cm, keep=None, **kw):
    """(result, request, summary text) of a dry-run compaction with the structured summarizer."""
    seen = {}

    def fn(req):
        seen["req"] = req
        seen["out"] = StructuredSummarizer(tokenizer=cm.tokenizer, **kw)(req)
        return seen["out"]

    res = compact(cm, dry_run=True, keep_recent_tokens=keep,
                  summarizer=CallableSummarizer(fn, name="structured"))
    return res, seen["req"], seen["out"]["summary"]


def names_path(text: str, path: str) -> bool:
    m = re.search(r"^Paths below are relative to (.+)$", text, re.M)
    prefix = m.group(1) if m else ""
    if prefix and path.startswith(prefix):
        return re.search(rf"^- {re.escape(path[len(prefix):])}: ", text, re.M) is not None
    return re.search(rf"^- {re.escape(path)}: ", text, re.M) is not None


def assert_says_the_range(res, req, text) -> None:
    assert not res.failed, res.failed  # the checks are unchanged, and pass
    goal = req["state"]["goal"]["user_goal"]
    assert f"Goal: {goal}" in text
    assert "Current task: " in text
    rs = req["range_state"]
    for f in rs["files"]["modified"]:
        assert names_path(text, f["path"]), f["path"]
    errors = text[text.index("Errors (and whether"):] if rs["errors"] else ""
    for e in rs["errors"]:
        line = next(x for x in errors.splitlines() if e["tool_call_id"] in x)
        assert line.startswith(f"- {e['name']}"), line
        assert ("refused by the user" if e.get("kind") == "denied" else
                "resolved (a later call succeeded)" if e["retried"] else "NOT resolved") in line
    for tcid in req["abandoned_tool_calls"]:
        assert tcid in errors and "abandoned" in errors


@pytest.mark.parametrize("name", SESSIONS, ids=lambda n: n.split("/")[-1][:40])
def test_corpus_summaries_name_goal_errors_and_files(name):
    repo = Repository.memory()
    report = import_paths(repo, [require_corpus() / name])
    cm = ContextManager(repo, report.sessions[0].session, "main")
    res, req, text = dry_run(cm)
    assert_says_the_range(res, req, text)
    assert cm.tokenizer.count(text) <= DEFAULT_SUMMARY_TOKENS
    assert "Tool result" not in text  # tool outputs are not pasted (file contents least of all)
    for f in req["range_state"]["files"]["modified"]:
        assert f.get("change_summary", "") in text


def test_read_results_are_not_pasted_into_the_summary():
    repo = Repository.memory()
    report = import_paths(repo, [require_corpus() / SESSIONS[0]])
    cm = ContextManager(repo, report.sessions[0].session, "main")
    _res, _req, text = dry_run(cm)
    assert "Record sounds / noises around you" not in text  # README.md's content, read in range
    assert "README.md" in text  # the file read is named


def test_plan_steps_are_listed_once_with_their_status():
    repo = Repository.memory()
    report = import_paths(repo, [require_corpus() / SESSIONS[0]])
    cm = ContextManager(repo, report.sessions[0].session, "main")
    _res, _req, text = dry_run(cm)
    assert "- [done] Create RecorderWorklet processor for microphone capture" in text
    next_steps = text[text.index("Next steps:"):]
    assert "Create RecorderWorklet" not in next_steps  # done steps are not next steps


def _session(errors: int, writes: int, denied: bool, decisions: int) -> ContextManager:
    cm = ContextManager.start(Repository.memory(), "t", "Make the parser handle tabs.")
    cm.update_state({"constraints": {"hard": ["Keep the public API."]},
                     "open_questions_add": ["Do tabs count as one space?"],
                     "decisions_add": [{"decision": f"decision {d}", "rationale": f"reason {d}"}
                                       for d in range(decisions)]})
    cm.add_user_message("the parser test fails on tabs " + "x " * 50)
    for i in range(errors):
        cm.record_tool_call(f"e{i}", "bash", {"cmd": f"pytest -k case{i}"})
        cm.record_tool_result(f"e{i}", f"E   AssertionError: case{i} got 3 tokens\n" * 3, is_error=True)
    for i in range(writes):
        cm.record_file_write(f"/work/proj/src/mod{i}.py", f"handle tabs in mod{i}")
    if denied:
        cm.record_tool_call("d0", "bash", {"cmd": "rm -rf build"})
        cm.record_tool_result("d0", "The user doesn't want to proceed with this tool use.", is_error=True)
    if errors:
        cm.record_tool_call("fix", "bash", {"cmd": "pytest -k case0"})
        cm.record_tool_result("fix", "1 passed")
    for t in range(6):
        cm.add_user_message(f"keep going {t} " + "y " * 80)
        cm.add_assistant_message(f"working on it {t} " + "z " * 80)
    return cm


@settings(max_examples=25, deadline=None)
@given(errors=st.integers(0, 6), writes=st.integers(0, 12), denied=st.booleans(),
       decisions=st.integers(0, 3))
def test_property_the_text_names_goal_errors_and_files(errors, writes, denied, decisions):
    cm = _session(errors, writes, denied, decisions)
    res, req, text = dry_run(cm, keep=300)
    assert_says_the_range(res, req, text)
    for d in range(decisions):
        assert f"- decision {d} — because reason {d}" in text
    assert "Hard constraint: Keep the public API." in text
    assert "- Do tabs count as one space?" in text
    assert cm.tokenizer.count(text) <= DEFAULT_SUMMARY_TOKENS


def test_the_budget_bounds_the_optional_sections():
    cm = _session(4, 10, True, 3)
    _res, _req, full = dry_run(cm, keep=300)
    res, req, small = dry_run(cm, keep=300, budget_tokens=250)
    assert_says_the_range(res, req, small)  # what must be said is said
    assert cm.tokenizer.count(small) < cm.tokenizer.count(full)
    assert "The user asked" in full and "The user asked" not in small
    policy = compact(cm, dry_run=True, keep_recent_tokens=300, policy={"summary_tokens": 250})
    assert policy.tokens_after < compact(cm, dry_run=True, keep_recent_tokens=300).tokens_after
