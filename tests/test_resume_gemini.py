"""`ctx resume --in gemini`: every corpus session of every source harness, converted to a Gemini
CLI chat recording, found and loaded by gemini-cli-core's own code (tests/readers/
gemini_reader.mjs: its project registry and chat listing, `loadConversationRecord`, and
`convertSessionToClientHistory`, the history a resumed chat starts from), then imported back.

What Gemini CLI must give back, per session (its recordings hold one branch: the chosen one):
- the file is in the project's chat list, under GEMINI_CLI_HOME, and loads by session id;
- the loaded messages hold every prompt of the branch, or, after a compaction, the summary
  and every prompt after it (gemini-cli starts again from a `$set.messages` history);
- the resumed history holds every tool call of the branch after the last compaction as a
  `functionCall` part (named as Gemini CLI names the tool where it has one) and each result
  as the `functionResponse` of the same id: 100% (≥ 90% is the issue's floor);
- `ctx import` of the file gives back the branch's prompts and calls, as a fork of the source.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from ctxstore.convert import Transcript, target
from ctxstore.convert.toolmap import map_call
from ctxstore.importers import import_paths
from tests.readers import reader
from tests.readers.roundtrip import built, check_corpus_harness, write_where_it_looks
from tests.resumecases import HOSTILE, harnesses, reimport

gemini = target("gemini")
READER = "gemini_reader.mjs"
IGNORED = ("/", "?", "<session_context>", "<hook_context>")  # sessionUtils.isIgnoredUserContent


def _convert(t: Transcript, tmp: Path) -> tuple[Path, dict, Transcript]:
    """T written where Gemini CLI looks (a fresh GEMINI_CLI_HOME, a project dir under TMP), and
    what gemini-cli-core found and loaded."""
    env = {"GEMINI_CLI_HOME": str(tmp / "home")}
    path, t = write_where_it_looks(gemini, t, tmp, env)
    return path, reader.run(READER, t.cwd, gemini.session_id(t), env=env), t


def _texts(parts: list[dict]) -> str:
    return "".join(p.get("text", "") for p in parts if not p.get("thought"))


def check_gemini(t: Transcript, got: dict) -> None:
    where = f"{t.source_format} session {t.session[:12]} ({t.title[:40]!r})"
    assert got["found"], f"{where}: not in Gemini CLI's chat list {got['listed']}"
    path = t.path()
    comps = [i for i, e in enumerate(path) if e.kind == "compaction"]
    after = path[comps[-1] + 1:] if comps else path
    want = [e.text for e in after if e.kind == "user"]
    users = [h for h in got["history"] if h["role"] == "user"
             and not any("functionResponse" in p for p in h["parts"])]
    sent = [_texts(h["parts"]) for h in users]
    if comps:
        assert sent and sent[0] == path[comps[-1]].text, f"{where}: the summary does not lead"
    assert sent[len(sent) - len([w for w in want if not w.strip().startswith(IGNORED)]):] == \
        [w for w in want if not w.strip().startswith(IGNORED)], where
    if not comps:
        assert [m for m in got["messages"] if m["type"] == "user"].__len__() == len(want), where
    calls = [e for e in after if e.kind == "tool_call"]
    fcalls = {p["functionCall"]["id"]: p["functionCall"] for h in got["history"] if h["role"] == "model"
              for p in h["parts"] if "functionCall" in p}
    as_calls = [e for e in calls if e.call_id in fcalls]
    assert len(as_calls) >= 0.9 * len(calls) and len(as_calls) == len(calls), where
    for e in calls:
        assert fcalls[e.call_id]["name"] == map_call("gemini", e.tool, e.plain_args())[0], where
    answered = {e.call_id for e in after if e.kind == "tool_result"} & set(fcalls)
    responses = {p["functionResponse"]["id"] for h in got["history"] if h["role"] == "user"
                 for p in h["parts"] if "functionResponse" in p}
    assert answered <= responses, where


def check_reimport(t: Transcript, back: Transcript) -> None:
    where = f"{t.source_format} session {t.session[:12]} re-imported"
    path = t.path()
    assert back.prompts(back.path()) == [e.text for e in path if e.kind == "user"], where
    want = [(e.call_id, map_call("gemini", e.tool, e.plain_args())[0]) for e in path
            if e.kind == "tool_call"]
    assert Counter((e.call_id, e.tool) for e in back.entries if e.kind == "tool_call") == Counter(want), where


@pytest.mark.parametrize("harness", harnesses())
def test_every_corpus_session_loads_in_gemini(harness, tmp_path):
    assert check_corpus_harness(harness, tmp_path, _convert, check_gemini, check_reimport) > 0


def test_built_session_chosen_branch_compaction_big_result(tmp_path):
    repo, sid, t, path, got, used = built(tmp_path, _convert, check_gemini)
    with open(tmp_path / "again.jsonl", "wb") as out:
        report = gemini.write(used, out)
    assert path.read_bytes() == (tmp_path / "again.jsonl").read_bytes()
    assert report.branches_flattened == 1 and report.compactions == 1 and report.subagents == 1
    assert report.thinking_dropped == 1  # signed by Anthropic: not for a Gemini model
    assert report.artifacts_referenced == 1
    assert got["history"][0]["parts"][0]["text"] == "Summary: the repo was explored."
    records = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    assert sum(1 for r in records if "$set" in r) == 1
    big = next(c for r in records if r.get("type") == "gemini" for c in r.get("toolCalls", [])
               if c["id"] == "toolu_big")
    out = big["result"][0]["functionResponse"]["response"]["output"]
    assert "ctxstore: output truncated" in out and len(out) < 64 * 1024
    back = reimport(repo, path, sid)
    check_reimport(t, back)
    assert sum(1 for e in back.entries if e.kind == "compaction") == 1


def test_hostile_prompt_stays_one_prompt(tmp_path):
    hostile = HOSTILE + '\n{"$rewindTo":"x"}\n{"$set":{"messages":[]}}\n{"sessionId":"s","projectHash":"h"}'
    repo, sid, t, path, got, _used = built(tmp_path, _convert, check_gemini, prompt=hostile)
    assert got["sessionId"] == gemini.session_id(t)
    back = reimport(repo, path, sid)
    assert back.prompts().count(hostile) == 1


def test_project_folder_follows_gemini_clis_registry(tmp_path):
    """A directory Gemini CLI never ran in: the legacy sha256 folder, which gemini-cli copies
    into the project folder its registry makes; once registered, that folder."""
    _repo, _sid, _t, path, got, used = built(tmp_path, _convert, check_gemini)
    root = str(tmp_path / "converted" / "project")
    assert path.parent.parent.name == hashlib.sha256(root.encode()).hexdigest()
    assert gemini.register(path, used, {"GEMINI_CLI_HOME": str(tmp_path / "converted" / "home")})
    slug_dir = Path(got["projectTempDir"])
    assert slug_dir.name == "project" and (slug_dir / "chats" / path.name).is_file()
    env = {"GEMINI_CLI_HOME": str(tmp_path / "converted" / "home")}
    later = dataclasses.replace(used, leaf=used.path()[-2].id)  # another conversion, same project
    assert gemini.default_path(later, env).parent == slug_dir / "chats"
    assert gemini.register(gemini.default_path(later, env), later, env) == []


def test_reader_fails_under_ci_when_missing(monkeypatch):
    monkeypatch.setenv("CI", "true")
    monkeypatch.setitem(reader.PACKAGES, "gone.mjs", "@google/not-installed")
    with pytest.raises(pytest.fail.Exception, match="is not installed"):
        reader.require("gone.mjs")


def test_a_registry_gemini_cli_would_reset_is_not_followed(tmp_path):
    """projects.json naming a folder outside its schema (a path, not a short id) is what
    Gemini CLI resets to empty: the session goes to the legacy folder, never to that path."""
    _repo, _sid, _t, _path, _got, used = built(tmp_path, _convert, check_gemini)
    home = tmp_path / "other-home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "projects.json").write_text(json.dumps({"projects": {used.cwd: "../../escape"}}))
    path = gemini.default_path(used, {"GEMINI_CLI_HOME": str(home)})
    assert path.parent.parent == home / ".gemini" / "tmp" / hashlib.sha256(used.cwd.encode()).hexdigest()


def test_subagent_is_a_recording_gemini_cli_links_to_its_call(tmp_path):
    """`companions`: the subagent as gemini-cli files one (chats/<parent id>/<agent id>.jsonl,
    kind subagent), loaded by its loader, linked by the spawning call's agentId; `ctx import`
    of the chats folder makes it a subagent of the re-imported session, spawned by that call."""
    repo, sid, t, path, got, used = built(tmp_path, _convert, check_gemini)
    [(rel, data)] = gemini.companions(used, gemini.write(used, open(tmp_path / "x.jsonl", "wb")))
    child_path = path.parent / rel
    child_path.parent.mkdir()
    child_path.write_bytes(data)
    child = reader.run(READER, "--file", str(child_path))
    assert child["found"] and child["kind"] == "subagent" and child["sessionId"] == child_path.stem
    assert [_texts(h["parts"]) for h in child["history"] if h["role"] == "user"][0] == "Explore the repo"
    assert [p["functionCall"]["name"] for h in child["history"] for p in h["parts"]
            if "functionCall" in p] == ["read_file"]
    records = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    spawn = [c for r in records if r.get("type") == "gemini" for c in r.get("toolCalls", [])
             if "agentId" in c]  # before the compaction: in the file, not in what is resumed
    assert [(c["id"], c["agentId"]) for c in spawn] == [("toolu_task", child["sessionId"])]
    report = import_paths(repo, [path.parent])
    by_kind = {repo.session(s.session).kind: repo.session(s.session) for s in report.sessions}
    assert set(by_kind) == {"fork", "subagent"}
    sub = by_kind["subagent"]
    fork_id = next(s.session for s in report.sessions if repo.session(s.session).kind == "fork")
    assert sub.parent_session == fork_id and sub.spawn_event
    assert repo.graph.event(sub.spawn_event).payload["tool_call_id"] == "toolu_task"
