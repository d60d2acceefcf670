"""CLI tests for issue 3's commands: exit codes, output, and that bad input changes nothing."""

from __future__ import annotations

import json

import pytest

from .clitools import Ctx, store_files


@pytest.fixture
def ctx(tmp_path):
    c = Ctx(tmp_path)
    c("init", str(tmp_path))
    return c


@pytest.fixture
def session(ctx):
    sid = ctx("new", "--title", "fix tests", "--goal", "make CI green").stdout.strip()
    ctx("append", "UserPromptSubmitted", "--actor", "user", "--payload", '{"text": "fix it"}')
    return sid


def test_init_is_idempotent(ctx, tmp_path):
    before = store_files(tmp_path)
    assert "Reinitialized existing ctxstore" in ctx("init", str(tmp_path)).stdout
    assert store_files(tmp_path) == before


def test_new_prints_session_and_moves_head(ctx, session):
    assert len(session) == 64
    st = ctx.json("status")
    assert st["session"] == session and st["branch"] == "main" and st["events"] == 2


def test_sessions_json(ctx, session):
    [info] = ctx.json("sessions")
    assert info["id"] == session and info["title"] == "fix tests"
    assert set(info["branches"]) == {"main"} and info["events"] == 2
    assert session[:12] in ctx("sessions").stdout


def test_log_json_shape(ctx, session):
    log = ctx.json("log")
    assert [e["type"] for e in log] == ["UserPromptSubmitted", "SessionStarted"]
    first = log[0]
    assert len(first["id"]) == 64 and first["actor"] == "user"
    assert first["parents"] == [log[1]["id"]] and first["payload"] == {"text": "fix it"}
    assert first["ts"].endswith("Z")
    assert ctx.json("log", "-n", "1")[0]["id"] == first["id"]


def test_log_oneline_and_graph(ctx, session):
    ctx("fork", "alt")
    ctx("append", "FileRead", "--actor", "tool", "--payload", '{"path": "src/a.py"}')
    ctx("checkout", "main")
    ctx("append", "FileWritten", "--actor", "tool", "--payload", '{"path": "src/b.py"}')
    out = ctx("log", "--graph", "--all").stdout.splitlines()
    assert out[0].startswith("* ") and "HEAD -> main" in out[0] and "src/b.py" in out[0]
    assert out[1].startswith("| * ") and "(alt)" in out[1]
    assert out[2] == "|/"
    assert len(ctx("log", "--oneline").stdout.splitlines()) == 3


def test_append_batch(ctx, session, tmp_path):
    lines = "\n".join(json.dumps({"type": "FileRead", "actor": "tool", "payload": {"path": f"f{i}"}})
                      for i in range(50))
    res = ctx.json("append", "--batch", "-", input=lines)
    assert res["count"] == 50
    assert ctx.json("status")["events"] == 52
    assert ctx.json("log", "-n", "1")[0]["id"] == res["head"]


@pytest.mark.parametrize("bad_line", ["{not json", '{"actor": "user"}', '{"type": "Bad Type"}',
                                      '{"type": "FileRead", "payload": [1]}',
                                      '{"type": "FileRead", "extra": 1}'])
def test_append_batch_bad_line_writes_nothing(ctx, session, tmp_path, bad_line):
    good = '{"type": "FileRead", "payload": {"path": "x"}}'
    before = store_files(tmp_path)
    err = ctx.fails(10, "append", "--batch", "-", input=f"{good}\n{good}\n{bad_line}\n{good}\n")
    assert "line 3" in err and "nothing appended" in err
    assert store_files(tmp_path) == before


def test_append_batch_file_error_names_file_and_line(ctx, session, tmp_path):
    f = tmp_path / "events.jsonl"
    f.write_text('{"type": "FileRead", "payload": {"path": "x"}}\n{bad json\n')
    err = ctx.fails(10, "append", "--batch", str(f))
    (line,) = err.strip().splitlines()
    assert line.startswith(f"ctx: error: {f}: batch line 2: not valid JSON")
    assert line.endswith("nothing appended")


