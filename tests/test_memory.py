"""Governed memory: invariants 10 and 11 over random operations, the CLI's refusals and
output, undo of every memory operation, the review flow from a real compaction, packs."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxstore import ContextManager, Repository
from ctxstore.errors import MemoryRefused, NotFound
from ctxstore.memory import MemorySpec, edit, forget, remember, review, scope_logs
from ctxstore.memory.governance import violations
from ctxstore.objects.memory import Memory
from ctxstore.repo.operations import undo
from tests.clitools import Ctx


def _live_and_all(repo):
    logs = scope_logs(repo)
    return ([r for log in logs for r in log.live], [r for log in logs for r in log.records.values()])


@pytest.fixture
def proj(tmp_path):
    repo = Repository.init(tmp_path)
    cm = ContextManager.start(repo, "memory", "keep the parser green", repo_root="/src/parser")
    ev = cm.add_user_message("tests run with make test-parser")
    yield repo, cm, ev
    repo.close()


# -- invariants 10 and 11 as properties ------------------------------------------------------------

_SCOPES = st.sampled_from(["project", "session", "global", "user", "workspace", "nowhere", None,
                           "project:/src/other"])
_EXPIRY = st.sampled_from([{}, {"ttl": "30d"}, {"expires": "2999-01-01"}, {"ttl": "nonsense"},
                           {"update_policy": "until-superseded"},
                           {"update_policy": "review-after:7d"}, {"update_policy": "whenever"},
                           {"expires": "2001-01-01"}])
_SOURCES = st.sampled_from(["event", "none", "bogus", "event+bogus", "message"])
_OPS = st.lists(st.one_of(
    st.tuples(st.just("add"), _SCOPES, _EXPIRY, _SOURCES, st.text(min_size=0, max_size=12)),
    st.tuples(st.just("edit"), st.integers(0, 5), _EXPIRY, _SOURCES, st.text(max_size=12)),
    st.tuples(st.just("forget"), st.integers(0, 5)),
    st.tuples(st.just("undo"),),
), min_size=1, max_size=12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS)
def test_invariants_10_and_11_hold_over_random_operations(tmp_path_factory, ops):
    """Whatever sequence of adds, edits, forgets and undos runs, every memory any scope's
    history names has source refs that are objects of the store (inv. 10), a scope with a key
    and an expiry or update policy (inv. 11); a refused write moves no ref."""
    repo = Repository.init(tmp_path_factory.mktemp("mem"))
    cm = ContextManager.start(repo, "p", "g", repo_root="/src/p")
    ev = cm.add_user_message("hello")
    msg = repo.graph.event(ev).causality["message_id"]
    sources = {"event": [ev], "none": [], "bogus": ["f" * 64], "event+bogus": [ev, "0" * 64],
               "message": [msg]}
    for op in ops:
        before = repo.refs.read_op_head()
        ids = [r.id for r in _live_and_all(repo)[0]]
        try:
            if op[0] == "add":
                _, scope, expiry, src, text = op
                remember(repo, MemorySpec(content=text, scope=scope, sources=sources[src], **expiry))
            elif op[0] == "edit" and ids:
                _, i, expiry, src, text = op
                edit(repo, ids[i % len(ids)], content=text or None, sources=sources[src], **expiry)
            elif op[0] == "forget" and ids:
                forget(repo, ids[op[1] % len(ids)])
            elif op[0] == "undo":
                undo(repo)
        except (MemoryRefused, NotFound) as exc:
            assert repo.refs.read_op_head() == before, f"refused {op} but a ref moved: {exc}"
        for rec in _live_and_all(repo)[1]:
            mem = rec.memory
            assert violations(mem) == [], (op, mem)
            assert mem.source_refs and all(s in repo.objects for s in mem.source_refs)
            assert mem.scope in ("project", "session", "global", "user", "workspace")
            assert mem.scope == "global" or mem.scope_key
            assert mem.expires_at or mem.update_policy
    repo.close()


def test_refusals_name_the_invariant(proj):
    repo, _cm, ev = proj
    with pytest.raises(MemoryRefused, match="invariant 10"):
        remember(repo, content="x", scope="project", sources=[], ttl="1d")
    with pytest.raises(MemoryRefused, match="invariant 10"):
        remember(repo, content="x", scope="project", sources=["abcd" * 16], ttl="1d")
    with pytest.raises(MemoryRefused, match="without scope.*invariant 11"):
        remember(repo, content="x", scope=None, sources=[ev], ttl="1d")
    with pytest.raises(MemoryRefused, match="expiry or update policy.*invariant 11"):
        remember(repo, content="x", scope="project", sources=[ev])
    with pytest.raises(MemoryRefused, match="not in the future"):
        remember(repo, content="x", scope="project", sources=[ev], expires="2001-01-01")
    with pytest.raises(MemoryRefused, match="unknown memory scope"):
        remember(repo, content="x", scope="team", sources=[ev], ttl="1d")
    assert scope_logs(repo) == []


def test_a_stored_memory_breaking_the_rules_is_reported_by_fsck(proj):
    from ctxstore.maintenance import fsck

    repo, _cm, ev = proj
    remember(repo, content="fine", scope="global", sources=[ev], ttl="1d")
    # a writer that bypassed the governance (a bug, a foreign tool) left this behind
    bad = repo.objects.put_object(Memory("project", "/x", "fact", "no sources", ()))
    with repo.transaction(message="bypass") as tx:
        tx.create_ref("refs/memory/project/bypass", tx.event(
            "MemoryWritten", "user", {"memory_id": bad, "scope": "project", "scope_key": "/x"}))
    report = fsck.check(repo, full=True)
    kinds = {(p.kind, p.id) for p in report.problems}
    assert ("memory", bad) in kinds and len([k for k in kinds if k[0] == "memory"]) == 1


# -- history, edit, forget, undo -------------------------------------------------------------------

def test_edit_supersedes_and_forget_keeps_history(proj):
    repo, _cm, ev = proj
    m1 = remember(repo, content="make test", scope="project", sources=[ev],
                  update_policy="until-superseded")
    m2 = edit(repo, m1[:10], content="make check")
    assert repo.objects.get(m2).supersedes == m1 and repo.objects.get(m2).created == repo.objects.get(m1).created
    with pytest.raises(MemoryRefused, match="superseded"):
        edit(repo, m1, content="again")
    forget(repo, m2, reason="moved to CI")
    (log,) = scope_logs(repo)
    assert [(r.id, r.status) for r in log.records.values()] == [(m1, "superseded"), (m2, "forgotten")]
    assert log.ref.startswith("refs/memory/project/parser-") and log.scope_key == "/src/parser"


def test_every_memory_operation_is_undoable(tmp_path):
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new", "--title", "t")
    ctx("append", "UserPromptSubmitted", "--actor", "user", "--payload", '{"text": "use make"}')
    mid = ctx.json("memory", "add", "use make", "--scope", "project", "--source", "HEAD",
                   "--ttl", "30d")["id"]
    new = ctx.json("memory", "edit", mid[:8], "use make check")["id"]
    ctx("undo")  # the edit
    assert [m["id"] for m in ctx.json("memory", "list")] == [mid]
    ctx("undo")  # undoing the undo redoes the edit
    assert [m["id"] for m in ctx.json("memory", "list")] == [new]
    ctx("memory", "forget", new)
    assert ctx.json("memory", "list") == []
    ctx("undo")  # the forget
    assert [m["id"] for m in ctx.json("memory", "list")] == [new]
    other = ctx.json("memory", "add", "other", "--scope", "global", "--source", "HEAD",
                     "--ttl", "1d")["id"]
    ctx("undo")  # the add: the global scope's history is gone again
    assert [m["id"] for m in ctx.json("memory", "list")] == [new] and other != new
    assert "memory" in ctx("op", "log").stdout


# -- CLI -------------------------------------------------------------------------------------------

def test_cli_add_refusals_are_one_line_exit_10(tmp_path):
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new", "--title", "t")
    ctx("append", "UserPromptSubmitted", "--actor", "user", "--payload", '{"text": "x"}')
    assert "invariant 10" in ctx.fails(10, "memory", "add", "x", "--scope", "project", "--ttl", "1d")
    assert "invariant 11" in ctx.fails(10, "memory", "add", "x", "--source", "HEAD", "--ttl", "1d")
    assert "invariant 11" in ctx.fails(10, "memory", "add", "x", "--scope", "global", "--source", "HEAD")
    assert "not both" in ctx.fails(10, "memory", "add", "x", "--scope", "global", "--source",
                                   "HEAD", "--ttl", "1d", "--expires", "2999-01-01")
    assert "cannot read" in ctx.fails(10, "memory", "add", "x", "--scope", "global", "--source",
                                      "HEAD", "--ttl", "soon")
    assert ctx.json("memory", "list") == []


def test_cli_expires_takes_a_date_and_points_an_age_to_ttl(tmp_path):
    # `--expires 3d` used to be read as three days ago and refused as "not in the future"
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new", "--title", "t")
    ctx("append", "UserPromptSubmitted", "--actor", "user", "--payload", '{"text": "x"}')
    for when in ("3d", "never", "soon"):
        err = ctx.fails(10, "memory", "add", "x", "--scope", "global", "--source", "HEAD",
                        "--expires", when)
        assert f"--expires: cannot read '{when}' as a date or time" in err and "--ttl AGE" in err
        assert len(err.strip().splitlines()) == 1
    assert "not in the future" in ctx.fails(10, "memory", "add", "x", "--scope", "global",
                                            "--source", "HEAD", "--expires", "2001-01-01")
    m = ctx.json("memory", "add", "x", "--scope", "global", "--source", "HEAD",
                 "--expires", "2999-01-31T18:00Z")
    assert m["expires_at"].startswith("2999-01-31T18:00")


def test_cli_show_lists_versions_and_json_fields(tmp_path):
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new", "--title", "t")
    ctx("append", "UserPromptSubmitted", "--actor", "user", "--payload", '{"text": "x"}')
    m = ctx.json("memory", "add", "Deploys need VPN", "--scope", "user:ada", "--source", "HEAD",
                 "--update-policy", "review-after:30d", "--keyword", "deploy", "--sensitive",
                 "--readable-by", "planner", "--kind", "instruction", "--priority", "80")
    assert m["scope"] == "user" and m["scope_key"] == "ada" and m["sensitive"] is True
    assert m["readable_by"] == ["planner"] and m["keywords"] == ["deploy"] and m["priority"] == 80
    n = ctx.json("memory", "edit", m["id"], "Deploys need the VPN and 2FA")
    shown = ctx.json("memory", "show", m["id"][:8])
    assert shown["status"] == "superseded" and shown["superseded_by"] == n["id"]
    assert [v["id"] for v in shown["versions"]] == [n["id"], m["id"]]
    text = ctx("memory", "show", n["id"]).stdout
    assert "versions (newest first)" in text and "review-after:30d" in text
    assert len(ctx.json("memory", "list", "--history")) == 2
    assert ctx.fails(3, "memory", "show", "ffff")


# -- review ------------------------------------------------------------------------------------------

def _compacted(repo):
    cm = ContextManager.start(repo, "review", "ship the parser", repo_root="/src/parser")
    cm.add_user_message("the parser must keep its public API")
    cm.update_state({"facts_add": [{"content": "The parser tests run with make test-parser",
                                    "confidence": 0.9}],
                     "decisions_add": [{"decision": "Use a recursive-descent parser",
                                        "rationale": "error messages"}]})
    for i in range(6):
        cm.add_user_message(f"step {i}: " + "words " * 60)
    res = cm.compact(keep_recent_tokens=50)
    assert res.committed
    return cm, res


def test_review_flow_from_a_real_compaction(tmp_path):
    repo = Repository.init(tmp_path)
    cm, res = _compacted(repo)
    rec = repo.objects.get(res.compaction_id)
    assert {c["kind"] for c in rec.memory_candidates} == {"fact", "decision"}
    assert scope_logs(repo) == []  # never promoted automatically
    pending = review.pending(repo)
    assert [c.content for c in pending] == ["The parser tests run with make test-parser",
                                            "Use a recursive-descent parser (error messages)"]
    fact, decision = pending
    with pytest.raises(MemoryRefused, match="invariant 11"):
        review.accept(repo, fact.key, scope="project")
    with pytest.raises(MemoryRefused, match="without scope"):
        review.accept(repo, fact.key, scope=None, ttl="90d")
    mid = review.accept(repo, fact.key, scope="project", ttl="90d")
    mem = repo.objects.get(mid)
    assert res.compaction_id in mem.source_refs and len(mem.source_refs) >= 2
    assert mem.origin["via"] == "review" and mem.scope_key == "/src/parser"
    review.reject(repo, decision.key, reason="not settled")
    assert review.pending(repo) == []
    with pytest.raises(NotFound):
        review.accept(repo, decision.key, scope="project", ttl="1d")
    undo(repo)  # the reject
    assert [c.key for c in review.pending(repo)] == [decision.key]
    repo.close()


def test_review_cli_accept_edit_reject_and_scan(tmp_path):
    repo = Repository.init(tmp_path)
    _cm, res = _compacted(repo)
    repo.close()
    ctx = Ctx(tmp_path)
    items = ctx.json("memory", "review")
    assert len(items) == 2 and items[0]["key"] == f"{res.compaction_id[:12]}:0"
    assert "COMPACTION:N" not in ctx("memory", "review").stdout
    ctx.fails(10, "memory", "review", "accept", items[0]["key"], "--scope", "project")
    m = ctx.json("memory", "review", "edit", items[0]["key"], "Parser tests: make test-parser",
                 "--scope", "global", "--update-policy", "until-superseded")
    assert m["content"] == "Parser tests: make test-parser" and m["origin"]["edited"] is True
    ctx("memory", "review", "reject", items[1]["key"])
    assert ctx.json("memory", "review") == []
    assert "no memory candidates" in ctx("memory", "review", "--scan").stdout


def test_scan_queues_compactions_the_queue_missed(tmp_path):
    repo = Repository.init(tmp_path)
    _cm, res = _compacted(repo)
    with repo.transaction(message="drop the queue") as tx:  # as a store written before the queue
        tx.delete_ref(review.REVIEW_REF)
    assert review.pending(repo) == [] and review.scan(repo) == [res.compaction_id]
    assert review.enqueue(repo, review.scan(repo)) == 1 and len(review.pending(repo)) == 2
    repo.close()


# -- packs -----------------------------------------------------------------------------------------

def test_memory_travels_with_packs(tmp_path):
    a, b = Ctx(tmp_path / "a"), Ctx(tmp_path / "b")
    a("init", str(tmp_path / "a"))
    a("new", "--title", "t")
    a("append", "UserPromptSubmitted", "--actor", "user", "--payload", '{"text": "x"}')
    a("memory", "add", "global knowledge", "--scope", "global", "--source", "HEAD", "--ttl", "30d")
    mid = a.json("memory", "add", "v1", "--scope", "global", "--source", "HEAD", "--ttl", "30d")["id"]
    a("memory", "edit", mid, "v2")
    pack = tmp_path / "all.ctxpack"
    a("pack", "--all", "-o", str(pack))
    b("init", str(tmp_path / "b"))
    b("unpack", str(pack))
    # received memories are never live before review (issue 28; docs/security.md): the
    # whole history travels, kept under refs/memory-received/, and the live ones are queued
    assert b.json("memory", "list", "--history") == []
    pending = b.json("memory", "review")
    assert sorted(c["content"] for c in pending) == ["global knowledge", "v2"]
    assert {c["origin"] for c in pending} == {"pack all.ctxpack"}
    from ctxstore.memory.log import read_scope
    from ctxstore.repo import Repository

    repo = Repository.open(tmp_path / "b" / ".ctx")
    try:
        kept = [read_scope(repo, ref) for ref, _ in repo.refs.iter_refs("refs/memory-received/")]
        assert {mid for log in kept for mid in log.records} == \
            {m["id"] for m in a.json("memory", "list", "--history")}
    finally:
        repo.close()
    b("fsck", "--full")


def test_many_writes_in_one_transaction_chain_in_order(proj):
    from ctxstore.memory.governance import build, write

    repo, _cm, ev = proj
    with repo.transaction(message="batch") as tx:
        ids = [write(repo, build(repo, MemorySpec(content=f"m{i}", scope=scope, sources=[ev],
                                                  ttl="1d")), tx=tx)
               for i, scope in enumerate(["global", "global", "project", "global"])]
    by_scope = {log.scope: [r.id for r in log.records.values()] for log in scope_logs(repo)}
    assert by_scope == {"global": [ids[0], ids[1], ids[3]], "project": [ids[2]]}


def test_a_session_pack_carries_its_session_scope_memories(tmp_path):
    a, b = Ctx(tmp_path / "a"), Ctx(tmp_path / "b")
    a("init", str(tmp_path / "a"))
    a("new", "--title", "t")
    a("append", "UserPromptSubmitted", "--actor", "user", "--payload", '{"text": "x"}')
    mine = a.json("memory", "add", "this session's note", "--scope", "session", "--source", "HEAD",
                  "--ttl", "30d")["id"]
    a("memory", "add", "project-wide", "--scope", "project", "--source", "HEAD", "--ttl", "30d")
    pack = tmp_path / "s.ctxpack"
    a("pack", "-o", str(pack))
    b("init", str(tmp_path / "b"))
    b("unpack", str(pack))
    # only the session's own scope travelled, and it waits for review (issue 28)
    assert b.json("memory", "list") == []
    assert [c["source_refs"] for c in b.json("memory", "review")] == [[mine]]
