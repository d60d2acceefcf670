"""Stores the viewer tests look at: the demo, a session with hostile content and a recorded
context bundle, and the whole corpus imported."""

from __future__ import annotations

from pathlib import Path

from ctxstore.manager import ContextManager
from ctxstore.porcelain.demo import run_demo
from ctxstore.repo import Repository

HOSTILE_FILE = "<img src=x onerror=alert('file')>"
HOSTILE_TEXT = ("<script>alert('prompt')</script> and <img src=x onerror=alert('img')> and "
                "[click me](javascript:alert('link')) and **bold** `code` "
                "[a real link](https://example.com/?q=<b>)")


def demo_store(root: Path) -> tuple[Repository, str]:
    repo = Repository.init(root)
    res = run_demo(repo)
    return repo, res.session


def hostile_store(root: Path) -> tuple[Repository, str]:
    """A session whose prompt, tool output, file name and assistant text try to run script,
    plus a recorded context bundle with a dropped segment and a tool call never answered."""
    repo = Repository.init(root)
    cm = ContextManager.start(repo, "<script>alert('title')</script>", "Break the viewer",
                              cwd="/tmp/<svg onload=alert('cwd')>")
    cm.add_user_message(HOSTILE_TEXT)
    cm.add_assistant_message("# Heading\n\nReading `x`.\n\n```html\n<script>alert('code')</script>\n```\n"
                             "- item <b>one</b>\n- item two",
                             tool_calls=[{"id": "c1", "name": "Read",
                                          "args": {"file_path": HOSTILE_FILE}}])
    cm.record_tool_result("c1", "<script>alert('result')</script>\n" + "x" * 6000, name="Read")
    cm.record_file_read(HOSTILE_FILE, "<iframe src=javascript:alert('content')>")
    cm.add_assistant_message("javascript:alert('bare')", tool_calls=[
        {"id": "c2", "name": "Bash", "args": {"command": "echo '<img src=x onerror=alert(9)>'"}}])
    cm.add_user_message("never mind <svg/onload=alert('svg')>")
    for n in range(6):
        cm.add_assistant_message(f"filler {n} " + "lorem ipsum " * 200)
    cm.build_context(budget=3000, record=True, auto_compact=False)
    return repo, cm.session
