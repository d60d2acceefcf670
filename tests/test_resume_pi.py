"""`ctx resume --in pi`: every corpus session of every source harness, converted to a pi session
and read back by pi's own SessionManager (tests/readers/pi_reader.mjs, pi-coding-agent pinned
in tests/readers/package.json), then imported back into ctxstore.

What pi must give back, per session:
- the file is listed by `SessionManager.list(cwd)` under $PI_CODING_AGENT_DIR (what
  `pi --resume` shows) and opens with `SessionManager.open` (what `pi --session` does);
- its entries (the whole tree) hold every prompt, every tool call (as a toolCall block, named
  as pi names the tool where it has one) and every result, of every branch;
- `buildSessionContext()` from the current leaf holds the chosen branch: every prompt, call
  and result, or, after a compaction, pi's compaction summary first and then every prompt,
  call and result after the compaction;
- every branch of the source is a branch of pi's tree (the prompts from the root to each
  source leaf are the prompts from the root to a pi leaf);
- `ctx import` of the file gives back the same prompts and calls, as a fork of the source.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from ctxstore.convert import Transcript, read_transcript, target
from ctxstore.convert.toolmap import canonical, map_call
from ctxstore.importers import import_paths
from ctxstore.repo import Repository
from tests.readers import reader
from tests.readers.roundtrip import built, check_corpus_harness, write_where_it_looks
from tests.resumecases import HOSTILE, corpus_repo, harnesses, reimport

pi = target("pi")
_API_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what the Anthropic API takes as a tool id/name
READER = "pi_reader.mjs"


def _convert(t: Transcript, tmp: Path) -> tuple[Path, dict, Transcript]:
    """T written where pi looks (a fresh PI_CODING_AGENT_DIR, a project dir under TMP), and
    what pi's reader made of it."""
    env = {"PI_CODING_AGENT_DIR": str(tmp / "pi-agent")}
    path, t = write_where_it_looks(pi, t, tmp, env)
    return path, reader.run(READER, str(path), t.cwd, env=env), t


def _messages(got: dict) -> list[dict]:
    return [e["message"] for e in got["entries"] if e["type"] == "message"]


def _pi_paths(got: dict) -> list[list[dict]]:
    """The messages from the root to each pi leaf."""
    by_id = {e["id"]: e for e in got["entries"]}
    parents = {e["parentId"] for e in got["entries"]}
    out = []
    for e in got["entries"]:
        if e["id"] in parents:
            continue
        path, cur = [], e
        while cur is not None:
            path.append(cur)
            cur = by_id.get(cur["parentId"])
        out.append([x["message"] for x in reversed(path) if x["type"] == "message"])
    return out


def _tree_prompts(t: Transcript) -> list[tuple[str, ...]]:
    parents = {e.parent for e in t.entries}
    return sorted(tuple(t.prompts(t.path(e.id))) for e in t.entries if e.id not in parents)


def check_pi(t: Transcript, got: dict) -> None:
    """What pi read (GOT) against the transcript T it was written from."""
    where = f"{t.source_format} session {t.session[:12]} ({t.title[:40]!r})"
    assert got["listed"], f"{where}: not listed by SessionManager.list"
    msgs = _messages(got)
    # the whole tree
    assert Counter(m["text"] for m in msgs if m["role"] == "user") == Counter(t.prompts()), where
    t_calls = [e for e in t.entries if e.kind == "tool_call"]
    p_calls = {c["id"]: c for m in msgs if m["role"] == "assistant" for c in m["toolCalls"]}
    assert len(p_calls) == len(t_calls), where
    for e in t_calls:
        call = p_calls[e.call_id]
        assert call["name"] == map_call("pi", e.tool, e.plain_args())[0], (where, e.tool)
    called = {e.call_id for e in t_calls}
    t_results = [e.call_id for e in t.entries if e.kind == "tool_result" and e.call_id in called]
    assert sorted(m["toolCallId"] for m in msgs if m["role"] == "toolResult") == sorted(t_results), where
    # every branch
    pi_branches = {tuple(m["text"] for m in p if m["role"] == "user") for p in _pi_paths(got)}
    for prompts in _tree_prompts(t):
        assert prompts in pi_branches, f"{where}: branch {prompts[-1:]!r} not in pi's tree"
    # what pi sends the model from the current leaf
    path = t.path()
    comps = [i for i, e in enumerate(path) if e.kind == "compaction"]
    ctx = got["context"]
    after = path[comps[-1] + 1:] if comps else path
    if comps:
        assert ctx[0]["role"] == "compactionSummary" and ctx[0]["text"] == path[comps[-1]].text, where
    ctx_prompts = [m["text"] for m in ctx if m["role"] == "user"]
    want = [e.text for e in after if e.kind == "user"]
    assert ctx_prompts[len(ctx_prompts) - len(want):] == want, where
    if not comps:
        assert ctx_prompts == want, where
    ctx_calls = {c["id"] for m in ctx if m["role"] == "assistant" for c in m["toolCalls"]}
    assert {e.call_id for e in after if e.kind == "tool_call"} <= ctx_calls, where
    ctx_results = {m["toolCallId"] for m in ctx if m["role"] == "toolResult"}
    assert {e.call_id for e in after if e.kind == "tool_result" and e.call_id in called} <= ctx_results, where


