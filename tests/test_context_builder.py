"""build_context: tiers, eviction order, trimming, whole turns, units, errors, speed."""

from __future__ import annotations

import pytest

from ctxstore import codec
from ctxstore.context import (
    DEFAULT_EVICTION_ORDER,
    CachedTokenizer,
    ContextBundle,
    EstimateTokenizer,
    Segment,
    build_context,
)
from ctxstore.errors import BudgetTooSmall
from ctxstore.state import AgentState


class Chars:
    """One token per character: makes budgets in tests easy to reason about."""

    name = "chars"

    def count(self, text):
        return len(text)


TOK = Chars()


def seg(kind, text, order=0, **kw):
    kw.setdefault("sources", (f"src-{kind}-{order}",))
    return Segment(kind, text=text, order=order, **kw)


def kept_texts(bundle):
    return [s.text for s in bundle.kept]


def by_text(bundle):
    return {s.sources[0]: s for s in bundle.segments}


def test_everything_fits_reasons_and_model_order():
    cands = [seg("turn", "u1", 1, messages=[{"role": "user", "text": "u1"}]),
             seg("fact", "f"), seg("goal", "g"), seg("tool_schema", "ts"),
             seg("current_request", "req", 9, messages=[{"role": "user", "text": "req"}]),
             seg("developer", "dev"), seg("system", "sys"), seg("summary", "sum")]
    b = build_context(AgentState(source_event="ev9", version=9), cands, 100, tokenizer=TOK)
    assert [s.kind for s in b.segments] == ["system", "developer", "tool_schema", "summary",
                                            "goal", "fact", "turn", "current_request"]
    assert all(s.kept for s in b.segments)
    reasons = {s.kind: s.reason for s in b.segments}
    assert reasons["current_request"] == "P0: current request, never dropped"
    assert reasons["fact"] == "kept: P2 fact within budget"
    assert b.used_tokens == sum(len(c.text) for c in cands)
    assert (b.state_event, b.state_version, b.tokenizer) == ("ev9", 9, "chars")
    assert b.usage["by_tier"]["P0"] == {"kept": 11, "dropped": 0, "segments": 4}
    assert b.usage["by_kind"]["fact"] == {"kept": 1, "dropped": 0, "segments": 1}


def test_p3_goes_before_p2_before_p1_oldest_first():
    cands = [seg("current_request", "R" * 10),
             seg("turn", "T" * 20, 5, group="g5"),
             seg("fact", "F" * 20, 1), seg("fact", "f" * 20, 2),
             seg("tool_output", "O" * 50, 3, group="g3", tool_call_id="t3"),
             seg("chatter", "C" * 10, 4, group="g3")]
    # total 130; budget 60 -> drop tool_output (80), chatter (70), oldest fact (50)
    b = build_context(None, cands, 60, tokenizer=TOK)
    s = by_text(b)
    assert not s["src-tool_output-3"].kept and not s["src-chatter-4"].kept
    assert not s["src-fact-1"].kept and s["src-fact-2"].kept and s["src-turn-5"].kept
    assert s["src-tool_output-3"].reason == \
        "dropped: over budget, evicted by order step 1 (tool_output)"
    assert s["src-fact-1"].text == "" and s["src-fact-1"].tokens == 20
    assert b.used_tokens == 50 and b.usage["by_tier"]["P3"]["dropped"] == 60


def test_trimmable_kinds_are_cut_to_a_preview_before_dropping():
    big = "x" * 2000
    cands = [seg("current_request", "R"), seg("memory", big, 1), seg("memory", "small", 2)]
    b = build_context(None, cands, 700, tokenizer=TOK)
    s = by_text(b)
    m = s["src-memory-1"]
    assert m.kept and m.trimmed and m.tokens < 700 and m.text.startswith("x" * 400)
    assert "[trimmed from 2000 tokens" in m.text
    assert m.reason == "trimmed: over budget, cut to a preview by order step 4 (memory)"
    assert s["src-memory-2"].kept and not s["src-memory-2"].trimmed
    assert b.used_tokens <= 700


def test_trim_then_drop_when_preview_is_not_enough():
    cands = [seg("current_request", "R" * 50), seg("fact", "x" * 2000, 1)]
    b = build_context(None, cands, 100, tokenizer=TOK)
    f = by_text(b)["src-fact-1"]
    assert not f.kept and f.reason == "dropped: over budget, evicted by order step 5 (fact)"
    assert b.used_tokens == 50


def test_turns_are_evicted_whole_oldest_first():
    cands = [seg("current_request", "now", 100, group="g3"),
             seg("turn", "u1", 1, group="g1"), seg("turn", "a1", 2, group="g1"),
             seg("tool_output", "o1", 3, group="g1", tool_call_id="t1"),
             seg("turn", "u2", 10, group="g2"), seg("turn", "a2", 11, group="g2")]
    b = build_context(None, cands, 3 + 4 + 1, tokenizer=TOK,
                      eviction_order=("turn",))
    s = by_text(b)
    assert [k for k, v in s.items() if not v.kept] == ["src-turn-1", "src-turn-2",
                                                       "src-tool_output-3"]
    assert s["src-turn-1"].reason == \
        "dropped: over budget, whole turn evicted by order step 1 (turn)"
    assert s["src-turn-10"].kept and s["src-turn-11"].kept


