"""`ctx import --follow`: Codex, pi and Claude Code files that grow (half-written lines
included) end up imported exactly as `ctx import` imports the finished file, at every poll as
well as at the end; a rewritten file is imported again; Ctrl-C stops the CLI cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ctxstore.importers import import_paths
from ctxstore.importers.follow import Follower
from ctxstore.repo import Repository
from tests.corpus import require_corpus


def _branches(repo: Repository) -> dict:
    return {sid: repo.branches(sid) for sid in repo.session_ids()}


def _reference(tmp: Path, name: str, data: bytes, fmt: str) -> dict:
    d = tmp / f"ref-{len(data)}"
    repo = Repository.init(d)
    (d / name).write_bytes(data)
    import_paths(repo, [d / name], format=fmt)
    out = _branches(repo)
    repo.close()
    return out


def _files(root: Path) -> list[tuple[Path, str]]:
    out = [(p, "codex") for p in sorted((root / "codex").glob("*.jsonl"))]
    out += [(p, "pi") for p in sorted((root / "pi").glob("*.jsonl"))]
    out.append((root / "claude-code" / "ccl_jssoundrecorder_queue-operation-thinking_v2.0.42.jsonl",
                "claude-code"))
    return out


@pytest.mark.parametrize("head_lines", [400, 40])  # 40: the in-memory path from line 41
def test_follow_equals_import_at_every_poll(tmp_path, head_lines, monkeypatch):
    root = require_corpus()
    monkeypatch.setattr(Follower, "head_lines", head_lines)
    for k, (src, fmt) in enumerate(_files(root)):
        lines = src.read_bytes().splitlines(keepends=True)
        step = max(1, len(lines) // 12)
        store = Repository.init(tmp_path / f"live-{k}")
        growing = tmp_path / f"grow-{head_lines}" / src.name
        growing.parent.mkdir(exist_ok=True)
        growing.write_bytes(b"")
        f = Follower(store, growing, fmt)
        for i in range(0, len(lines), step):
            chunk = b"".join(lines[i:i + step])
            with open(growing, "ab") as fh:
                fh.write(chunk[:-3])  # the last line is still being written
            f.poll()
            with open(growing, "ab") as fh:
                fh.write(chunk[-3:])
            res = f.poll()
            assert res["lines"] >= 1
            done = growing.read_bytes()
            assert _branches(store) == _reference(tmp_path, src.name, done, fmt), \
                f"{src.name}: after {i + step} lines"
        f.close()
        store.close()


def test_follow_reimports_a_rewritten_file(tmp_path):
    root = require_corpus()
    src = root / "codex" / "rollout-genuine_v0.58.0_chatbot-ui-lmstudio_019a93b9.jsonl"
    lines = src.read_bytes().splitlines(keepends=True)
    store = Repository.init(tmp_path / "live")
    growing = tmp_path / src.name
    growing.write_bytes(b"".join(lines[:100]))
    f = Follower(store, growing, "codex")
    f.poll()
    growing.write_bytes(b"".join(lines[:50]))  # shorter: rewritten
    res = f.poll()
    assert res["rewritten"] and res["lines"] == 50
    growing.write_bytes(b"".join(lines))
    f.poll()
    ref = Repository.init(tmp_path / "ref")
    for part in (lines[:100], lines[:50], lines):
        (tmp_path / "ref" / src.name).write_bytes(b"".join(part))
        import_paths(ref, [tmp_path / "ref" / src.name], format="codex")
    assert _branches(store) == _branches(ref)
    f.close()
    store.close()
    ref.close()


def test_follow_cli_stops_cleanly_on_ctrl_c(tmp_path):
    root = require_corpus()
    src = root / "pi" / "pi-mono_before-compaction_v1-format_genuine.jsonl"
    lines = src.read_bytes().splitlines(keepends=True)
    Repository.init(tmp_path).close()
    growing = tmp_path / src.name
    growing.write_bytes(b"".join(lines[:10]))
    proc = subprocess.Popen([sys.executable, "-m", "ctxstore.cli", "--store", str(tmp_path / ".ctx"),
                             "import", "--follow", "--interval", "0.1", str(growing)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path)
    try:
        first = proc.stdout.readline()
        assert first.startswith("+10 line(s)"), first
        with open(growing, "ab") as fh:
            fh.write(b"".join(lines[10:30]))
        assert proc.stdout.readline().startswith("+20 line(s)")
        time.sleep(0.3)
    finally:
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Stopped following" in err and "30 line(s)" in err
    repo = Repository.open(tmp_path / ".ctx")
    want = _reference(tmp_path, src.name, b"".join(lines[:30]), "pi")
    assert _branches(repo) == want
    repo.close()


def test_first_ctrl_c_asks_the_follow_loop_to_stop_and_a_second_interrupts():
    """An interrupt must not land inside a poll (a transaction, a lock, a compression worker's
    hand-off): the first Ctrl-C only sets the flag the loop checks between polls."""
    from ctxstore.cli.cmd_import import _StopOnInterrupt

    before = signal.getsignal(signal.SIGINT)
    stop = _StopOnInterrupt()
    try:
        os.kill(os.getpid(), signal.SIGINT)
        assert stop.asked  # no KeyboardInterrupt: the poll under way finishes
        started = time.monotonic()
        stop.sleep(30)
        assert time.monotonic() - started < 1  # a stop asked for ends the wait at once
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)  # the handler runs here at the latest
    finally:
        stop.restore()
    assert signal.getsignal(signal.SIGINT) is before
