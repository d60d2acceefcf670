"""`ctx mcp install claude-code|codex|gemini`: our entry merged into each client's file, every
other key kept, a second run changing nothing, and a project file naming no path of this
machine."""

from __future__ import annotations

import json
import sys
import tomllib

import pytest

from tests.clitools import Ctx


@pytest.fixture
def env(tmp_path, monkeypatch):
    home = tmp_path / "home"
    project = tmp_path / "proj"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    ctx = Ctx(project)
    ctx("init", str(project))
    return ctx, home, project


def install(ctx, project, *args):
    return ctx.json("mcp", "install", *args, "--dir", str(project))


def no_machine_path(text: str, project, home) -> None:
    for path in (str(project), str(home), sys.executable, sys.prefix):
        assert path not in text, path


@pytest.mark.parametrize("client,rel,key", [("claude-code", ".mcp.json", "mcpServers"),
                                            ("gemini", ".gemini/settings.json", "mcpServers")])
def test_json_project_file_merges_and_is_portable(env, client, rel, key):
    ctx, home, project = env
    path = project / rel
    path.parent.mkdir(exist_ok=True)
    other = {"command": "npx", "args": ["-y", "other-server"], "env": {"K": "v"}}
    path.write_text(json.dumps({"theme": "dark", key: {"other": other}}, indent=4))
    res = install(ctx, project, client)
    assert res["action"] == "added" and res["written"] and res["path"] == str(path)
    value = json.loads(path.read_text())
    assert value["theme"] == "dark" and value[key]["other"] == other
    ours = value[key]["ctxstore"]
    assert ours["command"] == "ctx" and ours["args"] == ["mcp"]
    assert ours.get("type", "stdio") == "stdio"
    no_machine_path(path.read_text(), project, home)
    before = path.read_bytes()
    again = install(ctx, project, client)
    assert again["action"] == "unchanged" and not again["written"]
    assert path.read_bytes() == before


def test_claude_code_user_file_keeps_its_state_and_names_this_interpreter(env):
    ctx, home, project = env
    path = home / ".claude.json"
    state = {"numStartups": 12, "projects": {"/x": {"mcpServers": {"a": {"command": "a"}}}},
             "mcpServers": {"old": {"type": "stdio", "command": "old"}}}
    path.write_text(json.dumps(state))
    res = install(ctx, project, "claude-code", "--user", "--pin-store", "--allow-writes")
    value = json.loads(path.read_text())
    assert value["numStartups"] == 12 and value["projects"] == state["projects"]
    assert value["mcpServers"]["old"] == state["mcpServers"]["old"]
    ours = value["mcpServers"]["ctxstore"]
    assert ours["command"] == sys.executable
    assert ours["args"] == ["-m", "ctxstore.cli", "mcp", "--store",
                            str(project / ".ctx"), "--allow-writes"]
    assert res["action"] == "added"
    # a different install replaces only our entry
    res = install(ctx, project, "claude-code", "--user")
    assert res["action"] == "updated"
    assert json.loads(path.read_text())["mcpServers"]["ctxstore"]["args"] == [
        "-m", "ctxstore.cli", "mcp"]


def test_claude_config_dir_and_codex_home_are_honoured(env, tmp_path, monkeypatch):
    ctx, home, project = env
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    assert install(ctx, project, "claude-code", "--user")["path"] == \
        str(tmp_path / "cc" / ".claude.json")
    assert install(ctx, project, "codex", "--user")["path"] == str(tmp_path / "cx" / "config.toml")
    assert install(ctx, project, "gemini", "--user")["path"] == \
        str(home / ".gemini" / "settings.json")


CODEX_BEFORE = '''# my codex settings
model = "o3"
approval_policy = "on-request"

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]

[mcp_servers.docs.env]
TOKEN = "$DOCS_TOKEN"  # from the environment

[profiles.fast]
model = "o4-mini"
'''


