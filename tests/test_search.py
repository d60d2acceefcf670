"""`ctx search`: hits, each filter, the one-line and --json shapes, exit codes, and snippets that
stay inert whatever the transcript held (ctxstore/search, docs/search.md)."""

from __future__ import annotations

import json
import shutil

import pytest

from ctxstore.search import SearchFilters, SearchUnavailable, search
from ctxstore.search import index as search_index
from tests.clitools import Ctx
from tests.test_search_index import fresh_snapshot

CODEX = "codex/rollout-genuine-redacted_v0.135.0_exec-smoke_019e9625.jsonl"
HOSTILE = "see \x1b[31mRED\x1b[0m and \u202eevil\u202c <script>alert(1)</script> «fake» zebrafish\rback\x07"


def _events(ctx: Ctx, tmp_path, name: str, events: list[dict]) -> None:
    f = tmp_path / name
    f.write_text("".join(json.dumps(e) + "\n" for e in events))
    ctx("append", "--batch", str(f))


@pytest.fixture
def store(tmp_path, monkeypatch, corpus):
    """Two sessions made here (one with a fork) and one imported Codex session."""
    ctx = Ctx(tmp_path)
    ctx("init")
    monkeypatch.setenv("CTX_FAKE_TIME", "2026-01-10T10:00:00.000Z")
    ctx("new", "--title", "parser work")
    ctx("append", "UserPromptSubmitted", "--actor", "user",
        "--payload", json.dumps({"text": "the flaky parser test fails on whitespace"}))
    _events(ctx, tmp_path, "a.jsonl", [
        {"type": "ToolCallRequested", "actor": "model", "payload": {
            "tool_call_id": "c1", "name": "Bash", "args": {"command": "pytest tests/test_parser.py"}}},
        {"type": "ToolCallFinished", "actor": "tool", "payload": {
            "tool_call_id": "c1", "name": "Bash", "preview": "FAILED test_whitespace tokenizer",
            "size": 40, "truncated": False}},
        {"type": "ToolCallRequested", "actor": "model", "payload": {
            "tool_call_id": "c2", "name": "Edit", "args": {
                "file_path": "/src/proj/src/parser.py", "old_string": "a", "new_string": "b"}}},
        {"type": "ToolCallFinished", "actor": "tool", "payload": {
            "tool_call_id": "c2", "name": "Edit", "preview": "edited the tokenizer", "size": 20,
            "truncated": False}},
    ])
    ctx("fork", "experiment")
    ctx("append", "UserPromptSubmitted", "--actor", "user",
        "--payload", json.dumps({"text": "try the tokenizer rewrite on a branch"}))
    ctx("checkout", "main")
    monkeypatch.setenv("CTX_FAKE_TIME", "2026-03-01T10:00:00.000Z")
    ctx("new", "--title", "hostile")
    ctx("append", "UserPromptSubmitted", "--actor", "user",
        "--payload", json.dumps({"text": HOSTILE}))
    monkeypatch.delenv("CTX_FAKE_TIME")
    ctx("import", str(corpus / CODEX))
    return ctx


def _ids(hits) -> set[str]:
    return {h.event for h in hits}


def test_finds_ranks_and_opens(store):
    out = store("search", "flaky parser").stdout.splitlines()
    assert out, "a hit"
    event, session, kind = out[0].split()[:3]
    assert session.startswith("[") and kind == "prompt"
    assert "«flaky» «parser»" in out[0]
    assert "flaky parser test" in store("show", event).stdout  # `ctx show EVENT` opens it
    hits = store.json("search", "tokenizer")
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert {h["type"] for h in hits} >= {"tool-result", "prompt"}


def test_json_shape(store):
    hits = store.json("search", "pytest OR workspace")
    assert hits
    for h in hits:
        assert set(h) == {"event", "session", "branch", "type", "event_type", "score", "snippet",
                          "ts", "source", "replaced_by", "tool"}
        assert len(h["event"]) == 64 and isinstance(h["score"], float)
    imported = [h for h in hits if h["source"]]
    assert imported and imported[0]["source"]["file"].endswith(".jsonl")
    assert isinstance(imported[0]["source"]["line"], int)


