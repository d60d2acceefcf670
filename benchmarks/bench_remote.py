"""Issue 15's benchmark: sessions through a git remote (a bare repository on local disk).

    .venv/bin/python -m benchmarks.bench_remote            # quick: 20k events (the default)
    .venv/bin/python -m benchmarks.bench_remote --full     # the issue's 100k events
    .venv/bin/python -m benchmarks.bench_remote --designs  # also the two mappings compared

Rows, each beside its baseline measured in the same run (the machine is shared, so compare
ratios, not seconds across runs):
- push of the whole store to an empty bare repository vs `ctx pack --all` of the same refs:
  time, and bytes on the remote (its objects directory) vs the pack file;
- incremental push after 1,000 new events vs packing just those events, both ways a user or
  the library can: `ctx pack --since OLD_TIP` (walks the old history to leave it out) and
  `write_pack` of exactly the new objects (no walk) — target: push ≤ 2× the pack;
- clone (fetch + import + checkout) into a second store vs `ctx unpack` of the full pack;
- with --designs: the mapping of docs/format.md "Git remotes" against one git blob per ctx
  object (a prototype kept here), full and incremental push, size on the remote;
- with --redact (`ctx push --redact`, docs/format.md "Redacted pushes"), on a session with a
  fake credential in its first prompt and in every 200th (so every event after the first is
  rewritten): the first redacted push, a second one of the unchanged session, and an
  incremental one after 1,000 new events, each beside a plain push of the same refs to
  another empty remote in the same run.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ctxstore.gitbridge import fetch as gfetch
from ctxstore.gitbridge import push as gpush
from ctxstore.gitbridge import remotes
from ctxstore.objects import links
from ctxstore.porcelain import transfer
from ctxstore.repo import Repository
from ctxstore.transfer import packfile

from .bench_transfer import build_store

ROUNDS = 3


def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _bare(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    return path


def _timed(fn, *args, **kw):
    t = time.perf_counter()
    out = fn(*args, **kw)
    return time.perf_counter() - t, out


def bench(tmp: Path, n: int) -> list[dict]:
    repo, jsonl = build_store(tmp / "a", n)
    remote = _bare(tmp / "remote.git")
    remotes.add_remote(repo, "origin", str(remote))
    rows = []

    t_pack, summary = _timed(lambda: transfer.pack(repo, str(tmp / "all.ctxpack"),
                                                   all_refs=True))
    t_push, res = _timed(lambda: gpush.push(repo, "origin", all_sessions=True))
    on_remote = _du(remote / "objects")
    rows.append({"benchmark": "remote", "case": f"push {n} events to an empty bare repo",
                 "seconds": t_push, "baseline": "ctx pack --all", "baseline s": t_pack,
                 "ratio": t_push / t_pack, "MB": on_remote / 1e6,
                 "baseline MB": summary.bytes / 1e6, "size ratio": on_remote / summary.bytes})

    since, exact, inc, objects = [], [], [], 0
    for _ in range(ROUNDS):  # the machine is shared: the median of a few rounds
        old_tip = repo.refs.read(repo.current().ref)
        with repo.transaction(message="bench") as tx:
            for i in range(1000):
                tx.append("UserPromptSubmitted", "user", {"text": f"one more prompt {i} " * 8})
        repo.objects.flush()
        tip = repo.refs.read(repo.current().ref)
        since.append(_timed(transfer.pack, repo, str(tmp / "since.ctxpack"), since=old_tip)[0])
        old = links.reachable(repo.objects, [old_tip])
        new_ids = links.reachable(repo.objects, [tip], stop=old.__contains__)
        exact.append(_timed(packfile.write_pack, repo.objects, str(tmp / "exact.ctxpack"),
                            {"refs/x": tip}, new_ids, [old_tip])[0])
        t, res = _timed(gpush.push, repo, "origin")
        inc.append(t)
        objects = res.refs[0].objects
    t_since, t_exact, t_inc = (statistics.median(x) for x in (since, exact, inc))
    rows.append({"benchmark": "remote", "case": f"incremental push, +1,000 events (median of "
                 f"{ROUNDS})", "seconds": t_inc, "objects": objects,
                 "baseline": "ctx pack --since", "baseline s": t_since, "ratio": t_inc / t_since})
    rows.append({"benchmark": "remote", "case": f"incremental push, +1,000 events (median of "
                 f"{ROUNDS})", "seconds": t_inc, "objects": len(new_ids),
                 "baseline": "write_pack of the new objects only", "baseline s": t_exact,
                 "ratio": t_inc / t_exact})

    t_clone, (b, _) = _timed(lambda: gfetch.clone(str(remote), str(tmp / "b")))
    same = b.refs.read(b.current().ref) == tip
    b.close()
    t_all2, _ = _timed(lambda: transfer.pack(repo, str(tmp / "all2.ctxpack"), all_refs=True))
    c = Repository.init(tmp / "c")
    t_unpack, _ = _timed(lambda: transfer.unpack(c, str(tmp / "all2.ctxpack")))
    c.close()
    rows.append({"benchmark": "remote", "case": f"clone (fetch + checkout), "
                 f"{n + ROUNDS * 1000} events",
                 "seconds": t_clone, "baseline": "ctx unpack of pack --all",
                 "baseline s": t_unpack, "ratio": t_clone / t_unpack, "same tip": same})
    repo.close()
    return rows


def run(quick: bool = True) -> list[dict]:
    tmp = Path(tempfile.mkdtemp(prefix="ctx-bench-remote-"))
    try:
        rows = bench(tmp, 20_000 if quick else 100_000)
        if "--designs" in sys.argv:
            rows += designs(tmp / "designs", 20_000)
        if "--redact" in sys.argv:
            rows += redacted(tmp / "redact", 20_000 if quick else 100_000)
        return rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# The rejected mapping, kept to re-measure: one git blob per ctx object under fan-out trees
# ---------------------------------------------------------------------------------------------

def _blob_per_object_push(repo, local, url: str, ids: set[str]) -> None:
    import pygit2

    ref = "refs/ctx/all"
    base = local.references[ref].peel(pygit2.Commit).tree if ref in local.references else None
    groups: dict[str, dict[str, list]] = {}
    for oid in ids:
        type_name, body = repo.objects.get_raw(oid)
        blob = local.create_blob(type_name.encode() + b"\0" + body)
        groups.setdefault(oid[:2], {}).setdefault(oid[2:4], []).append((oid[4:], blob))
    top = local.TreeBuilder(base) if base is not None else local.TreeBuilder()
    for a, subs in groups.items():
        old_a = local[base[a].id] if base is not None and a in base else None
        mid = local.TreeBuilder(old_a) if old_a is not None else local.TreeBuilder()
        for b, entries in subs.items():
            old_b = local[old_a[b].id] if old_a is not None and b in old_a else None
            leaf = local.TreeBuilder(old_b) if old_b is not None else local.TreeBuilder()
            for name, blob in entries:
                leaf.insert(name, blob, pygit2.enums.FileMode.BLOB)
            mid.insert(b, leaf.write(), pygit2.enums.FileMode.TREE)
        top.insert(a, mid.write(), pygit2.enums.FileMode.TREE)
    sig = pygit2.Signature("ctx", "ctx@localhost", 0, 0)
    parents = [local.references[ref].target] if ref in local.references else []
    commit = local.create_commit(None, sig, sig, "push", top.write(), parents)
    local.references.create(ref, commit, force=True)
    local.remotes.create_anonymous(url).push([f"+{ref}:{ref}"])


def designs(tmp: Path, n: int) -> list[dict]:
    import pygit2

    tmp.mkdir(parents=True)
    repo, _ = build_store(tmp / "src", n)
    remotes.add_remote(repo, "origin", str(_bare(tmp / "a.git")))
    b_remote = _bare(tmp / "b.git")
    local = pygit2.init_repository(str(tmp / "b-local.git"), bare=True)
    tip0 = repo.refs.read(repo.current().ref)
    t_a, _ = _timed(lambda: gpush.push(repo, "origin"))
    all_ids = links.reachable(repo.objects, [tip0])
    t_b, _ = _timed(lambda: _blob_per_object_push(repo, local, str(b_remote), all_ids))
    size_a, size_b = _du(tmp / "a.git" / "objects"), _du(b_remote / "objects")
    with repo.transaction(message="bench") as tx:
        for i in range(1000):
            tx.append("UserPromptSubmitted", "user", {"text": f"one more prompt {i} " * 8})
    repo.objects.flush()
    tip1 = repo.refs.read(repo.current().ref)
    new_ids = links.reachable(repo.objects, [tip1], stop=all_ids.__contains__)
    ti_a, _ = _timed(lambda: gpush.push(repo, "origin"))
    ti_b, _ = _timed(lambda: _blob_per_object_push(repo, local, str(b_remote), new_ids))
    repo.close()
    return [{"benchmark": "remote mapping", "case": name, "events": n, "full push s": full,
             "remote MB": size / 1e6, "incremental push s": inc}
            for name, full, size, inc in (
                ("ctxpack blobs in commits (chosen)", t_a, size_a, ti_a),
                ("one git blob per ctx object", t_b, size_b, ti_b))]


# ---------------------------------------------------------------------------------------------
# Redacted pushes
# ---------------------------------------------------------------------------------------------

FAKE_KEY = "AKIA" + "Q3EGUWCEXAMPLE7K"


def _secret_events(tx, start: int, n: int) -> None:
    """N prompt/response pairs' worth of events; every 200th prompt carries a fake AWS key."""
    for i in range(start, start + n):
        text = f"prompt {i}: " + "the quick brown fox jumps over the lazy dog " * 4
        if i % 200 == 0:
            text += f" export AWS_ACCESS_KEY_ID={FAKE_KEY}"
        kind = ("UserPromptSubmitted", "ModelResponseReceived")[i % 2]
        tx.append(kind, "user" if i % 2 == 0 else "model", {"text": text})


