"""Push, clone, fetch and pull over ssh:// against OpenSSH's sshd on 127.0.0.1, with a key
file (CTX_SSH_KEY with a passphrase, and the default ~/.ssh/id_ed25519) and with ssh-agent;
the server's host key is checked against ~/.ssh/known_hosts (an unknown or changed key is
refused before any credential is offered); no passphrase or key is ever written (issue 15)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from .clitools import store_files
from .remoteservers import assert_nowhere, round_trip, ssh_agent, ssh_keygen, sshd
from .remotetools import Machine, bare, needs_git, remote_refs

pytestmark = needs_git

PASSPHRASE = "ctx-ssh-passphrase-5522"


def _key_material(key: Path) -> list[str]:
    """Lines of the private key's body: none may be copied anywhere."""
    lines = key.read_text().splitlines()[1:-1]
    return [line for line in lines if len(line) > 40]


@pytest.fixture
def ssh_server(tmp_path, monkeypatch):
    """sshd accepting two user keys (`agent_key` without a passphrase, `phrase_key` with one),
    an empty HOME whose ~/.ssh/known_hosts holds the server's host key, a bare repository."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    for var in ("SSH_AUTH_SOCK", "CTX_SSH_KEY", "CTX_SSH_PASSPHRASE", "CTX_GIT_TOKEN",
                "GIT_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    keys = tmp_path / "keys"
    keys.mkdir()
    agent_key = ssh_keygen(keys / "agent_key")
    phrase_key = ssh_keygen(keys / "phrase_key", passphrase=PASSPHRASE)
    repo_path = bare(tmp_path / "srv" / "s.git")
    pubs = [Path(f"{k}.pub") for k in (agent_key, phrase_key)]
    with sshd(tmp_path / "sshd", pubs) as (port, user, known):
        (home / ".ssh" / "known_hosts").write_text(known)
        yield {"url": f"ssh://{user}@127.0.0.1:{port}{repo_path}", "repo_path": repo_path,
               "agent_key": agent_key, "phrase_key": phrase_key, "home": home,
               "port": port, "known": known}


def test_key_file_with_passphrase(tmp_path, monkeypatch, ssh_server):
    monkeypatch.setenv("CTX_SSH_KEY", str(ssh_server["phrase_key"]))
    monkeypatch.setenv("CTX_SSH_PASSPHRASE", PASSPHRASE)
    outputs = round_trip(tmp_path, ssh_server["url"], ssh_server["repo_path"])
    assert_nowhere([PASSPHRASE, *_key_material(ssh_server["phrase_key"])],
                   [tmp_path / "a", tmp_path / "b"], outputs)


def test_default_key_file_in_home(tmp_path, ssh_server):
    ssh_dir = ssh_server["home"] / ".ssh"
    shutil.copy(ssh_server["agent_key"], ssh_dir / "id_ed25519")
    shutil.copy(f"{ssh_server['agent_key']}.pub", ssh_dir / "id_ed25519.pub")
    (ssh_dir / "id_ed25519").chmod(0o600)
    # hashed host names, as `HashKnownHosts yes` (Debian's default) writes them
    subprocess.run(["ssh-keygen", "-H", "-f", str(ssh_dir / "known_hosts")], check=True,
                   capture_output=True)
    assert (ssh_dir / "known_hosts").read_text().startswith("|1|")
    a = Machine(tmp_path / "a")
    a("remote", "add", "origin", ssh_server["url"])
    assert "[new branch]" in a("push").stdout
    assert any(n.startswith("refs/ctx/") for n in remote_refs(ssh_server["repo_path"]))


def test_ssh_agent(tmp_path, monkeypatch, ssh_server):
    # no key file anywhere: only the agent can answer
    assert not list((ssh_server["home"] / ".ssh").glob("id_*"))
    with ssh_agent(ssh_server["agent_key"]) as sock:
        monkeypatch.setenv("SSH_AUTH_SOCK", sock)
        outputs = round_trip(tmp_path, ssh_server["url"], ssh_server["repo_path"])
    assert_nowhere(_key_material(ssh_server["agent_key"]), [tmp_path / "a", tmp_path / "b"],
                   outputs)


@pytest.mark.parametrize("known_hosts", ["absent", "other key"])
def test_unknown_or_changed_host_key_is_refused(tmp_path, monkeypatch, ssh_server, known_hosts):
    known = ssh_server["home"] / ".ssh" / "known_hosts"
    if known_hosts == "absent":
        known.unlink()
    else:  # the same host and port with another key: what a man in the middle would present
        other = ssh_keygen(tmp_path / "impostor")
        kind, body = Path(f"{other}.pub").read_text().split()[:2]
        known.write_text(f"[127.0.0.1]:{ssh_server['port']} {kind} {body}\n")
    monkeypatch.setenv("CTX_SSH_KEY", str(ssh_server["phrase_key"]))
    monkeypatch.setenv("CTX_SSH_PASSPHRASE", PASSPHRASE)
    a = Machine(tmp_path / "a")
    a("remote", "add", "origin", ssh_server["url"])
    before = store_files(tmp_path / "a")
    for args in (("push",), ("fetch",)):
        err = a.fails(19, *args)
        assert f"ssh host key of [127.0.0.1]:{ssh_server['port']} is not in " \
               f"~/.ssh/known_hosts, or differs" in err, err
        assert f"ssh-keyscan -p {ssh_server['port']} 127.0.0.1" in err
    assert {k: v for k, v in store_files(tmp_path / "a").items()
            if not k.startswith("remotes.git/")} == before
    assert remote_refs(ssh_server["repo_path"]) == {}


def test_key_the_server_does_not_accept(tmp_path, monkeypatch, ssh_server):
    stranger = ssh_keygen(tmp_path / "stranger")
    monkeypatch.setenv("CTX_SSH_KEY", str(stranger))
    a = Machine(tmp_path / "a")
    a("remote", "add", "origin", ssh_server["url"])
    err = a.fails(19, "push")
    assert f"authentication failed (tried: ssh key {stranger})" in err, err
    assert remote_refs(ssh_server["repo_path"]) == {}


def test_url_without_a_user_logs_in_as_the_local_user(tmp_path, monkeypatch, ssh_server):
    """As with ssh and git: no user in the URL means the local user name."""
    monkeypatch.setenv("CTX_SSH_KEY", str(ssh_server["phrase_key"]))
    monkeypatch.setenv("CTX_SSH_PASSPHRASE", PASSPHRASE)
    url = f"ssh://127.0.0.1:{ssh_server['port']}{ssh_server['repo_path']}"
    a = Machine(tmp_path / "a")
    a("remote", "add", "origin", url)
    assert "[new branch]" in a("push").stdout
    assert any(n.startswith("refs/ctx/") for n in remote_refs(ssh_server["repo_path"]))


def test_agent_key_refused_then_key_file(tmp_path, monkeypatch, ssh_server):
    stranger = ssh_keygen(tmp_path / "stranger")
    monkeypatch.setenv("CTX_SSH_KEY", str(ssh_server["phrase_key"]))
    monkeypatch.setenv("CTX_SSH_PASSPHRASE", PASSPHRASE)
    with ssh_agent(stranger) as sock:
        monkeypatch.setenv("SSH_AUTH_SOCK", sock)
        a = Machine(tmp_path / "a")
        a("remote", "add", "origin", ssh_server["url"])
        assert "[new branch]" in a("push").stdout
