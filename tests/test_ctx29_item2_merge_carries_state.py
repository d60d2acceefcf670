"""Issue 29 item 2: `ctx merge` carries the branch's facts, decisions, constraints and open
questions into the target's state, and its memory candidates reach the review queue."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxstore import ContextManager, Repository
from ctxstore.compaction import merge_branch
from ctxstore.compaction.carry import merge_patch
from ctxstore.memory.review import pending

from .clitools import Ctx

TOUR_EVENTS = [
    {"type": "ToolCallRequested", "actor": "model",
     "payload": {"tool_call_id": "c1", "name": "bash", "args": {"cmd": "pytest -x"}}},
    {"type": "ToolCallFinished", "actor": "tool",
     "payload": {"tool_call_id": "c1", "name": "bash",
                 "preview": "FAILED tests/test_parser.py::test_whitespace", "size": 44,
                 "truncated": False}},
    {"type": "FileWritten", "actor": "tool",
     "payload": {"path": "src/parser.py", "change_summary": "skip whitespace tokens"}},
]
FACT = "the tokenizer splits on spaces"


def _tour_until_merge(tmp_path) -> Ctx:
    """The README tour's steps that shape the merge (docs-only steps left out)."""
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new", "--title", "fix parser", "--goal", "make the parser test pass")
    ctx("append", "UserPromptSubmitted", "--actor", "user", "--payload",
        '{"text": "the parser test fails"}')
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in TOUR_EVENTS))
    ctx("append", "--batch", str(tmp_path / "events.jsonl"))
    ctx("fork", "try-b", "--at", "HEAD~2")
    ctx("append", "StateUpdated", "--payload", json.dumps({"patch": {"facts_add": [FACT]}}))
    ctx("checkout", "main")
    ctx("reset", "HEAD~1")
    ctx("reset", "main@{1}")
    return ctx


def test_readme_tour_merge_carries_the_fact_into_main(tmp_path):
    ctx = _tour_until_merge(tmp_path)
    assert FACT not in [f["content"] for f in ctx.json("state")["facts"]]
    ctx("merge", "try-b")
    facts = ctx.json("state")["facts"]
    assert [f["content"] for f in facts] == [FACT]
    # its source is try-b's StateUpdated event, reachable through the merge's second parent
    src = facts[0]["source_refs"][0]
    assert src == ctx.json("branch")["branches"]["try-b"]
    bundle = ctx.json("context", "--budget", "8000")
    assert any(s["kind"] == "fact" and FACT in s["text"] and s["kept"] for s in bundle["segments"])
    summary = [s for s in bundle["segments"] if s["kind"] == "summary" and "try-b" in s["text"]]
    assert summary and FACT in summary[0]["text"]


def test_merge_candidates_reach_the_review_queue(tmp_path):
    ctx = _tour_until_merge(tmp_path)
    ctx("merge", "try-b")
    queue = ctx.json("memory", "review")
    items = queue if isinstance(queue, list) else queue.get("pending", queue.get("candidates", []))
    assert [c["content"] for c in items] == [FACT], queue
    # nothing more to find: the merge queued them in its own operation
    assert "0" in ctx("memory", "review", "--scan").stdout


