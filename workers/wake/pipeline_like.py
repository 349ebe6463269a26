"""What of the wake pipeline (``pipeline.py``) its step modules use: ``answers.py`` (a tapped
Allow / Deny) and ``live_session.py`` (a reply into the open session). A Protocol, so those
modules need not import the pipeline that calls them."""

from __future__ import annotations

import logging
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

    def refuse(self, record: dict[str, Any], reason: str) -> None: ...

    def count(self, name: str) -> None: ...
