"""``donebell test``'s answer to a refusal that only the user can repair: which key, which ``ntfy access`` line.

A 401 or 403 (retried: credentials can be repaired without touching the queue) or an answer that
is not ntfy's leaves the test record waiting; instead of the bare status this asks the server what
is wrong, publishing nothing (:mod:`donebell.shared.ntfy.access`), and adds its
finding to the outcome: ``access`` (what the server says) and ``fix`` (the next step). A 2xx
without ntfy's message id was not accepted by ntfy either, and says so.
"""

from __future__ import annotations

from typing import Any

from donebell.shared.config.model import Settings
from donebell.shared.ntfy.access import probe
from donebell.shared.ntfy.client import ConfigProblem, auth_for
from donebell.shared.ntfy.proxy import has_credentials
from donebell.shared.ntfy.refusal import NOT_NTFY_STATUSES

NOT_NTFY_ACCEPTED = "the server answered 2xx without ntfy's message id: it is probably not an ntfy server"


def explain_refusal(settings: Settings, outcome: dict[str, Any]) -> None:
    """Add ``access`` and ``fix`` to a refused or not-ntfy ``outcome`` (in place); else leave it."""
    if outcome.get("ok"):
        if outcome.get("message_id") is None:
            outcome.update(ok=False, access=NOT_NTFY_ACCEPTED, fix="set `server` to the ntfy server's base URL")
        return
    if outcome.get("http_status") not in NOT_NTFY_STATUSES:
        return
    try:
        auth = auth_for(settings)
    except ConfigProblem:
        return
    access = probe(settings, auth)
    if access.verdict in ("allowed", "unknown"):
        return
    credentials = has_credentials(settings.server, auth)
    outcome.update(
        access=access.summary(settings, credentials=credentials),
        fix=access.next_step(settings, credentials=credentials),
    )