def test_merge_carries_decisions_constraints_and_questions():
    cm = ContextManager.start(Repository.memory(), "t", "Ship the parser.")
    cm.update_state({"open_questions_add": ["does it handle tabs?", "unicode?"],
                     "constraints": {"hard": ["keep the API"]}})
    cm.add_user_message("go")
    b = cm.fork("try")
    b.update_state({"facts_add": [{"content": "tabs are whitespace", "confidence": 0.9}],
                    "decisions_add": [{"decision": "use str.split", "rationale": "it handles tabs"}],
                    "constraints": {"hard": ["keep the API", "no regex"], "soft": ["short code"]},
                    "open_questions_add": ["is split fast enough?"],
                    "open_questions_remove": ["does it handle tabs?"]})
    b.add_user_message("done on the branch")
    cm.update_state({"facts_add": ["main learned this"]})
    res = merge_branch(cm, "try")
    assert res.committed
    st_ = cm.project_state()
    assert [f["content"] for f in st_.facts] == ["main learned this", "tabs are whitespace"]
    assert st_.facts[1]["confidence"] == 0.9
    assert [(d["decision"], d["rationale"]) for d in st_.decisions] == [
        ("use str.split", "it handles tabs")]
    assert st_.constraints["hard"] == ("keep the API", "no regex")
    assert st_.constraints["soft"] == ("short code",)
    assert st_.open_questions == ("unicode?", "is split fast enough?")
    rec = cm.repo.objects.get(res.compaction_id)
    assert rec.state_patch["facts_add"][0]["content"] == "tabs are whitespace"
    assert [c.content for c in pending(cm.repo)][:1] == ["tabs are whitespace"]


def test_a_merge_without_conclusions_changes_no_state():
    cm = ContextManager.start(Repository.memory(), "t", "Goal.")
    cm.add_user_message("go")
    b = cm.fork("try")
    b.add_user_message("only talk")
    before = cm.project_state()
    merge_branch(cm, "try")
    after = cm.project_state()
    for name in ("facts", "decisions", "constraints", "open_questions"):
        assert getattr(after, name) == getattr(before, name)


TEXT = st.sampled_from(["a", "b", "c", "d"])


@settings(max_examples=60, deadline=None)
@given(base=st.lists(TEXT, max_size=3), added=st.lists(TEXT, max_size=3),
       removed=st.lists(TEXT, max_size=3), main_added=st.lists(TEXT, max_size=3))
def test_property_merged_state_is_main_plus_what_the_branch_concluded(base, added, removed,
                                                                      main_added):
    """After the merge, main's facts / questions are main's own plus what the branch added,
    minus the questions the branch resolved; applying the patch is what the fold does."""
    cm = ContextManager.start(Repository.memory(), "t", "Goal.")
    cm.add_user_message("go")
    if base:
        cm.update_state({"facts_add": base, "open_questions_add": base})
    b = cm.fork("try")
    b.update_state({"facts_add": added, "open_questions_add": added,
                    "open_questions_remove": removed})
    if main_added:
        cm.update_state({"facts_add": main_added, "open_questions_add": main_added})
    base_state, branch_state, main_state = (cm.project_state(cm.repo.graph.merge_base(b.tip, cm.tip)),
                                            b.project_state(), cm.project_state())
    patch = merge_patch(base_state, branch_state)
    merge_branch(cm, "try")
    after = cm.project_state()
    facts = [f["content"] for f in after.facts]
    want = list(dict.fromkeys([f["content"] for f in main_state.facts]
                              + [f["content"] for f in branch_state.facts
                                 if f["content"] not in {x["content"] for x in base_state.facts}]))
    assert facts == want
    gone = set(patch.get("open_questions_remove", ()))
    want_q = [q for q in dict.fromkeys([*main_state.open_questions,
                                        *patch.get("open_questions_add", ())]) if q not in gone]
    assert list(after.open_questions) == want_q


def test_review_scan_finds_the_candidates_of_a_merge_recorded_before_the_queue(tmp_path):
    """A merge written before merges queued their candidates (or imported): `ctx memory
    review --scan` finds it as it finds compactions."""
    from ctxstore.memory import review
    from ctxstore.objects import Compaction
    from ctxstore.repo import Repository

    repo = Repository.init(tmp_path)
    sid, _ = repo.new_session(title="t")
    rec = Compaction(session=sid, kind="merge", summary="merged try-b",
                     memory_candidates=({"content": FACT, "kind": "fact"},))
    cid = repo.objects.put_object(rec)
    with repo.transaction(message="an old merge") as tx:
        tx.append("BranchMerged", "agent", {"branch": "try-b", "summary": "merged try-b"},
                  {"compaction_id": cid})
    assert review.scan(repo) == [cid]
    repo.close()
