"""Sessions as a whole: ctx session rename/tag/rm/restore, ctx status in a store whose HEAD names
no session, ctx checkout SESSION (docs/format.md, "Session titles, tags and removal")."""

from __future__ import annotations

import time

import pytest

from ctxstore.maintenance import gc as pm
from ctxstore.porcelain import session_meta as sm
from ctxstore.repo import Repository

from .clitools import Ctx, store_files


@pytest.fixture
def ctx(tmp_path):
    c = Ctx(tmp_path)
    c("init", str(tmp_path))
    return c


def _two_sessions(ctx) -> tuple[str, str]:
    a = ctx("new", "--title", "first").stdout.strip()
    ctx("append", "UserPromptSubmitted", "--actor", "user", "--payload", '{"text": "one"}')
    ctx("fork", "alt")
    b = ctx("new", "--title", "second").stdout.strip()
    return a, b


def test_rename_and_tag_without_touching_the_session(ctx, tmp_path):
    a, _b = _two_sessions(ctx)
    branches = ctx.json("sessions")[1]["branches"]
    assert "Renamed session" in ctx("session", "rename", a[:8], "parser  work").stdout
    ctx("session", "tag", a[:8], "review", "docs")
    meta = ctx.json("session", "tag", a[:8])
    assert meta["title"] == "parser work" and meta["tags"] == ["docs", "review"]
    ctx("session", "tag", a[:8], "-d", "docs")
    assert ctx.json("session", "tag", a[:8])["tags"] == ["review"]
    info = next(s for s in ctx.json("sessions") if s["id"] == a)
    assert info["title"] == "parser work" and info["branches"] == branches  # branches unmoved
    assert ctx.json("cat-object", a)["content"]["title"] == "first"  # the object is immutable
    # the metadata chain is a history of its own, rooted at the session's root event
    chain = ctx.json("log", f"refs/session-meta/{a}")
    assert [e["type"] for e in chain][:3] == ["ctx:session-meta"] * 3
    assert chain[-1]["type"] == "SessionStarted" and chain[-1]["payload"]["session"] == a
    assert chain[0]["payload"] == {"session": a, "title": "parser work", "tags": ["review"]}
    repo = Repository.open(tmp_path / ".ctx")
    try:
        assert repo.session_of_event(chain[0]["id"]) == a
    finally:
        repo.close()
    before = store_files(tmp_path)
    ctx("session", "tag", a[:8], "review")  # no change: nothing written
    assert store_files(tmp_path) == before
    assert "no problems" in ctx("fsck", "--full").stdout


def test_bad_titles_and_tags(ctx):
    a, _ = _two_sessions(ctx)
    ctx.fails(10, "session", "rename", a[:8], "   ")
    ctx.fails(10, "session", "tag", a[:8], "two words")
    ctx.fails(5, "session", "rename", "ffffffff", "x")


def test_rm_and_restore(ctx, tmp_path):
    a, b = _two_sessions(ctx)
    ctx("session", "rename", a[:8], "doomed")
    out = ctx.fails(5, "session", "rm", b[:8])  # HEAD is on b
    assert "HEAD is on session" in out
    res = ctx("session", "rm", a[:8])
    assert f"ctx session restore {a[:12]}" in res.stdout and "2 branches" in res.stdout
    assert "ctx undo" in res.stdout
    assert [s["id"] for s in ctx.json("sessions")] == [b]
    ctx.fails(5, "checkout", a[:8])
    assert ctx.json("reflog", f"refs/sessions/{a}/alt")["entries"][0]["message"] == "session rm"
    ctx("fsck", "--full")  # reflogs still name the tips: nothing dangling
    restored = ctx.json("session", "restore", a[:8])
    assert set(restored["refs"]) == {f"refs/sessions/{a}/main", f"refs/sessions/{a}/alt",
                                     f"refs/session-meta/{a}"}
    info = next(s for s in ctx.json("sessions") if s["id"] == a)
    assert info["title"] == "doomed" and set(info["branches"]) == {"main", "alt"}
    ctx.fails(5, "session", "restore", a[:8])  # not removed any more
    ctx.fails(3, "session", "restore", "abcdef12")


def test_restore_skips_branches_deleted_before(ctx):
    a, b = _two_sessions(ctx)
    ctx("checkout", b[:8])
    ctx("checkout", f"{a[:8]}/main")
    ctx("branch", "-d", "alt")
    ctx("checkout", b[:8])
    ctx("session", "rm", a[:8])
    assert set(ctx.json("session", "restore", a[:8])["refs"]) == {f"refs/sessions/{a}/main"}


def test_removed_session_is_collected_by_gc_only_after_its_reflogs_and_operation_expire(ctx, tmp_path):
    a, b = _two_sessions(ctx)
    ctx("session", "rm", a[:8])
    ctx("gc", "--prune", "now")
    assert ctx.json("cat-object", a)["type"] == "session"  # kept: the reflogs name its tips
    repo = Repository.open(tmp_path / ".ctx")
    try:
        assert a in sm.removed_sessions(repo)
    finally:
        repo.close()
    # 200 days on, the reflog entries and the `session rm` operation have expired
    repo = Repository.open(tmp_path / ".ctx")
    try:
        pm.gc(repo, prune="now", now=time.time() + 200 * 86400)
    finally:
        repo.close()
    assert "no branch, session or object" in ctx.fails(5, "cat-object", a)  # gone for good
    ctx.fails(3, "session", "restore", a[:8])
    assert ctx.json("cat-object", b)["type"] == "session"


