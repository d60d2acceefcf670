"""Push, clone, fetch and pull over https:// against git's own smart-HTTP server
(`git http-backend`) behind TLS with a private CA and HTTP Basic auth, with a token from the
environment and with git's credential helper; a wrong token, an untrusted certificate and a
bad CA path fail with one line and write nothing; no credential is ever written (issue 15)."""

from __future__ import annotations

import base64

import pytest
from click.testing import CliRunner

from ctxstore.cli.main import cli

from .clitools import store_files
from .remoteservers import assert_nowhere, https_git, round_trip, tls_files
from .remotetools import Machine, bare, git, needs_git, remote_refs

pytestmark = needs_git

USER = "alice"
TOKEN = "ctx-https-t0ken-8d41c"


@pytest.fixture
def tls(tmp_path_factory):
    return tls_files(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def server(tmp_path, monkeypatch, tls):
    """A bare repository served at URL; the environment is the test's own: an empty HOME and
    global git config, no token, libgit2 told about the test CA through GIT_SSL_CAINFO."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("CTX_GIT_TOKEN", "GIT_TOKEN", "CTX_GIT_USERNAME", "SSH_AUTH_SOCK",
                "SSL_CERT_FILE", "SSL_CERT_DIR", "GIT_SSL_CAPATH", "GIT_ASKPASS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GIT_SSL_CAINFO", str(tls["ca"]))
    bare(tmp_path / "srv" / "team" / "s.git")
    with https_git(tmp_path / "srv", tls, USER, TOKEN) as srv:
        srv.repo_url = f"{srv.url}/team/s.git"
        srv.repo_path = tmp_path / "srv" / "team" / "s.git"
        yield srv


def _secrets(password: str) -> list[str]:
    return [password, base64.b64encode(f"{USER}:{password}".encode()).decode()]


def test_token_from_the_environment(tmp_path, monkeypatch, server):
    monkeypatch.setenv("CTX_GIT_TOKEN", TOKEN)
    monkeypatch.setenv("CTX_GIT_USERNAME", USER)
    outputs = round_trip(tmp_path, server.repo_url, server.repo_path)
    assert server.expected in server.seen  # the token really travelled, and was accepted
    assert_nowhere(_secrets(TOKEN), [tmp_path / "a", tmp_path / "b"], outputs)


def test_credential_helper_from_git_config(tmp_path, server):
    store = tmp_path / "home" / "git-credentials"
    store.write_text(f"https://{USER}:{TOKEN}@{server.url.removeprefix('https://')}\n")
    git("config", "--global", "credential.helper", f"store --file={store}")
    outputs = round_trip(tmp_path, server.repo_url, server.repo_path)
    assert server.expected in server.seen
    assert_nowhere(_secrets(TOKEN), [tmp_path / "a", tmp_path / "b"], outputs)


def test_wrong_token_fails_and_writes_nothing(tmp_path, monkeypatch, server):
    wrong = "not-the-t0ken-3391"
    monkeypatch.setenv("CTX_GIT_TOKEN", wrong)
    monkeypatch.setenv("CTX_GIT_USERNAME", USER)
    a = Machine(tmp_path / "a")
    a("remote", "add", "origin", server.repo_url)
    before = store_files(tmp_path / "a")
    outputs = []
    for args in (("push",), ("fetch",), ("pull",)):
        err = a.fails(19, *args)
        assert "authentication failed (tried: token from $CTX_GIT_TOKEN)" in err, err
        outputs.append(err)
    res = CliRunner().invoke(cli, ["clone", server.repo_url, str(tmp_path / "c")])
    assert res.exit_code == 19 and "authentication failed" in res.output
    assert not (tmp_path / "c").exists()
    outputs.append(res.output)
    after = store_files(tmp_path / "a")
    # the git mirror may be created (empty) on first use; nothing else changes
    assert {k: v for k, v in after.items() if not k.startswith("remotes.git/")} == before
    assert not [k for k in after if k.startswith("remotes.git/objects/") and
                not k.startswith(("remotes.git/objects/info/", "remotes.git/objects/pack/"))]
    assert remote_refs(server.repo_path) == {}
    wrong_header = "Basic " + base64.b64encode(f"{USER}:{wrong}".encode()).decode()
    assert wrong_header in server.seen
    assert_nowhere(_secrets(wrong), [tmp_path / "a"], outputs)


def test_untrusted_certificate_gets_no_credentials(tmp_path, monkeypatch, server):
    other = tls_files(tmp_path / "other-ca", "other")  # a CA that did not sign the server's
    monkeypatch.setenv("GIT_SSL_CAINFO", str(other["ca"]))
    monkeypatch.setenv("CTX_GIT_TOKEN", "must-not-leave-9921")
    # (libgit2 adds CAs and never forgets one, but each test's server has its own CA, which
    # this process has never been told about)
    a = Machine(tmp_path / "a")
    a("remote", "add", "origin", server.repo_url)
    before = store_files(tmp_path / "a")
    err = a.fails(19, "push")
    assert "TLS certificate of 127.0.0.1 is not signed by a trusted CA" in err
    assert "GIT_SSL_CAINFO" in err
    assert {k: v for k, v in store_files(tmp_path / "a").items()
            if not k.startswith("remotes.git/")} == before
    assert server.seen == []  # the handshake failed before any request: no token was offered


def test_ca_variable_naming_a_missing_file(tmp_path, monkeypatch, server):
    monkeypatch.setenv("GIT_SSL_CAINFO", str(tmp_path / "nope.pem"))
    a = Machine(tmp_path / "a")
    a("remote", "add", "origin", server.repo_url)
    err = a.fails(10, "push")
    assert "$GIT_SSL_CAINFO names" in err and "nope.pem" in err


def test_ca_variables_matter_only_for_https(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_SSL_CAINFO", str(tmp_path / "nope.pem"))
    a = Machine(tmp_path / "a")
    a("remote", "add", "origin", str(bare(tmp_path / "local.git")))
    assert "[new branch]" in a("push").stdout
