"""Workspace snapshots (docs/format.md "Workspace snapshots"): round trips through git trees,
ignore rules, the user's git untouched, restore's refusal, travel by pack, gc, kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pygit2
import pytest

from ctxstore.errors import WorkspaceConflict
from ctxstore.manager import ContextManager
from ctxstore.repo import Repository
from ctxstore.workspace import diff_files, git_objects
from ctxstore.workspace.closure import listed_objects
from ctxstore.workspace.snapshot import read_workspace
from tests.clitools import Ctx

ROOT = Path(__file__).resolve().parent.parent


def files_of(root: Path) -> dict[str, tuple]:
    """Every file under ROOT except .ctx and .git: content or link target, and the x bit."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".ctx", ".git")]
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            else:
                out[rel] = (p.read_bytes(), bool(p.stat().st_mode & 0o100))
    return out


def make_tree(root: Path) -> None:
    (root / "src" / "deep").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "src" / "deep" / "data.bin").write_bytes(bytes(range(256)) * 40 + b"\x00\xff")
    (root / "run.sh").write_text("#!/bin/sh\necho run\n")
    os.chmod(root / "run.sh", 0o755)
    os.symlink("src/main.py", root / "link-to-main")
    os.symlink("/nonexistent/target", root / "dangling")
    (root / ".gitignore").write_text("*.log\nbuild/\n")
    (root / "src" / ".gitignore").write_text("secret.txt\n!keep.log\n")
    (root / "app.log").write_text("ignored\n")
    (root / "src" / "keep.log").write_text("kept by a nested negation\n")
    (root / "src" / "secret.txt").write_text("nested ignore\n")
    (root / "build").mkdir()
    (root / "build" / "out.o").write_bytes(b"obj")


@pytest.fixture
def cm(tmp_path):
    repo = Repository.init(tmp_path)
    yield ContextManager.start(repo, title="ws")
    repo.close()


def test_round_trip_binary_symlink_exec_delete_rename_ignored(cm, tmp_path):
    make_tree(tmp_path)
    first = cm.snapshot_workspace()
    tree = pygit2.Repository(str(tmp_path / ".ctx" / "workspace.git"))[first.tree]
    names = set(Repository_paths(tree))
    # libgit2 1.9 (unlike git 2.x) lets the parent's `*.log` win over the nested `!keep.log`:
    # snapshots follow libgit2, as docs/format.md says
    assert {"src/main.py", "src/deep/data.bin", "run.sh", "link-to-main", "dangling",
            ".gitignore", "src/.gitignore"} == names
    assert tree["run.sh"].filemode == 0o100755 and tree["link-to-main"].filemode == 0o120000
    before = files_of(tmp_path)
    # delete, rename, change mode, retarget a link, change binary content
    (tmp_path / "src" / "main.py").rename(tmp_path / "src" / "app.py")
    (tmp_path / "run.sh").unlink()
    os.chmod(tmp_path / "src" / "deep" / "data.bin", 0o755)
    (tmp_path / "link-to-main").unlink()
    os.symlink("src/app.py", tmp_path / "link-to-main")
    (tmp_path / "new.bin").write_bytes(b"\x00" * 10)
    (tmp_path / "app.log").write_text("still ignored, changed\n")
    second = cm.snapshot_workspace()
    assert (second.added, second.deleted) == (2, 2)
    changes = {c.status: c for c in diff_files(cm.repo, first.event, second.event).changes}
    assert changes["R"].old_path == "src/main.py" and changes["R"].path == "src/app.py"
    after = files_of(tmp_path)
    plan = cm.restore_workspace(first.event)
    assert plan.applied and not plan.conflicts
    restored = files_of(tmp_path)
    # every recorded file is back; ignored files were never touched
    assert restored == {**before, "app.log": after["app.log"]}
    assert not (tmp_path / "new.bin").exists() and not (tmp_path / "src" / "app.py").exists()
    # and back again: the before-restore snapshot brings the later state back
    cm.restore_workspace(plan.before_event)
    assert files_of(tmp_path) == after


def Repository_paths(tree, prefix=""):
    for e in tree:
        if e.filemode == 0o040000:
            yield from Repository_paths(e, prefix + e.name + "/")
        else:
            yield prefix + e.name


