"""The context builder's whole decision, pinned: every field of every decided segment (kept,
trimmed, tier, tokens, text, messages, reason — with their exact types), the usage tables and
the bundle's stamps, for scenarios that drive each stage (P0 truncation, eviction by kind and
whole turns, the cut of the current turn, trimming to previews, refill of what fits again).

A change to the builder's decisions fails here with the scenario and the field named; when
the change is intended, regenerate with `CTX_REGEN_GOLDEN=1 pytest tests/test_builder_golden.py`
and review the diff of tests/golden/builder_bundles.json like code. Found necessary by
mutation testing (docs/testing.md): the property tests hold for many wrong decisions."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from ctxstore.context import Segment, build_context
from ctxstore.errors import BudgetTooSmall

GOLDEN = Path(__file__).parent / "golden" / "builder_bundles.json"


class Chars:
    name = "chars"

    def count(self, text: str) -> int:
        return len(text)


class Words:
    """One token per word: the truncation marker (15 words) is cheaper than the 32 tokens the
    first cut leaves for it."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


class Halves:
    """Two characters a token: the marker (about 40) costs a little more than those 32."""

    name = "halves"

    def count(self, text: str) -> int:
        return (len(text) + 1) // 2


def _rules(unit: str, n: int) -> list[Segment]:
    return [Segment("system", text=unit * n, sources=("arg:system",)),
            Segment("current_request", text="now do it", order=9, group="g", sources=("g",)),
            Segment("goal", text="ship it", sources=("goal",))]


def _history(turns: int, pairs: int, size: int) -> list[Segment]:
    out = []
    for t in range(turns):
        g = f"g{t}"
        out.append(Segment("turn", text=f"prompt {t} " + "p" * size, order=t * 100, group=g,
                           sources=(f"u{t}",), messages=({"role": "user", "t": t},)))
        for k in range(pairs):
            out.append(Segment("turn", text=f"pair {t}.{k} " + "x" * size, order=t * 100 + k + 1,
                               group=g, tool_call_id=f"c{t}.{k}", sources=(f"e{t}.{k}",),
                               messages=({"role": "tool", "id": f"c{t}.{k}"},)))
    return out


def _state_segments(size: int) -> list[Segment]:
    kinds = ["goal", "plan", "files", "diff", "error", "decision", "fact", "fact", "memory",
             "artifact", "preference", "summary", "constraints", "open_questions"]
    return [Segment(k, text=f"{k} {n} " + "s" * (size * (1 + n % 3)), order=n,
                    sources=(f"s{n}",)) for n, k in enumerate(kinds)]


def _noise(size: int) -> list[Segment]:
    return [Segment("tool_output" if n % 2 else "chatter", text=f"noise {n} " + "n" * size,
                    order=n, tool_call_id=f"o{n}" if n % 2 else "", sources=(f"o{n}",))
            for n in range(6)]


def _p0(sys_size: int, dev_size: int = 0) -> list[Segment]:
    out = [Segment("system", text="SYSTEM " + "S" * sys_size, sources=("arg:system",)),
           Segment("tool_schema", text="schema " + "k" * 40, sources=("arg:tools",),
                   data={"name": "bash"}),
           Segment("current_request", text="now do it", order=10_000, group="g9",
                   sources=("u9",))]
    if dev_size:
        out.insert(1, Segment("developer", text="DEV " + "D" * dev_size, sources=("arg:dev",)))
    return out


def _current_turn(pairs: int, size: int) -> list[Segment]:
    return [Segment("turn", text=f"now pair {k} " + "c" * size, order=10_001 + k, group="g9",
                    tool_call_id=f"n{k}", sources=(f"n{k}",)) for k in range(pairs)]


STATE = SimpleNamespace(source_event="ev-123", version=7)