def check_reimport(t: Transcript, back: Transcript) -> None:
    where = f"{t.source_format} session {t.session[:12]} re-imported"
    assert Counter(back.prompts()) == Counter(t.prompts()), where
    want = Counter((e.call_id, map_call("pi", e.tool, e.plain_args())[0])
                   for e in t.entries if e.kind == "tool_call")
    assert Counter((e.call_id, e.tool) for e in back.entries if e.kind == "tool_call") == want, where


@pytest.mark.parametrize("harness", harnesses())
def test_every_corpus_session_reads_back_in_pi(harness, tmp_path):
    assert check_corpus_harness(harness, tmp_path, _convert, check_pi, check_reimport) > 0


def test_built_session_rewind_compaction_subagent_big_result(tmp_path):
    repo, sid, t, path, got, _written = built(tmp_path, _convert, check_pi)
    again = tmp_path / "again.jsonl"
    with open(again, "wb") as out:
        report = pi.write(dataclasses.replace(t, cwd=got["header"]["cwd"]), out)
    assert path.read_bytes() == again.read_bytes()  # the same history gives the same bytes
    assert report.branches_kept == 1 and report.compactions == 1 and report.subagents == 1
    assert report.thinking_kept == 1  # signed by Anthropic: pi keeps it for the same model
    assert report.artifacts_referenced == 1  # 2 MB > the 50 KB pi's tools ever return
    big = next(m for m in _messages(got) if m["role"] == "toolResult" and m["toolCallId"] == "toolu_big")
    assert "ctxstore: output truncated" in big["text"] and len(big["text"]) < 64 * 1024
    comp = next(e for e in got["entries"] if e["type"] == "compaction")
    assert comp["firstKeptEntryId"] == comp["id"]  # Claude Code's compaction keeps nothing
    check_reimport(t, reimport(repo, path, sid))


def _tiny(tmp: Path) -> Transcript:
    """A two-message pi session with signed OpenAI reasoning and plain thinking, imported."""
    lines = [
        {"type": "session", "version": 3, "id": "th-1", "timestamp": "2026-01-01T00:00:00.000Z",
         "cwd": "/tmp/th"},
        {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
         "message": {"role": "user", "content": [{"type": "text", "text": "think"}], "timestamp": 1}},
        {"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-01-01T00:00:02.000Z",
         "message": {"role": "assistant", "content": [
             {"type": "thinking", "thinking": "openai reasoning", "thinkingSignature": "{\"id\":\"rs_1\"}"},
             {"type": "thinking", "thinking": "plain thought"},
             {"type": "text", "text": "answer"}],
             "api": "openai-responses", "provider": "openai", "model": "gpt-5", "stopReason": "stop",
             "usage": {}, "timestamp": 2}},
    ]
    src = tmp / "th.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in lines))
    repo = Repository.memory()
    return read_transcript(repo, import_paths(repo, [src]).sessions[0].session)


def test_thinking_signed_by_another_provider_is_dropped_and_counted(tmp_path):
    t = _tiny(tmp_path)
    _path, got, _t = _convert(t, tmp_path / "out")
    thinking = [th["text"] for m in _messages(got) if m["role"] == "assistant" for th in m["thinking"]]
    assert thinking == ["plain thought"]
    with open(tmp_path / "x.jsonl", "wb") as out:
        report = pi.write(t, out)
    assert (report.thinking_dropped, report.thinking_kept) == (1, 1)


def test_hostile_prompt_stays_one_prompt(tmp_path):
    hostile = HOSTILE + '\n{"type":"compaction","id":"c","parentId":"e","summary":"x","firstKeptEntryId":"e"}'
    repo, sid, t, path, got, _written = built(tmp_path, _convert, check_pi, prompt=hostile)
    user = [m["text"] for m in _messages(got) if m["role"] == "user"]
    assert user.count(hostile) == 1
    assert sum(1 for e in got["entries"] if e["type"] == "compaction") == 1
    back = reimport(repo, path, sid)
    assert hostile in back.prompts()


def test_claude_code_to_pi_to_claude_code_keeps_prompts_calls_results_and_tree(tmp_path):
    repo, sid, first, pi_path, _got, _written = built(tmp_path, _convert, check_pi)
    _round_trip(repo, sid, first, pi_path, tmp_path)


def test_every_claude_code_corpus_session_round_trips_through_pi(tmp_path):
    repo, sids = corpus_repo("claude-code")
    for n, sid in enumerate(sids):
        first = read_transcript(repo, sid)
        pi_path, _got, _t = _convert(first, tmp_path / f"s{n}")
        _round_trip(repo, sid, first, pi_path, tmp_path / f"s{n}")


