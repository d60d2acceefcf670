"""The HTML page: the template with the stylesheet, the script and the data put in.

The data is JSON inside `<script type="application/json">`, with `<`, `>` and `&` written as
`\\u003c`, `\\u003e`, `\\u0026` so no string in a transcript can close the element or open a
tag; the browser code reads it with JSON.parse and writes every string with textContent. A
Content-Security-Policy meta tag allows exactly the page's own inline script and style (by
sha256), no other script, no network (`connect-src 'none'`, `'self'` when served), images only
as data: URLs, and no forms, frames or base URL.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from functools import cache
from importlib import resources
from typing import Any

_SLOTS = re.compile(r"__(CSP|TITLE|CSS|DATA|JS)__")


@cache
def _asset(name: str) -> str:
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


def embed_json(value: Any) -> str:
    """JSON that is safe inside a <script> element (and inside HTML generally)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e") \
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def csp(js: str, css: str, served: bool) -> str:
    connect = "'self'" if served else "'none'"
    return (f"default-src 'none'; script-src {_sha256(js)}; style-src {_sha256(css)}; "
            f"img-src data:; connect-src {connect}; base-uri 'none'; form-action 'none'; "
            f"frame-src 'none'; object-src 'none'")


def render_page(data: dict[str, Any], *, title: str = "ctx view", served: bool = False) -> str:
    """The complete page for DATA ({mode, store, sessions, data: {sid: session}, start})."""
    js, css = _asset("viewer.js"), _asset("viewer.css")
    slots = {"CSP": html.escape(csp(js, css, served), quote=False), "TITLE": html.escape(title),
             "CSS": css, "JS": js, "DATA": embed_json({**data, "mode": "served" if served
                                                      else "static"})}
    return _SLOTS.sub(lambda m: slots[m.group(1)], _asset("template.html"))
