"""Git remotes end to end (issue 15 items 1-2): two stores ("two machines") and a bare git
repository; push, clone, fetch, pull, divergence, --force-with-lease, a git daemon, a
project's own origin, credentials."""

from __future__ import annotations

import contextlib
import json

import pytest
from click.testing import CliRunner

from ctxstore.cli.main import cli

from .remotetools import Machine, bare, fsck_strict, git, git_daemon, needs_git, remote_refs

pytestmark = needs_git


def clone(tmp_path, url, name="b") -> Machine:
    res = CliRunner().invoke(cli, ["clone", str(url), str(tmp_path / name)])
    assert res.exit_code == 0, res.output
    m = Machine.__new__(Machine)
    super(Machine, m).__init__(tmp_path / name)
    return m


def test_push_clone_fetch_pull(tmp_path):
    remote = bare(tmp_path / "r.git")
    a = Machine(tmp_path / "a")
    a("remote", "add", "origin", str(remote))
    assert a("remote", "-v").stdout.startswith(f"origin\t{remote} (fetch)")
    out = a("push").stdout
    assert "[new branch]" in out and f"To {remote}" in out
    fsck_strict(remote)
    sid = a.session()
    assert f"refs/ctx/sessions/{sid}/main" in remote_refs(remote)
    assert a("push").stdout.count("[up to date]") == 1

    b = clone(tmp_path, remote)
    assert b.status()["head"] == a.tip() and b.session() == sid
    assert [e["id"] for e in b.json("log")] == [e["id"] for e in a.json("log")]
    assert b("fsck", "--full").exit_code == 0

    a.say(3)
    a("push")
    fsck_strict(remote)
    before = b.tip()
    out = b("fetch").stdout
    assert "new objects" in out
    assert b.tip() == before  # fetch never moves a local branch
    tracking = b.json("branch", "-r")
    assert [(t["remote"], t["tip"]) for t in tracking] == [("origin", a.tip())]
    assert f"origin/{sid[:12]}/main" in b("branch", "-r").stdout
    assert b.json("log", "origin/main")[0]["id"] == a.tip()
    assert b.json("log", f"origin/{sid[:8]}/main")[0]["id"] == a.tip()
    out = b("pull").stdout
    assert "Fast-forward" in out
    assert b.tip() == a.tip()
    assert b("fetch").stdout.endswith("up to date\n")


def test_divergent_push_refused_nothing_lost_then_force_with_lease(tmp_path):
    remote = bare(tmp_path / "r.git")
    a = Machine(tmp_path / "a")
    a("remote", "add", "origin", str(remote))
    a("push")
    b = clone(tmp_path, remote)
    a.say(2, "from-a")
    b.say(3, "from-b")
    a_tip, b_tip = a.tip(), b.tip()
    a("push")
    before = remote_refs(remote)

    err = b.fails(6, "push")
    assert "rejected" in err and "fetch first" in err
    assert remote_refs(remote) == before and b.tip() == b_tip
    b("fetch")
    res = b("push", code=6)
    assert "non-fast-forward" in res.stderr and "[rejected]" in res.stdout
    assert remote_refs(remote) == before and b.tip() == b_tip

    res = b("pull", code=6)
    assert "have diverged, and have 3 and 2 different events each" in res.stderr
    assert b.tip() == b_tip  # left as it was
    assert b.json("log", "origin/main")[0]["id"] == a_tip  # both sides are there

    out = b("push", "--force-with-lease").stdout
    assert " + " in out and "..." in out
    fsck_strict(remote)
    ref = f"refs/ctx/sessions/{a.session()}/main"
    assert remote_refs(remote)[ref] != before[ref]
    # a's view is stale now: a plain push and a lease both refuse; a's branch keeps its events
    assert "fetch first" in a.fails(6, "push")
    assert "stale info" in a("push", "--force-with-lease", code=6).stderr
    assert a.tip() == a_tip
    a("fetch")
    assert a.json("log", "origin/main")[0]["id"] == b_tip
    a("reset", "origin/main")
    assert a.tip() == b_tip


