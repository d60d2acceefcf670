"""Redaction policy: planted fake credentials of the common shapes never reach a redacted
context, export or pack, while the raw store keeps them byte-identical; purge rewrites
history as one undoable operation; sensitive artifacts stay out of bundles unless admitted."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxstore import ContextManager, codec
from ctxstore.errors import InvalidInput, Unsupported
from ctxstore.objects import links
from ctxstore.porcelain import redact as pr
from ctxstore.porcelain import transfer as pt
from ctxstore.redaction import (
    RedactionPolicy,
    Redactor,
    detect_secrets_available,
    policy_for,
    purge,
    redacted_view,
    scan,
)
from ctxstore.repo import Repository
from tests.clitools import Ctx
from tests.corpus import in_ci

# Fake credentials of the shapes people leak (none is a real key).
SECRETS = {
    "aws_key_id": "AKIAQ3EGUWCEXAMPLE7K",
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCY9EXAMPLEKE",
    "github": "ghp_" + "Zx9Qw8Ev7Rt6Yu5Io4Pa3Sd2Fg1Hj0KlMnBv",
    "github_pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF",
    "slack": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "openai_project": "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0f",
    "openai_legacy": "sk-" + "a1B2c3D4e5F6g7H8i9J0" + "T3BlbkFJ" + "k1L2m3N4o5P6q7R8s9T0",
    "anthropic": "sk-ant-api03-" + "Qw3rTy6uIo9pAs2dFg5hJk8lZx1cVb4nM7" + "-AA",
    "url_password": "Hunter2-Sup3rS3cret",
    "private_key_body": "MIIEowIBAAKCAQEA7xFakeKeyBodyLineOne+/abcdefghijklmnopqrstuv",
    "stripe": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
           "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
}
PRIVATE_KEY = ("-----BEGIN RSA PRIVATE KEY-----\n" + SECRETS["private_key_body"] + "\n"
               "K7MDENGbPxRfiCYEXAMPLEKEYsecondline==\n-----END RSA PRIVATE KEY-----")
CARRIERS = {
    "aws_key_id": "export AWS_ACCESS_KEY_ID={}",
    "aws_secret": "aws_secret_access_key = \"{}\"",
    "github": "git push https://github.com/o/r with token {}",
    "github_pat": "GH_TOKEN={}",
    "slack": "SLACK_BOT_TOKEN: {}",
    "openai_project": "OPENAI_API_KEY={}",
    "openai_legacy": "openai.api_key = '{}'",
    "anthropic": "ANTHROPIC_API_KEY={}",
    "url_password": "psql postgres://admin:{}@db.internal:5432/prod",
    "private_key_body": PRIVATE_KEY.replace(SECRETS["private_key_body"], "{}"),
    "stripe": "stripe.api_key = \"{}\"",
    "jwt": "Authorization: Bearer {}",
}


def planted(name: str) -> str:
    return CARRIERS[name].format(SECRETS[name])


ALL = "\n".join(planted(n) for n in SECRETS)


def assert_clean(text: str, where: str) -> None:
    leaked = [n for n, s in SECRETS.items() if s in text]
    assert not leaked, f"{where} leaks {leaked}"


def everything_in(store) -> str:
    """Every object's decoded content as one text (blobs as UTF-8)."""
    parts = []
    for oid in store:
        type_name, body = store.get_raw(oid)
        value = codec.decode_body(type_name, body)
        parts.append(value.decode("utf-8", "replace") if isinstance(value, bytes)
                     else json.dumps(value, default=repr, ensure_ascii=False))
    return "\n".join(parts)


def seeded(repo: Repository) -> ContextManager:
    """A session with every secret in a user message, an assistant reply, tool-call args, a
    small inline tool output, a big tool output (an artifact), a file artifact and a diff."""
    cm = ContextManager.start(repo, title="deploy", goal="ship the release")
    names = list(SECRETS)
    cm.add_user_message("Here are the credentials:\n" + planted(names[0]) + "\n" + planted(names[1]))
    cm.add_assistant_message("I will use " + planted(names[2]),
                             tool_calls=[{"id": "c1", "name": "bash",
                                          "args": {"cmd": planted(names[8])}}])
    cm.record_tool_result("c1", "connected\n" + planted(names[3]) + "\n" + planted(names[4]))
    cm.record_tool_call("c2", "bash", {"cmd": "cat .env"})
    cm.record_tool_result("c2", "x" * 6000 + "\n" + ALL)  # over the threshold: an artifact
    cm.record_file_read("keys/id_rsa", PRIVATE_KEY + "\n" + planted(names[5]))
    cm.record_file_write(".env", "add keys", diff="+" + planted(names[6]) + "\n+" + planted(names[7]))
    cm.add_user_message("now also " + planted(names[10]) + " and " + planted(names[11]))
    return cm


