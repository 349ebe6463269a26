"""The short id a notification shows (``#a14a99c3``): the part of a thread or session id that differs.

Codex thread ids are UUIDv7: their first 12 hex digits are a millisecond timestamp, so the first 8
are the same for every thread started within about 65 seconds. Their last 12 hex digits are
random, as are all but 6 bits of a Claude session id (UUIDv4). The short id is therefore the
*last* 8 hex digits of a UUID: stable for one thread, and different for two threads started in the
same millisecond. An id that is not a UUID gets the first 8 hex digits of its SHA-256 instead.
``donebell explain`` accepts this form (with or without the ``#``).
"""

from __future__ import annotations

import hashlib
import re

SHORT_ID_LENGTH = 8
_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")


def short_id(ident: str) -> str:
    """The 8 lower-case hex digits that stand for ``ident`` on the phone (without the ``#``)."""
    if _UUID.match(ident):
        return ident.replace("-", "").lower()[-SHORT_ID_LENGTH:]
    return hashlib.sha256(ident.encode("utf-8", "surrogatepass")).hexdigest()[:SHORT_ID_LENGTH]