@pytest.mark.parametrize("transport", ["path", "git-daemon"])
def test_push_cas_refuses_a_push_that_came_between(tmp_path, transport):
    """The remote moves after ctx listed its refs and before it pushes: refused (by the
    negotiation check over git://, by the ref's compare-and-swap on a local path), nothing of
    the other push is lost."""
    from ctxstore.errors import RefConflict
    from ctxstore.gitbridge.push import push
    from ctxstore.repo import Repository

    base = tmp_path / "srv"
    base.mkdir()
    remote = bare(base / "r.git")
    with contextlib.ExitStack() as stack:
        url = str(remote)
        if transport == "git-daemon":
            url = stack.enter_context(git_daemon(base)) + "/r.git"
        a = Machine(tmp_path / "a")
        a("remote", "add", "origin", url)
        a("push")
        b = clone(tmp_path, url)
        a.say(1)
        b.say(1)

        def concurrent(ref, tip, ids):
            a("push")
            return ids

        repo = Repository.open(tmp_path / "b")
        try:
            with pytest.raises(RefConflict, match="another push came between"):
                push(repo, "origin", send_filter=concurrent)
        finally:
            repo.close()
    ref = f"refs/ctx/sessions/{a.session()}/main"
    head = json.loads(git("-C", str(remote), "cat-file", "-p",
                          f"{remote_refs(remote)[ref]}:ctx.json").stdout)
    assert head["tip"] == a.tip()
    fsck_strict(remote)


def test_project_origin_code_refs_untouched_and_mirror_clean(tmp_path):
    work = tmp_path / "proj"
    git("init", "-q", "-b", "main", str(work))
    (work / "app.py").write_text("print('hi')\n")
    git("-C", str(work), "add", ".")
    git("-C", str(work), "commit", "-qm", "code")
    git("-C", str(work), "tag", "-a", "v1", "-m", "v1")
    git("-C", str(work), "branch", "feature")
    origin = tmp_path / "origin.git"
    git("clone", "-q", "--bare", str(work), str(origin))

    def code_state():
        refs = {k: v for k, v in remote_refs(origin).items() if not k.startswith("refs/ctx/")}
        head = (origin / "HEAD").read_bytes()
        packed = (origin / "packed-refs").read_bytes() if (origin / "packed-refs").exists() \
            else b""
        return refs, head, packed

    before = code_state()
    a = Machine(tmp_path / "a")
    a("fork", "alt")
    a.say(2)
    a("remote", "add", "origin", str(origin))
    a("push")
    a("checkout", "main")
    a.say(1)
    a("push")
    assert code_state() == before
    fsck_strict(origin)
    mirror = tmp_path / "mirror.git"
    git("clone", "-q", "--mirror", str(origin), str(mirror))
    fsck_strict(mirror)
    assert set(remote_refs(mirror)) == set(remote_refs(origin))


def test_fork_pushes_only_its_own_events(tmp_path):
    """A second branch's commit is thin against the first's: only what the remote lacks."""
    remote = bare(tmp_path / "r.git")
    a = Machine(tmp_path / "a", events=40)
    a("remote", "add", "origin", str(remote))
    first = a.json("push")
    assert first["refs"][0]["objects"] > 40
    a("fork", "alt")
    a.say(2)
    second = a.json("push")
    by_ref = {r["ref"].rsplit("/", 1)[1]: r for r in second["refs"]}
    assert by_ref["main"]["action"] == "up-to-date"
    assert by_ref["alt"]["action"] == "create" and by_ref["alt"]["objects"] == 2
    fsck_strict(remote)
    b = clone(tmp_path, remote)
    assert b("fsck", "--full").exit_code == 0
    assert {t["name"].rsplit("/", 1)[1] for t in b.json("branch", "-r")} == {"alt", "main"}
    c = Machine(tmp_path / "c")
    c("remote", "add", "origin", str(remote))
    assert "[new branch]" in c("push", c.session()[:10]).stdout  # a session, not a remote
    assert "no remote 'nope'" in c.fails(3, "push", "nope")


