"""Issue 29 item 7: a Claude Code file holding only `summary` lines titles the session whose
message its leafUuid names, or is a titled session with no conversation, and says which."""

from __future__ import annotations

import json

from tests.clitools import Ctx
from tests.corpus import require_corpus

CONVO = [{"type": "user", "sessionId": "s1", "uuid": "u1", "parentUuid": None,
          "timestamp": "2026-01-01T00:00:00.000Z",
          "message": {"role": "user", "content": "fix the parser"}},
         {"type": "assistant", "sessionId": "s1", "uuid": "u2", "parentUuid": "u1",
          "timestamp": "2026-01-01T00:00:01.000Z",
          "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "done"}]}}]


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _ctx(tmp_path):
    ctx = Ctx(tmp_path / "store")
    ctx("init", str(tmp_path / "store"))
    return ctx


def test_a_summary_file_titles_the_session_it_names_in_the_same_import(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    _write(src / "b-s1.jsonl", CONVO)  # walked after the summary file
    _write(src / "a-summary.jsonl", [{"type": "summary", "summary": "Parser whitespace fix",
                                      "leafUuid": "u2"}])
    ctx = _ctx(tmp_path)
    res = ctx("import", str(src))
    assert "it titles session" in res.stderr
    by_file = {s["title"]: s for s in ctx.json("sessions")}
    titled = [s for s in ctx.json("sessions") if s["events"] > 2]
    assert titled and titled[0]["title"] == "Parser whitespace fix" and by_file
    out = tmp_path / "back.jsonl"
    ctx("export", titled[0]["id"], "--format", "claude-code", "-o", str(out))
    assert [json.loads(x) for x in out.read_text().splitlines()] == CONVO  # its own lines
    assert ctx.json("import", str(src))["new_events"] == 0


def test_a_summary_file_named_in_an_earlier_import(tmp_path):
    ctx = _ctx(tmp_path)
    ctx("import", str(_write(tmp_path / "s1.jsonl", CONVO)))
    summary = _write(tmp_path / "later.jsonl", [{"type": "summary", "summary": "Parser fix",
                                                 "leafUuid": "u2"}])
    assert "it titles session" in ctx("import", str(summary)).stderr
    assert "Parser fix" in [s["title"] for s in ctx.json("sessions") if s["events"] > 2]


def test_a_real_summary_line_whose_leaf_is_elsewhere_is_a_titled_session(tmp_path):
    root = require_corpus()
    corpus = root / "claude-code" / "ccl_sample_many-summary-records_v1.0.24.jsonl"
    line = next(x for x in corpus.read_text().splitlines() if '"type":"summary"' in x.replace(" ", ""))
    f = tmp_path / "only-summary.jsonl"
    f.write_text(line + "\n")
    ctx = _ctx(tmp_path)
    res = ctx("import", str(f))
    assert "holds only a summary" in res.stderr and "no conversation" in res.stderr
    (s,) = ctx.json("sessions")
    assert s["title"] == json.loads(line)["summary"][:80].split("\n")[0]
