"""`ctx resume --in claude-code`, read back by the Claude Agent SDK's own session reader.

The SDK (`list_sessions`, `get_session_messages`, `list_subagents`, `get_subagent_messages`)
finds a session where Claude Code does (CLAUDE_CONFIG_DIR/projects/<cwd>/<id>.jsonl) and
rebuilds the conversation Claude Code resumes: the chain from the newest leaf back by
parentUuid. Like Claude Code it does not follow a compact boundary back (the summary replaces
what came before), so what it must return is every prompt and tool call of the chosen branch
after its last compaction; re-importing the file with ctxstore (which follows
logicalParentUuid) must give back all of them, and link to the source session as a fork.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxstore.convert import read_transcript
from ctxstore.porcelain.resume import resume
from tests import resumecases as rc
from tests.corpus import in_ci

try:
    from claude_agent_sdk import (
        get_session_messages,
        get_subagent_messages,
        list_sessions,
        list_subagents,
    )
except ImportError:  # the claude-agent-sdk extra
    if in_ci():
        raise
    pytest.skip("claude-agent-sdk is not installed: pip install -e '.[claude-agent-sdk]'",
                allow_module_level=True)


@pytest.fixture
def claude(tmp_path, monkeypatch):
    """A scratch Claude config dir and project directory; returns (env, project dir)."""
    config = tmp_path / "claude-config"
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    return {"CLAUDE_CONFIG_DIR": str(config), "PATH": "/usr/bin:/bin"}, str(project)


def records(path: Path) -> list[dict]:
    """The file's records, split on newlines only (a prompt may hold U+2028)."""
    return [json.loads(x) for x in path.read_text(encoding="utf-8").split("\n") if x]


def read_back(session_id: str, project: str, path: Path) -> tuple[list[str], list[str]]:
    """(prompts, tool_use ids) the SDK returns; compact summaries are not prompts."""
    summaries = {r["uuid"] for r in records(path) if r.get("isCompactSummary")}
    prompts, calls = [], []
    for m in get_session_messages(session_id, directory=project):
        content = m.message.get("content")
        if m.type == "user" and isinstance(content, str) and m.uuid not in summaries:
            prompts.append(content)
        elif m.type == "assistant":
            calls += [b["id"] for b in content if b.get("type") == "tool_use"]
    return prompts, calls


def check(repo, sid: str, env: dict, project: str, branch: str | None = None) -> dict:
    t = read_transcript(repo, sid, branch)
    res = resume(repo, sid, "claude-code", branch=branch, env=env, cwd=project)
    path = Path(res["path"])
    got_prompts, got_calls = read_back(res["report"]["session_id"], project, path)
    assert got_prompts == rc.prompts(t, after_compaction=True), sid
    assert len(got_calls) == len(rc.calls(t, after_compaction=True)), sid
    assert res["report"]["tool_calls"] == len(rc.calls(t))
    listed = {s.session_id for s in list_sessions(directory=project)}
    assert res["report"]["session_id"] in listed
    back = rc.reimport(repo, path, sid)
    assert rc.prompts(back) == rc.prompts(t)
    assert len(rc.calls(back)) == len(rc.calls(t))
    return res


@pytest.mark.parametrize("harness", rc.harnesses())
def test_corpus_sessions_read_back_by_the_sdk(harness, claude):
    env, project = claude
    checked = 0
    for repo, t in rc.transcripts(harness):
        check(repo, t.session, env, project)
        checked += 1
    assert checked


