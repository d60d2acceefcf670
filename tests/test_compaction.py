"""Compaction (issue 5): checks that make each rule fail, the seed's invariants 2, 3 and 8,
chaining, merging, and resume after compaction."""

from __future__ import annotations

import json
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxstore.compaction import (
    CallableSummarizer,
    CommandSummarizer,
    StructuredSummarizer,
    compact,
    merge_branch,
)
from ctxstore.errors import CompactionRejected
from ctxstore.objects import Compaction

from .sessions_factory import GOAL, HARD, coding_session


def _refs(cm):
    return dict(cm.repo.refs.iter_refs())


def _facts(cm) -> set[str]:
    store = cm.repo.objects
    return {i for i in store if store.type_of(i) != "snapshot"}


def _tamper(**changes):
    """A summarizer that runs the structured one, then breaks one field."""
    base = StructuredSummarizer()

    def fn(req):
        out = base(req)
        for k, v in changes.items():
            if callable(v):
                v(out)
            else:
                out[k] = v
        return out

    return CallableSummarizer(fn, name="tampered")


def test_compaction_commits_with_provenance():
    cm = coding_session(8)
    raw_tip = cm.tip
    res = compact(cm, keep_recent_tokens=300)
    assert res.committed and res.compaction_id
    rec = cm.repo.objects.get(res.compaction_id)
    assert isinstance(rec, Compaction)
    # invariant 3: the summary names its source range exactly
    assert rec.first_event == rec.source_event_ids[0] and rec.last_event == rec.source_event_ids[-1]
    assert rec.first_kept and rec.first_kept not in rec.source_event_ids
    assert rec.provenance["summarizer"] == "structured" and rec.provenance["policy_id"]
    ev = cm.repo.graph.event(cm.tip)
    assert ev.type == "CompactionCompleted" and ev.causality["compaction_id"] == res.compaction_id
    assert ev.parents == (raw_tip,)
    # invariant 8: raw events stay, unchanged and reachable
    reachable = cm.repo.graph.reachable_events([cm.tip])
    assert set(rec.source_event_ids) <= reachable
    # the replaced range is a contiguous first-parent run ending right before first_kept
    assert cm.repo.graph.event(rec.first_kept).parents[0] == rec.last_event
    assert res.tokens_after < res.tokens_before


def test_context_after_compaction_keeps_goal_constraints_task_next_steps():
    cm = coding_session(12)
    compact(cm, keep_recent_tokens=300)
    bundle = cm.build_context(budget=20_000)
    text = "\n".join(s.text for s in bundle.kept)
    assert GOAL in text
    for c in HARD:
        assert c in text
    state = cm.project_state()
    assert state.goal["current_task"] in text
    assert "Next steps" in text
    assert any(s.kind == "current_request" for s in bundle.kept)  # invariant 5 survives the cut


def test_long_session_context_is_quarter_of_raw():
    from ctxstore.compaction import event_text

    cm = coding_session(60, big_output=1500)
    raw = sum(cm.tokenizer.count(event_text(ev, cm.message(ev.causality.get("message_id", ""))))
              for _, ev in cm.repo.graph.walk([cm.tip]))
    compact(cm, keep_recent_tokens=1000)
    bundle = cm.build_context(budget=1_000_000)
    assert bundle.used_tokens <= raw / 4, (bundle.used_tokens, raw)


def test_chained_compaction_names_previous_and_never_duplicates():
    cm = coding_session(10)
    first = compact(cm, keep_recent_tokens=300)
    for t in range(6):
        cm.add_user_message(f"more work {t}")
        cm.record_tool_call(f"x{t}", "bash", {"cmd": "ls"})
        cm.record_tool_result(f"x{t}", "a\n" * 200)
    second = compact(cm, keep_recent_tokens=300)
    r1 = cm.repo.objects.get(first.compaction_id)
    r2 = cm.repo.objects.get(second.compaction_id)
    assert r2.previous == first.compaction_id
    assert not set(r1.source_event_ids) & set(r2.source_event_ids)
    assert r2.source_event_ids[0] == r1.first_kept
    assert r1.summary.split("\n")[1] in r2.summary  # the earlier summary is carried forward


