"""`ctx repack` and the dictionary rules of docs/format.md ("Dictionaries", "Repack").

A retrained dictionary never makes a record unreadable: old dictionaries stay named in `dicts`,
old packs stay until their records are rewritten into a durable new pack, and a kill -9 at any
step (or at a random moment) leaves a store that opens, passes fsck and holds every object with
the same body.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import shutil
import signal
import time

import pytest
from click.testing import CliRunner

from ctxstore import codec
from ctxstore.cli.main import cli
from ctxstore.errors import CorruptStore
from ctxstore.maintenance import repack as pr
from ctxstore.maintenance.fsck import check
from ctxstore.repo import Repository
from ctxstore.store.packstore import PackStore, read_dicts_file
from tests.clitools import Ctx

WORDS = ("read the file then run the failing test suite again with verbose output and fix the "
         "import error in module config path resolved patch applied diff hunk line numbers "
         "assert expected actual value returned by function call stack trace").split()


def _text(rnd: random.Random, n: int) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(n)) + f" {rnd.getrandbits(32):08x}"


def _store(root, rounds: int = 3, per: int = 400, seed: int = 5) -> Repository:
    """A store whose first dictionary was trained on one kind of event (a small one, early),
    then filled with others: what a retrained dictionary improves on."""
    rnd = random.Random(seed)
    repo = Repository.init(root)
    repo.objects._dict_samples = 200
    repo.new_session(title="repack")
    for r in range(rounds):
        with repo.transaction(message="fill") as tx:
            for i in range(per):
                if r == 0:
                    payload = {"role": "custom", "text": f"short {i}"}
                else:
                    payload = {"role": "custom", "text": _text(rnd, rnd.randint(20, 120)),
                               "tool": rnd.choice(["bash", "read", "edit"]), "n": i}
                tx.append("MessageAdded", "agent", payload)
        repo.objects.flush()
        repo.objects.seal_active()
    return repo


def _bodies(repo: Repository) -> dict[str, tuple[str, bytes]]:
    return {i: repo.objects.get_raw(i) for i in repo.objects}


def test_repack_retrains_recompresses_and_keeps_every_object(tmp_path):
    repo = _store(tmp_path)
    before = _bodies(repo)
    dicts_before = read_dicts_file(os.path.join(repo.objects.path, "dicts"))[0]
    assert len(dicts_before) == 1
    rep = pr.repack(repo, dict_size=16 * 1024, level=9)
    assert rep.dictionary is not None and rep.dictionary.new, rep.dictionary
    assert rep.bytes_after < rep.bytes_before
    assert rep.payload_after < rep.payload_before
    dicts_after = read_dicts_file(os.path.join(repo.objects.path, "dicts"))[0]
    assert list(dicts_after)[:1] == list(dicts_before)  # rule 2: the old line stays
    assert len(dicts_after) == 2
    repo.close()
    repo = Repository.open(tmp_path / ".ctx")
    assert _bodies(repo) == {**before, **{i: v for i, v in _bodies(repo).items()
                                          if i not in before}}
    assert set(before) <= set(repo.objects)
    assert check(repo, full=True).ok
    # records now use the new dictionary
    new_id = list(dicts_after)[-1]
    pack = max(repo.objects.packs(), key=lambda p: p.count())
    infos = [codec.read_record_header(pack.data(), off) for _, off in pack.index.entries()]
    assert sum(1 for i in infos if i.dict_id == new_id) > len(infos) // 2
    repo.close()


def test_a_dictionary_that_does_not_pay_is_not_added(tmp_path):
    repo = _store(tmp_path, rounds=2, per=150)
    pr.repack(repo, dict_size=16 * 1024, level=3)
    n = len(read_dicts_file(os.path.join(repo.objects.path, "dicts"))[0])
    rep = pr.repack(repo, dict_size=16 * 1024, level=3)  # same objects: nothing new to learn
    assert not rep.dictionary.new and "kept dictionary" in rep.dictionary.reason
    assert len(read_dicts_file(os.path.join(repo.objects.path, "dicts"))[0]) == n
    assert check(repo).ok
    repo.close()


def test_old_dictionary_records_stay_readable(tmp_path):
    """A pack another process still writes to (with the old dictionary) is kept whole by the
    repack; its records, and a copy of an old pack put back afterwards, read fine."""
    repo = _store(tmp_path)
    path = repo.objects.path
    old_pack = max(repo.objects.packs(), key=lambda p: p.count()).path
    saved = tmp_path / "old.pack"
    shutil.copy(old_pack, saved)
    shutil.copy(old_pack[:-5] + ".idx", str(saved)[:-5] + ".idx")
    other = PackStore(path)  # another writer, still on the first dictionary
    held = [other.put("value", {"held": i, "text": "x" * 200}) for i in range(50)]
    other.flush()
    rep = pr.repack(repo, dict_size=16 * 1024, level=9, wait=0.5)
    assert rep.dictionary.new
    assert rep.kept_packs >= 1  # the held active pack
    for obj_id in held:
        assert repo.objects.get(obj_id)["held"] >= 0
    other.close()
    # the old pack comes back (a restored backup): duplicates, every record readable
    shutil.copy(saved, os.path.join(path, "packs", "pack-" + "ab" * 20 + ".pack"))
    shutil.copy(str(saved)[:-5] + ".idx", os.path.join(path, "packs", "pack-" + "ab" * 20 + ".idx"))
    repo.close()
    repo = Repository.open(tmp_path / ".ctx")
    pack = [p for p in repo.objects.packs() if p.name == "pack-" + "ab" * 20][0]
    for raw, off in pack.index.entries():
        type_name, body = pack.read(raw.hex(), off, repo.objects._read, raw)
        assert codec.compute_id(type_name, body) == raw.hex()
    assert check(repo, full=True).ok
    repo.close()


def test_a_reused_dictionary_id_is_refused(tmp_path):
    repo = _store(tmp_path, rounds=1, per=300)
    entries = read_dicts_file(os.path.join(repo.objects.path, "dicts"))[0]
    current = repo.objects._load_dictionary(list(entries)[-1])
    with pytest.raises(CorruptStore, match="already in use"):
        repo.objects.add_dictionary(current)
    repo.close()


# -- kill -9 ------------------------------------------------------------------------------------

def _repack_child(path: str, kill_at: int, names) -> None:
    calls = [0]

    def step(name: str) -> None:
        calls[0] += 1
        if names is not None:
            with open(names, "a") as f:
                f.write(name + "\n")
        if calls[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    repo = Repository.open(path)
    pr.repack(repo, dict_size=16 * 1024, level=9, step=step)
    os._exit(0)


def _run(target, args, timeout=120):
    proc = multiprocessing.get_context("fork").Process(target=target, args=args)
    proc.start()
    proc.join(timeout)
    assert not proc.is_alive(), "repack child hung"
    return proc.exitcode


def _assert_whole(root, before: dict) -> None:
    repo = Repository.open(root / ".ctx")
    try:
        for obj_id, value in before.items():
            assert repo.objects.get_raw(obj_id) == value, obj_id
        report = check(repo, full=True)
        assert report.ok, report.problems[:3]
    finally:
        repo.close()


@pytest.mark.slow
def test_repack_killed_at_each_step_loses_nothing(tmp_path):
    template = tmp_path / "template"
    repo = _store(template)
    before = _bodies(repo)
    repo.close()
    full = tmp_path / "full"
    shutil.copytree(template, full, copy_function=shutil.copy2)
    names = tmp_path / "steps"
    assert _run(_repack_child, (str(full / ".ctx"), 0, str(names))) == 0
    steps = names.read_text().splitlines()
    assert "pack-written" in steps and "pack-deleted" in steps
    for kill_at, name in enumerate(steps, 1):
        work = tmp_path / f"kill-{kill_at}"
        shutil.copytree(template, work, copy_function=shutil.copy2)
        assert _run(_repack_child, (str(work / ".ctx"), kill_at, None)) == -signal.SIGKILL, name
        _assert_whole(work, before)
        repo = Repository.open(work / ".ctx")
        pr.repack(repo, dict_size=16 * 1024, level=3)  # a later repack finishes the job
        repo.close()
        _assert_whole(work, before)


@pytest.mark.slow
def test_repack_killed_at_random_times(tmp_path):
    rnd = random.Random(11)
    repo = _store(tmp_path, rounds=4)
    before = _bodies(repo)
    repo.close()
    ctx = multiprocessing.get_context("fork")
    for _ in range(5):
        proc = ctx.Process(target=_repack_child, args=(str(tmp_path / ".ctx"), -1, None))
        proc.start()
        time.sleep(rnd.uniform(0, 0.6))  # sampling, training, recompressing or deleting
        if proc.is_alive():
            os.kill(proc.pid, signal.SIGKILL)
        proc.join(60)
        _assert_whole(tmp_path, before)


# -- the command --------------------------------------------------------------------------------

def test_cli_repack_json_and_text(tmp_path):
    repo = _store(tmp_path)
    repo.close()
    ctx = Ctx(tmp_path)
    out = ctx.json("repack", "--dict-size", "16384", "--level", "9")
    assert out["bytes_after"] < out["bytes_before"] and out["dictionary"]["new"] is True
    assert out["objects"] > 0
    res = ctx("repack", "--no-retrain", "--level", "3")
    assert "dictionary" in res.stdout and "kept" in res.stdout and "Recompressed" in res.stdout
    assert ctx.json("fsck")["ok"] is True


def test_cli_repack_help_has_examples(tmp_path):
    res = Ctx(tmp_path)("repack", "--help")
    assert "Examples:" in res.stdout and "ctx repack --level 9" in res.stdout


def test_cli_repack_needs_a_store(tmp_path):
    res = CliRunner().invoke(cli, ["--store", str(tmp_path / "nowhere"), "repack"])
    assert res.exit_code != 0
    assert res.stderr.startswith("ctx: error: ") and res.stderr.count("\n") == 1
