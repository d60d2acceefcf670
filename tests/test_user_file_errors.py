"""An OSError on a file the user named has one exit code wherever it happens (issue 13 item 5):
IOFailure, exit 16, one line naming the file — import, export, pack, unpack, artifact add,
append --batch. (A named input that does not exist is NotFound, exit 3: tests/test_cli_errors.)"""

from __future__ import annotations

import pytest

from ctxstore.errors import IOFailure
from tests.clitools import Ctx
from tests.test_links import build_repo

TRANSCRIPT = '{"type":"session","id":"s1","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}\n'


@pytest.fixture
def ctx(tmp_path):
    repo, _ = build_repo(tmp_path)
    repo.close()
    return Ctx(tmp_path)


def _denied(monkeypatch):
    """Opening a user file for reading is refused (tests may run as root: simulated) in each
    module that opens one."""
    from ctxstore import userfiles
    from ctxstore.porcelain import context
    from ctxstore.transfer import packfile

    def denied(path, *a, **k):
        raise PermissionError(13, "Permission denied", str(path))

    for module in (userfiles, context, packfile):
        monkeypatch.setattr(module, "open", denied, raising=False)


CASES = {
    "import": lambda t: ("import", str(t / "t.jsonl")),
    "unpack": lambda t: ("unpack", str(t / "t.jsonl")),
    "pack --verify": lambda t: ("pack", "--verify", str(t / "t.jsonl")),
    "artifact add": lambda t: ("artifact", "add", str(t / "t.jsonl")),
    "append --batch": lambda t: ("append", "--batch", str(t / "a-directory")),
    "pack -o": lambda t: ("pack", "--all", "-o", str(t / "missing" / "x.ctxpack")),
    "export -o": lambda t: ("export", "HEAD", "--format", "jsonl", "-o",
                            str(t / "missing" / "x.jsonl")),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_os_error_on_a_user_file_exits_16(ctx, tmp_path, monkeypatch, name):
    (tmp_path / "a-directory").mkdir()
    (tmp_path / "t.jsonl").write_text(TRANSCRIPT)
    args = CASES[name](tmp_path)
    if name in ("import", "unpack", "pack --verify", "artifact add"):
        _denied(monkeypatch)
    err = ctx.fails(IOFailure.exit_code, *args)
    assert err.startswith("ctx: error: cannot ") and str(tmp_path) in err, err
