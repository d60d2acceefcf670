"""Subagents through the Context Manager: the child gets only what was passed, returns a
checked result, and the parent's context shows that result and its refs, never the child's
transcript — for spawned and for imported subagents alike."""

from __future__ import annotations

import json

import pytest

from ctxstore import ContextManager
from ctxstore.errors import BadRevision, InvalidInput, ObjectNotFound
from ctxstore.importers import import_paths
from ctxstore.repo import Repository
from ctxstore.subagents import FINISHED, RESULT, SPAWNED
from tests.corpus import require_corpus

CHILD_WORDS = "CHILD-ONLY-TRANSCRIPT-WORDS"
PARENT_WORDS = "PARENT-ONLY-PRIVATE-CHATTER"


def events_of(repo: Repository, session: str) -> set[str]:
    return set(repo.graph.reachable_events(list(repo.branches(session).values())))


@pytest.fixture
def family():
    repo = Repository.memory()
    parent = ContextManager.start(repo, title="fix the parser", goal="make the parser tests pass")
    parent.add_user_message("The parser drops the last line. " + PARENT_WORDS)
    parent.add_assistant_message("Let me look. " + PARENT_WORDS)
    log = parent.add_artifact("parser.log: line 41 dropped", "command_log", "parser.log")
    child = parent.spawn("Find why the parser drops the last line", pass_artifacts=[log])
    child.add_assistant_message("Reading the tokenizer. " + CHILD_WORDS,
                                tool_calls=[{"id": "k1", "name": "bash", "args": {"cmd": "pytest"}}])
    child.record_tool_result("k1", "1 failed " + CHILD_WORDS)
    check = child.record_verifier("pytest tests/test_parser.py", "pass")
    fix = child.add_artifact("--- a/tok.py\n+++ b/tok.py\n+flush()", "diff", "tok.py", "the fix")
    return repo, parent, child, log, check, fix


def test_child_starts_with_only_what_was_passed(family):
    repo, parent, child, log, *_ = family
    s = repo.session(child.session)
    assert s.kind == "subagent" and s.parent_session == parent.session
    assert repo.graph.event(s.spawn_event).type == SPAWNED
    assert list(repo.graph.event(s.spawn_event).payload["evidence_refs"]) == [log]
    first = [repo.graph.event(e).type for e in sorted(events_of(repo, child.session),
                                                        key=lambda e: repo.graph.event(e).generation)]
    assert first[:3] == ["SessionStarted", "UserPromptSubmitted", "ArtifactAdded"]
    bundle = child.build_context(budget=50_000)
    text = json.dumps(bundle.to_dict())
    assert PARENT_WORDS not in text  # nothing of the parent's conversation
    assert log in text and "Find why the parser" in text
    assert not set(events_of(repo, parent.session)) & {s for seg in bundle.segments for s in seg.sources}


def test_parent_sees_the_result_and_refs_never_the_transcript(family):
    repo, parent, child, log, check, fix = family
    res = child.finish("The tokenizer never flushes its buffer at EOF; flushing fixes it.",
                       evidence_refs=[check], artifacts=[fix], risks=["only tested on unix"],
                       next_steps=["apply the diff", "add a regression test"])
    assert repo.graph.event(res["result"]).type == RESULT
    assert repo.graph.event(res["finished"]).type == FINISHED
    assert parent.tip == res["result"]
    bundle = parent.build_context(budget=50_000)
    text = json.dumps(bundle.to_dict())
    seg = next(s for s in bundle.segments if s.data.get("subagent"))
    assert seg.kept and "flushes its buffer" in seg.text and "add a regression test" in seg.text
    assert {res["result"], check, fix, child.session} <= set(seg.sources)
    assert CHILD_WORDS not in text
    child_events = events_of(repo, child.session)
    cited = {check}  # the evidence the child named is cited; nothing else of it
    for s in bundle.segments:
        assert not (set(s.sources) & child_events) - cited, s


def test_finish_is_refused_without_summary_or_next_steps(family):
    repo, parent, child, _log, check, _fix = family
    tip = parent.tip
    for kw in ({"summary": "", "next_steps": ["x"]}, {"summary": "  ", "next_steps": ["x"]},
               {"summary": "found it", "next_steps": []},
               {"summary": "found it", "next_steps": ["  "]}):
        with pytest.raises(InvalidInput, match="finish refused"):
            child.finish(**kw)
    with pytest.raises((ObjectNotFound, BadRevision)):
        child.finish("found", evidence_refs=["ffffffffffff"], next_steps=["go"])
    with pytest.raises(InvalidInput, match="not a artifact"):
        child.finish("found", artifacts=[check], next_steps=["go"])
    assert parent.tip == tip  # nothing was written
    child.finish("found", next_steps=["go"])
    with pytest.raises(InvalidInput, match="already finished"):
        child.finish("again", next_steps=["go"])
    with pytest.raises(InvalidInput, match="only a subagent can finish"):
        parent.finish("not a child", next_steps=["go"])


def test_spawn_needs_a_task_and_real_artifacts(family):
    repo, parent, *_ = family
    with pytest.raises(InvalidInput, match="needs a task"):
        parent.spawn("  ")
    with pytest.raises(InvalidInput, match="not a artifact"):
        parent.spawn("look", pass_artifacts=[parent.tip])


def test_passed_memories_reach_the_child_and_sensitive_ones_are_withheld():
    repo = Repository.memory()
    parent = ContextManager.start(repo, title="t")
    eid = parent.add_user_message("go")
    plain = parent.remember("tests run with `make check`", scope="session", sources=[eid],
                            ttl="30d")
    secret = parent.remember("the admin password hint is BLUE-FALCON", scope="session",
                             sources=[eid], ttl="30d", sensitive=True)
    child = parent.spawn("run the checks", pass_memories=[plain, secret])
    bundle = child.build_context(budget=20_000)
    mems = [s for s in bundle.segments if s.kind == "memory"]
    assert len(mems) == 2
    assert any("make check" in s.text for s in mems)
    assert all("BLUE-FALCON" not in s.text for s in mems)
    assert any(s.data.get("withheld") for s in mems)


def test_imported_subagents_get_the_same_view():
    root = require_corpus() / "claude-code" / "ccl_worktrees-agent-team_subagents-dir_v2.1.114"
    repo = Repository.memory()
    report = import_paths(repo, [root])
    main = report.sessions[0].session
    subs = [s.session for s in report.sessions if s.kind == "subagent"]
    cm = ContextManager(repo, main, "main")
    bundle = cm.build_context(budget=1_000_000, auto_compact=False)
    linked = [s for s in bundle.segments if s.data.get("subagent")]
    assert linked, "no tool pair names its subagent session"
    assert {s.data["subagent"]["session"] for s in linked} <= set(subs)
    for s in linked:
        assert s.tool_call_id and len(s.messages) == 2  # the spawning call and its final result
    child_events = set().union(*(events_of(repo, sid) for sid in subs))
    for s in bundle.segments:
        assert not set(s.sources) & child_events, s
