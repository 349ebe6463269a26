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
``passwd``, ``passphrase``, ``secret``, ``token``, ``apikey`` or a qualified ``key`` (``api_key``,
``x-api-key``, ``aws_secret_access_key``, ``private_key``). Look-alikes stay: ``max_tokens=4096``,
``password: str`` (a type), ``token: ${{ secrets.X }}`` (a reference), ``git@github.com:…``,
``sk-learn``.

Standard library only, and cheap for the hook path: ``re`` is already loaded by ``json``; a rule is
compiled (once) only when the text contains one of its words, and a hook imports this module only
when it keeps message text.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from re import Match, Pattern

MARK = "[REDACTED]"

_PEM = r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*)"
_BEARER = r"(?i)(?=b)(\bbearer\s+)(?=[A-Za-z0-9._~+/-]*\d)[A-Za-z0-9._~+/-]{8,}=*"
_URL_USERINFO = r"://[^\s/@:]+:[^\s/@]+@"
_KEY_SHAPES = (
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
_PROVIDER_KEYS = "(?=[sSrRgxAnhe])(?:" + "|".join(_KEY_SHAPES) + ")"
_PROVIDER_PREFIXES = (
    *("sk-", "sk_", "rk_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox"),
    *("akia", "asia", "aiza", "glpat-", "npm_", "hf_", "eyj"),
)
#: The value of a ``name: value`` pair (group 1 the name and separator, 2+3 a quoted value, 4 a
#: bare one): an ``Authorization`` header (its scheme kept), or a name ending in a secret word
#: (``tokens``, ``token_count``, ``monkey`` do not).
_VALUE = r"(?:([\"'])([^\"'\n]{1,512})\2|([^\s\"',;)}\]]+))"
_HEADER = r"(?i)(?=[ap])(\b(?:proxy-)?authorization[\"']?\s*[:=]\s*(?:(?:bearer|basic|token|bot|digest)\s+)?)"
_NAME = (
    r"(?i)(?=[pstamel])((?:pass(?:word|wd|phrase)|secret|token|apikey"
    r"|(?:api|access|secret|private|auth|signing|encryption|master|license)[_-]?key)[\"']?\s*(?::|=>|=)\s*)"
)
#: Values of a secret-named pair that are not secrets: types, literals (placeholders, references
#: and masks are recognised by their first characters).
_NOT_SECRETS = frozenset("str string bytes int bool none null nil true false secretstr optional required".split())
#: (words one of which the lower-cased text must contain, pattern, flags, replacement): a rule
#: whose words are absent is skipped, so plain prose costs a few substring tests and compiles nothing.
#: Each pattern opens with a lookahead on its possible first characters: ``re`` then rejects most
#: positions with one set test instead of trying every alternative.
_RULES: tuple[tuple[tuple[str, ...], str, int, str | None], ...] = (
    (("private key",), _PEM, re.DOTALL, MARK),
    (("bearer",), _BEARER, 0, rf"\1{MARK}"),
    (("://",), _URL_USERINFO, 0, f"://{MARK}@"),
    (_PROVIDER_PREFIXES, _PROVIDER_KEYS, 0, MARK),
    (("authorization",), _HEADER + _VALUE, 0, None),  # None: the value is checked by _pair_value
    (("pass", "secret", "token", "key"), _NAME + _VALUE, 0, None),
)
_compiled: dict[str, Pattern[str]] = {}


def redact(text: str) -> str:
    """``text`` with every secret it plainly contains replaced by ``[REDACTED]``."""
    if not text:
        return text
    lowered = text.lower()
    for words, source, flags, replacement in _RULES:
        if not any(word in lowered for word in words):
            continue
        pattern = _compiled.get(source)
        if pattern is None:
            pattern = _compiled[source] = re.compile(source, flags)
        text = pattern.sub(replacement if replacement is not None else _pair_value, text)
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
