"""The compaction checks as pure functions of (summarizer output, range facts): each verdict's
status and its detail line, which `ctx compact` prints to explain a refusal. Written from the
survivors of `python -m tests.mutation compaction-checks` (the end-to-end tests in
test_compaction*.py show that a rule can fail; these pin what it says and where its edges are).
"""

from __future__ import annotations

from ctxstore.compaction.checks import (
    MERGE_MIN_SUMMARY_TOKENS,
    RangeFacts,
    Verdict,
    run_checks,
)
from ctxstore.objects.frozen import freeze
from ctxstore.state import AgentState
from ctxstore.state.model import EMPTY_GOAL, EMPTY_PLAN


def _out(**over):
    out = {"summary": "did things", "goal": {}, "constraints": {}, "progress": {},
           "files": {}, "tool_results": [], "errors": [], "decisions": [],
           "open_questions": [], "next_steps": []}
    out.update(over)
    return out


def _state(modified=(), errors=(), steps=(), task="", goal=""):
    return AgentState(
        goal=freeze({**dict(EMPTY_GOAL), "current_task": task, "user_goal": goal}),
        plan=freeze({**dict(EMPTY_PLAN), "steps": [
            {"id": str(i), "text": t, "status": st} for i, (t, st) in enumerate(steps)]}),
        files=freeze({"read": [], "modified": [{"path": p, "change_summary": "", "event": "e"}
                                               for p in modified]}),
        errors=tuple(freeze({"tool_call_id": tc, "name": "Bash", "error": err, "event": "e",
                             "retried": False}) for tc, err in errors))


def _facts(state=None, events=(), kept=(), kept_modified=(), goal="", hard=(), replaced=1000,
           summary=10, kind="compaction"):
    return RangeFacts(events=list(events), kept=list(kept), user_goal=goal,
                      hard_constraints=list(hard), replaced_tokens=replaced,
                      summary_tokens=summary, range_state=state or AgentState(), kind=kind,
                      kept_modified=tuple(kept_modified))


def _verdict(out, facts, rule):
    (v,) = [v for v in run_checks(out, facts) if v.rule == rule]
    return v


def test_verdict_to_dict():
    assert Verdict("r", False, "why").to_dict() == {"rule": "r", "ok": False, "status": "fail",
                                                    "detail": "why"}
    assert Verdict.na("r", "nothing").to_dict() == {"rule": "r", "ok": True, "status": "n/a",
                                                    "detail": "nothing"}


def test_file_writes_details():
    facts = _facts(_state(modified=["a.py", "b.py"]), kept_modified=["b.py", "c", "d", "e", "f", "g"])
    v = _verdict(_out(files={"modified": [{"path": "a.py"}]}), facts, "file_writes_listed")
    assert (v.ok, v.status, v.detail) == (False, "fail",
                                          "1 of 2 modified file(s) not in files.modified: b.py")
    v = _verdict(_out(files={}), facts, "file_writes_listed")  # no "modified" list at all
    assert v.detail == "2 of 2 modified file(s) not in files.modified: a.py, b.py"
    v = _verdict(_out(files={"modified": [{"path": "a.py"}, {"path": "b.py"}, "junk"]}), facts,
                 "file_writes_listed")
    assert (v.ok, v.detail) == (True, "2 modified file(s) listed: a.py, b.py; 5 more modified "
                                      "after the cut, kept verbatim: c, d, e, f (+1 more)")
    many = [f"f{i}" for i in range(5)]
    v = _verdict(_out(files={"modified": [{"path": p} for p in many]}), _facts(_state(modified=many)),
                 "file_writes_listed")
    assert v.detail == "5 modified file(s) listed: f0, f1, f2, f3 (+1 more)"
    v = _verdict(_out(), _facts(kept_modified=["x"]), "file_writes_listed")
    assert (v.status, v.detail) == ("n/a", "no file modified in the range; 1 more modified after "
                                           "the cut, kept verbatim: x")
    v = _verdict(_out(), _facts(), "file_writes_listed")
    assert v.detail == "no file modified in the range"


def test_missing_lists_show_six_then_count_the_rest():
    names = [f"p{i}" for i in range(7)]
    v = _verdict(_out(), _facts(_state(modified=names)), "file_writes_listed")
    assert v.detail.endswith("not in files.modified: p0, p1, p2, p3, p4, p5 (+1 more)")
    v = _verdict(_out(), _facts(_state(modified=names[:6])), "file_writes_listed")
    assert v.detail.endswith("not in files.modified: p0, p1, p2, p3, p4, p5")