SCENARIOS = {
    # everything fits: every reason is "kept ... within budget" / "P0 ..."
    "fits": dict(cands=lambda: _p0(50) + _state_segments(20) + _history(2, 2, 20) + _noise(10),
                 budget=100_000),
    # noise, then P2/P1 kinds, then whole old turns go; what fits again is refilled
    "evicts": dict(cands=lambda: _p0(50) + _state_segments(60) + _history(4, 3, 80)
                   + _noise(300), budget=1_800),
    "evicts_tight": dict(cands=lambda: _p0(50) + _state_segments(60) + _history(4, 3, 80)
                         + _noise(300), budget=700),
    # big facts, files and errors are cut to previews before they are dropped
    "trims": dict(cands=lambda: _p0(30) + _state_segments(700) + _history(2, 1, 40)
                  + _noise(900), budget=5_250),
    "trims_and_drops": dict(cands=lambda: _p0(30) + _state_segments(700) + _history(2, 1, 40),
                            budget=12_000),
    # dropped tool output comes back as a preview where the whole does not fit; a small one
    # whole; what fits neither way stops the refill
    "refills_a_preview": dict(cands=lambda: _p0(30) + [
        Segment("tool_output", text="o" * 2_000, order=1, sources=("o1",)),
        Segment("tool_output", text="q" * 150, order=2, sources=("o2",)),
        Segment("chatter", text="c" * 700, order=3, sources=("c3",)),
        Segment("fact", text="f" * 300, order=4, sources=("f4",)),
        Segment("memory", text="m" * 900, order=5, sources=("m5",))], budget=1_200),
    "refills_whole_and_preview": dict(cands=lambda: _p0(30) + [
        Segment("tool_output", text="o" * 2_000, order=1, sources=("o1",)),
        Segment("tool_output", text="q" * 150, order=2, sources=("o2",))], budget=800),
    # the current turn alone overflows: its request and newest pairs stay
    "cuts_current_turn": dict(cands=lambda: _p0(30) + _history(1, 1, 50)
                              + _current_turn(12, 90), budget=900),
    # a custom eviction order and reserved output
    "custom_order": dict(cands=lambda: _p0(40) + _state_segments(50) + _history(3, 2, 60)
                         + _noise(100), budget=1_500, reserved_output=200,
                         eviction_order=("chatter", "tool_output", "turn", "fact", "memory")),
    # P0 over the budget: the largest system message is cut first, with a marker
    "truncates_system": dict(cands=lambda: _p0(3_000, 800) + _history(1, 1, 20), budget=1_500,
                             truncate_system=True),
    # both system messages must be cut
    "truncates_both": dict(cands=lambda: _p0(1_500, 1_400) + _history(1, 1, 20), budget=400,
                           truncate_system=True),
    # so small that little more than the marker is left
    "truncates_to_marker": dict(cands=lambda: _p0(2_000) + _history(1, 1, 10), budget=150,
                                truncate_system=True),
    # other tokenizers: the first cut leaves room (words), or the search must step (halves)
    "truncates_words": dict(cands=lambda: _rules("rule ", 1_000), budget=300,
                            truncate_system=True, tokenizer=Words),
    "truncates_words_to_marker": dict(cands=lambda: _rules("rule ", 1_000), budget=30,
                                      truncate_system=True, tokenizer=Words),
    "truncates_halves": dict(cands=lambda: _rules("x", 1_000), budget=50,
                             truncate_system=True, tokenizer=Halves),
}


def _bundle_dict(b) -> dict:
    segs = []
    for s in b.segments:
        segs.append({
            "kind": s.kind, "tier": s.tier, "order": s.order, "group": s.group,
            "tool_call_id": s.tool_call_id, "sources": list(s.sources),
            "messages": [dict(m) for m in s.messages], "tokens": s.tokens,
            "kept": s.kept, "trimmed": s.trimmed, "reason": s.reason, "text": s.text,
            "types": [type(s.tier).__name__, type(s.tokens).__name__, type(s.kept).__name__,
                      type(s.trimmed).__name__],
        })
    return {"segments": segs, "used_tokens": b.used_tokens, "max_tokens": b.max_tokens,
            "reserved_output": b.reserved_output, "tokenizer": b.tokenizer,
            "eviction_order": list(b.eviction_order), "usage": b.usage,
            "state_event": b.state_event, "state_version": b.state_version}


