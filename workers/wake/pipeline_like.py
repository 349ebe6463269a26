"""What of the wake pipeline (``pipeline.py``) its step modules use: ``answers.py`` (a tapped
Allow / Deny), ``live_session.py`` (a reply into the open session), ``machines.py`` (a hello of
another machine) and ``tell.py`` (a notice to the phone). A Protocol, so those
modules need not import the pipeline that calls them."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from donebell.shared.config.view import SettingsLike
from donebell.shared.statedir import StateDir
from donebell.shared.statedir._wake import WakeQueue
from donebell.shared.wake_ticket import TicketKey
from donebell.workers.wake.junk import JunkLimiter


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

    #: Publishes a notice to the notification topic (``tell.py``): ``sent`` or why not; None in a bounded run.
    publish: Callable[[dict[str, Any]], str] | None
    junk: JunkLimiter
    hello_due: bool  # a machine new to this one said hello (``machines.py``)
    twins_told: set[str]

    def current_key(self) -> TicketKey: ...

    def refuse(self, record: dict[str, Any], reason: str) -> None: ...

    def count(self, name: str) -> None: ...