def test_append_malformed_payload(ctx, session, tmp_path):
    before = store_files(tmp_path)
    assert "not valid JSON" in ctx.fails(10, "append", "FileRead", "--payload", "{oops")
    assert "JSON object" in ctx.fails(10, "append", "FileRead", "--payload", "[1, 2]")
    assert "invalid event type" in ctx.fails(10, "append", "not a type")
    assert store_files(tmp_path) == before


def test_append_payload_from_file(ctx, session, tmp_path):
    (tmp_path / "p.json").write_text('{"path": "from-file.py"}')
    ctx("append", "FileRead", "--payload", f"@{tmp_path / 'p.json'}")
    assert ctx.json("log", "-n", "1")[0]["payload"] == {"path": "from-file.py"}
    assert "no such file" in ctx.fails(3, "append", "FileRead", "--payload", "@/nonexistent")


def test_show_event_and_session(ctx, session):
    head = ctx.json("log", "-n", "1")[0]["id"]
    shown = ctx.json("show", head[:10])
    assert shown["id"] == head and shown["type"] == "event"
    assert ctx.json("cat-object", session)["type"] == "session"
    assert ctx.json("show", "HEAD~1")["content"]["type"] == "SessionStarted"


def test_branch_list_create_delete(ctx, session):
    ctx("branch", "exp", "HEAD~1")
    branches = ctx.json("branch")
    assert set(branches["branches"]) == {"main", "exp"} and branches["current"] == "main"
    assert "already exists" in ctx.fails(5, "branch", "exp")
    ctx("branch", "-d", "exp")
    assert set(ctx.json("branch")["branches"]) == {"main"}
    assert "no branch" in ctx.fails(3, "branch", "-d", "exp")
    assert "HEAD is on it" in ctx.fails(5, "branch", "-d", "main")


def test_fork_at_old_event_leaves_main_alone(ctx, session):
    main_before = ctx.json("log", "main")
    ctx("fork", "try-b", "--at", "HEAD~1")
    ctx("append", "DiffApplied", "--payload", '{"path": "x"}')
    assert ctx.json("log", "main") == main_before
    d = ctx.json("diff", "main", "try-b")
    assert d["merge_base"] == main_before[1]["id"]
    assert [e["type"] for e in d["only_a"]] == ["UserPromptSubmitted"]
    assert [e["type"] for e in d["only_b"]] == ["DiffApplied"]


def test_reset_and_undo_via_reflog(ctx, session):
    tip = ctx.json("log", "-n", "1")[0]["id"]
    res = ctx.json("reset", "HEAD~1")
    assert res["old"] == tip
    assert ctx.json("status")["events"] == 1
    reflog = ctx.json("reflog", "main")
    assert reflog["entries"][1]["new"] == tip
    ctx("reset", "main@{1}")
    assert ctx.json("status")["head"] == tip


def test_checkout_detached_and_back(ctx, session):
    res = ctx.json("checkout", "HEAD~1")
    assert res["detached"]
    assert "detached" in ctx.fails(5, "append", "FileRead")
    assert ctx.json("status")["detached"]
    ctx("checkout", "main")
    assert not ctx.json("status")["detached"]


@pytest.mark.parametrize("args,code,needle", [
    (("log", "nope"), 5, "unknown revision"),
    (("show", "zzzz"), 5, "unknown revision"),
    (("checkout", "missing-branch"), 5, "unknown revision"),
    (("branch", "a..b"), 5, "'..'"),
    (("branch", "-bad"), 2, ""),
    (("fork", "x.lock"), 5, ".lock"),
    (("log", "HEAD~99"), 5, "ancestors"),
    (("reflog", "HEAD"), 0, ""),
    (("diff", "main", "nope"), 5, "unknown revision"),
    # a git range is named as one, not mangled into "unknown revision 'HEAD..HEAD'"
    (("show", "HEAD..HEAD~1"), 5, "'HEAD..HEAD~1' is a range (A..B)"),
    (("log", "HEAD~1..HEAD"), 5, "'HEAD~1..HEAD' is a range (A..B)"),
    (("diff", "main", "main.."), 5, "'main..' is a range"),
])
def test_bad_revisions_and_names(ctx, session, tmp_path, args, code, needle):
    before = store_files(tmp_path)
    if code == 2:
        ctx(*args, code=2)
    elif code:
        assert needle in ctx.fails(code, *args)
    else:
        ctx(*args)
    if args[0] != "reflog":
        assert store_files(tmp_path) == before


