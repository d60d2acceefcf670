"""Retrieval through the Context Manager: scope isolation across projects, expiry and staleness
on a controlled clock, the index as a derived cache (stale → caught up, damaged → rebuilt,
never trusted over the objects), usage records, recall of compacted history, ctx grep --ranked."""

from __future__ import annotations

import sys

import pytest

from ctxstore import ContextManager, Repository
from ctxstore.errors import Unsupported
from ctxstore.memory import edit, forget, scope_logs
from ctxstore.retrieval import RetrievalIndex, index_status
from ctxstore.retrieval import index as index_mod
from tests.clitools import Ctx
from tests.corpus import in_ci

if not in_ci():  # CI installs ctxstore[memory]: there a missing bm25s fails instead of skipping
    pytest.importorskip("bm25s")

T0 = "2026-06-01T12:00:00.000Z"


@pytest.fixture
def clock(monkeypatch):
    def at(ts: str) -> None:
        monkeypatch.setenv("CTX_FAKE_TIME", ts)
    at(T0)
    return at


def _offered(cm, **kw):
    bundle = cm.build_context(budget=20_000, retrieve=True, **kw)
    return {s.data["retrieved"]["id"]: s for s in bundle.segments if s.data.get("retrieved")}


@pytest.fixture
def two_projects(tmp_path, clock):
    repo = Repository.init(tmp_path)
    a = ContextManager.start(repo, "A", "fix the flaky parser tests", repo_root="/src/alpha")
    ea = a.add_user_message("the parser tests are flaky under load")
    b = ContextManager.start(repo, "B", "fix the flaky parser tests", repo_root="/src/beta")
    eb = b.add_user_message("the parser tests are flaky here too")
    yield repo, a, ea, b, eb
    repo.close()


def test_a_project_memory_is_never_offered_in_another_project(two_projects):
    repo, a, ea, b, eb = two_projects
    ma = a.remember("Parser tests: run make test-parser with -j1 to avoid flaky runs",
                    scope="project", sources=[ea], update_policy="until-superseded")
    mb = b.remember("Parser tests in beta use tox -e parser", scope="project", sources=[eb],
                    ttl="30d")
    mg = a.remember("Flaky parser tests usually mean a shared temp dir", scope="global",
                    sources=[ea], ttl="30d")
    ms = a.remember("This session's parser tests flaked twice", scope="session", sources=[ea],
                    ttl="1d")
    got_a, got_b = _offered(a), _offered(b)
    assert set(got_a) == {ma, mg, ms} and set(got_b) == {mb, mg}
    seg = got_a[ma]
    assert seg.kept and seg.kind == "memory" and seg.sources == (ma, ea)
    assert seg.data["retrieved"]["scope"] == "project" and seg.data["retrieved"]["sources"] == (ea,)
    assert ma[:12] in seg.text and "project scope" in seg.text
    # and the index does hold the other project's memory: the scope check, not luck, keeps it out
    idx = RetrievalIndex.open(repo)
    assert mb in {r.id for r, _ in idx.search("parser tests tox beta", k=10, kinds=["memory"])}


def test_expired_and_stale_memories_are_never_offered(two_projects, clock):
    repo, a, ea, _b, _eb = two_projects
    short = a.remember("Parser tests need the staging DB this week", scope="project",
                       sources=[ea], ttl="2d")
    review = a.remember("Parser tests take 3 minutes", scope="project", sources=[ea],
                        update_policy="review-after:7d")
    keep = a.remember("Parser tests live in tests/parser", scope="project", sources=[ea],
                      update_policy="until-superseded")
    assert set(_offered(a)) == {short, review, keep}
    clock("2026-06-04T12:00:00.000Z")  # 3 days later: the 2-day memory has expired
    assert set(_offered(a)) == {review, keep}
    refused = {r["id"]: r["reason"] for r in a.last_retrieval.refused}
    assert refused[short].startswith("expired")
    clock("2026-06-09T12:00:00.000Z")  # 8 days: the review-after:7d memory is stale
    assert set(_offered(a)) == {keep}
    assert "stale" in {r["id"]: r["reason"] for r in a.last_retrieval.refused}[review]
    again = edit(repo, review)  # re-confirmed: a new version, offered again
    assert set(_offered(a)) == {again, keep}


