"""The context builder at its edges: exact fits, ties, the refill's chains, turns cut in the
middle, the current turn's tool output, P0 truncation with other tokenizers, decided segments
fed back in. Each test states a property a user sees in the bundle (what is kept, its reason,
the budget); they were written from the survivors of a mutation run (docs/testing.md, round 4),
where the property tests and the golden bundles held for a wrong decision."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ctxstore.context import Segment, build_context
from ctxstore.context.builder import preview
from ctxstore.context.tokenizer import default_tokenizer
from ctxstore.errors import BudgetTooSmall


class Chars:
    """One token per character."""

    name = "chars"

    def count(self, text: str) -> int:
        return len(text)


class Words:
    """One token per whitespace-separated word: a tokenizer whose marker is cheap."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


TOK = Chars()
WHOLE_TURN = "dropped: over budget, whole turn evicted by order step 1 (turn)"
REFILLED = "kept: refilled, it fits in the room left after eviction"


def by_source(bundle) -> dict[str, Segment]:
    return {s.sources[0]: s for s in bundle.segments}


def request(text="now", group="g9"):
    """The current request as candidates_from_history makes it: sources (event, message)."""
    return Segment("current_request", text=text, order=10_000, group=group,
                   sources=(group, f"msg-{group}"))


def pair(name, size, order, group="g9", kind="turn", tcid=None):
    return Segment(kind, text=name[0] * size, order=order, group=group,
                   tool_call_id=name if tcid is None else tcid, sources=(name,))


# -- preview and trim ------------------------------------------------------------------------

def test_preview_is_the_texts_own_head():
    assert preview("  indented\n" + "x" * 500, 9).startswith("  indented\nxxx")
    # the head is cut at 400 characters and loses trailing blanks only
    assert preview("a" * 399 + " " + "b" * 100, 30) == (
        "a" * 399 + " … [trimmed from 30 tokens; full text in sources]")


def test_a_preview_no_smaller_than_the_text_is_not_used():
    """At 450 characters the preview (400 + the note) is as long as the text: the segment stays
    whole while a bigger one of the same kind is trimmed."""
    assert len(preview("a" * 450, 450)) == 450
    cands = [request("r"), Segment("fact", text="a" * 450, order=1, sources=("fa",)),
             Segment("fact", text="b" * 2000, order=2, sources=("fb",))]
    b = build_context(None, cands, 1_000, tokenizer=TOK)
    s = by_source(b)
    assert s["fa"].kept and not s["fa"].trimmed and s["fa"].text == "a" * 450
    assert s["fa"].reason == "kept: P2 fact within budget"
    assert s["fb"].trimmed and s["fb"].tokens == 451 and b.used_tokens == 902


def test_an_eviction_order_naming_a_kind_twice_trims_once():
    cands = [request("r"), Segment("goal", text="g" * 600, sources=("goal",)),
             Segment("fact", text="a" * 2000, order=1, sources=("fa",)),
             Segment("fact", text="b" * 2000, order=2, sources=("fb",))]
    b = build_context(None, cands, 500, tokenizer=TOK, eviction_order=("fact", "fact"))
    s = by_source(b)
    assert not s["fa"].kept and not s["fb"].kept and not s["goal"].kept
    assert s["goal"].reason.startswith("dropped: over budget, fallback eviction (P1 goal")
    assert b.used_tokens == 1 and b.eviction_order == ("fact", "fact")


# -- eviction order and ties -----------------------------------------------------------------

def test_eviction_takes_the_lowest_order_first_whatever_the_candidate_position():
    cands = [request("r"), Segment("fact", text="n" * 50, order=2, sources=("newer",)),
             Segment("fact", text="o" * 50, order=1, sources=("older",))]
    s = by_source(build_context(None, cands, 60, tokenizer=TOK))
    assert not s["older"].kept and s["newer"].kept


def test_ties_keep_candidate_order_in_the_bundle():
    cands = [Segment("fact", text=f"fact {k}", order=0, sources=(f"f{k}",)) for k in range(5)]
    b = build_context(None, cands, 1_000, tokenizer=TOK)
    assert [s.sources[0] for s in b.segments] == ["f0", "f1", "f2", "f3", "f4"]


