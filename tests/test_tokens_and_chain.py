"""Token usage in `ctx stats` (per harness rule) and the Claude Code resume chain as `main`."""

from __future__ import annotations

import json

from ctxstore import ContextManager
from ctxstore.importers import import_paths
from ctxstore.objects import Event
from ctxstore.repo import Repository
from ctxstore.trace import normalize_usage, stats

from .test_state_from_transcripts import CLAUDE, CODEX, PI


def ev(type_, **payload):
    return Event(type_, "model", payload)


def test_normalize_usage_per_provider_shape():
    anthropic = {"input_tokens": 10, "cache_creation_input_tokens": 200,
                 "cache_read_input_tokens": 3000, "output_tokens": 7}
    assert normalize_usage(anthropic) == {"input": 3210, "output": 7, "cache_read": 3000,
                                          "cache_write": 200, "cost": None}
    openai = {"input_tokens": 1000, "cached_input_tokens": 900, "output_tokens": 50,
              "reasoning_output_tokens": 40, "total_tokens": 1050}
    assert normalize_usage(openai) == {"input": 1000, "output": 50, "cache_read": 900,
                                       "cache_write": 0, "cost": None}
    pi = {"input": 1, "output": 114, "cacheRead": 33637, "cacheWrite": 7594,
          "cost": {"total": 0.2}}
    assert normalize_usage(pi) == {"input": 41232, "output": 114, "cache_read": 33637,
                                   "cache_write": 7594, "cost": 0.2}
    assert normalize_usage(None)["input"] == 0 and normalize_usage({"input_tokens": "x"})["input"] == 0


def test_a_split_response_counts_once_with_its_newest_usage():
    u1 = {"input_tokens": 5, "cache_read_input_tokens": 100, "output_tokens": 1}
    u2 = {"input_tokens": 5, "cache_read_input_tokens": 100, "output_tokens": 40}
    s = stats([("a", ev("ModelResponseReceived", response_id="msg_1", usage=u1, model="m1")),
               ("b", ev("ModelResponseReceived", response_id="msg_1", usage=u2, model="m1")),
               ("c", ev("ModelResponseReceived", usage=u1, model="m2"))])
    tu = s["token_usage"]
    assert (tu["input_tokens"], tu["output_tokens"]) == (210, 41)
    assert tu["cache_read_tokens"] == 200 and tu["cost_usd"] is None
    assert tu["by_model"]["m1"]["output_tokens"] == 40 and tu["by_model"]["m2"]["input_tokens"] == 105


def test_running_totals_take_the_newest_and_split_by_model():
    t1 = {"input_tokens": 100, "cached_input_tokens": 50, "output_tokens": 10}
    t2 = {"input_tokens": 300, "cached_input_tokens": 200, "output_tokens": 30}
    s = stats([("a", Event("codex:event_msg", "system", {"usage_total": t1, "model": "gpt-a"})),
               ("b", Event("codex:event_msg", "system", {"usage_total": t2, "model": "gpt-b"}))])
    tu = s["token_usage"]
    assert (tu["input_tokens"], tu["output_tokens"], tu["cache_read_tokens"]) == (300, 30, 200)
    assert tu["by_model"]["gpt-a"]["input_tokens"] == 100 and tu["by_model"]["gpt-b"]["input_tokens"] == 200


def _file_stats(path):
    repo = Repository.memory()
    sid = import_paths(repo, [path]).sessions[0].session
    cm = ContextManager(repo, sid, "main")
    events = list(reversed(list(repo.graph.walk([cm.tip], first_parent=True))))
    return stats(events)["token_usage"]


def _claude_rule(path):
    """Item 4's rule straight from the lines: one usage per message.id, the newest line's."""
    usage = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        msg = rec.get("message")
        if rec.get("type") == "assistant" and isinstance(msg.get("usage"), dict):
            usage[msg.get("id")] = msg["usage"]
    return (sum(u["input_tokens"] + u.get("cache_creation_input_tokens", 0)
                + u.get("cache_read_input_tokens", 0) for u in usage.values()),
            sum(u["output_tokens"] for u in usage.values()))


