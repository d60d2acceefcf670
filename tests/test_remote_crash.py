"""kill -9 during `ctx push` and `ctx fetch` leaves both sides consistent: the remote passes
`git fsck --strict` with each ref old or new, the local store passes `ctx fsck`, its
remote-tracking refs are old or new and no local branch moved; a later run finishes the job."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from .remotetools import Machine, bare, fsck_strict, git, needs_git, remote_refs

pytestmark = needs_git

FRACTIONS = (0.1, 0.3, 0.5, 0.7, 0.9)


def _ctx(store, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ctxstore.cli", "--store", str(store), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _timed(store, *args) -> float:
    t = time.perf_counter()
    assert _ctx(store, *args).wait() == 0
    return time.perf_counter() - t


def _kill_after(store, delay: float, *args) -> None:
    proc = _ctx(store, *args)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def _big_machine(root) -> Machine:
    m = Machine(root, events=1)
    lines = "".join(json.dumps({"type": "UserPromptSubmitted", "actor": "user", "payload": {
        "text": f"{i} " + os.urandom(3000).hex()}}) + "\n" for i in range(800))
    m("append", "--batch", "-", input=lines)
    return m


def _tip_of(remote, ref) -> str | None:
    commit = remote_refs(remote).get(ref)
    if commit is None:
        return None
    return json.loads(git("-C", str(remote), "cat-file", "-p", f"{commit}:ctx.json").stdout)["tip"]


def test_kill_9_during_push(tmp_path):
    a = _big_machine(tmp_path / "a")
    tip, sid = a.tip(), a.session()
    ref = f"refs/ctx/sessions/{sid}/main"
    tracking = f"refs/remotes/origin/{sid}/main"
    probe = bare(tmp_path / "probe.git")
    a("remote", "add", "probe", str(probe))
    full = _timed(a.root, "push", "probe")
    remote = bare(tmp_path / "r.git")
    a("remote", "add", "origin", str(remote))
    seen = set()
    for f in FRACTIONS:
        _kill_after(a.root, full * f, "push", "origin")
        fsck_strict(remote)
        seen.add(_tip_of(remote, ref))
        assert _tip_of(remote, ref) in (None, tip)
        a("fsck")
        refs = dict(a.json("branch", "-r") and
                    [(f"refs/remotes/{t['remote']}/{t['name']}", t["tip"])
                     for t in a.json("branch", "-r")])
        assert refs.get(tracking) in (None, tip)
        assert a.tip() == tip
    a("push", "origin")
    fsck_strict(remote)
    assert _tip_of(remote, ref) == tip
    out = git("clone", "-q", "--mirror", str(remote), str(tmp_path / "m.git"))
    assert out.returncode == 0
    fsck_strict(tmp_path / "m.git")


def test_kill_9_during_fetch(tmp_path):
    a = _big_machine(tmp_path / "a")
    tip, sid = a.tip(), a.session()
    remote = bare(tmp_path / "r.git")
    a("remote", "add", "origin", str(remote))
    a("push")
    probe = Machine(tmp_path / "probe", events=1)
    probe("remote", "add", "origin", str(remote))
    full = _timed(probe.root, "fetch")
    b = Machine(tmp_path / "b", events=2)
    b_tip = b.tip()
    b("remote", "add", "origin", str(remote))
    for f in FRACTIONS:
        _kill_after(b.root, full * f, "fetch")
        b("fsck")
        tracking = {t["name"]: t["tip"] for t in b.json("branch", "-r")}
        assert tracking.get(f"{sid}/main") in (None, tip)
        assert b.tip() == b_tip  # fetch never moves a local branch
    b("fetch")
    assert {t["name"]: t["tip"] for t in b.json("branch", "-r")} == {f"{sid}/main": tip}
    b("fsck", "--full")
    b("checkout", f"origin/{sid[:12]}/main")
    assert b.tip() == tip
    fsck_strict(remote)


def test_git_lock_files_a_killed_transfer_leaves_do_not_block_the_next(tmp_path):
    """libgit2 killed while creating the mirror leaves HEAD.lock (and no HEAD), while writing
    its config config.lock, while moving a ref refs/...lock: the next fetch, push and remote
    removal go ahead (they hold the transfer lock, so no live process wrote those)."""
    a = Machine(tmp_path / "a", events=3)
    remote = bare(tmp_path / "r.git")
    a("remote", "add", "origin", str(remote))
    a("push")
    b = Machine(tmp_path / "b", events=2)
    b("remote", "add", "origin", str(remote))
    mirror = b.root / ".ctx" / "remotes.git"
    mirror.mkdir()
    (mirror / "HEAD.lock").write_bytes(b"")  # killed inside init: no HEAD yet
    b("fetch")
    assert b.json("branch", "-r")
    for name in ("HEAD.lock", "config.lock", "packed-refs.lock", "refs/remotes/x.lock"):
        (mirror / name).parent.mkdir(parents=True, exist_ok=True)
        (mirror / name).write_bytes(b"")
    b("fetch")
    b("push")
    b("remote", "remove", "origin")
    assert not list(mirror.rglob("*.lock")) or \
        [p.name for p in mirror.rglob("*.lock")] == ["ctx-transfer.lock"]
    fsck_strict(remote)
