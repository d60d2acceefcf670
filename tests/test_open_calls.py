"""Pending vs abandoned (issue 12 item 5): ONE rule, and the four parts that use it agree.

Each scenario writes a call without a result through the ContextManager, followed (or not) by
what abandons it; then the state fold, the context builder, compaction's checks and fsck are
asked about the same call, and must give the same answer."""

from __future__ import annotations

import pytest

from ctxstore import ContextManager, Repository
from ctxstore.compaction import compact
from ctxstore.maintenance.fsck import check
from ctxstore.objects import Compaction
from ctxstore.state import calls

from .corpus import require_corpus
from .sessions_factory import coding_session


def _aborted(cm):
    cm.add_assistant_message("let me look", stop_reason="aborted",
                             tool_calls=[{"id": "X", "name": "read", "args": {"path": "a"}}])


def _errored(cm):
    cm.add_assistant_message("", stop_reason="error",
                             tool_calls=[{"id": "X", "name": "bash", "args": {"cmd": "ls"}}])


def _user_moved_on(cm):
    cm.record_tool_call("X", "bash", {"cmd": "sleep 100"})
    cm.add_user_message("never mind that, do something else")


calls.register_interruption("x.test.Interrupted")  # how a harness declares its own marker


def _interrupted(cm):
    cm.record_tool_call("X", "bash", {"cmd": "sleep 100"})
    cm.append_event("x.test.Interrupted", "system", {"reason": "interrupted"})


def _codex_interrupted(cm):
    cm.record_tool_call("X", "shell", {"command": ["sleep", "100"]})
    cm.append_event("codex:event_msg", "system", {"subtype": "turn_aborted"})


def _still_running(cm):
    cm.record_tool_call("X", "bash", {"cmd": "make"})
    cm.append_event("x.test.Noise", "agent", {"text": "waiting"})


def _answered_late(cm):
    cm.record_tool_call("X", "bash", {"cmd": "make"})
    cm.add_user_message("are you there?")
    cm.record_tool_result("X", "done")


SCENARIOS = {
    "aborted response": (_aborted, "abandoned"),
    "response ended in error": (_errored, "abandoned"),
    "later user prompt": (_user_moved_on, "abandoned"),
    "interrupted turn": (_interrupted, "abandoned"),
    "codex turn_aborted": (_codex_interrupted, "abandoned"),
    "nothing followed": (_still_running, "pending"),
    "result after a prompt": (_answered_late, ""),
}


def _session(scenario):
    cm = coding_session(4, big_output=200)
    SCENARIOS[scenario][0](cm)
    return cm


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_rule_itself(scenario):
    cm = _session(scenario)
    events = list(reversed(list(cm.repo.graph.walk([cm.tip], first_parent=True))))
    book = calls.open_calls(calls.event_facts(events))
    assert book.status("X") == SCENARIOS[scenario][1]
    if book.status("X") == "abandoned":
        assert book.abandoned["X"]["reason"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_state_fold_agrees(scenario):
    st = _session(scenario).project_state()
    want = SCENARIOS[scenario][1]
    assert ("X" in st.pending_tool_calls) == (want == "pending")
    assert ("X" in st.abandoned_tool_calls) == (want == "abandoned")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_builder_agrees(scenario):
    bundle = _session(scenario).build_context(budget=50_000, auto_compact=False)
    segs = [s for s in bundle.segments if s.tool_call_id == "X"]
    want = SCENARIOS[scenario][1]
    if want == "pending":
        assert [s.kind for s in segs] == ["pending_tool_pair"] and segs[0].tier == 0
    elif want == "abandoned":
        assert segs == []  # never replayed, never P0
        assert not any("[result pending" in s.text for s in bundle.segments)
    else:
        assert [s.kind for s in segs] == ["turn"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_compaction_checks_agree(scenario):
    cm = _session(scenario)
    cut = cm.add_user_message("next")  # the cut: everything before this prompt is replaced
    cm.add_user_message("and then")
    res = compact(cm, cut_at=cut, dry_run=True)
    pairs = next(c for c in res.checks if c.rule == "tool_pairs_intact")
    want = SCENARIOS[scenario][1]
    if want == "abandoned" or want == "":
        # every scenario has a later prompt now, so the call is abandoned or answered
        assert pairs.ok, pairs.detail
    if want == "abandoned":
        assert "abandoned call(s) listed as errors" in pairs.detail


def test_compaction_refuses_a_pending_call():
    cm = _session("nothing followed")
    noise = [eid for eid, ev in cm.repo.graph.walk([cm.tip], first_parent=True)][0]
    res = compact(cm, cut_at=noise, dry_run=True)
    pairs = next(c for c in res.checks if c.rule == "tool_pairs_intact")
    assert not pairs.ok and "pending call(s) would be compacted away: X" in pairs.detail


def _force_compaction(cm):
    """A compaction record over everything but the tip, written without the checks (what a
    buggy or foreign writer could leave behind)."""
    chain = [eid for eid, _ in cm.repo.graph.walk([cm.tip], first_parent=True)][::-1]
    src = chain[1:-1]
    rec = Compaction(session=cm.session, first_event=src[0], last_event=src[-1],
                     first_kept=chain[-1], source_event_ids=tuple(src), summary="forced")
    cid = cm.repo.objects.put_object(rec)
    cm.append_event("CompactionCompleted", "system", {}, {"compaction_id": cid})


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_fsck_agrees(scenario, tmp_path):
    store = Repository.init(tmp_path)
    cm = coding_session(2, store=store, big_output=100)
    SCENARIOS[scenario][0](cm)
    cm.append_event("x.test.Noise", "agent", {"text": "tail"})
    _force_compaction(cm)
    report = check(store, full=True)
    flagged = [p for p in report.problems if p.kind == "tool-pair" and "pending tool call X" in p.message]
    assert bool(flagged) == (SCENARIOS[scenario][1] == "pending"), report.problems
    store.close()


def test_cli_state_shows_abandoned_calls(tmp_path):
    from .clitools import Ctx

    store = Repository.init(tmp_path)
    cm = ContextManager.start(store, "t", "g")
    store.refs.set_head_symbolic(cm.ref)
    _aborted(cm)
    store.close()
    out = Ctx(tmp_path)("state").stdout
    assert "Abandoned tool call: X read" in out and "Pending tool calls" not in out


def test_real_pi_session_has_no_false_pending_calls(tmp_path):
    """The genuine pi session: 6 calls without a result, each from an aborted message or
    followed by a user prompt. None is pending; `ctx context --budget 4000` fits."""
    root = require_corpus()
    from .clitools import Ctx

    ctx = Ctx(tmp_path)
    ctx.import_alone(root / "pi" / "pi-mono_before-compaction_v1-format_genuine.jsonl")
    st = ctx.json("state")
    assert st["tool_calls"]["pending"] == {}
    assert len(st["tool_calls"]["abandoned"]) == 6
    bundle = ctx.json("context", "--budget", "4000")
    assert not any(s["kind"] == "pending_tool_pair" for s in bundle["segments"])


def test_builder_trusts_the_state_when_the_window_starts_after_the_aborted_response():
    """The response that stopped a call may lie just before the history window; the state,
    folded over the whole branch, still says the call is abandoned."""
    from ctxstore.context import candidates_from_history

    cm = coding_session(2, big_output=100)
    _aborted(cm)
    state = cm.project_state()
    window = cm.history()[0]
    window = [h for h in window if h[1].type != "ModelResponseReceived"]  # cut the response off
    segs = candidates_from_history(state, window)
    assert not [s for s in segs if s.tool_call_id == "X"]
