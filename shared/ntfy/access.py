"""May donebell publish to its topic? Asked of the server without publishing anything.

ntfy authenticates a publish and checks the topic's access list before it reads any parameter
(its handler chain: authenticate, rate limit, ``authorizeTopicWrite``, then the parameters). A
publish that carries an invalid priority (``X-Priority: 9``) is therefore answered ``401 40101``
(credentials not accepted) or ``403 40301`` (no write access) when it may not publish, and
``400 40007`` (invalid priority) when it may, and ntfy stores nothing either way (measured on ntfy
2.11: tests/test_real_ntfy_doctor.py). An answer without ntfy's ``{"code", "http", "error"}``
JSON means the URL is not an ntfy server. ``GET /v1/account`` names the user the credentials
belong to (only the ``username`` is read: the answer also lists the user's tokens).

Doctor and ``donebell test`` print what :func:`probe` found, with the key and the ``ntfy access``
line that fixes it; the short form an outbox record carries is :mod:`.refusal_reason`.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

from donebell.shared.config.view import SettingsLike
from donebell.shared.httpx_without_cli import httpx
from donebell.shared.ntfy.client import USER_AGENT, Auth, public_server
from donebell.shared.ntfy.proxy import ProxyRefused, has_credentials, route_for
from donebell.shared.ntfy.refusal import FORBIDDEN, UNAUTHORIZED

INVALID_PRIORITY = 40007  # what ntfy answers a publish it would accept, but for the bad priority
PAGE_NOT_FOUND = 40401  # no such route


@dataclass(frozen=True)
class PublishAccess:
    """The server's answer: ``verdict`` is allowed, unauthorized, forbidden, not-ntfy or unknown."""

    verdict: str
    status: int | None = None
    detail: str = ""  # what went wrong when the verdict is unknown (transport error, rate limit)
    user: str | None = None  # the ntfy user the credentials belong to, when the server said

    def summary(self, settings: SettingsLike, *, credentials: bool) -> str:
        server, topic = public_server(settings.server), settings.topic
        if self.verdict == "allowed":
            who = f"user {self.user}" if self.user else ("the credentials" if credentials else "anyone")
            return f"{server} lets {who} publish to the topic (checked without publishing)"
        if self.verdict == "unauthorized":
            return f"{server} does not accept donebell's credentials (HTTP 401): every notification is refused"
        if self.verdict == "forbidden" and credentials:
            who = f"user {self.user}" if self.user else "these credentials"
            return f"{server} does not let {who} publish to {topic} (HTTP 403): every notification is refused"
        if self.verdict == "forbidden":
            return f"{server} refuses to publish to {topic} without an access token (HTTP 403): every notification is refused"
        if self.verdict == "not-ntfy":
            return f"{server} does not answer like an ntfy server (HTTP {self.status}, no ntfy error code)"
        return f"could not ask {server} whether donebell may publish: {self.detail}"

    def next_step(self, settings: SettingsLike, *, credentials: bool) -> str:
        topic = settings.topic
        if self.verdict == "unauthorized":
            return (
                "set a valid `token`: `ntfy token add <user>` on the server, then `donebell config set token -` "
                "(it reads the token from stdin); or fix `username`/`password` or the server URL's user-info"
            )
        if self.verdict == "forbidden" and credentials:
            return f"on the server: `ntfy access {self.user or '<user>'} '{topic}' rw`"
        if self.verdict == "forbidden":
            return (
                f"on the server: `ntfy user add donebell`, `ntfy access donebell '{topic}' rw`, "
                "`ntfy token add donebell`; then `donebell config set token -` (it reads the token from stdin)"
            )
        if self.verdict == "not-ntfy":
            return "set `server` to the ntfy server's base URL (the one the ntfy app subscribes to)"
        return "run `donebell doctor` again later"


def probe(settings: SettingsLike, auth: Auth | None, timeout: float = 5.0) -> PublishAccess:
    """Ask the server whether ``auth`` may publish to ``settings.topic``; never raises, stores nothing."""
    return probe_topic(settings.server, settings.topic, auth, timeout)