def test_info_exclude_and_global_excludes(cm, tmp_path, monkeypatch):
    make_tree(tmp_path)
    pygit2.init_repository(str(tmp_path))
    (tmp_path / ".git" / "info").mkdir(exist_ok=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("local-only.txt\n")
    (tmp_path / "local-only.txt").write_text("x")
    home = tmp_path.parent / f"{tmp_path.name}-home"
    home.mkdir()
    (home / "global-ignore").write_text("*.swp\n")
    (home / ".gitconfig").write_text(f"[core]\n\texcludesFile = {home / 'global-ignore'}\n")
    (tmp_path / "notes.swp").write_text("x")
    old = pygit2.settings.search_path[pygit2.GIT_CONFIG_LEVEL_GLOBAL]
    pygit2.settings.search_path[pygit2.GIT_CONFIG_LEVEL_GLOBAL] = str(home)
    try:
        res = cm.snapshot_workspace()
    finally:
        pygit2.settings.search_path[pygit2.GIT_CONFIG_LEVEL_GLOBAL] = old
    tree = pygit2.Repository(str(tmp_path / ".ctx" / "workspace.git"))[res.tree]
    names = set(Repository_paths(tree))
    assert "local-only.txt" not in names and "notes.swp" not in names
    assert not any(n.startswith(".ctx/") or n.startswith(".git/") for n in names)


def test_users_git_is_never_touched(cm, tmp_path):
    make_tree(tmp_path)
    user = pygit2.init_repository(str(tmp_path))
    user.index.add("src/main.py")
    user.index.write()
    sig = pygit2.Signature("a", "a@example.invalid")
    user.create_commit("HEAD", sig, sig, "one", user.index.write_tree(), [])
    (tmp_path / "src" / "main.py").write_text("changed, not staged\n")
    git = tmp_path / ".git"
    before = {str(p): p.read_bytes() for p in git.rglob("*") if p.is_file()}
    first = cm.snapshot_workspace()
    (tmp_path / "run.sh").write_text("changed\n")
    cm.snapshot_workspace()
    cm.restore_workspace(first.event)
    after = {str(p): p.read_bytes() for p in git.rglob("*") if p.is_file()}
    assert before == after  # index, HEAD, refs, no stash, no objects added


def test_unchanged_files_cost_nothing(cm, tmp_path):
    for d in range(5):
        (tmp_path / f"d{d}").mkdir()
        for f in range(20):
            (tmp_path / f"d{d}" / f"f{f}.txt").write_text(f"{d} {f}\n")
    first = cm.snapshot_workspace()
    assert first.files == 100 and first.added == 100
    (tmp_path / "d3" / "f7.txt").write_text("changed\n")
    second = cm.snapshot_workspace()
    listed = read_workspace(cm.repo, second.workspace)["objects"]
    assert len(listed) == 3  # the blob, d3's tree, the root tree
    assert (second.files, second.modified, second.added, second.deleted) == (100, 1, 0, 0)
    third = cm.snapshot_workspace()  # nothing changed: the same workspace object
    assert third.workspace == second.workspace and third.tree == second.tree


def test_restore_refuses_to_overwrite_unsnapshotted_changes(tmp_path):
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new")
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "b.txt").write_text("b\n")
    ctx("snapshot")
    (tmp_path / "a.txt").write_text("two\n")
    ctx("snapshot")
    (tmp_path / "a.txt").write_text("user's work\n")
    (tmp_path / "new.txt").write_text("also user's\n")
    err = ctx.fails(18, "restore", "HEAD~1")
    assert "a.txt" in err and "--force" in err
    assert (tmp_path / "a.txt").read_text() == "user's work\n"
    # a restore of other paths goes ahead; a dry run says what is in the way
    out = ctx("restore", "HEAD~1", "b.txt").stdout
    assert "already matches" in out
    dry = ctx.json("restore", "HEAD~1", "--dry-run")
    assert dry["conflicts"] == ["a.txt", "new.txt"] and not dry["applied"]
    done = ctx.json("restore", "HEAD~1", "--force")
    assert done["applied"] and (tmp_path / "a.txt").read_text() == "one\n"
    assert not (tmp_path / "new.txt").exists()
    # the user's work is in the before-restore snapshot: restoring it brings it back
    ctx("restore", done["before"])
    assert (tmp_path / "a.txt").read_text() == "user's work\n"
    assert (tmp_path / "new.txt").read_text() == "also user's\n"


