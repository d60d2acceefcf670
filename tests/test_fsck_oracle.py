"""fsck against an independent oracle: each object a reachable object names is removed in turn
(a copy of the store without it), and fsck --full must report exactly that object as missing —
the oracle (tests/oracles/reachability.py) decides which objects are named and by whom, from a
naive walk over every object, not from the link walk fsck itself uses. A field fsck's walk
forgot would show up here as a removal fsck does not notice."""

from __future__ import annotations

import shutil

import pytest

from ctxstore import ContextManager
from ctxstore.maintenance import fsck as fsck_repo
from ctxstore.repo import Repository
from tests.oracles import reachability as oracle
from tests.test_links import build_repo


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A repository with every kind of linked object: build_repo's session (messages, artifact
    and its blob, compaction, a fork) plus a managed session with a snapshot-bearing history."""
    path = tmp_path_factory.mktemp("fsck-oracle")
    repo, info = build_repo(path)
    cm = ContextManager.start(repo, "second", "exercise the manager")
    cm.add_user_message("go")
    cm.add_assistant_message("ok", tool_calls=[{"id": "c9", "name": "bash", "args": {"x": 1}}])
    cm.record_tool_result("c9", "out\n" * 3000)
    cm.build_context(budget=8000, record=True)
    repo.objects.flush()
    graph = oracle.ObjectGraph(repo.objects)
    roots = oracle.roots(path / ".ctx", graph)
    live = graph.closure(roots)
    repo.close()
    return path, graph, roots, live


def _copy_without(src, dst, graph, victim):
    """A repository with every object of `src` but `victim`, and the same refs and logs."""
    repo = Repository.init(dst)
    src_repo = Repository.open(src)
    for oid in sorted(graph.ids - {victim}):
        type_name, body = src_repo.objects.get_raw(oid)
        repo.objects.put_body(type_name, body, oid)
    src_repo.close()
    repo.close()
    for name in ("refs", "logs"):
        shutil.rmtree(dst / ".ctx" / name, ignore_errors=True)
        shutil.copytree(src / ".ctx" / name, dst / ".ctx" / name)
    shutil.copy(src / ".ctx" / "HEAD", dst / ".ctx" / "HEAD")
    return Repository.open(dst)


def test_a_complete_copy_is_clean(source, tmp_path):
    path, graph, _, _ = source
    repo = _copy_without(path, tmp_path / "copy", graph, victim="")
    assert fsck_repo.check(repo, full=True).problems == []


def test_every_named_object_once_removed_is_reported_missing(source, tmp_path):
    path, graph, roots, live = source
    # every live object that some live object names, except what only roots name (a removed
    # ref target is a ref problem, not a missing link) and what nothing reads through links
    named_by = {}
    for oid in live:
        for nxt in graph.edges[oid]:
            named_by.setdefault(nxt, set()).add(oid)
    victims = sorted(v for v in named_by if v not in roots and graph.types[v] != "zdict")
    kinds = {graph.types[v] for v in victims}
    assert {"event", "message", "artifact", "blob", "compaction", "session"} <= kinds, kinds
    for n, victim in enumerate(victims):
        repo = _copy_without(path, tmp_path / f"without-{n}", graph, victim)
        problems = fsck_repo.check(repo, full=True).problems
        repo.close()
        missing = [p for p in problems if p.kind == "missing"]
        assert [p.id for p in missing] == [victim], (graph.types[victim], problems)
        assert any(namer in missing[0].message for namer in named_by[victim]), missing[0].message


def test_a_ref_naming_no_object_is_reported(source, tmp_path):
    path, graph, _, _ = source
    repo = _copy_without(path, tmp_path / "copy", graph, victim="")
    refs = oracle.ref_files(tmp_path / "copy" / ".ctx")
    name = sorted(refs)[0]
    ghost = "e" * 64
    (tmp_path / "copy" / ".ctx" / name).write_text(ghost + "\n")
    problems = fsck_repo.check(repo, full=True).problems
    assert any(p.id == ghost or ghost in p.message for p in problems), problems
