"""``doctor``'s check of reply to continue (only when ``wake_enabled``)."""

from __future__ import annotations

from donebell.shared.config import Settings
from donebell.supervisor.doctor.local import FAIL, OK, WARN, Check
from donebell.workers.wake.policy import config_problem


def check_wake(settings: Settings) -> Check:
    problem = config_problem(settings)
    if problem:
        return Check("wake", FAIL, problem, "see docs/wake.md (setup)")
    if not settings.token and not (settings.username and settings.password):
        return Check(
            "wake",
            WARN,
            "wake runs on a server without an access token (wake_allow_unauthenticated): whoever reads "
            "the notification topic can use a Continue button's ticket before you do",
            "use an access token and a write-only user for the reply topic (docs/wake.md)",
        )
    if not settings.wake_token:
        return Check(
            "wake",
            WARN,
            "no wake_token: the buttons can post only if the reply topic is writable by anyone",
            "create a write-only user for the reply topic and set wake_token (docs/wake.md)",
        )
    return Check("wake", OK, f"Continue buttons post signed tickets to {settings.wake_topic}")
