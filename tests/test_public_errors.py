"""Public entry points raise only CtxError subclasses (issue 13 item 5): every public function of
ctxstore's front door — `ctxstore.__all__`, Repository and ContextManager methods, the porcelain
functions — is called with bad values for each required argument, and must either work or raise
a CtxError (the CLI's one handler turns that into one line and an exit code). A KeyError,
ValueError, AttributeError or OSError escaping from here would be a traceback for the user."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import ctxstore
import ctxstore.porcelain
from ctxstore import ContextManager, CtxError, Repository

#: Values a user could pass where a revision, id, name, path, JSON text or option is expected.
BAD = ["", "zzzz", "0" * 64, "../x", "/nonexistent/dir/x", "refs/sessions/x/y", "HEAD~999",
       "main@{99}", "{not json", "-1", "a b\tc", "é\x00"]
#: Functions whose contract is not "user input in": skipped, with the reason.
SKIP = {
    "demo": "writes a demo store; takes no user values",
}


def _public_functions(module) -> list:
    return [(name, fn) for name, fn in inspect.getmembers(module, inspect.isfunction)
            if not name.startswith("_") and fn.__module__ == module.__name__]


def _porcelain():
    out = []
    for info in pkgutil.iter_modules(ctxstore.porcelain.__path__):
        if info.name in SKIP:
            continue
        mod = importlib.import_module(f"ctxstore.porcelain.{info.name}")
        out += [(f"porcelain.{info.name}.{n}", fn) for n, fn in _public_functions(mod)]
    return out


def _methods(cls):
    return [(f"{cls.__name__}.{n}", fn) for n, fn in inspect.getmembers(cls, inspect.isfunction)
            if not n.startswith("_")]


def _required(fn) -> list[inspect.Parameter]:
    params = list(inspect.signature(fn).parameters.values())
    return [p for p in params if p.default is inspect.Parameter.empty
            and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def _takes_text(p: inspect.Parameter) -> bool:
    """A parameter a user's text reaches: annotated str (or str | None, a path)."""
    ann = p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__", "")
    return ann.split(" | ")[0] in ("str", "os.PathLike", "Path") or ann in ("str | None",)


def _calls(tmp_path):
    """(label, zero-argument callable) for every entry point x bad value."""
    repo = Repository.init(tmp_path / "store")
    cm = ContextManager.start(repo, title="t", goal="g")
    cm.add_user_message("hello")
    targets = [(n, fn, None) for n, fn in _porcelain()]
    targets += [(n, fn, repo) for n, fn in _methods(Repository)]
    targets += [(n, fn, cm) for n, fn in _methods(ContextManager)]
    for label, fn, bound in targets:
        params = _required(fn)
        if bound is not None:
            params = params[1:]  # self
        if not all(p.name in ("repo", "store", "cm") or _takes_text(p) for p in params):
            continue  # an argument a program builds (an Event, a callable): not user input
        for bad in BAD:
            args, kwargs = [], {}
            for p in params:
                if p.name in ("repo", "store") and bound is None:
                    value = repo
                elif p.name == "cm":
                    value = cm
                else:
                    value = bad
                if p.kind == p.KEYWORD_ONLY:
                    kwargs[p.name] = value
                else:
                    args.append(value)
            target = fn.__get__(bound) if bound is not None else fn
            yield f"{label}({bad!r})", target, args, kwargs
    return repo


def test_public_entry_points_raise_only_ctx_errors(tmp_path):
    escaped = []
    for label, fn, args, kwargs in _calls(tmp_path):
        try:
            result = fn(*args, **kwargs)
            if inspect.isgenerator(result):
                list(result)
        except CtxError:
            pass
        except Exception as exc:  # noqa: BLE001 - what the test looks for
            escaped.append(f"{label}: {type(exc).__name__}: {exc}"[:200])
    assert not escaped, f"{len(escaped)} non-CtxError exception(s):\n" + "\n".join(escaped)


def test_the_front_door_exports_the_error_root():
    assert "CtxError" in ctxstore.__all__ and issubclass(ctxstore.CtxError, Exception)