def test_fallback_drops_p1_kinds_the_order_leaves_out():
    cands = [request("r"), Segment("chatter", text="c" * 20, order=1, sources=("c",)),
             Segment("plan", text="p" * 100, sources=("plan",))]
    b = build_context(None, cands, 50, tokenizer=TOK, eviction_order=("chatter",))
    s = by_source(b)
    assert s["c"].reason == "dropped: over budget, evicted by order step 1 (chatter)"
    assert s["plan"].reason == ("dropped: over budget, fallback eviction (P1 plan is not in "
                                "the eviction order)")
    assert b.used_tokens == 1


def test_a_state_segment_sharing_a_tool_call_id_is_not_part_of_the_pair():
    """Only conversation segments form a call/result unit: a fact that names the call is
    dropped and refilled on its own."""
    cands = [request("r"),
             pair("t1", 30, 1, group="g1"), Segment("turn", text="x" * 30, order=2, group="g1",
                                                    tool_call_id="t1", sources=("t1-result",)),
             Segment("fact", text="f" * 20, order=0, tool_call_id="t1", sources=("fact",))]
    b = build_context(None, cands, 45, tokenizer=TOK, eviction_order=("fact", "turn"))
    s = by_source(b)
    assert s["fact"].kept and s["fact"].reason == REFILLED
    assert not s["t1"].kept and not s["t1-result"].kept
    assert s["t1"].reason == s["t1-result"].reason == \
        "dropped: over budget, whole turn evicted by order step 2 (turn)"
    assert b.used_tokens == 21


# -- turns -----------------------------------------------------------------------------------

def test_turn_step_cuts_the_current_turns_tool_output():
    """The current turn's pairs may be tool_output (a big result): the turn step cuts them,
    oldest first, like the turn's own pairs, and the request says so."""
    cands = [Segment("turn", text="u" * 20, order=1, group="g1", sources=("g1",))]
    cands += [pair(f"n{k}", 50, 101 + k, kind="tool_output") for k in range(5)]
    cands.append(request())
    b = build_context(None, cands, 150, tokenizer=TOK, eviction_order=("turn",))
    s = by_source(b)
    cut = ("dropped: over budget, an older part of turn g9 evicted by order step 1 (turn); "
           "its request and newest pairs are kept")
    assert [s[f"n{k}"].reason for k in range(3)] == [cut] * 3
    assert s["n3"].kept and s["n4"].kept
    assert s["g9"].reason == ("P0: current request, never dropped; its turn was cut to fit: 3 "
                              "older segment(s) (3 tool pair(s), 150 tokens) dropped, the "
                              "newest kept")
    assert s["g1"].kept and s["g1"].reason == REFILLED and b.used_tokens == 123


def test_turn_step_leaves_groups_without_a_turn_segment_to_their_kind():
    """An older group holding only chatter is not a turn: with "turn" alone in the order it
    stays, and the current turn is cut instead."""
    cands = [Segment("turn", text="u" * 20, order=1, group="g1", sources=("g1",)),
             Segment("chatter", text="c" * 40, order=5, group="g2", sources=("g2",))]
    cands += [pair(f"n{k}", 50, 101 + k, kind="tool_output") for k in range(5)]
    cands.append(request())
    b = build_context(None, cands, 150, tokenizer=TOK, eviction_order=("turn",))
    s = by_source(b)
    assert s["g2"].kept and s["g2"].reason == "kept: P3 chatter within budget"
    assert [s[f"n{k}"].kept for k in range(5)] == [False, False, False, True, True]
    assert b.used_tokens <= 150


def test_a_turn_is_cut_oldest_first_by_order_not_by_candidate_position():
    cands = [request("do it")] + [pair(f"t{k}", 100, 10 + k) for k in reversed(range(10))]
    b = build_context(None, cands, 505, tokenizer=TOK)
    kept = sorted(s.tool_call_id for s in b.segments if s.kept and s.kind == "turn")
    assert kept == ["t5", "t6", "t7", "t8", "t9"] and b.used_tokens == 505


