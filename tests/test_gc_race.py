"""gc and consolidation beside writer processes: a new pack is never an active pack.

gc and consolidation write their new pack as `tmp-…` and then install it. They used to rename
it into place *before* writing its index; for that moment it was a `pack-*.pack` without an
`.idx`, i.e. an unlocked active pack, and a writer process looking for one took it over and
appended its events there. The index written next covered only gc's records, so the writer's
acknowledged events were past its end, where no reader looks: the branch named an event that
was "not in the store" (issue 30, and the gc-beside-writers report of issue 33).

These tests run a real writer process at the exact moment the index is written (the hook is the
index write itself), so they fail every time with the old order, not one run in three.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from ctxstore import Repository
from ctxstore.maintenance import fsck
from ctxstore.maintenance import gc as pm
from ctxstore.store import packconsolidate, repack
from ctxstore.store.pack import IDX_SUFFIX, PACK_SUFFIX
from ctxstore.store.repack import remove_stale_temps

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: One acknowledged append in its own process: open, append, close; prints the new tip.
WRITER = """
import sys
from ctxstore import Repository
with Repository.open(sys.argv[1]) as repo:
    with repo.transaction(message="append") as tx:
        tip = tx.append("UserPromptSubmitted", "user", {"text": sys.argv[2]})
