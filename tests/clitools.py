"""Helpers for CLI tests: run `ctx` through click's CliRunner against a store in tmp_path."""

from __future__ import annotations

import json

from click.testing import CliRunner

from ctxstore.cli.main import cli


class Ctx:
    def __init__(self, tmp_path):
        self.root = tmp_path
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | None = None, code: int = 0):
        res = self.runner.invoke(cli, ["--store", str(self.root), *args], input=input)
        if res.exit_code != code:
            raise AssertionError(f"ctx {' '.join(args)} exited {res.exit_code}, wanted {code}\n"
                                 f"stdout: {res.stdout}\nstderr: {res.stderr}\n{res.exception!r}")
        return res

    def json(self, *args: str, input: str | None = None):
        return json.loads(self(*args, "--json", input=input).stdout)

    def import_alone(self, path) -> None:
        """`ctx init; ctx import PATH`, then HEAD on the main branch of its (first) session."""
        self("init")
        self("import", str(path))
        self("checkout", self.json("sessions")[0]["id"])
        self("checkout", "main")

    def fails(self, code: int, *args: str, input: str | None = None) -> str:
        """Run expecting exit `code`; returns stderr, which must be one line."""
        res = self(*args, input=input, code=code)
        assert res.stderr.count("\n") == 1 and res.stderr.startswith("ctx: error: "), res.stderr
        return res.stderr


def store_files(root) -> dict[str, bytes]:
    """Every file under .ctx with its bytes, to assert that a failed command changed nothing."""
    base = root / ".ctx"
    return {str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}