@pytest.mark.parametrize("summarizer,rule", [
    (_tamper(goal={"user_goal": GOAL, "current_task": ""}), "has_current_task"),
    (_tamper(next_steps=[]), "has_next_steps"),
    (_tamper(files={"read": [], "modified": []}), "file_writes_listed"),
    (_tamper(goal={"user_goal": "Something else", "current_task": "x"}), "goal_verbatim"),
    (_tamper(constraints={"hard": HARD[:1], "soft": []}), "hard_constraints_verbatim"),
    (_tamper(summary=("very long summary " * 5000) + GOAL + " ".join(HARD)), "smaller_than_replaced"),
    (_tamper(summary=""), "summarizer_output"),
    (CallableSummarizer(lambda req: ["not", "an", "object"]), "summarizer_output"),
    (CallableSummarizer(lambda req: 1 / 0), "summarizer_output"),
])
def test_each_rule_can_fail_and_moves_no_ref(summarizer, rule):
    cm = coding_session(8)
    refs_before, objects_before = _refs(cm), _facts(cm)
    with pytest.raises(CompactionRejected) as err:
        compact(cm, keep_recent_tokens=300, summarizer=summarizer)
    assert rule in str(err.value)
    assert _refs(cm) == refs_before
    assert _facts(cm) == objects_before  # nothing but derived snapshots written on failure
    dry = compact(cm, keep_recent_tokens=300, summarizer=summarizer, dry_run=True)
    assert not dry.committed and rule in {c.rule for c in dry.failed}


def test_tool_error_rule():
    cm = coding_session(8, fail_every=3)
    with pytest.raises(CompactionRejected, match="tool_errors_listed"):
        compact(cm, keep_recent_tokens=300, summarizer=_tamper(errors=[]))
    assert compact(cm, keep_recent_tokens=300).committed  # the default summarizer lists them


def test_split_tool_pair_is_refused():
    cm = coding_session(4)
    result_event = next(eid for eid, ev in cm.repo.graph.walk([cm.tip])
                        if ev.type == "ToolCallFinished")
    with pytest.raises(CompactionRejected, match="tool_pairs_intact"):
        compact(cm, cut_at=result_event)


def test_pending_tool_call_is_never_compacted_away():
    """Invariant 2: a call without a result cannot be summarized away."""
    cm = coding_session(6)
    cm.record_tool_call("open_call", "bash", {"cmd": "sleep 100"})
    for _ in range(4):
        cm.append_event("x.test.Noise", "agent", {"text": "noise " * 50})
    with pytest.raises(CompactionRejected, match="pending"):
        compact(cm, keep_recent_tokens=10)
    # the automatic cut chooser never proposes such a cut when a safe one exists
    cm.record_tool_result("open_call", "done")
    assert compact(cm, keep_recent_tokens=10).committed


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=1, max_value=60), st.integers(min_value=1, max_value=5))
def test_any_cut_commits_with_intact_pairs_or_refuses(cut, fail_every):
    cm = coding_session(6, fail_every=fail_every)
    from ctxstore.compaction.engine import _live_history

    live, _, _ = _live_history(cm, cm.tip)
    cut = min(cut, len(live) - 1)
    try:
        res = compact(cm, cut_at=live[cut][0])
    except CompactionRejected:
        return
    rec = cm.repo.objects.get(res.compaction_id)
    inside = {cm.repo.graph.event(e).payload.get("tool_call_id") for e in rec.source_event_ids
              if cm.repo.graph.event(e).type == "ToolCallRequested"}
    answered_inside = {cm.repo.graph.event(e).payload.get("tool_call_id") for e in rec.source_event_ids
                       if cm.repo.graph.event(e).type in ("ToolCallFinished", "ToolCallFailed")}
    assert inside == answered_inside


