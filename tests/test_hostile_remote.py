"""A hostile git remote (issue 28, item 9; docs/security.md): a pack blob that inflates to
hundreds of MB is refused by its first bytes (streamed, memory bounded), one over the size
limit by its declared size, before any of it is read; nothing is imported."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import subprocess
import sys
import zlib

import pygit2

from tests.clitools import Ctx
from tests.remotetools import Machine

BOMB = 300 << 20


def _loose_bomb(git: pygit2.Repository) -> pygit2.Oid:
    """A loose blob of BOMB bytes that is not a pack (its zlib stream is ~300 KB)."""
    head = b"blob %d\0" % (len(b"NOTAPACK") + BOMB)
    sha, comp = hashlib.sha1(head + b"NOTAPACK"), zlib.compressobj(1)
    tmp = os.path.join(git.path, "objects", "bomb.tmp")
    zeros = bytes(1 << 20)
    with open(tmp, "wb") as f:
        f.write(comp.compress(head + b"NOTAPACK"))
        for _ in range(BOMB >> 20):
            sha.update(zeros)
            f.write(comp.compress(zeros))
        f.write(comp.flush())
    hexid = sha.hexdigest()
    os.makedirs(os.path.join(git.path, "objects", hexid[:2]), exist_ok=True)
    os.replace(tmp, os.path.join(git.path, "objects", hexid[:2], hexid[2:]))
    return pygit2.Oid(hex=hexid)


def _swap_pack_blob(remote, blob: pygit2.Oid) -> None:
    git = pygit2.Repository(str(remote))
    for name in [n for n in git.references if n.startswith("refs/ctx/sessions/")]:
        commit = git[git.references[name].target]
        tb = git.TreeBuilder(commit.tree)
        tb.insert("objects.ctxpack", blob, pygit2.enums.FileMode.BLOB)
        new = git.create_commit(None, commit.author, commit.committer, commit.message,
                                tb.write(), [])
        git.references[name].set_target(new)


def _pushed(tmp_path):
    remote = tmp_path / "r.git"
    pygit2.init_repository(str(remote), bare=True)
    a = Machine(tmp_path / "a")
    a("remote", "add", "origin", str(remote))
    a("push")
    return remote


def test_a_pack_blob_bomb_is_refused_by_its_first_bytes(tmp_path):
    remote = _pushed(tmp_path)
    _swap_pack_blob(remote, _loose_bomb(pygit2.Repository(str(remote))))
    b = tmp_path / "b"
    b.mkdir()
    Ctx(b)("init", str(b))
    Ctx(b)("remote", "add", "origin", str(remote))
    script = ("import json, runpy, sys\n"
              f"sys.argv = ['ctx', '--store', {str(b)!r}, 'fetch']\n"
              "code = 0\n"
              "try:\n    runpy.run_module('ctxstore.cli', run_name='__main__')\n"
              "except SystemExit as e:\n    code = e.code\n"
              # VmHWM: this process's own peak; ru_maxrss also holds the peak of the process
              # it was spawned from (Linux carries it over exec), a busy pytest worker's
              "hwm = next(int(x.split()[1]) for x in open('/proc/self/status')\n"
              "           if x.startswith('VmHWM:'))\n"
              "print(json.dumps([code, hwm]))\n")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300)
    code, rss_kb = json.loads(res.stdout.strip().splitlines()[-1])
    assert rss_kb < 200 * 1024, f"fetch used {rss_kb // 1024} MB for a {BOMB >> 20} MB blob"
    assert code == 12, res.stderr
    assert "ctxpack magic" in res.stderr and "Traceback" not in res.stderr
    assert Ctx(b).json("sessions") == []


def test_a_pack_blob_over_the_limit_is_refused_by_its_declared_size(tmp_path, monkeypatch):
    remote = _pushed(tmp_path)
    fetch = importlib.import_module("ctxstore.gitbridge.fetch")
    monkeypatch.setattr(fetch, "MAX_PACK_BLOB", 100)
    b = Machine(tmp_path / "b")
    b("remote", "add", "origin", str(remote))
    err = b.fails(12, "fetch")
    assert "more than the 100-byte limit" in err and "objects.ctxpack" not in err
    monkeypatch.setattr(fetch, "MAX_PACK_BLOB", 1 << 30)
    b("fetch")  # a sound pack under the limit comes in