def redacted(tmp: Path, n: int) -> list[dict]:
    tmp.mkdir(parents=True)
    repo = Repository.init(tmp / "a", durability="never")
    repo.new_session(title="bench", nonce=f"redact{n}", ts="2026-03-01T00:00:00.000Z")
    with repo.transaction(message="bench") as tx:
        _secret_events(tx, 0, n)
    repo.objects.flush()
    remotes.add_remote(repo, "red", str(_bare(tmp / "red.git")))
    remotes.add_remote(repo, "plain", str(_bare(tmp / "plain.git")))
    rows = []

    def pair(case: str) -> None:
        t_plain, plain = _timed(gpush.push, repo, "plain", redact=False)
        t_red, red = _timed(gpush.push, repo, "red", redact=True)
        rows.append({"benchmark": "redacted push", "case": case, "seconds": t_red,
                     "objects": red.refs[0].objects, "rewritten": red.redaction["rewritten"],
                     "baseline": "plain push", "baseline s": t_plain,
                     "baseline objects": plain.refs[0].objects, "ratio": t_red / t_plain})

    pair(f"first push, {n} events")
    pair("second push, unchanged session")
    with repo.transaction(message="bench") as tx:
        _secret_events(tx, n, 1000)
    repo.objects.flush()
    pair("incremental push, +1,000 events")
    repo.close()
    return rows


def main() -> None:
    from .table import print_rows

    print_rows(run(quick="--full" not in sys.argv), "remote")


if __name__ == "__main__":
    main()
