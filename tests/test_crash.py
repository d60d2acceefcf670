"""kill -9 and concurrent writers: what was flushed survives, and fsck stays clean."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from ctxstore.store.fsck import verify
from ctxstore.store.packstore import PackStore

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Small packs so that kills also land in sealing, consolidation and dictionary training.
WRITER = """
import os, sys
from ctxstore.store.packstore import PackStore
path, seed = sys.argv[1], int(sys.argv[2])
store = PackStore(path, seal_size=16384, max_packs=3, dict_samples=150)
n = 0
while True:
    ids = [store.put("value", {"seed": seed, "n": n + i, "text": "tool output line " * (i % 7)})
           for i in range(5)]
    n += 5
    store.flush()
    sys.stdout.write("\\n".join(ids) + "\\n")
    sys.stdout.flush()
"""

CONCURRENT = """
import sys
from ctxstore.store.packstore import PackStore
path, who, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with PackStore(path) as store:
    ids = [store.put("value", {"writer": who, "n": i}) for i in range(count)]
print(len(ids))
"""


def _spawn(code: str, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_kill_9_loses_nothing_flushed(tmp_path):
    rnd = random.Random(1234)
    durable: set[str] = set()
    wanted = 0
    for i in range(30):
        child = _spawn(WRITER, tmp_path, i)
        # kill after a random amount of progress, not of wall time: under load the start-up
        # alone can take longer than any fixed sleep
        target = rnd.randint(2, 40)
        seen = [child.stdout.readline() for _ in range(target)]
        wanted += target
        time.sleep(rnd.uniform(0, 0.02))
        os.kill(child.pid, signal.SIGKILL)
        out, _ = child.communicate()
        lines = "".join(seen).split("\n")[:-1] + out.split("\n")
        # the last line may be cut short by the kill; complete lines were printed after flush()
        durable.update(line for line in lines[:-1] if len(line) == 64)
        with PackStore(tmp_path) as store:
            problems = list(verify(store))
            assert problems == [], f"iteration {i}: {problems[:3]}"
            missing = [d for d in durable if d not in store]
            assert not missing, f"iteration {i}: {len(missing)} flushed objects lost"
    assert len(durable) >= wanted > 200
    with PackStore(tmp_path) as store:  # and everything still decodes
        assert all(store.get(d)["text"] is not None for d in durable)


@pytest.mark.slow
def test_four_concurrent_writers(tmp_path):
    procs = [_spawn(CONCURRENT, tmp_path, who, 5000) for who in range(4)]
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0 and out.strip() == "5000"
    with PackStore(tmp_path) as store:
        values = [i for i in store if store.type_of(i) == "value"]  # the rest are zdicts
        assert len(values) == 20_000
        for who in range(4):
            for i in (0, 2500, 4999):
                assert store.get(store.put("value", {"writer": who, "n": i})) == {"writer": who, "n": i}
        assert list(verify(store)) == []
