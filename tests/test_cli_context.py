"""CLI tests for the Context Manager's commands: state, context, trace, stats, artifact, cat,
the state section of diff, and demo."""

from __future__ import annotations

import json

import pytest

from ctxstore import ContextManager, Repository

from .clitools import Ctx, store_files


@pytest.fixture
def ctx(tmp_path):
    store = Repository.init(tmp_path)
    cm = ContextManager.start(store, "fix", "Fix the failing test and verify it.",
                              ts="2026-01-01T00:00:00.000Z")
    cm.update_state({"constraints": {"hard": ["Do not modify the public API."]},
                     "open_questions_add": ["Spaces around other operators?"]})
    cm.add_user_message("The serializer test fails.")
    cm.add_assistant_message("Running tests.", tool_calls=[{"id": "c1", "name": "bash",
                                                            "args": {"cmd": "pytest"}}])
    cm.record_tool_result("c1", "FAILED test_plus\n" * 400, name="bash")  # > 4 KB: an artifact
    cm.record_file_write("src/ser.py", "spaces around +", diff="-a\n+b\n")
    cm.record_verifier("pytest", "fail")
    cm.fork("alt")
    store.close()
    return Ctx(tmp_path)


def test_state_text_and_json(ctx):
    st = ctx.json("state")
    assert st["goal"]["user_goal"] == "Fix the failing test and verify it."
    assert st["goal"]["current_task"] == "The serializer test fails."
    assert st["constraints"]["hard"] == ["Do not modify the public API."]
    assert [f["path"] for f in st["files"]["modified"]] == ["src/ser.py"]
    out = ctx("state").stdout
    assert "Goal: Fix the failing test" in out and "modified  src/ser.py" in out
    assert "Open question: Spaces around other operators?" in out


def test_context_json_contract(ctx):
    b = ctx.json("context", "--budget", "3000")
    for key in ("used_tokens", "max_tokens", "tokenizer", "segments"):
        assert key in b
    assert b["used_tokens"] <= b["max_tokens"] - b["reserved_output"]
    for seg in b["segments"]:
        for key in ("kind", "kept", "tier", "tokens", "reason", "sources"):
            assert key in seg
        if seg["kind"] in ("turn", "pending_tool_pair", "tool_output"):
            assert "tool_call_id" in seg
    assert any(s["tool_call_id"] == "c1" for s in b["segments"])
    assert any(s["kind"] == "current_request" and s["kept"] for s in b["segments"])


def test_context_human_view_and_explain(ctx):
    out = ctx("context", "--budget", "3000").stdout
    assert "Context:" in out and "By tier:" in out and "By kind:" in out
    explained = ctx("context", "--budget", "3000", "--explain").stdout
    assert "P0: current request, never dropped" in explained and "sources:" in explained


def test_context_provider_formats(ctx):
    oa = ctx.json("context", "--format", "openai")
    assert oa["messages"][0]["role"] == "system"
    calls = [m for m in oa["messages"] if m.get("tool_calls")]
    assert calls and json.loads(calls[0]["tool_calls"][0]["function"]["arguments"]) == {"cmd": "pytest"}
    an = ctx.json("context", "--format", "anthropic")
    assert isinstance(an["system"], str)
    roles = [m["role"] for m in an["messages"]]
    assert all(a != b for a, b in zip(roles, roles[1:], strict=False))


def _refs_and_logs(root):
    return {k: v for k, v in store_files(root).items() if k.startswith(("refs/", "logs/", "HEAD"))}


def test_context_budget_too_small(ctx, tmp_path):
    before = _refs_and_logs(tmp_path)
    err = ctx.fails(14, "context", "--budget", "5")
    assert "budget too small" in err and "P0 tier needs" in err
    assert _refs_and_logs(tmp_path) == before  # only derived snapshots may have been cached


def test_context_record_names_bundle(ctx):
    ctx("context", "--budget", "3000", "--record")
    ev = ctx.json("log", "-n", "1")[0]
    assert ev["type"] == "ContextBuilt"
    bundle = ctx.json("show", ev["causality"]["bundle_id"])
    assert bundle["type"] == "bundle" and bundle["content"]["used_tokens"] == ev["payload"]["used_tokens"]


def test_trace_and_stats(ctx):
    t = ctx.json("trace")
    assert t["goal"] == "Fix the failing test and verify it."
    assert [a["action_type"] for a in t["actions"]].count("tool_call") == 1
    assert t["actions"][1]["result_event"]  # the call points at its result
    assert t["validation"] == [{"check": "pytest", "result": "fail", "event": t["validation"][0]["event"],
                                "evidence_refs": []}]
    assert "Validation (1):" in ctx("trace").stdout
    s = ctx.json("stats")
    assert s["tools"]["tool_call_count"] == 1 and s["events"] >= 8
    assert "Tools: 1 calls" in ctx("stats").stdout


