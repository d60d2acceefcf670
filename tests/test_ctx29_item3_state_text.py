"""Issue 29 item 3: text `ctx state` prints the facts and decisions its help promises."""

from __future__ import annotations

import json

from .clitools import Ctx
from .test_ctx29_item2_merge_carries_state import FACT, _tour_until_merge


def test_state_text_prints_facts_and_decisions(tmp_path):
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new", "--title", "t", "--goal", "make the parser test pass")
    patch = {"facts_add": ["tabs count as whitespace",
                           {"content": "the lexer is hand-written", "confidence": 0.6}],
             "decisions_add": [{"decision": "split on str.split()",
                                "rationale": "it already handles tabs"}, "keep the old API"]}
    ctx("append", "StateUpdated", "--payload", json.dumps({"patch": patch}))
    out = ctx("state").stdout
    assert "Fact: tabs count as whitespace\n" in out
    assert "Fact: the lexer is hand-written  (confidence 0.6)" in out
    assert "Decision: split on str.split()  (because: it already handles tabs)" in out
    assert "Decision: keep the old API\n" in out
    # the order the help gives: goal, plan, constraints, facts, decisions, files, ...
    assert out.index("Goal:") < out.index("Fact:") < out.index("Decision:")
    assert "facts, decisions" in ctx("state", "--help").stdout


def test_readme_tour_state_prints_the_merged_fact(tmp_path):
    ctx = _tour_until_merge(tmp_path)
    assert FACT not in ctx("state").stdout
    ctx("merge", "try-b")
    assert f"Fact: {FACT}" in ctx("state").stdout
