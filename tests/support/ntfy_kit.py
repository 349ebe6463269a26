"""What the ntfy stand-in's own tests share: credentials, a settable clock and the error-shape check."""

from __future__ import annotations

import re
from typing import Any

import httpx

TOKEN = "tk_0123456789abcdefghijklmnopqrs"  # tk_ + 29 lowercase alphanumerics
OTHER_TOKEN = "tk_zyxwvutsrqponmlkjihgfedcba987"
ID = re.compile(r"^[A-Za-z0-9]{12}$")


class FakeClock:
    """A settable wall clock for message times and rate buckets."""

    def __init__(self, t: float = 1_800_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def post(url: str, **kw: Any) -> httpx.Response:
    with httpx.Client(base_url=url, timeout=5, follow_redirects=False) as c:
        return c.post("/", **kw)


def assert_error(r: httpx.Response, status: int, code: int) -> dict[str, Any]:
    assert (r.status_code, r.headers["content-type"]) == (status, "application/json")
    assert "retry-after" not in r.headers and "www-authenticate" not in r.headers
    assert r.content.endswith(b"}\n")
    doc: dict[str, Any] = r.json()
    assert (doc["code"], doc["http"]) == (code, status) and doc["error"]
    return doc
