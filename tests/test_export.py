"""Neutral JSONL export: schema, artifacts inline or by reference, and REV forms."""

from __future__ import annotations

import base64
import io
import json

import pytest

from ctxstore.importers import export_session, import_paths
from ctxstore.importers.neutral import export as neutral_export
from ctxstore.repo import Repository
from tests.corpus import corpus_root, require_corpus

SOUND = corpus_root() / "claude-code" / "ccl_jssoundrecorder_queue-operation-thinking_v2.0.42.jsonl"
pytestmark = pytest.mark.usefixtures("corpus")


@pytest.fixture(scope="module")
def imported():
    require_corpus()  # module-scoped: runs before the function-scoped `corpus` fixture
    repo = Repository.memory()
    report = import_paths(repo, [SOUND])
    return repo, report.sessions[0]


def _lines(repo, sid, **kw):
    out = io.StringIO()
    neutral_export(repo, sid, list(repo.branches(sid).values()), out, **kw)
    return [json.loads(x) for x in out.getvalue().splitlines()]


def test_schema_parents_first_and_branches_last(imported):
    repo, s = imported
    lines = _lines(repo, s.session)
    kinds = [x["ctxstore"] for x in lines]
    assert kinds[0] == "session" and kinds[-1] == "branch" and kinds.count("event") == s.events
    seen = set()
    for x in lines[1:-1]:
        assert all(p in seen for p in x["event"]["parents"])
        seen.add(x["id"])
    types = {o["type"] for x in lines[1:-1] for o in x["objects"]}
    assert {"message", "artifact", "blob"} <= types
    # each source line is kept in its first event, not in a separate record object
    assert "record" not in types
    kept = [x["event"]["payload"]["source"] for x in lines[1:-1] if "source" in x["event"]["payload"]]
    assert len(kept) == 211 and all("record" in k or "raw" in k for k in kept)


def test_artifacts_by_reference_only(tmp_path):
    """By reference, an artifact's content is named, not carried; everything else is the same."""
    from ctxstore import ContextManager

    repo = Repository.memory()
    cm = ContextManager.start(repo, "by-ref", "keep artifacts out of the export")
    cm.add_assistant_message("running", tool_calls=[{"id": "c1", "name": "bash", "args": {}}])
    output = "line of output\n" * 2000  # over the artifact threshold
    cm.record_tool_result("c1", output)
    sid = cm.session
    inline = _lines(repo, sid)
    by_ref = _lines(repo, sid, inline_artifacts=False)
    objects = lambda ls: [o for x in ls[1:-1] for o in x["objects"]]  # noqa: E731
    artifacts = [o for o in objects(inline) if o["type"] == "artifact"]
    assert len(artifacts) == 1
    content = artifacts[0]["value"]["content"]
    carried = {o["id"]: o for o in objects(inline)}
    assert base64.b64decode(carried[content]["value"]["base64"]).decode() == output
    # by reference: the same lines, events and objects, minus exactly the artifact's content
    assert [x.get("id") for x in by_ref] == [x.get("id") for x in inline]
    assert [x.get("event") for x in by_ref] == [x.get("event") for x in inline]
    assert [o for o in objects(by_ref)] == [o for o in objects(inline) if o["id"] != content]
    assert any(o["id"] == content for o in objects(inline))  # so the comparison can fail
    # and a store that holds the content takes the by-reference file back with the same ids
    path = tmp_path / "by-ref.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in by_ref), encoding="utf-8")
    report = import_paths(repo, [path])
    assert report.warnings == [] and report.new_events == 0
    assert report.sessions[0].session == sid


def test_imported_outputs_stay_in_a_by_reference_export(imported):
    """Imported outputs are also the line's externalized strings, so the record still carries
    them: by-reference never drops what the source-format export needs."""
    repo, s = imported
    inline = _lines(repo, s.session)
    by_ref = _lines(repo, s.session, inline_artifacts=False)
    blobs = lambda ls: sum(o["type"] == "blob" for x in ls[1:-1] for o in x["objects"])  # noqa: E731
    assert blobs(by_ref) == blobs(inline)
    assert [x.get("id") for x in by_ref] == [x.get("id") for x in inline]


def test_export_by_session_prefix_and_event(imported):
    repo, s = imported
    whole = io.StringIO()
    assert export_session(repo, s.session[:10], "claude-code", whole)["lines"] == 211
    tip = repo.branches(s.session)["main"]
    parent = repo.graph.event(tip).parents[0]
    part = io.StringIO()
    assert export_session(repo, parent, "claude-code", part)["lines"] == 210
