"""Portable archives: pack refs and everything they reach into one file, and import it back."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import BadRevision, NotFound
from ..objects import links
from ..refs import HEAD, split_branch_ref
from ..repo import Repository
from ..repo.revparse import resolve_event, resolve_ref_name
from ..transfer import packfile
from ..transfer import unpack as unpack_mod
from ..transfer.packfile import DEFAULT_LIMITS, Limits, PackSummary
from .session_meta import meta_ref

Progress = Callable[[str, int, int], None]


def select_refs(repo: Repository, revs: list[str], all_refs: bool = False) -> dict[str, str]:
    """{ref name: tip} for the named revisions: a branch (or SESSION/BRANCH, refs/..., HEAD's
    branch) names that ref; a session id or prefix names all its branches. With none: every
    branch of HEAD's session; `all_refs`: every ref."""
    if all_refs:
        return dict(repo.refs.iter_refs("refs/"))
    if not revs:
        cur = repo.current()
        if cur.session is None:
            raise BadRevision("HEAD is not on a session branch: name what to pack, or use --all")
        return _with_meta(repo, {f"refs/sessions/{cur.session}/{b}": t
                                 for b, t in repo.branches(cur.session).items()})
    out: dict[str, str] = {}
    for rev in revs:
        ref = resolve_ref_name(repo, rev)
        if ref == HEAD:
            ref = repo.refs.read_head().ref
            if ref is None:
                raise BadRevision("HEAD is detached: a pack carries refs, name a branch")
        if ref is not None:
            out[ref] = repo.refs.read(ref)  # type: ignore[assignment]
            continue
        try:
            sid = repo.resolve_session(rev)
        except (BadRevision, NotFound):
            raise BadRevision(f"{rev!r} is neither a branch nor a session") from None
        for b, t in repo.branches(sid).items():
            out[f"refs/sessions/{sid}/{b}"] = t
    return _with_meta(repo, out)


def _with_meta(repo: Repository, refs: dict[str, str]) -> dict[str, str]:
    """REFS plus the metadata ref (title, tags: `ctx session rename/tag`) and the session-scope
    memory history of every session they are in, so the session arrives on the other side as it
    is named and with what it remembered about itself (wider scopes travel with `--all`)."""
    from ..memory.scopes import scope_ref

    out = dict(refs)
    for name in refs:
        parts = split_branch_ref(name)
        if parts:
            for extra in (meta_ref(parts[0]), scope_ref("session", parts[0])):
                tip = repo.refs.read(extra)
                if tip is not None:
                    out[extra] = tip
    return dict(sorted(out.items()))


def pack(repo: Repository, out: str, revs: list[str] | None = None, *, all_refs: bool = False,
         since: str | None = None, progress: Progress | None = None) -> PackSummary:
    """Write the named refs and everything they reach to `out`; with `since`, a thin pack that
    leaves out everything reachable from that revision (which becomes its prerequisite)."""
    refs = select_refs(repo, list(revs or ()), all_refs)
    if not refs:
        raise BadRevision("nothing to pack: no refs selected")
    cb = None if progress is None else (lambda n: progress("walk", n, 0))
    prereqs: list[str] = []
    exclude: set[str] = set()
    if since:
        base = resolve_event(repo, since)
        exclude = links.reachable(repo.objects, [base])
        prereqs = [base]
    ids = links.reachable(repo.objects, refs.values(), progress=cb,
                          stop=exclude.__contains__ if exclude else None)
    wcb = None if progress is None else (lambda n: progress("write", n, len(ids)))
    return packfile.write_pack(repo.objects, out, refs, ids, prereqs, progress=wcb,
                               level=repo.config.get("compression_level", 3))


def unpack(repo: Repository, path: str, *, force: bool = False, limits: Limits = DEFAULT_LIMITS,
           progress: Progress | None = None) -> unpack_mod.UnpackResult:
    return unpack_mod.unpack(repo, path, force=force, limits=limits, progress=progress)


def verify(path: str, progress: Progress | None = None) -> dict:
    return unpack_mod.verify_pack(path, progress=progress)


def listing(path: str) -> dict:
    return unpack_mod.list_pack(path)
