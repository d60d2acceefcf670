"""Codex's own reader, run on a converted rollout: the `codex` binary of the pinned npm package
@openai/codex (tests/readers/package.json), offline, with a scratch CODEX_HOME.

What it runs, both Codex's code:
1. `codex migrate-rollouts --apply` — Codex's migration of "legacy" rollout files into its
   paginated thread history: it parses every line of the rollout as Codex's RolloutLine.
2. `codex app-server` over stdio (JSON-RPC): `initialize`, `thread/list` (the picker's list)
   and `thread/read` with `includeTurns` (the history Codex replays when a thread is resumed).

Without the migration, Codex 0.171 replays a legacy rollout's prompts and answers but shows no
tool-call items; after it, every call is a `dynamicToolCall` item with its arguments and output.
Nothing here talks to the network: the app-server answers these methods from CODEX_HOME.

Without node's package installed a test skips naming `npm ci --prefix tests/readers`, except
under CI=true, where it fails.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.corpus import in_ci

HERE = Path(__file__).resolve().parent
BINARY = HERE / "node_modules" / ".bin" / "codex"
PACKAGE = "@openai/codex"
TIMEOUT = 120


def pinned_version() -> str:
    deps = json.loads((HERE / "package.json").read_text(encoding="utf-8"))["dependencies"]
    return str(deps[PACKAGE])


def installed_version() -> str:
    meta = HERE / "node_modules" / PACKAGE / "package.json"
    if not meta.is_file():
        return ""
    return str(json.loads(meta.read_text(encoding="utf-8")).get("version", ""))


def require() -> Path:
    """The codex binary at the pinned version, else a skip (a failure under CI=true)."""
    have, want = installed_version(), pinned_version()
    problem = "" if have == want and BINARY.exists() else \
        (f"{PACKAGE} {have} is installed, {want} is pinned" if have else f"{PACKAGE} is not installed")
    if problem:
        msg = f"{problem}: run `npm ci --prefix tests/readers` to check Codex conversions with it"
        if in_ci():
            pytest.fail(msg)
        pytest.skip(msg)
    return BINARY


def _env(codex_home: Path) -> dict[str, str]:
    fake_home = codex_home / ".home"
    fake_home.mkdir(parents=True, exist_ok=True)
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CODEX_HOME": str(codex_home),
            "HOME": str(fake_home), "RUST_LOG": "error", "NO_COLOR": "1"}


def migrate(codex_home: Path) -> str:
    """Run Codex's rollout migration; its output (it fails loudly on a rollout it rejects)."""
    done = subprocess.run([str(require()), "migrate-rollouts", "--apply"], env=_env(codex_home),
                          capture_output=True, text=True, timeout=TIMEOUT, check=False)
    if done.returncode != 0:
        raise AssertionError(f"codex migrate-rollouts failed ({done.returncode}): "
                             f"{done.stdout[-2000:]} {done.stderr[-2000:]}")
    return done.stdout


class AppServer:
    """`codex app-server` on stdio, one request at a time."""

    def __init__(self, codex_home: Path):
        self.proc = subprocess.Popen([str(require()), "app-server"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=_env(codex_home), text=True)
        self.n = 0
        self.call("initialize", {"clientInfo": {"name": "ctxstore-tests", "version": "0"}})
        self.notify("initialized")

    def notify(self, method: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}) + "\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.n += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method,
                                          "params": params}) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                err = self.proc.stderr.read() if self.proc.stderr else ""
                raise AssertionError(f"codex app-server exited during {method}: {err[-2000:]}")
            msg = json.loads(line)
            if msg.get("id") == self.n:
                if "error" in msg:
                    raise AssertionError(f"{method}: {msg['error']}")
                return msg["result"]

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> AppServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_threads(codex_home: Path, thread_ids: list[str], *, migrated: bool = True) -> dict[str, Any]:
    """{"listed": [ids thread/list returned], "threads": {id: {"prompts", "answers",
    "tool_calls": [{"id", "tool", "arguments", "output", "success"}], "compactions"}}}."""
    if migrated:
        migrate(codex_home)
    out: dict[str, Any] = {"listed": [], "threads": {}}
    with AppServer(codex_home) as server:
        listed = server.call("thread/list", {"limit": 200})
        out["listed"] = [t["id"] for t in listed.get("data", [])]
        for tid in thread_ids:
            thread = server.call("thread/read", {"threadId": tid, "includeTurns": True})["thread"]
            items = [i for turn in thread.get("turns", []) for i in turn.get("items", [])]
            out["threads"][tid] = {
                "prompts": ["".join(c.get("text", "") for c in i.get("content", [])
                                    if c.get("type") == "text")
                            for i in items if i["type"] == "userMessage"],
                "answers": [i.get("text", "") for i in items if i["type"] == "agentMessage"],
                "tool_calls": [{"id": i["id"], "tool": i.get("tool"), "arguments": i.get("arguments"),
                                "output": "".join(c.get("text", "") for c in i.get("contentItems") or []),
                                "success": i.get("success")}
                               for i in items if i["type"] == "dynamicToolCall"],
                "compactions": sum(1 for i in items if i["type"] == "contextCompaction"),
                "path": thread.get("path"),
            }
    return out
