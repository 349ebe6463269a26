"""Why an outbox record waits, in a few words, when the server's answer alone does not say it.

A new user's first refusals are a missing or wrong token (401), a topic the credentials may not
write (403), or a ``server`` that is not ntfy at all (an error without ntfy's code). The delivery
role retries 401 and 403 (credentials can be repaired without touching the queue), so the record
must say what to repair: the client appends this to the attempt's ``last_error``. The topic and
the user are not named here (records and logs never carry the topic); ``donebell doctor`` names
both (:mod:`.publish_access`).
"""

from __future__ import annotations

UNAUTHORIZED, FORBIDDEN = 40101, 40301  # ntfy's codes for 401 and 403
#: An answer with one of these statuses but without ntfy's error code is not from ntfy (a web server's
#: 404 or 405 for a POST, a bare HTTP server's 501); a 502-504 without it is a proxy's, left as it is.
NOT_NTFY_STATUSES = frozenset({400, 401, 403, 404, 405, 501})


def waiting_reason(status: int | None, ntfy_code: int | None, *, credentials: bool) -> str:
    """Why an outbox record that met this answer waits, in a few words; "" when the answer says enough."""
    if ntfy_code == UNAUTHORIZED:
        return "the server rejects the configured credentials: fix `token`/`password` (see donebell doctor)"
    if ntfy_code == FORBIDDEN and credentials:
        return "these credentials may not publish to the topic: `ntfy access <user> <topic> rw` (see donebell doctor)"
    if ntfy_code == FORBIDDEN:
        return "the server needs an access token for the topic: set `token` (see donebell doctor)"
    if ntfy_code is None and status in NOT_NTFY_STATUSES:
        return "the server does not answer like ntfy: check `server` (see donebell doctor)"
    return ""