def test_an_older_turn_cut_in_the_middle_keeps_its_prompt_and_says_so():
    """Its prompt (the event that opened the turn, with its message id as second source)
    stays with the newest pairs; the group id is shortened to 12 characters in reasons."""
    g = "ev-0123456789abcdef"
    cands = [Segment("turn", text="p" * 20, order=1, group=g, sources=(g, "msg-1")),
             Segment("turn", text="t" * 60, order=2, group=g, sources=("answer",))]
    cands += [pair(f"a{k}", 50, 3 + k, group=g) for k in range(4)]
    cands.append(request())
    b = build_context(None, cands, 120, tokenizer=TOK, eviction_order=("turn",))
    s = by_source(b)
    assert s[g].kept and s[g].reason == (
        "kept: P1 turn within budget; its turn was cut to fit: 4 older segment(s) "
        "(3 tool pair(s), 210 tokens) dropped, the newest kept")
    assert not s["answer"].kept
    assert [s[f"a{k}"].kept for k in range(4)] == [False, False, False, True]
    assert s["a0"].reason == ("dropped: over budget, an older part of turn ev-012345678 "
                              "evicted by order step 1 (turn); its request and newest pairs "
                              "are kept")
    assert s["g9"].reason == "P0: current request, never dropped" and b.used_tokens == 73


def test_a_turn_whose_prompt_alone_overflows_goes_whole():
    cands = [Segment("turn", text="p" * 100, order=1, group="g1", sources=("g1", "m1")),
             pair("a0", 10, 2, group="g1"), request()]
    b = build_context(None, cands, 10, tokenizer=TOK, eviction_order=("turn",))
    s = by_source(b)
    assert not s["g1"].kept and not s["a0"].kept
    assert s["g1"].reason == s["a0"].reason == WHOLE_TURN
    assert b.used_tokens == 3


def test_a_current_turn_whose_pairs_must_all_go_is_evicted_whole():
    """Dropping every pair of the current turn still leaves the bundle over: the pairs go as a
    whole turn (the P0 request is no part of that sum), then the fallback takes the rest."""
    cands = [request("r" * 100)] + [pair(f"n{k}", 50, 101 + k, kind="tool_output")
                                    for k in range(5)]
    cands.append(Segment("goal", text="g" * 30, sources=("goal",)))
    b = build_context(None, cands, 129, tokenizer=TOK, eviction_order=("turn",))
    s = by_source(b)
    assert [s[f"n{k}"].reason for k in range(5)] == [WHOLE_TURN] * 5
    assert s["g9"].reason == "P0: current request, never dropped"
    assert s["goal"].reason.startswith("dropped: over budget, fallback eviction (P1 goal")
    assert b.used_tokens == 100


def test_a_bundle_filling_the_budget_to_the_token_drops_nothing():
    cands = [request("r" * 10), Segment("fact", text="f" * 40, sources=("fact",)),
             Segment("chatter", text="c" * 50, order=1, sources=("chat",))]
    b = build_context(None, cands, 100, tokenizer=TOK)
    assert [s.reason for s in b.segments] == [
        "kept: P2 fact within budget", "kept: P3 chatter within budget",
        "P0: current request, never dropped"]
    assert b.used_tokens == 100


# -- refill ----------------------------------------------------------------------------------

def test_refill_goes_on_through_a_turns_drops_and_takes_exact_fits():
    """A turn drops by age: after the newest cut pair does not fit back, older smaller ones
    do, the last one filling the room to the token."""
    cands = [request(), pair("a0", 10, 1), pair("a1", 10, 2), pair("a2", 100, 3),
             pair("a3", 30, 4)]
    b = build_context(None, cands, 53, tokenizer=TOK)
    s = by_source(b)
    assert not s["a2"].kept and s["a0"].reason == s["a1"].reason == REFILLED
    assert s["a3"].kept and b.used_tokens == 53


def test_refill_takes_a_one_token_segment_into_a_one_token_room():
    cands = [request(), pair("a0", 1, 1), pair("a1", 100, 2), pair("a2", 30, 3)]
    b = build_context(None, cands, 34, tokenizer=TOK)
    s = by_source(b)
    assert s["a0"].kept and s["a0"].reason == REFILLED and not s["a1"].kept
    assert b.used_tokens == 34