def test_superseded_forgotten_sensitive_and_untrusted_stay_out(two_projects):
    repo, a, ea, _b, _eb = two_projects
    old = a.remember("Parser tests: use pytest -x", scope="project", sources=[ea], ttl="30d")
    new = edit(repo, old, content="Parser tests: use pytest -x -p no:randomly")
    gone = a.remember("Parser tests need Docker", scope="project", sources=[ea], ttl="30d")
    forget(repo, gone)
    secret = a.remember("Parser tests token is in vault path x", scope="project", sources=[ea],
                        ttl="30d", sensitive=True)
    guess = a.remember("Parser tests maybe fail on Fridays", scope="project", sources=[ea],
                       ttl="30d", confidence=0.2)
    planner = a.remember("Parser tests plan: bisect first", scope="project", sources=[ea],
                         ttl="30d", readable_by=["planner"])
    assert set(_offered(a)) == {new}
    why = {r["id"]: r["reason"] for r in a.last_retrieval.refused}
    assert "not live" in why[old] and "not live" in why[gone] and "sensitive" in why[secret]
    assert "confidence" in why[guess] and "not readable" in why[planner]
    assert set(_offered(a, allow_sensitive=True, agent="planner")) == {new, secret, planner}


def test_usage_records_name_the_bundle(two_projects):
    repo, a, ea, _b, _eb = two_projects
    m = a.remember("Parser tests: make test-parser", scope="project", sources=[ea], ttl="30d")
    a.build_context(budget=20_000, retrieve=True, record=True)
    built = a.tip
    (log,) = [lg for lg in scope_logs(repo) if m in lg.records]
    ((bundle, event),) = log.records[m].used_in
    assert event == built and repo.graph.event(built).causality["bundle_id"] == bundle
    assert m in {s["sources"][0] for s in repo.objects.get(bundle)["segments"] if s["kind"] == "memory"}


def test_the_index_is_a_cache_stale_caught_up_damaged_rebuilt(two_projects):
    repo, a, ea, _b, _eb = two_projects
    assert index_status(repo)[0] == "absent"
    m1 = a.remember("Parser tests: make test-parser", scope="project", sources=[ea], ttl="30d")
    idx = RetrievalIndex.open(repo)
    assert idx.how.startswith("rebuilt") and index_status(repo)[0] == "ok"
    m2 = a.remember("Lexer tests: make test-lexer", scope="project", sources=[ea], ttl="30d")
    assert index_status(repo)[0] == "stale"
    idx = RetrievalIndex.open(repo)
    assert idx.how == "updated (+1 rows)" and m2 in idx.ids
    assert RetrievalIndex.open(repo).how == "loaded"
    cache = repo.path / "cache" / "retrieval"
    rows = next(cache.glob("rows-*"))
    rows.write_bytes(rows.read_bytes()[:-3] + b"xyz")
    assert index_status(repo)[0] == "damaged"
    index_mod._OPEN.clear()  # as another process, which has not loaded the index yet
    idx = RetrievalIndex.open(repo)
    assert idx.how.startswith(f"rebuilt ({rows.name} does not match") and {m1, m2} <= idx.ids
    (cache / "manifest.json").write_text("{not json")
    assert RetrievalIndex.open(repo).how.startswith("rebuilt (manifest unreadable")
    import shutil

    shutil.rmtree(cache)
    assert set(_offered(a)) == {m1, m2}


def test_the_index_is_never_trusted_over_the_objects(two_projects, monkeypatch):
    """A row whose group claims this project while the object says another is not offered."""
    from ctxstore.retrieval.index import Row

    repo, a, ea, b, eb = two_projects
    mb = b.remember("Parser tests in beta: tox -e parser", scope="project", sources=[eb], ttl="30d")
    idx = RetrievalIndex.open(repo)
    forged = [Row(r.kind, r.id, "m:project\0/src/alpha" if r.id == mb else r.group, r.source)
              for r in idx.rows]
    monkeypatch.setattr(RetrievalIndex, "open", classmethod(lambda cls, repo, **kw: _with_rows(idx, forged)))
    assert mb not in _offered(a)
    assert "out of scope" in {r["id"]: r["reason"] for r in a.last_retrieval.refused}[mb]


def _with_rows(idx, rows):
    idx.rows, idx._arrays = rows, None
    return idx


def test_artifacts_of_the_project_are_retrieved_with_sources(two_projects):
    repo, a, _ea, b, _eb = two_projects
    log = "collected 40 items\nFAILED tests/parser/test_tokens.py::test_unicode - flaky timeout\n"
    art = a.add_artifact(log + "ok\n" * 200, uri="pytest.log", summary="parser test run")
    ev = a.append_event("ArtifactAdded", "user", {"path": "pytest.log", "kind": "tool_output",
                                                 "size": len(log)}, {"artifact_id": art})
    for i in range(3):
        a.add_user_message(f"unrelated chatter {i}")
    a.compact(keep_recent_tokens=10)
    got = _offered(a, query="parser unicode timeout")
    assert art in got and got[art].kind == "artifact" and got[art].sources == (art, ev)
    assert "test_unicode" in got[art].text
    assert art not in _offered(b, query="parser unicode timeout")  # another project's evidence