def test_command_summarizer(tmp_path):
    script = tmp_path / "summ.py"
    script.write_text(
        "import json, sys\n"
        "from ctxstore.compaction import StructuredSummarizer\n"
        "req = json.load(sys.stdin)\n"
        "print(json.dumps(StructuredSummarizer()(req)))\n")
    cm = coding_session(8)
    bad = tmp_path / "bad.py"
    bad.write_text("print('not json')\n")
    with pytest.raises(CompactionRejected, match="JSON"):
        compact(cm, keep_recent_tokens=100, summarizer=CommandSummarizer(f"{sys.executable} {bad}"))
    with pytest.raises(CompactionRejected, match="exited 3"):
        compact(cm, keep_recent_tokens=100,
                summarizer=CommandSummarizer(f"{sys.executable} -c 'import sys; sys.exit(3)'"))
    res = compact(cm, keep_recent_tokens=300, summarizer=CommandSummarizer(f"{sys.executable} {script}"))
    assert res.committed and res.summarizer.startswith("command:")


def test_merge_brings_conclusions_not_raw_events():
    cm = coding_session(3)
    alt = cm.fork("explore")
    for t in range(5):
        alt.record_tool_call(f"e{t}", "grep", {"q": f"thing {t}"})
        alt.record_tool_result(f"e{t}", f"found thing {t} in src/x.py\n" * 40)
    alt.update_state({"decisions_add": [{"decision": "thing 3 is the culprit", "rationale": "grep"}]})
    main_tip = cm.tip
    res = merge_branch(cm, "explore")
    ev = cm.repo.graph.event(cm.tip)
    assert ev.type == "BranchMerged" and ev.parents == (main_tip, alt.tip)
    rec = cm.repo.objects.get(res.compaction_id)
    assert rec.kind == "merge" and len(rec.source_event_ids) == 16  # 5 x (response, call, result) + state
    bundle = cm.build_context(budget=50_000)
    texts = [s.text for s in bundle.kept]
    assert any("thing 3 is the culprit" in t for t in texts)
    assert not any("found thing 4 in src/x.py" in t for t in texts)  # raw results stay out
    again = merge_branch(cm, "explore")  # issue 14: a no-op, not an error
    assert not again.committed and again.noop.startswith("nothing to merge") and not again.checks


def test_show_compaction_lists_replaced_events(tmp_path):
    from ctxstore import Repository

    from .clitools import Ctx

    store = Repository.init(tmp_path)
    cm = coding_session(8, store=store)
    res = compact(cm, keep_recent_tokens=300)
    store.close()
    ctx = Ctx(tmp_path)
    shown = ctx.json("show", res.compaction_id)
    assert shown["type"] == "compaction"
    assert shown["content"]["source_event_ids"][0] == res.first_event
    log = ctx.json("log", "main")
    marked = [e["id"] for e in log if e.get("compacted_by") == res.compaction_id]
    assert len(marked) == res.summarized
    assert "[compacted]" in ctx("log", "--oneline", "main").stdout


def test_cli_compact_and_merge(tmp_path):
    from ctxstore import Repository

    from .clitools import Ctx

    store = Repository.init(tmp_path)
    cm = coding_session(8, store=store)
    alt = cm.fork("alt")
    alt.record_tool_call("a1", "bash", {"cmd": "ls"})
    alt.record_tool_result("a1", "x\n" * 500)
    store.refs.set_head_symbolic(cm.ref)
    store.close()
    ctx = Ctx(tmp_path)
    dry = ctx.json("compact", "--dry-run", "--keep-recent-tokens", "300")
    assert not dry["committed"] and all(c["ok"] for c in dry["checks"])
    assert ctx.json("log", "-n", "1")[0]["type"] != "CompactionCompleted"
    done = ctx.json("compact", "--keep-recent-tokens", "300")
    assert done["committed"] and len(done["compaction_id"]) == 64
    assert done["tokens_after"] < done["tokens_before"]
    noop = ctx("compact", "--keep-recent-tokens", "100000")  # exit 0: nothing to do is no error
    assert "nothing to compact" in noop.stdout and "FAIL" not in noop.stdout
    assert ctx.json("compact", "--dry-run", "--keep-recent-tokens", "100000")["noop"]
    merged = ctx.json("merge", "alt")
    assert merged["committed"] and merged["kind"] == "merge"
    assert "[merge]" in ctx("log", "--graph", "--all").stdout
    script = tmp_path / "bad.py"
    script.write_text("print('{}')\n")  # well-formed JSON, but no summary: garbage output
    for _ in range(6):
        ctx("append", "UserPromptSubmitted", "--payload", json.dumps({"text": "more " * 100}))
    before = ctx.json("log", "-n", "1")[0]["id"]
    err = ctx.fails(11, "compact", "--keep-recent-tokens", "50", "--summarizer", f"{sys.executable} {script}")
    assert "summarizer_output" in err
    assert ctx.json("log", "-n", "1")[0]["id"] == before