print(tip, flush=True)
"""


def _append_in_a_process(store: str, text: str) -> str:
    out = subprocess.run([sys.executable, "-c", WRITER, store, text], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, check=True)
    return out.stdout.strip()


def _before_index_writes(monkeypatch, before) -> None:
    """Call `before(index path)` ahead of every pack index gc or consolidation writes."""

    def hooked(path, data, fsync=True, real=packconsolidate.write_file_atomically):
        if str(path).endswith(IDX_SUFFIX):
            before(str(path))
        return real(path, data, fsync=fsync)

    for module in (packconsolidate, repack):  # repack held its own name for it before the fix
        monkeypatch.setattr(module, "write_file_atomically", hooked, raising=False)


def _writer_at_index_writes(monkeypatch, store: str) -> list[str]:
    """Make the first pack index gc or consolidation writes run a writer process first (the
    window the old install order left open; only the first: a later one, gc's rescue pack, is
    written under the exclusive gc lock that the writer would wait for); returns the tip the
    writer acknowledged."""
    acked: list[str] = []

    def writer(_path: str) -> None:
        if not acked:
            acked.append(_append_in_a_process(store, "during index write 0"))

    _before_index_writes(monkeypatch, writer)
    return acked


def _repo_with_history(path, appends: int = 5) -> str:
    repo = Repository.init(path)
    repo.new_session("race")
    for i in range(appends):
        with repo.transaction(message="append") as tx:
            tx.append("UserPromptSubmitted", "user", {"text": f"before {i}"})
        repo.objects.seal_active()  # several sealed packs: something for gc to merge
    repo.close()
    return str(path / ".ctx")


def _assert_every_ack_readable(store: str, acked: list[str]) -> None:
    assert acked, "no writer ran while an index was written: nothing was tested"
    with Repository.open(store) as repo:
        tip = repo.refs.read(repo.refs.read_head().ref)
        assert tip == acked[-1]
        texts = [ev.payload.get("text") for _eid, ev in repo.graph.first_parents(tip)]
        assert [t for t in texts if t and t.startswith("during")] == ["during index write 0"]
        report = fsck.check(repo, full=True)
        assert report.problems == []


def _no_pack_without_index_but_active(packs: str) -> None:
    names = set(os.listdir(packs))
    active = [n for n in names if n.endswith(PACK_SUFFIX) and not n.startswith("tmp-")
              and n[:-len(PACK_SUFFIX)] + IDX_SUFFIX not in names]
    assert len(active) <= 1, active  # at most the last writer's own pack


def test_a_writer_during_gcs_index_write_keeps_its_append(tmp_path, monkeypatch):
    store = _repo_with_history(tmp_path)
    acked = _writer_at_index_writes(monkeypatch, store)
    with Repository.open(store) as repo:
        res = pm.gc(repo, prune="now", wait=30)
    assert res.packs_before > res.packs_after, "gc merged nothing: nothing was tested"
    monkeypatch.undo()
    _assert_every_ack_readable(store, acked)
    _no_pack_without_index_but_active(os.path.join(store, "objects", "packs"))


def test_a_writer_during_consolidations_index_write_keeps_its_append(tmp_path, monkeypatch):
    store = _repo_with_history(tmp_path, appends=6)
    packs = os.path.join(store, "objects", "packs")
    acked = _writer_at_index_writes(monkeypatch, store)
    merged = packconsolidate.consolidate(packs, max_packs=2)
    assert len(merged) >= 2, "consolidation merged nothing: nothing was tested"
    monkeypatch.undo()
    _assert_every_ack_readable(store, acked)
    _no_pack_without_index_but_active(packs)


@pytest.mark.parametrize("install", ["gc", "consolidation"])
def test_an_installed_pack_has_its_index_before_its_name(tmp_path, monkeypatch, install):
    """The ordering itself (format.md "Write ordering" 6): when the new pack's index is
    written, no `pack-*.pack` of that name exists yet."""
    store = _repo_with_history(tmp_path, appends=6)
    packs = os.path.join(store, "objects", "packs")
    seen: list[bool] = []

    _before_index_writes(monkeypatch, lambda path: seen.append(
        os.path.exists(path[:-len(IDX_SUFFIX)] + PACK_SUFFIX)))
    if install == "gc":
        with Repository.open(store) as repo:
            pm.gc(repo, prune="now")
    else:
        assert packconsolidate.consolidate(packs, max_packs=2)
    assert seen and not any(seen), seen


def test_an_index_left_without_its_pack_goes_after_an_hour(tmp_path):
    """A kill between a new pack's index and its rename leaves the index alone (and the tmp
    pack): readers ignore it, and gc removes both once they are an hour old."""
    names = ["pack-" + "a" * 40 + IDX_SUFFIX, "tmp-pack-" + "a" * 40 + PACK_SUFFIX,
             "pack-" + "b" * 40 + IDX_SUFFIX, "pack-" + "b" * 40 + PACK_SUFFIX,
             "pack-" + "c" * 40 + IDX_SUFFIX]
    for name in names:
        (tmp_path / name).write_bytes(b"x")
        if not name.startswith("pack-" + "c"):
            os.utime(tmp_path / name, (0, 0))
    removed = remove_stale_temps(str(tmp_path))
    assert sorted(os.path.basename(p) for p in removed) == sorted(names[:2])
    assert sorted(os.listdir(tmp_path)) == sorted(names[2:])  # a sealed pack; a young index


@pytest.mark.slow
def test_gc_beside_writer_processes_on_the_default_path_loses_no_append(tmp_path):
    """The report itself, journal off: two processes open the store, append and close, over
    and over, while a third runs `gc --prune=now` in a loop. Before the fix about one run in
    three ended with the branch naming an event that was gone."""
    from tests.test_journal_crash import GC, GC_WRITER, _spawn

    repo = Repository.init(tmp_path)
    repo.new_session("race")
    repo.close()
    store = tmp_path / ".ctx"
    # each writer pauses 20 ms between appends and gc waits up to 5 s (not 0.5) for them to let
    # go of the store: two writers back to back can starve gc of its exclusive lock for their
    # whole minute on loaded cores, and then nothing is tested
    writer = GC_WRITER.replace("    i += 1\n", "    i += 1\n    time.sleep(0.02)\n")
    assert writer != GC_WRITER and "wait=0.5" in GC
    writers = [_spawn(writer, store, f"g{w}") for w in range(2)]
    collector = _spawn(GC.replace("wait=0.5", "wait=5"), store, time.time() + 600)
    acknowledged = []
    for w in writers:
        out, err = w.communicate(timeout=600)
        assert w.returncode == 0, err
        assert "not in the store" not in err, err
        acknowledged += out.splitlines()
    collector.send_signal(signal.SIGTERM)  # a kill mid-gc loses nothing either
    _, gc_err = collector.communicate(timeout=60)
    assert (store / "gc-ran").exists(), f"no gc finished beside the writers: {gc_err[-2000:]}"
    with Repository.open(store) as repo:
        tip = repo.refs.read(repo.refs.read_head().ref)
        texts = [ev.payload.get("text") for _eid, ev in repo.graph.first_parents(tip)]
        assert sorted(t for t in texts if t and t[0] == "g") == sorted(acknowledged)
        assert fsck.check(repo, full=True).problems == []
