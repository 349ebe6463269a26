"""``doctor``'s checks against the server itself: may donebell publish, and what will the phone show?

``check_server`` only asks whether the server answers; these ask ntfy, without publishing anything
(:mod:`donebell.shared.ntfy.access`), whether the configured credentials may publish
to the topic, so a missing token on a deny-all server, a wrong or revoked token, a topic the user
may not write or a URL that is not ntfy at all is a failure that names its fix, not "Nothing
blocks notifications".
"""

from __future__ import annotations

from donebell.shared.config.view import SettingsLike
from donebell.shared.ntfy.access import probe, routes_sequence_ids
from donebell.shared.ntfy.client import ConfigProblem, auth_for
from donebell.shared.ntfy.proxy import has_credentials
from donebell.workers.kit.install.checks import FAIL, OK, SKIP, UNKNOWN, WARN, Check

VERDICT_STATUS = {"allowed": OK, "unauthorized": FAIL, "forbidden": FAIL, "not-ntfy": FAIL, "unknown": UNKNOWN}
UPDATES_NOTE = (
    "a retry after a lost answer, or a digest repeated after a crash, updates the notification "
    "already on the phone only on ntfy 2.16 or later; an older server shows it a second time"
)


def check_access(settings: SettingsLike) -> list[Check]:
    """The ``access`` check and, when the server let us ask, the ``updates`` one."""
    try:
        auth = auth_for(settings)
    except ConfigProblem as exc:
        return [Check("access", SKIP, f"not checked: {exc}")]
    credentials = has_credentials(settings.server, auth)
    access = probe(settings, auth)
    status = VERDICT_STATUS[access.verdict]
    found = Check(
        "access",
        status,
        access.summary(settings, credentials=credentials),
        access.next_step(settings, credentials=credentials) if status != OK else None,
        {"verdict": access.verdict, "http_status": access.status, "user": access.user},
    )
    if access.verdict != "allowed":
        return [found]
    return [found, _updates(routes_sequence_ids(settings, auth))]


def _updates(routed: bool | None) -> Check:
    if routed:
        return Check("updates", OK, "the server routes sequence IDs (ntfy 2.16 or later): " + UPDATES_NOTE)
    if routed is False:
        return Check(
            "updates",
            WARN,
            "the server predates ntfy 2.16 (it has no sequence-ID route; it does not report its version): "
            + UPDATES_NOTE,
            "upgrade the ntfy server to 2.16 or later to have duplicates shown as one notification",
            {"sequence_ids": False},
        )
    return Check("updates", UNKNOWN, "could not tell the server's ntfy version: " + UPDATES_NOTE)
