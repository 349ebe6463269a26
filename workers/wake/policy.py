"""When reply to continue may run (the wake role, the supervisor, ``install``, ``config check``, ``doctor``)."""

from __future__ import annotations

from donebell.shared.config.secret_text import url_passwords
from donebell.shared.config.view import SettingsLike


def approvals_problem(settings: SettingsLike) -> str | None:
    """Why Allow / Deny from the phone cannot run with ``settings`` (None: it can). The answers
    come back like replies to continue, so they need that set up: the wake role, its reply topic,
    and a server with access control."""
    if not settings.approvals_enabled:
        return "approvals_enabled is false"
    if not settings.wake_enabled:
        return "approvals_enabled needs wake_enabled (the wake role receives the answers on wake_topic)"
    return config_problem(settings)


def config_problem(settings: SettingsLike) -> str | None:
    """Why wake cannot run with ``settings`` (None: it can)."""
    if not settings.wake_enabled:
        return "wake_enabled is false"
    if not settings.wake_topic:
        return "no wake_topic configured (the reply topic of the Continue buttons)"
    if settings.wake_topic == settings.topic:
        return "wake_topic must differ from topic"
    # The same accounts delivery sends with: a token, username + password, or the server URL's user-info.
    authenticated = bool(settings.token) or bool(settings.username and settings.password)
    authenticated = authenticated or bool(url_passwords(settings.server))
    if not authenticated and not settings.wake_allow_unauthenticated:
        return "wake_enabled needs an access token on the server (token), or wake_allow_unauthenticated: true"
    return None