def test_exit_codes(store):
    assert store("search", "nosuchwordanywhere", code=1).stdout == ""
    assert store("search", "--json", "nosuchwordanywhere", code=1).stdout.strip() == "[]"
    store("search", code=2)  # no query: a usage error
    assert "no word" in store.fails(10, "search", '"" ()')
    store("search", "parser", "--since", "not a time", code=10)
    store("search", "parser", "--type", "nonsense", code=2)


def test_phrase_and_prefix(store):
    assert store.json("search", '"parser test"')
    assert not store("search", '"whitespace parser"', code=1).stdout
    assert any("«tokenizer»" in h["snippet"] for h in store.json("search", "tok*"))
    assert store("search", "tokenizerz", code=1)  # a bare word is a whole word (or its stem)
    assert any("«fails»" in h["snippet"] for h in store.json("search", "failing"))  # stems
    assert store.json("search", "test_parser.py")  # punctuation needs no quoting


def test_filters(store, tmp_path):
    repo = _repo(tmp_path)
    every = search(repo, "tokenizer OR parser OR pytest OR zebrafish OR codex", limit=100)
    assert len(every) >= 5

    def only(**kw):
        hits = search(repo, "tokenizer OR parser OR pytest OR zebrafish OR codex", limit=100,
                      filters=SearchFilters(**kw))
        assert hits and len(hits) < len(every), kw  # each filter keeps some, drops some
        return hits

    assert {h.type for h in only(types=("tool-call",))} == {"tool-call"}
    assert {h.tool for h in only(tool="bash")} == {"Bash"}
    assert all(h.type in ("prompt", "tool-result") for h in only(types=("prompt", "tool-result")))
    exp = only(branch="experiment")
    assert any("rewrite" in h.snippet for h in exp)
    assert not any("zebrafish" in h.snippet for h in exp)
    codex = only(harness="codex")
    assert {h.session for h in codex} == {h.session for h in codex if h.source_file}
    assert {h.session for h in only(cwd="/tmp/agent-history-real-agent")} == \
        {h.session for h in codex}
    edited = only(file="src/parser.py")
    assert [h.tool for h in edited] == ["Edit"]
    assert only(file="/src/proj/src/parser.py") == edited
    hostile_sid = next(h.session for h in every if "zebrafish" in h.snippet)
    assert {h.session for h in only(session=hostile_sid)} == {hostile_sid}
    from datetime import UTC, datetime

    late = only(since=datetime(2026, 2, 1, tzinfo=UTC), until=datetime(2026, 4, 1, tzinfo=UTC))
    assert {h.session for h in late} == {hostile_sid}
    early = only(until=datetime(2026, 1, 31, tzinfo=UTC))
    assert hostile_sid not in {h.session for h in early}


def test_cli_filters_reach_the_library(store):
    hits = store.json("search", "tokenizer", "--branch", "experiment", "--type", "prompt")
    assert [h["branch"] for h in hits] == ["experiment"]
    assert store.json("search", "pytest", "--tool", "BASH", "--harness", "ctx")
    store("search", "pytest", "--format", "codex", "--tool", "Bash", code=1)
    assert store.json("search", "parser", "--file", "parser.py", "--since", "2026-01-01",
                      "--until", "2026-01-11")
    sid = store.json("search", "zebrafish")[0]["session"]
    assert store.json("search", "zebrafish", "--session", sid[:8])
    assert store.json("search", "workspace", "--cwd", "/tmp/agent-history-real-agent/codex")


def test_hostile_snippets_are_inert(store):
    line = store("search", "zebrafish").stdout
    hit = store.json("search", "zebrafish")[0]
    for text in (line, hit["snippet"]):
        assert "\x1b" not in text and "\u202e" not in text and "\r" not in text
        assert "\x07" not in text
        assert "\\x1b[0m" in text and "\\u202e" in text
        assert "«zebrafish»" in text and "‹fake›" in text and "«fake»" not in text
    assert "<script>" in hit["snippet"]  # markup is text: shown, never interpreted


