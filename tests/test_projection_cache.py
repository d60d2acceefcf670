"""The projection cache (.ctx/cache/projections/, docs/format.md): a derived shortcut that is
never trusted over the events. Every answer must equal a fold from the root, whatever state
the cache files are in."""

from __future__ import annotations

import os

import pytest

from ctxstore.repo import Repository
from ctxstore.state import projection_cache
from ctxstore.state.projector import Projector


def _store(tmp_path, n: int = 40) -> tuple[Repository, list[str]]:
    repo = Repository.init(tmp_path)
    repo.new_session("cache")
    ids = []
    with repo.transaction() as tx:
        for i in range(n):
            kind = "UserPromptSubmitted" if i % 2 == 0 else "FileRead"
            payload = {"text": f"goal {i}"} if i % 2 == 0 else {"path": f"src/f{i}.py"}
            ids.append(tx.append(kind, "user" if i % 2 == 0 else "tool", payload))
    return repo, ids


def _fresh(repo: Repository, tip: str):
    return Projector(repo).project(tip, use_snapshots=False)


def test_second_projection_reads_the_cache_and_agrees(tmp_path):
    repo, ids = _store(tmp_path)
    first = Projector(repo).project(ids[-1])
    assert (tmp_path / ".ctx" / "cache" / "projections" / ids[-1]).is_file()
    again = Projector(repo).project(ids[-1])
    assert again == first == _fresh(repo, ids[-1])


def test_a_later_tip_folds_on_from_a_cached_ancestor(tmp_path, monkeypatch):
    repo, ids = _store(tmp_path)
    Projector(repo).project(ids[20])
    folded: list[int] = []
    from ctxstore.state import folds

    real = folds.project
    monkeypatch.setattr(folds, "project", lambda evs, **kw: folded.append(len(evs)) or real(evs, **kw))
    got = Projector(repo).project(ids[-1])
    assert folded == [len(ids) - 21]  # only the events after the cached one
    assert got == _fresh(repo, ids[-1])


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other_event", "empty"])
def test_a_damaged_entry_is_ignored_and_removed(tmp_path, damage):
    repo, ids = _store(tmp_path)
    Projector(repo).project(ids[-1])
    path = tmp_path / ".ctx" / "cache" / "projections" / ids[-1]
    good = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(b"\xc1not msgpack")
    elif damage == "truncated":
        path.write_bytes(good[: len(good) // 2])
    elif damage == "other_event":  # a valid projection stored under the wrong name
        Projector(repo).project(ids[10])
        path.write_bytes((path.parent / ids[10]).read_bytes())
    else:
        path.write_bytes(b"")
    got = Projector(repo).project(ids[-1])
    assert got == _fresh(repo, ids[-1])
    assert path.read_bytes() != b"" and path.read_bytes() != b"\xc1not msgpack"


def test_the_cache_stays_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(projection_cache, "KEEP", 5)
    repo, ids = _store(tmp_path, 30)
    for i, eid in enumerate(ids[::2]):
        Projector(repo).project(eid)
        os.utime(tmp_path / ".ctx" / "cache" / "projections" / eid, ns=(i, i))
    left = os.listdir(tmp_path / ".ctx" / "cache" / "projections")
    assert len(left) == 5
    assert ids[::2][-1] in left  # the newest survive


def test_deleting_the_cache_changes_nothing(tmp_path):
    repo, ids = _store(tmp_path)
    want = Projector(repo).project(ids[-1])
    for name in os.listdir(tmp_path / ".ctx" / "cache" / "projections"):
        os.unlink(tmp_path / ".ctx" / "cache" / "projections" / name)
    assert Projector(repo).project(ids[-1]) == want


def test_ctx_state_json_is_the_same_bytes_from_the_cache_and_from_a_fold(tmp_path):
    from tests.clitools import Ctx

    repo, _ids = _store(tmp_path)
    repo.close()
    ctx = Ctx(tmp_path)
    folded = ctx("state", "--json").stdout
    cached = ctx("state", "--json").stdout
    assert (tmp_path / ".ctx" / "cache" / "projections").is_dir()
    assert cached == folded
