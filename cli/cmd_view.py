"""`ctx view`: a session in the browser, as one self-contained HTML file or a local server."""

from __future__ import annotations

import os

import click

from ctxstore.errors import CtxError
from ctxstore.userfiles import replace_user_file
from ctxstore.viewer import export, model
from ctxstore.viewer.page import render_page

from .main import cli
from .render import emit_json, short


@cli.command("view")
@click.argument("rev", required=False, metavar="[REV|SESSION|A..B]")
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False, writable=True),
              help="Write the page here (default: ctx-view-SESSION.html in the current "
                   "directory).")
@click.option("--all", "all_sessions", is_flag=True,
              help="Embed every session of the store, not only REV's (and its subagents).")
@click.option("--serve", is_flag=True,
              help="Serve the store on a local web server instead of writing a file; events, "
                   "states, artifacts and bundles load on demand.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="With --serve: the address to bind. Only loopback addresses unless "
                   "--allow-remote.")
@click.option("--port", default=8700, show_default=True, type=click.IntRange(0, 65535),
              help="With --serve: the port (0 picks a free one).")
@click.option("--allow-remote", is_flag=True,
              help="With --serve: allow a --host that is not loopback (anyone who can reach it "
                   "can read the whole store).")
@click.option("--redact/--no-redact", "redact", default=None,
              help="Replace secrets in the page (default: on, as in a built context, unless "
                   "the redaction policy turns on_build off); the store is not changed.")
@click.option("--bookkeeping", is_flag=True,
              help="Also show the records importers keep from the source "
                   "(`claude-code:progress`, `system`, ...) and responses with no text, which "
                   "the page leaves out like `ctx log`.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the page's data (sessions, events, states, bundles) as JSON instead.")
@click.pass_obj
def view_cmd(state, rev: str | None, output: str | None, all_sessions: bool, serve: bool,
             host: str, port: int, allow_remote: bool, redact: bool | None, bookkeeping: bool,
             as_json: bool) -> None:
    """See sessions in a browser: the branch graph, turns with tool calls paired with their
    results, compactions with the exact range they replaced, recorded context bundles ("what the
    model saw"), the projected state at any event, token usage over time; or two branches side
    by side from their merge base (REV given as A..B).

    The file is self-contained (no network, opens from disk); transcript content is shown as
    text, never run, and secrets are replaced by the redaction policy (--no-redact keeps
    them). Source bookkeeping records and responses with nothing to show are left out, as in
    `ctx log` (--bookkeeping shows them); a slash command reads as the command typed. `--serve` binds 127.0.0.1, answers only from the store, only to a literal
    loopback Host with its port, and only to the printed URL (it carries a random token).

    Keys in the page: j / k next / previous turn, b the branch point, / search sessions. Links
    like FILE.html#event=ID open at an event.

    \b
    Examples:
      ctx view                          # HEAD's session -> ctx-view-SESSION.html
      ctx view 3f2a -o session.html     # a session by id prefix
      ctx view main..approach-b         # two branches from their merge base
      ctx view HEAD~5 -o at.html        # open at an event
      ctx view --all -o store.html      # every session, with the sessions list
      ctx view --serve --port 8700      # browse the whole store on 127.0.0.1
    """
    repo = state.repo
    if serve:
        if output or as_json:
            raise click.UsageError("--serve takes no -o/--json: it writes nothing")
        _serve(repo, rev, host, port, allow_remote, bookkeeping)
        return
    if host != "127.0.0.1" or allow_remote:
        raise click.UsageError("--host and --allow-remote go with --serve")
    store = model.store_model(repo)
    tgt = export.target(repo, rev, all_sessions, store, bookkeeping)
    data = export.export_data(repo, tgt, store, bookkeeping=bookkeeping)
    from ctxstore.porcelain import redact as pr

    if pr.view_wants_redaction(repo, tgt.sessions, redact):
        report = pr.redact_view_data(repo, data)
        if report["redactions"]:
            click.echo(f"redacted {report['redactions']} secret(s) in the page "
                       f"(--no-redact keeps them)", err=True)
            for d, n in report["by_detector"].items():
                click.echo(f"  {n:>6}  {d}", err=True)
    if as_json:
        emit_json(data)
        return
    page = render_page(data, title=tgt.title)
    path = output or f"ctx-view-{short(tgt.sessions[0]) if len(tgt.sessions) == 1 else 'store'}.html"
    with replace_user_file(path, "w", encoding="utf-8") as f:
        f.write(page)
    events = sum(len(d["events"]) for d in data["data"].values())
    click.echo(f"wrote {path}: {len(tgt.sessions)} session(s), {events:,} events, "
               f"{os.path.getsize(path) / 1e6:.1f} MB; open it in a browser "
               f"(file://{os.path.abspath(path)}{tgt.start})")


def _serve(repo, rev: str | None, host: str, port: int, allow_remote: bool,
           bookkeeping: bool) -> None:
    from ctxstore.viewer.server import ViewerServer

    start = ""
    if rev:
        start = export.target(repo, rev, bookkeeping=bookkeeping).start
    try:
        server = ViewerServer(repo, host, port, allow_remote=allow_remote, start=start,
                              bookkeeping=bookkeeping)
    except OSError as exc:
        raise CtxError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    click.echo(f"serving {repo.path} at {server.url}{start}  (Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("stopped")
    finally:
        server.server_close()
