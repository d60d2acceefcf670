"""One session as a whole: rename, tag, remove, restore (`ctx session ...`)."""

from __future__ import annotations

import click

from ctxstore.porcelain import session_meta as sm

from .main import cli
from .render import emit_json, short, style


@cli.group("session")
def session_group() -> None:
    """Rename, tag, remove or restore a whole session.

    Titles and tags live in a metadata chain beside the immutable session object
    (docs/format.md); `ctx session rm` deletes the session's refs and can be undone with
    `ctx session restore` until gc expires their reflogs.

    \b
    Examples:
      ctx session rename 5cedc1c4 "dev-docs convention review"
      ctx session tag 5cedc1c4 review docs
      ctx session rm 5cedc1c4
      ctx session restore 5cedc1c4
    """


@session_group.command("rename")
@click.argument("session")
@click.argument("title")
@click.option("--json", "as_json", is_flag=True, help="{session, title, tags, event}")
@click.pass_obj
def rename_cmd(state, session: str, title: str, as_json: bool) -> None:
    """Give SESSION (an id or unique prefix) a new TITLE.

    \b
    Examples:
      ctx session rename 5cedc1c4 "parser fix, second try"
    """
    meta = sm.rename(state.repo, session, title)
    if as_json:
        emit_json(meta.to_dict())
    else:
        click.echo(f"Renamed session {style(short(meta.session), fg='yellow')} to {meta.title!r}")


@session_group.command("tag")
@click.argument("session")
@click.argument("tags", nargs=-1)
@click.option("-d", "--delete", "remove", multiple=True, metavar="TAG",
              help="Remove TAG (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="{session, title, tags, event}")
@click.pass_obj
def tag_cmd(state, session: str, tags: tuple[str, ...], remove: tuple[str, ...],
            as_json: bool) -> None:
    """Add TAGs to SESSION, remove them with -d, or list its tags with neither.

    \b
    Examples:
      ctx session tag 5cedc1c4 review flaky-tests
      ctx session tag 5cedc1c4 -d flaky-tests
      ctx session tag 5cedc1c4            # list its tags
    """
    repo = state.repo
    if tags or remove:
        meta = sm.tag(repo, session, list(tags), list(remove))
    else:
        meta = sm.read_meta(repo, repo.resolve_session(session))
    if as_json:
        emit_json(meta.to_dict())
    else:
        click.echo(f"{style(short(meta.session), fg='yellow')}  "
                   f"{' '.join(meta.tags) if meta.tags else '(no tags)'}")


@session_group.command("rm")
@click.argument("sessions", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="[{session, refs: {ref: old tip}}]")
@click.pass_obj
def rm_cmd(state, sessions: tuple[str, ...], as_json: bool) -> None:
    """Remove SESSIONS: delete their branches and metadata refs (nothing else).

    One operation: `ctx undo` puts it back; so does `ctx session restore ID` (from the deleted
    refs' reflogs) at any later time until `ctx gc` expires those entries and the operation
    (30 and 90 days); then gc frees the session's objects. Refuses the session HEAD is on.

    \b
    Examples:
      ctx session rm 5cedc1c4
      ctx session rm 5cedc1c4 77ab01f2
      ctx session restore 5cedc1c4      # undo
    """
    from ctxstore.porcelain.listing import session_title

    repo = state.repo
    out = []
    for s in sessions:
        sid = repo.resolve_session(s)
        title = session_title(repo, sid)  # the title `ctx sessions` showed, not the created one
        refs = sm.remove(repo, sid)
        out.append({"session": sid, "refs": refs})
        if not as_json:
            branches = sum(1 for r in refs if not r.startswith(sm.META_PREFIX))
            click.echo(f"Removed session {style(short(sid), fg='yellow')} {title or '(untitled)'!r} "
                       f"({branches} branch{'es' if branches != 1 else ''}); "
                       f"undo with `ctx undo` or `ctx session restore {short(sid)}`")
    if as_json:
        emit_json(out)


@session_group.command("restore")
@click.argument("session")
@click.option("--json", "as_json", is_flag=True, help="{session, refs: {ref: tip}}")
@click.pass_obj
def restore_cmd(state, session: str, as_json: bool) -> None:
    """Bring back a session removed with `ctx session rm`, from its refs' reflogs.

    \b
    Examples:
      ctx session restore 5cedc1c4
    """
    refs = sm.restore(state.repo, session)
    sid = next(iter(refs)).split("/")[2]
    if as_json:
        emit_json({"session": sid, "refs": refs})
    else:
        click.echo(f"Restored session {style(short(sid), fg='yellow')}: "
                   f"{', '.join(r.rsplit('/', 1)[-1] if r.startswith('refs/sessions/') else 'metadata' for r in refs)}")
