"""CtxstoreSessionStore: the SDK's own conformance suite (all 14 contracts, nothing skipped),
live capture == later `ctx import` on real transcripts split into random batches (at every
batch boundary and at the end, subagents included), idempotent retries, delete as an undoable
operation, and kill -9 between two appends."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.corpus import in_ci, require_corpus

if in_ci():
    import claude_agent_sdk  # noqa: F401  (CI installs the extra: a missing SDK fails)
else:
    pytest.importorskip("claude_agent_sdk")

from claude_agent_sdk import SessionStore  # noqa: E402
from claude_agent_sdk.testing import run_session_store_conformance  # noqa: E402

from ctxstore.importers import import_paths  # noqa: E402
from ctxstore.integrations.claude_agent_sdk import CtxstoreSessionStore, key_of  # noqa: E402
from ctxstore.repo import Repository  # noqa: E402

OPTIONAL = ("list_sessions", "list_session_summaries", "delete", "list_subkeys")


def test_conformance_all_fourteen_nothing_skipped(tmp_path):
    counter = itertools.count()
    stores: list[CtxstoreSessionStore] = []

    def make():
        stores.append(CtxstoreSessionStore(tmp_path / f"s{next(counter)}"))
        return stores[-1]

    probe = make()
    for name in OPTIONAL:  # the suite skips a method that is not overridden, silently
        assert getattr(type(probe), name) is not getattr(SessionStore, name), name
    asyncio.run(run_session_store_conformance(make))
    assert len(stores) > 14  # one fresh store per contract
    for s in stores:
        s.close()


# ---------------------------------------------------------------------------------------------
# live capture == later import

def _lines(path: Path) -> list[dict]:
    return [json.loads(t) for t in path.read_text(encoding="utf-8").splitlines() if t.strip()]


def _branches(repo: Repository) -> dict:
    return {sid: repo.branches(sid) for sid in repo.session_ids()}


def _import_tree(tmp: Path, files: dict[str, list[dict]], metas: dict[str, dict]) -> dict:
    """Write `files` (relative path -> entries) as Claude Code lays them out, import them with
    `ctx import`, return every session's branches."""
    if tmp.exists():
        shutil.rmtree(tmp)
    for rel, entries in files.items():
        p = tmp / "projects" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries),
                     encoding="utf-8")
    for rel, meta in metas.items():
        (tmp / "projects" / rel).with_suffix(".meta.json").write_text(json.dumps(meta))
    repo = Repository.init(tmp / "store")
    import_paths(repo, [tmp / "projects"], format="claude-code")
    out = _branches(repo)
    repo.close()
    return out


def _batches(rnd: random.Random, n: int) -> list[tuple[int, int]]:
    out, i = [], 0
    while i < n:
        k = rnd.choice([1, 1, 2, 3, 5, 8, 13, 40])
        out.append((i, min(n, i + k)))
        i += k
    return out


def _claude_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / "claude-code").rglob("*.jsonl") if "subagents" not in p.parts)


@pytest.mark.parametrize("seed", [1, 2])
def test_live_capture_equals_later_import_at_every_batch(tmp_path, seed):
    root = require_corpus()
    rnd = random.Random(seed)
    checked = 0
    for src in _claude_files(root):
        entries = _lines(src)
        store = CtxstoreSessionStore(tmp_path / f"live-{src.stem[:20]}")
        key = key_of("proj", src.stem)
        for a, b in _batches(rnd, len(entries)):
            asyncio.run(store.append(key, entries[a:b]))
            want = _import_tree(tmp_path / "ref", {f"proj/{src.stem}.jsonl": entries[:b]}, {})
            assert _branches(store.repo) == want, f"{src.name}: differs after line {b}"
            checked += 1
        assert asyncio.run(store.load(key)) == entries
        store.close()
    assert checked > 50


