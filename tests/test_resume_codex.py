"""`ctx resume --in codex`, read back by Codex's own code (tests/readers/codex_reader.py).

Per corpus harness, every (sampled) session is converted into one scratch CODEX_HOME; then
Codex itself runs once: `codex migrate-rollouts --apply` parses every rollout (it fails on a
line it rejects) and `codex app-server` lists the threads (`thread/list`) and replays each one
(`thread/read`). Each thread must hold every prompt of the chosen branch and every tool call as
a tool call item with its output; the rollout, imported back into ctxstore, must give the same
prompts and calls and be a fork of its source session.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxstore.convert import read_transcript
from ctxstore.porcelain.resume import resume
from tests import resumecases as rc
from tests.readers import codex_reader


def convert_all(cases, home: Path) -> list[tuple[object, object, dict]]:
    env = {"CODEX_HOME": str(home), "PATH": "/usr/bin:/bin"}
    return [(repo, t, resume(repo, t.session, "codex", env=env, cwd="/tmp"))
            for repo, t in cases]


def check_read_back(converted, home: Path) -> None:
    ids = [res["report"]["session_id"] for _r, _t, res in converted]
    # what ctx wrote, kept aside: Codex's migration rewrites a rollout in its own form, which
    # drops the keys it does not know (the provenance among them; docs/resume.md)
    written = {res["path"]: Path(res["path"]).read_bytes() for _r, _t, res in converted}
    seen = codex_reader.read_threads(home, ids)
    # Codex's picker lists a thread once it has a user message (a session with no prompt
    # at all is read by id, not listed)
    prompted = {res["report"]["session_id"] for _r, t, res in converted if rc.prompts(t)}
    assert prompted <= set(seen["listed"])
    for repo, t, res in converted:
        got = seen["threads"][res["report"]["session_id"]]
        assert got["prompts"] == rc.prompts(t), t.session
        assert [c["id"] for c in got["tool_calls"]] == rc.calls(t) or \
            sorted(c["id"] for c in got["tool_calls"]) == sorted(rc.calls(t)), t.session
        assert got["compactions"] == res["report"]["compactions"]
        aside = home.parent / "as-written" / Path(res["path"]).name
        aside.parent.mkdir(exist_ok=True)
        aside.write_bytes(written[res["path"]])
        back = rc.reimport(repo, aside, t.session)
        assert rc.prompts(back) == rc.prompts(t)
        assert rc.calls(back) == rc.calls(t)


@pytest.mark.parametrize("harness", rc.harnesses())
def test_corpus_sessions_read_back_by_codex(harness, tmp_path):
    codex_reader.require()
    converted = convert_all(rc.transcripts(harness), tmp_path / "codex-home")
    assert converted
    check_read_back(converted, tmp_path / "codex-home")


def test_built_session_and_hostile_prompt(tmp_path):
    codex_reader.require()
    repo, sid = rc.built_session(tmp_path, prompt=rc.HOSTILE)
    home = tmp_path / "codex-home"
    converted = convert_all([(repo, read_transcript(repo, sid))], home)
    check_read_back(converted, home)
    rep = converted[0][2]["report"]
    # one branch only (rollouts have no tree), the compaction as Codex's own record, Claude's
    # signed thinking dropped (Codex would send it to OpenAI), the 2 MB output referenced
    assert (rep["branches_flattened"], rep["compactions"], rep["thinking_dropped"]) == (1, 1, 1)
    assert rep["artifacts_referenced"] == 1
    lines = Path(converted[0][2]["path"]).read_text(encoding="utf-8").split("\n")
    recs = [json.loads(x) for x in lines if x]
    assert not any(r["payload"].get("call_id") == "evil" for r in recs)  # the text made no call
    assert sum(r["type"] == "compacted" for r in recs) == 1
    patch = next(r["payload"] for r in recs if r["payload"].get("type") == "custom_tool_call")
    assert patch["name"] == "apply_patch" and "*** Update File: /tmp/built/a.py" in patch["input"]


def test_written_rollout_is_indexed_by_codex_itself(tmp_path):
    """Codex 0.171 adds a rollout it finds to its thread index on its own: after Codex has
    made its state database, a newly written rollout is listed without ctxstore writing to
    it (ctx resume reports the database, read-only)."""
    codex_reader.require()
    home = tmp_path / "codex-home"
    cases = rc.transcripts("codex")
    first = convert_all(cases[:1], home)
    codex_reader.read_threads(home, [first[0][2]["report"]["session_id"]], migrated=False)
    assert list(home.glob("state_*.sqlite"))
    env = {"CODEX_HOME": str(home), "PATH": "/usr/bin:/bin"}
    repo, t = cases[1]
    res = resume(repo, t.session, "codex", env=env, cwd="/tmp")
    assert any("nothing written there" in note for note in res["registered"])
    seen = codex_reader.read_threads(home, [res["report"]["session_id"]], migrated=False)
    assert res["report"]["session_id"] in seen["listed"]
    assert seen["threads"][res["report"]["session_id"]]["prompts"] == rc.prompts(t)


def test_subagent_is_a_spawned_thread_of_its_own(tmp_path):
    """A subagent becomes a rollout of its own whose session_meta names the parent thread
    (`source.subagent.thread_spawn`): Codex replays it, its migration keeps the link in the
    thread index, and ctxstore imports it back as the subagent of the imported session."""
    import sqlite3

    from ctxstore.importers import import_paths

    codex_reader.require()
    repo, sid = rc.built_session(tmp_path)
    home = tmp_path / "codex-home"
    res = resume(repo, sid, "codex", env={"CODEX_HOME": str(home), "PATH": "/usr/bin:/bin"},
                 cwd="/tmp")
    (child_file,) = map(Path, res["files"])
    written = {p: p.read_bytes() for p in (Path(res["path"]), child_file)}
    child = child_file.name[-len("00000000-0000-0000-0000-000000000000.jsonl"):-len(".jsonl")]
    seen = codex_reader.read_threads(home, [child], migrated=False)
    assert seen["threads"][child]["prompts"] == ["Explore the repo"]
    assert seen["threads"][child]["answers"] == ["explored"]
    codex_reader.migrate(home)  # Codex parses it and records the spawn in its thread index
    (db,) = home.glob("state_*.sqlite")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    (source,) = con.execute("select source from threads where id = ?", (child,)).fetchone()
    con.close()
    spawn = json.loads(source)["subagent"]["thread_spawn"]
    assert spawn["parent_thread_id"] == res["report"]["session_id"]
    aside = tmp_path / "as-written"
    aside.mkdir()
    for path, data in written.items():
        (aside / path.name).write_bytes(data)
    fork = rc.reimport(repo, aside / Path(res["path"]).name, sid)
    report = import_paths(repo, [aside / child_file.name])
    sub = repo.session(report.sessions[0].session)
    assert (sub.kind, sub.parent_session) == ("subagent", fork.session)
