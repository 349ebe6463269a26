"""The one HTTP client that talks to ntfy: keep-alive, explicit timeouts, no redirects, no secrets out.

One :class:`NtfyClient` lives as long as the delivery role, so a queue drains over one kept-alive
connection. Redirects are never followed (a 3xx is a dead letter, see ``retry_policy``): a
redirect could carry the credential to another host. Credentials go only into the
``Authorization`` header of the request and never into an error text this module returns
(:func:`scrub` removes them, in every encoding we put on the wire).
"""

from __future__ import annotations

import base64
import ipaddress
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from donebell.shared.cli import VERSION
from donebell.shared.settings_view import SettingsLike
from donebell.workers.attempt_deadline import AttemptDeadline
from donebell.workers.retry_policy import Decision, classify_exception, classify_response

USER_AGENT = f"donebell/{VERSION}"
#: Connecting should never take long; the configured timeout bounds the whole exchange.
CONNECT_TIMEOUT_CAP = 5.0
RESPONSE_BODY_CAP = 64 << 10


class ConfigProblem(Exception):
    """The configuration does not allow sending (no topic, credentials over plain http, ...).

    Not a delivery failure: the record stays queued, untouched, until the configuration is fixed.
    """


@dataclass(frozen=True)
class Auth:
    """The ``Authorization`` header value and the secrets it derives from (for scrubbing)."""

    header: str
    secrets: tuple[str, ...]


def auth_for(settings: SettingsLike) -> Auth | None:
    """Bearer token, else Basic user/password, else None; raises :class:`ConfigProblem`."""
    token = settings.token.get_secret_value() if settings.token is not None else ""
    password = settings.password.get_secret_value() if settings.password is not None else None
    if token:
        return Auth(f"Bearer {token}", (token,))
    if settings.username is None and password is None:
        return None
    if not settings.username and not password:
        return None
    if password is None:
        raise ConfigProblem("username is set without a password")
    user = settings.username or ""  # ntfy accepts ":<token>" (empty user, token as password)
    encoded = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    return Auth(f"Basic {encoded}", tuple(s for s in (password, encoded) if s))


def check_sendable(settings: SettingsLike, auth: Auth | None) -> None:
    """Refuse what must not be sent: no topic, or credentials in clear text to another host."""
    if not settings.topic:
        raise ConfigProblem("no topic configured (run: donebell config init)")
    parts = urlsplit(settings.server)
    has_credentials = auth is not None or bool(parts.username or parts.password)  # user-info counts too
    if has_credentials and parts.scheme == "http" and not settings.allow_insecure_auth:
        if not is_loopback(parts.hostname or ""):
            raise ConfigProblem(
                f"refusing to send credentials over plain http:// to {parts.hostname}; "
                "use https:// or set allow_insecure_auth: true"
            )


def is_loopback(host: str) -> bool:
    """True for localhost names and loopback addresses (127.0.0.0/8, ::1)."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def public_server(server: str) -> str:
    """``scheme://host[:port][/path]`` without any user-info, for receipts and logs."""
    parts = urlsplit(server)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}".rstrip("/")


def scrub(text: str, auth: Auth | None, settings: SettingsLike | None = None) -> str:
    """``text`` with every secret we know of replaced by ``***``."""
    secrets: list[str] = list(auth.secrets) if auth else []
    if settings is not None:
        for stored in (settings.token, settings.password):
            if stored is not None and stored.get_secret_value():
                secrets.append(stored.get_secret_value())
        parts = urlsplit(settings.server)
        if parts.password:
            secrets.append(parts.password)
    for value in sorted(set(secrets), key=len, reverse=True):
        if len(value) >= 3:
            text = text.replace(value, "***")
    return text


class NtfyClient:
    """Publishes JSON messages to an ntfy server root over one kept-alive connection."""

    def __init__(self, timeout: float, *, max_connections: int = 1) -> None:
        self.timeout = timeout
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT_CAP)),
            follow_redirects=False,
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections,
                                keepalive_expiry=30.0),
            headers={"User-Agent": USER_AGENT},
        )
        self._deadline = AttemptDeadline()

    def set_timeout(self, timeout: float) -> None:
        """Apply a changed ``timeout_seconds`` without dropping the kept-alive connection."""
        if timeout != self.timeout:
            self.timeout = timeout
            self._client.timeout = httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT_CAP))

    def publish(self, server: str, payload: dict[str, Any], auth: Auth | None) -> Decision:
        """POST ``payload`` as JSON to the server root and classify the outcome; never raises
        for network trouble (that is a ``retry`` decision)."""
        headers = {"Content-Type": "application/json"}
        if auth is not None:
            headers["Authorization"] = auth.header
        body = _encode(payload)
        url = server.rstrip("/") + "/"
        with self._deadline.armed(self.timeout) as deadline:  # the whole exchange: attempt_deadline.py
            try:
                with self._client.stream("POST", url, content=body, headers=headers,
                                         extensions={"trace": deadline.trace}) as resp:
                    data = _read_capped(resp)
                    return classify_response(resp.status_code, data, resp.headers.get("retry-after"))
            except httpx.HTTPError as exc:
                if deadline.fired:
                    return Decision("retry", f"timeout: no complete answer within {self.timeout:g}s (attempt deadline)")
                return classify_exception(exc)

    def close(self) -> None:
        self._client.close()


def _read_capped(resp: httpx.Response) -> bytes:
    chunks: list[bytes] = []
    total = 0
    for chunk in resp.iter_bytes():
        chunks.append(chunk)
        total += len(chunk)
        if total >= RESPONSE_BODY_CAP:
            break
    return b"".join(chunks)


def _encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
