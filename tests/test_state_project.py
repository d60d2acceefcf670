"""Projection: resumable from any snapshot, canonical to store, and diffable."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxstore import codec
from ctxstore.objects import Event
from ctxstore.state import (
    STATE_FORMAT,
    AgentState,
    project,
    snapshot_value,
    state_diff,
    state_from_snapshot,
)

from .test_invariants_context import histories

PROPS = settings(max_examples=80, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _stored(state: AgentState) -> AgentState:
    """What a snapshot round trip through the store's canonical bytes gives back."""
    body = codec.pack_value(snapshot_value(state))
    assert codec.is_canonical(body)
    got = state_from_snapshot(codec.unpack_value(body))
    assert got is not None
    return got


@PROPS
@given(histories, st.data())
def test_resume_from_snapshot_equals_projection_from_scratch(hist_msgs, data):
    hist, msgs = hist_msgs
    pairs = [(i, e) for i, e, _ in hist]
    k = data.draw(st.integers(0, len(pairs)))
    full = project(pairs, messages=msgs.get)
    head = project(pairs[:k], messages=msgs.get)
    assert AgentState.from_dict(head.to_dict()) == head
    resumed = project(pairs[k:], start=_stored(head), messages=msgs.get)
    assert resumed == full
    assert codec.pack_value(resumed.to_dict()) == codec.pack_value(full.to_dict())
    assert full.version == len(pairs) and full.source_event == pairs[-1][0]


def test_snapshot_value_shape_and_other_formats():
    s = project([("e1", Event("SessionStarted", payload={"goal": "g"}))])
    v = snapshot_value(s)
    assert v["event"] == "e1" and v["state"]["format"] == STATE_FORMAT
    assert state_from_snapshot({"event": "e1", "state": {**v["state"], "format": 999}}) is None
    assert state_from_snapshot({"nope": 1}) is None


def test_from_dict_fills_missing_sections_and_fields():
    s = AgentState.from_dict({"version": 3, "goal": {"user_goal": "g"}})
    assert s.version == 3
    assert s.goal == {"user_goal": "g", "current_task": "", "acceptance_criteria": ()}
    assert s.plan["status"] == "planning" and s.tool_calls["pending"] == {}


def test_state_diff_reports_only_changed_sections():
    a = project([("e1", Event("SessionStarted", payload={"goal": "g"})),
                 ("e2", Event("FileRead", payload={"path": "a.py"}))])
    b = project([("e3", Event("StateUpdated", payload={"patch": {
                     "goal": {"current_task": "t"}, "open_questions_add": ["q"],
                     "plan": {"status": "executing"}, "facts_add": ["f"]}})),
                 ("e4", Event("FileWritten", payload={"path": "a.py", "change_summary": "x"}))],
                start=a)
    d = state_diff(a, b)
    assert set(d) == {"goal", "plan", "open_questions", "facts", "files"}
    assert d["goal"] == {"current_task": {"before": "", "after": "t"}}
    assert d["plan"] == {"status": {"before": "planning", "after": "executing"}}
    assert d["open_questions"] == {"added": ["q"]}
    assert d["facts"]["added"][0]["content"] == "f"
    assert d["files"] == {"modified": {"added": [{"path": "a.py", "change_summary": "x",
                                                  "event": "e4"}]}}
    assert state_diff(b, a)["open_questions"] == {"removed": ["q"]}
    assert state_diff(a, a) == {}
    codec.pack_value(d)  # JSON/msgpack-safe


@PROPS
@given(histories, histories)
def test_state_diff_is_empty_iff_sections_equal(h1, h2):
    a = project((i, e) for i, e, _ in h1[0])
    b = project((i, e) for i, e, _ in h2[0])
    d = state_diff(a, b)
    codec.pack_value(d)
    same = all(getattr(a, n) == getattr(b, n) for n in
               ("goal", "plan", "constraints", "open_questions", "facts", "decisions", "files",
                "errors", "validations", "artifacts"))
    assert (d == {}) == same
