"""Credentials are used at transfer time and never written: not to .ctx/config.json, a
reflog, the operation log, the mirror, or any message (issue 15)."""

from __future__ import annotations

import base64
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from click.testing import CliRunner

from ctxstore.cli.main import cli

from .remotetools import Machine, needs_git

pytestmark = needs_git

SECRET = "s3cr3t-t0ken-value-4711"


class _Refuse(BaseHTTPRequestHandler):
    """An https-less git smart-http server that asks for Basic auth and refuses every try."""

    seen: list[str] = []

    def do_GET(self):  # noqa: N802 (http.server's naming)
        _Refuse.seen.append(self.headers.get("Authorization") or "")
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="ctx-test"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_GET

    def log_message(self, *args):
        pass


@pytest.fixture
def refusing_server():
    server = HTTPServer(("127.0.0.1", 0), _Refuse)
    _Refuse.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/team/s.git"
    finally:
        server.shutdown()
        server.server_close()


def _all_text(root) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def test_token_from_env_is_sent_but_never_written(tmp_path, monkeypatch, refusing_server):
    monkeypatch.setenv("HOME", str(tmp_path))  # no user git config, no credential helper
    monkeypatch.setenv("CTX_GIT_TOKEN", SECRET)
    monkeypatch.delenv("GIT_TOKEN", raising=False)
    a = Machine(tmp_path / "a")
    a("remote", "add", "origin", refusing_server)
    outputs = []
    for args in (("push",), ("fetch",), ("pull",)):
        res = a(*args, code=19)
        outputs.append(res.stdout + res.stderr)
        assert "authentication failed" in res.stderr
        assert "token from $CTX_GIT_TOKEN" in res.stderr
    res = CliRunner().invoke(cli, ["clone", refusing_server, str(tmp_path / "c")])
    assert res.exit_code == 19 and not (tmp_path / "c").exists()
    outputs.append(res.output)
    # the token really was offered to the server...
    expected = base64.b64encode(f"x-access-token:{SECRET}".encode()).decode()
    assert f"Basic {expected}" in _Refuse.seen
    # ...and is nowhere else: messages, config, reflogs, op log, mirror, any file of the store
    ops = a("op", "log", "--json").stdout + a("reflog", "--json").stdout
    for text in [*outputs, ops]:
        assert SECRET not in text and expected not in text
    blob = _all_text(tmp_path / "a" / ".ctx")
    assert SECRET.encode() not in blob and expected.encode() not in blob


def test_url_with_a_password_is_refused_and_not_stored(tmp_path):
    a = Machine(tmp_path / "a")
    before = (tmp_path / "a" / ".ctx" / "config.json").read_bytes()
    err = a.fails(10, "remote", "add", "origin", f"https://me:{SECRET}@example.com/s.git")
    assert SECRET not in err and "me:***@example.com" in err and "CTX_GIT_TOKEN" in err
    assert (tmp_path / "a" / ".ctx" / "config.json").read_bytes() == before
    res = CliRunner().invoke(cli, ["clone", f"https://me:{SECRET}@example.com/s.git",
                                   str(tmp_path / "c")])
    assert res.exit_code == 10 and SECRET not in res.output and not (tmp_path / "c").exists()
    assert SECRET.encode() not in _all_text(tmp_path / "a" / ".ctx")
