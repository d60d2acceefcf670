"""`ctx view` follows the redaction policy (issue 30, item 7): the page is a file people mail
and attach to bug reports, so its secrets are replaced unless --no-redact; the store keeps them."""

from __future__ import annotations

import json

import pytest

from tests.clitools import Ctx
from tests.test_redaction import CARRIERS, SECRETS

PLANTED = ("aws_key_id", "github", "slack", "url_password", "private_key_body")


@pytest.fixture
def ctx(tmp_path):
    c = Ctx(tmp_path)
    c("init", str(tmp_path))
    c("new", "--title", "deploy")
    for name in PLANTED:
        c("append", "UserPromptSubmitted", "--actor", "user",
          "--payload", json.dumps({"text": CARRIERS[name].format(SECRETS[name])}))
    return c


def test_the_page_carries_no_secret_by_default(ctx, tmp_path):
    page = tmp_path / "page.html"
    res = ctx("view", "-o", str(page))
    html = page.read_text()
    assert [n for n in PLANTED if SECRETS[n] in html] == []
    assert "redacted" in res.stderr and "--no-redact" in res.stderr
    data = ctx.json("view")
    assert [n for n in PLANTED if SECRETS[n] in json.dumps(data)] == []
    # the store is not changed: the events still hold what was recorded
    assert SECRETS["github"] in json.dumps(ctx.json("log"))


def test_no_redact_keeps_them_and_the_policy_can_turn_it_off(ctx, tmp_path):
    page = tmp_path / "raw.html"
    ctx("view", "--no-redact", "-o", str(page))
    assert all(SECRETS[n] in page.read_text() for n in ("aws_key_id", "github", "slack"))
    cfg = tmp_path / ".ctx" / "config.json"
    conf = json.loads(cfg.read_text())
    conf["redaction"] = {"on_build": False}
    cfg.write_text(json.dumps(conf))
    ctx("view", "-o", str(page))
    assert SECRETS["github"] in page.read_text()
