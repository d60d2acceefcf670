"""kill -9 during fast batches: every batch `append_batch` (or `ContextManager.batch()`)
acknowledged survives, fsck clean.

The writer appends corpus-shaped batches through the transaction (whose writes are buffered in
memory until the commit flushes them: store/packwriter.py) and reports each batch's head once
`append_batch` has returned. It is killed with SIGKILL at a random moment, often inside a batch,
with small packs so that kills also land in sealing, consolidation and dictionary training. A
fresh process then finds every acknowledged head on the branch, readable, and fsck clean.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from ctxstore.maintenance.fsck import check
from ctxstore.repo import Repository

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WRITER = r"""
import os, sys, json
from ctxstore.repo import Repository
from ctxstore.porcelain import sessions as ps
store, report, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
repo = Repository.open(store)
repo.objects.seal_size, repo.objects.max_packs = 256 * 1024, 3
rep = os.open(report, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
text = "tool output line with some words in it " * 8
k = 0
while True:
    lines = [json.dumps({"type": "MessageAdded", "actor": "agent",
                         "payload": {"role": "custom", "text": f"{seed} {k} {i} " + text}})
             for i in range(300)]
    res = ps.append_batch(repo, lines)
    os.write(rep, f"{res.head} {res.count}\n".encode())
    k += 1
"""

#: The same through `ContextManager.batch()`: one event per call, each queued in the store
#: (compressed in bulk) and, after the first, stored without a presence check.
CM_WRITER = r"""
import os, sys
from ctxstore import ContextManager
from ctxstore.repo import Repository
store, report, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
repo = Repository.open(store)
repo.objects.seal_size, repo.objects.max_packs = 256 * 1024, 3
cm = ContextManager(repo)
rep = os.open(report, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
text = "tool output line with some words in it " * 8
k = 0
while True:
    with cm.batch():
        for i in range(700):
            cm.append_event("MessageAdded", "agent", {"role": "custom",
                                                      "text": f"{seed} {k} {i} " + text})
    os.write(rep, f"{cm.tip} 700\n".encode())
    k += 1
"""


@pytest.mark.slow
@pytest.mark.parametrize("writer", [WRITER, CM_WRITER], ids=["append_batch", "cm_batch"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kill_9_during_fast_batches_loses_nothing_acknowledged(tmp_path, seed, writer):
    repo = Repository.init(tmp_path)
    _sid, _root = repo.new_session(title="crash")
    branch = repo.head_branch()
    repo.close()
    report = tmp_path / "acked"
    store = str(tmp_path / ".ctx")
    proc = subprocess.Popen([sys.executable, "-c", writer, store, str(report), str(seed)], cwd=ROOT,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        want = 2 + seed
        while time.monotonic() < deadline:
            if report.exists() and len(report.read_text().splitlines()) >= want:
                break
            if proc.poll() is not None:
                pytest.fail(f"writer died: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.02)
        time.sleep(random.Random(seed).uniform(0.0, 0.15))  # often in the middle of a batch
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    acked = [line.split()[0] for line in report.read_text().splitlines() if line.strip()]
    assert len(acked) >= 2
    repo = Repository.open(store)
    try:
        tip = repo.refs.read(branch)
        for head in acked:
            assert head == tip or repo.graph.is_ancestor(head, tip), f"acknowledged {head} lost"
            repo.objects.get(head)
        report_ = check(repo, full=True)
        assert not report_.problems, report_.problems[:3]
    finally:
        repo.close()