def probe_topic(server: str, topic: str, auth: Auth | None, timeout: float = 5.0) -> PublishAccess:
    """:func:`probe` for any topic (the reply topic with ``wake_token``, in doctor's wake check)."""
    try:
        answer = _ask(server, "POST", topic, auth, timeout)
        access = _verdict(answer.status_code, _ntfy_code(answer.content))
        if access.verdict in ("allowed", "forbidden") and _authorization(server, auth):
            access = PublishAccess(access.verdict, access.status, access.detail, _account_user(server, auth, timeout))
        return access
    except (httpx.HTTPError, ProxyRefused) as exc:
        return PublishAccess("unknown", detail=type(exc).__name__)


def may_read(server: str, topic: str, auth: Auth | None, timeout: float = 5.0) -> bool | None:
    """ntfy's ``GET /<topic>/auth``: True when ``auth`` may read (subscribe to) ``topic``; None: unknown."""
    try:
        answer = _ask(server, "GET", f"{topic}/auth", auth, timeout)
    except (httpx.HTTPError, ProxyRefused):
        return None
    if answer.status_code == 200:
        return True
    return False if _ntfy_code(answer.content) in (UNAUTHORIZED, FORBIDDEN) else None


def routes_sequence_ids(settings: SettingsLike, auth: Auth | None, timeout: float = 5.0) -> bool | None:
    """Does the server route ``/<topic>/<sequence_id>`` (ntfy >= 2.16: updates and clears)? None: unknown.

    ntfy does not report its version over HTTP (2.11 has no such endpoint). From 2.16 on a publish
    to ``/<topic>/<id>`` is a publish with that sequence ID, so with an invalid priority it gets the
    same answers as :func:`probe` (nothing stored); an older server has no such route and answers
    ``404 40401`` whatever the credentials (routing comes before the topic's access check).
    """
    try:
        answer = _ask(settings.server, "POST", f"{settings.topic}/donebell-capability-probe", auth, timeout)
    except (httpx.HTTPError, ProxyRefused):
        return None
    code = _ntfy_code(answer.content)
    if code == PAGE_NOT_FOUND:
        return False
    return True if code in (INVALID_PRIORITY, UNAUTHORIZED, FORBIDDEN) else None


def _ask(server: str, method: str, path: str, auth: Auth | None, timeout: float) -> httpx.Response:
    """One request to ``<server>/<path>`` with donebell's credentials, the delivery role's proxy
    route and no redirects; a POST carries the invalid priority, so ntfy never stores it."""
    headers = {"User-Agent": USER_AGENT}
    if method == "POST":
        headers["X-Priority"] = "9"
    authorization = _authorization(server, auth)
    if authorization:
        headers["Authorization"] = authorization
    url = httpx.URL(server.rstrip("/") + "/" + path).copy_with(username=None, password=None)
    route = route_for(server, credentials=has_credentials(server, auth))
    with httpx.Client(timeout=timeout, trust_env=False, follow_redirects=False, proxy=route.proxy) as client:
        return client.request(method, url, headers=headers, content=b"" if method == "POST" else None)


def _verdict(status: int, code: int | None) -> PublishAccess:
    if code == INVALID_PRIORITY:
        return PublishAccess("allowed", status)
    if code == UNAUTHORIZED:
        return PublishAccess("unauthorized", status)
    if code == FORBIDDEN:
        return PublishAccess("forbidden", status)
    if code is None:
        return PublishAccess("not-ntfy", status)
    return PublishAccess("unknown", status, detail=f"HTTP {status} ntfy {code}")


def _authorization(server: str, auth: Auth | None) -> str | None:
    url = httpx.URL(server)
    if url.username or url.password:  # user-info in `server` is Basic auth, as the delivery role sends it
        return "Basic " + base64.b64encode(f"{url.username}:{url.password}".encode()).decode("ascii")
    return auth.header if auth is not None else None


def _ntfy_code(body: bytes) -> int | None:
    try:
        doc = json.loads(body[:4096].decode("utf-8", "replace"))
    except ValueError:
        return None
    code = doc.get("code") if isinstance(doc, dict) else None
    return code if isinstance(code, int) and not isinstance(code, bool) and "http" in doc else None


def _account_user(server: str, auth: Auth | None, timeout: float) -> str | None:
    """The ``username`` of ``/v1/account`` for these credentials (nothing else of it is kept)."""
    try:
        answer = _ask(server, "GET", "v1/account", auth, timeout)
        name = answer.json().get("username") if answer.status_code == 200 else None
    except (httpx.HTTPError, ProxyRefused, ValueError, AttributeError):
        return None
    return name if isinstance(name, str) and name.isprintable() and len(name) <= 64 else None