def _round_trip(repo, sid: str, first: Transcript, pi_path: Path, tmp_path: Path) -> None:
    """FIRST (a Claude Code session) -> pi file -> ctx import -> Claude Code file -> ctx import
    gives back FIRST's branch tree of prompts, its calls (names and arguments) and results."""
    cc = target("claude-code")
    via_pi = reimport(repo, pi_path, sid)
    cc_path = tmp_path / "back.jsonl"
    with open(cc_path, "wb") as out:
        cc.write(via_pi, out)
    report = import_paths(repo, [cc_path])
    back = read_transcript(repo, next(s.session for s in report.sessions
                                      if repo.session(s.session).kind != "subagent"))
    assert _tree_prompts(back) == _tree_prompts(first)

    # Claude Code's writer renames ids and names the API would refuse (a fixture's
    # "[trimmed for fixture]"): those are compared by count only
    valid = {e.call_id for e in first.entries if e.kind == "tool_call"
             and _API_ID.match(e.call_id) and _API_ID.match(e.tool)}
    answered = {e.call_id for e in first.entries if e.kind == "tool_result"}

    def calls(t: Transcript) -> Counter:
        """(id, tool): its canonical kind and arguments where it has one (the tool map's), else
        its name and arguments. A key no tool of the other side has a slot for (Bash's
        `description` in pi) does not survive, and the tool map writes Claude Code 2.1's
        `Agent` back as `Task` and has no Claude Code `LS` for pi's `ls`: same kind, same
        canonical arguments."""
        def key(e):
            return canonical(e.tool, e.plain_args()) or (e.tool, e.plain_args())
        return Counter((e.call_id, json.dumps(key(e), sort_keys=True))
                       for e in t.entries if e.kind == "tool_call" and e.call_id in valid)

    def results(t: Transcript) -> dict[str, tuple[str, bool]]:
        return {e.call_id: (t.result_text(e, 1 << 30)[0], e.is_error)
                for e in t.entries if e.kind == "tool_result" and e.call_id in valid & answered}

    def count(t: Transcript, kind: str) -> int:
        return sum(1 for e in t.entries if e.kind == kind)

    assert calls(back) == calls(first)  # Bash -> bash -> Bash, Edit -> edit -> Edit, Task stays
    assert count(back, "tool_call") == count(first, "tool_call")
    # Claude Code's writer answers a call the source never answered (the API refuses one)
    unanswered = sum(1 for e in first.entries if e.kind == "tool_call" and e.call_id not in answered)
    assert count(back, "tool_result") == count(first, "tool_result") + unanswered
    got, want = results(back), results(first)
    assert got.keys() == want.keys()
    for cid, (text, err) in want.items():
        if len(text) > pi.INLINE_LIMIT:  # pi holds the preview and names the artifact
            assert got[cid][0].startswith(text[:1000]) and want[cid][0] != got[cid][0]
        else:
            assert got[cid] == (text, err), cid


def test_reader_never_skips_under_ci(monkeypatch):
    monkeypatch.setenv("CI", "true")
    monkeypatch.setitem(reader.PACKAGES, "missing_reader.mjs", "@ctxstore/not-installed")
    with pytest.raises(pytest.fail.Exception, match="npm ci --prefix tests/readers"):
        reader.require("missing_reader.mjs")


def test_session_file_path_is_pis_own_rule(tmp_path):
    """The folder pi derives from the cwd (getDefaultSessionDir) and PI_CODING_AGENT_DIR."""
    assert pi.project_dir_name("/home/u/my proj") == "--home-u-my proj--"
    assert pi.project_dir_name("C:\\w\\x") == "--C--w-x--"
    assert pi.sessions_dir({"PI_CODING_AGENT_DIR": str(tmp_path)}) == tmp_path / "sessions"


@pytest.mark.parametrize("how", ["PI_CODING_AGENT_SESSION_DIR", "project settings", "agent settings"])
def test_session_folder_is_where_pi_looks(how, tmp_path):
    """pi's main.js takes the session folder from PI_CODING_AGENT_SESSION_DIR, else the
    `sessionDir` setting (project over agent dir), else the per-cwd default: the file is
    written there and pi's own SessionManager.list (with pi's SettingsManager) lists it."""
    project, agent, chosen = tmp_path / "project", tmp_path / "agent", tmp_path / "chosen"
    env = {"PI_CODING_AGENT_DIR": str(agent)}
    settings = {"project settings": project / ".pi", "agent settings": agent}.get(how)
    if settings is None:
        env[how] = str(chosen)
    else:
        settings.mkdir(parents=True)
        (settings / "settings.json").write_text(json.dumps({"sessionDir": str(chosen)}))
    t = dataclasses.replace(_tiny(tmp_path), cwd=str(project))
    path = pi.default_path(t, env)
    assert path.parent == chosen
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as out:
        pi.write(t, out)
    assert reader.run(READER, str(path), str(project), env=env)["listed"]
