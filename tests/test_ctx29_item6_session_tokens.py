"""Issue 29 item 6: `ctx stats` reports what the whole session spent (`token_usage`: every
branch, each provider response once, by the per-harness rules) and the branch's own share
(`branch_token_usage`)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxstore import ContextManager, Repository
from ctxstore.porcelain.context import stats as stats_at

from .clitools import Ctx
from .corpus import require_corpus

REWIND = "claude-code/FIXTURE_claude-code-log_dag-rewind-branch-compact-boundary.jsonl"
EXPERIMENTS = "claude-code/ccl_experiments-ideas_progress-file-history-snapshot_v2.1.42.jsonl"


def _file_usage(path) -> tuple[int, int]:
    """What the file records: each assistant message id's usage once (its newest line), input
    = input + cache creation + cache read; read here from the JSONL, sharing no code."""
    usage = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line) if line.strip() else {}
        msg = rec.get("message") if isinstance(rec.get("message"), dict) else {}
        if rec.get("type") == "assistant" and isinstance(msg.get("usage"), dict):
            usage[msg.get("id") or id(rec)] = msg["usage"]
    inp = sum(u.get("input_tokens", 0) + u.get("cache_creation_input_tokens", 0)
              + u.get("cache_read_input_tokens", 0) for u in usage.values())
    return inp, sum(u.get("output_tokens", 0) for u in usage.values())


def _pair(tu) -> tuple[int, int]:
    return tu["input_tokens"], tu["output_tokens"]


def test_rewind_fixture_counts_every_branch_once(tmp_path):
    ctx = Ctx(tmp_path)
    path = require_corpus() / REWIND
    ctx.import_alone(path)
    assert _file_usage(path) == (50, 25)
    main = ctx.json("stats")
    assert _pair(main["token_usage"]) == (50, 25)  # was 40/20: the checked-out branch only
    assert _pair(main["branch_token_usage"]) == (40, 20)
    assert main["token_usage"]["branches"] == 2
    (other,) = [b for b in ctx.json("branch")["branches"] if b != "main"]
    ctx("checkout", other)
    side = ctx.json("stats")
    assert _pair(side["token_usage"]) == (50, 25)
    assert _pair(side["branch_token_usage"]) == (20, 10)  # "Start" and the first attempt
    out = ctx("stats").stdout
    assert "Tokens (session, 2 branches): 50 in" in out and "Tokens (this branch): 20 in" in out


def test_a_larger_rewound_session_costs_what_its_file_records(tmp_path):
    ctx = Ctx(tmp_path)
    path = require_corpus() / EXPERIMENTS
    ctx.import_alone(path)
    s = ctx.json("stats")
    assert _pair(s["token_usage"]) == _file_usage(path) == (248_665, 88)
    assert _pair(s["branch_token_usage"]) == (164_917, 60)
    by_model = s["token_usage"]["by_model"]
    assert sum(m["input_tokens"] for m in by_model.values()) == 248_665


def test_one_branch_sessions_are_unchanged(tmp_path):
    ctx = Ctx(tmp_path)
    ctx.import_alone(require_corpus() / "codex/rollout-genuine_v0.58.0_chatbot-ui-lmstudio_019a93b9.jsonl")
    s = ctx.json("stats")
    assert s["token_usage"]["branches"] == 1
    assert _pair(s["token_usage"]) == _pair(s["branch_token_usage"]) == (1_099_261, 22_305)


def _usage(i: int, o: int) -> dict:
    return {"input_tokens": i, "output_tokens": o}


@settings(max_examples=50, deadline=None)
@given(main=st.lists(st.integers(1, 50), min_size=1, max_size=6),
       fork_at=st.integers(0, 5), side=st.lists(st.integers(1, 50), max_size=6),
       repeat=st.booleans())
def test_property_responses_count_once_per_session(main, fork_at, side, repeat):
    """Responses on a tree of branches: the session counts each response id once; each
    branch counts its own line; one branch alone gives both the same figures."""
    cm = ContextManager.start(Repository.memory(), "t", "g")
    ids = []
    for k, n in enumerate(main):
        ids.append(cm.append_event("ModelResponseReceived", "model",
                                   {"usage": _usage(n, 1), "response_id": f"m{k}", "model": "x"}))
    at = ids[min(fork_at, len(ids) - 1)]
    b = cm.fork("side", at=at)
    for k, n in enumerate(side):
        b.append_event("ModelResponseReceived", "model",
                       {"usage": _usage(n, 1), "response_id": f"s{k}", "model": "x"})
    if repeat and side:  # a response split over lines: its newest record counts, once
        b.append_event("ModelResponseReceived", "model",
                       {"usage": _usage(side[-1], 1), "response_id": f"s{len(side) - 1}"})
    on_side = main[:min(fork_at, len(main) - 1) + 1] + side
    s_main, s_side = stats_at(cm.repo, cm.tip), stats_at(cm.repo, b.tip)
    want = (sum(main) + sum(side), len(main) + len(side))
    assert _pair(s_main["token_usage"]) == _pair(s_side["token_usage"]) == want
    assert _pair(s_main["branch_token_usage"]) == (sum(main), len(main))
    assert _pair(s_side["branch_token_usage"]) == (sum(on_side), len(on_side))


@settings(max_examples=50, deadline=None)
@given(main=st.lists(st.integers(0, 40), min_size=1, max_size=6), fork_at=st.integers(0, 5),
       side=st.lists(st.integers(0, 40), max_size=6))
def test_property_running_totals_add_what_each_branch_spent_after_forking(main, fork_at, side):
    """Codex-style running totals: on one line the newest total (the old rule); a branch adds
    only its growth past the report it forked after."""
    cm = ContextManager.start(Repository.memory(), "t", "g")
    totals, ids, t = [], [], 0
    for g in main:
        t += g
        totals.append(t)
        ids.append(cm.append_event("codex:event_msg", "system",
                                   {"usage_total": {"input_tokens": t, "output_tokens": t}}))
    k = min(fork_at, len(ids) - 1)
    b = cm.fork("side", at=ids[k])
    t = totals[k]
    for g in side:
        t += g
        b.append_event("codex:event_msg", "system",  # "line": not the same event as main's
                       {"usage_total": {"input_tokens": t, "output_tokens": t}, "line": "side"})
    spent = totals[-1] + (t - totals[k])
    s_main, s_side = stats_at(cm.repo, cm.tip), stats_at(cm.repo, b.tip)
    assert _pair(s_main["token_usage"]) == _pair(s_side["token_usage"]) == (spent, spent)
    assert _pair(s_main["branch_token_usage"]) == (totals[-1], totals[-1])
    assert _pair(s_side["branch_token_usage"]) == (t, t)
