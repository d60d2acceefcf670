"""ctx import / ctx export through the CLI: summaries, --json, warnings, --strict, round trips."""

from __future__ import annotations

import json

import pytest

from tests.corpus import corpus_root

from .clitools import Ctx, store_files

CORPUS = corpus_root()
PI_V1 = CORPUS / "pi" / "pi-mono_before-compaction_v1-format_genuine.jsonl"
CODEX = CORPUS / "codex" / "rollout-genuine_v0.58.0_chatbot-ui-lmstudio_019a93b9.jsonl"

pytestmark = pytest.mark.usefixtures("corpus")


@pytest.fixture
def ctx(tmp_path):
    c = Ctx(tmp_path)
    c("init", str(tmp_path))
    return c


def test_import_json_summary_and_idempotence(ctx, tmp_path):
    first = ctx.json("import", str(CODEX))
    assert first["sessions"] == 1 and first["events"] == 319
    assert first["new_events"] == 318  # events mapped from lines; the root SessionStarted is not one
    before = store_files(tmp_path)
    again = ctx.json("import", "codex", str(CODEX))
    assert again["new_events"] == 0
    after = store_files(tmp_path)
    assert {k for k in after if not k.startswith("logs/")} == {k for k in before if not k.startswith("logs/")}
    assert ctx.json("sessions")[0]["events"] == 319


def test_export_round_trip_is_json_equal(ctx, tmp_path):
    ctx("import", str(PI_V1))
    sid = ctx.json("sessions")[0]["id"]
    out = tmp_path / "back.jsonl"
    ctx("export", sid[:10], "--format", "pi", "-o", str(out))
    orig = [json.loads(x) for x in PI_V1.read_text().splitlines() if x.strip()]
    back = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
    assert back == orig


def test_import_reports_bad_lines_and_strict_writes_nothing(ctx, tmp_path):
    bad = tmp_path / "bad.jsonl"
    lines = CODEX.read_text().splitlines()[:20]
    lines.insert(5, "{not json")
    bad.write_text("\n".join(lines) + "\n")
    before = store_files(tmp_path)
    err = ctx.fails(10, "import", "--strict", "codex", str(bad))
    assert "bad.jsonl:6:" in err and "nothing imported" in err
    assert store_files(tmp_path) == before
    res = ctx("import", "codex", str(bad))
    assert "bad.jsonl:6:" in res.stderr and "1 warning" in res.stdout


def test_import_missing_path_and_bad_format(ctx):
    assert "no such file" in ctx.fails(3, "import", "/nonexistent/file.jsonl")
    ctx("export", "HEAD", "--format", "nope", code=2)


def test_imported_session_works_with_log_state_context_compact(ctx):
    ctx("import", str(PI_V1))
    sid = ctx.json("sessions")[0]["id"]
    ctx("checkout", f"{sid[:10]}/main")
    assert len(ctx.json("log", "-n", "5")) == 5
    assert ctx.json("state")["version"] > 100
    bundle = ctx.json("context", "--budget", "20000")
    assert bundle["used_tokens"] <= bundle["max_tokens"]
    dry = json.loads(ctx.runner.invoke(
        __import__("ctxstore.cli.main", fromlist=["cli"]).cli,
        ["--store", str(ctx.root), "compact", "--dry-run", "--json"]).stdout)
    assert dry["summarized_events"] > 0 and dry["checks"]
