"""Which proxy, if any, a request to the ntfy server goes through: decided here, explicitly.

httpx's own environment handling (``trust_env``) is switched off, because it would send the
``Authorization`` header in clear text to whatever ``HTTP_PROXY`` a hook-started worker inherited
from the agent. The policy (docs/delivery.md, "Proxies"):

* a loopback server (``localhost``, 127.0.0.0/8, ``::1``) is never proxied;
* ``NO_PROXY`` (or ``no_proxy``) is respected: ``*``, host names and domain suffixes (``.corp`` or
  ``corp``), IP addresses and CIDR ranges, each optionally with ``:port``;
* ``https://`` servers use ``HTTPS_PROXY``, else ``ALL_PROXY``; the request travels inside a
  CONNECT tunnel, so credentials stay inside TLS end to end;
* ``http://`` servers use ``HTTP_PROXY``, else ``ALL_PROXY`` -- but only without credentials:
  a request that carries a token, a password or URL user-info is never sent through a proxy hop
  in clear text. It is refused as a configuration problem (records wait, the reason is shown),
  never silently sent direct behind the user's back;
* the lower-case variable wins over the upper-case one (as curl and urllib do); a proxy URL
  without a scheme means ``http://``; a scheme httpx cannot use here (``socks5://``...) is refused.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from donebell.shared.config.secret_text import public_url

PROXY_SCHEMES = ("http", "https")


class ProxyRefused(Exception):
    """The request must not go through the proxy the environment names (``str()`` says why and what to do)."""


@dataclass(frozen=True)
class Route:
    """Where a request goes: ``proxy`` None means a direct connection; ``why`` says who decided."""

    proxy: str | None
    why: str


def route_for(server: str, *, credentials: bool, environ: Mapping[str, str] | None = None) -> Route:
    """The route of a request to ``server``; raises :class:`ProxyRefused` (see the module docs)."""
    env = os.environ if environ is None else environ
    parts = urlsplit(server)
    scheme, host = parts.scheme, parts.hostname or ""
    if is_loopback(host):
        return Route(None, "direct: a loopback server is never proxied")
    name, proxy = _proxy_variable(env, scheme)
    if proxy is None:
        return Route(None, "direct: no proxy variable applies")
    if _bypassed(host, parts.port or (443 if scheme == "https" else 80), _variable(env, "no_proxy")[1] or ""):
        return Route(None, f"direct: {host} is listed in NO_PROXY")
    if "://" not in proxy:
        proxy = f"http://{proxy}"
    shown = public_url(proxy)
    proxy_scheme = proxy.partition("://")[0].lower()
    if proxy_scheme not in PROXY_SCHEMES:
        raise ProxyRefused(f"{name}={shown}: a {proxy_scheme}:// proxy is not supported; use an http:// proxy")
    if scheme == "http" and credentials:
        raise ProxyRefused(
            f"refusing to send credentials in clear text through the proxy {shown} ({name}); "
            f"use an https:// server, or list {host} in NO_PROXY"
        )
    tunnel = " (CONNECT tunnel: TLS end to end)" if scheme == "https" else ""
    return Route(proxy, f"via {name}={shown}{tunnel}")


def is_loopback(host: str) -> bool:
    """True for localhost names and loopback addresses (127.0.0.0/8, ::1)."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def has_credentials(server: str, auth: object | None) -> bool:
    """Will a request to ``server`` carry credentials (an ``Authorization`` header, or URL user-info)?"""
    parts = urlsplit(server)
    return auth is not None or bool(parts.username or parts.password)


def _variable(env: Mapping[str, str], lower: str) -> tuple[str, str | None]:
    """``(name, value)`` of a proxy variable; the lower-case spelling wins; empty counts as unset."""
    for name in (lower, lower.upper()):
        value = env.get(name, "").strip()
        if value:
            return name, value
    return lower.upper(), None


def _proxy_variable(env: Mapping[str, str], scheme: str) -> tuple[str, str | None]:
    name, value = _variable(env, f"{scheme}_proxy")
    if value is None:
        name, value = _variable(env, "all_proxy")
    return name, value


def _bypassed(host: str, port: int, no_proxy: str) -> bool:
    """Does a ``NO_PROXY`` entry match ``host:port``? (curl's rules, plus CIDR ranges.)"""
    host = host.lower().rstrip(".")
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if entry == "*":
            return True
        if not entry:
            continue
        entry, entry_port = _split_port(entry)
        if entry_port is not None and entry_port != port:
            continue
        if address is not None:
            try:
                if address in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                pass
            continue
        domain = entry.lstrip(".").rstrip(".")
        if domain and (host == domain or host.endswith("." + domain)):
            return True
    return False


def _split_port(entry: str) -> tuple[str, int | None]:
    """``host:port``, ``[v6]:port``, ``v6`` or ``host`` -> (host, port or None)."""
    if entry.startswith("["):
        inside, _, rest = entry[1:].partition("]")
        return inside, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    if entry.count(":") == 1:
        name, _, port = entry.partition(":")
        return name, int(port) if port.isdigit() else None
    return entry, None