@pytest.fixture
def repo(tmp_path):
    return Repository.init(tmp_path)


def raw_objects(repo) -> dict[str, tuple[str, bytes]]:
    return {oid: repo.objects.get_raw(oid) for oid in repo.objects}


def test_the_detectors_find_every_shape():
    r = Redactor()
    for name in SECRETS:
        text = planted(name)
        out, fired = r.redact(text)
        assert SECRETS[name] not in out and fired, (name, out)
        assert "[REDACTED:" in out


def test_ci_runs_detect_secrets():
    if not detect_secrets_available():
        if in_ci():
            pytest.fail("detect-secrets is not installed in CI: install the 'redact' extra")
        pytest.skip("detect-secrets not installed (extra 'redact'): built-in patterns only")
    r = Redactor()
    assert "detect-secrets" in r.engines
    out, fired = r.redact("twilio SK" + "0123456789abcdef" * 2)  # a shape only detect-secrets knows
    assert "detect-secrets/TwilioKeyDetector" in fired and "0123456789abcdef" * 2 not in out


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(SECRETS)),
       before=st.text(st.characters(whitelist_categories=("Ll", "Zs", "Nd")), max_size=40),
       after=st.text(st.characters(whitelist_categories=("Ll", "Zs", "Nd")), max_size=40),
       quote=st.sampled_from(["", "\"", "'", "`", "(", " "]))
def test_a_planted_secret_never_survives(name, before, after, quote):
    text = f"{before} {quote}{planted(name)}{quote} {after}"
    out, fired = Redactor().redact(text)
    assert SECRETS[name] not in out and fired


def test_redacted_context_export_and_pack_keep_no_secret(repo, tmp_path):
    cm = seeded(repo)
    before = raw_objects(repo)
    assert all(s in everything_in(repo.objects) for s in SECRETS.values())  # the raw store has them

    bundle = cm.build_context(budget=200_000, record=True)
    text = json.dumps(bundle.to_dict())
    assert_clean(text, "the built context")
    assert bundle.redactions and all(set(r["redactions"]) or r["withheld"] for r in bundle.redactions)
    assert all("REDACTED" not in d for r in bundle.redactions for d in r["redactions"])
    from ctxstore.context import to_anthropic, to_openai

    assert_clean(json.dumps(to_openai(bundle)) + json.dumps(to_anthropic(bundle)), "the payloads")

    out = io.StringIO()
    res = pr.export_redacted(repo, cm.session, "jsonl", out)
    assert_clean(out.getvalue(), "ctx export --redact")
    assert res["redaction"]["redactions"] >= len(SECRETS)

    path = str(tmp_path / "r.ctxpack")
    summary, report = pr.pack_redacted(repo, path, [cm.session])
    assert report["redactions"] >= len(SECRETS)
    other = Repository.init(tmp_path / "other")
    pt.unpack(other, path)
    assert_clean(everything_in(other.objects), "the unpacked redacted pack")
    (ref, tip), = summary.refs.items()
    assert other.refs.read(ref) == tip

    # the redacted export re-imports to exactly the redacted ids
    from ctxstore.importers import import_paths

    exported = tmp_path / "x.jsonl"
    exported.write_text(out.getvalue())
    third = Repository.init(tmp_path / "third")
    rep = import_paths(third, [exported])
    assert not rep.warnings
    assert_clean(everything_in(third.objects), "the re-imported redacted export")

    # nothing of the store changed: every object is still there, byte for byte
    after = raw_objects(repo)
    assert all(after[k] == v for k, v in before.items())
    assert all(s in everything_in(repo.objects) for s in SECRETS.values())


def test_a_clean_session_packs_byte_identical_with_redact(repo, tmp_path):
    cm = ContextManager.start(repo, title="clean")
    cm.add_user_message("nothing secret here, just run the tests")
    plain, red = str(tmp_path / "a.ctxpack"), str(tmp_path / "b.ctxpack")
    pt.pack(repo, plain, [cm.session])
    _, report = pr.pack_redacted(repo, red, [cm.session])
    assert report["redactions"] == 0
    assert open(plain, "rb").read() == open(red, "rb").read()


