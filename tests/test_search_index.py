"""The search index is a cache of the refs: after any sequence of writers, and after a kill -9
anywhere, caught up it holds exactly what a fresh `ctx search --reindex` would build."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxstore import Repository
from ctxstore.cli.main import cli
from ctxstore.search import index as search_index
from tests.clitools import Ctx

WORDS = ["parser", "tokenizer", "cache", "flaky", "deploy", "migration", "zebra", "lint"]
SMALL_IMPORTS = ["pi/agent-history_pi-v3_real-smoke_session-info_redacted.jsonl",
                 "codex/rollout-genuine-redacted_v0.135.0_exec-smoke_019e9625.jsonl",
                 "qwen/agentsessions_qwen_chat_synthetic.jsonl"]


def fresh_snapshot(root: Path) -> dict:
    """What --reindex builds for the store at ROOT, in a copy (the index under test stays)."""
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(root / ".ctx", Path(tmp) / ".ctx",
                        ignore=shutil.ignore_patterns("cache"))
        with Repository.open(Path(tmp) / ".ctx") as repo:
            search_index.reindex(repo)
            return search_index.snapshot(repo)


def caught_up_snapshot(root: Path) -> dict:
    with Repository.open(root / ".ctx") as repo:
        search_index.catch_up(repo)
        return search_index.snapshot(repo)


def _attempt(ctx: Ctx, *args: str) -> None:
    """Run a writer that may refuse (a fork that exists, a reset past the root, nothing to
    undo): a refusal is an error exit, never a crash, and the index must match either way."""
    res = ctx.runner.invoke(cli, ["--store", str(ctx.root), *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output


def _writer(ctx: Ctx, corpus: Path, step: tuple[str, int]) -> None:
    kind, n = step
    word = WORDS[n % len(WORDS)]
    prompt = json.dumps({"text": f"please fix the {word} bug number {n}"})
    if kind == "append":
        _attempt(ctx, "append", "UserPromptSubmitted", "--actor", "user", "--payload", prompt)
    elif kind == "batch":
        f = ctx.root / "batch.jsonl"
        f.write_text("".join(json.dumps({"type": "ToolCallRequested", "actor": "model", "payload": {
            "tool_call_id": f"c{n}{i}", "name": "Bash", "args": {"command": f"make {word} {i}"}}})
            + "\n" for i in range(3)))
        _attempt(ctx, "append", "--batch", str(f))
    elif kind == "import":
        _attempt(ctx, "import", str(corpus / SMALL_IMPORTS[n % len(SMALL_IMPORTS)]))
    elif kind == "compaction":
        _attempt(ctx, "demo")  # a session with a checked compaction and a merge summary
    elif kind == "fork":
        _attempt(ctx, "fork", f"b{n}")
        _attempt(ctx, "append", "UserPromptSubmitted", "--actor", "user", "--payload", prompt)
    elif kind == "reset":
        _attempt(ctx, "reset", f"HEAD~{1 + n % 3}")
    elif kind == "memory":
        _attempt(ctx, "memory", "add", f"always run the {word} check first {n}", "--scope",
                 "project", "--source", "HEAD")
    elif kind == "undo":
        _attempt(ctx, "undo")
    elif kind == "checkout":
        _attempt(ctx, "checkout", "main")
    elif kind == "session-rm":
        _attempt(ctx, "session", "rm", ctx.json("sessions")[-1]["id"])


STEPS = st.lists(st.tuples(st.sampled_from(["append", "batch", "import", "compaction", "fork",
                                            "reset", "memory", "undo", "checkout",
                                            "session-rm"]),
                           st.integers(0, 50)), min_size=1, max_size=7)


@pytest.mark.usefixtures("corpus")
@settings(max_examples=12, deadline=None)
@given(steps=STEPS)
def test_index_equals_reindex_after_every_writer(steps):
    from tests.corpus import corpus_root

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ctx = Ctx(root)
        ctx("init", str(root))
        ctx("new", "--title", "start")
        ctx("append", "UserPromptSubmitted", "--actor", "user",
            "--payload", json.dumps({"text": "first prompt about the parser"}))
        caught_up_snapshot(root)
        for step in steps:
            _writer(ctx, corpus_root(), step)
            got = caught_up_snapshot(root)  # incremental, from the previous step's index
            assert got == fresh_snapshot(root), f"after {step}"
            assert got["docs"], "the index holds something"


def test_search_finds_what_a_writer_just_wrote(tmp_path):
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new")
    ctx("search", "quokka", code=1)
    ctx("append", "UserPromptSubmitted", "--payload", '{"text": "the quokka test"}')
    assert ctx.json("search", "quokka")
    ctx("reset", "HEAD~1")
    ctx("search", "quokka", code=1)  # a rollback takes it out of the index again
    ctx("undo")
    assert ctx.json("search", "quokka")


def _run_killed(args: list[str], env: dict, after: float) -> int:
    """Run ARGS and kill -9 it AFTER seconds; should it finish first (a less loaded machine
    than when its duration was measured), run it again with half the delay, up to 4 times.
    Returns the exit code of the last run (-SIGKILL when a kill landed)."""
    for _ in range(4):
        proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(after)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        code = proc.wait()
        if code == -signal.SIGKILL:
            return code
        after /= 2
    return code


def _duration(args: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


@pytest.mark.parametrize("fraction", [0.35, 0.6, 0.85])
def test_kill_9_during_import_then_catch_up_equals_reindex(tmp_path, corpus, fraction):
    ctx = Ctx(tmp_path)
    ctx("init", str(tmp_path / "a"))
    ctx("init", str(tmp_path / "b"))
    cmd = [sys.executable, "-m", "ctxstore.cli", "import", str(corpus)]
    took = _duration(cmd, {**os.environ, "CTX_DIR": str(tmp_path / "b" / ".ctx")})
    root = tmp_path / "a"
    env = {**os.environ, "CTX_DIR": str(root / ".ctx")}
    subprocess.run([sys.executable, "-m", "ctxstore.cli", "import",
                    str(corpus / SMALL_IMPORTS[0])], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    before = caught_up_snapshot(root)
    code = _run_killed(cmd, env, took * fraction)
    assert code == -signal.SIGKILL, "the import was killed part way"
    got = caught_up_snapshot(root)
    assert got == fresh_snapshot(root)
    assert len(got["docs"]) >= len(before["docs"])


@pytest.mark.parametrize("fraction", [0.3, 0.6])
def test_kill_9_during_catch_up_leaves_an_index_that_catches_up(tmp_path, corpus, fraction):
    ctx = Ctx(tmp_path)
    ctx("init", str(tmp_path))
    ctx("import", str(corpus))
    env = {**os.environ, "CTX_DIR": str(tmp_path / ".ctx")}
    cmd = [sys.executable, "-m", "ctxstore.cli", "search", "--reindex"]
    took = _duration(cmd, env)
    code = _run_killed(cmd, env, took * fraction)
    assert code == -signal.SIGKILL, "the reindex was killed part way"
    got = caught_up_snapshot(tmp_path)
    assert got == fresh_snapshot(tmp_path)
    assert got["docs"]