def test_ambiguous_prefix(ctx, tmp_path, monkeypatch):
    """Events of a fixed session at a fixed time have fixed ids: append until two share their
    first 4 hex digits (in-process, one batch at a time), then `show PREFIX` is ambiguous."""
    from ctxstore.porcelain import sessions as ps
    from ctxstore.repo import Repository

    monkeypatch.setenv("CTX_FAKE_TIME", "2026-01-01T00:00:00.000Z")
    with Repository.open(tmp_path) as repo:
        repo.new_session(title="ambiguous", nonce="fixed", ts="2026-01-01T00:00:00.000Z")
        by4: dict[str, str] = {}
        pref = None
        n = 0
        while pref is None:
            batch = [json.dumps({"type": "FileRead", "payload": {"path": str(n + i)}})
                     for i in range(256)]
            n += len(batch)
            ps.append_batch(repo, batch)
            for eid, _ in repo.graph.walk([repo.current().tip], limit=len(batch)):
                if by4.setdefault(eid[:4], eid) != eid:
                    pref = eid[:4]
    assert "ambiguous" in ctx.fails(4, "show", pref)


def test_no_store_found(tmp_path):
    from click.testing import CliRunner

    from ctxstore.cli.main import cli

    res = CliRunner().invoke(cli, ["log"])
    assert res.exit_code == 9
    assert "no ctxstore found" in res.stderr


def test_help_teaches(ctx):
    out = ctx("--help").stdout
    for cmd in ("init", "new", "append", "log", "fork", "checkout", "reset", "diff", "reflog"):
        assert f"  {cmd}" in out
    assert "Examples" in ctx("append", "--help").stdout


def test_branch_and_reset_refuse_another_sessions_events(ctx, session, tmp_path):
    other_root = ctx.json("log")[-1]["id"]  # root of the first session
    ctx("new", "--title", "second")
    before = store_files(tmp_path)
    assert "belongs to session" in ctx.fails(5, "branch", "alien", other_root)
    assert "belongs to session" in ctx.fails(5, "reset", other_root)
    assert "belongs to session" in ctx.fails(5, "fork", "x", "--at", other_root)
    assert store_files(tmp_path) == before


def test_detached_head_resolves_branch_names_of_its_session(ctx, session):
    ctx("checkout", "HEAD~1")
    assert ctx.json("log", "main", "-n", "1")[0]["type"] == "UserPromptSubmitted"
    st = ctx.json("state")  # the manager is bound to the detached event's own session
    assert st["goal"]["user_goal"] == "make CI green"


def test_a_lock_file_left_by_a_killed_process_does_not_block_new(ctx, session, tmp_path):
    # transactions serialize on an flock (docs/format.md "Transactions"), which dies with its
    # process; a stale HEAD.lock is only a temp file, replaced by the next move
    (tmp_path / ".ctx" / "HEAD.lock").write_text("")
    new = ctx("new", "--title", "after a crash").stdout.strip()
    assert sorted(s["id"] for s in ctx.json("sessions")) == sorted([session, new])


def test_deleted_branch_is_recoverable_from_its_reflog(ctx, session):
    ctx("branch", "tmp")
    tip = ctx.json("log", "tmp", "-n", "1")[0]["id"]
    ctx("branch", "-d", "tmp")
    assert ctx.json("show", "tmp@{1}")["id"] == tip  # @{0} is the deletion itself
    ctx("branch", "tmp", "tmp@{1}")
    assert ctx.json("log", "tmp", "-n", "1")[0]["id"] == tip


def test_checkout_head_stays_on_the_branch(ctx, session):
    assert "Already on main" in ctx("checkout", "HEAD").stdout
    assert not ctx.json("status")["detached"]
