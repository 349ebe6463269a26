"""The one HTTP client that talks to ntfy: keep-alive, explicit timeouts, no redirects, no secrets out.

One :class:`NtfyClient` lives as long as the delivery role, so a queue drains over one kept-alive
connection. Redirects are never followed (a 3xx is a dead letter, see ``retry.py``): a
redirect could carry the credential to another host. Credentials go only into the
``Authorization`` header of the request and never into an error text this module returns
(:func:`scrub` masks them in every form a library may print: :mod:`donebell.shared.config.secret_text`).
"""

from __future__ import annotations

import base64
import functools
import json
import ssl
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import unquote, urlsplit

from donebell.shared.config import secret_text
from donebell.shared.config.view import SettingsLike
from donebell.shared.httpx_without_cli import httpx
from donebell.shared.ntfy.deadline import AttemptDeadline
from donebell.shared.ntfy.proxy import ProxyRefused, has_credentials, is_loopback, route_for
from donebell.shared.ntfy.refusal import waiting_reason
from donebell.shared.ntfy.retry import Decision, classify_exception, classify_response
from donebell.shared.version import VERSION

USER_AGENT = f"donebell/{VERSION}"
#: Connecting should never take long; the configured timeout bounds the whole exchange.
CONNECT_TIMEOUT_CAP = 5.0
RESPONSE_BODY_CAP = 64 << 10


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The one TLS context (the CA bundle parsed, ~1.5 MiB) every route of this process shares:
    what ``httpx.HTTPTransport`` would build for each pool. Built by a forking supervisor before
    it starts the delivery role (``supervisor/role_fork.py``), so the role shares its pages."""
    return httpx.create_ssl_context(verify=True, trust_env=True)


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


def account_auth(settings: SettingsLike) -> Auth | None:
    """:func:`auth_for`, else the server URL's ``user:password@`` as a Basic header.

    For requests made to :func:`public_server` (the wake role's subscription): the credentials
    travel in the header only, never in a URL that a log line or a button could show.
    """
    auth = auth_for(settings)
    parts = urlsplit(settings.server)
    if auth is not None or parts.password is None:
        return auth
    user, password = unquote(parts.username or ""), unquote(parts.password)
    encoded = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    return Auth(f"Basic {encoded}", tuple(s for s in (password, parts.password, encoded) if s))


def check_sendable(settings: SettingsLike, auth: Auth | None) -> None:
    """Refuse what must not be sent: no topic, or credentials in clear text to another host."""
    if not settings.topic:
        raise ConfigProblem("no topic configured (run: donebell config init)")
    parts = urlsplit(settings.server)
    credentials = has_credentials(settings.server, auth)  # user-info counts too
    if credentials and parts.scheme == "http" and not settings.allow_insecure_auth:
        if not is_loopback(parts.hostname or ""):
            raise ConfigProblem(
                f"refusing to send credentials over plain http:// to {parts.hostname}; "
                "use https:// or set allow_insecure_auth: true"
            )
    try:
        route_for(settings.server, credentials=credentials)  # never credentials through a clear-text proxy hop
    except ProxyRefused as exc:
        raise ConfigProblem(str(exc)) from None


def public_server(server: str) -> str:
    """``scheme://host[:port][/path]`` without any user-info, for receipts and logs."""
    parts = urlsplit(server)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}".rstrip("/")


def scrub(text: str, auth: Auth | None, settings: SettingsLike | None = None) -> str:
    """``text`` with every secret we know of, in every form a library may print it, masked."""
    secrets, username = secret_text.settings_secrets(settings) if settings is not None else ([], None)
    return secret_text.scrub(text, [*(auth.secrets if auth else ()), *secrets], username)


