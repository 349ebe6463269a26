"""Every id a user can see, matched against a record: what ``donebell explain`` and ``log`` accept.

* a Codex thread id, a Claude session id (also a child's root or parent thread id);
* an event key (64 hex: a record's file name);
* the ``#…`` of a notification: the short id (``shared/text/short_id.py``, the last 8 hex digits of
  the thread or session id), with or without ``#``; the first 8 hex digits too, which is what
  notifications showed before the short id was the random tail;
* the ntfy ``sequence_id`` (``codex-<32 hex>``), the same for every attempt of one notification;
* the ntfy message id the server answered with (``sent/`` receipts keep it as ``message_id``).
"""

from __future__ import annotations

import re
from typing import Any

from donebell.shared.keys import sequence_id
from donebell.shared.text.short_id import short_id

ID_FIELDS = ("thread_id", "root_thread_id", "parent_thread_id", "session_id")
_SHORT = re.compile(r"^[0-9a-f]{8}$")


def normalize(ident: str) -> str:
    """The id as typed, without surrounding space or the ``#`` the phone shows before a short id."""
    ident = ident.strip()
    return ident[1:] if ident.startswith("#") else ident


def matches(record: dict[str, Any], ident: str) -> bool:
    """True if ``ident`` (normalized) names ``record`` by any id a user can see."""
    own_ids = [v for v in (record.get(name) for name in ID_FIELDS) if isinstance(v, str) and v]
    if ident in own_ids or ident == record.get("message_id"):
        return True
    key, provider = record.get("key"), record.get("provider")
    if ident == record.get("sequence_id") or (
        isinstance(key, str) and isinstance(provider, str) and ident == sequence_id(provider, key)
    ):
        return True
    if _SHORT.match(ident.lower()):
        short = ident.lower()
        shown = [v for v in (record.get("thread_id"), record.get("session_id")) if isinstance(v, str) and v]
        return any(short_id(v) == short or v.lower().startswith(short) for v in shown)
    return False