def test_imported_token_usage_follows_each_harness_rule():
    tu = _file_stats(CLAUDE)
    assert (tu["input_tokens"], tu["output_tokens"]) == _claude_rule(CLAUDE)
    assert tu["cache_read_tokens"] > 0 and list(tu["by_model"]) == ["claude-sonnet-4-5-20250929"]
    newest = [json.loads(x) for x in CODEX.read_text().splitlines()][-1]["payload"]["info"]
    tu = _file_stats(CODEX)
    assert tu["input_tokens"] == newest["total_token_usage"]["input_tokens"]
    assert tu["output_tokens"] == newest["total_token_usage"]["output_tokens"]
    assert list(tu["by_model"]) == ["gpt-5.1-codex"]
    tu = _file_stats(PI)
    assert tu["input_tokens"] > 0 and tu["cost_usd"] > 0 and list(tu["by_model"]) == ["claude-opus-4-5"]


# -- the resume chain ------------------------------------------------------------------------

def _line(uuid, parent, type_="user", text=None, **extra):
    rec = {"type": type_, "uuid": uuid, "parentUuid": parent, "sessionId": "s1",
           "timestamp": f"2026-01-01T00:00:{len(uuid):02d}.000Z", "isSidechain": False,
           "cwd": "/w"}
    if type_ == "user":
        rec["message"] = {"role": "user", "content": text or f"prompt {uuid}"}
    elif type_ == "assistant":
        rec["message"] = {"id": f"msg_{uuid}", "role": "assistant", "model": "m",
                          "content": [{"type": "text", "text": text or f"answer {uuid}"}]}
    rec.update(extra)
    return json.dumps(rec)


def _main_lines(repo, sid):
    tip = repo.branches(sid)["main"]
    return {ev.payload["source"]["line"] for _eid, ev in repo.graph.walk([tip], first_parent=True)
            if isinstance(ev.payload.get("source"), dict)}


def test_queue_delivered_prompt_with_a_stale_parent_is_no_rewind(tmp_path):
    # u2 is typed while a1 is answering; it is delivered with the stale parent a1a, after the
    # turn was interrupted. Claude Code resumes u2 -> a1a -> u1; the interrupt marker and the
    # slash-command lines are no rewinds, and main must hold the whole resumed chain.
    lines = [
        _line("u1", None), _line("a1a", "u1", "assistant"), _line("a1b", "a1a", "assistant"),
        _line("i1", "a1b", text="[Request interrupted by user]"),
        _line("u2", "a1a", text="also handle the empty case"),
        _line("a2", "u2", "assistant"),
        _line("c1", "a2", text="<command-name>/exit</command-name>\n<command-args></command-args>"),
        _line("c2", "a2", text="<local-command-stdout>See ya!</local-command-stdout>"),
        _line("a3", "a2", "assistant", text="bye"),
    ]
    path = tmp_path / "s1.jsonl"
    path.write_text("\n".join(lines) + "\n")
    repo = Repository.memory()
    report = import_paths(repo, [path])
    sid = report.sessions[0].session
    assert set(repo.branches(sid)) == {"main"}
    assert {1, 2, 5, 6, 9} <= _main_lines(repo, sid)  # u1 a1a u2 a2 a3: the resumed chain


def test_a_real_rewind_stays_a_branch_and_main_is_the_resumed_chain(tmp_path):
    lines = [
        _line("u1", None), _line("a1", "u1", "assistant"),
        _line("u2", "a1", text="first try"), _line("a2", "u2", "assistant"),
        _line("u3", "a2", text="and then"), _line("a3", "u3", "assistant"),
        _line("u4", "a1", text="second try"), _line("a4", "u4", "assistant"),
    ]
    path = tmp_path / "s1.jsonl"
    path.write_text("\n".join(lines) + "\n")
    repo = Repository.memory()
    sid = import_paths(repo, [path]).sessions[0].session
    branches = repo.branches(sid)
    assert set(branches) == {"main", "rewind-u2"}  # one branch for the abandoned attempt
    assert _main_lines(repo, sid) == {1, 2, 7, 8}
    side = {ev.payload["source"]["line"] for _e, ev in repo.graph.walk([branches["rewind-u2"]],
                                                                      first_parent=True)
            if isinstance(ev.payload.get("source"), dict)}
    assert side == {1, 2, 3, 4, 5, 6}
