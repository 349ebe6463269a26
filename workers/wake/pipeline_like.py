"""What of the wake pipeline (``pipeline.py``) its step modules use: ``answers.py`` (a tapped
Allow / Deny) and ``live_session.py`` (a reply into the open session). A Protocol, so those
modules need not import the pipeline that calls them."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from donebell.shared.config.view import SettingsLike
from donebell.shared.statedir import StateDir
from donebell.shared.statedir._wake import WakeQueue


class WakePipeline(Protocol):
    """The pipeline as its steps see it."""

    state: StateDir
    settings: SettingsLike
    log: logging.Logger
    queue: WakeQueue

    confirm_seconds: float
    #: Dismisses a sent push on the phone by its ``sequence_id`` (``PUT /<topic>/<sid>/clear``,
    #: ntfy 2.16+): what the server said, or None when there is no server to ask (a bounded run).
    clear_card: Callable[[str], str] | None

    def refuse(self, record: dict[str, Any], reason: str) -> None: ...

    def count(self, name: str) -> None: ...