def test_status_lists_sessions_when_head_has_none(ctx, tmp_path):
    from ctxstore.repo import Repository

    assert "No session yet" in ctx("status").stdout
    repo = Repository.open(tmp_path)  # a session HEAD is not on (an import would attach it)
    repo.new_session(title="imported prompt", checkout=False)
    repo.close()
    out = ctx("status").stdout
    assert "this store has 1 session" in out and "ctx checkout SESSION" in out
    st = ctx.json("status")
    assert st["head"] is None and st["sessions"] == 1
    sid = st["recent_sessions"][0]["id"]
    assert sid[:12] in out
    # commands that need HEAD say where to go instead of only that HEAD is unborn
    err = ctx.fails(5, "state")
    assert "does not point to an event yet" in err and "1 session(s)" in err
    assert "ctx checkout SESSION" in err
    ctx("checkout", sid)
    assert "imported prompt" in ctx("state").stdout


def test_checkout_session_attaches_to_main(ctx):
    a, b = _two_sessions(ctx)
    res = ctx("checkout", a[:10])
    assert res.stdout.startswith(f"Switched to branch main of session {a[:12]}")
    st = ctx.json("status")
    assert st["session"] == a and st["branch"] == "main" and not st["detached"]
    ctx("append", "UserPromptSubmitted", "--actor", "user", "--payload", '{"text": "more"}')
    assert ctx.json("checkout", b)["ref"] == f"refs/sessions/{b}/main"
    assert ctx.json("checkout", f"{a[:8]}/alt")["ref"] == f"refs/sessions/{a}/alt"
    head = ctx.json("log", "-n", "1")[0]["id"]
    assert ctx.json("checkout", head[:12])["detached"]  # an event still detaches


META_GOLDEN = "683227a96eb08c402de640a1a0ab7c44494a552bc637efc89f21be8657f1d1fa"


def test_metadata_event_golden_vector(monkeypatch):
    """The documented vector (docs/format.md), and that the code writes exactly that shape."""
    from pathlib import Path

    from ctxstore import codec

    doc = (Path(__file__).resolve().parent.parent / "docs" / "format.md").read_text()
    assert META_GOLDEN in doc
    fields = {"type": "ctx:session-meta", "actor": "user",
              "payload": {"session": "a" * 64, "title": "parser work", "tags": ["review"]},
              "parents": ["b" * 64], "generation": 2, "ts": "2026-01-01T00:00:00.000Z",
              "causality": {}}
    assert codec.encode_object("event", fields)[0] == META_GOLDEN
    monkeypatch.setenv("CTX_FAKE_TIME", "2026-01-01T00:00:00.000Z")
    repo = Repository.memory()
    sid, root = repo.new_session(title="t")
    sm.tag(repo, sid, ["review"], [])
    meta = sm.rename(repo, sid, "parser work")
    first = repo.graph.event(meta.event).parents[0]
    assert repo.graph.event(first).parents == (root,)
    want = {**fields, "payload": {"session": sid, "title": "", "tags": ["review"]},
            "parents": [root]}
    assert first == codec.encode_object("event", want)[0]
    assert sm.read_meta(repo, sid).to_dict() == {"session": sid, "title": "parser work",
                                                 "tags": ["review"], "event": meta.event}


def test_session_rm_is_one_undoable_operation(ctx):
    a, b = _two_sessions(ctx)
    ctx("session", "rename", a[:8], "kept")
    ctx("session", "rm", a[:8])
    assert [s["id"] for s in ctx.json("sessions")] == [b]
    ctx("undo")
    info = next(s for s in ctx.json("sessions") if s["id"] == a)
    assert info["title"] == "kept" and set(info["branches"]) == {"main", "alt"}


def test_pack_of_a_session_carries_its_title_and_tags(ctx, tmp_path):
    """`ctx pack SESSION` (and of HEAD's session) includes refs/session-meta/<sid>, so the
    session arrives renamed and tagged; the other session's metadata stays behind."""
    a, b = _two_sessions(ctx)
    ctx("session", "rename", a[:8], "parser work")
    ctx("session", "tag", a[:8], "review")
    ctx("session", "rename", b[:8], "not packed")
    out = str(tmp_path / "a.ctxpack")
    ctx("pack", a[:8], "-o", out)
    dst = Ctx(tmp_path / "dst")
    dst("init", str(tmp_path / "dst"))
    names = {r["name"] for r in dst.json("unpack", out)["refs"]}
    assert f"refs/session-meta/{a}" in names and f"refs/session-meta/{b}" not in names
    info = {s["id"]: s for s in dst.json("sessions")}
    assert list(info) == [a]
    assert info[a]["title"] == "parser work" and info[a]["tags"] == ["review"]


def test_rm_names_the_session_as_ctx_sessions_does(ctx):
    # a harness's own title (pi session_info, Claude Code summary) is what `ctx sessions` shows;
    # `session rm` named the title the session was created with (an imported session's first
    # prompt, e.g. "[REDACTED_PROMPT]" for the corpus's pi smoke run)
    a, _b = _two_sessions(ctx)
    ctx("checkout", a[:8])
    ctx("append", "pi:session_info", "--actor", "system", "--payload", '{"name": "harness title"}')
    ctx("checkout", _b[:8])
    assert next(s for s in ctx.json("sessions") if s["id"] == a)["title"] == "harness title"
    out = ctx("session", "rm", a[:8]).stdout
    assert f"Removed session {a[:12]} 'harness title' (2 branches)" in out
