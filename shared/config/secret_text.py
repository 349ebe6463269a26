"""Keeping configured secrets out of every text donebell prints or stores, and out of shown URLs.

An error text may quote a secret in a form other than the configured bytes: httpx quotes a bad
header as a bytes repr (``b'Bearer tk_x\\n'``), a JSON document escapes it, a Basic header
carries it in Base64 of ``user:password``, a URL percent-encodes it. :func:`secret_forms` lists
every such form, and :func:`scrub` replaces each of them with :data:`MASK`, longest first.

The secrets are always the values of :data:`donebell.shared.config.rules.SECRET_KEYS` plus the server URL's
password. Writers scrub with the loaded settings (:func:`settings_secrets`): the delivery role each
attempt's error before it reaches ``notify.log``, the outbox record, a receipt or a dead letter;
every role the error in its health file. Every command's output is scrubbed once more on its way
out (:mod:`donebell.shared.text.scrubbed_output`), with the secrets read straight from the file and
the environment (:func:`configured_secrets`), so that a record written by an older version or a
config that no longer validates cannot leak either.

Shown URLs: :func:`public_url` drops ``user:password@`` (receipts, logs, subscribe links);
:func:`redact_url` keeps the user and masks the password (``config show``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from urllib.parse import quote, unquote, urlsplit

MASK = "**********"
#: Shorter values are not scrubbed: replacing every "ab" would mangle the text and hide nothing.
MIN_SECRET_CHARS = 3


def secret_forms(secret: str, username: str | None = None) -> set[str]:
    """``secret`` as a library, a JSON document, a URL or a Basic header may print it."""
    plain = {secret, secret.strip(), quote(secret, safe=""), quote(secret.strip(), safe="")}
    plain.add(repr(secret)[1:-1])
    plain.add(repr(secret.encode("utf-8", "surrogateescape"))[2:-1])
    for user in {"", username or ""}:
        plain.add(base64.b64encode(f"{user}:{secret}".encode("utf-8", "surrogateescape")).decode("ascii"))
    forms = set(plain)
    for form in plain:  # each of them quoted once more inside a JSON string (doctor --json, explain --json)
        forms.add(json.dumps(form)[1:-1])
        forms.add(json.dumps(form, ensure_ascii=False)[1:-1])
    return {form for form in forms if len(form) >= MIN_SECRET_CHARS}


def scrub(text: str, secrets: Iterable[str], username: str | None = None) -> str:
    """``text`` with every form of every secret replaced by :data:`MASK`."""
    return scrub_forms(text, all_forms(secrets, username))


def all_forms(secrets: Iterable[str], username: str | None = None) -> list[str]:
    """Every form of every secret, longest first (the order :func:`scrub_forms` replaces them in)."""
    forms: set[str] = set()
    for secret in secrets:
        if secret and len(secret.strip()) >= MIN_SECRET_CHARS:
            forms |= secret_forms(secret, username)
    return sorted(forms, key=len, reverse=True)


def scrub_forms(text: str, forms: list[str]) -> str:
    """``text`` with each of ``forms`` (from :func:`all_forms`) replaced by :data:`MASK`."""
    for form in forms:
        text = text.replace(form, MASK)
    return text


def url_passwords(url: str) -> list[str]:
    """The password of a ``user:password@`` part as written and percent-decoded (as httpx sends it)."""
    try:
        password = urlsplit(url).password
    except ValueError:
        return []
    return sorted({password, unquote(password)}) if password else []


def public_url(url: str) -> str:
    """``url`` without its ``user:password@`` part (the rest exactly as given)."""
    scheme, sep, rest = url.partition("://")
    host, slash, tail = rest.partition("/")
    return f"{scheme}{sep}{host.rpartition('@')[2]}{slash}{tail}"


def redact_url(url: str) -> str:
    """``url`` with the password of its ``user:password@`` part masked (the user stays visible)."""
    scheme, sep, rest = url.partition("://")
    host, slash, tail = rest.partition("/")
    userinfo, at, hostport = host.rpartition("@")
    if not at:
        return url
    user, colon, _password = userinfo.partition(":")
    return f"{scheme}{sep}{user}{colon and ':' + MASK}@{hostport}{slash}{tail}"


def settings_secrets(settings: object) -> tuple[list[str], str | None]:
    """Every secret of loaded settings (pydantic or the roles' view): the values of
    :data:`donebell.shared.config.rules.SECRET_KEYS` and the server URL's password; and the user name."""
    from donebell.shared.config.rules import SECRET_KEYS

    secrets: list[str] = []
    for name in SECRET_KEYS:
        stored = getattr(settings, name, None)
        value = stored.get_secret_value() if stored is not None else ""
        if value:
            secrets.append(value)
    server = getattr(settings, "server", "")
    secrets += url_passwords(server) if isinstance(server, str) else []
    return secrets, _user(getattr(settings, "username", None), [server])


def configured_secrets() -> tuple[list[str], str | None]:
    """The raw token, password and URL password of the file and the environment, and the user name.

    Read without validation, so even a config that is refused (or half-edited) is scrubbed.
    """
    from donebell.shared.config import schema
    from donebell.shared.config.fields import FIELDS
    from donebell.shared.config.rules import SECRET_KEYS
    from donebell.shared.config.schema import overridden

    try:
        _, data = schema.read_file()
    except schema.ConfigFileError:
        data = None
    merged = overridden(FIELDS, {*SECRET_KEYS, "username", "server"}, data or {})
    secrets = [str(merged[key]) for key in SECRET_KEYS if merged.get(key)]
    servers = [s for s in ((data or {}).get("server"), merged.get("server")) if isinstance(s, str)]
    secrets += [p for server in servers for p in url_passwords(server)]
    return secrets, _user(merged.get("username"), servers)


def _user(username: object, servers: Iterable[object]) -> str | None:
    """The Basic-auth user a secret may be encoded with: ``username``, else a server URL's user."""
    if isinstance(username, str) and username:
        return username
    for server in servers:
        try:
            user = urlsplit(server).username if isinstance(server, str) else None
        except ValueError:
            continue
        if user:
            return unquote(user)
    return None