def test_redacted_pack_refuses_since(repo, tmp_path):
    cm = seeded(repo)
    with pytest.raises(Unsupported, match="--since"):
        pr.pack_redacted(repo, str(tmp_path / "p"), [cm.session], since=cm.tip)


def test_purge_gives_new_ids_and_is_undoable(repo):
    cm = seeded(repo)
    old_tip = cm.tip
    before = raw_objects(repo)
    seen = scan(repo, cm.session)
    assert seen["report"]["redactions"] >= len(SECRETS)
    assert raw_objects(repo) == before  # scanning writes nothing

    res = purge(repo, cm.session)
    assert res["operation"] and res["moves"][0]["old"] == old_tip
    new_tip = cm.tip
    assert new_tip != old_tip
    reach = links.reachable(repo.objects, [new_tip])
    view = "\n".join(json.dumps(codec.decode_body(*repo.objects.get_raw(o)), default=repr)
                     if repo.objects.type_of(o) != "blob"
                     else repo.objects.get_raw(o)[1].decode("utf-8", "replace") for o in reach)
    assert_clean(view, "the purged history")
    assert old_tip in repo.objects and all(k in repo.objects for k in before)  # kept until gc
    op = repo.objects.get(res["operation"])
    assert any(c[1] == old_tip and c[2] == new_tip for c in op.changes)
    # the context of the purged branch still builds, and the state is there
    assert cm.project_state().goal["user_goal"] == "ship the release"
    from ctxstore.porcelain import oplog

    oplog.undo(repo)
    assert cm.tip == old_tip
    assert purge(repo, cm.session)["moves"]  # and again


def test_purge_with_nothing_to_redact_moves_nothing(repo):
    cm = ContextManager.start(repo, title="clean")
    cm.add_user_message("hello")
    ops = list(repo.refs.iter_refs("refs/"))
    res = purge(repo, cm.session)
    assert res["moves"] == [] and res["operation"] is None
    assert list(repo.refs.iter_refs("refs/")) == ops


def test_sensitive_artifacts_are_withheld_unless_the_policy_admits_them(tmp_path):
    for admit in (False, True):
        repo = Repository.init(tmp_path / str(admit), redaction={"admit_sensitive": admit})
        cm = ContextManager.start(repo, title="t")
        cm.add_user_message("read the customer list")
        aid = cm.add_artifact("ALICE-CUSTOMER-RECORD " * 300, "file", "customers.csv",
                              "the customer list", sensitive=True)
        cm.append_event("ArtifactAdded", "tool", {"path": "customers.csv", "summary": "list"},
                        {"artifact_id": aid})
        cm.record_tool_call("c1", "read", {"path": "customers.csv"})
        cm.append_event("ToolCallFinished", "tool",
                        {"tool_call_id": "c1", "preview": "ALICE-CUSTOMER-RECORD …"},
                        {"tool_call_id": "c1", "artifact_id": aid})
        bundle = cm.build_context(budget=50_000)
        text = json.dumps([s.to_dict() for s in bundle.kept])
        notes = [r for r in bundle.redactions if (r["admitted"] if admit else r["withheld"])]
        assert notes and all(aid in r["sources"] or any(aid in n for n in (r["admitted"], r["withheld"]))
                             for r in notes)
        assert ("ALICE-CUSTOMER-RECORD" in text) == admit
        pair = next(s for s in bundle.segments if s.tool_call_id == "c1")
        assert pair.kept and len(pair.messages) == 2  # withheld, never split from its call
        assert any("withheld" in line or "admitted" in line for line in bundle.explain())


def test_memory_like_segments_marked_sensitive_are_withheld(repo):
    from ctxstore.context import Segment

    cm = ContextManager.start(repo, title="t")
    cm.add_user_message("go")
    seg = Segment("memory", text="the user's home address is 1 Secret Lane", sources=("m1",),
                  data={"sensitivity": "secret"})
    bundle = cm.build_context(budget=50_000, extra=[seg])
    mem = next(s for s in bundle.segments if s.kind == "memory")
    assert "Secret Lane" not in mem.text and "withheld" in mem.data


