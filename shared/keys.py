"""Event identity: one deterministic key per (provider, thread/session, turn/prompt).

The same key names a turn in pending/, outbox/, sent/, suppressed/ and dead/, so a hook, the
legacy notify and the rollout scanner reporting the same turn converge on one record.
Standard library only: the hook path imports this module.
"""

from __future__ import annotations

#: A registered agent's name (``workers/agents/registry.py``; this layer sits below it).
Provider = str

try:  # CPython's built-in SHA-256: importing hashlib would load OpenSSL (~2 ms of hook start-up)
    from _sha256 import sha256 as _sha256  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - 3.12+ renamed it; other interpreters
    try:
        from _sha2 import sha256 as _sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
    except ImportError:
        from hashlib import sha256 as _sha256  # type: ignore[assignment,no-redef,unused-ignore]

KEY_NAMESPACE = "donebell/v1"
_HEX = frozenset("0123456789abcdef")


def event_key(provider: Provider, conversation_id: str, turn_id: str) -> str:
    """SHA-256 hex of ``donebell/v1|<provider>|<thread-or-session>|<turn-or-prompt>``."""
    material = f"{KEY_NAMESPACE}|{provider}|{conversation_id}|{turn_id}"
    return _hex_digest(material)


def identity(provider: Provider, conversation_id: object, turn_id: object) -> tuple[str, bool]:
    """Return ``(key, weak)``: deterministic when both ids are non-empty strings, else random.

    A weak (random) key cannot deduplicate repeated signals; records carry
    ``weak_identity: true`` so that limitation stays visible.
    """
    if isinstance(conversation_id, str) and conversation_id and isinstance(turn_id, str) and turn_id:
        return event_key(provider, conversation_id, turn_id), False
    import secrets  # only here: it pulls in random/base64/hmac, which the hook path otherwise skips

    return secrets.token_hex(32), True


def sequence_id(provider: str, key: str) -> str:
    """The ntfy ``sequence_id`` every delivery attempt of one record reuses."""
    return f"{provider}-{key[:32]}"


def content_digest(text: str) -> str:
    """SHA-256 hex of ``text`` (e.g. the exact tool call a "needs you" request names)."""
    return _hex_digest(text)


def is_event_key(name: str) -> bool:
    """True for a 64-character lowercase hex key (what record file names are made of)."""
    return len(name) == 64 and _HEX.issuperset(name)


def claude_session_key(session_id: str) -> str:
    """The key of a Claude session record in ``claude/``: SHA-256 hex of the session id."""
    return _hex_digest(session_id)


def transcript_index_key(path: str) -> str:
    """The key of a transcript's cursor (``watch/claude/``, also its goal-marker index): SHA-256 of the path."""
    digest: str = _sha256(path.encode("utf-8", "surrogateescape")).hexdigest()
    return digest


def _hex_digest(text: str) -> str:
    digest: str = _sha256(text.encode("utf-8")).hexdigest()
    return digest