def test_auto_compaction_when_context_passes_share_of_window():
    cm = coding_session(30, big_output=1500)
    tip = cm.tip
    bundle = cm.build_context(budget=4000)  # the library default: auto-compaction on
    ev = cm.repo.graph.event(cm.tip)
    assert ev.type == "CompactionCompleted" and ev.parents == (tip,)
    assert any(s.kind == "summary" and s.kept for s in bundle.segments)
    # read-only callers can turn it off; share 0 in the session config turns it off too
    cm2 = coding_session(30, big_output=1500)
    tip2 = cm2.tip
    cm2.build_context(budget=4000, auto_compact=False)
    assert cm2.tip == tip2


def test_abandoned_call_is_summarized_as_an_error_not_blocking():
    """A call with no result that the user moved on from is not pending: it may be compacted,
    but only if the record lists it among its errors."""
    cm = coding_session(4)
    cm.record_tool_call("lost", "bash", {"cmd": "sleep 1000"})  # interrupted: never answered
    for t in range(6):
        cm.add_user_message(f"never mind, next thing {t}")
        cm.record_tool_call(f"n{t}", "bash", {"cmd": "ls"})
        cm.record_tool_result(f"n{t}", "ok\n" * 100)
    drop_it = _tamper(errors=lambda out: out.__setitem__(
        "errors", [e for e in out["errors"] if e.get("tool_call_id") != "lost"]))
    with pytest.raises(CompactionRejected, match="abandoned call"):
        compact(cm, keep_recent_tokens=200, summarizer=drop_it)
    res = compact(cm, keep_recent_tokens=200)
    rec = cm.repo.objects.get(res.compaction_id)
    assert any(e.get("tool_call_id") == "lost" and "abandoned" in e["error"] for e in rec.errors)


def test_repeated_auto_compaction_keeps_the_summary_bounded():
    """Chained compactions carry structured fields, not the previous text: the summary stays
    bounded and auto-compaction does not fire on every build."""
    cm = coding_session(2)
    compactions = 0
    for t in range(150):
        cm.add_user_message(f"turn {t}: continue")
        cm.record_tool_call(f"k{t}", "bash", {"cmd": f"make step{t}"})
        cm.record_tool_result(f"k{t}", f"step {t} output line\n" * 40)
        cm.record_file_write(f"src/f{t % 30}.py", f"edit {t}")
        before = cm.tip
        cm.build_context(budget=8000)
        compactions += cm.tip != before
    rec = cm.repo.objects.get(cm.repo.graph.event(
        next(e for e, ev in cm.repo.graph.walk([cm.tip], first_parent=True)
             if ev.type == "CompactionCompleted")).causality["compaction_id"])
    assert compactions >= 3 and compactions <= 150 // 5
    assert cm.tokenizer.count(rec.summary) < 2500
    bundle = cm.build_context(budget=8000, auto_compact=False)
    assert any(s.kind == "summary" and s.kept for s in bundle.segments)
    assert any(s.kind == "turn" and s.kept for s in bundle.segments)  # recent turns still fit


def test_dry_run_with_nothing_to_compact_reports_instead_of_failing():
    cm = coding_session(1)
    res = compact(cm, dry_run=True)
    assert not res.committed and res.summarized == 0
    assert res.noop.startswith("nothing to compact") and not res.failed and not res.checks
    real = compact(cm)
    assert not real.committed and real.noop.startswith("nothing to compact")
