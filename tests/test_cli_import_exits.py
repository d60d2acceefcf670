"""`ctx import` exit codes that mean what they say: a forced format refuses a file that is not
in it (nothing written), no PATH searches the harnesses' default folders and says where it
looked, and a folder with nothing importable is an error, not "Imported 0 file(s)"."""

from __future__ import annotations

import json

import pytest

from ctxstore.importers import discover

from .clitools import Ctx, store_files
from .corpus import require_corpus

CLAUDE = [{"type": "user", "sessionId": "s1", "uuid": "u1", "parentUuid": None,
           "timestamp": "2026-01-01T00:00:00.000Z", "message": {"role": "user", "content": "hi"}}]
PI = [{"type": "session", "version": 3, "id": "p1", "timestamp": "2026-01-01T00:00:00.000Z",
       "cwd": "/w"},
      {"type": "message", "id": "m1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
       "message": {"role": "user", "content": [{"type": "text", "text": "hello pi"}]}}]


def _jsonl(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture
def ctx(tmp_path, monkeypatch):
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "PI_CODING_AGENT_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    c = Ctx(tmp_path / "store")
    c("init", str(tmp_path / "store"))
    return c


@pytest.mark.parametrize("fmt", ["codex", "claude-code", "jsonl"])
def test_forced_format_refuses_a_file_of_another_format(ctx, tmp_path, fmt):
    f = _jsonl(tmp_path / "pi.jsonl", PI)
    before = store_files(tmp_path / "store")
    err = ctx.fails(10, "import", fmt, str(f))
    assert f"only 0 of the first 2 records are {fmt} records (it looks like pi)" in err
    assert "nothing imported" in err
    assert store_files(tmp_path / "store") == before
    assert ctx.json("import", "pi", str(f))["sessions"] == 1  # the right format imports


def test_forced_format_on_the_real_corpus(ctx, tmp_path):
    root = require_corpus()
    pi = root / "pi" / "FIXTURE_agent-sessions_pi-v3_fixture-provider_compaction.jsonl"
    before = store_files(tmp_path / "store")
    ctx.fails(10, "import", "codex", str(pi))
    assert store_files(tmp_path / "store") == before
    for sub, fmt in (("claude-code", "claude-code"), ("codex", "codex"), ("pi", "pi")):
        for f in sorted((root / sub).rglob("*.jsonl"))[:2]:
            ctx("import", fmt, str(f))  # every real file passes its own format's check


def test_nothing_importable_is_an_error(ctx, tmp_path):
    (tmp_path / "empty").mkdir()
    assert "no transcript files" in ctx.fails(3, "import", str(tmp_path / "empty"))
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.jsonl").write_text("just text\n")
    assert "none of the 1 file(s)" in ctx.fails(10, "import", str(other))
    # one good file among bad ones imports, with a warning for the rest
    _jsonl(other / "good.jsonl", CLAUDE)
    res = ctx("import", str(other))
    assert "1 session(s)" in res.stdout and "cannot tell the transcript format" in res.stderr


def test_no_path_discovers_default_folders(ctx, tmp_path, monkeypatch):
    home = tmp_path / "home"
    err = ctx.fails(3, "import")
    assert "none of the default folders exists" in err and f"{home}/.claude/projects" in err
    _jsonl(home / ".claude" / "projects" / "-w" / "s1.jsonl", CLAUDE)
    _jsonl(home / ".pi" / "agent" / "sessions" / "--w--" / "p1.jsonl", PI)
    res = ctx("import")
    assert "Imported 2 file(s)" in res.stdout and "2 session(s)" in res.stdout
    assert "claude-code" in res.stderr and "found" in res.stderr
    assert f"{home}/.codex/sessions  not there" in res.stderr
    only_pi = ctx("import", "pi")
    assert "Imported 1 file(s)" in only_pi.stdout and "claude-code" not in only_pi.stderr
    ctx("import", "jsonl", code=2)  # no default folder for ctxstore's own JSONL


def test_discovery_honours_the_harness_variables(tmp_path):
    env = {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "cc"),
           "CODEX_HOME": str(tmp_path / "cx"), "PI_CODING_AGENT_DIR": str(tmp_path / "pa")}
    (tmp_path / "cx" / "sessions").mkdir(parents=True)
    first3 = ("claude-code", "codex", "pi")  # the others: tests/test_import_<harness>.py
    found = {fmt: (d, ok) for fmt, d, ok in discover(env) if fmt in first3}
    assert found == {"claude-code": (str(tmp_path / "cc" / "projects"), False),
                     "codex": (str(tmp_path / "cx" / "sessions"), True),
                     "pi": (str(tmp_path / "pa" / "sessions"), False)}
    plain = {fmt: d for fmt, d, _ in discover({"HOME": str(tmp_path)}) if fmt in first3}
    assert plain == {"claude-code": str(tmp_path / ".claude" / "projects"),
                     "codex": str(tmp_path / ".codex" / "sessions"),
                     "pi": str(tmp_path / ".pi" / "agent" / "sessions")}


def test_warnings_are_capped(ctx, tmp_path):
    lines = CLAUDE + [{"type": f"weird-{i}", "sessionId": "s1", "uuid": f"w{i}"} for i in range(30)]
    f = _jsonl(tmp_path / "w.jsonl", lines)
    res = ctx("import", str(f))
    assert res.stderr.count("warning: ") == 20 and "10 more warning(s)" in res.stderr
    assert len(ctx.json("import", str(f))["warning_list"]) >= 30  # --json lists them all
