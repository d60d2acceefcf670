"""Helpers for the git-remote tests: bare repositories, `git fsck --strict`, a `git daemon`,
stores with sessions ("machines")."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from .clitools import Ctx

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None and os.environ.get("CI") != "true",
                               reason="git is not installed")


def git(*args, cwd=None, check=True) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          check=check)


def bare(path: Path) -> Path:
    git("init", "-q", "--bare", str(path))
    return path


def fsck_strict(path: Path) -> None:
    """`git fsck --strict` of a remote must be clean (a notice about an unborn HEAD is not a
    problem git reports as one)."""
    res = git("-C", str(path), "fsck", "--strict", "--no-dangling", check=False)
    problems = [line for line in (res.stdout + res.stderr).splitlines()
                if line and not line.startswith(("notice:", "Checking", "checking"))]
    assert res.returncode == 0 and not problems, res.stdout + res.stderr


def remote_refs(path: Path) -> dict[str, str]:
    out = git("-C", str(path), "for-each-ref", "--format=%(refname) %(objectname)").stdout
    return dict(line.split(" ", 1)[::-1][::-1] for line in out.splitlines() if line) \
        if out else {}


class Machine(Ctx):
    """A store with one session ("a machine"), driven through the CLI."""

    def __init__(self, root: Path, events: int = 5, title: str = "work") -> None:
        super().__init__(root)
        root.mkdir(parents=True, exist_ok=True)
        self("init", str(root))
        self("new", "--title", title)
        self.say(events, "prompt")

    def say(self, n: int, word: str = "more") -> None:
        lines = "".join(f'{{"type": "UserPromptSubmitted", "actor": "user", "payload": '
                        f'{{"text": "{word} {i} {time.time_ns()}"}}}}\n' for i in range(n))
        self("append", "--batch", "-", input=lines)

    def status(self) -> dict:
        return self.json("status")

    def tip(self) -> str:
        return self.status()["head"]

    def session(self) -> str:
        return self.status()["session"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, what: str, detail) -> None:
    """Until something listens on 127.0.0.1:port; RuntimeError with `detail()` (the server's
    own words) when the process exits first or 10 s pass."""
    deadline = time.monotonic() + 10
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start: {detail()}")
        time.sleep(0.05)


@contextlib.contextmanager
def git_daemon(base: Path):
    """A `git daemon` serving `base` on 127.0.0.1 with push enabled; yields git://…/ URL base."""
    port = free_port()
    proc = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
         f"--base-path={base}", "--listen=127.0.0.1", f"--port={port}", str(base)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True)  # its own process group: `git` runs git-daemon as a child
    try:
        wait_port(port, proc, "git daemon", lambda: repr(proc.stderr.read()))
        yield f"git://127.0.0.1:{port}"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the wrapper and the daemon it started
        proc.wait()