def test_refill_passes_over_a_refilled_pairs_other_half():
    """A call and its result given as two segments come back together; the refill then goes
    on to older drops, and the request's note counts only what stayed out."""
    def half(tcid, size, order, src):
        return Segment("turn", text="h" * size, order=order, group="g9", tool_call_id=tcid,
                       sources=(src,))

    cands = [request(), Segment("turn", text="x" * 5, order=1, group="g9", sources=("x",)),
             half("A", 5, 2, "A-call"), half("A", 5, 3, "A-result"),
             half("B", 50, 4, "B-call"), half("B", 50, 5, "B-result"),
             pair("d", 30, 6)]
    b = build_context(None, cands, 60, tokenizer=TOK)
    s = by_source(b)
    assert s["x"].kept and s["A-call"].kept and s["A-result"].kept
    assert not s["B-call"].kept and not s["B-result"].kept
    # the request tells what the cut dropped for good: not what the refill brought back
    assert s["g9"].reason == ("P0: current request, never dropped; its turn was cut to fit: "
                              "2 older segment(s) (1 tool pair(s), 100 tokens) dropped, the "
                              "newest kept")
    assert b.used_tokens == 3 + 5 + 10 + 30


def test_refill_chain_after_a_preview():
    """Tool output dropped to make room comes back as a preview; the one dropped before it
    comes back whole if it fits in what is left, and only then."""
    def cands(older):
        return [request("r" * 10), pair("o1", older, 1, group="", kind="tool_output"),
                pair("o2", 1_000, 2, group="", kind="tool_output"),
                Segment("chatter", text="c" * 40, order=3, sources=("c",))]

    b = build_context(None, cands(50), 700, tokenizer=TOK)
    s = by_source(b)
    assert s["o2"].trimmed and s["o2"].tokens == 451 and s["o1"].reason == REFILLED
    assert b.used_tokens == 10 + 451 + 50 + 40
    b = build_context(None, cands(220), 700, tokenizer=TOK)  # 220 > the 199 left
    s = by_source(b)
    assert s["o2"].trimmed and not s["o1"].kept and b.used_tokens == 10 + 451 + 40


def test_refill_preview_fits_the_room_or_stays_dropped():
    n = len(preview("o" * 2_000, 2_000))
    cands = [request("r"), pair("o", 2_000, 1, group="", kind="tool_output")]
    exact = build_context(None, cands, 1 + n, tokenizer=TOK)
    assert by_source(exact)["o"].trimmed and exact.used_tokens == 1 + n
    short = build_context(None, cands, n, tokenizer=TOK)
    assert not by_source(short)["o"].kept and short.used_tokens == 1


def test_refill_never_previews_chatter():
    """Chatter is not trimmable: what does not fit whole stays dropped."""
    cands = [request("r"), Segment("chatter", text="c" * 1_000, order=1, sources=("c",))]
    b = build_context(None, cands, 500, tokenizer=TOK, eviction_order=("chatter",))
    c = by_source(b)["c"]
    assert not c.kept and c.text == "" and b.used_tokens == 1


# -- P0 and its truncation -------------------------------------------------------------------

def test_p0_segments_of_other_kinds_are_named_by_kind():
    """A pinned fact (tier 0) is P0 like a system prompt: kept, and named in an overflow."""
    fact = Segment("fact", text="f" * 30, tier=0, sources=("pinned",))
    b = build_context(None, [fact, request("r")], 100, tokenizer=TOK)
    assert by_source(b)["pinned"].reason == "P0: fact, never dropped"
    schemas = [Segment("tool_schema", text="k" * n, sources=(f"s{n}",)) for n in (40, 50)]
    with pytest.raises(BudgetTooSmall) as err:
        build_context(None, [fact, *schemas, request("r")], 100, tokenizer=TOK)
    assert str(err.value) == ("budget too small: the P0 tier needs 121 tokens (tool schema 90, "
                              "fact 30, current request 1) but only 100 are available (100 max "
                              "- 0 reserved for output, chars)")


def test_truncation_cuts_the_largest_system_message_first():
    cands = [Segment("system", text="S" * 100, sources=("sys",)),
             Segment("developer", text="D" * 1_000, sources=("dev",)), request("r")]
    b = build_context(None, cands, 600, tokenizer=TOK, truncate_system=True)
    s = by_source(b)
    assert s["sys"].text == "S" * 100 and not s["sys"].trimmed
    assert s["dev"].trimmed and s["dev"].text.startswith("D" * 400)
    assert b.used_tokens == 600