def test_policy_patterns_and_errors(tmp_path):
    repo = Repository.init(tmp_path, redaction={"patterns": {"internal": r"itk_[A-Za-z0-9]{16}"}})
    cm = ContextManager.start(repo, title="t", config={"redaction": {"patterns": {
        "ticket": r"TCK-\d{6}"}}})
    cm.add_user_message("token itk_ABCDEFGHIJKLMNOP and TCK-123456")
    b = cm.build_context(budget=10_000)
    text = json.dumps(b.to_dict())
    assert "itk_ABCDEFGHIJKLMNOP" not in text and "TCK-123456" not in text
    assert "pattern/internal" in text and "pattern/ticket" in text
    with pytest.raises(InvalidInput, match="redaction.bogus"):
        RedactionPolicy().merged({"bogus": 1}, "store config")
    with pytest.raises(InvalidInput, match="not a valid regex"):
        RedactionPolicy().merged({"patterns": {"x": "("}}, "store config")
    with pytest.raises(InvalidInput, match="true or false"):
        RedactionPolicy().merged({"on_pack": "yes"}, "store config")
    if detect_secrets_available():
        with pytest.raises(InvalidInput, match="unknown detect-secrets plugin"):
            Redactor(RedactionPolicy(detectors=("NoSuchDetector",)))


def test_build_redaction_can_be_turned_off(tmp_path):
    repo = Repository.init(tmp_path, redaction={"on_build": False})
    cm = ContextManager.start(repo, title="t")
    cm.add_user_message(planted("github"))
    assert SECRETS["github"] in json.dumps(cm.build_context(budget=10_000).to_dict())
    assert policy_for(repo).on_build is False


def test_redacted_view_for_a_push(repo):
    """The library function a git push calls: refs in, redacted refs and an overlay out."""
    cm = seeded(repo)
    view = redacted_view(repo, {cm.ref: cm.tip})
    (ref, tip), = view.refs.items()
    assert ref == cm.ref and tip != cm.tip and tip not in repo.objects  # the store is untouched
    ids = links.reachable(view.objects, [tip])
    assert_clean("\n".join(str(codec.decode_body(*view.objects.get_raw(i))) for i in ids), "the view")


# -- the command line ---------------------------------------------------------------------------

def cli_seeded(tmp_path) -> tuple[Ctx, ContextManager]:
    ctx = Ctx(tmp_path)
    ctx("init")
    repo = Repository.open(tmp_path)
    cm = seeded(repo)
    ctx("checkout", cm.session)
    repo.close()
    return ctx, cm


def test_cli_redact_reports_and_purges(tmp_path):
    ctx, cm = cli_seeded(tmp_path)
    out = ctx("redact").stdout
    assert "builtin/aws-access-key-id" in out and "--purge" in out
    assert_clean(out, "ctx redact")
    data = ctx.json("redact")
    assert data["report"]["redactions"] >= len(SECRETS)
    out = ctx("redact", "--purge").stdout
    assert "ctx undo" in out
    log = ctx("log").stdout
    assert_clean(log, "ctx log after purge")
    ctx("undo")
    assert SECRETS["aws_key_id"] in ctx("log").stdout


def test_cli_export_and_pack_redact(tmp_path):
    ctx, cm = cli_seeded(tmp_path)
    res = ctx("export", "HEAD", "--format", "jsonl", "--redact")
    assert_clean(res.stdout, "ctx export --redact")
    assert "redacted" in res.stderr
    plain = ctx("export", "HEAD", "--format", "jsonl").stdout
    assert SECRETS["github"] in plain
    pack = tmp_path / "p.ctxpack"
    out = ctx.json("pack", "--redact", "-o", str(pack))
    assert out["redaction"]["redactions"] >= len(SECRETS)
    ctx("context", "--explain")
    assert_clean(ctx("context", "--explain").stdout, "ctx context")
    assert "redacted:" in ctx("context", "--explain").stdout


def test_policy_makes_redaction_the_default_for_pack_and_export(tmp_path):
    ctx = Ctx(tmp_path)
    ctx("init")
    cfg = tmp_path / ".ctx" / "config.json"
    data = json.loads(cfg.read_text())
    data["redaction"] = {"on_pack": True, "on_export": True}
    cfg.write_text(json.dumps(data))
    repo = Repository.open(tmp_path)
    cm = seeded(repo)
    repo.close()
    ctx("checkout", cm.session)
    assert_clean(ctx("export", "HEAD", "--format", "jsonl").stdout, "export under on_export")
    assert SECRETS["github"] in ctx("export", "HEAD", "--format", "jsonl", "--no-redact").stdout
    assert "redaction" in ctx.json("pack", "-o", str(tmp_path / "a.ctxpack"))
    assert "redaction" not in ctx.json("pack", "--no-redact", "-o", str(tmp_path / "b.ctxpack"))