def test_codex_toml_appends_our_table_and_keeps_everything_else(env):
    ctx, home, project = env
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(CODEX_BEFORE)
    res = install(ctx, project, "codex", "--user")
    text = path.read_text()
    assert res["action"] == "added" and text.startswith(CODEX_BEFORE)  # comments kept too
    value = tomllib.loads(text)
    before = tomllib.loads(CODEX_BEFORE)
    assert value["mcp_servers"].pop("ctxstore") == {
        "command": sys.executable, "args": ["-m", "ctxstore.cli", "mcp"]}
    assert value == before
    assert install(ctx, project, "codex", "--user")["action"] == "unchanged"
    assert path.read_text() == text


def test_codex_toml_replaces_our_old_table_with_its_subtables_in_place(env):
    ctx, home, project = env
    path = project / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text('model = "o3"\n\n[mcp_servers.ctxstore]\ncommand = "/old/venv/bin/ctx"\n'
                    'args = ["mcp"]\n\n[mcp_servers.ctxstore.env]\nX = "1"\n\n'
                    '[mcp_servers.other]\ncommand = "other"\n')
    res = install(ctx, project, "codex")
    assert res["action"] == "updated"
    text = path.read_text()
    value = tomllib.loads(text)
    assert value == {"model": "o3", "mcp_servers": {
        "ctxstore": {"command": "ctx", "args": ["mcp"]}, "other": {"command": "other"}}}
    assert text.index("[mcp_servers.ctxstore]") < text.index("[mcp_servers.other]")
    no_machine_path(text, project, home)


def test_codex_inline_entry_is_refused_and_left_alone(env):
    ctx, home, project = env
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text('[mcp_servers]\nctxstore = { command = "x" }\n')
    err = ctx.fails(10, "mcp", "install", "codex", "--user")
    assert str(path) in err and "by hand" in err
    assert path.read_text() == '[mcp_servers]\nctxstore = { command = "x" }\n'


@pytest.mark.parametrize("client,rel,bad", [
    ("claude-code", ".mcp.json", '{"mcpServers": {\n  "a": 1,\n}'),
    ("gemini", ".gemini/settings.json", '[1, 2]'),
    ("codex", ".codex/config.toml", 'model = \n'),
    ("claude-code", ".mcp.json", '{"mcpServers": ["not", "an", "object"]}'),
    ("codex", ".codex/config.toml", 'mcp_servers = "a string"\n'),
])
def test_a_broken_file_is_named_and_not_touched(env, client, rel, bad):
    ctx, home, project = env
    path = project / rel
    path.parent.mkdir(exist_ok=True)
    path.write_text(bad)
    err = ctx.fails(10, "mcp", "install", client, "--dir", str(project))
    assert str(path) in err
    assert path.read_text() == bad


def test_dry_run_writes_nothing_and_pin_store_stays_out_of_project_files(env):
    ctx, home, project = env
    res = install(ctx, project, "gemini", "--dry-run")
    assert res["action"] == "added" and res["dry_run"] and not res["written"]
    assert not (project / ".gemini").exists()
    out = ctx("mcp", "install", "claude-code", "--dir", str(project), "--dry-run").stdout
    assert out.startswith("Would have added: MCP server ctxstore in ")
    assert not (project / ".mcp.json").exists()
    err = ctx.fails(10, "mcp", "install", "claude-code", "--dir", str(project), "--pin-store")
    assert "project file" in err


def test_serving_without_the_extra_says_how_to_install_it(env, monkeypatch):
    ctx, home, project = env
    for name in [m for m in sys.modules if m == "mcp" or m.startswith("mcp.")] + ["mcp"]:
        monkeypatch.setitem(sys.modules, name, None)  # as if the `mcp` extra were not installed
    monkeypatch.delitem(sys.modules, "ctxstore.integrations.mcp.server", raising=False)
    err = ctx.fails(15, "mcp")
    assert "pip install 'ctxstore[mcp]'" in err
    assert install(ctx, project, "gemini")["action"] == "added"  # install needs no SDK


# -- Codex's TOML, whatever else the file holds --------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ctxstore.integrations.mcp import install as inst  # noqa: E402

