"""Bad input is reported with file and line, the rest is imported, nothing is dropped;
`strict=True` turns any finding into InvalidInput with nothing written."""

from __future__ import annotations

import io
import json

import pytest

from ctxstore.errors import InvalidInput, NotFound
from ctxstore.importers import export_session, import_paths
from ctxstore.repo import Repository


def _cc(uuid, parent, content, type="user", **kw):
    rec = {"type": type, "uuid": uuid, "parentUuid": parent, "sessionId": "s-bad",
           "timestamp": "2026-01-01T00:00:00.000Z", "isSidechain": False,
           "message": {"role": "assistant" if type == "assistant" else "user", "content": content}}
    rec.update(kw)
    return json.dumps(rec)


GOOD = [
    _cc("u1", None, "hello"),
    _cc("a1", "u1", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
        type="assistant"),
    _cc("r1", "a1", [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]),
]


def _write(tmp_path, lines, name="s-bad.jsonl", newline=True):
    p = tmp_path / name
    p.write_text("\n".join(lines) + ("\n" if newline else ""), encoding="utf-8")
    return p


def _one_warning(tmp_path, lines, line_no, words, fmt=None, newline=True):
    path = _write(tmp_path, lines, newline=newline)
    repo = Repository.memory()
    report = import_paths(repo, [path], format=fmt)
    assert [(w["file"], w["line"]) for w in report.warnings] == [(path.name, line_no)]
    assert words in report.warnings[0]["message"]
    return repo, report, path


def _exported(repo, report, fmt="claude-code"):
    out = io.StringIO()
    export_session(repo, report.sessions[0].session, fmt, out)
    return out.getvalue().splitlines()


def test_malformed_line_is_reported_and_kept(tmp_path):
    lines = [GOOD[0], '{"type": "user", oops', *GOOD[1:]]
    repo, report, _ = _one_warning(tmp_path, lines, 2, "malformed JSON")
    assert report.sessions[0].records == 4 and report.sessions[0].tool_pairs == 1
    got = _exported(repo, report)
    assert got[1] == '{"type": "user", oops'  # written back verbatim
    assert [json.loads(x) for i, x in enumerate(got) if i != 1] == \
           [json.loads(x) for i, x in enumerate(lines) if i != 1]


def test_truncated_last_line(tmp_path):
    lines = [*GOOD, '{"type":"user","uuid":"u9","parentUuid":"r1","mess']
    repo, report, _ = _one_warning(tmp_path, lines, 4, "truncated last line", newline=False)
    assert _exported(repo, report)[-1] == lines[-1]


def test_unknown_type_is_kept(tmp_path):
    lines = [*GOOD, json.dumps({"type": "brand-new-thing", "sessionId": "s-bad", "x": [1, 2]})]
    repo, report, _ = _one_warning(tmp_path, lines, 4, "unknown record type")
    tip = repo.branches(report.sessions[0].session)["main"]
    assert repo.graph.event(tip).type == "claude-code:brand-new-thing"
    assert [json.loads(x) for x in _exported(repo, report)] == [json.loads(x) for x in lines]


def test_dangling_parent(tmp_path):
    lines = [*GOOD, _cc("u2", "nowhere", "next")]
    repo, report, _ = _one_warning(tmp_path, lines, 4, "dangling parent 'nowhere'")
    tip = repo.branches(report.sessions[0].session)["main"]
    assert repo.graph.event(tip).type == "UserPromptSubmitted"


def test_tool_result_without_call(tmp_path):
    lines = [*GOOD, _cc("r2", "r1", [{"type": "tool_result", "tool_use_id": "t-missing",
                                      "content": "?"}])]
    repo, report, _ = _one_warning(tmp_path, lines, 4, "tool result without its call")
    assert report.sessions[0].tool_pairs == 1
    events = [repo.graph.event(e) for e in
              repo.graph.reachable_events(repo.branches(report.sessions[0].session).values())]
    assert not any(e.payload.get("tool_call_id") == "t-missing" for e in events)
    assert len(_exported(repo, report)) == 4


def test_codex_output_without_call(tmp_path):
    meta = {"timestamp": "2026-01-01T00:00:00.000Z", "type": "session_meta",
            "payload": {"id": "cx-1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}}
    out = {"timestamp": "2026-01-01T00:00:01.000Z", "type": "response_item",
           "payload": {"type": "function_call_output", "call_id": "c9", "output": "x"}}
    _one_warning(tmp_path, [json.dumps(meta), json.dumps(out)], 2, "without its call")


def test_pi_dangling_parent_and_unknown_type(tmp_path):
    lines = [json.dumps({"type": "session", "version": 3, "id": "pi-1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}),
             json.dumps({"type": "label", "id": "aaaa0001", "parentId": None, "targetId": "x", "label": "l"}),
             json.dumps({"type": "mystery", "id": "aaaa0002", "parentId": "gone", "v": 1})]
    repo = Repository.memory()
    report = import_paths(repo, [_write(tmp_path, lines, "pi.jsonl")])
    assert sorted((w["line"], w["message"].split()[0]) for w in report.warnings) == [(3, "dangling"), (3, "unknown")]
    assert [json.loads(x) for x in _exported(repo, report, "pi")] == [json.loads(x) for x in lines]


def test_strict_raises_and_writes_nothing(tmp_path):
    path = _write(tmp_path, [*GOOD, "not json at all"])
    repo = Repository.memory()
    with pytest.raises(InvalidInput) as exc:
        import_paths(repo, [path], strict=True)
    assert "s-bad.jsonl:4" in str(exc.value)
    assert exc.value.details["warnings"][0]["line"] == 4
    assert len(repo.objects) == 0 and list(repo.refs.iter_refs("refs/")) == []


def test_strict_accepts_clean_input(tmp_path):
    repo = Repository.memory()
    report = import_paths(repo, [_write(tmp_path, GOOD)], strict=True)
    assert report.warnings == [] and report.sessions[0].tool_pairs == 1


def test_unknown_format_and_missing_path(tmp_path):
    with pytest.raises(NotFound):
        import_paths(Repository.memory(), [tmp_path / "nope.jsonl"])
    with pytest.raises(InvalidInput):
        import_paths(Repository.memory(), [_write(tmp_path, GOOD)], format="word")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(InvalidInput, match="nothing to import"):  # nothing importable at all
        import_paths(Repository.memory(), [empty])
    report = import_paths(Repository.memory(), [empty, _write(tmp_path, GOOD)])
    assert report.warnings[0]["file"] == "empty.jsonl" and len(report.sessions) == 1