def test_snapshot_travels_by_pack_and_restores_there(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    make_tree(one)
    a = Ctx(one)
    a("init", str(one))
    a("new")
    first = a.json("snapshot")
    (one / "src" / "main.py").write_text("second version\n")
    snap = a.json("snapshot")
    a("pack", "-o", str(tmp_path / "s.ctxpack"))
    b = Ctx(two)
    b("init", str(two))
    b("unpack", str(tmp_path / "s.ctxpack"))
    target = tmp_path / "elsewhere"
    target.mkdir()
    b("restore", snap["event"][:12], "--root", str(target))
    want = {k: v for k, v in files_of(one).items()
            if k not in ("app.log", "src/secret.txt", "build/out.o", "src/keep.log")}
    assert files_of(target) == want
    fd = b.json("diff", "--files", first["event"], snap["event"])
    assert [c["path"] for c in fd["changes"]] == ["src/main.py"]
    # what the unpacked store needs is exactly what git_objects names
    repo = Repository.open(two / ".ctx")
    try:
        need = git_objects(repo, [snap["event"]])
        assert snap["tree"] in need
        assert set(need) >= set(listed_objects(repo, snap["workspace"]))
    finally:
        repo.close()


def test_gc_keeps_snapshot_content_and_workspace_git_is_derived(tmp_path):
    import shutil

    make_tree(tmp_path)
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new")
    first = ctx.json("snapshot")
    (tmp_path / "src" / "main.py").write_text("v2\n")
    ctx("snapshot")
    ctx("gc", "--prune", "now")
    ctx("fsck")
    shutil.rmtree(tmp_path / ".ctx" / "workspace.git")  # only a cache of the store
    ctx("restore", first["event"][:12], "--force")
    assert (tmp_path / "src" / "main.py").read_text() == "print('hi')\n"


def test_auto_snapshot_after_writing_calls_and_before_compaction(tmp_path):
    repo = Repository.init(tmp_path)
    cm = ContextManager.start(repo, title="auto", config={"auto_snapshot": True})
    (tmp_path / "f.txt").write_text("1\n")
    cm.record_tool_call("c1", "Read", {"file_path": str(tmp_path / "f.txt")})
    cm.record_tool_result("c1", "1")
    types = [ev.type for _, ev in repo.graph.first_parents(cm.tip)]
    assert "WorkspaceSnapshot" not in types  # a read writes nothing
    cm.record_tool_call("c2", "Write", {"file_path": str(tmp_path / "f.txt"), "content": "2\n"})
    (tmp_path / "f.txt").write_text("2\n")
    cm.record_tool_result("c2", "ok")
    tip = repo.graph.event(cm.tip)
    assert tip.type == "WorkspaceSnapshot" and tip.payload["reason"].startswith("after Write")
    cm.record_tool_call("c3", "Bash", {"command": "true"})
    cm.record_tool_result("c3", "")
    assert repo.graph.event(cm.tip).type == "ToolCallFinished"  # ran, changed nothing
    (tmp_path / "f.txt").write_text("3\n")
    cm.compact(keep_recent_tokens=1)
    reasons = [ev.payload.get("reason") for _, ev in repo.graph.first_parents(cm.tip)
               if ev.type == "WorkspaceSnapshot"]
    assert "before compaction" in reasons
    repo.close()


def test_auto_snapshot_is_off_by_default(cm, tmp_path):
    cm.record_tool_call("c1", "Write", {"file_path": "x", "content": "y"})
    cm.record_tool_result("c1", "ok")
    assert not (tmp_path / ".ctx" / "workspace.git").exists()


def test_corrupt_content_is_refused_on_hydration(cm, tmp_path):
    (tmp_path / "a.txt").write_text("a\n")
    snap = cm.snapshot_workspace()
    value = read_workspace(cm.repo, snap.workspace)
    bad = cm.repo.objects.put("blob", b"blob 2\0zz")
    value["objects"] = [[oid, bad] for oid, _ in value["objects"]]
    forged = cm.repo.objects.put("workspace", value)
    with cm.repo.transaction(cm.ref) as tx:
        eid = tx.append("WorkspaceSnapshot", "system", {"workspace": forged, "tree": value["tree"]})
    import shutil

    shutil.rmtree(tmp_path / ".ctx" / "workspace.git")
    from ctxstore.errors import CorruptObject

    with pytest.raises(CorruptObject, match="does not hash to git object"):
        cm.restore_workspace(eid, force=True)


def test_conflict_error_names_files(cm, tmp_path):
    (tmp_path / "a.txt").write_text("a\n")
    first = cm.snapshot_workspace()
    (tmp_path / "a.txt").write_text("b\n")
    with pytest.raises(WorkspaceConflict) as info:
        cm.restore_workspace(first.event)
    assert info.value.details["files"] == ["a.txt"]


_KILL_CHILD = """
import sys
from ctxstore.repo import Repository
from ctxstore.manager import ContextManager
repo = Repository.open(sys.argv[1])
cm = ContextManager(repo)
n = 0
from pathlib import Path
root = Path(sys.argv[2])
print("start", flush=True)
while True:
    (root / "d0" / "moving.txt").write_text(str(n))
    cm.snapshot_workspace()
    print(n, flush=True)
    n += 1
"""


def test_kill_9_during_snapshot_leaves_the_store_fsck_clean(tmp_path):
    root = tmp_path / "w"
    root.mkdir()
    for d in range(20):
        (root / f"d{d}").mkdir()
        for f in range(60):
            (root / f"d{d}" / f"f{f}.txt").write_text(f"{d}/{f}\n" * 30)
    ctx = Ctx(root)
    ctx("init", str(root))
    ctx("new")
    import random
    import shutil

    rng = random.Random(15)
    for attempt in range(4):
        if attempt % 2:  # the first snapshot of a tree is the long one: kill inside it
            shutil.rmtree(root / ".ctx" / "workspace.git", ignore_errors=True)
        child = subprocess.Popen([sys.executable, "-c", _KILL_CHILD, str(root / ".ctx"),
                                  str(root)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        assert child.stdout.readline() == "start\n"
        time.sleep(rng.uniform(0.05, 1.0))
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
        ctx("fsck", "--full")
    # lock files libgit2 leaves when killed while writing the stat cache, the config (setting
    # the work tree) or HEAD (creating the repository) do not block the next snapshot
    for name in ("index.lock", "config.lock", "HEAD.lock"):
        (root / ".ctx" / "workspace.git" / name).write_bytes(b"")
    snap = ctx.json("snapshot")
    assert snap["files"] == 1201
    ctx("restore", snap["event"][:12])


def _claude_transcript(path: Path, cwd: Path, tracked: dict) -> None:
    import json

    lines = [
        {"type": "user", "message": {"role": "user", "content": "edit a.txt please"},
         "uuid": "11111111-1111-1111-1111-111111111111", "parentUuid": None,
         "sessionId": "sess-1", "cwd": str(cwd), "timestamp": "2026-01-01T00:00:00.000Z"},
        {"type": "file-history-snapshot", "messageId": "11111111-1111-1111-1111-111111111111",
         "snapshot": {"messageId": "11111111-1111-1111-1111-111111111111",
                      "trackedFileBackups": tracked, "timestamp": "2026-01-01T00:00:01.000Z"},
         "isSnapshotUpdate": False},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_import_claude_code_file_history_where_backups_exist(tmp_path, monkeypatch):
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("after Claude's edit\n")
    (project / "created.txt").write_text("made by Claude\n")
    (project / "other.txt").write_text("never tracked\n")
    config = tmp_path / "claude"
    (config / "file-history" / "sess-1").mkdir(parents=True)
    (config / "file-history" / "sess-1" / "3f2a@v1").write_text("before the edit\n")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    t = tmp_path / "sess-1.jsonl"
    _claude_transcript(t, project, {
        str(project / "a.txt"): {"backupFileName": "3f2a@v1", "version": 1,
                                 "backupTime": "2026-01-01T00:00:01.000Z"},
        "created.txt": {"backupFileName": None, "version": 1,
                        "backupTime": "2026-01-01T00:00:01.000Z"}})
    store = tmp_path / "store"
    store.mkdir()
    ctx = Ctx(store)
    ctx("init", str(store))
    ctx("import", str(t))
    ctx("checkout", ctx.json("sessions")[0]["id"])
    found = [e for e in ctx.json("log") if e["payload"].get("workspace")]
    assert len(found) == 1 and found[0]["payload"]["partial"] is True
    assert found[0]["payload"]["absent"] == ["created.txt"]
    # nothing was snapshotted of the project yet: every touched file is "uncommitted"
    # the snapshot's own root is not the project's (the store's): only an explicit --root
    # writes there (docs/workspace.md "Containment")
    ctx.fails(18, "restore", found[0]["id"], "--root", str(project))
    ctx("restore", found[0]["id"], "--force", "--root", str(project))
    assert (project / "a.txt").read_text() == "before the edit\n"
    assert not (project / "created.txt").exists()
    assert (project / "other.txt").read_text() == "never tracked\n"  # partial: untouched


def test_import_claude_code_file_history_without_backups_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "nothing-here"))
    t = tmp_path / "sess-1.jsonl"
    _claude_transcript(t, tmp_path, {str(tmp_path / "a.txt"): {
        "backupFileName": "3f2a@v1", "version": 1, "backupTime": "2026-01-01T00:00:01.000Z"}})
    ctx = Ctx(tmp_path)
    ctx("init")
    res = ctx.json("import", str(t))
    assert any("backups not found" in n for n in res["notes"])
    ctx("checkout", ctx.json("sessions")[0]["id"])
    snaps = [e for e in ctx.json("log", "--bookkeeping") if "workspace_missing" in e["payload"]]
    assert len(snaps) == 1 and "a.txt" in snaps[0]["payload"]["workspace_missing"]


def test_import_codex_ghost_commits(tmp_path):
    import json

    project = tmp_path / "project"
    project.mkdir()
    user = pygit2.init_repository(str(project))
    sig = pygit2.Signature("codex", "codex@example.invalid")
    ghosts = []
    for i, text in enumerate(["one\n", "two\n"]):
        (project / "f.txt").write_text(text)
        (project / f"added{i}.txt").write_text("x\n")
        index = pygit2.Index()
        for name in sorted(os.listdir(project)):
            if name != ".git":
                blob = user.create_blob((project / name).read_bytes())
                index.add(pygit2.IndexEntry(name, blob, pygit2.GIT_FILEMODE_BLOB))
        tree = index.write_tree(user)
        # a ghost commit: no ref names it, as Codex leaves it
        ghosts.append(str(user.create_commit(None, sig, sig, "ghost", tree, [])))
    (project / "f.txt").write_text("later work\n")
    head = {"timestamp": "2026-01-01T00:00:00.000Z", "type": "session_meta",
            "payload": {"id": "0199-ghost", "timestamp": "2026-01-01T00:00:00.000Z",
                        "cwd": str(project), "originator": "codex_cli_rs"}}
    items = [{"timestamp": f"2026-01-01T00:00:0{i + 1}.000Z", "type": "response_item",
              "payload": {"type": "ghost_snapshot",
                          "ghost_commit": {"id": g, "parent": None,
                                           "preexisting_untracked_files": [],
                                           "preexisting_untracked_dirs": []}}}
             for i, g in enumerate(ghosts + ["0" * 40])]
    t = tmp_path / "rollout-2026-01-01T00-00-00-0199-ghost.jsonl"
    t.write_text("".join(json.dumps(x) + "\n" for x in [head, *items]))
    store = tmp_path / "store"
    store.mkdir()
    ctx = Ctx(store)
    ctx("init", str(store))
    res = ctx.json("import", str(t))
    assert any("not in" in n for n in res["notes"])  # the third commit does not exist
    ctx("checkout", ctx.json("sessions")[0]["id"])
    log = ctx.json("log", "--bookkeeping")
    snaps = [e for e in log if e["payload"].get("workspace")]
    assert [e["payload"]["ghost_commit"] for e in reversed(snaps)] == ghosts
    assert any("workspace_missing" in e["payload"] for e in log)
    fd = ctx.json("diff", "--files", snaps[1]["id"], snaps[0]["id"])
    assert {(c["status"], c["path"]) for c in fd["changes"]} == {("M", "f.txt"),
                                                                 ("A", "added1.txt")}
    # the first ghost commit, into the project named explicitly (the snapshot's own root is
    # not the store's project: docs/workspace.md "Containment")
    ctx("restore", snaps[1]["id"], "--force", "--root", str(project))
    assert (project / "f.txt").read_text() == "one\n" and not (project / "added1.txt").exists()
    assert user.head_is_unborn and not list(user.references)  # the user's repo untouched


def test_cli_auto_snapshot_session_snapshots_before_compaction(tmp_path):
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new", "--auto-snapshot")
    (tmp_path / "notes.md").write_text("draft\n")
    ctx("compact")
    snaps = ctx.json("log", "--type", "WorkspaceSnapshot")
    assert len(snaps) == 1 and snaps[0]["payload"]["reason"] == "before compaction"
    ctx("compact")  # nothing changed: no second snapshot
    assert len(ctx.json("log", "--type", "WorkspaceSnapshot")) == 1


def test_restore_paths_relative_absolute_and_outside(cm, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.txt").write_text("a1\n")
    (tmp_path / "b.txt").write_text("b1\n")
    first = cm.snapshot_workspace()
    (tmp_path / "src" / "a.txt").write_text("a2\n")
    (tmp_path / "b.txt").write_text("b2\n")
    cm.snapshot_workspace()
    plan = cm.restore_workspace(first.event, [str(tmp_path / "src")])
    assert plan.write == ["src/a.txt"] and (tmp_path / "b.txt").read_text() == "b2\n"
    assert cm.restore_workspace(first.event, ["./b.txt"], dry_run=True).write == ["b.txt"]
    from ctxstore.errors import InvalidInput

    with pytest.raises(InvalidInput, match="outside"):
        cm.restore_workspace(first.event, ["../elsewhere"])


def test_a_nested_git_repository_is_snapshotted_as_its_files(tmp_path):
    """Issue 28 item 9: a project holding a nested git repository (vendor/lib with its own
    .git) is snapshotted — its files, by its own ignore rules, never its .git — and restored."""
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new")
    lib = tmp_path / "vendor" / "lib"
    lib.mkdir(parents=True)
    inner = pygit2.init_repository(str(lib))
    (lib / "a.txt").write_text("v1\n")
    (lib / ".gitignore").write_text("*.o\n")
    (lib / "build.o").write_text("ignored by the nested repository\n")
    (tmp_path / "top.txt").write_text("top\n")
    git_files = sorted(p.relative_to(lib) for p in (lib / ".git").rglob("*"))
    first = ctx.json("snapshot")
    assert first["files"] == 3  # top.txt, vendor/lib/a.txt, vendor/lib/.gitignore
    (lib / "a.txt").write_text("v2\n")
    (lib / "new.txt").write_text("new\n")
    assert ctx.json("snapshot")["modified"] == 1
    ctx("restore", first["event"])
    assert (lib / "a.txt").read_text() == "v1\n" and not (lib / "new.txt").exists()
    assert (lib / "build.o").exists()  # ignored: never touched
    assert sorted(p.relative_to(lib) for p in (lib / ".git").rglob("*")) == git_files
    assert inner.head_is_unborn


def test_a_type_change_already_snapshotted_is_not_uncommitted_work(tmp_path):
    """Issue 28 item 9: a file that became a directory (or a symlink), snapshotted so, is not
    reported as a change no snapshot holds when a restore puts the file back."""
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new")
    (tmp_path / "d").write_text("a file\n")
    (tmp_path / "l").write_text("a file too\n")
    old = ctx.json("snapshot")["event"]
    (tmp_path / "d").unlink()
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.txt").write_text("in a directory now\n")
    (tmp_path / "l").unlink()
    os.symlink("d/x.txt", tmp_path / "l")
    ctx("snapshot")
    dry = ctx.json("restore", old, "--dry-run")
    assert dry["conflicts"] == []
    ctx("restore", old)
    assert (tmp_path / "d").read_text() == "a file\n"
    assert not (tmp_path / "l").is_symlink() and (tmp_path / "l").read_text() == "a file too\n"
