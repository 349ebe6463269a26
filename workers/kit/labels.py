"""How a machine and a span of time read on a card: delivery's payload, the wake role's notices and
doctor's machine checks all say them the same way (so none of them imports the delivery role)."""

from __future__ import annotations

import socket
from typing import Any

from donebell.shared.config.view import SettingsLike
from donebell.shared.text.markdown_text import fold_whitespace


def origin_label(record: dict[str, Any], settings: SettingsLike) -> str:
    """Where the task ran: a remote root's own label, else ``origin``, else the short host name."""
    recorded = _one_line(record.get("origin"))
    raw_sources = record.get("sources")
    sources = raw_sources if isinstance(raw_sources, list) else []
    if recorded and (record.get("source") == "remote-scanner" or "remote-scanner" in sources):
        return recorded
    return _one_line(settings.origin) or recorded or short_host_name()


def short_host_name() -> str:
    return socket.gethostname().split(".")[0] or "localhost"


def format_duration(seconds: float) -> str:
    """``42s``, ``4m 12s``, ``2h 5m``."""
    whole = int(round(seconds))
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m {secs}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes}m"


def _one_line(value: object) -> str:
    return fold_whitespace(value) if isinstance(value, str) else ""