def test_cli_bad_policy_is_one_clear_line(tmp_path):
    ctx = Ctx(tmp_path)
    ctx("init")
    cfg = tmp_path / ".ctx" / "config.json"
    data = json.loads(cfg.read_text())
    data["redaction"] = {"on_pack": "sometimes"}
    cfg.write_text(json.dumps(data))
    repo = Repository.open(tmp_path)
    ContextManager.start(repo, title="t").add_user_message("hi")
    repo.close()
    err = ctx.fails(10, "pack", "--all", "-o", str(tmp_path / "x.ctxpack"))
    assert "redaction.on_pack" in err and "store config" in err


@pytest.mark.parametrize("rule", Redactor().rules, ids=lambda r: f"{r.detector}:{r.regex.pattern[:20]}")
def test_every_match_contains_a_needle(rule):
    """The literal prefilter (detect.needles) may only skip strings the regex cannot match."""
    if rule.needles is None:
        pytest.skip("no needle: the regex always runs")
    import re

    @settings(max_examples=40, deadline=None)
    @given(st.from_regex(rule.regex, fullmatch=False))
    def check(s):
        m = rule.regex.search(s)
        if m is None:
            return
        hay = m.group(0).lower() if rule.regex.flags & re.IGNORECASE else m.group(0)
        assert any(n in hay for n in rule.needles), (s, rule.needles)

    check()


def test_cli_sensitive_artifact_stays_out_of_the_context(tmp_path):
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new", "--title", "t")
    ctx("append", "UserPromptSubmitted", "--payload", '{"text": "look at the customers"}')
    f = tmp_path / "customers.csv"
    f.write_text("name,card\nAlice,CARD-NUMBER-4111\n")
    ctx("artifact", "add", str(f), "--sensitive", "--summary", "customer list CARD-NUMBER-4111")
    out = ctx("context", "--explain").stdout
    assert "CARD-NUMBER-4111" not in out and "withheld" in out


def test_purge_of_a_session_whose_title_holds_a_secret_renames_its_refs(repo):
    cm = ContextManager.start(repo, title="deploy with " + SECRETS["github"])
    cm.add_user_message("go")
    sid = cm.session
    res = purge(repo, sid)
    new = res["new_session"]
    assert new != sid and SECRETS["github"] not in repo.session(new).title
    assert repo.branches(sid) == {} and set(repo.branches(new)) == {"main"}
    assert repo.current().session == new  # HEAD followed
    assert repo.session_of_event(repo.branches(new)["main"]) == new
    from ctxstore.porcelain import oplog

    oplog.undo(repo)
    assert set(repo.branches(sid)) == {"main"} and repo.branches(new) == {}
    assert repo.current().session == sid


def test_a_segment_citing_a_sensitive_memory_object_is_withheld(repo):
    from ctxstore.context import Segment

    cm = ContextManager.start(repo, title="t")
    eid = cm.add_user_message("go")
    mid = cm.remember("door code 4711", scope="session", sources=[eid], ttl="30d", sensitive=True)
    seg = Segment("memory", text="door code 4711", sources=(mid,))
    mem = next(s for s in cm.build_context(budget=50_000, extra=[seg]).segments
               if s.kind == "memory")
    assert "4711" not in mem.text and mid in mem.data["withheld"]


def test_workspace_snapshots_travel_unredacted_and_say_so(tmp_path):
    repo = Repository.init(tmp_path / "store")
    cm = ContextManager.start(repo, title="t")
    cm.add_user_message("token " + SECRETS["github"])
    root = tmp_path / "proj"
    root.mkdir()
    (root / "README").write_text("hello\n")
    cm.snapshot_workspace(str(root))
    path = str(tmp_path / "p.ctxpack")
    _, report = pr.pack_redacted(repo, path, [cm.session])
    assert report["workspace_unredacted"] == 1 and report["redactions"] >= 1
    assert any("workspace snapshot" in line for line in pr.describe(report))
    assert pt.verify(path)["objects"] > 0  # the snapshot's links all resolve in the pack