def test_tool_error_details():
    v = _verdict(_out(), _facts(), "tool_errors_listed")
    assert (v.status, v.detail) == ("n/a", "no tool error in the range")
    state = _state(errors=[("t1", "boom: file not found"), ("", "exit 2: " + "x" * 100)])
    v = _verdict(_out(errors=[{"tool_call_id": "t1"}]), _facts(state), "tool_errors_listed")
    assert (v.ok, v.detail) == (False, f"1 of 2 error(s) not in errors: exit 2: {'x' * 32}")
    # by id, or by the first 80 characters of the error text
    v = _verdict(_out(errors=[{"tool_call_id": "t1"}, {"error": "exit 2: " + "x" * 72 + " etc"}]),
                 _facts(state), "tool_errors_listed")
    assert (v.ok, v.detail) == (True, "2 error(s) listed")
    v = _verdict(_out(errors=[{"tool_call_id": "other", "error": "boom: file not found"}, "junk"]),
                 _facts(_state(errors=[("t1", "boom: file not found")])), "tool_errors_listed")
    assert v.ok


def test_plan_steps_are_found_as_written():
    steps = [("fix C:\\dir\\x.py", "done"), ("write tests", "pending"), ("", "pending")]
    out = _out(progress={"done": ["fix C:\\dir\\x.py"]}, next_steps=["write tests"])
    v = _verdict(out, _facts(_state(steps=steps)), "plan_carried")
    assert (v.ok, v.detail) == (True, "2 plan step(s) carried")
    v = _verdict(_out(progress={"in_progress": ["write tests"]}), _facts(_state(steps=steps)),
                 "plan_carried")
    assert (v.ok, v.detail) == (False, "1 of 2 plan step(s) not in progress/next_steps: "
                                       "fix C:\\dir\\x.py")
    v = _verdict(_out(), _facts(), "plan_carried")
    assert (v.status, v.detail) == ("n/a", "no plan in the range")


def test_size_rule_for_compactions_and_small_merges():
    v = _verdict(_out(), _facts(replaced=100, summary=100), "smaller_than_replaced")
    assert (v.ok, v.detail) == (False, "summary 100 tokens vs 100 replaced")
    small = MERGE_MIN_SUMMARY_TOKENS - 1
    v = _verdict(_out(), _facts(replaced=small, summary=MERGE_MIN_SUMMARY_TOKENS, kind="merge"),
                 "smaller_than_replaced")
    assert (v.ok, v.detail) == (True, f"small branch ({small} tokens): summary "
                                      f"{MERGE_MIN_SUMMARY_TOKENS} tokens, at most "
                                      f"{MERGE_MIN_SUMMARY_TOKENS} allowed")
    v = _verdict(_out(), _facts(replaced=small, summary=MERGE_MIN_SUMMARY_TOKENS + 1, kind="merge"),
                 "smaller_than_replaced")
    assert not v.ok
    v = _verdict(_out(), _facts(replaced=MERGE_MIN_SUMMARY_TOKENS, summary=MERGE_MIN_SUMMARY_TOKENS,
                                kind="merge"), "smaller_than_replaced")
    assert not v.ok  # a branch of 512 tokens is not small: the summary must be smaller


def _ev(i, type, **payload):
    return {"id": f"e{i}", "type": type, "payload": payload, "causality": {}}


def _pairs(events, kept=(), errors=()):
    return _verdict(_out(errors=list(errors)), _facts(events=events, kept=kept),
                    "tool_pairs_intact")


def test_tool_pair_details():
    call, done = "ToolCallRequested", "ToolCallFinished"
    v = _pairs([_ev(1, "UserPromptSubmitted", text="hi"), _ev(2, call, tool_call_id="")])
    assert (v.status, v.detail) == ("n/a", "no tool call in the range")
    v = _pairs([_ev(1, call, tool_call_id="t1", name="Bash"), _ev(2, done, tool_call_id="t1")])
    assert (v.ok, v.detail) == (True, "1 pair(s) intact")
    v = _pairs([_ev(1, done, tool_call_id="t9")])
    assert (v.ok, v.detail) == (False, "result(s) without their call in range: t9")
    v = _pairs([_ev(1, call, tool_call_id="t1", name="Bash")], kept=[_ev(2, done, tool_call_id="t1")])
    assert (v.ok, v.detail) == (False, "call/result split by the cut: t1")
    v = _pairs([_ev(1, call, tool_call_id="t1", name="Bash")])
    assert (v.ok, v.detail) == (False, "pending call(s) would be compacted away: t1")
    abandoned = [_ev(1, call, tool_call_id="t1", name="Bash"),
                 _ev(2, "UserPromptSubmitted", text="never mind")]
    v = _pairs(abandoned)
    assert (v.ok, v.detail) == (False, "abandoned call(s) not listed in errors: t1")
    v = _pairs(abandoned, errors=[{"tool_call_id": "t1", "error": "abandoned"}])
    assert (v.ok, v.detail) == (True, "0 pair(s) intact; 1 abandoned call(s) listed as errors")


