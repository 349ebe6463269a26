"""Secrets cut out of agent text before it is stored or sent: one redactor for every source.

An agent's final message (and an API's error text) is free text that often quotes what the agent
just handled: a ``.env`` line, a curl command with its ``Authorization`` header, a clone URL with
a password, a key it generated. ``include_message`` lets that text leave the machine, so the hooks
and the scanners redact it when they capture it (nothing secret reaches ``pending/`` or
``outbox/``) and the payload redacts it again when it renders (records written by an older
version). Each secret becomes ``[REDACTED]``; the words around it stay.

What counts as a secret (docs/delivery.md, "Redaction"): PEM private-key blocks; the credentials
of an ``Authorization`` header and of a ``Bearer`` token; ``user:password@`` in a URL; provider
key shapes (OpenAI/Anthropic ``sk-…``, Stripe ``sk_live_…``, GitHub ``ghp_…``/``github_pat_…``,
Slack ``xox?-…``, AWS ``AKIA…``, Google ``AIza…``, GitLab ``glpat-…``, npm, Hugging Face, JWTs);
and the value of a ``name=value`` / ``name: value`` pair whose name ends in ``password``,
``passwd``, ``passphrase``, ``secret``, ``token`` or ``key`` (``api_key``, ``x-api-key``,
``aws_secret_access_key``). Look-alikes stay: ``max_tokens=4096``, ``password: str`` (a type),
``token: ${{ secrets.X }}`` (a reference), ``git@github.com:…``, ``sk-learn``.

Standard library only, and cheap for the hook path: ``re`` is already loaded by ``json``, and the
patterns are compiled on the first text that needs them (a hook with ``include_message`` off never
compiles them).
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from re import Match, Pattern

MARK = "[REDACTED]"

_PEM = r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*)"
_BEARER = r"(?i)(\bbearer\s+)(?=[A-Za-z0-9._~+/-]*\d)[A-Za-z0-9._~+/-]{8,}=*"
_URL_USERINFO = r"(?i)(\b[a-z][a-z0-9+.-]*://)[^\s/@:]+:[^\s/@]+@"
_PROVIDER_KEYS = "|".join(
    (
        r"\bsk-(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}",  # OpenAI, Anthropic (sk-ant-…), sk-proj-…
        r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}",  # Stripe
        r"\bgh[pousr]_[A-Za-z0-9]{30,}",  # GitHub classic / OAuth / app tokens
        r"\bgithub_pat_[A-Za-z0-9_]{22,}",  # GitHub fine-grained
        r"\bxox[a-z]-[A-Za-z0-9-]{10,}",  # Slack
        r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key id
        r"\bAIza[0-9A-Za-z_-]{35}",  # Google API key
        r"\bglpat-[A-Za-z0-9_-]{20,}",  # GitLab
        r"\bnpm_[A-Za-z0-9]{36}\b",  # npm
        r"\bhf_[A-Za-z0-9]{30,}",  # Hugging Face
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",  # JWT
    )
)
#: The value of a ``name: value`` pair (group 1 the name and separator, 2+3 a quoted value, 4 a
#: bare one): an ``Authorization`` header (its scheme kept), or a name ending in a secret word
#: (``tokens``, ``token_count``, ``monkey`` do not).
_VALUE = r"(?:([\"'])([^\"'\n]{1,512})\2|([^\s\"',;)}\]]+))"
_HEADER = r"(\b(?:proxy-)?authorization[\"']?\s*[:=]\s*(?:(?:bearer|basic|token|bot|digest)\s+)?)"
_NAME = (
    r"(\b(?:[a-z0-9]+[_.-])*(?:pass(?:word|wd|phrase)|secret|token|apikey"
    r"|(?:api|access|secret|private|auth|signing|encryption|master|license)[_-]?key)[\"']?\s*(?::|=>|=)\s*)"
)
#: Values of a secret-named pair that are not secrets: types, literals (placeholders, references
#: and masks are recognised by their first characters).
_NOT_SECRETS = frozenset("str string bytes int bool none null nil true false secretstr optional required".split())

_compiled: list[tuple[Pattern[str], str]] | None = None
_pairs: list[Pattern[str]] = []


def _patterns() -> tuple[list[tuple[Pattern[str], str]], list[Pattern[str]]]:
    global _compiled
    if _compiled is None:
        _pairs[:] = [re.compile(_HEADER + _VALUE, re.IGNORECASE), re.compile(_NAME + _VALUE, re.IGNORECASE)]
        _compiled = [
            (re.compile(_PEM, re.DOTALL), MARK),
            (re.compile(_BEARER), rf"\1{MARK}"),
            (re.compile(_URL_USERINFO), rf"\1{MARK}@"),
            (re.compile(_PROVIDER_KEYS), MARK),
        ]
    return _compiled, _pairs


def redact(text: str) -> str:
    """``text`` with every secret it plainly contains replaced by ``[REDACTED]``."""
    if not text:
        return text
    patterns, pairs = _patterns()
    for pattern, replacement in patterns:
        text = pattern.sub(replacement, text)
    for pair in pairs:
        text = pair.sub(_pair_value, text)
    return text


def redact_optional(text: str | None) -> str | None:
    """:func:`redact` for a field that may be absent."""
    return redact(text) if isinstance(text, str) else text


def _pair_value(match: Match[str]) -> str:
    quote, value = (match.group(2), match.group(3)) if match.group(2) else ("", match.group(4))
    if _is_not_secret(value):
        return match.group(0)
    return f"{match.group(1)}{quote}{MARK}{quote}"


def _is_not_secret(value: str) -> bool:
    stripped = value.strip()
    return (
        len(stripped) < 4
        or stripped.lower() in _NOT_SECRETS
        or stripped.startswith(("$", "%", "<", "{", "[REDACTED", "os.environ", "process.env", "env."))
        or set(stripped) <= set("*xX.…-_")  # an already masked value
    )
