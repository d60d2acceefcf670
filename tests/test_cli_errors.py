"""Every failure the CLI can meet ends as one line `ctx: error: ...` and a non-zero exit code:
no traceback, no multi-line usage text, and the code documented for its meaning (docs/cli.md).

Each case in CASES is run through click's CliRunner against a small store in tmp_path."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxstore.cli.main import cli
from ctxstore.errors import IOFailure, NotFound

from .clitools import Ctx, store_files

GOOD_LINE = '{"type": "FileRead", "payload": {"path": "x"}}\n'


@pytest.fixture
def ctx(tmp_path):
    c = Ctx(tmp_path)
    c("init", str(tmp_path))
    c("new", "--title", "errors")
    c("append", "UserPromptSubmitted", "--actor", "user", "--payload", '{"text": "hi"}')
    return c


def run(root: Path, *args: str, input: str | None = None):
    return CliRunner().invoke(cli, ["--store", str(root), *args], input=input)


def assert_one_line_error(res, code: int | None = None) -> str:
    """Non-zero exit, exactly one stderr line `ctx: error: ...`, and no traceback anywhere."""
    detail = f"exit {res.exit_code}\nstdout: {res.stdout}\nstderr: {res.stderr}\n{res.exception!r}"
    assert res.exit_code != 0, detail
    if code is not None:
        assert res.exit_code == code, detail
    assert res.exception is None or isinstance(res.exception, SystemExit), detail
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("ctx: error: "), detail
    assert "Traceback" not in res.stderr and "Traceback" not in res.stdout, detail
    return res.stderr


def _config(**changes) -> Callable[[Path], list[str]]:
    def setup(root: Path) -> list[str]:
        path = root / ".ctx" / "config.json"
        cfg = json.loads(path.read_text())
        cfg.update(changes)
        path.write_text(json.dumps(cfg))
        return ["sessions"]
    return setup


def _binary_batch(root: Path) -> list[str]:
    f = root / "events.bin"
    f.write_bytes(GOOD_LINE.encode() + b"\xff\xfe\x00\x81 binary\n" + GOOD_LINE.encode())
    return ["append", "--batch", str(f)]


def _payload_not_utf8(root: Path) -> list[str]:
    f = root / "payload.bin"
    f.write_bytes(b'{"path": "\xff"}')
    return ["append", "FileRead", "--payload", f"@{f}"]


def _args(*args: str) -> Callable[[Path], list[str]]:
    return lambda root: list(args)


# (id, setup returning the arguments, exit code, a piece of the message)
CASES = [
    # 1. what used to be tracebacks
    ("batch-not-utf8", _binary_batch, 10, "line 2"),
    ("payload-file-not-utf8", _payload_not_utf8, 10, "not UTF-8"),
    ("config-format-str", _config(format="1"), 17, '"format"'),
    ("config-format-bool", _config(format=True), 17, '"format"'),
    ("config-compression-str", _config(compression_level="high"), 17, '"compression_level"'),
    ("config-compression-range", _config(compression_level=99), 17, '"compression_level"'),
    ("config-durability", _config(durability="sometimes"), 17, '"durability"'),
    ("config-artifact-threshold", _config(artifact_threshold=0), 17, '"artifact_threshold"'),
    ("config-chunking-type", _config(chunking=[1, 2]), 17, '"chunking"'),
    ("config-chunking-value", _config(chunking={"min": "big"}), 17, '"chunking.min"'),
    ("config-chunking-order", _config(chunking={"min": 4096, "avg": 1024}), 17, "min <= avg"),
    ("export-missing-dir", _args("export", "HEAD", "--format", "jsonl", "-o",
                                 "/nonexistent/dir/x.jsonl"), IOFailure.exit_code,
     "/nonexistent/dir/x.jsonl"),
    # 2. a missing input file is NotFound, whichever command names it
    ("batch-missing", _args("append", "--batch", "/nonexistent/events.jsonl"), NotFound.exit_code,
     "/nonexistent/events.jsonl"),
    ("payload-missing", _args("append", "FileRead", "--payload", "@/nonexistent/p.json"),
     NotFound.exit_code, "/nonexistent/p.json"),
    ("import-missing", _args("import", "/nonexistent/t.jsonl"), NotFound.exit_code,
     "/nonexistent/t.jsonl"),
    ("artifact-missing", _args("artifact", "add", "/nonexistent/a.log"), NotFound.exit_code,
     "/nonexistent/a.log"),
    # 4. reflog of nothing, or of a path outside logs/
    ("reflog-unknown", _args("reflog", "nosuchbranch"), 3, "nosuchbranch"),
    ("reflog-show-unknown", _args("reflog", "show", "refs/sessions/x/y"), 3, "refs/sessions/x/y"),
    ("reflog-dotdot", _args("reflog", "../HEAD"), 5, "'..'"),
    # 6. a --summarizer that shlex cannot split
    ("compact-summarizer-quote", _args("compact", "--summarizer", '"x'), 10, "--summarizer"),
    ("merge-summarizer-quote", _args("merge", "main", "--summarizer", "'x"), 10, "--summarizer"),
]


@pytest.mark.parametrize("setup,code,needle", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error_is_one_line(ctx, tmp_path, setup, code, needle):
    args = setup(tmp_path)
    err = assert_one_line_error(run(tmp_path, *args), code)
    assert needle in err


def test_unreadable_input_is_io_failure(ctx, tmp_path, monkeypatch):
    """An input file that exists but cannot be opened (permissions: simulated, since tests may
    run as root) is IOFailure, not NotFound and not a traceback."""
    from ctxstore import userfiles as inputs

    f = tmp_path / "locked.json"
    f.write_text(GOOD_LINE)

    def denied(path, *a, **k):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(inputs, "open", denied, raising=False)
    for args in (["append", "--batch", str(f)], ["append", "FileRead", "--payload", f"@{f}"],
                 ["artifact", "add", str(f)]):
        err = assert_one_line_error(run(tmp_path, *args), IOFailure.exit_code)
        assert "Permission denied" in err and str(f) in err


def test_batch_not_utf8_appends_nothing(ctx, tmp_path):
    args = _binary_batch(tmp_path)
    before = store_files(tmp_path)
    assert "nothing appended" in assert_one_line_error(run(tmp_path, *args), 10)
    assert store_files(tmp_path) == before


def test_batch_from_stdin_still_works(ctx, tmp_path):
    res = ctx.json("append", "--batch", "-", input=GOOD_LINE * 3)
    assert res["count"] == 3


def test_failed_export_keeps_existing_output(ctx, tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text("precious\n")
    out.chmod(0o640)
    assert_one_line_error(run(tmp_path, "export", "nosuchrev", "--format", "jsonl", "-o", str(out)))
    assert out.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".out")) == []
    ctx("export", "HEAD", "--format", "jsonl", "-o", str(out))
    assert out.read_text().startswith('{"ctxstore":"session"')
    assert out.stat().st_mode & 0o777 == 0o640  # the file keeps its mode, not mkstemp's 0600
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


def test_os_error_backstop(ctx, tmp_path, monkeypatch):
    """An OSError that escapes a command is one line `<strerror>: <filename>`, exit 16."""
    from ctxstore.porcelain import history as ph

    def broken(repo):
        raise OSError(28, "No space left on device", "/some/file")

    monkeypatch.setattr(ph, "status", broken)
    err = assert_one_line_error(run(tmp_path, "status"), IOFailure.exit_code)
    assert err == "ctx: error: No space left on device: /some/file\n"


def test_programming_errors_are_not_swallowed(ctx, tmp_path, monkeypatch):
    from ctxstore.porcelain import history as ph

    def buggy(repo):
        raise KeyError("bug")

    monkeypatch.setattr(ph, "status", buggy)
    res = run(tmp_path, "status")
    assert isinstance(res.exception, KeyError)


def test_stray_file_under_refs_does_not_break_sessions(ctx, tmp_path):
    [info] = ctx.json("sessions")
    ref = tmp_path / ".ctx" / "refs" / "sessions" / info["id"] / "main"
    (ref.parent / "main~").write_bytes(ref.read_bytes())  # an editor's backup
    (ref.parent / ".main.swp").write_bytes(b"\x00\xff binary")
    [again] = ctx.json("sessions")
    assert again["branches"] == {"main": info["branches"]["main"]}
    ctx("gc", "--prune=now")
    out = ctx("fsck", code=13).stdout  # reported, so it can be removed, but nothing breaks
    assert "main~ is not a valid ref" in out and ".main.swp is not a valid ref" in out


def test_new_json_has_the_keys_its_help_names(ctx):
    res = ctx.json("new", "--title", "t")
    assert set(res) == {"session", "root", "branch", "ref"}
    assert res["branch"] == "main" and res["ref"] == f"refs/sessions/{res['session']}/main"
    assert "{session, root, branch, ref}" in ctx("new", "--help").stdout


@pytest.mark.parametrize("rev", ["HEAD", "@"])
def test_checkout_head_stays_on_the_branch(ctx, rev):
    before = ctx.json("status")
    res = ctx.json("checkout", rev)
    assert res["detached"] is False and res["head"] == before["head"]
    after = ctx.json("status")
    assert after["detached"] is False and after["branch"] == "main"
    assert after["head"] == before["head"]
    ctx("checkout", "HEAD~1")
    detached = ctx.json("status")
    assert detached["detached"] is True
    assert ctx.json("checkout", rev)["detached"] is True  # detached stays detached, same event
    assert ctx.json("status")["head"] == detached["head"]


def _moves(log: dict) -> list[tuple]:
    return [(e["old"], e["new"], e["message"]) for e in log["entries"]]


def test_reflog_of_known_and_deleted_refs_still_shown(ctx):
    status = ctx.json("status")
    sid, tip = status["session"], status["head"]
    head = ctx.json("reflog")
    assert head["ref"] == "HEAD" and [e["index"] for e in head["entries"]] == [0, 1]
    root = head["entries"][1]["new"]
    assert _moves(head) == [(root, tip, "append UserPromptSubmitted: 1 event(s)"),
                            (None, root, f"checkout: new session {sid[:12]}")]
    main = ctx.json("reflog", "main")
    assert main["ref"] == f"refs/sessions/{sid}/main"
    assert _moves(main) == [(root, tip, "append UserPromptSubmitted: 1 event(s)"),
                            (None, root, "session: created")]
    ctx("branch", "tmp")
    ctx("branch", "-d", "tmp")
    gone = ctx.json("reflog", "tmp")  # a deleted branch's reflog outlives it, deletion first
    assert gone["ref"] == f"refs/sessions/{sid}/tmp"
    assert _moves(gone) == [(tip, None, "branch: deleted tmp"),
                            (None, tip, "branch: created from HEAD")]
