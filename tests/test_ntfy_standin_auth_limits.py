"""The ntfy stand-in's auth (Bearer, Basic, ACLs, failure limit) and rate limits match ntfy's, over real HTTP."""

from __future__ import annotations

import base64

import httpx
import pytest
from support.ntfy_kit import OTHER_TOKEN, TOKEN, FakeClock, assert_error, post
from support.ntfy_standin import NtfyStandin, RateLimit

# -------------------------------------------------------------------------------------- auth


@pytest.mark.parametrize(
    "auth",
    [
        f"Bearer {TOKEN}",
        "Basic " + base64.b64encode(b"phil:secret").decode(),
        "Basic " + base64.b64encode(f":{TOKEN}".encode()).decode(),
    ],
)
def test_auth_bearer_basic_and_token_as_password(locked: NtfyStandin, auth: str) -> None:
    """A granted user publishes with a Bearer token, Basic user:pass, or Basic with the token as password."""
    r = post(locked.url, json={"topic": "alerts-1", "message": "m"}, headers={"Authorization": auth})
    assert r.status_code == 200
    assert locked.requests[-1].header("authorization") == auth


@pytest.mark.parametrize(
    ("auth", "path"),
    [
        ("Basic " + base64.b64encode(b"phil:wrong").decode(), "/"),
        ("Bearer tk_" + "0" * 29, "/"),  # well-formed but unknown
        (f"bearer {TOKEN}", "/"),  # Bearer is matched case-sensitively
        ("Basic " + base64.b64encode(b"phil:wrong").decode(), "/no/such/path"),
    ],
)
def test_bad_credentials_are_401_even_on_unknown_paths(locked: NtfyStandin, auth: str, path: str) -> None:
    """A bad credential gets 401 40101 with the auth docs link before any routing."""
    with httpx.Client(base_url=locked.url, timeout=5) as c:
        r = c.post(path, json={"topic": "alerts", "message": "m"}, headers={"Authorization": auth})
    doc = assert_error(r, 401, 40101)
    assert doc["link"] == "https://ntfy.sh/docs/publish/#authentication"


@pytest.mark.parametrize("headers", [{}, {"Authorization": f"Bearer {OTHER_TOKEN}"}, {"Authorization": "Token x"}])
def test_anonymous_or_ungranted_is_403(locked: NtfyStandin, headers: dict[str, str]) -> None:
    """Anonymous (or a foreign scheme) and a user without a grant get 403 40301 under deny-all."""
    assert_error(post(locked.url, json={"topic": "alerts", "message": "m"}, headers=headers), 403, 40301)
    assert locked.messages() == []


def test_auth_failures_are_limited_after_29() -> None:
    """After 29 failed credentials the next attempt gets 429 42909, even with a good token."""
    bad = {"Authorization": "Basic " + base64.b64encode(b"phil:nope").decode()}
    # A frozen clock: the bucket refills one token a minute, so real time would blur the edge.
    locked = NtfyStandin(users={"phil": "secret"}, tokens={TOKEN: "phil"}, clock=FakeClock())
    with locked, httpx.Client(base_url=locked.url, timeout=5) as c:
        codes = [c.post("/", json={"topic": "alerts"}, headers=bad).json()["code"] for _ in range(29)]
        assert set(codes) == {40101}
        good = {"Authorization": f"Bearer {TOKEN}"}
        assert_error(c.post("/", json={"topic": "alerts"}, headers=good), 429, 42909)


# ------------------------------------------------------------------------------------ limits


def test_request_bucket_429_42901_then_refills() -> None:
    """With the request bucket on, the request past the burst gets 429 42901 (no Retry-After) until it refills."""
    clock = FakeClock()
    with NtfyStandin(request_limit=RateLimit(2, 5.0), clock=clock) as s:
        with httpx.Client(base_url=s.url, timeout=5) as c:
            assert [c.post("/", json={"topic": "t"}).status_code for _ in range(2)] == [200, 200]
            assert_error(c.post("/", json={"topic": "t"}), 429, 42901)
            clock.t += 5
            assert c.post("/", json={"topic": "t"}).status_code == 200


def test_daily_quota_42908(srv: NtfyStandin, client: httpx.Client) -> None:
    """The daily message quota answers 429 42908 once used up, and resets on demand."""
    srv.set_limits(daily_messages=1)
    assert client.post("/", json={"topic": "t"}).status_code == 200
    assert_error(client.post("/", json={"topic": "t"}), 429, 42908)
    srv.reset_daily_quota()
    assert client.post("/", json={"topic": "t"}).status_code == 200