def test_call_and_result_given_separately_are_one_unit():
    cands = [seg("current_request", "R"),
             seg("turn", "call", 1, tool_call_id="t1"), seg("turn", "result", 2, tool_call_id="t1"),
             seg("turn", "later", 3)]
    b = build_context(None, cands, 1 + 6, tokenizer=TOK, eviction_order=("turn",))
    s = by_text(b)
    assert not s["src-turn-1"].kept and not s["src-turn-2"].kept and s["src-turn-3"].kept
    assert s["src-turn-2"].reason == "dropped: with its tool pair (t1)"
    # a unit with a P0 member is P0 as a whole
    cands[1] = seg("pending_tool_pair", "call", 1, tool_call_id="t1")
    b = build_context(None, cands, 1 + 4 + 6, tokenizer=TOK)
    s = by_text(b)
    assert s["src-turn-2"].kept and s["src-turn-2"].tier == 0 and not s["src-turn-3"].kept


def test_budget_too_small_names_the_numbers():
    cands = [seg("system", "s" * 30), seg("current_request", "r" * 20), seg("goal", "g")]
    with pytest.raises(BudgetTooSmall) as err:
        build_context(None, cands, 100, tokenizer=TOK, reserved_output=60)
    e = err.value
    assert e.exit_code == 14
    assert e.details == {"needed": 50, "available": 40, "max_tokens": 100,
                         "reserved_output": 60, "tokenizer": "chars"}
    assert "needs 50 tokens (system prompt 30, current request 20) but only 40" in str(e)
    assert "--truncate-system" in str(e)
    b = build_context(None, cands, 110, tokenizer=TOK, reserved_output=60)
    assert b.used_tokens == 50 and not by_text(b)["src-goal-0"].kept
    assert b.available_tokens == 50


def test_custom_order_and_fallback_for_kinds_left_out():
    cands = [seg("current_request", "R"), seg("goal", "G" * 10), seg("chatter", "C" * 10, 1),
             seg("fact", "F" * 10, 2)]
    b = build_context(None, cands, 1, tokenizer=TOK, eviction_order=("goal",))
    s = by_text(b)
    assert s["src-goal-0"].reason == "dropped: over budget, evicted by order step 1 (goal)"
    assert s["src-chatter-1"].reason.startswith("dropped: over budget, fallback eviction (P3")
    assert s["src-fact-2"].reason.startswith("dropped: over budget, fallback eviction (P2")
    b = build_context(None, cands, 21, tokenizer=TOK, eviction_order=())
    assert by_text(b)["src-goal-0"].kept and not by_text(b)["src-chatter-1"].kept


@pytest.mark.parametrize("order", [("current_request",), ("nonsense",)])
def test_bad_eviction_orders(order):
    with pytest.raises(ValueError):
        build_context(None, [], 10, tokenizer=TOK, eviction_order=order)


def test_default_order_ends_with_goal_and_open_questions():
    assert DEFAULT_EVICTION_ORDER[-2:] == ("open_questions", "goal")
    assert DEFAULT_EVICTION_ORDER[:2] == ("tool_output", "chatter")


def test_segment_validation():
    with pytest.raises(ValueError):
        Segment("bogus")
    with pytest.raises(ValueError):
        Segment("fact", tier=7)
    assert Segment("fact").tier == 2 and Segment("fact", tier=1).tier_name == "P1"


def test_bundle_round_trip_is_canonical():
    cands = [seg("current_request", "R", messages=[{"role": "user", "text": "R"}]),
             seg("tool_schema", "{}", data={"name": "bash", "parameters": {"type": "object"}}),
             seg("fact", "x" * 600, 1)]
    b = build_context(AgentState(), cands, 200, tokenizer=TOK)
    body = codec.pack_value(b.to_dict())
    assert codec.is_canonical(body)
    assert ContextBundle.from_dict(codec.unpack_value(body)) == b
    assert b.explain()[0].startswith("+ P0 tool_schema")


def _many(n):
    cands = [Segment("system", text="You are a coding agent. " * 20, sources=("arg:system",))]
    kinds = ["turn", "turn", "tool_output", "chatter", "fact", "decision", "memory", "artifact"]
    for i in range(n):
        k = kinds[i % len(kinds)]
        text = f"segment {i} of kind {k}: " + ("lorem ipsum dolor sit amet " * (5 + i % 40))
        cands.append(Segment(k, text=text, order=i, group=f"g{i // 6}", sources=(f"ev{i}",),
                             tool_call_id=f"t{i}" if k == "tool_output" else ""))
    cands.append(Segment("current_request", text="fix it", order=n, sources=("evN",)))
    return cands


class _CountingEstimate(EstimateTokenizer):
    def __init__(self):
        self.calls = 0

    def count(self, text):
        self.calls += 1
        return super().count(text)


def test_build_1000_candidates_counts_each_text_once():
    """What keeps repeated builds cheap: a warm build counts nothing again (the speed itself
    is measured by benchmarks/bench_context.py, not asserted here under a shared CPU)."""
    inner = _CountingEstimate()
    tok = CachedTokenizer(inner)
    cands = _many(1000)
    cold = build_context(None, cands, 20_000, tokenizer=tok)  # counts every text once
    assert cold.used_tokens <= 20_000 and cold.dropped
    counted = inner.calls
    assert len(cands) <= counted
    for _ in range(3):
        warm = build_context(None, cands, 20_000, tokenizer=tok)
    assert inner.calls == counted and warm == cold
