"""``doctor``'s check of reply to continue (only when ``wake_enabled``).

Besides the settings, it asks the server (publishing nothing: :mod:`donebell.workers.delivery.
publish_access`) what docs/wake.md's self-hosted setup promises: the buttons' ``wake_token`` may
post to the reply topic, donebell's own credentials may read it, and the ``wake_token``, which every
reader of the notification sees, can do nothing else (post to the notification topic, read the
reply topic's other tickets). And, first of all, that nobody without an account can read the
notification topic (:mod:`.topic_privacy`): its readers hold the buttons.
"""

from __future__ import annotations

from donebell.shared.config.model import Settings
from donebell.shared.ntfy.access import may_read, probe_topic
from donebell.shared.ntfy.client import Auth, ConfigProblem, auth_for, check_sendable, public_server
from donebell.supervisor.doctor.topic_privacy import NO_ACCOUNTS_NOTE, public_topic_failure, readable_by_anyone
from donebell.workers.kit.install.checks import FAIL, OK, WARN, Check
from donebell.workers.wake.policy import config_problem


def check_wake(settings: Settings) -> Check:
    problem = config_problem(settings)
    if problem:
        return Check("wake", FAIL, problem, "see docs/wake.md (setup)")
    if not settings.token and not (settings.username and settings.password):
        public = readable_by_anyone(settings.server, settings.topic)
        return Check(
            "wake",
            WARN,
            "wake runs on a server without an access token (wake_allow_unauthenticated): whoever reads "
            "the notification topic can use a Continue button's ticket before you do"
            + (f"; {NO_ACCOUNTS_NOTE}" if public is not False else ""),
            "use an access token and a write-only user for the reply topic (docs/wake.md)",
        )
    if not settings.wake_token:
        return Check(
            "wake",
            WARN,
            "no wake_token: the buttons can post only if the reply topic is writable by anyone",
            "create a write-only user for the reply topic and set wake_token (docs/wake.md)",
        )
    return _against_the_server(settings) or Check(
        "wake", OK, f"Continue buttons post signed tickets to {settings.wake_topic}"
    )


def _against_the_server(settings: Settings) -> Check | None:
    """A failure or warning from the server's own answers; None when all is as docs/wake.md says."""
    assert settings.wake_token is not None and settings.wake_topic
    try:
        own = auth_for(settings)
        check_sendable(settings, own)  # never a token in clear text where delivery would not send it
    except ConfigProblem:
        return None  # the config and server checks report it
    if readable_by_anyone(settings.server, settings.topic):
        return public_topic_failure("wake", settings.server, settings.topic, FAIL)
    server, topic, replies = public_server(settings.server), settings.wake_topic, settings.wake_token.get_secret_value()
    button = Auth(f"Bearer {replies}", (replies,))  # what the ntfy app sends for a button
    tap = probe_topic(server, topic, button)
    if tap.verdict in ("unauthorized", "forbidden"):
        return Check(
            "wake",
            FAIL,
            f"the server refuses the buttons' wake_token on the reply topic {topic} (HTTP {tap.status}): every tap fails",
            f"on the server: `ntfy access {tap.user or '<replies user>'} '{topic}' write-only`, "
            "and wake_token set to that user's token (docs/wake.md)",
        )
    if may_read(settings.server, topic, own) is False:
        return Check(
            "wake",
            FAIL,
            f"donebell's own credentials may not read the reply topic {topic}: no tap would ever be seen",
            f"on the server: `ntfy access <donebell's user> '{topic}' rw` (docs/wake.md)",
        )
    too_much = []
    if probe_topic(server, settings.topic, button).verdict == "allowed":
        too_much.append(f"post to the notification topic {settings.topic}")
    if may_read(server, topic, button):
        too_much.append("read the reply topic (every other ticket on it)")
    if too_much:
        return Check(
            "wake",
            WARN,
            "the buttons' wake_token, which every reader of a notification sees, can also " + " and ".join(too_much),
            f"give wake_token to a user with only `ntfy access <replies user> '{topic}' write-only` (docs/wake.md)",
        )
    return None