def _run(name: str) -> dict:
    sc = SCENARIOS[name]
    kw = {k: v for k, v in sc.items() if k not in ("cands", "budget", "tokenizer")}
    tok = sc.get("tokenizer", Chars)()
    b = build_context(STATE, sc["cands"](), sc["budget"], tokenizer=tok, **kw)
    assert b.used_tokens <= sc["budget"] - kw.get("reserved_output", 0)
    return _bundle_dict(b)


def test_golden_file_matches_the_scenarios():
    if os.environ.get("CTX_REGEN_GOLDEN"):
        GOLDEN.write_text(json.dumps({n: _run(n) for n in SCENARIOS}, indent=1,
                                     sort_keys=True, ensure_ascii=False) + "\n")
    assert sorted(json.loads(GOLDEN.read_text())) == sorted(SCENARIOS)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_bundle_is_as_recorded(name):
    want = json.loads(GOLDEN.read_text())[name]
    got = json.loads(json.dumps(_run(name), sort_keys=True, ensure_ascii=False))
    for key in sorted(set(want) | set(got)):
        if key != "segments":
            assert got.get(key) == want.get(key), f"{name}: {key}"
    assert len(got["segments"]) == len(want["segments"]), f"{name}: segment count"
    for n, (g, w) in enumerate(zip(got["segments"], want["segments"], strict=True)):
        for field in sorted(set(g) | set(w)):
            assert g.get(field) == w.get(field), f"{name}: segment {n} ({w['kind']}) {field}"


def test_scenarios_exercise_every_stage():
    """The golden file is only worth its bytes if the scenarios reach each decision."""
    data = json.loads(GOLDEN.read_text())
    reasons = [s["reason"] for sc in data.values() for s in sc["segments"]]
    assert any("truncate_system" in r for r in reasons)
    assert any(r.startswith("kept:") for r in reasons)
    assert any(not s["kept"] for sc in data.values() for s in sc["segments"])
    assert any(s["trimmed"] for sc in data.values() for s in sc["segments"]
               if "truncate_system" not in s["reason"])
    assert any("older part of turn" in r for r in reasons)
    assert any("refilled as a preview" in r for r in reasons)
    assert any("refilled, it fits" in r for r in reasons)
    assert sum(1 for s in data["truncates_both"]["segments"] if "truncate_system" in s["reason"]) == 2
    cut = [s for s in data["truncates_to_marker"]["segments"] if s["kind"] == "system"][0]
    head, marker = cut["text"].split("\n… [truncated to fit the budget: 2,007 tokens")
    assert head and "SYSTEM SSSSSSSS".startswith(head) and cut["tokens"] == len(cut["text"])


def test_p0_overflow_message_is_exact():
    cands = _p0(3_000, 800)
    with pytest.raises(BudgetTooSmall) as err:
        build_context(None, cands, 1_000, tokenizer=Chars(), reserved_output=100)
    assert str(err.value) == (
        "budget too small: the P0 tier needs 3,867 tokens (system prompt 3,007, developer "
        "instructions 804, tool schema 47, current request 9) but only 900 are available "
        "(1,000 max - 100 reserved for output, chars); pass truncate_system=True (ctx context "
        "--truncate-system) to cut system and developer messages to fit, with a marker")
    with pytest.raises(BudgetTooSmall) as err:  # nothing to truncate: no hint
        build_context(None, [Segment("current_request", text="r" * 50, order=1, group="g")],
                      20, tokenizer=Chars())
    assert "truncate" not in str(err.value)
    with pytest.raises(BudgetTooSmall) as err:  # truncating cannot help enough: no hint either
        build_context(None, [Segment("system", text="s" * 10),
                             Segment("current_request", text="r" * 500, order=1, group="g")],
                      100, tokenizer=Chars(), truncate_system=True)
    assert "pass truncate_system" not in str(err.value)


def test_bad_eviction_orders_say_which_kind():
    with pytest.raises(ValueError, match=r"unknown kind 'nope' in eviction order"):
        build_context(None, [], 100, tokenizer=Chars(), eviction_order=("chatter", "nope"))
    with pytest.raises(ValueError, match=r"kind 'system' is P0 and can never be evicted"):
        build_context(None, [], 100, tokenizer=Chars(), eviction_order=("system",))