def test_git_daemon_push_and_clone(tmp_path):
    base = tmp_path / "srv"
    base.mkdir()
    remote = bare(base / "s.git")
    a = Machine(tmp_path / "a")
    with git_daemon(base) as url:
        a("remote", "add", "origin", f"{url}/s.git")
        a("push")
        a.say(2)
        a("push")
        b = clone(tmp_path, f"{url}/s.git")
        assert b.tip() == a.tip()
        b.say(1)
        b("push")
        a("pull")
        assert a.tip() == b.tip()
    fsck_strict(remote)


def test_fetch_and_push_are_operations(tmp_path):
    remote = bare(tmp_path / "r.git")
    a = Machine(tmp_path / "a")
    a("remote", "add", "origin", str(remote))
    a("push")
    ops = a.json("op", "log")["operations"]
    assert ops[0]["description"].startswith("push origin") and ops[0]["command"] == "ctx push"
    b = clone(tmp_path, remote)
    a.say(1)
    a("push")
    b("fetch")
    assert b.json("op", "log")["operations"][0]["command"] == "ctx fetch"
    b("undo")
    assert b.json("branch", "-r")[0]["tip"] != a.tip()
    b("fetch")  # sets the tracking ref right again
    assert b.json("branch", "-r")[0]["tip"] == a.tip()
    fsck_strict(remote)


def test_remote_add_remove_and_bad_input(tmp_path):
    a = Machine(tmp_path / "a")
    a("remote", "add", "backup", str(tmp_path / "nowhere.git"))
    assert "already exists" in a.fails(10, "remote", "add", "backup", "x")
    assert "unsupported URL scheme" in a.fails(10, "remote", "add", "x", "ftp://host/r")
    err = a.fails(19, "push", "backup")
    assert "nowhere.git" in err
    assert "no remote 'nope'" in a.fails(3, "push", "nope")
    a("remote", "remove", "backup")
    assert a("remote").stdout == ""


def _forge(remote, ref, mutate) -> None:
    """Replace the remote ref's commit by a child whose tree `mutate(manifest, pack)` changed."""
    import pygit2

    r = pygit2.Repository(str(remote))
    parent = r.references[ref].peel(pygit2.Commit)
    manifest, pack = mutate(r[parent.tree["ctx.json"].id].data, r[parent.tree["objects.ctxpack"].id].data)
    tb = r.TreeBuilder()
    tb.insert("ctx.json", r.create_blob(manifest), pygit2.enums.FileMode.BLOB)
    tb.insert("objects.ctxpack", r.create_blob(pack), pygit2.enums.FileMode.BLOB)
    sig = pygit2.Signature("x", "x@example.com", 0, 0)
    commit = r.create_commit(None, sig, sig, "forged\n", tb.write(), [parent.id])
    r.references.create(ref, commit, force=True)