def test_recall_returns_what_a_summary_replaced(two_projects):
    repo, a, _ea, _b, _eb = two_projects
    first = a.add_user_message("the tokenizer crashes on emoji in identifiers; " + "detail " * 80)
    for i in range(4):
        a.add_user_message(f"earlier step {i}: " + "context " * 80)
    art = a.add_artifact("Traceback: UnicodeDecodeError in tokenizer.py line 88\n", uri="crash.log")
    a.append_event("ArtifactAdded", "user", {"path": "crash.log", "kind": "tool_output",
                                            "size": 60}, {"artifact_id": art})
    for i in range(4):
        a.add_user_message(f"later step {i}: " + "filler " * 40)
    res = a.compact(keep_recent_tokens=60)
    replaced = set(repo.objects.get(res.compaction_id).source_event_ids)
    assert first in replaced
    everything = a.recall(k=0)
    assert [h.event for h in everything] == list(repo.objects.get(res.compaction_id).source_event_ids)
    hits = a.recall("emoji in identifiers")
    assert hits[0].event == first and hits[0].compaction == res.compaction_id
    assert any(art in h.artifacts for h in a.recall("UnicodeDecodeError"))
    assert all(h.event in replaced for h in hits)


def test_missing_bm25s_is_a_clear_error(two_projects, monkeypatch):
    _repo, a, _ea, _b, _eb = two_projects
    monkeypatch.setitem(sys.modules, "bm25s", None)
    with pytest.raises(Unsupported, match=r"pip install 'ctxstore\[memory\]'"):
        a.build_context(budget=10_000, retrieve=True)
    assert a.build_context(budget=10_000).segments  # retrieval off: no bm25s needed


def test_cli_search_context_retrieve_and_grep_ranked(tmp_path, clock):
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new", "--title", "t", "--goal", "make the parser tests pass")
    ctx("append", "UserPromptSubmitted", "--actor", "user", "--payload",
        '{"text": "the parser tests fail with a unicode error"}')
    mid = ctx.json("memory", "add", "Parser unicode errors come from the lexer's byte mode",
                   "--scope", "project", "--source", "HEAD", "--ttl", "30d")["id"]
    found = ctx.json("memory", "search", "parser unicode")
    assert [f["id"] for f in found] == [mid] and found[0]["score"] > 0
    assert ctx("memory", "search", "kubernetes", code=1)
    out = ctx("context", "--retrieve", "--explain", "--budget", "6000").stdout
    assert f"retrieved: memory {mid[:12]}" in out and "Retrieval: query" in out
    hits = ctx.json("grep", "--ranked", "unicode error parser")
    assert hits and hits[0]["type"] == "UserPromptSubmitted" and hits[0]["kind"] == "event"
    assert ctx("grep", "--ranked", "kubernetes", code=1)
    assert "rows" in ctx("memory", "reindex").stdout
    assert "retrieval index: ok" in ctx("fsck").stdout


def test_cli_an_undone_memory_is_refused_as_undone(tmp_path, clock):
    # after `ctx undo` of an add the index may still hold the row; the refusal said "superseded
    # or forgotten", neither of which happened
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new", "--title", "t", "--goal", "make the parser tests pass")
    ctx("append", "UserPromptSubmitted", "--actor", "user", "--payload",
        '{"text": "the parser tests fail with a unicode error"}')
    gone = ctx.json("memory", "add", "Parser unicode errors come from the lexer",
                    "--scope", "project", "--source", "HEAD", "--ttl", "30d")["id"]
    assert "retrieved: memory" in ctx("context", "--retrieve", "--explain").stdout  # indexed
    ctx("undo")
    kept = ctx.json("memory", "add", "The parser tests need the unicode fixtures",
                    "--scope", "project", "--source", "HEAD", "--ttl", "30d")["id"]
    out = ctx("context", "--retrieve", "--explain").stdout
    assert f"retrieved: memory {kept[:12]}" in out
    if f"memory {gone[:12]}:" in out:  # offered by a stale row, then refused by the objects
        assert f"memory {gone[:12]}: not live (superseded, forgotten or its write undone)" in out
