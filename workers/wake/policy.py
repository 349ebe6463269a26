"""When reply to continue may run (the wake role, the supervisor, ``install``, ``config check``, ``doctor``)."""

from __future__ import annotations

from donebell.shared.config.view import SettingsLike
from donebell.shared.text.secret_text import url_passwords


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
