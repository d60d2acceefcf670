"""`ctx push --redact` and the policy's `on_push` (issue 17 item 4): planted fake credentials
never reach any object of the remote git repository (every git blob scanned, ctxpacks
decompressed through our own reader), while the raw store keeps them byte-identical; the
redacted copy is kept locally so a second push sends nothing and an extended session only its
new objects, as a fast-forward; clones of the copy work; pull says what the copy is."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from ctxstore import codec
from ctxstore.cli.main import cli
from ctxstore.errors import CorruptStore, RefConflict
from ctxstore.gitbridge import fetch as gfetch
from ctxstore.gitbridge import push as gpush
from ctxstore.gitbridge.remotes import add_remote
from ctxstore.objects import links
from ctxstore.redaction import RedactionPolicy, Redactor
from ctxstore.redaction.pushmap import HEADER, PushMap, fingerprint
from ctxstore.repo import Repository
from ctxstore.transfer.packfile import BodyReader, read_pack

from .clitools import Ctx
from .remotetools import bare, fsck_strict, needs_git, remote_refs
from .test_redaction import SECRETS, assert_clean, everything_in, planted, raw_objects, seeded

pytestmark = needs_git


def remote_text(path, tmp_path) -> tuple[str, int]:
    """Every git object of the bare repository at PATH as text: each blob is either a
    ctxstore pack — every record decompressed by our reader and decoded — or a manifest; a
    blob that is neither fails the test. Returns (text, number of packs)."""
    import pygit2
    from pygit2.enums import ObjectType

    from ctxstore.errors import BadPack

    repo = pygit2.Repository(str(path))
    parts, packs = [], 0
    for oid in repo.odb:
        obj = repo.get(oid)
        if obj.type != ObjectType.BLOB:
            parts.append(obj.read_raw().decode("utf-8", "replace"))
            continue
        data = obj.data
        tmp = tmp_path / f"scan-{oid}.ctxpack"
        tmp.write_bytes(data)
        try:
            pack = read_pack(str(tmp))
        except BadPack:
            json.loads(data)  # not a pack: must be a manifest
            parts.append(data.decode("utf-8"))
            continue
        finally:
            os.unlink(tmp)
        packs += 1
        try:
            reader = BodyReader(pack)
            for info in pack.records:
                body = reader.body(info)
                if info.type == "zdict":
                    parts.append(body.decode("latin-1"))
                    continue
                value = codec.decode_body(info.type, body)
                parts.append(value.decode("utf-8", "replace") if isinstance(value, bytes)
                             else json.dumps(value, default=repr, ensure_ascii=False))
        finally:
            pack.close()
    return "\n".join(parts), packs


def leaked(text: str) -> list[str]:
    return [n for n, s in SECRETS.items() if s in text]


@pytest.fixture
def seeded_repo(tmp_path):
    repo = Repository.init(tmp_path / "a")
    cm = seeded(repo)
    with repo.transaction(message="checkout") as tx:
        tx.set_head(ref=cm.ref)
    yield repo, cm
    repo.close()


def test_redacted_push_leaves_no_secret_on_the_remote_and_the_raw_store_intact(
        seeded_repo, tmp_path):
    repo, cm = seeded_repo
    remote, plain = bare(tmp_path / "r.git"), bare(tmp_path / "plain.git")
    add_remote(repo, "origin", str(remote))
    add_remote(repo, "plain", str(plain))
    before = raw_objects(repo)
    raw_tip = cm.tip

    result = gpush.push(repo, "origin", redact=True)
    assert result.redaction["redactions"] >= len(SECRETS)
    (ref,) = result.refs
    assert ref.action == "create" and ref.raw_tip == raw_tip and ref.new != raw_tip
    text, packs = remote_text(remote, tmp_path)
    assert packs == 1 and "[REDACTED:" in text
    assert not leaked(text), f"the remote leaks {leaked(text)}"
    fsck_strict(remote)

    # the scan can fail: the same session pushed raw leaks every secret
    gpush.push(repo, "plain", redact=False)
    assert sorted(leaked(remote_text(plain, tmp_path)[0])) == sorted(SECRETS)

    # the raw store keeps every raw object byte for byte; the branch has not moved
    assert all(repo.objects.get_raw(oid) == got for oid, got in before.items())
    assert repo.refs.read(cm.ref) == raw_tip
    assert sorted(leaked(everything_in(repo.objects))) == sorted(SECRETS)
    # the tracking ref names the redacted tip, which the store holds (with all it reaches)
    tracking = repo.refs.read(f"refs/remotes/origin/{cm.session}/main")
    assert tracking == ref.new and tracking in repo.objects
    copy = links.reachable(repo.objects, [tracking])
    assert not leaked("\n".join(str(codec.decode_body(*repo.objects.get_raw(i))) for i in copy))


def test_incremental_redacted_push_sends_only_new_objects_as_fast_forward(seeded_repo, tmp_path):
    repo, cm = seeded_repo
    remote = bare(tmp_path / "r.git")
    add_remote(repo, "origin", str(remote))
    first = gpush.push(repo, "origin", redact=True).refs[0]
    git_ref = f"refs/ctx/sessions/{cm.session}/main"
    commit1 = remote_refs(remote)[git_ref]

    again = gpush.push(repo, "origin", redact=True)
    assert [r.action for r in again.refs] == ["up-to-date"] and again.refs[0].objects == 0
    assert again.redaction["rewritten"] == 0 and again.redaction["map_records"] == 0
    assert again.redaction["reused"] >= 1
    assert remote_refs(remote)[git_ref] == commit1

    # the map is a cache: without it the rewrite gives the same ids again
    for path in (tmp_path / "a" / ".ctx" / "redaction").glob("push-*.map"):
        path.unlink()
    assert gpush.push(repo, "origin", redact=True).refs[0].action == "up-to-date"

    team, _ = gfetch.clone(str(remote), str(tmp_path / "team"))  # a teammate's store
    cm.add_user_message("one more: " + planted("github"))
    cm.add_assistant_message("noted")
    third = gpush.push(repo, "origin", redact=True)
    (r,) = third.refs
    assert r.action == "fast-forward" and r.old == first.new
    assert third.redaction["reused"] >= 1  # the old history came from the push map
    assert third.redaction["by_detector"] == {"builtin/github-token": 2}  # message and event
    # only the new events and what they link to: 2 events, 2 messages (+ the session object
    # the rewrite visits again); nothing of the first push
    assert 0 < r.objects <= 5, r.objects
    import pygit2

    git = pygit2.Repository(str(remote))
    commit2 = git.get(remote_refs(remote)[git_ref])
    assert [str(p) for p in commit2.parent_ids] == [commit1]  # a git fast-forward too
    fsck_strict(remote)
    assert not leaked(remote_text(remote, tmp_path)[0])
    # the teammate's pull is a plain fast-forward onto the grown copy
    pulled = gfetch.pull(team, "origin")
    assert [(b.action, b.new) for b in pulled.branches] == [("fast-forward", r.new)]
    assert pulled.fetch.new_objects <= r.objects
    assert not leaked(everything_in(team.objects))
    team.close()


def cli_store(tmp_path, remotes: tuple[str, ...] = ("origin",), **init) -> tuple[Ctx, list]:
    """A store with the seeded session checked out, driven through the CLI, and a bare
    repository added as each of REMOTES; returns (ctx, [their paths])."""
    root = tmp_path / "a"
    repo = Repository.init(root, **init)
    cm = seeded(repo)
    repo.close()
    ctx = Ctx(root)
    ctx("checkout", cm.session)
    paths = []
    for name in remotes:
        paths.append(bare(tmp_path / f"{name}.git"))
        ctx("remote", "add", name, str(paths[-1]))
    return ctx, paths


def test_on_push_policy_is_the_default_and_no_redact_overrides(tmp_path):
    ctx, (r1, r2) = cli_store(tmp_path, ("origin", "raw"), redaction={"on_push": True})
    out = ctx.json("push")
    assert out["redacted"] is True and out["redaction"]["redactions"] >= len(SECRETS)
    assert set(out["redaction"]) >= {"by_detector", "by_type", "engines", "reused", "rewritten"}
    assert not leaked(remote_text(r1, tmp_path)[0])
    out = ctx.json("push", "raw", "--no-redact")
    assert out["redacted"] is False and "redaction" not in out
    assert sorted(leaked(remote_text(r2, tmp_path)[0])) == sorted(SECRETS)


def test_a_session_policy_on_push_makes_its_pushes_redacted(tmp_path):
    from ctxstore import ContextManager

    repo = Repository.init(tmp_path / "a")
    cm = ContextManager.start(repo, title="t", config={"redaction": {"on_push": True}})
    cm.add_user_message(planted("github"))
    other = ContextManager.start(repo, title="u")
    other.add_user_message(planted("slack"))
    remote = bare(tmp_path / "r.git")
    add_remote(repo, "origin", str(remote))
    assert gpush.push(repo, "origin", [cm.session]).redaction is not None
    assert gpush.push(repo, "origin", [other.session]).redaction is None  # its own: raw
    # both at once: the strictest applies to all
    remote2 = bare(tmp_path / "r2.git")
    add_remote(repo, "both", str(remote2))
    assert gpush.push(repo, "both", all_sessions=True).redaction is not None
    assert not leaked(remote_text(remote2, tmp_path)[0])
    repo.close()


def test_push_without_policy_or_flag_is_raw(tmp_path):
    ctx, (remote,) = cli_store(tmp_path)
    assert ctx.json("push")["redacted"] is False
    assert leaked(remote_text(remote, tmp_path)[0])


def test_cli_push_redact_clone_and_pull(tmp_path):
    a, (remote,) = cli_store(tmp_path)
    res = a("push", "--redact")
    assert res.exit_code == 0
    assert "redacted " in res.stdout and "[new branch]" in res.stdout
    assert_clean(res.stdout + res.stderr, "ctx push --redact output")
    assert "[up to date]" in a("push", "--redact").stdout

    # a clone of the redacted push is a working store without the secrets
    res = CliRunner().invoke(cli, ["clone", str(remote), str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    b = Ctx(tmp_path / "b")
    log = b.json("log")
    assert log and all(e["id"] for e in log)
    assert b("state").exit_code == 0
    assert b("fsck", "--full").exit_code == 0
    other = Repository.open(tmp_path / "b")
    assert not leaked(everything_in(other.objects))
    other.close()

    # the pushing store's pull: the remote holds its redacted copy; nothing moves
    tip = a.json("status")["head"]
    res = a("pull")
    assert "redacted copy this store pushed" in res.stdout
    assert a.json("status")["head"] == tip
    out = a.json("pull")
    assert [br["action"] for br in out["branches"]] == ["redacted-copy"]
    # a raw push onto the copy is refused and says why
    err = a("push", "--no-redact", code=6).stderr
    assert "holds the redacted copy this store pushed" in err

    # someone extends the shared copy: the pushing store's pull reports a divergence from
    # its redacted copy and leaves the raw branch alone (exit 6)
    b("append", "UserPromptSubmitted", "--actor", "user", "--payload", '{"text": "from b"}')
    b("push")
    res = a("pull", code=6)
    assert "continues the redacted copy" in res.stderr
    assert a.json("status")["head"] == tip
    # and a redacted push of the raw branch is refused as a non-fast-forward
    assert "non-fast-forward" in a("push", "--redact", code=6).stderr


def test_a_secret_in_the_title_moves_the_copy_to_a_new_session_id(tmp_path):
    root = tmp_path / "a"
    repo = Repository.init(root)
    from ctxstore import ContextManager

    cm = ContextManager.start(repo, title="deploy with " + planted("github"))
    cm.add_user_message("hello")
    remote = bare(tmp_path / "r.git")
    add_remote(repo, "origin", str(remote))
    result = gpush.push(repo, "origin", [cm.session], redact=True)
    names = {r.ref for r in result.refs}
    assert all(cm.session not in n for n in names)
    assert {r.raw_ref for r in result.refs} == {cm.ref} | (
        {f"refs/session-meta/{cm.session}"} if len(names) > 1 else set())
    assert not any(cm.session in n for n in remote_refs(remote))
    assert not leaked(remote_text(remote, tmp_path)[0])
    pulled = gfetch.pull(repo, "origin")
    assert {b.action for b in pulled.branches} == {"redacted-copy"}
    assert repo.session_ids() == [cm.session]  # no local session was created from the copy
    other, _ = gfetch.clone(str(remote), str(tmp_path / "b"))
    (sid,) = other.session_ids()
    assert sid != cm.session and "[REDACTED:" in other.session(sid).title
    other.close()
    repo.close()


def test_a_changed_policy_is_a_non_fast_forward(seeded_repo, tmp_path):
    repo, cm = seeded_repo
    remote = bare(tmp_path / "r.git")
    add_remote(repo, "origin", str(remote))
    gpush.push(repo, "origin", redact=True)
    # a new pattern that matches a tool output: the copy differs from that event on
    repo.config["redaction"] = {"patterns": {"status-word": r"connected"}}
    with pytest.raises(RefConflict, match="another redaction policy"):
        gpush.push(repo, "origin", redact=True)
    result = gpush.push(repo, "origin", redact=True, force_with_lease=True)
    assert result.refs[0].action == "forced"


def test_push_map_golden_vectors_and_torn_tail(tmp_path):
    assert fingerprint(Redactor(RedactionPolicy(detectors=()))) == \
        "353d52331073e2915aaa3ceaa1d2e25f"
    assert fingerprint(Redactor(RedactionPolicy(detectors=(), patterns=(
        ("ticket", "tkt_[A-Za-z0-9]{20}"),)))) == "4ebc47e3aa26abd702235c0b185b8117"
    path = tmp_path / "push-x.map"
    PushMap(path).append({"11" * 32: "22" * 32})
    data = path.read_bytes()
    assert data == HEADER + b"\x11" * 32 + b"\x22" * 32 and len(data) == 84
    with open(path, "ab") as f:  # a kill mid-append
        f.write(b"\x33" * 40)
    m = PushMap(path)
    assert m.entries == {"11" * 32: "22" * 32}
    m.append({"44" * 32: "44" * 32})
    assert path.read_bytes() == data + b"\x44" * 64
    path.write_bytes(b"garbage")
    with pytest.raises(CorruptStore, match="not a redaction push map"):
        PushMap(path)


def test_kill_9_during_a_redacted_push(tmp_path):
    """kill -9 at several moments of a redacted push (rewrite, push map, git push, tracking
    refs): the remote holds no ref or the redacted tip, never a secret; the raw branch never
    moves; the next push finishes and the one after sends nothing."""
    import shutil
    import string

    from .remotetools import Machine
    from .test_remote_crash import FRACTIONS, _kill_after, _timed, _tip_of

    a = Machine(tmp_path / "a", events=1)
    rnd = __import__("random").Random(7)
    keys = ["AKIA" + "".join(rnd.choice(string.ascii_uppercase + string.digits)
                             for _ in range(16)) for _ in range(600)]
    lines = "".join(json.dumps({"type": "UserPromptSubmitted", "actor": "user", "payload": {
        "text": f"{i} key {k} " + os.urandom(1500).hex()}}) + "\n" for i, k in enumerate(keys))
    a("append", "--batch", "-", input=lines)
    raw_tip, sid = a.tip(), a.session()
    probe_root = tmp_path / "probe"
    shutil.copytree(a.root, probe_root)
    probe = Ctx(probe_root)
    probe("remote", "add", "origin", str(bare(tmp_path / "probe.git")))
    full = _timed(probe_root, "push", "--redact")
    expected = probe.json("push", "--redact")["refs"][0]["new"]
    assert expected != raw_tip
    remote = bare(tmp_path / "r.git")
    a("remote", "add", "origin", str(remote))
    ref, tracking = f"refs/ctx/sessions/{sid}/main", f"{sid}/main"
    for f in FRACTIONS:
        _kill_after(a.root, full * f, "push", "--redact")
        fsck_strict(remote)
        assert _tip_of(remote, ref) in (None, expected)
        a("fsck")
        assert {t["name"]: t["tip"] for t in a.json("branch", "-r")}.get(tracking) in \
            (None, expected)
        assert a.tip() == raw_tip
    out = a.json("push", "--redact")
    assert out["refs"][0]["new"] == expected and _tip_of(remote, ref) == expected
    assert a.json("push", "--redact")["refs"][0]["action"] == "up-to-date"
    text, _ = remote_text(remote, tmp_path)
    assert not [k for k in keys if k in text]
    a("fsck", "--full")


def test_a_collected_copy_is_rewritten_again_with_the_same_ids(seeded_repo, tmp_path):
    """The push map is a cache: after the remote is removed and gc collected its copy, the
    map's records name missing objects; the next redacted push rewrites (same ids) rather
    than naming an object the store lacks."""
    from ctxstore.gitbridge.remotes import remove_remote
    from ctxstore.maintenance.gc import gc

    repo, cm = seeded_repo
    add_remote(repo, "origin", str(bare(tmp_path / "r.git")))
    first = gpush.push(repo, "origin", redact=True).refs[0]
    assert first.new in repo.objects
    remove_remote(repo, "origin")
    gc(repo, prune="now", expire="now", expire_unreachable="now")
    assert first.new not in repo.objects  # the copy is gone, the map still names it
    add_remote(repo, "again", str(bare(tmp_path / "again.git")))
    again = gpush.push(repo, "again", redact=True)
    assert again.refs[0].new == first.new and again.redaction["rewritten"] > 0
    assert again.refs[0].new in repo.objects
    assert repo.refs.read(cm.ref) == cm.tip