def test_summarizer_output_shape_problems():
    def problem(out):
        (v,) = run_checks(out, _facts())
        assert (v.rule, v.ok) == ("summarizer_output", False)
        return v.detail

    assert problem(["not", "a", "map"]) == "summarizer returned list, not an object"
    partial = _out()
    del partial["errors"], partial["next_steps"]
    assert problem(partial) == "missing field(s): errors, next_steps"
    assert problem(_out(summary="  ")) == "empty summary text"
    assert problem(_out(summary=3)) == "empty summary text"
    for field in ("goal", "constraints", "files", "progress"):
        assert problem(_out(**{field: []})) == "goal, constraints, files and progress must be objects"
    assert problem(_out(errors={}, decisions="x")) == "must be lists: errors, decisions"
    ok = run_checks(_out(), _facts())[0]
    assert (ok.rule, ok.ok, ok.detail) == ("summarizer_output", True, "well-formed")


def test_task_steps_goal_and_constraints_details():
    facts = _facts(_state(task="ship it", steps=[("a", "done"), ("b", "pending")]),
                   events=[_ev(1, "UserPromptSubmitted", text="x")], goal="the goal",
                   hard=["never push", "no rm"])
    out = _out(summary="the goal; never push", goal={"user_goal": "the goal", "current_task": "t" * 90},
               constraints={"hard": ["never push"]}, next_steps=["b", "c"])
    got = {v.rule: (v.status, v.detail) for v in run_checks(out, facts)}
    assert got["has_source_refs"] == ("pass", "1 event(s) in range")
    assert got["has_current_task"] == ("pass", "t" * 80)
    assert got["has_next_steps"] == ("pass", "2 step(s)")
    assert got["goal_verbatim"] == ("pass", "user goal carried verbatim")
    assert got["hard_constraints_verbatim"] == ("fail", "lost: no rm")
    out = _out(summary="x", goal={"user_goal": "the goal"}, constraints={"hard": ["never push", "no rm"]})
    got = {v.rule: (v.status, v.detail) for v in run_checks(out, facts)}
    assert got["has_current_task"] == ("fail", "no current_task")
    assert got["has_next_steps"] == ("fail", "no next_steps")
    assert got["goal_verbatim"] == ("fail", "the user goal is not carried verbatim in "
                                            "goal.user_goal and the summary")
    assert got["hard_constraints_verbatim"] == ("fail", "lost: never push; no rm")  # not in summary
    out = _out(summary="the goal never push no rm", goal={"user_goal": "the goal"},
               constraints={"hard": ["never push", "no rm"]})
    assert {v.rule: v.detail for v in run_checks(out, facts)}["hard_constraints_verbatim"] == \
        "2 carried verbatim"
    got = {v.rule: (v.status, v.detail) for v in run_checks(_out(), _facts())}
    assert got["has_source_refs"] == ("fail", "nothing to summarize")
    assert got["has_current_task"] == ("n/a", "no task in the range or its state")
    assert got["has_next_steps"] == ("n/a", "no open plan step or task to continue")
    assert got["goal_verbatim"] == ("n/a", "no user goal in the state")
    assert got["hard_constraints_verbatim"] == ("n/a", "no hard constraint in the state")
    # a task only in the output, or only in the state's goal, still asks for one and for steps
    got = {v.rule: v.status for v in run_checks(_out(goal={"current_task": "t"}), _facts())}
    assert (got["has_current_task"], got["has_next_steps"]) == ("pass", "fail")
    got = {v.rule: v.status for v in run_checks(_out(), _facts(goal="g"))}
    assert got["has_current_task"] == "fail"
    got = {v.rule: v.status for v in run_checks(_out(), _facts(_state(steps=[("a", "done")])))}
    assert got["has_next_steps"] == "n/a"  # every step done: nothing to continue


def test_missing_plan_steps_show_three_cut_to_40_characters():
    steps = [("s" * 50, "pending"), ("b", "pending"), ("c", "pending"), ("d", "pending")]
    v = _verdict(_out(), _facts(_state(steps=steps)), "plan_carried")
    assert v.detail == f"4 of 4 plan step(s) not in progress/next_steps: {'s' * 40}, b, c (+1 more)"
    v = _verdict(_out(progress={"done": ["s" * 50], "in_progress": ["b"]}, next_steps=["c", "d"]),
                 _facts(_state(steps=steps)), "plan_carried")
    assert v.ok


def test_several_tool_pair_problems_are_joined():
    call, done = "ToolCallRequested", "ToolCallFinished"
    v = _pairs([_ev(1, call, tool_call_id="t1", name="Bash"), _ev(2, done, tool_call_id="t9")],
               kept=[_ev(3, done, tool_call_id="t1")])
    assert v.detail == ("call/result split by the cut: t1; result(s) without their call in "
                        "range: t9")


def test_constraints_without_a_hard_list_lose_every_hard_constraint():
    facts = _facts(hard=["never push"])
    v = _verdict(_out(summary="never push", constraints={}), facts, "hard_constraints_verbatim")
    assert (v.ok, v.detail) == (False, "lost: never push")
