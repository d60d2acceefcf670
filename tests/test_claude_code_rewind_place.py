"""A Claude Code rewind inside an abandoned branch (issue 35, mutant 1).

The file's resume chain (the line Claude Code resumes) is `main`; a typed prompt that leaves it
starts a branch. Inside that abandoned branch the user can rewind again: re-ask from an answer
that already led to another prompt. That second attempt is a branch of its own; appended to
the first attempt, the later prompt would read as if it followed the abandoned answer."""

from __future__ import annotations

from ctxstore.importers import import_paths
from ctxstore.repo import Repository

from .test_tokens_and_chain import _line, _main_lines


def _lines_of(repo, tip):
    return [ev.payload["source"]["line"] for _e, ev in repo.graph.walk([tip], first_parent=True)
            if isinstance(ev.payload.get("source"), dict)]


def _texts_of(repo, tip):
    out = []
    for _e, ev in repo.graph.walk([tip], first_parent=True):
        msg = repo.objects.get(ev.causality["message_id"]) if ev.causality.get("message_id") \
            else None
        if msg is not None:
            out.append(msg.text)
    return out[::-1]


def test_a_rewind_inside_an_abandoned_branch_is_a_branch_of_its_own(tmp_path):
    lines = [
        _line("u1", None), _line("a1", "u1", "assistant"),
        _line("u2", "a1", text="first try"), _line("a2", "u2", "assistant", text="tried"),
        _line("u3", "a2", text="and then"), _line("a3", "u3", "assistant", text="then done"),
        _line("u3b", "a2", text="or else"), _line("a3b", "u3b", "assistant", text="else done"),
        _line("u4", "a1", text="second try"), _line("a4", "u4", "assistant"),
    ]
    path = tmp_path / "s1.jsonl"
    path.write_text("\n".join(lines) + "\n")
    repo = Repository.memory()
    sid = import_paths(repo, [path]).sessions[0].session
    branches = repo.branches(sid)
    assert set(branches) == {"main", "rewind-u2", "rewind-u3b"}
    assert _main_lines(repo, sid) == {1, 2, 9, 10}
    # the first attempt ends with its own answer, not with the later "or else"
    assert sorted(_lines_of(repo, branches["rewind-u2"])) == [1, 2, 3, 4, 5, 6]
    # the second attempt shares the abandoned branch up to a2, then asks "or else"
    assert sorted(_lines_of(repo, branches["rewind-u3b"])) == [1, 2, 3, 4, 7, 8]
    texts = _texts_of(repo, branches["rewind-u3b"])
    assert texts[-4:] == ["first try", "tried", "or else", "else done"]
    assert "and then" not in texts and "or else" not in _texts_of(repo, branches["rewind-u2"])