def test_artifact_add_and_cat(ctx, tmp_path):
    f = tmp_path / "log.txt"
    f.write_bytes(b"\x00binary\xffdata" * 100)
    res = ctx.json("artifact", "add", str(f), "--kind", "command_log")
    assert ctx("cat", res["artifact"][:12]).stdout_bytes == f.read_bytes()
    assert ctx("cat", res["content"]).stdout_bytes == f.read_bytes()
    again = ctx.json("artifact", "add", str(f), "--kind", "command_log")
    assert again["artifact"] == res["artifact"] and again["content"] == res["content"]  # stored once
    ev = ctx.json("log", "-n", "1")[0]
    assert ev["type"] == "ArtifactAdded" and ev["causality"]["artifact_id"] == res["artifact"]
    assert any(a["artifact_id"] == res["artifact"] for a in ctx.json("state")["artifacts"])
    ctx("gc", "--prune=now")
    assert ctx("cat", res["artifact"]).stdout_bytes == f.read_bytes()  # an event keeps it alive
    assert "no such file" in ctx.fails(3, "artifact", "add", str(tmp_path / "missing"))
    head = ctx.json("log", "-n", "1")[0]["id"]
    assert "not an artifact" in ctx.fails(3, "cat", head)


def test_diff_has_state_section(ctx):
    ctx("checkout", "alt")
    ctx("append", "StateUpdated", "--payload", json.dumps({"patch": {"goal": {"current_task": "try B"}}}))
    d = ctx.json("diff", "main", "alt")
    assert d["state"]["goal"]["current_task"] == {"before": "The serializer test fails.", "after": "try B"}
    out = ctx("diff", "main", "alt").stdout
    assert "state (main → alt):" in out
    assert "goal.current_task: The serializer test fails. → try B" in out


def test_demo_in_found_store_is_deterministic(tmp_path):
    c = Ctx(tmp_path)
    c("init", str(tmp_path))
    first = c.json("demo")
    assert first["compaction"] and first["merge"]
    out = c("demo").stdout  # a second run makes a second demo session, never touches the first
    assert "ctx log --graph --all" in out and "Context:" in out
    sessions = {s["id"] for s in c.json("sessions")}
    assert first["session"] in sessions and len(sessions) == 2
    other = tmp_path / "other"
    other.mkdir()
    c2 = Ctx(other)
    c2("init", str(other))
    assert c2.json("demo")["session"] == first["session"]  # same inputs, same ids


def test_demo_without_store_uses_temporary_one(tmp_path, monkeypatch):
    import tempfile

    from click.testing import CliRunner

    from ctxstore.cli.main import cli

    # the temporary store goes where tempfile puts it: here, not the machine's /tmp (every run
    # of the suite left a ctx-demo-* store there)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CTX_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    res = CliRunner().invoke(cli, ["demo"])
    assert res.exit_code == 0, res.output
    assert "using a new temporary store at" in res.stdout
    made = list(tmp_path.glob("ctx-demo-*"))
    assert len(made) == 1 and str(made[0]) in res.stdout


def test_large_artifact_is_chunked_and_streams_back(ctx, tmp_path):
    import random

    pytest.importorskip("pyfastcdc")
    big = tmp_path / "big.log"
    # seeded: with os.urandom the chunk boundaries near the edit varied from run to run, and
    # now and then the edit touched one chunk more than the bound below allows
    data = random.Random(20261203).randbytes(1 << 20) + b"tail\n" * 300_000
    big.write_bytes(data)
    res = ctx.json("artifact", "add", str(big))
    assert ctx.json("show", res["content"])["type"] == "chunks"
    assert res["size"] == len(data)
    assert ctx("cat", res["artifact"]).stdout_bytes == data
    # an edited copy shares its unchanged chunks
    big.write_bytes(data[:500_000] + b"EDIT" + data[500_000:])
    before = ctx.json("fsck")["objects"]
    ctx.json("artifact", "add", str(big))
    new_objects = ctx.json("fsck")["objects"] - before
    manifest = ctx.json("show", res["content"])["content"]
    # only the changed chunk(s), a manifest, an artifact, its event and the operation are new;
    # the rest is shared
    assert new_objects <= 6 < len(manifest["chunks"]) + 4


def test_record_only_at_the_tip(ctx):
    tip = ctx.json("log", "-n", "1")[0]["id"]
    assert "not its tip" in ctx.fails(5, "context", "HEAD~1", "--record")
    assert ctx.json("log", "-n", "1")[0]["id"] == tip
    ctx("context", "--record")
    built = ctx.json("log", "-n", "1")[0]
    assert built["type"] == "ContextBuilt" and built["payload"]["at"] == tip
