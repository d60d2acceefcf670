"""Longer versions extend, the neutral JSONL round-trips to identical ids, and an imported
session works with the rest of ctxstore (log, diff, state, context)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from ctxstore.importers import export_session, import_paths
from ctxstore.porcelain.history import diff, log
from ctxstore.repo import Repository
from ctxstore.state import project
from tests.corpus import corpus_root

CORPUS = corpus_root()
JSSOUND = CORPUS / "claude-code" / "ccl_jssoundrecorder_queue-operation-thinking_v2.0.42.jsonl"
IDEAS = CORPUS / "claude-code" / "ccl_experiments-ideas_progress-file-history-snapshot_v2.1.42.jsonl"
CODEX = CORPUS / "codex" / "rollout-genuine_v0.58.0_chatbot-ui-lmstudio_019a93b9.jsonl"

pytestmark = pytest.mark.usefixtures("corpus")


def _prefix(src: Path, tmp_path: Path, n: int) -> Path:
    out = tmp_path / "prefix" / src.name
    out.parent.mkdir(exist_ok=True)
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    out.write_text("".join(lines[:n]), encoding="utf-8")
    return out


@pytest.mark.parametrize("src", [JSSOUND, CODEX], ids=["claude-code", "codex"])
def test_longer_version_fast_forwards(tmp_path, src):
    repo = Repository.memory()
    first = import_paths(repo, [_prefix(src, tmp_path, 60)])
    sid = first.sessions[0].session
    old_tip = repo.branches(sid)["main"]
    second = import_paths(repo, [src])
    assert second.sessions[0].session == sid
    new_tip = repo.branches(sid)["main"]
    assert new_tip != old_tip and repo.graph.is_ancestor(old_tip, new_tip)
    assert second.new_events == second.events - first.events
    # no note but the one saying a ghost snapshot's commit is not on this machine
    assert not [n for n in second.notes if "workspace_missing" not in n]


def test_longer_version_with_a_new_rewind_keeps_old_line(tmp_path):
    repo = Repository.memory()
    sid = import_paths(repo, [_prefix(IDEAS, tmp_path, 36)]).sessions[0].session
    old_tip = repo.branches(sid)["main"]
    report = import_paths(repo, [IDEAS])
    branches = repo.branches(sid)
    assert set(branches) == {"main", "rewind-5270777a"}
    assert repo.graph.is_ancestor(old_tip, branches["rewind-5270777a"])
    assert any("rewritten" in n for n in report.notes)


def test_neutral_jsonl_round_trip_identical_ids(tmp_path):
    src = Repository.memory()
    report = import_paths(src, [IDEAS])
    sid = report.sessions[0].session
    out = io.StringIO()
    export_session(src, sid, "jsonl", out)
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert lines[0]["ctxstore"] == "session" and lines[0]["id"] == sid
    assert sum(x["ctxstore"] == "event" for x in lines) == report.events
    path = tmp_path / "neutral.jsonl"
    path.write_text(out.getvalue(), encoding="utf-8")
    dst = Repository.memory()
    back = import_paths(dst, [path])
    assert back.warnings == [] and back.sessions[0].session == sid
    assert dst.branches(sid) == src.branches(sid)
    # every object but the import's own operation record (objects/operation.py) is shared
    assert {i for i in dst.objects if dst.objects.get_raw(i)[0] != "operation"} <= set(src.objects)
    # and the re-imported session still exports to the original Claude Code lines
    again = io.StringIO()
    export_session(dst, sid, "claude-code", again)
    assert [json.loads(x) for x in again.getvalue().splitlines()] == \
           [json.loads(x) for x in IDEAS.read_text().splitlines() if x.strip()]


def test_export_of_a_branch_and_format_checks(tmp_path):
    repo = Repository.memory()
    sid = import_paths(repo, [IDEAS]).sessions[0].session
    out = io.StringIO()
    res = export_session(repo, f"{sid}/rewind-5270777a", "claude-code", out)
    assert res["lines"] < 61  # only that line of history
    from ctxstore.errors import InvalidInput, Unsupported

    # another harness that ctxstore converts to gets a conversion (docs/resume.md) ...
    codex = io.StringIO()
    res = export_session(repo, sid, "codex", codex)
    assert res["converted"]["target"] == "codex" and res["converted"]["prompts"] > 0
    assert json.loads(codex.getvalue().splitlines()[0])["type"] == "session_meta"
    # ... and one it only reads back is refused, naming the formats that would work
    with pytest.raises(Unsupported, match="--format jsonl.*codex"):
        export_session(repo, sid, "aider", io.StringIO())
    with pytest.raises(InvalidInput):
        export_session(repo, sid, "yaml", io.StringIO())


def test_imported_session_works_everywhere():
    repo = Repository.memory()
    sid = import_paths(repo, [IDEAS]).sessions[0].session
    main, rewind = f"{sid}/main", f"{sid}/rewind-5270777a"
    assert len(log(repo, main)) > 10
    d = diff(repo, main, rewind)
    assert d.base and d.only_a and d.only_b
    events = list(reversed(log(repo, main)))
    state = project(events, messages=lambda mid: repo.objects.get(mid))
    assert state.version == len(events) and state.pending_tool_calls == {}
    sound = Repository.memory()
    ssid = import_paths(sound, [JSSOUND]).sessions[0].session
    s2 = project(reversed(log(sound, f"{ssid}/main")))
    assert s2.tool_calls["completed"] + s2.tool_calls["failed"] == 71
    assert s2.pending_tool_calls == {}
    from ctxstore import context

    history = [(eid, ev, repo.objects.get(ev.causality["message_id"])
                if "message_id" in ev.causality else None) for eid, ev in events]
    cands = context.candidates_from_history(state, history)
    bundle = context.build_context(state, cands, budget=50_000)
    # the bundle holds this session's content, checked against the raw file (no importer code)
    raw = [json.loads(x) for x in IDEAS.read_text(encoding="utf-8").splitlines() if x.strip()]
    raw_texts = {json.dumps(r["message"]["content"]) for r in raw
                 if r.get("type") == "user" and isinstance(r["message"]["content"], str)}
    raw_tool_ids = {b["id"] for r in raw if r.get("type") == "assistant"
                    for b in r["message"]["content"] if isinstance(b, dict) and b.get("type") == "tool_use"}
    prompts = [ev.payload["text"] for _, ev in events if ev.type == "UserPromptSubmitted"]
    (request,) = [s for s in bundle.kept if s.kind == "current_request"]
    assert request.text == prompts[-1] and json.dumps(request.text) in raw_texts
    pairs = {s.tool_call_id for s in bundle.kept if s.tool_call_id}
    assert pairs and pairs <= raw_tool_ids  # the session's own tool calls, paired
    on_main = {eid for eid, _ in events}
    conversation = [s for s in bundle.kept if s.section == 2]
    assert len(conversation) > 5
    assert all(src in on_main for s in conversation for src in s.sources
               if src in repo.objects and repo.objects.type_of(src) == "event")
    assert 0 < bundle.used_tokens <= 50_000 and not [s for s in bundle.segments if not s.kept]
    payload = context.to_anthropic(bundle)
    assert payload["messages"][-1]["content"][-1]["text"] == prompts[-1]


def test_on_disk_repository(tmp_path):
    pytest.importorskip("ctxstore.store.packstore")
    repo = Repository.init(tmp_path)
    first = import_paths(repo, [IDEAS])
    repo.close()
    repo = Repository.open(tmp_path)
    again = import_paths(repo, [IDEAS])
    assert again.new_events == 0 and again.sessions[0].session == first.sessions[0].session
    out = io.StringIO()
    export_session(repo, first.sessions[0].session, "claude-code", out)
    assert len(out.getvalue().splitlines()) == 61