@pytest.mark.parametrize("damage", ["pack-bytes", "manifest-tip", "manifest-json"])
def test_hostile_remote_commit_is_refused_and_nothing_moves(tmp_path, damage):
    remote = bare(tmp_path / "r.git")
    a = Machine(tmp_path / "a")
    a("remote", "add", "origin", str(remote))
    a("push")
    b = clone(tmp_path, remote)
    other = Machine(tmp_path / "other")
    ref = f"refs/ctx/sessions/{a.session()}/main"

    def mutate(manifest: bytes, pack: bytes):
        if damage == "pack-bytes":
            return manifest, pack[:-40] + bytes(40)
        if damage == "manifest-tip":  # names an event of another session
            doc = json.loads(manifest)
            doc["tip"] = other.tip()
            return (json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n").encode(), pack
        return b"{not json", pack

    _forge(remote, ref, mutate)
    before = b.json("branch", "-r")
    err = b.fails(12, "fetch")
    assert "nothing was imported" in err or "no ref was moved" in err
    assert b.json("branch", "-r") == before
    assert b.fails(12, "pull")
    assert b.tip() == a.tip()
    b("fsck", "--full")
    fsck_strict(remote)


def test_ssh_credentials_come_from_agent_then_key_files(tmp_path, monkeypatch):
    import pygit2
    from pygit2.enums import CredentialType

    from ctxstore.gitbridge.credentials import AuthFailed, make_callbacks

    key = tmp_path / "id_test"
    key.write_text("not really a key\n")
    monkeypatch.setenv("SSH_AUTH_SOCK", str(tmp_path / "agent.sock"))
    monkeypatch.setenv("CTX_SSH_KEY", str(key))
    monkeypatch.setenv("CTX_SSH_PASSPHRASE", "pass-phrase-42")
    cb = make_callbacks("ssh://git@example.com/s.git")
    first = cb.credentials("ssh://git@example.com/s.git", "git", CredentialType.SSH_KEY)
    assert isinstance(first, pygit2.KeypairFromAgent)
    second = cb.credentials("ssh://git@example.com/s.git", "git", CredentialType.SSH_KEY)
    assert isinstance(second, pygit2.Keypair) and second.credential_tuple[2] == str(key)
    with pytest.raises(AuthFailed):
        cb.credentials("ssh://git@example.com/s.git", "git", CredentialType.SSH_KEY)
    assert cb.tried == ["ssh agent", f"ssh key {key}"]


def test_push_after_lost_tracking_refs_is_still_a_fast_forward(tmp_path):
    """A kill -9 after the remote accepted a push but before the tracking refs moved: the
    remote's commit names a tip already in this store's history, so the next push goes on."""
    import pygit2

    remote = bare(tmp_path / "r.git")
    a = Machine(tmp_path / "a")
    a("remote", "add", "origin", str(remote))
    a("push")
    mirror = pygit2.Repository(str(tmp_path / "a" / ".ctx" / "remotes.git"))
    for name in [n for n in mirror.references if n.startswith("refs/remotes/")]:
        mirror.references.delete(name)
    a.say(2)
    out = a("push").stdout
    assert ".." in out and "[rejected]" not in out
    fsck_strict(remote)


def test_fetch_from_a_path_that_is_no_repository(tmp_path):
    a = Machine(tmp_path / "a")
    a("remote", "add", "origin", str(tmp_path / "missing.git"))
    assert "not a git repository" in a.fails(19, "fetch")
    res = CliRunner().invoke(cli, ["clone", str(tmp_path / "missing.git"), str(tmp_path / "c")])
    assert res.exit_code == 19 and not (tmp_path / "c").exists()


def test_workspace_snapshots_travel_with_push_and_fetch(tmp_path):
    """Issue 15 item 3's snapshots: their content is linked from the snapshot event, so the
    ordinary walk carries it; a clone restores the files on the other machine, and a second
    snapshot after one changed file sends only that file's blob and the trees on its path."""
    remote = bare(tmp_path / "r.git")
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("print('v1')\n")
    (project / "data.bin").write_bytes(bytes(range(256)) * 64)
    (project / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (project / "run.sh").chmod(0o755)
    for i in range(30):
        (project / "src" / f"mod{i}.py").write_text(f"X = {i}\n" * 50)
    a = Machine(tmp_path / "a")
    a("snapshot", str(project))
    a("remote", "add", "origin", str(remote))
    a("push")
    (project / "src" / "app.py").write_text("print('v2')\n")
    a("snapshot", str(project))
    second = a.json("push")["refs"][0]
    assert second["action"] == "fast-forward"
    assert second["objects"] <= 8  # event, workspace object, one blob, two trees (and kin)
    fsck_strict(remote)

    b = clone(tmp_path, remote)
    b("fsck", "--full")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    b("restore", "HEAD", "--root", str(elsewhere))
    assert (elsewhere / "src" / "app.py").read_text() == "print('v2')\n"
    assert (elsewhere / "data.bin").read_bytes() == bytes(range(256)) * 64
    assert (elsewhere / "run.sh").stat().st_mode & 0o111
    assert (elsewhere / "src" / "mod29.py").read_text() == "X = 29\n" * 50