def test_truncation_of_one_token_over():
    cands = [Segment("system", text="S" * 500, sources=("sys",)), request("r")]
    b = build_context(None, cands, 500, tokenizer=TOK, truncate_system=True)
    assert by_source(b)["sys"].trimmed and b.used_tokens == 500


def test_truncation_keeps_the_texts_own_head():
    text = "   Indented rules.\n" + "rule " * 400
    cands = [Segment("system", text=text, sources=("sys",)), request("r")]
    b = build_context(None, cands, 500, tokenizer=TOK, truncate_system=True)
    head = by_source(b)["sys"].text.split("\n… [truncated to fit the budget")[0]
    assert head and text.startswith(head) and b.used_tokens <= 500


def test_truncation_that_cannot_fit_the_marker_is_a_clear_error():
    """Cutting the system prompt to its marker alone still does not fit: BudgetTooSmall."""
    cands = [Segment("system", text="S" * 200, sources=("sys",)), request("r" * 100)]
    with pytest.raises(BudgetTooSmall, match="the P0 tier needs"):
        build_context(None, cands, 150, tokenizer=TOK, truncate_system=True)


def test_room_left_beside_a_truncated_system_prompt_is_used():
    """With a tokenizer whose marker is cheap the cut leaves room: what fits in it is kept,
    and the bundle's count is the truncated size."""
    cands = [Segment("system", text="word " * 1_000, sources=("sys",)), request("r"),
             Segment("goal", text="ship it", sources=("goal",))]
    b = build_context(None, cands, 300, tokenizer=Words(), truncate_system=True)
    s = by_source(b)
    assert s["sys"].trimmed and s["goal"].kept
    assert b.used_tokens == s["sys"].tokens + 1 + 2 <= 300
    assert s["sys"].tokens == Words().count(s["sys"].text)


# -- the bundle ------------------------------------------------------------------------------

def test_default_tokenizer_and_stamps_without_a_state():
    b = build_context(None, [request("r")], 100)
    assert b.tokenizer == default_tokenizer().name
    assert (b.state_event, b.state_version) == ("", 0)
    b = build_context(SimpleNamespace(source_event=None, version=None), [request("r")], 100)
    assert (b.state_event, b.state_version) == ("", 0)


def test_budget_too_small_without_system_messages_ends_at_the_tokenizer():
    with pytest.raises(BudgetTooSmall) as err:
        build_context(None, [request("r" * 50)], 20, tokenizer=TOK)
    assert str(err.value) == ("budget too small: the P0 tier needs 50 tokens (current request "
                              "50) but only 20 are available (20 max - 0 reserved for output, "
                              "chars)")


def test_decided_segments_fed_back_are_decided_again():
    """Segments of an earlier bundle (kept, trimmed) given as candidates: every decision is
    made afresh, none carried over."""
    cands = [request("r"), Segment("fact", text="f" * 2_000, order=1, sources=("big",)),
             Segment("fact", text="s" * 10, order=2, sources=("small",)),
             Segment("chatter", text="c" * 30, order=3, sources=("chat",))]
    first = build_context(None, cands, 500, tokenizer=TOK)
    assert by_source(first)["big"].trimmed
    carried = [Segment.from_dict({**s.to_dict(), "text": c.text, "messages": c.messages})
               for s, c in zip(first.segments, sorted(cands, key=lambda c: (c.section, c.order)),
                               strict=True)]
    again = build_context(None, carried, 30, tokenizer=TOK)
    s = by_source(again)
    assert not s["big"].kept and not s["big"].trimmed
    assert not s["chat"].kept and not s["chat"].trimmed
    assert s["small"].kept and not s["small"].trimmed and s["small"].text == "s" * 10
    roomy = by_source(build_context(None, carried, 10_000, tokenizer=TOK))
    assert roomy["big"].kept and not roomy["big"].trimmed and roomy["big"].text == "f" * 2_000
    assert roomy["big"].reason == "kept: P2 fact within budget"