_names = st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True)
_values = st.one_of(st.integers(-10**6, 10**6), st.booleans(),
                    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
                    st.lists(st.text("abc xyz[]#\"'=", max_size=6), max_size=3))
_tables = st.dictionaries(_names, _values, max_size=3)


def _toml(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False).replace("\x7f", "\\u007f")
    return str(v)


@st.composite
def codex_files(draw):
    """TOML text: top-level keys, then tables — some other servers, maybe ours (with a
    sub-table) anywhere among them — with comments and blank lines between."""
    lines = [f"{k} = {_toml(v)}" for k, v in draw(_tables).items()]
    tables = [(f"mcp_servers.{n}", draw(_tables)) for n in draw(st.lists(
        _names.filter(lambda n: n != "ctxstore"), unique=True, max_size=3))]
    tables += [(f"profiles.{n}", draw(_tables)) for n in draw(st.lists(_names, unique=True,
                                                                        max_size=2))]
    if draw(st.booleans()):
        at = draw(st.integers(0, len(tables)))
        header = draw(st.sampled_from(["mcp_servers.ctxstore", 'mcp_servers."ctxstore"',
                                       "mcp_servers . ctxstore"]))
        ours = [(header, {"command": "old", **draw(_tables)})]
        if draw(st.booleans()):
            ours.append(("mcp_servers.ctxstore.env", draw(_tables)))
        tables[at:at] = ours
    for name, body in tables:
        lines += ["", draw(st.sampled_from(["", "# a comment"])), f"[{name}]"]
        lines += [f"{k} = {_toml(v)}" for k, v in body.items()]
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n\n"]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=codex_files(), args=st.lists(st.text("abc -/\"\\é\x7f\n😀", min_size=1,
                                                 max_size=8), max_size=3))
def test_codex_merge_keeps_every_other_value_and_is_idempotent(text, args, tmp_path_factory):
    path = tmp_path_factory.mktemp("codex") / "config.toml"
    path.write_text(text, encoding="utf-8")
    before = tomllib.loads(text)
    inst.install("codex", path, "ctx", ["mcp", *args])
    after = tomllib.loads(path.read_text(encoding="utf-8"))
    servers = before.setdefault("mcp_servers", {})
    servers["ctxstore"] = {"command": "ctx", "args": ["mcp", *args]}
    assert after == before
    written = path.read_bytes()
    assert inst.install("codex", path, "ctx", ["mcp", *args])["action"] == "unchanged"
    assert path.read_bytes() == written
    assert inst.uninstall("codex", path)["action"] == "removed"
    gone = tomllib.loads(path.read_text(encoding="utf-8"))
    del servers["ctxstore"]
    if not servers and "mcp_servers" not in gone:  # the table existed only as ours
        del before["mcp_servers"]
    assert gone == before
    assert inst.uninstall("codex", path)["action"] == "unchanged"


@pytest.mark.parametrize("client,rel", [("claude-code", ".mcp.json"),
                                        ("gemini", ".gemini/settings.json"),
                                        ("codex", ".codex/config.toml")])
def test_uninstall_removes_only_our_entry(env, client, rel):
    ctx, home, project = env
    path = project / rel
    path.parent.mkdir(exist_ok=True)
    if client == "codex":
        path.write_text('model = "o3"\n\n[mcp_servers.other]\ncommand = "other"\n')
    else:
        path.write_text(json.dumps({"theme": "dark", "mcpServers": {"other": {"command": "o"}}}))
    before = path.read_text()
    parse = tomllib.loads if client == "codex" else json.loads
    install(ctx, project, client)
    dry = ctx.json("mcp", "uninstall", client, "--dir", str(project), "--dry-run")
    assert dry["action"] == "removed" and not dry["written"] and "ctxstore" in path.read_text()
    res = ctx.json("mcp", "uninstall", client, "--dir", str(project))
    assert res["action"] == "removed" and res["removed"]["args"] == ["mcp"]
    assert parse(path.read_text()) == parse(before)
    out = ctx("mcp", "uninstall", client, "--dir", str(project)).stdout
    assert out.startswith("No MCP server ctxstore in ")