def test_live_capture_with_subagents_equals_later_import(tmp_path):
    """The 2.1.x layout: subagent transcripts arrive as `subagents/agent-*` subkeys while the
    parent runs (after the Task call, before its result), each with its agent_metadata."""
    root = require_corpus()
    mains = [p for p in _claude_files(root) if (p.parent / p.stem / "subagents").is_dir()]
    if not mains:
        pytest.skip("n/a: no transcript with a subagents directory in the corpus")
    rnd = random.Random(7)
    for src in mains:
        entries = _lines(src)
        agents = sorted((src.parent / src.stem / "subagents").glob("agent-*.jsonl"))
        # where each subagent starts: right after the line that holds its spawning call
        call_line = {}
        for i, e in enumerate(entries):
            tur = e.get("toolUseResult")
            if isinstance(tur, dict) and isinstance(tur.get("agentId"), str):
                tcid = next((c.get("tool_use_id") for c in e["message"]["content"]
                             if isinstance(c, dict) and c.get("type") == "tool_result"), None)
                call_line[tur["agentId"]] = next(
                    j for j in range(i) if any(isinstance(c, dict) and c.get("id") == tcid
                                               for c in (entries[j].get("message") or {}).get("content") or []
                                               if isinstance(entries[j].get("message"), dict)))
        store = CtxstoreSessionStore(tmp_path / "live")
        key = key_of("proj", src.stem)
        plan: list[tuple[dict, list]] = [(key, entries[a:b]) for a, b in _batches(rnd, len(entries))]
        files = {f"proj/{src.stem}.jsonl": entries}
        metas = {}
        for ap in agents:
            agent = ap.stem[len("agent-"):]
            sub = key_of("proj", src.stem, f"subagents/{ap.stem}")
            a_entries = _lines(ap)
            meta = json.loads(ap.with_suffix(".meta.json").read_text())
            batches = [[{**meta, "type": "agent_metadata"}]] + \
                [a_entries[a:b] for a, b in _batches(rnd, len(a_entries))]
            # insert after the main batch that holds the spawning call
            at = call_line.get(agent, len(entries) - 1)
            pos = next(i for i, (k, es) in enumerate(plan) if k is key and
                       entries.index(es[-1]) >= at) + 1
            plan[pos:pos] = [(sub, b) for b in batches]
            files[f"proj/{src.stem}/subagents/{ap.name}"] = a_entries
            metas[f"proj/{src.stem}/subagents/{ap.name}"] = meta
        for k, es in plan:
            asyncio.run(store.append(k, es))
        want = _import_tree(tmp_path / "ref", files, metas)
        got = _branches(store.repo)
        assert got == want
        for ap in agents:
            sub = key_of("proj", src.stem, f"subagents/{ap.stem}")
            loaded = asyncio.run(store.load(sub))
            assert loaded[0]["type"] == "agent_metadata" and loaded[1:] == _lines(ap)
        assert sorted(asyncio.run(store.list_subkeys(key))) == \
            sorted(f"subagents/{ap.stem}" for ap in agents)
        store.close()


# ---------------------------------------------------------------------------------------------
# the store's own promises

def _entries(n: int, start: int = 0) -> list[dict]:
    out = []
    for i in range(start, start + n):
        out.append({"type": "user" if i % 2 == 0 else "assistant", "uuid": f"u{i}",
                    "parentUuid": f"u{i - 1}" if i else None, "sessionId": "s-1",
                    "timestamp": f"2026-01-01T00:00:{i % 60:02d}.000Z",
                    "message": {"role": "user", "content": f"prompt {i}"} if i % 2 == 0 else
                    {"role": "assistant", "id": f"m{i}", "content": [{"type": "text", "text": f"answer {i}"}]}})
    return out


def test_retried_batch_is_not_stored_twice_and_delete_is_undoable(tmp_path):
    from click.testing import CliRunner

    from ctxstore.cli.main import cli

    store = CtxstoreSessionStore(tmp_path)
    key = key_of("proj", "s-1")
    batch = _entries(6)
    asyncio.run(store.append(key, batch[:4]))
    asyncio.run(store.append(key, batch[2:]))  # a retry of a batch that had landed, and more
    assert asyncio.run(store.load(key)) == batch
    sid = store.repo.session_ids()[0]
    tip = store.repo.branches(sid)["main"]
    asyncio.run(store.delete(key))
    assert asyncio.run(store.load(key)) is None
    assert store.repo.branches(sid) == {}
    assert tip in store.repo.objects  # deleted refs, not events
    store.close()
    r = CliRunner().invoke(cli, ["--store", str(tmp_path / ".ctx"), "undo"])
    assert r.exit_code == 0, r.output
    repo = Repository.open(tmp_path / ".ctx")
    assert repo.branches(sid)["main"] == tip
    repo.close()


CRASH_SCRIPT = textwrap.dedent("""
    import asyncio, json, sys
    from ctxstore.integrations.claude_agent_sdk import CtxstoreSessionStore, key_of
    store = CtxstoreSessionStore(sys.argv[1])
    entries = json.loads(sys.stdin.readline())
    for i in range(0, len(entries), 5):
        asyncio.run(store.append(key_of("proj", "s-1"), entries[i:i + 5]))
        print(i + 5, flush=True)  # acknowledged: append returned
""")


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_kill_9_between_appends_loses_nothing_acknowledged(tmp_path, seed):
    entries = _entries(400)
    proc = subprocess.Popen([sys.executable, "-c", CRASH_SCRIPT, str(tmp_path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    proc.stdin.write(json.dumps(entries) + "\n")
    proc.stdin.flush()
    stop = random.Random(seed).randrange(10, 60)
    acked = 0
    for line in proc.stdout:
        acked = int(line)
        if acked >= stop * 5:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    store = CtxstoreSessionStore(tmp_path)
    key = key_of("proj", "s-1")
    got = asyncio.run(store.load(key))
    assert got is not None and len(got) >= acked and got == entries[:len(got)]
    # the SDK resends nothing it saw acknowledged; the store picks up where the refs are
    asyncio.run(store.append(key, entries[len(got):]))
    assert asyncio.run(store.load(key)) == entries
    store.close()
