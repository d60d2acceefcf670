"""Git remotes: remote (add, remove, -v), push, fetch, pull, clone."""

from __future__ import annotations

import click

from .cmd_transfer import Progress, progress_option
from .main import cli
from .render import count, emit_json, short


def _session_branch(ref: str) -> str:
    """`3f2a9c1e4b5d/main` for refs/sessions/<sid>/main (and the tracking forms)."""
    for prefix in ("refs/sessions/", "refs/remotes/"):
        if ref.startswith(prefix):
            rest = ref[len(prefix):]
            if prefix == "refs/remotes/":
                remote, _, rest = rest.partition("/")
                return f"{remote}/{_session_branch('refs/sessions/' + rest)}"
            sid, _, branch = rest.partition("/")
            return f"{sid[:12]}/{branch}" if branch else rest
    return ref


@cli.group("remote", invoke_without_command=True)
@click.option("-v", "--verbose", is_flag=True, help="Show each remote's URL.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def remote_cmd(ctx, verbose, as_json) -> None:
    """List, add or remove the git remotes sessions are pushed to and fetched from.

    \b
    Examples:
      ctx remote add origin ../sessions.git           # a bare repo; also file://, git://,
      ctx remote add gh https://github.com/me/s.git   #   ssh:// and https:// (docs/remotes.md)
      ctx remote -v                                   # names and URLs
      ctx remote remove gh                            # and its remote-tracking refs
    """
    if ctx.invoked_subcommand is not None:
        return
    from ctxstore.gitbridge.remotes import list_remotes

    remotes = list_remotes(ctx.obj.repo)
    if as_json:
        emit_json(remotes)
        return
    for name, url in remotes.items():
        if verbose:
            click.echo(f"{name}\t{url} (fetch)")
            click.echo(f"{name}\t{url} (push)")
        else:
            click.echo(name)


@remote_cmd.command("add")
@click.argument("name")
@click.argument("url")
@click.pass_obj
def remote_add(state, name, url) -> None:
    """Add remote NAME at URL (a URL holding a password or token is refused).

    \b
    Examples:
      ctx remote add origin ../sessions.git          # a path is stored absolute
      ctx remote add team ssh://git@host/team/s.git  # ssh agent or key files
      CTX_GIT_TOKEN=... ctx push gh                  # https: the token stays in the env
    """
    from ctxstore.gitbridge.remotes import add_remote

    stored = add_remote(state.repo, name, url)
    click.echo(f"Added remote {name} -> {stored}")


@remote_cmd.command("remove")
@click.argument("name")
@click.pass_obj
def remote_remove(state, name) -> None:
    """Remove remote NAME and its remote-tracking refs (one operation: `ctx undo` restores the
    refs, not the config entry).

    \b
    Examples:
      ctx remote remove backup
      ctx branch -r                  # backup/... is gone
    """
    from ctxstore.gitbridge.remotes import remove_remote

    removed = remove_remote(state.repo, name)
    click.echo(f"Removed remote {name} ({len(removed)} remote-tracking ref(s) deleted)")


@cli.command("push")
@click.argument("remote", required=False)
@click.argument("sessions", nargs=-1, metavar="[SESSION]...")
@click.option("--all", "all_sessions", is_flag=True, help="Every session of the store.")
@click.option("--force-with-lease", "lease", is_flag=True,
              help="Allow non-fast-forward updates, but only of remote refs still where this "
                   "store last fetched or pushed them.")
@click.option("--redact/--no-redact", "redact", default=None,
              help="Push a copy with secrets replaced, kept in this store so the next push "
                   "sends only what is new (default: the redaction policy's on_push, off "
                   "unless set). Local branches are never rewritten.")
@click.option("--json", "as_json", is_flag=True)
@progress_option
@click.pass_obj
def push_cmd(state, remote, sessions, all_sessions, lease, redact, as_json,
             show_progress) -> None:
    """Send sessions (default: HEAD's; all their branches and their title) to a git remote.

    Each ref moves only by fast-forward, checked by the remote's own compare-and-swap; only
    what the remote lacks is sent. Refs under refs/ctx/ only: the remote's branches and tags
    are never touched.

    With --redact (or `"redaction": {"on_push": true}` in the store's or session's config)
    the remote gets a copy of the history with every secret replaced by [REDACTED:<type>]:
    new ids from the first redacted event on, the same ids before it. The copy is kept in
    this store (the remote-tracking refs name it) and remembered per policy, so pushing a
    growing session again sends only its new events, as a fast-forward. The raw branches
    stay as they are; `ctx pull` reports the remote's copy as `redacted-copy`
    (docs/redaction.md).

    \b
    Examples:
      ctx push                          # HEAD's session to origin
      ctx push origin 3f2a9c1e          # one session by id prefix (`ctx push 3f2a9c1e`
                                        #   too, when no remote has that name)
      ctx push origin --all             # every session
      ctx push --force-with-lease       # after a reset: replace the remote's branch
      ctx push --redact                 # a copy without secrets; again later: only new events
      ctx push --no-redact backup       # raw, although the policy says on_push
      ctx push --redact --json          # the redaction report (counts per detector, no secret)
    """
    from ctxstore.gitbridge.push import push

    remote, sessions = _remote_or_session(state.repo, remote, list(sessions))
    _report(lambda progress: push(state.repo, remote, sessions, all_sessions=all_sessions,
                                  force_with_lease=lease, progress=progress, redact=redact),
            _print_push, as_json, show_progress)


def _report(run, printer, as_json: bool, show_progress) -> None:
    """Run a transfer and print its result, also when it ends in a RefConflict (rejected or
    diverged refs) that carries the result: what moved is shown before the error line."""
    from ctxstore.errors import RefConflict

    try:
        with Progress(show_progress) as progress:
            result = run(progress)
    except RefConflict as exc:
        result = exc.details.get("result")
        if result is not None:
            printer(result, as_json)
        raise
    printer(result, as_json)


def _remote_or_session(repo, first: str | None, sessions: list[str]) -> tuple[str, list[str]]:
    """`ctx push 3f2a9c1e` means a session to origin when no remote is called 3f2a9c1e."""
    from ctxstore.errors import BadRevision, NotFound
    from ctxstore.gitbridge.remotes import DEFAULT_REMOTE, list_remotes

    if first is None:
        return DEFAULT_REMOTE, sessions
    if first in list_remotes(repo):
        return first, sessions
    try:
        repo.resolve_session(first)
    except (BadRevision, NotFound):
        return first, sessions  # push() names the unknown remote
    return DEFAULT_REMOTE, [first, *sessions]


def _print_push(result, as_json: bool) -> None:
    if as_json:
        emit_json(result.to_dict())
        return
    if result.redaction is not None:
        from ctxstore.porcelain.redact import describe

        for line in describe(result.redaction):
            click.echo(line)
        if result.redaction["reused"]:
            click.echo(f"  {result.redaction['reused']} object(s) already redacted by an "
                       f"earlier push (push map)")
    click.echo(f"To {result.url}")
    for r in result.refs:
        name = _session_branch(r.ref)
        if r.raw_ref is not None and r.raw_ref != r.ref:
            name += f" (redacted copy of {_session_branch(r.raw_ref)})"
        if r.action == "up-to-date":
            click.echo(f" = {name}  [up to date]")
        elif r.action == "rejected":
            click.echo(f" ! {name}  [rejected] {r.reason}")
        else:
            flag = {"create": "*", "fast-forward": " ", "forced": "+"}[r.action]
            what = "[new branch]" if r.action == "create" else \
                f"{short(r.old)}{'...' if r.action == 'forced' else '..'}{short(r.new)}"
            click.echo(f" {flag} {name}  {what}  ({count(r.objects, 'object')}, {count(r.pack_bytes, 'byte')})")


@cli.command("fetch")
@click.argument("remote", required=False)
@click.option("--json", "as_json", is_flag=True)
@progress_option
@click.pass_obj
def fetch_cmd(state, remote, as_json, show_progress) -> None:
    """Download a remote's sessions into remote-tracking refs; no local branch moves.

    \b
    Examples:
      ctx fetch                         # from origin
      ctx branch -r                     # what it brought: origin/SESSION/BRANCH
      ctx log origin/main               # HEAD's session as the remote has it
      ctx merge origin/main             # or: ctx pull
    """
    from ctxstore.gitbridge.fetch import fetch
    from ctxstore.gitbridge.remotes import DEFAULT_REMOTE

    with Progress(show_progress) as progress:
        result = fetch(state.repo, remote or DEFAULT_REMOTE, progress=progress)
    if as_json:
        emit_json(result.to_dict())
        return
    _print_fetch(result)


def _print_fetch(result) -> None:
    moved = [r for r in result.refs if r.action != "up-to-date"]
    if not moved:
        click.echo(f"From {result.url}: up to date")
        return
    click.echo(f"From {result.url} ({result.commits} commit(s), {result.new_objects} new "
               f"objects)")
    for r in moved:
        name = _session_branch(r.ref)
        if r.action == "create":
            click.echo(f" * [new]      {name}  {short(r.new)}")
        elif r.action == "deleted":
            click.echo(f" - [deleted]  {name}  (was {short(r.old)})")
        else:
            sep = ".." if r.action == "fast-forward" else "..."
            click.echo(f" {'+' if r.action == 'forced' else ' '} {short(r.old)}{sep}"
                       f"{short(r.new)}  {name}")


@cli.command("pull")
@click.argument("remote", required=False)
@click.option("--json", "as_json", is_flag=True)
@progress_option
@click.pass_obj
def pull_cmd(state, remote, as_json, show_progress) -> None:
    """Fetch, then create missing local branches and fast-forward those behind the remote.

    A branch that diverged from the remote's is reported (exit 6) and left as it is: `ctx
    merge REMOTE/BRANCH` keeps both sides, `ctx reset REMOTE/BRANCH` takes the remote's.

    \b
    Examples:
      ctx pull                          # from origin
      ctx pull backup                   # from another remote
    """
    from ctxstore.gitbridge.fetch import pull
    from ctxstore.gitbridge.remotes import DEFAULT_REMOTE

    _report(lambda progress: pull(state.repo, remote or DEFAULT_REMOTE, progress=progress),
            _print_pull, as_json, show_progress)


def _print_pull(result, as_json: bool) -> None:
    if as_json:
        emit_json(result.to_dict())
        return
    _print_fetch(result.fetch)
    for b in result.branches:
        name = _session_branch(b.ref)
        if b.action == "create":
            click.echo(f"Created branch {name} at {short(b.new)}")
        elif b.action == "fast-forward":
            click.echo(f"Fast-forward {name} {short(b.old)}..{short(b.new)}")
        elif b.action == "ahead":
            click.echo(f"Branch {name} is ahead of the remote (`ctx push` sends it)")
        elif b.action == "redacted-copy":
            click.echo(f"Branch {name}: the remote holds the redacted copy this store pushed "
                       f"(other ids; left as it is, `ctx push --redact` updates it)")
        elif b.action == "diverged":
            click.echo(f"Branch {name} diverged: {b.ahead} and {b.behind} different events "
                       f"each")
    if result.head:
        click.echo(f"HEAD -> {_session_branch(result.head)} (the newest top-level session; "
                   f"`ctx sessions` lists them all)")


@cli.command("clone")
@click.argument("url")
@click.argument("directory", required=False)
@click.option("--json", "as_json", is_flag=True)
@progress_option
@click.pass_obj
def clone_cmd(state, url, directory, as_json, show_progress) -> None:
    """Create a store in DIRECTORY with remote `origin` at URL and every session it holds.

    \b
    Examples:
      ctx clone ../sessions.git                 # into ./sessions
      ctx clone ssh://git@host/team/s.git work  # into ./work
    """
    from ctxstore.gitbridge.fetch import clone
    from ctxstore.repo.repository import command_line

    with Progress(show_progress) as progress:
        repo, result = clone(url, directory, progress=progress,
                             command=command_line(["ctx", *(state.argv or [])]))
    try:
        if as_json:
            emit_json({"store": str(repo.path), **result.to_dict()})
            return
        click.echo(f"Cloned {url} into {repo.path.parent}")
        _print_pull(result, False)
    finally:
        repo.close()