def test_reindex_and_damage(store, tmp_path):
    out = store("search", "--reindex").stdout
    assert out.startswith("indexed ") and "events" in out
    repo = _repo(tmp_path)
    before = search_index.snapshot(repo)
    path = search_index.index_path(repo)
    path.write_bytes(b"not a database at all" * 100)
    assert store.json("search", "zebrafish")
    assert search_index.snapshot(repo) == before
    con = search_index.connect(path)
    con.execute("UPDATE meta SET value = 'elsewhere' WHERE key = 'store'")
    con.close()
    st = search_index.catch_up(repo)
    assert "another store" in st.rebuilt
    con = search_index.connect(path)
    con.execute("DELETE FROM covered WHERE ref IN (SELECT ref FROM covered LIMIT 1)")
    con.close()
    store("append", "UserPromptSubmitted", "--payload", '{"text": "one more"}')
    assert "checksum" in search_index.catch_up(repo).rebuilt  # seen when catching up
    assert search_index.snapshot(repo) == fresh_snapshot(store.root)
    con = search_index.connect(path)
    con.execute("UPDATE meta SET value = 'x' WHERE key = 'op_head'")
    con.close()
    assert "checksum" in search_index.catch_up(repo).rebuilt  # seen when opening
    assert search_index.catch_up(repo).up_to_date


def test_without_fts5_says_so_and_scans(store, monkeypatch):
    monkeypatch.setattr(search_index, "fts5_available", lambda: False)
    with pytest.raises(SearchUnavailable, match="FTS5"):
        search_index.catch_up(_repo(store.root))
    res = store("search", "zebrafish")
    assert "no FTS5" in res.stderr and "zebrafish" in res.stdout
    store("search", "nosuchwordanywhere", code=1)


def _repo(root):
    from ctxstore import Repository

    return Repository.open(root / ".ctx")


def test_a_busy_index_is_no_damage(store, tmp_path, monkeypatch):
    from ctxstore.errors import LockHeld

    repo = _repo(tmp_path)
    search_index.catch_up(repo)
    store("append", "UserPromptSubmitted", "--payload", '{"text": "while locked"}')
    holder = search_index.connect(search_index.index_path(repo))
    holder.execute("BEGIN IMMEDIATE")  # another process writing the index
    real = search_index.connect
    monkeypatch.setattr(search_index, "connect", lambda path, **kw: _short_timeout(real, path, **kw))
    try:
        with pytest.raises(LockHeld, match="another process"):
            search_index.catch_up(repo)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    monkeypatch.undo()
    assert search_index.catch_up(repo).events_added == 1  # caught up, not rebuilt
    assert search_index.snapshot(repo) == fresh_snapshot(tmp_path)


def _short_timeout(connect, path, **kw):
    con = connect(path, **kw)
    con.execute("PRAGMA busy_timeout=100")
    return con


def test_memories_are_hits_and_forgetting_one_takes_it_out(store):
    store("memory", "add", "the wombat cache lives in ~/.cache/wombat", "--scope", "project",
          "--source", "HEAD", "--ttl", "30d")
    hits = store.json("search", "wombat", "--type", "memory")
    assert [(h["type"], h["session"], h["branch"]) for h in hits] == [("memory", None, None)]
    assert "wombat" in store("memory", "show", hits[0]["event"]).stdout  # the id opens it
    store("memory", "forget", hits[0]["event"])
    store("search", "wombat", code=1)


def test_an_unusable_cache_folder_is_a_clear_error(store, tmp_path):
    cache = tmp_path / ".ctx" / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    cache.write_text("a file where the cache folder belongs")
    try:
        assert "cannot create the search index's folder" in store.fails(16, "search", "parser")
    finally:
        cache.unlink()
    assert store.json("search", "parser")
