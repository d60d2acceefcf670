"""Approval requested/granted/denied events are projected into state and counted in stats,
and so are the harnesses' own refusal signals (a tool result saying the user said no)."""

from __future__ import annotations

from ctxstore import ContextManager
from ctxstore.importers import import_paths
from ctxstore.porcelain import context as pc
from ctxstore.repo import Repository
from tests.clitools import Ctx
from tests.corpus import require_corpus


def test_approval_events_fold_into_state_and_stats():
    repo = Repository.memory()
    cm = ContextManager.start(repo, title="t")
    cm.add_user_message("clean up")
    cm.record_tool_call("c1", "bash", {"cmd": "rm -rf build"})
    cm.append_event("ApprovalRequested", "system", {"tool_call_id": "c1", "name": "bash"})
    cm.append_event("ApprovalGranted", "user", {"tool_call_id": "c1"})
    cm.record_tool_result("c1", "removed")
    cm.record_tool_call("c2", "bash", {"cmd": "git push --force"})
    cm.append_event("ApprovalRequested", "system", {"tool_call_id": "c2"})
    cm.append_event("ApprovalDenied", "user", {"tool_call_id": "c2", "reason": "not on main"})
    state = cm.project_state()
    ap = state.approvals
    assert (ap["requested"], ap["granted"], ap["denied"]) == (2, 1, 1)
    assert [(e["tool_call_id"], e["status"]) for e in ap["log"]] == [("c1", "granted"),
                                                                     ("c2", "denied")]
    assert ap["log"][1]["reason"] == "not on main" and ap["log"][1]["name"] == "bash"
    assert any("approval denied: not on main" in e["error"] for e in state.errors)
    tools = pc.stats(repo, cm.tip)["tools"]
    assert (tools["approval_requested_count"], tools["approval_granted_count"],
            tools["approval_denied_count"]) == (2, 1, 1)
    # the state is a pure fold: from scratch and from snapshots agree
    assert cm.project_state(use_snapshots=False) == state


def test_a_harness_refusal_counts_as_a_denied_approval(tmp_path):
    repo = Repository.init(tmp_path)
    cm = ContextManager.start(repo, title="t")
    cm.add_user_message("deploy")
    cm.record_tool_call("t1", "Bash", {"command": "make deploy"}, harness="claude-code")
    cm.record_tool_result("t1", "The user doesn't want to proceed with this tool use. The tool "
                                "use was rejected.", is_error=True, name="Bash")
    ap = cm.project_state().approvals
    assert ap["denied"] == 1 and ap["log"][0]["source"] == "tool_result"
    ctx = Ctx(tmp_path)
    ctx("checkout", cm.session)
    assert ctx.json("stats")["tools"]["approval_denied_count"] == 1
    assert "1 denied" in ctx("stats").stdout
    # an explicit ApprovalDenied for the same call is not counted twice
    cm.record_tool_call("t2", "Bash", {"command": "make deploy"}, harness="claude-code")
    cm.append_event("ApprovalDenied", "user", {"tool_call_id": "t2"})
    cm.record_tool_result("t2", "The user doesn't want to proceed with this tool use.",
                          is_error=True, name="Bash")
    assert cm.project_state().approvals["denied"] == 2


def test_real_transcripts_count_their_refusals():
    path = require_corpus() / "claude-code" / "ccl_jssoundrecorder_queue-operation-thinking_v2.0.42.jsonl"
    raw = path.read_text(encoding="utf-8")
    refusals = raw.count("doesn't want to proceed")
    assert refusals, "the fixture has no refusal to count"
    repo = Repository.memory()
    report = import_paths(repo, [path])
    sid = report.sessions[0].session
    total = 0
    for _branch, tip in repo.branches(sid).items():
        state = pc.state(repo, tip)
        denied = [e for e in state.errors if e.get("kind") == "denied"]
        assert state.approvals["denied"] == len(denied)
        assert pc.stats(repo, tip)["tools"]["approval_denied_count"] == len(denied)
        total = max(total, len(denied))
    assert 0 < total <= refusals