def test_built_session_branches_compaction_subagent_and_large_output(tmp_path, claude):
    env, project = claude
    repo, sid = rc.built_session(tmp_path)
    res = check(repo, sid, env, project)
    rep = res["report"]
    assert (rep["compactions"], rep["branches_kept"], rep["subagents"]) == (1, 1, 1)
    assert (rep["thinking_kept"], rep["artifacts_referenced"]) == (1, 1)
    assert rep["tool_calls_mapped"] == 3  # Bash, Task, Edit
    text = Path(res["path"]).read_text()
    assert "ctx cat" in text and len(text) < rc.BIG  # the 2 MB output is referenced, not copied
    sdk_id = rep["session_id"]
    agents = list_subagents(sdk_id, directory=project)
    assert len(agents) == 1
    sub = get_subagent_messages(sdk_id, agents[0], directory=project)
    assert sub[0].message["content"] == "Explore the repo"
    assert sub[0].parent_tool_use_id == "toolu_task"
    # the other branch, resumed by name: its own prompt comes back, the main line's does not
    other = resume(repo, sid, "claude-code", branch="rewind-u2", env=env, cwd=project)
    prompts, _calls = read_back(other["report"]["session_id"], project, Path(other["path"]))
    assert prompts[-1] == "First attempt" and "Second attempt" not in prompts
    back = rc.reimport(repo, Path(res["path"]), sid)
    (rewind,) = set(repo.branches(back.session)) - {"main"}  # the tree came back: two branches
    # the folder, subagent file included: the subagent is the fork's, spawned by its Task call
    from ctxstore.importers import import_paths

    report = import_paths(repo, [Path(res["path"]).parent])
    (child,) = [repo.session(s.session) for s in report.sessions
                if repo.session(s.session).parent_session == back.session]
    assert child.kind == "subagent" and child.spawn_event
    assert rc.prompts(read_transcript(repo, back.session, rewind))[-1] == "First attempt"


def test_hostile_prompt_stays_one_prompt(tmp_path, claude):
    env, project = claude
    repo, sid = rc.built_session(tmp_path, prompt=rc.HOSTILE)
    res = check(repo, sid, env, project)
    lines = records(Path(res["path"]))
    assert sum(r.get("uuid") == "x" for r in lines) == 0  # no record came out of the text
    first = next(r for r in lines if r.get("type") == "user")
    assert first["message"]["content"] == rc.HOSTILE


def test_thinking_from_another_provider_is_dropped_and_counted(claude):
    env, project = claude
    repo, t = next((r, t) for r, t in rc.transcripts("gemini") if any(
        e.kind == "thinking" for e in t.path()))
    res = resume(repo, t.session, "claude-code", env=env, cwd=project, dry_run=True)
    assert res["report"]["thinking_dropped"] == sum(e.kind == "thinking" for e in t.entries)
    assert res["report"]["thinking_kept"] == 0


def test_round_trip_claude_code_pi_claude_code(tmp_path, claude):
    """Claude Code -> pi -> Claude Code keeps prompts, tool calls (names mapped there and
    back), results and the branch tree; each hop imports as a fork of the one before."""
    from ctxstore.importers import import_paths

    env, project = claude
    env = {**env, "PI_CODING_AGENT_DIR": str(tmp_path / "pi")}
    repo, sid = rc.built_session(tmp_path)
    source = read_transcript(repo, sid)
    hops = [source]
    current = sid
    for harness in ("pi", "claude-code"):
        res = resume(repo, current, harness, env=env, cwd=project)
        report = import_paths(repo, [res["path"]])
        (nxt,) = [s.session for s in report.sessions if repo.session(s.session).kind != "subagent"]
        assert repo.session(nxt).parent_session == current
        current = nxt
        hops.append(read_transcript(repo, current))
    back = hops[-1]
    assert back.prompts() == source.prompts()  # every branch's prompts
    assert [e.tool for e in back.path() if e.kind == "tool_call"] == ["Bash", "Task", "Edit"]
    results = [[e.text[:200] for e in t.path() if e.kind == "tool_result"] for t in (source, back)]
    assert results[0] == results[1]
    assert len(repo.branches(current)) == 2 and back.has_branches()
    prompts, calls = read_back(res["report"]["session_id"], project, Path(res["path"]))
    assert prompts == ["After compaction"] and len(calls) == 1