class NtfyClient:
    """Publishes JSON messages to an ntfy server root over one kept-alive connection.

    It talks to httpx's connection-pool transport directly, not through ``httpx.Client``: the
    client's request building, cookie jar and redirect/auth machinery cost about as much CPU as
    the rest of a delivery, and none of it is wanted (no cookies, no redirects, headers set here).
    The transport still maps every network failure to the ``httpx`` exception
    :func:`~donebell.shared.ntfy.retry.classify_exception` knows.
    """

    def __init__(self, timeout: float, *, max_connections: int = 1) -> None:
        self.timeout = timeout
        self._max_connections = max_connections
        self._transports: dict[str | None, httpx.HTTPTransport] = {}  # proxy URL (None: direct) -> its pool
        self._deadline = AttemptDeadline()

    def _transport_for(self, server: str, auth: Auth | None) -> httpx.HTTPTransport:
        """The kept-alive pool of the route :mod:`.proxy_policy` picks; raises ``ProxyRefused``."""
        proxy = route_for(server, credentials=has_credentials(server, auth)).proxy
        transport = self._transports.get(proxy)
        if transport is None:
            # The proxy comes from proxy_policy only (the environment is never read here).
            transport = self._transports[proxy] = httpx.HTTPTransport(
                verify=tls_context(),
                limits=httpx.Limits(
                    max_connections=self._max_connections,
                    max_keepalive_connections=self._max_connections,
                    keepalive_expiry=30.0,
                ),
                proxy=proxy,
            )
        return transport

    def prepare(self, server: str, auth: Auth | None) -> None:
        """Build the pool of ``server``'s route now, before the first completion needs it.

        A transport builds its TLS context (the CA bundle parsed: ~40 ms CPU, 60-180 ms on a busy
        machine) even for an http:// server; built at the first POST, that cost landed between a
        promotion and its notification. A route the proxy policy refuses is left for
        :meth:`publish` to report.
        """
        try:
            self._transport_for(server, auth)
        except ProxyRefused:
            pass

    def set_timeout(self, timeout: float) -> None:
        """Apply a changed ``timeout_seconds`` (to the next request; the connection stays)."""
        self.timeout = timeout

    def publish(self, server: str, payload: dict[str, Any], auth: Auth | None) -> Decision:
        """POST ``payload`` as JSON to the server root and classify the outcome; never raises
        for network trouble (that is a ``retry`` decision)."""
        headers = {"User-Agent": USER_AGENT, "Content-Type": "application/json"}
        if auth is not None:
            headers["Authorization"] = auth.header
        url = httpx.URL(server.rstrip("/") + "/")
        if url.username or url.password:  # user-info in `server` is Basic auth, as httpx.Client sends it
            pair = f"{url.username}:{url.password}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        timeout = httpx.Timeout(self.timeout, connect=min(self.timeout, CONNECT_TIMEOUT_CAP)).as_dict()
        with self._deadline.armed(self.timeout) as deadline:  # the whole exchange: attempt_deadline.py
            try:
                transport = self._transport_for(server, auth)
                request = httpx.Request(
                    "POST",
                    url,
                    content=_encode(payload),
                    headers=headers,
                    extensions={"timeout": timeout, "trace": deadline.trace},
                )
                resp = transport.handle_request(request)
                try:
                    data = _read_capped(resp)
                finally:
                    resp.close()
                decision = classify_response(resp.status_code, data, resp.headers.get("retry-after"))
                return _with_reason(decision, credentials=has_credentials(server, auth))
            except httpx.HTTPError as exc:
                if deadline.fired:
                    return Decision("retry", f"timeout: no complete answer within {self.timeout:g}s (attempt deadline)")
                return classify_exception(exc)
            except ProxyRefused as exc:  # check_sendable refuses this first; never sent, retried as configured
                return Decision("retry", f"config: {exc}")

    def close(self) -> None:
        for transport in self._transports.values():
            transport.close()


def _with_reason(decision: Decision, *, credentials: bool) -> Decision:
    """A refusal that needs a repair (credentials, access, the server URL) says which in its error."""
    reason = waiting_reason(decision.status, decision.ntfy_code, credentials=credentials)
    return (
        replace(decision, error=f"{decision.error} — {reason}") if reason and decision.verdict != "sent" else decision
    )


def _read_capped(resp: httpx.Response) -> bytes:
    chunks: list[bytes] = []
    total = 0
    for chunk in resp.iter_raw():  # no Accept-Encoding was sent: the body is not compressed
        chunks.append(chunk)
        total += len(chunk)
        if total >= RESPONSE_BODY_CAP:
            break
    return b"".join(chunks)


def _encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
